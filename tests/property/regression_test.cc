// Regression tests for core defects found by the property tests: livelocks
// (properties_test.cc discards runs that never settle and points here) and
// property counterexamples. DISABLED until the core is fixed; each case names
// the generator seed and options that reproduce it (GenerateScenario and
// ShuffleIndependent are deterministic).
#include <gtest/gtest.h>

#include "core/engine.h"
#include "driver.h"
#include "generator.h"

namespace artel::proptest {
namespace {

// Runs `seed`'s scenario; returns the time of the first batch that does not
// settle, or -1.
core::Time FirstUnsettled(uint64_t seed, bool fair_sharing, bool multi_admission) {
  Scenario s = GenerateScenario(seed);
  core::EngineOptions o;
  o.fair_sharing = fair_sharing;
  o.multi_admission = multi_admission;
  core::Engine e(o);
  EXPECT_TRUE(e.Configure(s.config).ok());
  for (const Batch& b : s.batches) {
    EXPECT_EQ(ApplyBatch({&e}, b), "");
    bool settled = false;
    if (multi_admission) {
      Settle(e, b.at, &settled);
    } else {
      SettleOneHead(e, b.at, &settled);
    }
    if (!settled) return b.at;
  }
  return -1;
}

// Seed 95, classical preemption: at t=24000 ns1/w21 (cq1, priority 100,
// borrowWithinCohort LowerPriority, threshold 0) preempts ns2/w17 (cq2,
// priority 0, borrowing) with reason InCohortReclaimWhileBorrowing at
// borrowing level 3. Once the eviction completes, the next cycle has both
// ns2/w17 (Fit at borrowing level 1) and ns1/w21 (Fit at level 3); ordered
// by borrowing level, w17 is re-admitted first and takes the capacity back,
// w21 no longer fits, and in the following cycle w21 preempts w17 again —
// forever. The preemptor never gets the capacity it evicted for.
TEST(LivelockTest, BorrowWithinCohortPreemptorLosesFreedCapacity) {
  EXPECT_EQ(FirstUnsettled(95, false, true), -1);
  EXPECT_EQ(FirstUnsettled(95, false, false), -1);
}

// Seed 5696987 with fair sharing: at t=33000 ns0/w32 (cq0, priority 0)
// evicts ns1/w48 (cq1, priority 200) with reason InCohortFairSharing; after
// the eviction completes, the tournament admits ns1/w48 again before
// ns0/w32, which then preempts it again, forever. Seed 85 is another
// fair-sharing instance.
// KNOWN LIMITATION (kept disabled, see docs/semantics.md "Known
// limitations"): waiting preemptors now go first and weight-0 borrowers no
// longer preempt for fairness, which fixed the two-queue ping-pong; this
// seed still cycles through three queues of a three-level tree (w47 evicts
// w21 by fair sharing, w21 evicts w32 in its queue and w47, w32 evicts w48
// by fair sharing, ...). Kueue's strategies have the same fixed point
// problem; a convergence guarantee needs a design change.
TEST(LivelockTest, DISABLED_FairSharingPreemptionPingPong) {
  EXPECT_EQ(FirstUnsettled(5696987, true, false), -1);
  EXPECT_EQ(FirstUnsettled(85, true, true), -1);
}

// Seed 179637742, fair sharing, one-head cycles: the same scenario on the
// Config and on ShuffleIndependent(Config, Rng(seed ^ 0xd1ce)) (the
// DeterminismProperty counterexample) diverges at t=15000. ns7/w21 (cq7)
// preempts by fair sharing; cq0 and cq2 both have fairSharing weight 0 and
// are borrowing, so both have an infinite share, and which one loses a
// workload (ns0/w14 of cq0 or ns2/w16 of cq2) follows the order of the
// ClusterQueues in the Config instead of a stable tie-break (e.g. by name).
TEST(OrderDependenceTest, FairSharingVictimTieFollowsConfigOrder) {
  const uint64_t seed = 179637742;
  Scenario s = GenerateScenario(seed);
  Rng rng(seed ^ 0xd1ce);
  core::Config shuffled = ShuffleIndependent(s.config, rng);
  core::EngineOptions o;
  o.fair_sharing = true;
  o.multi_admission = false;
  core::Engine a(o), b(o);
  ASSERT_TRUE(a.Configure(s.config).ok());
  ASSERT_TRUE(b.Configure(shuffled).ok());
  for (const Batch& batch : s.batches) {
    ASSERT_EQ(ApplyBatch({&a, &b}, batch), "");
    bool sa = false, sb = false;
    SettleOneHead(a, batch.at, &sa);
    SettleOneHead(b, batch.at, &sb);
    ASSERT_TRUE(sa && sb);
    AdmittedSet xa = Admitted(a), xb = Admitted(b);
    ASSERT_TRUE(xa == xb) << "t=" << batch.at << "\n" << DescribeDiff(xa, xb, "original", "shuffled");
  }
}

// ReclaimProperty counterexample: seed 27547202, probe queue index 0
// (RunReclaimProbe). At t=17000 ns0/w34 (cq0, priority 200) preempts
// ns3/w29 and becomes cq0's sticky head. After the eviction completes,
// ns1/w33 (cq1, NoCandidates, reclaimWithinCohort != Any) is ordered before
// it and reserves cq1's nominal for the cycle, so w34, nominated Fit, fails
// the fit check (ReservedByOther) every cycle. The ReservedByOther path did
// not clear `sticky`, so w34 stayed cq0's head forever: the probe (priority
// 1000, within cq0's nominal quota, reclaimWithinCohort: Any) was never even
// nominated and stayed NotYetTried. Fixed: the sticky preemptor loses its
// place once its victims are gone (or at least when it is not admitted).
TEST(ReclaimRegressionTest, StickyPreemptorStarvesHigherPriority) {
  ReclaimProbe p = RunReclaimProbe(27547202, 0);
  ASSERT_TRUE(p.settled);
  ASSERT_TRUE(p.ran);
  EXPECT_TRUE(p.admitted) << p.failure;
}

}  // namespace
}  // namespace artel::proptest
