#!/usr/bin/env bash
# Admission throughput of a Kueue-compatible controller on a real API server
# (issue 11 §6; docs/kubernetes.md, "Benchmark").
#
#   ARTEL_KUBE_CONTROLLER_CMD='build/bin/arteld --kube --kubeconfig {kubeconfig}' \
#     bench/kube_admission.sh [--workloads W] [--cqs N] [--flavors F] [--cohort-size C]
#                             [--timeout 10m] [--keep] [-- extra kueue-load flags]
#
# Starts a test control plane (scripts/k8s-up.sh: etcd + kube-apiserver with
# Kueue's CRDs; no kubelet, no scheduler: Workloads are created directly and
# no pod runs), makes the controller a user of its own (client cert
# CN=artel-controller, bound to cluster-admin, not in system:masters, so that
# its requests go through a FlowSchema the load tool counts), starts the
# controller command with {kubeconfig} replaced by that user's kubeconfig,
# then runs tools/k8s/cmd/kueue-load (default W=10000 Workloads over N=1000
# ClusterQueues in cohorts of 10, one flavor) and prints its report: time
# until every Workload that fits has QuotaReserved=True, admissions per
# second, the controller's and the API server's CPU seconds and peak RSS, and
# API requests per admission. Everything is stopped at the end (--keep
# leaves the cluster running and prints its directory).
#
# Without ARTEL_KUBE_CONTROLLER_CMD no controller runs: the run waits for
# --timeout and reports 0 admitted (a check of the harness itself).
# Binaries: $ARTEL_K8S_BIN, else <repo>/build-k8s/bin (tools/k8s/build.sh).
set -euo pipefail
export GOTOOLCHAIN=local
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${ARTEL_K8S_BIN:-$root/build-k8s/bin}
workloads=10000 cqs=1000 flavors=1 cohort=10 timeout=10m keep=0
extra=()
while (($#)); do
  case $1 in
    --workloads) workloads=$2; shift ;;
    --cqs) cqs=$2; shift ;;
    --flavors) flavors=$2; shift ;;
    --cohort-size) cohort=$2; shift ;;
    --timeout) timeout=$2; shift ;;
    --keep) keep=1 ;;
    --) shift; extra=("$@"); break ;;
    -h | --help) sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "kube_admission: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
for b in kube-apiserver etcd kubectl kueue-load; do
  [[ -x $BIN/$b ]] || { echo "kube_admission: missing $BIN/$b: run tools/k8s/build.sh or set ARTEL_K8S_BIN" >&2; exit 1; }
done

dir=$(mktemp -d "${TMPDIR:-/tmp}/artel-kube-bench-XXXXXX")
ctl_pid=""
cleanup() {
  if [[ -n $ctl_pid ]] && kill -0 "$ctl_pid" 2>/dev/null; then
    kill -TERM "$ctl_pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$ctl_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$ctl_pid" 2>/dev/null || true
  fi
  if ((keep)); then
    echo "kube_admission: cluster left running in $dir (stop: scripts/k8s-up.sh stop $dir)"
  else
    ARTEL_K8S_BIN=$BIN "$root/scripts/k8s-up.sh" stop "$dir" || true
    rm -rf "$dir"
  fi
}
trap cleanup EXIT

echo "kube_admission: starting the control plane in $dir"
ARTEL_K8S_BIN=$BIN "$root/scripts/k8s-up.sh" start "$dir" --owner-pid $$
kc=$(ARTEL_K8S_BIN=$BIN "$root/scripts/k8s-up.sh" user "$dir" artel-controller artel-bench)
"$BIN/kubectl" --kubeconfig "$dir/kubeconfig" create clusterrolebinding artel-bench-controller \
  --clusterrole cluster-admin --user artel-controller >/dev/null
apiserver_pid=$(awk '$1 == "kube-apiserver" { print $2 }' "$dir/pids")

load=("$BIN/kueue-load" --kubeconfig "$dir/kubeconfig" --workloads "$workloads" --cqs "$cqs"
  --flavors "$flavors" --cohort-size "$cohort" --timeout "$timeout" --apiserver-pid "$apiserver_pid"
  --controller-user artel-controller)
if [[ -n ${ARTEL_KUBE_CONTROLLER_CMD:-} ]]; then
  cmd=${ARTEL_KUBE_CONTROLLER_CMD//\{kubeconfig\}/$kc}
  echo "kube_admission: controller: $cmd (log: $dir/controller.log)"
  # The command line is split by the shell (quote inside the variable as needed).
  bash -c "exec $cmd" >"$dir/controller.log" 2>&1 </dev/null &
  ctl_pid=$!
  load+=(--controller-pid "$ctl_pid")
else
  echo "kube_admission: ARTEL_KUBE_CONTROLLER_CMD is not set: no controller runs, nothing will be admitted"
fi
rc=0
"${load[@]}" "${extra[@]}" || rc=$?
if [[ -n $ctl_pid ]] && ! kill -0 "$ctl_pid" 2>/dev/null; then
  echo "kube_admission: the controller exited during the run; its log:" >&2
  tail -20 "$dir/controller.log" >&2
fi
exit $rc
