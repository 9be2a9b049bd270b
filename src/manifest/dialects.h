// Internal to src/manifest: the Volcano and KAI dialects.
//
// parse.cc hands every document whose apiVersion belongs to Volcano
// (scheduling.volcano.sh, topology.volcano.sh, batch.volcano.sh), KAI
// (scheduling.run.ai, kai.scheduler) or the Kubernetes scheduling group
// (PriorityClass) to ParseDialectObject. Queues are not turned into
// ClusterQueues one document at a time: whether a queue is a leaf (a
// ClusterQueue) or a parent (a Cohort), and how much of a parent's quota is
// its own, depends on the other queues of the same text. They are collected
// as `DialectQueue`s and FinishDialects builds the tree once all documents
// of a ParseInto call are read.
//
// The workload side (ParseWorkloads) lives in dialects.cc, with the pod
// template reader shared by every workload kind, and calls the per-dialect
// readers of volcano.cc and kai.cc.
//
// Thread-safety: pure functions over their arguments.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/model.h"
#include "core/status.h"
#include "manifest/manifest.h"
#include "manifest/yaml_util.h"

namespace artel::manifest::internal {

enum class QueueDialect { kVolcano, kKai };

// One resource of a dialect queue, already in Kueue terms.
struct DialectQuota {
  core::Amount nominal = 0;        // Volcano deserved, KAI quota (-1 -> 0)
  bool unlimited_nominal = false;  // KAI quota -1: no own share to subtract children from
  std::optional<core::Amount> borrowing_limit;
  std::optional<core::Amount> lending_limit;
  bool declared = false;  // the queue named this resource
};

struct DialectQueue {
  QueueDialect dialect = QueueDialect::kVolcano;
  std::string name;
  std::string parent;      // empty = the dialect's root cohort
  yaml::Node parent_node;  // where the parent was named (for errors)
  yaml::Node root;         // the document
  SourcePos pos;
  std::map<std::string, DialectQuota> quotas;  // by resource name
  core::Amount fair_weight = core::kDefaultFairWeight;
  core::QueueingStrategy strategy = core::QueueingStrategy::kBestEffortFIFO;
  core::PreemptionSpec preemption;
};

// What the dialect documents of one ParseInto call produced.
struct DialectDocs {
  std::vector<DialectQueue> queues;
  std::vector<HyperNodeSpec> hypernodes;
  std::vector<yaml::Node> hypernode_roots;  // parallel to hypernodes
};

// Common metadata of dialect objects.
struct DialectMeta {
  std::string name;
  std::string ns;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
};
Status ReadDialectMeta(const yaml::Node& root, bool namespaced, DialectMeta* out);

// True when `api_version`'s group is one of the dialects'.
bool IsDialectApiVersion(std::string_view api_version);

// Reads one configuration document of a dialect into *config / *docs.
// Workload kinds are refused with a hint to submit them instead.
Status ParseDialectObject(const yaml::Node& root, const std::string& api_version, const std::string& kind,
                          core::Config* config, DialectDocs* docs);

// Builds ClusterQueues, Cohorts, LocalQueues, the implicit flavor and the
// HyperNode topology from *docs into *parsed (the objects of this call),
// looking at *existing (what earlier calls loaded) for namespaces, flavors,
// dialect queues and the HyperNode topology. May update *existing's
// HyperNode topology to more tiers; does so only when it returns Ok.
Status FinishDialects(DialectDocs* docs, core::Config* existing, core::Config* parsed, Extras* extras);

// ---- per-dialect readers (volcano.cc, kai.cc) ----

Status ParseVolcanoQueue(const yaml::Node& root, DialectDocs* docs);
Status ParseVolcanoHyperNode(const yaml::Node& root, DialectDocs* docs);
Status ParseKaiQueue(const yaml::Node& root, DialectDocs* docs);
Status ParseKaiTopology(const yaml::Node& root, core::Config* config);

// ---- workloads ----

// A pod template (`template:` of a Job task or pod set, or a Pod's
// metadata+spec) read into a pod set; `count` is left to the caller.
// `termination_grace` (may be null) receives terminationGracePeriodSeconds
// in milliseconds when the pod spec sets it.
Status ReadPodTemplate(const yaml::Node& tmpl, core::PodSetSpec* out,
                       std::optional<std::string>* priority_class,
                       std::optional<core::Time>* termination_grace = nullptr,
                       PodSpecMode mode = PodSpecMode::kStandalone);
// A Pod's metadata and spec (kind: Pod), for PodGroup members.
struct PodDoc {
  DialectMeta meta;
  yaml::Node root;
  core::PodSetSpec spec;  // count 1
  std::optional<std::string> priority_class;
};
Status ReadPod(const yaml::Node& root, PodDoc* out, PodSpecMode mode = PodSpecMode::kStandalone);

// A PodGroup waiting for its pods.
struct PodGroupDoc {
  QueueDialect dialect = QueueDialect::kVolcano;
  yaml::Node root;
  core::WorkloadSpec workload;                 // name, ns, queue, priority, annotations; no pod sets yet
  std::map<std::string, int32_t> min_per_set;  // task / subgroup -> minimum pods
  std::vector<std::string> declared_sets;      // KAI subGroups in order (must all get pods)
  std::map<std::string, std::map<std::string, std::string>> set_annotations;  // subgroup topology
};

Status ParseVolcanoJob(const yaml::Node& root, core::WorkloadSpec* out);
Status ParseVolcanoPodGroup(const yaml::Node& root, PodGroupDoc* out);
Status ParseKaiPodGroup(const yaml::Node& root, PodGroupDoc* out);

// "hard"/"soft"/tiers of a Volcano networkTopology block -> annotations.
Status ReadVolcanoNetworkTopology(const yaml::Node& nt, core::FlatMap<std::string, std::string>* annotations);

// A metav1.LabelSelector (matchLabels, matchExpressions).
Status ReadLabelSelectorNode(const yaml::Node& sel, core::LabelSelector* out);

// True when `cohort` (a ClusterQueue's cohort) leads up to volcano-root or
// kai-root through the cohorts of `config`.
bool InDialectTree(const core::Config& config, const std::string& cohort);

// A Kubernetes ResourceList (`cpu: 4`, `memory: 16Gi`) by resource name.
Status ReadResourceList(const yaml::Node& list, std::map<std::string, core::Amount>* out);

}  // namespace artel::manifest::internal
