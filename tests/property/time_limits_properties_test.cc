// rapidcheck properties of the time limits (docs/semantics.md §11) on the
// random clusters and workload streams of tests/property/generator.h.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <cstdlib>
#include <map>
#include <sstream>

#include "core/engine.h"
#include "driver.h"
#include "generator.h"

namespace artel::proptest {
namespace {

// A fixed number of cases from a fixed seed unless the caller sets RC_PARAMS
// (as in properties_test.cc).
[[maybe_unused]] const int kDefaultParams = [] {
  setenv("RC_PARAMS", "max_success=100 seed=20240611", /*overwrite=*/0);
  return 0;
}();

// A protected workload is never evicted for fairness: with random minimum
// runtimes (and reclaim limits) on the ClusterQueues, no eviction for
// in-queue priority, fair sharing or reclaim while borrowing takes a workload
// that has run less than its queue's minRuntime in its current admission, and
// no reclaim takes one that has run less than its reclaimMinRuntime. Runs
// with and without fair sharing; the engine is also woken at its own timed
// events (protections ending) between batches, as the simulator does.
RC_GTEST_PROP(TimeLimitsProperty, ProtectedWorkloadIsNeverEvictedForFairness, ()) {
  const auto seed = *rc::gen::arbitrary<uint64_t>();
  const bool fair = *rc::gen::arbitrary<bool>();
  Scenario s = GenerateScenario(seed);
  Rng r(seed ^ 0x71e5);
  std::map<std::string, std::pair<core::Time, core::Time>> limits;  // cq -> (min, reclaim min)
  for (auto& q : s.config.cluster_queues) {
    if (r.Chance(70)) q.min_runtime = r.Uniform(1, 8) * 1000;
    if (r.Chance(50)) q.reclaim_min_runtime = r.Uniform(0, 4) * 1000;
    if (r.Chance(60)) q.preemption.reclaim_within_cohort = core::ReclaimWithinCohortPolicy::kAny;
    if (r.Chance(60)) q.preemption.within_cluster_queue = core::WithinClusterQueuePolicy::kLowerPriority;
    limits[q.name] = {q.min_runtime.value_or(0), q.reclaim_min_runtime.value_or(0)};
  }
  core::EngineOptions opts;
  opts.fair_sharing = fair;
  core::Engine e(opts);
  RC_ASSERT(e.Configure(s.config).ok());
  std::string failure;
  int evictions = 0, protected_waits = 0;
  core::Time now = 0;
  auto hook = [&](const std::vector<core::QuotaUsage>&, const core::CycleResult& res) {
    for (const auto& ev : res.evictions) {
      const core::WorkloadInfo* v = e.Find(ev.victim);
      if (v == nullptr) continue;
      ++evictions;
      const auto [min, reclaim_min] = limits[ev.victim_cluster_queue];
      core::Time limit = 0;
      switch (ev.reason) {
        case core::EvictionReason::kInClusterQueue:
        case core::EvictionReason::kInCohortFairSharing:
        case core::EvictionReason::kInCohortReclaimWhileBorrowing: limit = min; break;
        case core::EvictionReason::kInCohortReclamation: limit = reclaim_min; break;
        default: break;
      }
      core::Time ran = now - v->admitted_at;
      if (ran < limit && failure.empty()) {
        std::ostringstream os;
        os << "t=" << now << ": " << ev.victim << " of " << ev.victim_cluster_queue << " evicted ["
           << core::EvictionReasonName(ev.reason) << "] by " << ev.preemptor << " after running " << ran
           << " ms; its limit is " << limit << " ms\n";
        failure = os.str();
      }
    }
  };
  for (const Batch& b : s.batches) {
    // The engine's own instants before this batch (protections ending).
    for (int guard = 0; guard < 100; ++guard) {
      std::optional<core::Time> next = e.NextTimedEvent();
      if (!next || *next >= b.at) break;
      now = std::max(now, *next);
      bool settled = false;
      Settle(e, now, &settled, hook);
      if (!settled) RC_DISCARD("did not settle");
    }
    now = b.at;
    std::string err = ApplyBatch({&e}, b);
    if (!err.empty()) RC_FAIL(err);
    bool settled = false;
    Settle(e, now, &settled, hook);
    if (!settled) RC_DISCARD("did not settle");
    for (const core::WorkloadInfo* w : e.Workloads()) {
      if (w->state == core::WorkloadState::kPending &&
          w->pending->message.find("protected by a minimum runtime") != std::string::npos)
        ++protected_waits;
    }
    if (!failure.empty()) RC_FAIL(failure + "seed=" + std::to_string(seed) + "\n" + Describe(s));
  }
  RC_CLASSIFY(evictions > 0, "evicted");
  RC_CLASSIFY(protected_waits > 0, "waited for a protection");
  RC_CLASSIFY(fair, "fair sharing");
}

// A reservation's start never moves later because of a backfilled job. Every
// workload has a maximum runtime (its estimate, enforced), one priority, and
// no queue may preempt, so nothing but backfill admits work while a
// reservation stands; every queue reserves at once. After every Schedule
// call, a workload that held a reservation before and still holds one has a
// start no later than before.
RC_GTEST_PROP(TimeLimitsProperty, ReservationStartNeverMovesLaterBecauseOfBackfill, ()) {
  const auto seed = *rc::gen::arbitrary<uint64_t>();
  GenOptions go;
  go.preemption = false;
  Scenario s = GenerateScenario(seed, go);
  Rng r(seed ^ 0x5e5e);
  for (auto& q : s.config.cluster_queues) q.reserve_after = 0;
  for (auto& b : s.batches) {
    for (auto& ev : b.events) {
      if (ev.kind != Event::Kind::kSubmit) continue;
      ev.spec.priority = 0;
      ev.spec.priority_class.reset();
      ev.spec.max_runtime = r.Uniform(1, 12) * 1000;
    }
  }
  core::Engine e;
  RC_ASSERT(e.Configure(s.config).ok());
  std::map<std::string, core::Time> prev;
  std::string failure;
  int reservations = 0, backfills = 0;
  core::Time now = 0;
  auto hook = [&](const std::vector<core::QuotaUsage>&, const core::CycleResult& res) {
    std::map<std::string, core::Time> cur;
    for (const auto& ri : e.Reservations()) {
      cur[ri.workload] = ri.start;
      auto it = prev.find(ri.workload);
      if (it != prev.end() && ri.start > it->second && failure.empty()) {
        std::ostringstream os;
        os << "t=" << now << ": the reservation of " << ri.workload << " moved from " << it->second << " to "
           << ri.start << " (admitted this call:";
        for (const auto& a : res.admitted) os << " " << a;
        os << ")\n";
        failure = os.str();
      }
    }
    if (!cur.empty() && !res.admitted.empty()) ++backfills;
    reservations += static_cast<int>(cur.size());
    prev = std::move(cur);
  };
  for (const Batch& b : s.batches) {
    for (int guard = 0; guard < 100; ++guard) {
      std::optional<core::Time> next = e.NextTimedEvent();
      if (!next || *next >= b.at) break;
      now = std::max(now, *next);
      bool settled = false;
      Settle(e, now, &settled, hook);
      if (!settled) RC_DISCARD("did not settle");
    }
    now = b.at;
    std::string err = ApplyBatch({&e}, b);
    if (!err.empty()) RC_FAIL(err);
    bool settled = false;
    Settle(e, now, &settled, hook);
    if (!settled) RC_DISCARD("did not settle");
    if (!failure.empty()) RC_FAIL(failure + "seed=" + std::to_string(seed) + "\n" + Describe(s));
  }
  RC_CLASSIFY(reservations > 0, "reserved");
  RC_CLASSIFY(backfills > 0, "admitted while a reservation stood");
}

}  // namespace
}  // namespace artel::proptest
