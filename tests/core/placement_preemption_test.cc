// Invariants of placement-aware preemption (core/preemption.cc,
// PlacementTargets; docs/semantics.md section 5) on random small clusters.
//
// Each case fills 2-4 hosts with admitted jobs of two ClusterQueues in one
// cohort (random quotas, priorities and preemption policies; what does not
// fit is cancelled), then submits one more job P and runs one cycle. For
// every eviction P causes:
//  - the victim is one the policy allows: same queue only under
//    withinClusterQueue != Never and with a lower priority (LowerPriority);
//    another queue only under reclaimWithinCohort != Never, with a lower
//    priority under LowerPriority, and only if that queue was above its
//    quota (borrowing) before the cycle;
//  - when P's quota already fit (it preempted for nodes only), every victim
//    of a one-pod P holds a pod on the node P is finally placed on;
//  - once the evictions for nodes complete, P is admitted (no wasted
//    preemption).
// With both policies Never, P never evicts anything.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <random>
#include <set>
#include <string>

#include "core/engine.h"

namespace artel::core {
namespace {

constexpr Amount kGpu = 1000;

ClusterQueueSpec Queue(const std::string& name, Amount nominal, WithinClusterQueuePolicy within,
                       ReclaimWithinCohortPolicy reclaim) {
  ClusterQueueSpec q;
  q.name = name;
  q.cohort = "shared";
  q.namespace_selector = LabelSelector{};
  ResourceGroupSpec g;
  g.covered_resources = {"nvidia.com/gpu"};
  FlavorQuotasSpec f;
  f.flavor = "a100";
  f.resources.push_back({"nvidia.com/gpu", nominal, std::nullopt, std::nullopt});
  g.flavors.push_back(f);
  q.resource_groups.push_back(g);
  q.preemption.within_cluster_queue = within;
  q.preemption.reclaim_within_cohort = reclaim;
  return q;
}

WorkloadSpec Job(const std::string& ns, const std::string& name, int pods, int gpus, int priority) {
  WorkloadSpec w;
  w.ns = ns;
  w.name = name;
  w.queue = "default";
  w.priority = priority;
  PodSetSpec ps;
  ps.count = pods;
  ps.requests["nvidia.com/gpu"] = gpus * kGpu;
  w.pod_sets.push_back(ps);
  return w;
}

std::vector<placement::NodeSpec> Hosts(std::mt19937& rng) {
  std::vector<placement::NodeSpec> nodes;
  int n = 2 + static_cast<int>(rng() % 3);
  for (int i = 0; i < n; ++i) {
    placement::NodeSpec node;
    node.name = "host-" + std::to_string(i);
    node.labels["nvidia.com/gpu.product"] = "A100-SXM4-80GB";
    int gpus = rng() % 2 ? 8 : 4;
    node.allocatable["nvidia.com/gpu"] = gpus * kGpu;
    nodes.push_back(node);
  }
  return nodes;
}

struct Case {
  WithinClusterQueuePolicy within;
  ReclaimWithinCohortPolicy reclaim;
};

// Runs one random case; returns how many evictions the preemptor caused,
// and counts those made for nodes in `*for_nodes_count` when not null.
int RunCase(uint32_t seed, const Case& policy, int* for_nodes_count = nullptr) {
  std::mt19937 rng(seed);
  Config c;
  c.flavors.push_back({"a100"});
  const Amount quota_a = static_cast<Amount>(rng() % 17) * kGpu;
  const Amount quota_b = static_cast<Amount>(rng() % 17) * kGpu;
  c.cluster_queues.push_back(Queue("team-a", quota_a, policy.within, policy.reclaim));
  c.cluster_queues.push_back(Queue("team-b", quota_b, policy.within, policy.reclaim));
  c.local_queues.push_back({"team-a", "default", "team-a"});
  c.local_queues.push_back({"team-b", "default", "team-b"});
  Engine e;
  EXPECT_TRUE(e.Configure(c).ok());
  EXPECT_TRUE(e.SetNodes(Hosts(rng)).ok());
  // Fill: jobs one at a time; what is not admitted is cancelled.
  const int sizes[] = {1, 2, 4};
  for (int i = 0; i < 14; ++i) {
    std::string ns = rng() % 2 ? "team-a" : "team-b";
    std::string name = "fill-" + std::to_string(i);
    const int gpus = sizes[rng() % 3];
    const int priority = static_cast<int>(rng() % 4);
    EXPECT_TRUE(e.Submit(Job(ns, name, 1, gpus, priority), i).ok());
    for (int k = 0; k < 10; ++k) {
      CycleResult r = e.Schedule(i);
      for (const Eviction& ev : r.evictions) EXPECT_TRUE(e.CompleteEviction(ev.victim, i).ok());
      if (r.admitted.empty() && r.evictions.empty()) break;
    }
    for (const WorkloadInfo* w : e.Workloads()) {
      if (w->state == WorkloadState::kPending) {
        EXPECT_TRUE(e.Cancel(w->key, i).ok());
      }
    }
  }
  // Who borrows before P arrives, and how much quota the cohort has left
  // (no borrowing or lending limits here, so that is what P can get).
  std::map<std::string, bool> borrowing;
  Amount cohort_left = 0;
  for (const QuotaUsage& u : e.Usage()) {
    if (u.resource != "nvidia.com/gpu") continue;
    if (!u.is_cohort) borrowing[u.node] = u.usage > u.subtree_quota;
    if (u.is_cohort && u.node == "shared") cohort_left = u.subtree_quota - u.usage;
  }
  std::map<std::string, const WorkloadInfo*> before;
  std::map<std::string, std::set<std::string>> nodes_of;
  for (const WorkloadInfo* w : e.Workloads()) {
    before[w->key] = w;
    for (const PodPlacementInfo& p : w->placements) nodes_of[w->key].insert(p.node);
  }
  std::map<std::string, int> prio;
  for (const auto& [key, w] : before) prio[key] = w->priority;
  const std::string pns = rng() % 2 ? "team-a" : "team-b";
  const int ppods = rng() % 4 == 0 ? 2 : 1;
  const int pprio = static_cast<int>(rng() % 5);
  const int psize = sizes[rng() % 3];
  const int pgpus = psize * static_cast<int>(rng() % 2 + 1);
  const bool quota_fits = Amount{ppods} * pgpus * kGpu <= cohort_left;
  EXPECT_TRUE(e.Submit(Job(pns, "p", ppods, pgpus, pprio), 100).ok());
  const std::string pkey = pns + "/p";
  CycleResult r = e.Schedule(100);
  int caused = 0;
  bool for_nodes = false;
  std::vector<std::string> victims;
  for (const Eviction& ev : r.evictions) {
    if (ev.preemptor != pkey) continue;
    ++caused;
    victims.push_back(ev.victim);
    for_nodes = for_nodes || ev.message.find("its pods need this workload's nodes") != std::string::npos;
    const bool same = ev.victim_cluster_queue == pns;
    SCOPED_TRACE("seed " + std::to_string(seed) + " victim " + ev.victim);
    if (same) {
      EXPECT_NE(policy.within, WithinClusterQueuePolicy::kNever);
      if (policy.within == WithinClusterQueuePolicy::kLowerPriority) {
        EXPECT_LT(prio[ev.victim], pprio);
      } else {
        EXPECT_LE(prio[ev.victim], pprio);  // equal only when newer
      }
    } else {
      EXPECT_NE(policy.reclaim, ReclaimWithinCohortPolicy::kNever);
      if (policy.reclaim == ReclaimWithinCohortPolicy::kLowerPriority) {
        EXPECT_LT(prio[ev.victim], pprio);
      }
      EXPECT_TRUE(borrowing[ev.victim_cluster_queue]) << ev.victim_cluster_queue << " was within its quota";
    }
  }
  if (caused == 0 || !for_nodes) return caused;
  if (for_nodes_count != nullptr) *for_nodes_count += caused;
  for (const Eviction& ev : r.evictions) EXPECT_TRUE(e.CompleteEviction(ev.victim, 100).ok());
  for (int k = 0; k < 10; ++k) {
    CycleResult more = e.Schedule(101);
    for (const Eviction& ev : more.evictions) EXPECT_TRUE(e.CompleteEviction(ev.victim, 101).ok());
    if (more.admitted.empty() && more.evictions.empty()) break;
  }
  const WorkloadInfo* p = e.Find(pkey);
  EXPECT_EQ(p->state, WorkloadState::kAdmitted) << "seed " << seed << ": the preemption was wasted";
  if (quota_fits && ppods == 1 && p->state == WorkloadState::kAdmitted && !p->placements.empty()) {
    const std::string& node = p->placements[0].node;
    for (const std::string& v : victims) {
      EXPECT_TRUE(nodes_of[v].count(node)) << "seed " << seed << ": victim " << v << " is not on " << node;
    }
  }
  return caused;
}

TEST(PlacementPreemptionInvariants, VictimsAreAllowedLocalAndSufficient) {
  const Case cases[] = {
      {WithinClusterQueuePolicy::kLowerPriority, ReclaimWithinCohortPolicy::kNever},
      {WithinClusterQueuePolicy::kLowerPriority, ReclaimWithinCohortPolicy::kAny},
      {WithinClusterQueuePolicy::kNever, ReclaimWithinCohortPolicy::kLowerPriority},
      {WithinClusterQueuePolicy::kLowerOrNewerEqualPriority, ReclaimWithinCohortPolicy::kAny},
  };
  int evictions = 0, for_nodes = 0;
  for (uint32_t seed = 1; seed <= 150; ++seed) {
    for (const Case& c : cases) evictions += RunCase(seed, c, &for_nodes);
  }
  // The generator must exercise preemption, and preemption for nodes.
  std::printf("evictions %d, for nodes %d\n", evictions, for_nodes);
  EXPECT_GT(evictions, 20);
  EXPECT_GT(for_nodes, 20);
}

TEST(PlacementPreemptionInvariants, PolicyNeverEvictsNothing) {
  for (uint32_t seed = 1; seed <= 150; ++seed) {
    EXPECT_EQ(RunCase(seed, {WithinClusterQueuePolicy::kNever, ReclaimWithinCohortPolicy::kNever}), 0)
        << "seed " << seed;
  }
}

}  // namespace
}  // namespace artel::core
