#!/usr/bin/env bash
# Integration test with the real Prometheus server (Debian package prometheus):
#   1. start arteld (fake GPUs, examples/two-teams, tokens) on a free loopback port;
#   2. start Prometheus on another loopback port, scraping arteld every second
#      with the rules loaded (alerts' `for:` shortened to 5s in a test copy,
#      evaluation every second);
#   3. drive the two-teams overload story through the API;
#   4. query the Prometheus HTTP API: the Kueue and artel_* series are there,
#      every rule evaluates without error, TeamNearGuarantee becomes firing for
#      team-a, preemptions and reclaim latency are recorded;
#   5. run the Grafana dashboard check against this Prometheus: every panel's
#      query returns data.
# Every wait polls with a deadline; nothing sleeps a fixed time.
#
# Usage: prometheus_integration.sh REPO_ROOT ARTELD_BINARY     Exit 77 = skipped.
# OBS_KEEP=1 keeps the temp dir (logs, Prometheus data) for inspection.
set -euo pipefail
root=${1:?usage: $0 REPO_ROOT ARTELD}
arteld=${2:?usage: $0 REPO_ROOT ARTELD}
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh"

[[ -x $arteld ]] || obs_skip "arteld is not built yet ($arteld); build src/server first"
for t in prometheus promtool curl jq; do
  command -v $t >/dev/null || obs_skip "$t not installed (scripts/install-deps.sh installs prometheus, jq, curl)"
done

WORK=$(mktemp -d)
trap obs_cleanup EXIT
obs_start_arteld "$arteld" "$root"

# /metrics needs the admin or the metrics role (tenants get 403); Prometheus
# scrapes with its metrics token. It must parse as Prometheus text.
code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $TEAM_A_TOKEN" "$ARTELD_URL/metrics")
[[ $code == 403 ]] || obs_fail "a tenant token read /metrics (HTTP $code, want 403)"
curl -fsS -H "Authorization: Bearer $METRICS_TOKEN" "$ARTELD_URL/metrics" >"$WORK/metrics.txt"
grep -q '^kueue_cluster_queue_nominal_quota{' "$WORK/metrics.txt" || obs_fail "/metrics lacks kueue_cluster_queue_nominal_quota"
if ! promtool check metrics <"$WORK/metrics.txt" >"$WORK/lint.txt" 2>&1; then
  obs_log "promtool check metrics (lint, informational):"; sort -u "$WORK/lint.txt" | sed 's/^/  /' | head -20
fi

# Prometheus: a test copy of the rules with every `for:` at 5s.
mkdir -p "$WORK/rules"
cp "$root/deploy/prometheus/rules/artel-recording.rules.yaml" "$WORK/rules/"
sed -E 's/^( +for: ).*/\15s/' "$root/deploy/prometheus/rules/artel-alerts.rules.yaml" >"$WORK/rules/artel-alerts.rules.yaml"
grep -q 'for: 5s' "$WORK/rules/artel-alerts.rules.yaml" || obs_fail "could not shorten for: in the rules copy"
echo "$METRICS_TOKEN" >"$WORK/scrape-token"
cat >"$WORK/prometheus.yml" <<YML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files:
  - $WORK/rules/artel-recording.rules.yaml
  - $WORK/rules/artel-alerts.rules.yaml
scrape_configs:
  - job_name: arteld
    authorization:
      credentials_file: $WORK/scrape-token
    static_configs:
      - targets: ["$ARTELD_HOSTPORT"]
YML
promtool check config "$WORK/prometheus.yml" >/dev/null || obs_fail "prometheus.yml does not check"
pport=$(obs_free_port) || obs_fail "no free port"
PROM=http://127.0.0.1:$pport
prometheus --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/tsdb" \
  --web.listen-address="127.0.0.1:$pport" --log.level=warn >"$WORK/prometheus.log" 2>&1 &
OBS_PIDS+=($!)
obs_wait_until 30 "Prometheus ready" curl -fs -o /dev/null "$PROM/-/ready" || {
  cat "$WORK/prometheus.log"; obs_fail "Prometheus did not start"; }
obs_log "prometheus at $PROM"

# promq EXPR: the JSON result vector of an instant query.
promq() { curl -fsS -G "$PROM/api/v1/query" --data-urlencode "query=$1" | jq -c .data.result; }
has_result() { [[ $(promq "$1" | jq length) -gt 0 ]]; }

obs_wait_until 30 "arteld scraped (up == 1)" has_result 'up{job="arteld"} == 1' || {
  curl -fsS "$PROM/api/v1/targets" | jq .; obs_fail "Prometheus does not scrape arteld"; }

# The story, part 1: team-a fills the pool and borrows.
obs_story_team_a_floods
obs_wait_until 30 "TeamNearGuarantee firing for team-a" \
  has_result 'ALERTS{alertname="TeamNearGuarantee",alertstate="firing",cluster_queue="team-a"}' || {
  promq 'ALERTS'; promq 'cluster_queue:artel_gpu_guarantee_used:ratio'; obs_fail "TeamNearGuarantee did not fire"; }
obs_log "TeamNearGuarantee is firing for team-a: $(promq 'cluster_queue:artel_gpu_guarantee_used:ratio{cluster_queue="team-a"}' | jq -r '.[0].value[1]') of its guarantee"
# It is not firing for team-b, which holds nothing.
has_result 'ALERTS{alertname="TeamNearGuarantee",cluster_queue="team-b"}' && obs_fail "TeamNearGuarantee fired for idle team-b"

# The story, part 2: team-b reclaims its guarantee.
obs_story_team_b_reclaims
obs_wait_until 30 "preemptions recorded" has_result 'sum(kueue_preempted_workloads_total{preempting_cluster_queue="team-b"}) >= 2' ||
  obs_fail "no preemptions by team-b in Prometheus"
obs_wait_until 30 "reclaim latency recorded" has_result 'sum(artel_reclaim_latency_seconds_count{cluster_queue="team-b"}) > 0' ||
  obs_fail "no reclaim latency observation for team-b"
obs_wait_until 30 "team-b pending b-3 seen" has_result 'sum(kueue_pending_workloads{cluster_queue="team-b"}) > 0' ||
  obs_fail "b-3 is not counted as pending"
obs_wait_until 30 "TeamNearGuarantee firing for team-b" \
  has_result 'ALERTS{alertname="TeamNearGuarantee",alertstate="firing",cluster_queue="team-b"}' ||
  obs_fail "TeamNearGuarantee did not fire for team-b at its guarantee"

# Every series family the rules and dashboard read is present.
for m in kueue_pending_workloads kueue_admitted_workloads_total kueue_admitted_active_workloads \
         kueue_evicted_workloads_total kueue_preempted_workloads_total kueue_admission_wait_time_seconds_bucket \
         kueue_cluster_queue_resource_usage kueue_cluster_queue_nominal_quota kueue_cluster_queue_status \
         artel_team_guaranteed_gpus artel_team_used_gpus artel_team_borrowed_gpus \
         artel_reclaim_latency_seconds_bucket artel_scheduler_cycle_duration_seconds_bucket \
         artel_gpu_utilization_percent artel_gpu_memory_used_bytes artel_gpu_memory_total_bytes; do
  has_result "$m" || obs_fail "Prometheus has no $m"
done
obs_log "metrics: $(promq 'count({job="arteld"})' | jq -r '.[0].value[1]') series from arteld"
obs_log "team GPUs: $(promq 'cluster_queue:artel_gpu_used:sum' | jq -r 'map("\(.metric.cluster_queue)=\(.value[1])") | join(" ")')"
obs_log "preemptions: $(promq 'kueue_preempted_workloads_total' | jq -r 'map("\(.metric.preempting_cluster_queue)/\(.metric.reason)=\(.value[1])") | join(" ")')"

# Every rule evaluates without error.
bad=$(curl -fsS "$PROM/api/v1/rules" | jq -r '.data.groups[].rules[] | select(.health != "ok") | "\(.name): \(.lastError)"')
[[ -z $bad ]] || obs_fail "rules with errors: $bad"
nrules=$(curl -fsS "$PROM/api/v1/rules" | jq '[.data.groups[].rules[]] | length')
obs_log "rules loaded and healthy: $nrules"
firing=$(curl -fsS "$PROM/api/v1/alerts" | jq -r '[.data.alerts[] | select(.state == "firing") | "\(.labels.alertname){\(.labels.cluster_queue // "")}"] | unique | join(", ")')
obs_log "firing alerts: $firing"
has_result 'ALERTS{alertname="ArteldDown"}' && obs_fail "ArteldDown fires while arteld is up"

# The dashboard: every panel's query returns data from this Prometheus.
"$here/grafana_dashboard_check.sh" "$root" "$PROM" || obs_fail "dashboard queries"

echo "prometheus integration: ok"
