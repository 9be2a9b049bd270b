#include "core/fair_sharing.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "core/preemption.h"

namespace artel::core {

namespace {

Drs ShareOf(const EngineImpl& e, NodeId n) {
  const QuotaTree& t = e.tree;
  const auto& node = t.node(n);
  Drs d;
  d.weight = static_cast<double>(node.fair_weight) / 1000.0;
  if (!node.parent.valid()) return d;
  size_t nres = e.resources.size();
  IdVector<ResourceId, Amount> borrowed(nres, 0), lendable(nres, 0);
  bool any = false;
  for (FrId fr : t.frs()) {
    ResourceId res = t.FrKey(fr).second;
    Amount b = node.usage[fr] - node.subtree[fr];
    if (b > 0) {
      borrowed[res] += b;
      any = true;
    }
  }
  if (!any) return d;
  d.borrowing = true;
  for (FrId fr : t.frs()) {
    ResourceId res = t.FrKey(fr).second;
    if (borrowed[res] > 0) lendable[res] += t.PotentialAvailable(node.parent, fr);
  }
  for (ResourceId r : borrowed.ids()) {
    if (borrowed[r] > 0 && lendable[r] > 0) {
      d.ratio =
          std::max(d.ratio, static_cast<double>(borrowed[r]) * 1000.0 / static_cast<double>(lendable[r]));
    }
  }
  return d;
}

}  // namespace

int CompareDrs(const Drs& a, const Drs& b) {
  auto cmp = [](double x, double y) { return x < y ? -1 : (x > y ? 1 : 0); };
  if (a.ZeroWeightBorrows() && b.ZeroWeightBorrows()) return cmp(a.ratio, b.ratio);
  if (a.ZeroWeightBorrows()) return 1;
  if (b.ZeroWeightBorrows()) return -1;
  return cmp(a.Precise(), b.Precise());
}

int64_t Drs::Rounded() const {
  if (ZeroWeightBorrows()) return std::numeric_limits<int64_t>::max();
  double p = Precise();
  if (p >= 9.2e18) return std::numeric_limits<int64_t>::max();
  return static_cast<int64_t>(std::ceil(p));
}

Drs DominantShare(EngineImpl& e, NodeId n, CqId cq_for_extra, const FrAmounts* extra) {
  if (extra == nullptr || !cq_for_extra.valid()) return ShareOf(e, n);
  e.tree.AddUsage(e.cqs[cq_for_extra].node, *extra, +1);
  Drs s = ShareOf(e, n);
  e.tree.AddUsage(e.cqs[cq_for_extra].node, *extra, -1);
  return s;
}

// ---------------------------------------------------------------------------
// Tournament ordering.

namespace {

struct Score {
  bool borrows;
  Drs share;
  int32_t neg_priority;
  Time queued_at;
  uint64_t uid;
  bool operator<(const Score& o) const {
    if (borrows != o.borrows) return !borrows;
    if (int c = CompareDrs(share, o.share); c != 0) return c < 0;
    if (neg_priority != o.neg_priority) return neg_priority < o.neg_priority;
    if (queued_at != o.queued_at) return queued_at < o.queued_at;
    return uid < o.uid;
  }
};

struct Tournament {
  EngineImpl& e;
  const std::vector<Entry>& entries;
  const std::vector<char>& done;
  IdVector<NodeId, int32_t> entry_of_node;  // tree node -> entry index (CQs)
  IdVector<NodeId, char> has_entry;         // subtree has a live entry

  int32_t Winner(NodeId n) {
    if (!has_entry[n]) return -1;
    const auto& node = e.tree.node(n);
    if (!node.is_cohort) return entry_of_node[n];
    int32_t best = -1;
    Score best_score{};
    for (NodeId child : node.children) {
      int32_t w = Winner(child);
      if (w < 0) continue;
      const Entry& en = entries[w];
      bool borrows = false;
      e.tree.AddUsage(e.cqs[en.cq].node, en.assignment.usage, +1);
      for (const auto& [fr, a] : en.assignment.usage) {
        (void)a;
        borrows = borrows || e.tree.IsBorrowing(child, fr);
      }
      Drs share = ShareOf(e, child);
      e.tree.AddUsage(e.cqs[en.cq].node, en.assignment.usage, -1);
      const Wl& wl = e.wls[en.wl];
      Score s{borrows, share, -wl.info.priority, wl.info.queued_at, wl.info.uid};
      if (best < 0 || s < best_score) {
        best = w;
        best_score = s;
      }
    }
    return best;
  }
};

}  // namespace

int32_t FairSharingPickNext(EngineImpl& e, const std::vector<Entry>& entries, const std::vector<char>& done) {
  Tournament t{e, entries, done, IdVector<NodeId, int32_t>(e.tree.num_nodes(), -1),
               IdVector<NodeId, char>(e.tree.num_nodes(), 0)};
  std::vector<NodeId> roots;
  for (size_t i = 0; i < done.size(); ++i) {  // entries past done.size() are not live
    if (done[i]) continue;
    NodeId n = e.cqs[entries[i].cq].node;
    t.entry_of_node[n] = static_cast<int32_t>(i);
    while (n.valid() && !t.has_entry[n]) {
      t.has_entry[n] = 1;
      if (!e.tree.node(n).parent.valid()) roots.push_back(n);
      n = e.tree.node(n).parent;
    }
  }
  int32_t best = -1;
  Score best_score{};
  for (NodeId r : roots) {
    int32_t w = t.Winner(r);
    if (w < 0) continue;
    const Wl& wl = e.wls[entries[w].wl];
    Score s{false, Drs{}, -wl.info.priority, wl.info.queued_at, wl.info.uid};
    if (best < 0 || s < best_score) {
      best = w;
      best_score = s;
    }
  }
  return best;
}

// ---------------------------------------------------------------------------
// Fair-sharing preemption.

namespace {

struct FsCand {
  WlId id;
  CqId cq;
};

bool UsesAnyFr(const Wl& w, const std::vector<FrId>& frs) {
  for (const auto& [fr, a] : w.usage) {
    if (a > 0 && std::find(frs.begin(), frs.end(), fr) != frs.end()) return true;
  }
  return false;
}

// The child of `ancestor` on the path from `n` (n itself if it is a child).
NodeId ChildBelow(const QuotaTree& t, NodeId n, NodeId ancestor) {
  while (n.valid() && t.node(n).parent != ancestor) n = t.node(n).parent;
  return n;
}

}  // namespace

std::vector<Target> FairSharingTargets(EngineImpl& e, WlId wl, CqId cqi, const FrAmounts& request) {
  QuotaTree& t = e.tree;
  const CqRt& cq = e.cqs[cqi];
  const Wl& w = e.wls[wl];
  const int32_t prio = w.info.priority;
  const PreemptionSpec& pol = cq.spec->preemption;
  std::vector<FrId> need;
  for (const auto& [fr, a] : request) {
    if (a > t.Available(cq.node, fr)) need.push_back(fr);
  }
  if (need.empty()) return {};
  auto fits = [&]() {
    for (const auto& [fr, a] : request) {
      if (a > t.Available(cq.node, fr)) return false;
    }
    return true;
  };
  // Candidates, grouped by queue, each group in candidate order.
  IdVector<CqId, std::vector<WlId>> per_cq(e.cqs.size());
  if (pol.within_cluster_queue != WithinClusterQueuePolicy::kNever) {
    bool same_prio = pol.within_cluster_queue == WithinClusterQueuePolicy::kLowerOrNewerEqualPriority;
    for (WlId id : cq.admitted) {
      const Wl& v = e.wls[id];
      if (id == wl || v.info.priority > prio) continue;
      if (v.info.priority == prio &&
          !(same_prio && (w.info.queued_at < v.info.queued_at ||
                          (w.info.queued_at == v.info.queued_at && w.info.uid < v.info.uid))))
        continue;
      if (!UsesAnyFr(v, need)) continue;
      if (e.Protected(id, EvictionReason::kInClusterQueue)) continue;  // minimum runtime
      per_cq[cqi].push_back(id);
    }
  }
  if (t.node(cq.node).parent.valid() && pol.reclaim_within_cohort != ReclaimWithinCohortPolicy::kNever) {
    bool reclaims = true;  // the preemptor stays within its nominal quota with the request
    if (e.any_protection) {
      for (const auto& [fr, a] : request) {
        if (std::find(need.begin(), need.end(), fr) == need.end()) continue;
        if (t.node(cq.node).usage[fr] + a > t.node(cq.node).nominal[fr]) reclaims = false;
      }
    }
    for (CqId ocq : e.root_cqs[t.Root(cq.node)]) {
      if (ocq == cqi) continue;
      const CqRt& other = e.cqs[ocq];
      bool borrowing = false;
      for (FrId fr : need) borrowing = borrowing || t.IsBorrowing(other.node, fr);
      if (!borrowing) continue;
      for (WlId id : other.admitted) {
        const Wl& v = e.wls[id];
        if (pol.reclaim_within_cohort == ReclaimWithinCohortPolicy::kLowerPriority && v.info.priority >= prio)
          continue;
        if (!UsesAnyFr(v, need)) continue;
        // Minimum runtime: a preemptor that stays within its nominal quota
        // reclaims (InCohortReclamation); otherwise it preempts for fairness.
        if (e.Protected(
                id, reclaims ? EvictionReason::kInCohortReclamation : EvictionReason::kInCohortFairSharing))
          continue;
        per_cq[ocq].push_back(id);
      }
    }
  }
  // Kueue's CandidatesOrdering: being evicted first, other queues before the
  // preemptor's, (Admission Fair Sharing: higher LocalQueue usage), lower
  // priority, admitted more recently, uid.
  auto cand_less = [&](WlId a, WlId b) {
    const Wl& x = e.wls[a];
    const Wl& y = e.wls[b];
    bool ex = x.info.state == WorkloadState::kEvicting, ey = y.info.state == WorkloadState::kEvicting;
    if (ex != ey) return ex;
    bool ox = x.cq != cqi, oy = y.cq != cqi;
    if (ox != oy) return ox;
    if (e.opts.admission_fair_sharing && x.lq.valid() && y.lq.valid() && x.lq != y.lq) {
      double ax = e.AfsUsage(x.lq), ay = e.AfsUsage(y.lq);
      if (ax != ay) return ax > ay;
    }
    if (x.info.priority != y.info.priority) return x.info.priority < y.info.priority;
    if (x.info.admitted_at != y.info.admitted_at) return x.info.admitted_at > y.info.admitted_at;
    return x.info.uid < y.info.uid;
  };
  // Workloads already being evicted first, across the whole tree: when the
  // preemptor fits once every one of them that holds a resource it needs has
  // stopped, it waits for them and takes no new victim. Kueue's descent by
  // share puts evicted workloads first only within a queue
  // (pkg/scheduler/preemption/fairsharing/ordering.go), so on a cluster, where
  // evictions take time, a cycle between the first and the last victim's
  // stop could pick fresh victims in another queue (docs/semantics.md,
  // "Deliberate differences"). With instant evictions (the simulator, Kueue's
  // unit tests) nothing is ever evicting here, so nothing changes.
  {
    std::vector<WlId> stopping;
    for (CqId ocq : e.root_cqs[t.Root(cq.node)]) {
      for (WlId id : e.cqs[ocq].admitted) {
        if (e.wls[id].info.state == WorkloadState::kEvicting && UsesAnyFr(e.wls[id], need))
          stopping.push_back(id);
      }
    }
    if (!stopping.empty()) {
      for (WlId id : stopping) t.AddUsage(e.cqs[e.wls[id].cq].node, e.wls[id].usage, -1);
      const bool enough = fits();
      for (WlId id : stopping) t.AddUsage(e.cqs[e.wls[id].cq].node, e.wls[id].usage, +1);
      if (enough) {
        std::vector<Target> wait;
        wait.reserve(stopping.size());
        for (WlId id : stopping) {
          wait.push_back({id, e.wls[id].cq == cqi ? EvictionReason::kInClusterQueue
                                                  : EvictionReason::kInCohortFairSharing});
        }
        return wait;
      }
    }
  }
  bool any = false;
  for (auto& v : per_cq) {
    if (v.empty()) continue;
    any = true;
    std::sort(v.begin(), v.end(), cand_less);
    std::reverse(v.begin(), v.end());  // pop from the back
  }
  if (!any) return {};

  std::vector<Target> removed;
  auto remove = [&](WlId id, EvictionReason r) {
    t.AddUsage(e.cqs[e.wls[id].cq].node, e.wls[id].usage, -1);
    removed.push_back({id, r});
  };
  // The preemptor's usage is simulated while targets are picked, so that the
  // shares account for it; it is taken out to test whether the workload fits.
  t.AddUsage(cq.node, request, +1);
  auto fits_now = [&]() {
    t.AddUsage(cq.node, request, -1);
    bool f = fits();
    t.AddUsage(cq.node, request, +1);
    return f;
  };
  std::vector<NodeId> on_path;  // cohorts on the preemptor's path
  for (NodeId n = t.node(cq.node).parent; n.valid(); n = t.node(n).parent) on_path.push_back(n);
  auto is_on_path = [&](NodeId n) { return std::find(on_path.begin(), on_path.end(), n) != on_path.end(); };
  // Shares at the children of the lowest common ancestor.
  auto shares = [&](CqId ocq, Drs* preemptor_new, NodeId* target_child) {
    NodeId lca = t.Lca(cq.node, e.cqs[ocq].node);
    *preemptor_new = ShareOf(e, ChildBelow(t, cq.node, lca));
    *target_child = ChildBelow(t, e.cqs[ocq].node, lca);
  };
  bool done = false;
  IdVector<CqId, char> pruned_cq(e.cqs.size(), 0);
  IdVector<NodeId, char> pruned_node(t.num_nodes(), 0);
  // Next target queue: descend from the root into the child with the
  // highest share (Kueue fairsharing/ordering.go). Ties between queues go to
  // the queue whose first candidate comes first in candidate order; between
  // cohorts, to the name that sorts first; a cohort wins a tie with a queue.
  std::function<CqId(NodeId)> next_target = [&](NodeId cohort) -> CqId {
    CqId best_cq;
    NodeId best_cohort;
    Drs best_cq_share, best_cohort_share;
    for (NodeId child : t.node(cohort).children) {
      if (t.node(child).is_cohort) continue;
      CqId q = e.cq_of_node[child];
      if (pruned_cq[q]) continue;
      Drs s = ShareOf(e, child);
      if ((s.IsZero() && q != cqi) || per_cq[q].empty()) {
        pruned_cq[q] = 1;
        continue;
      }
      int c = !best_cq.valid() ? 1 : CompareDrs(s, best_cq_share);
      if (c > 0 || (c == 0 && cand_less(per_cq[q].back(), per_cq[best_cq].back()))) {
        best_cq_share = s;
        best_cq = q;
      }
    }
    for (NodeId child : t.node(cohort).children) {
      if (!t.node(child).is_cohort || pruned_node[child]) continue;
      Drs s = ShareOf(e, child);
      if (s.IsZero() && !is_on_path(child)) {
        pruned_node[child] = 1;
        continue;
      }
      int c = !best_cohort.valid() ? 1 : CompareDrs(s, best_cohort_share);
      if (c > 0 || (c == 0 && t.node(child).name < t.node(best_cohort).name)) {
        best_cohort_share = s;
        best_cohort = child;
      }
    }
    if (!best_cq.valid() && !best_cohort.valid()) {
      pruned_node[cohort] = 1;
      return CqId();
    }
    if (best_cohort.valid() && (!best_cq.valid() || CompareDrs(best_cohort_share, best_cq_share) >= 0))
      return next_target(best_cohort);
    return best_cq;
  };
  const auto& strategies = e.opts.fair_sharing_strategies;
  FairSharingStrategy first =
      strategies.empty() ? FairSharingStrategy::kLessThanOrEqualToFinalShare : strategies.front();
  std::vector<WlId> retry;
  bool within_nominal = true;
  for (FrId fr : need) {
    if (t.node(cq.node).usage[fr] > t.node(cq.node).nominal[fr]) within_nominal = false;
  }
  auto run_first = [&]() {
    if (!t.node(cq.node).parent.valid()) {
      while (!done && !per_cq[cqi].empty()) {
        WlId id = per_cq[cqi].back();
        per_cq[cqi].pop_back();
        remove(id, EvictionReason::kInClusterQueue);
        done = fits_now();
      }
      return;
    }
    NodeId root = t.Root(cq.node);
    while (!done && !pruned_node[root]) {
      CqId q = next_target(root);
      if (!q.valid()) continue;
      if (q == cqi) {
        WlId id = per_cq[q].back();
        per_cq[q].pop_back();
        remove(id, EvictionReason::kInClusterQueue);
        done = fits_now();
        continue;
      }
      if (within_nominal) {
        WlId id = per_cq[q].back();
        per_cq[q].pop_back();
        remove(id, EvictionReason::kInCohortReclamation);
        done = fits_now();
        continue;
      }
      Drs preemptor_new;
      NodeId target_child;
      shares(q, &preemptor_new, &target_child);
      Drs target_old = ShareOf(e, target_child);
      if (preemptor_new.ZeroWeightBorrows() && !target_old.ZeroWeightBorrows()) {
        // A weight-0 borrower ranks above every side that is not one: no
        // candidate of this queue can pass (Kueue fsStrategyUnsatisfiable).
        // Two weight-0 borrowers compare their unweighted shares.
        while (!per_cq[q].empty()) {
          retry.push_back(per_cq[q].back());
          per_cq[q].pop_back();
        }
        continue;
      }
      while (!per_cq[q].empty()) {
        WlId id = per_cq[q].back();
        per_cq[q].pop_back();
        bool passed;
        if (first == FairSharingStrategy::kLessThanInitialShare) {
          passed = CompareDrs(preemptor_new, target_old) < 0;
        } else {
          t.AddUsage(e.cqs[q].node, e.wls[id].usage, -1);
          Drs target_new = ShareOf(e, target_child);
          t.AddUsage(e.cqs[q].node, e.wls[id].usage, +1);
          passed = CompareDrs(preemptor_new, target_new) <= 0;
        }
        if (passed) {
          remove(id, EvictionReason::kInCohortFairSharing);
          done = fits_now();
          break;  // shares changed: pick the target queue again
        }
        retry.push_back(id);
      }
    }
  };
  run_first();
  if (!done && strategies.size() > 1 && !retry.empty() && t.node(cq.node).parent.valid()) {
    // Second strategy (LessThanInitialShare) over the refused candidates:
    // at most one per queue.
    for (auto& v : per_cq) v.clear();
    for (auto it = retry.rbegin(); it != retry.rend(); ++it) per_cq[e.wls[*it].cq].push_back(*it);
    std::fill(pruned_cq.begin(), pruned_cq.end(), char{0});
    std::fill(pruned_node.begin(), pruned_node.end(), char{0});
    NodeId root = t.Root(cq.node);
    while (!done && !pruned_node[root]) {
      CqId q = next_target(root);
      if (!q.valid()) continue;
      Drs preemptor_new;
      NodeId target_child;
      shares(q, &preemptor_new, &target_child);
      Drs target_old = ShareOf(e, target_child);
      WlId id = per_cq[q].back();
      per_cq[q].pop_back();
      if (CompareDrs(preemptor_new, target_old) < 0) {
        remove(id, EvictionReason::kInCohortFairSharing);
        done = fits_now();
      }
      pruned_cq[q] = 1;
    }
  }
  t.AddUsage(cq.node, request, -1);
  return FillBackAndRestore(e, removed, done && !removed.empty(), fits);
}

}  // namespace artel::core
