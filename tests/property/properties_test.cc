// rapidcheck properties of the scheduling core on random clusters and
// workload streams (tests/property/generator.h). Each property draws a seed
// (and a few switches) from rapidcheck and builds its scenario from the seed,
// so a failure prints the seed and a full dump of the scenario.
//
// By default every property runs a fixed number of cases from a fixed
// rapidcheck seed, so `make test` is deterministic; set RC_PARAMS (e.g.
// "max_success=500" without a seed) to explore further.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <tuple>

#include "core/engine.h"
#include "driver.h"
#include "generator.h"

namespace artel::proptest {
namespace {

using core::Engine;
using core::EngineOptions;

// rapidcheck reads RC_PARAMS lazily, at the first property; this runs before
// main and keeps any value the caller set.
[[maybe_unused]] const int kDefaultParams = [] {
  setenv("RC_PARAMS", "max_success=100 seed=20240611", /*overwrite=*/0);
  return 0;
}();

// A run that never settles is a separate defect (preemption ping-pong; see
// regression_test.cc); the properties below only judge runs that settle.
constexpr const char* kLivelock = "did not settle (preemption livelock, see regression_test.cc)";

std::string Header(uint64_t seed, const Scenario& s) {
  std::ostringstream os;
  os << "seed=" << seed << "\n" << Describe(s);
  return os.str();
}

using EvictionKey = std::tuple<std::string, int, std::string>;
std::vector<EvictionKey> Keys(const std::vector<core::Eviction>& evs) {
  std::vector<EvictionKey> out;
  for (const auto& ev : evs) out.emplace_back(ev.victim, static_cast<int>(ev.reason), ev.preemptor);
  std::sort(out.begin(), out.end());
  return out;
}

std::string ShowEvictions(const std::vector<EvictionKey>& evs) {
  std::string s;
  for (const auto& [v, r, p] : evs)
    s += " " + v + "<-" + p + "(" + core::EvictionReasonName(static_cast<core::EvictionReason>(r)) + ")";
  return s;
}

// (a) After every Schedule and every settle, at every node of the quota tree
// and every flavor-resource: usage <= subtreeQuota + borrowingLimit where a
// borrowing limit is set, usage <= subtreeQuota at the roots, and what the
// rest of the tree uses of a node's quota stays within its lendingLimit
// (formula in driver.cc).
RC_GTEST_PROP(QuotaProperty, UsageWithinBorrowingAndLendingLimits, ()) {
  const auto seed = *rc::gen::arbitrary<uint64_t>();
  EngineOptions opts;
  opts.fair_sharing = *rc::gen::arbitrary<bool>();
  opts.multi_admission = *rc::gen::arbitrary<bool>();
  Scenario s = GenerateScenario(seed);
  Engine e(opts);
  RC_ASSERT(e.Configure(s.config).ok());
  std::string failure;
  auto hook = [&](const std::vector<core::QuotaUsage>&, const core::CycleResult&) {
    if (failure.empty()) failure = CheckQuotaInvariants(s.config, e);
  };
  for (const Batch& b : s.batches) {
    std::string err = ApplyBatch({&e}, b);
    if (!err.empty()) RC_FAIL(err + "\n" + Header(seed, s));
    bool settled = false;
    if (opts.multi_admission) {
      Settle(e, b.at, &settled, hook);
    } else {
      SettleOneHead(e, b.at, &settled, hook);
    }
    if (!settled) RC_DISCARD(kLivelock);
    if (!failure.empty())
      RC_FAIL("t=" + std::to_string(b.at) + " fair_sharing=" + std::to_string(opts.fair_sharing) + ": " +
              failure + "\n" + Header(seed, s));
  }
}

// (b) A ClusterQueue with reclaimWithinCohort: Any whose pending demand fits
// within its nominal quota gets it once its reclaim completes. The probe
// queue's own background submissions are thinned out so that other queues
// borrow its quota; after the background settles, a probe workload with a
// priority above every other in its queue (so nothing of its own queue comes
// first) asks for at most nominal - usage of the first flavor of each
// resource group, and must be admitted after one more settle.
RC_GTEST_PROP(ReclaimProperty, ReclaimAnyWithinNominalGetsItsQuota, ()) {
  const auto seed = *rc::gen::arbitrary<uint64_t>();
  const size_t qi = *rc::gen::inRange<size_t>(0, 8);
  ReclaimProbe p = RunReclaimProbe(seed, qi);
  if (!p.settled) RC_DISCARD(kLivelock);
  RC_CLASSIFY(!p.ran, "no headroom");
  RC_CLASSIFY(p.in_cohort, "in a cohort");
  RC_CLASSIFY(p.reclaimed, "reclaimed");
  if (p.ran && !p.admitted) RC_FAIL(p.failure);
}

// (c) Reclaim never evicts a workload whose ClusterQueue is within its
// nominal quota: for every eviction with reason InCohortReclamation (or
// InCohortReclaimWhileBorrowing), the victim's ClusterQueue used more than
// its nominal quota, just before the Schedule that evicted it, in some
// flavor of a resource the preemptor requests. Runs the one-head engine
// (each Schedule is one cycle from a fresh snapshot), so that the usage taken
// before a Schedule is the usage the cycle's nominations saw.
RC_GTEST_PROP(ReclaimProperty, ReclaimNeverEvictsWithinNominal, ()) {
  const auto seed = *rc::gen::arbitrary<uint64_t>();
  Scenario s = GenerateScenario(seed);
  // More reclaim: most queues reclaim.
  Rng r(seed ^ 0xc0ffee);
  for (auto& q : s.config.cluster_queues) {
    if (r.Chance(60)) q.preemption.reclaim_within_cohort = core::ReclaimWithinCohortPolicy::kAny;
  }
  EngineOptions opts;
  opts.multi_admission = false;
  Engine e(opts);
  RC_ASSERT(e.Configure(s.config).ok());
  std::string failure;
  int reclaims = 0;
  auto hook = [&](const std::vector<core::QuotaUsage>& before, const core::CycleResult& res) {
    for (const auto& ev : res.evictions) {
      if (ev.reason != core::EvictionReason::kInCohortReclamation &&
          ev.reason != core::EvictionReason::kInCohortReclaimWhileBorrowing)
        continue;
      ++reclaims;
      const core::WorkloadInfo* p = e.Find(ev.preemptor);
      if (p == nullptr) continue;
      bool over = false;
      for (const auto& u : before) {
        if (u.is_cohort || u.node != ev.victim_cluster_queue || u.usage <= u.nominal) continue;
        for (const auto& pps : p->spec.pod_sets) {
          auto it = pps.requests.find(u.resource);
          over = over || (it != pps.requests.end() && it->second > 0);
        }
      }
      if (!over && failure.empty()) {
        std::ostringstream os;
        os << ev.preemptor << " (" << ev.preemptor_cluster_queue << ") evicted " << ev.victim << " of "
           << ev.victim_cluster_queue << " [" << core::EvictionReasonName(ev.reason)
           << "] although that queue was within nominal in every resource the preemptor requests; usage "
              "before:\n";
        for (const auto& u : before) {
          os << "  " << u.node << " " << u.flavor << "/" << u.resource << " usage=" << u.usage
             << " nominal=" << u.nominal << "\n";
        }
        failure = os.str();
      }
    }
  };
  for (const Batch& b : s.batches) {
    std::string err = ApplyBatch({&e}, b);
    if (!err.empty()) RC_FAIL(err + "\n" + Header(seed, s));
    bool settled = false;
    SettleOneHead(e, b.at, &settled, hook);
    if (!settled) RC_DISCARD(kLivelock);
    if (!failure.empty()) RC_FAIL("t=" + std::to_string(b.at) + ": " + failure + Header(seed, s));
  }
  RC_CLASSIFY(reclaims > 0, "reclaimed");
}

// (d) Decisions do not depend on the insertion order of independent objects:
// the same scenario on a Config whose flavors, cohorts, ClusterQueues,
// LocalQueues and resource lists are shuffled (flavor order inside a
// resource group kept) admits the same workloads with the same flavors and
// evicts the same ones, after every settle.
RC_GTEST_PROP(DeterminismProperty, InsertionOrderDoesNotMatter, ()) {
  const auto seed = *rc::gen::arbitrary<uint64_t>();
  EngineOptions opts;
  opts.fair_sharing = *rc::gen::arbitrary<bool>();
  opts.multi_admission = *rc::gen::arbitrary<bool>();
  Scenario s = GenerateScenario(seed);
  Rng r(seed ^ 0xd1ce);
  core::Config shuffled = ShuffleIndependent(s.config, r);
  Engine a(opts), b(opts);
  RC_ASSERT(a.Configure(s.config).ok());
  RC_ASSERT(b.Configure(shuffled).ok());
  for (const Batch& batch : s.batches) {
    std::string err = ApplyBatch({&a, &b}, batch);
    if (!err.empty()) RC_FAIL(err + "\n" + Header(seed, s));
    bool sa = false, sb = false;
    auto ea = opts.multi_admission ? Settle(a, batch.at, &sa) : SettleOneHead(a, batch.at, &sa);
    auto eb = opts.multi_admission ? Settle(b, batch.at, &sb) : SettleOneHead(b, batch.at, &sb);
    if (!sa || !sb) RC_DISCARD(kLivelock);
    AdmittedSet xa = Admitted(a), xb = Admitted(b);
    if (!(xa == xb) || Keys(ea) != Keys(eb)) {
      RC_FAIL("t=" + std::to_string(batch.at) + " fair_sharing=" + std::to_string(opts.fair_sharing) +
              " multi=" + std::to_string(opts.multi_admission) + ": outcome depends on config order\n" +
              DescribeDiff(xa, xb, "original", "shuffled") + "evictions original:" + ShowEvictions(Keys(ea)) +
              "\nevictions shuffled:" + ShowEvictions(Keys(eb)) + "\n" + Header(seed, s) +
              "shuffled config:\n" + Describe(shuffled));
    }
  }
}

// (e) Multi-admission equals the one-head reference: an engine with
// multi_admission=true settled against one with multi_admission=false whose
// driver calls Schedule until `changed` is false (then completes the
// evictions, as the multi-admission driver does after its one call) reach the
// same admitted set, the same flavors and pod counts, and the same evictions,
// after every settle.
RC_GTEST_PROP(MultiAdmissionProperty, EqualsOneHeadReference, ()) {
  const auto seed = *rc::gen::arbitrary<uint64_t>();
  EngineOptions multi;
  multi.fair_sharing = *rc::gen::arbitrary<bool>();
  EngineOptions one = multi;
  one.multi_admission = false;
  Scenario s = GenerateScenario(seed);
  Engine a(multi), b(one);
  size_t evictions = 0;
  RC_ASSERT(a.Configure(s.config).ok());
  RC_ASSERT(b.Configure(s.config).ok());
  for (const Batch& batch : s.batches) {
    std::string err = ApplyBatch({&a, &b}, batch);
    if (!err.empty()) RC_FAIL(err + "\n" + Header(seed, s));
    bool sa = false, sb = false;
    auto ea = Settle(a, batch.at, &sa);
    auto eb = SettleOneHead(b, batch.at, &sb);
    if (!sa || !sb) RC_DISCARD(kLivelock);
    evictions += ea.size();
    AdmittedSet xa = Admitted(a), xb = Admitted(b);
    if (!(xa == xb) || Keys(ea) != Keys(eb)) {
      RC_FAIL("t=" + std::to_string(batch.at) + " fair_sharing=" + std::to_string(multi.fair_sharing) +
              ": multi-admission differs from one-head cycles\n" + DescribeDiff(xa, xb, "multi", "one-head") +
              "evictions multi:" + ShowEvictions(Keys(ea)) +
              "\nevictions one-head:" + ShowEvictions(Keys(eb)) + "\n" + Header(seed, s));
    }
  }
  RC_CLASSIFY(evictions > 0, "preempted");
  RC_CLASSIFY(multi.fair_sharing, "fair sharing");
}

// Plays `s` on an engine with options `a` and one with options `b` and fails
// at the first settle after which their admitted sets (flavors and pod
// counts) or their evictions differ; `what` names the difference. Returns the
// number of evictions seen.
size_t ExpectSameOutcomes(uint64_t seed, const Scenario& s, const EngineOptions& a_opts,
                          const EngineOptions& b_opts, const std::string& what, const char* a_name,
                          const char* b_name) {
  Engine a(a_opts), b(b_opts);
  size_t evictions = 0;
  RC_ASSERT(a.Configure(s.config).ok());
  RC_ASSERT(b.Configure(s.config).ok());
  for (const Batch& batch : s.batches) {
    std::string err = ApplyBatch({&a, &b}, batch);
    if (!err.empty()) RC_FAIL(err + "\n" + Header(seed, s));
    bool sa = false, sb = false;
    auto ea = a_opts.multi_admission ? Settle(a, batch.at, &sa) : SettleOneHead(a, batch.at, &sa);
    auto eb = b_opts.multi_admission ? Settle(b, batch.at, &sb) : SettleOneHead(b, batch.at, &sb);
    if (!sa || !sb) RC_DISCARD(kLivelock);
    for (const Engine* e : {&a, &b}) {
      const std::string counts = e->CheckParkingCounts();
      if (!counts.empty())
        RC_FAIL("t=" + std::to_string(batch.at) + ": parking counts: " + counts + "\n" + Header(seed, s));
    }
    evictions += ea.size();
    AdmittedSet xa = Admitted(a), xb = Admitted(b);
    if (!(xa == xb) || Keys(ea) != Keys(eb)) {
      RC_FAIL("t=" + std::to_string(batch.at) + ": " + what + "\n" + DescribeDiff(xa, xb, a_name, b_name) +
              "evictions " + a_name + ":" + ShowEvictions(Keys(ea)) + "\nevictions " + b_name + ":" +
              ShowEvictions(Keys(eb)) + "\n" + Header(seed, s));
    }
  }
  return evictions;
}

// (f) The preemption-search pruning is exact: an engine that skips the
// victim search when its necessary condition fails makes the same
// admissions and evictions as one that always searches, after every settle.
RC_GTEST_PROP(PreemptionPruningProperty, EqualsFullSearch, ()) {
  const auto seed = *rc::gen::arbitrary<uint64_t>();
  EngineOptions pruned;
  pruned.multi_admission = *rc::gen::arbitrary<bool>();
  EngineOptions full = pruned;
  full.prune_preemption_search = false;
  const size_t evictions =
      ExpectSameOutcomes(seed, GenerateScenario(seed), pruned, full,
                         "pruned preemption search differs from the full search", "pruned", "full");
  RC_CLASSIFY(evictions > 0, "preempted");
}

// (f2) The candidate index is exact: an engine whose victim search merges
// the per-queue candidate orders lazily makes the same admissions and
// evictions as one that collects every candidate and orders them, after
// every settle.
RC_GTEST_PROP(CandidateIndexProperty, EqualsFullCollection, ()) {
  const auto seed = *rc::gen::arbitrary<uint64_t>();
  EngineOptions indexed;
  indexed.multi_admission = *rc::gen::arbitrary<bool>();
  EngineOptions full = indexed;
  full.candidate_index = false;
  const size_t evictions =
      ExpectSameOutcomes(seed, GenerateScenario(seed), indexed, full,
                         "indexed victim search differs from the full collection", "indexed", "full");
  RC_CLASSIFY(evictions > 0, "preempted");
}

// (g) Parking in bulk is exact: an engine that parks at once the queues none
// of whose workloads can be admitted makes the same admissions and
// evictions as one that tries every parked workload as a head in turn,
// after every settle.
RC_GTEST_PROP(BulkParkProperty, EqualsOneByOne, ()) {
  const auto seed = *rc::gen::arbitrary<uint64_t>();
  EngineOptions bulk;
  bulk.multi_admission = *rc::gen::arbitrary<bool>();
  EngineOptions one = bulk;
  one.bulk_park = false;
  const size_t evictions =
      ExpectSameOutcomes(seed, GenerateScenario(seed), bulk, one,
                         "parking in bulk differs from one head at a time", "bulk", "one by one");
  RC_CLASSIFY(evictions > 0, "preempted");
}

// (h) Parking in bulk is exact on deep queues: on the shape it targets
// (GenerateDeepQueueScenario: BestEffortFIFO queues with reclaimWithinCohort
// Any, many heads that cannot fit before ones that can), an engine that parks
// queues in bulk and skips the leading heads of a tree's only active queue
// makes the same admissions and evictions as one that nominates every head
// one cycle at a time (bulk_park off), after every settle. The generic
// generator above reaches this shape rarely.
RC_GTEST_PROP(DeepQueueProperty, BulkParkEqualsOneByOne, ()) {
  const auto seed = *rc::gen::arbitrary<uint64_t>();
  EngineOptions bulk;
  EngineOptions one = bulk;
  one.bulk_park = false;
  Scenario s = GenerateDeepQueueScenario(seed);
  Engine a(bulk), b(one);
  size_t evictions = 0, admitted = 0;
  RC_ASSERT(a.Configure(s.config).ok());
  RC_ASSERT(b.Configure(s.config).ok());
  for (const Batch& batch : s.batches) {
    std::string err = ApplyBatch({&a, &b}, batch);
    if (!err.empty()) RC_FAIL(err + "\n" + Header(seed, s));
    bool sa = false, sb = false;
    auto ea = Settle(a, batch.at, &sa);
    auto eb = Settle(b, batch.at, &sb);
    if (!sa || !sb) RC_DISCARD(kLivelock);
    for (const Engine* e : {&a, &b}) {
      const std::string counts = e->CheckParkingCounts();
      if (!counts.empty())
        RC_FAIL("t=" + std::to_string(batch.at) + ": parking counts: " + counts + "\n" + Header(seed, s));
    }
    evictions += ea.size();
    AdmittedSet xa = Admitted(a), xb = Admitted(b);
    admitted = std::max(admitted, xa.size());
    if (!(xa == xb) || Keys(ea) != Keys(eb)) {
      RC_FAIL("t=" + std::to_string(batch.at) + ": parking in bulk differs from one head at a time\n" +
              DescribeDiff(xa, xb, "bulk", "one by one") + "evictions bulk:" + ShowEvictions(Keys(ea)) +
              "\nevictions one by one:" + ShowEvictions(Keys(eb)) + "\n" + Header(seed, s));
    }
  }
  RC_CLASSIFY(evictions > 0, "preempted");
  RC_CLASSIFY(admitted >= 8, "8+ admitted");
}

// (i) Fast rounds are exact: an engine that decides a round after a quiet
// one (only failing heads parked) from the heads that changed gives, in
// every Schedule call, the same admissions in the same order, the same
// evictions, cycles, decisions and `changed` as one that runs every round
// in full, and after every settle every workload has the same state and,
// when parking in bulk is off, the same pending reason (kind and message).
// With it on, a fast round parks a head that fails BulkPark's bound without
// nominating it, as BulkPark does, and its reason is then built when read,
// from the state then, where the full round built it from the state of the
// cycle that tried it (docs/semantics.md §3, step 5).
std::string CompareFastRounds(uint64_t seed, const Scenario& s, const EngineOptions& opts, bool* used_quiet) {
  EngineOptions full_opts = opts;
  full_opts.fast_rounds = false;
  Engine a(opts), b(full_opts);
  if (!a.Configure(s.config).ok() || !b.Configure(s.config).ok()) return "configure failed";
  for (const Batch& batch : s.batches) {
    std::string err = ApplyBatch({&a, &b}, batch);
    if (!err.empty()) return err;
    bool settled = false;
    for (int call = 0; call < 200 && !settled; ++call) {
      core::CycleResult ra = a.Schedule(batch.at);
      core::CycleResult rb = b.Schedule(batch.at);
      if (ra.rounds > 2) *used_quiet = true;
      std::ostringstream why;
      for (const Engine* e : {&a, &b}) {
        std::string counts = e->CheckParkingCounts();
        if (!counts.empty()) why << "parking counts: " << counts << "; ";
      }
      if (ra.admitted != rb.admitted) why << "admitted differ (order included)";
      if (Keys(ra.evictions) != Keys(rb.evictions)) why << "evictions differ";
      if (ra.rounds != rb.rounds) why << "rounds " << ra.rounds << " vs " << rb.rounds << "; ";
      if (ra.decisions != rb.decisions) why << "decisions " << ra.decisions << " vs " << rb.decisions << "; ";
      if (ra.changed != rb.changed) why << "changed differs; ";
      if (!why.str().empty())
        return "t=" + std::to_string(batch.at) + " call " + std::to_string(call) + ": " + why.str();
      for (const auto& ev : ra.evictions) {
        (void)a.CompleteEviction(ev.victim, batch.at);
        (void)b.CompleteEviction(ev.victim, batch.at);
      }
      settled = ra.admitted.empty() && ra.evictions.empty();
    }
    if (!settled) RC_DISCARD(kLivelock);
    auto wa = a.Workloads(), wb = b.Workloads();
    if (wa.size() != wb.size()) return "workload counts differ";
    for (size_t i = 0; i < wa.size(); ++i) {
      const core::WorkloadInfo& x = *wa[i];
      const core::WorkloadInfo& y = *wb[i];
      if (x.key != y.key || x.state != y.state ||
          (!opts.bulk_park &&
           (x.pending->kind != y.pending->kind || x.pending->message != y.pending->message))) {
        return "t=" + std::to_string(batch.at) + ": workload " + x.key + " differs: state " +
               core::WorkloadStateName(x.state) + " vs " + core::WorkloadStateName(y.state) + ", reason '" +
               x.pending->message + "' vs '" + y.pending->message + "'";
      }
    }
  }
  (void)seed;
  return "";
}

RC_GTEST_PROP(FastRoundsProperty, EqualsFullRounds, ()) {
  const auto seed = *rc::gen::arbitrary<uint64_t>();
  EngineOptions opts;
  opts.fair_sharing = *rc::gen::inRange(0, 4) == 0;
  opts.bulk_park = *rc::gen::arbitrary<bool>();
  Scenario s = GenerateScenario(seed);
  bool quiet = false;
  std::string err = CompareFastRounds(seed, s, opts, &quiet);
  if (!err.empty()) RC_FAIL("fast rounds differ from full rounds: " + err + "\n" + Header(seed, s));
  RC_CLASSIFY(quiet, "3+ rounds in a call");
}

RC_GTEST_PROP(FastRoundsProperty, EqualsFullRoundsOnDeepQueues, ()) {
  const auto seed = *rc::gen::arbitrary<uint64_t>();
  EngineOptions opts;
  opts.bulk_park = *rc::gen::arbitrary<bool>();
  Scenario s = GenerateDeepQueueScenario(seed);
  bool quiet = false;
  std::string err = CompareFastRounds(seed, s, opts, &quiet);
  if (!err.empty()) RC_FAIL("fast rounds differ from full rounds: " + err + "\n" + Header(seed, s));
  RC_CLASSIFY(quiet, "3+ rounds in a call");
}

// (i) with reservations (docs/semantics.md §11): deep queues whose
// ClusterQueues reserve (at once or after a few seconds), with runtime
// estimates from a queue default or a workload's own maximum runtime, and
// some workloads without one; some queues also protect running work or
// delay preemption. Fast rounds are off while a queue reserves,
// but a round whose only entry was held back by a reservation decides the
// next heads its queue would offer alone (ParkBlockedRun): the same
// admissions, evictions, rounds, decisions and reasons, messages included.
RC_GTEST_PROP(FastRoundsProperty, EqualsFullRoundsWithReservations, ()) {
  const auto seed = *rc::gen::arbitrary<uint64_t>();
  EngineOptions opts;
  opts.bulk_park = false;  // off with reservations anyway; compares the messages too
  opts.max_rounds = *rc::gen::element(4, 16, 1000);
  Scenario s = GenerateDeepQueueScenario(seed);
  Rng r(seed ^ 0x5e5e);
  for (auto& q : s.config.cluster_queues) {
    if (r.Chance(70)) {
      q.reserve_priority = 0;
    } else {
      q.reserve_after = r.Uniform(0, 3) * 1000;
    }
    if (r.Chance(70)) q.default_runtime_estimate = r.Uniform(1, 20) * 1000;
    // Runtime protections as well, now and then (their wake-ups are noted
    // by every nomination, blocked runs included).
    if (r.Chance(20)) q.min_runtime = r.Uniform(1, 8) * 1000;
    if (r.Chance(20)) q.preemption_delay = r.Uniform(1, 4) * 1000;
  }
  for (auto& b : s.batches) {
    for (auto& ev : b.events) {
      if (ev.kind == Event::Kind::kSubmit && r.Chance(40)) ev.spec.max_runtime = r.Uniform(1, 30) * 1000;
    }
  }
  bool quiet = false;
  std::string err = CompareFastRounds(seed, s, opts, &quiet);
  if (!err.empty()) RC_FAIL("blocked runs differ from full rounds: " + err + "\n" + Header(seed, s));
  RC_CLASSIFY(quiet, "3+ rounds in a call");
}

TEST(GeneratorTest, SameSeedSameScenario) {
  for (uint64_t seed : {1u, 2u, 99u}) {
    EXPECT_EQ(Describe(GenerateScenario(seed)), Describe(GenerateScenario(seed)));
  }
  EXPECT_NE(Describe(GenerateScenario(1)), Describe(GenerateScenario(2)));
}

TEST(GeneratorTest, ConfigsAreValid) {
  for (uint64_t seed = 0; seed < 200; ++seed) {
    Scenario s = GenerateScenario(seed);
    Engine e;
    Status st = e.Configure(s.config);
    ASSERT_TRUE(st.ok()) << "seed=" << seed << ": " << st.ToString() << "\n" << Describe(s);
    ASSERT_GE(s.config.cluster_queues.size(), 2u);
    ASSERT_LE(s.config.cluster_queues.size(), 8u);
  }
}

}  // namespace
}  // namespace artel::proptest
