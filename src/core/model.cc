#include "core/model.h"

#include <algorithm>
#include <charconv>
#include <system_error>

namespace artel::core {

bool Toleration::Tolerates(const Taint& t) const {
  if (!effect.empty() && effect != t.effect) return false;
  if (op == "Exists") return key.empty() || key == t.key;
  // "Equal" (the default)
  return key == t.key && value == t.value;
}

namespace {
bool ParseInt64(const std::string& t, int64_t* out) {
  auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), *out);
  return !t.empty() && ec == std::errc() && ptr == t.data() + t.size();
}
}  // namespace

std::string NodeSelectorRequirement::Problem(std::string* field) const {
  if (key.empty()) {
    *field = "key";
    return "must not be empty";
  }
  const bool listed = op == "In" || op == "NotIn", bare = op == "Exists" || op == "DoesNotExist";
  const bool compare = op == "Gt" || op == "Lt";
  if (!listed && !bare && !compare) {
    *field = "operator";
    return "must be In, NotIn, Exists, DoesNotExist, Gt or Lt";
  }
  *field = "values";
  int64_t v = 0;
  if (listed && values.empty()) return "operator " + op + " needs at least one value";
  if (bare && !values.empty()) return "must be empty with operator " + op;
  if (compare && (values.size() != 1 || !ParseInt64(values[0], &v)))
    return "operator " + op + " needs exactly one integer value";
  field->clear();
  return "";
}

bool NodeSelectorRequirement::Matches(const std::map<std::string, std::string>& labels) const {
  auto it = labels.find(key);
  const bool has = it != labels.end();
  if (op == "Exists") return has;
  if (op == "DoesNotExist") return !has;
  if (op == "In") return has && std::find(values.begin(), values.end(), it->second) != values.end();
  if (op == "NotIn") return !has || std::find(values.begin(), values.end(), it->second) == values.end();
  if (op == "Gt" || op == "Lt") {
    if (!has || values.size() != 1) return false;
    int64_t have = 0, want = 0;
    if (!ParseInt64(it->second, &have) || !ParseInt64(values[0], &want)) return false;
    return op == "Gt" ? have > want : have < want;
  }
  return false;
}

bool NodeSelectorTerm::Matches(const std::map<std::string, std::string>& labels) const {
  if (match_expressions.empty()) return false;
  for (const NodeSelectorRequirement& r : match_expressions) {
    if (!r.Matches(labels)) return false;
  }
  return true;
}

bool NodeAffinityMatches(const std::vector<NodeSelectorTerm>& terms,
                         const std::map<std::string, std::string>& labels) {
  if (terms.empty()) return true;
  for (const NodeSelectorTerm& t : terms) {
    if (t.Matches(labels)) return true;
  }
  return false;
}

bool LabelSelector::Matches(const std::map<std::string, std::string>& labels) const {
  for (const auto& [k, v] : match_labels) {
    auto it = labels.find(k);
    if (it == labels.end() || it->second != v) return false;
  }
  for (const auto& req : match_expressions) {
    auto it = labels.find(req.key);
    bool has = it != labels.end();
    bool in = has && std::find(req.values.begin(), req.values.end(), it->second) != req.values.end();
    if (req.op == "In" && !in) return false;
    if (req.op == "NotIn" && in) return false;
    if (req.op == "Exists" && !has) return false;
    if (req.op == "DoesNotExist" && has) return false;
  }
  return true;
}

}  // namespace artel::core
