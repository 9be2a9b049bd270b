#!/usr/bin/env bash
# Checks the thread-safety annotations (src/base/thread_annotations.h) of
# the files that carry them with clang's -Wthread-safety, as errors. GCC
# builds ignore the annotations; this compiles each file with clang against
# libc++ (whose std::mutex and std::lock_guard are annotated), syntax only.
#
#   thread_safety_check.sh SRC_DIR [FILE...]    (files relative to SRC_DIR)
set -euo pipefail
src=$1
shift
files=("$@")
(( ${#files[@]} )) || files=(store/store.cc loop/control_loop.cc server/daemon.cc)
missing="$(dirname "$0")/../missing_tool.sh"
cxx=${ARTEL_CLANGXX:-$(command -v clang++-14 || command -v clang++ || true)}
[[ -n $cxx ]] || { "$missing" "clang++ not installed (Debian clang; scripts/install-deps.sh)"; exit $?; }
echo '#include <mutex>' | "$cxx" -x c++ -std=c++20 -stdlib=libc++ -fsyntax-only - 2>/dev/null ||
  { "$missing" "libc++ headers not installed (Debian libc++-14-dev; scripts/install-deps.sh)"; exit $?; }
rc=0
for f in "${files[@]}"; do
  if "$cxx" -fsyntax-only -std=c++20 -stdlib=libc++ -D_LIBCPP_ENABLE_THREAD_SAFETY_ANNOTATIONS \
      -Wthread-safety -Werror=thread-safety -Wno-unknown-warning-option -I"$src" "$src/$f" 2>&1; then
    echo "ok: $f"
  else
    echo "FAIL: $f (thread-safety annotations, above)"
    rc=1
  fi
done
exit $rc
