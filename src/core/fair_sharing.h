// Fair sharing (Kueue's fair_sharing.go and fair-sharing preemption),
// declared in core/engine_impl.h.
//
// Dominant resource share of a node n with a parent:
//   borrowed(r) = sum over flavors of max(0, usage(n, fr) - subtree(n, fr))
//   lendable(r) = sum over flavors of potentialAvailable(parent(n), fr)
//   DRS(n)      = max over r of borrowed(r) * 1000 / lendable(r), divided by
//                 the node's weight; weight 0 while borrowing = infinity.
// The root's share is 0. Shares are compared exactly (floating point, as
// Kueue's CompareDRS): two weight-0 borrowers compare their unweighted
// ratios. Only the reported share is rounded (up).
//
// Admission order (the tournament): at every cohort each child proposes the
// winner of its own subtree; the child whose share with that entry added is
// lowest wins (non-borrowing first, then lower share, higher priority,
// earlier queue time, uid). Picks are made one at a time over the live
// tree, so admissions made earlier in the cycle count.
//
// Preemption:
//  1. Candidates: the preemptor's queue (withinClusterQueue) and borrowing
//     queues of the same tree (reclaimWithinCohort != Never; LowerPriority
//     restricts to lower priority).
//  2. Repeatedly descend from the root into the child with the highest
//     share (queue ties: the one whose first candidate comes first in
//     candidate order) until a queue with candidates is reached; take its next
//     candidate. Same queue: take it (InClusterQueue). Preemptor within its
//     nominal quota: take it (InCohortReclamation). Otherwise compare at the
//     children of the lowest common cohort: strategy
//     LessThanOrEqualToFinalShare takes it if the preemptor side's share
//     with the workload <= the target side's share after removal;
//     LessThanInitialShare if < the target side's share before removal
//     (InCohortFairSharing). A refused candidate retires its queue for this
//     strategy; the second strategy retries the refused ones.
//  3. Stop when the workload fits; fill back as in classical preemption.
#pragma once
#include "core/engine_impl.h"
