// Shared parts of the Volcano and KAI dialects: dispatch, the queue tree
// built from dialect queues (FinishDialects), HyperNode labels, and the
// workload reader (ParseWorkloads) with its pod template reader, also used
// for Kueue Workloads and batch/v1 Jobs.

#include "manifest/dialects.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <functional>
#include <regex>
#include <set>

#include "manifest/checks.h"
#include "manifest/typed_fields.h"

namespace artel::manifest {
namespace internal {
namespace {

using yaml::kOptional;
using yaml::kRequired;
using yaml::Node;

std::string_view Group(std::string_view api_version) {
  size_t slash = api_version.find('/');
  return slash == std::string_view::npos ? std::string_view() : api_version.substr(0, slash);
}

std::string_view DialectName(QueueDialect d) { return d == QueueDialect::kVolcano ? "Volcano" : "KAI"; }
const char* RootCohort(QueueDialect d) {
  return d == QueueDialect::kVolcano ? kVolcanoRootCohort : kKaiRootCohort;
}

std::string Hint(const std::string& name, const std::vector<std::string>& known) {
  std::vector<std::string_view> names(known.begin(), known.end());
  std::string guess = yaml::SuggestField(name, names);
  return guess.empty() ? "" : "; did you mean " + guess + "?";
}

// What (apiVersion, kind) a dialect serves.
struct DialectKind {
  std::string_view api_version;
  std::string_view kind;
  bool workload;
};
constexpr DialectKind kDialectKinds[] = {
    {"scheduling.volcano.sh/v1beta1", "Queue", false},
    {"scheduling.volcano.sh/v1beta1", "PodGroup", true},
    {"topology.volcano.sh/v1alpha1", "HyperNode", false},
    {"batch.volcano.sh/v1alpha1", "Job", true},
    {"scheduling.run.ai/v2", "Queue", false},
    {"scheduling.run.ai/v2alpha2", "PodGroup", true},
    {"kai.scheduler/v1alpha1", "Topology", false},
    {"scheduling.k8s.io/v1", "PriorityClass", false},
};

Status CheckServed(const Node& root, const std::string& api_version, const std::string& kind,
                   bool* workload) {
  std::vector<std::string_view> kinds_of_group, versions_of_kind;
  for (const DialectKind& k : kDialectKinds) {
    if (Group(k.api_version) != Group(api_version)) continue;
    kinds_of_group.push_back(k.kind);
    if (k.kind == kind) {
      versions_of_kind.push_back(k.api_version);
      if (k.api_version == api_version) {
        *workload = k.workload;
        return Status::Ok();
      }
    }
  }
  if (!versions_of_kind.empty()) {
    return root["apiVersion"].Error(fmt::format("unsupported apiVersion \"{}\" for kind {}; use {}",
                                                api_version, kind, fmt::join(versions_of_kind, " or ")));
  }
  std::string msg = fmt::format("unsupported kind \"{}\" (apiVersion {})", kind, api_version);
  std::string guess = yaml::SuggestField(kind, kinds_of_group);
  if (!guess.empty()) msg += "; did you mean " + guess + "?";
  if (!kinds_of_group.empty())
    msg += fmt::format("; supported kinds of {}: {}", Group(api_version), fmt::join(kinds_of_group, ", "));
  return root["kind"].Error(std::move(msg));
}

Status ParsePriorityClass(const Node& root, core::Config* config) {
  ARTEL_RETURN_IF_ERROR(root.CheckKeys(
      {"apiVersion", "kind", "metadata", "value", "description", "globalDefault", "preemptionPolicy"}));
  DialectMeta meta;
  ARTEL_RETURN_IF_ERROR(ReadDialectMeta(root, false, &meta));
  core::PriorityClassSpec pc;
  pc.name = meta.name;
  pc.pos = root.Pos();
  ARTEL_RETURN_IF_ERROR(root.ReadInt32("value", &pc.value, kRequired));
  ARTEL_RETURN_IF_ERROR(root.ReadString("description", &pc.description));
  bool global_default = false;
  ARTEL_RETURN_IF_ERROR(root.ReadBool("globalDefault", &global_default));
  if (global_default) {
    return root["globalDefault"].Error(
        "not supported by Artel: globalDefault (workloads without a priority class have priority 0)");
  }
  std::string policy = "PreemptLowerPriority";
  ARTEL_RETURN_IF_ERROR(root.ReadEnum<std::string>(
      "preemptionPolicy", {{"PreemptLowerPriority", "PreemptLowerPriority"}, {"Never", "Never"}}, &policy));
  if (policy == "Never") {
    return root["preemptionPolicy"].Error("not supported by Artel: preemptionPolicy Never");
  }
  ARTEL_RETURN_IF_ERROR(CheckPriorityClass(pc, [&](const std::string& f) { return root.Lookup(f).Pos(); }));
  config->priority_classes.push_back(std::move(pc));
  return Status::Ok();
}

}  // namespace

// ---------------------------------------------------------------- helpers

Status ReadDialectMeta(const Node& root, bool namespaced, DialectMeta* out) {
  Node meta = root["metadata"];
  if (!meta.present()) return root.MissingError("metadata");
  ARTEL_RETURN_IF_ERROR(
      meta.CheckKeys({"name", "namespace", "labels", "annotations", "uid", "resourceVersion",
                      "creationTimestamp", "generation", "managedFields", "finalizers", "ownerReferences",
                      "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink", "generateName"}));
  ARTEL_RETURN_IF_ERROR(meta.ReadString("name", &out->name, kRequired));
  if (out->name.empty()) return meta["name"].Error("must not be empty");
  ARTEL_RETURN_IF_ERROR(meta.ReadString("namespace", &out->ns));
  if (namespaced && out->ns.empty()) out->ns = "default";
  if (!namespaced && !out->ns.empty()) {
    return meta["namespace"].Error("this kind is cluster-scoped and takes no namespace");
  }
  ARTEL_RETURN_IF_ERROR(meta.ReadStringMap("labels", &out->labels));
  ARTEL_RETURN_IF_ERROR(meta.ReadStringMap("annotations", &out->annotations));
  return Status::Ok();
}

Status ReadLabelSelectorNode(const Node& sel, core::LabelSelector* out) {
  ARTEL_RETURN_IF_ERROR(sel.CheckKeys({"matchLabels", "matchExpressions"}));
  ARTEL_RETURN_IF_ERROR(sel.ReadStringMap("matchLabels", &out->match_labels));
  Node exprs = sel["matchExpressions"];
  if (!exprs.present()) return Status::Ok();
  ARTEL_RETURN_IF_ERROR(exprs.ExpectList());
  for (const Node& e : exprs.Items()) {
    ARTEL_RETURN_IF_ERROR(e.CheckKeys({"key", "operator", "values"}));
    core::LabelSelectorRequirement req;
    ARTEL_RETURN_IF_ERROR(e.ReadString("key", &req.key, kRequired));
    ARTEL_RETURN_IF_ERROR(e.ReadEnum<std::string>(
        "operator",
        {{"In", "In"}, {"NotIn", "NotIn"}, {"Exists", "Exists"}, {"DoesNotExist", "DoesNotExist"}}, &req.op,
        kRequired));
    ARTEL_RETURN_IF_ERROR(e.ReadStringList("values", &req.values));
    bool set_op = req.op == "In" || req.op == "NotIn";
    if (set_op && req.values.empty()) return e["values"].Error("operator " + req.op + " requires values");
    if (!set_op && !req.values.empty()) return e["values"].Error("operator " + req.op + " takes no values");
    out->match_expressions.push_back(std::move(req));
  }
  return Status::Ok();
}

Status ReadResourceList(const Node& list, std::map<std::string, core::Amount>* out) {
  ARTEL_RETURN_IF_ERROR(list.ExpectMap());
  for (const yaml::MapEntry& e : list.Entries()) {
    if (e.key.empty()) return e.value.Error("resource name must not be empty");
    Result<core::Amount> q = e.value.AsQuantity();
    if (!q.ok()) return q.status();
    if (*q < 0) return e.value.Error("must not be negative");
    (*out)[e.key] = *q;
  }
  return Status::Ok();
}

bool IsDialectApiVersion(std::string_view api_version) {
  std::string_view g = Group(api_version);
  for (const DialectKind& k : kDialectKinds) {
    if (Group(k.api_version) == g) return true;
  }
  return false;
}

bool InDialectTree(const core::Config& config, const std::string& cohort) {
  std::string cur = cohort;
  for (size_t depth = 0; depth <= config.cohorts.size() + 1; ++depth) {
    if (cur == kVolcanoRootCohort || cur == kKaiRootCohort) return true;
    if (cur.empty()) return false;
    auto it = std::find_if(config.cohorts.begin(), config.cohorts.end(),
                           [&](const core::CohortSpec& c) { return c.name == cur; });
    if (it == config.cohorts.end()) return false;
    cur = it->parent;
  }
  return false;  // a cycle; Validate reports it
}

// ---------------------------------------------------------------- config

Status ParseDialectObject(const Node& root, const std::string& api_version, const std::string& kind,
                          core::Config* config, DialectDocs* docs) {
  bool workload = false;
  ARTEL_RETURN_IF_ERROR(CheckServed(root, api_version, kind, &workload));
  if (workload) {
    return root["kind"].Error(fmt::format(
        "a {} ({}) is a workload, not configuration; submit it with `artel apply -f` (or a scenario's "
        "`submit: - manifest:` entry)",
        kind, api_version));
  }
  std::string_view g = Group(api_version);
  if (kind == "PriorityClass") return ParsePriorityClass(root, config);
  if (g == "scheduling.volcano.sh") return ParseVolcanoQueue(root, docs);
  if (g == "topology.volcano.sh") return ParseVolcanoHyperNode(root, docs);
  if (g == "scheduling.run.ai") return ParseKaiQueue(root, docs);
  return ParseKaiTopology(root, config);
}

namespace {

template <typename T>
bool HasNamed(const std::vector<T>& items, const std::string& name) {
  return std::any_of(items.begin(), items.end(), [&](const T& x) { return x.name == name; });
}

bool HasLocalQueue(const std::vector<core::LocalQueueSpec>& lqs, const std::string& ns,
                   const std::string& name) {
  return std::any_of(lqs.begin(), lqs.end(),
                     [&](const core::LocalQueueSpec& lq) { return lq.ns == ns && lq.name == name; });
}

std::vector<std::string> HyperNodeLevels(int32_t tiers) {
  std::vector<std::string> levels;
  for (int32_t t = tiers; t >= 1; --t) levels.push_back(kHyperNodeTierLabelPrefix + std::to_string(t));
  levels.emplace_back("kubernetes.io/hostname");
  return levels;
}

// Builds the ClusterQueues and Cohorts of one dialect's queues into *add.
Status BuildQueueTree(QueueDialect dialect, const std::vector<DialectQueue*>& queues,
                      const core::Config& existing, const core::Config& parsed, core::Config* add,
                      std::vector<std::string>* leaves) {
  const char* root_cohort = RootCohort(dialect);
  std::map<std::string, DialectQueue*> by_name;
  std::vector<std::string> names;
  for (DialectQueue* q : queues) {
    if (q->name == root_cohort) {
      return q->root.Lookup("metadata.name")
          .Error(fmt::format("the name {} is reserved for the root cohort of {} queues", root_cohort,
                             DialectName(dialect)));
    }
    auto [it, inserted] = by_name.emplace(q->name, q);
    if (!inserted) {
      return q->root.Lookup("metadata.name")
          .Error(fmt::format("duplicate {} Queue \"{}\" (first defined at {})", DialectName(dialect), q->name,
                             it->second->pos.ToString()));
    }
    names.push_back(q->name);
  }
  // Parents must be queues of the same text; no cycles.
  std::map<std::string, std::vector<DialectQueue*>> children;
  for (DialectQueue* q : queues) {
    if (q->parent.empty()) continue;
    if (!by_name.count(q->parent)) {
      return q->parent_node.Error(
          fmt::format("parent queue \"{}\" is not defined in this file{} (Artel builds a {} queue tree from "
                      "one file: define "
                      "a parent queue next to its children)",
                      q->parent, Hint(q->parent, names), DialectName(dialect)));
    }
    children[q->parent].push_back(q);
  }
  for (DialectQueue* q : queues) {
    std::set<std::string> seen;
    for (DialectQueue* cur = q; !cur->parent.empty(); cur = by_name.at(cur->parent)) {
      if (!seen.insert(cur->name).second) {
        return q->parent_node.Error(
            fmt::format("queue parent cycle through \"{}\"; a queue tree must end at the root", cur->name));
      }
    }
  }
  // The resources every queue of the tree covers.
  std::set<std::string> resources;
  if (dialect == QueueDialect::kKai) {
    resources = {"cpu", "memory", "nvidia.com/gpu"};
  } else {
    for (DialectQueue* q : queues) {
      for (const auto& [r, quota] : q->quotas) resources.insert(r);
    }
  }
  for (const core::Config* c : {&existing, &parsed}) {
    for (const core::CohortSpec& cohort : c->cohorts) {
      if (cohort.name != root_cohort) continue;
      for (const core::ResourceGroupSpec& rg : cohort.resource_groups) {
        resources.insert(rg.covered_resources.begin(), rg.covered_resources.end());
      }
    }
  }
  if (resources.empty()) {
    return queues.front()->root.Error(fmt::format(
        "no {} queue names a resource (deserved, capability or guarantee); Artel needs the resources a queue "
        "covers: list them on at least one queue, or on a Cohort named {}",
        DialectName(dialect), root_cohort));
  }
  const char* quota_word = dialect == QueueDialect::kVolcano ? "deserved" : "quota";
  for (DialectQueue* q : queues) {
    auto kids = children.find(q->name);
    bool is_parent = kids != children.end();
    core::ResourceGroupSpec rg;
    rg.covered_resources.assign(resources.begin(), resources.end());
    core::FlavorQuotasSpec fq;
    fq.flavor = kDialectFlavor;
    for (const std::string& r : resources) {
      DialectQuota dq;
      if (auto it = q->quotas.find(r); it != q->quotas.end()) dq = it->second;
      core::ResourceQuotaSpec rq;
      rq.name = r;
      rq.nominal = dq.nominal;
      if (is_parent) {
        // A parent's quota is its subtree's; its own share is what its
        // children's quotas leave.
        core::Amount children_sum = 0;
        for (const DialectQueue* c : kids->second) {
          if (auto it = c->quotas.find(r); it != c->quotas.end()) children_sum += it->second.nominal;
        }
        if (!dq.declared || dq.unlimited_nominal) {
          rq.nominal = 0;
        } else if (children_sum > dq.nominal) {
          return q->root.Lookup("spec").Error(fmt::format(
              "the children of queue \"{}\" have {} {} of {}, more than its own {}", q->name,
              core::FormatQuantity(children_sum), quota_word, r, core::FormatQuantity(dq.nominal)));
        } else {
          rq.nominal = dq.nominal - children_sum;
        }
      }
      rq.borrowing_limit = dq.borrowing_limit;
      if (dq.lending_limit) rq.lending_limit = std::min(*dq.lending_limit, rq.nominal);
      fq.resources.push_back(std::move(rq));
    }
    rg.flavors.push_back(std::move(fq));
    std::string parent = q->parent.empty() ? std::string(root_cohort) : q->parent;
    if (is_parent) {
      core::CohortSpec cohort;
      cohort.name = q->name;
      cohort.parent = parent;
      cohort.resource_groups.push_back(std::move(rg));
      cohort.fair_weight = q->fair_weight;
      cohort.pos = q->pos;
      ARTEL_RETURN_IF_ERROR(CheckCohort(cohort, ConstantPos(q->pos)));
      add->cohorts.push_back(std::move(cohort));
    } else {
      core::ClusterQueueSpec cq;
      cq.name = q->name;
      cq.cohort = parent;
      cq.resource_groups.push_back(std::move(rg));
      cq.queueing_strategy = q->strategy;
      cq.preemption = q->preemption;
      cq.fair_weight = q->fair_weight;
      cq.namespace_selector = core::LabelSelector{};  // every namespace
      cq.pos = q->pos;
      ARTEL_RETURN_IF_ERROR(CheckClusterQueue(cq, ConstantPos(q->pos)));
      add->cluster_queues.push_back(std::move(cq));
      leaves->push_back(q->name);
    }
  }
  return Status::Ok();
}

}  // namespace

Status FinishDialects(DialectDocs* docs, core::Config* existing, core::Config* parsed, Extras* extras) {
  core::Config add;
  std::vector<std::string> leaves;
  for (QueueDialect d : {QueueDialect::kVolcano, QueueDialect::kKai}) {
    std::vector<DialectQueue*> queues;
    for (DialectQueue& q : docs->queues) {
      if (q.dialect == d) queues.push_back(&q);
    }
    if (queues.empty()) continue;
    ARTEL_RETURN_IF_ERROR(BuildQueueTree(d, queues, *existing, *parsed, &add, &leaves));
  }
  if (!docs->queues.empty() && !HasNamed(existing->flavors, kDialectFlavor) &&
      !HasNamed(parsed->flavors, kDialectFlavor)) {
    core::ResourceFlavorSpec rf;
    rf.name = kDialectFlavor;
    rf.pos = docs->queues.front().pos;
    add.flavors.push_back(std::move(rf));
  }
  // LocalQueues: new dialect ClusterQueues in every known namespace, and
  // existing ones in the namespaces this text adds.
  std::vector<std::string> namespaces = {"default"};
  auto add_ns = [&](const std::string& ns) {
    if (std::find(namespaces.begin(), namespaces.end(), ns) == namespaces.end()) namespaces.push_back(ns);
  };
  for (const core::NamespaceSpec& ns : existing->namespaces) add_ns(ns.name);
  for (const core::NamespaceSpec& ns : parsed->namespaces) add_ns(ns.name);
  auto ensure = [&](const std::string& ns, const std::string& cq, const SourcePos& pos) {
    if (HasLocalQueue(existing->local_queues, ns, cq) || HasLocalQueue(parsed->local_queues, ns, cq) ||
        HasLocalQueue(add.local_queues, ns, cq)) {
      return;
    }
    core::LocalQueueSpec lq;
    lq.ns = ns;
    lq.name = cq;
    lq.cluster_queue = cq;
    lq.pos = pos;
    add.local_queues.push_back(std::move(lq));
  };
  for (const core::ClusterQueueSpec& cq : add.cluster_queues) {
    for (const std::string& ns : namespaces) ensure(ns, cq.name, cq.pos);
  }
  if (!parsed->namespaces.empty()) {
    for (const core::ClusterQueueSpec& cq : existing->cluster_queues) {
      if (!InDialectTree(*existing, cq.cohort)) continue;
      for (const core::NamespaceSpec& ns : parsed->namespaces) ensure(ns.name, cq.name, cq.pos);
    }
  }
  // HyperNodes: the tier topology, and the members for HyperNodeLabels.
  core::TopologySpec* grow = nullptr;
  std::vector<std::string> grown_levels;
  std::map<std::string, int32_t> grown_tier_names;
  if (!docs->hypernodes.empty()) {
    std::map<std::string, SourcePos> seen;
    std::map<std::string, int32_t> tier_names;
    int32_t tiers = 0;
    for (size_t i = 0; i < docs->hypernodes.size(); ++i) {
      const HyperNodeSpec& h = docs->hypernodes[i];
      auto [it, inserted] = seen.emplace(h.name, h.pos);
      if (!inserted) {
        return docs->hypernode_roots[i]
            .Lookup("metadata.name")
            .Error(fmt::format("duplicate HyperNode \"{}\" (first defined at {})", h.name,
                               it->second.ToString()));
      }
      if (!h.tier_name.empty()) {
        auto [tn, fresh] = tier_names.emplace(h.tier_name, h.tier);
        if (!fresh && tn->second != h.tier) {
          return docs->hypernode_roots[i]
              .Lookup("spec.tierName")
              .Error(fmt::format("tierName \"{}\" names tier {} here and tier {} elsewhere", h.tier_name,
                                 h.tier, tn->second));
        }
      }
      if (static_cast<size_t>(h.tier) + 1 > kMaxTopologyLevels) {
        return docs->hypernode_roots[i]
            .Lookup("spec.tier")
            .Error(fmt::format("tier {} is too high: Artel supports at most {} tiers", h.tier,
                               kMaxTopologyLevels - 1));
      }
      tiers = std::max(tiers, h.tier);
    }
    auto find_topo = [](core::Config* c) -> core::TopologySpec* {
      for (core::TopologySpec& t : c->topologies) {
        if (t.name == kHyperNodeTopology) return &t;
      }
      return nullptr;
    };
    if (core::TopologySpec* t = find_topo(parsed); t != nullptr) {
      if (static_cast<int32_t>(t->levels.size()) - 1 < tiers) t->levels = HyperNodeLevels(tiers);
      for (const auto& [n, tier] : tier_names) t->tier_names[n] = tier;
    } else if (core::TopologySpec* t2 = find_topo(existing); t2 != nullptr) {
      grow = t2;
      grown_levels =
          static_cast<int32_t>(t2->levels.size()) - 1 < tiers ? HyperNodeLevels(tiers) : t2->levels;
      grown_tier_names = t2->tier_names;
      for (const auto& [n, tier] : tier_names) grown_tier_names[n] = tier;
    } else {
      core::TopologySpec topo;
      topo.name = kHyperNodeTopology;
      topo.levels = HyperNodeLevels(tiers);
      topo.tier_names = tier_names;
      topo.pos = docs->hypernodes.front().pos;
      add.topologies.push_back(std::move(topo));
    }
  }
  // Success from here on.
  if (grow != nullptr) {
    grow->levels = std::move(grown_levels);
    grow->tier_names = std::move(grown_tier_names);
  }
  if (extras != nullptr) {
    for (HyperNodeSpec& h : docs->hypernodes) extras->hypernodes.push_back(std::move(h));
  }
  AppendConfig(std::move(add), parsed);
  return Status::Ok();
}

// ---------------------------------------------------------------- workloads

namespace {

struct Refusal {
  std::string_view field;
  std::string_view reason;
};

Status Refuse(const Node& map, std::initializer_list<Refusal> refused) {
  if (!map.IsMap()) return Status::Ok();
  for (const Refusal& r : refused) {
    if (map[r.field].present())
      return map[r.field].Error(fmt::format("not supported by Artel: {}", r.reason));
  }
  return Status::Ok();
}

// The requests of one container (a limit without a request sets it, as in Kubernetes).
Status ReadContainerRequests(const Node& c, std::map<std::string, core::Amount>* out) {
  Node res = c["resources"];
  if (!res.present()) return Status::Ok();
  ARTEL_RETURN_IF_ERROR(res.CheckKeys({"requests", "limits", "claims"}));
  std::map<std::string, core::Amount> req, lim;
  if (res["requests"].present()) ARTEL_RETURN_IF_ERROR(ReadResourceList(res["requests"], &req));
  if (res["limits"].present()) ARTEL_RETURN_IF_ERROR(ReadResourceList(res["limits"], &lim));
  for (const auto& [r, a] : lim) req.emplace(r, a);
  for (const auto& [r, a] : req) (*out)[r] += a;
  return Status::Ok();
}

// A Kubernetes pod spec's requests (Kubernetes' rule, which Kueue follows):
// the larger of the app containers' sum (plus restartable "sidecar" init
// containers) and each regular init container (plus the sidecars started
// before it), then the pod overhead.
Status ReadKubernetesPodRequests(const Node& spec, core::PodSetSpec* ps) {
  Node containers = spec["containers"];
  if (!containers.present()) return spec.MissingError("containers");
  ARTEL_RETURN_IF_ERROR(containers.ExpectList());
  if (containers.size() == 0) return containers.Error("needs at least one container");
  std::map<std::string, core::Amount> sum;
  for (const Node& c : containers.Items()) ARTEL_RETURN_IF_ERROR(ReadContainerRequests(c, &sum));
  std::map<std::string, core::Amount> sidecars, peak;
  Node init = spec["initContainers"];
  if (init.present()) {
    ARTEL_RETURN_IF_ERROR(init.ExpectList());
    for (const Node& c : init.Items()) {
      std::map<std::string, core::Amount> mine;
      ARTEL_RETURN_IF_ERROR(ReadContainerRequests(c, &mine));
      std::string restart;
      ARTEL_RETURN_IF_ERROR(c.ReadString("restartPolicy", &restart));
      if (restart == "Always") {
        for (const auto& [r, a] : mine) sidecars[r] += a;
        for (const auto& [r, a] : sidecars) peak[r] = std::max(peak[r], a);
      } else {
        for (const auto& [r, a] : sidecars) mine[r] += a;
        for (const auto& [r, a] : mine) peak[r] = std::max(peak[r], a);
      }
    }
  }
  for (const auto& [r, a] : sidecars) sum[r] += a;
  for (const auto& [r, a] : peak) sum[r] = std::max(sum[r], a);
  if (spec["overhead"].present()) {
    std::map<std::string, core::Amount> overhead;
    ARTEL_RETURN_IF_ERROR(ReadResourceList(spec["overhead"], &overhead));
    for (const auto& [r, a] : overhead) sum[r] += a;
  }
  for (const auto& [r, a] : sum) ps->requests[r] += a;
  return Status::Ok();
}

Status ReadContainers(const Node& list, core::PodSetSpec* ps) {
  ARTEL_RETURN_IF_ERROR(list.ExpectList());
  if (list.size() == 0) return list.Error("needs at least one container");
  bool first = true;
  for (const Node& c : list.Items()) {
    ARTEL_RETURN_IF_ERROR(
        Refuse(c, {{"resizePolicy", "in-place resize"}, {"restartPolicy", "sidecar containers"}}));
    // terminationMessagePath/Policy, lifecycle, volumeDevices and stdinOnce
    // are what the API server defaults (or a kubelet alone uses): objects
    // read back from a cluster carry them.
    ARTEL_RETURN_IF_ERROR(c.CheckKeys({"name",
                                       "image",
                                       "imagePullPolicy",
                                       "command",
                                       "args",
                                       "env",
                                       "workingDir",
                                       "ports",
                                       "volumeMounts",
                                       "resources",
                                       "securityContext",
                                       "livenessProbe",
                                       "readinessProbe",
                                       "startupProbe",
                                       "stdin",
                                       "tty",
                                       "terminationMessagePath",
                                       "terminationMessagePolicy",
                                       "lifecycle",
                                       "volumeDevices",
                                       "stdinOnce"}));
    if (first) {
      std::vector<std::string> cmd, args;
      ARTEL_RETURN_IF_ERROR(c.ReadStringList("command", &cmd));
      ARTEL_RETURN_IF_ERROR(c.ReadStringList("args", &args));
      ps->command = cmd;
      ps->command.insert(ps->command.end(), args.begin(), args.end());
      ARTEL_RETURN_IF_ERROR(c.ReadString("workingDir", &ps->working_dir));
      Node env = c["env"];
      if (env.present()) {
        ARTEL_RETURN_IF_ERROR(env.ExpectList());
        for (const Node& e : env.Items()) {
          if (e["valueFrom"].present()) return e["valueFrom"].Error("not supported by Artel: env valueFrom");
          ARTEL_RETURN_IF_ERROR(e.CheckKeys({"name", "value"}));
          std::string name, value;
          ARTEL_RETURN_IF_ERROR(e.ReadString("name", &name, kRequired));
          if (name.empty() || name.find('=') != std::string::npos) return e["name"].Error("invalid name");
          ARTEL_RETURN_IF_ERROR(e.ReadString("value", &value));
          ps->env[name] = value;
        }
      }
    }
    first = false;
    Node res = c["resources"];
    if (res.present()) {
      ARTEL_RETURN_IF_ERROR(res.CheckKeys({"requests", "limits"}));
      std::map<std::string, core::Amount> req, lim;
      if (res["requests"].present()) ARTEL_RETURN_IF_ERROR(ReadResourceList(res["requests"], &req));
      if (res["limits"].present()) ARTEL_RETURN_IF_ERROR(ReadResourceList(res["limits"], &lim));
      for (const auto& [r, a] : lim) req.emplace(r, a);  // a limit without a request sets it (Kubernetes)
      for (const auto& [r, a] : req) ps->requests[r] += a;
    }
  }
  return Status::Ok();
}

// One node selector requirement (matchExpressions or, with `field`,
// matchFields: only metadata.name, which is the node's hostname label).
Status ReadNodeRequirement(const Node& e, bool field, core::NodeSelectorRequirement* out) {
  ARTEL_RETURN_IF_ERROR(e.CheckKeys({"key", "operator", "values"}));
  ARTEL_RETURN_IF_ERROR(e.ReadString("key", &out->key, kRequired));
  if (out->key.empty()) return e["key"].Error("must not be empty");
  if (field) {
    if (out->key != "metadata.name") return e["key"].Error("matchFields supports only metadata.name");
    out->key = "kubernetes.io/hostname";
  }
  ARTEL_RETURN_IF_ERROR(e.ReadEnum<std::string>("operator",
                                                {{"In", "In"},
                                                 {"NotIn", "NotIn"},
                                                 {"Exists", "Exists"},
                                                 {"DoesNotExist", "DoesNotExist"},
                                                 {"Gt", "Gt"},
                                                 {"Lt", "Lt"}},
                                                &out->op, kRequired));
  if (field && out->op != "In" && out->op != "NotIn")
    return e["operator"].Error("matchFields supports In and NotIn");
  ARTEL_RETURN_IF_ERROR(e.ReadStringList("values", &out->values));
  std::string culprit;
  std::string problem = out->Problem(&culprit);
  if (!problem.empty()) return e[culprit].Error(problem);
  return Status::Ok();
}

// affinity: node affinity only. The required terms constrain flavors (as in
// Kueue) and placement; preferred terms are accepted and not used.
Status ReadAffinity(const Node& aff, core::PodSetSpec* ps, PodSpecMode mode = PodSpecMode::kStandalone) {
  if (mode == PodSpecMode::kKubernetes) {
    // Pod (anti-)affinity is kube-scheduler's business; only the required
    // node affinity constrains flavors (as in Kueue).
    Node na = aff["nodeAffinity"];
    if (!na.present()) return Status::Ok();
    Node req = na["requiredDuringSchedulingIgnoredDuringExecution"];
    if (!req.present()) return Status::Ok();
    Node terms = req["nodeSelectorTerms"];
    if (!terms.present()) return req.MissingError("nodeSelectorTerms");
    ARTEL_RETURN_IF_ERROR(terms.ExpectList());
    for (const Node& t : terms.Items()) {
      core::NodeSelectorTerm term;
      for (const char* key : {"matchExpressions", "matchFields"}) {
        Node list = t[key];
        if (!list.present()) continue;
        ARTEL_RETURN_IF_ERROR(list.ExpectList());
        for (const Node& e : list.Items()) {
          core::NodeSelectorRequirement r;
          ARTEL_RETURN_IF_ERROR(ReadNodeRequirement(e, std::string_view(key) == "matchFields", &r));
          term.match_expressions.push_back(std::move(r));
        }
      }
      if (!term.match_expressions.empty()) ps->node_affinity.push_back(std::move(term));
    }
    return Status::Ok();
  }
  ARTEL_RETURN_IF_ERROR(Refuse(aff, {{"podAffinity",
                                      "inter-pod affinity; use the dialect's topology fields or Kueue "
                                      "podset topology annotations"},
                                     {"podAntiAffinity",
                                      "inter-pod anti-affinity; use the dialect's topology fields or "
                                      "the artel.dev/score: spread annotation"}}));
  ARTEL_RETURN_IF_ERROR(aff.CheckKeys({"nodeAffinity"}));
  Node na = aff["nodeAffinity"];
  if (!na.present()) return Status::Ok();
  ARTEL_RETURN_IF_ERROR(na.CheckKeys(
      {"requiredDuringSchedulingIgnoredDuringExecution", "preferredDuringSchedulingIgnoredDuringExecution"}));
  Node pref = na["preferredDuringSchedulingIgnoredDuringExecution"];
  if (pref.present()) {
    ARTEL_RETURN_IF_ERROR(pref.ExpectList());
    for (const Node& p : pref.Items()) ARTEL_RETURN_IF_ERROR(p.CheckKeys({"weight", "preference"}));
  }
  Node req = na["requiredDuringSchedulingIgnoredDuringExecution"];
  if (!req.present()) return Status::Ok();
  ARTEL_RETURN_IF_ERROR(req.CheckKeys({"nodeSelectorTerms"}));
  Node terms = req["nodeSelectorTerms"];
  if (!terms.present()) return req.MissingError("nodeSelectorTerms");
  ARTEL_RETURN_IF_ERROR(terms.ExpectList());
  if (terms.size() == 0) return terms.Error("needs at least one term");
  for (const Node& t : terms.Items()) {
    ARTEL_RETURN_IF_ERROR(t.CheckKeys({"matchExpressions", "matchFields"}));
    core::NodeSelectorTerm term;
    for (const char* key : {"matchExpressions", "matchFields"}) {
      Node list = t[key];
      if (!list.present()) continue;
      ARTEL_RETURN_IF_ERROR(list.ExpectList());
      for (const Node& e : list.Items()) {
        core::NodeSelectorRequirement r;
        ARTEL_RETURN_IF_ERROR(ReadNodeRequirement(e, std::string_view(key) == "matchFields", &r));
        term.match_expressions.push_back(std::move(r));
      }
    }
    if (term.match_expressions.empty()) return t.Error("a term needs matchExpressions or matchFields");
    ps->node_affinity.push_back(std::move(term));
  }
  return Status::Ok();
}

Status ReadPodSpec(const Node& spec, core::PodSetSpec* ps, std::optional<std::string>* priority_class,
                   std::optional<core::Time>* termination_grace,
                   PodSpecMode mode = PodSpecMode::kStandalone) {
  if (mode == PodSpecMode::kKubernetes) {
    // Every field the API server accepted is accepted: the kubelet runs the pods.
    ARTEL_RETURN_IF_ERROR(ReadKubernetesPodRequests(spec, ps));
  } else {
    ARTEL_RETURN_IF_ERROR(Refuse(spec, {{"initContainers", "init containers"},
                                        {"topologySpreadConstraints",
                                         "topology spread constraints; use the dialect's "
                                         "topology fields or Kueue podset topology"},
                                        {"overhead", "pod overhead"},
                                        {"resourceClaims", "dynamic resource claims"},
                                        {"nodeName", "nodeName (Artel places pods itself)"}}));
    // dnsPolicy, enableServiceLinks, serviceAccount, priority,
    // preemptionPolicy and the like are set by the API server's defaulting and
    // admission (objects read back from a cluster carry them) or only concern
    // the kubelet; they are accepted and not used.
    ARTEL_RETURN_IF_ERROR(spec.CheckKeys({"containers",
                                          "nodeSelector",
                                          "affinity",
                                          "tolerations",
                                          "priorityClassName",
                                          "schedulerName",
                                          "restartPolicy",
                                          "terminationGracePeriodSeconds",
                                          "volumes",
                                          "serviceAccountName",
                                          "imagePullSecrets",
                                          "hostname",
                                          "subdomain",
                                          "securityContext",
                                          "dnsPolicy",
                                          "dnsConfig",
                                          "enableServiceLinks",
                                          "automountServiceAccountToken",
                                          "serviceAccount",
                                          "priority",
                                          "preemptionPolicy",
                                          "runtimeClassName",
                                          "setHostnameAsFQDN",
                                          "shareProcessNamespace",
                                          "os",
                                          "readinessGates",
                                          "hostAliases"}));
    Node containers = spec["containers"];
    if (!containers.present()) return spec.MissingError("containers");
    ARTEL_RETURN_IF_ERROR(ReadContainers(containers, ps));
  }
  ARTEL_RETURN_IF_ERROR(spec.ReadStringMap("nodeSelector", &ps->node_selector));
  if (spec["affinity"].present()) ARTEL_RETURN_IF_ERROR(ReadAffinity(spec["affinity"], ps, mode));
  Node tols = spec["tolerations"];
  if (tols.present()) {
    ARTEL_RETURN_IF_ERROR(tols.ExpectList());
    for (const Node& t : tols.Items()) {
      ARTEL_RETURN_IF_ERROR(t.CheckKeys({"key", "operator", "value", "effect", "tolerationSeconds"}));
      core::Toleration tol;
      ARTEL_RETURN_IF_ERROR(t.ReadString("key", &tol.key));
      ARTEL_RETURN_IF_ERROR(
          t.ReadEnum<std::string>("operator", {{"Equal", "Equal"}, {"Exists", "Exists"}}, &tol.op));
      ARTEL_RETURN_IF_ERROR(t.ReadString("value", &tol.value));
      ARTEL_RETURN_IF_ERROR(t.ReadEnum<std::string>("effect",
                                                    {{"NoSchedule", "NoSchedule"},
                                                     {"PreferNoSchedule", "PreferNoSchedule"},
                                                     {"NoExecute", "NoExecute"}},
                                                    &tol.effect));
      if (tol.op == "Exists" && !tol.value.empty())
        return t["value"].Error("must be empty when operator is Exists");
      if (tol.key.empty() && tol.op != "Exists")
        return t["operator"].Error("must be Exists when key is empty");
      ps->tolerations.push_back(std::move(tol));
    }
  }
  std::string pc;
  ARTEL_RETURN_IF_ERROR(spec.ReadString("priorityClassName", &pc));
  if (!pc.empty()) *priority_class = pc;
  if (spec["terminationGracePeriodSeconds"].present()) {
    Result<int64_t> g = spec["terminationGracePeriodSeconds"].AsInt(0, 86400);
    if (!g.ok()) return g.status();
    if (termination_grace != nullptr) *termination_grace = *g * 1000;
  }
  return Status::Ok();
}

}  // namespace

Status ReadPodTemplate(const Node& tmpl, core::PodSetSpec* out, std::optional<std::string>* priority_class,
                       std::optional<core::Time>* termination_grace, PodSpecMode mode) {
  ARTEL_RETURN_IF_ERROR(tmpl.CheckKeys({"metadata", "spec"}));
  Node meta = tmpl["metadata"];
  if (meta.present()) {
    // The API server writes `creationTimestamp: null` into embedded templates.
    if (mode == PodSpecMode::kStandalone)
      ARTEL_RETURN_IF_ERROR(meta.CheckKeys(
          {"name", "labels", "annotations", "creationTimestamp", "generateName", "namespace"}));
    std::map<std::string, std::string> labels;
    ARTEL_RETURN_IF_ERROR(meta.ReadStringMap("labels", &labels));
    ARTEL_RETURN_IF_ERROR(meta.ReadStringMap("annotations", &out->annotations));
  }
  Node spec = tmpl["spec"];
  if (!spec.present()) return tmpl.MissingError("spec");
  return ReadPodSpec(spec, out, priority_class, termination_grace, mode);
}

Status ReadPod(const Node& root, PodDoc* out, PodSpecMode mode) {
  ARTEL_RETURN_IF_ERROR(root.CheckKeys({"apiVersion", "kind", "metadata", "spec", "status"}));
  ARTEL_RETURN_IF_ERROR(ReadDialectMeta(root, true, &out->meta));
  out->root = root;
  out->spec.annotations = out->meta.annotations;
  Node spec = root["spec"];
  if (!spec.present()) return root.MissingError("spec");
  return ReadPodSpec(spec, &out->spec, &out->priority_class, nullptr, mode);
}

namespace {

constexpr char kQueueNameLabel[] = "kueue.x-k8s.io/queue-name";
constexpr char kMaxExecTimeLabel[] = "kueue.x-k8s.io/max-exec-time-seconds";
constexpr char kPriorityClassLabel[] = "kueue.x-k8s.io/priority-class";
constexpr char kJobMinParallelism[] = "kueue.x-k8s.io/job-min-parallelism";
constexpr char kVolcanoGroupAnnotation[] = "scheduling.k8s.io/group-name";
constexpr char kVolcanoTaskAnnotation[] = "volcano.sh/task-spec";
constexpr char kKaiGroupAnnotation[] = "pod-group-name";
constexpr char kKaiSubGroupLabel[] = "kai.scheduler/subgroup-name";

Status ParseKueueWorkload(const Node& root, core::WorkloadSpec* out, PodSpecMode mode) {
  ARTEL_RETURN_IF_ERROR(root.CheckKeys({"apiVersion", "kind", "metadata", "spec", "status"}));
  DialectMeta meta;
  ARTEL_RETURN_IF_ERROR(ReadDialectMeta(root, true, &meta));
  core::WorkloadSpec w;
  w.name = meta.name;
  w.ns = meta.ns;
  w.labels = meta.labels;
  w.annotations = meta.annotations;
  w.annotations[kAnnDialect] = "kueue";
  Node spec = root["spec"];
  if (!spec.present()) return root.MissingError("spec");
  // v1beta2 names the priority class with priorityClassRef {group, kind,
  // name}; v1beta1 with priorityClassName and priorityClassSource. Both
  // spellings are read in both versions (manifests written for one release
  // of Kueue are often applied with the other's apiVersion).
  ARTEL_RETURN_IF_ERROR(
      spec.CheckKeys({"queueName", "priorityClassName", "priority", "priorityClassSource", "priorityClassRef",
                      "active", "podSets", "maximumExecutionTimeSeconds"}));
  if (spec["maximumExecutionTimeSeconds"].present()) {
    Result<int64_t> m = spec["maximumExecutionTimeSeconds"].AsInt(1, INT32_MAX);
    if (!m.ok()) return m.status();
    w.max_runtime = *m * 1000;
  }
  ARTEL_RETURN_IF_ERROR(spec.ReadString("queueName", &w.queue, kRequired));
  std::string pc;
  ARTEL_RETURN_IF_ERROR(spec.ReadString("priorityClassName", &pc));
  Node ref = spec["priorityClassRef"];
  if (ref.present()) {
    if (spec["priorityClassName"].present()) {
      return ref.Error("set either priorityClassRef (v1beta2) or priorityClassName (v1beta1), not both");
    }
    ARTEL_RETURN_IF_ERROR(ref.CheckKeys({"group", "kind", "name"}));
    std::string group, kind;
    ARTEL_RETURN_IF_ERROR(ref.ReadEnum<std::string>(
        "group", {{"kueue.x-k8s.io", "kueue.x-k8s.io"}, {"scheduling.k8s.io", "scheduling.k8s.io"}}, &group));
    ARTEL_RETURN_IF_ERROR(ref.ReadEnum<std::string>(
        "kind", {{"WorkloadPriorityClass", "WorkloadPriorityClass"}, {"PriorityClass", "PriorityClass"}},
        &kind));
    if (!group.empty() && !kind.empty() && (group == "kueue.x-k8s.io") != (kind == "WorkloadPriorityClass")) {
      return ref["kind"].Error(fmt::format("kind {} is not in group {}", kind, group));
    }
    ARTEL_RETURN_IF_ERROR(ref.ReadString("name", &pc, kRequired));
    if (pc.empty()) return ref["name"].Error("must not be empty");
  }
  if (!pc.empty()) w.priority_class = pc;
  if (spec["priority"].present()) {
    int32_t p = 0;
    ARTEL_RETURN_IF_ERROR(spec.ReadInt32("priority", &p));
    w.priority = p;
  }
  std::string source;
  ARTEL_RETURN_IF_ERROR(spec.ReadEnum<std::string>(
      "priorityClassSource",
      {{"", ""}, {"kueue.x-k8s.io/workloadpriorityclass", "wpc"}, {"scheduling.k8s.io/priorityclass", "pc"}},
      &source));
  ARTEL_RETURN_IF_ERROR(spec.ReadBool("active", &w.active));
  Node sets = spec["podSets"];
  if (!sets.present()) return spec.MissingError("podSets");
  ARTEL_RETURN_IF_ERROR(sets.ExpectList());
  if (sets.size() == 0) return sets.Error("must list at least one pod set");
  std::set<std::string> names;
  for (const Node& s : sets.Items()) {
    ARTEL_RETURN_IF_ERROR(s.CheckKeys({"name", "count", "minCount", "template", "topologyRequest"}));
    core::PodSetSpec ps;
    ARTEL_RETURN_IF_ERROR(s.ReadString("name", &ps.name));
    if (!names.insert(ps.name).second) return s["name"].Error("duplicate pod set name \"" + ps.name + "\"");
    if (s["count"].present()) {
      Result<int64_t> c = s["count"].AsInt(1, 100000);
      if (!c.ok()) return c.status();
      ps.count = static_cast<int32_t>(*c);
    }
    if (s["minCount"].present()) {
      Result<int64_t> m = s["minCount"].AsInt(1, ps.count);
      if (!m.ok()) return m.status();
      ps.min_count = static_cast<int32_t>(*m);
    }
    Node tmpl = s["template"];
    if (!tmpl.present()) return s.MissingError("template");
    std::optional<std::string> tpc;
    std::optional<core::Time> grace;
    ARTEL_RETURN_IF_ERROR(ReadPodTemplate(tmpl, &ps, &tpc, &grace, mode));
    if (grace && !w.termination_grace) w.termination_grace = grace;
    Node tr = s["topologyRequest"];
    if (tr.present()) {
      ARTEL_RETURN_IF_ERROR(tr.CheckKeys(
          {"required", "preferred", "unconstrained", "podIndexLabel", "subGroupIndexLabel", "subGroupCount",
           "podSetSliceRequiredTopology", "podSetSliceSize", "podSetGroupName"}));
      std::string group_name;  // accepted; Artel places each pod set on its own
      ARTEL_RETURN_IF_ERROR(tr.ReadString("podSetGroupName", &group_name));
      std::string v;
      if (tr["required"].present()) {
        ARTEL_RETURN_IF_ERROR(tr.ReadString("required", &v));
        ps.annotations["kueue.x-k8s.io/podset-required-topology"] = v;
      }
      if (tr["preferred"].present()) {
        ARTEL_RETURN_IF_ERROR(tr.ReadString("preferred", &v));
        ps.annotations["kueue.x-k8s.io/podset-preferred-topology"] = v;
      }
      bool unconstrained = false;
      ARTEL_RETURN_IF_ERROR(tr.ReadBool("unconstrained", &unconstrained));
      if (unconstrained) ps.annotations["kueue.x-k8s.io/podset-unconstrained-topology"] = "true";
      if (tr["podSetSliceRequiredTopology"].present()) {
        ARTEL_RETURN_IF_ERROR(tr.ReadString("podSetSliceRequiredTopology", &v));
        ps.annotations["kueue.x-k8s.io/podset-slice-required-topology"] = v;
      }
      if (tr["podSetSliceSize"].present()) {
        Result<int64_t> n = tr["podSetSliceSize"].AsInt(1, 100000);
        if (!n.ok()) return n.status();
        ps.annotations["kueue.x-k8s.io/podset-slice-size"] = std::to_string(*n);
      }
      for (std::string_view f : {"podIndexLabel", "subGroupIndexLabel"})
        ARTEL_RETURN_IF_ERROR(tr.ReadString(f, &v));
      if (tr["subGroupCount"].present()) {
        Result<int64_t> n = tr["subGroupCount"].AsInt(1, 100000);
        if (!n.ok()) return n.status();
      }
    }
    w.pod_sets.push_back(std::move(ps));
  }
  *out = std::move(w);
  return Status::Ok();
}

// batch/v1 Job with Kueue's queue label, as Kueue's Job integration maps it:
// one pod set `main` of `parallelism` pods (the only Job reader: the HTTP
// API's src/api/codec.cc calls ParseWorkloads too).
Status ParseBatchJob(const Node& root, core::WorkloadSpec* out, PodSpecMode mode) {
  ARTEL_RETURN_IF_ERROR(root.CheckKeys({"apiVersion", "kind", "metadata", "spec", "status"}));
  DialectMeta meta;
  ARTEL_RETURN_IF_ERROR(ReadDialectMeta(root, true, &meta));
  core::WorkloadSpec w;
  w.name = meta.name;
  w.ns = meta.ns;
  w.labels = meta.labels;
  w.annotations = meta.annotations;
  w.annotations[kAnnDialect] = "kueue";
  auto q = meta.labels.find(kQueueNameLabel);
  if (q == meta.labels.end() || q->second.empty()) {
    return root.Lookup("metadata.labels").Error(std::string("a Job needs the label ") + kQueueNameLabel);
  }
  w.queue = q->second;
  if (auto pc = meta.labels.find(kPriorityClassLabel); pc != meta.labels.end()) w.priority_class = pc->second;
  if (auto mx = meta.labels.find(kMaxExecTimeLabel); mx != meta.labels.end()) {
    // Kueue's Job label for the Workload's maximumExecutionTimeSeconds.
    char* end = nullptr;
    long long v = std::strtoll(mx->second.c_str(), &end, 10);
    if (mx->second.empty() || *end != '\0' || v < 1 || v > INT32_MAX) {
      return root.Lookup("metadata.labels")
          .Error(std::string("label ") + kMaxExecTimeLabel +
                 ": expected a whole number of seconds >= 1, got \"" + mx->second + "\"");
    }
    w.max_runtime = static_cast<core::Time>(v) * 1000;
  }
  Node spec = root["spec"];
  if (!spec.present()) return root.MissingError("spec");
  ARTEL_RETURN_IF_ERROR(Refuse(spec, {{"podFailurePolicy", "podFailurePolicy"},
                                      {"successPolicy", "successPolicy"},
                                      {"activeDeadlineSeconds", "activeDeadlineSeconds"}}));
  // podReplacementPolicy, backoffLimitPerIndex, maxFailedIndexes and
  // managedBy only concern the Job controller (the API server defaults the
  // first); accepted and not used.
  ARTEL_RETURN_IF_ERROR(
      spec.CheckKeys({"parallelism", "completions", "backoffLimit", "suspend", "template",
                      "ttlSecondsAfterFinished", "completionMode", "manualSelector", "selector",
                      "podReplacementPolicy", "backoffLimitPerIndex", "maxFailedIndexes", "managedBy"}));
  core::PodSetSpec ps;
  ps.name = "main";
  if (spec["parallelism"].present()) {
    Result<int64_t> p = spec["parallelism"].AsInt(1, 100000);
    if (!p.ok()) return p.status();
    ps.count = static_cast<int32_t>(*p);
  }
  if (spec["completions"].present()) {
    Result<int64_t> c = spec["completions"].AsInt(1, INT32_MAX);
    if (!c.ok()) return c.status();
  }
  if (spec["backoffLimit"].present()) {
    Result<int64_t> b = spec["backoffLimit"].AsInt(0, 100);
    if (!b.ok()) return b.status();
    w.backoff_limit = static_cast<int32_t>(*b);
  }
  bool suspend = false;
  ARTEL_RETURN_IF_ERROR(spec.ReadBool("suspend", &suspend));
  std::string completion_mode;  // validated only
  ARTEL_RETURN_IF_ERROR(spec.ReadEnum<std::string>(
      "completionMode", {{"NonIndexed", "NonIndexed"}, {"Indexed", "Indexed"}}, &completion_mode));
  if (auto mp = meta.annotations.find(kJobMinParallelism); mp != meta.annotations.end()) {
    Result<core::Amount> m = core::ParseQuantity(mp->second);
    if (!m.ok() || *m % core::kMilli != 0 || *m < core::kMilli || *m > ps.count * core::kMilli) {
      return root.Lookup("metadata.annotations")
          .Error(fmt::format("{} must be an integer between 1 and parallelism ({})", kJobMinParallelism,
                             ps.count));
    }
    if (*m / core::kMilli < ps.count) ps.min_count = static_cast<int32_t>(*m / core::kMilli);
  }
  Node tmpl = spec["template"];
  if (!tmpl.present()) return spec.MissingError("template");
  std::optional<std::string> tpc;
  ARTEL_RETURN_IF_ERROR(ReadPodTemplate(tmpl, &ps, &tpc, &w.termination_grace, mode));
  if (tpc && !w.priority_class) w.priority_class = tpc;
  w.pod_sets.push_back(std::move(ps));
  *out = std::move(w);
  return Status::Ok();
}

// Attaches the pods to their PodGroups and builds the pod sets.
Status AttachPods(std::vector<PodGroupDoc>* groups, const std::vector<PodDoc>& pods) {
  std::map<std::string, size_t> index;  // ns/name -> group
  for (size_t i = 0; i < groups->size(); ++i)
    index[(*groups)[i].workload.ns + "/" + (*groups)[i].workload.name] = i;
  std::vector<std::map<std::string, const PodDoc*>> first_pod(groups->size());
  for (const PodDoc& pod : pods) {
    const auto& ann = pod.meta.annotations;
    auto g = ann.find(kVolcanoGroupAnnotation);
    if (g == ann.end()) g = ann.find(kKaiGroupAnnotation);
    if (g == ann.end()) {
      return pod.root.Lookup("metadata.annotations")
          .Error(fmt::format(
              "a Pod must belong to a PodGroup of the same text: annotation {} (Volcano) or {} (KAI)",
              kVolcanoGroupAnnotation, kKaiGroupAnnotation));
    }
    auto it = index.find(pod.meta.ns + "/" + g->second);
    if (it == index.end()) {
      std::vector<std::string> known;
      for (const PodGroupDoc& pg : *groups) known.push_back(pg.workload.name);
      return pod.root.Lookup("metadata.annotations")
          .Error(fmt::format("PodGroup \"{}\" of namespace {} is not in this text{}", g->second, pod.meta.ns,
                             Hint(g->second, known)));
    }
    PodGroupDoc& pg = (*groups)[it->second];
    std::string set = "main";
    if (auto t = ann.find(kVolcanoTaskAnnotation); t != ann.end() && !t->second.empty()) set = t->second;
    if (auto s = pod.meta.labels.find(kKaiSubGroupLabel); s != pod.meta.labels.end() && !s->second.empty()) {
      set = s->second;
    }
    if (pg.dialect == QueueDialect::kKai && !pg.declared_sets.empty() &&
        std::find(pg.declared_sets.begin(), pg.declared_sets.end(), set) == pg.declared_sets.end()) {
      return pod.root.Lookup("metadata.labels")
          .Error(fmt::format("subgroup \"{}\" is not declared by PodGroup {}{}", set, pg.workload.name,
                             Hint(set, pg.declared_sets)));
    }
    core::PodSetSpec ps = pod.spec;
    ps.name = set;
    ps.count = 1;
    for (const char* k : {kVolcanoGroupAnnotation, kKaiGroupAnnotation, kVolcanoTaskAnnotation})
      ps.annotations.erase(k);
    if (pg.dialect == QueueDialect::kKai) {
      auto sa = pg.set_annotations.find(pg.declared_sets.empty() ? std::string() : set);
      if (sa != pg.set_annotations.end()) {
        for (const auto& [k, v] : sa->second) ps.annotations[k] = v;
      }
    }
    if (pod.priority_class && !pg.workload.priority_class) pg.workload.priority_class = pod.priority_class;
    auto& firsts = first_pod[it->second];
    auto existing = std::find_if(pg.workload.pod_sets.begin(), pg.workload.pod_sets.end(),
                                 [&](const core::PodSetSpec& p) { return p.name == set; });
    if (existing == pg.workload.pod_sets.end()) {
      pg.workload.pod_sets.push_back(std::move(ps));
      firsts[set] = &pod;
      continue;
    }
    if (existing->requests != ps.requests || existing->node_selector != ps.node_selector ||
        existing->annotations != ps.annotations) {
      return pod.root.Lookup("spec").Error(
          fmt::format("pod {} differs from pod {} of the same pod set \"{}\" (requests, nodeSelector or "
                      "annotations); pods of "
                      "one task or subgroup must be alike",
                      pod.meta.name, firsts[set]->meta.name, set));
    }
    pg.workload.pod_sets.mut(static_cast<size_t>(existing - pg.workload.pod_sets.begin())).count += 1;
  }
  for (PodGroupDoc& pg : *groups) {
    core::WorkloadSpec& w = pg.workload;
    if (w.pod_sets.empty()) {
      return pg.root.Lookup("metadata.name")
          .Error(fmt::format(
              "PodGroup {} has no pods in this text (pods name it with annotation {})", w.name,
              pg.dialect == QueueDialect::kVolcano ? kVolcanoGroupAnnotation : kKaiGroupAnnotation));
    }
    for (const std::string& declared : pg.declared_sets) {
      if (std::none_of(w.pod_sets.begin(), w.pod_sets.end(),
                       [&](const core::PodSetSpec& p) { return p.name == declared; })) {
        return pg.root.Lookup("spec.subGroups")
            .Error(fmt::format("subgroup \"{}\" has no pods (label {})", declared, kKaiSubGroupLabel));
      }
    }
    int64_t total = 0;
    for (core::PodSetSpec& ps : w.pod_sets.mut_all()) {
      total += ps.count;
      if (auto m = pg.min_per_set.find(ps.name); m != pg.min_per_set.end()) {
        if (m->second > ps.count) {
          return pg.root.Lookup("spec").Error(
              fmt::format("the minimum of {} ({}) exceeds its {} pods", ps.name, m->second, ps.count));
        }
        ps.min_count = m->second;  // also when equal to the count: then the whole task is required
      }
    }
    for (const auto& entry : pg.min_per_set) {
      const std::string& name = entry.first;  // not a binding: clang 14 cannot capture one
      if (std::none_of(w.pod_sets.begin(), w.pod_sets.end(),
                       [&](const core::PodSetSpec& p) { return p.name == name; })) {
        return pg.root.Lookup("spec.minTaskMember")
            .Error(fmt::format("task \"{}\" has no pods (annotation {})", name, kVolcanoTaskAnnotation));
      }
    }
    auto mm = w.annotations.find(kAnnMinMember);
    if (mm == w.annotations.end()) {
      w.annotations[kAnnMinMember] = std::to_string(total);
    } else {
      int64_t min_member = std::stoll(mm->second);
      if (min_member > total) {
        return pg.root.Lookup("spec.minMember")
            .Error(fmt::format("minMember {} exceeds the {} pods given", min_member, total));
      }
      if (w.pod_sets.size() == 1 && !pg.min_per_set.count(w.pod_sets[0].name) && min_member < total &&
          min_member > 0) {
        w.pod_sets.mut(0).min_count = static_cast<int32_t>(min_member);
      }
    }
  }
  return Status::Ok();
}

struct WorkloadReader {
  std::vector<core::WorkloadSpec> out;
  std::vector<PodGroupDoc> groups;
  std::vector<size_t> group_slot;  // index in `out` reserved for each group
  std::vector<PodDoc> pods;
  PodSpecMode mode = PodSpecMode::kStandalone;

  Status Read(const Node& root) {
    ARTEL_RETURN_IF_ERROR(root.ExpectMap());
    std::string api, kind;
    ARTEL_RETURN_IF_ERROR(root.ReadString("apiVersion", &api, kRequired));
    ARTEL_RETURN_IF_ERROR(root.ReadString("kind", &kind, kRequired));
    if (api == "v1" && kind == "List") {
      ARTEL_RETURN_IF_ERROR(root.CheckKeys({"apiVersion", "kind", "metadata", "items"}));
      Node items = root["items"];
      if (!items.present()) return Status::Ok();
      ARTEL_RETURN_IF_ERROR(items.ExpectList());
      for (const Node& item : items.Items()) ARTEL_RETURN_IF_ERROR(Read(item));
      return Status::Ok();
    }
    if (api == "v1" && kind == "Pod") {
      PodDoc pod;
      ARTEL_RETURN_IF_ERROR(ReadPod(root, &pod, mode));
      pods.push_back(std::move(pod));
      return Status::Ok();
    }
    core::WorkloadSpec w;
    if (api == "batch.volcano.sh/v1alpha1" && kind == "Job") {
      ARTEL_RETURN_IF_ERROR(ParseVolcanoJob(root, &w));
    } else if (api == "batch/v1" && kind == "Job") {
      ARTEL_RETURN_IF_ERROR(ParseBatchJob(root, &w, mode));
    } else if ((api == "kueue.x-k8s.io/v1beta1" || api == "kueue.x-k8s.io/v1beta2") && kind == "Workload") {
      ARTEL_RETURN_IF_ERROR(ParseKueueWorkload(root, &w, mode));
    } else if ((api == "scheduling.volcano.sh/v1beta1" || api == "scheduling.run.ai/v2alpha2") &&
               kind == "PodGroup") {
      PodGroupDoc pg;
      if (api == "scheduling.volcano.sh/v1beta1") {
        ARTEL_RETURN_IF_ERROR(ParseVolcanoPodGroup(root, &pg));
      } else {
        ARTEL_RETURN_IF_ERROR(ParseKaiPodGroup(root, &pg));
      }
      groups.push_back(std::move(pg));
      group_slot.push_back(out.size());
      out.emplace_back();
      return Status::Ok();
    } else {
      static const std::vector<std::string_view> kWorkloadKinds = {"Job", "PodGroup", "Pod", "Workload",
                                                                   "List"};
      std::string msg = fmt::format("kind {} (apiVersion {}) is not a workload Artel reads", kind, api);
      std::string guess = yaml::SuggestField(kind, kWorkloadKinds);
      if (!guess.empty() && guess != kind) msg += "; did you mean " + guess + "?";
      msg +=
          "; workloads are batch.volcano.sh/v1alpha1 Job, scheduling.volcano.sh/v1beta1 or "
          "scheduling.run.ai/v2alpha2 PodGroup with v1 Pods, kueue.x-k8s.io Workload, batch/v1 Job";
      return root["kind"].Error(std::move(msg));
    }
    out.push_back(std::move(w));
    return Status::Ok();
  }
};

}  // namespace
}  // namespace internal

Status ParseWorkloads(std::string_view text, const std::string& source,
                      std::vector<core::WorkloadSpec>* out) {
  return ParseWorkloads(text, source, out, PodSpecMode::kStandalone);
}

Status ParseWorkloads(std::string_view text, const std::string& source, std::vector<core::WorkloadSpec>* out,
                      PodSpecMode mode) {
  Result<std::vector<yaml::Node>> docs = yaml::ParseDocuments(text, source);
  if (!docs.ok()) return docs.status();
  internal::WorkloadReader reader;
  reader.mode = mode;
  for (const yaml::Node& doc : *docs) {
    if (!doc.present()) continue;
    if (Status s = reader.Read(doc); !s.ok()) return s;
  }
  if (Status s = internal::AttachPods(&reader.groups, reader.pods); !s.ok()) return s;
  for (size_t i = 0; i < reader.groups.size(); ++i)
    reader.out[reader.group_slot[i]] = std::move(reader.groups[i].workload);
  std::set<std::string> keys;
  for (const core::WorkloadSpec& w : reader.out) {
    if (!keys.insert(w.ns + "/" + w.name).second) {
      Status s = InvalidArgument(fmt::format("two workloads are named {}/{}", w.ns, w.name));
      SourcePos pos;
      pos.file = source;
      return s.WithPos(pos);
    }
  }
  for (core::WorkloadSpec& w : reader.out) {
    if (Status s = ReadTypedFields(&w); !s.ok()) {
      Status e = InvalidArgument(fmt::format("workload {}/{}: {}", w.ns, w.name, s.message()));
      e.WithField(s.field());
      SourcePos pos;
      pos.file = source;
      return e.WithPos(pos);
    }
  }
  for (core::WorkloadSpec& w : reader.out) out->push_back(std::move(w));
  return Status::Ok();
}

bool EnsureQueueInNamespace(core::Config* config, const std::string& ns, const std::string& queue) {
  auto cq = std::find_if(config->cluster_queues.begin(), config->cluster_queues.end(),
                         [&](const core::ClusterQueueSpec& c) { return c.name == queue; });
  if (cq == config->cluster_queues.end() || !internal::InDialectTree(*config, cq->cohort)) return false;
  if (internal::HasLocalQueue(config->local_queues, ns, queue)) return false;
  core::LocalQueueSpec lq;
  lq.ns = ns;
  lq.name = queue;
  lq.cluster_queue = queue;
  lq.pos = cq->pos;
  config->local_queues.push_back(std::move(lq));
  return true;
}

Result<std::map<std::string, std::map<std::string, std::string>>> HyperNodeLabels(
    const std::vector<HyperNodeSpec>& hypernodes,
    const std::map<std::string, std::map<std::string, std::string>>& nodes) {
  auto fail = [](const HyperNodeSpec& h, std::string msg) {
    Status s = InvalidArgument(std::move(msg));
    s.WithPos(h.pos).WithField("spec.members");
    return s;
  };
  std::map<std::string, const HyperNodeSpec*> by_name;
  for (const HyperNodeSpec& h : hypernodes) {
    if (!by_name.emplace(h.name, &h).second) return fail(h, "duplicate HyperNode \"" + h.name + "\"");
  }
  auto matches = [](const HyperNodeMember& m, const std::string& name) {
    if (!m.exact.empty()) return m.exact == name;
    if (!m.regex.empty()) return std::regex_search(name, std::regex(m.regex, std::regex::ECMAScript));
    return false;
  };
  // Direct children of each HyperNode, and its parent per child.
  std::map<std::string, std::vector<const HyperNodeSpec*>> child_hns;
  std::map<std::string, std::set<std::string>> direct_nodes;
  std::map<std::string, std::string> parent_of;  // hypernode -> parent
  for (const HyperNodeSpec& h : hypernodes) {
    for (const HyperNodeMember& m : h.members) {
      if (m.type == HyperNodeMember::Type::kNode) {
        for (const auto& [node, labels] : nodes) {
          bool ok = m.labels ? m.labels->Matches(labels) : matches(m, node);
          if (ok) direct_nodes[h.name].insert(node);
        }
        continue;
      }
      bool any = false;
      for (const HyperNodeSpec& c : hypernodes) {
        if (!matches(m, c.name)) continue;
        any = true;
        if (c.tier >= h.tier) {
          return fail(h, fmt::format("member HyperNode {} has tier {}, not below this HyperNode's tier {}",
                                     c.name, c.tier, h.tier));
        }
        auto [it, inserted] = parent_of.emplace(c.name, h.name);
        if (!inserted && it->second != h.name) {
          return fail(h,
                      fmt::format("HyperNode {} is a member of both {} and {}", c.name, it->second, h.name));
        }
        child_hns[h.name].push_back(&c);
      }
      if (!any && !m.exact.empty()) {
        return fail(h, fmt::format("member HyperNode \"{}\" is not defined", m.exact));
      }
    }
  }
  // All nodes below each HyperNode (tiers strictly decrease, so no cycles).
  std::map<std::string, std::set<std::string>> all_nodes;
  std::function<const std::set<std::string>&(const HyperNodeSpec&)> collect =
      [&](const HyperNodeSpec& h) -> const std::set<std::string>& {
    auto it = all_nodes.find(h.name);
    if (it != all_nodes.end()) return it->second;
    std::set<std::string> acc = direct_nodes[h.name];
    for (const HyperNodeSpec* c : child_hns[h.name]) {
      const std::set<std::string>& sub = collect(*c);
      acc.insert(sub.begin(), sub.end());
    }
    return all_nodes[h.name] = std::move(acc);
  };
  std::map<std::string, std::map<std::string, std::string>> out;
  for (const HyperNodeSpec& h : hypernodes) {
    std::string label = kHyperNodeTierLabelPrefix + std::to_string(h.tier);
    for (const std::string& node : collect(h)) {
      auto [it, inserted] = out[node].emplace(label, h.name);
      if (!inserted && it->second != h.name) {
        return fail(h, fmt::format("node {} is in two HyperNodes of tier {}: {} and {}", node, h.tier,
                                   it->second, h.name));
      }
    }
  }
  return out;
}

}  // namespace artel::manifest
