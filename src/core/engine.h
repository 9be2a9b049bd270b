// Engine: the pure, deterministic scheduling core of Artel.
//
// An `Engine` holds the configuration (flavors, the cohort tree, cluster and
// local queues, priority classes, namespaces, resource quotas) and every
// workload, and decides admissions and evictions with Kueue v1beta2
// semantics (docs/semantics.md). It does no I/O, starts no threads and never
// reads a clock: the caller passes `now` into every mutating call. Given the
// same sequence of calls with the same arguments, it makes the same
// decisions. The daemon, the simulator and the tests all drive this class.
//
// Lifecycle of a workload:
//   Submit -> Pending -> (Schedule) -> Admitted -> Finish
//                  ^                      |
//                  |        (preempted)   v
//                  +---- CompleteEviction <- Evicting
// An evicted workload keeps holding its quota until the caller reports that
// its pods are gone (`CompleteEviction`); the simulator does that at once,
// the daemon after the grace period. The preemptor waits meanwhile.
//
// Thread-safety: none. One thread drives an engine; many engines may live in
// one process (all names are interned per engine).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/placement/placement.h"
#include "core/quantity.h"
#include "core/status.h"

namespace artel::core {

// A workload's handle inside one engine: a dense index returned by `Submit`.
// Calls by handle skip the key lookup (the simulator and the daemon's hot
// paths use them). A handle stays valid until the workload is forgotten
// (`Forget`); a later submission may then get the same handle.
using WorkloadId = uint32_t;
inline constexpr WorkloadId kNoWorkload = UINT32_MAX;

enum class FairSharingStrategy { kLessThanOrEqualToFinalShare, kLessThanInitialShare };

struct EngineOptions {
  bool fair_sharing = false;
  std::vector<FairSharingStrategy> fair_sharing_strategies = {
      FairSharingStrategy::kLessThanOrEqualToFinalShare, FairSharingStrategy::kLessThanInitialShare};
  bool admission_fair_sharing = false;
  AdmissionFairSharingSpec afs;
  // true: one `Schedule` call runs Kueue cycles until nothing changes, with
  // incremental bookkeeping (Artel's multi-admission). false: one call runs
  // exactly one Kueue cycle (one head per ClusterQueue) from a fresh
  // snapshot; the reference the model-based test compares against.
  bool multi_admission = true;
  // true: before searching for preemption victims, check a necessary
  // condition (the request fits once every queue that could yield a usable
  // candidate gives up the most it could) and skip the search when it fails.
  // An exact shortcut: false is the reference the property tests compare.
  bool prune_preemption_search = true;
  // true: the victim search of classical preemption (quota only, without
  // Admission Fair Sharing) walks each ClusterQueue's admitted workloads in
  // candidate order, kept sorted per queue between changes, and merges the
  // queues lazily, so that a search touches about the victims it takes
  // instead of every admitted workload of the cohort. An exact shortcut:
  // false (collect every candidate, then order them) is the reference the
  // property tests compare.
  bool candidate_index = true;
  // true: at the start of a cycle, park at once the queued workloads of a
  // ClusterQueue that no cycle could admit before quota is released in its
  // cohort tree (the least any of them needs exceeds what the queue could
  // get), instead of trying them one head per cycle (docs/semantics.md §3,
  // step 5). An exact shortcut for admissions and
  // evictions: false is the reference the property tests compare.
  bool bulk_park = true;
  // true: a cycle that follows one whose only change was parking the heads
  // that could not be admitted (BestEffortFIFO) reuses that cycle's
  // nominations and outcomes for the heads that did not change, and
  // nominates only the next heads of the queues that parked one; when each
  // of those cannot be admitted either, the cycle is decided without
  // ordering or examining the others (they would do again what they did).
  // Without fair sharing, Admission Fair Sharing, nodes, reservations and
  // runtime protections. An exact shortcut (the same admissions, evictions,
  // reasons, cycles and decisions): false is the reference the property
  // tests compare.
  bool fast_rounds = true;
  // With nodes: true matches pods to nodes by labels (the admitted flavors'
  // nodeLabels and the pod sets' nodeSelector) and taints, as in a cluster,
  // and a flavor is a candidate for a pod set only where some node could
  // ever hold one of its pods (docs/semantics.md, "Flavors bound to nodes").
  // arteld uses true: it presents the host's GPUs as node pools
  // (server/inventory.h). false places by capacity and GPU shape only,
  // ignoring labels, and leaves flavor assignment quota-only.
  bool placement_matches_labels = true;
  // With nodes: true places only the workloads whose admitted flavors name a
  // Topology (ResourceFlavor spec.topologyName, Kueue's TAS); the others are
  // admitted by quota alone and left to the cluster's scheduler, as Kueue
  // does without TAS. Kubernetes mode uses true (docs/kubernetes.md, "Nodes
  // and topology"); false (arteld, the simulator) places every workload.
  bool place_topology_flavors_only = false;
  // Safety valve: the most cycles one `Schedule` call may run.
  int max_rounds = 1 << 20;
};

enum class WorkloadState { kPending, kAdmitted, kEvicting, kFinished };
const char* WorkloadStateName(WorkloadState s);

enum class EvictionReason {
  kInClusterQueue,
  kInCohortReclamation,
  kInCohortFairSharing,
  kInCohortReclaimWhileBorrowing,
  kClusterQueueStopped,  // stopPolicy HoldAndDrain on the ClusterQueue
  kLocalQueueStopped,    // stopPolicy HoldAndDrain on the LocalQueue
  kDeactivated,
  // Its maximum runtime elapsed (WorkloadSpec::max_runtime, or the
  // ClusterQueue's default or ceiling). Not a requeue: once its pods are
  // gone (CompleteEviction, or Finish) it is Finished and `failed`.
  kMaximumExecutionTimeExceeded,
  // A node its pods ran on was lost (deleted, or not ready past a grace);
  // requeued like a preemption (Kueue's NodeFailures). See Engine::Evict.
  kNodeFailures,
};
const char* EvictionReasonName(EvictionReason r);

// Where one pod of an admitted workload runs (with nodes configured).
struct PodPlacementInfo {
  std::string pod_set;
  std::string node;
  std::vector<std::string> gpus;  // whole GPUs: UUIDs
  std::vector<std::string> mig;   // MIG instances: "profile@start" (with `mig_uuids`)
  std::vector<std::string> mig_uuids;
  std::vector<std::string> mig_gpus;    // the UUID of the GPU each MIG instance is on
  std::vector<std::string> shares;      // memory shares: "gpuIndex:memMiB:cores%"
  std::vector<std::string> share_gpus;  // the UUID of the GPU each share is on
  std::string visible_devices;          // CUDA_VISIBLE_DEVICES value
};

struct PodSetAssignment {
  std::string name;
  int32_t count = 0;                             // admitted pods (< spec count under partial admission)
  std::map<std::string, std::string> flavors;    // resource -> flavor
  std::map<std::string, Amount> resource_usage;  // resource -> total over `count` pods
};

// One flavor tried for a pending workload (Engine::Why), in the order tried.
struct FlavorAttempt {
  enum class Outcome {
    kFits,              // fits now (another pod set or resource group holds it back)
    kFitsByPreempting,  // fits after preempting workloads the policy allows
    kNoCandidates,      // short now, and no workload may be preempted for it
    kShort,             // short now; could fit when quota is released
    kNeverFits,         // the request exceeds the most the queue can ever get here
    kExcluded,          // taints, node labels or the topology rule it out
  };
  std::string flavor;
  std::string pod_set;
  Outcome outcome = Outcome::kShort;
  std::string resource;      // the resource that does not fit (empty for kFits*, kExcluded)
  Amount requested = 0;      // of `resource`, in this flavor
  Amount available = 0;      // unused now
  Amount max_available = 0;  // the most the queue can ever get (own quota plus what it may borrow)
  std::string level;         // the quota-tree node that limits
  std::string message;       // one clause: "flavor a100: ..."
};
const char* FlavorAttemptOutcomeName(FlavorAttempt::Outcome o);

// Why a workload is pending. Machine-readable, with a one-line `message`.
struct PendingReason {
  enum class Kind {
    kNone,         // not pending
    kNotYetTried,  // submitted, no cycle ran since
    kLocalQueueMissing,
    kClusterQueueMissing,
    kNamespaceNotAllowed,  // namespaceSelector does not match
    kStopped,              // ClusterQueue or LocalQueue is held
    kInactive,             // spec.active = false
    kNoFlavor,             // no flavor covers a resource, or taints/labels exclude all
    kInsufficientQuota,    // does not fit and preemption cannot help
    kPreemptionNoCandidates,
    kWaitingForEvictions,      // preemption issued; waiting for victims to go
    kResourceQuotaExceeded,    // namespace ResourceQuota hard cap
    kBlockedByStrictFIFO,      // behind a StrictFIFO head
    kReservedByOther,          // capacity held back this cycle for a higher entry
    kInadmissibleUntilChange,  // parked (BestEffortFIFO) after a failed attempt
    kBlockedByReservation,     // fits, but would delay another workload's reservation
    kUnschedulable,            // quota fits, but the pods do not fit on the nodes now
    kInfeasible,               // the pods can never fit on these nodes
    // Keep kInfeasible last: readers iterate up to it.
  };
  Kind kind = Kind::kNone;
  std::string cluster_queue;
  std::string pod_set;
  std::string flavor;                      // the flavor that came closest
  std::string resource;                    // the blocking resource
  std::string level;                       // the quota-tree node that blocks (ClusterQueue or cohort name)
  Amount requested = 0;                    // this workload's demand of `resource` in `flavor`
  Amount available = 0;                    // what the tree can give now
  Amount missing = 0;                      // requested - available, when positive
  std::vector<std::string> would_preempt;  // "ns/name" of the workloads preemption would need
  // Set by Engine::Why only: every flavor tried for the pod set and resource
  // group that hold the workload back; the headline fields above come from
  // the one that came closest.
  std::vector<FlavorAttempt> flavors;
  std::string message;  // one line for humans
};
const char* PendingReasonKindName(PendingReason::Kind k);

struct Eviction {
  std::string victim;  // "ns/name"
  WorkloadId victim_id = kNoWorkload;
  WorkloadId preemptor_id = kNoWorkload;  // kNoWorkload for stop-policy evictions
  std::string victim_cluster_queue;
  EvictionReason reason = EvictionReason::kInClusterQueue;
  std::string preemptor;  // "ns/name"; empty for stop-policy evictions
  std::string preemptor_cluster_queue;
  std::string message;
  Time at = 0;
};

struct WorkloadInfo {
  std::string key;  // "ns/name"
  WorkloadId id = kNoWorkload;
  WorkloadSpec spec;
  int32_t priority = 0;
  std::string cluster_queue;  // resolved; empty if the LocalQueue is missing
  WorkloadState state = WorkloadState::kPending;
  std::vector<PodSetAssignment> admission;   // valid when Admitted or Evicting
  std::vector<PodPlacementInfo> placements;  // with nodes: one per admitted pod
  // Valid when Pending; read it as `pending->kind`. Boxed (core/boxed.h):
  // the engine builds it when the workload is read, so that a pending
  // workload nobody has looked at keeps only its kind (issue 17 §3).
  Boxed<PendingReason> pending;
  Time created = 0;
  Time queued_at =
      0;  // submission time; kept across evictions (a requeued workload keeps its place, as in Kueue)
  Time admitted_at = -1;
  // Admission order: a number from one counter, higher for each admission
  // (also for admissions made at the same instant). Kept by Restore when
  // given, so that the preemption tie-break survives a restart.
  uint64_t admission_seq = 0;
  int32_t evictions = 0;
  // The latest eviction, null until the first one; shared and immutable so
  // that a workload costs 16 bytes here instead of a whole Eviction.
  std::shared_ptr<const Eviction> last_eviction;
  uint64_t uid = 0;  // submission sequence; final FIFO tie-break
  // Execution time of its earlier admissions, up to each eviction (Kueue
  // status.accumulatedPastExecutionTimeSeconds); the current admission's
  // time is `now - admitted_at` on top.
  Time used_time = 0;
  // The maximum runtime in force (spec, else the ClusterQueue's default, cut
  // to its ceiling); unset = none. Resolved with the ClusterQueue.
  std::optional<Time> max_runtime;
  // Finished by the engine as Failed (the maximum runtime elapsed), with
  // the reason; false for a workload its caller finished.
  bool failed = false;
  std::string failure;
};

struct CycleResult {
  std::vector<std::string> admitted;     // in decision order
  std::vector<WorkloadId> admitted_ids;  // the same workloads' handles, in the same order
  std::vector<Eviction> evictions;       // preemptions and drains issued
  int rounds = 0;                        // Kueue cycles run
  bool changed = false;                  // anything admitted, evicted or requeued
  int64_t decisions = 0;                 // workloads admitted or found inadmissible
};

// Usage of one (flavor, resource) at one node of the quota tree.
struct QuotaUsage {
  std::string node;  // ClusterQueue or cohort name
  bool is_cohort = false;
  std::string flavor;
  std::string resource;
  Amount nominal = 0;  // own nominalQuota
  Amount subtree_quota = 0;
  Amount usage = 0;     // admitted (and evicting) usage in the subtree
  Amount borrowed = 0;  // max(0, usage - subtree_quota)
  std::optional<Amount> borrowing_limit;
  std::optional<Amount> lending_limit;
};

class EngineImpl;

class Engine {
 public:
  explicit Engine(EngineOptions options = {});
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Replaces the whole configuration. Validates references (a LocalQueue's
  // ClusterQueue, a ClusterQueue's flavors, cohort parents and cycles) and
  // returns the first problem without changing anything. Existing workloads
  // are kept; admitted ones keep their quota even if it now exceeds the
  // limits (as in Kueue), and pending ones are re-resolved.
  Status Configure(const Config& config);
  const Config& config() const;

  // Adds a pending workload. Fails on a duplicate "ns/name" or an invalid
  // spec (no pod sets, count < 1, minCount > count, negative requests,
  // unknown priority class). A missing LocalQueue is not an error: the
  // workload waits with that reason, as in Kueue. Returns the workload's
  // handle. Pass an rvalue to move the spec in instead of copying it.
  Result<WorkloadId> Submit(WorkloadSpec spec, Time now);

  // The workload's pods finished; its quota is released.
  // REQUIRES: the workload is Admitted or Evicting.
  Status Finish(const std::string& key, Time now);
  Status Finish(WorkloadId id, Time now);

  // Drops a Finished (or cancelled) workload from the engine: its key may be
  // submitted again and its handle may be reused. Without it the engine keeps
  // every finished workload for queries, as arteld does for its API.
  // REQUIRES: the workload is Finished.
  Status Forget(WorkloadId id);

  // Removes the workload whatever its state; its quota is released.
  Status Cancel(const std::string& key, Time now);

  // An evicted workload's pods are gone: release its quota and requeue it.
  // REQUIRES: the workload is Evicting.
  Status CompleteEviction(const std::string& key, Time now);
  Status CompleteEviction(WorkloadId id, Time now);

  // Recovery: puts a pending workload back into the admitted state with the
  // admission it had before a restart (flavors and counts per pod set),
  // without running a cycle. Fails if the ClusterQueue or a flavor is gone;
  // the caller then leaves the workload pending. Quota limits are not
  // re-checked: what was admitted stays admitted, as in Kueue.
  // With nodes (SetNodes), the pods must hold their place too: `placed` is
  // the placement the workload had (see `Placement`), committed as is; when
  // null, the pods are placed anew. Fails, changing nothing, when the
  // placement no longer fits the nodes.
  // REQUIRES: the workload is Pending.
  // `admission_seq` is the workload's WorkloadInfo::admission_seq before the
  // restart (0 = unknown: the next number is taken, so restoring in
  // admission order keeps the order).
  Status Restore(const std::string& key, const std::string& cluster_queue,
                 const std::vector<PodSetAssignment>& admission, Time admitted_at,
                 const placement::Placement* placed = nullptr, uint64_t admission_seq = 0);

  // Sets the time a workload ran in its earlier admissions
  // (WorkloadInfo::used_time, counted against its maximum runtime), as a
  // caller that persists it (arteld's journal) knew it before a restart.
  // Call it after Submit and before Restore.
  // REQUIRES: the workload is Pending; `used` >= 0.
  Status RestoreUsedTime(const std::string& key, Time used);

  // Evicts an admitted workload for a reason the caller observed (only
  // kNodeFailures is accepted): reported by the next `Schedule` call, then
  // as any eviction (CompleteEviction requeues it). No-op for a workload
  // that is not Admitted.
  Status Evict(const std::string& key, EvictionReason reason, const std::string& message, Time now);

  // Restore (above) for a workload whose pods were placed by node name (a
  // Kueue topologyAssignment read back): `nodes[i]` lists, for pod set i,
  // (node, pod count) pairs. The pods are placed anew on exactly those nodes
  // and counts; fails, changing nothing, when they no longer fit there, or
  // when the counts do not add up to the admitted counts (InvalidArgument).
  Status RestoreOnNodes(const std::string& key, const std::string& cluster_queue,
                        const std::vector<PodSetAssignment>& admission, Time admitted_at,
                        const std::vector<std::vector<std::pair<std::string, int32_t>>>& nodes,
                        uint64_t admission_seq = 0);

  // Incremental node changes (cheaper than SetNodes, which rebuilds the
  // placement state): a new node; a node's readiness (a node not ready keeps
  // its pods and takes no new ones). Both fail, changing nothing, on an
  // unknown or duplicate name. A removed node or one whose labels, taints or
  // capacity changed goes through SetNodes.
  Status AddNode(placement::NodeSpec node);
  Status SetNodeReady(const std::string& name, bool ready);
  // The nodes as last set (SetNodes, AddNode, SetNodeReady).
  const std::vector<placement::NodeSpec>& nodes() const;

  // Replaces the nodes pods are placed on (issue 3). Without nodes (the
  // default) admission is quota-only, as in Kueue without TAS. With nodes,
  // a workload is admitted only when all its admitted pods are placed in the
  // same decision (all or nothing); otherwise its quota reservation is rolled
  // back and it waits with reason Unschedulable or Infeasible. Placements of
  // admitted workloads are re-committed on the new nodes where they still
  // fit. Topologies come from the configuration's Topology objects.
  Status SetNodes(std::vector<placement::NodeSpec> nodes);
  // The placement state; nullptr without nodes.
  const placement::Cluster* cluster() const;

  // Sets spec.active; deactivating an admitted workload evicts it.
  Status SetActive(const std::string& key, bool active, Time now);

  // Runs scheduling (see `EngineOptions::multi_admission`). First stops
  // every admitted workload whose maximum runtime has elapsed at `now`
  // (eviction reason MaximumExecutionTimeExceeded, reported in the result).
  CycleResult Schedule(Time now);

  // The earliest time after which a `Schedule` call may decide something
  // that no other call triggers (a maximum runtime running out); nullopt
  // when there is none. Event-driven callers (the simulator, `artel test`)
  // call Schedule at that time.
  std::optional<Time> NextTimedEvent() const;

  // Reservations in force (docs/semantics.md §11): per quota tree, at most
  // one pending workload for which quota is held back from backfill.
  struct ReservationInfo {
    std::string workload;  // "ns/name"
    std::string cluster_queue;
    Time start = 0;                    // when its quota is expected to be free
    std::vector<std::string> holders;  // running workloads whose end frees it, in end order
    std::vector<std::string> nodes;    // with nodes: where it is expected to be placed
  };
  std::vector<ReservationInfo> Reservations() const;

  // Queries. Pointers stay valid until the next mutating call.
  const WorkloadInfo* Find(const std::string& key) const;
  // By handle; nullptr for an unknown or forgotten handle.
  const WorkloadInfo* Get(WorkloadId id) const;
  // The placement an admitted workload holds on the nodes (to persist it and
  // hand it back to `Restore`); nullptr without nodes or without one.
  const placement::Placement* Placement(const std::string& key) const;

  // The pending reason of a workload, completed with a hypothetical answer
  // to "what would have to be preempted": for a workload blocked by quota,
  // the smallest set (in candidate order, ignoring the queue's preemption
  // policy) of admitted workloads of its cohort tree whose removal would let
  // it fit. Costs O(admitted workloads in the tree); meant for `why`.
  // Returns NotFound for an unknown key; kind None for a non-pending one.
  Result<PendingReason> Why(const std::string& key) const;
  // Every live workload, in submission order. Without `with_reasons` the
  // pending reasons are not built (Get and Find build them): `pending` may
  // then be absent or out of date, so read the kind with PendingKind. For
  // scans that count or look at states, this spares building a message for
  // every pending workload and keeps their reasons off the heap.
  std::vector<const WorkloadInfo*> Workloads(bool with_reasons = true) const;
  // The kind of a workload's pending reason (kNone when it is not pending or
  // unknown), without building the reason.
  PendingReason::Kind PendingKind(WorkloadId id) const;
  std::vector<QuotaUsage> Usage() const;  // every node x flavor x resource
  // Dominant resource share (x1000, as Kueue reports it: the exact share
  // rounded up) of a ClusterQueue or cohort; -1 for infinity (weight 0 while
  // borrowing). Decisions compare the exact shares.
  int64_t DominantResourceShare(const std::string& node) const;
  size_t PendingCount() const;
  size_t AdmittedCount() const;
  // For tests: recounts the workloads parked in place in every queue and
  // compares with the counters the cycles use (ClusterQueue active counts,
  // per-tree and total parked counts); empty when they agree, else what
  // differs.
  std::string CheckParkingCounts() const;

  const EngineOptions& options() const;

 private:
  std::unique_ptr<EngineImpl> impl_;
};

}  // namespace artel::core
