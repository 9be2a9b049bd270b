// Fair sharing: dominant resource shares, the admission order of a cycle
// (the tournament) and fair-sharing preemption. The semantics are Kueue's
// (the share in pkg/cache/scheduler, the tournament in
// pkg/scheduler/fair_sharing_iterator.go, preemption in
// pkg/scheduler/preemption/fairsharing/).
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
//
// Tie-breaks: in the tournament, the order above is total (uid last);
// between the winners of different roots of the forest only priority,
// queue time and uid count. In preemption, a queue's candidates are ordered
// as in classical preemption without the admission sequence number (being
// evicted, other queues first, Admission Fair Sharing usage, lower
// priority, later admission, uid). Descending for the next target, equal
// shares go between queues to the one whose next candidate comes first in
// that order, between cohorts to the name that sorts first, and between a
// cohort and a queue to the cohort.
//
// Thread-safety: none; the functions read and temporarily change an
// EngineImpl's quota tree, restoring it before they return.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "core/engine_impl.h"

namespace artel::core {

// A dominant resource share, kept exact (Kueue's DRS): `ratio` is the largest
// borrowed * 1000 / lendable over resources, unweighted; the weighted share
// is ratio / weight, infinite for a weight-0 node that borrows.
struct Drs {
  double ratio = 0;
  double weight = 1;
  bool borrowing = false;  // uses more than its quota of some flavor-resource
  bool IsZero() const { return ratio == 0; }
  bool ZeroWeightBorrows() const { return weight == 0 && borrowing; }
  double Precise() const {
    if (ZeroWeightBorrows()) return std::numeric_limits<double>::infinity();
    if (IsZero()) return 0;
    return ratio / weight;
  }
  // The reported share: Precise() rounded up; INT64_MAX for infinity.
  int64_t Rounded() const;
};
// <0, 0, >0 as a is preferred for admission over b (lower share). Two
// weight-0 borrowers compare their unweighted ratios; a weight-0 borrower
// ranks above everything else (Kueue CompareDRS).
int CompareDrs(const Drs& a, const Drs& b);
// The share of tree node `n`, with `extra` usage added at cq `cq_for_extra`
// (or none).
Drs DominantShare(EngineImpl& e, NodeId n, CqId cq_for_extra, const FrAmounts* extra);
// Fair-sharing preemption (steps 1-3 above): the victims that let `wl` (with
// usage `request` in `cq`) fit, or an empty vector. Leaves the tree unchanged.
std::vector<Target> FairSharingTargets(EngineImpl& e, WlId wl, CqId cq, const FrAmounts& request);
// Picks the next entry to process by the fair-sharing tournament over the
// live tree; `done[i]` marks processed entries, and only the first
// done.size() entries are live. Returns -1 when none is left.
int32_t FairSharingPickNext(EngineImpl& e, const std::vector<Entry>& entries, const std::vector<char>& done);

}  // namespace artel::core
