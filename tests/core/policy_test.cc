// Unit tests for the engine's policy factories (src/core/admission_order.h,
// flavor_assigner.h, preemption_policy.h): each policy is made from
// EngineOptions, and the preemption policy answers the questions the flavor
// assigner and placement-aware preemption ask it as the semantics say
// (docs/semantics.md: fair sharing lets every ClusterQueue preempt while it
// borrows; classical preemption only with borrowWithinCohort).
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "core/admission_order.h"
#include "core/engine.h"
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

// The candidate index (EngineOptions::candidate_index) keeps each
// ClusterQueue's admitted workloads in preemption order between changes. A
// workload stopped for its maximum runtime is evicting without having been
// chosen as a victim; it must come first for the next preemptor (evicting
// candidates first, docs/semantics.md), so that the preemptor waits for it
// instead of evicting the newest admission as well.
ClusterQueueSpec GpuQueue(const std::string& name, Amount nominal, ReclaimWithinCohortPolicy reclaim) {
  ClusterQueueSpec q;
  q.name = name;
  q.cohort = "co";
  q.namespace_selector = LabelSelector{};
  ResourceGroupSpec g;
  g.covered_resources = {"nvidia.com/gpu"};
  FlavorQuotasSpec f;
  f.flavor = "a100";
  f.resources.push_back({"nvidia.com/gpu", nominal, std::nullopt, std::nullopt});
  g.flavors.push_back(f);
  q.resource_groups.push_back(g);
  q.preemption.reclaim_within_cohort = reclaim;
  return q;
}

WorkloadSpec GpuJob(const std::string& name, const std::string& queue, int32_t priority,
                    std::optional<Time> max_runtime = std::nullopt) {
  WorkloadSpec w;
  w.ns = "ns";
  w.name = name;
  w.queue = queue;
  w.priority = priority;
  w.max_runtime = max_runtime;
  PodSetSpec ps;
  ps.requests["nvidia.com/gpu"] = 1000;
  w.pod_sets.push_back(ps);
  return w;
}

std::vector<std::string> EvictionsWhenAStoppedWorkloadIsEvicting(bool candidate_index) {
  EngineOptions opts;
  opts.candidate_index = candidate_index;
  Engine e(opts);
  Config c;
  c.flavors.push_back({"a100"});
  c.cluster_queues.push_back(GpuQueue("reg", 0, ReclaimWithinCohortPolicy::kNever));
  c.cluster_queues.push_back(GpuQueue("prod", 2000, ReclaimWithinCohortPolicy::kAny));
  c.cluster_queues.push_back(GpuQueue("low", 1000, ReclaimWithinCohortPolicy::kLowerPriority));
  c.local_queues.push_back({"ns", "reg", "reg"});
  c.local_queues.push_back({"ns", "prod", "prod"});
  c.local_queues.push_back({"ns", "low", "low"});
  EXPECT_TRUE(e.Configure(c).ok());
  constexpr Time kLimit = 600000;
  std::vector<std::string> out;
  auto run = [&](const char* label, Time now) {
    for (const Eviction& ev : e.Schedule(now).evictions) out.push_back(std::string(label) + ":" + ev.victim);
  };
  // Borrowed work on the cohort's 3 GPUs, admitted at t=0, 1, 2.
  EXPECT_TRUE(e.Submit(GpuJob("w1", "reg", 0, kLimit), 0).ok());
  run("t0", 0);
  EXPECT_TRUE(e.Submit(GpuJob("w2", "reg", 0), 1).ok());
  run("t1", 1);
  EXPECT_TRUE(e.Submit(GpuJob("w3", "reg", 0), 2).ok());
  run("t2", 2);
  // prod reclaims one GPU: the newest admission goes.
  EXPECT_TRUE(e.Submit(GpuJob("big", "prod", 10), 3).ok());
  run("reclaim", 3);
  EXPECT_TRUE(e.CompleteEviction("ns/w3", 3).ok());
  run("t3", 3);
  EXPECT_EQ(e.Find("ns/big")->state, WorkloadState::kAdmitted);
  // A search that finds no usable victim (they all have a higher priority)
  // but orders reg's candidates while none of them is evicting.
  EXPECT_TRUE(e.Submit(GpuJob("x", "low", -5), 4).ok());
  run("low", 4);
  // w1 reaches its maximum runtime and is evicting; no search chose it.
  run("expired", kLimit);
  // The next reclaim waits for w1 instead of evicting w2 as well.
  EXPECT_TRUE(e.Submit(GpuJob("p", "prod", 10), kLimit).ok());
  run("p", kLimit);
  return out;
}

TEST(CandidateIndexTest, AnEvictingWorkloadComesFirstEvenWhenNoSearchChoseIt) {
  const std::vector<std::string> indexed = EvictionsWhenAStoppedWorkloadIsEvicting(true);
  const std::vector<std::string> full = EvictionsWhenAStoppedWorkloadIsEvicting(false);
  EXPECT_EQ(indexed, full);
  EXPECT_EQ(indexed, (std::vector<std::string>{"reclaim:ns/w3", "expired:ns/w1"}));
}

// The quota search first runs with a small budget of candidates and runs
// the bound (MayFitWithoutAllCandidates) only when that is spent; a search
// that needs more victims than the budget must still find all of them.
std::vector<std::string> EvictionsOfALargeReclaim(bool candidate_index) {
  EngineOptions opts;
  opts.candidate_index = candidate_index;
  Engine e(opts);
  Config c;
  c.flavors.push_back({"a100"});
  c.cluster_queues.push_back(GpuQueue("reg", 0, ReclaimWithinCohortPolicy::kNever));
  c.cluster_queues.push_back(GpuQueue("prod", 64000, ReclaimWithinCohortPolicy::kAny));
  c.local_queues.push_back({"ns", "reg", "reg"});
  c.local_queues.push_back({"ns", "prod", "prod"});
  EXPECT_TRUE(e.Configure(c).ok());
  for (int i = 0; i < 64; ++i) EXPECT_TRUE(e.Submit(GpuJob("w" + std::to_string(i), "reg", 0), i).ok());
  e.Schedule(64);
  EXPECT_EQ(e.AdmittedCount(), 64u);
  WorkloadSpec big = GpuJob("big", "prod", 10);
  big.pod_sets.mut(0).requests["nvidia.com/gpu"] = 40000;
  EXPECT_TRUE(e.Submit(big, 65).ok());
  std::vector<std::string> out;
  for (const Eviction& ev : e.Schedule(65).evictions) out.push_back(ev.victim);
  return out;
}

TEST(CandidateIndexTest, AReclaimPastTheCheapSearchBudgetTakesEveryVictimItNeeds) {
  const std::vector<std::string> indexed = EvictionsOfALargeReclaim(true);
  EXPECT_EQ(indexed, EvictionsOfALargeReclaim(false));
  ASSERT_EQ(indexed.size(), 40u);
  // The newest admissions go first.
  std::vector<std::string> sorted = indexed;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 24; i < 64; ++i)
    EXPECT_TRUE(std::binary_search(sorted.begin(), sorted.end(), "ns/w" + std::to_string(i))) << i;
}

}  // namespace
}  // namespace artel::core
