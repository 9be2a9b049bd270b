#!/usr/bin/env bash
# Reservations with backfill, and the minimum runtime, off and on over real
# traces (issue 15 §4; docs/performance.md, "Time limits on real traces").
#
# For each trace and each cluster size, replays the whole trace with
# `artel sim --auto-queues --estimate-factor F` twice, with reservations off
# and with `--reserve-after R`, and prints one markdown row per replay: the
# p50 / p95 wait of jobs of 32 GPUs or more and of 1-GPU jobs, utilisation,
# preemptions, lost GPU-hours, the replay's wall time, and, on the "on" row,
# the issue's three checks (p95 of large jobs at most half; utilisation
# within 2 points; 1-GPU p50 at most 10% worse). Then, at the sizes given
# with --min-runtime-at, the minimum runtime (`--min-runtime M
# --reclaim-min-runtime M`, no reservations), alone and with each
# preemption delay of --preemption-delays (`--preemption-delay D`; a job
# must have been pending D before it may evict): preemptions, the youngest
# run a preemption ended, lost GPU-hours, the large jobs' p95 wait, the
# reclaims' mean and longest latency (over every tenant's reclaims), and the
# target's two checks against the row without protections (no preemption of
# a run younger than M; lost GPU-hours fall).
#
# Sizes are fractions of the trace's own default size (`artel sim
# --auto-queues` without --gpus: the 99th percentile over time of the
# trace's GPU demand), so the same fractions load both traces alike.
#
# Usage: bench/time_limits_traces.sh [--fractions 1,0.9,0.8,0.75,0.7]
#          [--estimate-factor 1.5] [--reserve-after 30m] [--min-runtime 10m]
#          [--min-runtime-at 0.8] [--preemption-delays 10m,1h] [--traces philly,itp]
# Environment: ARTEL (default build/bin/artel; a Release build: replays with
# reservations at the heavier loads take minutes), ARTEL_TRACES (default
# ../shared/traces). The traces are not in the repository (their excerpt
# under tests/data/traces has no job of 32 GPUs or more); without them the
# script says so and exits 0.
set -euo pipefail
cd "$(dirname "$0")/.."

ARTEL=${ARTEL:-build/bin/artel}
TRACES=${ARTEL_TRACES:-../shared/traces}
FRACTIONS=1,0.9,0.8,0.75,0.7
EF=1.5
RA=30m
MR=10m
MR_AT=0.8
DELAYS=10m,1h
WHICH=philly,itp
while (($#)); do
  case $1 in
    --fractions) FRACTIONS=$2; shift 2 ;;
    --estimate-factor) EF=$2; shift 2 ;;
    --reserve-after) RA=$2; shift 2 ;;
    --min-runtime) MR=$2; shift 2 ;;
    --min-runtime-at) MR_AT=$2; shift 2 ;;
    --preemption-delays) DELAYS=$2; shift 2 ;;
    --traces) WHICH=$2; shift 2 ;;
    -h|--help) sed -n '2,32p' "$0"; exit 0 ;;
    *) echo "time_limits_traces: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
command -v jq >/dev/null || { echo "time_limits_traces: jq is missing (scripts/install-deps.sh installs it)" >&2; exit 1; }
[[ -x $ARTEL ]] || { echo "time_limits_traces: $ARTEL is not built (cmake --build build --target artel)" >&2; exit 1; }

declare -A PATHS=([philly]=$TRACES/philly_vc_sia/philly.csv [itp]=$TRACES/msft_itp/itp_all_clusters.csv)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# replay OUT ARGS...: one replay into $TMP/OUT; prints its wall seconds.
replay() {
  local out=$TMP/$1
  shift
  local t0 t1
  t0=$(date +%s.%N)
  "$ARTEL" sim --no-png -q --out "$out" "$@" >"$out.log" 2>&1 || {
    echo "time_limits_traces: artel sim $* failed:" >&2
    cat "$out.log" >&2
    exit 1
  }
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }'
}

# field OUT JQ: a field of the replay's cluster object.
field() { jq -r ".runs[0].cluster | $2" "$TMP/$1/report.json"; }
wait_of() { field "$1" "[.waitBySize[] | select(.label == \"$2\")][0].waitSeconds.$3"; }
hours() { awk -v s="$1" 'BEGIN { printf "%.1f", s / 3600 }'; }

for name in ${WHICH//,/ }; do
  trace=${PATHS[$name]:-}
  if [[ -z $trace ]]; then
    echo "time_limits_traces: unknown trace $name (philly or itp)" >&2
    exit 2
  fi
  if [[ ! -r $trace ]]; then
    echo "SKIP $name: $trace is not here (set ARTEL_TRACES to the directory of ../shared/traces)"
    continue
  fi
  "$ARTEL" sim --trace "$trace" --auto-queues --no-png -q --out "$TMP/size" >"$TMP/size.log" 2>&1
  full=$(jq -r '.runs[0].cluster.capacityGpus | floor' "$TMP/size/report.json")
  echo
  echo "### $name ($trace): default size $full GPUs; estimate factor $EF; reservations after $RA"
  echo
  echo "| GPUs (fraction) | reservations | ≥32 GPUs p50 / p95 (h) | 1 GPU p50 (s) / p95 (h) | utilisation | preemptions | lost GPU-h | replay | checks |"
  echo "|---|---|---|---|---|---|---|---|---|"
  for f in ${FRACTIONS//,/ }; do
    gpus=$(awk -v n="$full" -v f="$f" 'BEGIN { printf "%d", n * f + 0.5 }')
    common=(--trace "$trace" --auto-queues --gpus "$gpus" --estimate-factor "$EF")
    woff=$(replay off "${common[@]}")
    won=$(replay on "${common[@]}" --reserve-after "$RA")
    for side in off on; do
      wall=$woff
      [[ $side == on ]] && wall=$won
      checks=""
      if [[ $side == on ]]; then
        checks=$(jq -rn --slurpfile a "$TMP/off/report.json" --slurpfile b "$TMP/on/report.json" '
          def w(r; l; q): [r[0].runs[0].cluster.waitBySize[] | select(.label == l)][0].waitSeconds[q];
          (w($a; "32 or more"; "p95")) as $l0 | (w($b; "32 or more"; "p95")) as $l1 |
          (w($a; "1"; "p50")) as $s0 | (w($b; "1"; "p50")) as $s1 |
          ($a[0].runs[0].cluster.utilization) as $u0 | ($b[0].runs[0].cluster.utilization) as $u1 |
          [ (if $l0 == 0 then "large p95 0 (nothing to halve)" elif $l1 <= $l0 / 2 then "large p95 halved: yes"
             else "large p95 halved: NO" end),
            (if (($u1 - $u0) | fabs) <= 0.02 then "util: yes" else "util: NO" end),
            (if $s1 <= $s0 * 1.1 then "1-GPU p50: yes" else "1-GPU p50: NO" end) ] | join("; ")')
      fi
      printf '| %s (%s) | %s | %s / %s | %s / %s | %.2f%% | %s | %.0f | %s s | %s |\n' \
        "$gpus" "$f" "$side" \
        "$(hours "$(wait_of $side '32 or more' p50)")" "$(hours "$(wait_of $side '32 or more' p95)")" \
        "$(wait_of $side 1 p50 | awk '{ printf "%d", $1 }')" "$(hours "$(wait_of $side 1 p95)")" \
        "$(field $side '.utilization * 100')" "$(field $side .preemptions)" "$(field $side .gpuHoursLost)" \
        "$wall" "$checks"
    done
  done
  for f in ${MR_AT//,/ }; do
    gpus=$(awk -v n="$full" -v f="$f" 'BEGIN { printf "%d", n * f + 0.5 }')
    common=(--trace "$trace" --auto-queues --gpus "$gpus" --estimate-factor "$EF")
    replay off "${common[@]}" >/dev/null
    replay mr "${common[@]}" --min-runtime "$MR" --reclaim-min-runtime "$MR" >/dev/null
    sides=(off mr)
    for d in ${DELAYS//,/ }; do
      replay "mr-$d" "${common[@]}" --min-runtime "$MR" --reclaim-min-runtime "$MR" --preemption-delay "$d" >/dev/null
      replay "pd-$d" "${common[@]}" --preemption-delay "$d" >/dev/null
      sides+=("mr-$d" "pd-$d")
    done
    # The minimum runtime in seconds (forms like 90s, 10m, 1h30m).
    mr_s=$(awk -v d="$MR" 'BEGIN { t = 0; u["h"] = 3600; u["m"] = 60; u["s"] = 1
      while (match(d, /^[0-9.]+[hms]?/)) { p = substr(d, 1, RLENGTH); d = substr(d, RLENGTH + 1)
        k = substr(p, length(p)); t += (k in u) ? substr(p, 1, length(p) - 1) * u[k] : p }
      print t }')
    echo
    echo "Minimum runtime and preemption delay at $gpus GPUs ($f), no reservations:"
    echo
    echo "| minimum runtime (and before reclaim) | preemption delay | preemptions | youngest preempted run | lost GPU-h | ≥32 GPUs p95 (h) | reclaim latency mean / max (min) | utilisation | checks |"
    echo "|---|---|---|---|---|---|---|---|---|"
    for side in "${sides[@]}"; do
      label=none delay=none
      [[ $side == mr* ]] && label=$MR
      [[ $side == *-* ]] && delay=${side#*-}
      checks=""
      if [[ $side != off ]]; then
        checks=$(jq -rn --slurpfile a "$TMP/off/report.json" --slurpfile b "$TMP/$side/report.json" --argjson m "$mr_s" \
          --argjson protected "$([[ $side == mr* ]] && echo true || echo false)" '
          ($a[0].runs[0].cluster.gpuHoursLost) as $l0 | ($b[0].runs[0].cluster.gpuHoursLost) as $l1 |
          ($b[0].runs[0].cluster.youngestPreemptedRunSeconds) as $y |
          [ (if $protected | not then empty elif $y == null or $y >= $m then "none younger: yes" else "none younger: NO" end),
            (if $l1 < $l0 then "lost falls: yes (\((100 * ($l1 - $l0) / $l0) | round)%)"
             else "lost falls: NO (+\((100 * ($l1 - $l0) / $l0) | round)%)" end) ] | join("; ")')
      fi
      reclaim=$(jq -r '[.runs[0].tenants[] | select(.reclaims > 0)] |
        if length == 0 then "-" else
          "\(((map(.reclaimLatencyMeanSeconds * .reclaims) | add) / (map(.reclaims) | add) / 60) | . * 10 | round / 10) / \((map(.reclaimLatencyMaxSeconds) | max) / 60 | . * 10 | round / 10)"
        end' "$TMP/$side/report.json")
      printf '| %s | %s | %s | %s s | %.0f | %s | %s | %.2f%% | %s |\n' "$label" "$delay" "$(field "$side" .preemptions)" \
        "$(field "$side" .youngestPreemptedRunSeconds)" "$(field "$side" .gpuHoursLost)" \
        "$(hours "$(wait_of "$side" '32 or more' p95)")" "$reclaim" "$(field "$side" '.utilization * 100')" "$checks"
    done
  done
done
