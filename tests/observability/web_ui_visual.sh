#!/usr/bin/env bash
# Screenshot test of the web UI (docs/ui.md, "Tests"): web/tests/visual-test.mjs
# draws every page from fixed data (web/tests/fixture-server.mjs) in Debian's
# headless chromium and compares each with web/tests/ref/*.png.
# Usage: web_ui_visual.sh REPO_ROOT       Exit 77 = skipped.
set -euo pipefail
root=${1:?usage: $0 REPO_ROOT}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh"
command -v node >/dev/null || obs_skip "node not installed (Debian nodejs; scripts/install-deps.sh)"
[[ -x ${CHROMIUM:-/usr/bin/chromium} ]] || obs_skip "chromium not installed (Debian chromium; scripts/install-deps.sh)"
[[ -d $root/web/node_modules/playwright-core ]] || obs_skip "web/node_modules missing: run 'npm ci' in web/ (scripts/install-deps.sh does)"
[[ -f $root/web/dist/index.html ]] || obs_fail "web/dist is missing: run 'npm run build' in web/"
cd "$root/web" && exec node tests/visual-test.mjs
