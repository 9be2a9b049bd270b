// Placement: where the pods of an admitted workload run.
//
// Quota admission (core/engine.h) decides that a workload may use a flavor's
// resources; placement decides on which nodes and devices its pods run, and
// whether they can run at all right now. A `Cluster` holds the nodes (labels,
// taints, readiness, allocatable resources, GPUs with their MIG layouts) and
// what is in use on each of them. Its `Place` answers, for one gang:
//
//   kPlaced        every pod (or at least the gang's minimum) has a node and
//                  a GPU assignment: whole devices, a MIG instance (created on
//                  demand, with the repartition it needs), or a memory share;
//   kUnschedulable retryable: it does not fit now, and the reason says which
//                  pods could not be placed and why (capacity, topology);
//   kInfeasible    it can never fit on these nodes (no node matches, a pod is
//                  larger than any node, no domain is large enough, an unknown
//                  MIG profile).
//
// `Place` is all-or-nothing and tentative: it does not change the cluster.
// The caller then `Commit`s the placement under a key (usually the workload's
// `namespace/name`) and `Release`s it when the workload ends or is evicted.
// A placement stays valid until the cluster changes; `Commit` re-validates it
// and fails with FailedPrecondition if it no longer fits.
//
// The algorithm (docs/placement.md) is a pipeline of policies, each in its
// own file with an essay: node_filter.h (labels, taints, readiness,
// capacity), node_scorer.h (binpack / spread), fragmentation.h (the
// anti-fragmentation tie-break), topology_policy.h (domains, best fit),
// mig_policy.h (dynamic MIG slots) and share_policy.h (memory shares).
//
// Quantities are `core::Amount` milli-units, as everywhere in the core: GPU
// counts are 1000 per device; memory is bytes * 1000. HAMi's `gpumem` and
// KAI's `gpu-memory` are MiB, as those projects define them.
//
// Thread-safety: a `Cluster` is a plain value with no internal locking; use
// it from one thread at a time. `Place` mutates scratch state and restores
// it, so it is not `const` and not safe to call concurrently either.
// Nothing here does I/O, reads a clock or draws random numbers.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/model.h"
#include "core/quantity.h"
#include "core/status.h"

namespace artel::core::placement {

// ---------------------------------------------------------------- nodes

inline constexpr char kHostnameLabel[] = "kubernetes.io/hostname";
inline constexpr char kGpuProductLabel[] = "nvidia.com/gpu.product";

struct MigInstanceSpec {
  std::string profile;  // e.g. "3g.40gb", named for the GPU's model
  int32_t start = 0;    // first memory slice
};

struct GpuSpec {
  std::string model;                        // e.g. "H100-80GB"; empty = the node's gpu.product label
  int64_t memory_mib = 0;                   // 0 = the model's memory (0 if the model is unknown)
  std::string uuid;                         // empty = "GPU-<node>-<index>"
  bool mig = false;                         // MIG mode: serves only MIG instances
  std::vector<MigInstanceSpec> mig_layout;  // instances present at start (idle)
  int32_t max_shares = 10;                  // memory shares per GPU (HAMi deviceSplitCount)
};

struct NodeSpec {
  std::string name;
  std::map<std::string, std::string> labels;  // kubernetes.io/hostname is added
  std::vector<Taint> taints;
  bool ready = true;
  // cpu, memory, pods and extended resources. A node without `cpu`,
  // `memory`, `pods` or `ephemeral-storage` is unlimited in it; a missing
  // extended resource is zero. GPU resources (nvidia.com/gpu, mig-*, ...)
  // are derived from `gpus`; when `gpus` is empty, `nvidia.com/gpu: N` makes
  // N whole GPUs of the node's gpu.product model.
  std::map<std::string, Amount> allocatable;
  std::vector<GpuSpec> gpus;
};

// Topology levels are node label keys from the widest to the narrowest
// (Kueue Topology), e.g. {"topology/zone", "topology/rack",
// "kubernetes.io/hostname"}. A node's domain at level i is the tuple of its
// label values for levels 0..i.
struct TopologyLevels {
  std::string name;
  std::vector<std::string> levels;
};

// ------------------------------------------------------------- requests

enum class GpuKind : int8_t {
  kNone,
  kWhole,       // nvidia.com/gpu: N (no slicing)
  kMigProfile,  // nvidia.com/mig-<profile>: N
  kMigNeed,     // artel.dev/gpu-memory (+ artel.dev/gpu-compute): smallest profile that fits
  kShare,       // HAMi gpumem/gpucores or KAI gpu-fraction/gpu-memory: part of a GPU
};

struct GpuRequest {
  GpuKind kind = GpuKind::kNone;
  int32_t count = 0;            // devices (kWhole, kShare) or instances (kMig*) per pod
  std::string mig_profile;      // kMigProfile
  int64_t memory_mib = 0;       // kMigNeed: the need; kShare: the limit per device (0 = see percent)
  int32_t compute_slices = 0;   // kMigNeed: sevenths of a GPU (0 = any)
  int32_t memory_permille = 0;  // kShare when memory_mib == 0 (both 0 = the whole memory)
  int32_t cores_percent = 0;    // kShare: compute limit, 0 = unlimited
  bool isolated = true;         // kShare: false for KAI fractions (no enforcement)
};

// Reads the GPU part of a pod's requests and its typed GPU share:
//   nvidia.com/gpu: N                      -> kWhole N (or N shares with gpumem/gpucores)
//   nvidia.com/mig-<profile>: N            -> kMigProfile
//   artel.dev/gpu-memory: 18Gi (+ artel.dev/gpu-compute: a fraction of a GPU,
//                                  e.g. 3/7 via ParseGpuCompute)    -> kMigNeed 1
//   nvidia.com/gpumem (MiB), nvidia.com/gpumem-percentage, nvidia.com/gpucores
//                                          -> kShare, isolated
//   a GpuShareRequest (KAI's gpu-fraction or gpu-memory annotation, read by
//   the manifest layer)                   -> kShare, not isolated
// Two different kinds in one pod are an InvalidArgument error.
Result<GpuRequest> ParseGpuRequest(const FlatMap<std::string, Amount>& requests,
                                   const GpuShareRequest& share);

// "3/7" or a quantity ("0.5", "500m") -> a fraction of a GPU in milli-units,
// rounded up (3/7 -> 429). Placement turns it into sevenths by rounding up,
// except that a value within 1% of a seventh rounds down (429 -> 3, 500 ->
// 4). Errors name the text.
Result<Amount> ParseGpuCompute(std::string_view text);

// True for resource names that placement reads as GPU requests (and that the
// generic capacity check therefore ignores).
bool IsGpuResource(std::string_view name);

struct PodGroup {
  std::string name = "main";
  int32_t count = 1;
  int32_t min_count = -1;  // -1 = count (Kueue minCount, Volcano minTaskMember, KAI subGroup minMember)
  std::map<std::string, Amount> requests;  // per pod; GPU names are ignored here, see `gpu`
  GpuRequest gpu;
  FlatMap<std::string, std::string> node_selector;
  std::vector<NodeSelectorTerm> node_affinity;  // required; ORed terms
  std::vector<Toleration> tolerations;
  int32_t min() const { return min_count < 0 ? count : min_count; }
};

// Builds a pod group from a core pod set: requests, node selector,
// tolerations, and the GPU request from requests and the typed GPU share.
Result<PodGroup> PodGroupFromSpec(const PodSetSpec& spec);

// Topology constraint of a gang. Levels are label keys of the gang's
// topology. `required_level` bounds the gang to one domain of that level;
// `preferred_level` is where packing starts, widening level by level when
// it does not fit (and, without a requirement, finally across domains).
// With a slice size, each consecutive `slice_size` pods of a group must sit
// in one domain of `slice_level` (Kueue podset-slice-*).
struct TopologyConstraint {
  std::string required_level;
  std::string preferred_level;
  std::string slice_level;
  int32_t slice_size = 0;
  bool empty() const { return required_level.empty() && preferred_level.empty() && slice_size == 0; }
  bool operator==(const TopologyConstraint&) const = default;
};

// The constraint of a typed topology request (Kueue's required, preferred,
// unconstrained and sliced requests; KAI's required and preferred
// placement, which must agree with Kueue's where both are given).
Result<TopologyConstraint> TopologyFromRequest(const TopologyRequest& request);

// Volcano networkTopology: tier 1 is the narrowest level above the hosts.
// mode "hard" -> required at the tier's level, "soft" -> preferred.
Result<TopologyConstraint> TopologyFromVolcano(const TopologyLevels& topology, std::string_view mode,
                                               int32_t highest_tier_allowed);

enum class ScorePolicy : int8_t { kBinpack, kSpread };

struct GangRequest {
  std::vector<PodGroup> groups;
  int32_t min_member = 0;  // 0 = sum of the groups' minimums (Volcano/KAI minMember)
  // The admitted flavor's nodeLabels and tolerations (ResourceFlavor).
  std::map<std::string, std::string> flavor_node_labels;
  std::vector<Toleration> flavor_tolerations;
  std::string topology;  // name given to Cluster::AddTopology; empty = none
  TopologyConstraint constraint;
  // When not empty (one per group): each group is placed on its own, in
  // order, under its own constraint, all groups or none. Without a gang
  // `constraint` the groups go anywhere (Kueue fits each PodSet's topology
  // request separately); with one, the gang first takes one domain of that
  // constraint and every group is placed inside it (KAI subgroups within
  // their PodGroup's domain).
  std::vector<TopologyConstraint> group_constraints;
  // When not empty: the only nodes (indices) this gang may use.
  std::vector<int32_t> only_nodes;
  ScorePolicy score = ScorePolicy::kBinpack;
};

// -------------------------------------------------------------- results

struct MigAssignment {
  int32_t gpu = 0;
  std::string profile;
  int32_t start = 0;
  bool create = false;  // the instance does not exist yet and must be created
  // Idle instances that must be destroyed first (a repartition), as
  // (profile, start) pairs.
  std::vector<MigInstanceSpec> destroy;
};

struct ShareAssignment {
  int32_t gpu = 0;
  int64_t memory_mib = 0;     // limit the runtime enforces (CUDA_DEVICE_MEMORY_LIMIT)
  int32_t cores_percent = 0;  // 0 = unlimited (CUDA_DEVICE_SM_LIMIT)
  bool isolated = true;
};

struct PodPlacement {
  int32_t group = 0;          // index into GangRequest::groups
  int32_t node = 0;           // Cluster::node_name(node)
  std::vector<int32_t> gpus;  // kWhole: device indices on the node
  std::vector<MigAssignment> mig;
  std::vector<ShareAssignment> shares;
};

struct Placement {
  std::vector<PodPlacement> pods;
  std::vector<int32_t> placed;  // pods placed per group
  // The non-GPU requests of each group's pods, so that `Commit` and
  // `Release` can account for them.
  std::vector<std::map<std::string, Amount>> group_requests;
};

enum class PlaceOutcome : int8_t { kPlaced, kUnschedulable, kInfeasible };
const char* PlaceOutcomeName(PlaceOutcome outcome);

struct PlaceResult {
  PlaceOutcome outcome = PlaceOutcome::kUnschedulable;
  Placement placement;  // kPlaced only
  std::string reason;   // empty when placed
  bool ok() const { return outcome == PlaceOutcome::kPlaced; }
};

enum class MigPolicyKind : int8_t { kMinFragmentation, kFirstFit };

struct ClusterOptions {
  MigPolicyKind mig_policy = MigPolicyKind::kMinFragmentation;
};

// ------------------------------------------------------------- cluster

class ClusterImpl;

class Cluster {
 public:
  explicit Cluster(ClusterOptions options = {});
  ~Cluster();
  Cluster(Cluster&&) noexcept;
  Cluster& operator=(Cluster&&) noexcept;
  Cluster(const Cluster&);
  Cluster& operator=(const Cluster&);

  // Adds a node. Errors: duplicate name, bad MIG layout (unknown profile,
  // invalid or overlapping slot, MIG on a model without geometry).
  // Nodes and topologies may be added in any order, before or after commits.
  Status AddNode(NodeSpec spec);
  // Registers a topology. Errors: duplicate name, no levels.
  Status AddTopology(TopologyLevels topology);
  // Marks a node (not) ready. Placed pods stay; new ones avoid it.
  Status SetReady(std::string_view node, bool ready);

  // Finds where the gang fits; does not change the cluster. See the file
  // comment for the outcomes.
  PlaceResult Place(const GangRequest& request);

  // Applies a placement under `key`. Errors: AlreadyExists if `key` holds
  // one; FailedPrecondition if it no longer fits (nothing is applied then).
  Status Commit(std::string key, const Placement& placement);
  // Frees what `key` holds. MIG instances stay, idle, for reuse or
  // repartition. NotFound if `key` holds nothing.
  Status Release(std::string_view key);
  bool Holds(std::string_view key) const;

  // Introspection.
  int32_t node_count() const;
  const std::string& node_name(int32_t node) const;
  int32_t FindNode(std::string_view name) const;  // -1 if absent
  // "GPU-<node>-<index>" unless the spec named one.
  const std::string& gpu_uuid(int32_t node, int32_t gpu) const;
  // "MIG-<gpu uuid>-<profile>-<start>".
  std::string MigUuid(int32_t node, int32_t gpu, std::string_view profile, int32_t start) const;
  // Current instances as "profile@start", by start slot.
  std::vector<std::string> MigLayout(int32_t node, int32_t gpu) const;
  // Busy MIG instances (held by a committed pod) on a GPU, same format.
  std::vector<std::string> BusyMigInstances(int32_t node, int32_t gpu) const;
  // The devices a pod sees: GPU or MIG UUIDs, comma-separated
  // (CUDA_VISIBLE_DEVICES).
  std::string VisibleDevices(const PodPlacement& pod) const;
  // Free whole GPUs on ready nodes.
  int64_t FreeWholeGpus() const;
  // Memory slices held by busy instances / all slices of MIG-mode GPUs.
  int64_t MigBusySlices() const;
  int64_t MigTotalSlices() const;
  // Checks internal invariants (tests). Returns the first violation.
  Status CheckInvariants() const;

  // Static feasibility, for flavor assignment (core/flavor_assigner.cc):
  // could every group of `request` have one pod on some node, ignoring what
  // is placed now? A node counts when it is ready, allowed by `only_nodes`,
  // passes the static filters (the gang's flavor nodeLabels and tolerations,
  // the group's nodeSelector, required affinity and tolerations) and, empty,
  // holds one pod of the group (node_filter.h, CapacityFilter with `empty`).
  // Counts and topology are not looked at. When false, `why` says what ruled
  // the nodes out.
  bool CanEverHost(const GangRequest& request, std::string* why) const;

  // For placement-aware preemption (core/preemption.cc): per node, the scope
  // in which freeing capacity could help `request`: -1 when no group of the
  // gang may use the node (readiness, flavor labels, node selector and
  // affinity, taints, `only_nodes`; capacity is not looked at); otherwise
  // the node's domain index at the gang's required topology level, or the
  // node index itself when the gang has no required level. Nodes with equal
  // scopes form one candidate domain.
  std::vector<int32_t> PreemptionScopes(const GangRequest& request) const;

 private:
  std::unique_ptr<ClusterImpl> impl_;
};

}  // namespace artel::core::placement
