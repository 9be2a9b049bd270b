#!/usr/bin/env bash
# A real Kubernetes control plane for tests and debugging, on 127.0.0.1 only.
#
#   scripts/k8s-up.sh start DIR [--controller-manager] [--scheduler] [--fake-kubelet]
#                               [--nodes SPEC] [--no-crds] [--no-watch-cache] [--owner-pid PID]
#   scripts/k8s-up.sh stop DIR               stop everything started in DIR (by pid)
#   scripts/k8s-up.sh restart-apiserver DIR  SIGKILL kube-apiserver, start it again (same port, same etcd)
#   scripts/k8s-up.sh stop-apiserver DIR     SIGKILL kube-apiserver (etcd keeps running)
#   scripts/k8s-up.sh start-apiserver DIR    start it again and wait for /readyz
#   scripts/k8s-up.sh compact DIR [--no-restart]  compact etcd at its current revision and
#                                            restart kube-apiserver (its watch cache forgets)
#   scripts/k8s-up.sh user DIR NAME [GROUP...]  make a client cert CN=NAME,O=GROUP... and print
#                                            the path of a kubeconfig for it
#   scripts/k8s-up.sh env DIR                print KUBECONFIG=... and the ports
#
# `start` makes certificates with openssl (a CA; the API server's serving cert
# for IP:127.0.0.1 and DNS:localhost; an admin client cert CN=admin,
# O=system:masters; an RSA key pair for service-account tokens), starts etcd
# and kube-apiserver (RBAC) on free loopback ports, writes DIR/kubeconfig
# (admin), waits for /readyz and the `default` namespace, installs Kueue's
# CRDs (the pinned sigs.k8s.io/kueue module of tools/k8s/kueue, server-side
# apply) and waits until they are Established; then, when asked,
# kube-controller-manager (Job, pod GC and garbage collection controllers; no
# node lifecycle), kube-scheduler and the fake kubelet (tools/k8s/cmd/
# fake-kubelet: no real kubelet ever runs). Every wait polls with a deadline
# (K8S_UP_TIMEOUT seconds, default 180).
#
# Files in DIR: kubeconfig, pids ("NAME PID" lines), env (ports), *.log,
# pki/. With --owner-pid, a watchdog stops the cluster when that process
# exits (a test killed by a timeout leaves nothing behind).
#
# Binaries: $ARTEL_K8S_BIN, else <repo>/build-k8s/bin (tools/k8s/build.sh).
set -euo pipefail
export GOTOOLCHAIN=local

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
self="$root/scripts/k8s-up.sh"
BIN=${ARTEL_K8S_BIN:-$root/build-k8s/bin}
TIMEOUT=${K8S_UP_TIMEOUT:-180}
DEFAULT_NODES="node-a:cpu=64,memory=512Gi,nvidia.com/gpu=8;node-b:cpu=64,memory=512Gi,nvidia.com/gpu=8"

die() {
  echo "k8s-up: $*" >&2
  exit 1
}
log() { echo "k8s-up: $*" >&2; }

usage() {
  sed -n '2,13p' "$self" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

need_bin() {
  local b
  for b in "$@"; do
    [[ -x $BIN/$b ]] || die "missing $BIN/$b: build it with tools/k8s/build.sh (make test does) or set ARTEL_K8S_BIN"
  done
}

now() { date +%s; }

# A TCP port that nothing on this host has bound (from /proc/net/tcp{,6}).
# The start functions retry with a new port if a race takes it.
free_port() {
  local used="" line port p tries=0
  while read -r _ line _; do
    port=${line##*:}
    [[ $port =~ ^[0-9A-Fa-f]{4}$ ]] && used+=" $((16#$port)) "
  done < <(cat /proc/net/tcp /proc/net/tcp6 2>/dev/null)
  while ((tries++ < 200)); do
    p=$((20000 + RANDOM % 30000))
    if [[ $used != *" $p "* ]]; then
      echo "$p"
      return
    fi
  done
  die "no free port found"
}

# ---- pids file ("NAME PID") ----
set_pid() {  # name pid
  local f=$DIR/pids
  touch "$f"
  grep -v "^$1 " "$f" >"$f.tmp" || true
  echo "$1 $2" >>"$f.tmp"
  mv "$f.tmp" "$f"
}
get_pid() { [[ -f $DIR/pids ]] && awk -v n="$1" '$1 == n { print $2 }' "$DIR/pids" || true; }
del_pid() {
  [[ -f $DIR/pids ]] || return 0
  grep -v "^$1 " "$DIR/pids" >"$DIR/pids.tmp" || true
  mv "$DIR/pids.tmp" "$DIR/pids"
}
# True when PID is alive and is ours: its command line names DIR (guards
# against a recycled pid).
ours() {
  local pid=$1
  [[ -n $pid && -r /proc/$pid/cmdline ]] || return 1
  tr '\0' ' ' </proc/"$pid"/cmdline | grep -qF -- "$DIR"
}
# True while PID exists and has not exited (a zombie has closed its files and
# sockets; its command line is empty from early in its exit already).
running() {
  local st
  st=$(sed 's/.*) //' /proc/"$1"/stat 2>/dev/null | cut -d' ' -f1) || return 1
  [[ -n $st && $st != Z && $st != X ]]
}
# stop_one NAME SIGNAL: signal it, wait (deadline) until it has exited.
stop_one() {
  local name=$1 sig=${2:-TERM} pid deadline
  pid=$(get_pid "$name")
  [[ -n $pid ]] || return 0
  if ours "$pid"; then
    kill -s "$sig" "$pid" 2>/dev/null || true
    deadline=$(($(now) + 15))
    while running "$pid" && (($(now) < deadline)); do sleep 0.05; done
    if running "$pid"; then
      kill -KILL "$pid" 2>/dev/null || true
      deadline=$(($(now) + 10))
      while running "$pid" && (($(now) < deadline)); do sleep 0.05; done
    fi
  fi
  del_pid "$name"
}

# ---- env file ----
load_env() {
  [[ -f $DIR/env ]] || die "$DIR/env missing: no cluster was started in $DIR"
  # shellcheck disable=SC1091
  source "$DIR/env"
  # The binaries the cluster was started with, unless ARTEL_K8S_BIN says otherwise.
  BIN=${ARTEL_K8S_BIN:-${K8S_BIN:-$BIN}}
}

# poll DESCRIPTION SECONDS CMD...: run CMD until it succeeds or the deadline passes.
poll() {
  local what=$1 secs=$2 deadline
  shift 2
  deadline=$(($(now) + secs))
  until "$@" >/dev/null 2>&1; do
    if (($(now) >= deadline)); then
      return 1
    fi
    sleep 0.1
  done
}

# ---- certificates ----
PKI() { echo "$DIR/pki"; }
sign() {  # name subject ext
  local pki name=$1 subj=$2 ext=$3
  pki=$(PKI)
  openssl req -new -newkey rsa:2048 -nodes -keyout "$pki/$name.key" -subj "$subj" -out "$pki/$name.csr" 2>/dev/null
  printf '%b' "$ext" >"$pki/$name.ext"
  openssl x509 -req -in "$pki/$name.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" \
    -set_serial "0x$(openssl rand -hex 8)" -days 3650 -sha256 -extfile "$pki/$name.ext" -out "$pki/$name.crt" 2>/dev/null
  rm -f "$pki/$name.csr"
  chmod 600 "$pki/$name.key"
}
client_cert() {  # name CN [O...]
  local name=$1 cn=$2 subj
  shift 2
  subj="/CN=$cn"
  local g
  for g in "$@"; do subj+="/O=$g"; done
  sign "$name" "$subj" "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n"
}
make_pki() {
  local pki
  pki=$(PKI)
  mkdir -p "$pki"
  chmod 700 "$pki"
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$pki/ca.key" -out "$pki/ca.crt" -days 3650 -sha256 \
    -subj "/CN=artel-test-ca" -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" 2>/dev/null
  sign apiserver "/CN=kube-apiserver" \
    "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost,IP:10.0.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc\n"
  client_cert admin admin system:masters
  # The controller manager runs every controller under its own name (no
  # per-controller service accounts), which needs more than the bootstrap
  # role system:kube-controller-manager grants: it is in system:masters.
  client_cert controller-manager system:kube-controller-manager system:masters
  client_cert scheduler system:kube-scheduler
  client_cert fake-kubelet artel:fake-kubelet system:masters
  openssl genrsa -out "$pki/sa.key" 2048 2>/dev/null
  openssl rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null
  chmod 600 "$pki"/*.key
}

b64() { base64 -w0 <"$1"; }
# write_kubeconfig PATH CERTNAME USER
write_kubeconfig() {
  local path=$1 cert=$2 user=$3 pki
  pki=$(PKI)
  cat >"$path.tmp" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: artel-test
  cluster:
    server: https://127.0.0.1:$APISERVER_PORT
    certificate-authority-data: $(b64 "$pki/ca.crt")
users:
- name: $user
  user:
    client-certificate-data: $(b64 "$pki/$cert.crt")
    client-key-data: $(b64 "$pki/$cert.key")
contexts:
- name: artel-test
  context:
    cluster: artel-test
    user: $user
    namespace: default
current-context: artel-test
EOF
  chmod 600 "$path.tmp"
  mv "$path.tmp" "$path"
}

# ---- etcd ----
start_etcd() {
  need_bin etcd
  local attempt
  for attempt in 1 2 3; do
    ETCD_PORT=$(free_port)
    ETCD_PEER_PORT=$(free_port)
    "$BIN/etcd" --name artel-test --data-dir "$DIR/etcd-data" \
      --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
      --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
      --initial-cluster "artel-test=http://127.0.0.1:$ETCD_PEER_PORT" \
      --unsafe-no-fsync --log-level=warn --quota-backend-bytes=8589934592 \
      >>"$DIR/etcd.log" 2>&1 </dev/null &
    local pid=$!
    set_pid etcd "$pid"
    local deadline=$(($(now) + TIMEOUT))
    while running "$pid" && (($(now) < deadline)); do
      if curl -fsS -m 2 "http://127.0.0.1:$ETCD_PORT/health" 2>/dev/null | grep -q '"health":"true"'; then
        return 0
      fi
      sleep 0.1
    done
    if running "$pid"; then
      stop_one etcd KILL
      die "etcd did not become healthy within ${TIMEOUT}s (see $DIR/etcd.log)"
    fi
    del_pid etcd
    grep -q "address already in use" "$DIR/etcd.log" || die "etcd exited at start (see $DIR/etcd.log): $(tail -3 "$DIR/etcd.log")"
    log "etcd port taken, retrying (attempt $attempt)"
    rm -rf "$DIR/etcd-data"
  done
  die "etcd could not bind a free port"
}

# ---- kube-apiserver ----
run_apiserver() {
  local pki
  pki=$(PKI)
  "$BIN/kube-apiserver" \
    --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$APISERVER_PORT" \
    --cert-dir "$DIR/apiserver-certs" \
    --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
    --client-ca-file "$pki/ca.crt" \
    --service-account-issuer "https://127.0.0.1:$APISERVER_PORT/" \
    --service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
    --service-cluster-ip-range 10.0.0.0/24 \
    --authorization-mode RBAC \
    --disable-admission-plugins ServiceAccount \
    --allow-privileged=true \
    --max-requests-inflight 1000 --max-mutating-requests-inflight 500 \
    --watch-cache="$WATCH_CACHE" \
    --v=1 \
    >>"$DIR/kube-apiserver.log" 2>&1 </dev/null &
  set_pid kube-apiserver $!
}
readyz() {
  local pki
  pki=$(PKI)
  [[ $(curl -sS -m 3 -o /dev/null -w '%{http_code}' --cacert "$pki/ca.crt" \
    --cert "$pki/admin.crt" --key "$pki/admin.key" "https://127.0.0.1:$APISERVER_PORT/readyz" 2>/dev/null) == 200 ]]
}
wait_apiserver() {  # returns 2 when it exited (port race), 1 on timeout
  local pid deadline
  pid=$(get_pid kube-apiserver)
  deadline=$(($(now) + TIMEOUT))
  while (($(now) < deadline)); do
    if ! running "$pid"; then
      return 2
    fi
    if readyz; then
      return 0
    fi
    sleep 0.1
  done
  return 1
}
start_apiserver_fresh() {
  need_bin kube-apiserver
  local attempt rc
  for attempt in 1 2 3; do
    APISERVER_PORT=$(free_port)
    : >"$DIR/kube-apiserver.log"
    run_apiserver
    rc=0
    wait_apiserver || rc=$?
    ((rc == 0)) && return 0
    if ((rc == 1)); then
      stop_one kube-apiserver KILL
      die "kube-apiserver not ready within ${TIMEOUT}s (see $DIR/kube-apiserver.log): $(tail -3 "$DIR/kube-apiserver.log")"
    fi
    del_pid kube-apiserver
    grep -q "address already in use" "$DIR/kube-apiserver.log" ||
      die "kube-apiserver exited at start (see $DIR/kube-apiserver.log): $(tail -5 "$DIR/kube-apiserver.log")"
    log "kube-apiserver port taken, retrying (attempt $attempt)"
  done
  die "kube-apiserver could not bind a free port"
}
restart_apiserver_same_port() {
  need_bin kube-apiserver
  local rc deadline
  deadline=$(($(now) + 20))
  while :; do
    rc=0
    run_apiserver
    wait_apiserver || rc=$?
    case $rc in
      0) return 0 ;;
      1)
        stop_one kube-apiserver KILL
        die "kube-apiserver not ready within ${TIMEOUT}s after restart (see $DIR/kube-apiserver.log)"
        ;;
    esac
    del_pid kube-apiserver
    # The port of the old process may take a moment to be released.
    if ! tail -5 "$DIR/kube-apiserver.log" | grep -q "address already in use" || (($(now) >= deadline)); then
      die "kube-apiserver exited at restart (see $DIR/kube-apiserver.log): $(tail -5 "$DIR/kube-apiserver.log")"
    fi
    sleep 0.2
  done
}

kctl() { "$BIN/kubectl" --kubeconfig "$DIR/kubeconfig" "$@"; }

# ---- Kueue CRDs, from the module cache (tools/k8s/kueue pins the version) ----
kueue_crd_dir() {
  local d
  [[ -n ${ARTEL_KUEUE_CRDS:-} ]] && {
    echo "$ARTEL_KUEUE_CRDS"
    return
  }
  command -v go >/dev/null || die "go not found: needed to locate Kueue's CRDs in the module cache (or set ARTEL_KUEUE_CRDS)"
  d=$(cd "$root/tools/k8s/kueue" && GOFLAGS=-mod=readonly go list -m -f '{{.Dir}}' sigs.k8s.io/kueue 2>/dev/null || true)
  if [[ -z $d || ! -d $d ]]; then
    d=$(cd "$root/tools/k8s/kueue" && GOFLAGS=-mod=readonly go mod download -json sigs.k8s.io/kueue | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p')
  fi
  [[ -n $d && -d $d/config/components/crd/bases ]] || die "Kueue's CRDs not found in the module cache (go mod download in tools/k8s/kueue)"
  echo "$d/config/components/crd/bases"
}
install_crds() {
  local crds
  crds=$(kueue_crd_dir)
  kctl apply --server-side --force-conflicts --field-manager=artel-test -f "$crds" >>"$DIR/crds.log" 2>&1 ||
    die "installing Kueue's CRDs failed (see $DIR/crds.log): $(tail -3 "$DIR/crds.log")"
  kctl wait --for condition=Established --timeout "${TIMEOUT}s" -f "$crds" >>"$DIR/crds.log" 2>&1 ||
    die "Kueue's CRDs not Established within ${TIMEOUT}s (see $DIR/crds.log)"
  # Discovery serves them once the CRDs are Established; wait until kubectl sees them.
  poll "kueue resources served" "$TIMEOUT" kctl get clusterqueues.kueue.x-k8s.io ||
    die "Kueue's resources are not served within ${TIMEOUT}s"
}

# ---- controller manager, scheduler, fake kubelet ----
healthz_ok() {  # port
  [[ $(curl -sS -k -m 3 -o /dev/null -w '%{http_code}' "https://127.0.0.1:$1/healthz" 2>/dev/null) == 200 ]]
}
start_controller_manager() {
  need_bin kube-controller-manager
  write_kubeconfig "$DIR/controller-manager.kubeconfig" controller-manager system:kube-controller-manager
  local port pki
  pki=$(PKI)
  port=$(free_port)
  # Only what Jobs and their pods need: the Job controller, owner-reference
  # garbage collection, pod GC, namespaces and service accounts. No node
  # lifecycle: nodes of the fake kubelet have no real heartbeats to judge.
  "$BIN/kube-controller-manager" --kubeconfig "$DIR/controller-manager.kubeconfig" \
    --authentication-kubeconfig "$DIR/controller-manager.kubeconfig" \
    --authorization-kubeconfig "$DIR/controller-manager.kubeconfig" \
    --leader-elect=false --bind-address 127.0.0.1 --secure-port "$port" \
    --cert-dir "$DIR/controller-manager-certs" \
    --controllers job-controller,garbage-collector-controller,pod-garbage-collector-controller,namespace-controller,serviceaccount-controller,ttl-after-finished-controller \
    --root-ca-file "$pki/ca.crt" --use-service-account-credentials=false \
    --concurrent-job-syncs 20 --kube-api-qps 200 --kube-api-burst 400 \
    --v=1 >>"$DIR/kube-controller-manager.log" 2>&1 </dev/null &
  set_pid kube-controller-manager $!
  echo "CONTROLLER_MANAGER_PORT=$port" >>"$DIR/env"
  poll "kube-controller-manager healthz" "$TIMEOUT" healthz_ok "$port" ||
    die "kube-controller-manager not healthy within ${TIMEOUT}s (see $DIR/kube-controller-manager.log): $(tail -3 "$DIR/kube-controller-manager.log")"
}
start_scheduler() {
  need_bin kube-scheduler
  write_kubeconfig "$DIR/scheduler.kubeconfig" scheduler system:kube-scheduler
  local port
  port=$(free_port)
  "$BIN/kube-scheduler" --kubeconfig "$DIR/scheduler.kubeconfig" \
    --authentication-kubeconfig "$DIR/scheduler.kubeconfig" \
    --authorization-kubeconfig "$DIR/scheduler.kubeconfig" \
    --leader-elect=false --bind-address 127.0.0.1 --secure-port "$port" \
    --cert-dir "$DIR/scheduler-certs" --v=1 \
    >>"$DIR/kube-scheduler.log" 2>&1 </dev/null &
  set_pid kube-scheduler $!
  echo "SCHEDULER_PORT=$port" >>"$DIR/env"
  poll "kube-scheduler healthz" "$TIMEOUT" healthz_ok "$port" ||
    die "kube-scheduler not healthy within ${TIMEOUT}s (see $DIR/kube-scheduler.log): $(tail -3 "$DIR/kube-scheduler.log")"
}
# The fake kubelet logs "N node(s) Ready; handling their pods" once its nodes
# are registered and Ready and its pod watch is synced.
fake_kubelet_ready() {
  grep -q "node(s) Ready; handling their pods" "$DIR/fake-kubelet.log" 2>/dev/null
}
start_fake_kubelet() {
  local spec=$1 pid deadline
  need_bin fake-kubelet
  write_kubeconfig "$DIR/fake-kubelet.kubeconfig" fake-kubelet artel:fake-kubelet
  "$BIN/fake-kubelet" --kubeconfig "$DIR/fake-kubelet.kubeconfig" --nodes "$spec" \
    >>"$DIR/fake-kubelet.log" 2>&1 </dev/null &
  pid=$!
  set_pid fake-kubelet "$pid"
  deadline=$(($(now) + TIMEOUT))
  until fake_kubelet_ready; do
    running "$pid" || die "the fake kubelet exited (see $DIR/fake-kubelet.log): $(tail -3 "$DIR/fake-kubelet.log")"
    (($(now) < deadline)) ||
      die "the fake kubelet's nodes are not Ready within ${TIMEOUT}s (see $DIR/fake-kubelet.log): $(tail -3 "$DIR/fake-kubelet.log")"
    sleep 0.1
  done
}

# ---- commands ----
cmd_stop() {
  [[ -d $DIR ]] || return 0
  local n
  # The watchdog first (it would call stop too), then the clients, then the
  # API server, then etcd.
  for n in watchdog fake-kubelet kube-scheduler kube-controller-manager kube-apiserver etcd; do
    stop_one "$n" TERM
  done
  # Anything else recorded (never expected).
  if [[ -s $DIR/pids ]]; then
    while read -r n _; do stop_one "$n" TERM; done <"$DIR/pids"
  fi
}

watchdog() {  # DIR OWNER: stop the cluster when OWNER exits
  local owner=$1
  while kill -0 "$owner" 2>/dev/null; do sleep 1; done
  del_pid watchdog
  cmd_stop
}

cmd_start() {
  local cm=0 sched=0 kubelet=0 crds=1 owner="" nodes=$DEFAULT_NODES
  WATCH_CACHE=true
  while (($#)); do
    case $1 in
      --controller-manager) cm=1 ;;
      --scheduler) sched=1 ;;
      --fake-kubelet) kubelet=1 ;;
      --nodes)
        nodes=${2:?--nodes needs a spec}
        shift
        ;;
      --no-crds) crds=0 ;;
      --no-watch-cache) WATCH_CACHE=false ;;
      --owner-pid)
        owner=${2:?--owner-pid needs a pid}
        shift
        ;;
      *) die "start: unknown option $1" ;;
    esac
    shift
  done
  command -v openssl >/dev/null || die "openssl not found (scripts/install-deps.sh installs it)"
  command -v curl >/dev/null || die "curl not found (scripts/install-deps.sh installs it)"
  need_bin etcd kube-apiserver kubectl
  mkdir -p "$DIR"
  [[ -s $DIR/pids ]] && die "$DIR already has a running cluster (pids file); stop it first"
  : >"$DIR/pids"
  : >"$DIR/env"
  local t0
  t0=$(now)
  if [[ -n $owner ]]; then
    # A child bash of this script; its command line names DIR.
    (exec -a "k8s-up-watchdog $DIR" bash "$self" __watchdog "$DIR" "$owner") >/dev/null 2>&1 </dev/null &
    set_pid watchdog $!
  fi
  # On any failure from here on, stop what was started.
  trap 'rc=$?; if ((rc != 0)); then cmd_stop; fi' EXIT
  make_pki
  start_etcd
  start_apiserver_fresh
  {
    echo "ETCD_PORT=$ETCD_PORT"
    echo "ETCD_PEER_PORT=$ETCD_PEER_PORT"
    echo "APISERVER_PORT=$APISERVER_PORT"
    echo "WATCH_CACHE=$WATCH_CACHE"
    printf 'K8S_BIN=%q\n' "$BIN"
  } >>"$DIR/env"
  write_kubeconfig "$DIR/kubeconfig" admin admin
  poll "namespace default" "$TIMEOUT" kctl get namespace default ||
    die "namespace default not created within ${TIMEOUT}s (see $DIR/kube-apiserver.log)"
  ((crds)) && install_crds
  ((cm)) && start_controller_manager
  ((sched)) && start_scheduler
  ((kubelet)) && start_fake_kubelet "$nodes"
  trap - EXIT
  log "ready in $(($(now) - t0))s: KUBECONFIG=$DIR/kubeconfig (server https://127.0.0.1:$APISERVER_PORT)"
}

# Compacts etcd at its current revision, so that older resourceVersions are
# gone from storage. The API server's watch cache still holds recent history
# and would serve a watch from such a version; so, unless --no-restart or the
# cluster runs with --no-watch-cache, the API server is restarted (its cache is
# rebuilt from the compacted store) and a watch from an old version gets 410.
cmd_compact() {
  local restart=1
  [[ ${1:-} == --no-restart ]] && restart=0
  load_env
  local rev out
  rev=$(curl -fsS -m 5 -X POST "http://127.0.0.1:$ETCD_PORT/v3/kv/range" -d '{"key":"AA==","limit":1}' |
    sed -n 's/.*"revision":"\([0-9]*\)".*/\1/p')
  [[ -n $rev ]] || die "could not read etcd's revision"
  out=$(curl -fsS -m 30 -X POST "http://127.0.0.1:$ETCD_PORT/v3/kv/compaction" -d "{\"revision\":\"$rev\",\"physical\":true}") ||
    die "etcd compaction failed: $out"
  if ((restart)) && [[ ${WATCH_CACHE:-true} == true ]]; then
    need_bin kube-apiserver
    stop_one kube-apiserver KILL
    restart_apiserver_same_port
  fi
  echo "$rev"
}

cmd_user() {
  local name=${1:?user NAME [GROUP...]}
  shift
  load_env
  [[ $name =~ ^[A-Za-z0-9:._@-]+$ ]] || die "user: bad name '$name'"
  local g
  for g in "$@"; do [[ $g =~ ^[A-Za-z0-9:._@-]+$ ]] || die "user: bad group '$g'"; done
  mkdir -p "$DIR/users"
  local file="user-${name//[:@]/_}"
  client_cert "$file" "$name" "$@"
  write_kubeconfig "$DIR/users/$file.kubeconfig" "$file" "$name"
  echo "$DIR/users/$file.kubeconfig"
}

cmd=${1:-}
[[ -n $cmd ]] || usage
shift
DIR=${1:-}
[[ -n $DIR ]] || usage
shift
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)

case $cmd in
  start) cmd_start "$@" ;;
  stop) cmd_stop ;;
  stop-apiserver) stop_one kube-apiserver KILL ;;
  start-apiserver)
    load_env
    [[ -z $(get_pid kube-apiserver) ]] || die "kube-apiserver is running"
    restart_apiserver_same_port
    ;;
  restart-apiserver)
    load_env
    need_bin kube-apiserver
    stop_one kube-apiserver KILL
    restart_apiserver_same_port
    ;;
  compact) cmd_compact "$@" ;;
  user) cmd_user "$@" ;;
  env)
    load_env
    echo "KUBECONFIG=$DIR/kubeconfig"
    cat "$DIR/env"
    ;;
  __watchdog) watchdog "$@" ;;
  *) usage ;;
esac
