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

#include <string>
#include <string_view>

#include "core/model.h"
#include "core/status.h"

namespace artel::manifest {

// Parses every YAML document in `text` (multi-document, `---`) and appends the
// objects to *config. `source` is the file name used in error positions.
// Empty documents are skipped. On error returns the first problem and leaves
// *config unchanged.
Status ParseInto(std::string_view text, const std::string& source, core::Config* config);

// Loads a file or a directory into *config. A directory with
// kustomization.yaml (or .yml, or Kustomization) reads its `resources:`
// entries (files or nested directories, relative paths) in order; otherwise
// every *.yaml / *.yml file in it, sorted by name and not recursively, except
// files that hold `kind: Scenario` documents, which are skipped silently.
// *config is unchanged on error.
Status LoadPath(const std::string& path, core::Config* config);

// Checks references and structure across the whole config: LocalQueue ->
// ClusterQueue exists; flavors named by ClusterQueues and Cohorts exist as
// ResourceFlavors (and a flavor's topologyName as a Topology); no cohort
// parent cycles; no duplicate names; the per-object rules that parsing also
// checks. Errors carry the offending object's `pos` and the field path.
Status Validate(const core::Config& config);

}  // namespace artel::manifest
