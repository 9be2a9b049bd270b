// The naive reference scheduler (naive_scheduler.h) side by side with the
// engine on seeded random inputs restricted to its subset: every preemption
// policy Never, no fair sharing. After every settle both must admit the same
// workloads with the same pod counts and flavors.
#include "naive_scheduler.h"

#include <gtest/gtest.h>

#include "core/engine.h"
#include "driver.h"
#include "generator.h"

namespace artel::proptest {
namespace {

constexpr uint64_t kSeeds = 300;

GenOptions NaiveSubset() {
  GenOptions o;
  o.preemption = false;
  o.fair_weights = false;
  o.max_batches = 12;
  return o;
}

TEST(NaiveSchedulerTest, MatchesEngineOnRandomInputs) {
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    Scenario s = GenerateScenario(seed, NaiveSubset());
    for (bool multi : {true, false}) {
      core::EngineOptions opts;
      opts.multi_admission = multi;
      core::Engine e(opts);
      ASSERT_TRUE(e.Configure(s.config).ok());
      NaiveScheduler naive(s.config);
      for (const Batch& b : s.batches) {
        ASSERT_EQ(ApplyBatch({&e}, b, &naive), "");
        bool settled = false;
        auto evictions = multi ? Settle(e, b.at, &settled) : SettleOneHead(e, b.at, &settled);
        ASSERT_TRUE(settled) << "seed=" << seed;
        ASSERT_TRUE(evictions.empty()) << "seed=" << seed << ": preemption in the no-preemption subset";
        naive.Settle();
        AdmittedSet fast = Admitted(e), slow = naive.Admitted();
        ASSERT_TRUE(fast == slow) << "seed=" << seed << " multi=" << multi << " t=" << b.at << "\n"
                                  << DescribeDiff(fast, slow, "engine", "naive") << Describe(s);
      }
    }
  }
}

// The naive tree against hand-computed Kueue quantities: a CQ lending 2 of 6
// and a sibling with a borrowing limit.
TEST(NaiveQuotaTreeTest, HandComputedExample) {
  core::Config c;
  c.flavors.push_back({"f"});
  auto cq = [](const std::string& name, core::Amount nominal, std::optional<core::Amount> bl,
               std::optional<core::Amount> ll) {
    core::ClusterQueueSpec q;
    q.name = name;
    q.cohort = "co";
    q.resource_groups.push_back({{"cpu"}, {{"f", {{"cpu", nominal, bl, ll}}}}});
    return q;
  };
  c.cluster_queues.push_back(cq("a", 6, std::nullopt, 2));
  c.cluster_queues.push_back(cq("b", 1, 3, std::nullopt));
  NaiveQuotaTree t(c);
  t.SetUsage({{"a", {{{"f", "cpu"}, 5}}}, {"b", {{{"f", "cpu"}, 2}}}});
  FlavorResource fr{"f", "cpu"};
  EXPECT_EQ(t.Local("a", fr), 4);
  EXPECT_EQ(t.Subtree("co", fr), 3);  // 2 lent by a + 1 by b
  EXPECT_EQ(t.Usage("co", fr), 3);    // a draws 1, b draws 2
  EXPECT_EQ(t.Available("co", fr), 0);
  EXPECT_EQ(t.Available("a", fr), 0);  // local 4 used up, nothing left above
  EXPECT_EQ(t.PotentialAvailable("a", fr), 7);
  EXPECT_EQ(t.PotentialAvailable("b", fr), 3);
  EXPECT_EQ(t.BorrowingLevel("b", fr, 1).level, 1);  // fits nowhere: the root's height
  EXPECT_FALSE(t.BorrowingLevel("b", fr, 1).may_reclaim);
  t.SetUsage({{"b", {{{"f", "cpu"}, 2}}}});
  EXPECT_EQ(t.Available("b", fr), 1);  // borrowing limit: 1 - 2 + 3 = 2, parent has 1
  EXPECT_EQ(t.Available("a", fr), 5);  // local 4 + 1 left in the cohort
}

}  // namespace
}  // namespace artel::proptest
