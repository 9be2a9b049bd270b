#!/usr/bin/env bash
# The Artel demo, run by `make demo` after `make build`.
#
# Starts arteld with examples/dev-cluster/arteld.yaml: one fake host with the
# GPUs of every node pool the flavors name (48 A100-80GB: three teams, 16
# guaranteed A100-80GB each; plus the A100-40GB, H100 and MIG pools), and
# drives the story with real processes on the A100-80GB pool:
#   1. team A (nlp) fills the idle cluster through its regular (research) queue;
#   2. team B (vision) submits a prod job: A's borrowed work is evicted and
#      requeued, and B gets its guarantee within seconds;
#   3. A's work resumes when B finishes.
# Then it prints the timeline and a per-team summary. On a terminal it
# leaves arteld running with the URL to open until Ctrl-C; otherwise (CI,
# DEMO_KEEP=0) it stops arteld cleanly at once.
set -euo pipefail
cd "$(dirname "$0")/.."

ARTEL=${ARTEL:-build/bin/artel}
ARTELD=${ARTELD:-build/bin/arteld}
PORT=${ARTEL_DEMO_PORT:-0}
B_SECONDS=${DEMO_B_SECONDS:-12}
if [[ -t 0 && -t 1 ]]; then KEEP=${DEMO_KEEP:-1}; else KEEP=${DEMO_KEEP:-0}; fi

bold() { if [[ -t 1 ]]; then printf '\033[1m%s\033[0m\n' "$*"; else printf '%s\n' "$*"; fi; }
step() { echo; bold "== $*"; }

for b in "$ARTEL" "$ARTELD"; do
  if [[ ! -x $b ]]; then
    echo "demo: $b not found; run 'make build' first (or 'make demo', which builds it)." >&2
    exit 1
  fi
done

WORK=$(mktemp -d "${TMPDIR:-/tmp}/artel-demo.XXXXXX")
# Pods run as their namespace's user: they must be able to walk down to their
# own directories under $WORK/data/work (docs/daemon.md, "Pod users and isolation").
chmod 711 "$WORK"
# git does not keep file modes: arteld refuses a tokens file others may read.
chmod 600 examples/dev-cluster/tokens.yaml
LOG=$WORK/arteld.log
ARTELD_PID=""
cleanup() {
  local rc=$?
  if [[ -n $ARTELD_PID ]] && kill -0 "$ARTELD_PID" 2>/dev/null; then
    echo
    bold "Stopping arteld (SIGTERM: graceful shutdown, pods stopped)..."
    kill -TERM "$ARTELD_PID" 2>/dev/null || true
    wait "$ARTELD_PID" 2>/dev/null || true
  fi
  rm -rf "$WORK"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

START=$(date +%s)
bold "Artel demo: three teams share a fake host with every GPU pool their flavors name, 48 A100-80GB among them (examples/dev-cluster)"
"$ARTELD" --config examples/dev-cluster/arteld.yaml --listen "127.0.0.1:$PORT" --data-dir "$WORK/data" \
  >"$WORK/stdout" 2>"$LOG" &
ARTELD_PID=$!
URL=""
for _ in $(seq 1 200); do
  URL=$(sed -n 's/^listening on //p' "$WORK/stdout" 2>/dev/null || true)
  [[ -n $URL ]] && break
  if ! kill -0 "$ARTELD_PID" 2>/dev/null; then
    echo "demo: arteld exited:" >&2
    cat "$LOG" >&2
    exit 1
  fi
  sleep 0.1
done
[[ -n $URL ]] || { echo "demo: arteld did not start" >&2; cat "$LOG" >&2; exit 1; }
grep -E 'gpu discovery|local runtime|flavor matches no node|pods run as|cannot switch users' "$LOG" | sed 's/^/  arteld: /'
echo "  arteld is up at $URL (fake GPUs, journal in $WORK/data)"

export ARTEL_SERVER=$URL
ADMIN=demo-admin-token NLP=demo-nlp-token VISION=demo-vision-token SPEECH=demo-speech-token
artel() { ARTEL_TOKEN=$1 "$ARTEL" "${@:2}"; }
A100=(--node-selector nvidia.com/gpu.product=NVIDIA-A100-SXM4-80GB)
# A fake training loop: prints steps, honours SIGTERM like a real trainer.
TRAIN='i=0; trap "echo checkpoint saved, exiting; exit 143" TERM; while true; do i=$((i+1)); echo "step $i on GPUs $CUDA_VISIBLE_DEVICES"; sleep 1; done'

wait_phase() {  # token ns name phase timeout_s
  local deadline=$(( $(date +%s) + $5 ))
  while (( $(date +%s) <= deadline )); do
    if artel "$1" get wl "$3" -n "$2" 2>/dev/null | grep -q " $4 "; then return 0; fi
    sleep 0.2
  done
  echo "demo: $2/$3 did not reach $4 within $5 s" >&2
  return 1
}
count_phase() {  # token ns phase
  artel "$1" get wl -n "$2" --field-selector "status.phase=$3" 2>/dev/null | tail -n +2 | grep -c . || true
}

step "0. team speech runs inside its own 16-GPU guarantee"
for i in 1 2 3 4; do
  artel $SPEECH run --queue team-speech/default --gpus 4 "${A100[@]}" --name speech-$i --priority-class research-workload \
    --grace-period 5 -- sh -c "$TRAIN" >/dev/null
done
wait_phase $SPEECH team-speech speech-4 Running 20

step "1. team A (nlp) fills the idle cluster through its research queue"
for i in $(seq 1 8); do
  artel $NLP run --queue team-nlp/default --gpus 4 "${A100[@]}" --name research-$i --priority-class research-workload \
    --grace-period 5 -- sh -c "$TRAIN"
done
wait_phase $NLP team-nlp research-8 Running 20
artel $NLP get wl -n team-nlp
echo
artel $ADMIN top

step "2. team B (vision) submits a prod job: its guarantee is reclaimed from A's borrowed GPUs"
T0=$(date +%s%N)
artel $VISION run --queue team-vision/prod --gpus 8 "${A100[@]}" --name prod-train --priority-class prod-workload \
  -- sh -c "echo 'prod training on GPUs' \$CUDA_VISIBLE_DEVICES; sleep $B_SECONDS; echo done"
wait_phase $VISION team-vision prod-train Running 30
T1=$(date +%s%N)
echo "  team B running $(( (T1 - T0) / 1000000 )) ms after it submitted (A's borrowed jobs got SIGTERM first)"
artel $ADMIN get wl -A -o wide
echo
evicted=$(artel $NLP get wl -n team-nlp -o wide | awk '$NF ~ /evicted/ || $3 == "Pending" {print $1}' | tr '\n' ' ')
echo "  requeued from team A: ${evicted:-none}"
first=${evicted%% *}
if [[ -n $first ]]; then
  echo "  \$ artel why $first -n team-nlp"
  artel $NLP why "$first" -n team-nlp | sed 's/^/    /'
fi

step "3. B finishes; A's requeued work resumes"
wait_phase $VISION team-vision prod-train Succeeded $(( B_SECONDS + 20 ))
artel $VISION logs prod-train -n team-vision | sed 's/^/  prod-train | /'
deadline=$(( $(date +%s) + 30 ))
while (( $(count_phase $NLP team-nlp Running) < 8 )) && (( $(date +%s) < deadline )); do sleep 0.3; done
artel $NLP get wl -n team-nlp

step "Timeline (artel events -A)"
artel $ADMIN events -A | grep -v ConfigApplied

step "Per-team summary (artel top)"
artel $ADMIN top
echo
echo "  metrics: curl -s -H 'Authorization: Bearer demo-admin-token' $URL/metrics | grep -E '^(kueue|artel)_'"
printf '  story finished in %s s\n' "$(( $(date +%s) - START ))"

echo
bold "Web UI: $URL/ui/?token=demo-admin-token    API: $URL/api/v1"
if [[ $KEEP == 1 ]]; then
  echo "arteld keeps running with the demo workloads. Try: ARTEL_SERVER=$URL ARTEL_TOKEN=demo-admin-token $ARTEL get wl -A"
  bold "Press Ctrl-C to stop it cleanly."
  wait "$ARTELD_PID" || true
fi
