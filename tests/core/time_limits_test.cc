// Time limits of the Engine (docs/semantics.md §11): maximum runtime.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

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

WorkloadSpec Job(const std::string& name, int gpus, int priority = 0,
                 std::optional<Time> max = std::nullopt) {
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
  EXPECT_THAT(e.Find("ns/gang")->pending->message,
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

// A workload held back by a reservation says which one, when it starts and
// why it may not backfill; blocked again after a release, it says so with the
// new times and nothing of the text before (the reason is rewritten in place).
TEST(ReservationTest, BlockedReasonNamesTheReservationAndIsRewrittenWhenRetried) {
  Engine e;
  Config c = OneQueue(3 * kGpu);
  c.cluster_queues[0].reserve_priority = 0;
  ASSERT_TRUE(e.Configure(c).ok());
  ASSERT_TRUE(e.Submit(Job("short", 1, 0, 10 * kMin), 0).ok());
  ASSERT_TRUE(e.Submit(Job("long", 1, 0, 60 * kMin), 0).ok());
  e.Schedule(0);
  ASSERT_TRUE(e.Submit(Job("gang", 3), kMin).ok());
  ASSERT_TRUE(e.Submit(Job("bf", 1, 0, 90 * kMin), kMin).ok());
  ASSERT_TRUE(e.Submit(Job("nobf", 1), kMin).ok());
  e.Schedule(kMin);
  ASSERT_EQ(e.Reservations().size(), 1u);
  EXPECT_EQ(e.Reservations()[0].start, 60 * kMin);
  const std::string tail = " and it needs quota the reservation holds";
  EXPECT_EQ(e.Find("ns/bf")->pending->kind, PendingReason::Kind::kBlockedByReservation);
  EXPECT_EQ(e.Find("ns/bf")->pending->cluster_queue, "cq");
  EXPECT_EQ(e.Find("ns/bf")->pending->message,
            "ns/bf in ClusterQueue cq: fits, but would delay the reservation of ns/gang (ClusterQueue cq), "
            "which starts in 59m (at t=1h): its runtime estimate (1h30m) ends after that" +
                tail);
  EXPECT_EQ(e.Find("ns/nobf")->pending->message,
            "ns/nobf in ClusterQueue cq: fits, but would delay the reservation of ns/gang (ClusterQueue cq), "
            "which starts in 59m (at t=1h): it has no runtime estimate (maximum runtime or queue default)" +
                tail);
  // `short` finishes early, at 9m30.5s: the release retries both, and the
  // start (still `long`'s end) is 50m29.5s away, which reads as 50m29s.
  const Time t = 9 * kMin + 30500;
  ASSERT_TRUE(e.Finish("ns/short", t).ok());
  e.Schedule(t);
  EXPECT_EQ(e.Find("ns/bf")->state, WorkloadState::kPending);
  EXPECT_EQ(e.Find("ns/bf")->pending->message,
            "ns/bf in ClusterQueue cq: fits, but would delay the reservation of ns/gang (ClusterQueue cq), "
            "which starts in 50m29s (at t=1h): its runtime estimate (1h30m) ends after that" +
                tail);
  EXPECT_EQ(
      e.Find("ns/nobf")->pending->message,
      "ns/nobf in ClusterQueue cq: fits, but would delay the reservation of ns/gang (ClusterQueue cq), "
      "which starts in 50m29s (at t=1h): it has no runtime estimate (maximum runtime or queue default)" +
          tail);
}

// Reservations with nodes (docs/semantics.md §11), on random small clusters
// of 2-3 racks: 1-GPU jobs and gangs that must run in one rack
// (podset-required-topology), every one with a maximum runtime (its
// estimate, enforced), one priority, no preemption, and a queue that
// reserves at once; some jobs finish early. Nothing but backfill admits work
// while a reservation stands, so after every Schedule a workload that held a
// reservation before and still holds one has a start no later than before.
// Across the cases, reservations with nodes are made and work is admitted
// while they stand.
TEST(ReservationTest, StartWithNodesNeverMovesLaterBecauseOfBackfill) {
  int with_nodes = 0, admitted_meanwhile = 0;
  for (uint32_t seed = 1; seed <= 150; ++seed) {
    std::mt19937 rng(seed);
    Config c;
    c.topologies.push_back({"racks", {"topology/rack", "kubernetes.io/hostname"}, {}, {}});
    ResourceFlavorSpec flavor;
    flavor.name = "a100";
    flavor.topology_name = "racks";
    c.flavors.push_back(flavor);
    ClusterQueueSpec q = Cq("cq", 1000 * kGpu);
    q.preemption.within_cluster_queue = WithinClusterQueuePolicy::kNever;
    q.reserve_priority = 0;
    c.cluster_queues.push_back(q);
    c.local_queues.push_back({"ns", "default", "cq"});
    Engine e;
    ASSERT_TRUE(e.Configure(c).ok());
    std::vector<placement::NodeSpec> nodes;
    const int racks = 2 + static_cast<int>(rng() % 2);
    int smallest_rack = 1 << 30;
    for (int r = 0; r < racks; ++r) {
      const int hosts = 1 + static_cast<int>(rng() % 2);
      int gpus_in_rack = 0;
      for (int h = 0; h < hosts; ++h) {
        placement::NodeSpec n;
        n.name = "r" + std::to_string(r) + "-n" + std::to_string(h);
        n.labels["topology/rack"] = "r" + std::to_string(r);
        n.labels["nvidia.com/gpu.product"] = "A100-SXM4-80GB";
        const int gpus = rng() % 2 ? 4 : 2;
        gpus_in_rack += gpus;
        n.allocatable["nvidia.com/gpu"] = gpus * kGpu;
        nodes.push_back(n);
      }
      smallest_rack = std::min(smallest_rack, gpus_in_rack);
    }
    ASSERT_TRUE(e.SetNodes(nodes).ok());
    std::map<std::string, Time> prev;
    auto check = [&](Time now, const CycleResult& r) {
      std::map<std::string, Time> cur;
      for (const Engine::ReservationInfo& ri : e.Reservations()) {
        cur[ri.workload] = ri.start;
        if (!ri.nodes.empty()) ++with_nodes;
        auto it = prev.find(ri.workload);
        if (it != prev.end()) {
          EXPECT_LE(ri.start, it->second)
              << "seed " << seed << " t=" << now << ": the reservation of " << ri.workload << " moved later";
        }
      }
      if (!cur.empty() && !r.admitted.empty()) ++admitted_meanwhile;
      prev = std::move(cur);
    };
    auto settle = [&](Time now) {
      for (int k = 0; k < 20; ++k) {
        CycleResult r = e.Schedule(now);
        check(now, r);
        for (const Eviction& ev : r.evictions) ASSERT_TRUE(e.CompleteEviction(ev.victim, now).ok());
        if (r.admitted.empty() && r.evictions.empty()) break;
      }
    };
    int next_name = 0;
    for (int step = 0; step < 12; ++step) {
      const Time at = step * 5 * kMin;
      for (int guard = 0; guard < 100; ++guard) {
        std::optional<Time> next = e.NextTimedEvent();
        if (!next || *next >= at) break;
        settle(*next);
      }
      const int submits = static_cast<int>(rng() % 3);
      for (int k = 0; k < submits; ++k) {
        WorkloadSpec w =
            Job("j" + std::to_string(next_name++), 1, 0, (5 + static_cast<Time>(rng() % 56)) * kMin);
        if (rng() % 3 == 0) {
          w.pod_sets.mut(0).count =
              2 + static_cast<int32_t>(rng() % static_cast<uint32_t>(smallest_rack - 1));
          w.pod_sets.mut(0).topology.mut().required = "topology/rack";
        }
        ASSERT_TRUE(e.Submit(w, at).ok());
      }
      if (rng() % 4 == 0) {
        std::vector<std::string> running;
        for (const WorkloadInfo* w : e.Workloads()) {
          if (w->state == WorkloadState::kAdmitted) running.push_back(w->key);
        }
        if (!running.empty()) {
          ASSERT_TRUE(e.Finish(running[rng() % running.size()], at).ok());
        }
      }
      settle(at);
    }
  }
  EXPECT_GT(with_nodes, 0);
  EXPECT_GT(admitted_meanwhile, 0);
}

}  // namespace
}  // namespace artel::core
