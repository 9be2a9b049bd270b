// The declarative model of Artel: what users configure and submit.
//
// These are plain value types, keyed by names exactly as in the manifests
// (Kueue v1beta2 field meanings; see docs/semantics.md). The manifest layer
// produces them; the `Engine` (core/engine.h) interns the names into dense
// ids and builds its quota tree from them. Nothing here does I/O.
//
// Amounts are milli-units (core/quantity.h). Optional limits use
// `std::optional`: unset `borrowingLimit` means unlimited borrowing, unset
// `lendingLimit` means everything may be lent, as in Kueue.
//
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/boxed.h"
#include "core/flat_map.h"
#include "core/quantity.h"
#include "core/shared_vec.h"
#include "core/status.h"

namespace artel::core {

// Virtual or wall time in milliseconds. The core never reads a clock; callers
// pass `now` in.
using Time = int64_t;

struct Taint {
  std::string key;
  std::string value;
  std::string effect;  // NoSchedule | PreferNoSchedule | NoExecute
};

struct Toleration {
  std::string key;           // empty with operator Exists = tolerate everything
  std::string op = "Equal";  // Equal | Exists
  std::string value;
  std::string effect;  // empty = all effects
  bool Tolerates(const Taint& t) const;
  bool operator==(const Toleration&) const = default;
};

struct LabelSelectorRequirement {
  std::string key;
  std::string op;  // In | NotIn | Exists | DoesNotExist
  std::vector<std::string> values;
};

// Kubernetes node affinity (requiredDuringSchedulingIgnoredDuringExecution):
// the terms are ORed, the requirements of a term ANDed. Operators: In, NotIn,
// Exists, DoesNotExist, Gt, Lt (Gt/Lt compare one integer value).
struct NodeSelectorRequirement {
  std::string key;
  std::string op;
  std::vector<std::string> values;
  bool Matches(const std::map<std::string, std::string>& labels) const;
  // Why the requirement is malformed, or "" when it is well formed; sets
  // *field to the culprit ("key", "operator" or "values").
  std::string Problem(std::string* field) const;
  bool operator==(const NodeSelectorRequirement&) const = default;
};

struct NodeSelectorTerm {
  std::vector<NodeSelectorRequirement> match_expressions;
  // An empty term matches nothing (as in Kubernetes).
  bool Matches(const std::map<std::string, std::string>& labels) const;
  bool operator==(const NodeSelectorTerm&) const = default;
};

// True when no terms are given or one of them matches.
bool NodeAffinityMatches(const std::vector<NodeSelectorTerm>& terms,
                         const std::map<std::string, std::string>& labels);

struct LabelSelector {
  std::map<std::string, std::string> match_labels;
  std::vector<LabelSelectorRequirement> match_expressions;
  bool Matches(const std::map<std::string, std::string>& labels) const;
};

struct ResourceFlavorSpec {
  std::string name;
  std::map<std::string, std::string> node_labels;
  std::vector<Taint> node_taints;
  std::vector<Toleration> tolerations;  // added to the pods admitted on this flavor
  std::string topology_name;
  SourcePos pos;
};

struct ResourceQuotaSpec {
  std::string name;  // resource name, e.g. "nvidia.com/gpu"
  Amount nominal = 0;
  std::optional<Amount> borrowing_limit;
  std::optional<Amount> lending_limit;
};

struct FlavorQuotasSpec {
  std::string flavor;
  std::vector<ResourceQuotaSpec> resources;
};

struct ResourceGroupSpec {
  std::vector<std::string> covered_resources;
  std::vector<FlavorQuotasSpec> flavors;
};

enum class QueueingStrategy { kBestEffortFIFO, kStrictFIFO };
enum class WithinClusterQueuePolicy { kNever, kLowerPriority, kLowerOrNewerEqualPriority };
enum class ReclaimWithinCohortPolicy { kNever, kLowerPriority, kAny };
enum class BorrowWithinCohortPolicy { kNever, kLowerPriority };
enum class FungibilityPolicy { kMayStopSearch, kTryNextFlavor };
enum class FungibilityPreference { kBorrowingOverPreemption, kPreemptionOverBorrowing };
enum class StopPolicy { kNone, kHold, kHoldAndDrain };

struct PreemptionSpec {
  WithinClusterQueuePolicy within_cluster_queue = WithinClusterQueuePolicy::kNever;
  ReclaimWithinCohortPolicy reclaim_within_cohort = ReclaimWithinCohortPolicy::kNever;
  BorrowWithinCohortPolicy borrow_within_cohort = BorrowWithinCohortPolicy::kNever;
  std::optional<int32_t> max_priority_threshold;
};

struct FlavorFungibilitySpec {
  FungibilityPolicy when_can_borrow = FungibilityPolicy::kMayStopSearch;
  FungibilityPolicy when_can_preempt = FungibilityPolicy::kTryNextFlavor;
  FungibilityPreference preference = FungibilityPreference::kBorrowingOverPreemption;
};

// Fair-sharing weight in milli-units: 1000 = weight 1 (the default).
inline constexpr Amount kDefaultFairWeight = 1000;

struct ClusterQueueSpec {
  std::string name;
  std::string cohort;  // empty = no cohort
  std::vector<ResourceGroupSpec> resource_groups;
  QueueingStrategy queueing_strategy = QueueingStrategy::kBestEffortFIFO;
  PreemptionSpec preemption;
  FlavorFungibilitySpec flavor_fungibility;
  Amount fair_weight = kDefaultFairWeight;
  // Unset admits no namespace; an empty selector admits all (Kueue).
  std::optional<LabelSelector> namespace_selector;
  StopPolicy stop_policy = StopPolicy::kNone;
  // Time limits (Artel; docs/semantics.md §11), read from the ClusterQueue's
  // `spec.artel.dev/timeLimits`; every one unset by default (no limit).
  // A workload's maximum runtime when it names none, and the most it may
  // name (a longer one is cut to the ceiling).
  std::optional<Time> default_max_runtime;
  std::optional<Time> max_runtime_ceiling;
  // Minimum runtime: an admitted workload of this queue is not a preemption
  // candidate for in-queue priority or fair sharing (or a reclaim while the
  // preemptor borrows) before it has run this long in its current admission;
  // `reclaim_min_runtime` is the same for the reclaim of a guarantee
  // (InCohortReclamation). A priority class's own values win over these.
  std::optional<Time> min_runtime;
  std::optional<Time> reclaim_min_runtime;
  // Preemption delay: a workload of this queue may preempt others only once
  // it has waited this long since it was queued.
  std::optional<Time> preemption_delay;
  // Reservations with conservative backfill (docs/semantics.md §11): a head
  // of this queue that is short of quota reserves once it has waited
  // `reserve_after`, or at once when its priority is at least
  // `reserve_priority`. The runtime estimate of a workload is its maximum
  // runtime, else `default_runtime_estimate`.
  std::optional<Time> reserve_after;
  std::optional<int32_t> reserve_priority;
  std::optional<Time> default_runtime_estimate;
  // Backfill window (Slurm's `bf_window`): a head whose reservation would
  // start later than now + this gets none (unset: no horizon).
  std::optional<Time> backfill_window;
  SourcePos pos;
};

struct CohortSpec {
  std::string name;
  std::string parent;  // empty = root
  std::vector<ResourceGroupSpec> resource_groups;
  Amount fair_weight = kDefaultFairWeight;
  SourcePos pos;
};

struct LocalQueueSpec {
  std::string ns;
  std::string name;
  std::string cluster_queue;
  StopPolicy stop_policy = StopPolicy::kNone;
  Amount fair_weight = kDefaultFairWeight;  // Admission Fair Sharing weight
  SourcePos pos;
};

struct PriorityClassSpec {
  std::string name;
  int32_t value = 0;
  std::string description;
  // Minimum runtimes of the workloads of this class (see ClusterQueueSpec;
  // `artel.dev/timeLimits` on the WorkloadPriorityClass). Unset: the
  // ClusterQueue's.
  std::optional<Time> min_runtime;
  std::optional<Time> reclaim_min_runtime;
  SourcePos pos;
};

struct NamespaceSpec {
  std::string name;
  std::map<std::string, std::string> labels;
  SourcePos pos;
};

// Kubernetes ResourceQuota: a hard per-namespace cap. Keys are as in
// Kubernetes (`requests.nvidia.com/gpu`, `requests.cpu`, `cpu`, `count/...`
// is ignored). Artel enforces request caps at admission time.
struct ResourceQuotaObjSpec {
  std::string ns;
  std::string name;
  std::map<std::string, Amount> hard;
  SourcePos pos;
};

struct TopologySpec {
  std::string name;
  std::vector<std::string> levels;  // node label keys, from widest to narrowest
  // Volcano HyperNode `tierName` -> tier (1 = the narrowest level above the
  // hosts), for networkTopology.highestTierName.
  std::map<std::string, int32_t> tier_names;
  SourcePos pos;
};

// Admission Fair Sharing knobs (Kueue Configuration.admissionFairSharing).
struct AdmissionFairSharingSpec {
  Time usage_half_life = 0;  // 0 = no decay memory: usage is current only
  Time usage_sampling_interval = 5 * 60 * 1000;
  std::map<std::string, Amount> resource_weights;  // milli; default weight 1 per resource
};

// Everything the engine is configured with.
struct Config {
  std::vector<ResourceFlavorSpec> flavors;
  std::vector<CohortSpec> cohorts;
  std::vector<ClusterQueueSpec> cluster_queues;
  std::vector<LocalQueueSpec> local_queues;
  std::vector<PriorityClassSpec> priority_classes;
  std::vector<NamespaceSpec> namespaces;
  std::vector<ResourceQuotaObjSpec> resource_quotas;
  std::vector<TopologySpec> topologies;
};

// A topology request, typed. The manifest layer fills it from Kueue's
// PodSet topologyRequest (the kueue.x-k8s.io/podset-* annotations) and KAI's
// topology placement annotations (manifest/typed_fields.h); the core reads
// only these fields. Levels are node label keys of a Topology. An empty
// string means "not asked".
struct TopologyRequest {
  std::string required;        // Kueue: every pod in one domain of this level
  std::string preferred;       // Kueue: as few domains of this level as possible
  bool unconstrained = false;  // Kueue: on topology nodes, anywhere
  std::string slice_required;  // Kueue: each slice of slice_size pods in one domain
  int32_t slice_size = 0;      // 0 = no slices
  std::string group;           // Kueue podSetGroupName: pod sets placed in one domain
  std::string kai_required;    // KAI topology-required-placement
  std::string kai_preferred;   // KAI topology-preferred-placement

  // A Kueue TAS request (required, preferred or sliced), which Kueue fits
  // per pod set and which limits the pod set to topology flavors.
  bool KueueAsks() const { return !required.empty() || !preferred.empty() || !slice_required.empty(); }
  bool empty() const {
    return !KueueAsks() && !unconstrained && group.empty() && kai_required.empty() && kai_preferred.empty();
  }
  bool operator==(const TopologyRequest&) const = default;
};

// A GPU share asked by annotation (KAI's gpu-fraction, gpu-memory and
// gpu-fraction-num-devices), typed; all zero = not asked.
struct GpuShareRequest {
  Amount fraction = 0;     // milli of one GPU, (0, 1000]
  int64_t memory_mib = 0;  // instead of a fraction
  int32_t devices = 0;     // 0 = one device
  bool any() const { return fraction > 0 || memory_mib > 0; }
  bool operator==(const GpuShareRequest&) const = default;
};

// Gang placement of a whole workload (Volcano and KAI PodGroups, Volcano
// networkTopology, Artel's own keys), typed; filled by the manifest layer.
struct GangSpec {
  int32_t min_member = 0;         // pods over all pod sets; 0 = no gang minimum
  std::string topology;           // the named topology the gang is placed in; "" = the flavor's
  std::string network_mode;       // Volcano networkTopology.mode: hard | soft; "" = none
  int32_t highest_tier = 0;       // Volcano highestTierAllowed; 0 = unset (tier 1)
  std::string highest_tier_name;  // Volcano highestTierName
  bool spread = false;            // spread pods over nodes instead of packing them
  // KAI subgroups: each pod set keeps its own topology constraint inside the
  // domain of the PodGroup's.
  bool subgroup_topologies = false;
  bool operator==(const GangSpec&) const = default;
};

struct PodSetSpec {
  std::string name = "main";
  int32_t count = 1;
  std::optional<int32_t> min_count;       // partial admission
  FlatMap<std::string, Amount> requests;  // per pod
  FlatMap<std::string, std::string> node_selector;
  std::vector<NodeSelectorTerm> node_affinity;  // required node affinity; empty = none
  std::vector<Toleration> tolerations;
  // As submitted; the core reads the typed fields below, which the manifest
  // layer derives from them (manifest/typed_fields.h).
  FlatMap<std::string, std::string> annotations;
  // Boxed: most pod sets ask for neither (core/boxed.h).
  Boxed<TopologyRequest> topology;
  Boxed<GpuShareRequest> gpu_share;
  // What the local runtime runs for each pod (the core ignores these).
  std::vector<std::string> command;
  FlatMap<std::string, std::string> env;
  std::string working_dir;
  bool operator==(const PodSetSpec&) const = default;
};

struct WorkloadSpec {
  std::string ns;
  std::string name;
  std::string queue;  // LocalQueue name in `ns`
  std::optional<std::string> priority_class;
  std::optional<int32_t> priority;  // explicit value; wins over the class
  // Shared copy-on-write (core/shared_vec.h): copies of a spec, and the
  // engine's workloads submitted with equal pod sets, share one array.
  // Read as a vector; change elements through pod_sets.mut(i).
  SharedVec<PodSetSpec> pod_sets;
  FlatMap<std::string, std::string> labels;
  FlatMap<std::string, std::string> annotations;  // as submitted; see the typed fields below
  Boxed<TopologyRequest> topology;  // workload-wide topology request (KAI PodGroup, annotations)
  Boxed<GangSpec> gang;             // boxed: most workloads are no gang
  bool active = true;               // Kueue spec.active
  // Kueue spec.maximumExecutionTimeSeconds, in ms: once the workload has run
  // this long in total (over all its admissions), it is stopped and finished
  // as Failed. Unset: its ClusterQueue's default, if any.
  std::optional<Time> max_runtime;
  // Runtime knobs (the core ignores these): grace period between SIGTERM
  // and SIGKILL on preemption, and how often a failed run is retried.
  std::optional<Time> termination_grace;
  int32_t backoff_limit = 0;
};

}  // namespace artel::core
