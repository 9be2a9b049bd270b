#!/usr/bin/env bash
# Submit to done, Artel against Slurm, in one run (issue 17 §1; `make bench-e2e`).
#
# Starts, on this one host and under one temporary directory (removed on exit):
#   - munged and a Slurm 22.05 cluster (Debian's slurm-wlm, installed by
#     `scripts/install-deps.sh --bench-slurm`): one slurmctld and 8 slurmd
#     (Slurm's multiple-slurmd mode: `slurmd -N nK`, NodeHostname=localhost,
#     one port per node, %n in the spool/pid/log paths), each node with 8 GPUs
#     whose device files are empty placeholder files named in gres.conf;
#   - arteld (Release, build/bin; embedded SQLite journal, synchronous=FULL)
#     with 64 fake GPUs as 8 node pools of 8 and one ClusterQueue of 64 GPUs;
# then runs the same work on both, one after the other:
#   one-by-one: N trivial 1-GPU jobs (`true`), one submission command each
#               (`sbatch --gres=gpu:1 --wrap true` / `artel run --gpus 1 -- true`),
#               run by P parallel submitters (P=1: a plain sequential loop);
#   batch:      the same N as one submission (`sbatch --array=1-N` / one
#               `artel apply -f` of N batch/v1 Jobs).
# Each is timed from the first submission to the last job done (polled, with a
# deadline) and printed as jobs/s per side and the ratio Artel/Slurm.
#
# Usage: bench/e2e_vs_slurm.sh [--jobs N] [--parallel P,...] [--sides artel,slurm] [--keep]
#   --parallel 1,16 (default) runs one-by-one once with a sequential loop and
#   once with 16 submitters (the same P on both sides).
# Environment: ARTEL, ARTELD (default build/bin/artel, build/bin/arteld).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

N=1000
PARALLEL=1,16
SIDES=slurm,artel
KEEP=0
DEADLINE_S=${E2E_DEADLINE_S:-600}
while (($#)); do
  case $1 in
    --jobs) N=$2; shift 2 ;;
    --parallel) PARALLEL=$2; shift 2 ;;
    --sides) SIDES=$2; shift 2 ;;
    --keep) KEEP=1; shift ;;
    -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
    *) echo "e2e_vs_slurm: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ $N =~ ^[0-9]+$ ]] && ((N >= 1 && N <= 1000)) || { echo "e2e_vs_slurm: --jobs must be 1..1000 (Slurm's MaxArraySize)" >&2; exit 2; }
IFS=, read -r -a PARS <<<"$PARALLEL"
has_side() { [[ ,$SIDES, == *,$1,* ]]; }

ARTEL=${ARTEL:-$ROOT/build/bin/artel}
ARTELD=${ARTELD:-$ROOT/build/bin/arteld}
if has_side artel; then
  for b in "$ARTEL" "$ARTELD"; do
    [[ -x $b ]] || { echo "e2e_vs_slurm: $b not found (make bench-e2e builds it)" >&2; exit 1; }
  done
fi
if has_side slurm; then
  for b in slurmctld slurmd sbatch squeue munged; do
    command -v "$b" >/dev/null || [[ -x /usr/sbin/$b ]] || {
      echo "e2e_vs_slurm: $b missing: run scripts/install-deps.sh --bench-slurm" >&2; exit 1; }
  done
  [[ $(id -u) -eq 0 ]] || { echo "e2e_vs_slurm: the Slurm side runs slurmd, which needs root" >&2; exit 1; }
fi
export PATH=$PATH:/usr/sbin

T=$(mktemp -d "${TMPDIR:-/tmp}/artel-e2e.XXXXXX")
chmod 711 "$T"
PIDS=()
cleanup() {
  local rc=$? p
  for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do
    p=${PIDS[i]}
    kill -TERM "$p" 2>/dev/null || true
  done
  for p in "${PIDS[@]}"; do
    for _ in $(seq 1 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.05; done
    kill -KILL "$p" 2>/dev/null || true
  done
  if ((KEEP)); then echo "e2e_vs_slurm: kept $T" >&2; else rm -rf "$T"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

now_ns() { date +%s%N; }
# until CMD succeeds, or fail after the deadline (no fixed sleeps: a short
# poll interval with a deadline).
wait_until() {  # what deadline_s cmd...
  local what=$1 dl=$(($(date +%s) + $2)); shift 2
  until "$@"; do
    if (($(date +%s) > dl)); then echo "e2e_vs_slurm: timed out waiting for $what" >&2; return 1; fi
    sleep 0.02
  done
}
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

declare -A RATE

# ---------------------------------------------------------------- Slurm side
start_slurm() {
  local S=$T/slurm
  mkdir -p "$S"/{munge,state,spool,run,log,dev,etc}
  chmod 700 "$S/munge"
  dd if=/dev/urandom of="$S/munge/munge.key" bs=1024 count=1 status=none
  chmod 400 "$S/munge/munge.key"
  munged --force --socket="$S/munge/munge.socket" --key-file="$S/munge/munge.key" \
    --pid-file="$S/munge/munged.pid" --log-file="$S/munge/munged.log" --seed-file="$S/munge/seed" \
    --num-threads=4
  wait_until munged 10 test -s "$S/munge/munged.pid"
  PIDS+=("$(cat "$S/munge/munged.pid")")
  for g in 0 1 2 3 4 5 6 7; do : >"$S/dev/gpu$g"; done
  local ctl_port node_ports=() i
  ctl_port=$(free_port)
  for i in 1 2 3 4 5 6 7 8; do node_ports+=("$(free_port)"); done
  {
    echo "ClusterName=artelbench"
    echo "SlurmctldHost=localhost"
    echo "SlurmctldPort=$ctl_port"
    echo "SlurmUser=root"
    echo "SlurmdUser=root"
    echo "AuthType=auth/munge"
    echo "CredType=cred/munge"
    echo "AuthInfo=socket=$S/munge/munge.socket"
    echo "StateSaveLocation=$S/state"
    echo "SlurmdSpoolDir=$S/spool/%n"
    echo "SlurmctldPidFile=$S/run/slurmctld.pid"
    echo "SlurmdPidFile=$S/run/slurmd-%n.pid"
    echo "SlurmctldLogFile=$S/log/slurmctld.log"
    echo "SlurmdLogFile=$S/log/slurmd-%n.log"
    echo "SlurmctldDebug=error"
    echo "SlurmdDebug=error"
    echo "ProctrackType=proctrack/pgid"
    echo "TaskPlugin=task/none"
    echo "JobAcctGatherType=jobacct_gather/none"
    echo "AccountingStorageType=accounting_storage/none"
    echo "JobCompType=jobcomp/none"
    echo "MpiDefault=none"
    echo "SelectType=select/cons_tres"
    echo "SelectTypeParameters=CR_Core"
    echo "GresTypes=gpu"
    echo "ReturnToService=2"
    # The nodes claim 8 CPUs and 8 GPUs whatever this host has.
    echo "SlurmdParameters=config_overrides"
    echo "MaxJobCount=20000"
    echo "MinJobAge=600"
    for i in 1 2 3 4 5 6 7 8; do
      echo "NodeName=n$i NodeHostname=localhost Port=${node_ports[i - 1]} CPUs=8 RealMemory=1000 Gres=gpu:8 State=UNKNOWN"
    done
    echo "PartitionName=gpu Nodes=n[1-8] Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO"
  } >"$S/etc/slurm.conf"
  echo "NodeName=n[1-8] Name=gpu File=$S/dev/gpu[0-7]" >"$S/etc/gres.conf"
  export SLURM_CONF=$S/etc/slurm.conf
  slurmctld -i -f "$SLURM_CONF"
  wait_until slurmctld 20 test -s "$S/run/slurmctld.pid"
  PIDS+=("$(cat "$S/run/slurmctld.pid")")
  for i in 1 2 3 4 5 6 7 8; do
    mkdir -p "$S/spool/n$i"
    if ! slurmd -N "n$i" -f "$SLURM_CONF" 2>>"$S/log/slurmd-start.log"; then
      echo "e2e_vs_slurm: slurmd -N n$i failed:" >&2
      cat "$S/log/slurmd-start.log" "$S/log/slurmd-n$i.log" >&2 2>/dev/null || true
      return 1
    fi
  done
  for i in 1 2 3 4 5 6 7 8; do
    wait_until "slurmd n$i" 20 test -s "$S/run/slurmd-n$i.pid"
    PIDS+=("$(cat "$S/run/slurmd-n$i.pid")")
  done
  slurm_idle() { [[ $(sinfo -h -N -t idle -o %N | sort -u | wc -l) -eq 8 ]]; }
  if ! wait_until "8 idle Slurm nodes" 60 slurm_idle; then
    sinfo -N -l >&2 || true
    tail -n 20 "$S"/log/*.log >&2 || true
    return 1
  fi
  echo "slurm: slurmctld + 8 slurmd (multiple-slurmd mode), $(sinfo -h -o '%D nodes, %G')"
}

slurm_active() { squeue -h -r -o %i | wc -l; }
slurm_done() { [[ $(slurm_active) -eq 0 ]]; }
slurm_count() { squeue -h -r -t "$1" -o %i | wc -l; }

slurm_one() {  # parallel
  local p=$1 cd0 t0 t1
  cd0=$(slurm_count CD)
  cd "$T/slurm"
  t0=$(now_ns)
  if ((p == 1)); then
    for ((i = 0; i < N; i++)); do sbatch -Q --gres=gpu:1 -o /dev/null --wrap true >/dev/null; done
  else
    seq 1 "$N" | xargs -P "$p" -n 1 sh -c 'sbatch -Q --gres=gpu:1 -o /dev/null --wrap true >/dev/null' _
  fi
  wait_until "Slurm jobs to finish" "$DEADLINE_S" slurm_done
  t1=$(now_ns)
  cd "$ROOT"
  report slurm "one-by-one P=$p" "$t0" "$t1" $(($(slurm_count CD) - cd0))
}

slurm_batch() {
  local cd0 t0 t1
  cd0=$(slurm_count CD)
  cd "$T/slurm"
  t0=$(now_ns)
  sbatch -Q --array="1-$N" --gres=gpu:1 -o /dev/null --wrap true >/dev/null
  wait_until "Slurm array to finish" "$DEADLINE_S" slurm_done
  t1=$(now_ns)
  cd "$ROOT"
  report slurm batch "$t0" "$t1" $(($(slurm_count CD) - cd0))
}

# ---------------------------------------------------------------- Artel side
start_artel() {
  local A=$T/artel
  mkdir -p "$A/m"
  cat >"$A/tokens.yaml" <<'EOF'
tokens:
  - {token: bench-admin-token, user: bench-admin, role: admin}
  - {token: bench-tenant-token, user: bench-user, role: tenant, namespaces: [bench]}
EOF
  chmod 600 "$A/tokens.yaml"
  {
    echo "fakeGpus: 64xA100-80GB"
    echo "nodePools:"
    for i in 1 2 3 4 5 6 7 8; do
      echo "  - {name: n$i, gpus: {product: A100-80GB, count: 8}}"
    done
    echo "tokensFile: tokens.yaml"
    echo "manifests: [m]"
    echo "log: {format: logfmt, level: warn}"
  } >"$A/arteld.yaml"
  cat >"$A/m/bench.yaml" <<'EOF'
apiVersion: v1
kind: Namespace
metadata: {name: bench}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: gpu}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: bench}
spec:
  namespaceSelector: {}
  resourceGroups:
    - coveredResources: [cpu, memory, nvidia.com/gpu]
      flavors:
        - name: gpu
          resources:
            - {name: cpu, nominalQuota: 1000}
            - {name: memory, nominalQuota: 10Ti}
            - {name: nvidia.com/gpu, nominalQuota: 64}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: default, namespace: bench}
spec: {clusterQueue: bench}
EOF
  "$ARTELD" --config "$A/arteld.yaml" --listen 127.0.0.1:0 --data-dir "$A/data" >"$A/stdout" 2>"$A/arteld.log" &
  PIDS+=($!)
  ARTEL_URL=""
  artel_up() { ARTEL_URL=$(sed -n 's/^listening on //p' "$A/stdout"); [[ -n $ARTEL_URL ]]; }
  if ! wait_until arteld 30 artel_up; then cat "$A/arteld.log" >&2; return 1; fi
  export ARTEL_SERVER=$ARTEL_URL ARTEL_TOKEN=bench-tenant-token
  echo "artel: arteld at $ARTEL_URL, 64 fake GPUs as 8 node pools of 8"
}

artel_succeeded() {
  curl -sf -H "Authorization: Bearer bench-admin-token" "$ARTEL_URL/metrics" |
    awk '/^artel_workloads\{phase="(Succeeded|Failed)"\}/ {n[$0 ~ /Succeeded/] += $2} END {printf "%d %d\n", n[1], n[0]}'
}
ARTEL_TARGET=0
artel_done() { local s f; read -r s f < <(artel_succeeded); ((s + f >= ARTEL_TARGET)); }

artel_one() {  # parallel
  local p=$1 s0 f0 s1 f1 t0 t1
  read -r s0 f0 < <(artel_succeeded)
  ARTEL_TARGET=$((s0 + f0 + N))
  t0=$(now_ns)
  if ((p == 1)); then
    for ((i = 0; i < N; i++)); do "$ARTEL" run -q bench/default --gpus 1 -- true >/dev/null; done
  else
    seq 1 "$N" | xargs -P "$p" -n 1 sh -c '"$0" run -q bench/default --gpus 1 -- true >/dev/null' "$ARTEL"
  fi
  wait_until "Artel jobs to finish" "$DEADLINE_S" artel_done
  t1=$(now_ns)
  read -r s1 f1 < <(artel_succeeded)
  ((f1 == f0)) || echo "e2e_vs_slurm: $((f1 - f0)) Artel jobs failed" >&2
  report artel "one-by-one P=$p" "$t0" "$t1" $((s1 - s0))
}

artel_batch() {
  local s0 f0 s1 f1 t0 t1 f=$T/artel/jobs.yaml
  for ((i = 0; i < N; i++)); do
    cat <<EOF
---
apiVersion: batch/v1
kind: Job
metadata: {generateName: job-, namespace: bench, labels: {kueue.x-k8s.io/queue-name: default}}
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - {name: main, command: ["true"], resources: {requests: {nvidia.com/gpu: "1"}}}
EOF
  done >"$f"
  read -r s0 f0 < <(artel_succeeded)
  ARTEL_TARGET=$((s0 + f0 + N))
  t0=$(now_ns)
  "$ARTEL" apply -f "$f" >/dev/null
  wait_until "Artel batch to finish" "$DEADLINE_S" artel_done
  t1=$(now_ns)
  read -r s1 f1 < <(artel_succeeded)
  ((f1 == f0)) || echo "e2e_vs_slurm: $((f1 - f0)) Artel jobs failed" >&2
  report artel batch "$t0" "$t1" $((s1 - s0))
}

# ---------------------------------------------------------------- report
report() {  # side mode t0 t1 done
  local ms=$((($4 - $3) / 1000000))
  local rate
  rate=$(awk -v n="$5" -v ms="$ms" 'BEGIN {printf "%.0f", (ms > 0 ? n * 1000 / ms : 0)}')
  RATE[$1/$2]=$rate
  printf '  %-6s %-16s %5d jobs done in %7.3f s: %6s jobs/s\n' "$1" "$2" "$5" "$(awk -v ms="$ms" 'BEGIN{print ms/1000}')" "$rate"
  (($5 == N)) || echo "e2e_vs_slurm: $1 $2: $5 of $N jobs completed" >&2
}

BENCH_T0=$(date +%s)
MODES=()
for p in "${PARS[@]}"; do MODES+=("one-by-one P=$p"); done
MODES+=(batch)
if has_side slurm; then
  start_slurm
  for p in "${PARS[@]}"; do slurm_one "$p"; done
  slurm_batch
fi
if has_side artel; then
  start_artel
  for p in "${PARS[@]}"; do artel_one "$p"; done
  artel_batch
fi

echo
printf '| %-18s | %12s | %12s | %13s |\n' "$N jobs of 1 GPU" "Slurm jobs/s" "Artel jobs/s" "Artel / Slurm"
printf '|%s|%s|%s|%s|\n' "--------------------" "--------------" "--------------" "---------------"
for m in "${MODES[@]}"; do
  s=${RATE[slurm/$m]:-}
  a=${RATE[artel/$m]:-}
  r=""
  if [[ -n $s && -n $a && $s != 0 ]]; then r=$(awk -v a="$a" -v s="$s" 'BEGIN {printf "%.1fx", a / s}'); fi
  printf '| %-18s | %12s | %12s | %13s |\n' "$m" "${s:--}" "${a:--}" "${r:--}"
done
echo "(whole run: $(($(date +%s) - BENCH_T0)) s)"
