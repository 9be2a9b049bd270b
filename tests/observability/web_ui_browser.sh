#!/usr/bin/env bash
# Browser test of the web UI (web/) with playwright-core and Debian's chromium:
# starts arteld (fake GPUs, examples/two-teams), and runs web/tests/ui-test.mjs,
# which loads the UI and drives the two-teams story (team-a floods, team-b
# reclaims, b-3 waits) while the page is open: charts render with data, the
# pending reason is shown, a tenant token does not see another team's
# workloads, no console errors. Saves docs/img/ui.png (OBS_SCREENSHOT_DIR
# overrides where).
#
# The UI is loaded from arteld's own /ui/ when arteld serves the web/dist
# bundle there. Until it does, the test skips; OBS_UI_PROXY=1 runs it anyway
# with web/tests/dev-server.mjs serving web/dist at /ui/ in front of arteld.
#
# Usage: web_ui_browser.sh REPO_ROOT ARTELD_BINARY       Exit 77 = skipped.
set -euo pipefail
root=${1:?usage: $0 REPO_ROOT ARTELD}
arteld=${2:?usage: $0 REPO_ROOT ARTELD}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh"

[[ -x $arteld ]] || obs_skip "arteld is not built yet ($arteld); build src/server first"
command -v node >/dev/null || obs_skip "node not installed (Debian nodejs; scripts/install-deps.sh)"
[[ -x ${CHROMIUM:-/usr/bin/chromium} ]] || obs_skip "chromium not installed (Debian chromium; scripts/install-deps.sh)"
[[ -d $root/web/node_modules/playwright-core ]] || obs_skip "web/node_modules missing: run 'npm ci' in web/ (scripts/install-deps.sh does)"
for t in curl jq; do command -v $t >/dev/null || obs_skip "$t not installed"; done
[[ -f $root/web/dist/index.html ]] || obs_fail "web/dist is missing: run 'npm run build' in web/"

WORK=$(mktemp -d)
trap obs_cleanup EXIT
# One usage-history sample a second, so that the story fills the charts' history.
OBS_ARTELD_ARGS="--history-interval 1s" obs_start_arteld "$arteld" "$root"

# Does arteld serve the bundle at /ui/?
if curl -fsS "$ARTELD_URL/ui/" 2>/dev/null | grep -q 'src="/ui/app.js"' &&
   curl -fsS -o /dev/null "$ARTELD_URL/ui/app.js"; then
  UI="$ARTELD_URL/ui/"
  obs_log "arteld serves the UI at $UI"
elif [[ -n ${OBS_UI_PROXY:-} ]]; then
  node "$root/web/tests/dev-server.mjs" "$ARTELD_URL" >"$WORK/dev-server.out" 2>&1 &
  OBS_PIDS+=($!)
  obs_wait_until 10 "dev server" grep -q '^listening on ' "$WORK/dev-server.out" || obs_fail "dev server did not start"
  UI="$(sed -n 's/^listening on //p' "$WORK/dev-server.out")/ui/"
  obs_log "arteld does not serve web/dist at /ui/ yet; OBS_UI_PROXY=1: using the dev server at $UI"
else
  obs_skip "arteld does not serve web/dist at /ui/ yet (see docs/observability.md, 'Serving the UI'); OBS_UI_PROXY=1 runs this test through web/tests/dev-server.mjs"
fi

shots=${OBS_SCREENSHOT_DIR:-$root/docs/img}
# ui-test.mjs loads the UI, then drives the two-teams story through the API
# while the page is open.
(cd "$root/web" && UI_BASE="$UI" ARTELD_URL="$ARTELD_URL" ADMIN_TOKEN="$ADMIN_TOKEN" \
  TEAM_A_TOKEN="$TEAM_A_TOKEN" TEAM_B_TOKEN="$TEAM_B_TOKEN" SCREENSHOT_DIR="$shots" node tests/ui-test.mjs)
