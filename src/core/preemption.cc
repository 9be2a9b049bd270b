#include "core/preemption.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <optional>

#include "core/fair_sharing.h"
#include "core/preemption_policy.h"

namespace artel::core {
namespace {

struct Cand {
  WlId id;
  CqId cq;
  EvictionReason reason;
  bool evicting;
  bool own;
  double afs;
  int32_t priority;
  Time admitted_at;
  uint64_t admit_seq;
  uint64_t uid;
};

bool CandLess(const Cand& a, const Cand& b) {
  if (a.evicting != b.evicting) return a.evicting;
  if (a.own != b.own) return !a.own;
  if (a.afs != b.afs) return a.afs > b.afs;
  if (a.priority != b.priority) return a.priority < b.priority;
  if (a.admitted_at != b.admitted_at) return a.admitted_at > b.admitted_at;
  // Admitted at the same instant: the later admission first, as Kueue's
  // later quota-reservation time would order them (docs/semantics.md).
  if (a.admit_seq != b.admit_seq) return a.admit_seq > b.admit_seq;
  return a.uid < b.uid;
}

bool UsesAny(const Wl& w, const std::vector<FrId>& frs) {
  for (const auto& [fr, a] : w.usage) {
    if (a > 0 && std::find(frs.begin(), frs.end(), fr) != frs.end()) return true;
  }
  return false;
}

}  // namespace

bool FitsNow(const EngineImpl& e, CqId cq, const FrAmounts& request) {
  NodeId node = e.cqs[cq].node;
  for (const auto& [fr, a] : request) {
    if (a > e.tree.Available(node, fr)) return false;
  }
  return true;
}

namespace {

// FillBackAndRestore (preemption.h) with any callable and a caller-owned
// scratch buffer (`keep_out`), so that the quota search allocates nothing
// but its answer.
template <typename FitsFn>
std::vector<Target> FillBack(EngineImpl& e, const std::vector<Target>& removed, bool fitted,
                             std::vector<char>& keep_out, FitsFn&& fits) {
  QuotaTree& t = e.tree;
  auto put_back = [&](WlId id, int sign) { t.AddUsage(e.cqs[e.wls[id].cq].node, e.wls[id].usage, sign); };
  std::vector<Target> targets;
  if (!fitted) {
    for (const Target& x : removed) put_back(x.id, +1);
    return targets;
  }
  // The last one removed is needed by construction.
  keep_out.assign(removed.size(), 1);
  size_t kept = removed.size();
  for (int i = static_cast<int>(removed.size()) - 2; i >= 0; --i) {
    put_back(removed[i].id, +1);
    if (fits()) {
      keep_out[i] = 0;
      --kept;
    } else {
      put_back(removed[i].id, -1);
    }
  }
  targets.reserve(kept);
  for (size_t i = 0; i < removed.size(); ++i) {
    if (!keep_out[i]) continue;
    targets.push_back(removed[i]);
    put_back(removed[i].id, +1);
  }
  return targets;
}

}  // namespace

std::vector<Target> FillBackAndRestore(EngineImpl& e, const std::vector<Target>& removed, bool fitted,
                                       const std::function<bool()>& fits) {
  std::vector<char> keep_out;
  return FillBack(e, removed, fitted, keep_out, fits);
}

namespace {

// Kueue's candidate variants (see hierarchical reclaim in docs/semantics.md).
enum class Variant { kWithinCq, kHierarchicalReclaim, kReclaimWithoutBorrowing, kReclaimWhileBorrowing };

struct Ctx {
  EngineImpl& e;
  WlId wl;
  CqId cq;
  NodeId node;
  const FrAmounts& request;
  std::vector<FrId>& need;  // the flavor-resources short now (PreemptionScratch::need)
};

struct Candidate {
  Cand c;
  Variant variant;
  NodeId lca;         // tree node of the lowest common ancestor; invalid for the same queue
  uint8_t group = 0;  // LazyOrder::Group, set by the order that holds it
};

// Fits in the queue now; without borrowing also requires the queue itself
// to stay within its subtree quota.
bool Fits(const Ctx& c, bool allow_borrowing) {
  const QuotaTree& t = c.e.tree;
  for (const auto& [fr, a] : c.request) {
    if (!allow_borrowing && t.node(c.node).usage[fr] + a > t.node(c.node).subtree[fr]) return false;
    if (a > t.Available(c.node, fr)) return false;
  }
  return true;
}

bool WithinNominal(const QuotaTree& t, NodeId n, const std::vector<FrId>& frs) {
  for (FrId fr : frs) {
    if (t.node(n).usage[fr] > t.node(n).subtree[fr]) return false;
  }
  return true;
}

// Is a candidate still valid: its queue and every cohort below the lowest
// common ancestor still over quota (and, in a borrowing attempt, not a
// candidate that may only be taken without borrowing)?
bool Valid(const Ctx& c, const Candidate& cand, bool borrowing) {
  if (cand.c.own) return true;
  if (borrowing && cand.variant == Variant::kReclaimWithoutBorrowing) return false;
  const QuotaTree& t = c.e.tree;
  NodeId n = c.e.cqs[cand.c.cq].node;
  if (WithinNominal(t, n, c.need)) return false;
  for (n = t.node(n).parent; n.valid() && n != cand.lca; n = t.node(n).parent) {
    if (WithinNominal(t, n, c.need)) return false;
  }
  return true;
}

// Candidates in preemption order, sorted lazily: the minimal search usually
// needs only the first few of thousands, so a heap yields them one by one
// and the sorted prefix is kept for a second attempt.
class LazyOrder {
 public:
  explicit LazyOrder(std::vector<Candidate> cands) : heap_(std::move(cands)) {
    for (Candidate& x : heap_) x.group = static_cast<uint8_t>(Group(x));
    std::make_heap(heap_.begin(), heap_.end(), Greater);
  }
  const Candidate* At(size_t i) {
    while (prefix_.size() <= i && !heap_.empty()) {
      std::pop_heap(heap_.begin(), heap_.end(), Greater);
      prefix_.push_back(heap_.back());
      heap_.pop_back();
    }
    return i < prefix_.size() ? &prefix_[i] : nullptr;
  }

 public:
  // Evicting first; then hierarchical, priority-based, same-queue; then
  // the candidate order of Kueue.
  static int Group(const Candidate& x) {
    int g = x.variant == Variant::kWithinCq ? 2 : x.variant == Variant::kHierarchicalReclaim ? 0 : 1;
    return (x.c.evicting ? 0 : 3) + g;
  }
  static bool Less(const Candidate& a, const Candidate& b) {
    if (a.group != b.group) return a.group < b.group;
    return CandLess(a.c, b.c);
  }
  static bool Greater(const Candidate& a, const Candidate& b) { return Less(b, a); }

 private:
  std::vector<Candidate> heap_;
  std::vector<Candidate> prefix_;
};

// The admitted workloads of ClusterQueue `cq` in preemption-candidate order
// (admitted_index.h): LazyOrder's order restricted to the queue.
const std::vector<CandKey>& CandidateOrder(EngineImpl& e, CqId cq) {
  CqRt& q = e.cqs[cq];
  return q.admitted_index.Order(q.admitted, e.wls);
}

// The same sequence as LazyOrder over the same candidates, built lazily from
// the per-queue candidate orders: one cursor per ClusterQueue, each yielding
// its next candidate that passes the search's filters, merged by a heap of
// cursors. A search that takes k victims from q queues touches about k + q
// workloads instead of every admitted workload of the cohort.
// `Pull` yields the next usable candidate of a cursor's queue:
// bool(size_t cursor, Candidate* out), false at its end.
struct MergedHead {
  Candidate cand;
  size_t cursor;
};

}  // namespace

// Buffers of the quota search, kept by the engine so that a search
// allocates nothing but its answer.
struct PreemptionScratch {
  struct Cursor {
    const std::vector<CandKey>* ids;
    size_t pos;
    CqId cq;
    NodeId lca;      // invalid for the preemptor's own queue
    bool advantage;  // hierarchical advantage at `lca`
  };
  std::vector<Cursor> cursors;
  FrAmounts remaining;
  std::vector<NodeId> stack;
  std::vector<MergedHead> heap;
  std::vector<Candidate> prefix;
  std::vector<Target> removed;
  std::vector<char> keep_out;
  std::vector<FrId> need;
};

void DeletePreemptionScratch(PreemptionScratch* s) { delete s; }

namespace {

PreemptionScratch& Scratch(EngineImpl& e) {
  if (!e.preemption_scratch) e.preemption_scratch.reset(new PreemptionScratch);
  return *e.preemption_scratch;
}

template <typename Pull>
class MergedOrder {
 public:
  using Head = MergedHead;
  // `heap` and `prefix` are the caller's buffers, cleared here.
  MergedOrder(size_t cursors, Pull pull, std::vector<Head>& heap, std::vector<Candidate>& prefix)
      : pull_(std::move(pull)), heap_(heap), prefix_(prefix) {
    heap_.clear();
    prefix_.clear();
    for (size_t i = 0; i < cursors; ++i) {
      Candidate cand;
      if (Pull1(i, &cand)) heap_.push_back({cand, i});
    }
    std::make_heap(heap_.begin(), heap_.end(), Greater);
  }
  bool Empty() const { return heap_.empty() && prefix_.empty(); }
  // Whether some cursor yields a candidate at all (checked before any At).
  template <typename F>
  bool Any(F&& pred) const {
    for (const auto& h : heap_) {
      if (pred(h.cand)) return true;
    }
    return false;
  }
  const Candidate* At(size_t i) {
    while (prefix_.size() <= i && !heap_.empty()) {
      std::pop_heap(heap_.begin(), heap_.end(), Greater);
      Head& h = heap_.back();
      prefix_.push_back(h.cand);
      if (Pull1(h.cursor, &h.cand)) {
        std::push_heap(heap_.begin(), heap_.end(), Greater);
      } else {
        heap_.pop_back();
      }
    }
    return i < prefix_.size() ? &prefix_[i] : nullptr;
  }

 private:
  bool Pull1(size_t cursor, Candidate* out) {
    if (!pull_(cursor, out)) return false;
    out->group = static_cast<uint8_t>(LazyOrder::Group(*out));
    return true;
  }
  static bool Greater(const Head& a, const Head& b) { return LazyOrder::Less(b.cand, a.cand); }
  Pull pull_;
  std::vector<Head>& heap_;
  std::vector<Candidate>& prefix_;
};

template <typename Order>
std::vector<Target> Minimal(Ctx& c, Order& order, bool allow_borrowing) {
  QuotaTree& t = c.e.tree;
  PreemptionScratch& s = Scratch(c.e);
  std::vector<Target>& removed = s.removed;
  removed.clear();
  bool fits = false;
  for (size_t i = 0;; ++i) {
    const Candidate* cand = order.At(i);
    if (cand == nullptr) break;
    if (!Valid(c, *cand, allow_borrowing)) continue;
    t.AddUsage(c.e.cqs[cand->c.cq].node, c.e.wls[cand->c.id].usage, -1);
    removed.push_back({cand->c.id, cand->c.reason});
    if (Fits(c, allow_borrowing)) {
      fits = true;
      break;
    }
  }
  return FillBack(c.e, removed, fits, s.keep_out, [&] { return Fits(c, allow_borrowing); });
}

// Would the preemption policy protect `v` from the preemptor `w`?
bool PriorityTooHigh(const Wl& w, const Wl& v, bool same_queue, const PreemptionSpec& pol) {
  int32_t p = w.info.priority, vp = v.info.priority;
  bool lower = p > vp;
  if (same_queue) {
    switch (pol.within_cluster_queue) {
      case WithinClusterQueuePolicy::kNever: return true;
      case WithinClusterQueuePolicy::kLowerPriority: return !lower;
      case WithinClusterQueuePolicy::kLowerOrNewerEqualPriority: {
        bool newer_equal = p == vp && (w.info.queued_at < v.info.queued_at ||
                                       (w.info.queued_at == v.info.queued_at && w.info.uid < v.info.uid));
        return !(lower || newer_equal);
      }
    }
    return true;
  }
  switch (pol.reclaim_within_cohort) {
    case ReclaimWithinCohortPolicy::kNever: return true;
    case ReclaimWithinCohortPolicy::kLowerPriority: return !lower;
    case ReclaimWithinCohortPolicy::kAny: return false;
  }
  return true;
}

// Whether the policy protects every workload of priority `vp` or higher
// from a preemptor of priority `p` (PriorityTooHigh for all of them).
bool PriorityStops(int32_t p, int32_t vp, bool same_queue, const PreemptionSpec& pol) {
  if (same_queue) {
    switch (pol.within_cluster_queue) {
      case WithinClusterQueuePolicy::kNever: return true;
      case WithinClusterQueuePolicy::kLowerPriority: return vp >= p;
      case WithinClusterQueuePolicy::kLowerOrNewerEqualPriority: return vp > p;
    }
    return false;
  }
  switch (pol.reclaim_within_cohort) {
    case ReclaimWithinCohortPolicy::kNever: return true;
    case ReclaimWithinCohortPolicy::kLowerPriority: return vp >= p;
    case ReclaimWithinCohortPolicy::kAny: return false;
  }
  return false;
}

}  // namespace

namespace {
class PlacementSearch;
std::vector<Target> ComputeTargets(EngineImpl& e, WlId wl, CqId cqi, const FrAmounts& request,
                                   PlacementSearch* nodes = nullptr);

// Kueue's walk over the other ClusterQueues of the preemptor's cohort tree
// (hierarchical reclaim): for each ancestor `cur` of the preemptor's queue,
// from the parent up, `visit(advantage)` says whether to look below it, and
// then `on_queue(n, cur, advantage)` is called for every ClusterQueue node
// `n` in the subtrees of `cur` off the preemptor's path, descending only
// into subtrees that exceed their quota in a needed resource. `advantage`:
// the request fits within the quota of the preemptor's queue or of a cohort
// below `cur` (the "remaining request" rule of QuantitiesFitInQuota).
// `remaining` and `stack` are scratch.
template <typename Visit, typename OnQueue>
void WalkCohortQueues(const Ctx& c, FrAmounts& remaining, std::vector<NodeId>& stack, Visit&& visit,
                      OnQueue&& on_queue) {
  const QuotaTree& t = c.e.tree;
  const NodeId own = c.node;
  bool advantage = true;
  remaining.assign(c.request.begin(), c.request.end());
  {
    const auto& n = t.node(own);
    for (auto& [fr, a] : remaining) {
      if (n.usage[fr] + a > n.subtree[fr]) advantage = false;
      a = t.PropagatedDelta(own, fr, n.usage[fr], n.usage[fr] + a);
    }
  }
  const bool advantage_at_queue = advantage;
  NodeId prev = own;
  for (NodeId cur = t.node(own).parent; cur.valid(); prev = cur, cur = t.node(cur).parent) {
    if (visit(advantage, advantage_at_queue)) {
      stack.clear();
      for (NodeId child : t.node(cur).children) {
        if (child != prev) stack.push_back(child);
      }
      while (!stack.empty()) {
        NodeId n = stack.back();
        stack.pop_back();
        if (WithinNominal(t, n, c.need)) continue;
        if (t.node(n).is_cohort) {
          for (NodeId child : t.node(n).children) stack.push_back(child);
          continue;
        }
        on_queue(n, cur, advantage);
      }
    }
    const auto& cn = t.node(cur);
    bool fits_here = true;
    for (auto& [fr, a] : remaining) {
      if (cn.usage[fr] + a > cn.subtree[fr]) fits_here = false;
      if (cn.parent.valid()) a = t.PropagatedDelta(cur, fr, cn.usage[fr], cn.usage[fr] + a);
    }
    advantage = advantage || fits_here;
  }
}

// A necessary condition for any preemption to succeed: the request fits
// (borrowing allowed) once every ClusterQueue that could yield a usable
// candidate gives up the most the search could take from it, on the needed
// resources. Which queues count follows ComputeTargets' variants: the
// preemptor's own queue when its policy allows preemption within it (all its
// usage); another queue when its workloads would be hierarchical-reclaim
// candidates, or reclaim-while-borrowing ones (borrowWithinCohort), or
// reclaim-without-borrowing ones while a non-borrowing fit is still possible
// (the own queue can shrink). Another queue yields candidates only while
// above its quota: with a single needed resource it gives up at most what it
// holds above quota plus its largest workload (the last one taken may
// overshoot), else its whole usage. Quota availability only grows when
// usage shrinks, so when this fails the minimal search fails in every
// attempt; it costs a walk over queues instead of a heap over candidates.
// The largest usage of `fr` by one admitted workload of `cq`.
Amount LargestUsage(EngineImpl& e, CqId cq, FrId fr) {
  CqRt& q = e.cqs[cq];
  return q.admitted_index.Largest(fr, q.admitted, e.wls);
}

bool MayFitWithoutAllCandidates(Ctx& c, const PreemptionSpec& pol) {
  QuotaTree& t = c.e.tree;
  const NodeId own = c.node;
  const bool within = pol.within_cluster_queue != WithinClusterQueuePolicy::kNever;
  const bool bwc = pol.borrow_within_cohort == BorrowWithinCohortPolicy::kLowerPriority;
  std::vector<NodeId>& queues = c.e.bound_queues;
  queues.clear();
  if (within) queues.push_back(own);
  if (t.node(own).parent.valid() && pol.reclaim_within_cohort != ReclaimWithinCohortPolicy::kNever) {
    // Without an advantage at the queue itself, a fit without borrowing
    // needs the own queue to shrink, which only same-queue preemption does.
    WalkCohortQueues(
        c, c.e.bound_remaining, c.e.bound_stack,
        [&](bool advantage, bool advantage_at_queue) {
          return advantage || bwc || advantage_at_queue || within;
        },
        [&](NodeId n, NodeId, bool) { queues.push_back(n); });
  }
  if (queues.empty()) return false;
  std::vector<EngineImpl::BoundRemoval>& removed = c.e.bound_removed;
  removed.clear();
  for (size_t q = 0; q < queues.size(); ++q) {
    const NodeId n = queues[q];
    const bool own_queue = n == own;
    for (FrId fr : c.need) {
      Amount u = t.node(n).usage[fr];
      if (u <= 0) continue;
      // Another queue gives up candidates only while it is above its quota;
      // with one needed resource, the last one taken overshoots by at most
      // one workload.
      if (!own_queue && c.need.size() == 1) {
        const Amount biggest = LargestUsage(c.e, c.e.cq_of_node[n], fr);
        u = std::min(u, t.node(n).usage[fr] - t.node(n).subtree[fr] + biggest);
        if (u <= 0) continue;
      }
      t.AddUsage(queues[q], fr, -u);
      removed.push_back({queues[q], fr, u});
    }
  }
  const bool fits = Fits(c, true);
  for (const auto& r : removed) t.AddUsage(r.queue, r.fr, r.amount);
  return fits;
}

// What to try, given which kinds of candidate exist (Kueue's
// preemption.go: without borrowing first where it can matter).
// The borrowing settings to try, in order (one or two).
struct AttemptList {
  bool v[2];
  int n;
  const bool* begin() const { return v; }
  const bool* end() const { return v + n; }
};

AttemptList Attempts(const Ctx& c, bool no_other, bool no_hier, bool bwc) {
  const QuotaTree& t = c.e.tree;
  const NodeId node = c.e.cqs[c.cq].node;
  bool under_nominal = true;
  for (FrId fr : c.need) {
    if (t.node(node).usage[fr] >= t.node(node).nominal[fr]) under_nominal = false;
  }
  if (no_other || (!bwc && !under_nominal)) return {{true, false}, 1};
  if (!bwc && no_hier) return {{false, true}, 2};
  return {{true, false}, 2};
}

// ComputeTargets' quota search over the candidate index (EngineOptions::
// candidate_index): the same candidates, filters and order, each queue's
// candidates taken lazily from CandidateOrder.
//
// With a `budget`, the search gives up (nullopt, the tree restored) once it
// has examined that many candidates, so that a caller can run the bound
// (MayFitWithoutAllCandidates) only for searches that are not cheap anyway.
std::optional<std::vector<Target>> IndexedTargets(Ctx& c, const PreemptionSpec& pol,
                                                  size_t budget = std::numeric_limits<size_t>::max()) {
  EngineImpl& e = c.e;
  const QuotaTree& t = e.tree;
  const CqRt& cq = e.cqs[c.cq];
  const Wl& w = e.wls[c.wl];
  const bool bwc = pol.borrow_within_cohort == BorrowWithinCohortPolicy::kLowerPriority;
  PreemptionScratch& s = Scratch(e);
  using Cursor = PreemptionScratch::Cursor;
  std::vector<Cursor>& cursors = s.cursors;
  cursors.clear();
  cursors.push_back({&CandidateOrder(e, c.cq), 0, c.cq, NodeId(), false});
  if (t.node(cq.node).parent.valid() && pol.reclaim_within_cohort != ReclaimWithinCohortPolicy::kNever) {
    WalkCohortQueues(
        c, s.remaining, s.stack, [](bool, bool) { return true; },
        [&](NodeId n, NodeId cur, bool advantage) {
          const CqId ocq = e.cq_of_node[n];
          cursors.push_back({&CandidateOrder(e, ocq), 0, ocq, cur, advantage});
        });
  }
  size_t examined = 0;
  bool over_budget = false;
  auto pull = [&](size_t i, Candidate* out) {
    Cursor& k = cursors[i];
    const bool own = !k.lca.valid();
    while (k.pos < k.ids->size()) {
      if (++examined > budget) {
        over_budget = true;
        return false;
      }
      const CandKey& key = (*k.ids)[k.pos++];
      // Past the evicting ones the order is by ascending priority: once the
      // policy protects a priority, it protects the rest of the queue.
      if (!key.evicting && PriorityStops(w.info.priority, key.priority, own, pol)) {
        k.pos = k.ids->size();
        break;
      }
      const WlId id = key.id;
      const Wl& v = e.wls[id];
      if (own) {
        if (id == c.wl || !UsesAny(v, c.need) || PriorityTooHigh(w, v, true, pol)) continue;
        if (e.Protected(id, EvictionReason::kInClusterQueue)) continue;  // minimum runtime
        *out = {Cand{id, k.cq, EvictionReason::kInClusterQueue, v.info.state == WorkloadState::kEvicting,
                     true, 0.0, v.info.priority, v.info.admitted_at, v.admit_seq, v.info.uid},
                Variant::kWithinCq, NodeId()};
        return true;
      }
      if (!UsesAny(v, c.need) || PriorityTooHigh(w, v, false, pol)) continue;
      const bool while_borrowing =
          !k.advantage && bwc && v.info.priority < w.info.priority &&
          !(pol.max_priority_threshold && v.info.priority > *pol.max_priority_threshold);
      if (e.Protected(id, while_borrowing ? EvictionReason::kInCohortReclaimWhileBorrowing
                                          : EvictionReason::kInCohortReclamation))
        continue;  // minimum runtime
      Variant variant = k.advantage       ? Variant::kHierarchicalReclaim
                        : while_borrowing ? Variant::kReclaimWhileBorrowing
                                          : Variant::kReclaimWithoutBorrowing;
      EvictionReason reason = variant == Variant::kReclaimWhileBorrowing
                                  ? EvictionReason::kInCohortReclaimWhileBorrowing
                                  : EvictionReason::kInCohortReclamation;
      *out = {Cand{id, k.cq, reason, v.info.state == WorkloadState::kEvicting, false, 0.0, v.info.priority,
                   v.info.admitted_at, v.admit_seq, v.info.uid},
              variant, k.lca};
      return true;
    }
    return false;
  };
  MergedOrder order(cursors.size(), pull, s.heap, s.prefix);
  if (over_budget) return std::nullopt;
  if (order.Empty()) return std::vector<Target>{};
  const bool no_other = !order.Any([](const Candidate& x) { return x.variant != Variant::kWithinCq; });
  const bool no_hier =
      !order.Any([](const Candidate& x) { return x.variant == Variant::kHierarchicalReclaim; });
  for (bool allow_borrowing : Attempts(c, no_other, no_hier, bwc)) {
    std::vector<Target> targets = Minimal(c, order, allow_borrowing);
    // Minimal restored the tree; a search cut short decides nothing.
    if (over_budget) return std::nullopt;
    if (!targets.empty()) return targets;
  }
  return std::vector<Target>{};
}
}  // namespace

std::vector<Target> ClassicalTargets(EngineImpl& e, WlId wl, CqId cq, const FrAmounts& request) {
  return ComputeTargets(e, wl, cq, request);
}

// Preemption answers depend on the workload only through its priority, its
// queue time and uid (LowerOrNewerEqualPriority) and its request, and on the
// state only through its quota tree's usage and evictions and the
// configuration: while `state_gen` and the tree's `tree_gen` are unchanged
// the answer is memoised per ClusterQueue. This
// keeps heads that keep failing, and preemptors waiting for their victims,
// from repeating the same search in every cycle of one `Schedule` call.
void GetTargets(EngineImpl& e, WlId wl, CqId cqi, const FrAmounts& request, std::vector<Target>* out) {
  CqRt& cq = e.cqs[cqi];
  const Wl& w = e.wls[wl];
  const bool memoise = !e.opts.admission_fair_sharing;
  // Queue time and uid matter only for LowerOrNewerEqualPriority.
  const bool by_age =
      cq.spec->preemption.within_cluster_queue == WithinClusterQueuePolicy::kLowerOrNewerEqualPriority;
  const Time queued_at = by_age ? w.info.queued_at : 0;
  const uint64_t uid = by_age ? w.info.uid : 0;
  // Preemption delay (docs/semantics.md §11): no victims until it has waited.
  if (e.DelayHeld(wl)) {
    out->clear();
    return;
  }
  auto note_protection = [&e](Time t) {
    if (t >= 0 && (e.protect_min < 0 || t < e.protect_min)) e.protect_min = t;
  };
  if (memoise) {
    for (const TargetMemo& m : cq.memo) {
      if (m.gen == e.state_gen && m.tree_gen == e.tree_gen[cq.root] && m.overlay == e.overlay_gen &&
          m.priority == w.info.priority && m.queued_at == queued_at && m.uid == uid && m.request == request) {
        note_protection(m.protect_min);
        out->assign(m.targets.begin(), m.targets.end());
        return;
      }
    }
  }
  // The earliest protection this search skips, apart from earlier searches
  // of the same nomination.
  const Time outer = e.protect_min;
  e.protect_min = -1;
  *out = e.preemption->Targets(e, wl, cqi, request);
  const Time mine = e.protect_min;
  e.protect_min = outer;
  note_protection(mine);
  if (memoise) {
    constexpr size_t kMemoSize = 4;
    TargetMemo* m;
    if (cq.memo.size() < kMemoSize) {
      m = &cq.memo.emplace_back();
    } else {
      m = &cq.memo[cq.memo_next];  // its buffers are reused
      cq.memo_next = (cq.memo_next + 1) % kMemoSize;
    }
    m->gen = e.state_gen;
    m->tree_gen = e.tree_gen[cq.root];
    m->overlay = e.overlay_gen;
    m->priority = w.info.priority;
    m->queued_at = queued_at;
    m->uid = uid;
    m->request.assign(request.begin(), request.end());
    m->targets.assign(out->begin(), out->end());
    m->protect_min = mine;
  }
}

namespace {

// Placement-aware preemption (see PlacementTargets in core/preemption.h):
// the quota fits, the nodes do not. Candidates come from ComputeTargets'
// policy rules, restricted to workloads with a pod on a node the preemptor
// may use; `Run` finds the victims whose removal lets the gang be placed
// (and keeps the quota fitting), first inside one domain, then anywhere.
class PlacementSearch {
 public:
  PlacementSearch(EngineImpl& e, const placement::GangRequest& gang)
      : e_(e), gang_(gang), scope_(e.cluster->PreemptionScopes(gang)) {}

  // May releasing `id` help: it holds a pod on a node the gang may use.
  bool Relevant(WlId id) const {
    const Wl& v = e_.wls[id];
    if (!v.has_placement || !v.placement || !e_.cluster->Holds(v.info.key)) return false;
    for (const placement::PodPlacement& p : v.placement->pods) {
      if (p.node >= 0 && static_cast<size_t>(p.node) < scope_.size() && scope_[p.node] >= 0) return true;
    }
    return false;
  }

  std::vector<Target> Run(const Ctx& c, const std::vector<Candidate>& cands, bool allow_borrowing) {
    // Necessary for every attempt: the gang places once every candidate is
    // gone. One simulation answers the common hopeless case.
    if (!checked_) {
      checked_ = true;
      std::vector<size_t> all(cands.size());
      for (size_t i = 0; i < all.size(); ++i) all[i] = i;
      hopeless_ = !PlacesWithout(gang_, cands, all, nullptr);
    }
    if (hopeless_) return {};
    // Domains (scopes) touched by candidates, in the order of their first
    // candidate; each lists its candidates in preemption order.
    std::vector<int32_t> scope_ids;
    std::vector<std::vector<size_t>> members;
    for (size_t i = 0; i < cands.size(); ++i) {
      for (const placement::PodPlacement& p : e_.wls[cands[i].c.id].placement->pods) {
        int32_t s = p.node >= 0 && static_cast<size_t>(p.node) < scope_.size() ? scope_[p.node] : -1;
        if (s < 0) continue;
        size_t k = std::find(scope_ids.begin(), scope_ids.end(), s) - scope_ids.begin();
        if (k == scope_ids.size()) {
          scope_ids.push_back(s);
          members.emplace_back();
        }
        if (members[k].empty() || members[k].back() != i) members[k].push_back(i);
      }
    }
    // 1. One domain at a time (a node, or a domain of the required level):
    // victims only from that domain, so they are concentrated where the
    // gang will land. The best domain frees
    // the gang with the lowest highest priority among new victims, then the
    // fewest new victims (victims already being evicted cost nothing), then
    // the fewest victims, then the earliest last victim in preemption order.
    std::vector<Target> best;
    Cost best_cost;
    size_t tried = 0;
    for (size_t k = 0; k < scope_ids.size() && tried < kMaxScopes; ++k) {
      // Only the domain's candidates may go; the gang itself may still use
      // free capacity anywhere (a gang of several pods without a required
      // level can combine a freed node with free GPUs elsewhere).
      // Necessary: the gang places once every candidate of the domain is gone.
      if (!PlacesWithout(gang_, cands, members[k], nullptr)) continue;
      ++tried;
      std::vector<size_t> victims = Minimal(c, cands, members[k], gang_, allow_borrowing);
      if (victims.empty()) continue;
      Cost cost = CostOf(cands, victims);
      if (best.empty() || cost < best_cost) {
        best_cost = cost;
        best.clear();
        for (size_t i : victims) best.push_back({cands[i].c.id, cands[i].c.reason});
      }
    }
    if (!best.empty() || budget_ <= 0) return best;
    // 2. Anywhere (a gang that spans domains): every candidate in order.
    std::vector<size_t> all(cands.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = i;
    std::vector<size_t> victims = Minimal(c, cands, all, gang_, allow_borrowing);
    for (size_t i : victims) best.push_back({cands[i].c.id, cands[i].c.reason});
    return best;
  }

 private:
  // Bounds on the work of one search: domains searched, and placement
  // simulations (a deterministic count, not a time).
  static constexpr size_t kMaxScopes = 16;
  static constexpr int kMaxPlacements = 512;

  struct Cost {
    int64_t top_priority = 0;
    size_t fresh = 0, total = 0, last = 0;
    bool operator<(const Cost& o) const {
      if (top_priority != o.top_priority) return top_priority < o.top_priority;
      if (fresh != o.fresh) return fresh < o.fresh;
      if (total != o.total) return total < o.total;
      return last < o.last;
    }
  };

  Cost CostOf(const std::vector<Candidate>& cands, const std::vector<size_t>& victims) const {
    Cost k;
    k.top_priority = std::numeric_limits<int64_t>::min();
    for (size_t i : victims) {
      k.total++;
      k.last = std::max(k.last, i);
      if (cands[i].c.evicting) continue;
      k.fresh++;
      k.top_priority = std::max<int64_t>(k.top_priority, cands[i].c.priority);
    }
    return k;
  }

  // Places `req` on a copy of the cluster without the candidates
  // `members[j]` for which `out[j]` (all of them when `out` is null).
  bool PlacesWithout(const placement::GangRequest& req, const std::vector<Candidate>& cands,
                     const std::vector<size_t>& members, const std::vector<char>* out) {
    if (budget_-- <= 0) return false;
    placement::Cluster sim = *e_.cluster;
    for (size_t j = 0; j < members.size(); ++j) {
      if (out == nullptr || (*out)[j]) (void)sim.Release(e_.wls[cands[members[j]].c.id].info.key);
    }
    return sim.Place(req).ok();
  }

  // Kueue's minimal-set heuristic with placement in the fit test: remove
  // valid candidates of `order` until the quota fits and `req` places, then
  // fill back from the second-to-last. Returns indices into `cands`; the
  // quota tree is restored.
  std::vector<size_t> Minimal(const Ctx& c, const std::vector<Candidate>& cands,
                              const std::vector<size_t>& order, const placement::GangRequest& req,
                              bool allow_borrowing) {
    QuotaTree& t = e_.tree;
    auto usage = [&](size_t i, int sign) {
      t.AddUsage(e_.cqs[cands[i].c.cq].node, e_.wls[cands[i].c.id].usage, sign);
    };
    placement::Cluster sim = *e_.cluster;
    std::vector<size_t> removed;
    bool fits = false;
    for (size_t i : order) {
      if (!Valid(c, cands[i], allow_borrowing)) continue;
      usage(i, -1);
      (void)sim.Release(e_.wls[cands[i].c.id].info.key);
      removed.push_back(i);
      if (!Fits(c, allow_borrowing)) continue;
      if (budget_-- <= 0) break;
      if (sim.Place(req).ok()) {
        fits = true;
        break;
      }
    }
    std::vector<char> out(removed.size(), 1);
    if (fits) {
      // The last one removed is needed by construction.
      for (int i = static_cast<int>(removed.size()) - 2; i >= 0; --i) {
        usage(removed[i], +1);
        out[i] = 0;
        if (!Fits(c, allow_borrowing) || !PlacesWithout(req, cands, removed, &out)) {
          usage(removed[i], -1);
          out[i] = 1;
        }
      }
    }
    std::vector<size_t> victims;
    for (size_t j = 0; j < removed.size(); ++j) {
      if (!out[j]) continue;
      usage(removed[j], +1);
      if (fits) victims.push_back(removed[j]);
    }
    return victims;
  }

  EngineImpl& e_;
  const placement::GangRequest& gang_;
  std::vector<int32_t> scope_;
  bool checked_ = false, hopeless_ = false;
  int budget_ = kMaxPlacements;
};

std::vector<Target> ComputeTargets(EngineImpl& e, WlId wl, CqId cqi, const FrAmounts& request,
                                   PlacementSearch* nodes) {
  const CqRt& cq = e.cqs[cqi];
  const QuotaTree& t = e.tree;
  std::vector<FrId>& need = Scratch(e).need;
  need.clear();
  Ctx c{e, wl, cqi, cq.node, request, need};
  for (const auto& [fr, a] : request) {
    // For placement every requested flavor-resource counts as needed
    // (Kueue marks the flavor Preempt when its topology assignment fails).
    if (nodes != nullptr ? a > 0 : a > t.Available(cq.node, fr)) c.need.push_back(fr);
  }
  if (c.need.empty()) return {};
  const PreemptionSpec& pol = cq.spec->preemption;
  const bool prune = nodes == nullptr && e.opts.prune_preemption_search;
  if (nodes == nullptr && e.opts.candidate_index && !e.opts.admission_fair_sharing) {
    if (prune) {
      // A search that needs few candidates costs less than the bound: try
      // it first. The bound only fails where the search would, so the
      // answer is the same either way; protections noted by a search cut
      // short are forgotten, as when the bound failed before any search.
      constexpr size_t kCheapSearch = 32;
      const Time outer = e.protect_min;
      if (std::optional<std::vector<Target>> quick = IndexedTargets(c, pol, kCheapSearch))
        return *std::move(quick);
      e.protect_min = outer;
      if (!MayFitWithoutAllCandidates(c, pol)) return {};
    }
    return *IndexedTargets(c, pol);
  }
  if (prune && !MayFitWithoutAllCandidates(c, pol)) return {};
  const Wl& w = e.wls[wl];
  const bool bwc = pol.borrow_within_cohort == BorrowWithinCohortPolicy::kLowerPriority;
  auto make = [&](WlId id, CqId vcq, EvictionReason reason) {
    const Wl& v = e.wls[id];
    double afs = e.opts.admission_fair_sharing && v.lq.valid() ? e.AfsUsage(v.lq) : 0.0;
    return Cand{id,          vcq,       reason,          v.info.state == WorkloadState::kEvicting,
                vcq == cqi,  afs,       v.info.priority, v.info.admitted_at,
                v.admit_seq, v.info.uid};
  };
  std::vector<Candidate> same, hier, prio;
  // Same-queue candidates.
  for (WlId id : cq.admitted) {
    const Wl& v = e.wls[id];
    if (id == wl || !UsesAny(v, c.need) || PriorityTooHigh(w, v, true, pol)) continue;
    if (nodes != nullptr && !nodes->Relevant(id)) continue;
    if (e.Protected(id, EvictionReason::kInClusterQueue)) continue;  // minimum runtime
    same.push_back({make(id, cqi, EvictionReason::kInClusterQueue), Variant::kWithinCq, NodeId()});
  }
  // Other queues, level by level up the tree. The preemptor has a
  // hierarchical advantage over a subtree once the request fits within the
  // quota of its queue or of a cohort below the common ancestor.
  // Under fair sharing, placement preemption stays within the queue (the
  // cohort's victims are chosen by FairSharingTargets on quota only).
  const bool cohort = nodes == nullptr || e.preemption->PlacementVictimsInCohort();
  if (cohort && t.node(cq.node).parent.valid() &&
      pol.reclaim_within_cohort != ReclaimWithinCohortPolicy::kNever) {
    FrAmounts remaining;
    std::vector<NodeId> stack;
    WalkCohortQueues(
        c, remaining, stack, [](bool, bool) { return true; },
        [&](NodeId n, NodeId cur, bool advantage) {
          CqId ocq = e.cq_of_node[n];
          for (WlId id : e.cqs[ocq].admitted) {
            const Wl& v = e.wls[id];
            if (!UsesAny(v, c.need) || PriorityTooHigh(w, v, false, pol)) continue;
            if (nodes != nullptr && !nodes->Relevant(id)) continue;
            const bool while_borrowing =
                !advantage && bwc && v.info.priority < w.info.priority &&
                !(pol.max_priority_threshold && v.info.priority > *pol.max_priority_threshold);
            if (e.Protected(id, while_borrowing ? EvictionReason::kInCohortReclaimWhileBorrowing
                                                : EvictionReason::kInCohortReclamation))
              continue;  // minimum runtime
            if (advantage) {
              hier.push_back(
                  {make(id, ocq, EvictionReason::kInCohortReclamation), Variant::kHierarchicalReclaim, cur});
            } else if (!bwc || v.info.priority >= w.info.priority ||
                       (pol.max_priority_threshold && v.info.priority > *pol.max_priority_threshold)) {
              prio.push_back({make(id, ocq, EvictionReason::kInCohortReclamation),
                              Variant::kReclaimWithoutBorrowing, cur});
            } else {
              prio.push_back({make(id, ocq, EvictionReason::kInCohortReclaimWhileBorrowing),
                              Variant::kReclaimWhileBorrowing, cur});
            }
          }
        });
  }
  if (same.empty() && hier.empty() && prio.empty()) return {};
  bool no_other = hier.empty() && prio.empty();
  bool no_hier = hier.empty();
  std::vector<Candidate> all = std::move(same);
  all.insert(all.end(), hier.begin(), hier.end());
  all.insert(all.end(), prio.begin(), prio.end());
  LazyOrder order(std::move(all));
  const AttemptList attempts = Attempts(c, no_other, no_hier, bwc);
  std::vector<Candidate> sorted;
  if (nodes != nullptr) {
    for (size_t i = 0; order.At(i) != nullptr; ++i) sorted.push_back(*order.At(i));
  }
  for (bool allow_borrowing : attempts) {
    std::vector<Target> targets =
        nodes != nullptr ? nodes->Run(c, sorted, allow_borrowing) : Minimal(c, order, allow_borrowing);
    if (!targets.empty()) return targets;
  }
  return {};
}

}  // namespace

bool PlacesWithout(EngineImpl& e, WlId wl, const Assignment& a, const std::vector<Target>& victims) {
  if (!e.Placed(a)) return true;
  placement::GangRequest gang;
  if (!e.BuildGang(wl, a, gang).ok()) return false;
  // Releasing the victims only frees capacity (placement has no pod
  // affinity), so a gang that places on the cluster as it is places without
  // them too, and needs no copy of the cluster: with nodes to spare, the
  // usual case of a quota-bound preemption, a copy of every node's state per
  // preempting head was most of arteld's CPU in Kueue's `tas` harness.
  if (e.cluster->Place(gang).ok()) return true;
  placement::Cluster sim = *e.cluster;
  for (const Target& t : victims) {
    const Wl& v = e.wls[t.id];
    if (v.has_placement) (void)sim.Release(v.info.key);
  }
  return sim.Place(gang).ok();
}

std::vector<Target> PlacementTargets(EngineImpl& e, WlId wl, CqId cqi, const Assignment& a) {
  if (!e.Placed(a)) return {};
  const PreemptionSpec& pol = e.cqs[cqi].spec->preemption;
  if (pol.within_cluster_queue == WithinClusterQueuePolicy::kNever &&
      (!e.tree.node(e.cqs[cqi].node).parent.valid() ||
       pol.reclaim_within_cohort == ReclaimWithinCohortPolicy::kNever)) {
    return {};
  }
  placement::GangRequest gang;
  if (!e.BuildGang(wl, a, gang).ok()) return {};
  // Protections this search skips (minimum runtime, its own preemption
  // delay) are recorded on the workload, as for a nomination.
  const Time outer = e.protect_min;
  const bool outer_delay = e.protect_delay;
  e.protect_min = -1;
  e.protect_delay = false;
  std::vector<Target> targets;
  if (!e.DelayHeld(wl)) {
    PlacementSearch search(e, gang);
    targets = ComputeTargets(e, wl, cqi, a.usage, &search);
  }
  for (Target& t : targets) t.nodes = true;
  Wl& w = e.wls[wl];
  if (e.protect_min > e.now) {
    if (w.protected_until <= e.now || e.protect_min < w.protected_until) w.protected_until = e.protect_min;
    w.delay_held = w.delay_held || e.protect_delay;
    e.protect_wakeups.emplace(e.protect_min, e.tree.Root(e.cqs[cqi].node));
  }
  e.protect_min = outer;
  e.protect_delay = outer_delay;
  return targets;
}

}  // namespace artel::core
