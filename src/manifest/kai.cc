// The KAI Scheduler dialect: Queue (scheduling.run.ai/v2), PodGroup
// (scheduling.run.ai/v2alpha2) and Topology (kai.scheduler/v1alpha1). The
// mapping and every place where Artel behaves differently from KAI are in
// docs/dialects.md.

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "manifest/checks.h"
#include "manifest/dialects.h"

namespace artel::manifest::internal {
namespace {

using yaml::kOptional;
using yaml::kRequired;
using yaml::Node;

Status CheckTop(const Node& root) {
  return root.CheckKeys({"apiVersion", "kind", "metadata", "spec", "status"});
}

// KAI's default queue priority (QueueSpec.Priority: "When not set, default is 100").
constexpr int64_t kKaiDefaultQueuePriority = 100;

struct KaiResource {
  std::string_view field;  // gpu | cpu | memory
  std::string_view name;   // the Kubernetes resource name
};
constexpr KaiResource kKaiResources[] = {
    {"gpu", "nvidia.com/gpu"},
    {"cpu", "cpu"},
    {"memory", "memory"},
};

// KAI queue amounts are plain numbers: GPUs (fractions allowed), millicpus
// and megabytes (10^6 bytes). Returns milli-units of the Kubernetes
// resource; -1 stays -1.
Result<core::Amount> KaiAmount(const Node& n, std::string_view field) {
  Result<core::Amount> v = n.AsQuantity();  // milli of the number written
  if (!v.ok()) return v.status();
  if (*v == -core::kMilli) return core::Amount{-1};
  if (*v < 0) return n.Error("must be -1 (unlimited) or a non-negative number");
  if (field == "gpu") return *v;
  if (field == "cpu") return (*v + core::kMilli - 1) / core::kMilli;  // millicpus -> milli-cpus
  // megabytes -> bytes in milli-units: x1e6.
  constexpr core::Amount kMega = 1000 * 1000;
  if (*v > core::kUnlimited / kMega) return n.Error("is too large");
  return *v * kMega;
}

Status ReadKaiTopologyConstraint(const Node& tc, std::string* topology,
                                 std::map<std::string, std::string>* set_annotations) {
  ARTEL_RETURN_IF_ERROR(tc.CheckKeys({"topology", "requiredTopologyLevel", "preferredTopologyLevel"}));
  ARTEL_RETURN_IF_ERROR(tc.ReadString("topology", topology));
  std::string req, pref;
  ARTEL_RETURN_IF_ERROR(tc.ReadString("requiredTopologyLevel", &req));
  ARTEL_RETURN_IF_ERROR(tc.ReadString("preferredTopologyLevel", &pref));
  if ((!req.empty() || !pref.empty()) && topology->empty()) {
    return tc.MissingError("topology");
  }
  if (!req.empty()) (*set_annotations)[kAnnKaiRequiredPlacement] = req;
  if (!pref.empty()) (*set_annotations)[kAnnKaiPreferredPlacement] = pref;
  return Status::Ok();
}

}  // namespace

// ---------------------------------------------------------------- Queue

Status ParseKaiQueue(const Node& root, DialectDocs* docs) {
  ARTEL_RETURN_IF_ERROR(CheckTop(root));
  DialectMeta meta;
  ARTEL_RETURN_IF_ERROR(ReadDialectMeta(root, false, &meta));
  DialectQueue q;
  q.dialect = QueueDialect::kKai;
  q.name = meta.name;
  q.root = root;
  q.pos = root.Pos();
  // KAI reclaims across queues (from queues above their fair share) and
  // preempts within a queue by priority.
  q.preemption.within_cluster_queue = core::WithinClusterQueuePolicy::kLowerPriority;
  q.preemption.reclaim_within_cohort = core::ReclaimWithinCohortPolicy::kAny;
  Node spec = root["spec"];
  if (spec.present()) {
    for (std::string_view f : {"preemptMinRuntime", "reclaimMinRuntime"}) {
      if (spec[f].present()) {
        return spec[f].Error(
            fmt::format("not supported by Artel: {} (a minimum runtime before preemption or reclaim)", f));
      }
    }
    ARTEL_RETURN_IF_ERROR(spec.CheckKeys({"displayName", "parentQueue", "resources", "priority"}));
    std::string display;
    ARTEL_RETURN_IF_ERROR(spec.ReadString("displayName", &display));
    ARTEL_RETURN_IF_ERROR(spec.ReadString("parentQueue", &q.parent));
    q.parent_node = spec["parentQueue"];
    if (spec["priority"].present()) {
      Result<int64_t> p = spec["priority"].AsInt(INT32_MIN, INT32_MAX);
      if (!p.ok()) return p.status();
      if (*p != kKaiDefaultQueuePriority) {
        return spec["priority"].Error(fmt::format(
            "not supported by Artel: a queue priority other than KAI's default {} (KAI divides over-quota "
            "resources among higher-priority queues first); remove it",
            kKaiDefaultQueuePriority));
      }
    }
    Node res = spec["resources"];
    std::optional<core::Amount> weight;
    std::string weight_field;
    if (res.present()) {
      ARTEL_RETURN_IF_ERROR(res.CheckKeys({"gpu", "cpu", "memory"}));
      for (const KaiResource& kr : kKaiResources) {
        Node r = res[kr.field];
        if (!r.present()) continue;
        ARTEL_RETURN_IF_ERROR(r.CheckKeys({"quota", "overQuotaWeight", "limit", "lendingLimit"}));
        DialectQuota quota;
        quota.declared = true;
        if (r["quota"].present()) {
          Result<core::Amount> a = KaiAmount(r["quota"], kr.field);
          if (!a.ok()) return a.status();
          if (*a == -1) {
            quota.unlimited_nominal = true;
          } else {
            quota.nominal = *a;
          }
        }
        if (r["limit"].present()) {
          Result<core::Amount> a = KaiAmount(r["limit"], kr.field);
          if (!a.ok()) return a.status();
          if (*a != -1) {
            if (*a < quota.nominal) {
              return r["limit"].Error(fmt::format("limit ({}) is below quota ({})", core::FormatQuantity(*a),
                                                  core::FormatQuantity(quota.nominal)));
            }
            quota.borrowing_limit = *a - quota.nominal;
          }
        }
        if (r["lendingLimit"].present()) {
          Result<core::Amount> a = KaiAmount(r["lendingLimit"], kr.field);
          if (!a.ok()) return a.status();
          if (*a == -1) return r["lendingLimit"].Error("must not be negative");
          if (!quota.unlimited_nominal && *a > quota.nominal) {
            return r["lendingLimit"].Error(fmt::format("lendingLimit ({}) must not exceed quota ({})",
                                                       core::FormatQuantity(*a),
                                                       core::FormatQuantity(quota.nominal)));
          }
          quota.lending_limit = std::min(*a, quota.nominal);
        }
        if (r["overQuotaWeight"].present()) {
          Result<core::Amount> w = r["overQuotaWeight"].AsQuantity();
          if (!w.ok()) return w.status();
          if (*w < 0) return r["overQuotaWeight"].Error("must not be negative");
          if (weight && *weight != *w) {
            return r["overQuotaWeight"].Error(fmt::format(
                "overQuotaWeight {} differs from {} of {}; Artel has one fair-sharing weight per queue, so "
                "gpu, cpu and memory must use the same overQuotaWeight",
                core::FormatQuantity(*w), core::FormatQuantity(*weight), weight_field));
          }
          weight = *w;
          weight_field = std::string(kr.field);
        }
        q.quotas[std::string(kr.name)] = quota;
      }
    }
    if (weight) q.fair_weight = *weight;
  }
  docs->queues.push_back(std::move(q));
  return Status::Ok();
}

// ------------------------------------------------------------- Topology

Status ParseKaiTopology(const Node& root, core::Config* config) {
  ARTEL_RETURN_IF_ERROR(CheckTop(root));
  DialectMeta meta;
  ARTEL_RETURN_IF_ERROR(ReadDialectMeta(root, false, &meta));
  core::TopologySpec topo;
  topo.name = meta.name;
  topo.pos = root.Pos();
  Node spec = root["spec"];
  if (!spec.present()) return root.MissingError("spec");
  ARTEL_RETURN_IF_ERROR(spec.CheckKeys({"levels"}));
  Node levels = spec["levels"];
  if (!levels.present()) return spec.MissingError("levels");
  ARTEL_RETURN_IF_ERROR(levels.ExpectList());
  for (const Node& level : levels.Items()) {
    ARTEL_RETURN_IF_ERROR(level.CheckKeys({"nodeLabel"}));
    std::string label;
    ARTEL_RETURN_IF_ERROR(level.ReadString("nodeLabel", &label, kRequired));
    topo.levels.push_back(std::move(label));
  }
  Status s = CheckTopology(topo, [&](const std::string& field) { return root.Lookup(field).Pos(); });
  if (!s.ok()) return s;
  config->topologies.push_back(std::move(topo));
  return Status::Ok();
}

// ------------------------------------------------------------- PodGroup

Status ParseKaiPodGroup(const Node& root, PodGroupDoc* out) {
  ARTEL_RETURN_IF_ERROR(CheckTop(root));
  DialectMeta meta;
  ARTEL_RETURN_IF_ERROR(ReadDialectMeta(root, true, &meta));
  PodGroupDoc pg;
  pg.dialect = QueueDialect::kKai;
  pg.root = root;
  pg.workload.name = meta.name;
  pg.workload.ns = meta.ns;
  pg.workload.labels = meta.labels;
  pg.workload.annotations = meta.annotations;
  pg.workload.annotations[kAnnDialect] = "kai";
  if (auto it = meta.labels.find("kai.scheduler/queue"); it != meta.labels.end())
    pg.workload.queue = it->second;
  Node spec = root["spec"];
  if (!spec.present()) return root.MissingError("spec");
  if (spec["minSubGroup"].present()) {
    return spec["minSubGroup"].Error("not supported by Artel: minSubGroup; give each subgroup a minMember");
  }
  if (spec["preemptibility"].present()) {
    return spec["preemptibility"].Error(
        "not supported by Artel: preemptibility (Artel decides preemption by priority and queue policy)");
  }
  ARTEL_RETURN_IF_ERROR(spec.CheckKeys({"minMember", "queue", "priorityClassName", "topologyConstraint",
                                        "subGroups", "markUnschedulable", "schedulingBackoff"}));
  std::string queue;
  ARTEL_RETURN_IF_ERROR(spec.ReadString("queue", &queue));
  if (!queue.empty()) pg.workload.queue = queue;
  if (pg.workload.queue.empty()) {
    return spec.Error("missing the queue: set spec.queue or the label kai.scheduler/queue");
  }
  if (spec["minMember"].present()) {
    Result<int64_t> m = spec["minMember"].AsInt(1, 1000000);
    if (!m.ok()) return m.status();
    pg.workload.annotations[kAnnMinMember] = std::to_string(*m);
  }
  std::string pc;
  ARTEL_RETURN_IF_ERROR(spec.ReadString("priorityClassName", &pc));
  if (!pc.empty()) pg.workload.priority_class = pc;
  bool mark = false;
  ARTEL_RETURN_IF_ERROR(spec.ReadBool("markUnschedulable", &mark));
  if (spec["schedulingBackoff"].present()) {
    Result<int64_t> b = spec["schedulingBackoff"].AsInt(-1, 1);
    if (!b.ok()) return b.status();
    if (*b == 0) return spec["schedulingBackoff"].Error("must be -1 or 1");
  }
  std::map<std::string, std::string> group_annotations;
  std::string topology;
  if (spec["topologyConstraint"].present()) {
    ARTEL_RETURN_IF_ERROR(
        ReadKaiTopologyConstraint(spec["topologyConstraint"], &topology, &group_annotations));
  }
  Node subs = spec["subGroups"];
  if (subs.present()) {
    ARTEL_RETURN_IF_ERROR(subs.ExpectList());
    for (const Node& sg : subs.Items()) {
      if (sg["parent"].present()) {
        return sg["parent"].Error("not supported by Artel: nested subgroups; list leaf subgroups only");
      }
      if (sg["minSubGroup"].present()) {
        return sg["minSubGroup"].Error("not supported by Artel: minSubGroup; give the subgroup a minMember");
      }
      ARTEL_RETURN_IF_ERROR(sg.CheckKeys({"name", "minMember", "topologyConstraint"}));
      std::string name;
      ARTEL_RETURN_IF_ERROR(sg.ReadString("name", &name, kRequired));
      if (name.empty()) return sg["name"].Error("must not be empty");
      if (std::find(pg.declared_sets.begin(), pg.declared_sets.end(), name) != pg.declared_sets.end()) {
        return sg["name"].Error("duplicate subgroup \"" + name + "\"");
      }
      pg.declared_sets.push_back(name);
      if (sg["minMember"].present()) {
        Result<int64_t> m = sg["minMember"].AsInt(0, 1000000);
        if (!m.ok()) return m.status();
        pg.min_per_set[name] = static_cast<int32_t>(*m);
      }
      std::map<std::string, std::string> ann = group_annotations;
      if (sg["topologyConstraint"].present()) {
        std::string sub_topology;
        std::map<std::string, std::string> sub_ann;
        ARTEL_RETURN_IF_ERROR(ReadKaiTopologyConstraint(sg["topologyConstraint"], &sub_topology, &sub_ann));
        if (!sub_topology.empty() && !topology.empty() && sub_topology != topology) {
          return sg.Lookup("topologyConstraint.topology")
              .Error(fmt::format("subgroup topology \"{}\" differs from the PodGroup's \"{}\"", sub_topology,
                                 topology));
        }
        if (topology.empty()) topology = sub_topology;
        for (auto& [k, v] : sub_ann) ann[k] = v;
      }
      pg.set_annotations[name] = std::move(ann);
    }
  }
  if (!topology.empty()) pg.workload.annotations[kAnnTopology] = topology;
  for (const auto& [k, v] : group_annotations) pg.workload.annotations[k] = v;
  pg.set_annotations[""] = group_annotations;  // pods outside subgroups
  *out = std::move(pg);
  return Status::Ok();
}

}  // namespace artel::manifest::internal
