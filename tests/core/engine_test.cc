// Behavioural tests of the Engine on small hand-built configurations.
#include "core/engine.h"

#include <gtest/gtest.h>

namespace artel::core {
namespace {

constexpr Amount kGpu = 1000;

ClusterQueueSpec Cq(const std::string& name, const std::string& cohort, Amount nominal,
                    std::optional<Amount> borrowing = std::nullopt) {
  ClusterQueueSpec q;
  q.name = name;
  q.cohort = cohort;
  q.namespace_selector = LabelSelector{};
  ResourceGroupSpec g;
  g.covered_resources = {"nvidia.com/gpu"};
  FlavorQuotasSpec f;
  f.flavor = "a100";
  f.resources.push_back({"nvidia.com/gpu", nominal, borrowing, std::nullopt});
  g.flavors.push_back(f);
  q.resource_groups.push_back(g);
  q.preemption.reclaim_within_cohort = ReclaimWithinCohortPolicy::kAny;
  q.preemption.within_cluster_queue = WithinClusterQueuePolicy::kLowerPriority;
  return q;
}

Config TwoTeams() {
  Config c;
  c.flavors.push_back({"a100"});
  c.cluster_queues.push_back(Cq("team-a", "shared", 2 * kGpu));
  c.cluster_queues.push_back(Cq("team-b", "shared", 2 * kGpu));
  c.local_queues.push_back({"team-a", "default", "team-a"});
  c.local_queues.push_back({"team-b", "default", "team-b"});
  return c;
}

WorkloadSpec Job(const std::string& ns, const std::string& name, int gpus, int priority = 0) {
  WorkloadSpec w;
  w.ns = ns;
  w.name = name;
  w.queue = "default";
  w.priority = priority;
  PodSetSpec ps;
  ps.count = 1;
  ps.requests["nvidia.com/gpu"] = gpus * kGpu;
  w.pod_sets.push_back(ps);
  return w;
}

// Runs cycles, completing evictions at once, until nothing changes.
void Settle(Engine& e, Time now) {
  for (int i = 0; i < 100; ++i) {
    CycleResult r = e.Schedule(now);
    for (const auto& ev : r.evictions) ASSERT_TRUE(e.CompleteEviction(ev.victim, now).ok());
    if (r.admitted.empty() && r.evictions.empty()) return;
  }
  FAIL() << "did not settle";
}

TEST(EngineTest, BorrowsIdleQuotaThenOwnerReclaims) {
  Engine e;
  ASSERT_TRUE(e.Configure(TwoTeams()).ok());
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(e.Submit(Job("team-a", "a-" + std::to_string(i), 1), 0).ok());
  Settle(e, 0);
  EXPECT_EQ(e.AdmittedCount(), 4u);  // two of them borrow team-b's idle GPUs
  ASSERT_TRUE(e.Submit(Job("team-b", "b-0", 2), 10).ok());
  CycleResult r = e.Schedule(10);
  ASSERT_EQ(r.evictions.size(), 2u);
  for (const auto& ev : r.evictions) {
    EXPECT_EQ(ev.reason, EvictionReason::kInCohortReclamation);
    EXPECT_EQ(ev.preemptor, "team-b/b-0");
  }
  EXPECT_EQ(e.Find("team-b/b-0")->pending.kind, PendingReason::Kind::kWaitingForEvictions);
  for (const auto& ev : r.evictions) ASSERT_TRUE(e.CompleteEviction(ev.victim, 11).ok());
  Settle(e, 11);
  EXPECT_EQ(e.Find("team-b/b-0")->state, WorkloadState::kAdmitted);
  EXPECT_EQ(e.AdmittedCount(), 3u);
  EXPECT_EQ(e.PendingCount(), 2u);
}

TEST(EngineTest, AboveQuotaStaysPendingWithReason) {
  Engine e;
  ASSERT_TRUE(e.Configure(TwoTeams()).ok());
  ASSERT_TRUE(e.Submit(Job("team-a", "big", 5), 0).ok());
  Settle(e, 0);
  const WorkloadInfo* w = e.Find("team-a/big");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->state, WorkloadState::kPending);
  EXPECT_EQ(w->pending.kind, PendingReason::Kind::kInsufficientQuota);
  EXPECT_EQ(w->pending.resource, "nvidia.com/gpu");
  EXPECT_EQ(w->pending.flavor, "a100");
  EXPECT_EQ(w->pending.requested, 5 * kGpu);
  EXPECT_EQ(w->pending.available, 4 * kGpu);
  EXPECT_EQ(w->pending.missing, kGpu);
  EXPECT_FALSE(w->pending.message.empty());
}

TEST(EngineTest, PriorityPreemptsWithinQueue) {
  Engine e;
  Config c = TwoTeams();
  c.cluster_queues[0].cohort = "";
  c.cluster_queues[1].cohort = "";
  ASSERT_TRUE(e.Configure(c).ok());
  ASSERT_TRUE(e.Submit(Job("team-a", "low", 2, 0), 0).ok());
  Settle(e, 0);
  ASSERT_TRUE(e.Submit(Job("team-a", "high", 2, 1000), 1).ok());
  CycleResult r = e.Schedule(1);
  ASSERT_EQ(r.evictions.size(), 1u);
  EXPECT_EQ(r.evictions[0].victim, "team-a/low");
  EXPECT_EQ(r.evictions[0].reason, EvictionReason::kInClusterQueue);
}

TEST(EngineTest, OneHeadCyclesReachSameOutcome) {
  for (bool multi : {true, false}) {
    EngineOptions o;
    o.multi_admission = multi;
    Engine e(o);
    ASSERT_TRUE(e.Configure(TwoTeams()).ok());
    for (int i = 0; i < 6; ++i) ASSERT_TRUE(e.Submit(Job("team-a", "a-" + std::to_string(i), 1, i % 3), i).ok());
    Settle(e, 10);
    EXPECT_EQ(e.AdmittedCount(), 4u) << multi;
  }
}

}  // namespace
}  // namespace artel::core

namespace artel::core {
namespace {

TEST(EngineWhyTest, NamesWhatWouldHaveToBePreempted) {
  Engine e;
  Config c = TwoTeams();
  c.cluster_queues[1].preemption.reclaim_within_cohort = ReclaimWithinCohortPolicy::kNever;
  ASSERT_TRUE(e.Configure(c).ok());
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(e.Submit(Job("team-a", "a-" + std::to_string(i), 1), i).ok());
  Settle(e, 5);
  ASSERT_TRUE(e.Submit(Job("team-b", "b-0", 1), 10).ok());
  Settle(e, 10);
  auto why = e.Why("team-b/b-0");
  ASSERT_TRUE(why.ok());
  EXPECT_EQ(why->kind, PendingReason::Kind::kPreemptionNoCandidates);
  ASSERT_EQ(why->would_preempt.size(), 1u);
  EXPECT_EQ(why->would_preempt[0].rfind("team-a/", 0), 0u);
  EXPECT_NE(why->message.find("would fit if these were preempted"), std::string::npos);
  EXPECT_FALSE(e.Why("team-b/nope").ok());
}

}  // namespace
}  // namespace artel::core

namespace artel::core {
namespace {

TEST(EngineRestoreTest, RestoredAdmissionHoldsQuota) {
  Engine e;
  ASSERT_TRUE(e.Configure(TwoTeams()).ok());
  ASSERT_TRUE(e.Submit(Job("team-a", "a-0", 3), 0).ok());
  PodSetAssignment ps;
  ps.name = "main";
  ps.count = 1;
  ps.flavors["nvidia.com/gpu"] = "a100";
  ASSERT_TRUE(e.Restore("team-a/a-0", "team-a", {ps}, 0).ok());
  EXPECT_EQ(e.Find("team-a/a-0")->state, WorkloadState::kAdmitted);
  ASSERT_TRUE(e.Submit(Job("team-b", "b-0", 2), 1).ok());
  Settle(e, 1);
  // 3 + 2 > 4: b-0 reclaims its nominal 2 by evicting a-0 (which borrows 1).
  EXPECT_EQ(e.Find("team-b/b-0")->state, WorkloadState::kAdmitted);
  EXPECT_EQ(e.Find("team-a/a-0")->state, WorkloadState::kPending);
  EXPECT_FALSE(e.Restore("team-a/a-0", "nope", {ps}, 0).ok());
}

}  // namespace
}  // namespace artel::core
