#!/bin/sh
# A test that cannot run because something it needs is missing (a tool such
# as promtool or chromium, a build output, node_modules) calls this with
# what is missing. Alone it prints "SKIP: ..." and exits 77, which CTest
# reports as skipped; under `make test` (CI), which sets
# ARTEL_REQUIRE_TOOLS=1, a missing tool is a failure instead, so that a
# machine without it can never pass by skipping (docs/testing.md).
if [ -n "${ARTEL_REQUIRE_TOOLS:-}" ] && [ "${ARTEL_REQUIRE_TOOLS}" != 0 ]; then
  echo "FAIL: $* (ARTEL_REQUIRE_TOOLS is set: make test needs every tool; scripts/install-deps.sh installs them)"
  exit 1
fi
echo "SKIP: $*"
exit 77
