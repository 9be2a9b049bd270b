// The engine's configuration: validating a Config and applying it to the
// interned state of EngineImpl (namespaces, flavors, ClusterQueues,
// LocalQueues, cohorts, ResourceQuotas). Moved from engine.cc.

#include <algorithm>
#include <unordered_set>

#include "core/engine_impl.h"
#include "core/resource_names.h"

namespace artel::core {

NamespaceId EngineImpl::NsId(const std::string& ns) {
  int32_t id = namespaces.Find(ns);
  if (id >= 0) return NamespaceId(id);
  id = namespaces.Intern(ns);
  NsRt n;
  n.name = ns;
  n.labels["kubernetes.io/metadata.name"] = ns;
  n.usage.assign(resources.size(), 0);
  nss.push_back(std::move(n));
  return NamespaceId(id);
}

namespace {

// Resource id a ResourceQuota key caps, or "" for keys Artel ignores.
std::string RqResource(const std::string& key) {
  if (key.rfind("requests.", 0) == 0) return key.substr(9);
  if (key == "cpu" || key == "memory" || key == "ephemeral-storage") return key;
  return "";
}

Status Err(const SourcePos& pos, const std::string& field, std::string msg) {
  Status s = InvalidArgument(std::move(msg));
  s.WithPos(pos).WithField(field);
  return s;
}

Status ValidateConfig(const Config& c) {
  std::unordered_set<std::string> names;
  for (const auto& f : c.flavors) {
    if (!names.insert(f.name).second)
      return Err(f.pos, "metadata.name", "duplicate ResourceFlavor \"" + f.name + "\"");
  }
  const std::unordered_set<std::string> flavor_names = names;
  auto check_groups = [&](const std::vector<ResourceGroupSpec>& groups, const SourcePos& pos, bool has_parent,
                          const std::string& kind) -> Status {
    std::unordered_set<std::string> covered;
    for (size_t g = 0; g < groups.size(); ++g) {
      const auto& grp = groups[g];
      std::string gpath = "spec.resourceGroups[" + std::to_string(g) + "]";
      for (const auto& r : grp.covered_resources) {
        if (!covered.insert(r).second)
          return Err(pos, gpath + ".coveredResources",
                     "resource \"" + r + "\" is covered by more than one resource group");
      }
      std::unordered_set<std::string> fl;
      for (size_t f = 0; f < grp.flavors.size(); ++f) {
        const auto& fq = grp.flavors[f];
        std::string fpath = gpath + ".flavors[" + std::to_string(f) + "]";
        if (!flavor_names.count(fq.flavor))
          return Err(pos, fpath + ".name",
                     kind + " references ResourceFlavor \"" + fq.flavor + "\", which does not exist");
        if (!fl.insert(fq.flavor).second)
          return Err(pos, fpath + ".name", "flavor \"" + fq.flavor + "\" listed twice in one resource group");
        for (size_t r = 0; r < fq.resources.size(); ++r) {
          const auto& rq = fq.resources[r];
          std::string rpath = fpath + ".resources[" + std::to_string(r) + "]";
          if (std::find(grp.covered_resources.begin(), grp.covered_resources.end(), rq.name) ==
              grp.covered_resources.end())
            return Err(pos, rpath + ".name", "resource \"" + rq.name + "\" is not in coveredResources");
          if (rq.nominal < 0) return Err(pos, rpath + ".nominalQuota", "must not be negative");
          if (rq.borrowing_limit && *rq.borrowing_limit < 0)
            return Err(pos, rpath + ".borrowingLimit", "must not be negative");
          if (rq.lending_limit && *rq.lending_limit < 0)
            return Err(pos, rpath + ".lendingLimit", "must not be negative");
          if (rq.borrowing_limit && !has_parent)
            return Err(pos, rpath + ".borrowingLimit",
                       "borrowingLimit needs a cohort (parent) to borrow from");
        }
      }
    }
    return Status::Ok();
  };
  names.clear();
  for (const auto& q : c.cluster_queues) {
    if (!names.insert(q.name).second)
      return Err(q.pos, "metadata.name", "duplicate ClusterQueue \"" + q.name + "\"");
    Status s = check_groups(q.resource_groups, q.pos, !q.cohort.empty(), "ClusterQueue " + q.name);
    if (!s.ok()) return s;
  }
  names.clear();
  std::unordered_map<std::string, const CohortSpec*> cohorts;
  for (const auto& co : c.cohorts) {
    if (!names.insert(co.name).second)
      return Err(co.pos, "metadata.name", "duplicate Cohort \"" + co.name + "\"");
    cohorts[co.name] = &co;
    Status s = check_groups(co.resource_groups, co.pos, !co.parent.empty(), "Cohort " + co.name);
    if (!s.ok()) return s;
  }
  for (const auto& co : c.cohorts) {
    std::vector<std::string> path{co.name};
    std::string cur = co.parent;
    while (!cur.empty()) {
      if (std::find(path.begin(), path.end(), cur) != path.end()) {
        std::string cyc;
        for (const auto& p : path) cyc += p + " -> ";
        return Err(co.pos, "spec.parentName", "cohort cycle: " + cyc + cur);
      }
      path.push_back(cur);
      auto it = cohorts.find(cur);
      cur = it == cohorts.end() ? "" : it->second->parent;
    }
  }
  names.clear();
  for (const auto& lq : c.local_queues) {
    if (!names.insert(lq.ns + "/" + lq.name).second)
      return Err(lq.pos, "metadata.name", "duplicate LocalQueue \"" + lq.ns + "/" + lq.name + "\"");
  }
  names.clear();
  for (const auto& pc : c.priority_classes) {
    if (!names.insert(pc.name).second)
      return Err(pc.pos, "metadata.name", "duplicate WorkloadPriorityClass \"" + pc.name + "\"");
  }
  return Status::Ok();
}

}  // namespace

Status EngineImpl::ApplyConfig(const Config& c) {
  Status st = ValidateConfig(c);
  if (!st.ok()) return st;
  ++state_gen;
  // Pending reasons refer to quota-tree nodes by id: name them before the
  // tree is rebuilt.
  for (WlId id = 0; id < wls.size(); ++id) {
    if (wls[id].ref_dirty || ReasonStale(id) || StrictBehind(id)) Materialize(id);
  }
  // Take pending workloads out of the old structures.
  for (auto& q : lqs) q.heap.clear();
  for (Wl& w : wls) {
    w.in_heap = false;
    w.listed = false;
    w.soft_parked = false;
  }
  queued_count = 0;
  parked_total = 0;
  orphans.clear();
  for (auto& n : nss) n.parked.clear();

  config = c;
  for (const auto& f : config.flavors) flavors_by_name.Intern(f.name);
  flavors.assign(flavors_by_name.size(), FlavorRt{});
  for (FlavorId f : flavors.ids()) flavors[f].name = flavors_by_name.Name(f);
  for (const auto& f : config.flavors) flavors[flavors_by_name.Find(f.name)].spec = &f;

  tree = QuotaTree();
  cqs.clear();
  cq_index.clear();
  cohort_node.clear();
  // Cohorts, explicit and implicit.
  auto cohort = [&](const std::string& name) {
    auto it = cohort_node.find(name);
    if (it != cohort_node.end()) return it->second;
    NodeId n = tree.AddNode(name, true);
    cohort_node[name] = n;
    return n;
  };
  for (const auto& co : config.cohorts) cohort(co.name);
  for (const auto& co : config.cohorts) {
    if (!co.parent.empty()) tree.SetParent(cohort(co.name), cohort(co.parent));
  }
  for (const auto& q : config.cluster_queues) {
    if (!q.cohort.empty()) cohort(q.cohort);
  }
  auto apply_groups = [&](NodeId node, const std::vector<ResourceGroupSpec>& groups) {
    for (const auto& g : groups) {
      for (const auto& fq : g.flavors) {
        FlavorId f = flavors_by_name.Find(fq.flavor);
        for (const auto& rq : fq.resources) {
          ResourceId res = resources.Intern(rq.name);
          FrId fr = tree.InternFr(f, res);
          tree.SetQuota(node, fr, rq.nominal, rq.borrowing_limit.value_or(kNoLimit),
                        rq.lending_limit.value_or(kNoLimit));
        }
      }
    }
  };
  for (const auto& co : config.cohorts) {
    NodeId n = cohort(co.name);
    tree.mutable_node(n).fair_weight = co.fair_weight;
    apply_groups(n, co.resource_groups);
  }
  for (const auto& q : config.cluster_queues) {
    CqRt rt;
    rt.name = q.name;
    rt.spec = &q;
    rt.node = tree.AddNode(q.name, false);
    tree.mutable_node(rt.node).fair_weight = q.fair_weight;
    if (!q.cohort.empty()) tree.SetParent(rt.node, cohort(q.cohort));
    apply_groups(rt.node, q.resource_groups);
    rt.all_tas = !q.resource_groups.empty();
    for (const auto& g : q.resource_groups) {
      GroupRt grt;
      for (const auto& r : g.covered_resources) {
        ResourceId res = resources.Intern(r);
        grt.resources.push_back(res);
        if (!rt.group_of_res.contains(res)) rt.group_of_res.resize(static_cast<size_t>(res.value()) + 1, -1);
        rt.group_of_res[res] = static_cast<int32_t>(rt.groups.size());
        if (r == "pods") rt.pods_res = res;
        if (r == kGpuResource) rt.gpu_res = res;
      }
      for (const auto& fq : g.flavors) {
        const FlavorId f = flavors_by_name.Find(fq.flavor);
        grt.flavors.push_back(f);
        const ResourceFlavorSpec* fs = f.valid() ? flavors[f].spec : nullptr;
        rt.all_tas = rt.all_tas && fs != nullptr && !fs->topology_name.empty();
      }
      rt.groups.push_back(std::move(grt));
    }
    rt.held = q.stop_policy != StopPolicy::kNone;
    cq_index[q.name] = cqs.push_back(std::move(rt));
  }
  // Flavor-resources held by admitted workloads must exist in the tree.
  for (Wl& w : wls) {
    if (w.info.state != WorkloadState::kAdmitted && w.info.state != WorkloadState::kEvicting) continue;
    for (const auto& ps : w.info.admission) {
      for (const auto& [res, flv] : ps.flavors)
        tree.InternFr(flavors_by_name.Intern(flv), resources.Intern(res));
    }
  }
  if (flavors.size() < flavors_by_name.size()) {
    size_t old = flavors.size();
    flavors.resize(flavors_by_name.size());
    for (FlavorId f : flavors.ids()) {
      if (static_cast<size_t>(f.value()) >= old) flavors[f].name = flavors_by_name.Name(f);
    }
  }
  tree.Finalize();
  for (CqRt& q : cqs) q.root = tree.Root(q.node);
  cq_of_node.assign(tree.num_nodes(), CqId());
  for (CqId c : cqs.ids()) cq_of_node[cqs[c].node] = c;
  root_cqs.assign(tree.num_nodes(), {});
  for (CqId c : cqs.ids()) root_cqs[tree.Root(cqs[c].node)].push_back(c);
  root_epoch.assign(tree.num_nodes(), 0);
  tree_gen.assign(tree.num_nodes(), 0);
  for (auto& ep : root_epoch) ep = ++epoch_counter;
  root_parked.assign(tree.num_nodes(), 0);

  // Local queues.
  IdVector<LqId, LqRt> old_lqs = std::move(lqs);
  std::unordered_map<std::string, LqId> old_lq_index = std::move(lq_index);
  lqs.clear();
  lq_index.clear();
  lqs_of_ns.clear();
  for (const auto& l : config.local_queues) {
    LqRt rt;
    rt.ns = l.ns;
    rt.name = l.name;
    rt.ns_id = NsId(l.ns);
    rt.spec = &l;
    auto it = cq_index.find(l.cluster_queue);
    rt.cq = it == cq_index.end() ? CqId() : it->second;
    std::string key = l.ns + "/" + l.name;
    auto old = old_lq_index.find(key);
    if (old != old_lq_index.end()) {  // keep Admission Fair Sharing history
      const LqRt& o = old_lqs[old->second];
      rt.afs_consumed = o.afs_consumed;
      rt.afs_penalty = o.afs_penalty;
      rt.afs_last_sample = o.afs_last_sample;
      rt.afs_sampled = o.afs_sampled;
    }
    rt.current_usage.assign(resources.size(), 0);
    rt.afs_consumed.resize(resources.size(), 0);
    rt.afs_penalty.resize(resources.size(), 0);
    const LqId id(static_cast<int32_t>(lqs.size()));
    if (rt.cq.valid()) cqs[rt.cq].lqs.push_back(id);
    rt.root = rt.cq.valid() ? tree.Root(cqs[rt.cq].node) : NodeId();
    if (lqs_of_ns.size() <= static_cast<size_t>(rt.ns_id.value())) lqs_of_ns.resize(rt.ns_id.value() + 1);
    lqs_of_ns[rt.ns_id].emplace_back(l.name, id);
    lq_index[key] = id;
    lqs.push_back(std::move(rt));
  }
  // Namespaces and ResourceQuotas.
  for (auto& n : nss) {
    n.labels.clear();
    n.labels["kubernetes.io/metadata.name"] = n.name;
    n.hard.clear();
  }
  for (const auto& ns : config.namespaces) {
    NsRt& n = nss[NsId(ns.name)];
    n.labels = ns.labels;
    n.labels["kubernetes.io/metadata.name"] = ns.name;
  }
  for (const auto& rq : config.resource_quotas) {
    NsRt& n = nss[NsId(rq.ns)];
    for (const auto& [key, amount] : rq.hard) {
      std::string r = RqResource(key);
      if (r.empty()) continue;
      ResourceId res = resources.Intern(r);
      bool found = false;
      for (auto& [hr, ha] : n.hard) {
        if (hr == res) {
          ha = std::min(ha, amount);
          found = true;
        }
      }
      if (!found) n.hard.emplace_back(res, amount);
    }
  }
  any_resource_quota = !config.resource_quotas.empty();
  for (auto& n : nss) n.usage.assign(resources.size(), 0);
  for (auto& l : lqs) {
    l.current_usage.assign(resources.size(), 0);
    l.afs_consumed.resize(resources.size(), 0);
    l.afs_penalty.resize(resources.size(), 0);
  }
  any_drain = false;
  for (CqId c : cqs.ids()) {
    CqRt& cq = cqs[c];
    cq.never_borrows = NeverBorrows(c);
    cq.bulk_shape = StaticBulkShape(c);
    const auto& node = tree.node(cq.node);
    const auto& root = tree.node(cq.root);
    cq.cap_shallow = node.parent.valid() && node.parent == cq.root;
    cq.cap_reclaim = cq.spec->preemption.reclaim_within_cohort != ReclaimWithinCohortPolicy::kNever;
    cq.cap_frs.clear();
    for (const GroupRt& g : cq.groups) {
      for (ResourceId res : g.resources) {
        if (!cq.cap_frs.contains(res)) cq.cap_frs.resize(static_cast<size_t>(res.value()) + 1);
        std::vector<CapFr>& frs = cq.cap_frs[res];
        frs.clear();
        for (FlavorId f : g.flavors) {
          const FrId fr = tree.FindFr(f, res);
          if (!fr.valid()) continue;
          frs.push_back({fr, node.local[fr], node.subtree[fr], node.borrowing_limit[fr], root.subtree[fr]});
        }
      }
    }
  }
  for (CqRt& cq : cqs) {
    cq.drain_possible = cq.spec->stop_policy == StopPolicy::kHoldAndDrain;
    for (LqId l : cq.lqs)
      cq.drain_possible = cq.drain_possible || lqs[l].spec->stop_policy == StopPolicy::kHoldAndDrain;
    any_drain = any_drain || cq.drain_possible;
  }
  priority_classes.clear();
  for (const auto& pc : config.priority_classes) priority_classes[pc.name] = pc.value;
  class_limits.clear();
  any_protection = false;
  for (const auto& pc : config.priority_classes) {
    if (pc.min_runtime || pc.reclaim_min_runtime) {
      class_limits[pc.name] = {pc.min_runtime, pc.reclaim_min_runtime};
      any_protection = true;
    }
  }
  for (const auto& q : config.cluster_queues) {
    if (q.min_runtime || q.reclaim_min_runtime || q.preemption_delay) any_protection = true;
  }
  protect_wakeups.clear();
  reservations.clear();
  any_reservation_config = false;
  for (const auto& q : config.cluster_queues) {
    if (q.reserve_after || q.reserve_priority) any_reservation_config = true;
  }
  sized_resources = resources.size();

  // Re-resolve every workload and rebuild usage.
  for (auto& q : cqs) {
    q.admitted.clear();
    q.admitted_index.Invalidate();
  }
  for (WlId id = 0; id < wls.size(); ++id) {
    Wl& w = wls[id];
    if (w.info.state == WorkloadState::kFinished) continue;
    // A WorkloadPriorityClass whose value changed re-prioritises the
    // workloads that use it (Kueue's WorkloadPriorityClass controller); a
    // class that is gone leaves the priority as it was.
    if (!w.info.spec.priority && w.info.spec.priority_class) {
      if (auto pc = priority_classes.find(*w.info.spec.priority_class); pc != priority_classes.end()) {
        w.info.priority = pc->second;
      }
    }
    w.lq = FindLq(w.ns, w.info.spec.queue);
    if (w.info.state == WorkloadState::kAdmitted || w.info.state == WorkloadState::kEvicting) {
      // Keep the admission under the ClusterQueue that admitted it.
      auto cit = cq_index.find(w.info.cluster_queue);
      w.cq = cit == cq_index.end() ? CqId() : cit->second;
      w.usage.clear();
      for (const auto& ps : w.info.admission) {
        for (const auto& [res, flv] : ps.flavors) {
          FrId fr = tree.FindFr(flavors_by_name.Find(flv), resources.Find(res));
          Amount a = ps.resource_usage.count(res) ? ps.resource_usage.at(res) : 0;
          bool merged = false;
          for (auto& [f, v] : w.usage) {
            if (f == fr) {
              v += a;
              merged = true;
            }
          }
          if (!merged) w.usage.emplace_back(fr, a);
        }
      }
      std::sort(w.usage.begin(), w.usage.end());
      if (w.cq.valid()) {
        tree.AddUsage(cqs[w.cq].node, w.usage, +1);
        w.admitted_pos = static_cast<int32_t>(cqs[w.cq].admitted.size());
        cqs[w.cq].admitted.push_back(id);
      }
      for (const auto& [res, a] : w.ns_usage) nss[w.ns].usage[res] += a;
      if (w.lq.valid()) {
        for (const auto& [res, a] : w.ns_usage) lqs[w.lq].current_usage[res] += a;
      }
      ArmExpiry(id);  // the ClusterQueue's default or ceiling may have changed
    } else {
      w.parked = false;
      Resolve(id);
    }
  }
  parked_placement.clear();
  if (!node_specs.empty()) return RebuildCluster();
  return Status::Ok();
}

}  // namespace artel::core
