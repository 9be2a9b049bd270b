#!/usr/bin/env bash
# Jobs through the whole Kubernetes path (issue 12 §6; docs/performance.md,
# "Kubernetes mode: Jobs to bound pods").
#
#   ARTEL_KUBE_CONTROLLER_CMD='build/bin/arteld --kubeconfig {kubeconfig} --listen 127.0.0.1:0' \
#     bench/kube_jobs.sh [--jobs 1000] [--pods-per-job 8] [--nodes 500] [--node-gpus 16]
#                        [--namespaces 10] [--timeout 20m] [--keep]
#
# Starts a test control plane with kube-controller-manager (the Job controller
# makes the pods), kube-scheduler (binds them) and the fake kubelet, which
# registers --nodes Node objects (cpu 128, memory 1Ti, --node-gpus
# nvidia.com/gpu each; labels for zone, rack, InfiniBand block and hostname).
# Makes the controller a user of its own (CN=artel-controller, bound to
# cluster-admin, counted through a FlowSchema of its own), starts the
# controller command with {kubeconfig} replaced by that user's kubeconfig,
# then runs tools/k8s/cmd/kueue-load --jobs: one ClusterQueue and a
# LocalQueue `default` per namespace, --jobs Jobs of --pods-per-job pods of
# one GPU each, created suspended with the queue-name label. It prints the time
# from the first create until every pod is bound, the controller's and the
# API server's CPU seconds and peak RSS, and the controller's API requests per
# Job.
#
# Without ARTEL_KUBE_CONTROLLER_CMD no controller runs: the Jobs stay
# suspended and the run times out (a check of the harness itself).
# Binaries: $ARTEL_K8S_BIN, else <repo>/build-k8s/bin (tools/k8s/build.sh).
set -euo pipefail
export GOTOOLCHAIN=local
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${ARTEL_K8S_BIN:-$root/build-k8s/bin}
jobs=1000 ppj=8 nodes=500 node_gpus=16 namespaces=10 timeout=20m keep=0
while (($#)); do
  case $1 in
    --jobs) jobs=$2; shift ;;
    --pods-per-job) ppj=$2; shift ;;
    --nodes) nodes=$2; shift ;;
    --node-gpus) node_gpus=$2; shift ;;
    --namespaces) namespaces=$2; shift ;;
    --timeout) timeout=$2; shift ;;
    --keep) keep=1 ;;
    -h | --help) sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "kube_jobs: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
for b in kube-apiserver etcd kubectl kube-controller-manager kube-scheduler fake-kubelet kueue-load; do
  [[ -x $BIN/$b ]] || { echo "kube_jobs: missing $BIN/$b: run tools/k8s/build.sh or set ARTEL_K8S_BIN" >&2; exit 1; }
done

dir=$(mktemp -d "${TMPDIR:-/tmp}/artel-kube-jobs-XXXXXX")
ctl_pid=""
cleanup() {
  if [[ -n $ctl_pid ]] && kill -0 "$ctl_pid" 2>/dev/null; then
    kill -TERM "$ctl_pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$ctl_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$ctl_pid" 2>/dev/null || true
  fi
  if ((keep)); then
    echo "kube_jobs: cluster left running in $dir (stop: scripts/k8s-up.sh stop $dir)"
  else
    ARTEL_K8S_BIN=$BIN "$root/scripts/k8s-up.sh" stop "$dir" || true
    rm -rf "$dir"
  fi
}
trap cleanup EXIT

# The nodes: 4 nodes per rack, 8 racks per InfiniBand block, 2 blocks per zone.
{
  echo "nodes:"
  for ((i = 0; i < nodes; i++)); do
    printf -- "- name: node-%04d\n" "$i"
    printf "  labels: {kubernetes.io/hostname: node-%04d, topology.kubernetes.io/zone: zone-%d, artel.dev/rack: rack-%d, artel.dev/ib-block: block-%d, nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}\n" \
      "$i" $((i / 64)) $((i / 4)) $((i / 32))
    printf "  capacity: {cpu: \"128\", memory: 1Ti, nvidia.com/gpu: \"%d\", pods: \"110\"}\n" "$node_gpus"
  done
} >"$dir/nodes.yaml"

echo "kube_jobs: starting the control plane in $dir ($nodes nodes of $node_gpus GPUs)"
ARTEL_K8S_BIN=$BIN "$root/scripts/k8s-up.sh" start "$dir" --controller-manager --scheduler --fake-kubelet \
  --nodes "$dir/nodes.yaml" --owner-pid $$
kc=$(ARTEL_K8S_BIN=$BIN "$root/scripts/k8s-up.sh" user "$dir" artel-controller artel-bench)
"$BIN/kubectl" --kubeconfig "$dir/kubeconfig" create clusterrolebinding artel-bench-controller \
  --clusterrole cluster-admin --user artel-controller >/dev/null
apiserver_pid=$(awk '$1 == "kube-apiserver" { print $2 }' "$dir/pids")

load=("$BIN/kueue-load" --kubeconfig "$dir/kubeconfig" --jobs "$jobs" --pods-per-job "$ppj"
  --namespaces "$namespaces" --timeout "$timeout" --apiserver-pid "$apiserver_pid" --controller-user artel-controller)
if [[ -n ${ARTEL_KUBE_CONTROLLER_CMD:-} ]]; then
  cmd=${ARTEL_KUBE_CONTROLLER_CMD//\{kubeconfig\}/$kc}
  echo "kube_jobs: controller: $cmd (log: $dir/controller.log)"
  bash -c "exec $cmd" >"$dir/controller.log" 2>&1 </dev/null &
  ctl_pid=$!
  load+=(--controller-pid "$ctl_pid")
else
  echo "kube_jobs: ARTEL_KUBE_CONTROLLER_CMD is not set: no controller runs, no Job will start"
fi
rc=0
"${load[@]}" || rc=$?
if [[ -n $ctl_pid ]] && ! kill -0 "$ctl_pid" 2>/dev/null; then
  echo "kube_jobs: the controller exited during the run; its log:" >&2
  tail -20 "$dir/controller.log" >&2
fi
exit $rc
