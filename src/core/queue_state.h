// The engine's per-queue state: flavors and resource groups, ClusterQueues
// (CqRt), LocalQueues (LqRt) and namespaces (NsRt), built by ApplyConfig
// (engine_config.cc) and kept up to date by the queue and usage code
// (engine_queues.cc, engine_usage.cc). Internal to src/core, part of
// EngineImpl (engine_impl.h).
//
// Thread-safety: none.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/admitted_index.h"
#include "core/assignment.h"
#include "core/workload_state.h"

namespace artel::core {

struct FlavorRt {
  std::string name;
  const ResourceFlavorSpec* spec = nullptr;
};

struct GroupRt {
  std::vector<ResourceId> resources;
  std::vector<FlavorId> flavors;  // in order
};

// A memoised preemption answer, valid while `EngineImpl::state_gen` and the
// ClusterQueue's `EngineImpl::tree_gen` are unchanged (no configuration
// change, and no usage or eviction change in its quota tree, since).
struct TargetMemo {
  uint64_t gen = 0;
  uint64_t tree_gen = 0;
  uint64_t overlay = 0;
  int32_t priority = 0;
  Time queued_at = 0;
  uint64_t uid = 0;
  FrAmounts request;
  std::vector<Target> targets;
  Time protect_min = -1;  // EngineImpl::protect_min the search left
};

// A multiset of amounts as (amount, how many): queued workloads mostly
// share a few request sizes, so this holds a node per size, not per
// workload. The least amount is kept beside the map, so that reading it
// (bulk parking, at every cycle) touches no map node.
struct AmountBag {
  std::map<Amount, int32_t> counts;
  int32_t n = 0;
  Amount min = 0;  // counts' least key while not empty
  void Insert(Amount a) {
    ++counts[a];
    if (n == 0 || a < min) min = a;
    ++n;
  }
  void EraseOne(Amount a) {
    auto it = counts.find(a);
    if (it == counts.end()) return;
    if (--it->second == 0) {
      counts.erase(it);
      if (a == min && !counts.empty()) min = counts.begin()->first;
    }
    --n;
  }
  bool empty() const { return n == 0; }
  int32_t size() const { return n; }
  Amount Min() const { return min; }
};

// A flavor-resource of a ClusterQueue's resource group with its quotas in
// the quota tree: the queue node's local and subtree quota and borrowing
// limit (kNoLimit: none), and its root's subtree quota.
struct CapFr {
  FrId fr;
  Amount local = 0, subtree = 0, borrowing_limit = 0, root_subtree = 0;
};

struct CqRt {
  // First, together: what BulkPark and the cycles read of every queue.
  bool held = false;  // Hold or HoldAndDrain
  // A borrowing limit of zero on every flavor-resource (EngineImpl::NeverBorrows), set by Configure.
  bool never_borrows = false;
  // EngineImpl::BulkShape's configuration part, set by Configure: 0 never,
  // 1 while no workload of lower priority than a queued one is admitted
  // (withinClusterQueue LowerPriority), 2 always.
  int8_t bulk_shape = 0;
  bool cap_shallow = false;  // with cap_frs, below
  bool cap_reclaim = false;
  NodeId node;           // QuotaTree node
  int32_t queued = 0;    // workloads in the heaps of its LocalQueues
  NodeId root;           // quota-tree root
  int32_t parked_n = 0;  // of those, parked in place under epoch parked_epoch
  WlId sticky = kNoWl;
  uint64_t parked_epoch = 0;
  const ClusterQueueSpec* spec = nullptr;
  // Parking in bulk (EngineImpl::BulkPark): while bulk_epoch is the root's
  // epoch, every heap entry with enq_seq < bulk_seq is parked in place.
  uint64_t bulk_epoch = 0;
  uint64_t bulk_seq = 0;
  uint64_t bulk_stamp = 0;  // EngineImpl::bulk_counter at the last bulk park
  // EngineImpl::BulkCap's answers per resource, valid while the generations
  // that GetTargets' memo also relies on (state, this tree's usage, the
  // cycle's overlay) are those recorded here.
  mutable uint64_t cap_state_gen = 0, cap_tree_gen = 0, cap_overlay_gen = 0;
  mutable std::vector<std::pair<ResourceId, Amount>> cap_cache;
  // Per resource id: the least amount each queued workload can be admitted
  // with (Wl::min_req); a queued workload missing from a set requests none.
  IdVector<ResourceId, AmountBag> min_req;
  std::vector<LqId> lqs;
  std::string name;
  // StrictFIFO (EngineImpl::SetStrictFifoReasons): the head at the end of
  // the last Schedule call that named one. The queued entries of then
  // (enq_seq <= strict_bound) other than it read as BlockedByStrictFIFO
  // behind it; the reason is written when read (EngineImpl::StrictBehind).
  WlId strict_head = kNoWl;
  std::string strict_head_key;
  uint64_t strict_bound = 0;
  std::vector<GroupRt> groups;
  IdVector<ResourceId, int32_t> group_of_res;  // resource -> group index, -1 = none (may be shorter)
  // The id of `pods` when a resource group covers it: each pod set then
  // requests one `pods` per pod (Kueue's FlavorAssigner.Assign).
  ResourceId pods_res;
  // The id of nvidia.com/gpu when a group covers it: where GPU slices are
  // charged (EngineImpl::ImplicitGpuRes).
  ResourceId gpu_res;
  // Every flavor of every resource group has a topology (Kueue: a pod set
  // without a topology request is then placed with an implied one).
  bool all_tas = false;
  bool drain_possible = false;  // HoldAndDrain on itself or one of its LocalQueues
  // Per resource id (may be shorter): the flavor-resources of the group that
  // covers it, in flavor order, with the quotas EngineImpl::ComputeBulkCap
  // reads (fixed between configurations). Set by Configure, with whether
  // the queue is a child of its root and may reclaim within its cohort.
  IdVector<ResourceId, std::vector<CapFr>> cap_frs;
  std::vector<WlId> admitted;    // Admitted and Evicting
  AdmittedIndex admitted_index;  // summaries of `admitted` (admitted_index.h)
  std::vector<TargetMemo> memo;  // small ring, see GetTargets
  size_t memo_next = 0;
};

struct LqRt {
  std::string ns, name;
  NamespaceId ns_id;
  CqId cq;
  const LocalQueueSpec* spec = nullptr;
  std::set<QueueKey> heap;
  NodeId root;  // quota-tree root of its ClusterQueue; invalid without one
  // Every entry before `skip` is soft-parked under epoch `skip_epoch`; valid
  // while that is the root's epoch (see EngineImpl::FirstActive).
  std::set<QueueKey>::iterator skip;
  uint64_t skip_epoch = 0;
  bool skip_valid = false;
  // The run (EngineImpl::BulkPark's walk of a tree's only active queue): the
  // leading entries, each of which failed the bound on resource `run_res`.
  // Its members are the entries before `run_end` (the first entry that is
  // not one, or the end) queued by `run_seq` (QueueKey::enq_seq <= run_seq).
  // In heap order, `run_req` holds each member's least request of `run_res`
  // and `run_at` its heap entry (kRunGone and the heap's end once it left).
  // While `run_epoch` is the root's epoch the members are parked in place;
  // after a release the walk parks again, in one step, the leading members
  // that still fail, instead of examining them one by one. `run_dirty`: an
  // entry was queued among the members since (the run is dropped at the
  // next release). `run_last`: the last member's key.
  static constexpr Amount kRunGone = std::numeric_limits<Amount>::max();
  bool run_valid = false;
  bool run_dirty = false;
  uint64_t run_seq = 0;
  uint64_t run_epoch = 0;
  uint64_t run_stamp = 0;  // EngineImpl::bulk_counter when last parked (reasons older are stale)
  std::set<QueueKey>::iterator run_end;
  QueueKey run_last{};
  ResourceId run_res;
  int32_t run_live = 0;  // members still queued
  std::vector<Amount> run_req;
  std::vector<std::set<QueueKey>::iterator> run_at;
  // While `run_epoch` is the root's epoch, only the members before index
  // `run_pn` are parked by the run; `park_end` is the heap entry of the
  // first live member from there (run_end when there is none). The members
  // after it stay in the run, unparked: a head that reaches them is checked
  // against the bound from `run_req` (EngineImpl::AdvanceRun) instead of
  // from its workload.
  size_t run_pn = 0;
  std::set<QueueKey>::iterator park_end;
  // Members before index `run_first` are all gone (scans start there).
  size_t run_first = 0;
  // A member parked by the run has its reason built on read only from this
  // index on (set when the run starts parking in an epoch): the members
  // before it were tried on their own in that epoch and keep their reasons.
  size_t run_stale_from = 0;
  // Whether `k`, an entry of this heap, is a member of the run.
  bool InRun(const QueueKey& k) const {
    return run_valid && k.enq_seq <= run_seq && (run_end == heap.end() || k < *run_end);
  }
  // Whether `k` is a member that the run parks (while run_epoch is current).
  bool InRunParked(const QueueKey& k) const {
    return run_valid && k.enq_seq <= run_seq && (park_end == heap.end() || k < *park_end);
  }
  // Per block of kRunBlock members: the least live request and the live
  // count, so that a scan over many failing members skips whole blocks.
  static constexpr size_t kRunBlock = 64;
  std::vector<Amount> run_block_min;
  std::vector<int32_t> run_block_live;
  void PushMember(Amount req, std::set<QueueKey>::iterator at) {
    if (run_req.size() % kRunBlock == 0) {
      run_block_min.push_back(req);
      run_block_live.push_back(0);
    }
    run_block_min.back() = std::min(run_block_min.back(), req);
    run_block_live.back()++;
    run_req.push_back(req);
    run_at.push_back(at);
    run_live++;
  }
  void MemberGone(size_t pos) {
    const Amount old = run_req[pos];
    run_req[pos] = kRunGone;
    run_at[pos] = heap.end();
    run_live--;
    const size_t b = pos / kRunBlock;
    run_block_live[b]--;
    if (old == run_block_min[b]) {
      Amount m = kRunGone;
      const size_t end = std::min(run_req.size(), (b + 1) * kRunBlock);
      for (size_t i = b * kRunBlock; i < end; ++i) m = std::min(m, run_req[i]);
      run_block_min[b] = m;
    }
    while (run_first < run_req.size() && run_req[run_first] == kRunGone) ++run_first;
  }
  // The first live member at or after `from` whose request is at most `cap`
  // (run_req.size() when none); `*live` gets the live members before it
  // from `from`.
  size_t FirstFit(size_t from, Amount cap, int64_t* live) const {
    *live = 0;
    size_t i = from;
    const size_t n = run_req.size();
    while (i < n) {
      if (i % kRunBlock == 0 && run_block_min[i / kRunBlock] > cap) {
        *live += run_block_live[i / kRunBlock];
        i += kRunBlock;
        continue;
      }
      if (run_req[i] <= cap) return i;
      if (run_req[i] != kRunGone) ++*live;
      ++i;
    }
    return n;
  }
  // The index just past the `k`-th live member at or after `from` (there
  // are at least `k`).
  size_t PastLive(size_t from, int64_t k) const {
    size_t i = from;
    while (k > 0) {
      if (i % kRunBlock == 0 && run_block_live[i / kRunBlock] < k) {
        k -= run_block_live[i / kRunBlock];
        i += kRunBlock;
        continue;
      }
      if (run_req[i] != kRunGone) --k;
      ++i;
    }
    return i;
  }
  // Members before index `i` are parked by the run.
  void SetParkBoundary(size_t i) {
    run_pn = i;
    while (i < run_at.size() && run_req[i] == kRunGone) ++i;
    park_end = i < run_at.size() ? run_at[i] : run_end;
  }
  void DropRun() {
    run_valid = false;
    run_dirty = false;
    run_pn = 0;
    run_first = 0;
    run_stale_from = 0;
    run_live = 0;
    run_res = ResourceId();
    run_req.clear();
    run_block_min.clear();
    run_block_live.clear();
    run_at.clear();
  }
  // Admission Fair Sharing state, per resource id.
  IdVector<ResourceId, double> afs_consumed;
  IdVector<ResourceId, double> afs_penalty;
  Time afs_last_sample = 0;
  bool afs_sampled = false;
  IdVector<ResourceId, Amount> current_usage;  // admitted usage now
};

struct NsRt {
  std::string name;
  std::map<std::string, std::string> labels;
  std::vector<std::pair<ResourceId, Amount>> hard;  // ResourceQuota caps per resource (summed min)
  IdVector<ResourceId, Amount> usage;
  std::vector<WlId> parked;  // blocked by ResourceQuota
};

}  // namespace artel::core
