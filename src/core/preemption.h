// Classical preemption (Kueue's pkg/scheduler/preemption), declared in
// core/engine_impl.h as `GetTargets`.
//
// Given a workload W that does not fit in ClusterQueue C:
//  1. Resources needing preemption: the flavor-resources where W's request
//     exceeds what the tree makes available to C.
//  2. The absorbing node P: the lowest node on C's path (C itself, or a
//     non-root cohort) whose subtree would still be within its quota with W
//     added. When P exists, W "reclaims": over-quota workloads in subtrees
//     that meet C's path above P may be taken back.
//  3. Candidates, each using at least one resource needing preemption:
//     - in C, per withinClusterQueue: LowerPriority takes strictly lower
//       priority; LowerOrNewerEqualPriority also equal priority created
//       later (reason InClusterQueue);
//     - in other ClusterQueues of the same cohort tree that are borrowing:
//       reclaim candidates per reclaimWithinCohort (Any: every priority;
//       LowerPriority: strictly lower), reason InCohortReclamation; else,
//       with borrowWithinCohort LowerPriority, strictly lower priority at or
//       below maxPriorityThreshold, reason InCohortReclaimWhileBorrowing.
//  4. Order: already evicting first; other queues before C; (Admission
//     Fair Sharing: higher LocalQueue usage first); lower priority first;
//     most recently admitted first; uid.
//  5. Attempts (first that yields victims wins): with no candidates outside
//     C, or neither reclaim nor borrowWithinCohort possible: all candidates,
//     borrowing allowed. With reclaim possible and no borrowWithinCohort:
//     all candidates without borrowing beyond P, then only C's candidates
//     with borrowing. With borrowWithinCohort: all candidates, borrowing.
//  6. Minimal set: remove candidates in order (a cross-queue candidate is
//     skipped unless its queue and every cohort up to the lowest common
//     ancestor are still over quota) until W fits; then fill back: re-add
//     victims from the second-to-last backwards and keep out only those
//     still needed.
// With fair sharing on, `FairSharingTargets` (core/fair_sharing.cc) is used
// instead. The tree is restored before returning.
#pragma once
#include "core/engine_impl.h"
