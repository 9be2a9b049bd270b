// Flavor assignment (Kueue's flavorassigner), declared in core/engine_impl.h.
//
// Algorithm, for each pod set in order and each resource group its
// requests touch:
//  1. Walk the group's flavors in order. Skip a flavor whose node taints
//     (NoSchedule/NoExecute) are not tolerated by the pod set's and the
//     flavor's tolerations, or whose node labels do not match the pod set's
//     nodeSelector and required node affinity restricted to the label keys
//     of the group's flavors (Kueue flavorSelector). With nodes (and
//     placement matching labels), also skip a flavor none of whose nodes
//     could ever hold one pod of the pod set: labels, the pod set's
//     nodeSelector and affinity on every key, taints, capacity when empty
//     (Artel's rule, docs/semantics.md "Flavors bound to nodes"; cached per
//     workload until the configuration or the nodes change). When every
//     flavor is skipped and one was skipped for its nodes: kInfeasible.
//  2. For each requested resource, val = usage of earlier pod sets of this
//     workload in the same flavor + this pod set's request.
//     val > potentialAvailable -> NoFit; val <= available -> Fit at its
//     borrowing level; else, if val <= nominal, or a non-root ancestor
//     subtree would absorb it, or the queue may preempt while borrowing
//     (borrowWithinCohort or fair sharing) -> needs preemption; else NoFit.
//     The flavor's mode is the worst over its resources.
//  3. A flavor that needs preemption is classified by simulating preemption
//     (core/preemption.cc): no victims = NoCandidates, all victims outside
//     the ClusterQueue = Reclaim, otherwise Preempt.
//  4. Stop the walk at a Fit without borrowing; at a borrowing Fit when
//     whenCanBorrow = MayStopSearch; at Preempt/Reclaim when
//     whenCanPreempt = MayStopSearch. Otherwise try the next flavor.
//  5. The best flavor tried wins: BorrowingOverPreemption ranks by mode
//     (Fit > Reclaim > Preempt) then lower borrowing level;
//     PreemptionOverBorrowing ranks by borrowing level then mode. Ties keep
//     the earlier flavor.
// The workload's mode is the worst over its pod sets.
// The pending reason (ReasonRef) comes from the flavor that came closest:
// the better mode; between unusable flavors of one mode, one whose request
// the queue can ever get over one it cannot, then the smaller shortfall.
// With `tried`, every flavor walked is recorded (with why it was excluded,
// or what it lacks) for the groups that hold the workload back: Engine::Why
// turns them into one clause per flavor.
#pragma once
#include "core/engine_impl.h"
