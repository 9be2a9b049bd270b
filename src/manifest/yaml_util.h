// YAML helpers that keep track of where every value came from.
//
// Every reader of user YAML in Artel (Kubernetes-style manifests, scenario
// files) must report errors as `file:line:column: field.path: message`. A
// `yaml::Node` wraps a yaml-cpp node together with its source file name and
// its field path from the document root (`spec.resourceGroups[0].flavors[1]`),
// so that every typed getter can return a fully positioned `Status` without the
// caller assembling paths by hand.
//
// Child lookup never throws and never inserts: asking a map for a missing key
// yields an absent `Node` whose path is the requested one and whose position
// falls back to the nearest present ancestor, so "missing required field"
// errors still point somewhere useful. YAML `null` (`key:` with no value) is
// treated as absent, as the Kubernetes API server does.
//
// Typical use:
//
//   for (const yaml::Node& doc : docs) {
//     if (Status s = doc.CheckKeys({"apiVersion", "kind", "metadata", "spec"}); !s.ok()) return s;
//     std::string name;
//     if (Status s = doc["metadata"].ReadString("name", &name, yaml::kRequired); !s.ok()) return s;
//   }
//
// Thread-safety: a `Node` is a cheap value (yaml-cpp nodes share their
// document); distinct nodes of one document may not be used from several
// threads at once because yaml-cpp's reference counting is not atomic.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/flat_map.h"
#include "core/quantity.h"
#include "core/status.h"

namespace artel::manifest::yaml {

// A user mistake the generic edit-distance hint cannot guess: `unknown` is the
// field a user wrote, `suggestion` the field they most likely meant, and
// `reason` (optional) one sentence explaining the confusion. A hint is only
// offered when `suggestion` is among the allowed fields at that level.
struct FieldHint {
  std::string_view unknown;
  std::string_view suggestion;
  std::string_view reason;
};

// The built-in table of well-known confusions (quota names copied from other
// schedulers' tutorials, Kueue v1beta1 vs v1beta2 spellings, ...).
std::span<const FieldHint> BuiltinFieldHints();

// Returns the allowed field closest to `unknown`: first from `hints` and the
// built-in table, then by case-insensitive edit distance (at most a third of
// the name, minimum 2). Empty when nothing is close.
std::string SuggestField(std::string_view unknown, std::span<const std::string_view> allowed,
                         std::span<const FieldHint> hints = {});

// Levenshtein distance between `a` and `b`, ignoring ASCII case.
int EditDistance(std::string_view a, std::string_view b);

enum Requirement { kOptional, kRequired };

struct MapEntry;

// A value of an enumeration as spelled in YAML.
template <typename E>
struct EnumName {
  std::string_view name;
  E value;
};

class Node {
 public:
  // An absent node with no source; useful only as a placeholder.
  Node() = default;

  // The root of a document read from `source`. The path of the root is empty.
  Node(YAML::Node yaml, std::string source);

  // Assignment rebinds this wrapper. (Assigning a YAML::Node would instead
  // overwrite the node it refers to, i.e. edit the document.)
  Node(const Node&) = default;
  Node(Node&&) = default;
  Node& operator=(const Node& other);
  Node& operator=(Node&& other) { return *this = static_cast<const Node&>(other); }
  ~Node() = default;

  // The wrapped yaml-cpp node. REQUIRES: present().
  const YAML::Node& yaml() const { return yaml_; }
  const std::string& path() const { return path_; }
  const std::string& source() const;

  // True when the key existed and its value is not YAML null.
  bool present() const { return present_; }
  bool IsMap() const { return present_ && yaml_.IsMap(); }
  bool IsList() const { return present_ && yaml_.IsSequence(); }
  bool IsScalar() const { return present_ && yaml_.IsScalar(); }
  // True for a scalar written without quotes (`8`, `true`), as opposed to `"8"`.
  bool IsPlainScalar() const;
  // "a map", "a list", "a scalar" or "nothing", for error messages.
  std::string_view KindName() const;

  // Where this node starts (1-based); for an absent node, where its nearest
  // present ancestor starts.
  SourcePos Pos() const;

  // An InvalidArgument status carrying this node's path and position.
  Status Error(std::string message) const;

  // Structural expectations; each returns a positioned error naming what was
  // found instead.
  Status ExpectMap() const;
  Status ExpectList() const;
  Status ExpectScalar() const;

  // The child at `key` of a map (path `parent.key`). Absent when this node is
  // not a map or has no such key.
  Node operator[](std::string_view key) const;
  // The `i`-th element of a list (path `parent[i]`). Absent when out of range.
  Node At(size_t i) const;
  // The number of elements of a list or entries of a map; 0 otherwise.
  size_t size() const;

  // The entries of a map, in document order; see MapEntry.
  // REQUIRES: IsMap() (returns nothing otherwise).
  std::vector<MapEntry> Entries() const;
  // REQUIRES: IsList() (returns nothing otherwise).
  std::vector<Node> Items() const;

  // Follows a field path such as `spec.resourceGroups[0].flavors[1].name`
  // (relative to this node) as far as it exists. The result is absent when
  // the path does not exist, but its Pos() is that of the deepest existing
  // node on the way, so errors found after parsing can still be positioned.
  Node Lookup(std::string_view relative_path) const;

  // Checks that this node is a map whose keys are all in `allowed` and
  // appear once. An unknown key is reported at the key's position with a
  // did-you-mean hint (see SuggestField) or, failing that, the list of
  // allowed fields.
  Status CheckKeys(std::span<const std::string_view> allowed, std::span<const FieldHint> hints = {}) const;
  Status CheckKeys(std::initializer_list<std::string_view> allowed) const {
    return CheckKeys(std::span<const std::string_view>(allowed.begin(), allowed.size()));
  }

  // Typed conversions of this node. Each fails with a positioned message
  // when the node is absent or has the wrong shape.
  Result<std::string> AsString() const;                   // any scalar
  Result<int64_t> AsInt(int64_t min, int64_t max) const;  // unquoted decimal integer
  Result<bool> AsBool() const;                            // unquoted true/false
  Result<core::Amount> AsQuantity() const;                // "500m", 8, 1.5, "36Gi"
  Result<std::vector<std::string>> AsStringList() const;
  Result<std::map<std::string, std::string>> AsStringMap() const;
  template <typename E>
  Result<E> AsEnum(std::initializer_list<EnumName<E>> names) const;

  // Reads the child `key` into *out. When the child is absent, *out is left
  // untouched and the call fails only if `req` is kRequired.
  Status ReadString(std::string_view key, std::string* out, Requirement req = kOptional) const;
  Status ReadInt32(std::string_view key, int32_t* out, Requirement req = kOptional) const;
  Status ReadBool(std::string_view key, bool* out, Requirement req = kOptional) const;
  Status ReadQuantity(std::string_view key, core::Amount* out, Requirement req = kOptional) const;
  Status ReadStringList(std::string_view key, std::vector<std::string>* out,
                        Requirement req = kOptional) const;
  Status ReadStringMap(std::string_view key, std::map<std::string, std::string>* out,
                       Requirement req = kOptional) const;
  Status ReadStringMap(std::string_view key, core::FlatMap<std::string, std::string>* out,
                       Requirement req = kOptional) const;
  template <typename E>
  Status ReadEnum(std::string_view key, std::initializer_list<EnumName<E>> names, E* out,
                  Requirement req = kOptional) const;

  // The error for a missing required child `key`.
  Status MissingError(std::string_view key) const;

 private:
  Node(YAML::Node yaml, bool present, std::shared_ptr<const std::string> source, std::string path,
       SourcePos fallback);
  Node Child(YAML::Node yaml, bool present, std::string path) const;
  Status InvalidEnum(std::string_view got, const std::vector<std::string_view>& allowed) const;

  YAML::Node yaml_;
  bool present_ = false;
  std::shared_ptr<const std::string> source_;
  std::string path_;
  SourcePos fallback_;  // used by Pos() when absent or when yaml-cpp has no mark
};

// One entry of a map. Maps with user-chosen keys (labels, quantities by
// resource name) name their values `parent[key]` rather than `parent.key`.
struct MapEntry {
  std::string key;
  SourcePos key_pos;
  Node value;
};

// ---- Bounded loading ----
//
// yaml-cpp shares an aliased node instead of copying it, so loading a
// "billion laughs" document is cheap, but anything that walks it (conversion
// to JSON, a recursive check) visits every alias expansion: 700 bytes with 9
// aliases per level and 8 levels stand for 43 million nodes. Every YAML text
// Artel reads (API bodies, manifests, scenarios, the CLI's files, arteld's own
// config) is therefore loaded through LoadDocuments, which first replays the
// text through yaml-cpp's event parser and refuses, per document:
//   - more than `max_nodes` nodes, counting every node an alias stands for
//     each time the alias is used;
//   - more than `max_scalar_bytes` bytes of scalar text, aliases expanded;
//   - maps and lists nested deeper than `max_depth`;
//   - an alias used inside the node it names (a cycle: `&a [*a]`);
//   - more than `max_documents` documents, and a document that does not
//     advance (yaml-cpp 0.7 reports endless empty documents for a text
//     that starts with ',');
//   - a scalar (value or key) that is not valid UTF-8.
// Errors are InvalidArgument with the field path where the limit was reached
// (`metadata.annotations.a6[3]`) and the position `source:line:column`.
struct LoadLimits {
  int64_t max_nodes = 100000;
  int64_t max_scalar_bytes = int64_t{16} << 20;
  int max_depth = 100;
  // Documents per text (each `---`).
  int64_t max_documents = 10000;
};

// Limits for files a user names on their own command line (scenarios with
// many inline workloads): larger, but still bounded.
inline constexpr LoadLimits kLocalFileLimits{
    .max_nodes = 2000000, .max_scalar_bytes = int64_t{256} << 20, .max_depth = 100, .max_documents = 100000};

// Parses `text` into its documents (like YAML::LoadAll) within `limits`. A
// syntax error is returned with yaml-cpp's position made 1-based. Empty
// documents are returned as null nodes.
Result<std::vector<YAML::Node>> LoadDocuments(std::string_view text, const std::string& source,
                                              const LoadLimits& limits = {});

// The length of the longest prefix of `s` that is valid UTF-8 (RFC 3629: no
// overlong forms, no surrogates, nothing above U+10FFFF); s.size() when all
// of `s` is valid.
size_t ValidUtf8Prefix(std::string_view s);
inline bool IsValidUtf8(std::string_view s) { return ValidUtf8Prefix(s) == s.size(); }
// `s` with every byte that is not part of valid UTF-8 written as `\xNN`, for
// messages that quote user input.
std::string EscapeInvalidUtf8(std::string_view s);

// Parses `text` (one or more documents separated by `---`) read from
// `source`, through LoadDocuments with `limits`. Empty documents are kept as
// absent nodes so that callers can skip them.
Result<std::vector<Node>> ParseDocuments(std::string_view text, const std::string& source,
                                         const LoadLimits& limits = {});

// Joins a field path and a child key: ("", "spec") -> "spec",
// ("spec", "cohort") -> "spec.cohort".
std::string JoinPath(std::string_view parent, std::string_view key);

// ---- template implementations ----

template <typename E>
Result<E> Node::AsEnum(std::initializer_list<EnumName<E>> names) const {
  Result<std::string> s = AsString();
  if (!s.ok()) return s.status();
  std::vector<std::string_view> allowed;
  for (const EnumName<E>& n : names) {
    if (n.name == *s) return n.value;
    allowed.push_back(n.name);
  }
  return InvalidEnum(*s, allowed);
}

template <typename E>
Status Node::ReadEnum(std::string_view key, std::initializer_list<EnumName<E>> names, E* out,
                      Requirement req) const {
  Node child = (*this)[key];
  if (!child.present()) return req == kRequired ? MissingError(key) : Status::Ok();
  Result<E> r = child.AsEnum(names);
  if (!r.ok()) return r.status();
  *out = *r;
  return Status::Ok();
}

}  // namespace artel::manifest::yaml
