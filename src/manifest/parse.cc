// ParseInto: YAML documents -> core::Config, one object at a time.
//
// Each document is dispatched on (apiVersion, kind). The readers below check
// the allowed fields at every level (so typos are caught with a hint), read
// typed values through yaml::Node, then run the per-object rules of checks.h
// with a PosFn that maps field paths back to YAML positions.

#include <fmt/format.h>

#include <array>
#include <string_view>

#include "manifest/checks.h"
#include "manifest/dialects.h"
#include "manifest/manifest.h"
#include "manifest/yaml_util.h"

namespace artel::manifest {
namespace {

using yaml::kOptional;
using yaml::kRequired;
using yaml::Node;

// Which Kueue API version a document was written against. v1alpha1 only
// serves Cohort and Topology and spells fields like v1beta1.
enum class Dialect { kV1alpha1, kV1beta1, kV1beta2, kCoreV1 };

struct Object {
  Node root;
  Dialect dialect;
  std::string kind;
};

// ---- metadata ----

struct Metadata {
  std::string name;
  std::string ns;
  std::map<std::string, std::string> labels;
};

Status ReadMetadata(const Object& obj, bool namespaced, Metadata* out) {
  Node meta = obj.root["metadata"];
  if (!meta.present()) return obj.root.MissingError("metadata");
  // Server-populated fields are accepted so that `kubectl get -o yaml`
  // output can be fed back in; they carry no meaning for Artel.
  ARTEL_RETURN_IF_ERROR(
      meta.CheckKeys({"name", "namespace", "labels", "annotations", "uid", "resourceVersion",
                      "creationTimestamp", "generation", "managedFields", "finalizers", "ownerReferences",
                      "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink", "generateName"}));
  ARTEL_RETURN_IF_ERROR(meta.ReadString("name", &out->name, kRequired));
  if (out->name.empty()) return meta["name"].Error("must not be empty");
  ARTEL_RETURN_IF_ERROR(meta.ReadString("namespace", &out->ns, namespaced ? kRequired : kOptional));
  ARTEL_RETURN_IF_ERROR(meta.ReadStringMap("labels", &out->labels));
  std::map<std::string, std::string> annotations;
  ARTEL_RETURN_IF_ERROR(meta.ReadStringMap("annotations", &annotations));
  return Status::Ok();
}

// Top-level fields every object may carry. `status` is ignored: it is
// written by controllers, and accepting it lets exported objects round-trip.
Status CheckTopLevel(const Object& obj, bool has_spec) {
  if (has_spec) return obj.root.CheckKeys({"apiVersion", "kind", "metadata", "spec", "status"});
  return obj.root.CheckKeys({"apiVersion", "kind", "metadata", "status"});
}

// ---- shared pieces ----

Status ReadFairWeight(const Node& spec, core::Amount* weight) {
  Node fs = spec["fairSharing"];
  if (!fs.present()) return Status::Ok();
  ARTEL_RETURN_IF_ERROR(fs.CheckKeys({"weight"}));
  return fs.ReadQuantity("weight", weight);
}

Status ReadStopPolicy(const Node& spec, core::StopPolicy* out) {
  return spec.ReadEnum<core::StopPolicy>("stopPolicy",
                                         {{"None", core::StopPolicy::kNone},
                                          {"Hold", core::StopPolicy::kHold},
                                          {"HoldAndDrain", core::StopPolicy::kHoldAndDrain}},
                                         out);
}

// Artel's time limits (docs/semantics.md §11): `artel.dev/timeLimits` in a
// ClusterQueue's spec. Every field is a whole number of seconds, as Kueue's
// maximumExecutionTimeSeconds.
constexpr std::string_view kTimeLimitsField = "artel.dev/timeLimits";

Status ReadSeconds(const Node& map, std::string_view key, int64_t min, std::optional<core::Time>* out) {
  Node n = map[key];
  if (!n.present()) return Status::Ok();
  Result<int64_t> v = n.AsInt(min, int64_t{10} * 365 * 24 * 3600);
  if (!v.ok()) return v.status();
  *out = *v * 1000;
  return Status::Ok();
}

Status ReadQueueTimeLimits(const Node& spec, core::ClusterQueueSpec* cq) {
  Node tl = spec[kTimeLimitsField];
  if (!tl.present()) return Status::Ok();
  ARTEL_RETURN_IF_ERROR(tl.CheckKeys(
      {"defaultMaximumExecutionTimeSeconds", "maximumExecutionTimeSecondsCeiling", "minRuntimeSeconds",
       "reclaimMinRuntimeSeconds", "preemptionDelaySeconds", "reserveAfterSeconds", "reservePriority",
       "defaultRuntimeEstimateSeconds", "backfillWindowSeconds"}));
  ARTEL_RETURN_IF_ERROR(ReadSeconds(tl, "defaultMaximumExecutionTimeSeconds", 1, &cq->default_max_runtime));
  ARTEL_RETURN_IF_ERROR(ReadSeconds(tl, "maximumExecutionTimeSecondsCeiling", 1, &cq->max_runtime_ceiling));
  ARTEL_RETURN_IF_ERROR(ReadSeconds(tl, "minRuntimeSeconds", 0, &cq->min_runtime));
  ARTEL_RETURN_IF_ERROR(ReadSeconds(tl, "reclaimMinRuntimeSeconds", 0, &cq->reclaim_min_runtime));
  ARTEL_RETURN_IF_ERROR(ReadSeconds(tl, "preemptionDelaySeconds", 0, &cq->preemption_delay));
  ARTEL_RETURN_IF_ERROR(ReadSeconds(tl, "reserveAfterSeconds", 0, &cq->reserve_after));
  ARTEL_RETURN_IF_ERROR(ReadSeconds(tl, "defaultRuntimeEstimateSeconds", 1, &cq->default_runtime_estimate));
  ARTEL_RETURN_IF_ERROR(ReadSeconds(tl, "backfillWindowSeconds", 1, &cq->backfill_window));
  if (tl["reservePriority"].present()) {
    int32_t p = 0;
    ARTEL_RETURN_IF_ERROR(tl.ReadInt32("reservePriority", &p));
    cq->reserve_priority = p;
  }
  if (cq->backfill_window && !cq->reserve_after && !cq->reserve_priority) {
    return tl["backfillWindowSeconds"].Error(
        "backfillWindowSeconds bounds how far ahead a reservation may start, but this queue makes none: set "
        "reserveAfterSeconds or reservePriority too");
  }
  return Status::Ok();
}

// `artel.dev/timeLimits` on a WorkloadPriorityClass: its minimum runtimes.
Status ReadClassTimeLimits(const Node& root, core::PriorityClassSpec* pc) {
  Node tl = root[kTimeLimitsField];
  if (!tl.present()) return Status::Ok();
  ARTEL_RETURN_IF_ERROR(tl.CheckKeys({"minRuntimeSeconds", "reclaimMinRuntimeSeconds"}));
  ARTEL_RETURN_IF_ERROR(ReadSeconds(tl, "minRuntimeSeconds", 0, &pc->min_runtime));
  ARTEL_RETURN_IF_ERROR(ReadSeconds(tl, "reclaimMinRuntimeSeconds", 0, &pc->reclaim_min_runtime));
  return Status::Ok();
}

Status ReadResourceGroups(const Node& spec, std::vector<core::ResourceGroupSpec>* out) {
  Node groups = spec["resourceGroups"];
  if (!groups.present()) return Status::Ok();
  ARTEL_RETURN_IF_ERROR(groups.ExpectList());
  for (const Node& g : groups.Items()) {
    ARTEL_RETURN_IF_ERROR(g.CheckKeys({"coveredResources", "flavors"}));
    core::ResourceGroupSpec rg;
    ARTEL_RETURN_IF_ERROR(g.ReadStringList("coveredResources", &rg.covered_resources, kRequired));
    Node flavors = g["flavors"];
    if (!flavors.present()) return g.MissingError("flavors");
    ARTEL_RETURN_IF_ERROR(flavors.ExpectList());
    for (const Node& f : flavors.Items()) {
      ARTEL_RETURN_IF_ERROR(f.CheckKeys({"name", "resources"}));
      core::FlavorQuotasSpec fq;
      ARTEL_RETURN_IF_ERROR(f.ReadString("name", &fq.flavor, kRequired));
      Node resources = f["resources"];
      if (!resources.present()) return f.MissingError("resources");
      ARTEL_RETURN_IF_ERROR(resources.ExpectList());
      for (const Node& r : resources.Items()) {
        ARTEL_RETURN_IF_ERROR(r.CheckKeys({"name", "nominalQuota", "borrowingLimit", "lendingLimit"}));
        core::ResourceQuotaSpec q;
        ARTEL_RETURN_IF_ERROR(r.ReadString("name", &q.name, kRequired));
        ARTEL_RETURN_IF_ERROR(r.ReadQuantity("nominalQuota", &q.nominal, kRequired));
        core::Amount limit = 0;
        if (r["borrowingLimit"].present()) {
          ARTEL_RETURN_IF_ERROR(r.ReadQuantity("borrowingLimit", &limit));
          q.borrowing_limit = limit;
        }
        if (r["lendingLimit"].present()) {
          ARTEL_RETURN_IF_ERROR(r.ReadQuantity("lendingLimit", &limit));
          q.lending_limit = limit;
        }
        fq.resources.push_back(std::move(q));
      }
      rg.flavors.push_back(std::move(fq));
    }
    out->push_back(std::move(rg));
  }
  return Status::Ok();
}

Status ReadLabelSelector(const Node& sel, core::LabelSelector* out) {
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
    if (set_op && req.values.empty()) {
      return e["values"].Error("operator " + req.op + " requires a non-empty values list");
    }
    if (!set_op && !req.values.empty()) {
      return e["values"].Error("operator " + req.op + " requires values to be empty");
    }
    out->match_expressions.push_back(std::move(req));
  }
  return Status::Ok();
}

Status ReadTaints(const Node& list, std::vector<core::Taint>* out) {
  ARTEL_RETURN_IF_ERROR(list.ExpectList());
  for (const Node& t : list.Items()) {
    ARTEL_RETURN_IF_ERROR(t.CheckKeys({"key", "value", "effect", "timeAdded"}));
    core::Taint taint;
    ARTEL_RETURN_IF_ERROR(t.ReadString("key", &taint.key, kRequired));
    ARTEL_RETURN_IF_ERROR(t.ReadString("value", &taint.value));
    ARTEL_RETURN_IF_ERROR(t.ReadEnum<std::string>(
        "effect",
        {{"NoSchedule", "NoSchedule"}, {"PreferNoSchedule", "PreferNoSchedule"}, {"NoExecute", "NoExecute"}},
        &taint.effect, kRequired));
    out->push_back(std::move(taint));
  }
  return Status::Ok();
}

Status ReadTolerations(const Node& list, std::vector<core::Toleration>* out) {
  ARTEL_RETURN_IF_ERROR(list.ExpectList());
  for (const Node& t : list.Items()) {
    ARTEL_RETURN_IF_ERROR(t.CheckKeys({"key", "operator", "value", "effect", "tolerationSeconds"}));
    core::Toleration tol;
    ARTEL_RETURN_IF_ERROR(t.ReadString("key", &tol.key));
    ARTEL_RETURN_IF_ERROR(
        t.ReadEnum<std::string>("operator", {{"Equal", "Equal"}, {"Exists", "Exists"}}, &tol.op));
    ARTEL_RETURN_IF_ERROR(t.ReadString("value", &tol.value));
    ARTEL_RETURN_IF_ERROR(t.ReadEnum<std::string>(
        "effect",
        {{"NoSchedule", "NoSchedule"}, {"PreferNoSchedule", "PreferNoSchedule"}, {"NoExecute", "NoExecute"}},
        &tol.effect));
    if (t["tolerationSeconds"].present()) {
      Result<int64_t> secs = t["tolerationSeconds"].AsInt(INT64_MIN, INT64_MAX);
      if (!secs.ok()) return secs.status();
    }
    if (tol.op == "Exists" && !tol.value.empty()) {
      return t["value"].Error("value must be empty when operator is Exists");
    }
    if (tol.key.empty() && tol.op != "Exists") {
      return t["operator"].Error("operator must be Exists when key is empty");
    }
    out->push_back(std::move(tol));
  }
  return Status::Ok();
}

// Runs a per-object check with exact positions and the object's own path
// (non-empty only inside a `v1 List`) as field prefix.
template <typename Spec, typename CheckFn>
Status RunCheck(const Object& obj, const Spec& spec, CheckFn check) {
  Status s = check(spec, [&](const std::string& field) { return obj.root.Lookup(field).Pos(); });
  if (!s.ok() && !obj.root.path().empty()) s.WithField(yaml::JoinPath(obj.root.path(), s.field()));
  return s;
}

SourcePos ObjectPos(const Object& obj) { return obj.root.Pos(); }

// ---- kinds ----

Status ParseResourceFlavor(const Object& obj, core::Config* out) {
  ARTEL_RETURN_IF_ERROR(CheckTopLevel(obj, true));
  Metadata meta;
  ARTEL_RETURN_IF_ERROR(ReadMetadata(obj, false, &meta));
  core::ResourceFlavorSpec rf;
  rf.name = meta.name;
  rf.pos = ObjectPos(obj);
  Node spec = obj.root["spec"];
  if (spec.present()) {
    ARTEL_RETURN_IF_ERROR(spec.CheckKeys({"nodeLabels", "nodeTaints", "tolerations", "topologyName"}));
    ARTEL_RETURN_IF_ERROR(spec.ReadStringMap("nodeLabels", &rf.node_labels));
    if (spec["nodeTaints"].present()) ARTEL_RETURN_IF_ERROR(ReadTaints(spec["nodeTaints"], &rf.node_taints));
    if (spec["tolerations"].present())
      ARTEL_RETURN_IF_ERROR(ReadTolerations(spec["tolerations"], &rf.tolerations));
    ARTEL_RETURN_IF_ERROR(spec.ReadString("topologyName", &rf.topology_name));
  }
  ARTEL_RETURN_IF_ERROR(RunCheck(obj, rf, internal::CheckFlavor));
  out->flavors.push_back(std::move(rf));
  return Status::Ok();
}

Status ReadPreemption(const Node& p, core::PreemptionSpec* out) {
  ARTEL_RETURN_IF_ERROR(p.CheckKeys({"withinClusterQueue", "reclaimWithinCohort", "borrowWithinCohort"}));
  using W = core::WithinClusterQueuePolicy;
  ARTEL_RETURN_IF_ERROR(p.ReadEnum<W>("withinClusterQueue",
                                      {{"Never", W::kNever},
                                       {"LowerPriority", W::kLowerPriority},
                                       {"LowerOrNewerEqualPriority", W::kLowerOrNewerEqualPriority}},
                                      &out->within_cluster_queue));
  using R = core::ReclaimWithinCohortPolicy;
  ARTEL_RETURN_IF_ERROR(p.ReadEnum<R>(
      "reclaimWithinCohort", {{"Never", R::kNever}, {"LowerPriority", R::kLowerPriority}, {"Any", R::kAny}},
      &out->reclaim_within_cohort));
  Node bwc = p["borrowWithinCohort"];
  if (bwc.present()) {
    ARTEL_RETURN_IF_ERROR(bwc.CheckKeys({"policy", "maxPriorityThreshold"}));
    using B = core::BorrowWithinCohortPolicy;
    ARTEL_RETURN_IF_ERROR(bwc.ReadEnum<B>(
        "policy", {{"Never", B::kNever}, {"LowerPriority", B::kLowerPriority}}, &out->borrow_within_cohort));
    if (bwc["maxPriorityThreshold"].present()) {
      int32_t threshold = 0;
      ARTEL_RETURN_IF_ERROR(bwc.ReadInt32("maxPriorityThreshold", &threshold));
      out->max_priority_threshold = threshold;
    }
  }
  return Status::Ok();
}

Status ReadFungibility(const Node& f, Dialect dialect, core::FlavorFungibilitySpec* out) {
  ARTEL_RETURN_IF_ERROR(f.CheckKeys({"whenCanBorrow", "whenCanPreempt", "preference"}));
  using P = core::FungibilityPolicy;
  if (dialect == Dialect::kV1beta2) {
    ARTEL_RETURN_IF_ERROR(f.ReadEnum<P>(
        "whenCanBorrow", {{"MayStopSearch", P::kMayStopSearch}, {"TryNextFlavor", P::kTryNextFlavor}},
        &out->when_can_borrow));
    ARTEL_RETURN_IF_ERROR(f.ReadEnum<P>(
        "whenCanPreempt", {{"MayStopSearch", P::kMayStopSearch}, {"TryNextFlavor", P::kTryNextFlavor}},
        &out->when_can_preempt));
  } else {
    // v1beta1 spelled "stop here" as Borrow / Preempt; later v1beta1
    // releases also accept MayStopSearch, which v1beta2 kept.
    ARTEL_RETURN_IF_ERROR(f.ReadEnum<P>("whenCanBorrow",
                                        {{"Borrow", P::kMayStopSearch},
                                         {"MayStopSearch", P::kMayStopSearch},
                                         {"TryNextFlavor", P::kTryNextFlavor}},
                                        &out->when_can_borrow));
    ARTEL_RETURN_IF_ERROR(f.ReadEnum<P>("whenCanPreempt",
                                        {{"Preempt", P::kMayStopSearch},
                                         {"MayStopSearch", P::kMayStopSearch},
                                         {"TryNextFlavor", P::kTryNextFlavor}},
                                        &out->when_can_preempt));
  }
  using Pref = core::FungibilityPreference;
  return f.ReadEnum<Pref>("preference",
                          {{"BorrowingOverPreemption", Pref::kBorrowingOverPreemption},
                           {"PreemptionOverBorrowing", Pref::kPreemptionOverBorrowing}},
                          &out->preference);
}

Status ParseClusterQueue(const Object& obj, core::Config* out) {
  ARTEL_RETURN_IF_ERROR(CheckTopLevel(obj, true));
  Metadata meta;
  ARTEL_RETURN_IF_ERROR(ReadMetadata(obj, false, &meta));
  core::ClusterQueueSpec cq;
  cq.name = meta.name;
  cq.pos = ObjectPos(obj);
  Node spec = obj.root["spec"];
  if (spec.present()) {
    const char* cohort_field = obj.dialect == Dialect::kV1beta2 ? "cohortName" : "cohort";
    // admissionChecks, admissionChecksStrategy and admissionScope are
    // accepted for compatibility and ignored (see docs/manifests.md).
    ARTEL_RETURN_IF_ERROR(
        spec.CheckKeys({cohort_field, "resourceGroups", "queueingStrategy", "namespaceSelector",
                        "flavorFungibility", "preemption", "admissionChecks", "admissionChecksStrategy",
                        "admissionScope", "stopPolicy", "fairSharing", kTimeLimitsField}));
    ARTEL_RETURN_IF_ERROR(spec.ReadString(cohort_field, &cq.cohort));
    ARTEL_RETURN_IF_ERROR(ReadResourceGroups(spec, &cq.resource_groups));
    using Q = core::QueueingStrategy;
    ARTEL_RETURN_IF_ERROR(spec.ReadEnum<Q>(
        "queueingStrategy", {{"BestEffortFIFO", Q::kBestEffortFIFO}, {"StrictFIFO", Q::kStrictFIFO}},
        &cq.queueing_strategy));
    if (spec["namespaceSelector"].present()) {
      core::LabelSelector sel;
      ARTEL_RETURN_IF_ERROR(ReadLabelSelector(spec["namespaceSelector"], &sel));
      cq.namespace_selector = std::move(sel);
    }
    if (spec["flavorFungibility"].present()) {
      ARTEL_RETURN_IF_ERROR(ReadFungibility(spec["flavorFungibility"], obj.dialect, &cq.flavor_fungibility));
    }
    if (spec["preemption"].present())
      ARTEL_RETURN_IF_ERROR(ReadPreemption(spec["preemption"], &cq.preemption));
    if (spec["admissionChecks"].present()) ARTEL_RETURN_IF_ERROR(spec["admissionChecks"].ExpectList());
    if (spec["admissionChecksStrategy"].present())
      ARTEL_RETURN_IF_ERROR(spec["admissionChecksStrategy"].ExpectMap());
    if (spec["admissionScope"].present()) ARTEL_RETURN_IF_ERROR(spec["admissionScope"].ExpectMap());
    ARTEL_RETURN_IF_ERROR(ReadStopPolicy(spec, &cq.stop_policy));
    ARTEL_RETURN_IF_ERROR(ReadFairWeight(spec, &cq.fair_weight));
    ARTEL_RETURN_IF_ERROR(ReadQueueTimeLimits(spec, &cq));
  }
  Status s = RunCheck(obj, cq, internal::CheckClusterQueue);
  if (!s.ok() && s.field().ends_with("spec.cohortName") && obj.dialect != Dialect::kV1beta2) {
    s.WithField(s.field().substr(0, s.field().size() - 4));  // the v1beta1 spelling, spec.cohort
    s.WithPos(spec["cohort"].Pos());
  }
  ARTEL_RETURN_IF_ERROR(s);
  out->cluster_queues.push_back(std::move(cq));
  return Status::Ok();
}

Status ParseCohort(const Object& obj, core::Config* out) {
  ARTEL_RETURN_IF_ERROR(CheckTopLevel(obj, true));
  Metadata meta;
  ARTEL_RETURN_IF_ERROR(ReadMetadata(obj, false, &meta));
  core::CohortSpec cohort;
  cohort.name = meta.name;
  cohort.pos = ObjectPos(obj);
  Node spec = obj.root["spec"];
  if (spec.present()) {
    const char* parent_field = obj.dialect == Dialect::kV1beta2 ? "parentName" : "parent";
    ARTEL_RETURN_IF_ERROR(spec.CheckKeys({parent_field, "resourceGroups", "fairSharing"}));
    ARTEL_RETURN_IF_ERROR(spec.ReadString(parent_field, &cohort.parent));
    ARTEL_RETURN_IF_ERROR(ReadResourceGroups(spec, &cohort.resource_groups));
    ARTEL_RETURN_IF_ERROR(ReadFairWeight(spec, &cohort.fair_weight));
  }
  ARTEL_RETURN_IF_ERROR(RunCheck(obj, cohort, internal::CheckCohort));
  out->cohorts.push_back(std::move(cohort));
  return Status::Ok();
}

Status ParseLocalQueue(const Object& obj, core::Config* out) {
  ARTEL_RETURN_IF_ERROR(CheckTopLevel(obj, true));
  Metadata meta;
  ARTEL_RETURN_IF_ERROR(ReadMetadata(obj, true, &meta));
  core::LocalQueueSpec lq;
  lq.name = meta.name;
  lq.ns = meta.ns;
  lq.pos = ObjectPos(obj);
  Node spec = obj.root["spec"];
  if (!spec.present()) return obj.root.MissingError("spec");
  ARTEL_RETURN_IF_ERROR(spec.CheckKeys({"clusterQueue", "stopPolicy", "fairSharing"}));
  ARTEL_RETURN_IF_ERROR(spec.ReadString("clusterQueue", &lq.cluster_queue, kRequired));
  ARTEL_RETURN_IF_ERROR(ReadStopPolicy(spec, &lq.stop_policy));
  ARTEL_RETURN_IF_ERROR(ReadFairWeight(spec, &lq.fair_weight));
  ARTEL_RETURN_IF_ERROR(RunCheck(obj, lq, internal::CheckLocalQueue));
  out->local_queues.push_back(std::move(lq));
  return Status::Ok();
}

Status ParseWorkloadPriorityClass(const Object& obj, core::Config* out) {
  ARTEL_RETURN_IF_ERROR(
      obj.root.CheckKeys({"apiVersion", "kind", "metadata", "value", "description", kTimeLimitsField}));
  Metadata meta;
  ARTEL_RETURN_IF_ERROR(ReadMetadata(obj, false, &meta));
  core::PriorityClassSpec pc;
  pc.name = meta.name;
  pc.pos = ObjectPos(obj);
  ARTEL_RETURN_IF_ERROR(obj.root.ReadInt32("value", &pc.value, kRequired));
  ARTEL_RETURN_IF_ERROR(obj.root.ReadString("description", &pc.description));
  ARTEL_RETURN_IF_ERROR(ReadClassTimeLimits(obj.root, &pc));
  ARTEL_RETURN_IF_ERROR(RunCheck(obj, pc, internal::CheckPriorityClass));
  out->priority_classes.push_back(std::move(pc));
  return Status::Ok();
}

Status ParseTopology(const Object& obj, core::Config* out) {
  ARTEL_RETURN_IF_ERROR(CheckTopLevel(obj, true));
  Metadata meta;
  ARTEL_RETURN_IF_ERROR(ReadMetadata(obj, false, &meta));
  core::TopologySpec topo;
  topo.name = meta.name;
  topo.pos = ObjectPos(obj);
  Node spec = obj.root["spec"];
  if (!spec.present()) return obj.root.MissingError("spec");
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
  ARTEL_RETURN_IF_ERROR(RunCheck(obj, topo, internal::CheckTopology));
  out->topologies.push_back(std::move(topo));
  return Status::Ok();
}

Status ParseNamespace(const Object& obj, core::Config* out) {
  ARTEL_RETURN_IF_ERROR(CheckTopLevel(obj, true));  // spec.finalizers is ignored
  Metadata meta;
  ARTEL_RETURN_IF_ERROR(ReadMetadata(obj, false, &meta));
  core::NamespaceSpec ns;
  ns.name = meta.name;
  ns.labels = meta.labels;
  ns.pos = ObjectPos(obj);
  ARTEL_RETURN_IF_ERROR(RunCheck(obj, ns, internal::CheckNamespace));
  out->namespaces.push_back(std::move(ns));
  return Status::Ok();
}

Status ParseResourceQuota(const Object& obj, core::Config* out) {
  ARTEL_RETURN_IF_ERROR(CheckTopLevel(obj, true));
  Metadata meta;
  ARTEL_RETURN_IF_ERROR(ReadMetadata(obj, true, &meta));
  core::ResourceQuotaObjSpec rq;
  rq.name = meta.name;
  rq.ns = meta.ns;
  rq.pos = ObjectPos(obj);
  Node spec = obj.root["spec"];
  if (spec.present()) {
    ARTEL_RETURN_IF_ERROR(spec.CheckKeys({"hard", "scopes", "scopeSelector"}));
    if (spec["scopes"].present())
      return spec["scopes"].Error("ResourceQuota scopes are not supported by Artel");
    if (spec["scopeSelector"].present()) {
      return spec["scopeSelector"].Error("ResourceQuota scopeSelector is not supported by Artel");
    }
    Node hard = spec["hard"];
    if (hard.present()) {
      ARTEL_RETURN_IF_ERROR(hard.ExpectMap());
      for (const yaml::MapEntry& e : hard.Entries()) {
        Result<core::Amount> q = e.value.AsQuantity();
        if (!q.ok()) return q.status();
        rq.hard[e.key] = *q;
      }
    }
  }
  ARTEL_RETURN_IF_ERROR(RunCheck(obj, rq, internal::CheckResourceQuota));
  out->resource_quotas.push_back(std::move(rq));
  return Status::Ok();
}

// Accepted so that a CQ's admissionChecks can be exported together with
// their AdmissionCheck objects; Artel runs no admission checks.
Status IgnoreObject(const Object& obj, core::Config*) {
  Metadata meta;
  return ReadMetadata(obj, false, &meta);
}

// `v1 List` is read by ParseObject itself (its items may be of any dialect);
// this entry only names the kind in the table.
Status ParseList(const Object& obj, core::Config*) {
  return obj.root["kind"].Error("internal error: List reached the kind table");
}

using ParseFn = Status (*)(const Object&, core::Config*);

struct KindEntry {
  std::string_view kind;
  ParseFn parse;
  std::array<Dialect, 3> dialects;  // padded with repeats
};

constexpr Dialect A1 = Dialect::kV1alpha1, B1 = Dialect::kV1beta1, B2 = Dialect::kV1beta2,
                  V1 = Dialect::kCoreV1;

const KindEntry kKinds[] = {
    {"ResourceFlavor", ParseResourceFlavor, {B1, B2, B2}},
    {"ClusterQueue", ParseClusterQueue, {B1, B2, B2}},
    {"Cohort", ParseCohort, {A1, B1, B2}},
    {"LocalQueue", ParseLocalQueue, {B1, B2, B2}},
    {"WorkloadPriorityClass", ParseWorkloadPriorityClass, {B1, B2, B2}},
    {"Topology", ParseTopology, {A1, B1, B2}},
    {"AdmissionCheck", IgnoreObject, {B1, B2, B2}},
    {"Namespace", ParseNamespace, {V1, V1, V1}},
    {"ResourceQuota", ParseResourceQuota, {V1, V1, V1}},
    {"List", ParseList, {V1, V1, V1}},
};

std::string_view DialectName(Dialect d) {
  switch (d) {
    case Dialect::kV1alpha1: return "kueue.x-k8s.io/v1alpha1";
    case Dialect::kV1beta1: return "kueue.x-k8s.io/v1beta1";
    case Dialect::kV1beta2: return "kueue.x-k8s.io/v1beta2";
    case Dialect::kCoreV1: return "v1";
  }
  return "";
}

bool ParseDialect(std::string_view api_version, Dialect* out) {
  for (Dialect d : {A1, B1, B2, V1}) {
    if (api_version == DialectName(d)) {
      *out = d;
      return true;
    }
  }
  return false;
}

// Volcano and KAI queues are collected in *dialect_docs, for
// internal::FinishDialects once every document is read.
Status ParseObject(const Node& root, core::Config* out, internal::DialectDocs* dialect_docs) {
  ARTEL_RETURN_IF_ERROR(root.ExpectMap());
  std::string api_version, kind;
  ARTEL_RETURN_IF_ERROR(root.ReadString("apiVersion", &api_version, kRequired));
  ARTEL_RETURN_IF_ERROR(root.ReadString("kind", &kind, kRequired));
  if (api_version == "v1" && kind == "List") {
    ARTEL_RETURN_IF_ERROR(root.CheckKeys({"apiVersion", "kind", "metadata", "items"}));
    Node items = root["items"];
    if (!items.present()) return Status::Ok();
    ARTEL_RETURN_IF_ERROR(items.ExpectList());
    for (const Node& item : items.Items()) ARTEL_RETURN_IF_ERROR(ParseObject(item, out, dialect_docs));
    return Status::Ok();
  }
  if (kind == "Scenario") {
    return root["kind"].Error("a Scenario is a test, not a manifest; run it with `artel test`");
  }
  if (internal::IsDialectApiVersion(api_version)) {
    return internal::ParseDialectObject(root, api_version, kind, out, dialect_docs);
  }
  if ((api_version == "batch/v1" && kind == "Job") || (api_version == "v1" && kind == "Pod") ||
      (api_version.starts_with("kueue.x-k8s.io/") && kind == "Workload")) {
    return root["kind"].Error(fmt::format(
        "a {} ({}) is a workload, not configuration; submit it with `artel apply -f` (or a scenario's "
        "`submit: - manifest:` entry)",
        kind, api_version));
  }
  const KindEntry* entry = nullptr;
  std::vector<std::string_view> kind_names;
  for (const KindEntry& k : kKinds) {
    kind_names.push_back(k.kind);
    if (k.kind == kind) entry = &k;
  }
  if (entry == nullptr) {
    std::string msg = fmt::format("unsupported kind \"{}\" (apiVersion {})", kind, api_version);
    std::string guess = yaml::SuggestField(kind, kind_names);
    if (!guess.empty()) msg += "; did you mean " + guess + "?";
    msg += fmt::format("; supported kinds: {}", fmt::join(kind_names, ", "));
    return root["kind"].Error(std::move(msg));
  }
  Dialect dialect;
  bool known = ParseDialect(api_version, &dialect);
  bool served =
      known && std::find(entry->dialects.begin(), entry->dialects.end(), dialect) != entry->dialects.end();
  if (!served) {
    std::vector<std::string_view> versions;
    for (Dialect d : entry->dialects) {
      if (std::find(versions.begin(), versions.end(), DialectName(d)) == versions.end()) {
        versions.push_back(DialectName(d));
      }
    }
    return root["apiVersion"].Error(fmt::format("unsupported apiVersion \"{}\" for kind {}; use {}",
                                                api_version, kind, fmt::join(versions, " or ")));
  }
  return entry->parse(Object{root, dialect, kind}, out);
}

// One object of SplitObjects: a document or a List item, `depth` Lists deep.
Status CollectObject(const Node& root, int depth, std::vector<ManifestObject>* out) {
  ARTEL_RETURN_IF_ERROR(root.ExpectMap());
  ManifestObject o;
  ARTEL_RETURN_IF_ERROR(root.ReadString("apiVersion", &o.api_version, kRequired));
  ARTEL_RETURN_IF_ERROR(root.ReadString("kind", &o.kind, kRequired));
  if (o.api_version == "v1" && o.kind == "List") {  // as ParseObject reads it
    if (depth >= 8) return root["items"].Error("Lists nested more than 8 deep are not supported");
    ARTEL_RETURN_IF_ERROR(root.CheckKeys({"apiVersion", "kind", "metadata", "items"}));
    Node items = root["items"];
    if (!items.present()) return Status::Ok();
    ARTEL_RETURN_IF_ERROR(items.ExpectList());
    for (const Node& item : items.Items()) ARTEL_RETURN_IF_ERROR(CollectObject(item, depth + 1, out));
    return Status::Ok();
  }
  Node meta = root["metadata"];
  if (!meta.present()) return root.MissingError("metadata");
  ARTEL_RETURN_IF_ERROR(meta.ExpectMap());
  ARTEL_RETURN_IF_ERROR(meta.ReadString("name", &o.name, kRequired));
  if (o.name.empty()) return meta["name"].Error("must not be empty");
  o.namespaced = IsNamespacedKind(o.kind);
  if (o.namespaced) {
    ARTEL_RETURN_IF_ERROR(meta.ReadString("namespace", &o.ns, kRequired));
    if (o.ns.empty()) return meta["namespace"].Error("must not be empty");
  }
  o.pos = root.Pos();
  o.field = root.path();
  YAML::Emitter em;
  em << root.yaml();
  if (!em.good()) return root.Error("cannot be written back as YAML: " + em.GetLastError());
  o.text = std::string(em.c_str(), em.size()) + "\n";
  o.node = std::make_shared<const Node>(root);
  out->push_back(std::move(o));
  return Status::Ok();
}

}  // namespace

bool IsNamespacedKind(std::string_view kind) { return kind == "LocalQueue" || kind == "ResourceQuota"; }

Result<std::vector<ManifestObject>> SplitObjects(std::string_view text, const std::string& source) {
  Result<std::vector<Node>> docs = yaml::ParseDocuments(text, source);
  if (!docs.ok()) return docs.status();
  std::vector<ManifestObject> out;
  for (const Node& doc : *docs) {
    if (!doc.present()) continue;  // empty document
    ARTEL_RETURN_IF_ERROR(CollectObject(doc, 0, &out));
  }
  return out;
}

Status ParseObjects(const std::vector<const ManifestObject*>& objects, core::Config* config) {
  core::Config parsed;
  internal::DialectDocs dialect_docs;
  for (const ManifestObject* o : objects) {
    if (o == nullptr || !o->node) continue;
    ARTEL_RETURN_IF_ERROR(ParseObject(*o->node, &parsed, &dialect_docs));
  }
  ARTEL_RETURN_IF_ERROR(internal::FinishDialects(&dialect_docs, config, &parsed, nullptr));
  internal::AppendConfig(std::move(parsed), config);
  return Status::Ok();
}

Status ParseInto(std::string_view text, const std::string& source, core::Config* config) {
  return ParseInto(text, source, config, nullptr);
}

Status ParseInto(std::string_view text, const std::string& source, core::Config* config, Extras* extras) {
  Result<std::vector<Node>> docs = yaml::ParseDocuments(text, source);
  if (!docs.ok()) return docs.status();
  core::Config parsed;
  internal::DialectDocs dialect_docs;
  for (const Node& doc : *docs) {
    if (!doc.present()) continue;  // empty document
    ARTEL_RETURN_IF_ERROR(ParseObject(doc, &parsed, &dialect_docs));
  }
  ARTEL_RETURN_IF_ERROR(internal::FinishDialects(&dialect_docs, config, &parsed, extras));
  internal::AppendConfig(std::move(parsed), config);
  return Status::Ok();
}

}  // namespace artel::manifest
