// Flavor assignment: which ResourceFlavor each pod set's resources get in a
// ClusterQueue, and how (fit, borrow, preempt). The semantics are Kueue's
// (pkg/scheduler/flavorassigner/flavorassigner.go; partial admission as
// its podset_reducer.go).
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
//
// Tie-breaks: flavors are walked in the resource group's order and a later
// flavor replaces the best so far only when strictly better (step 5), so
// the earlier flavor wins a tie; pod sets are assigned in their order, each
// seeing the usage of the ones before it. Partial admission (Nominate, as
// Kueue's podset_reducer.go) tries the full counts first, then
// binary-searches the smallest total reduction that fits or has preemption
// targets; the reduction is spread over the pod sets by ReducedCounts.
//
// Thread-safety: none; the functions read and temporarily change an
// EngineImpl, restoring it before they return.
#pragma once

#include <memory>
#include <vector>

#include "core/engine_impl.h"

namespace artel::core {

// One flavor tried by AssignFlavors, for Engine::Why. Recorded only when
// asked (a null `tried` costs nothing).
struct FlavorTried {
  int32_t pod_set = -1;
  FlavorId flavor;
  Mode mode = Mode::kNoFit;
  bool excluded = false;  // taints, labels or topology rule it out: `why`
  bool ever_fits = true;  // every request <= what the queue can ever get
  ResourceId resource;    // the first resource that does not fit now
  Amount requested = 0;
  Amount available = 0;  // unused now, for `resource`
  Amount potential = 0;  // the most the queue can ever get of `resource`
  NodeId level;          // the quota-tree node that limits
  std::string why;
};
// A flavor-assignment policy. One per engine, made once by
// MakeFlavorAssigner from its EngineOptions and kept in
// EngineImpl::flavor_assigner; the cycle, `artel why` and reservations ask
// it. The one policy today is Kueue's, the algorithm above.
class FlavorAssigner {
 public:
  virtual ~FlavorAssigner() = default;
  // The policy's name for logs and tests ("kueue").
  virtual const char* name() const = 0;
  // Assigns flavors to every pod set of `wl` in `cq` with `counts` pods
  // each. When a flavor needs preemption the engine's PreemptionPolicy
  // classifies it (preemption_policy.h). Fills `*out`, reusing its
  // buffers; with `tried`, records every flavor walked.
  virtual void Assign(EngineImpl& e, WlId wl, CqId cq, const std::vector<int32_t>& counts, Assignment* out,
                      std::vector<FlavorTried>* tried) const = 0;
  // Whole-workload nomination including partial admission: the assignment
  // of the full counts, or of the smallest reduction that fits or has
  // preemption targets, with those targets.
  virtual void Nominate(EngineImpl& e, WlId wl, CqId cq, Assignment* out,
                        std::vector<Target>* targets) const = 0;
};

// Kueue's flavor assigner (the algorithm above); no option changes it yet.
std::unique_ptr<FlavorAssigner> MakeFlavorAssigner(const EngineOptions& options);

}  // namespace artel::core
