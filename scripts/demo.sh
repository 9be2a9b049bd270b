#!/usr/bin/env bash
# The Artel demo, run by `make demo` after `make build`.
#
# For now it runs the offline scenario suites (`artel test examples/`) with a
# short narrative. Later this script starts arteld with fake GPUs and the web UI.
set -euo pipefail
cd "$(dirname "$0")/.."

ARTEL=${ARTEL:-build/bin/artel}
EXAMPLES=${EXAMPLES:-examples}

bold() { if [[ -t 1 ]]; then printf '\033[1m%s\033[0m\n' "$*"; else printf '%s\n' "$*"; fi; }

if [[ ! -x $ARTEL ]]; then
  echo "demo: $ARTEL not found; run 'make build' first (or 'make demo', which builds it)." >&2
  exit 1
fi

bold "Artel demo: two teams share a GPU cluster"
cat <<'TEXT'

  team-a and team-b each own a ClusterQueue in one cohort, with a guaranteed
  quota (nominalQuota) of A100 GPUs each. Idle GPUs are lent, not wasted:

    1. team-a floods the cluster. It gets its own guarantee, then borrows
       team-b's idle GPUs, so nothing sits idle.
    2. team-b arrives. Its guarantee is still its own: Artel reclaims it by
       evicting team-a's borrowed workloads (reason: InCohortReclamation),
       which go back to Pending and requeue, exactly as Kueue would.
    3. Work above a namespace's ResourceQuota stays Pending, with a reason
       that says which flavor, resource and cohort level blocks it.

  Each story is a scenario file under examples/*/scenarios/: a cluster
  config, timed submit/finish steps, and expectations checked at each step.
  Artel runs them on a virtual clock with the same core the daemon uses.

TEXT

first_scenario=""
if [[ -d $EXAMPLES ]]; then
  first_scenario=$(find "$EXAMPLES" -path '*/scenarios/*' \( -name '*.yaml' -o -name '*.yml' \) -print -quit)
fi
rc=0
if [[ -z $first_scenario ]]; then
  echo "demo: no scenario files under $EXAMPLES/*/scenarios/ yet; nothing to run."
else
  bold "\$ $ARTEL test $EXAMPLES/"
  "$ARTEL" test "$EXAMPLES/" || rc=$?
fi

cat <<'TEXT'

Read more:
  README.md            what Artel is, and a tour of the repository
  docs/scenarios.md    the scenario file format (write your own, run `build/bin/artel test FILE`)
  docs/semantics.md    every scheduling rule, with its Kueue reference
  examples/two-teams/  the configuration behind this story
TEXT
exit "$rc"
