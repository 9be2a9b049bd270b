#!/usr/bin/env bash
# The differential run of the scenario corpus against real Kueue (issue 13
# §3; docs/semantics.md, "Differential run against real Kueue"). For each
# side, one control plane (scripts/k8s-up.sh: etcd + kube-apiserver with
# Kueue's CRDs) and one controller serve every scenario; the driver
# (tests/kube/kueue_diff.cc, binary kueue_diff) plays the scenarios on it,
# each under a name prefix of its own, in --jobs parallel shards.
#
#   tests/kube/kueue_diff.sh [--sides kueue,artel] [--jobs N] [--settle-ms MS]
#                            [--known FILE] [--out DIR] (--list FILE | PATH...)
#   tests/kube/kueue_diff.sh --report-only --out DIR [--known FILE]   the report of a past run
#
# Sides: kueue = Kueue's minimalkueue (its core controllers and scheduler;
# it has no fair-sharing option, so fair-sharing scenarios are skipped there);
# artel = arteld in Kubernetes mode, started twice on the same control plane:
# without --fair-sharing for the scenarios without it, then with it.
#
# Verdicts per scenario and side (the driver's): AGREE, DIFFER, ERROR,
# ENGINE-FAIL, SKIP (not comparable, with the reason). --known FILE lists
# explained disagreements, one per line: `SIDE FILE::NAME CLASS reason...`
# (CLASS: timing, deliberate, bug or open); a DIFFER or ERROR listed there
# counts as explained, except with class open. Exit status 0 when every played scenario agrees or is
# explained, 1 otherwise. Files: DIR (default a new /tmp/artel-kueue-diff-*)
# keeps each side's driver output and controller log; report.txt is the
# summary.
#
# Binaries: control plane from $ARTEL_K8S_BIN (else <repo>/build-k8s/bin),
# kueue-minimalkueue from $ARTEL_KUEUE_BIN (else the same folder;
# tools/k8s/build-kueue.sh), arteld from $ARTELD and the driver from
# $KUEUE_DIFF (else <repo>/build/bin/{arteld,kueue_diff}).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BIN=${ARTEL_K8S_BIN:-$root/build-k8s/bin}
KBIN=${ARTEL_KUEUE_BIN:-$BIN}
ARTELD=${ARTELD:-$root/build/bin/arteld}
DRIVER=${KUEUE_DIFF:-$root/build/bin/kueue_diff}
sides=kueue,artel jobs=4 settle="" known="" out="" paths=() report_only=0
while (($#)); do
  case $1 in
    --sides) sides=$2; shift ;;
    --jobs) jobs=$2; shift ;;
    --settle-ms) settle=$2; shift ;;
    --known) known=$2; shift ;;
    --out) out=$2; shift ;;
    --list) paths+=(--list "$2"); shift ;;
    --report-only) report_only=1 ;;
    -h | --help) sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "kueue_diff.sh: unknown option $1" >&2; exit 2 ;;
    *) paths+=("$1") ;;
  esac
  shift
done
die() { echo "kueue_diff.sh: $*" >&2; exit 1; }
((${#paths[@]} || report_only)) || die "no scenarios (--list FILE or PATH...)"
[[ $jobs =~ ^[1-9][0-9]*$ ]] || die "--jobs: a positive number"
for b in kube-apiserver etcd kubectl; do
  [[ -x $BIN/$b ]] || die "missing $BIN/$b: run tools/k8s/build.sh (make k8s) or set ARTEL_K8S_BIN"
done
[[ -x $DRIVER ]] || die "missing $DRIVER: build the kueue_diff target or set KUEUE_DIFF"
[[ $sides != *kueue* || -x $KBIN/kueue-minimalkueue ]] ||
  die "missing $KBIN/kueue-minimalkueue: run tools/k8s/build-kueue.sh (make k8s) or set ARTEL_KUEUE_BIN"
[[ $sides != *artel* || -x $ARTELD ]] || die "missing $ARTELD: build arteld or set ARTELD"
[[ -z $known || -f $known ]] || die "no file $known"
[[ -n $out ]] || out=$(mktemp -d "${TMPDIR:-/tmp}/artel-kueue-diff-XXXXXX")
mkdir -p "$out"
out=$(cd "$out" && pwd)

cluster="" ctl_pid="" driver_pids=()
stop_pid() {
  local pid=$1
  [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
}
cleanup() {
  local p
  for p in "${driver_pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  driver_pids=()
  stop_pid "$ctl_pid"; ctl_pid=""
  if [[ -n $cluster ]]; then
    ARTEL_K8S_BIN=$BIN "$root/scripts/k8s-up.sh" stop "$cluster" >/dev/null 2>&1 || true
    rm -rf "$cluster"
  fi
  cluster=""
}
trap cleanup EXIT

# wait_log FILE PATTERN SECONDS PID
wait_log() {
  local deadline=$(($(date +%s) + $3))
  until grep -q -E -- "$2" "$1" 2>/dev/null; do
    kill -0 "$4" 2>/dev/null || return 1
    (($(date +%s) < deadline)) || return 1
    sleep 0.1
  done
}

start_controller() {  # side log [arteld flags...]
  local side=$1 log=$2 ready
  shift 2
  case $side in
    kueue)
      "$KBIN/kueue-minimalkueue" --kubeconfig "$cluster/kubeconfig" --zap-log-level=info >"$log" 2>&1 </dev/null &
      ready="clusterqueue-reconciler.*Starting workers"
      ;;
    artel)
      "$ARTELD" --kubeconfig "$cluster/kubeconfig" --listen 127.0.0.1:0 "$@" >"$log" 2>&1 </dev/null &
      ready="listening on"
      ;;
  esac
  ctl_pid=$!
  wait_log "$log" "$ready" 120 "$ctl_pid" || { tail -20 "$log" >&2; die "[$side] the controller did not start ($log)"; }
}

# The quiet interval that counts as settled: longer than the controller's
# own batching. Kueue requeues inadmissible Workloads in batches of 1 s
# (pkg/cache/queue/inadmissible_workloads.go, requeueBatchPeriod), so 1.5 s
# there; arteld schedules on every change (debounced), 0.8 s.
settle_for() { if [[ -n $settle ]]; then echo "$settle"; elif [[ $1 == kueue ]]; then echo 1500; else echo 800; fi; }

run_driver() {  # side fair-sharing-mode out-file
  local side=$1 mode=$2 file=$3 i p
  for ((i = 0; i < jobs; i++)); do
    "$DRIVER" --kubeconfig "$cluster/kubeconfig" --prefix "${side:0:1}${mode:0:2}" --settle-ms "$(settle_for "$side")" \
      --fair-sharing "$mode" --shard "$i/$jobs" "${paths[@]}" >"$file.$i" 2>&1 &
    driver_pids+=($!)
  done
  for p in "${driver_pids[@]}"; do wait "$p" || true; done
  driver_pids=()
  # A shard that died (a crash, a sanitizer report) has no summary line:
  # that is an error of its own, so that lost scenarios never pass silently.
  for ((i = 0; i < jobs; i++)); do
    grep -q '^kueue_diff:' "$file.$i" ||
      echo "ERROR shard-$i: driver  (the driver did not finish; see its output: $(tail -3 "$file.$i" | tr '\n' ' '))" >>"$file.$i"
  done
  cat "$file".[0-9]* | { grep -v '^kueue_diff:' || true; } >"$file"
  rm -f "$file".[0-9]*
  return 0
}

IFS=, read -r -a side_list <<<"$sides"
for side in "${side_list[@]}"; do
  [[ $side == kueue || $side == artel ]] || die "unknown side '$side' (kueue, artel)"
  ((report_only)) && continue
  t0=$(date +%s)
  cluster=$(mktemp -d "${TMPDIR:-/tmp}/artel-kueue-diff-cluster-XXXXXX")
  ARTEL_K8S_BIN=$BIN "$root/scripts/k8s-up.sh" start "$cluster" --owner-pid $$ >"$out/$side-k8s-up.log" 2>&1 ||
    { cat "$out/$side-k8s-up.log" >&2; die "[$side] the control plane did not start"; }
  : >"$out/$side.txt"
  if [[ $side == kueue ]]; then
    start_controller kueue "$out/kueue-controller.log"
    run_driver kueue unsupported "$out/kueue.part"
    cat "$out/kueue.part" >>"$out/$side.txt"
  else
    start_controller artel "$out/artel-controller.log"
    run_driver artel off "$out/artel.part"
    cat "$out/artel.part" >>"$out/$side.txt"
    stop_pid "$ctl_pid"; ctl_pid=""
    start_controller artel "$out/artel-fs-controller.log" --fair-sharing
    run_driver artel on "$out/artel.part"
    cat "$out/artel.part" >>"$out/$side.txt"
  fi
  rm -f "$out/$side.part"
  cleanup
  echo "kueue_diff.sh: [$side] $(($(date +%s) - t0)) s" >&2
done

# The report: per side, the verdict counts; every DIFFER/ERROR with its
# classification from --known (or UNEXPLAINED).
unexplained=0
{
  echo "kueue_diff: Kueue $(cat "$KBIN/KUEUE_VERSION" 2>/dev/null || echo '?'), $(date -u +%Y-%m-%d)"
  for side in "${side_list[@]}"; do
    awk -v side="$side" -v known="$known" '
      BEGIN { if (known != "") while ((getline l < known) > 0) {
                if (l ~ /^#/ || l == "") continue
                n = split(l, f, " "); if (f[1] != side && f[1] != "both") continue
                k[f[2]] = f[3] } }
      /^(AGREE|DIFFER|ERROR|ENGINE-FAIL|SKIP) / {
        v = $1; id = $2; sub(/:$/, "", id); id = id "::" $3
        if (v == "DIFFER" || v == "ERROR" || v == "ENGINE-FAIL") {
          if ((id in k) && k[id] != "open") { v = "EXPLAINED-" k[id]; print "  " side " " v " " id }
          else if (id in k) { v = "OPEN"; print "  " side " OPEN " $1 " " id; un++ }
          else { print "  " side " UNEXPLAINED " $1 " " id; un++ }
        }
        c[v]++
      }
      END { s = side ":"; for (v in c) s = s " " v "=" c[v]; print s; exit (un > 0) }' "$out/$side.txt" ||
      unexplained=1
  done
} | tee "$out/report.txt"
grep -q -E ' (UNEXPLAINED|OPEN) ' "$out/report.txt" && unexplained=1
echo "kueue_diff.sh: details in $out" >&2
exit "$unexplained"
