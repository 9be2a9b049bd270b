#!/usr/bin/env bash
# Opens `artel sim` HTML reports in headless Chromium and checks that every
# chart was drawn and no script error happened (the page records both on
# <body data-charts=N data-errors=N>; see src/sim/report.h). Also checks that
# PNG rendering works.
#
#   report_browser_test.sh ARTEL EXCERPT_CSV FULL_TRACE_CSV OUT_DIR
#
# Exit 77 (skipped) without Chromium, or a failure under make test
# (ARTEL_REQUIRE_TOOLS=1; tests/missing_tool.sh). The full trace is optional: without it
# the test says so and checks the excerpt only.
set -euo pipefail
artel=$1 excerpt=$2 full=$3 out=$4

chromium=${ARTEL_CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
if [[ -z $chromium ]]; then
  "$(dirname "$0")/../missing_tool.sh" "chromium not found (scripts/install-deps.sh installs it)"
  exit $?
fi
rm -rf "$out" && mkdir -p "$out"
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT

check_report() {  # HTML_FILE EXPECTED_CHARTS
  local html=$1 want=$2 dom body
  dom=$(timeout 120 "$chromium" --headless --no-sandbox --disable-gpu --disable-background-networking \
        --disable-component-update --disable-sync --no-first-run --user-data-dir="$profile" \
        --enable-logging=stderr --v=0 --virtual-time-budget=10000 --dump-dom "file://$html" 2>"$out/chromium.log")
  body=$(grep -o '<body[^>]*>' <<<"$dom" | head -1)
  echo "$html: $body"
  if [[ $body != *"data-charts=\"$want\""* ]]; then
    echo "FAIL: expected $want charts drawn"; return 1
  fi
  if [[ $body != *'data-errors="0"'* ]] || grep -q 'Uncaught' "$out/chromium.log"; then
    echo "FAIL: script errors:"; grep -i 'console' "$out/chromium.log" || true; return 1
  fi
}

# 1. The committed excerpt, with PNG charts.
"$artel" sim --trace "$excerpt" --auto-queues -q --out "$out/excerpt"
check_report "$out/excerpt/report.html" 4
for png in usage queues utilization waits; do
  f="$out/excerpt/img/$png.png"
  if [[ ! -s $f ]] || (( $(stat -c %s "$f") < 5000 )); then echo "FAIL: $f missing or empty"; exit 1; fi
done
echo "PNG charts rendered"

# 2. A comparison report: two runs, eight charts.
dir=$(dirname "$excerpt")/../..
"$artel" sim --synthetic 'name=team-a,rate=20/h,jobs=40,gpus=1|2,duration=exp(20m)' \
  --synthetic 'name=team-b,rate=10/h,jobs=20,duration=fixed(30m),start=30m' \
  --compare "$dir/../examples/two-teams" "$dir/data/isolation/no-reclaim" -q --no-png --out "$out/compare"
check_report "$out/compare/report.html" 8

# 3. The whole Philly trace, when ../shared is there.
if [[ -f $full ]]; then
  start=$(date +%s%N)
  "$artel" sim --trace "$full" --auto-queues -q --no-png --out "$out/philly"
  echo "full Philly trace replayed with reports in $(( ($(date +%s%N) - start) / 1000000 )) ms"
  test -s "$out/philly/report.json"
  check_report "$out/philly/report.html" 4
else
  echo "NOTE: $full not found (../shared absent): full-trace check skipped, excerpt checked"
fi
echo "PASS"
