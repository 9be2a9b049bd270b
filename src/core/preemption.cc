#include "core/preemption.h"

#include <algorithm>

namespace artel::core {
namespace {

struct Cand {
  WlId id;
  int32_t cq;
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

bool UsesAny(const Wl& w, const std::vector<int32_t>& frs) {
  for (const auto& [fr, a] : w.usage) {
    if (a > 0 && std::find(frs.begin(), frs.end(), fr) != frs.end()) return true;
  }
  return false;
}

}  // namespace

int32_t WlPriority(const EngineImpl& e, WlId id) { return e.wls[id].info.priority; }

bool FitsNow(const EngineImpl& e, int32_t cq, const FrAmounts& request) {
  int32_t node = e.cqs[cq].node;
  for (const auto& [fr, a] : request) {
    if (a > e.tree.Available(node, fr)) return false;
  }
  return true;
}

std::vector<Target> FillBackAndRestore(EngineImpl& e, const std::vector<Target>& removed, bool fitted,
                                       const std::function<bool()>& fits) {
  QuotaTree& t = e.tree;
  auto put_back = [&](WlId id, int sign) { t.AddUsage(e.cqs[e.wls[id].cq].node, e.wls[id].usage, sign); };
  std::vector<Target> targets;
  if (!fitted) {
    for (const Target& x : removed) put_back(x.id, +1);
    return targets;
  }
  // The last one removed is needed by construction.
  std::vector<char> keep_out(removed.size(), 1);
  for (int i = static_cast<int>(removed.size()) - 2; i >= 0; --i) {
    put_back(removed[i].id, +1);
    if (fits()) {
      keep_out[i] = 0;
    } else {
      put_back(removed[i].id, -1);
    }
  }
  for (size_t i = 0; i < removed.size(); ++i) {
    if (!keep_out[i]) continue;
    targets.push_back(removed[i]);
    put_back(removed[i].id, +1);
  }
  return targets;
}

namespace {

// Kueue's candidate variants (see hierarchical reclaim in docs/semantics.md).
enum class Variant { kWithinCq, kHierarchicalReclaim, kReclaimWithoutBorrowing, kReclaimWhileBorrowing };

struct Ctx {
  EngineImpl& e;
  WlId wl;
  int32_t cq;
  int32_t node;
  const FrAmounts& request;
  std::vector<int32_t> need;
};

struct Candidate {
  Cand c;
  Variant variant;
  int32_t lca;  // tree node of the lowest common ancestor; -1 for the same queue
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

bool WithinNominal(const QuotaTree& t, int32_t n, const std::vector<int32_t>& frs) {
  for (int32_t fr : frs) {
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
  int32_t n = c.e.cqs[cand.c.cq].node;
  if (WithinNominal(t, n, c.need)) return false;
  for (n = t.node(n).parent; n >= 0 && n != cand.lca; n = t.node(n).parent) {
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

 private:
  // Evicting first; then hierarchical, priority-based, same-queue; then
  // the candidate order of Kueue.
  static int Group(const Candidate& x) {
    int g = x.variant == Variant::kWithinCq ? 2 : x.variant == Variant::kHierarchicalReclaim ? 0 : 1;
    return (x.c.evicting ? 0 : 3) + g;
  }
  static bool Less(const Candidate& a, const Candidate& b) {
    int ga = Group(a), gb = Group(b);
    if (ga != gb) return ga < gb;
    return CandLess(a.c, b.c);
  }
  static bool Greater(const Candidate& a, const Candidate& b) { return Less(b, a); }
  std::vector<Candidate> heap_;
  std::vector<Candidate> prefix_;
};

std::vector<Target> Minimal(Ctx& c, LazyOrder& order, bool allow_borrowing) {
  QuotaTree& t = c.e.tree;
  std::vector<Target> removed;
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
  return FillBackAndRestore(c.e, removed, fits, [&] { return Fits(c, allow_borrowing); });
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

}  // namespace

namespace {
std::vector<Target> ComputeTargets(EngineImpl& e, WlId wl, int32_t cqi, const FrAmounts& request);

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
bool MayFitWithoutAllCandidates(Ctx& c, const PreemptionSpec& pol) {
  QuotaTree& t = c.e.tree;
  const int32_t own = c.node;
  const bool within = pol.within_cluster_queue != WithinClusterQueuePolicy::kNever;
  const bool bwc = pol.borrow_within_cohort == BorrowWithinCohortPolicy::kLowerPriority;
  std::vector<int32_t>& queues = c.e.bound_queues;
  queues.clear();
  if (within) queues.push_back(own);
  if (t.node(own).parent >= 0 && pol.reclaim_within_cohort != ReclaimWithinCohortPolicy::kNever) {
    bool advantage = true;
    FrAmounts& remaining = c.e.bound_remaining;
    remaining.assign(c.request.begin(), c.request.end());
    {
      const auto& n = t.node(own);
      for (auto& [fr, a] : remaining) {
        if (n.usage[fr] + a > n.subtree[fr]) advantage = false;
        a = t.PropagatedDelta(own, fr, n.usage[fr], n.usage[fr] + a);
      }
    }
    // Without an advantage at the queue itself, a fit without borrowing
    // needs the own queue to shrink, which only same-queue preemption does.
    const bool fit_without_borrowing_possible = advantage || within;
    int32_t prev = own;
    for (int32_t cur = t.node(own).parent; cur >= 0; prev = cur, cur = t.node(cur).parent) {
      const bool usable = advantage || bwc || fit_without_borrowing_possible;
      if (usable) {
        std::vector<int32_t>& stack = c.e.bound_stack;
        stack.clear();
        for (int32_t child : t.node(cur).children) {
          if (child != prev) stack.push_back(child);
        }
        while (!stack.empty()) {
          int32_t n = stack.back();
          stack.pop_back();
          if (WithinNominal(t, n, c.need)) continue;
          if (t.node(n).is_cohort) {
            for (int32_t child : t.node(n).children) stack.push_back(child);
            continue;
          }
          queues.push_back(n);
        }
      }
      const auto& cn = t.node(cur);
      bool fits_here = true;
      for (auto& [fr, a] : remaining) {
        if (cn.usage[fr] + a > cn.subtree[fr]) fits_here = false;
        if (cn.parent >= 0) a = t.PropagatedDelta(cur, fr, cn.usage[fr], cn.usage[fr] + a);
      }
      advantage = advantage || fits_here;
    }
  }
  if (queues.empty()) return false;
  FrAmounts& removed = c.e.bound_removed;  // (queue index in `queues`, fr) flattened below
  removed.clear();
  for (size_t q = 0; q < queues.size(); ++q) {
    const int32_t n = queues[q];
    const bool own_queue = n == own;
    for (int32_t fr : c.need) {
      Amount u = t.node(n).usage[fr];
      if (u <= 0) continue;
      // Another queue gives up candidates only while it is above its quota;
      // with one needed resource, the last one taken overshoots by at most
      // one workload.
      if (!own_queue && c.need.size() == 1) {
        Amount biggest = 0;
        for (WlId id : c.e.cqs[c.e.cq_of_node[n]].admitted) {
          for (const auto& [f, a] : c.e.wls[id].usage) {
            if (f == fr) biggest = std::max(biggest, a);
          }
        }
        u = std::min(u, t.node(n).usage[fr] - t.node(n).subtree[fr] + biggest);
        if (u <= 0) continue;
      }
      t.AddUsage(queues[q], fr, -u);
      removed.emplace_back(static_cast<int32_t>(q) * static_cast<int32_t>(t.num_frs()) + fr, u);
    }
  }
  const bool fits = Fits(c, true);
  for (const auto& [key, u] : removed) {
    int32_t q = key / static_cast<int32_t>(t.num_frs());
    int32_t fr = key % static_cast<int32_t>(t.num_frs());
    t.AddUsage(queues[q], fr, u);
  }
  return fits;
}
}  // namespace

// Preemption answers depend on the workload only through its priority, its
// queue time and uid (LowerOrNewerEqualPriority) and its request, and on the
// state only through usage, evictions and configuration: while
// `state_gen` is unchanged the answer is memoised per ClusterQueue. This
// keeps heads that keep failing, and preemptors waiting for their victims,
// from repeating the same search in every cycle of one `Schedule` call.
std::vector<Target> GetTargets(EngineImpl& e, WlId wl, int32_t cqi, const FrAmounts& request) {
  CqRt& cq = e.cqs[cqi];
  const Wl& w = e.wls[wl];
  const bool memoise = !e.opts.admission_fair_sharing;
  // Queue time and uid matter only for LowerOrNewerEqualPriority.
  const bool by_age =
      cq.spec->preemption.within_cluster_queue == WithinClusterQueuePolicy::kLowerOrNewerEqualPriority;
  const Time queued_at = by_age ? w.info.queued_at : 0;
  const uint64_t uid = by_age ? w.info.uid : 0;
  if (memoise) {
    for (const TargetMemo& m : cq.memo) {
      if (m.gen == e.state_gen && m.overlay == e.overlay_gen && m.priority == w.info.priority && m.queued_at == queued_at && m.uid == uid &&
          m.request == request) {
        return m.targets;
      }
    }
  }
  std::vector<Target> targets = e.opts.fair_sharing ? FairSharingTargets(e, wl, cqi, request)
                                                    : ComputeTargets(e, wl, cqi, request);
  if (memoise) {
    constexpr size_t kMemoSize = 4;
    TargetMemo m{e.state_gen, e.overlay_gen, w.info.priority, queued_at, uid, request, targets};
    if (cq.memo.size() < kMemoSize) {
      cq.memo.push_back(std::move(m));
    } else {
      cq.memo[cq.memo_next] = std::move(m);
      cq.memo_next = (cq.memo_next + 1) % kMemoSize;
    }
  }
  return targets;
}

namespace {

std::vector<Target> ComputeTargets(EngineImpl& e, WlId wl, int32_t cqi, const FrAmounts& request) {
  const CqRt& cq = e.cqs[cqi];
  const QuotaTree& t = e.tree;
  Ctx c{e, wl, cqi, cq.node, request, {}};
  for (const auto& [fr, a] : request) {
    if (a > t.Available(cq.node, fr)) c.need.push_back(fr);
  }
  if (c.need.empty()) return {};
  const PreemptionSpec& pol = cq.spec->preemption;
  if (e.opts.prune_preemption_search && !MayFitWithoutAllCandidates(c, pol)) return {};
  const Wl& w = e.wls[wl];
  const bool bwc = pol.borrow_within_cohort == BorrowWithinCohortPolicy::kLowerPriority;
  auto make = [&](WlId id, int32_t vcq, EvictionReason reason) {
    const Wl& v = e.wls[id];
    double afs = e.opts.admission_fair_sharing && v.lq >= 0 ? e.AfsUsage(v.lq) : 0.0;
    return Cand{id, vcq, reason, v.info.state == WorkloadState::kEvicting, vcq == cqi, afs,
                v.info.priority, v.info.admitted_at, v.admit_seq, v.info.uid};
  };
  std::vector<Candidate> same, hier, prio;
  // Same-queue candidates.
  for (WlId id : cq.admitted) {
    const Wl& v = e.wls[id];
    if (id == wl || !UsesAny(v, c.need) || PriorityTooHigh(w, v, true, pol)) continue;
    same.push_back({make(id, cqi, EvictionReason::kInClusterQueue), Variant::kWithinCq, -1});
  }
  // Other queues, level by level up the tree. The preemptor has a
  // hierarchical advantage over a subtree once the request fits within the
  // quota of its queue or of a cohort below the common ancestor.
  if (t.node(cq.node).parent >= 0 && pol.reclaim_within_cohort != ReclaimWithinCohortPolicy::kNever) {
    bool advantage = true;
    FrAmounts remaining(request.begin(), request.end());
    {
      const auto& n = t.node(cq.node);
      for (auto& [fr, a] : remaining) {
        if (n.usage[fr] + a > n.subtree[fr]) advantage = false;
        a = t.PropagatedDelta(cq.node, fr, n.usage[fr], n.usage[fr] + a);
      }
    }
    int32_t prev = cq.node;
    for (int32_t cur = t.node(cq.node).parent; cur >= 0; prev = cur, cur = t.node(cur).parent) {
      // Collect from the subtrees of `cur` other than `prev`, descending only
      // into subtrees that exceed their quota.
      std::vector<int32_t> stack;
      for (int32_t child : t.node(cur).children) {
        if (child != prev) stack.push_back(child);
      }
      while (!stack.empty()) {
        int32_t n = stack.back();
        stack.pop_back();
        if (WithinNominal(t, n, c.need)) continue;
        if (t.node(n).is_cohort) {
          for (int32_t child : t.node(n).children) stack.push_back(child);
          continue;
        }
        int32_t ocq = e.cq_of_node[n];
        for (WlId id : e.cqs[ocq].admitted) {
          const Wl& v = e.wls[id];
          if (!UsesAny(v, c.need) || PriorityTooHigh(w, v, false, pol)) continue;
          if (advantage) {
            hier.push_back({make(id, ocq, EvictionReason::kInCohortReclamation), Variant::kHierarchicalReclaim, cur});
          } else if (!bwc || v.info.priority >= w.info.priority ||
                     (pol.max_priority_threshold && v.info.priority > *pol.max_priority_threshold)) {
            prio.push_back(
                {make(id, ocq, EvictionReason::kInCohortReclamation), Variant::kReclaimWithoutBorrowing, cur});
          } else {
            prio.push_back({make(id, ocq, EvictionReason::kInCohortReclaimWhileBorrowing),
                            Variant::kReclaimWhileBorrowing, cur});
          }
        }
      }
      const auto& cn = t.node(cur);
      bool fits_here = true;
      for (auto& [fr, a] : remaining) {
        if (cn.usage[fr] + a > cn.subtree[fr]) fits_here = false;
        if (cn.parent >= 0) a = t.PropagatedDelta(cur, fr, cn.usage[fr], cn.usage[fr] + a);
      }
      advantage = advantage || fits_here;
    }
  }
  if (same.empty() && hier.empty() && prio.empty()) return {};
  bool no_other = hier.empty() && prio.empty();
  bool no_hier = hier.empty();
  std::vector<Candidate> all = std::move(same);
  all.insert(all.end(), hier.begin(), hier.end());
  all.insert(all.end(), prio.begin(), prio.end());
  LazyOrder order(std::move(all));
  bool under_nominal = true;
  for (int32_t fr : c.need) {
    if (t.node(cq.node).usage[fr] >= t.node(cq.node).nominal[fr]) under_nominal = false;
  }
  std::vector<bool> attempts;
  if (no_other || (!bwc && !under_nominal)) {
    attempts = {true};
  } else if (!bwc && no_hier) {
    attempts = {false, true};
  } else {
    attempts = {true, false};
  }
  for (bool allow_borrowing : attempts) {
    std::vector<Target> targets = Minimal(c, order, allow_borrowing);
    if (!targets.empty()) return targets;
  }
  return {};
}

}  // namespace

}  // namespace artel::core
