#!/usr/bin/env bash
# Checks the alert rules against their docs and tests: every alert has a
# summary, a description and a runbook_url of the form
# docs/alerts.md#<lower-case name>; docs/alerts.md has that section; and
# deploy/prometheus/tests/ has a firing and a not-firing case for it.
#
# Usage: rules_lint.sh REPO_ROOT
set -euo pipefail
root=${1:?usage: $0 REPO_ROOT}
rules=$root/deploy/prometheus/rules/artel-alerts.rules.yaml
docs=$root/docs/alerts.md
tests=$root/deploy/prometheus/tests
fail=0
err() { echo "FAIL: $*"; fail=1; }

alerts=$(sed -n 's/^      - alert: \([A-Za-z]*\)$/\1/p' "$rules")
[[ $(wc -w <<<"$alerts") -ge 9 ]] || err "expected at least 9 alerts, found: $alerts"
for a in TeamNearGuarantee GuaranteeNotMet ReclaimSlow PreemptionStorm GPUIdleWhilePending \
         ArteldDown NodeNotReady GPUUnhealthy GPUMemoryNearLimit; do
  grep -qx "$a" <<<"$alerts" || err "required alert $a is missing"
done

for a in $alerts; do
  lower=${a,,}
  # The alert's block: from its `- alert:` line to the next one.
  block=$(awk -v a="$a" '/^      - alert: /{p=($3==a)} p' "$rules")
  for key in summary description runbook_url; do
    grep -q "^          $key:" <<<"$block" || err "$a has no $key annotation"
  done
  grep -q "runbook_url: \"docs/alerts.md#$lower\"" <<<"$block" || err "$a runbook_url is not docs/alerts.md#$lower"
  grep -q "^## $a\$" "$docs" || err "docs/alerts.md has no section '## $a'"
  grep -q "(#$lower)" "$docs" || err "docs/alerts.md table does not link #$lower"
  # Tests: at least one non-empty and one empty exp_alerts for this alert.
  cat "$tests"/*.yaml | awk -v a="$a" '
    /alertname:/ { cur = $2 }
    /exp_alerts: \[\]/ { if (cur == a) empty = 1; next }
    /exp_alerts:/ { if (cur == a) nonempty = 1 }
    END { exit !(empty && nonempty) }' || err "$a lacks a firing or a not-firing promtool test"
done
# The example deploy/prometheus/prometheus.yml is a valid configuration.
if command -v promtool >/dev/null; then
  tmp=$(mktemp -d)
  cp -r "$root/deploy/prometheus/rules" "$tmp/"
  echo token >"$tmp/token"
  sed "s#/etc/artel/prometheus-token#$tmp/token#" "$root/deploy/prometheus/prometheus.yml" >"$tmp/prometheus.yml"
  promtool check config "$tmp/prometheus.yml" >"$tmp/out" 2>&1 || { cat "$tmp/out"; err "deploy/prometheus/prometheus.yml does not check"; }
  rm -rf "$tmp"
fi
((fail == 0)) && echo "rules lint: $(wc -w <<<"$alerts") alerts ok"
exit $fail
