// Trace replay: the discrete-event simulator behind `artel sim` and
// `artel validate isolation`.
//
// `Replay` drives one production `core::Engine` through a list of jobs on a
// virtual clock. Events are job arrivals, job completions (a job runs for its
// trace duration after each admission) and eviction completions (an evicted
// job's pods are gone `grace` after the eviction). The loop:
//
//   1. Take the earliest pending event time `t`; integrate the metrics over
//      the interval since the previous event time.
//   2. Apply every event at `t`: completions first (quota released), then
//      finished evictions (the job requeues), then arrivals in trace order.
//   3. When something changed, schedule at the next scheduling tick
//      (`interval`; 0 = at `t`): one `Engine::Schedule` call per tick, not per
//      job, then again at once for as long as evictions complete
//      immediately (grace 0). Events that fall before the tick join the batch.
//   4. Record the new state (per-tenant GPUs held, pending jobs, demand).
//
// An evicted job loses its progress: it requeues and, when admitted again,
// runs its full duration (no checkpointing). The GPU time it held from its
// admission to the end of its eviction counts as lost.
//
// Quantities are GPUs of one resource (`gpu_resource`, by default
// nvidia.com/gpu) in milli-units, as in the core. Nothing here reads a
// clock: wall time for the speed figures comes from the injected
// `wall_clock_ns`.
//
// Thread-safety: each call owns its engine; calls are independent.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/engine.h"
#include "core/model.h"
#include "core/quantity.h"
#include "sim/trace.h"

namespace artel::sim {

// Where a trace tenant's jobs go, and what it is guaranteed.
struct TenantBinding {
  std::string tenant;  // as in the trace
  std::string ns;
  std::string queue;           // LocalQueue in `ns`
  core::Amount guarantee = 0;  // milli-GPUs
};

struct ReplayProgress {
  int64_t events = 0;
  core::Time now = 0;
  int64_t arrivals_done = 0;
  int64_t arrivals_total = 0;
};

struct ReplayOptions {
  core::EngineOptions engine;
  core::Time interval = 1000;  // scheduling cadence (ms); 0 = after every event batch
  core::Time grace = 0;        // eviction grace period (ms)
  std::string gpu_resource = "nvidia.com/gpu";
  std::map<std::string, std::string> node_selector;  // added to every job's pod set
  std::optional<core::Time> until;         // stop at this virtual time; unset = until no event is left
  int max_points = 720;                    // time-series buckets in the result
  std::function<int64_t()> wall_clock_ns;  // injected wall clock; null = no speed figures
  std::function<void(const ReplayProgress&)> progress;  // called every few thousand events
  // Time limits (docs/semantics.md §11), off by default. `estimate_factor`
  // > 0 gives every job a maximum runtime of its trace duration times the
  // factor (>= 1: a user's overestimated time limit, never cutting the job
  // short), which is also its runtime estimate. `reserve_after` turns on
  // reservations in every ClusterQueue of the config (reserveAfterSeconds);
  // `min_runtime` sets every queue's minRuntimeSeconds, `preemption_delay`
  // its preemptionDelaySeconds.
  double estimate_factor = 0;
  std::optional<core::Time> reserve_after;
  // With `reserve_after`: every queue's backfillWindowSeconds (no
  // reservation whose start lies further ahead).
  std::optional<core::Time> backfill_window;
  std::optional<core::Time> min_runtime;
  std::optional<core::Time> reclaim_min_runtime;  // every queue's reclaimMinRuntimeSeconds
  std::optional<core::Time> preemption_delay;
};

struct Percentiles {
  double p50 = 0, p95 = 0, p99 = 0, mean = 0, max = 0;  // seconds
};

struct TenantReport {
  TenantBinding binding;
  int64_t jobs = 0;      // submitted
  int64_t admitted = 0;  // admitted at least once
  int64_t completed = 0;
  int64_t never_admitted = 0;          // still pending at the end
  int64_t too_large = 0;               // asking for more GPUs than the capacity: never admissible
  double gpu_hours = 0;                // GPU-hours held (running and evicting)
  double gpu_hours_borrowed = 0;       // GPU-hours held above the guarantee
  double demand_hours = 0;             // hours in which demand >= guarantee (guarantee > 0)
  double guarantee_satisfaction = -1;  // fraction of `demand_hours` holding >= guarantee; -1 = n/a
  Percentiles wait;                    // first admission - submission, admitted jobs
  Percentiles jct;                     // completion - submission, completed jobs
  int64_t preemptions = 0;             // evictions of this tenant's jobs
  double gpu_hours_lost = 0;           // GPU time of evicted runs
  int64_t reclaims = 0;                // episodes with a pending job fitting the unused guarantee
  core::Time reclaim_latency_max = 0;  // ms; the longest such episode
  core::Time reclaim_latency_mean = 0;
  int64_t reclaims_unresolved = 0;  // episodes still open at the end
  core::Amount peak_held = 0;       // milli-GPUs
  std::vector<double> waits;        // seconds, sorted; for CDFs
};

struct EvictionRecord {
  core::Time at = 0;
  int64_t job = 0;  // index into the job list
  int32_t tenant = 0;
  std::string reason;  // core::EvictionReasonName
  std::string preemptor;
  int32_t preemptor_tenant = -1;
};

struct JobOutcome {
  core::Time first_admit = -1;
  core::Time finish = -1;
  int32_t evictions = 0;
};

// Time series, averaged over equal buckets of virtual time.
struct Series {
  std::vector<double> t;                     // bucket start, seconds
  std::vector<std::vector<double>> held;     // [tenant][bucket] GPUs
  std::vector<std::vector<double>> pending;  // [tenant][bucket] jobs waiting
  std::vector<double> used;                  // GPUs
  std::vector<double> bound;                 // min(capacity, demand) GPUs
};

// The waits of the jobs of one size class (GPUs a job asks for in total), so
// that large and small jobs can be compared, e.g. with reservations off and
// on (docs/semantics.md §11).
struct SizeClassReport {
  std::string label;           // "under 1", "1", "over 1, under 8", "8 to 31", "32 or more"
  core::Amount min_gpus = 0;   // milli-GPUs, inclusive
  core::Amount max_gpus = -1;  // milli-GPUs, inclusive; -1 = no upper bound
  int64_t jobs = 0;            // submitted (jobs of unbound tenants are not)
  int64_t admitted = 0;        // admitted at least once
  Percentiles wait;            // first admission - submission, admitted jobs
};

struct ClusterReport {
  core::Amount capacity = 0;  // milli-GPUs
  int64_t jobs = 0;
  int64_t events = 0;     // arrivals + admissions + completions + evictions + eviction completions
  int64_t decisions = 0;  // CycleResult::decisions summed
  int64_t schedule_calls = 0;
  core::Time end = 0;          // virtual time of the last event
  core::Amount peak_used = 0;  // most milli-GPUs held at once
  double utilization = 0;      // GPU-time used / capacity-time
  double bound = 0;            // min(capacity, demand)-time / capacity-time
  double jain = 0;  // time-weighted Jain's index over normalized shares; 1 when no tenant is active
  int64_t preemptions = 0;
  double gpu_hours_lost = 0;
  // The shortest run a preemption ended (its eviction time minus the run's
  // admission), ms; -1 when nothing was preempted. With a minimum runtime
  // (docs/semantics.md §11) it is at least that long.
  core::Time youngest_preempted_run = -1;
  // Waits by job size: under 1 GPU, 1, more than 1 and under 8, 8 to under
  // 32, 32 or more; only classes with jobs, smallest first.
  std::vector<SizeClassReport> sizes;
  // Speed (only with a wall clock).
  double wall_seconds = 0;
  double schedule_seconds = 0;
  double events_per_second = 0;
  double decisions_per_second = 0;
};

// How many jobs larger than the cluster are named one by one in the warnings.
inline constexpr size_t kMaxTooLargeWarnings = 10;

struct ReplayResult {
  std::vector<TenantReport> tenants;
  ClusterReport cluster;
  Series series;
  std::vector<JobOutcome> outcomes;  // parallel to the job list
  std::vector<EvictionRecord> evictions;
  std::vector<std::string> warnings;
};

// Replays `jobs` (any order; sorted stably by submission) against `config`.
// Each job goes to the binding of its tenant; jobs of unbound tenants are
// counted in a warning and skipped. `capacity` is the GPU capacity the
// utilization is measured against (milli-GPUs); a job asking for more can
// never be admitted: it is still submitted (it stays pending and counts as
// never admitted), counted in its tenant's `too_large` and named in a warning
// (the first `kMaxTooLargeWarnings`, then one line with the rest).
// Fails when the engine rejects the config.
Result<ReplayResult> Replay(const core::Config& config, const std::vector<TenantBinding>& tenants,
                            const std::vector<TraceJob>& jobs, core::Amount capacity,
                            const ReplayOptions& options);

// The GPU capacity of a config: the subtree quota of `resource`, summed over
// flavors, of every root of the quota tree (top cohorts and cohort-less
// ClusterQueues). A non-empty `flavor` counts that flavor only.
Result<core::Amount> ConfigCapacity(const core::Config& config, const std::string& resource,
                                    const std::string& flavor = "");

// The guarantee of the tenant that owns namespace `ns`: the subtree quota of
// `resource` (summed over flavors) of the widest quota-tree node whose
// ClusterQueues all serve only `ns` (reached from `ns`'s LocalQueues). A
// non-empty `flavor` counts that flavor only.
Result<core::Amount> NamespaceGuarantee(const core::Config& config, const std::string& ns,
                                        const std::string& resource, const std::string& flavor = "");

// Nearest-rank percentiles of `values` (sorted in place).
Percentiles ComputePercentiles(std::vector<double>* values);

// Jain's fairness index over normalized shares: each active tenant's share is
// what it holds divided by its weighted max-min fair share of
// min(capacity, total demand), water-filled over demands with weights
// `weights`. Tenants with no demand are left out; 1 when none is active.
double JainIndex(const std::vector<core::Amount>& held, const std::vector<core::Amount>& demand,
                 const std::vector<core::Amount>& weights, core::Amount capacity);

}  // namespace artel::sim
