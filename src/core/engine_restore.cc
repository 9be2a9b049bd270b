// Restoring the engine from a journal: Engine::Restore, RestoreOnNodes
// and RestoreUsedTime re-admit recorded workloads without a cycle. Moved
// from engine.cc.

#include <algorithm>

#include "core/engine_helpers.h"
#include "core/engine_impl.h"
#include "core/resource_names.h"

namespace artel::core {

namespace {

// Whether a restored admission charged pod set `r` an implicit GPU: it did if
// its recorded usage of nvidia.com/gpu is above zero (the pod set requests no
// nvidia.com/gpu itself when it has an implicit charge). Returns the id, or none.
ResourceId RecordedImplicitGpu(const EngineImpl& e, const PodSetReq& r, const PodSetAssignment& a) {
  if (r.implicit_gpu <= 0) return {};
  auto u = a.resource_usage.find(kGpuResource);
  if (u == a.resource_usage.end() || u->second <= 0 || !a.flavors.count(kGpuResource)) return {};
  return e.resources.Find(kGpuResource);
}

}  // namespace

Status Engine::RestoreUsedTime(const std::string& key, Time used) {
  EngineImpl& e = *impl_;
  auto id = Lookup(e, key);
  if (!id.ok()) return id.status();
  Wl& w = e.wls[*id];
  if (w.info.state != WorkloadState::kPending)
    return FailedPrecondition("workload " + key + " is " + WorkloadStateName(w.info.state) + ", not pending");
  if (used < 0) return InvalidArgument("used time must not be negative");
  w.info.used_time = used;
  return Status::Ok();
}

Status Engine::Restore(const std::string& key, const std::string& cluster_queue,
                       const std::vector<PodSetAssignment>& admission, Time admitted_at,
                       const placement::Placement* placed, uint64_t admission_seq) {
  EngineImpl& e = *impl_;
  auto id = Lookup(e, key);
  if (!id.ok()) return id.status();
  Wl& w = e.wls[*id];
  if (w.info.state != WorkloadState::kPending)
    return FailedPrecondition("workload " + key + " is " + WorkloadStateName(w.info.state) + ", not pending");
  auto cit = e.cq_index.find(cluster_queue);
  if (cit == e.cq_index.end()) return NotFound("ClusterQueue " + cluster_queue + " does not exist");
  if (admission.size() != w.pod_sets.size())
    return InvalidArgument("admission has " + std::to_string(admission.size()) + " pod sets, workload has " +
                           std::to_string(w.pod_sets.size()));
  FrAmounts usage;
  std::vector<std::pair<ResourceId, Amount>> ns_usage;
  // Per pod set, the implicit charges (`pods`, a GPU slice) the admission
  // recorded: `pods` when it has a flavor, the slice by its recorded usage.
  std::vector<std::pair<ResourceId, ResourceId>> implicit(admission.size());
  for (size_t i = 0; i < admission.size(); ++i) {
    const PodSetAssignment& ps = admission[i];
    if (ps.count < 1 || ps.count > w.pod_sets[i].count)
      return InvalidArgument("pod set " + ps.name + ": admitted count out of range");
    const ResourceId pods_res = ps.flavors.count("pods") ? e.resources.Find("pods") : ResourceId();
    const ResourceId gpu_res = RecordedImplicitGpu(e, w.pod_sets[i], ps);
    implicit[i] = {pods_res, gpu_res};
    Status bad;
    ForEachPerPod(w.pod_sets[i], pods_res, gpu_res, [&](ResourceId res_name, Amount per_pod) {
      if (!bad.ok()) return;
      const std::string& rn = e.resources.Name(res_name);
      Amount total = per_pod * ps.count;
      auto fit = ps.flavors.find(rn);
      if (fit == ps.flavors.end()) {
        if (total == 0 || IsSlicingHint(rn)) return;
        bad = InvalidArgument("pod set " + ps.name + ": no flavor for resource " + rn);
        return;
      }
      FlavorId f = e.flavors_by_name.Find(fit->second);
      FrId fr = f.valid() ? e.tree.FindFr(f, res_name) : FrId();
      if (!fr.valid()) {
        bad = NotFound("flavor " + fit->second + " has no quota for " + rn + " any more");
        return;
      }
      bool merged = false;
      for (auto& [x, v] : usage) {
        if (x == fr) {
          v += total;
          merged = true;
        }
      }
      if (!merged) usage.emplace_back(fr, total);
      merged = false;
      for (auto& [x, v] : ns_usage) {
        if (x == res_name) {
          v += total;
          merged = true;
        }
      }
      if (!merged) ns_usage.emplace_back(res_name, total);
    });
    if (!bad.ok()) return bad;
  }
  std::sort(usage.begin(), usage.end());
  // With nodes, the pods take their place before anything else changes.
  Assignment a;
  for (const PodSetAssignment& ps : admission) {
    PodSetAssign psa;
    psa.count = ps.count;
    for (const auto& [res, flv] : ps.flavors) {
      ResourceId r = e.resources.Find(res);
      FlavorId f = e.flavors_by_name.Find(flv);
      if (r.valid() && f.valid()) psa.flavors.emplace_back(r, f);
    }
    std::sort(psa.flavors.begin(), psa.flavors.end());
    a.pod_sets.push_back(std::move(psa));
  }
  if (e.cluster && (placed != nullptr || e.Placed(a))) {
    if (e.restore_pins != nullptr) {
      placement::GangRequest g;
      placement::PlaceResult built = e.BuildGang(*id, a, g);
      if (!built.ok()) return FailedPrecondition("the pods of " + key + " cannot be placed: " + built.reason);
      placement::Cluster sim = *e.cluster;
      placement::Placement merged;
      merged.placed.assign(g.groups.size(), 0);
      merged.group_requests.assign(g.groups.size(), {});
      const auto& pins = *e.restore_pins;
      for (size_t i = 0; i < pins.size() && i < g.groups.size(); ++i) {
        int32_t n = 0;
        if (pins[i].empty()) {  // a pod set without named nodes: placed anew, under its own constraint
          placement::GangRequest one;
          one.groups.push_back(g.groups[i]);
          one.groups[0].min_count = one.groups[0].count;
          one.flavor_node_labels = g.flavor_node_labels;
          one.flavor_tolerations = g.flavor_tolerations;
          one.topology = g.topology;
          one.constraint = i < g.group_constraints.size() ? g.group_constraints[i] : g.constraint;
          placement::PlaceResult pr = sim.Place(one);
          if (!pr.ok())
            return FailedPrecondition("the pods of " + key + " do not fit the nodes any more: " + pr.reason);
          (void)sim.Commit(" pin " + std::to_string(i), pr.placement);
          for (placement::PodPlacement pp : pr.placement.pods) {
            pp.group = static_cast<int32_t>(i);
            merged.pods.push_back(std::move(pp));
          }
          merged.placed[i] += one.groups[0].count;
          if (!pr.placement.group_requests.empty()) merged.group_requests[i] = pr.placement.group_requests[0];
          continue;
        }
        for (const auto& [node, count] : pins[i]) {
          const int32_t idx = sim.FindNode(node);
          if (idx < 0) return FailedPrecondition("node " + node + " of " + key + "'s placement is gone");
          placement::GangRequest one;
          one.groups.push_back(g.groups[i]);
          one.groups[0].count = count;
          one.groups[0].min_count = count;
          one.flavor_node_labels = g.flavor_node_labels;
          one.flavor_tolerations = g.flavor_tolerations;
          one.only_nodes = {idx};
          placement::PlaceResult pr = sim.Place(one);
          if (!pr.ok())
            return FailedPrecondition("the pods of " + key + " no longer fit node " + node + ": " +
                                      pr.reason);
          (void)sim.Commit(" pin " + std::to_string(i) + " " + std::to_string(n++), pr.placement);
          for (placement::PodPlacement pp : pr.placement.pods) {
            pp.group = static_cast<int32_t>(i);
            merged.pods.push_back(std::move(pp));
          }
          merged.placed[i] += count;
          if (!pr.placement.group_requests.empty()) merged.group_requests[i] = pr.placement.group_requests[0];
        }
      }
      Status cs = e.cluster->Commit(key, merged);
      if (!cs.ok())
        return FailedPrecondition("placement of " + key + " no longer fits the nodes: " + cs.message());
      w.has_placement = true;
      w.placement = std::make_unique<placement::Placement>(std::move(merged));
    } else if (placed != nullptr) {
      Status cs = e.cluster->Commit(key, *placed);
      if (!cs.ok())
        return FailedPrecondition("placement of " + key + " no longer fits the nodes: " + cs.message());
      w.has_placement = true;
      w.placement = std::make_unique<placement::Placement>(*placed);
    } else {
      placement::PlaceResult pr = e.PlaceWorkload(*id, a);
      bool whole = pr.ok();
      for (size_t i = 0; whole && i < a.pod_sets.size() && i < pr.placement.placed.size(); ++i) {
        whole = pr.placement.placed[i] >= a.pod_sets[i].count;
      }
      if (!whole) {
        if (pr.ok()) e.ReleasePlacement(*id);
        return FailedPrecondition("the pods of " + key + " do not fit the nodes any more" +
                                  (pr.reason.empty() ? "" : ": " + pr.reason));
      }
    }
    e.FillPlacementInfo(*id);
  }
  e.Dequeue(*id);
  e.orphans.erase(std::remove(e.orphans.begin(), e.orphans.end(), *id), e.orphans.end());
  w.parked = false;
  w.cq = cit->second;
  w.info.cluster_queue = cluster_queue;
  w.usage = std::move(usage);
  w.ns_usage = std::move(ns_usage);
  w.info.admission = admission;
  for (size_t i = 0; i < w.info.admission.size(); ++i) {  // admission[i] is pod set i (sizes checked above)
    PodSetAssignment& ps = w.info.admission[i];
    ps.resource_usage.clear();
    ForEachPerPod(w.pod_sets[i], implicit[i].first, implicit[i].second, [&](ResourceId res, Amount per_pod) {
      ps.resource_usage[e.resources.Name(res)] = per_pod * ps.count;
    });
  }
  w.info.state = WorkloadState::kAdmitted;
  w.ClearPending();
  w.info.admitted_at = admitted_at;
  if (admission_seq > 0) {
    w.admit_seq = admission_seq;
    e.next_admit_seq = std::max(e.next_admit_seq, admission_seq + 1);
  } else {
    w.admit_seq = e.next_admit_seq++;
  }
  w.info.admission_seq = w.admit_seq;
  e.AdmitUsage(*id);
  e.pending_count--;
  e.admitted_count++;
  e.ArmExpiry(*id);
  return Status::Ok();
}

Status Engine::RestoreOnNodes(const std::string& key, const std::string& cluster_queue,
                              const std::vector<PodSetAssignment>& admission, Time admitted_at,
                              const std::vector<std::vector<std::pair<std::string, int32_t>>>& nodes,
                              uint64_t admission_seq) {
  EngineImpl& e = *impl_;
  if (nodes.size() != admission.size())
    return InvalidArgument("the node placement has " + std::to_string(nodes.size()) +
                           " pod sets, the admission " + std::to_string(admission.size()));
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i].empty()) continue;  // placed anew
    int64_t sum = 0;
    for (const auto& [node, count] : nodes[i]) {
      if (count < 1)
        return InvalidArgument("pod set " + admission[i].name + ": node " + node + " has no pods");
      sum += count;
    }
    if (sum != admission[i].count)
      return InvalidArgument("pod set " + admission[i].name + ": the nodes hold " + std::to_string(sum) +
                             " pods, the admission " + std::to_string(admission[i].count));
  }
  e.restore_pins = &nodes;
  Status s = Restore(key, cluster_queue, admission, admitted_at, nullptr, admission_seq);
  e.restore_pins = nullptr;
  return s;
}

}  // namespace artel::core
