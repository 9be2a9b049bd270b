// Preemption policy: how the engine chooses the admitted workloads that a
// workload which does not fit evicts. One policy per engine, made once by
// MakePreemptionPolicy from its EngineOptions and kept in
// EngineImpl::preemption; the flavor assigner (flavor_assigner.h) asks it
// through GetTargets (preemption.h), which memoises its answers while the
// engine's state is unchanged.
//
// Classical (fair sharing off; Kueue's pkg/scheduler/preemption): the
// algorithm and candidate order of core/preemption.h. A ClusterQueue may
// preempt while it borrows only with borrowWithinCohort; placement-aware
// preemption (PlacementTargets) may take victims in other ClusterQueues of
// the cohort under the same rules as quota preemption.
//
// Fair sharing (EngineOptions::fair_sharing; Kueue's
// pkg/scheduler/preemption/fairsharing): the algorithm of
// core/fair_sharing.h, with the strategies of
// EngineOptions::fair_sharing_strategies. Every ClusterQueue may preempt
// while it borrows (the strategies decide whether a victim may go);
// placement-aware preemption stays within the preemptor's own ClusterQueue,
// since the cohort's victims are chosen by share, on quota only.
//
// Tie-breaks: those of the algorithm each policy runs (see the headers
// above); a policy adds none of its own.
//
// Thread-safety: none; a policy belongs to one EngineImpl. Targets reads and
// temporarily changes the engine's quota tree, restoring it before it
// returns.
#pragma once

#include <memory>
#include <vector>

#include "core/engine_impl.h"

namespace artel::core {

class PreemptionPolicy {
 public:
  virtual ~PreemptionPolicy() = default;
  // The policy's name for logs and tests: "classical" or "fair-sharing".
  virtual const char* name() const = 0;
  // The victims that let `wl` (with usage `request` in ClusterQueue `cq`)
  // fit, or an empty vector; not memoised. Leaves the tree unchanged.
  virtual std::vector<Target> Targets(EngineImpl& e, WlId wl, CqId cq, const FrAmounts& request) const = 0;
  // Whether a ClusterQueue with this spec may make room by preemption for a
  // request that would make it borrow (flavor assignment, step 2).
  virtual bool MayPreemptWhileBorrowing(const ClusterQueueSpec& cq) const = 0;
  // Whether placement-aware preemption may take victims in other
  // ClusterQueues of the preemptor's cohort.
  virtual bool PlacementVictimsInCohort() const = 0;
};

// The classical policy, or the fair-sharing one when options.fair_sharing.
std::unique_ptr<PreemptionPolicy> MakePreemptionPolicy(const EngineOptions& options);

}  // namespace artel::core
