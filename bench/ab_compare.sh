#!/usr/bin/env bash
# Compares one benchmark counter between an earlier commit and the working
# tree, measured by turns in one run (A, B, A, B, ...), so that a loaded or
# noisy machine slows both sides alike. Prints every value, sorted, and the
# medians and their ratio. Nothing is committed or changed in the checkout:
# the earlier commit is built in a git worktree under the build directory,
# with its own benchmark source (a benchmark whose shape changed in between
# compares different work: check `git diff BASE -- bench/`).
#
#   bench/ab_compare.sh BASE PROGRAM FILTER COUNTER [RUNS]
#
#   BASE     a commit (e.g. HEAD~3 or a hash)
#   PROGRAM  a benchmark target, e.g. bench_scheduler or bench_sim
#   FILTER   its --benchmark_filter, e.g. 'preemption-heavy'
#   COUNTER  a counter of that benchmark, e.g. preemption_decisions_per_s,
#            or real_time / cpu_time
#   RUNS     runs per side (default 10)
#
# Environment: AB_BUILD (the working tree's optimized build directory,
# default build-bench), AB_CMAKE_FLAGS (extra CMake flags for both builds),
# ARTEL_TRACES (default: ../shared/traces beside the checkout, for both).
# Example (docs/performance.md, preemption-heavy):
#   bench/ab_compare.sh 39c12ec bench_scheduler preemption-heavy preemption_decisions_per_s
set -euo pipefail

if (($# < 4)); then
  sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
base=$1 program=$2 filter=$3 counter=$4 runs=${5:-10}
root=$(git rev-parse --show-toplevel)
cd "$root"
build=${AB_BUILD:-build-bench}
base_hash=$(git rev-parse --verify "$base^{commit}") || {
  echo "ab_compare: $base is not a commit" >&2
  exit 2
}
worktree="$root/$build/ab-base-${base_hash:0:12}"
# Both sides read the same shared traces (the worktree has none beside it).
if [[ -z ${ARTEL_TRACES:-} && -d $root/../shared/traces ]]; then
  ARTEL_TRACES=$(cd "$root/../shared/traces" && pwd)
  export ARTEL_TRACES
fi

configure() {  # source dir, build dir
  cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release -DARTEL_BUILD_BENCH=ON \
    -DCMAKE_CXX_FLAGS="-fno-omit-frame-pointer -g" ${AB_CMAKE_FLAGS:-} >/dev/null
}

if [[ ! -d $worktree ]]; then
  git worktree add --detach "$worktree" "$base_hash" >/dev/null
fi
echo "ab_compare: building $program at ${base_hash:0:12} and in the working tree" >&2
configure "$worktree" "$worktree/build"
ninja -C "$worktree/build" "$program" >/dev/null
configure "$root" "$root/$build"
ninja -C "$root/$build" "$program" >/dev/null

out=$(mktemp)
trap 'rm -f "$out"' EXIT
one() {  # binary -> the counter's value (the JSON goes to a file: some programs print a summary)
  "$1" --benchmark_filter="$filter" --benchmark_out="$out" --benchmark_out_format=json >/dev/null 2>&1
  python3 -c '
import json, sys
counter = sys.argv[1]
runs = [b for b in json.load(sys.stdin)["benchmarks"] if b.get("run_type") != "aggregate"]
if not runs or counter not in runs[0]:
    sys.exit("ab_compare: no benchmark matched, or it has no counter " + counter)
print(runs[0][counter])' "$counter" <"$out"
}

a_bin="$worktree/build/bin/$program"
b_bin="$root/$build/bin/$program"
a_vals=() b_vals=()
for ((i = 1; i <= runs; i++)); do
  a_vals+=("$(one "$a_bin")")
  b_vals+=("$(one "$b_bin")")
  echo "run $i/$runs: base ${a_vals[-1]}  working tree ${b_vals[-1]}" >&2
done
python3 - "$counter" "${base_hash:0:12}" "${a_vals[*]}" "${b_vals[*]}" <<'EOF'
import statistics, sys
counter, base, a, b = sys.argv[1], sys.argv[2], sys.argv[3].split(), sys.argv[4].split()
a = sorted(float(x) for x in a)
b = sorted(float(x) for x in b)
fmt = lambda v: " ".join(f"{x:.6g}" for x in v)
ma, mb = statistics.median(a), statistics.median(b)
print(f"{counter}, {len(a)} runs each, by turns")
print(f"  base {base}: {fmt(a)}  median {ma:.6g}")
print(f"  working tree:      {fmt(b)}  median {mb:.6g}")
print(f"  working tree / base (medians): {mb / ma:.3f}" if ma else "  base median is 0")
EOF
