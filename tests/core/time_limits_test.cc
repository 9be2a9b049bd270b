// Time limits of the Engine (docs/semantics.md §11): maximum runtime.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/engine.h"

namespace artel::core {
namespace {

constexpr Amount kGpu = 1000;
constexpr Time kMin = 60 * 1000;

ClusterQueueSpec Cq(const std::string& name, Amount nominal) {
  ClusterQueueSpec q;
  q.name = name;
  q.namespace_selector = LabelSelector{};
  ResourceGroupSpec g;
  g.covered_resources = {"nvidia.com/gpu"};
  FlavorQuotasSpec f;
  f.flavor = "a100";
  f.resources.push_back({"nvidia.com/gpu", nominal, std::nullopt, std::nullopt});
  g.flavors.push_back(f);
  q.resource_groups.push_back(g);
  q.preemption.within_cluster_queue = WithinClusterQueuePolicy::kLowerPriority;
  return q;
}

Config OneQueue(Amount gpus = 4 * kGpu) {
  Config c;
  c.flavors.push_back({"a100"});
  c.cluster_queues.push_back(Cq("cq", gpus));
  c.local_queues.push_back({"ns", "default", "cq"});
  return c;
}

WorkloadSpec Job(const std::string& name, int gpus, int priority = 0, std::optional<Time> max = std::nullopt) {
  WorkloadSpec w;
  w.ns = "ns";
  w.name = name;
  w.queue = "default";
  w.priority = priority;
  w.max_runtime = max;
  PodSetSpec ps;
  ps.requests["nvidia.com/gpu"] = gpus * kGpu;
  w.pod_sets.push_back(ps);
  return w;
}

TEST(MaxRuntimeTest, NoLimitsMeansNoTimedEvents) {
  Engine e;
  ASSERT_TRUE(e.Configure(OneQueue()).ok());
  ASSERT_TRUE(e.Submit(Job("a", 4), 0).ok());
  e.Schedule(0);
  EXPECT_EQ(e.Find("ns/a")->state, WorkloadState::kAdmitted);
  EXPECT_FALSE(e.NextTimedEvent().has_value());
  EXPECT_TRUE(e.Schedule(1000 * kMin).evictions.empty());
}

TEST(MaxRuntimeTest, StopsAtTheLimitAndFinishesFailedOnceThePodsAreGone) {
  Engine e;
  ASSERT_TRUE(e.Configure(OneQueue()).ok());
  ASSERT_TRUE(e.Submit(Job("a", 4, 0, 10 * kMin), 5).ok());
  ASSERT_TRUE(e.Submit(Job("b", 4), 5).ok());
  e.Schedule(5);
  ASSERT_EQ(e.NextTimedEvent(), std::optional<Time>(5 + 10 * kMin));
  EXPECT_TRUE(e.Schedule(4 + 10 * kMin).evictions.empty());
  CycleResult r = e.Schedule(5 + 10 * kMin);
  ASSERT_EQ(r.evictions.size(), 1u);
  EXPECT_EQ(r.evictions[0].victim, "ns/a");
  EXPECT_EQ(r.evictions[0].reason, EvictionReason::kMaximumExecutionTimeExceeded);
  EXPECT_NE(r.evictions[0].message.find("maximum runtime of 600s exceeded"), std::string::npos)
      << r.evictions[0].message;
  EXPECT_TRUE(r.admitted.empty());  // its quota is held until the pods are gone
  EXPECT_EQ(e.Find("ns/a")->state, WorkloadState::kEvicting);
  EXPECT_FALSE(e.NextTimedEvent().has_value());
  ASSERT_TRUE(e.CompleteEviction("ns/a", 6 + 10 * kMin).ok());
  const WorkloadInfo* a = e.Find("ns/a");
  EXPECT_EQ(a->state, WorkloadState::kFinished);
  EXPECT_TRUE(a->failed);
  EXPECT_NE(a->failure.find("maximum runtime"), std::string::npos);
  EXPECT_EQ(e.PendingCount(), 1u);  // b only: a does not queue again
  r = e.Schedule(6 + 10 * kMin);
  ASSERT_EQ(r.admitted.size(), 1u);
  EXPECT_EQ(r.admitted[0], "ns/b");
}

TEST(MaxRuntimeTest, FinishWhileStoppingKeepsTheFailure) {
  Engine e;
  ASSERT_TRUE(e.Configure(OneQueue()).ok());
  ASSERT_TRUE(e.Submit(Job("a", 4, 0, kMin), 0).ok());
  e.Schedule(0);
  ASSERT_EQ(e.Schedule(kMin).evictions.size(), 1u);
  // The pods exited with a status before the stop completed: the caller
  // reports a finish; the workload is still the one the engine stopped.
  ASSERT_TRUE(e.Finish("ns/a", kMin + 1).ok());
  EXPECT_EQ(e.Find("ns/a")->state, WorkloadState::kFinished);
  EXPECT_EQ(e.Find("ns/a")->last_eviction->reason, EvictionReason::kMaximumExecutionTimeExceeded);
}

TEST(MaxRuntimeTest, EvictedWorkloadKeepsItsUsedTime) {
  Engine e;
  ASSERT_TRUE(e.Configure(OneQueue()).ok());
  ASSERT_TRUE(e.Submit(Job("low", 4, 0, 10 * kMin), 0).ok());
  e.Schedule(0);
  ASSERT_TRUE(e.Submit(Job("high", 4, 10), 6 * kMin).ok());
  CycleResult r = e.Schedule(6 * kMin);
  ASSERT_EQ(r.evictions.size(), 1u);
  EXPECT_EQ(r.evictions[0].reason, EvictionReason::kInClusterQueue);
  ASSERT_TRUE(e.CompleteEviction("ns/low", 6 * kMin).ok());
  EXPECT_EQ(e.Find("ns/low")->used_time, 6 * kMin);
  e.Schedule(6 * kMin);
  ASSERT_TRUE(e.Finish("ns/high", 20 * kMin).ok());
  e.Schedule(20 * kMin);
  ASSERT_EQ(e.Find("ns/low")->state, WorkloadState::kAdmitted);
  EXPECT_EQ(e.NextTimedEvent(), std::optional<Time>(24 * kMin));
}

TEST(MaxRuntimeTest, QueueDefaultAndCeilingFollowConfigurationChanges) {
  Engine e;
  Config c = OneQueue();
  c.cluster_queues[0].default_max_runtime = 30 * kMin;
  ASSERT_TRUE(e.Configure(c).ok());
  ASSERT_TRUE(e.Submit(Job("dflt", 1), 0).ok());
  ASSERT_TRUE(e.Submit(Job("own", 1, 0, 120 * kMin), 0).ok());
  e.Schedule(0);
  EXPECT_EQ(e.Find("ns/dflt")->max_runtime, std::optional<Time>(30 * kMin));
  EXPECT_EQ(e.Find("ns/own")->max_runtime, std::optional<Time>(120 * kMin));
  // A ceiling added later applies to what is running.
  c.cluster_queues[0].max_runtime_ceiling = 60 * kMin;
  ASSERT_TRUE(e.Configure(c).ok());
  EXPECT_EQ(e.Find("ns/own")->max_runtime, std::optional<Time>(60 * kMin));
  CycleResult r = e.Schedule(60 * kMin);
  ASSERT_EQ(r.evictions.size(), 2u);
  // Removing the limits disarms them.
  ASSERT_TRUE(e.Submit(Job("later", 1), 61 * kMin).ok());
  ASSERT_TRUE(e.Configure(OneQueue()).ok());
  e.Schedule(61 * kMin);
  EXPECT_EQ(e.Find("ns/later")->state, WorkloadState::kAdmitted);
  EXPECT_FALSE(e.NextTimedEvent().has_value());
}

TEST(MaxRuntimeTest, CancelAndRestoreKeepTheDeadlinesRight) {
  Engine e;
  ASSERT_TRUE(e.Configure(OneQueue()).ok());
  ASSERT_TRUE(e.Submit(Job("a", 1, 0, 10 * kMin), 0).ok());
  e.Schedule(0);
  ASSERT_TRUE(e.Cancel("ns/a", kMin).ok());
  EXPECT_FALSE(e.NextTimedEvent().has_value());
  // Restored after a restart with its admission time: the deadline counts
  // from then.
  ASSERT_TRUE(e.Submit(Job("b", 1, 0, 10 * kMin), 2 * kMin).ok());
  PodSetAssignment ps;
  ps.name = "main";
  ps.count = 1;
  ps.flavors["nvidia.com/gpu"] = "a100";
  ASSERT_TRUE(e.Restore("ns/b", "cq", {ps}, kMin).ok());
  EXPECT_EQ(e.NextTimedEvent(), std::optional<Time>(11 * kMin));
}

TEST(MaxRuntimeTest, RestoredUsedTimeCountsAfterARestart) {
  Engine e;
  ASSERT_TRUE(e.Configure(OneQueue()).ok());
  ASSERT_TRUE(e.Submit(Job("a", 1, 0, 10 * kMin), 0).ok());
  ASSERT_TRUE(e.RestoreUsedTime("ns/a", 6 * kMin).ok());
  EXPECT_EQ(e.Find("ns/a")->used_time, 6 * kMin);
  PodSetAssignment ps;
  ps.name = "main";
  ps.count = 1;
  ps.flavors["nvidia.com/gpu"] = "a100";
  ASSERT_TRUE(e.Restore("ns/a", "cq", {ps}, 20 * kMin).ok());
  EXPECT_EQ(e.NextTimedEvent(), std::optional<Time>(24 * kMin));
  EXPECT_FALSE(e.RestoreUsedTime("ns/a", 0).ok());  // only while pending
  // A pending workload restored with its used time runs only the rest.
  ASSERT_TRUE(e.Submit(Job("b", 1, 0, 10 * kMin), 0).ok());
  ASSERT_TRUE(e.RestoreUsedTime("ns/b", 9 * kMin).ok());
  CycleResult r = e.Schedule(30 * kMin);  // a ran out at 24m
  ASSERT_EQ(r.evictions.size(), 1u);
  EXPECT_EQ(r.evictions[0].victim, "ns/a");
  ASSERT_EQ(e.Find("ns/b")->state, WorkloadState::kAdmitted);
  EXPECT_EQ(e.NextTimedEvent(), std::optional<Time>(31 * kMin));  // 9m used + 1m
  r = e.Schedule(31 * kMin);
  ASSERT_EQ(r.evictions.size(), 1u);
  EXPECT_EQ(r.evictions[0].victim, "ns/b");
  EXPECT_EQ(r.evictions[0].reason, EvictionReason::kMaximumExecutionTimeExceeded);
}

TEST(ReservationTest, BackfillWindowBoundsHowFarAheadAStartMayBe) {
  Engine e;
  Config c = OneQueue(2 * kGpu);
  c.cluster_queues[0].reserve_priority = 0;
  c.cluster_queues[0].backfill_window = 30 * kMin;
  ASSERT_TRUE(e.Configure(c).ok());
  ASSERT_TRUE(e.Submit(Job("short", 1, 0, 20 * kMin), 0).ok());
  ASSERT_TRUE(e.Submit(Job("long", 1, 0, 60 * kMin), 0).ok());
  e.Schedule(0);
  ASSERT_TRUE(e.Submit(Job("gang", 2), kMin).ok());
  e.Schedule(kMin);
  // Its start (60m) lies beyond the window: no reservation, and the engine
  // retries when it comes within it.
  EXPECT_TRUE(e.Reservations().empty());
  EXPECT_THAT(e.Find("ns/gang")->pending.message,
              ::testing::HasSubstr("not reserved: its quota is expected to be free only in 59m (at t=1h)"));
  EXPECT_EQ(e.NextTimedEvent(), std::optional<Time>(20 * kMin));
  // `short` ends at 20m by its maximum runtime; then the start is 40m away.
  e.Schedule(20 * kMin);
  ASSERT_TRUE(e.CompleteEviction("ns/short", 20 * kMin).ok());
  e.Schedule(20 * kMin);
  EXPECT_TRUE(e.Reservations().empty());
  e.Schedule(30 * kMin);
  std::vector<Engine::ReservationInfo> rs = e.Reservations();
  ASSERT_EQ(rs.size(), 1u);
  EXPECT_EQ(rs[0].workload, "ns/gang");
  EXPECT_EQ(rs[0].start, 60 * kMin);
  EXPECT_EQ(rs[0].holders, std::vector<std::string>{"ns/long"});
  // Without the window the same queue reserves at once.
  c.cluster_queues[0].backfill_window.reset();
  Engine f;
  ASSERT_TRUE(f.Configure(c).ok());
  ASSERT_TRUE(f.Submit(Job("long", 1, 0, 60 * kMin), 0).ok());
  ASSERT_TRUE(f.Submit(Job("long2", 1, 0, 60 * kMin), 0).ok());
  f.Schedule(0);
  ASSERT_TRUE(f.Submit(Job("gang", 2), kMin).ok());
  f.Schedule(kMin);
  EXPECT_EQ(f.Reservations().size(), 1u);
}

}  // namespace
}  // namespace artel::core
