// EngineImpl: the internal state of an `Engine` (core/engine.h).
//
// Internal header: only src/core includes it. The policies (flavor
// assignment, preemption, fair sharing) are free functions declared in their
// own headers (flavor_assigner.h, preemption.h, fair_sharing.h) that read and
// temporarily modify this state; they restore every simulated change before
// returning.
//
// Thread-safety: none.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/engine.h"
#include "core/id.h"
#include "core/placement/placement.h"
#include "core/quota_tree.h"
#include "core/resource_names.h"

namespace artel::core {

// Interns strings into dense ids, per engine.
class Interner {
 public:
  int32_t Intern(const std::string& s) {
    auto it = ids_.find(s);
    if (it != ids_.end()) return it->second;
    int32_t id = static_cast<int32_t>(names_.size());
    names_.push_back(s);
    ids_.emplace(s, id);
    return id;
  }
  int32_t Find(const std::string& s) const {
    auto it = ids_.find(s);
    return it == ids_.end() ? -1 : it->second;
  }
  const std::string& Name(int32_t id) const { return names_[id]; }
  size_t size() const { return names_.size(); }

 private:
  std::unordered_map<std::string, int32_t> ids_;
  std::vector<std::string> names_;
};

// Requests that describe how to slice a GPU rather than an amount of quota:
// placement reads them; quota ignores them unless a resource group covers them.
inline bool IsSlicingHint(const std::string& name) {
  return name == kGpuMemoryNeed || name == kGpuComputeNeed || name == kHamiGpuMemory ||
         name == kHamiGpuMemoryPercent || name == kHamiGpuCores;
}

// Namespace ids index EngineImpl::nss (core/id.h).
using NamespaceId = Id<struct NamespaceTag>;

using WlId = WorkloadId;
inline constexpr WlId kNoWl = kNoWorkload;

// A vector whose elements never move: storage grows by fixed-size chunks, so
// growing never copies the (large) elements already stored and references
// stay valid. Indexing is one shift and one mask.
template <typename T, size_t kChunkBits = 10>
class StableVector {
 public:
  static constexpr size_t kChunk = size_t{1} << kChunkBits;
  T& operator[](size_t i) { return (*chunks_[i >> kChunkBits])[i & (kChunk - 1)]; }
  const T& operator[](size_t i) const { return (*chunks_[i >> kChunkBits])[i & (kChunk - 1)]; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T& push_back(T&& v) {
    if ((size_ & (kChunk - 1)) == 0 && (size_ >> kChunkBits) == chunks_.size()) {
      chunks_.push_back(std::make_unique<std::vector<T>>());
      chunks_.back()->reserve(kChunk);
    }
    std::vector<T>& c = *chunks_[size_ >> kChunkBits];
    c.push_back(std::move(v));
    ++size_;
    return c.back();
  }

  template <typename V, typename Self>
  class Iter {
   public:
    Iter(Self* v, size_t i) : v_(v), i_(i) {}
    V& operator*() const { return (*v_)[i_]; }
    Iter& operator++() {
      ++i_;
      return *this;
    }
    bool operator!=(const Iter& o) const { return i_ != o.i_; }

   private:
    Self* v_;
    size_t i_;
  };
  Iter<T, StableVector> begin() { return {this, 0}; }
  Iter<T, StableVector> end() { return {this, size_}; }
  Iter<const T, const StableVector> begin() const { return {this, 0}; }
  Iter<const T, const StableVector> end() const { return {this, size_}; }

 private:
  std::vector<std::unique_ptr<std::vector<T>>> chunks_;
  size_t size_ = 0;
};

struct PodSetReq {
  int32_t count = 1;
  int32_t min_count = 1;
  // GPU quota a pod takes through slicing hints alone (KAI gpu-fraction,
  // HAMi gpumem without nvidia.com/gpu, an artel.dev/gpu-memory need), in
  // milli-GPUs; 0 when the pod requests nvidia.com/gpu itself.
  Amount implicit_gpu = 0;
  std::vector<int32_t> hint_res;                    // slicing-hint resources it requests (> 0), ids
  std::vector<std::pair<int32_t, Amount>> per_pod;  // (resource id, amount), sorted
};

// Calls fn(resource id, amount per pod) for each request of a pod set, plus
// one `pods` per pod when `pods_res` >= 0 (the queue covers `pods`; an
// explicit `pods` request is replaced, as Kueue does), plus the implicit GPU
// charge as `gpu_res` when `gpu_res` >= 0.
template <typename F>
void ForEachPerPod(const PodSetReq& ps, int32_t pods_res, int32_t gpu_res, F&& fn) {
  for (const auto& [res, per_pod] : ps.per_pod) {
    if (res != pods_res) fn(res, per_pod);
  }
  if (pods_res >= 0) fn(pods_res, Amount{1000});
  if (gpu_res >= 0 && ps.implicit_gpu > 0) fn(gpu_res, ps.implicit_gpu);
}

// Ordering key inside a LocalQueue: priority descending, queue time, uid.
struct QueueKey {
  int32_t neg_priority;
  Time queued_at;
  uint64_t uid;
  WlId id;
  // Not part of the order: the root epoch the workload is parked in place
  // under (0 = not parked); mirrors Wl::park_epoch so that scanning a heap
  // does not touch the workloads.
  mutable uint64_t park_epoch = 0;
  // Not part of the order: EngineImpl::enqueue_counter when it entered the
  // heap; entries below CqRt::bulk_seq are parked in bulk (see BulkPark).
  uint64_t enq_seq = 0;
  bool operator<(const QueueKey& o) const {
    if (neg_priority != o.neg_priority) return neg_priority < o.neg_priority;
    if (queued_at != o.queued_at) return queued_at < o.queued_at;
    return uid < o.uid;
  }
};

// The most limiting spot of a failed flavor assignment, as ids. The names in
// `PendingReason` are built from it only when someone reads the reason.
struct ReasonRef {
  int32_t pod_set = -1;   // index into the workload's pod sets
  int32_t flavor = -1;    // flavor id
  int32_t resource = -1;  // resource id; >= 0 when set
  int32_t level = -1;     // quota-tree node that blocks
  Amount requested = 0;
  Amount available = 0;
  Amount missing = 0;
  bool set() const { return resource >= 0; }
};

struct Wl {
  WorkloadInfo info;
  std::vector<PodSetReq> pod_sets;
  NamespaceId ns;                                    // namespace id
  int32_t lq = -1;                                   // LocalQueue index; -1 = unresolved
  int32_t cq = -1;                                   // ClusterQueue index; -1 = unresolved
  FrAmounts usage;                                   // held while Admitted or Evicting
  std::vector<std::pair<int32_t, Amount>> ns_usage;  // per resource, for ResourceQuota
  bool in_heap = false;
  bool parked = false;
  bool listed = false;  // in a parked list (NsRt::parked, parked_placement)
  // Parked in place (BestEffortFIFO, inadmissible until its cohort tree
  // changes): stays in its LocalQueue's heap but is not a head while
  // park_epoch == EngineImpl::root_epoch[park_root]. Releasing quota in the
  // tree bumps the epoch, which unparks every such workload at once.
  bool soft_parked = false;
  int32_t park_root = -1;
  uint64_t park_epoch = 0;
  std::set<QueueKey>::iterator heap_it;  // valid while in_heap
  uint64_t enq_seq = 0;                  // QueueKey::enq_seq of its heap entry
  // EngineImpl::bulk_counter when a cycle last examined it (its pending
  // reason is from then); older than CqRt::bulk_stamp while parked in bulk.
  uint64_t reason_stamp = 0;
  // While in a heap: (resource id, the least it can be admitted with), per
  // resource it requests in its ClusterQueue (CqRt::min_req).
  std::vector<std::pair<int32_t, Amount>> min_req;
  bool reason_stale = false;  // parked by BulkPark's head skip without an examination
  bool forgotten = false;     // slot free for reuse (Engine::Forget)
  bool requeued = false;      // NotYetTried after an eviction (message wording)
  uint64_t victim_stamp = 0;  // == EngineImpl::round_stamp: chosen as a victim in this round
  bool waiting_preemption = false;
  bool msg_dirty = false;  // pending.message is built on read (Materialize)
  bool ref_dirty = false;  // pending's names and amounts come from `pending_ref` on read
  ReasonRef pending_ref;
  uint64_t admit_seq = 0;
  int32_t admitted_pos = -1;  // index in CqRt::admitted
  bool has_placement = false;
  std::unique_ptr<placement::Placement>
      placement;  // with has_placement; committed in EngineImpl::cluster under info.key
  Time run_started = 0;
  // While Admitted with a maximum runtime: when it runs out (the key of its
  // entry in EngineImpl::expiries); -1 otherwise.
  Time expiry = -1;
  // When the last nomination skipped preemption candidates protected by a
  // minimum runtime (or was itself held by its preemption delay): the
  // earliest time that changes; -1 when nothing was skipped.
  Time protected_until = -1;
  bool delay_held = false;  // protected_until is its own preemption delay
  // The start its reservation would have had when that lay beyond its
  // ClusterQueue's backfill window (so it has none); -1 otherwise.
  Time beyond_window = -1;
  // Static node feasibility per (pod set, flavor id), index pod_set *
  // flavors.size() + flavor: 1 = some node of the flavor can hold one pod,
  // 0 = none (`node_why` says why), -1 = not known yet. Valid while
  // node_fit_gen == EngineImpl::nodes_gen (flavor_assigner.cc NodesExclude).
  uint64_t node_fit_gen = 0;
  std::vector<int8_t> node_fit;
  std::vector<std::string> node_why;
};

struct FlavorRt {
  std::string name;
  const ResourceFlavorSpec* spec = nullptr;
};

struct GroupRt {
  std::vector<int32_t> resources;  // resource ids
  std::vector<int32_t> flavors;    // flavor ids, in order
};

struct Target {
  WlId id;
  EvictionReason reason;
  bool nodes = false;  // chosen to free node capacity (PlacementTargets)
};

// A memoised preemption answer, valid while `EngineImpl::state_gen` is
// unchanged (no usage, eviction or configuration change since).
struct TargetMemo {
  uint64_t gen = 0;
  uint64_t overlay = 0;
  int32_t priority = 0;
  Time queued_at = 0;
  uint64_t uid = 0;
  FrAmounts request;
  std::vector<Target> targets;
  Time protect_min = -1;  // EngineImpl::protect_min the search left
};

struct CqRt {
  std::string name;
  int32_t node = -1;  // QuotaTree node
  const ClusterQueueSpec* spec = nullptr;
  std::vector<GroupRt> groups;
  std::vector<int32_t> group_of_res;  // resource id -> group index, -1 = none (may be shorter)
  // The id of `pods` when a resource group covers it: each pod set then
  // requests one `pods` per pod (Kueue's FlavorAssigner.Assign).
  int32_t pods_res = -1;
  // The id of nvidia.com/gpu when a group covers it: where GPU slices are
  // charged (EngineImpl::ImplicitGpuRes).
  int32_t gpu_res = -1;
  // Every flavor of every resource group has a topology (Kueue: a pod set
  // without a topology request is then placed with an implied one).
  bool all_tas = false;
  bool drain_possible = false;  // HoldAndDrain on itself or one of its LocalQueues
  std::vector<int32_t> lqs;
  int32_t queued = 0;    // workloads in the heaps of its LocalQueues
  int32_t root = -1;     // quota-tree root
  int32_t parked_n = 0;  // of those, parked in place under epoch parked_epoch
  uint64_t parked_epoch = 0;
  std::vector<WlId> admitted;  // Admitted and Evicting
  WlId sticky = kNoWl;
  bool held = false;             // Hold or HoldAndDrain
  std::vector<TargetMemo> memo;  // small ring, see GetTargets
  size_t memo_next = 0;
  // Parking in bulk (EngineImpl::BulkPark): while bulk_epoch is the root's
  // epoch, every heap entry with enq_seq < bulk_seq is parked in place.
  uint64_t bulk_epoch = 0;
  uint64_t bulk_seq = 0;
  uint64_t bulk_stamp = 0;  // EngineImpl::bulk_counter at the last bulk park
  // Per resource id: the least amount each queued workload can be admitted
  // with (Wl::min_req); a queued workload missing from a set requests none.
  std::vector<std::multiset<Amount>> min_req;
};

struct LqRt {
  std::string ns, name;
  NamespaceId ns_id;
  int32_t cq = -1;
  const LocalQueueSpec* spec = nullptr;
  std::set<QueueKey> heap;
  int32_t root = -1;  // quota-tree root of its ClusterQueue; -1 without one
  // Every entry before `skip` is soft-parked under epoch `skip_epoch`; valid
  // while that is the root's epoch (see EngineImpl::FirstActive).
  std::set<QueueKey>::iterator skip;
  uint64_t skip_epoch = 0;
  bool skip_valid = false;
  // Admission Fair Sharing state, per resource id.
  std::vector<double> afs_consumed;
  std::vector<double> afs_penalty;
  Time afs_last_sample = 0;
  bool afs_sampled = false;
  std::vector<Amount> current_usage;  // per resource id: admitted usage now
};

struct NsRt {
  std::string name;
  std::map<std::string, std::string> labels;
  std::vector<std::pair<int32_t, Amount>> hard;  // ResourceQuota caps per resource id (summed min)
  std::vector<Amount> usage;                     // per resource id
  std::vector<WlId> parked;                      // blocked by ResourceQuota
};

enum class Mode : int8_t { kNoFit = 0, kNoCandidates = 1, kPreempt = 2, kReclaim = 3, kFit = 4 };

struct PodSetAssign {
  int32_t count = 0;
  std::vector<std::pair<int32_t, int32_t>> flavors;  // (resource id, flavor id)
};

// The outcome of flavor assignment for one workload.
struct Assignment {
  Mode mode = Mode::kNoFit;
  int32_t borrow_level = 0;
  std::vector<PodSetAssign> pod_sets;
  FrAmounts usage;  // total over all pod sets, sorted by fr
  // Explanation of the most limiting spot: kNoFlavor or kInfeasible (no
  // flavor's nodes can ever hold a pod; both with `message`),
  // kInsufficientQuota, or kNone with `ref` possibly set (a flavor that
  // needs preemption).
  PendingReason::Kind kind = PendingReason::Kind::kNone;
  ReasonRef ref;
  std::string message;
};

// One request of a pod set, with the resource group that covers it.
struct GroupReq {
  int32_t group;
  int32_t resource;
  Amount total;
};

// One ClusterQueue head nominated in a cycle.
struct Entry {
  WlId wl;
  int32_t cq;
  Assignment assignment;
  std::vector<Target> targets;
};

// The order a cycle tries its entries in (core/admission_order.h).
class AdmissionOrder;

class EngineImpl {
 public:
  explicit EngineImpl(EngineOptions o);  // engine.cc
  ~EngineImpl();

  EngineOptions opts;
  std::unique_ptr<AdmissionOrder> admission_order;  // made from opts
  Config config;
  Interner resources, flavors_by_name, namespaces;
  std::vector<FlavorRt> flavors;
  QuotaTree tree;
  std::vector<CqRt> cqs;
  std::unordered_map<std::string, int32_t> cq_index;
  std::unordered_map<std::string, int32_t> cohort_node;  // cohort name -> tree node
  std::vector<int32_t> cq_of_node;                       // tree node -> cq index, -1 for cohorts
  std::vector<LqRt> lqs;
  std::unordered_map<std::string, int32_t> lq_index;  // "ns/name"
  IdVector<NamespaceId, NsRt> nss;
  // Per namespace id: (LocalQueue name, index), to resolve without building keys.
  IdVector<NamespaceId, std::vector<std::pair<std::string, int32_t>>> lqs_of_ns;
  std::unordered_map<std::string, int32_t> priority_classes;

  StableVector<Wl> wls;
  std::unordered_map<std::string, WlId> wl_index;
  std::vector<WlId> free_ids;                  // forgotten slots, reused by Submit
  bool reused_slots = false;                   // a slot was reused: slot order is no longer submission order
  size_t queued_count = 0;                     // workloads in any LocalQueue heap
  bool any_drain = false;                      // some ClusterQueue has drain_possible
  std::vector<std::vector<int32_t>> root_cqs;  // per tree node (roots used): cq indices
  std::vector<uint64_t> root_epoch;            // per tree node (roots used): bumped by Unpark
  std::vector<int64_t> root_parked;            // per tree node: soft-parked workloads under the current epoch
  int64_t parked_total = 0;                    // sum of root_parked
  uint64_t epoch_counter = 0;
  uint64_t enqueue_counter = 0;                       // QueueKey::enq_seq
  uint64_t bulk_counter = 0;                          // CqRt::bulk_stamp, Wl::reason_stamp
  bool any_resource_quota = false;                    // the configuration has ResourceQuotas
  std::vector<std::pair<int32_t, Amount>> bulk_caps;  // BulkPark scratch: (resource, BulkCap)
  std::vector<WlId> orphans;                          // unresolved queue / namespace / inactive
  uint64_t next_uid = 1;
  size_t sized_resources = 0;
  uint64_t state_gen = 1;  // bumped on every committed change that can alter preemption answers
  // Non-zero while cycle-only usage (preemptors waiting, reservations) is in
  // the tree; unique per overlay so memoised answers never leak across.
  uint64_t overlay_gen = 0;
  uint64_t overlay_counter = 0;  // resources.size() the per-resource arrays were last sized for
  uint64_t next_admit_seq = 1;
  size_t pending_count = 0, admitted_count = 0;
  std::vector<Eviction> pending_evictions;  // drains issued outside Schedule
  // Admitted workloads with a maximum runtime, by when it runs out.
  std::set<std::pair<Time, WlId>> expiries;
  // Minimum runtime and preemption delay (docs/semantics.md §11).
  Time now = 0;                 // of the Schedule call in progress (or the last)
  bool any_protection = false;  // some queue or class sets a minimum runtime or delay
  struct ClassLimits {
    std::optional<Time> min_runtime, reclaim_min_runtime;
  };
  std::unordered_map<std::string, ClassLimits> class_limits;  // priority classes that set any
  // While a nomination runs: the earliest end of a protection it skipped.
  Time protect_min = -1;
  bool protect_delay = false;
  // (time, quota-tree root): a protection skipped by a parked workload ends;
  // the tree's parked workloads are retried then.
  std::set<std::pair<Time, int32_t>> protect_wakeups;
  // Reservations (docs/semantics.md §11), at most one per quota-tree root.
  struct Reservation {
    WlId wl = kNoWl;
    int32_t cq = -1;
    int32_t root = -1;
    Time start = 0;
    FrAmounts usage;            // the assignment that fits once the holders are gone
    std::vector<WlId> holders;  // admitted workloads whose end frees it, in end order
    // With nodes: the gang placed at the start (on the nodes with the
    // holders gone) and the nodes that placement used, by name.
    bool nodes = false;
    placement::GangRequest gang;
    std::vector<std::string> node_names;
  };
  std::vector<Reservation> reservations;
  bool any_reservation_config = false;

  // Placement (issue 3): null without nodes.
  std::vector<placement::NodeSpec> node_specs;
  std::unique_ptr<placement::Cluster> cluster;
  std::vector<WlId> parked_placement;  // waiting for node capacity
  // Flavors bound to nodes (with nodes and placement_matches_labels), built
  // by RebuildCluster, so once per configuration or nodes change: per flavor
  // id, the ready nodes (Cluster indices) whose labels carry every one of the
  // flavor's nodeLabels, and, when there is none, why (flavor_nodes_why).
  std::vector<std::vector<int32_t>> flavor_nodes;
  std::vector<std::string> flavor_nodes_why;
  // Set by Engine::RestoreOnNodes for the Restore it makes: per pod set,
  // the (node, count) pairs to place the pods on.
  const std::vector<std::vector<std::pair<std::string, int32_t>>>* restore_pins = nullptr;
  uint64_t nodes_gen = 1;  // bumped by RebuildCluster; invalidates Wl::node_fit

  // --- helpers shared by the policies (engine_*.cc) ---
  std::string Key(WlId id) const { return wls[id].info.key; }
  NamespaceId NsId(const std::string& ns);
  void AdmitUsage(WlId id);
  void ReleaseUsage(WlId id);
  void Enqueue(WlId id);
  void Dequeue(WlId id);
  void Unpark(int32_t root);
  // Parked in place: on its own (SoftPark) or in bulk (BulkPark).
  bool SoftParked(const Wl& w) const {
    if (w.soft_parked && w.park_epoch == root_epoch[w.park_root]) return true;
    if (!w.in_heap || w.lq < 0 || lqs[w.lq].cq < 0) return false;
    const CqRt& cq = cqs[lqs[w.lq].cq];
    return cq.root >= 0 && cq.bulk_epoch == root_epoch[cq.root] && w.enq_seq < cq.bulk_seq;
  }
  // Parks in bulk, without examining them, the queued workloads that no
  // cycle before the next release in their cohort tree could admit
  // (docs/semantics.md §3, step 5); returns how many it parked.
  int64_t BulkPark();
  // True when no workload queued in ClusterQueue `c` could be admitted or
  // preempt for in the current state, nor in any tighter one.
  bool AllQueuedFail(int32_t c) const;
  // What ClusterQueue `c` could get of resource `res` now (AllQueuedFail's bound).
  Amount BulkCap(int32_t c, int32_t res) const;
  // True when the pending reason of `id` predates a bulk park that covered it.
  bool ReasonStale(WlId id) const;
  void SoftPark(WlId id, int32_t root);
  // The first entry of a LocalQueue's heap that is not soft-parked, or null.
  const QueueKey* FirstActive(int32_t lq);
  // Queued workloads of a ClusterQueue that are not parked in place.
  int32_t ActiveQueued(const CqRt& cq) const {
    return cq.queued - (cq.parked_epoch == root_epoch[cq.root] ? cq.parked_n : 0);
  }
  void Resolve(WlId id);
  WlId Head(int32_t cq);
  double AfsUsage(int32_t lq) const;
  void AfsSample(Time now);
  Status ApplyConfig(const Config& c);
  void Evict(WlId id, EvictionReason reason, WlId preemptor, Time now, std::vector<Eviction>* out,
             const std::string& msg);
  bool RunRound(Time now, CycleResult* result, bool fresh_snapshot);
  void RebuildUsage();
  void Materialize(WlId id);
  Status RebuildCluster();
  // Fills flavor_nodes / flavor_nodes_why from the cluster (RebuildCluster).
  void BindFlavorsToNodes();
  // Places every admitted pod of `id` per assignment `a`; on success commits
  // and records the placement. Returns the placement outcome.
  placement::PlaceResult PlaceWorkload(WlId id, const Assignment& a);
  // With nodes: whether pods of flavor `f` are placed on them
  // (EngineOptions::place_topology_flavors_only), and whether assignment `a`
  // is (some flavor of it is).
  bool FlavorPlaced(int32_t f) const;
  bool Placed(const Assignment& a) const;
  // The gang request PlaceWorkload places: `g` is filled and the result is
  // kPlaced (an empty placement), or kInfeasible with the reason.
  placement::PlaceResult BuildGang(WlId id, const Assignment& a, placement::GangRequest& g) const;
  void ReleasePlacement(WlId id);
  // Rebuilds info.placements (names, UUIDs) from the committed placement.
  void FillPlacementInfo(WlId id);
  void SetStrictFifoReasons();
  // Where pod set `ps` pays for its GPU slices in `cq`: nvidia.com/gpu's id,
  // or -1 when it asks for none or the queue covers a slicing resource the
  // pod set requests (then that resource is its quota).
  int32_t ImplicitGpuRes(const CqRt& cq, const PodSetReq& ps) const {
    if (ps.implicit_gpu <= 0) return -1;
    for (int32_t h : ps.hint_res) {
      if (GroupOf(cq, h) >= 0) return -1;
    }
    return cq.gpu_res;
  }
  int32_t GroupOf(const CqRt& cq, int32_t res) const {
    return res >= 0 && static_cast<size_t>(res) < cq.group_of_res.size() ? cq.group_of_res[res] : -1;
  }
  int32_t FindLq(NamespaceId ns, const std::string& name) const;
  // Moves parked workloads of `list` back into their queues.
  void UnparkList(std::vector<WlId>* list);
  void Park(WlId id, std::vector<WlId>* list);
  Status FinishId(WlId id);
  // Time limits (docs/semantics.md §11).
  // The maximum runtime of `w` in ClusterQueue `cq` (-1: none known).
  std::optional<Time> MaxRuntime(const Wl& w, int32_t cq) const;
  // (Re)computes the expiry of an Admitted workload; drops it otherwise.
  void ArmExpiry(WlId id);
  void DisarmExpiry(WlId id);
  // Evicts every Admitted workload whose maximum runtime ran out by `now`.
  void ExpireRuntimes(Time now, std::vector<Eviction>* out);
  // True when admitted workload `victim` may not be preempted now for an
  // eviction with `reason` (its minimum runtime); records when it may.
  bool Protected(WlId victim, EvictionReason reason);
  // True (recording when it ends) while `wl` waits out its preemption delay.
  bool DelayHeld(WlId wl);
  // Reservations: the runtime estimate of `w` in `cq` (its maximum runtime,
  // else the queue's default estimate), minus the time it has used.
  std::optional<Time> RemainingEstimate(const Wl& w, int32_t cq) const;
  // Computes (or refreshes) the reservation of inadmissible head `wl`;
  // false when it does not qualify or its start cannot be estimated.
  bool Reserve(WlId wl, int32_t cq, Time now);
  // The reservation that admitting `wl` (usage `usage` in `cq`) now would
  // delay, or null.
  const Reservation* DelayedReservation(WlId wl, int32_t cq, const Assignment& a, Time now);
  // Drops reservation `i`; what it held back may be used again.
  void DropReservation(size_t i);
  Status CompleteEvictionId(WlId id);

  // Scratch buffers reused across rounds (no allocation per cycle).
  std::vector<Entry> round_entries;
  std::vector<std::pair<int32_t, FrAmounts>> round_temp;
  uint64_t round_stamp = 0;
  std::vector<WlId> round_victims;                 // this round's victims, in order
  std::vector<GroupReq> assign_reqs;               // AssignFlavors
  FrAmounts assign_fr;                             // AssignFlavors
  std::vector<int32_t> nominate_counts;            // Nominate
  std::vector<int32_t> bound_queues, bound_stack;  // preemption.cc bound
  FrAmounts bound_removed, bound_remaining;        // preemption.cc bound
  std::vector<char> round_done;
};

}  // namespace artel::core
