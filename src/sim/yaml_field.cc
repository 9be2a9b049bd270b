#include "sim/yaml_field.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <set>

namespace artel::sim {
namespace {

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                  std::tolower(static_cast<unsigned char>(b[j - 1]));
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (same ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

const char* ShapeName(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map: return "a map";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Scalar: return "a scalar";
    case YAML::NodeType::Null: return "null";
    case YAML::NodeType::Undefined: return "nothing";
  }
  return "something else";
}

}  // namespace

std::string DidYouMean(std::string_view word, const std::vector<std::string_view>& candidates) {
  std::string_view best;
  size_t best_d = std::string_view::npos;
  for (std::string_view c : candidates) {
    size_t d = EditDistance(word, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  // A typo changes a few characters; beyond a third of the word it is more
  // likely a different idea than a misspelling, and a hint would mislead.
  size_t limit = std::max<size_t>(2, std::max(word.size(), best.size()) / 3);
  if (best.empty() || best_d > limit) return "";
  return " (did you mean `" + std::string(best) + "`?)";
}

SourcePos PosFromMark(const std::string& file, const YAML::Mark& mark) {
  SourcePos pos;
  pos.file = file;
  if (!mark.is_null()) {
    pos.line = mark.line + 1;
    pos.column = mark.column + 1;
  }
  return pos;
}

Field::Field(YAML::Node node, std::string path, std::shared_ptr<const std::string> file)
    : node_(std::move(node)), present_(node_.IsDefined()), path_(std::move(path)), file_(std::move(file)) {
  pos_ = PosFromMark(*file_, node_.Mark());
}

Field::Field(SourcePos pos, std::string path, std::shared_ptr<const std::string> file)
    : present_(false), path_(std::move(path)), file_(std::move(file)), pos_(std::move(pos)) {}

Status Field::Error(std::string message) const {
  Status st = InvalidArgument(std::move(message));
  st.WithField(path_).WithPos(pos_);
  return st;
}

Status Field::RequireMap() const {
  if (!present_) return Error("missing required field");
  if (!node_.IsMap()) return Error(std::string("expected a map, got ") + ShapeName(node_));
  return Status::Ok();
}

Status Field::RequireSeq() const {
  if (!present_) return Error("missing required field");
  if (!node_.IsSequence()) return Error(std::string("expected a list, got ") + ShapeName(node_));
  return Status::Ok();
}

Status Field::CheckKeys(std::initializer_list<std::string_view> allowed) const {
  ARTEL_RETURN_IF_ERROR(RequireMap());
  std::vector<std::string_view> names(allowed);
  std::set<std::string> seen;
  for (auto it = node_.begin(); it != node_.end(); ++it) {
    Field key(it->first, path_, file_);
    if (!it->first.IsScalar()) return key.Error("map keys must be plain strings");
    const std::string& k = it->first.Scalar();
    key.path_ = ChildPath(k);
    if (!seen.insert(k).second) return key.Error("duplicate key `" + k + "`");
    if (std::find(names.begin(), names.end(), k) == names.end()) {
      return key.Error("unknown field `" + k + "`" + DidYouMean(k, names));
    }
  }
  return Status::Ok();
}

Status Field::CheckUniqueKeys() const {
  if (IsNull()) return Status::Ok();
  ARTEL_RETURN_IF_ERROR(RequireMap());
  std::set<std::string> seen;
  for (auto it = node_.begin(); it != node_.end(); ++it) {
    Field key(it->first, path_, file_);
    if (!it->first.IsScalar()) return key.Error("map keys must be plain strings");
    key.path_ = ChildPath(it->first.Scalar());
    if (!seen.insert(it->first.Scalar()).second)
      return key.Error("duplicate key `" + it->first.Scalar() + "`");
  }
  return Status::Ok();
}

Status Field::Require(std::string_view key) const {
  if (!Has(key)) {
    Field missing(pos_, ChildPath(key), file_);
    return missing.Error("missing required field `" + std::string(key) + "`");
  }
  return Status::Ok();
}

std::string Field::ChildPath(std::string_view key) const {
  // Keys with dots or slashes (resource and label names) are bracketed so the
  // path stays unambiguous: `requests[nvidia.com/gpu]`.
  bool plain = key.find_first_of("./[] ") == std::string_view::npos && !key.empty();
  if (!plain) return path_ + "[" + std::string(key) + "]";
  if (path_.empty()) return std::string(key);
  return path_ + "." + std::string(key);
}

Field Field::Key(std::string_view key) const {
  if (IsMap()) {
    for (auto it = node_.begin(); it != node_.end(); ++it) {
      if (it->first.IsScalar() && it->first.Scalar() == key) return Field(it->second, ChildPath(key), file_);
    }
  }
  return Field(pos_, ChildPath(key), file_);
}

std::vector<Field> Field::Items() const {
  std::vector<Field> out;
  if (!IsSeq()) return out;
  for (size_t i = 0; i < node_.size(); ++i) {
    out.emplace_back(node_[i], path_ + "[" + std::to_string(i) + "]", file_);
  }
  return out;
}

std::vector<std::pair<Field, Field>> Field::Entries() const {
  std::vector<std::pair<Field, Field>> out;
  if (!IsMap()) return out;
  for (auto it = node_.begin(); it != node_.end(); ++it) {
    std::string k = it->first.IsScalar() ? it->first.Scalar() : "?";
    Field key(it->first, ChildPath(k), file_);
    Field value(it->second, ChildPath(k), file_);
    out.emplace_back(std::move(key), std::move(value));
  }
  return out;
}

Result<std::string> Field::String() const {
  if (!present_) return Error("missing required field");
  if (!node_.IsScalar()) return Error(std::string("expected a string, got ") + ShapeName(node_));
  return node_.Scalar();
}

Result<int64_t> Field::Int(int64_t min, int64_t max) const {
  ARTEL_ASSIGN_OR_RETURN(std::string s, String());
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return Error("expected an integer, got \"" + s + "\"");
  if (v < min || v > max) {
    return Error("value " + s + " is out of range [" + std::to_string(min) + ", " + std::to_string(max) +
                 "]");
  }
  return v;
}

Result<bool> Field::Bool() const {
  ARTEL_ASSIGN_OR_RETURN(std::string s, String());
  if (s == "true") return true;
  if (s == "false") return false;
  return Error("expected true or false, got \"" + s + "\"");
}

Result<core::Amount> Field::Quantity() const {
  ARTEL_ASSIGN_OR_RETURN(std::string s, String());
  Result<core::Amount> q = core::ParseQuantity(s);
  if (!q.ok()) return Error(q.status().message());
  return *q;
}

Result<std::map<std::string, std::string>> Field::StringMap() const {
  std::map<std::string, std::string> out;
  if (IsNull()) return out;
  ARTEL_RETURN_IF_ERROR(CheckUniqueKeys());
  for (auto& [k, v] : Entries()) {
    ARTEL_ASSIGN_OR_RETURN(std::string key, k.String());
    ARTEL_ASSIGN_OR_RETURN(std::string value, v.String());
    out[key] = value;
  }
  return out;
}

Result<std::vector<std::string>> Field::StringList() const {
  std::vector<std::string> out;
  if (IsNull()) return out;
  ARTEL_RETURN_IF_ERROR(RequireSeq());
  for (const Field& item : Items()) {
    ARTEL_ASSIGN_OR_RETURN(std::string s, item.String());
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace artel::sim
