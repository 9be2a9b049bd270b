# Shared helpers for the observability tests (sourced, not run).
# They start the real arteld on a loopback port with fake GPUs, the
# examples/two-teams configuration and four tokens:
#   admin-token-0001   admin
#   team-a-token-0001  tenant of namespace team-a
#   team-b-token-0001  tenant of namespace team-b
#   metrics-token-0001 metrics (the Prometheus scraper: /metrics only)
# Everything lives under $WORK (a temp dir) and is stopped by obs_cleanup.

ADMIN_TOKEN=admin-token-0001
TEAM_A_TOKEN=team-a-token-0001
TEAM_B_TOKEN=team-b-token-0001
METRICS_TOKEN=metrics-token-0001
OBS_PIDS=()

obs_skip() { "$(dirname "${BASH_SOURCE[0]}")/../missing_tool.sh" "$*"; exit $?; }
obs_fail() { echo "FAIL: $*"; exit 1; }
obs_log() { echo "[$(date +%T)] $*"; }

# A free TCP port on 127.0.0.1 (nothing answers on it now), below the
# kernel's ephemeral range, so that no socket of another process (a client's
# connection, a server bound to port 0) takes it between now and its use.
obs_free_port() {
  local p lo=32768 span
  read -r lo _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || true
  span=$((lo - 10000))
  ((span >= 1000)) || span=20000
  for _ in $(seq 1 50); do
    p=$((10000 + RANDOM % span))
    if ! (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null; then echo "$p"; return 0; fi
  done
  return 1
}

# obs_wait_until DEADLINE_SECONDS DESCRIPTION COMMAND...: polls COMMAND every
# 0.5s until it succeeds; fails the test with DESCRIPTION at the deadline.
obs_wait_until() {
  local limit=$1 what=$2; shift 2
  local end=$((SECONDS + limit))
  until "$@"; do
    ((SECONDS < end)) || { obs_log "timed out after ${limit}s waiting for: $what"; return 1; }
    sleep 0.5
  done
}

obs_cleanup() {
  local pid
  for pid in "${OBS_PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${OBS_PIDS[@]}"; do
    for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    kill -KILL "$pid" 2>/dev/null || true
  done
  if [[ -n ${WORK:-} && -z ${OBS_KEEP:-} ]]; then rm -rf "$WORK"; fi
}

# obs_start_arteld ARTELD ROOT: sets ARTELD_URL. Logs in $WORK/arteld.log.
obs_start_arteld() {
  local arteld=$1 root=$2
  mkdir -p "$WORK/data"
  cat >"$WORK/tokens.yaml" <<TOK
tokens:
  - {token: "$ADMIN_TOKEN", user: admin, role: admin}
  - {token: "$TEAM_A_TOKEN", user: alice, role: tenant, namespaces: [team-a]}
  - {token: "$TEAM_B_TOKEN", user: bob, role: tenant, namespaces: [team-b]}
  - {token: "$METRICS_TOKEN", user: prometheus, role: metrics}
TOK
  # arteld refuses a tokens file others may read, and its pods (their own
  # users) must be able to walk down to $WORK/data/work.
  chmod 600 "$WORK/tokens.yaml"
  chmod 711 "$WORK"
  "$arteld" --listen 127.0.0.1:0 --data-dir "$WORK/data" --fake-gpus 8xA100-80GB \
    --tokens "$WORK/tokens.yaml" -m "$root/examples/two-teams" \
    --grace-period 2 --stop-workloads-on-exit ${OBS_ARTELD_ARGS:-} >"$WORK/arteld.out" 2>"$WORK/arteld.log" &
  OBS_PIDS+=($!)
  local pid=$!
  obs_wait_until 20 "arteld to print its URL" grep -q '^listening on ' "$WORK/arteld.out" || {
    cat "$WORK/arteld.out" "$WORK/arteld.log"; obs_fail "arteld did not start"; }
  ARTELD_URL=$(sed -n 's/^listening on \(http[^ ]*\).*/\1/p' "$WORK/arteld.out" | head -1)
  ARTELD_HOSTPORT=${ARTELD_URL#http://}
  obs_wait_until 20 "arteld /readyz" curl -fs -o /dev/null "$ARTELD_URL/readyz" || obs_fail "arteld not ready"
  kill -0 "$pid" || obs_fail "arteld exited"
  obs_log "arteld at $ARTELD_URL (pid $pid)"
}

# obs_api TOKEN METHOD PATH [BODY]: prints the response body; fails on HTTP >= 400.
obs_api() {
  local tok=$1 method=$2 path=$3 body=${4:-}
  if [[ -n $body ]]; then
    curl -fsS -X "$method" -H "Authorization: Bearer $tok" -H 'Content-Type: application/json' \
      --data-binary "$body" "$ARTELD_URL$path"
  else
    curl -fsS -X "$method" -H "Authorization: Bearer $tok" "$ARTELD_URL$path"
  fi
}

# obs_submit TOKEN NAMESPACE NAME GPUS: a one-pod workload that sleeps.
obs_submit() {
  local tok=$1 ns=$2 name=$3 gpus=$4
  obs_api "$tok" POST /api/v1/workloads "$(cat <<JSON
{"apiVersion": "artel.dev/v1alpha1", "kind": "Workload",
 "metadata": {"name": "$name", "namespace": "$ns"},
 "spec": {"queueName": "default",
          "podSets": [{"name": "main", "count": 1, "requests": {"nvidia.com/gpu": "$gpus"},
                       "command": ["sleep", "300"]}]}}
JSON
)" >/dev/null
}

# obs_phase NAMESPACE NAME: the workload's status.phase.
obs_phase() {
  obs_api "$ADMIN_TOKEN" GET "/api/v1/namespaces/$1/workloads/$2" | jq -r .status.phase
}

# The two-teams overload story, driven through the API:
#  1. team-a fills the idle pool: a-1..a-4 (1 GPU each; guarantee 2, so 2 are borrowed);
#  2. team-b's work arrives: b-1, b-2 reclaim team-b's guarantee (two of team-a's
#     workloads are preempted and requeued); b-3 has to wait.
obs_story_team_a_floods() {
  local i
  for i in 1 2 3 4; do obs_submit "$TEAM_A_TOKEN" team-a "a-$i" 1; done
  phases_admitted() {
    local n=0 i p
    for i in 1 2 3 4; do p=$(obs_phase team-a "a-$i"); [[ $p == Running || $p == Admitted ]] && n=$((n + 1)); done
    ((n == 4))
  }
  obs_wait_until 20 "a-1..a-4 admitted" phases_admitted || obs_fail "team-a did not fill the pool"
  obs_log "story: team-a holds 4 GPUs (guarantee 2)"
}
obs_story_team_b_reclaims() {
  obs_submit "$TEAM_B_TOKEN" team-b b-1 1
  obs_submit "$TEAM_B_TOKEN" team-b b-2 1
  b_admitted() {
    local p1 p2
    p1=$(obs_phase team-b b-1); p2=$(obs_phase team-b b-2)
    [[ $p1 == Running || $p1 == Admitted ]] && [[ $p2 == Running || $p2 == Admitted ]]
  }
  obs_wait_until 30 "b-1, b-2 admitted after reclaim" b_admitted || obs_fail "team-b did not get its guarantee"
  obs_submit "$TEAM_B_TOKEN" team-b b-3 1
  obs_log "story: team-b reclaimed its 2 GPUs; b-3 waits"
}
