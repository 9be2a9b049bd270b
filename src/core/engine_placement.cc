// The engine's side of placement: rebuilding the cluster from node specs,
// binding flavors to nodes, translating a workload and its flavor
// assignment into a placement::GangRequest, and recording where it was
// placed. Moved from engine.cc.

#include <algorithm>

#include "core/engine_impl.h"
#include "core/resource_names.h"

namespace artel::core {

Status EngineImpl::RebuildCluster() {
  if (node_specs.empty()) {
    for (Wl& w : wls) {
      w.has_placement = false;
      w.placement.reset();
      w.info.placements.clear();
    }
    cluster.reset();
    flavor_nodes.clear();
    flavor_nodes_why.clear();
    ++nodes_gen;
    return Status::Ok();
  }
  auto c = std::make_unique<placement::Cluster>();
  for (const TopologySpec& t : config.topologies) {
    Status s = c->AddTopology(placement::TopologyLevels{t.name, t.levels});
    if (!s.ok()) return s;
  }
  for (const placement::NodeSpec& n : node_specs) {
    Status s = c->AddNode(n);
    if (!s.ok()) return s;
  }
  // Keep the placements that still fit, in admission order.
  std::vector<WlId> held;
  for (WlId id = 0; id < wls.size(); ++id) {
    if (wls[id].has_placement) held.push_back(id);
  }
  std::sort(held.begin(), held.end(), [&](WlId a, WlId b) { return wls[a].admit_seq < wls[b].admit_seq; });
  for (WlId id : held) {
    Wl& w = wls[id];
    if (!c->Commit(w.info.key, *w.placement).ok()) {
      w.has_placement = false;
      w.placement.reset();
      w.info.placements.clear();
    }
  }
  cluster = std::move(c);
  BindFlavorsToNodes();
  // Waiting gangs get another chance on the new nodes, and so does every
  // workload parked because no flavor's nodes could hold it.
  UnparkList(&parked_placement);
  for (NodeId root : root_epoch.ids()) Unpark(root);
  return Status::Ok();
}

void EngineImpl::BindFlavorsToNodes() {
  ++nodes_gen;
  flavor_nodes.assign(flavors.size(), {});
  flavor_nodes_why.assign(flavors.size(), "");
  if (!cluster || !opts.placement_matches_labels) return;
  for (FlavorId f : flavors.ids()) {
    const ResourceFlavorSpec* fs = flavors[f].spec;
    int32_t labelled = 0;
    for (const placement::NodeSpec& n : node_specs) {
      bool match = true;
      if (fs != nullptr) {
        for (const auto& [k, v] : fs->node_labels) {
          auto it = n.labels.find(k);
          const std::string* have = it != n.labels.end() ? &it->second : nullptr;
          if (have == nullptr && k == placement::kHostnameLabel) have = &n.name;
          match = match && have != nullptr && *have == v;
        }
      }
      if (!match) continue;
      ++labelled;
      const int32_t idx = cluster->FindNode(n.name);
      if (n.ready && idx >= 0) flavor_nodes[f].push_back(idx);
    }
    if (!flavor_nodes[f].empty()) continue;
    std::string labels;
    if (fs != nullptr) {
      for (const auto& [k, v] : fs->node_labels) labels += (labels.empty() ? "" : ", ") + k + "=" + v;
    }
    flavor_nodes_why[f] =
        labelled > 0 ? "its " + std::to_string(labelled) + " node(s) are not ready"
                     : "no node matches flavor " + flavors[f].name + "'s nodeLabels (" + labels + ")";
  }
}

placement::PlaceResult EngineImpl::BuildGang(WlId id, const Assignment& a, placement::GangRequest& g) const {
  const Wl& w = wls[id];
  placement::PlaceResult bad;
  bad.outcome = placement::PlaceOutcome::kInfeasible;
  const WorkloadSpec& spec = w.info.spec;
  const GangSpec& gang = spec.gang;
  // The workload's topology request, then each pod set's, field by field:
  // the first one given wins.
  TopologyRequest merged = spec.topology;
  auto merge = [&merged](const TopologyRequest& r) {
    for (auto [into, from] : {std::pair{&merged.required, &r.required},
                              {&merged.preferred, &r.preferred},
                              {&merged.slice_required, &r.slice_required},
                              {&merged.group, &r.group},
                              {&merged.kai_required, &r.kai_required},
                              {&merged.kai_preferred, &r.kai_preferred}}) {
      if (into->empty()) *into = *from;
    }
    if (merged.slice_size == 0) merged.slice_size = r.slice_size;
    merged.unconstrained = merged.unconstrained || r.unconstrained;
  };
  for (size_t i = 0; i < w.pod_sets.size(); ++i) {
    const PodSetSpec& ps = w.info.spec.pod_sets[i];
    auto pg = placement::PodGroupFromSpec(ps);
    if (!pg.ok()) {
      bad.reason = "pod set " + ps.name + ": " + pg.status().message();
      return bad;
    }
    pg->count = a.pod_sets[i].count;
    if (!opts.placement_matches_labels) {
      pg->node_selector.clear();
      pg->node_affinity.clear();
    }
    // All or nothing at the admitted size, or down to the pod set's minCount
    // (partial admission by the nodes, not only by quota).
    pg->min_count = std::min(w.pod_sets[i].min_count, pg->count);
    // The admitted flavors' node labels and tolerations constrain the pods.
    std::vector<FlavorId> seen;
    for (const auto& [res, f] : a.pod_sets[i].flavors) {
      (void)res;
      if (std::find(seen.begin(), seen.end(), f) != seen.end()) continue;
      seen.push_back(f);
      const ResourceFlavorSpec* fs = flavors[f].spec;
      if (fs == nullptr) continue;
      if (opts.placement_matches_labels) {
        for (const auto& [k, v] : fs->node_labels) pg->node_selector.emplace(k, v);
      }
      pg->tolerations.insert(pg->tolerations.end(), fs->tolerations.begin(), fs->tolerations.end());
      if (g.topology.empty() && !fs->topology_name.empty()) g.topology = fs->topology_name;
    }
    merge(ps.topology);
    g.groups.push_back(std::move(*pg));
  }
  // The merged requests make one gang constraint; when the pod sets turn
  // out to carry their own (below), a conflict in the merge does not matter.
  auto tc = placement::TopologyFromRequest(merged);
  if (tc.ok()) g.constraint = *tc;
  // Volcano networkTopology: tiers of the named topology; without
  // highestTierAllowed, tier 1.
  if (!gang.topology.empty()) g.topology = gang.topology;
  if (!gang.network_mode.empty() && g.constraint.empty()) {
    const TopologySpec* ts = nullptr;
    for (const TopologySpec& t : config.topologies) {
      if (t.name == g.topology) ts = &t;
    }
    if (ts == nullptr) {
      bad.reason = "network topology " + g.topology + " is not defined";
      return bad;
    }
    int32_t highest = std::max(1, gang.highest_tier);
    if (!gang.highest_tier_name.empty()) {
      auto named = ts->tier_names.find(gang.highest_tier_name);
      if (named == ts->tier_names.end()) {
        bad.reason = "networkTopology.highestTierName \"" + gang.highest_tier_name +
                     "\" is the tierName of no HyperNode";
        return bad;
      }
      highest = named->second;
    }
    auto vc = placement::TopologyFromVolcano(placement::TopologyLevels{ts->name, ts->levels},
                                             gang.network_mode, highest);
    if (!vc.ok()) {
      bad.reason = vc.status().message();
      return bad;
    }
    g.constraint = *vc;
  }
  // Kueue fits each PodSet's topology request on its own; pod sets share a
  // domain only as a PodSet group (podset-group-name). A gang (Volcano, KAI,
  // minMember) or a workload-wide topology request keep one constraint.
  if (w.pod_sets.size() > 1 && !spec.topology->KueueAsks() && gang.min_member == 0 &&
      gang.network_mode.empty()) {
    bool any = false, grouped = false;
    for (const PodSetSpec& ps : spec.pod_sets) {
      any = any || ps.topology->KueueAsks();
      grouped = grouped || !ps.topology->group.empty();
    }
    if (any && !grouped) {
      for (const PodSetSpec& ps : spec.pod_sets) {
        auto ptc = placement::TopologyFromRequest(ps.topology);
        if (!ptc.ok()) {
          bad.reason = "pod set " + ps.name + ": " + ptc.status().message();
          return bad;
        }
        g.group_constraints.push_back(*ptc);
      }
      g.constraint = placement::TopologyConstraint{};
    }
  }
  // KAI subgroups with their own topology constraint: the PodGroup's
  // constraint picks the gang's domain, each subgroup's applies inside it.
  if (w.pod_sets.size() > 1 && g.group_constraints.empty() && gang.subgroup_topologies) {
    auto whole = placement::TopologyFromRequest(spec.topology);
    std::vector<placement::TopologyConstraint> own;
    bool differs = false;
    for (const PodSetSpec& ps : spec.pod_sets) {
      auto ptc = placement::TopologyFromRequest(ps.topology);
      if (!ptc.ok() || !whole.ok()) break;
      differs = differs || !(*ptc == *whole);
      own.push_back(*ptc);
    }
    if (differs && own.size() == w.pod_sets.size()) {
      g.group_constraints = std::move(own);
      g.constraint = *whole;
    }
  }
  if (!tc.ok() && g.group_constraints.empty()) {
    bad.reason = tc.status().message();
    return bad;
  }
  const placement::TopologyConstraint* named = &g.constraint;
  for (const auto& gc : g.group_constraints) {
    if (named->empty()) named = &gc;
  }
  if (!named->empty() && g.topology.empty() && !config.topologies.empty()) {
    // A topology request on a flavor without topologyName: use the only
    // topology that names the requested level.
    for (const TopologySpec& t : config.topologies) {
      const std::string& lvl = named->required_level.empty() ? named->preferred_level : named->required_level;
      if (std::find(t.levels.begin(), t.levels.end(), lvl) != t.levels.end()) {
        g.topology = t.name;
        break;
      }
    }
  }
  if (gang.min_member > 0) {
    // A gang minimum (Volcano/KAI minMember) counts pods over all groups.
    // A group keeps its own minimum (Volcano minTaskMember / task
    // minAvailable, KAI subgroup minMember); otherwise one pod.
    g.min_member = gang.min_member;
    for (size_t i = 0; i < g.groups.size(); ++i) {
      const std::optional<int32_t>& own = spec.pod_sets[i].min_count;
      g.groups[i].min_count = std::min(g.groups[i].count, own ? *own : 1);
    }
  }
  if (gang.spread) g.score = placement::ScorePolicy::kSpread;
  placement::PlaceResult ok;
  ok.outcome = placement::PlaceOutcome::kPlaced;
  return ok;
}

bool EngineImpl::FlavorPlaced(FlavorId f) const {
  if (!cluster) return false;
  if (!opts.place_topology_flavors_only) return true;
  const ResourceFlavorSpec* fs = flavors.contains(f) ? flavors[f].spec : nullptr;
  return fs != nullptr && !fs->topology_name.empty();
}

bool EngineImpl::Placed(const Assignment& a) const {
  if (!cluster) return false;
  if (!opts.place_topology_flavors_only) return true;
  for (const PodSetAssign& ps : a.pod_sets) {
    for (const auto& [res, f] : ps.flavors) {
      (void)res;
      if (FlavorPlaced(f)) return true;
    }
  }
  return false;
}

placement::PlaceResult EngineImpl::PlaceWorkload(WlId id, const Assignment& a) {
  Wl& w = wls[id];
  placement::GangRequest g;
  placement::PlaceResult built = BuildGang(id, a, g);
  if (!built.ok()) return built;
  placement::PlaceResult r = cluster->Place(g);
  if (!r.ok()) return r;
  Status cs = cluster->Commit(w.info.key, r.placement);
  if (!cs.ok()) {
    r.outcome = placement::PlaceOutcome::kUnschedulable;
    r.reason = cs.message();
    return r;
  }
  w.has_placement = true;
  w.placement = std::make_unique<placement::Placement>(r.placement);
  FillPlacementInfo(id);
  // Partial gangs (minMember) admit only the placed pods.
  return r;
}

void EngineImpl::FillPlacementInfo(WlId id) {
  Wl& w = wls[id];
  w.info.placements.clear();
  for (const placement::PodPlacement& p : w.placement->pods) {
    PodPlacementInfo info;
    info.pod_set = w.info.spec.pod_sets[p.group].name;
    info.node = cluster->node_name(p.node);
    for (int32_t gpu : p.gpus) info.gpus.push_back(cluster->gpu_uuid(p.node, gpu));
    for (const placement::MigAssignment& m : p.mig) {
      info.mig.push_back(m.profile + "@" + std::to_string(m.start));
      info.mig_uuids.push_back(cluster->MigUuid(p.node, m.gpu, m.profile, m.start));
      info.mig_gpus.push_back(cluster->gpu_uuid(p.node, m.gpu));
    }
    for (const placement::ShareAssignment& sh : p.shares) {
      info.share_gpus.push_back(cluster->gpu_uuid(p.node, sh.gpu));
      info.shares.push_back(std::to_string(sh.gpu) + ":" + std::to_string(sh.memory_mib) + ":" +
                            std::to_string(sh.cores_percent));
    }
    info.visible_devices = cluster->VisibleDevices(p);
    w.info.placements.push_back(std::move(info));
  }
}

}  // namespace artel::core
