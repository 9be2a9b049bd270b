// `artel validate isolation`: the noisy-neighbour acceptance test.
//
// Given a config and its tenants (namespaces with LocalQueues), one tenant is
// the noisy one (A) and the others are victims (B). Each victim gets a steady
// workload equal to its guarantee: `waves` waves of `guarantee` one-GPU jobs,
// one wave every `job_duration`, each job running `job_duration`. The noisy
// tenant floods: `flood` x capacity one-GPU jobs of `noisy_duration`, all at
// once. Three replays on the production engine:
//
//   1. alone:    the victims' workload only (the baseline);
//   2. A first:  the flood at 0, the victims `offset` later (A has already
//                borrowed every idle GPU: the victims must reclaim);
//   3. B first:  the victims at 0, the flood `offset` later.
//
// A gang job is reclaimed in one preemption round. Smaller victim jobs are
// reclaimed one ClusterQueue head at a time (Kueue's cycle: a head waiting
// for its victims to terminate blocks the next one), so k jobs take about
// k x grace; `--victim-job-gpus 1` shows that.
//
// Checks, per victim and order, each with its figure:
//   - throughput degradation (jobs per hour over the victim's span) and
//     completion-time degradation (mean) against the baseline <= the limit;
//   - guarantee met within `interval + grace`: every episode in which the
//     victim had a pending job fitting its unused guarantee ended within that
//     time (reclaim latency), none left open;
//   - the victim, never above its guarantee, was never evicted;
//   - and per order: the noisy tenant used idle capacity (borrowed GPU-hours
//     > 0), the cluster never held more than its capacity while the flood
//     waited (above-quota work stayed Pending), and every eviction carried a
//     reason and its preemptor.
//
// Thread-safety: reentrant; each call owns its engines.
#pragma once

#include <string>
#include <vector>

#include "core/engine.h"
#include "core/model.h"
#include "core/status.h"
#include "sim/report.h"

namespace artel::sim {

struct IsolationOptions {
  std::string noisy;                 // namespace of A; empty = the first namespace with a LocalQueue
  std::vector<std::string> victims;  // namespaces of B; empty = every other namespace with a LocalQueue
  core::Time interval = 1000;        // scheduling cadence
  core::Time grace = 30 * 1000;      // eviction grace period
  double max_degradation = 0.20;
  core::Time job_duration = 10 * 60 * 1000;
  int waves = 6;
  core::Time noisy_duration = 2 * 3600 * 1000;
  double flood = 4.0;
  core::Time offset = 60 * 1000;
  core::EngineOptions engine;
  std::string resource = "nvidia.com/gpu";
  std::string flavor;           // empty = the flavor with the most quota of `resource`
  int64_t victim_job_gpus = 0;  // 0 = one job of the whole guarantee per wave
};

struct IsolationCheck {
  std::string tenant;  // victim or noisy namespace
  std::string order;   // "A first", "B first", or "" for both
  std::string name;
  std::string value;
  std::string threshold;
  bool passed = true;
};

struct IsolationReport {
  bool passed = true;
  std::string summary;  // one line: tenants, guarantees, capacity, timing
  std::vector<IsolationCheck> checks;
  std::vector<SimRun> runs;  // alone, A first, B first
};

Result<IsolationReport> ValidateIsolation(const core::Config& config, const IsolationOptions& options);

// The verdict as a fixed-width text table ending with a PASS/FAIL line.
std::string IsolationTable(const IsolationReport& report);

// The verdict as HTML (for `SimMeta::extra_html`).
std::string IsolationHtml(const IsolationReport& report);

}  // namespace artel::sim
