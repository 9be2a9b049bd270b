// Manifest files as text: what `artel apply -f/-k` sends and what arteld
// applies at start.
//
// `ReadManifestText` reads a file, or a directory the way
// `manifest::LoadPath` does (kustomization.yaml `resources:` in order, else
// every *.yaml/*.yml sorted by name, skipping Scenario documents), and joins
// the documents with `---`. `SplitDocuments` cuts a multi-document YAML text
// at its `---` lines and names each document "Kind/namespace/name" (the
// namespace is empty for cluster-scoped kinds).
//
// Thread-safety: pure functions (they read files).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"

namespace artel::server {

// Where one file's text starts in what ReadManifestText returns: its first
// line is line `first_line` (1-based) of the joined text.
struct ManifestSpan {
  size_t first_line = 0;
  std::string file;
};
// With `spans`, appends one entry per file read, in order.
Result<std::string> ReadManifestText(const std::string& path, std::vector<ManifestSpan>* spans = nullptr);
// Rewrites the position of `s` (an error from parsing the joined text under
// the name `source`) to the file and line in it that `spans` name. Returns
// `s` unchanged when it has no such position.
Status MapManifestPosition(Status s, const std::string& source, const std::vector<ManifestSpan>& spans);

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

}  // namespace artel::server
