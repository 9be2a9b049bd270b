#!/usr/bin/env bash
# Checks deploy/grafana/*.json dashboards.
#
#   grafana_dashboard_check.sh REPO_ROOT              offline: JSON shape, and every
#                                                      panel's PromQL parses (promtool)
#   grafana_dashboard_check.sh REPO_ROOT PROM_URL      also: every query returns data
#                                                      from that Prometheus
#
# Grafana variables are replaced first: $cluster_queue -> .*, $__rate_interval
# -> 1m, $__interval -> 15s. Exit 77 = skipped (no promtool or jq).
set -euo pipefail
root=${1:?usage: $0 REPO_ROOT [PROM_URL]}
prom=${2:-}
for t in jq promtool; do
  command -v $t >/dev/null || { "$(dirname "$0")/../missing_tool.sh" "$t not installed (scripts/install-deps.sh)"; exit $?; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
err() { echo "FAIL: $*"; fail=1; }

subst() {
  sed -e 's/\$__rate_interval/1m/g; s/\$__interval/15s/g' \
      -e 's/\${\?cluster_queue}\?/.*/g; s/\${\?node}\?/.*/g'
}

shopt -s nullglob
dashboards=("$root"/deploy/grafana/*.json)
((${#dashboards[@]})) || { echo "FAIL: no dashboards in deploy/grafana"; exit 1; }
: >"$tmp/exprs"
for d in "${dashboards[@]}"; do
  jq empty "$d" || { err "$d is not valid JSON"; continue; }
  name=$(basename "$d")
  # Panel ids are unique; every non-row panel has a title, gridPos and a query.
  dup=$(jq '[.. | objects | select(has("gridPos")) | .id] | group_by(.) | map(select(length > 1)) | length' "$d")
  [[ $dup == 0 ]] || err "$name: duplicate panel ids"
  bad=$(jq -r '.panels[] | select(.type != "row") |
               select((.title // "") == "" or (.gridPos == null) or ([.targets[]? | .expr // "" | select(. != "")] | length) == 0) |
               (.title // "(untitled)")' "$d")
  [[ -z $bad ]] || err "$name: panels without a title, gridPos or query: $bad"
  # panel title \t expr, for panels and query variables.
  jq -r '.panels[] | select(.targets) | .title as $t | .targets[] | [$t, .expr] | @tsv' "$d" >>"$tmp/exprs"
  jq -r '.templating.list[]? | select(.type == "query") | (.query.query // .query) |
         capture("^label_values\\((?<m>[^,]+),") | ["variable", .m] | @tsv' "$d" >>"$tmp/exprs"
done
n=$(wc -l <"$tmp/exprs")
echo "dashboard queries: $n"

# 1. Every expression parses: check them as recording rules with promtool.
{
  echo "groups:"; echo "  - name: dashboard"; echo "    rules:"
  i=0
  while IFS=$'\t' read -r title expr; do
    i=$((i + 1))
    e=$(printf '%s' "$expr" | subst)
    printf '      - record: dashboard_query_%d\n        expr: %s\n' "$i" "$(jq -Rn --arg e "$e" '$e')"
  done <"$tmp/exprs"
} >"$tmp/rules.yaml"
if ! promtool check rules "$tmp/rules.yaml" >"$tmp/check.out" 2>&1; then
  cat "$tmp/check.out"; err "some dashboard PromQL does not parse"
fi

# 2. Every expression returns data from the given Prometheus.
if [[ -n $prom ]]; then
  while IFS=$'\t' read -r title expr; do
    e=$(printf '%s' "$expr" | subst)
    resp=$(curl -sS --max-time 10 -G "$prom/api/v1/query" --data-urlencode "query=$e") || { err "query failed: $e"; continue; }
    status=$(jq -r .status <<<"$resp")
    count=$(jq -r '.data.result | length' <<<"$resp" 2>/dev/null || echo 0)
    if [[ $status != success ]]; then
      err "[$title] $e: $(jq -r .error <<<"$resp")"
    elif [[ $count == 0 ]]; then
      err "[$title] returns no data: $e"
    else
      printf 'ok %3d series  [%s] %s\n' "$count" "$title" "$e"
    fi
  done <"$tmp/exprs"
fi
((fail == 0)) && echo "dashboard check: ok"
exit $fail
