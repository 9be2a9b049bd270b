// Codec: the JSON form of workloads on the wire and in the journal.
//
// An Artel Workload (`apiVersion: artel.dev/v1alpha1`, `kind: Workload`) is
// read strictly: unknown fields, wrong types, bad quantities and names that
// are not DNS-1123 labels are `InvalidArgument` errors that name the field
// path (`spec.podSets[0].requests.nvidia.com/gpu`). A Kubernetes batch/v1 Job
// that carries the `kueue.x-k8s.io/queue-name` label, and a Kueue Workload
// (kueue.x-k8s.io/v1beta1 or v1beta2), are read by the one reader of those
// kinds, src/manifest's ParseWorkloads (the same as `artel apply -f`, the
// scenario runner and the Kubernetes controller): a Job maps the way Kueue's
// Job integration does (parallelism -> pod count, the first container's
// command/args/env/workingDir, summed container requests); unknown fields
// are errors that name the field. Bodies may be JSON or
// YAML; nesting depth is bounded before parsing so that hostile input cannot
// exhaust the stack.
//
// `WorkloadSpecToJson` and `WorkloadFromJson` round-trip exactly; the journal
// stores specs in this form (docs/api.md, docs/daemon.md).
//
// Thread-safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "core/model.h"
#include "core/status.h"

namespace artel::api {

using Json = nlohmann::json;

inline constexpr std::string_view kWorkloadApiVersion = "artel.dev/v1alpha1";
inline constexpr std::string_view kQueueNameLabel = "kueue.x-k8s.io/queue-name";
inline constexpr std::string_view kPriorityClassLabel = "kueue.x-k8s.io/priority-class";

// True for a DNS-1123 label: 1-63 of [a-z0-9-], alphanumeric at both ends.
bool IsDnsLabel(std::string_view s);

// Parses `body` as JSON, or as YAML when it is not JSON. Rejects nesting
// deeper than 64 levels. Errors carry the byte offset or line:column.
Result<Json> ParseBody(std::string_view body);

// Converts a YAML document to JSON (scalars that look like numbers or
// booleans become numbers or booleans, as a YAML 1.2 core schema reader would).
Result<Json> YamlToJson(std::string_view text);

// An Artel Workload object -> spec. `metadata.generateName` is returned in
// *generate_name when `metadata.name` is empty (may be null).
Result<core::WorkloadSpec> WorkloadFromJson(const Json& j, std::string* generate_name = nullptr);

// A batch/v1 Job -> spec (through manifest::ParseWorkloads).
Result<core::WorkloadSpec> WorkloadFromJob(const Json& j, std::string* generate_name = nullptr);

// Dispatches on `kind` (Workload or Job) and, for a Workload, apiVersion
// (artel.dev/v1alpha1, or kueue.x-k8s.io/* read by manifest::ParseWorkloads).
Result<core::WorkloadSpec> WorkloadFromObject(const Json& j, std::string* generate_name = nullptr);

// The canonical Artel Workload object for `spec` (apiVersion, kind,
// metadata, spec; no status).
Json WorkloadSpecToJson(const core::WorkloadSpec& spec);

// A pod set's required node affinity terms as Kubernetes writes them
// ([{matchExpressions: [{key, operator, values?}]}]), and its tolerations
// ([{key?, operator, value?, effect?}]).
Json NodeAffinityToJson(const std::vector<core::NodeSelectorTerm>& terms);
Json TolerationsToJson(const std::vector<core::Toleration>& tolerations);

// Status -> the API error body {code, message, field?}.
Json ErrorJson(const Status& s);

}  // namespace artel::api

// arteld (src/server) and its Kubernetes backend (src/kube) call these as
// server::...; the declarations keep those call sites unchanged.
namespace artel::server {
using api::ErrorJson;
using api::IsDnsLabel;
using api::Json;
using api::kPriorityClassLabel;
using api::kQueueNameLabel;
using api::kWorkloadApiVersion;
using api::ParseBody;
using api::WorkloadFromJob;
using api::WorkloadFromJson;
using api::WorkloadFromObject;
using api::WorkloadSpecToJson;
using api::YamlToJson;
}  // namespace artel::server
