// Classical preemption: which admitted workloads a workload that does not
// fit evicts (`GetTargets`), and placement-aware preemption when its pods
// do not fit on the nodes (`PlacementTargets`). The semantics are Kueue's
// (pkg/scheduler/preemption/preemption.go, the candidate order of
// pkg/scheduler/preemption/common/ordering.go).
//
// Given a workload W that does not fit in ClusterQueue C:
//  1. Resources needing preemption: the flavor-resources where W's request
//     exceeds what the tree makes available to C. Candidates must use one.
//  2. Same-queue candidates per withinClusterQueue (InClusterQueue).
//  3. When reclaimWithinCohort != Never, other queues are collected level by
//     level up C's path: at each ancestor cohort, the sibling subtrees (and
//     their queues) that exceed their quota. W has a hierarchical advantage
//     over them once its request fits the quota of C or of a cohort below
//     that level; such candidates are taken regardless of borrowing
//     (InCohortReclamation). Without the advantage a candidate may be taken
//     only if C ends up not borrowing, unless borrowWithinCohort allows it
//     for lower priorities at or below maxPriorityThreshold
//     (InCohortReclaimWhileBorrowing).
//  4. Order: evicting candidates first; groups hierarchical, priority-based,
//     same-queue; within a group other queues first, (Admission Fair
//     Sharing: higher LocalQueue usage), lower priority, most recently
//     admitted, uid.
//  5. Attempts: borrowing only, or without-then-with, or with-then-without
//     borrowing, depending on the policy and the candidates (see
//     docs/semantics.md section 5).
//  6. Minimal set: remove valid candidates in order until W fits (a
//     cross-queue candidate is valid only while its queue and every cohort
//     below the common ancestor still exceed their quota); then fill back
//     from the second-to-last victim backwards, keeping out only those still
//     needed.
// This is the classical policy of core/preemption_policy.h; with fair
// sharing on, the engine's policy runs `FairSharingTargets`
// (core/fair_sharing.h) instead. The tree is restored before returning.
//
// Tie-breaks: the candidate order of step 4 is total: being evicted first,
// then other ClusterQueues before the preemptor's own, (with Admission Fair
// Sharing) the higher LocalQueue usage, the lower priority, the later
// admission time, the later admission sequence number for equal times
// (Kueue's later quota reservation), and finally the lower uid.
//
// Thread-safety: none; the functions read and temporarily change an
// EngineImpl (the quota tree, the cluster), restoring it before they
// return.
#pragma once

#include <functional>
#include <vector>

#include "core/engine_impl.h"

namespace artel::core {

// Returns the victims that let `wl` (with usage `request` in `cq`) fit, or
// an empty vector, by the engine's PreemptionPolicy (EngineImpl::preemption),
// memoised per ClusterQueue while the engine's state is unchanged; nothing
// while `wl` waits out its preemption delay. Leaves the tree unchanged.
// The answer replaces `*out` (whose buffer is reused).
void GetTargets(EngineImpl& e, WlId wl, CqId cq, const FrAmounts& request, std::vector<Target>* out);
// Classical preemption, steps 1-6 above, not memoised (the classical
// PreemptionPolicy). Leaves the tree unchanged.
std::vector<Target> ClassicalTargets(EngineImpl& e, WlId wl, CqId cq, const FrAmounts& request);

// The fill-back step shared by classical and fair-sharing preemption.
// `removed` are victims whose usage was taken out of the tree, in removal
// order. When `fitted`, victims are re-added from the second-to-last
// backwards and kept out only while `fits()` needs them; in every case the
// tree is restored and the victims still needed are returned (none when
// !fitted).
std::vector<Target> FillBackAndRestore(EngineImpl& e, const std::vector<Target>& removed, bool fitted,
                                       const std::function<bool()>& fits);
// Placement-aware preemption (Kueue's TAS preemption, KAI's reclaim): for a
// workload whose quota fits (assignment `a`, mode kFit) but whose pods do not
// fit on the nodes, the victims that free a placement, chosen by the same
// candidate rules as GetTargets (withinClusterQueue, reclaimWithinCohort,
// borrowWithinCohort) among workloads holding pods on nodes the workload may
// use, preferring victims inside one node or one domain of its required
// topology level; empty when none. Leaves the tree and the cluster unchanged.
// When the quota does not fit either, the same search also requires the quota
// to fit (Kueue's workloadFits with TAS): the engine uses it when the quota
// victims alone would not free a placement.
std::vector<Target> PlacementTargets(EngineImpl& e, WlId wl, CqId cq, const Assignment& a);
// Would `wl`'s gang (assignment `a`) place with `victims` gone? True without nodes.
bool PlacesWithout(EngineImpl& e, WlId wl, const Assignment& a, const std::vector<Target>& victims);
// True if `request` fits in `cq` now.
bool FitsNow(const EngineImpl& e, CqId cq, const FrAmounts& request);

}  // namespace artel::core
