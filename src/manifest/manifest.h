// Reading Kubernetes-style manifests into the core configuration.
//
// The manifest layer turns YAML in the Kueue dialect (kueue.x-k8s.io v1beta1
// and v1beta2, plus the core Kubernetes kinds Artel uses) into
// `core::Config`. It is strict: unknown fields, unknown kinds, wrong types and
// bad enum values are errors, and every error names `file:line:column` and
// the field path (see docs/manifests.md for the full list of kinds, fields and
// the places where Artel deliberately refuses what Kueue would accept).
//
// Parsing and loading check each object on its own (types, required fields,
// per-object rules such as `lendingLimit <= nominalQuota`) with exact
// positions. Cross-object rules (dangling references, cohort cycles,
// duplicate names) need the whole configuration and live in `Validate`,
// which callers run once after loading everything.
//
// Thread-safety: all functions are reentrant; they share no state.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/model.h"
#include "core/status.h"

namespace artel::manifest {

// ---------------------------------------------------------------- dialects
//
// Besides Kueue, the manifest layer reads the Volcano and KAI Scheduler
// dialects (docs/dialects.md has the mapping table and every semantic
// difference). Their queues become ClusterQueues and Cohorts of the same
// core::Config:
//
//   * every Volcano Queue (scheduling.volcano.sh/v1beta1) and every KAI Queue
//     (scheduling.run.ai/v2) that no other queue names as its parent becomes
//     a ClusterQueue of the same name; a queue that is some queue's parent
//     becomes a Cohort of that name, holding its own share of the quota
//     (its deserved / quota minus its children's);
//   * top-level queues sit in the implicit root cohorts `volcano-root` and
//     `kai-root` (declare a Cohort with that name to give the whole tree a
//     pool of its own, e.g. the cluster's capacity for weight-only queues);
//   * quotas use the single ResourceFlavor `default-flavor`, created when
//     absent;
//   * each such ClusterQueue admits every namespace, and gets a LocalQueue of
//     the same name in namespace `default` and in every Namespace of the
//     configuration, so that a workload's `queue:` can name the Volcano or
//     KAI queue directly. EnsureQueueInNamespace adds one for a namespace
//     seen later.
//
// A queue tree is built from one ParseInto call (one file, or one inline
// block): a parent queue must be defined in the same text as its children.

inline constexpr char kVolcanoRootCohort[] = "volcano-root";
inline constexpr char kKaiRootCohort[] = "kai-root";
inline constexpr char kDialectFlavor[] = "default-flavor";

// The Topology built from Volcano HyperNodes: levels
// `artel.dev/hypernode-tier-<N>` ... `artel.dev/hypernode-tier-1`, then
// `kubernetes.io/hostname`, where N is the highest tier of any HyperNode.
// HyperNodeLabels computes the tier labels of each node.
inline constexpr char kHyperNodeTopology[] = "volcano-hypernodes";
inline constexpr char kHyperNodeTierLabelPrefix[] = "artel.dev/hypernode-tier-";

// Workload annotations written by ParseWorkloads (docs/dialects.md). They
// carry the request through the API and the journal; ReadTypedFields
// (manifest/typed_fields.h) turns them into the typed fields the engine
// reads. artel.dev/min-resources is recorded for reference only and read by
// nothing.
//   artel.dev/dialect                   volcano | kai | kueue
//   artel.dev/min-member                gang minimum over all pod sets (Volcano
//                                       minMember / vcjob minAvailable, KAI minMember)
//   artel.dev/min-resources             Volcano minResources, "name=quantity,..."
//                                       sorted by name, canonical quantities
//   artel.dev/topology                  topology name (volcano-hypernodes, or
//                                       KAI topologyConstraint.topology)
//   artel.dev/network-topology-mode     Volcano networkTopology.mode: hard | soft
//   artel.dev/highest-tier-allowed      Volcano networkTopology.highestTierAllowed
//   artel.dev/highest-tier-name         Volcano networkTopology.highestTierName
// Pod-set annotations (the pod template's annotations are kept as well):
//   kai.scheduler/topology-required-placement   KAI requiredTopologyLevel
//   kai.scheduler/topology-preferred-placement  KAI preferredTopologyLevel
//   kueue.x-k8s.io/podset-required-topology,
//   kueue.x-k8s.io/podset-preferred-topology,
//   kueue.x-k8s.io/podset-unconstrained-topology,
//   kueue.x-k8s.io/podset-slice-required-topology,
//   kueue.x-k8s.io/podset-slice-size            Kueue Workload topologyRequest
inline constexpr char kAnnDialect[] = "artel.dev/dialect";
inline constexpr char kAnnMinMember[] = "artel.dev/min-member";
inline constexpr char kAnnMinResources[] = "artel.dev/min-resources";
inline constexpr char kAnnTopology[] = "artel.dev/topology";
inline constexpr char kAnnNetworkTopologyMode[] = "artel.dev/network-topology-mode";
inline constexpr char kAnnHighestTierAllowed[] = "artel.dev/highest-tier-allowed";
inline constexpr char kAnnHighestTierName[] = "artel.dev/highest-tier-name";
inline constexpr char kAnnKaiRequiredPlacement[] = "kai.scheduler/topology-required-placement";
inline constexpr char kAnnKaiPreferredPlacement[] = "kai.scheduler/topology-preferred-placement";

// A Volcano HyperNode (topology.volcano.sh/v1alpha1). Members select nodes
// (type Node: exact name, regular expression over names, or label
// selector) or lower-tier HyperNodes (type HyperNode: exact name or regular
// expression).
struct HyperNodeMember {
  enum class Type { kNode, kHyperNode };
  Type type = Type::kNode;
  std::string exact;                          // exactMatch.name
  std::string regex;                          // regexMatch.pattern (ECMAScript; matches anywhere
                                              // in the name unless anchored, as Go's MatchString)
  std::optional<core::LabelSelector> labels;  // labelMatch (Node only)
};

struct HyperNodeSpec {
  std::string name;
  int32_t tier = 1;
  std::string tier_name;
  std::vector<HyperNodeMember> members;
  SourcePos pos;
};

// What a manifest holds beyond core::Config.
struct Extras {
  std::vector<HyperNodeSpec> hypernodes;
};

// Parses every YAML document in `text` (multi-document, `---`) and appends the
// objects to *config. `source` is the file name used in error positions.
// Empty documents are skipped. On error returns the first problem and leaves
// *config unchanged.
Status ParseInto(std::string_view text, const std::string& source, core::Config* config);
// As above, and appends what core::Config cannot hold (HyperNodes) to
// *extras when it is not null.
Status ParseInto(std::string_view text, const std::string& source, core::Config* config, Extras* extras);

// ---------------------------------------------------------------- objects
//
// The objects of a manifest text exactly as ParseInto reads them: yaml-cpp
// parses the whole text once (every document, whatever its form: `--- {..}`
// or `--- !!map` on a separator line, `...` end markers, `%YAML`
// directives, tags, anchors and aliases, flow or block style), and each
// document, and each item of a `v1 List` (recursively), becomes one
// ManifestObject. arteld authorizes these objects one by one and then
// applies exactly these parsed objects (ParseObjects), never the request
// text again, so that what is checked is what the engine applies.

namespace yaml {
class Node;
}

struct ManifestObject {
  std::string api_version;
  std::string kind;
  std::string ns;    // metadata.namespace of a namespaced kind; "" otherwise
  std::string name;  // metadata.name
  // LocalQueue and ResourceQuota live in a namespace; every other kind
  // (ClusterQueue, Cohort, ResourceFlavor, WorkloadPriorityClass, Namespace,
  // Topology, AdmissionCheck, Volcano and KAI queues, ...) is cluster-scoped.
  bool namespaced = false;
  SourcePos pos;      // where the object starts
  std::string field;  // "" for a document, "items[2]" (nested: "items[0].items[1]") inside a List
  // The object alone, emitted again by yaml-cpp as one YAML document
  // (ending in a newline): what arteld journals and shows.
  std::string text;
  std::shared_ptr<const yaml::Node> node;  // the parsed object
  // "Kind/namespace/name" (namespace empty for cluster-scoped kinds).
  std::string key() const { return kind + "/" + ns + "/" + name; }
  // "LocalQueue team-a/default", "ClusterQueue prod" (for messages).
  std::string display() const { return kind + " " + (ns.empty() ? name : ns + "/" + name); }
};

// True for the kinds that live in a namespace (LocalQueue, ResourceQuota).
bool IsNamespacedKind(std::string_view kind);

// Splits `text` into its objects (see above). Empty documents are skipped.
// Errors: YAML syntax, a document or List item that is not a map, or lacks
// apiVersion, kind or metadata.name (field and position named).
Result<std::vector<ManifestObject>> SplitObjects(std::string_view text, const std::string& source);

// Appends the configuration that `objects` describe to *config, as
// ParseInto does for a text holding these objects (dialect queue trees are
// built across all of them). On error *config is unchanged.
Status ParseObjects(const std::vector<const ManifestObject*>& objects, core::Config* config);

// Loads a file or a directory into *config. A directory with
// kustomization.yaml (or .yml, or Kustomization) reads its `resources:`
// entries (files or nested directories, relative paths) in order; otherwise
// every *.yaml / *.yml file in it, sorted by name and not recursively, except
// files that hold `kind: Scenario` documents, which are skipped silently.
// *config is unchanged on error.
Status LoadPath(const std::string& path, core::Config* config);
Status LoadPath(const std::string& path, core::Config* config, Extras* extras);

// Checks references and structure across the whole config: flavors named by
// ClusterQueues and Cohorts exist as ResourceFlavors (and a flavor's
// topologyName as a Topology); no cohort parent cycles; no duplicate names;
// the per-object rules that parsing also checks. Errors carry the offending
// object's `pos` and the field path.
Status Validate(const core::Config& config);

// What is valid but probably a mistake, in the same form as errors: a
// LocalQueue naming a ClusterQueue that is not defined (accepted, as Kueue
// does: its workloads wait with ClusterQueueMissing).
std::vector<Status> Warnings(const core::Config& config);

// Reads workloads to submit: Volcano Job (batch.volcano.sh/v1alpha1, one pod
// set per task), Volcano PodGroup (scheduling.volcano.sh/v1beta1) or KAI
// PodGroup (scheduling.run.ai/v2alpha2) together with their Pods (v1 Pod
// with annotation scheduling.k8s.io/group-name or pod-group-name; pod sets by
// task annotation volcano.sh/task-spec or label kai.scheduler/subgroup-name),
// Kueue Workload (v1beta1/v1beta2) and batch/v1 Job with the label
// kueue.x-k8s.io/queue-name. Gang and topology fields become the annotations
// listed above. Namespaces default to `default`. Errors name
// file:line:column and the field path; unsupported fields are errors. On
// error *out is unchanged.
Status ParseWorkloads(std::string_view text, const std::string& source, std::vector<core::WorkloadSpec>* out);

// How pod specs are read. kStandalone (above): arteld runs the pods itself,
// so a field it cannot honour (init containers, env valueFrom, pod
// affinity, ...) is an error. kKubernetes: the kubelet runs them, so every
// PodSpec field the API server accepts is accepted, as Kueue does, and only
// what admission needs is read: the pod's requests (containers, init
// containers and overhead, as Kubernetes computes them), nodeSelector,
// required node affinity, tolerations, priorityClassName and the grace
// period. Used for Workloads read from a cluster (src/kube) and by the
// validating webhook.
enum class PodSpecMode { kStandalone, kKubernetes };
Status ParseWorkloads(std::string_view text, const std::string& source, std::vector<core::WorkloadSpec>* out,
                      PodSpecMode mode);

// Adds LocalQueue `ns/queue` -> ClusterQueue `queue` when `queue` is a
// ClusterQueue made from a Volcano or KAI queue (its cohort chain ends at
// volcano-root or kai-root) and no LocalQueue `ns/queue` exists. Returns
// whether it added one. For runners and the daemon, which see namespaces
// that the configuration did not list.
bool EnsureQueueInNamespace(core::Config* config, const std::string& ns, const std::string& queue);

// The tier labels (kHyperNodeTierLabelPrefix + tier -> HyperNode name) that
// `hypernodes` give each of `nodes` (node name -> its labels). Nodes in no
// HyperNode of a tier get no label for it. Errors: a node or HyperNode in two
// HyperNodes of one tier, a HyperNode member of a tier not below its
// parent's, a cycle, a member that names no HyperNode.
Result<std::map<std::string, std::map<std::string, std::string>>> HyperNodeLabels(
    const std::vector<HyperNodeSpec>& hypernodes,
    const std::map<std::string, std::map<std::string, std::string>>& nodes);

}  // namespace artel::manifest
