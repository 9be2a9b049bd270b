#!/usr/bin/env bash
# Kueue's own scalability harness, run on real Kueue and on arteld, one after
# the other, each on a fresh control plane (issue 13 §2; docs/performance.md,
# "Side by side with real Kueue"). `make bench-kueue` runs it.
#
#   bench/kueue_side_by_side.sh [--config baseline|tas|FILE] [--range FILE]
#                               [--sides kueue,artel[,kueue-floor,artel-floor]]
#                               [--timeout 30m] [--cohorts N] [--out DIR] [--keep]
#
# For each side: scripts/k8s-up.sh starts etcd + kube-apiserver with Kueue's
# CRDs (no kubelet, no scheduler: the runner plays the Workloads' execution
# itself); the controller starts with the admin kubeconfig (kueue:
# Kueue's minimalkueue, its core controllers and scheduler; artel: arteld in
# Kubernetes mode) and the script waits until it has synced; then Kueue's
# runner (test/performance/scheduler/runner, in-cluster mode, qps 1000 burst
# 2000 as Kueue's `run-performance-scheduler-in-cluster` target) creates the
# generator config's cohorts, ClusterQueues, LocalQueues and Workloads, marks
# each admitted Workload Finished after its runtime, unsets the quota of
# evicted ones (as a job integration would) and records admission times
# until no ClusterQueue has pending or reserving Workloads. The controller's
# and the API server's CPU seconds (utime+stime, /proc/PID/stat) are taken
# from the runner's start to the recorder's end, the controller's peak RSS is
# its VmHWM then; Kueue's checker (its `rangespec` test, built with go test
# -c) judges each side's summary against the config's rangespec.yaml, with
# the controller's figures as its command stats.
#
# Prints one table, both sides side by side: drain time (generator start to
# the recorder's end), mean (Kueue's summary) and p90 (from wlStates.csv)
# time to admission per workload class, admissions per second, the
# controller's and the API server's CPU seconds, the controller's peak RSS,
# etcd's and the runner's CPU seconds, the machine's busy CPU seconds (all
# processes), and the checker's verdict. Also the lower bound on the drain
# time that the generated demand allows (per cohort: sum of request x runtime over its
# nominal quota; and the last creation plus its runtime).
#
# Floor sides (--sides ...,kueue-floor,artel-floor): the same controller on
# the same Workloads, but with every ClusterQueue's nominal quota raised to
# 100000, so that no Workload waits for quota. Their drain time is what the
# control plane and the runner allow with that controller when the quota
# bounds nothing: the floor under the drain time of the side of the same
# name on this machine. The report also gives each side's finish lag: how
# long after its runtime ended the runner marked a Workload Finished (its
# controller finishes Workloads one at a time), during which the Workload
# still holds its quota.
#
# --cohorts N runs the config with N cohorts in its (first) cohort set
# instead of its own count: the same shape per cohort, so the same lower
# bound, with fewer Workloads (baseline: 3,000 per cohort).
#
# A side that has not drained after --timeout (default 30m) is stopped: the
# runner gets SIGTERM and writes the summary of what it recorded, and the
# report marks that side INCOMPLETE.
#
# Files: DIR (default a new /tmp/artel-kueue-bench-*) keeps, per side,
# summary.yaml, wlStates.csv, cqStates.csv, the runner's and the
# controller's logs, the checker's output and stats.yaml (and for arteld its
# artel_kube_* counters at the recorder's end, controller-metrics.txt); the clusters are
# stopped at the end (--keep leaves them running).
#
# Binaries: control plane from $ARTEL_K8S_BIN (else <repo>/build-k8s/bin);
# kueue-minimalkueue, kueue-runner, kueue-checker from $ARTEL_KUEUE_BIN (else
# the same folder; tools/k8s/build-kueue.sh builds them); arteld from
# $ARTELD (else <repo>/build/bin/arteld, which the Makefile target builds),
# started with $ARTELD_FLAGS besides its own (e.g. "--kube-writers 4").
# Generator configs come from the pinned Kueue module in the module cache.
set -euo pipefail
export GOTOOLCHAIN=local
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${ARTEL_K8S_BIN:-$root/build-k8s/bin}
KBIN=${ARTEL_KUEUE_BIN:-$BIN}
ARTELD=${ARTELD:-$root/build/bin/arteld}
config=baseline range="" sides=kueue,artel timeout=30m out="" keep=0 cohorts=""
while (($#)); do
  case $1 in
    --config) config=$2; shift ;;
    --range) range=$2; shift ;;
    --sides) sides=$2; shift ;;
    --cohorts) cohorts=$2; shift ;;
    --timeout) timeout=$2; shift ;;
    --out) out=$2; shift ;;
    --keep) keep=1 ;;
    -h | --help) sed -n '2,65p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "kueue_side_by_side: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
die() { echo "kueue_side_by_side: $*" >&2; exit 1; }
for b in kube-apiserver etcd kubectl; do
  [[ -x $BIN/$b ]] || die "missing $BIN/$b: run tools/k8s/build.sh or set ARTEL_K8S_BIN"
done
for b in kueue-minimalkueue kueue-runner kueue-checker; do
  [[ -x $KBIN/$b ]] || die "missing $KBIN/$b: run tools/k8s/build-kueue.sh or set ARTEL_KUEUE_BIN"
done
[[ $sides == *artel* && ! -x $ARTELD ]] && die "missing $ARTELD: build arteld (Release) or set ARTELD"

# Kueue's generator configs, from the module cache.
if [[ $config != */* ]]; then
  kdir=$(cd "$root/tools/k8s/kueue" && GOFLAGS=-mod=readonly go list -m -f '{{.Dir}}' sigs.k8s.io/kueue 2>/dev/null || true)
  [[ -n $kdir && -d $kdir ]] || die "sigs.k8s.io/kueue not in the module cache (cd tools/k8s/kueue && go mod download)"
  cdir=$kdir/test/performance/scheduler/configs/$config
  [[ -f $cdir/generator.yaml ]] || die "no generator config '$config' in $kdir/test/performance/scheduler/configs"
  [[ -z $range ]] && range=$cdir/rangespec.yaml
  config=$cdir/generator.yaml
fi
[[ -f $config ]] || die "no generator config $config"
case $timeout in
  *h) timeout_s=$((${timeout%h} * 3600)) ;;
  *m) timeout_s=$((${timeout%m} * 60)) ;;
  *s) timeout_s=${timeout%s} ;;
  *) timeout_s=$timeout ;;
esac
[[ $timeout_s =~ ^[0-9]+$ ]] || die "--timeout: expected a whole number of s, m or h, got '$timeout'"
[[ -z $range || -f $range ]] || die "no range spec $range"

[[ -n $out ]] || out=$(mktemp -d "${TMPDIR:-/tmp}/artel-kueue-bench-XXXXXX")
mkdir -p "$out"
out=$(cd "$out" && pwd)
if [[ -n $cohorts ]]; then
  [[ $cohorts =~ ^[1-9][0-9]*$ ]] || die "--cohorts: expected a positive number, got '$cohorts'"
  # The cohort set's count is the first key "count" at the cohort set's indentation (4).
  awk -v n="$cohorts" '!done && /^    count:[[:space:]]*[0-9]+[[:space:]]*$/ { print "    count: " n; done = 1; next } { print }
       END { if (!done) exit 1 }' "$config" >"$out/generator.yaml" ||
    die "--cohorts: no cohort count found in $config"
  config=$out/generator.yaml
fi
# The floor sides' config: every nominal quota 100000.
if [[ $sides == *-floor* ]]; then
  awk '/^[[:space:]]*nominalQuota:[[:space:]]*[0-9]+[[:space:]]*$/ { sub(/nominalQuota:.*/, "nominalQuota: 100000") } { print }' \
    "$config" >"$out/floor-generator.yaml"
  grep -q "nominalQuota: 100000" "$out/floor-generator.yaml" || die "floor sides: no nominalQuota in $config"
fi
echo "kueue_side_by_side: config $config; results in $out; load average $(cut -d' ' -f1-3 /proc/loadavg)"

cluster="" ctl_pid="" runner_pid=""
stop_pid() {  # pid: TERM, wait up to 10 s, KILL
  local pid=$1
  [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
}
stop_side() {
  stop_pid "$runner_pid"; runner_pid=""
  stop_pid "$ctl_pid"; ctl_pid=""
  if [[ -n $cluster ]]; then
    if ((keep)); then
      echo "kueue_side_by_side: cluster left running in $cluster (stop: scripts/k8s-up.sh stop $cluster)"
    else
      ARTEL_K8S_BIN=$BIN "$root/scripts/k8s-up.sh" stop "$cluster" || true
      rm -rf "$cluster"
    fi
  fi
  cluster=""
}
trap stop_side EXIT

# CPU ticks (utime+stime) of a process, and its peak RSS in KiB.
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat" 2>/dev/null || echo 0; }
hwm() { awk '/^VmHWM:/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }
HZ=$(getconf CLK_TCK)
# Busy CPU ticks of the whole machine (all but idle and iowait), from /proc/stat.
busy_ticks() { awk '$1 == "cpu" { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat; }
# Requests the API server has dispatched for the controller's FlowSchema.
ctl_requests() {
  "$BIN/kubectl" --kubeconfig "$1" get --raw /metrics 2>/dev/null |
    awk '/^apiserver_flowcontrol_dispatched_requests_total\{/ && /flow_schema="bench-controller"/ { s += $NF }
         END { printf "%d\n", s }'
}
now_ms() { date +%s%3N; }

# wait_log FILE PATTERN SECONDS PID: until FILE has PATTERN (false if PID exits or time runs out).
wait_log() {
  local deadline=$(($(date +%s) + $3))
  until grep -q -E -- "$2" "$1" 2>/dev/null; do
    kill -0 "$4" 2>/dev/null || return 1
    (($(date +%s) < deadline)) || return 1
    sleep 0.2
  done
}

run_side() {  # kueue|artel|kueue-floor|artel-floor
  local side=$1 sdir=$out/$1 ctl=${1%-floor} cfg=$config
  [[ $side == *-floor ]] && cfg=$out/floor-generator.yaml
  mkdir -p "$sdir"
  cp "$cfg" "$sdir/generator.yaml"
  cluster=$(mktemp -d "${TMPDIR:-/tmp}/artel-kueue-cluster-XXXXXX")
  echo "kueue_side_by_side: [$side] starting the control plane in $cluster"
  ARTEL_K8S_BIN=$BIN "$root/scripts/k8s-up.sh" start "$cluster" --owner-pid $$ >"$sdir/k8s-up.log" 2>&1 ||
    { cat "$sdir/k8s-up.log" >&2; die "[$side] control plane did not start"; }
  local kc=$cluster/kubeconfig ctl_kc api_pid etcd_pid ready
  api_pid=$(awk '$1 == "kube-apiserver" { print $2 }' "$cluster/pids")
  etcd_pid=$(awk '$1 == "etcd" { print $2 }' "$cluster/pids")
  # The controller runs as a user of its own (cluster-admin, not in
  # system:masters) with a FlowSchema of its own, so that the API server
  # counts its requests apart (apiserver_request_total has no user label).
  ctl_kc=$(ARTEL_K8S_BIN=$BIN "$root/scripts/k8s-up.sh" user "$cluster" bench-controller bench-controllers)
  "$BIN/kubectl" --kubeconfig "$kc" create clusterrolebinding bench-controller \
    --clusterrole cluster-admin --user bench-controller >/dev/null
  "$BIN/kubectl" --kubeconfig "$kc" apply -f - >/dev/null <<'EOF'
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: bench-controller}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 100
    lendablePercent: 0
    limitResponse: {type: Queue, queuing: {queues: 64, handSize: 6, queueLengthLimit: 1000}}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: bench-controller}
spec:
  matchingPrecedence: 2
  priorityLevelConfiguration: {name: bench-controller}
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects: [{kind: User, user: {name: bench-controller}}]
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], clusterScope: true, namespaces: ["*"]}]
    nonResourceRules: [{verbs: ["*"], nonResourceURLs: ["*"]}]
EOF
  case $ctl in
    kueue)
      # Info level (its default is errors only) for the readiness line;
      # Kueue's own run logs at level 2.
      # A config with a topology (Kueue's `tas`) needs minimalkueue's TAS
      # controllers and indexers, off by default (Kueue's own
      # run-tas-performance-scheduler target passes --enableTAS=true).
      local tas=()
      grep -q '^topology:' "$cfg" && tas=(--enableTAS=true)
      "$KBIN/kueue-minimalkueue" --kubeconfig "$ctl_kc" --zap-log-level=info "${tas[@]}" \
        >"$sdir/controller.log" 2>&1 </dev/null &
      ready="clusterqueue-reconciler.*Starting workers"
      ;;
    artel)
      # shellcheck disable=SC2086 # ARTELD_FLAGS: extra flags, split on spaces
      "$ARTELD" --kubeconfig "$ctl_kc" --listen 127.0.0.1:0 ${ARTELD_FLAGS:-} >"$sdir/controller.log" 2>&1 </dev/null &
      ready="listening on"
      ;;
  esac
  ctl_pid=$!
  wait_log "$sdir/controller.log" "$ready" 120 "$ctl_pid" ||
    { tail -20 "$sdir/controller.log" >&2; die "[$side] the controller did not start (log: $sdir/controller.log)"; }

  local c0 a0 e0 m0 t0 t1 c1 a1 e1 m1 n1 peak r0 r1 rc=0
  r0=$(ctl_requests "$kc")
  c0=$(ticks "$ctl_pid") a0=$(ticks "$api_pid") e0=$(ticks "$etcd_pid") m0=$(busy_ticks) t0=$(now_ms)
  echo "kueue_side_by_side: [$side] runner started (controller pid $ctl_pid; log $sdir/runner.log)"
  # The runner's own --timeout ends it with an error and no summary; so the
  # script enforces the timeout itself with SIGTERM, on which the runner
  # writes the summary of what it recorded (the report then says INCOMPLETE).
  KUBECONFIG=$kc "$KBIN/kueue-runner" --o "$sdir" --generatorConfig "$cfg" --qps=1000 --burst=2000 \
    --timeout "$((timeout_s + 3600))s" >"$sdir/runner.log" 2>&1 </dev/null &
  runner_pid=$!
  # The recorder's end is the end of the measured window: the runner then
  # writes its files and deletes what it created.
  local deadline=$(($(date +%s) + timeout_s))
  until grep -q -e "Recorder done" -e "Recorder run" "$sdir/runner.log" 2>/dev/null; do
    kill -0 "$runner_pid" 2>/dev/null || break
    if (($(date +%s) >= deadline)); then
      echo "kueue_side_by_side: [$side] not drained within $timeout: stopping the runner (its summary is partial)" >&2
      kill -TERM "$runner_pid" 2>/dev/null || true
      deadline=$((deadline + 3600))
    fi
    sleep 0.2
  done
  t1=$(now_ms) c1=$(ticks "$ctl_pid") a1=$(ticks "$api_pid") e1=$(ticks "$etcd_pid") m1=$(busy_ticks)
  n1=$(ticks "$runner_pid") peak=$(hwm "$ctl_pid")
  r1=$(ctl_requests "$kc")
  if [[ $ctl == artel ]]; then
    # arteld's own counters at the recorder's end (status writes, Events
    # posted and dropped, pending explanations): what its requests went to;
    # and its scheduling passes and the seconds they took.
    local url
    url=$(sed -n 's/^listening on \(http[^ ]*\).*/\1/p' "$sdir/controller.log" | head -1)
    [[ -n $url ]] && curl -fsS "$url/metrics" 2>/dev/null |
      grep -E '^artel_kube_|^artel_scheduler_cycles_total|^artel_scheduler_cycle_duration_seconds_(sum|count)' \
        >"$sdir/controller-metrics.txt" || true
  fi
  kill -0 "$ctl_pid" 2>/dev/null || echo "kueue_side_by_side: [$side] the controller exited during the run (log: $sdir/controller.log)" >&2
  wait "$runner_pid" || rc=$?
  runner_pid=""
  ((rc == 0)) || echo "kueue_side_by_side: [$side] the runner failed (rc $rc; log: $sdir/runner.log)" >&2
  local cpu_ms=$(((c1 - c0) * 1000 / HZ))
  {
    echo "wallMs: $((t1 - t0))"
    echo "userMs: $cpu_ms"
    echo "sysMs: 0"
    echo "maxrss: $peak"
  } >"$sdir/stats.yaml"
  {
    echo "side=$side"
    echo "runner_rc=$rc"
    echo "wall_ms=$((t1 - t0))"
    echo "ctl_cpu_ms=$cpu_ms"
    echo "api_cpu_ms=$(((a1 - a0) * 1000 / HZ))"
    echo "etcd_cpu_ms=$(((e1 - e0) * 1000 / HZ))"
    echo "runner_cpu_ms=$((n1 * 1000 / HZ))"
    echo "machine_busy_ms=$(((m1 - m0) * 1000 / HZ))"
    echo "ctl_hwm_kib=$peak"
    echo "ctl_requests=$((r1 - r0))"
  } >"$sdir/figures"
  # The generator's start to the recorder's end, from the runner's own log.
  awk '/Generator started/ && !g { g = $1 } /Recorder done|Recorder run/ && !r { r = $1 }
       END { print "gen_start=" g; print "rec_end=" r }' "$sdir/runner.log" >>"$sdir/figures"
  if [[ -n $range && -f $sdir/summary.yaml && $side != *-floor ]]; then
    if "$KBIN/kueue-checker" -test.v --summary="$sdir/summary.yaml" --cmdStats="$sdir/stats.yaml" \
      --range="$range" >"$sdir/checker.log" 2>&1; then
      echo "verdict=PASS" >>"$sdir/figures"
    else
      echo "verdict=FAIL" >>"$sdir/figures"
    fi
  else
    echo "verdict=n/a" >>"$sdir/figures"
  fi
  stop_side
}

IFS=, read -r -a side_list <<<"$sides"
for s in "${side_list[@]}"; do
  case $s in kueue | artel | kueue-floor | artel-floor) run_side "$s" ;;
    *) die "unknown side '$s' (kueue, artel, kueue-floor, artel-floor)" ;; esac
done
trap - EXIT
"$root/bench/kueue_report.sh" "$config" "$out" "${side_list[@]}" | tee "$out/report.txt"
if [[ -s $out/artel/controller-metrics.txt ]]; then
  echo "arteld's counters at the recorder's end ($out/artel/controller-metrics.txt):" | tee -a "$out/report.txt"
  sed 's/^/  /' "$out/artel/controller-metrics.txt" | tee -a "$out/report.txt"
fi
