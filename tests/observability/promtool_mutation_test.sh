#!/usr/bin/env bash
# Shows that the promtool unit tests can fail: for every alert in
# deploy/prometheus/rules/artel-alerts.rules.yaml, replace its expression
# (in a copy of the rules) once with one that never fires and once with one
# that always fires, and require `promtool test rules` to fail both times.
# The first mutation is the one a person would try by hand: sed flips the
# TeamNearGuarantee threshold from 0.9 to 9.
#
# Usage: promtool_mutation_test.sh REPO_ROOT        Exit 77 = skipped.
set -euo pipefail
root=${1:?usage: $0 REPO_ROOT}
command -v promtool >/dev/null || { "$(dirname "$0")/../missing_tool.sh" "promtool not installed (Debian package prometheus)"; exit $?; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
src=$root/deploy/prometheus

fresh() {
  rm -rf "$tmp/p"; mkdir -p "$tmp/p"
  cp -r "$src/rules" "$src/tests" "$tmp/p/"
}
# run_tests [ALERT]: all unit tests, or only the files that test ALERT.
run_tests() {
  local files
  if [[ -n ${1:-} ]]; then
    files=$(cd "$tmp/p" && grep -l "alertname: $1\$" tests/*.yaml)
  else
    files=$(cd "$tmp/p" && echo tests/*.yaml)
  fi
  # shellcheck disable=SC2086
  (cd "$tmp/p" && promtool test rules $files) >"$tmp/out" 2>&1
}

fresh
run_tests || { cat "$tmp/out"; echo "FAIL: the unmutated rules must pass"; exit 1; }

failures=0

# 1. The sed mutation of one expression.
fresh
sed -i 's/expr: cluster_queue:artel_gpu_guarantee_used:ratio > 0.9$/expr: cluster_queue:artel_gpu_guarantee_used:ratio > 9/' \
  "$tmp/p/rules/artel-alerts.rules.yaml"
grep -q 'ratio > 9$' "$tmp/p/rules/artel-alerts.rules.yaml" || { echo "FAIL: sed did not apply"; exit 1; }
if run_tests TeamNearGuarantee; then
  echo "FAIL: TeamNearGuarantee threshold 0.9 -> 9 was not caught"; failures=$((failures + 1))
elif ! grep -q 'alertname: TeamNearGuarantee' "$tmp/out"; then
  cat "$tmp/out"; echo "FAIL: the failure does not name TeamNearGuarantee"; failures=$((failures + 1))
else
  echo "ok: sed mutation of TeamNearGuarantee (0.9 -> 9) is caught"
fi

# 2. Every alert: never-fire and always-fire expressions.
# mutate ALERT EXPR: replaces the (possibly multi-line) expr of ALERT.
mutate() {
  awk -v alert="$1" -v repl="$2" '
    /^      - alert: / { inalert = ($3 == alert) }
    skipping {
      if ($0 ~ /^          /) next   # continuation lines of `expr: |`
      skipping = 0
    }
    inalert && /^        expr:/ {
      print "        expr: " repl
      if ($0 ~ /expr: *[|>]-? *$/) skipping = 1
      done = 1
      next
    }
    { print }
    END { if (!done) exit 3 }
  ' "$src/rules/artel-alerts.rules.yaml" >"$tmp/p/rules/artel-alerts.rules.yaml"
}

alerts=$(sed -n 's/^      - alert: \([A-Za-z]*\)$/\1/p' "$src/rules/artel-alerts.rules.yaml")
[[ -n $alerts ]] || { echo "FAIL: no alerts found"; exit 1; }
for a in $alerts; do
  for kind in never always; do
    fresh
    if [[ $kind == never ]]; then expr='vector(1) == 2'; else expr='vector(1)'; fi
    mutate "$a" "$expr" || { echo "FAIL: could not mutate $a"; failures=$((failures + 1)); continue; }
    promtool check rules "$tmp/p/rules/artel-alerts.rules.yaml" >/dev/null
    if run_tests "$a"; then
      echo "FAIL: $a with expr '$expr' ($kind fires) still passes the tests"; failures=$((failures + 1))
    elif ! grep -q "alertname: $a" "$tmp/out"; then
      cat "$tmp/out"; echo "FAIL: $a mutated, but the failure does not name it"; failures=$((failures + 1))
    else
      echo "ok: $a mutated to $kind fire is caught"
    fi
  done
done

if ((failures)); then echo "$failures mutation(s) not caught"; exit 1; fi
echo "all mutations caught"
