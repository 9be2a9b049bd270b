// Seeded random clusters and workload streams for the property tests.
//
// `GenerateScenario(seed, options)` builds a `Scenario`: a `Config` with a
// random cohort forest (1-3 levels), 2-8 ClusterQueues, 1-2 flavors x 1-2
// resources, random nominal quotas with optional borrowing and lending
// limits (lendingLimit <= nominal), random preemption policies, queueing
// strategies and flavor fungibility, plus a sequence of event batches at
// increasing times (submit, finish, cancel). The same seed and options always
// give the same scenario: the generator uses its own splitmix64 stream, never
// `std::random_device` or library distributions whose output may differ
// between standard libraries.
//
// Finish and cancel events name no workload: they carry a `pick` that the
// driver resolves against the current state of the engine under test (the
// k-th admitted or live workload by key), so one scenario can drive several
// engines in lock step.
//
// Thread-safety: pure functions over plain values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/model.h"

namespace artel::proptest {

inline constexpr core::Amount kUnit = 1000;  // one cpu / one GPU in milli-units

// A deterministic splitmix64 stream.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next();
  // Uniform in [lo, hi]. REQUIRES: lo <= hi.
  int64_t Uniform(int64_t lo, int64_t hi);
  bool Chance(int percent) { return Uniform(0, 99) < percent; }
  template <typename T>
  void Shuffle(std::vector<T>& v) {
    for (size_t i = v.size(); i > 1; --i)
      std::swap(v[i - 1], v[static_cast<size_t>(Uniform(0, static_cast<int64_t>(i) - 1))]);
  }

 private:
  uint64_t state_;
};

struct GenOptions {
  // false: every ClusterQueue gets preemption policies Never (and no
  // borrowWithinCohort), the subset the naive scheduler covers.
  bool preemption = true;
  // Random fair-sharing weights on queues and cohorts (only matter when the
  // engine runs with fair sharing).
  bool fair_weights = true;
  // Random whenCanBorrow / whenCanPreempt / preference.
  bool fungibility = true;
  int max_batches = 16;
  int max_events_per_batch = 6;
};

struct Event {
  enum class Kind { kSubmit, kFinish, kCancel };
  Kind kind = Kind::kSubmit;
  core::WorkloadSpec spec;  // kSubmit
  uint32_t pick = 0;        // kFinish / kCancel: index, modulo the candidates
};

struct Batch {
  core::Time at = 0;
  std::vector<Event> events;
};

struct Scenario {
  core::Config config;
  std::vector<Batch> batches;
};

Scenario GenerateScenario(uint64_t seed, const GenOptions& options = {});

// Deep queues (issue 17): one cohort of 2-5 BestEffortFIFO ClusterQueues
// with small quotas and unlimited borrowing (some owners with a borrowing
// limit of zero), mostly `reclaimWithinCohort: Any` (some Never or
// LowerPriority), withinClusterQueue Never (some LowerPriority), one flavor
// over one or two resources, and long streams of workloads of mixed sizes
// (mostly small, some larger than a queue's quota, a few with minCount) of
// which only some fit, with frequent finishes: many heads that cannot fit
// stand before ones that can, at every release.
Scenario GenerateDeepQueueScenario(uint64_t seed);

// A compact, human-readable dump (for failure messages and bug reports).
std::string Describe(const core::Config& config);
std::string Describe(const Scenario& scenario);

// Shuffles the order of independent objects in `config`: flavors, cohorts,
// ClusterQueues, LocalQueues, priority classes, namespaces, and the order of
// resources inside coveredResources and inside each flavor's quota list.
// Flavor order inside a resource group is semantic and is kept.
core::Config ShuffleIndependent(const core::Config& config, Rng& rng);

}  // namespace artel::proptest
