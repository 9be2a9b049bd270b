// Field: a read-only view of one YAML node that knows its field path and its
// position in the source file, so that every error it produces reads
// `file:line:column: spec.steps[2].submit[0].podSets[0].count: message`.
//
// The scenario reader uses it to be strict: `CheckKeys` rejects unknown and
// duplicate keys and suggests the closest allowed key ("did you mean
// `podSets`?"); the typed getters (`String`, `Int`, `Bool`, `Quantity`,
// `StringMap`, `StringList`) accept only the YAML shapes the format defines.
// A `Field` for an absent key is "missing": it reports the parent's position
// and `present()` is false.
//
// This is the simulator's own small helper; the manifest layer has its own
// equivalent (src/manifest/yaml_util.h) with the same conventions.
//
// Thread-safety: a `Field` shares yaml-cpp node memory; use one document from
// one thread.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/quantity.h"
#include "core/status.h"

namespace artel::sim {

// Returns " (did you mean `x`?)" for the candidate closest to `word` by edit
// distance when it is close enough to be a plausible typo, else "".
std::string DidYouMean(std::string_view word, const std::vector<std::string_view>& candidates);

// A SourcePos from a yaml-cpp mark (0-based) and a file name.
SourcePos PosFromMark(const std::string& file, const YAML::Mark& mark);

class Field {
 public:
  Field(YAML::Node node, std::string path, std::shared_ptr<const std::string> file);

  bool present() const { return present_; }
  bool IsMap() const { return present_ && node_.IsMap(); }
  bool IsSeq() const { return present_ && node_.IsSequence(); }
  bool IsScalar() const { return present_ && node_.IsScalar(); }
  bool IsNull() const { return !present_ || node_.IsNull(); }
  const YAML::Node& node() const { return node_; }
  const std::string& path() const { return path_; }
  const std::string& file() const { return *file_; }
  SourcePos pos() const { return pos_; }

  // An InvalidArgument status carrying this field's path and position.
  Status Error(std::string message) const;

  // REQUIRES for the next four: nothing; they return errors for wrong shapes.
  Status RequireMap() const;
  Status RequireSeq() const;
  // Errors on keys outside `allowed`, non-scalar keys and duplicate keys.
  // Also requires a map.
  Status CheckKeys(std::initializer_list<std::string_view> allowed) const;
  // Requires a map (or null) whose keys are distinct plain strings.
  Status CheckUniqueKeys() const;
  // Errors when `key` is absent.
  Status Require(std::string_view key) const;

  // Child of a map by key (missing if absent or not a map).
  Field Key(std::string_view key) const;
  bool Has(std::string_view key) const { return Key(key).present(); }
  // Elements of a sequence; a null node counts as empty.
  std::vector<Field> Items() const;
  // Entries of a map in document order, keys as written; a null node counts
  // as empty. The key `Field` carries the key's own position.
  std::vector<std::pair<Field, Field>> Entries() const;

  Result<std::string> String() const;
  Result<int64_t> Int(int64_t min, int64_t max) const;
  Result<bool> Bool() const;  // only `true` / `false`
  Result<core::Amount> Quantity() const;
  Result<std::map<std::string, std::string>> StringMap() const;
  Result<std::vector<std::string>> StringList() const;

 private:
  Field(SourcePos pos, std::string path, std::shared_ptr<const std::string> file);  // missing
  std::string ChildPath(std::string_view key) const;

  YAML::Node node_;
  bool present_ = false;
  std::string path_;
  std::shared_ptr<const std::string> file_;
  SourcePos pos_;
};

}  // namespace artel::sim
