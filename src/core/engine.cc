#include "core/engine.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <unordered_set>

#include "core/engine_impl.h"
#include "core/resource_names.h"

namespace artel::core {

const char* WorkloadStateName(WorkloadState s) {
  switch (s) {
    case WorkloadState::kPending: return "Pending";
    case WorkloadState::kAdmitted: return "Admitted";
    case WorkloadState::kEvicting: return "Evicting";
    case WorkloadState::kFinished: return "Finished";
  }
  return "Unknown";
}

const char* EvictionReasonName(EvictionReason r) {
  switch (r) {
    case EvictionReason::kInClusterQueue: return "InClusterQueue";
    case EvictionReason::kInCohortReclamation: return "InCohortReclamation";
    case EvictionReason::kInCohortFairSharing: return "InCohortFairSharing";
    case EvictionReason::kInCohortReclaimWhileBorrowing: return "InCohortReclaimWhileBorrowing";
    case EvictionReason::kClusterQueueStopped: return "ClusterQueueStopped";
    case EvictionReason::kLocalQueueStopped: return "LocalQueueStopped";
    case EvictionReason::kDeactivated: return "Deactivated";
    case EvictionReason::kMaximumExecutionTimeExceeded: return "MaximumExecutionTimeExceeded";
    case EvictionReason::kNodeFailures: return "NodeFailures";
  }
  return "Unknown";
}

const char* PendingReasonKindName(PendingReason::Kind k) {
  using K = PendingReason::Kind;
  switch (k) {
    case K::kNone: return "None";
    case K::kNotYetTried: return "NotYetTried";
    case K::kLocalQueueMissing: return "LocalQueueMissing";
    case K::kClusterQueueMissing: return "ClusterQueueMissing";
    case K::kNamespaceNotAllowed: return "NamespaceNotAllowed";
    case K::kStopped: return "Stopped";
    case K::kInactive: return "Inactive";
    case K::kNoFlavor: return "NoFlavor";
    case K::kInsufficientQuota: return "InsufficientQuota";
    case K::kPreemptionNoCandidates: return "PreemptionNoCandidates";
    case K::kWaitingForEvictions: return "WaitingForEvictions";
    case K::kResourceQuotaExceeded: return "ResourceQuotaExceeded";
    case K::kBlockedByStrictFIFO: return "BlockedByStrictFIFO";
    case K::kReservedByOther: return "ReservedByOther";
    case K::kInadmissibleUntilChange: return "InadmissibleUntilChange";
    case K::kBlockedByReservation: return "BlockedByReservation";
    case K::kUnschedulable: return "Unschedulable";
    case K::kInfeasible: return "Infeasible";
  }
  return "Unknown";
}

namespace {

using K = PendingReason::Kind;

PendingReason Reason(K kind, std::string message) {
  PendingReason r;
  r.kind = kind;
  r.message = std::move(message);
  return r;
}

// Resource id a ResourceQuota key caps, or "" for keys Artel ignores.
std::string RqResource(const std::string& key) {
  if (key.rfind("requests.", 0) == 0) return key.substr(9);
  if (key == "cpu" || key == "memory" || key == "ephemeral-storage") return key;
  return "";
}

std::string Fmt(const std::string& res, Amount a) { return FormatQuantity(a) + " " + res; }

}  // namespace

// ---------------------------------------------------------------------------
// Configuration.

int32_t EngineImpl::NsId(const std::string& ns) {
  int32_t id = namespaces.Find(ns);
  if (id >= 0) return id;
  id = namespaces.Intern(ns);
  NsRt n;
  n.name = ns;
  n.labels["kubernetes.io/metadata.name"] = ns;
  n.usage.assign(resources.size(), 0);
  nss.push_back(std::move(n));
  return id;
}

namespace {

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
    if (wls[id].ref_dirty || ReasonStale(id)) Materialize(id);
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
  for (size_t i = 0; i < flavors_by_name.size(); ++i)
    flavors[i].name = flavors_by_name.Name(static_cast<int32_t>(i));
  for (const auto& f : config.flavors) flavors[flavors_by_name.Find(f.name)].spec = &f;

  tree = QuotaTree();
  cqs.clear();
  cq_index.clear();
  cohort_node.clear();
  // Cohorts, explicit and implicit.
  auto cohort = [&](const std::string& name) {
    auto it = cohort_node.find(name);
    if (it != cohort_node.end()) return it->second;
    int32_t n = tree.AddNode(name, true);
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
  auto apply_groups = [&](int32_t node, const std::vector<ResourceGroupSpec>& groups) {
    for (const auto& g : groups) {
      for (const auto& fq : g.flavors) {
        int32_t f = flavors_by_name.Find(fq.flavor);
        for (const auto& rq : fq.resources) {
          int32_t res = resources.Intern(rq.name);
          int32_t fr = tree.InternFr(f, res);
          tree.SetQuota(node, fr, rq.nominal, rq.borrowing_limit.value_or(kNoLimit),
                        rq.lending_limit.value_or(kNoLimit));
        }
      }
    }
  };
  for (const auto& co : config.cohorts) {
    int32_t n = cohort(co.name);
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
        int32_t res = resources.Intern(r);
        grt.resources.push_back(res);
        if (rt.group_of_res.size() <= static_cast<size_t>(res)) rt.group_of_res.resize(res + 1, -1);
        rt.group_of_res[res] = static_cast<int32_t>(rt.groups.size());
        if (r == "pods") rt.pods_res = res;
        if (r == kGpuResource) rt.gpu_res = res;
      }
      for (const auto& fq : g.flavors) {
        const int32_t f = flavors_by_name.Find(fq.flavor);
        grt.flavors.push_back(f);
        const ResourceFlavorSpec* fs = f < 0 ? nullptr : flavors[f].spec;
        rt.all_tas = rt.all_tas && fs != nullptr && !fs->topology_name.empty();
      }
      rt.groups.push_back(std::move(grt));
    }
    rt.held = q.stop_policy != StopPolicy::kNone;
    cq_index[q.name] = static_cast<int32_t>(cqs.size());
    cqs.push_back(std::move(rt));
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
    for (size_t i = old; i < flavors.size(); ++i)
      flavors[i].name = flavors_by_name.Name(static_cast<int32_t>(i));
  }
  tree.Finalize();
  for (CqRt& q : cqs) q.root = tree.Root(q.node);
  cq_of_node.assign(tree.num_nodes(), -1);
  for (size_t i = 0; i < cqs.size(); ++i) cq_of_node[cqs[i].node] = static_cast<int32_t>(i);
  root_cqs.assign(tree.num_nodes(), {});
  for (size_t i = 0; i < cqs.size(); ++i) root_cqs[tree.Root(cqs[i].node)].push_back(static_cast<int32_t>(i));
  root_epoch.assign(tree.num_nodes(), 0);
  for (auto& ep : root_epoch) ep = ++epoch_counter;
  root_parked.assign(tree.num_nodes(), 0);

  // Local queues.
  std::vector<LqRt> old_lqs = std::move(lqs);
  std::unordered_map<std::string, int32_t> old_lq_index = std::move(lq_index);
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
    rt.cq = it == cq_index.end() ? -1 : it->second;
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
    if (rt.cq >= 0) cqs[rt.cq].lqs.push_back(static_cast<int32_t>(lqs.size()));
    rt.root = rt.cq >= 0 ? tree.Root(cqs[rt.cq].node) : -1;
    if (lqs_of_ns.size() <= static_cast<size_t>(rt.ns_id)) lqs_of_ns.resize(rt.ns_id + 1);
    lqs_of_ns[rt.ns_id].emplace_back(l.name, static_cast<int32_t>(lqs.size()));
    lq_index[key] = static_cast<int32_t>(lqs.size());
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
      int32_t res = resources.Intern(r);
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
  for (CqRt& cq : cqs) {
    cq.drain_possible = cq.spec->stop_policy == StopPolicy::kHoldAndDrain;
    for (int32_t l : cq.lqs)
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
  for (auto& q : cqs) q.admitted.clear();
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
      w.cq = cit == cq_index.end() ? -1 : cit->second;
      w.usage.clear();
      for (const auto& ps : w.info.admission) {
        for (const auto& [res, flv] : ps.flavors) {
          int32_t fr = tree.FindFr(flavors_by_name.Find(flv), resources.Find(res));
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
      if (w.cq >= 0) {
        tree.AddUsage(cqs[w.cq].node, w.usage, +1);
        w.admitted_pos = static_cast<int32_t>(cqs[w.cq].admitted.size());
        cqs[w.cq].admitted.push_back(id);
      }
      for (const auto& [res, a] : w.ns_usage) nss[w.ns].usage[res] += a;
      if (w.lq >= 0) {
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

// ---------------------------------------------------------------------------
// Queues.

void EngineImpl::Resolve(WlId id) {
  Wl& w = wls[id];
  w.parked = false;
  w.lq = FindLq(w.ns, w.info.spec.queue);
  w.cq = w.lq >= 0 ? lqs[w.lq].cq : -1;
  w.info.cluster_queue = w.cq >= 0 ? cqs[w.cq].name : "";
  w.info.max_runtime = MaxRuntime(w, w.cq);
  if (!w.info.spec.active) {
    w.info.pending = Reason(K::kInactive, "workload is deactivated (spec.active=false)");
  } else if (w.lq < 0) {
    w.info.pending = Reason(K::kLocalQueueMissing, "LocalQueue " + w.info.spec.queue +
                                                       " does not exist in namespace " + w.info.spec.ns);
  } else if (w.cq < 0) {
    w.info.pending =
        Reason(K::kClusterQueueMissing, "ClusterQueue " + lqs[w.lq].spec->cluster_queue + " of LocalQueue " +
                                            w.info.spec.queue + " does not exist");
  } else if (!cqs[w.cq].spec->namespace_selector ||
             !cqs[w.cq].spec->namespace_selector->Matches(nss[w.ns].labels)) {
    w.info.pending =
        Reason(K::kNamespaceNotAllowed, "namespace " + w.info.spec.ns +
                                            " is not selected by the namespaceSelector of ClusterQueue " +
                                            cqs[w.cq].name);
  } else if (lqs[w.lq].spec->stop_policy != StopPolicy::kNone) {
    w.info.pending = Reason(K::kStopped, "LocalQueue " + w.info.spec.queue + " is stopped (stopPolicy)");
  } else {
    if (cqs[w.cq].held) {
      w.info.pending = Reason(K::kStopped, "ClusterQueue " + cqs[w.cq].name + " is stopped (stopPolicy)");
    } else if (w.info.pending.kind == K::kNone || w.info.pending.kind == K::kLocalQueueMissing ||
               w.info.pending.kind == K::kClusterQueueMissing ||
               w.info.pending.kind == K::kNamespaceNotAllowed || w.info.pending.kind == K::kStopped ||
               w.info.pending.kind == K::kInactive) {
      w.info.pending = PendingReason{};
      w.info.pending.kind = K::kNotYetTried;  // message built on read
      w.msg_dirty = true;
      w.requeued = false;
    }
    w.info.pending.cluster_queue = cqs[w.cq].name;
    Enqueue(id);
    return;
  }
  orphans.push_back(id);
}

int32_t EngineImpl::FindLq(int32_t ns, const std::string& name) const {
  if (ns < 0 || static_cast<size_t>(ns) >= lqs_of_ns.size()) return -1;
  for (const auto& [n, l] : lqs_of_ns[ns]) {
    if (n == name) return l;
  }
  return -1;
}

void EngineImpl::Enqueue(WlId id) {
  Wl& w = wls[id];
  if (w.in_heap || w.lq < 0) return;
  LqRt& lq = lqs[w.lq];
  QueueKey key{-w.info.priority, w.info.queued_at, w.info.uid, id};
  key.enq_seq = ++enqueue_counter;
  w.enq_seq = key.enq_seq;
  auto it = lq.heap.insert(key).first;
  w.heap_it = it;
  // The least it can be admitted with, per resource (BulkPark's bound).
  w.min_req.clear();
  if (lq.cq >= 0) {
    CqRt& cq = cqs[lq.cq];
    for (const PodSetReq& ps : w.pod_sets) {
      ForEachPerPod(ps, cq.pods_res, ImplicitGpuRes(cq, ps), [&](int32_t res, Amount per_pod) {
        if (per_pod <= 0) return;
        const Amount a = per_pod * std::max<int32_t>(ps.min_count, 0);
        for (auto& [r, v] : w.min_req) {
          if (r == res) {
            v += a;
            return;
          }
        }
        w.min_req.emplace_back(res, a);
      });
    }
    for (const auto& [res, a] : w.min_req) {
      if (cq.min_req.size() <= static_cast<size_t>(res)) cq.min_req.resize(static_cast<size_t>(res) + 1);
      cq.min_req[res].insert(a);
    }
  }
  // An active entry before the skip point becomes the new skip point.
  if (lq.skip_valid && (lq.skip == lq.heap.end() || key < *lq.skip)) lq.skip = it;
  w.in_heap = true;
  w.soft_parked = false;
  if (lq.cq >= 0) cqs[lq.cq].queued++;
  queued_count++;
}

void EngineImpl::Dequeue(WlId id) {
  Wl& w = wls[id];
  if (!w.in_heap) return;
  LqRt& lq = lqs[w.lq];
  const bool parked = SoftParked(w);
  auto it = w.heap_it;
  if (lq.skip_valid && lq.skip == it) ++lq.skip;
  lq.heap.erase(it);
  w.in_heap = false;
  if (lq.cq >= 0) {
    CqRt& cq = cqs[lq.cq];
    for (const auto& [res, a] : w.min_req) cq.min_req[res].erase(cq.min_req[res].find(a));
  }
  w.min_req.clear();
  if (parked) {
    root_parked[lq.root]--;  // parked on its own or in bulk: its ClusterQueue's root
    parked_total--;
    if (lq.cq >= 0) cqs[lq.cq].parked_n--;
  }
  w.soft_parked = false;
  if (lq.cq >= 0) cqs[lq.cq].queued--;
  queued_count--;
}

void EngineImpl::Park(WlId id, std::vector<WlId>* list) {
  Wl& w = wls[id];
  Dequeue(id);
  w.parked = true;
  w.listed = true;
  list->push_back(id);
}

void EngineImpl::UnparkList(std::vector<WlId>* list) {
  if (list->empty()) return;
  std::vector<WlId> taken;
  taken.swap(*list);
  for (WlId id : taken) {
    Wl& w = wls[id];
    w.listed = false;
    if (!w.parked || w.info.state != WorkloadState::kPending) continue;
    w.parked = false;
    Enqueue(id);
  }
  // Keep the buffer: the next park reuses its capacity.
  taken.clear();
  if (list->empty()) list->swap(taken);
}

void EngineImpl::SoftPark(WlId id, int32_t root) {
  Wl& w = wls[id];
  w.soft_parked = true;
  w.park_root = root;
  w.park_epoch = root_epoch[root];
  w.heap_it->park_epoch = w.park_epoch;
  root_parked[root]++;
  CqRt& cq = cqs[lqs[w.lq].cq];
  if (cq.parked_epoch != w.park_epoch) {
    cq.parked_epoch = w.park_epoch;
    cq.parked_n = 0;
  }
  cq.parked_n++;
  parked_total++;
}

void EngineImpl::Unpark(int32_t root) {
  if (root < 0 || root >= static_cast<int32_t>(root_epoch.size())) return;
  parked_total -= root_parked[root];
  root_parked[root] = 0;
  root_epoch[root] = ++epoch_counter;
}

const QueueKey* EngineImpl::FirstActive(int32_t l) {
  LqRt& q = lqs[l];
  if (q.heap.empty()) return nullptr;
  if (q.root < 0) return &*q.heap.begin();  // no ClusterQueue: nothing parks in place
  const uint64_t ep = root_epoch[q.root];
  if (!q.skip_valid || q.skip_epoch != ep) {
    q.skip = q.heap.begin();
    q.skip_epoch = ep;
    q.skip_valid = true;
  }
  // Entries parked in bulk: those below the ClusterQueue's bulk_seq.
  const CqRt& cq = cqs[q.cq];
  const uint64_t bulk_below = cq.bulk_epoch == ep ? cq.bulk_seq : 0;
  while (q.skip != q.heap.end() && (q.skip->park_epoch == ep || q.skip->enq_seq < bulk_below)) ++q.skip;
  return q.skip == q.heap.end() ? nullptr : &*q.skip;
}

// Parking in bulk (docs/semantics.md §3, step 5). A release
// in a cohort tree requeues every workload parked in it, and each is then a
// head in turn, one cycle per workload, until all have been tried: the cost
// of an event grew with the depth of the queue. Where it is exact, the
// queued workloads that cannot be admitted are parked here instead, without
// examining them, in O(1) each ClusterQueue:
//  - the bound: a workload can be admitted only if, for every resource it
//    requests, the least it can be admitted with (all pod sets at their
//    minimum count) is at most what its ClusterQueue could get of that
//    resource over all its flavors: what is available now with borrowing,
//    or, by reclaiming within the cohort, its quota minus its usage (a
//    reclaiming preemptor must fit without borrowing). When the smallest
//    such request queued in the ClusterQueue exceeds that, none of its
//    workloads can be admitted or preempt. Usage only grows within a
//    `Schedule` call (evictions hold their quota until they complete), so
//    the answer holds for every later cycle until the next release, which
//    bumps the tree's epoch and ends the bulk park.
//  - where it is exact: classical preemption with withinClusterQueue and
//    borrowWithinCohort Never and reclaimWithinCohort Never or Any, in a
//    ClusterQueue that is a root or a direct child of its root cohort,
//    BestEffortFIFO, no sticky head; no fair sharing, Admission Fair
//    Sharing, nodes, reservations or runtime protections anywhere. A head
//    that fails then changes nothing but its own reason (with
//    reclaimWithinCohort Never it holds back part of its request for the
//    rest of the cycle, which only matters to heads of its tree, so such a
//    queue is parked in bulk only when every queue of its tree is), and the
//    cycles that would have tried them one by one change the same nothing
//    in the same order: the admissions and evictions are those of the
//    one-by-one cycles (the property tests compare them).
//  - what differs: the pending reason of a workload parked in bulk is built
//    when it is read, from the state then (ReasonStale, Materialize), and
//    `CycleResult::rounds` counts fewer cycles; `decisions` still counts one
//    decision per workload parked.
Amount EngineImpl::BulkCap(int32_t c, int32_t res) const {
  const CqRt& cq = cqs[c];
  const int32_t g = GroupOf(cq, res);
  if (g < 0) return std::numeric_limits<Amount>::max();
  const auto& node = tree.node(cq.node);
  const bool reclaim = cq.spec->preemption.reclaim_within_cohort != ReclaimWithinCohortPolicy::kNever;
  Amount cap = 0;
  for (int32_t f : cq.groups[g].flavors) {
    const int32_t fr = tree.FindFr(f, res);
    if (fr < 0) continue;
    Amount a = tree.Available(cq.node, fr);
    if (reclaim) a = std::max(a, node.subtree[fr] - node.usage[fr]);
    cap += std::max<Amount>(a, 0);
  }
  return cap;
}

bool EngineImpl::AllQueuedFail(int32_t c) const {
  const CqRt& cq = cqs[c];
  for (size_t res = 0; res < cq.min_req.size(); ++res) {
    const auto& set = cq.min_req[res];
    // Some queued workload does not request it (or none is queued).
    if (set.empty() || static_cast<int32_t>(set.size()) < cq.queued) continue;
    if (*set.begin() > BulkCap(c, static_cast<int32_t>(res))) return true;
  }
  return false;
}

int64_t EngineImpl::BulkPark() {
  if (!opts.bulk_park || opts.fair_sharing || opts.admission_fair_sharing || cluster ||
      any_reservation_config || any_protection || !reservations.empty() ||
      static_cast<int64_t>(queued_count) == parked_total)
    return 0;
  int64_t total = 0;
  for (int32_t root = 0; root < static_cast<int32_t>(root_cqs.size()); ++root) {
    const std::vector<int32_t>& members = root_cqs[root];
    if (members.empty()) continue;
    // Whether the tree qualifies, some active queue fails, every one does.
    bool shape_ok = true;
    bool all_fail = true;
    bool any = false;
    for (int32_t c : members) {
      CqRt& cq = cqs[c];
      if (cq.held || ActiveQueued(cq) == 0) continue;
      const PreemptionSpec& pol = cq.spec->preemption;
      const int32_t parent = tree.node(cq.node).parent;
      const bool shape = cq.spec->queueing_strategy == QueueingStrategy::kBestEffortFIFO &&
                         cq.sticky == kNoWl && pol.within_cluster_queue == WithinClusterQueuePolicy::kNever &&
                         pol.borrow_within_cohort == BorrowWithinCohortPolicy::kNever &&
                         (pol.reclaim_within_cohort == ReclaimWithinCohortPolicy::kNever ||
                          pol.reclaim_within_cohort == ReclaimWithinCohortPolicy::kAny) &&
                         (parent < 0 || parent == root);
      if (!shape) {  // a tree of another shape: left to the cycles
        shape_ok = false;
        break;
      }
      if (AllQueuedFail(c)) {
        any = true;
      } else {
        all_fail = false;
      }
    }
    if (!shape_ok) continue;
    const uint64_t ep = root_epoch[root];
    const uint64_t stamp = any ? ++bulk_counter : 0;
    for (int32_t c : members) {
      if (!any) break;
      CqRt& cq = cqs[c];
      if (cq.held || ActiveQueued(cq) == 0) continue;
      // A failing head holds back quota for its cycle unless it may reclaim.
      if (!all_fail && cq.spec->preemption.reclaim_within_cohort != ReclaimWithinCohortPolicy::kAny) continue;
      if (!AllQueuedFail(c)) continue;
      const int32_t n = ActiveQueued(cq);
      if (cq.parked_epoch != ep) {
        cq.parked_epoch = ep;
        cq.parked_n = 0;
      }
      cq.parked_n = cq.queued;
      root_parked[root] += n;
      parked_total += n;
      cq.bulk_epoch = ep;
      cq.bulk_seq = enqueue_counter + 1;
      cq.bulk_stamp = stamp;
      // Nothing before the end is active now; an entry queued later resets
      // the skip point (Enqueue).
      for (int32_t l : cq.lqs) {
        LqRt& q = lqs[l];
        q.skip = q.heap.end();
        q.skip_epoch = ep;
        q.skip_valid = true;
      }
      total += n;
    }
    // One active ClusterQueue left in the tree: its heads meet no head of
    // another queue of the tree in any cycle, so the leading heads that
    // cannot fit are parked one by one here, each without an examination.
    // (Queues of other trees share nothing with it but ResourceQuota, which
    // moving its later heads to earlier cycles could make them compete for.)
    if (any_resource_quota) continue;
    int32_t only = -1;
    for (int32_t c : members) {
      if (cqs[c].held || ActiveQueued(cqs[c]) == 0) continue;
      if (only >= 0) {
        only = -2;
        break;
      }
      only = c;
    }
    if (only < 0) continue;
    CqRt& cq = cqs[only];
    if (cq.sticky != kNoWl) continue;
    std::vector<std::pair<int32_t, Amount>>& caps = bulk_caps;
    caps.clear();
    for (;;) {
      const WlId h = Head(only);
      if (h == kNoWl) break;
      Wl& w = wls[h];
      bool fails = false;
      for (const auto& [res, a] : w.min_req) {
        Amount cap = -1;
        for (const auto& [r, v] : caps) {
          if (r == res) cap = v;
        }
        if (cap < 0) {
          cap = BulkCap(only, res);
          caps.emplace_back(res, cap);
        }
        if (a > cap) {
          fails = true;
          break;
        }
      }
      if (!fails) break;
      SoftPark(h, root);
      w.reason_stale = true;
      ++total;
    }
  }
  return total;
}

bool EngineImpl::ReasonStale(WlId id) const {
  const Wl& w = wls[id];
  if (!w.in_heap || w.lq < 0 || lqs[w.lq].cq < 0 || w.info.state != WorkloadState::kPending) return false;
  const CqRt& cq = cqs[lqs[w.lq].cq];
  return w.reason_stale || (w.enq_seq < cq.bulk_seq && w.reason_stamp < cq.bulk_stamp);
}

double EngineImpl::AfsUsage(int32_t lq) const {
  const LqRt& l = lqs[lq];
  double total = 0;
  for (size_t r = 0; r < l.afs_consumed.size(); ++r) {
    double weight = 1.0;
    auto it = opts.afs.resource_weights.find(resources.Name(static_cast<int32_t>(r)));
    if (it != opts.afs.resource_weights.end()) weight = static_cast<double>(it->second) / 1000.0;
    total += weight * (l.afs_consumed[r] + l.afs_penalty[r]);
  }
  double lw = static_cast<double>(l.spec->fair_weight) / 1000.0;
  if (lw <= 0) return total > 0 ? 1e300 : 0;
  return total / lw;
}

void EngineImpl::AfsSample(Time now) {
  const Time interval = std::max<Time>(1, opts.afs.usage_sampling_interval);
  for (LqRt& l : lqs) {
    if (!l.afs_sampled) {
      l.afs_sampled = true;
      l.afs_last_sample = now;
      continue;
    }
    Time elapsed = now - l.afs_last_sample;
    if (elapsed < interval) continue;
    double alpha = 1.0;
    if (opts.afs.usage_half_life > 0)
      alpha =
          1.0 - std::pow(0.5, static_cast<double>(elapsed) / static_cast<double>(opts.afs.usage_half_life));
    for (size_t r = 0; r < l.afs_consumed.size(); ++r) {
      l.afs_consumed[r] =
          (1 - alpha) * l.afs_consumed[r] + alpha * static_cast<double>(l.current_usage[r]) / 1000.0;
      l.afs_penalty[r] = 0;
    }
    l.afs_last_sample = now;
  }
}

WlId EngineImpl::Head(int32_t cqi) {
  CqRt& cq = cqs[cqi];
  if (cq.sticky != kNoWl) {
    const Wl& s = wls[cq.sticky];
    if (s.in_heap && s.cq == cqi && s.info.state == WorkloadState::kPending) return cq.sticky;
    cq.sticky = kNoWl;
  }
  WlId best = kNoWl;
  double best_afs = 0;
  QueueKey best_key{};
  for (int32_t l : cq.lqs) {
    const QueueKey* first = FirstActive(l);
    if (first == nullptr) continue;
    const QueueKey& k = *first;
    double afs = opts.admission_fair_sharing ? AfsUsage(l) : 0.0;
    if (best == kNoWl || afs < best_afs || (afs == best_afs && k < best_key)) {
      best = k.id;
      best_afs = afs;
      best_key = k;
    }
  }
  return best;
}

// ---------------------------------------------------------------------------
// Usage.

void EngineImpl::AdmitUsage(WlId id) {
  ++state_gen;
  Wl& w = wls[id];
  tree.AddUsage(cqs[w.cq].node, w.usage, +1);
  CqRt& cq = cqs[w.cq];
  w.admitted_pos = static_cast<int32_t>(cq.admitted.size());
  cq.admitted.push_back(id);
  for (const auto& [res, a] : w.ns_usage) nss[w.ns].usage[res] += a;
  if (w.lq >= 0) {
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
  ++state_gen;
  ReleasePlacement(id);
  Wl& w = wls[id];
  if (w.cq >= 0) {
    tree.AddUsage(cqs[w.cq].node, w.usage, -1);
    CqRt& cq = cqs[w.cq];
    if (w.admitted_pos >= 0 && w.admitted_pos < static_cast<int32_t>(cq.admitted.size()) &&
        cq.admitted[w.admitted_pos] == id) {
      WlId last = cq.admitted.back();
      cq.admitted[w.admitted_pos] = last;
      wls[last].admitted_pos = w.admitted_pos;
      cq.admitted.pop_back();
    }
    Unpark(tree.Root(cq.node));
  }
  w.admitted_pos = -1;
  for (const auto& [res, a] : w.ns_usage) nss[w.ns].usage[res] -= a;
  if (w.lq >= 0) {
    for (const auto& [res, a] : w.ns_usage) lqs[w.lq].current_usage[res] -= a;
  }
  // A release in the namespace may unblock ResourceQuota-parked workloads.
  UnparkList(&nss[w.ns].parked);
}

void EngineImpl::RebuildUsage() {
  ++state_gen;
  for (size_t n = 0; n < tree.num_nodes(); ++n) {
    auto& node = tree.mutable_node(static_cast<int32_t>(n));
    std::fill(node.usage.begin(), node.usage.end(), 0);
  }
  for (const CqRt& cq : cqs) {
    for (WlId id : cq.admitted) tree.AddUsage(cq.node, wls[id].usage, +1);
  }
}

void EngineImpl::Evict(WlId id, EvictionReason reason, WlId preemptor, Time now, std::vector<Eviction>* out,
                       const std::string& msg) {
  ++state_gen;
  Wl& w = wls[id];
  // The time it ran counts against its maximum runtime when it comes back
  // (Kueue accumulates it at eviction).
  if (w.info.state == WorkloadState::kAdmitted && w.info.admitted_at >= 0 && now > w.info.admitted_at)
    w.info.used_time += now - w.info.admitted_at;
  DisarmExpiry(id);
  w.info.state = WorkloadState::kEvicting;
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

// ---------------------------------------------------------------------------
// Time limits.

std::optional<Time> EngineImpl::MaxRuntime(const Wl& w, int32_t cq) const {
  std::optional<Time> m = w.info.spec.max_runtime;
  if (cq < 0) return m;
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
  if (v.info.state != WorkloadState::kAdmitted || v.cq < 0 || v.info.admitted_at < 0) return false;
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
  if (w.cq < 0 || !cqs[w.cq].spec->preemption_delay) return false;
  Time end = w.info.queued_at + *cqs[w.cq].spec->preemption_delay;
  if (end <= now) return false;
  if (protect_min < 0 || end < protect_min) protect_min = end;
  protect_delay = true;
  return true;
}

std::optional<Time> EngineImpl::RemainingEstimate(const Wl& w, int32_t cq) const {
  std::optional<Time> est = MaxRuntime(w, cq);
  if (!est && cq >= 0) est = cqs[cq].spec->default_runtime_estimate;
  if (!est) return std::nullopt;
  return std::max<Time>(0, *est - w.info.used_time);
}

bool EngineImpl::Reserve(WlId wl, int32_t cq, Time now) {
  const Wl& w = wls[wl];
  const ClusterQueueSpec& spec = *cqs[cq].spec;
  const bool waited = spec.reserve_after && now - w.info.queued_at >= *spec.reserve_after;
  const bool urgent = spec.reserve_priority && w.info.priority >= *spec.reserve_priority;
  const int32_t root = tree.Root(cqs[cq].node);
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
  for (int32_t c : root_cqs[root]) {
    for (WlId id : cqs[c].admitted) add_end(id);
  }
  if (cluster) {
    for (size_t c = 0; c < cqs.size(); ++c) {
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
  for (const auto& [node, amounts] : round_temp) tree.AddUsage(node, amounts, -1);
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
    AssignFlavors(*this, wl, cq, full, &a);
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
  for (const auto& [node, amounts] : round_temp) tree.AddUsage(node, amounts, +1);
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

const EngineImpl::Reservation* EngineImpl::DelayedReservation(WlId wl, int32_t cq, const Assignment& a,
                                                              Time now) {
  if (reservations.empty()) return nullptr;
  const int32_t root = tree.Root(cqs[cq].node);
  const Wl& w = wls[wl];
  for (const Reservation& r : reservations) {
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
      return !wls[h].forgotten && wls[h].cq >= 0 &&
             (st == WorkloadState::kAdmitted || st == WorkloadState::kEvicting);
    };
    bool fits = true;
    if (same_tree) {
      for (WlId h : r.holders) {
        if (holding(h)) tree.AddUsage(cqs[wls[h].cq].node, wls[h].usage, -1);
      }
      tree.AddUsage(cqs[cq].node, a.usage, +1);
      fits = FitsNow(*this, r.cq, r.usage);
      tree.AddUsage(cqs[cq].node, a.usage, -1);
      for (WlId h : r.holders) {
        if (holding(h)) tree.AddUsage(cqs[wls[h].cq].node, wls[h].usage, +1);
      }
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
    for (size_t c = 0; c < cqs.size(); ++c) {
      if (cqs[c].root >= 0) Unpark(cqs[c].root);
    }
  }
}

// ---------------------------------------------------------------------------
// Placement.

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
  for (int32_t root = 0; root < static_cast<int32_t>(root_epoch.size()); ++root) Unpark(root);
  return Status::Ok();
}

void EngineImpl::BindFlavorsToNodes() {
  ++nodes_gen;
  flavor_nodes.assign(flavors.size(), {});
  flavor_nodes_why.assign(flavors.size(), "");
  if (!cluster || !opts.placement_matches_labels) return;
  for (size_t f = 0; f < flavors.size(); ++f) {
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
    std::vector<int32_t> seen;
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
  if (w.pod_sets.size() > 1 && !spec.topology.KueueAsks() && gang.min_member == 0 &&
      gang.network_mode.empty()) {
    bool any = false, grouped = false;
    for (const PodSetSpec& ps : spec.pod_sets) {
      any = any || ps.topology.KueueAsks();
      grouped = grouped || !ps.topology.group.empty();
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

bool EngineImpl::FlavorPlaced(int32_t f) const {
  if (!cluster) return false;
  if (!opts.place_topology_flavors_only) return true;
  const ResourceFlavorSpec* fs =
      f >= 0 && static_cast<size_t>(f) < flavors.size() ? flavors[f].spec : nullptr;
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

// ---------------------------------------------------------------------------
// The cycle.

namespace {

// The GPU quota a pod takes through slicing hints alone (see PodSetReq).
// Charged as nvidia.com/gpu unless the queue covers the hint resource:
//   KAI gpu-fraction F (x gpu-fraction-num-devices N): F x N, as KAI counts
//     fractions against a queue's GPU quota;
//   KAI gpu-memory, HAMi gpumem/gpucores without nvidia.com/gpu: one GPU per
//     device (the share of the device is only known at placement);
//   artel.dev/gpu-memory with artel.dev/gpu-compute C: C rounded up to
//     sevenths; without gpu-compute: one GPU.
// So a team without GPU quota gets no GPU through a slice.
Amount ImplicitGpu(const PodSetSpec& ps, PodSetReq& r, const Interner& resources) {
  bool hinted = ps.gpu_share.any();
  for (const auto& [res, amt] : r.per_pod) {
    if (amt == 0) continue;
    const std::string& name = resources.Name(res);
    if (name == kGpuResource) return 0;  // charged as requested
    if (IsSlicingHint(name)) {
      hinted = true;
      r.hint_res.push_back(res);
    }
  }
  if (!hinted) return 0;
  Result<placement::GpuRequest> g = placement::ParseGpuRequest(ps.requests, ps.gpu_share);
  if (!g.ok()) return 0;  // placement reports the error
  switch (g->kind) {
    case placement::GpuKind::kShare:
      if (!g->isolated && g->memory_mib == 0 && g->memory_permille > 0)
        return Amount{g->memory_permille} * g->count;
      return Amount{1000} * g->count;
    case placement::GpuKind::kMigNeed:
      if (g->compute_slices > 0) return (Amount{g->compute_slices} * 1000 + 6) / 7;
      return 1000;
    default: return 0;
  }
}

// Whether a restored admission charged pod set `r` an implicit GPU: it did if
// its recorded usage of nvidia.com/gpu is above zero (the pod set requests no
// nvidia.com/gpu itself when it has an implicit charge). Returns the id or -1.
int32_t RecordedImplicitGpu(const EngineImpl& e, const PodSetReq& r, const PodSetAssignment& a) {
  if (r.implicit_gpu <= 0) return -1;
  auto u = a.resource_usage.find(kGpuResource);
  if (u == a.resource_usage.end() || u->second <= 0 || !a.flavors.count(kGpuResource)) return -1;
  return e.resources.Find(kGpuResource);
}

bool ResourceQuotaAllows(const EngineImpl& e, const Wl& w, std::string* why) {
  const NsRt& n = e.nss[w.ns];
  for (const auto& [res, hard] : n.hard) {
    Amount want = 0;
    for (const auto& [r, a] : w.ns_usage) {
      if (r == res) want = a;
    }
    if (want == 0) continue;
    if (n.usage[res] + want > hard) {
      *why = "namespace " + n.name + " ResourceQuota caps requests." + e.resources.Name(res) + " at " +
             FormatQuantity(hard) + "; " + FormatQuantity(n.usage[res]) + " in use, workload needs " +
             FormatQuantity(want);
      return false;
    }
  }
  return true;
}

void BuildAdmission(EngineImpl& e, Wl& w, const Assignment& a) {
  w.info.admission.clear();
  w.ns_usage.clear();
  for (size_t i = 0; i < w.pod_sets.size(); ++i) {
    PodSetAssignment psa;
    psa.name = w.info.spec.pod_sets[i].name;
    psa.count = a.pod_sets[i].count;
    for (const auto& [res, f] : a.pod_sets[i].flavors) psa.flavors[e.resources.Name(res)] = e.flavors[f].name;
    ForEachPerPod(w.pod_sets[i], e.cqs[w.cq].pods_res, e.ImplicitGpuRes(e.cqs[w.cq], w.pod_sets[i]),
                  [&](int32_t res, Amount per_pod) {
                    Amount total = per_pod * psa.count;
                    psa.resource_usage[e.resources.Name(res)] = total;
                    bool merged = false;
                    for (auto& [r, v] : w.ns_usage) {
                      if (r == res) {
                        v += total;
                        merged = true;
                      }
                    }
                    if (!merged) w.ns_usage.emplace_back(res, total);
                  });
    w.info.admission.push_back(std::move(psa));
  }
}

// A span of milliseconds as "1h2m3s" (whole seconds; "0s" below one).
std::string FormatSpan(Time ms) {
  int64_t sec = std::max<Time>(0, ms) / 1000;
  std::string out;
  if (sec >= 3600) out += std::to_string(sec / 3600) + "h";
  if (sec % 3600 >= 60) out += std::to_string(sec % 3600 / 60) + "m";
  if (sec % 60 != 0 || out.empty()) out += std::to_string(sec % 60) + "s";
  return out;
}

// What a reserving workload's message says of its reservation.
std::string ReservationText(const EngineImpl& e, const EngineImpl::Reservation& res) {
  std::string m = "; reserved: its quota";
  if (res.nodes) {
    m += " and room on node(s)";
    for (size_t i = 0; i < res.node_names.size() && i < 5; ++i) m += " " + res.node_names[i];
    if (res.node_names.size() > 5) m += " ...";
    m += " are";
  } else {
    m += " is";
  }
  m += " expected to be free in " + FormatSpan(res.start - e.now) + " (at t=" + FormatSpan(res.start) +
       "), when " + std::to_string(res.holders.size()) + " running workload(s) end:";
  for (size_t i = 0; i < res.holders.size() && i < 5; ++i) m += " " + e.wls[res.holders[i]].info.key;
  if (res.holders.size() > 5) m += " ...";
  m += res.nodes
           ? "; only backfill that ends by then or leaves that quota and room free is admitted meanwhile"
           : "; only backfill that ends by then or leaves that quota free is admitted meanwhile";
  return m;
}

// Why a workload that qualifies has no reservation: its start lies beyond
// its ClusterQueue's backfill window.
std::string BeyondWindowText(const EngineImpl& e, const Wl& w) {
  if (w.beyond_window <= e.now || w.cq < 0 || !e.cqs[w.cq].spec->backfill_window) return "";
  const Time window = *e.cqs[w.cq].spec->backfill_window;
  return std::string("; not reserved: its quota ") + (e.cluster ? "and room on the nodes are" : "is") +
         " expected to be free only in " + FormatSpan(w.beyond_window - e.now) +
         " (at t=" + FormatSpan(w.beyond_window) + "), beyond the backfill window of " + FormatSpan(window) +
         " of ClusterQueue " + e.cqs[w.cq].name +
         "; it reserves from t=" + FormatSpan(w.beyond_window - window);
}

void FillMessage(const EngineImpl& e, const Wl& w, PendingReason* r) {
  if (!r->message.empty()) return;
  if (r->kind == K::kNotYetTried) {
    r->message = w.requeued ? "requeued after eviction" : "waiting for the next scheduling cycle";
    return;
  }
  std::string m = w.info.key + " in ClusterQueue " + r->cluster_queue + ": ";
  switch (r->kind) {
    case K::kInsufficientQuota:
      m += "needs " + Fmt(r->resource, r->requested) + " of flavor " + r->flavor + " but " +
           FormatQuantity(r->available) + " is available (missing " + FormatQuantity(r->missing) +
           ", limited at " + r->level + ")";
      break;
    case K::kPreemptionNoCandidates:
      m += "needs " + Fmt(r->resource, r->requested) + " of flavor " + r->flavor + " (" +
           FormatQuantity(r->available) + " available at " + r->level +
           ") and no workload may be preempted for it under the queue's preemption policy";
      break;
    case K::kReservedByOther:
      m += "the capacity was taken by an earlier entry of the same cycle; retrying next cycle";
      break;
    case K::kWaitingForEvictions: {
      m += "waiting for " + std::to_string(r->would_preempt.size()) + " preempted workload(s) to stop:";
      for (const auto& v : r->would_preempt) m += " " + v;
      break;
    }
    default: m += PendingReasonKindName(r->kind);
  }
  for (const auto& res : e.reservations) {
    if (res.wl != w.info.id || (r->kind != K::kPreemptionNoCandidates && r->kind != K::kInsufficientQuota))
      continue;
    m += ReservationText(e, res);
  }
  if (r->kind == K::kPreemptionNoCandidates || r->kind == K::kInsufficientQuota) m += BeyondWindowText(e, w);
  if ((r->kind == K::kPreemptionNoCandidates || r->kind == K::kInsufficientQuota ||
       r->kind == K::kUnschedulable) &&
      w.protected_until > e.now) {
    // Time limits (docs/semantics.md §11): say when the picture changes.
    const std::string when =
        "in " + FormatSpan(w.protected_until - e.now) + " (at t=" + FormatSpan(w.protected_until) + ")";
    m += w.delay_held
             ? "; it may preempt once its preemption delay has passed, " + when
             : "; workloads protected by a minimum runtime were skipped as preemption candidates; the "
               "first becomes preemptible " +
                   when;
  }
  r->message = std::move(m);
}

}  // namespace

bool EngineImpl::RunRound(Time now, CycleResult* result, bool fresh_snapshot) {
  if (fresh_snapshot) RebuildUsage();
  // Reservations whose workload left the queue are gone; what they held
  // back may be used again.
  for (size_t i = 0; i < reservations.size();) {
    const Wl& rw = wls[reservations[i].wl];
    if (rw.forgotten || rw.info.state != WorkloadState::kPending || rw.cq != reservations[i].cq) {
      DropReservation(i);
    } else {
      ++i;
    }
  }
  // Entries are reused across rounds (their buffers keep their capacity);
  // `n` of them are live in this round.
  std::vector<Entry>& all_entries = round_entries;
  size_t n = 0;
  // Queues none of whose workloads can be admitted are parked at once.
  const int64_t bulk = BulkPark();
  result->decisions += bulk;
  for (int32_t c = 0; c < static_cast<int32_t>(cqs.size()); ++c) {
    if (cqs[c].held || ActiveQueued(cqs[c]) == 0) continue;  // a valid sticky head is queued and active
    WlId h = Head(c);
    if (h == kNoWl) continue;
    wls[h].reason_stamp = bulk_counter;
    wls[h].reason_stale = false;
    if (all_entries.size() <= n) all_entries.emplace_back();
    Entry& en = all_entries[n++];
    en.wl = h;
    en.cq = c;
    protect_min = -1;
    protect_delay = false;
    Nominate(*this, h, c, &en.assignment, &en.targets);
    wls[h].protected_until = protect_min;
    wls[h].delay_held = protect_delay;
    if (protect_min > now) protect_wakeups.emplace(protect_min, tree.Root(cqs[c].node));
  }
  if (n == 0) return bulk > 0;
  struct Live {
    std::vector<Entry>& v;
    size_t n;
    size_t size() const { return n; }
    Entry& operator[](size_t i) { return v[i]; }
  } entries{all_entries, n};
  // Classical order: sort small keys, not the entries themselves.
  std::vector<uint32_t>& order = round_order;
  order.resize(entries.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  if (!opts.fair_sharing) {
    std::sort(order.begin(), order.end(), [&](uint32_t ia, uint32_t ib) {
      const Entry& a = entries[ia];
      const Entry& b = entries[ib];
      // Preemptors whose victims are being evicted go first, so that the
      // capacity they freed is not taken back by the victims themselves.
      bool wa = wls[a.wl].waiting_preemption, wb = wls[b.wl].waiting_preemption;
      if (wa != wb) return wa;
      if (a.assignment.borrow_level != b.assignment.borrow_level)
        return a.assignment.borrow_level < b.assignment.borrow_level;
      const Wl& x = wls[a.wl];
      const Wl& y = wls[b.wl];
      if (x.info.priority != y.info.priority) return x.info.priority > y.info.priority;
      if (x.info.queued_at != y.info.queued_at) return x.info.queued_at < y.info.queued_at;
      return x.info.uid < y.info.uid;
    });
  }
  bool changed = false;
  auto& temp = round_temp;  // cycle-only usage, rolled back at the end
  temp.clear();
  const uint64_t stamp = ++round_stamp;  // marks this round's victims in Wl::victim_stamp
  round_victims.clear();
  auto is_victim = [&](WlId id) { return wls[id].victim_stamp == stamp; };
  std::vector<char>& done = round_done;
  done.assign(entries.size(), 0);
  for (size_t step = 0; step < entries.size(); ++step) {
    size_t idx = order[step];
    if (opts.fair_sharing) {
      int32_t pick = -1;
      for (size_t i = 0; i < entries.size(); ++i) {  // waiting preemptors first, as above
        if (done[i] || !wls[entries[i].wl].waiting_preemption) continue;
        const Wl& x = wls[entries[i].wl];
        if (pick < 0 || x.info.priority > wls[entries[pick].wl].info.priority ||
            (x.info.priority == wls[entries[pick].wl].info.priority &&
             x.info.uid < wls[entries[pick].wl].info.uid))
          pick = static_cast<int32_t>(i);
      }
      if (pick < 0) pick = FairSharingPickNext(*this, all_entries, done);
      if (pick < 0) break;
      idx = static_cast<size_t>(pick);
    }
    done[idx] = 1;
    Entry& en = entries[idx];
    Wl& w = wls[en.wl];
    CqRt& cq = cqs[en.cq];
    Assignment& a = en.assignment;
    result->decisions++;
    if (a.mode == Mode::kFit) {
      if (!FitsNow(*this, en.cq, a.usage)) {
        // Another entry of this cycle took the capacity; retry next cycle.
        w.info.pending = Reason(K::kReservedByOther, "");
        w.info.pending.cluster_queue = cq.name;
        w.msg_dirty = true;
        // Its victims are gone; it no longer holds the head of its queue.
        w.waiting_preemption = false;
        if (cq.sticky == en.wl) cq.sticky = kNoWl;
        result->decisions--;
        continue;
      }
      // Conservative backfill (docs/semantics.md §11): no admission that
      // would delay a reservation; a waiting preemptor is not held back.
      if (!reservations.empty() && !w.waiting_preemption) {
        if (const Reservation* r = DelayedReservation(en.wl, en.cq, a, now)) {
          std::optional<Time> rest = RemainingEstimate(w, en.cq);
          w.info.pending = Reason(
              K::kBlockedByReservation,
              w.info.key + " in ClusterQueue " + cq.name + ": fits, but would delay the reservation of " +
                  wls[r->wl].info.key + " (ClusterQueue " + cqs[r->cq].name + "), which starts in " +
                  FormatSpan(r->start - now) + " (at t=" + FormatSpan(r->start) + "): " +
                  (rest ? "its runtime estimate (" + FormatSpan(*rest) + ") ends after that"
                        : "it has no runtime estimate (maximum runtime or queue default)") +
                  (r->nodes ? " and it needs quota or room on the nodes the reservation holds"
                            : " and it needs quota the reservation holds"));
          w.info.pending.cluster_queue = cq.name;
          if (cq.sticky == en.wl) cq.sticky = kNoWl;
          if (cq.spec->queueing_strategy == QueueingStrategy::kBestEffortFIFO) {
            SoftPark(en.wl, tree.Root(cq.node));
            changed = true;
          }
          continue;
        }
      }
      BuildAdmission(*this, w, a);
      std::string why;
      if (!ResourceQuotaAllows(*this, w, &why)) {
        w.info.admission.clear();
        w.info.pending = Reason(K::kResourceQuotaExceeded, w.info.key + ": " + why);
        w.info.pending.cluster_queue = cq.name;
        Park(en.wl, &nss[w.ns].parked);
        if (cq.sticky == en.wl) cq.sticky = kNoWl;
        changed = true;
        continue;
      }
      if (Placed(a)) {
        placement::PlaceResult pr = PlaceWorkload(en.wl, a);
        if (pr.ok()) {
          // Fewer pods than assigned were placed (minCount / minMember):
          // admit only those, and hold only their quota.
          bool shrunk = false;
          for (size_t i = 0; i < a.pod_sets.size() && i < pr.placement.placed.size(); ++i) {
            if (pr.placement.placed[i] < a.pod_sets[i].count) {
              a.pod_sets[i].count = pr.placement.placed[i];
              shrunk = true;
            }
          }
          if (shrunk) {
            FrAmounts usage;
            for (size_t i = 0; i < a.pod_sets.size(); ++i) {
              ForEachPerPod(w.pod_sets[i], cq.pods_res, ImplicitGpuRes(cq, w.pod_sets[i]),
                            [&](int32_t res, Amount per_pod) {
                              int32_t f = -1;
                              for (const auto& [r, fl] : a.pod_sets[i].flavors) {
                                if (r == res) f = fl;
                              }
                              if (f < 0) return;
                              int32_t fr = tree.FindFr(f, res);
                              if (fr < 0) return;
                              bool merged = false;
                              for (auto& [x, v] : usage) {
                                if (x == fr) {
                                  v += per_pod * a.pod_sets[i].count;
                                  merged = true;
                                }
                              }
                              if (!merged) usage.emplace_back(fr, per_pod * a.pod_sets[i].count);
                            });
            }
            std::sort(usage.begin(), usage.end());
            a.usage = std::move(usage);
            BuildAdmission(*this, w, a);
          }
        }
        if (!pr.ok() && pr.outcome == placement::PlaceOutcome::kUnschedulable) {
          // Placement-aware preemption: victims that free the nodes are
          // evicted as in quota preemption (the branch below).
          en.targets = PlacementTargets(*this, en.wl, en.cq, a);
          if (!en.targets.empty()) {
            w.info.admission.clear();
            a.mode = Mode::kPreempt;
          }
        }
        if (!pr.ok() && a.mode == Mode::kFit) {
          w.info.admission.clear();
          w.info.pending =
              Reason(pr.outcome == placement::PlaceOutcome::kInfeasible ? K::kInfeasible : K::kUnschedulable,
                     w.info.key + ": quota fits in ClusterQueue " + cq.name +
                         " but the pods do not fit on the nodes: " + pr.reason);
          w.info.pending.cluster_queue = cq.name;
          if (w.protected_until > now) {
            w.info.pending.message.clear();  // FillMessage adds when the protection ends
            w.info.pending.message = w.info.key + ": quota fits in ClusterQueue " + cq.name +
                                     " but the pods do not fit on the nodes: " + pr.reason;
            PendingReason tmp;
            tmp.kind = K::kUnschedulable;
            tmp.cluster_queue = cq.name;
            FillMessage(*this, w, &tmp);
            size_t cut = tmp.message.find("; ");
            if (cut != std::string::npos) w.info.pending.message += tmp.message.substr(cut);
          }
          // Reservations with nodes (docs/semantics.md §11): the quota
          // fits, the nodes do not; it reserves where the holders' ends
          // make room.
          w.beyond_window = -1;
          if (any_reservation_config && pr.outcome == placement::PlaceOutcome::kUnschedulable) {
            if (Reserve(en.wl, en.cq, now)) {
              for (const Reservation& res : reservations) {
                if (res.wl == en.wl) w.info.pending.message += ReservationText(*this, res);
              }
            } else {
              w.info.pending.message += BeyondWindowText(*this, w);
            }
          }
          Park(en.wl, &parked_placement);
          if (cq.sticky == en.wl) cq.sticky = kNoWl;
          w.waiting_preemption = false;
          changed = true;
          continue;
        }
      }
      if (a.mode == Mode::kFit) {
        // Admit.
        w.usage = a.usage;
        Dequeue(en.wl);
        w.info.state = WorkloadState::kAdmitted;
        w.info.pending = PendingReason{};
        w.info.admitted_at = now;
        w.admit_seq = next_admit_seq++;
        w.info.admission_seq = w.admit_seq;
        w.waiting_preemption = false;
        AdmitUsage(en.wl);
        ArmExpiry(en.wl);
        if (!reservations.empty()) {
          for (size_t i = 0; i < reservations.size(); ++i) {
            if (reservations[i].wl != en.wl) continue;
            DropReservation(i);
            break;
          }
        }
        if (opts.admission_fair_sharing && w.lq >= 0) {
          double alpha = 1.0;
          if (opts.afs.usage_half_life > 0)
            alpha = 1.0 - std::pow(0.5, static_cast<double>(opts.afs.usage_sampling_interval) /
                                            static_cast<double>(opts.afs.usage_half_life));
          for (const auto& [res, amt] : w.ns_usage)
            lqs[w.lq].afs_penalty[res] += alpha * static_cast<double>(amt) / 1000.0;
        }
        if (cq.sticky == en.wl) cq.sticky = kNoWl;
        pending_count--;
        admitted_count++;
        result->admitted.push_back(w.info.key);
        result->admitted_ids.push_back(en.wl);
        changed = true;
        continue;
      }
    }
    if ((a.mode == Mode::kPreempt || a.mode == Mode::kReclaim) && !en.targets.empty()) {
      // With nodes, quota victims that would not free a placement give way
      // to victims that free both quota and nodes, when there are such.
      if (Placed(a) && !en.targets[0].nodes && !PlacesWithout(*this, en.wl, a, en.targets)) {
        std::vector<Target> both = PlacementTargets(*this, en.wl, en.cq, a);
        if (!both.empty()) en.targets = std::move(both);
      }
      bool overlap = false;
      for (const Target& t : en.targets) overlap = overlap || is_victim(t.id);
      if (overlap) {
        result->decisions--;
        continue;  // skipped; retried next cycle
      }
      // A wasted preemption is skipped (Kueue scheduler.go, `fits`): the
      // preemptor must fit once this round's victims and its own targets are
      // gone, given what earlier preemptors of the round reserved.
      {
        auto remove = [&](WlId v, int sign) { tree.AddUsage(cqs[wls[v].cq].node, wls[v].usage, sign); };
        for (WlId v : round_victims) remove(v, -1);
        for (const Target& t : en.targets) remove(t.id, -1);
        const bool fits = FitsNow(*this, en.cq, a.usage);
        for (const Target& t : en.targets) remove(t.id, +1);
        for (WlId v : round_victims) remove(v, +1);
        if (!fits) {
          result->decisions--;
          continue;  // skipped; retried next cycle
        }
      }
      std::vector<std::string> names;
      for (const Target& t : en.targets) {
        names.push_back(wls[t.id].info.key);
        if (wls[t.id].info.state == WorkloadState::kAdmitted) {
          std::string msg = "preempted by " + w.info.key + " (ClusterQueue " + cq.name + ") to " +
                            (t.reason == EvictionReason::kInClusterQueue ? "admit a higher-priority workload"
                             : t.reason == EvictionReason::kInCohortFairSharing ? "restore the fair share"
                                                                                : "reclaim quota");
          if (t.nodes) msg += " (its pods need this workload's nodes)";
          Evict(t.id, t.reason, en.wl, now, &result->evictions,
                msg + " [" + EvictionReasonName(t.reason) + "]");
          changed = true;
        }
        wls[t.id].victim_stamp = stamp;
        round_victims.push_back(t.id);
      }
      tree.AddUsage(cq.node, a.usage, +1);
      overlay_gen = ++overlay_counter;
      temp.emplace_back(cq.node, a.usage);
      w.waiting_preemption = true;
      cq.sticky = en.wl;
      w.info.pending = PendingReason{};
      w.info.pending.kind = K::kWaitingForEvictions;
      w.info.pending.cluster_queue = cq.name;
      w.info.pending.would_preempt = std::move(names);
      w.pending_ref = a.ref;
      w.ref_dirty = true;
      w.msg_dirty = true;
      continue;
    }
    // Inadmissible this cycle.
    bool preempt_mode = a.mode == Mode::kNoCandidates || a.mode == Mode::kPreempt || a.mode == Mode::kReclaim;
    // Reservations (docs/semantics.md §11): a head short of quota that
    // qualifies holds back what frees up first (with nodes, where its pods
    // are then placed). Computed before this cycle holds back part of its
    // request below.
    w.beyond_window = -1;
    if (any_reservation_config &&
        (preempt_mode || a.kind == K::kInsufficientQuota || a.kind == K::kNone || a.kind == K::kNotYetTried))
      Reserve(en.wl, en.cq, now);
    if (preempt_mode && cq.spec->preemption.reclaim_within_cohort != ReclaimWithinCohortPolicy::kAny) {
      FrAmounts reserve;
      const auto& node = tree.node(cq.node);
      // Kueue scheduler.go quotaResourcesToReserve: what the queue may still
      // take without borrowing; when the assignment borrows, up to its
      // borrowing limit (all of the request without a limit).
      for (const auto& [fr, amt] : a.usage) {
        Amount r;
        if (a.borrow_level > 0) {
          r = node.borrowing_limit[fr] == kNoLimit
                  ? amt
                  : std::min(amt, node.nominal[fr] + node.borrowing_limit[fr] - node.usage[fr]);
        } else {
          r = std::min(amt, node.nominal[fr] - node.usage[fr]);
        }
        if (r > 0) reserve.emplace_back(fr, r);
      }
      if (!reserve.empty()) {
        tree.AddUsage(cq.node, reserve, +1);
        overlay_gen = ++overlay_counter;
        temp.emplace_back(cq.node, std::move(reserve));
      }
    }
    // Only the kind is set now; names and the message are built on read.
    K kind = a.kind;
    if (preempt_mode) kind = K::kPreemptionNoCandidates;
    if (kind == K::kNone || kind == K::kNotYetTried) kind = K::kInsufficientQuota;
    if (kind == K::kNoFlavor || kind == K::kInfeasible) {
      w.info.pending = PendingReason{};
      w.info.pending.kind = kind;
      w.info.pending.cluster_queue = cq.name;
      w.info.pending.message = w.info.key + " in ClusterQueue " + cq.name + ": " + a.message;
    } else {
      w.info.pending.kind = kind;
      w.info.pending.message.clear();
      w.info.pending.would_preempt.clear();
    }
    w.pending_ref = a.ref;
    w.ref_dirty = true;
    w.msg_dirty = true;
    w.waiting_preemption = false;
    if (cq.sticky == en.wl) cq.sticky = kNoWl;
    if (cq.spec->queueing_strategy == QueueingStrategy::kBestEffortFIFO) {
      SoftPark(en.wl, tree.Root(cq.node));
      changed = true;
    }
  }
  // The cycle-only usage is gone: the tree is back to the committed state.
  for (const auto& [node, amounts] : temp) tree.AddUsage(node, amounts, -1);
  overlay_gen = 0;
  return changed || bulk > 0;
}

void EngineImpl::SetStrictFifoReasons() {
  for (int32_t c = 0; c < static_cast<int32_t>(cqs.size()); ++c) {
    CqRt& cq = cqs[c];
    if (cq.spec->queueing_strategy != QueueingStrategy::kStrictFIFO || cq.held) continue;
    WlId h = Head(c);
    if (h == kNoWl) continue;
    const PendingReason::Kind hk = wls[h].info.pending.kind;
    if (hk == K::kNotYetTried || hk == K::kNone) continue;
    for (int32_t l : cq.lqs) {
      for (const QueueKey& k : lqs[l].heap) {
        if (k.id == h) continue;
        PendingReason& r = wls[k.id].info.pending;
        r = Reason(K::kBlockedByStrictFIFO, wls[k.id].info.key + ": behind the StrictFIFO head " +
                                                wls[h].info.key + " of ClusterQueue " + cq.name);
        r.cluster_queue = cq.name;
      }
    }
  }
}

// ---------------------------------------------------------------------------
// Engine.

Engine::Engine(EngineOptions options) : impl_(std::make_unique<EngineImpl>(std::move(options))) {}
Engine::~Engine() = default;

Status Engine::Configure(const Config& config) { return impl_->ApplyConfig(config); }
const Config& Engine::config() const { return impl_->config; }
const EngineOptions& Engine::options() const { return impl_->opts; }

Result<WorkloadId> Engine::Submit(WorkloadSpec spec, Time now) {
  EngineImpl& e = *impl_;
  if (spec.ns.empty() || spec.name.empty()) return InvalidArgument("workload needs a namespace and a name");
  std::string key;
  key.reserve(spec.ns.size() + 1 + spec.name.size());
  key.append(spec.ns).append(1, '/').append(spec.name);
  // One hash for the duplicate check and the insertion; a failure below
  // takes the reservation back.
  auto [slot, inserted] = e.wl_index.try_emplace(key, kNoWl);
  if (!inserted) return AlreadyExists("workload " + key + " already exists");
  struct Unreserve {
    EngineImpl& e;
    decltype(e.wl_index)::iterator it;  // not decltype(slot): clang 14 refuses a local binding here
    bool armed = true;
    ~Unreserve() {
      if (armed) e.wl_index.erase(it);
    }
  } unreserve{e, slot};
  if (spec.pod_sets.empty())
    return InvalidArgument("workload " + key + " has no pod sets").WithField("podSets");
  if (spec.max_runtime && *spec.max_runtime < 0)
    return InvalidArgument("workload " + key + ": maximum runtime must not be negative")
        .WithField("maximumExecutionTimeSeconds");
  int32_t priority = 0;
  if (spec.priority) {
    priority = *spec.priority;
  } else if (spec.priority_class) {
    auto it = e.priority_classes.find(*spec.priority_class);
    if (it == e.priority_classes.end())
      return InvalidArgument("workload " + key + ": WorkloadPriorityClass \"" + *spec.priority_class +
                             "\" does not exist")
          .WithField("priorityClass");
    priority = it->second;
  }
  Wl w;
  w.pod_sets.reserve(spec.pod_sets.size());
  for (size_t i = 0; i < spec.pod_sets.size(); ++i) {
    const PodSetSpec& ps = spec.pod_sets[i];
    auto path = [i] { return "podSets[" + std::to_string(i) + "]"; };
    for (size_t j = 0; j < i; ++j) {
      if (spec.pod_sets[j].name == ps.name)
        return InvalidArgument("duplicate pod set name \"" + ps.name + "\"").WithField(path() + ".name");
    }
    if (ps.count < 1) return InvalidArgument("count must be at least 1").WithField(path() + ".count");
    if (ps.min_count && (*ps.min_count < 1 || *ps.min_count > ps.count))
      return InvalidArgument("minCount must be between 1 and count (" + std::to_string(ps.count) + ")")
          .WithField(path() + ".minCount");
    PodSetReq r;
    r.count = ps.count;
    r.min_count = ps.min_count.value_or(ps.count);
    r.per_pod.reserve(ps.requests.size());
    for (const auto& [res, amt] : ps.requests) {
      if (amt < 0)
        return InvalidArgument("request must not be negative").WithField(path() + ".requests." + res);
      if (amt > kUnlimited / std::max(1, ps.count))
        return InvalidArgument("request too large").WithField(path() + ".requests." + res);
      r.per_pod.emplace_back(e.resources.Intern(res), amt);
    }
    std::sort(r.per_pod.begin(), r.per_pod.end());
    r.implicit_gpu = ImplicitGpu(ps, r, e.resources);
    w.pod_sets.push_back(std::move(r));
  }
  // New resource names may have appeared: grow the per-resource arrays
  // (only then, so a submission costs O(1) in the number of queues).
  if (e.resources.size() != e.sized_resources) {
    e.sized_resources = e.resources.size();
    for (auto& n : e.nss) n.usage.resize(e.resources.size(), 0);
    for (auto& l : e.lqs) {
      l.current_usage.resize(e.resources.size(), 0);
      l.afs_consumed.resize(e.resources.size(), 0);
      l.afs_penalty.resize(e.resources.size(), 0);
    }
  }
  w.ns = e.NsId(spec.ns);
  w.info.key = key;
  w.info.spec = std::move(spec);
  w.info.priority = priority;
  w.info.created = now;
  w.info.queued_at = now;
  w.info.uid = e.next_uid++;
  w.info.pending.kind = K::kNotYetTried;  // message built on read
  w.msg_dirty = true;
  WlId id;
  if (!e.free_ids.empty()) {
    id = e.free_ids.back();
    e.free_ids.pop_back();
    e.wls[id] = std::move(w);
    e.reused_slots = true;
  } else {
    id = static_cast<WlId>(e.wls.size());
    e.wls.push_back(std::move(w));
  }
  e.wls[id].info.id = id;
  slot->second = id;
  unreserve.armed = false;
  e.pending_count++;
  e.Resolve(id);
  return id;
}

namespace {
Result<WlId> Lookup(const EngineImpl& e, const std::string& key) {
  auto it = e.wl_index.find(key);
  if (it == e.wl_index.end()) return NotFound("workload " + key + " not found");
  return it->second;
}

bool Live(const EngineImpl& e, WlId id) { return id < e.wls.size() && !e.wls[id].forgotten; }

Status UnknownId(WlId id) { return NotFound("workload handle " + std::to_string(id) + " not found"); }
}  // namespace

Status EngineImpl::FinishId(WlId id) {
  Wl& w = wls[id];
  if (w.info.state != WorkloadState::kAdmitted && w.info.state != WorkloadState::kEvicting)
    return FailedPrecondition("workload " + w.info.key + " is " + WorkloadStateName(w.info.state) +
                              ", not running");
  DisarmExpiry(id);
  ReleaseUsage(id);
  w.info.state = WorkloadState::kFinished;
  admitted_count--;
  return Status::Ok();
}

Status Engine::Finish(const std::string& key, Time now) {
  (void)now;
  auto id = Lookup(*impl_, key);
  if (!id.ok()) return id.status();
  return impl_->FinishId(*id);
}

Status Engine::Finish(WorkloadId id, Time now) {
  (void)now;
  if (!Live(*impl_, id)) return UnknownId(id);
  return impl_->FinishId(id);
}

Status Engine::Forget(WorkloadId id) {
  EngineImpl& e = *impl_;
  if (!Live(e, id)) return UnknownId(id);
  Wl& w = e.wls[id];
  if (w.info.state != WorkloadState::kFinished)
    return FailedPrecondition("workload " + w.info.key + " is " + WorkloadStateName(w.info.state) +
                              ", not finished");
  auto it = e.wl_index.find(w.info.key);
  if (it != e.wl_index.end() && it->second == id) e.wl_index.erase(it);
  // A handle must not linger where a later workload could inherit it.
  if (w.listed) {
    auto drop = [id](std::vector<WlId>* v) { v->erase(std::remove(v->begin(), v->end(), id), v->end()); };
    for (auto& n : e.nss) drop(&n.parked);
    drop(&e.parked_placement);
  }
  e.orphans.erase(std::remove(e.orphans.begin(), e.orphans.end(), id), e.orphans.end());
  for (CqRt& cq : e.cqs) {
    if (cq.sticky == id) cq.sticky = kNoWl;
  }
  // The slot's contents are overwritten when Submit reuses it.
  w.forgotten = true;
  e.free_ids.push_back(id);
  return Status::Ok();
}

Status Engine::Cancel(const std::string& key, Time now) {
  (void)now;
  EngineImpl& e = *impl_;
  auto id = Lookup(e, key);
  if (!id.ok()) return id.status();
  Wl& w = e.wls[*id];
  if (w.info.state == WorkloadState::kAdmitted || w.info.state == WorkloadState::kEvicting) {
    e.DisarmExpiry(*id);
    e.ReleaseUsage(*id);
    e.admitted_count--;
  } else if (w.info.state == WorkloadState::kPending) {
    e.Dequeue(*id);
    w.parked = false;
    e.pending_count--;
  }
  w.info.state = WorkloadState::kFinished;
  e.wl_index.erase(key);
  return Status::Ok();
}

Status EngineImpl::CompleteEvictionId(WlId id) {
  Wl& w = wls[id];
  if (w.info.state != WorkloadState::kEvicting)
    return FailedPrecondition("workload " + w.info.key + " is " + WorkloadStateName(w.info.state) +
                              ", not evicting");
  if (w.info.last_eviction && w.info.last_eviction->reason == EvictionReason::kMaximumExecutionTimeExceeded) {
    // Stopped for its maximum runtime: it does not queue again.
    w.info.failed = true;
    w.info.failure = w.info.last_eviction->message;
    return FinishId(id);
  }
  ReleaseUsage(id);
  w.info.state = WorkloadState::kPending;
  w.info.admission.clear();
  w.usage.clear();
  w.info.admitted_at = -1;
  admitted_count--;
  pending_count++;
  w.info.pending = PendingReason{};
  w.info.pending.kind = K::kNotYetTried;  // "requeued after eviction", built on read
  w.msg_dirty = true;
  w.requeued = true;
  Resolve(id);
  return Status::Ok();
}

Status Engine::CompleteEviction(const std::string& key, Time now) {
  (void)now;
  auto id = Lookup(*impl_, key);
  if (!id.ok()) return id.status();
  return impl_->CompleteEvictionId(*id);
}

Status Engine::CompleteEviction(WorkloadId id, Time now) {
  (void)now;
  if (!Live(*impl_, id)) return UnknownId(id);
  return impl_->CompleteEvictionId(id);
}

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
  std::vector<std::pair<int32_t, Amount>> ns_usage;
  // Per pod set, the implicit charges (`pods`, a GPU slice) the admission
  // recorded: `pods` when it has a flavor, the slice by its recorded usage.
  std::vector<std::pair<int32_t, int32_t>> implicit(admission.size());
  for (size_t i = 0; i < admission.size(); ++i) {
    const PodSetAssignment& ps = admission[i];
    if (ps.count < 1 || ps.count > w.pod_sets[i].count)
      return InvalidArgument("pod set " + ps.name + ": admitted count out of range");
    const int32_t pods_res = ps.flavors.count("pods") ? e.resources.Find("pods") : -1;
    const int32_t gpu_res = RecordedImplicitGpu(e, w.pod_sets[i], ps);
    implicit[i] = {pods_res, gpu_res};
    Status bad;
    ForEachPerPod(w.pod_sets[i], pods_res, gpu_res, [&](int32_t res_name, Amount per_pod) {
      if (!bad.ok()) return;
      const std::string& rn = e.resources.Name(res_name);
      Amount total = per_pod * ps.count;
      auto fit = ps.flavors.find(rn);
      if (fit == ps.flavors.end()) {
        if (total == 0 || IsSlicingHint(rn)) return;
        bad = InvalidArgument("pod set " + ps.name + ": no flavor for resource " + rn);
        return;
      }
      int32_t f = e.flavors_by_name.Find(fit->second);
      int32_t fr = f < 0 ? -1 : e.tree.FindFr(f, res_name);
      if (fr < 0) {
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
      int32_t r = e.resources.Find(res), f = e.flavors_by_name.Find(flv);
      if (r >= 0 && f >= 0) psa.flavors.emplace_back(r, f);
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
    ForEachPerPod(w.pod_sets[i], implicit[i].first, implicit[i].second, [&](int32_t res, Amount per_pod) {
      ps.resource_usage[e.resources.Name(res)] = per_pod * ps.count;
    });
  }
  w.info.state = WorkloadState::kAdmitted;
  w.info.pending = PendingReason{};
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

Status Engine::Evict(const std::string& key, EvictionReason reason, const std::string& message, Time now) {
  EngineImpl& e = *impl_;
  if (reason != EvictionReason::kNodeFailures)
    return InvalidArgument("only NodeFailures evictions are requested");
  auto id = Lookup(e, key);
  if (!id.ok()) return id.status();
  if (e.wls[*id].info.state != WorkloadState::kAdmitted) return Status::Ok();
  e.Evict(*id, reason, kNoWl, now, &e.pending_evictions, message);
  return Status::Ok();
}

Status Engine::AddNode(placement::NodeSpec node) {
  EngineImpl& e = *impl_;
  if (!e.cluster) {
    std::vector<placement::NodeSpec> one;
    one.push_back(std::move(node));
    return SetNodes(std::move(one));
  }
  for (const placement::NodeSpec& n : e.node_specs) {
    if (n.name == node.name) return AlreadyExists("node " + node.name + " exists");
  }
  Status s = e.cluster->AddNode(node);
  if (!s.ok()) return s;
  e.node_specs.push_back(std::move(node));
  e.BindFlavorsToNodes();
  e.UnparkList(&e.parked_placement);
  for (int32_t root = 0; root < static_cast<int32_t>(e.root_epoch.size()); ++root) e.Unpark(root);
  ++e.state_gen;
  return Status::Ok();
}

Status Engine::SetNodeReady(const std::string& name, bool ready) {
  EngineImpl& e = *impl_;
  placement::NodeSpec* spec = nullptr;
  for (placement::NodeSpec& n : e.node_specs) {
    if (n.name == name) spec = &n;
  }
  if (spec == nullptr || !e.cluster) return NotFound("node " + name + " does not exist");
  if (spec->ready == ready) return Status::Ok();
  Status s = e.cluster->SetReady(name, ready);
  if (!s.ok()) return s;
  spec->ready = ready;
  e.BindFlavorsToNodes();
  if (ready) {
    e.UnparkList(&e.parked_placement);
    for (int32_t root = 0; root < static_cast<int32_t>(e.root_epoch.size()); ++root) e.Unpark(root);
  }
  ++e.state_gen;
  return Status::Ok();
}

const std::vector<placement::NodeSpec>& Engine::nodes() const { return impl_->node_specs; }

Status Engine::SetNodes(std::vector<placement::NodeSpec> nodes) {
  EngineImpl& e = *impl_;
  std::vector<placement::NodeSpec> old = std::move(e.node_specs);
  e.node_specs = std::move(nodes);
  Status s = e.RebuildCluster();
  if (!s.ok()) {
    e.node_specs = std::move(old);
    (void)e.RebuildCluster();
    return s;
  }
  ++e.state_gen;
  return Status::Ok();
}

const placement::Cluster* Engine::cluster() const { return impl_->cluster.get(); }

Status Engine::SetActive(const std::string& key, bool active, Time now) {
  EngineImpl& e = *impl_;
  auto id = Lookup(e, key);
  if (!id.ok()) return id.status();
  Wl& w = e.wls[*id];
  if (w.info.spec.active == active) return Status::Ok();
  w.info.spec.active = active;
  if (!active) {
    if (w.info.state == WorkloadState::kAdmitted) {
      e.Evict(*id, EvictionReason::kDeactivated, kNoWl, now, &e.pending_evictions, "workload deactivated");
    } else if (w.info.state == WorkloadState::kPending) {
      e.Dequeue(*id);
      w.parked = false;
      e.Resolve(*id);
    }
  } else if (w.info.state == WorkloadState::kPending) {
    e.orphans.erase(std::remove(e.orphans.begin(), e.orphans.end(), *id), e.orphans.end());
    e.Resolve(*id);
  }
  return Status::Ok();
}

CycleResult Engine::Schedule(Time now) {
  EngineImpl& e = *impl_;
  CycleResult result;
  result.evictions = std::move(e.pending_evictions);
  e.pending_evictions.clear();
  e.now = now;
  if (!e.expiries.empty()) e.ExpireRuntimes(now, &result.evictions);
  // Protections that parked workloads skipped have ended: retry them (the
  // memoised preemption answers are stale too).
  if (!e.protect_wakeups.empty() && e.protect_wakeups.begin()->first <= now) {
    ++e.state_gen;
    while (!e.protect_wakeups.empty() && e.protect_wakeups.begin()->first <= now) {
      e.Unpark(e.protect_wakeups.begin()->second);
      e.protect_wakeups.erase(e.protect_wakeups.begin());
    }
    e.UnparkList(&e.parked_placement);
  }
  if (e.opts.admission_fair_sharing) e.AfsSample(now);
  // Nothing queued and nothing to drain: no cycle can change anything.
  if (static_cast<int64_t>(e.queued_count) == e.parked_total && !e.any_drain) {
    if (!result.evictions.empty()) result.changed = true;
    return result;
  }
  // Drain stopped queues (HoldAndDrain); only queues that have such a
  // policy on themselves or on a LocalQueue are looked at.
  for (auto& cq : e.cqs) {
    if (!cq.drain_possible) continue;
    bool cq_drain = cq.spec->stop_policy == StopPolicy::kHoldAndDrain;
    for (WlId id : std::vector<WlId>(cq.admitted)) {
      Wl& w = e.wls[id];
      if (w.info.state != WorkloadState::kAdmitted) continue;
      bool lq_drain = w.lq >= 0 && e.lqs[w.lq].spec->stop_policy == StopPolicy::kHoldAndDrain;
      if (cq_drain || lq_drain) {
        e.Evict(id, cq_drain ? EvictionReason::kClusterQueueStopped : EvictionReason::kLocalQueueStopped,
                kNoWl, now, &result.evictions,
                cq_drain ? "ClusterQueue stopped (HoldAndDrain)" : "LocalQueue stopped (HoldAndDrain)");
      }
    }
  }
  if (!result.evictions.empty()) result.changed = true;
  if (e.opts.multi_admission) {
    while (result.rounds < e.opts.max_rounds) {
      bool changed = e.RunRound(now, &result, false);
      result.rounds++;
      if (!changed) break;
      result.changed = true;
    }
  } else {
    result.changed = e.RunRound(now, &result, true) || result.changed;
    result.rounds = 1;
  }
  e.SetStrictFifoReasons();
  return result;
}

std::optional<Time> Engine::NextTimedEvent() const {
  const EngineImpl& e = *impl_;
  std::optional<Time> t;
  if (!e.expiries.empty()) t = e.expiries.begin()->first;
  if (!e.protect_wakeups.empty() && (!t || e.protect_wakeups.begin()->first < *t))
    t = e.protect_wakeups.begin()->first;
  return t;
}

std::vector<Engine::ReservationInfo> Engine::Reservations() const {
  const EngineImpl& e = *impl_;
  std::vector<ReservationInfo> out;
  for (const auto& r : e.reservations) {
    ReservationInfo ri;
    ri.workload = e.wls[r.wl].info.key;
    ri.cluster_queue = e.cqs[r.cq].name;
    ri.start = r.start;
    for (WlId h : r.holders) ri.holders.push_back(e.wls[h].info.key);
    ri.nodes = r.node_names;
    out.push_back(std::move(ri));
  }
  return out;
}

void EngineImpl::Materialize(WlId id) {
  Wl& w = wls[id];
  if (ReasonStale(id)) {
    // Parked in bulk without an examination (BulkPark): the reason a cycle
    // would have given it, from the state now.
    w.reason_stamp = bulk_counter;
    w.reason_stale = false;
    const int32_t c = lqs[w.lq].cq;
    const CqRt& cq = cqs[c];
    const Time saved_min = protect_min;
    const bool saved_delay = protect_delay;
    Assignment a;
    std::vector<Target> targets;
    Nominate(*this, id, c, &a, &targets);
    protect_min = saved_min;
    protect_delay = saved_delay;
    if (a.mode != Mode::kFit && targets.empty()) {
      const bool preempt_mode =
          a.mode == Mode::kNoCandidates || a.mode == Mode::kPreempt || a.mode == Mode::kReclaim;
      K kind = a.kind;
      if (preempt_mode) kind = K::kPreemptionNoCandidates;
      if (kind == K::kNone || kind == K::kNotYetTried) kind = K::kInsufficientQuota;
      if (kind == K::kNoFlavor || kind == K::kInfeasible) {
        w.info.pending = PendingReason{};
        w.info.pending.kind = kind;
        w.info.pending.cluster_queue = cq.name;
        w.info.pending.message = w.info.key + " in ClusterQueue " + cq.name + ": " + a.message;
      } else {
        w.info.pending.kind = kind;
        w.info.pending.message.clear();
        w.info.pending.would_preempt.clear();
      }
      w.pending_ref = a.ref;
      w.ref_dirty = true;
      w.msg_dirty = true;
    }
  }
  // Only the kinds RunRound sets from an assignment carry a ReasonRef; any
  // other kind was written whole since.
  const K kind = w.info.pending.kind;
  if (w.ref_dirty && kind != K::kInsufficientQuota && kind != K::kPreemptionNoCandidates &&
      kind != K::kWaitingForEvictions && kind != K::kNoFlavor) {
    w.ref_dirty = false;
  }
  if (w.ref_dirty) {
    w.ref_dirty = false;
    const ReasonRef& ref = w.pending_ref;
    PendingReason& r = w.info.pending;
    r.cluster_queue = w.cq >= 0 ? cqs[w.cq].name : "";
    r.pod_set = ref.pod_set >= 0 && static_cast<size_t>(ref.pod_set) < w.info.spec.pod_sets.size()
                    ? w.info.spec.pod_sets[ref.pod_set].name
                    : "";
    r.flavor = ref.flavor >= 0 ? flavors_by_name.Name(ref.flavor) : "";
    r.resource = ref.resource >= 0 ? resources.Name(ref.resource) : "";
    r.level =
        ref.level >= 0 && static_cast<size_t>(ref.level) < tree.num_nodes() ? tree.node(ref.level).name : "";
    r.requested = ref.requested;
    r.available = ref.available;
    r.missing = ref.missing;
  }
  if (!w.msg_dirty) return;
  w.msg_dirty = false;
  FillMessage(*this, w, &w.info.pending);
}

const WorkloadInfo* Engine::Find(const std::string& key) const {
  auto it = impl_->wl_index.find(key);
  if (it == impl_->wl_index.end()) return nullptr;
  impl_->Materialize(it->second);
  return &impl_->wls[it->second].info;
}

const placement::Placement* Engine::Placement(const std::string& key) const {
  auto it = impl_->wl_index.find(key);
  if (it == impl_->wl_index.end()) return nullptr;
  const Wl& w = impl_->wls[it->second];
  return w.has_placement ? w.placement.get() : nullptr;
}

const WorkloadInfo* Engine::Get(WorkloadId id) const {
  if (!Live(*impl_, id)) return nullptr;
  impl_->Materialize(id);
  return &impl_->wls[id].info;
}

std::vector<const WorkloadInfo*> Engine::Workloads() const {
  std::vector<const WorkloadInfo*> out;
  for (const Wl& w : impl_->wls) {
    if (w.forgotten) continue;
    auto it = impl_->wl_index.find(w.info.key);
    if (it != impl_->wl_index.end() && &impl_->wls[it->second] == &w) {
      impl_->Materialize(it->second);
      out.push_back(&w.info);
    }
  }
  // Reused slots (Forget) break index order; uid is the submission order.
  if (impl_->reused_slots) {
    std::sort(out.begin(), out.end(),
              [](const WorkloadInfo* a, const WorkloadInfo* b) { return a->uid < b->uid; });
  }
  return out;
}

std::vector<QuotaUsage> Engine::Usage() const {
  const EngineImpl& e = *impl_;
  std::vector<QuotaUsage> out;
  for (size_t n = 0; n < e.tree.num_nodes(); ++n) {
    const auto& node = e.tree.node(static_cast<int32_t>(n));
    for (size_t fr = 0; fr < e.tree.num_frs(); ++fr) {
      if (!node.has_quota[fr] && node.usage[fr] == 0 && node.subtree[fr] == 0) continue;
      QuotaUsage u;
      u.node = node.name;
      u.is_cohort = node.is_cohort;
      auto [f, r] = e.tree.FrKey(static_cast<int32_t>(fr));
      u.flavor = e.flavors_by_name.Name(f);
      u.resource = e.resources.Name(r);
      u.nominal = node.nominal[fr];
      u.subtree_quota = node.subtree[fr];
      u.usage = node.usage[fr];
      u.borrowed = std::max<Amount>(0, node.usage[fr] - node.subtree[fr]);
      if (node.borrowing_limit[fr] != kNoLimit) u.borrowing_limit = node.borrowing_limit[fr];
      if (node.lending_limit[fr] != kNoLimit) u.lending_limit = node.lending_limit[fr];
      out.push_back(std::move(u));
    }
  }
  return out;
}

int64_t Engine::DominantResourceShare(const std::string& name) const {
  EngineImpl& e = *impl_;
  int32_t node = -1;
  auto it = e.cq_index.find(name);
  if (it != e.cq_index.end()) {
    node = e.cqs[it->second].node;
  } else {
    auto ci = e.cohort_node.find(name);
    if (ci != e.cohort_node.end()) node = ci->second;
  }
  if (node < 0) return 0;
  int64_t s = DominantShare(e, node, -1, nullptr).Rounded();
  return s == std::numeric_limits<int64_t>::max() ? -1 : s;
}

namespace {

// One clause of `why` per flavor tried.
FlavorAttempt Attempt(const EngineImpl& e, const Wl& w, const FlavorTried& t) {
  using O = FlavorAttempt::Outcome;
  FlavorAttempt a;
  a.flavor = e.flavors_by_name.Name(t.flavor);
  if (t.pod_set >= 0 && static_cast<size_t>(t.pod_set) < w.info.spec.pod_sets.size()) {
    a.pod_set = w.info.spec.pod_sets[t.pod_set].name;
  }
  std::string head =
      "flavor " + a.flavor + (w.info.spec.pod_sets.size() > 1 ? " (pod set " + a.pod_set + ")" : "");
  if (t.excluded) {
    a.outcome = O::kExcluded;
    a.message = head + ": not usable: " + t.why;
    return a;
  }
  if (t.mode == Mode::kFit || t.mode == Mode::kPreempt || t.mode == Mode::kReclaim || t.resource < 0) {
    a.outcome = t.mode == Mode::kFit ? O::kFits : O::kFitsByPreempting;
    a.message =
        head + (t.mode == Mode::kFit ? ": fits" : ": fits after preempting what the queue's policy allows");
    return a;
  }
  a.resource = e.resources.Name(t.resource);
  a.requested = t.requested;
  a.available = t.available;
  a.max_available = t.potential;
  a.level =
      t.level >= 0 && static_cast<size_t>(t.level) < e.tree.num_nodes() ? e.tree.node(t.level).name : "";
  if (e.tree.FindFr(t.flavor, t.resource) < 0) {
    a.outcome = O::kNeverFits;
    a.max_available = 0;
    a.message =
        head + ": no quota for " + a.resource + " at all (" + Fmt(a.resource, t.requested) + " requested)";
  } else if (!t.ever_fits) {
    a.outcome = O::kNeverFits;
    a.message = head + ": " + a.resource + " request above the most this queue can ever get here (" +
                FormatQuantity(t.requested) + " > " + FormatQuantity(t.potential) + ")";
  } else {
    a.outcome = t.mode == Mode::kNoCandidates ? O::kNoCandidates : O::kShort;
    a.message = head + ": not enough unused " + a.resource + ", " +
                FormatQuantity(t.requested - t.available) + " more needed (" + FormatQuantity(t.available) +
                " of " + FormatQuantity(t.requested) + " available, limited at " + a.level + ")";
    if (t.mode == Mode::kNoCandidates)
      a.message += "; nothing may be preempted for it under the queue's policy";
  }
  return a;
}

}  // namespace

const char* FlavorAttemptOutcomeName(FlavorAttempt::Outcome o) {
  using O = FlavorAttempt::Outcome;
  switch (o) {
    case O::kFits: return "Fits";
    case O::kFitsByPreempting: return "FitsByPreempting";
    case O::kNoCandidates: return "NoCandidates";
    case O::kShort: return "InsufficientUnusedQuota";
    case O::kNeverFits: return "ExceedsMaximum";
    case O::kExcluded: return "Excluded";
  }
  return "";
}

Result<PendingReason> Engine::Why(const std::string& key) const {
  EngineImpl& e = *impl_;
  auto id = Lookup(e, key);
  if (!id.ok()) return id.status();
  const Wl& w = e.wls[*id];
  if (w.info.state != WorkloadState::kPending) return PendingReason{};
  e.Materialize(*id);
  PendingReason r = w.info.pending;
  if ((r.kind != K::kInsufficientQuota && r.kind != K::kPreemptionNoCandidates && r.kind != K::kNoFlavor &&
       r.kind != K::kInfeasible) ||
      w.cq < 0)
    return r;
  // Every flavor tried, as the last cycle tried them (now).
  bool any_may_fit = false;
  {
    std::vector<FlavorTried> tried;
    std::vector<int32_t> counts;
    for (const PodSetReq& ps : w.pod_sets) counts.push_back(ps.count);
    Assignment scratch;
    AssignFlavors(e, *id, w.cq, counts, &scratch, &tried);
    for (const FlavorTried& t : tried) {
      r.flavors.push_back(Attempt(e, w, t));
      any_may_fit = any_may_fit || r.flavors.back().outcome != FlavorAttempt::Outcome::kNeverFits;
    }
  }
  // The clauses go last, after the headline and what would help.
  auto done = [&]() -> Result<PendingReason> {
    // Excluded flavors are already listed in a NoFlavor message; elsewhere
    // the line counts them (`flavors` has each with its reason).
    if (r.flavors.size() > 1 && r.kind != K::kNoFlavor && r.kind != K::kInfeasible) {
      std::string clauses;
      size_t excluded = 0;
      for (const FlavorAttempt& f : r.flavors) {
        if (f.outcome == FlavorAttempt::Outcome::kExcluded) {
          ++excluded;
        } else {
          clauses += (clauses.empty() ? " " : "; ") + f.message;
        }
      }
      r.message += "; flavors tried:" + clauses;
      if (excluded > 0) {
        r.message += (clauses.empty() ? " " : "; ") + std::to_string(excluded) +
                     " flavor(s) not usable (node labels, taints, topology or no node that can hold a pod)";
      }
    }
    return r;
  };
  if (r.kind == K::kNoFlavor || r.kind == K::kInfeasible || r.flavor.empty()) return done();
  int32_t fr = e.tree.FindFr(e.flavors_by_name.Find(r.flavor), e.resources.Find(r.resource));
  if (fr < 0) return done();
  const int32_t node = e.cqs[w.cq].node;
  QuotaTree& t = e.tree;
  if (r.requested > t.PotentialAvailable(node, fr)) {
    // Said only when no flavor tried could ever fit: otherwise the workload
    // runs once quota is released (the headline comes from the closest
    // flavor, so this is the case only when every flavor is out of reach).
    if (!any_may_fit) {
      r.message +=
          "; no preemption can help: the request exceeds the most this queue can ever get in every flavor "
          "tried (" +
          FormatQuantity(t.PotentialAvailable(node, fr)) + " in " + r.flavor + ")";
    }
    return done();
  }
  std::vector<WlId> cands;
  for (int32_t q : e.root_cqs[t.Root(node)]) {
    for (WlId v : e.cqs[q].admitted) {
      for (const auto& [f, a] : e.wls[v].usage) {
        if (f == fr && a > 0) cands.push_back(v);
      }
    }
  }
  std::sort(cands.begin(), cands.end(), [&](WlId a, WlId b) {
    const Wl& x = e.wls[a];
    const Wl& y = e.wls[b];
    bool ex = x.info.state == WorkloadState::kEvicting, ey = y.info.state == WorkloadState::kEvicting;
    if (ex != ey) return ex;  // already going: they free their quota first
    bool bx = t.IsBorrowing(e.cqs[x.cq].node, fr), by = t.IsBorrowing(e.cqs[y.cq].node, fr);
    if (bx != by) return bx;
    if (x.info.priority != y.info.priority) return x.info.priority < y.info.priority;
    if (x.admit_seq != y.admit_seq) return x.admit_seq > y.admit_seq;
    return x.info.uid < y.info.uid;
  });
  std::vector<WlId> removed;
  for (WlId v : cands) {
    if (r.requested <= t.Available(node, fr)) break;
    t.AddUsage(e.cqs[e.wls[v].cq].node, e.wls[v].usage, -1);
    removed.push_back(v);
  }
  bool fits = r.requested <= t.Available(node, fr);
  std::vector<WlId> needed;
  if (fits) {
    for (int i = static_cast<int>(removed.size()) - 2; i >= 0; --i) {
      WlId v = removed[i];
      t.AddUsage(e.cqs[e.wls[v].cq].node, e.wls[v].usage, +1);
      if (r.requested <= t.Available(node, fr)) {
        removed[i] = kNoWl;
      } else {
        t.AddUsage(e.cqs[e.wls[v].cq].node, e.wls[v].usage, -1);
      }
    }
  }
  size_t evicting = 0, others = 0;
  for (WlId v : removed) {
    if (v == kNoWl) continue;
    t.AddUsage(e.cqs[e.wls[v].cq].node, e.wls[v].usage, +1);
    if (fits) {
      r.would_preempt.push_back(e.wls[v].info.key);
      (e.wls[v].info.state == WorkloadState::kEvicting ? evicting : others)++;
    }
  }
  if (!r.would_preempt.empty()) {
    r.message += "; it would fit if these were preempted:";
    for (const auto& k : r.would_preempt) r.message += " " + k;
    // Not "never": the quota is there, held by others for now.
    if (others == 0) {
      // Already going: it is tried again when they stop, after any workload
      // of its tree that waits for those very evictions.
      size_t waiting = 0;
      for (WlId x = 0; x < e.wls.size(); ++x) {
        const Wl& o = e.wls[x];
        if (x != *id && !o.forgotten && o.waiting_preemption && o.cq >= 0 &&
            o.info.state == WorkloadState::kPending && t.Root(e.cqs[o.cq].node) == t.Root(node)) {
          ++waiting;
        }
      }
      r.message += "; they are being evicted already, so it is tried again as soon as they stop";
      if (waiting > 0) {
        r.message += " (after " + std::to_string(waiting) +
                     " workload(s) that wait for these evictions and come first)";
      }
    } else {
      r.message +=
          "; the quota it needs in flavor " + r.flavor + " is held by work its queue may not preempt" +
          (evicting > 0 ? " (and by " + std::to_string(evicting) + " workload(s) being evicted)" : "") +
          ", so it waits until that work ends or is preempted";
    }
  }
  return done();
}

size_t Engine::PendingCount() const { return impl_->pending_count; }
size_t Engine::AdmittedCount() const { return impl_->admitted_count; }

}  // namespace artel::core
