// The Volcano dialect: Queue and PodGroup (scheduling.volcano.sh/v1beta1),
// HyperNode (topology.volcano.sh/v1alpha1) and the gang fields of a Volcano
// Job (batch.volcano.sh/v1alpha1). The mapping and every place where Artel
// behaves differently from Volcano are in docs/dialects.md.

#include <fmt/format.h>

#include <algorithm>
#include <regex>
#include <set>

#include "manifest/dialects.h"

namespace artel::manifest::internal {
namespace {

using yaml::kOptional;
using yaml::kRequired;
using yaml::Node;

// Fields that Volcano has and Artel refuses, with the reason, so that the
// error says more than "unknown field".
struct Refused {
  std::string_view field;
  std::string_view reason;
};

Status CheckRefused(const Node& map, std::initializer_list<Refused> refused) {
  if (!map.IsMap()) return Status::Ok();
  for (const Refused& r : refused) {
    Node n = map[r.field];
    if (n.present()) return n.Error(fmt::format("not supported by Artel: {}", r.reason));
  }
  return Status::Ok();
}

Status CheckTop(const Node& root) {
  return root.CheckKeys({"apiVersion", "kind", "metadata", "spec", "status"});
}

}  // namespace

// ---------------------------------------------------------------- Queue

Status ParseVolcanoQueue(const Node& root, DialectDocs* docs) {
  ARTEL_RETURN_IF_ERROR(CheckTop(root));
  DialectMeta meta;
  ARTEL_RETURN_IF_ERROR(ReadDialectMeta(root, false, &meta));
  if (meta.name == "root") {
    return root.Lookup("metadata.name")
        .Error(
            fmt::format("the Volcano root queue is implicit in Artel (the cohort {}); to give the whole tree "
                        "a capacity of its own, declare a Kueue Cohort named {} with resourceGroups",
                        kVolcanoRootCohort, kVolcanoRootCohort));
  }
  DialectQueue q;
  q.dialect = QueueDialect::kVolcano;
  q.name = meta.name;
  q.root = root;
  q.pos = root.Pos();
  q.preemption.within_cluster_queue = core::WithinClusterQueuePolicy::kLowerPriority;
  q.preemption.reclaim_within_cohort = core::ReclaimWithinCohortPolicy::kAny;
  Node spec = root["spec"];
  std::map<std::string, core::Amount> deserved, capability, guarantee;
  if (spec.present()) {
    ARTEL_RETURN_IF_ERROR(CheckRefused(
        spec,
        {{"priority",
          "queue priority (Volcano schedules higher-priority queues first and reclaims them last) has no "
          "equivalent in the Kueue queue model; remove it"},
         {"affinity", "queue node-group affinity; use a Kueue ResourceFlavor with nodeLabels instead"},
         {"extendClusters", "multi-cluster dispatch"},
         {"type", "queue types"},
         {"dra", "DRA quotas per DeviceClass"}}));
    ARTEL_RETURN_IF_ERROR(spec.CheckKeys(
        {"weight", "capability", "deserved", "guarantee", "reclaimable", "parent", "dequeueStrategy"}));
    if (spec["weight"].present()) {
      Result<int64_t> w = spec["weight"].AsInt(1, 65535);
      if (!w.ok()) return w.status();
      q.fair_weight = *w * core::kMilli;
    }
    if (spec["deserved"].present()) ARTEL_RETURN_IF_ERROR(ReadResourceList(spec["deserved"], &deserved));
    if (spec["capability"].present())
      ARTEL_RETURN_IF_ERROR(ReadResourceList(spec["capability"], &capability));
    Node g = spec["guarantee"];
    if (g.present()) {
      ARTEL_RETURN_IF_ERROR(g.CheckKeys({"resource"}));
      if (g["resource"].present()) ARTEL_RETURN_IF_ERROR(ReadResourceList(g["resource"], &guarantee));
    }
    if (spec["reclaimable"].present()) {
      Result<bool> r = spec["reclaimable"].AsBool();
      if (!r.ok()) return r.status();
      if (!*r) {
        return spec["reclaimable"].Error(
            "reclaimable: false is not supported by Artel: Volcano protects the victim queue, while Kueue's "
            "reclaimWithinCohort is a policy of the reclaiming queue and cannot exempt one queue; set "
            "capability equal to deserved instead (a queue that never borrows is never reclaimed)");
      }
    }
    ARTEL_RETURN_IF_ERROR(spec.ReadString("parent", &q.parent));
    if (q.parent == "root") q.parent.clear();
    q.parent_node = spec["parent"];
    using Q = core::QueueingStrategy;
    ARTEL_RETURN_IF_ERROR(spec.ReadEnum<Q>(
        "dequeueStrategy", {{"traverse", Q::kBestEffortFIFO}, {"fifo", Q::kStrictFIFO}}, &q.strategy));
  }
  std::set<std::string> names;
  for (const auto* m : {&deserved, &capability, &guarantee}) {
    for (const auto& [r, a] : *m) names.insert(r);
  }
  for (const std::string& r : names) {
    DialectQuota quota;
    quota.declared = true;
    auto d = deserved.find(r), c = capability.find(r), g = guarantee.find(r);
    if (d != deserved.end()) {
      quota.nominal = d->second;
    } else if (g != guarantee.end()) {
      quota.nominal = g->second;  // a guarantee without deserved: the reserved part is the nominal quota
    }
    if (g != guarantee.end()) {
      if (g->second > quota.nominal) {
        return spec.Lookup("guarantee.resource")
            .Error(fmt::format(
                "guarantee of {} ({}) exceeds deserved ({}); Artel maps guarantee onto the part of the "
                "nominal quota that is never lent",
                r, core::FormatQuantity(g->second), core::FormatQuantity(quota.nominal)));
      }
      quota.lending_limit = quota.nominal - g->second;
    }
    if (c != capability.end()) {
      if (c->second < quota.nominal) {
        return spec["capability"].Error(fmt::format("capability of {} ({}) is below deserved ({})", r,
                                                    core::FormatQuantity(c->second),
                                                    core::FormatQuantity(quota.nominal)));
      }
      quota.borrowing_limit = c->second - quota.nominal;
    }
    q.quotas[r] = quota;
  }
  docs->queues.push_back(std::move(q));
  return Status::Ok();
}

// ------------------------------------------------------------- HyperNode

Status ParseVolcanoHyperNode(const Node& root, DialectDocs* docs) {
  ARTEL_RETURN_IF_ERROR(CheckTop(root));
  DialectMeta meta;
  ARTEL_RETURN_IF_ERROR(ReadDialectMeta(root, false, &meta));
  HyperNodeSpec h;
  h.name = meta.name;
  h.pos = root.Pos();
  Node spec = root["spec"];
  if (!spec.present()) return root.MissingError("spec");
  ARTEL_RETURN_IF_ERROR(spec.CheckKeys({"tier", "tierName", "members"}));
  if (!spec["tier"].present()) return spec.MissingError("tier");
  Result<int64_t> tier = spec["tier"].AsInt(1, 16);
  if (!tier.ok()) return tier.status();
  h.tier = static_cast<int32_t>(*tier);
  ARTEL_RETURN_IF_ERROR(spec.ReadString("tierName", &h.tier_name));
  Node members = spec["members"];
  if (members.present()) {
    ARTEL_RETURN_IF_ERROR(members.ExpectList());
    for (const Node& m : members.Items()) {
      ARTEL_RETURN_IF_ERROR(m.CheckKeys({"type", "selector"}));
      HyperNodeMember member;
      using T = HyperNodeMember::Type;
      ARTEL_RETURN_IF_ERROR(
          m.ReadEnum<T>("type", {{"Node", T::kNode}, {"HyperNode", T::kHyperNode}}, &member.type, kRequired));
      Node sel = m["selector"];
      if (!sel.present()) return m.MissingError("selector");
      ARTEL_RETURN_IF_ERROR(sel.CheckKeys({"exactMatch", "regexMatch", "labelMatch"}));
      int set = (sel["exactMatch"].present() ? 1 : 0) + (sel["regexMatch"].present() ? 1 : 0) +
                (sel["labelMatch"].present() ? 1 : 0);
      if (set != 1) return sel.Error("set exactly one of exactMatch, regexMatch and labelMatch");
      if (sel["exactMatch"].present()) {
        ARTEL_RETURN_IF_ERROR(sel["exactMatch"].CheckKeys({"name"}));
        ARTEL_RETURN_IF_ERROR(sel["exactMatch"].ReadString("name", &member.exact, kRequired));
        if (member.exact.empty()) return sel.Lookup("exactMatch.name").Error("must not be empty");
      } else if (sel["regexMatch"].present()) {
        ARTEL_RETURN_IF_ERROR(sel["regexMatch"].CheckKeys({"pattern"}));
        ARTEL_RETURN_IF_ERROR(sel["regexMatch"].ReadString("pattern", &member.regex, kRequired));
        try {
          std::regex re(member.regex, std::regex::ECMAScript);
        } catch (const std::regex_error& e) {
          return sel.Lookup("regexMatch.pattern")
              .Error(fmt::format("invalid regular expression: {}", e.what()));
        }
      } else {
        if (member.type != T::kNode) {
          return sel["labelMatch"].Error("labelMatch selects nodes only; use it with type: Node");
        }
        core::LabelSelector ls;
        ARTEL_RETURN_IF_ERROR(ReadLabelSelectorNode(sel["labelMatch"], &ls));
        member.labels = std::move(ls);
      }
      h.members.push_back(std::move(member));
    }
  }
  docs->hypernodes.push_back(std::move(h));
  docs->hypernode_roots.push_back(root);
  return Status::Ok();
}

// ------------------------------------------------------------- workloads

Status ReadVolcanoNetworkTopology(const Node& nt, core::FlatMap<std::string, std::string>* annotations) {
  ARTEL_RETURN_IF_ERROR(nt.CheckKeys({"mode", "highestTierAllowed", "highestTierName"}));
  std::string mode = "hard";
  ARTEL_RETURN_IF_ERROR(nt.ReadEnum<std::string>("mode", {{"hard", "hard"}, {"soft", "soft"}}, &mode));
  if (nt["highestTierAllowed"].present() && nt["highestTierName"].present()) {
    return nt["highestTierName"].Error("set either highestTierAllowed or highestTierName, not both");
  }
  (*annotations)[kAnnTopology] = kHyperNodeTopology;
  (*annotations)[kAnnNetworkTopologyMode] = mode;
  if (nt["highestTierAllowed"].present()) {
    Result<int64_t> tier = nt["highestTierAllowed"].AsInt(1, 16);
    if (!tier.ok()) return tier.status();
    (*annotations)[kAnnHighestTierAllowed] = std::to_string(*tier);
  }
  std::string tier_name;
  ARTEL_RETURN_IF_ERROR(nt.ReadString("highestTierName", &tier_name));
  if (!tier_name.empty()) (*annotations)[kAnnHighestTierName] = tier_name;
  return Status::Ok();
}

namespace {

std::string FormatResourceList(const std::map<std::string, core::Amount>& list) {
  std::string out;
  for (const auto& [name, amount] : list) {
    if (!out.empty()) out += ",";
    out += name + "=" + core::FormatQuantity(amount);
  }
  return out;
}

}  // namespace

Status ParseVolcanoJob(const Node& root, core::WorkloadSpec* out) {
  ARTEL_RETURN_IF_ERROR(CheckTop(root));
  DialectMeta meta;
  ARTEL_RETURN_IF_ERROR(ReadDialectMeta(root, true, &meta));
  core::WorkloadSpec w;
  w.name = meta.name;
  w.ns = meta.ns;
  w.labels = meta.labels;
  w.annotations = meta.annotations;
  w.annotations[kAnnDialect] = "volcano";
  w.queue = "default";  // Volcano's default queue
  Node spec = root["spec"];
  if (!spec.present()) return root.MissingError("spec");
  ARTEL_RETURN_IF_ERROR(CheckRefused(
      spec, {{"plugins", "Volcano job plugins (ssh, svc, env, ...) set up pods; Artel schedules only"},
             {"policies", "job lifecycle policies (events -> actions)"},
             {"volumes", "job volumes"},
             {"minSuccess", "minSuccess"},
             {"runningEstimate", "runningEstimate"}}));
  ARTEL_RETURN_IF_ERROR(spec.CheckKeys({"schedulerName", "minAvailable", "queue", "priorityClassName",
                                        "tasks", "networkTopology", "maxRetry", "ttlSecondsAfterFinished"}));
  std::string queue;
  ARTEL_RETURN_IF_ERROR(spec.ReadString("queue", &queue));
  if (!queue.empty()) w.queue = queue;
  std::string pc;
  ARTEL_RETURN_IF_ERROR(spec.ReadString("priorityClassName", &pc));
  if (!pc.empty()) w.priority_class = pc;
  if (spec["maxRetry"].present()) ARTEL_RETURN_IF_ERROR(spec.ReadInt32("maxRetry", &w.backoff_limit));
  if (spec["ttlSecondsAfterFinished"].present()) {
    Result<int64_t> ttl = spec["ttlSecondsAfterFinished"].AsInt(0, INT32_MAX);
    if (!ttl.ok()) return ttl.status();
  }
  Node tasks = spec["tasks"];
  if (!tasks.present()) return spec.MissingError("tasks");
  ARTEL_RETURN_IF_ERROR(tasks.ExpectList());
  if (tasks.size() == 0) return tasks.Error("must list at least one task");
  int64_t total = 0;
  std::set<std::string> names;
  std::vector<int64_t> task_mins;
  int64_t task_min_total = 0;
  for (const Node& t : tasks.Items()) {
    ARTEL_RETURN_IF_ERROR(CheckRefused(t, {{"policies", "task lifecycle policies"},
                                           {"topologyPolicy", "NUMA topology policies"},
                                           {"maxRetry", "per-task maxRetry; use the job's maxRetry"},
                                           {"dependsOn", "task dependencies"},
                                           {"partitionPolicy", "task partitions"}}));
    ARTEL_RETURN_IF_ERROR(t.CheckKeys({"name", "replicas", "minAvailable", "template"}));
    core::PodSetSpec ps;
    ARTEL_RETURN_IF_ERROR(t.ReadString("name", &ps.name, kRequired));
    if (ps.name.empty()) return t["name"].Error("must not be empty");
    if (!names.insert(ps.name).second) return t["name"].Error("duplicate task name \"" + ps.name + "\"");
    ps.count = 1;
    if (t["replicas"].present()) {
      Result<int64_t> r = t["replicas"].AsInt(1, 100000);
      if (!r.ok()) return r.status();
      ps.count = static_cast<int32_t>(*r);
    }
    // Volcano's admission webhook defaults a task's minAvailable to its
    // replicas: without one, the whole task is required.
    int64_t task_min = ps.count;
    if (t["minAvailable"].present()) {
      Result<int64_t> m = t["minAvailable"].AsInt(0, ps.count);
      if (!m.ok()) return m.status();
      task_min = *m;
    }
    task_mins.push_back(task_min);
    task_min_total += task_min;
    Node tmpl = t["template"];
    if (!tmpl.present()) return t.MissingError("template");
    std::optional<std::string> task_pc;
    ARTEL_RETURN_IF_ERROR(ReadPodTemplate(tmpl, &ps, &task_pc));
    if (task_pc && !w.priority_class) w.priority_class = task_pc;
    total += ps.count;
    w.pod_sets.push_back(std::move(ps));
  }
  // Without a job minAvailable the webhook sets it to the sum of the task
  // minimums (docs/dialects.md).
  int64_t min_available = std::max<int64_t>(task_min_total, 1);
  if (spec["minAvailable"].present()) {
    Result<int64_t> m = spec["minAvailable"].AsInt(1, total);
    if (!m.ok()) return m.status();
    min_available = *m;
  }
  w.annotations[kAnnMinMember] = std::to_string(min_available);
  if (min_available >= task_min_total) {
    // The scheduler holds every task to its own minimum.
    for (size_t i = 0; i < w.pod_sets.size(); ++i) {
      w.pod_sets.mut(i).min_count = static_cast<int32_t>(task_mins[i]);
    }
  } else if (w.pod_sets.size() == 1) {
    // A job minimum below the task minimums: Volcano's scheduler checks only
    // the job minimum. One task: partial admission down to it.
    w.pod_sets.mut(0).min_count = static_cast<int32_t>(min_available);
  }
  // Otherwise (several tasks) the task minimums are not checked; the gang
  // keeps at least one pod of each task (the engine's default for a gang).
  if (spec["networkTopology"].present()) {
    ARTEL_RETURN_IF_ERROR(ReadVolcanoNetworkTopology(spec["networkTopology"], &w.annotations));
  }
  *out = std::move(w);
  return Status::Ok();
}

Status ParseVolcanoPodGroup(const Node& root, PodGroupDoc* out) {
  ARTEL_RETURN_IF_ERROR(CheckTop(root));
  DialectMeta meta;
  ARTEL_RETURN_IF_ERROR(ReadDialectMeta(root, true, &meta));
  PodGroupDoc pg;
  pg.dialect = QueueDialect::kVolcano;
  pg.root = root;
  pg.workload.name = meta.name;
  pg.workload.ns = meta.ns;
  pg.workload.labels = meta.labels;
  pg.workload.annotations = meta.annotations;
  pg.workload.annotations[kAnnDialect] = "volcano";
  pg.workload.queue = "default";
  Node spec = root["spec"];
  if (spec.present()) {
    ARTEL_RETURN_IF_ERROR(CheckRefused(
        spec, {{"subGroupPolicy", "subgroup policies; use minTaskMember for per-task minimums"}}));
    ARTEL_RETURN_IF_ERROR(spec.CheckKeys(
        {"minMember", "minTaskMember", "queue", "priorityClassName", "minResources", "networkTopology"}));
    if (spec["minMember"].present()) {
      Result<int64_t> m = spec["minMember"].AsInt(0, 1000000);
      if (!m.ok()) return m.status();
      pg.workload.annotations[kAnnMinMember] = std::to_string(*m);
    }
    Node mtm = spec["minTaskMember"];
    if (mtm.present()) {
      ARTEL_RETURN_IF_ERROR(mtm.ExpectMap());
      for (const yaml::MapEntry& e : mtm.Entries()) {
        Result<int64_t> m = e.value.AsInt(0, 1000000);
        if (!m.ok()) return m.status();
        pg.min_per_set[e.key] = static_cast<int32_t>(*m);
      }
    }
    std::string queue;
    ARTEL_RETURN_IF_ERROR(spec.ReadString("queue", &queue));
    if (!queue.empty()) pg.workload.queue = queue;
    std::string pc;
    ARTEL_RETURN_IF_ERROR(spec.ReadString("priorityClassName", &pc));
    if (!pc.empty()) pg.workload.priority_class = pc;
    if (spec["minResources"].present()) {
      std::map<std::string, core::Amount> min_resources;
      ARTEL_RETURN_IF_ERROR(ReadResourceList(spec["minResources"], &min_resources));
      if (!min_resources.empty())
        pg.workload.annotations[kAnnMinResources] = FormatResourceList(min_resources);
    }
    if (spec["networkTopology"].present()) {
      ARTEL_RETURN_IF_ERROR(ReadVolcanoNetworkTopology(spec["networkTopology"], &pg.workload.annotations));
    }
  }
  *out = std::move(pg);
  return Status::Ok();
}

}  // namespace artel::manifest::internal
