// A naive reference scheduler, run side by side with `core::Engine` (the
// LevelDB `ModelDB` idea). It reads only the model types of core/model.h and
// re-derives every quantity from scratch from the formulas of
// reference/kueue-semantics.md, with no incremental state and no shared code
// with src/core.
//
// Subset covered (the side-by-side test only generates inputs inside it):
//  - Quota tree: subtreeQuota, localQuota (lendingLimit), usage,
//    available and potentialAvailable with borrowingLimit and lendingLimit at
//    every level, explicit and implicit cohorts. Recomputed recursively on
//    every query from the admitted workloads plus this cycle's reservations.
//  - Kueue cycles with one head per ClusterQueue: heads ordered inside a
//    ClusterQueue by priority desc, creation time, submission order, across
//    its LocalQueues; entries ordered by borrowing level asc, priority desc,
//    creation time, submission order; a Fit entry is admitted only if it
//    still fits when its turn comes (else it stays queued for the next
//    cycle).
//  - Flavor assignment: flavors of each resource group in order, per pod set,
//    counting earlier pod sets' usage of the same flavor; NoFit /
//    Fit(borrowing level) / needs-preemption (val <= nominal, or a non-root
//    subtree absorbs it); whenCanBorrow MayStopSearch and
//    TryNextFlavor (the best Fit is the lowest borrowing level, ties keep the
//    earlier flavor). Requests of 0 are ignored.
//  - Needs-preemption with no candidates (every policy is Never): the flavor
//    is "NoCandidates", tried past like NoFit but preferred over NoFit, with
//    the borrowing level at which it would fit now; if it is the best, the
//    entry reserves min(request, nominal - usage) of its ClusterQueue for the
//    rest of the cycle (reclaimWithinCohort != Any), or, when that level is
//    above 0, min(request, nominal + borrowingLimit - usage) (all of the
//    request without a borrowing limit).
//  - Partial admission: binary search for the smallest reduction x in
//    [1, sum(count - minCount)] with count_i - delta_i * x / total pods, only
//    when the full size does not fit.
//  - BestEffortFIFO parks a workload that did not fit until a workload of
//    the same cohort tree (same root) finishes or is cancelled while
//    admitted; StrictFIFO keeps it at the head.
//  - namespaceSelector via `LabelSelector::Matches` over the namespace's
//    labels plus kubernetes.io/metadata.name.
// Not covered (the caller must not generate them): any preemption policy
// other than Never (withinClusterQueue, reclaimWithinCohort,
// borrowWithinCohort), fair sharing and Admission Fair Sharing, taints,
// tolerations and node labels on flavors, ResourceQuota, stopPolicy,
// inactive workloads, configuration changes after the first, resources a
// ClusterQueue does not cover, flavors that do not list every covered
// resource.
//
// Thread-safety: none; a plain value object.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/model.h"

namespace artel::proptest {

using FlavorResource = std::pair<std::string, std::string>;  // (flavor, resource)
using FrMap = std::map<FlavorResource, core::Amount>;

// The quota tree of a `Config`, recomputed from scratch on every query.
class NaiveQuotaTree {
 public:
  explicit NaiveQuotaTree(const core::Config& config);

  // Sets the direct usage of every ClusterQueue (cq name -> usage).
  void SetUsage(std::map<std::string, FrMap> usage) { usage_ = std::move(usage); }

  bool Has(const std::string& node) const { return nodes_.count(node) > 0; }
  std::optional<std::string> Parent(const std::string& node) const;
  std::string Root(const std::string& node) const;
  std::vector<std::string> Children(const std::string& node) const;
  std::vector<std::string> Nodes() const;
  bool IsCohort(const std::string& node) const { return nodes_.at(node).cohort; }
  std::vector<FlavorResource> FlavorResources() const;

  core::Amount Nominal(const std::string& n, const FlavorResource& fr) const;
  std::optional<core::Amount> BorrowingLimit(const std::string& n, const FlavorResource& fr) const;
  std::optional<core::Amount> LendingLimit(const std::string& n, const FlavorResource& fr) const;
  core::Amount Subtree(const std::string& n, const FlavorResource& fr) const;
  core::Amount Local(const std::string& n, const FlavorResource& fr) const;
  core::Amount Usage(const std::string& n, const FlavorResource& fr) const;
  core::Amount Available(const std::string& n, const FlavorResource& fr) const;
  core::Amount PotentialAvailable(const std::string& n, const FlavorResource& fr) const;
  // Height: 0 for a ClusterQueue (and a cohort without children), else
  // 1 + the largest height of a child.
  int Height(const std::string& n) const;
  // The borrowing level of `amount` more at `cq`: 0 when it fits the
  // ClusterQueue's subtree quota (or it has no parent); otherwise the height
  // of the lowest ancestor at which it no longer borrows, where what is left
  // to place shrinks by each node's unused local quota on the way up (the
  // root's height if it fits nowhere). `may_reclaim` tells whether that
  // lowest node has a parent (a non-root subtree absorbs the request).
  struct Level {
    int level = 0;
    bool may_reclaim = false;
  };
  Level BorrowingLevel(const std::string& cq, const FlavorResource& fr, core::Amount amount) const;

 private:
  struct Quota {
    core::Amount nominal = 0;
    std::optional<core::Amount> borrowing_limit, lending_limit;
  };
  struct NodeInfo {
    bool cohort = false;
    std::string parent;  // empty = root
    std::map<FlavorResource, Quota> quota;
  };
  const Quota* QuotaOf(const std::string& n, const FlavorResource& fr) const;
  core::Amount Draw(const std::string& n, const FlavorResource& fr, core::Amount usage) const;

  std::map<std::string, NodeInfo> nodes_;
  std::map<std::string, FrMap> usage_;
};

class NaiveScheduler {
 public:
  struct Admission {
    std::vector<int32_t> counts;                              // per pod set
    std::vector<std::map<std::string, std::string>> flavors;  // per pod set: resource -> flavor
    bool operator==(const Admission&) const = default;
  };

  explicit NaiveScheduler(core::Config config);

  void Submit(const core::WorkloadSpec& spec, core::Time now);
  // REQUIRES: the workload is admitted.
  void Finish(const std::string& key);
  void Cancel(const std::string& key);
  // One Kueue cycle; true if anything was admitted or parked.
  bool Cycle();
  // Cycles until nothing changes.
  void Settle();

  std::map<std::string, Admission> Admitted() const;

 private:
  enum class State { kPending, kParked, kAdmitted, kGone };
  enum class Mode { kNoFit = 0, kNoCandidates = 1, kFit = 2 };
  struct Wl {
    core::WorkloadSpec spec;
    std::string key;
    int32_t priority = 0;
    core::Time created = 0;
    uint64_t uid = 0;
    State state = State::kPending;
    Admission admission;
    FrMap usage;
  };
  struct Assignment {
    Mode mode = Mode::kNoFit;
    bool no_flavor = false;  // a resource is not covered: no partial admission
    int level = 0;
    Admission admission;
    FrMap usage;
  };

  const core::ClusterQueueSpec* ClusterQueueOf(const Wl& w) const;
  NaiveQuotaTree Tree(const std::vector<std::pair<std::string, FrMap>>& extra) const;
  Assignment Assign(const NaiveQuotaTree& tree, const Wl& w, const core::ClusterQueueSpec& cq,
                    const std::vector<int32_t>& counts) const;
  Assignment Nominate(const NaiveQuotaTree& tree, const Wl& w, const core::ClusterQueueSpec& cq) const;
  void Release(const Wl& w);

  core::Config config_;
  std::vector<Wl> wls_;
  uint64_t next_uid_ = 1;
};

}  // namespace artel::proptest
