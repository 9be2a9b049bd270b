// Manifest files as text: what `artel apply -f/-k` sends and what arteld
// applies at start.
//
// `ReadManifestFiles` reads a file, or a directory the way
// `manifest::LoadPath` does (kustomization.yaml `resources:` in order, else
// every *.yaml/*.yml sorted by name, skipping Scenario documents), one entry
// per file; `ReadManifestText` joins them with `---`. `SplitDocuments` cuts
// a multi-document YAML text into its documents (at bare `---` lines, then
// by the YAML parser, within the bounds of untrusted input, so that a
// document starting on its own `---` line is found too) and names each
// "Kind/namespace/name" (the namespace is empty for cluster-scoped kinds).
// It is a client-side convenience (the CLI sorts workloads from
// configuration with it) and never decides what arteld authorizes or
// applies: arteld uses manifest::SplitObjects, the parser's own view.
//
// Thread-safety: pure functions (they read files).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"

namespace artel::api {

struct ManifestFile {
  std::string path;  // the file the text was read from
  std::string text;
};
Result<std::vector<ManifestFile>> ReadManifestFiles(const std::string& path);
Result<std::string> ReadManifestText(const std::string& path);

struct ManifestDoc {
  std::string kind;
  std::string ns;
  std::string name;
  std::string text;
  std::string key() const { return kind + "/" + ns + "/" + name; }
};
Result<std::vector<ManifestDoc>> SplitDocuments(std::string_view text);

// True for the kinds that live in a namespace (LocalQueue, ResourceQuota).
bool IsNamespacedKind(std::string_view kind);

}  // namespace artel::api

// arteld calls these as server::... (see api/codec.h).
namespace artel::server {
using api::IsNamespacedKind;
using api::ManifestDoc;
using api::ManifestFile;
using api::ReadManifestFiles;
using api::ReadManifestText;
using api::SplitDocuments;
}  // namespace artel::server
