// The engine's usage: charging and releasing an admitted workload's quota
// and placement, rebuilding usage from scratch, and eviction. Moved from
// engine.cc.

#include "core/engine_impl.h"

namespace artel::core {

void EngineImpl::AdmitUsage(WlId id) {
  Wl& w = wls[id];
  BumpTreeGen(w.cq);
  tree.AddUsage(cqs[w.cq].node, w.usage, +1);
  CqRt& cq = cqs[w.cq];
  w.admitted_pos = static_cast<int32_t>(cq.admitted.size());
  cq.admitted.push_back(id);
  cq.admitted_index.OnAdmit(w, id);
  for (const auto& [res, a] : w.ns_usage) nss[w.ns].usage[res] += a;
  if (w.lq.valid()) {
    for (const auto& [res, a] : w.ns_usage) lqs[w.lq].current_usage[res] += a;
  }
}

void EngineImpl::ReleasePlacement(WlId id) {
  Wl& w = wls[id];
  if (cluster && w.has_placement) (void)cluster->Release(w.info.key);
  w.has_placement = false;
  w.placement.reset();
  w.info.placements.clear();
  // Node capacity freed anywhere may let a waiting gang fit.
  UnparkList(&parked_placement);
}

void EngineImpl::ReleaseUsage(WlId id) {
  ReleasePlacement(id);
  Wl& w = wls[id];
  BumpTreeGen(w.cq);
  if (w.cq.valid()) {
    tree.AddUsage(cqs[w.cq].node, w.usage, -1);
    CqRt& cq = cqs[w.cq];
    if (w.admitted_pos >= 0 && w.admitted_pos < static_cast<int32_t>(cq.admitted.size()) &&
        cq.admitted[w.admitted_pos] == id) {
      cq.admitted_index.OnRelease(w, id);
      WlId last = cq.admitted.back();
      cq.admitted[w.admitted_pos] = last;
      wls[last].admitted_pos = w.admitted_pos;
      cq.admitted.pop_back();
    }
    Unpark(tree.Root(cq.node));
  }
  w.admitted_pos = -1;
  for (const auto& [res, a] : w.ns_usage) nss[w.ns].usage[res] -= a;
  if (w.lq.valid()) {
    for (const auto& [res, a] : w.ns_usage) lqs[w.lq].current_usage[res] -= a;
  }
  // A release in the namespace may unblock ResourceQuota-parked workloads.
  UnparkList(&nss[w.ns].parked);
}

void EngineImpl::RebuildUsage() {
  ++state_gen;
  for (NodeId n : tree.nodes()) {
    auto& node = tree.mutable_node(n);
    std::fill(node.usage.begin(), node.usage.end(), Amount{0});
  }
  for (const CqRt& cq : cqs) {
    for (WlId id : cq.admitted) tree.AddUsage(cq.node, wls[id].usage, +1);
  }
}

void EngineImpl::Evict(WlId id, EvictionReason reason, WlId preemptor, Time now, std::vector<Eviction>* out,
                       const std::string& msg) {
  Wl& w = wls[id];
  BumpTreeGen(w.cq);
  // The time it ran counts against its maximum runtime when it comes back
  // (Kueue accumulates it at eviction).
  if (w.info.state == WorkloadState::kAdmitted && w.info.admitted_at >= 0 && now > w.info.admitted_at)
    w.info.used_time += now - w.info.admitted_at;
  DisarmExpiry(id);
  w.info.state = WorkloadState::kEvicting;
  if (w.cq.valid()) cqs[w.cq].admitted_index.OnEvict(w, id);  // evicting candidates come first
  w.info.evictions++;
  Eviction ev;
  ev.victim = w.info.key;
  ev.victim_id = id;
  ev.victim_cluster_queue = w.info.cluster_queue;
  ev.reason = reason;
  if (preemptor != kNoWl) {
    ev.preemptor_id = preemptor;
    ev.preemptor = wls[preemptor].info.key;
    ev.preemptor_cluster_queue = wls[preemptor].info.cluster_queue;
  }
  ev.message = msg;
  ev.at = now;
  w.info.last_eviction = std::make_shared<const Eviction>(ev);
  out->push_back(std::move(ev));
}

}  // namespace artel::core
