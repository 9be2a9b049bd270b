#include "core/preemption_policy.h"

#include "core/fair_sharing.h"
#include "core/preemption.h"

namespace artel::core {
namespace {

class ClassicalPreemption final : public PreemptionPolicy {
 public:
  const char* name() const override { return "classical"; }
  std::vector<Target> Targets(EngineImpl& e, WlId wl, CqId cq, const FrAmounts& request) const override {
    return ClassicalTargets(e, wl, cq, request);
  }
  bool MayPreemptWhileBorrowing(const ClusterQueueSpec& cq) const override {
    return cq.preemption.borrow_within_cohort != BorrowWithinCohortPolicy::kNever;
  }
  bool PlacementVictimsInCohort() const override { return true; }
};

class FairSharingPreemption final : public PreemptionPolicy {
 public:
  const char* name() const override { return "fair-sharing"; }
  std::vector<Target> Targets(EngineImpl& e, WlId wl, CqId cq, const FrAmounts& request) const override {
    return FairSharingTargets(e, wl, cq, request);
  }
  bool MayPreemptWhileBorrowing(const ClusterQueueSpec& /*cq*/) const override { return true; }
  bool PlacementVictimsInCohort() const override { return false; }
};

}  // namespace

std::unique_ptr<PreemptionPolicy> MakePreemptionPolicy(const EngineOptions& options) {
  if (options.fair_sharing) return std::make_unique<FairSharingPreemption>();
  return std::make_unique<ClassicalPreemption>();
}

}  // namespace artel::core
