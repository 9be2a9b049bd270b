#!/usr/bin/env bash
# GET /api/v1/history?range=... beyond the in-memory ring, served from the
# real Prometheus server (issue 16; server/prom_history.h):
#   1. arteld with a 3-point ring at 1s (3 s of memory) and --prometheus-url
#      pointing at a Prometheus on another loopback port that scrapes it
#      every second;
#   2. team-a runs a 1-GPU workload; range=1h must come back with
#      source=prometheus and team-a's a100 nvidia.com/gpu series showing
#      nominal 2 and used 1 (the ring alone could not: it holds 3 s);
#   3. range within the ring is served from memory; bad ranges are refused
#      (400); the metrics role may not read it (403);
#   4. with Prometheus stopped, range=1h answers 502 naming Prometheus.
# Every wait polls with a deadline; nothing sleeps a fixed time.
#
# Usage: prometheus_history.sh REPO_ROOT ARTELD_BINARY     Exit 77 = skipped.
set -euo pipefail
root=${1:?usage: $0 REPO_ROOT ARTELD}
arteld=${2:?usage: $0 REPO_ROOT ARTELD}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh"

[[ -x $arteld ]] || obs_skip "arteld is not built yet ($arteld); build src/server first"
for t in prometheus curl jq; do
  command -v $t >/dev/null || obs_skip "$t not installed (scripts/install-deps.sh installs prometheus, jq, curl)"
done

WORK=$(mktemp -d)
trap obs_cleanup EXIT
pport=$(obs_free_port) || obs_fail "no free port"
PROM=http://127.0.0.1:$pport
OBS_ARTELD_ARGS="--history-interval 1s --history-points 3 --prometheus-url $PROM"
obs_start_arteld "$arteld" "$root"

echo "$METRICS_TOKEN" >"$WORK/scrape-token"
cat >"$WORK/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: arteld
    authorization:
      credentials_file: $WORK/scrape-token
    static_configs:
      - targets: ["$ARTELD_HOSTPORT"]
YML
prometheus --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/tsdb" \
  --web.listen-address="127.0.0.1:$pport" --log.level=warn >"$WORK/prometheus.log" 2>&1 &
prom_pid=$!
OBS_PIDS+=($prom_pid)
obs_wait_until 30 "Prometheus ready" curl -fs -o /dev/null "$PROM/-/ready" || {
  cat "$WORK/prometheus.log"; obs_fail "Prometheus did not start"; }

obs_submit "$TEAM_A_TOKEN" team-a h-1 1
running() { [[ $(obs_phase team-a h-1) == Running ]]; }
obs_wait_until 30 "h-1 running" running || obs_fail "h-1 never ran"

# team-a's a100 GPU series from range=1h, as "maxNominal maxUsed source".
series_of() {
  curl -fsS -H "Authorization: Bearer $1" "$ARTELD_URL/api/v1/history?range=1h" | jq -r '
    .source as $src | .series[]
    | select(.kind == "ClusterQueue" and .name == "team-a" and .flavor == "a100" and .resource == "nvidia.com/gpu")
    | "\(.nominal | max) \(.used | max) \($src)"'
}
seen_used() { [[ $(series_of "$TEAM_A_TOKEN") == "2 1 prometheus" ]]; }
obs_wait_until 40 "team-a's used GPU in Prometheus-backed history" seen_used || {
  obs_log "last answer: $(series_of "$TEAM_A_TOKEN" || true)"; obs_fail "range=1h did not show team-a using 1 of 2"; }
obs_log "range=1h from Prometheus: team-a a100 nominal 2 used 1"
# The cohort's series comes back too (its subtree guarantee).
n=$(curl -fsS -H "Authorization: Bearer $ADMIN_TOKEN" "$ARTELD_URL/api/v1/history?range=1h" |
  jq '[.series[] | select(.kind == "Cohort")] | length')
((n >= 1)) || obs_fail "range=1h has no Cohort series"

# Without a range: the ring, and it says Prometheus is available (the UI's cue).
src=$(obs_api "$ADMIN_TOKEN" GET "/api/v1/history" | jq -r '"\(.source) \(.prometheus) \(.ringSeconds)"')
[[ $src == "ring true 3" ]] || obs_fail "history: want 'ring true 3', got '$src'"
code() { curl -s -o "$WORK/body" -w '%{http_code}' -H "Authorization: Bearer $1" "$ARTELD_URL$2"; }
for bad in 'range=7x' 'range=-1h' 'range=1h%20or%20up' 'range=400d' 'range=1h&since=1'; do
  c=$(code "$ADMIN_TOKEN" "/api/v1/history?$bad")
  [[ $c == 400 ]] || obs_fail "history?$bad: HTTP $c, want 400"
done
c=$(code "$METRICS_TOKEN" "/api/v1/history?range=1h")
[[ $c == 403 ]] || obs_fail "the metrics role read history (HTTP $c, want 403)"

kill -TERM "$prom_pid"
obs_wait_until 20 "Prometheus stopped" bash -c "! kill -0 $prom_pid 2>/dev/null"
c=$(code "$ADMIN_TOKEN" "/api/v1/history?range=1h")
[[ $c == 502 ]] || obs_fail "with Prometheus down: HTTP $c, want 502"
grep -q "Prometheus at $PROM" "$WORK/body" || obs_fail "the 502 does not name Prometheus: $(cat "$WORK/body")"
echo "prometheus history: ok"
