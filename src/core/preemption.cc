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
  if (a.admit_seq != b.admit_seq) return a.admit_seq > b.admit_seq;
  return a.uid < b.uid;
}

bool UsesAny(const Wl& w, const std::vector<int32_t>& frs) {
  for (const auto& [fr, a] : w.usage) {
    if (a > 0 && std::find(frs.begin(), frs.end(), fr) != frs.end()) return true;
  }
  return false;
}

bool BorrowingInAny(const QuotaTree& t, int32_t n, const std::vector<int32_t>& frs) {
  for (int32_t fr : frs) {
    if (t.IsBorrowing(n, fr)) return true;
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

namespace {

struct Ctx {
  EngineImpl& e;
  WlId wl;
  int32_t cq;
  int32_t node;
  const FrAmounts& request;
  std::vector<int32_t> need;
  int32_t absorb_level = -1;  // -1: no absorbing node
};

bool Fits(const Ctx& c, bool allow_borrowing) {
  for (const auto& [fr, a] : c.request) {
    if (a > c.e.tree.Available(c.node, fr)) return false;
    if (!allow_borrowing && c.e.tree.BorrowingLevel(c.node, fr, a) > std::max(0, c.absorb_level)) return false;
  }
  return true;
}

// Is a candidate in another queue still valid: its queue and every cohort
// below the lowest common ancestor still over quota?
bool StillBorrowing(const Ctx& c, int32_t other_node) {
  const QuotaTree& t = c.e.tree;
  int32_t lca = t.Lca(c.node, other_node);
  for (int32_t n = other_node; n >= 0 && n != lca; n = t.node(n).parent) {
    if (!BorrowingInAny(t, n, c.need)) return false;
  }
  return true;
}

std::vector<Target> Minimal(Ctx& c, const std::vector<Cand>& cands, bool allow_borrowing) {
  QuotaTree& t = c.e.tree;
  std::vector<const Cand*> removed;
  bool fits = false;
  for (const Cand& cand : cands) {
    const Wl& v = c.e.wls[cand.id];
    if (!cand.own && !StillBorrowing(c, c.e.cqs[cand.cq].node)) continue;
    t.AddUsage(c.e.cqs[cand.cq].node, v.usage, -1);
    removed.push_back(&cand);
    if (Fits(c, allow_borrowing)) {
      fits = true;
      break;
    }
  }
  std::vector<Target> targets;
  if (fits) {
    // Fill back: the last one removed is needed by construction.
    std::vector<char> keep_out(removed.size(), 1);
    for (int i = static_cast<int>(removed.size()) - 2; i >= 0; --i) {
      const Cand& cand = *removed[i];
      t.AddUsage(c.e.cqs[cand.cq].node, c.e.wls[cand.id].usage, +1);
      if (Fits(c, allow_borrowing)) {
        keep_out[i] = 0;
      } else {
        t.AddUsage(c.e.cqs[cand.cq].node, c.e.wls[cand.id].usage, -1);
      }
    }
    for (size_t i = 0; i < removed.size(); ++i) {
      if (keep_out[i]) targets.push_back({removed[i]->id, removed[i]->reason});
    }
    for (size_t i = 0; i < removed.size(); ++i) {
      if (keep_out[i]) t.AddUsage(c.e.cqs[removed[i]->cq].node, c.e.wls[removed[i]->id].usage, +1);
    }
  } else {
    for (const Cand* cand : removed) t.AddUsage(c.e.cqs[cand->cq].node, c.e.wls[cand->id].usage, +1);
  }
  return targets;
}

}  // namespace

std::vector<Target> GetTargets(EngineImpl& e, WlId wl, int32_t cqi, const FrAmounts& request) {
  if (e.opts.fair_sharing) return FairSharingTargets(e, wl, cqi, request);
  const CqRt& cq = e.cqs[cqi];
  const QuotaTree& t = e.tree;
  Ctx c{e, wl, cqi, cq.node, request, {}, -1};
  for (const auto& [fr, a] : request) {
    if (a > t.Available(cq.node, fr)) c.need.push_back(fr);
  }
  if (c.need.empty()) return {};
  // The absorbing node: the lowest node on the path (the queue itself, or a
  // non-root cohort) that holds the request within its subtree quota.
  int32_t absorb = -1;
  {
    int32_t n = cq.node;
    int32_t level = 0;
    FrAmounts delta(request.begin(), request.end());
    while (n >= 0) {
      const auto& node = t.node(n);
      bool is_root = node.parent < 0;
      if (is_root && n != cq.node) break;
      bool ok = true;
      for (const auto& [fr, d] : delta) {
        if (std::find(c.need.begin(), c.need.end(), fr) == c.need.end()) continue;
        if (node.usage[fr] + d > node.subtree[fr]) ok = false;
      }
      if (ok) {
        absorb = n;
        c.absorb_level = level;
        break;
      }
      if (is_root) break;
      for (auto& [fr, d] : delta) d = t.PropagatedDelta(n, fr, node.usage[fr], node.usage[fr] + d);
      n = node.parent;
      ++level;
    }
  }
  const Wl& w = e.wls[wl];
  const int32_t prio = w.info.priority;
  const PreemptionSpec& pol = cq.spec->preemption;
  std::vector<Cand> cands;
  auto make = [&](WlId id, int32_t vcq, EvictionReason reason) {
    const Wl& v = e.wls[id];
    double afs = e.opts.admission_fair_sharing && v.lq >= 0 ? e.AfsUsage(v.lq) : 0.0;
    cands.push_back(Cand{id, vcq, reason, v.info.state == WorkloadState::kEvicting, vcq == cqi, afs,
                         v.info.priority, v.info.admitted_at, v.admit_seq, v.info.uid});
  };
  // Same-queue candidates.
  if (pol.within_cluster_queue != WithinClusterQueuePolicy::kNever) {
    for (WlId id : cq.admitted) {
      const Wl& v = e.wls[id];
      if (id == wl || !UsesAny(v, c.need)) continue;
      bool ok = v.info.priority < prio;
      if (!ok && pol.within_cluster_queue == WithinClusterQueuePolicy::kLowerOrNewerEqualPriority) {
        ok = v.info.priority == prio &&
             (v.info.created > w.info.created || (v.info.created == w.info.created && v.info.uid > w.info.uid));
      }
      if (ok) make(id, cqi, EvictionReason::kInClusterQueue);
    }
  }
  // Other queues in the same cohort tree.
  bool reclaim_policy = pol.reclaim_within_cohort != ReclaimWithinCohortPolicy::kNever;
  bool bwc = pol.borrow_within_cohort == BorrowWithinCohortPolicy::kLowerPriority;
  if (t.node(cq.node).parent >= 0 && (reclaim_policy || bwc)) {
    int32_t root = t.Root(cq.node);
    for (int32_t ocq : e.root_cqs[root]) {
      if (ocq == cqi) continue;
      const CqRt& other = e.cqs[ocq];
      if (other.admitted.empty() || !BorrowingInAny(t, other.node, c.need)) continue;
      int32_t lca = t.Lca(cq.node, other.node);
      bool reclaim_ok = reclaim_policy && absorb >= 0 && t.node(absorb).depth > t.node(lca).depth;
      for (WlId id : other.admitted) {
        const Wl& v = e.wls[id];
        if (!UsesAny(v, c.need)) continue;
        if (reclaim_ok &&
            (pol.reclaim_within_cohort == ReclaimWithinCohortPolicy::kAny || v.info.priority < prio)) {
          make(id, ocq, EvictionReason::kInCohortReclamation);
        } else if (bwc && v.info.priority < prio &&
                   (!pol.max_priority_threshold || v.info.priority <= *pol.max_priority_threshold)) {
          make(id, ocq, EvictionReason::kInCohortReclaimWhileBorrowing);
        }
      }
    }
  }
  if (cands.empty()) return {};
  std::sort(cands.begin(), cands.end(), CandLess);
  bool any_other = std::any_of(cands.begin(), cands.end(), [](const Cand& x) { return !x.own; });
  if (!any_other || (!bwc && absorb < 0)) return Minimal(c, cands, true);
  if (!bwc) {
    std::vector<Target> targets = Minimal(c, cands, false);
    if (!targets.empty()) return targets;
    std::vector<Cand> own;
    for (const Cand& x : cands) {
      if (x.own) own.push_back(x);
    }
    if (own.empty()) return {};
    return Minimal(c, own, true);
  }
  return Minimal(c, cands, true);
}

}  // namespace artel::core
