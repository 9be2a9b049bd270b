// The engine's per-workload state (Wl) and what a queue keys it by
// (QueueKey): internal to src/core, part of EngineImpl (engine_impl.h).
// A Wl is made by Submit (engine_queues.cc), resolved to its LocalQueue and
// ClusterQueue, queued in its LocalQueue's heap, admitted (usage held in the
// quota tree), evicted and requeued, finished, and finally forgotten, its
// slot reused.
//
// Thread-safety: none.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/engine.h"
#include "core/id.h"
#include "core/placement/placement.h"
#include "core/quota_tree.h"
#include "core/resource_names.h"

namespace artel::core {

// Requests that describe how to slice a GPU rather than an amount of quota:
// placement reads them; quota ignores them unless a resource group covers them.
inline bool IsSlicingHint(const std::string& name) {
  return name == kGpuMemoryNeed || name == kGpuComputeNeed || name == kHamiGpuMemory ||
         name == kHamiGpuMemoryPercent || name == kHamiGpuCores;
}

using WlId = WorkloadId;
inline constexpr WlId kNoWl = kNoWorkload;

// Up to N (resource, amount) pairs inside the object, more on the heap. A
// workload's per-pod requests and its least admissible amounts are read for
// every queue head a cycle looks at; kept inline, they cost no allocation
// and no cache miss of their own for the usual two to four resources
// (issue 17 §2 and §3).
template <size_t N>
class InlinePairs {
 public:
  using value_type = std::pair<ResourceId, Amount>;
  InlinePairs() = default;
  InlinePairs(InlinePairs&& o) noexcept : heap_(std::move(o.heap_)), size_(o.size_), cap_(o.cap_) {
    std::copy(o.inline_, o.inline_ + N, inline_);
    o.size_ = 0;
    o.cap_ = N;
  }
  InlinePairs& operator=(InlinePairs&& o) noexcept {
    if (this != &o) {
      heap_ = std::move(o.heap_);
      std::copy(o.inline_, o.inline_ + N, inline_);
      size_ = o.size_;
      cap_ = o.cap_;
      o.size_ = 0;
      o.cap_ = N;
    }
    return *this;
  }
  InlinePairs(const InlinePairs& o) { *this = o; }
  InlinePairs& operator=(const InlinePairs& o) {
    if (this != &o) {
      clear();
      reserve(o.size_);
      std::copy(o.begin(), o.end(), data());
      size_ = o.size_;
    }
    return *this;
  }
  ~InlinePairs() = default;

  value_type* begin() { return data(); }
  value_type* end() { return data() + size_; }
  const value_type* begin() const { return data(); }
  const value_type* end() const { return data() + size_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  void clear() {
    size_ = 0;
    heap_.reset();
    cap_ = N;
  }
  void reserve(size_t n) {
    if (n > cap_) Grow(n);
  }
  void emplace_back(ResourceId r, Amount a) {
    if (size_ == cap_) Grow(static_cast<size_t>(cap_) * 2);
    data()[size_++] = value_type(r, a);
  }

 private:
  value_type* data() { return heap_ ? heap_.get() : inline_; }
  const value_type* data() const { return heap_ ? heap_.get() : inline_; }
  void Grow(size_t n) {
    auto p = std::make_unique<value_type[]>(n);
    std::copy(begin(), end(), p.get());
    heap_ = std::move(p);
    cap_ = static_cast<uint32_t>(n);
  }

  value_type inline_[N];
  std::unique_ptr<value_type[]> heap_;
  uint32_t size_ = 0;
  uint32_t cap_ = N;
};

struct PodSetReq {
  int32_t count = 1;
  int32_t min_count = 1;
  // GPU quota a pod takes through slicing hints alone (KAI gpu-fraction,
  // HAMi gpumem without nvidia.com/gpu, an artel.dev/gpu-memory need), in
  // milli-GPUs; 0 when the pod requests nvidia.com/gpu itself.
  Amount implicit_gpu = 0;
  InlinePairs<3> per_pod;  // (resource, amount), sorted
  // The spec's pod set asks for a topology (!PodSetSpec::topology.empty()):
  // kept here so that a flavor assignment reads the spec only when it must.
  bool has_topology = false;
};

// Calls fn(resource id, amount per pod) for each request of a pod set, plus
// one `pods` per pod when `pods_res` >= 0 (the queue covers `pods`; an
// explicit `pods` request is replaced, as Kueue does), plus the implicit GPU
// charge as `gpu_res` when `gpu_res` >= 0.
template <typename F>
void ForEachPerPod(const PodSetReq& ps, ResourceId pods_res, ResourceId gpu_res, F&& fn) {
  for (const auto& [res, per_pod] : ps.per_pod) {
    if (res != pods_res) fn(res, per_pod);
  }
  if (pods_res.valid()) fn(pods_res, Amount{1000});
  if (gpu_res.valid() && ps.implicit_gpu > 0) fn(gpu_res, ps.implicit_gpu);
}

// Ordering key inside a LocalQueue: priority descending, queue time, uid.
// The id sits beside the priority so that the key packs into 40 bytes (a
// 72-byte set node, one malloc size class below 48 bytes' 80).
struct QueueKey {
  int32_t neg_priority;
  WlId id;
  Time queued_at;
  uint64_t uid;
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

static_assert(sizeof(QueueKey) == 40, "QueueKey packs into 40 bytes");

// The most limiting spot of a failed flavor assignment, as ids. The names in
// `PendingReason` are built from it only when someone reads the reason.
struct ReasonRef {
  int32_t pod_set = -1;  // index into the workload's pod sets
  FlavorId flavor;
  ResourceId resource;  // valid when set
  NodeId level;         // quota-tree node that blocks
  Amount requested = 0;
  Amount available = 0;
  Amount missing = 0;
  bool set() const { return resource.valid(); }
};

// Static node feasibility per (pod set, flavor id), index pod_set *
// flavors.size() + flavor: 1 = some node of the flavor can hold one pod, 0 =
// none (`why` says why), -1 = not known yet. Valid while gen ==
// EngineImpl::nodes_gen.
struct NodeFit {
  uint64_t gen = 0;
  std::vector<int8_t> fit;
  std::vector<std::string> why;
};

struct Wl {
  // First, together: what a cycle reads of every head it takes or parks
  // (a few cache lines of a large object).
  LqId lq;  // LocalQueue; invalid = unresolved
  CqId cq;  // ClusterQueue; invalid = unresolved
  bool in_heap = false;
  bool parked = false;
  bool listed = false;  // in a parked list (NsRt::parked, parked_placement)
  // Parked in place (BestEffortFIFO, inadmissible until its cohort tree
  // changes): stays in its LocalQueue's heap but is not a head while
  // park_epoch == EngineImpl::root_epoch[park_root]. Releasing quota in the
  // tree bumps the epoch, which unparks every such workload at once.
  bool soft_parked = false;
  bool reason_stale = false;  // parked by BulkPark's head skip without an examination
  bool forgotten = false;     // slot free for reuse (Engine::Forget)
  bool requeued = false;      // NotYetTried after an eviction (message wording)
  bool waiting_preemption = false;
  NodeId park_root;
  int32_t run_pos = -1;  // index in LqRt::run_req while a member of its queue's run
  uint64_t park_epoch = 0;
  std::set<QueueKey>::iterator heap_it;  // valid while in_heap
  uint64_t enq_seq = 0;                  // QueueKey::enq_seq of its heap entry
  // EngineImpl::bulk_counter when a cycle last examined it (its pending
  // reason is from then); older than CqRt::bulk_stamp while parked in bulk.
  uint64_t reason_stamp = 0;
  // While in a heap: (resource id, the least it can be admitted with), per
  // resource it requests in its ClusterQueue (CqRt::min_req).
  InlinePairs<3> min_req;
  // The start its reservation would have had when that lay beyond its
  // ClusterQueue's backfill window (so it has none); -1 otherwise.
  Time beyond_window = -1;
  WorkloadInfo info;
  // Derived from info.spec.pod_sets; shared with other workloads submitted
  // with equal pod sets (EngineImpl::recent_pod_sets).
  SharedVec<PodSetReq> pod_sets;
  NamespaceId ns;                                       // namespace id
  FrAmounts usage;                                      // held while Admitted or Evicting
  std::vector<std::pair<ResourceId, Amount>> ns_usage;  // per resource, for ResourceQuota
  uint64_t victim_stamp = 0;  // == EngineImpl::round_stamp: chosen as a victim in this round
  ReasonRef pending_ref;
  uint64_t admit_seq = 0;
  // The pending reason's kind. `info.pending` is boxed and may be absent
  // (or stale) until Materialize builds it for a reader; the engine decides
  // on this field, and writes the reason only through the helpers below.
  PendingReason::Kind pending_kind = PendingReason::Kind::kNone;
  int32_t admitted_pos = -1;  // index in CqRt::admitted
  bool has_placement = false;
  bool msg_dirty = false;   // pending.message is built on read (Materialize)
  bool ref_dirty = false;   // pending's names and amounts come from `pending_ref` on read
  bool delay_held = false;  // protected_until is its own preemption delay
  std::unique_ptr<placement::Placement>
      placement;  // with has_placement; committed in EngineImpl::cluster under info.key
  // While Admitted with a maximum runtime: when it runs out (the key of its
  // entry in EngineImpl::expiries); -1 otherwise.
  Time expiry = -1;
  // When the last nomination skipped preemption candidates protected by a
  // minimum runtime (or was itself held by its preemption delay): the
  // earliest time that changes; -1 when nothing was skipped.
  Time protected_until = -1;
  // Static node feasibility (flavor_assigner.cc NodesExclude); null until
  // the first check, which only engines with nodes make.
  std::unique_ptr<NodeFit> node_fit;

  // The pending reason, written whole.
  void SetPending(PendingReason r) {
    pending_kind = r.kind;
    info.pending = std::move(r);
  }
  // Only the kind: every field is built on read (Materialize).
  void SetPendingKind(PendingReason::Kind k) {
    pending_kind = k;
    info.pending.reset();
  }
  // Not pending: no reason.
  void ClearPending() { SetPendingKind(PendingReason::Kind::kNone); }
  // The reason, to add fields to: built (with its kind) when absent.
  PendingReason& PendingMut() {
    PendingReason& r = info.pending.mut();
    r.kind = pending_kind;
    return r;
  }
};

}  // namespace artel::core
