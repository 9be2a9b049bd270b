// Drives `core::Engine` (and the naive scheduler) through a generated
// `Scenario`, and checks quota-tree invariants independently of the engine.
//
// Thread-safety: none; plain functions over caller-owned objects.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/engine.h"
#include "generator.h"
#include "naive_scheduler.h"

namespace artel::proptest {

// What a workload holds: pod counts and resource -> flavor per pod set.
using AdmittedSet = std::map<std::string, NaiveScheduler::Admission>;

AdmittedSet Admitted(const core::Engine& e);
std::string DescribeDiff(const AdmittedSet& a, const AdmittedSet& b, const std::string& a_name,
                         const std::string& b_name);

// Called after every `Schedule`, with `Usage()` taken just before it.
using ScheduleHook =
    std::function<void(const std::vector<core::QuotaUsage>& before, const core::CycleResult& r)>;

// Multi-admission style: `Schedule`, then complete every eviction, until a
// call admits and evicts nothing. Returns every eviction, in order; sets
// `*settled` false if it did not converge.
std::vector<core::Eviction> Settle(core::Engine& e, core::Time now, bool* settled,
                                   const ScheduleHook& hook = {});

// The one-head reference driver: calls `Schedule` until `changed` is false
// (victims keep their quota meanwhile, as within one multi-admission call),
// then completes every eviction of that run, and repeats until a run admits
// and evicts nothing.
std::vector<core::Eviction> SettleOneHead(core::Engine& e, core::Time now, bool* settled,
                                          const ScheduleHook& hook = {});

// Resolves a finish / cancel pick against `e`: the pick-th (modulo) admitted
// workload for finish, the pick-th not-finished workload for cancel, by key.
// Empty if there is none.
std::string ResolvePick(const core::Engine& e, const Event& ev);

// Applies a batch of events to the engines (all must be in the same state),
// resolving picks against `engines[0]`. Returns "" or an error.
std::string ApplyBatch(const std::vector<core::Engine*>& engines, const Batch& batch,
                       NaiveScheduler* naive = nullptr);

// Checks property (a) on `e` configured with `config`: Usage() equals an
// independent recomputation; usage <= subtreeQuota + borrowingLimit at every
// node with a borrowing limit; usage <= subtreeQuota at every root; and what
// the rest of the tree uses of a node's quota never exceeds its lending limit
// (see the comment in driver.cc). Returns "" or a description of the first
// violation.
std::string CheckQuotaInvariants(const core::Config& config, const core::Engine& e);

// Property (b): runs `seed`'s scenario with ClusterQueue `qi` (modulo the
// number of queues) set to reclaimWithinCohort: Any and at least 2 units of
// nominal quota in the first flavor of each group, most of its own
// submissions dropped (so others borrow its quota); then submits a probe
// workload of priority 1000 to it asking for at most nominal - usage of those
// flavors, and settles.
struct ReclaimProbe {
  bool settled = true;    // false: some settle did not converge
  bool ran = false;       // false: no headroom for a probe
  bool admitted = false;  // the probe was admitted
  bool in_cohort = false;
  bool reclaimed = false;  // the probe's settle evicted something
  std::string failure;     // description when ran && !admitted
};
ReclaimProbe RunReclaimProbe(uint64_t seed, size_t qi);

// Per-ClusterQueue usage from `Usage()`: node -> (flavor, resource) -> usage.
std::map<std::string, FrMap> UsageByNode(const std::vector<core::QuotaUsage>& usage);

}  // namespace artel::proptest
