// Scenario files: the test format of `artel test` (docs/scenarios.md).
//
// A scenario is one YAML document of kind `Scenario` (apiVersion
// artel.dev/v1alpha1); a file may hold several, separated by `---`. This
// header holds the parsed form and the reader. Reading is strict: unknown
// fields, wrong shapes and bad values are errors that name
// file:line:column and the field path, with a "did you mean" hint for
// misspelled keys. The reader also loads `spec.config` (files relative to
// the scenario file, or inline manifests whose error positions point into the
// scenario file) through the manifest layer and validates it, so that a
// parsed `Scenario` is ready to run (sim/runner.h).
//
// Thread-safety: the functions are reentrant; they read files and nothing
// else.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/engine.h"
#include "core/model.h"
#include "core/status.h"
#include "manifest/manifest.h"

namespace artel::sim {

// One MIG instance on a GPU, written `3g.40gb@4` (profile @ start slot).
struct MigInstance {
  std::string profile;
  int start = 0;
  bool operator==(const MigInstance&) const = default;
};

struct GpuSpec {
  std::string model;
  int count = 0;
  bool mig = false;
  std::map<int, std::vector<MigInstance>> mig_layout;  // GPU index -> instances
};

// A node of `spec.nodes` after `{a..b}` expansion. The runner hands the
// nodes to the placement library (Engine::SetNodes); without nodes,
// admission is quota-only.
struct NodeSpec {
  std::string name;
  std::map<std::string, std::string> labels;  // includes kubernetes.io/hostname
  std::map<std::string, core::Amount> capacity;
  std::vector<core::Taint> taints;
  std::optional<GpuSpec> gpus;
  SourcePos pos;
};

// A workload reference in events and expectations: `name` or `namespace/name`.
struct WorkloadRef {
  std::string text;
  SourcePos pos;
};

struct SubmitEvent {
  core::WorkloadSpec spec;
  std::optional<core::Time> runtime;  // finishes by itself after running this long
};

struct Event {
  enum class Kind { kSubmit, kFinish, kCancel, kActivate, kDeactivate, kApply };
  Kind kind = Kind::kSubmit;
  std::string field;  // e.g. "spec.steps[2].finish[0]"
  SourcePos pos;
  SubmitEvent submit;  // kSubmit
  WorkloadRef target;  // kFinish, kCancel, kActivate, kDeactivate
  core::Config patch;  // kApply: objects that replace same-named ones
};
const char* EventKindName(Event::Kind kind);

struct UsageExpect {
  std::string node;  // ClusterQueue or cohort name
  bool is_cohort = false;
  std::string flavor;
  std::string resource;
  core::Amount value = 0;
  SourcePos pos;
};

struct EvictionExpect {
  WorkloadRef victim;
  std::optional<std::string> reason;     // EvictionReasonName, e.g. InClusterQueue
  std::optional<WorkloadRef> preemptor;  // unchecked when absent
  SourcePos pos;
};

using FlavorExpect =
    std::map<std::string, std::map<std::string, std::string>>;  // podSet -> resource -> flavor

// The `expect:` block of a step. Unset members are not checked.
struct Expectation {
  SourcePos pos;
  std::string field;
  std::optional<std::vector<WorkloadRef>> admitted;
  std::optional<std::vector<WorkloadRef>> pending;
  std::optional<std::vector<WorkloadRef>> finished;
  // Finished workloads the engine failed (a maximum runtime ran out).
  std::optional<std::vector<WorkloadRef>> failed;
  std::optional<std::vector<WorkloadRef>> preempted;
  std::optional<std::vector<EvictionExpect>> evictions;
  std::optional<std::vector<std::pair<WorkloadRef, FlavorExpect>>> flavors;
  std::optional<std::vector<std::pair<WorkloadRef, std::map<std::string, int32_t>>>> admitted_counts;
  std::optional<std::vector<UsageExpect>> usage;
  std::optional<std::vector<std::pair<WorkloadRef, std::string>>> pending_reasons;
  // pendingMessages: what `artel why` says (Engine::Why's message) contains
  // each of `contains` and none of `excludes`.
  struct MessageExpect {
    std::vector<std::string> contains;
    std::vector<std::string> excludes;
  };
  std::optional<std::vector<std::pair<WorkloadRef, MessageExpect>>> pending_messages;
  std::optional<std::vector<std::pair<std::string, int64_t>>> share;  // -1 = infinite
  // Each workload's pod placements (pod set -> nodes) and the MIG layouts the
  // placement library leaves on the nodes, checked by the runner.
  std::optional<std::map<std::string, std::map<std::string, std::vector<std::string>>>> placements;
  std::optional<std::map<std::string, std::vector<MigInstance>>> mig_layouts;  // "node/gpu" -> instances
};

struct Step {
  core::Time at = 0;
  std::string field;  // "spec.steps[3]"
  SourcePos pos;
  std::vector<Event> events;  // in document order
  std::optional<Expectation> expect;
};

struct Scenario {
  std::string file;  // as given to the reader
  std::string name;
  SourcePos pos;
  core::EngineOptions options;
  core::Config config;      // loaded and validated
  manifest::Extras extras;  // Volcano HyperNodes etc. (labels merged into `nodes`)
  std::vector<NodeSpec> nodes;
  std::vector<Step> steps;
};

// One document of a scenario file: a scenario, or the error that stopped
// reading it. `name` is set whenever metadata.name could be read, so that
// `--filter` also applies to broken documents.
struct ScenarioDoc {
  std::string name;
  std::optional<Scenario> scenario;
  Status error;
};

// Reads every document of `text` (the contents of `file`). A YAML syntax
// error yields a single failed entry; other errors fail only their document.
// REQUIRES: every document is meant to be a Scenario (documents of another
// kind are errors).
std::vector<ScenarioDoc> ParseScenarios(std::string_view text, const std::string& file);

// Reads `path` and parses it. An unreadable file yields a single failed entry.
std::vector<ScenarioDoc> LoadScenarioFile(const std::string& path);

// True when some document of the file has `kind: Scenario`. Files that are not
// YAML fall back to a textual check, so a broken scenario file is still
// reported rather than skipped.
bool LooksLikeScenarioFile(const std::string& path);

// Expands `{a..b}` ranges in a node name: `gpu-{0..3}` -> gpu-0 ... gpu-3,
// `n{00..10}` pads to two digits, several ranges multiply.
Result<std::vector<std::string>> ExpandNodeName(std::string_view pattern);

// Replaces objects of `base` by same-named ones of `patch` (per kind; local
// queues and resource quotas by namespace/name) and appends the rest.
void MergeConfig(const core::Config& patch, core::Config* base);

}  // namespace artel::sim
