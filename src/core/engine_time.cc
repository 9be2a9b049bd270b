// The engine's time-based rules: maximum runtime and its expiry,
// minimum-runtime protection and preemption delay, and backfill
// reservations. Moved from engine.cc.

#include <algorithm>

#include "core/engine_impl.h"
#include "core/flavor_assigner.h"
#include "core/preemption.h"

namespace artel::core {

std::optional<Time> EngineImpl::MaxRuntime(const Wl& w, CqId cq) const {
  std::optional<Time> m = w.info.spec.max_runtime;
  if (!cq.valid()) return m;
  const ClusterQueueSpec& s = *cqs[cq].spec;
  if (!m) m = s.default_max_runtime;
  if (s.max_runtime_ceiling && (!m || *m > *s.max_runtime_ceiling)) m = s.max_runtime_ceiling;
  return m;
}

void EngineImpl::DisarmExpiry(WlId id) {
  Wl& w = wls[id];
  if (w.expiry >= 0) expiries.erase({w.expiry, id});
  w.expiry = -1;
}

void EngineImpl::ArmExpiry(WlId id) {
  DisarmExpiry(id);
  Wl& w = wls[id];
  w.info.max_runtime = MaxRuntime(w, w.cq);
  if (w.info.state != WorkloadState::kAdmitted || !w.info.max_runtime || w.info.admitted_at < 0) return;
  // Ends when the time used before plus this admission's reaches the limit.
  w.expiry = w.info.admitted_at + std::max<Time>(0, *w.info.max_runtime - w.info.used_time);
  expiries.emplace(w.expiry, id);
}

void EngineImpl::ExpireRuntimes(Time now, std::vector<Eviction>* out) {
  while (!expiries.empty() && expiries.begin()->first <= now) {
    WlId id = expiries.begin()->second;
    Wl& w = wls[id];
    Time limit = w.info.max_runtime.value_or(0);
    std::string msg = "maximum runtime of " + std::to_string(limit / 1000) + "s exceeded (ran " +
                      std::to_string((w.info.used_time + now - w.info.admitted_at) / 1000) + "s in total)";
    Evict(id, EvictionReason::kMaximumExecutionTimeExceeded, kNoWl, now, out, msg);  // disarms
  }
}

bool EngineImpl::Protected(WlId victim, EvictionReason reason) {
  if (!any_protection) return false;
  const Wl& v = wls[victim];
  if (v.info.state != WorkloadState::kAdmitted || !v.cq.valid() || v.info.admitted_at < 0) return false;
  const bool reclaim = reason == EvictionReason::kInCohortReclamation;
  std::optional<Time> limit;
  if (v.info.spec.priority_class) {
    auto it = class_limits.find(*v.info.spec.priority_class);
    if (it != class_limits.end()) limit = reclaim ? it->second.reclaim_min_runtime : it->second.min_runtime;
  }
  if (!limit) limit = reclaim ? cqs[v.cq].spec->reclaim_min_runtime : cqs[v.cq].spec->min_runtime;
  if (!limit || *limit <= 0) return false;
  Time end = v.info.admitted_at + *limit;
  if (end <= now) return false;
  if (protect_min < 0 || end < protect_min) protect_min = end;
  return true;
}

bool EngineImpl::DelayHeld(WlId wl) {
  if (!any_protection) return false;
  const Wl& w = wls[wl];
  if (!w.cq.valid() || !cqs[w.cq].spec->preemption_delay) return false;
  Time end = w.info.queued_at + *cqs[w.cq].spec->preemption_delay;
  if (end <= now) return false;
  if (protect_min < 0 || end < protect_min) protect_min = end;
  protect_delay = true;
  return true;
}

std::optional<Time> EngineImpl::RemainingEstimate(const Wl& w, CqId cq) const {
  std::optional<Time> est = MaxRuntime(w, cq);
  if (!est && cq.valid()) est = cqs[cq].spec->default_runtime_estimate;
  if (!est) return std::nullopt;
  return std::max<Time>(0, *est - w.info.used_time);
}

bool EngineImpl::Reserve(WlId wl, CqId cq, Time now) {
  const Wl& w = wls[wl];
  const ClusterQueueSpec& spec = *cqs[cq].spec;
  const bool waited = spec.reserve_after && now - w.info.queued_at >= *spec.reserve_after;
  const bool urgent = spec.reserve_priority && w.info.priority >= *spec.reserve_priority;
  const NodeId root = tree.Root(cqs[cq].node);
  auto mine = std::find_if(reservations.begin(), reservations.end(),
                           [&](const Reservation& r) { return r.root == root; });
  if (mine != reservations.end() && mine->wl != wl) return false;  // one per tree: the first keeps it
  if (!waited && !urgent) {
    if (mine != reservations.end()) reservations.erase(mine);
    // Retry it when it has waited long enough (it may be parked till then).
    if (spec.reserve_after) protect_wakeups.emplace(w.info.queued_at + *spec.reserve_after, root);
    return false;
  }
  // Running workloads of the tree by estimated end; those without an
  // estimate never count as freeing anything. With nodes, those of other
  // trees that hold a placement free nodes when they end (not quota).
  std::vector<std::pair<Time, WlId>> ends;
  auto add_end = [&](WlId id) {
    const Wl& v = wls[id];
    if (v.info.state == WorkloadState::kEvicting) {  // its pods are on their way out
      ends.emplace_back(now, id);
      return;
    }
    if (v.info.state != WorkloadState::kAdmitted) return;
    std::optional<Time> rest = RemainingEstimate(v, v.cq);
    if (!rest) return;
    ends.emplace_back(v.info.admitted_at + *rest, id);
  };
  for (CqId c : root_cqs[root]) {
    for (WlId id : cqs[c].admitted) add_end(id);
  }
  if (cluster) {
    for (CqId c : cqs.ids()) {
      if (cqs[c].root == root) continue;
      for (WlId id : cqs[c].admitted) {
        if (wls[id].has_placement) add_end(id);
      }
    }
  }
  std::sort(ends.begin(), ends.end());
  // With nodes, the gang must also be placed on the nodes its holders free.
  std::optional<placement::Cluster> sim;
  if (cluster) sim.emplace(*cluster);
  // Simulate their ends in order until the workload fits; the answer of a
  // simulated tree must not be memoised as the real one.
  const uint64_t saved_overlay = overlay_gen;
  overlay_gen = ++overlay_counter;
  // Cycle-only usage (what earlier entries of this cycle hold back) is no
  // part of the future.
  for (size_t i = 0; i < round_temp_n; ++i) tree.AddUsage(round_temp[i].first, round_temp[i].second, -1);
  const Time saved_min = protect_min;
  const bool saved_delay = protect_delay;
  std::vector<int32_t> full;
  for (const PodSetReq& ps : w.pod_sets) full.push_back(ps.count);
  Reservation r;
  r.wl = wl;
  r.cq = cq;
  r.root = root;
  bool found = false;
  size_t removed = 0;
  for (; removed < ends.size(); ++removed) {
    const Wl& v = wls[ends[removed].second];
    tree.AddUsage(cqs[v.cq].node, v.usage, -1);
    if (sim && v.has_placement) (void)sim->Release(v.info.key);
    r.holders.push_back(ends[removed].second);
    Assignment a;
    flavor_assigner->Assign(*this, wl, cq, full, &a, nullptr);
    if (a.mode != Mode::kFit) continue;
    if (sim && Placed(a)) {
      placement::GangRequest g;
      placement::PlaceResult built = BuildGang(wl, a, g);
      if (!built.ok()) break;  // it can never be placed: no reservation
      placement::PlaceResult pr = sim->Place(g);
      if (!pr.ok()) {
        if (pr.outcome == placement::PlaceOutcome::kInfeasible) break;
        continue;
      }
      r.nodes = true;
      r.gang = std::move(g);
      for (const placement::PodPlacement& pp : pr.placement.pods) {
        const std::string& name = sim->node_name(pp.node);
        if (std::find(r.node_names.begin(), r.node_names.end(), name) == r.node_names.end())
          r.node_names.push_back(name);
      }
    }
    r.start = std::max(now, ends[removed].first);
    r.usage = a.usage;
    found = true;
    ++removed;
    break;
  }
  for (size_t i = 0; i < removed && i < ends.size(); ++i) {
    const Wl& v = wls[ends[i].second];
    tree.AddUsage(cqs[v.cq].node, v.usage, +1);
  }
  for (size_t i = 0; i < round_temp_n; ++i) tree.AddUsage(round_temp[i].first, round_temp[i].second, +1);
  overlay_gen = saved_overlay;
  protect_min = saved_min;
  protect_delay = saved_delay;
  // Backfill window (Slurm's bf_window): no reservation further ahead; it
  // is retried once the start comes within the window.
  if (found && spec.backfill_window && r.start > now + *spec.backfill_window) {
    wls[wl].beyond_window = r.start;
    protect_wakeups.emplace(r.start - *spec.backfill_window, root);
    found = false;
  }
  if (!found) {
    if (mine != reservations.end()) reservations.erase(mine);
    return false;
  }
  if (mine != reservations.end()) {
    *mine = std::move(r);
  } else {
    reservations.push_back(std::move(r));
  }
  return true;
}

const EngineImpl::Reservation* EngineImpl::DelayedReservation(WlId wl, CqId cq, const Assignment& a,
                                                              Time now) {
  if (reservations.empty()) return nullptr;
  const NodeId root = tree.Root(cqs[cq].node);
  const Wl& w = wls[wl];
  for (Reservation& r : reservations) {
    if (r.wl == wl) continue;
    // Quota is held back within the tree; nodes (with nodes) from every
    // workload, whatever its tree.
    const bool same_tree = r.root == root;
    if (!same_tree && !(r.nodes && cluster)) continue;
    // A workload of higher priority than the reserving one is not held back.
    if (w.info.priority > wls[r.wl].info.priority) continue;
    // Backfill that ends before the reservation starts.
    std::optional<Time> rest = RemainingEstimate(w, cq);
    if (rest && now + *rest <= r.start) continue;
    // Backfill that leaves the reserved quota (and nodes) free at the start.
    auto holding = [this](WlId h) {
      const WorkloadState st = wls[h].info.state;
      return !wls[h].forgotten && wls[h].cq.valid() &&
             (st == WorkloadState::kAdmitted || st == WorkloadState::kEvicting);
    };
    bool fits = true;
    if (same_tree) {
      // Usage propagates up the tree as a function of each node's total
      // (QuotaTree::PropagatedDelta), so taking the holders' sum per queue
      // out leaves the tree as taking each holder out would.
      if (r.held_state_gen != state_gen || r.held_tree_gen != tree_gen[r.root]) {
        r.held_by_queue.clear();
        for (WlId h : r.holders) {
          if (!holding(h)) continue;
          const NodeId node = cqs[wls[h].cq].node;
          auto it = std::find_if(r.held_by_queue.begin(), r.held_by_queue.end(),
                                 [&](const auto& q) { return q.first == node; });
          if (it == r.held_by_queue.end()) {
            r.held_by_queue.emplace_back(node, wls[h].usage);
            continue;
          }
          for (const auto& [fr, amount] : wls[h].usage) AddTo(&it->second, fr, amount);
        }
        r.held_state_gen = state_gen;
        r.held_tree_gen = tree_gen[r.root];
      }
      for (const auto& [node, amounts] : r.held_by_queue) tree.AddUsage(node, amounts, -1);
      tree.AddUsage(cqs[cq].node, a.usage, +1);
      fits = FitsNow(*this, r.cq, r.usage);
      tree.AddUsage(cqs[cq].node, a.usage, -1);
      for (const auto& [node, amounts] : r.held_by_queue) tree.AddUsage(node, amounts, +1);
    }
    if (fits && r.nodes && cluster && Placed(a)) {
      // Where the backfill would go now, then the reserved gang once the
      // holders are gone.
      placement::Cluster sim = *cluster;
      placement::GangRequest g;
      if (BuildGang(wl, a, g).ok()) {
        placement::PlaceResult pr = sim.Place(g);
        if (pr.ok()) (void)sim.Commit(" backfill", pr.placement);
      }
      for (WlId h : r.holders) {
        if (holding(h) && wls[h].has_placement) (void)sim.Release(wls[h].info.key);
      }
      fits = sim.Place(r.gang).ok();
    }
    if (!fits) return &r;
  }
  return nullptr;
}

void EngineImpl::DropReservation(size_t i) {
  const bool nodes = reservations[i].nodes;
  Unpark(reservations[i].root);  // what it held back may be used again
  reservations.erase(reservations.begin() + static_cast<std::ptrdiff_t>(i));
  if (nodes) {
    // Its nodes held back workloads of every tree.
    for (CqId c : cqs.ids()) {
      if (cqs[c].root.valid()) Unpark(cqs[c].root);
    }
  }
}

}  // namespace artel::core
