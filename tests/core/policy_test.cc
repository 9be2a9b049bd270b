// Unit tests for the engine's policy factories (src/core/admission_order.h,
// flavor_assigner.h, preemption_policy.h): each policy is made from
// EngineOptions, and the preemption policy answers the questions the flavor
// assigner and placement-aware preemption ask it as the semantics say
// (docs/semantics.md: fair sharing lets every ClusterQueue preempt while it
// borrows; classical preemption only with borrowWithinCohort).
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "core/admission_order.h"
#include "core/flavor_assigner.h"
#include "core/preemption_policy.h"

namespace artel::core {
namespace {

ClusterQueueSpec QueueWith(BorrowWithinCohortPolicy bwc) {
  ClusterQueueSpec q;
  q.name = "q";
  q.preemption.borrow_within_cohort = bwc;
  return q;
}

TEST(PolicyTest, ClassicalPreemptionFollowsBorrowWithinCohort) {
  EngineOptions opts;
  opts.fair_sharing = false;
  std::unique_ptr<PreemptionPolicy> p = MakePreemptionPolicy(opts);
  EXPECT_EQ(std::string(p->name()), "classical");
  EXPECT_FALSE(p->MayPreemptWhileBorrowing(QueueWith(BorrowWithinCohortPolicy::kNever)));
  EXPECT_TRUE(p->MayPreemptWhileBorrowing(QueueWith(BorrowWithinCohortPolicy::kLowerPriority)));
  EXPECT_TRUE(p->PlacementVictimsInCohort());
}

TEST(PolicyTest, FairSharingPreemptionMayAlwaysPreemptWhileBorrowing) {
  EngineOptions opts;
  opts.fair_sharing = true;
  std::unique_ptr<PreemptionPolicy> p = MakePreemptionPolicy(opts);
  EXPECT_EQ(std::string(p->name()), "fair-sharing");
  EXPECT_TRUE(p->MayPreemptWhileBorrowing(QueueWith(BorrowWithinCohortPolicy::kNever)));
  EXPECT_TRUE(p->MayPreemptWhileBorrowing(QueueWith(BorrowWithinCohortPolicy::kLowerPriority)));
  EXPECT_FALSE(p->PlacementVictimsInCohort());
}

TEST(PolicyTest, FlavorAssignerAndOrderAreMadeForEitherMode) {
  for (bool fair : {false, true}) {
    EngineOptions opts;
    opts.fair_sharing = fair;
    std::unique_ptr<FlavorAssigner> f = MakeFlavorAssigner(opts);
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(std::string(f->name()), "kueue");
    EXPECT_NE(MakeAdmissionOrder(opts), nullptr);
  }
}

}  // namespace
}  // namespace artel::core
