#include "core/fair_sharing.h"

#include <algorithm>
#include <limits>

namespace artel::core {

namespace {
constexpr int64_t kInf = std::numeric_limits<int64_t>::max();

int64_t ShareOf(const EngineImpl& e, int32_t n) {
  const QuotaTree& t = e.tree;
  const auto& node = t.node(n);
  if (node.parent < 0) return 0;
  size_t nres = e.resources.size();
  std::vector<Amount> borrowed(nres, 0), lendable(nres, 0);
  bool any = false;
  for (size_t fr = 0; fr < t.num_frs(); ++fr) {
    int32_t res = t.FrKey(static_cast<int32_t>(fr)).second;
    Amount b = node.usage[fr] - node.subtree[fr];
    if (b > 0) {
      borrowed[res] += b;
      any = true;
    }
  }
  if (!any) return 0;
  for (size_t fr = 0; fr < t.num_frs(); ++fr) {
    int32_t res = t.FrKey(static_cast<int32_t>(fr)).second;
    if (borrowed[res] > 0) lendable[res] += t.PotentialAvailable(node.parent, static_cast<int32_t>(fr));
  }
  if (node.fair_weight == 0) return kInf;
  int64_t drs = 0;
  for (size_t r = 0; r < nres; ++r) {
    if (borrowed[r] > 0 && lendable[r] > 0) {
      __int128 ratio = static_cast<__int128>(borrowed[r]) * 1000 / lendable[r];
      drs = std::max<int64_t>(drs, static_cast<int64_t>(ratio));
    }
  }
  return static_cast<int64_t>(static_cast<__int128>(drs) * 1000 / node.fair_weight);
}

}  // namespace

int64_t DominantShare(EngineImpl& e, int32_t n, int32_t cq_for_extra, const FrAmounts* extra) {
  if (extra == nullptr || cq_for_extra < 0) return ShareOf(e, n);
  e.tree.AddUsage(e.cqs[cq_for_extra].node, *extra, +1);
  int64_t s = ShareOf(e, n);
  e.tree.AddUsage(e.cqs[cq_for_extra].node, *extra, -1);
  return s;
}

// ---------------------------------------------------------------------------
// Tournament ordering.

namespace {

struct Score {
  bool borrows;
  int64_t share;
  int32_t neg_priority;
  Time queued_at;
  uint64_t uid;
  bool operator<(const Score& o) const {
    if (borrows != o.borrows) return !borrows;
    if (share != o.share) return share < o.share;
    if (neg_priority != o.neg_priority) return neg_priority < o.neg_priority;
    if (queued_at != o.queued_at) return queued_at < o.queued_at;
    return uid < o.uid;
  }
};

struct Tournament {
  EngineImpl& e;
  const std::vector<Entry>& entries;
  const std::vector<char>& done;
  std::vector<int32_t> entry_of_node;  // tree node -> entry index (CQs)
  std::vector<char> has_entry;          // subtree has a live entry

  int32_t Winner(int32_t n) {
    if (!has_entry[n]) return -1;
    const auto& node = e.tree.node(n);
    if (!node.is_cohort) return entry_of_node[n];
    int32_t best = -1;
    Score best_score{};
    for (int32_t child : node.children) {
      int32_t w = Winner(child);
      if (w < 0) continue;
      const Entry& en = entries[w];
      bool borrows = false;
      e.tree.AddUsage(e.cqs[en.cq].node, en.assignment.usage, +1);
      for (const auto& [fr, a] : en.assignment.usage) {
        (void)a;
        borrows = borrows || e.tree.IsBorrowing(child, fr);
      }
      int64_t share = ShareOf(e, child);
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
  Tournament t{e, entries, done, std::vector<int32_t>(e.tree.num_nodes(), -1),
               std::vector<char>(e.tree.num_nodes(), 0)};
  std::vector<int32_t> roots;
  for (size_t i = 0; i < entries.size(); ++i) {
    if (done[i]) continue;
    int32_t n = e.cqs[entries[i].cq].node;
    t.entry_of_node[n] = static_cast<int32_t>(i);
    while (n >= 0 && !t.has_entry[n]) {
      t.has_entry[n] = 1;
      if (e.tree.node(n).parent < 0) roots.push_back(n);
      n = e.tree.node(n).parent;
    }
  }
  int32_t best = -1;
  Score best_score{};
  for (int32_t r : roots) {
    int32_t w = t.Winner(r);
    if (w < 0) continue;
    const Wl& wl = e.wls[entries[w].wl];
    Score s{false, 0, -wl.info.priority, wl.info.queued_at, wl.info.uid};
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
  int32_t cq;
};

bool UsesAnyFr(const Wl& w, const std::vector<int32_t>& frs) {
  for (const auto& [fr, a] : w.usage) {
    if (a > 0 && std::find(frs.begin(), frs.end(), fr) != frs.end()) return true;
  }
  return false;
}

// The child of `ancestor` on the path from `n` (n itself if it is a child).
int32_t ChildBelow(const QuotaTree& t, int32_t n, int32_t ancestor) {
  while (n >= 0 && t.node(n).parent != ancestor) n = t.node(n).parent;
  return n;
}

}  // namespace

std::vector<Target> FairSharingTargets(EngineImpl& e, WlId wl, int32_t cqi, const FrAmounts& request) {
  QuotaTree& t = e.tree;
  const CqRt& cq = e.cqs[cqi];
  const Wl& w = e.wls[wl];
  const int32_t prio = w.info.priority;
  const PreemptionSpec& pol = cq.spec->preemption;
  std::vector<int32_t> need;
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
  auto within_nominal = [&]() {
    for (const auto& [fr, a] : request) {
      if (t.node(cq.node).usage[fr] + a > t.node(cq.node).nominal[fr]) return false;
    }
    return true;
  };
  // Candidates per queue, each list in candidate order.
  std::vector<std::vector<WlId>> per_cq(e.cqs.size());
  auto order = [&](std::vector<WlId>& v) {
    std::sort(v.begin(), v.end(), [&](WlId a, WlId b) {
      const Wl& x = e.wls[a];
      const Wl& y = e.wls[b];
      bool ex = x.info.state == WorkloadState::kEvicting, ey = y.info.state == WorkloadState::kEvicting;
      if (ex != ey) return ex;
      if (x.info.priority != y.info.priority) return x.info.priority < y.info.priority;
      if (x.info.admitted_at != y.info.admitted_at) return x.info.admitted_at > y.info.admitted_at;
      if (x.admit_seq != y.admit_seq) return x.admit_seq > y.admit_seq;
      return x.info.uid < y.info.uid;
    });
  };
  std::vector<int32_t> cand_cqs;
  if (pol.within_cluster_queue != WithinClusterQueuePolicy::kNever) {
    for (WlId id : cq.admitted) {
      const Wl& v = e.wls[id];
      if (id == wl || !UsesAnyFr(v, need)) continue;
      bool ok = v.info.priority < prio;
      if (!ok && pol.within_cluster_queue == WithinClusterQueuePolicy::kLowerOrNewerEqualPriority) {
        ok = v.info.priority == prio &&
             (v.info.created > w.info.created || (v.info.created == w.info.created && v.info.uid > w.info.uid));
      }
      if (ok) per_cq[cqi].push_back(id);
    }
  }
  if (t.node(cq.node).parent >= 0 && pol.reclaim_within_cohort != ReclaimWithinCohortPolicy::kNever) {
    for (int32_t ocq : e.root_cqs[t.Root(cq.node)]) {
      if (ocq == cqi) continue;
      const CqRt& other = e.cqs[ocq];
      bool borrowing = false;
      for (int32_t fr : need) borrowing = borrowing || t.IsBorrowing(other.node, fr);
      if (!borrowing) continue;
      for (WlId id : other.admitted) {
        const Wl& v = e.wls[id];
        if (!UsesAnyFr(v, need)) continue;
        if (pol.reclaim_within_cohort == ReclaimWithinCohortPolicy::kLowerPriority && v.info.priority >= prio)
          continue;
        per_cq[ocq].push_back(id);
      }
    }
  }
  for (size_t i = 0; i < per_cq.size(); ++i) {
    if (!per_cq[i].empty()) {
      order(per_cq[i]);
      cand_cqs.push_back(static_cast<int32_t>(i));
    }
  }
  if (cand_cqs.empty()) return {};

  std::vector<std::pair<WlId, EvictionReason>> removed;
  std::vector<size_t> next(e.cqs.size(), 0);
  std::vector<char> retired(e.cqs.size(), 0);
  std::vector<WlId> retry;
  auto remove = [&](WlId id, EvictionReason r) {
    t.AddUsage(e.cqs[e.wls[id].cq].node, e.wls[id].usage, -1);
    removed.emplace_back(id, r);
  };
  // Does the strategy allow taking `id` (in queue `ocq`)?
  auto strategy_allows = [&](FairSharingStrategy s, WlId id, int32_t ocq) {
    int32_t lca = t.Lca(cq.node, e.cqs[ocq].node);
    int32_t pc = ChildBelow(t, cq.node, lca);
    int32_t tc = ChildBelow(t, e.cqs[ocq].node, lca);
    int64_t preemptor_new = DominantShare(e, pc, cqi, &request);
    if (s == FairSharingStrategy::kLessThanInitialShare) {
      int64_t target_old = ShareOf(e, tc);
      return preemptor_new < target_old;
    }
    t.AddUsage(e.cqs[ocq].node, e.wls[id].usage, -1);
    int64_t target_new = ShareOf(e, tc);
    t.AddUsage(e.cqs[ocq].node, e.wls[id].usage, +1);
    return preemptor_new <= target_new;
  };
  bool done = fits();
  const auto& strategies = e.opts.fair_sharing_strategies;
  FairSharingStrategy first =
      strategies.empty() ? FairSharingStrategy::kLessThanOrEqualToFinalShare : strategies.front();
  // Strategy 1: tournament descent by highest share.
  while (!done) {
    // Mark subtrees that still hold live candidates.
    std::vector<char> live(t.num_nodes(), 0);
    bool any = false;
    for (int32_t q : cand_cqs) {
      if (retired[q] || next[q] >= per_cq[q].size()) continue;
      any = true;
      for (int32_t n = e.cqs[q].node; n >= 0 && !live[n]; n = t.node(n).parent) live[n] = 1;
    }
    if (!any) break;
    int32_t n = t.Root(cq.node);
    while (t.node(n).is_cohort) {
      int32_t best = -1;
      int64_t best_share = -1;
      for (int32_t child : t.node(n).children) {
        if (!live[child]) continue;
        int64_t s = ShareOf(e, child);
        if (best < 0 || s > best_share ||
            (s == best_share && t.node(child).name < t.node(best).name)) {
          best = child;
          best_share = s;
        }
      }
      n = best;
    }
    int32_t q = e.cq_of_node[n];
    WlId id = per_cq[q][next[q]++];
    if (q != cqi && !(t.IsBorrowing(e.cqs[q].node, need[0]) || [&] {
          for (int32_t fr : need) {
            if (t.IsBorrowing(e.cqs[q].node, fr)) return true;
          }
          return false;
        }())) {
      retired[q] = 1;
      continue;
    }
    if (q == cqi) {
      remove(id, EvictionReason::kInClusterQueue);
    } else if (within_nominal()) {
      remove(id, EvictionReason::kInCohortReclamation);
    } else if (strategy_allows(first, id, q)) {
      remove(id, EvictionReason::kInCohortFairSharing);
    } else {
      retry.push_back(id);
      for (size_t k = next[q]; k < per_cq[q].size(); ++k) retry.push_back(per_cq[q][k]);
      retired[q] = 1;
      continue;
    }
    done = fits();
  }
  // Strategy 2 over the refused candidates.
  if (!done && strategies.size() > 1) {
    for (WlId id : retry) {
      int32_t q = e.wls[id].cq;
      bool borrowing = false;
      for (int32_t fr : need) borrowing = borrowing || t.IsBorrowing(e.cqs[q].node, fr);
      if (!borrowing) continue;
      if (strategy_allows(strategies[1], id, q)) {
        remove(id, EvictionReason::kInCohortFairSharing);
        if ((done = fits())) break;
      }
    }
  }
  std::vector<Target> targets;
  if (done && !removed.empty()) {
    std::vector<char> keep_out(removed.size(), 1);
    for (int i = static_cast<int>(removed.size()) - 2; i >= 0; --i) {
      WlId id = removed[i].first;
      t.AddUsage(e.cqs[e.wls[id].cq].node, e.wls[id].usage, +1);
      if (fits()) {
        keep_out[i] = 0;
      } else {
        t.AddUsage(e.cqs[e.wls[id].cq].node, e.wls[id].usage, -1);
      }
    }
    for (size_t i = 0; i < removed.size(); ++i) {
      if (keep_out[i]) {
        targets.push_back({removed[i].first, removed[i].second});
        t.AddUsage(e.cqs[e.wls[removed[i].first].cq].node, e.wls[removed[i].first].usage, +1);
      }
    }
  } else {
    for (const auto& [id, r] : removed) t.AddUsage(e.cqs[e.wls[id].cq].node, e.wls[id].usage, +1);
  }
  return targets;
}

}  // namespace artel::core
