#!/usr/bin/env bash
# The committed web/dist is what web/src builds to (web/build.mjs --check).
# Usage: web_dist_check.sh REPO_ROOT        Exit 77 = skipped.
set -euo pipefail
root=${1:?usage: $0 REPO_ROOT}
command -v node >/dev/null || { "$(dirname "$0")/../missing_tool.sh" "node not installed (Debian nodejs)"; exit $?; }
[[ -d $root/web/node_modules/esbuild ]] || { "$(dirname "$0")/../missing_tool.sh" "web/node_modules missing: run 'npm ci' in web/"; exit $?; }
cd "$root/web" && node build.mjs --check
