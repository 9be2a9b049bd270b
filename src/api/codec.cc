#include "api/codec.h"

#include <yaml-cpp/yaml.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <functional>
#include <set>

#include "core/placement/placement.h"
#include "core/quantity.h"
#include "manifest/manifest.h"
#include "manifest/typed_fields.h"
#include "manifest/yaml_util.h"

namespace artel::api {
namespace {

constexpr int kMaxDepth = 64;
constexpr int kMaxIndent = 1024;
constexpr char kBodySource[] = "request body";

Status Invalid(const std::string& field, const std::string& msg) {
  Status s = InvalidArgument(msg);
  s.WithField(field);
  return s;
}

// Rejects inputs whose bracket nesting (outside strings) or indentation is
// deep enough to threaten a recursive parser.
Status CheckDepth(std::string_view body) {
  int depth = 0;
  bool in_str = false;
  char quote = 0;
  int indent = 0;
  bool line_start = true;
  for (size_t i = 0; i < body.size(); ++i) {
    char c = body[i];
    if (line_start) {
      if (c == ' ' || c == '\t' || c == '-') {
        if (++indent > kMaxIndent) return InvalidArgument("document is nested too deeply");
        continue;
      }
      line_start = false;
    }
    if (c == '\n') {
      line_start = true;
      indent = 0;
    }
    if (in_str) {
      if (c == '\\' && quote == '"') {
        ++i;
      } else if (c == quote) {
        in_str = false;
      }
      continue;
    }
    if (c == '"' || c == '\'') {
      in_str = true;
      quote = c;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxDepth) return InvalidArgument("document is nested too deeply (more than 64 levels)");
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return Status::Ok();
}

Json ScalarToJson(const YAML::Node& n) {
  const std::string& s = n.Scalar();
  if (n.Tag() == "!") return s;  // quoted scalar
  if (s == "null" || s == "~" || s.empty()) return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  {
    char* end = nullptr;
    errno = 0;
    long long v = std::strtoll(s.c_str(), &end, 10);
    if (errno == 0 && end && *end == '\0' && !s.empty() &&
        (std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '-')) {
      return static_cast<int64_t>(v);
    }
  }
  {
    char* end = nullptr;
    errno = 0;
    double d = std::strtod(s.c_str(), &end);
    bool looks_numeric = std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '-' || s[0] == '.';
    if (errno == 0 && end && *end == '\0' && looks_numeric && s.find_first_of("xXnN") == std::string::npos)
      return d;
  }
  return s;
}

Result<Json> NodeToJson(const YAML::Node& n, int depth) {
  if (depth > kMaxDepth) return InvalidArgument("document is nested too deeply");
  switch (n.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined: return Json(nullptr);
    case YAML::NodeType::Scalar: return ScalarToJson(n);
    case YAML::NodeType::Sequence: {
      Json arr = Json::array();
      for (const auto& c : n) {
        auto r = NodeToJson(c, depth + 1);
        if (!r.ok()) return r;
        arr.push_back(std::move(r).value());
      }
      return arr;
    }
    case YAML::NodeType::Map: {
      Json obj = Json::object();
      for (const auto& kv : n) {
        if (!kv.first.IsScalar()) return InvalidArgument("map keys must be scalars");
        auto r = NodeToJson(kv.second, depth + 1);
        if (!r.ok()) return r;
        obj[kv.first.Scalar()] = std::move(r).value();
      }
      return obj;
    }
  }
  return Json(nullptr);
}

// Re-reads a JSON text that failed to parse and returns the field path of
// the value being read when the parser stopped (for an invalid UTF-8 byte in
// a string: that string's field), or "" at the top level.
class PathSax {
 public:
  using number_integer_t = Json::number_integer_t;
  using number_unsigned_t = Json::number_unsigned_t;
  using number_float_t = Json::number_float_t;
  using string_t = Json::string_t;
  using binary_t = Json::binary_t;

  std::string path() const {
    std::string out;
    for (const Level& l : stack_) {
      if (l.is_object) {
        if (!l.has_key) break;
        if (!out.empty()) out += '.';
        out += l.key;
      } else {
        out += "[" + std::to_string(l.index) + "]";
      }
    }
    return out;
  }

  bool null() { return Value(); }
  bool boolean(bool) { return Value(); }
  bool number_integer(number_integer_t) { return Value(); }
  bool number_unsigned(number_unsigned_t) { return Value(); }
  bool number_float(number_float_t, const string_t&) { return Value(); }
  bool string(string_t&) { return Value(); }
  bool binary(binary_t&) { return Value(); }
  bool start_object(std::size_t) {
    stack_.push_back(Level{true, false, {}, 0});
    return true;
  }
  bool key(string_t& k) {
    stack_.back().key = k;
    stack_.back().has_key = true;
    return true;
  }
  bool end_object() { return Close(); }
  bool start_array(std::size_t) {
    stack_.push_back(Level{false, false, {}, 0});
    return true;
  }
  bool end_array() { return Close(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) { return false; }

 private:
  struct Level {
    bool is_object;
    bool has_key;
    std::string key;
    size_t index;
  };
  bool Value() {
    if (!stack_.empty()) {
      if (stack_.back().is_object) {
        stack_.back().has_key = false;
      } else {
        ++stack_.back().index;
      }
    }
    return true;
  }
  bool Close() {
    stack_.pop_back();
    return Value();
  }
  std::vector<Level> stack_;
};

std::string JsonErrorPath(std::string_view body) {
  PathSax sax;
  try {
    Json::sax_parse(body.begin(), body.end(), &sax);
  } catch (const Json::exception&) {
  }
  std::string path = sax.path();
  // Keys were read by the parser, so they are valid UTF-8; keep it so anyway.
  path.resize(manifest::yaml::ValidUtf8Prefix(path));
  return path;
}

// ---- strict readers -------------------------------------------------------

Status CheckKeys(const Json& obj, const std::string& path, std::initializer_list<std::string_view> allowed) {
  if (!obj.is_object()) return Invalid(path, "must be an object");
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    bool ok = false;
    for (auto a : allowed) ok = ok || a == it.key();
    if (!ok)
      return Invalid(path.empty() ? it.key() : path + "." + it.key(), "unknown field \"" + it.key() + "\"");
  }
  return Status::Ok();
}

std::string Join(const std::string& path, std::string_view key) {
  return path.empty() ? std::string(key) : path + "." + std::string(key);
}

Status ReadString(const Json& obj, std::string_view key, const std::string& path, std::string* out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return Status::Ok();
  if (!it->is_string()) return Invalid(Join(path, key), "must be a string");
  *out = it->get<std::string>();
  return Status::Ok();
}

Status ReadInt(const Json& obj, std::string_view key, const std::string& path, std::optional<int64_t>* out,
               int64_t lo, int64_t hi) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return Status::Ok();
  if (!it->is_number_integer()) return Invalid(Join(path, key), "must be an integer");
  int64_t v = it->get<int64_t>();
  if (v < lo || v > hi) {
    return Invalid(Join(path, key), "must be between " + std::to_string(lo) + " and " + std::to_string(hi));
  }
  *out = v;
  return Status::Ok();
}

template <typename Map>  // std::map or core::FlatMap of string to string
Status ReadStringMap(const Json& obj, std::string_view key, const std::string& path, Map* out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return Status::Ok();
  if (!it->is_object()) return Invalid(Join(path, key), "must be a map of strings");
  for (auto e = it->begin(); e != it->end(); ++e) {
    if (!e->is_string()) return Invalid(Join(path, key) + "." + e.key(), "must be a string");
    (*out)[e.key()] = e->get<std::string>();
  }
  return Status::Ok();
}

Status ReadStringList(const Json& obj, std::string_view key, const std::string& path,
                      std::vector<std::string>* out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return Status::Ok();
  if (!it->is_array()) return Invalid(Join(path, key), "must be a list of strings");
  for (size_t i = 0; i < it->size(); ++i) {
    if (!(*it)[i].is_string())
      return Invalid(Join(path, key) + "[" + std::to_string(i) + "]", "must be a string");
    out->push_back((*it)[i].get<std::string>());
  }
  return Status::Ok();
}

Status ReadQuantity(const Json& v, const std::string& path, core::Amount* out) {
  std::string text;
  if (v.is_string()) {
    text = v.get<std::string>();
    // Kubernetes reads neither padding nor a '+' sign in a quantity; a
    // quantity that only looks right ("1 ", "+1") is a mistake to report.
    if (!text.empty() && (std::isspace(static_cast<unsigned char>(text.front())) ||
                          std::isspace(static_cast<unsigned char>(text.back())))) {
      return Invalid(path, "\"" + text + "\" must not start or end with spaces");
    }
    if (!text.empty() && text.front() == '+')
      return Invalid(path, "\"" + text + "\" must not have a '+' sign");
  } else if (v.is_number_integer()) {
    text = std::to_string(v.get<int64_t>());
  } else if (v.is_number_float()) {
    text = v.dump();
  } else {
    return Invalid(path, "must be a quantity such as \"1\", \"500m\" or \"20Gi\"");
  }
  auto q = core::ParseQuantity(text);
  if (!q.ok()) return Invalid(path, q.status().message());
  if (*q < 0) return Invalid(path, "must not be negative");
  *out = *q;
  return Status::Ok();
}

template <typename Map>  // std::map or core::FlatMap of string to Amount
Status ReadRequests(const Json& obj, std::string_view key, const std::string& path, Map* out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return Status::Ok();
  if (!it->is_object()) return Invalid(Join(path, key), "must be a map of resource name to quantity");
  for (auto e = it->begin(); e != it->end(); ++e) {
    core::Amount a = 0;
    std::string p = Join(path, key) + "." + e.key();
    if (e.key().empty() || e.key().size() > 253) return Invalid(p, "invalid resource name");
    if (Status s = ReadQuantity(*e, p, &a); !s.ok()) return s;
    (*out)[e.key()] += a;
  }
  return Status::Ok();
}

Status ReadTolerations(const Json& obj, std::string_view key, const std::string& path, bool strict,
                       std::vector<core::Toleration>* out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return Status::Ok();
  if (!it->is_array()) return Invalid(Join(path, key), "must be a list");
  for (size_t i = 0; i < it->size(); ++i) {
    const Json& t = (*it)[i];
    std::string p = Join(path, key) + "[" + std::to_string(i) + "]";
    if (!t.is_object()) return Invalid(p, "must be an object");
    if (strict) {
      if (Status s = CheckKeys(t, p, {"key", "operator", "value", "effect", "tolerationSeconds"}); !s.ok())
        return s;
    }
    core::Toleration tol;
    if (Status s = ReadString(t, "key", p, &tol.key); !s.ok()) return s;
    if (Status s = ReadString(t, "operator", p, &tol.op); !s.ok()) return s;
    if (Status s = ReadString(t, "value", p, &tol.value); !s.ok()) return s;
    if (Status s = ReadString(t, "effect", p, &tol.effect); !s.ok()) return s;
    if (tol.op != "Equal" && tol.op != "Exists") return Invalid(p + ".operator", "must be Equal or Exists");
    out->push_back(std::move(tol));
  }
  return Status::Ok();
}

// Required node affinity terms: [{"matchExpressions": [{"key","operator","values"}]}].
Status ReadNodeAffinity(const Json& terms, const std::string& p, std::vector<core::NodeSelectorTerm>* out) {
  if (terms.is_null()) return Status::Ok();
  if (!terms.is_array() || terms.empty()) return Invalid(p, "must be a non-empty list of terms");
  for (size_t i = 0; i < terms.size(); ++i) {
    const Json& t = terms[i];
    std::string tp = p + "[" + std::to_string(i) + "]";
    if (!t.is_object()) return Invalid(tp, "must be an object");
    if (Status s = CheckKeys(t, tp, {"matchExpressions"}); !s.ok()) return s;
    auto me = t.find("matchExpressions");
    if (me == t.end() || !me->is_array() || me->empty())
      return Invalid(tp + ".matchExpressions", "needs at least one");
    core::NodeSelectorTerm term;
    for (size_t j = 0; j < me->size(); ++j) {
      const Json& e = (*me)[j];
      std::string ep = tp + ".matchExpressions[" + std::to_string(j) + "]";
      if (!e.is_object()) return Invalid(ep, "must be an object");
      if (Status s = CheckKeys(e, ep, {"key", "operator", "values"}); !s.ok()) return s;
      core::NodeSelectorRequirement r;
      if (Status s = ReadString(e, "key", ep, &r.key); !s.ok()) return s;
      if (Status s = ReadString(e, "operator", ep, &r.op); !s.ok()) return s;
      if (Status s = ReadStringList(e, "values", ep, &r.values); !s.ok()) return s;
      std::string culprit;
      std::string problem = r.Problem(&culprit);
      if (!problem.empty()) return Invalid(ep + "." + culprit, problem);
      term.match_expressions.push_back(std::move(r));
    }
    out->push_back(std::move(term));
  }
  return Status::Ok();
}

Status ReadMetadata(const Json& j, bool strict, core::WorkloadSpec* spec, std::string* generate_name) {
  auto it = j.find("metadata");
  if (it == j.end() || !it->is_object()) return Invalid("metadata", "is required and must be an object");
  const Json& md = *it;
  if (strict) {
    if (Status s = CheckKeys(md, "metadata", {"name", "namespace", "generateName", "labels", "annotations"});
        !s.ok()) {
      return s;
    }
  }
  std::string gen;
  if (Status s = ReadString(md, "name", "metadata", &spec->name); !s.ok()) return s;
  if (Status s = ReadString(md, "namespace", "metadata", &spec->ns); !s.ok()) return s;
  if (Status s = ReadString(md, "generateName", "metadata", &gen); !s.ok()) return s;
  if (Status s = ReadStringMap(md, "labels", "metadata", &spec->labels); !s.ok()) return s;
  if (Status s = ReadStringMap(md, "annotations", "metadata", &spec->annotations); !s.ok()) return s;
  if (spec->name.empty()) {
    if (gen.empty()) return Invalid("metadata.name", "is required (or set metadata.generateName)");
    if (gen.size() > 57 || !IsDnsLabel(gen + "x"))
      return Invalid("metadata.generateName", "must be a DNS-1123 label prefix");
    if (generate_name == nullptr) return Invalid("metadata.name", "is required");
    *generate_name = gen;
  } else if (!IsDnsLabel(spec->name)) {
    return Invalid("metadata.name",
                   "must be a DNS-1123 label (lowercase letters, digits and '-', at most 63)");
  }
  if (spec->ns.empty()) return Invalid("metadata.namespace", "is required");
  if (!IsDnsLabel(spec->ns)) return Invalid("metadata.namespace", "must be a DNS-1123 label");
  return Status::Ok();
}

// Checks at submit what the engine would otherwise find only when placing
// the pod set (and then report as Infeasible forever): the GPU request must
// be one the placement layer reads (core::placement::ParseGpuRequest), so a
// fraction of nvidia.com/gpu without a slicing request is refused here.
Status CheckGpuRequest(const core::PodSetSpec& ps, const std::string& requests_path) {
  auto g = core::placement::ParseGpuRequest(ps.requests, ps.gpu_share);
  if (g.ok()) return Status::Ok();
  std::string msg = g.status().message();
  std::string field = requests_path;
  for (const auto& [name, amount] : ps.requests) {
    if (msg.starts_with(name + " ")) {
      field += "." + name;
      break;
    }
  }
  if (msg.find("whole number") != std::string::npos) {
    msg +=
        "; a fraction of a GPU needs a slicing request (nvidia.com/gpumem, artel.dev/gpu-memory, a MIG "
        "profile or the gpu-fraction annotation; docs/placement.md)";
  }
  return Invalid(field, msg);
}

// Where a pod set's field came from in the submitted object: "spec.podSets[i].F"
// for a Workload, the pod template's first container for a Job.
using PodSetPath = std::function<std::string(size_t pod_set, std::string_view field)>;

std::string WorkloadPodSetPath(size_t i, std::string_view field) {
  return "spec.podSets[" + std::to_string(i) + "]." + std::string(field);
}

std::string JobPodSetPath(size_t, std::string_view field) {
  const std::string pod = "spec.template.spec";
  if (field == "nodeSelector" || field == "tolerations" || field == "annotations")
    return pod + "." + std::string(field);
  if (field == "nodeAffinity")
    return pod + ".affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms";
  if (field == "requests") return pod + ".containers[0].resources.requests";
  return pod + ".containers[0]." + std::string(field);
}

std::string KueuePodSetPath(size_t i, std::string_view field) {
  const std::string pod = "spec.podSets[" + std::to_string(i) + "].template.spec";
  if (field == "nodeSelector" || field == "tolerations") return pod + "." + std::string(field);
  if (field == "annotations") return "spec.podSets[" + std::to_string(i) + "].template.metadata.annotations";
  if (field == "nodeAffinity")
    return pod + ".affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms";
  if (field == "requests") return pod + ".containers[0].resources.requests";
  return pod + ".containers[0]." + std::string(field);
}

Status CheckNoNul(const std::string& s, const std::string& field) {
  if (s.find('\0') != std::string::npos) return Invalid(field, "must not contain a NUL byte");
  return Status::Ok();
}

template <typename Map>  // std::map or core::FlatMap of string to string
Status CheckNoNul(const Map& m, const std::string& field) {
  for (const auto& [k, v] : m) {
    if (k.find('\0') != std::string::npos) return Invalid(field, "a key must not contain a NUL byte");
    if (Status s = CheckNoNul(v, field + "." + k); !s.ok()) return s;
  }
  return Status::Ok();
}

// What a new submission must also satisfy, beyond being well formed. These
// are checked on POST only (WorkloadFromObject), not when the journal is
// read back (WorkloadFromJson), so that a workload acknowledged by an older
// arteld is never dropped on recovery.
//   - no NUL byte in any string: where a string reaches the kernel (exec
//     arguments, environment, paths) it would be cut silently;
//   - the program to run, when there is one, has a name;
//   - the GPU request is one placement can serve (CheckGpuRequest).
Status CheckSubmission(const core::WorkloadSpec& spec, const PodSetPath& path) {
  if (Status s = CheckNoNul(spec.labels, "metadata.labels"); !s.ok()) return s;
  if (Status s = CheckNoNul(spec.annotations, "metadata.annotations"); !s.ok()) return s;
  if (spec.priority_class) {
    if (Status s = CheckNoNul(*spec.priority_class, "spec.priorityClassName"); !s.ok()) return s;
  }
  for (size_t i = 0; i < spec.pod_sets.size(); ++i) {
    const core::PodSetSpec& ps = spec.pod_sets[i];
    for (size_t k = 0; k < ps.command.size(); ++k) {
      std::string f = path(i, "command") + "[" + std::to_string(k) + "]";
      if (Status s = CheckNoNul(ps.command[k], f); !s.ok()) return s;
    }
    if (!ps.command.empty() && ps.command.front().empty())
      return Invalid(path(i, "command") + "[0]", "the program name must not be empty");
    if (Status s = CheckNoNul(ps.env, path(i, "env")); !s.ok()) return s;
    if (Status s = CheckNoNul(ps.working_dir, path(i, "workingDir")); !s.ok()) return s;
    if (Status s = CheckNoNul(ps.node_selector, path(i, "nodeSelector")); !s.ok()) return s;
    if (Status s = CheckNoNul(ps.annotations, path(i, "annotations")); !s.ok()) return s;
    for (size_t k = 0; k < ps.tolerations.size(); ++k) {
      const core::Toleration& t = ps.tolerations[k];
      for (const std::string* v : {&t.key, &t.value, &t.effect}) {
        if (Status s = CheckNoNul(*v, path(i, "tolerations") + "[" + std::to_string(k) + "]"); !s.ok())
          return s;
      }
    }
    for (size_t k = 0; k < ps.node_affinity.size(); ++k) {
      for (const core::NodeSelectorRequirement& r : ps.node_affinity[k].match_expressions) {
        std::string f = path(i, "nodeAffinity") + "[" + std::to_string(k) + "]";
        if (Status s = CheckNoNul(r.key, f); !s.ok()) return s;
        for (const std::string& v : r.values) {
          if (Status s = CheckNoNul(v, f); !s.ok()) return s;
        }
      }
    }
    if (Status s = CheckGpuRequest(ps, path(i, "requests")); !s.ok()) return s;
  }
  return Status::Ok();
}

Status ReadPodSet(const Json& ps, const std::string& p, core::PodSetSpec* out) {
  if (Status s = CheckKeys(ps, p,
                           {"name", "count", "minCount", "requests", "nodeSelector", "nodeAffinity",
                            "tolerations", "annotations", "command", "env", "workingDir"});
      !s.ok()) {
    return s;
  }
  if (Status s = ReadString(ps, "name", p, &out->name); !s.ok()) return s;
  if (!IsDnsLabel(out->name)) return Invalid(p + ".name", "must be a DNS-1123 label");
  std::optional<int64_t> count, min_count;
  if (Status s = ReadInt(ps, "count", p, &count, 1, 1024); !s.ok()) return s;
  if (Status s = ReadInt(ps, "minCount", p, &min_count, 1, 1024); !s.ok()) return s;
  if (count) out->count = static_cast<int32_t>(*count);
  if (min_count) {
    if (*min_count > out->count) return Invalid(p + ".minCount", "must not exceed count");
    out->min_count = static_cast<int32_t>(*min_count);
  }
  if (Status s = ReadRequests(ps, "requests", p, &out->requests); !s.ok()) return s;
  if (Status s = ReadStringMap(ps, "nodeSelector", p, &out->node_selector); !s.ok()) return s;
  if (auto na = ps.find("nodeAffinity"); na != ps.end()) {
    if (Status s = ReadNodeAffinity(*na, p + ".nodeAffinity", &out->node_affinity); !s.ok()) return s;
  }
  if (Status s = ReadTolerations(ps, "tolerations", p, true, &out->tolerations); !s.ok()) return s;
  if (Status s = ReadStringMap(ps, "annotations", p, &out->annotations); !s.ok()) return s;
  if (Status s = ReadStringList(ps, "command", p, &out->command); !s.ok()) return s;
  if (Status s = ReadStringMap(ps, "env", p, &out->env); !s.ok()) return s;
  if (Status s = ReadString(ps, "workingDir", p, &out->working_dir); !s.ok()) return s;
  for (const auto& [k, v] : out->env) {
    if (k.empty() || k.find('=') != std::string::npos || k.find('\0') != std::string::npos) {
      return Invalid(p + ".env." + k, "invalid environment variable name");
    }
  }
  return Status::Ok();
}

}  // namespace

Json NodeAffinityToJson(const std::vector<core::NodeSelectorTerm>& terms) {
  Json out = Json::array();
  for (const auto& t : terms) {
    Json es = Json::array();
    for (const auto& r : t.match_expressions) {
      Json e = {{"key", r.key}, {"operator", r.op}};
      if (!r.values.empty()) e["values"] = r.values;
      es.push_back(e);
    }
    out.push_back({{"matchExpressions", es}});
  }
  return out;
}

Json TolerationsToJson(const std::vector<core::Toleration>& tolerations) {
  Json ts = Json::array();
  for (const auto& t : tolerations) {
    Json tj = {{"operator", t.op}};
    if (!t.key.empty()) tj["key"] = t.key;
    if (!t.value.empty()) tj["value"] = t.value;
    if (!t.effect.empty()) tj["effect"] = t.effect;
    ts.push_back(tj);
  }
  return ts;
}

bool IsDnsLabel(std::string_view s) {
  if (s.empty() || s.size() > 63) return false;
  for (char c : s) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  }
  return s.front() != '-' && s.back() != '-';
}

Result<Json> YamlToJson(std::string_view text) {
  if (Status s = CheckDepth(text); !s.ok()) return s;
  // The bounded loader refuses alias bombs, cycles and invalid UTF-8 before
  // NodeToJson expands anything (manifest/yaml_util.h).
  manifest::yaml::LoadLimits limits;
  limits.max_depth = kMaxDepth;
  Result<std::vector<YAML::Node>> docs = manifest::yaml::LoadDocuments(text, kBodySource, limits);
  if (!docs.ok()) return docs.status();
  if (docs->empty()) return Json(nullptr);
  try {
    return NodeToJson(docs->front(), 0);
  } catch (const YAML::Exception& e) {
    return InvalidArgument("malformed YAML at line " + std::to_string(e.mark.line + 1) + ", column " +
                           std::to_string(e.mark.column + 1) + ": " + e.msg);
  }
}

Result<Json> ParseBody(std::string_view body) {
  if (Status s = CheckDepth(body); !s.ok()) return s;
  size_t first = body.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return InvalidArgument("empty body");
  if (body[first] == '{' || body[first] == '[') {
    try {
      return Json::parse(body.begin(), body.end());
    } catch (const Json::parse_error& e) {
      Status s = InvalidArgument("malformed JSON at byte " + std::to_string(e.byte) + ": " +
                                 std::string(e.what()).substr(std::string(e.what()).find(':') + 2));
      // nlohmann's message quotes the last token read, which may hold the
      // very bytes that are not UTF-8; the error body must stay valid JSON.
      if (!manifest::yaml::IsValidUtf8(s.message()))
        s = InvalidArgument(manifest::yaml::EscapeInvalidUtf8(s.message()));
      if (std::string field = JsonErrorPath(body); !field.empty()) s.WithField(field);
      return s;
    } catch (const Json::exception& e) {
      return InvalidArgument(std::string("malformed JSON: ") + e.what());
    }
  }
  return YamlToJson(body);
}

Result<core::WorkloadSpec> WorkloadFromJson(const Json& j, std::string* generate_name) {
  if (!j.is_object()) return InvalidArgument("a workload must be a JSON object");
  if (Status s = CheckKeys(j, "", {"apiVersion", "kind", "metadata", "spec", "status"}); !s.ok()) return s;
  if (auto it = j.find("apiVersion"); it != j.end() && *it != std::string(kWorkloadApiVersion)) {
    return Invalid("apiVersion", "must be " + std::string(kWorkloadApiVersion));
  }
  core::WorkloadSpec spec;
  if (Status s = ReadMetadata(j, true, &spec, generate_name); !s.ok()) return s;
  auto sit = j.find("spec");
  if (sit == j.end() || !sit->is_object()) return Invalid("spec", "is required and must be an object");
  const Json& sp = *sit;
  if (Status s = CheckKeys(sp, "spec",
                           {"queueName", "priorityClassName", "priority", "active", "podSets",
                            "terminationGracePeriodSeconds", "backoffLimit", "maximumExecutionTimeSeconds"});
      !s.ok()) {
    return s;
  }
  if (Status s = ReadString(sp, "queueName", "spec", &spec.queue); !s.ok()) return s;
  if (spec.queue.empty()) return Invalid("spec.queueName", "is required");
  if (!IsDnsLabel(spec.queue)) return Invalid("spec.queueName", "must be a DNS-1123 label");
  std::string pc;
  if (Status s = ReadString(sp, "priorityClassName", "spec", &pc); !s.ok()) return s;
  if (!pc.empty()) spec.priority_class = pc;
  std::optional<int64_t> prio, grace, backoff;
  if (Status s = ReadInt(sp, "priority", "spec", &prio, -2000000000, 2000000000); !s.ok()) return s;
  if (prio) spec.priority = static_cast<int32_t>(*prio);
  if (auto it = sp.find("active"); it != sp.end() && !it->is_null()) {
    if (!it->is_boolean()) return Invalid("spec.active", "must be a boolean");
    spec.active = it->get<bool>();
  }
  if (Status s = ReadInt(sp, "terminationGracePeriodSeconds", "spec", &grace, 0, 86400); !s.ok()) return s;
  if (grace) spec.termination_grace = *grace * 1000;
  if (Status s = ReadInt(sp, "backoffLimit", "spec", &backoff, 0, 100); !s.ok()) return s;
  if (backoff) spec.backoff_limit = static_cast<int32_t>(*backoff);
  // Kueue's field: the most it may run, over all its admissions
  // (docs/semantics.md §11).
  std::optional<int64_t> max_exec;
  if (Status s = ReadInt(sp, "maximumExecutionTimeSeconds", "spec", &max_exec, 1, INT32_MAX); !s.ok())
    return s;
  if (max_exec) spec.max_runtime = *max_exec * 1000;
  auto pit = sp.find("podSets");
  if (pit == sp.end() || !pit->is_array() || pit->empty()) {
    return Invalid("spec.podSets", "is required: a non-empty list of pod sets");
  }
  if (pit->size() > 8) return Invalid("spec.podSets", "at most 8 pod sets");
  std::set<std::string> names;
  for (size_t i = 0; i < pit->size(); ++i) {
    core::PodSetSpec ps;
    std::string p = "spec.podSets[" + std::to_string(i) + "]";
    if (!(*pit)[i].is_object()) return Invalid(p, "must be an object");
    if (Status s = ReadPodSet((*pit)[i], p, &ps); !s.ok()) return s;
    if (!names.insert(ps.name).second)
      return Invalid(p + ".name", "duplicate pod set name \"" + ps.name + "\"");
    spec.pod_sets.push_back(std::move(ps));
  }
  // Strict at submission (CheckSubmission); here a spec read back from the
  // journal keeps what it was acknowledged with.
  manifest::ReadTypedFieldsLenient(&spec);
  return spec;
}

namespace {

// A Kubernetes object (batch/v1 Job, kueue.x-k8s.io Workload) read by the
// one reader of its kind, src/manifest's ParseWorkloads: the object is
// written back as text (JSON is YAML) and read there. Errors keep the
// field path; positions in the re-written text mean nothing to the client
// and are dropped. A name left to generateName is read under a placeholder
// and returned empty.
Result<core::WorkloadSpec> ReadWithManifest(const Json& j, const core::WorkloadSpec& meta) {
  Json copy = j;
  if (meta.name.empty()) copy["metadata"]["name"] = "generated";
  std::vector<core::WorkloadSpec> out;
  Status s =
      manifest::ParseWorkloads(copy.dump(-1, ' ', false, Json::error_handler_t::replace), kBodySource, &out);
  if (!s.ok()) {
    s.WithPos(SourcePos{});
    return s;
  }
  if (out.size() != 1) return InvalidArgument("the body must hold exactly one workload");
  core::WorkloadSpec spec = std::move(out.front());
  if (meta.name.empty()) spec.name.clear();
  return spec;
}

}  // namespace

Result<core::WorkloadSpec> WorkloadFromJob(const Json& j, std::string* generate_name) {
  if (!j.is_object()) return InvalidArgument("a Job must be an object");
  // Not j.value(): it throws when the field is there but not a string.
  if (auto av = j.find("apiVersion"); av == j.end() || *av != "batch/v1")
    return Invalid("apiVersion", "must be batch/v1 for a Job");
  core::WorkloadSpec meta;
  if (Status s = ReadMetadata(j, false, &meta, generate_name); !s.ok()) return s;
  auto q = meta.labels.find(std::string(kQueueNameLabel));
  if (q == meta.labels.end() || q->second.empty()) {
    return Invalid("metadata.labels", "a Job needs the label " + std::string(kQueueNameLabel));
  }
  if (!IsDnsLabel(q->second))
    return Invalid("metadata.labels." + std::string(kQueueNameLabel), "must be a DNS-1123 label");
  return ReadWithManifest(j, meta);
}

// A Kueue Workload (kueue.x-k8s.io/v1beta1 or v1beta2).
Result<core::WorkloadSpec> WorkloadFromKueueWorkload(const Json& j, std::string* generate_name) {
  core::WorkloadSpec meta;
  if (Status s = ReadMetadata(j, false, &meta, generate_name); !s.ok()) return s;
  Result<core::WorkloadSpec> spec = ReadWithManifest(j, meta);
  if (!spec.ok()) return spec;
  if (!IsDnsLabel(spec->queue)) return Invalid("spec.queueName", "must be a DNS-1123 label");
  return spec;
}

Result<core::WorkloadSpec> WorkloadFromObject(const Json& j, std::string* generate_name) {
  if (!j.is_object()) return InvalidArgument("the body must be a Workload or Job object");
  // Not j.value(): it throws when `kind` is there but not a string (found
  // by fuzz_api_body: `kind:` with no value answered 500).
  std::string kind = "Workload";
  if (auto it = j.find("kind"); it != j.end() && !it->is_null()) {
    if (!it->is_string()) return Invalid("kind", "must be Workload or Job");
    kind = it->get<std::string>();
  }
  if (kind != "Workload" && kind != "Job") {
    return Invalid("kind", "must be Workload or Job, not \"" + kind + "\"");
  }
  bool job = kind == "Job";
  bool kueue = false;
  if (auto av = j.find("apiVersion"); !job && av != j.end() && av->is_string()) {
    kueue = av->get<std::string>().starts_with("kueue.x-k8s.io/");
  }
  auto spec = job     ? WorkloadFromJob(j, generate_name)
              : kueue ? WorkloadFromKueueWorkload(j, generate_name)
                      : WorkloadFromJson(j, generate_name);
  if (!spec.ok()) return spec;
  const PodSetPath path = job ? JobPodSetPath : kueue ? KueuePodSetPath : WorkloadPodSetPath;
  // The request annotations, strictly: a value that cannot be read is
  // refused here, not found at placement.
  if (Status s = manifest::ReadTypedFields(&*spec,
                                           [&path](int i) {
                                             return i < 0 ? std::string("metadata.annotations")
                                                          : path(static_cast<size_t>(i), "annotations");
                                           });
      !s.ok())
    return s;
  if (Status s = CheckSubmission(*spec, path); !s.ok()) return s;
  return spec;
}

Json WorkloadSpecToJson(const core::WorkloadSpec& spec) {
  Json md = {{"name", spec.name}, {"namespace", spec.ns}};
  if (!spec.labels.empty()) md["labels"] = spec.labels;
  if (!spec.annotations.empty()) md["annotations"] = spec.annotations;
  Json sp = {{"queueName", spec.queue}};
  if (spec.priority_class) sp["priorityClassName"] = *spec.priority_class;
  if (spec.priority) sp["priority"] = *spec.priority;
  if (!spec.active) sp["active"] = false;
  if (spec.termination_grace) sp["terminationGracePeriodSeconds"] = *spec.termination_grace / 1000;
  if (spec.backoff_limit) sp["backoffLimit"] = spec.backoff_limit;
  if (spec.max_runtime) sp["maximumExecutionTimeSeconds"] = *spec.max_runtime / 1000;
  Json sets = Json::array();
  for (const auto& ps : spec.pod_sets) {
    Json p = {{"name", ps.name}, {"count", ps.count}};
    if (ps.min_count) p["minCount"] = *ps.min_count;
    if (!ps.requests.empty()) {
      Json r = Json::object();
      for (const auto& [k, v] : ps.requests) r[k] = core::FormatQuantity(v);
      p["requests"] = r;
    }
    if (!ps.node_selector.empty()) p["nodeSelector"] = ps.node_selector;
    if (!ps.node_affinity.empty()) p["nodeAffinity"] = NodeAffinityToJson(ps.node_affinity);
    if (!ps.tolerations.empty()) p["tolerations"] = TolerationsToJson(ps.tolerations);
    if (!ps.annotations.empty()) p["annotations"] = ps.annotations;
    if (!ps.command.empty()) p["command"] = ps.command;
    if (!ps.env.empty()) p["env"] = ps.env;
    if (!ps.working_dir.empty()) p["workingDir"] = ps.working_dir;
    sets.push_back(p);
  }
  sp["podSets"] = sets;
  return Json{{"apiVersion", kWorkloadApiVersion}, {"kind", "Workload"}, {"metadata", md}, {"spec", sp}};
}

Json ErrorJson(const Status& s) {
  // Messages may quote user input; an error body must always encode.
  using manifest::yaml::EscapeInvalidUtf8;
  Json j = {{"code", StatusCodeName(s.code())}, {"message", EscapeInvalidUtf8(s.message())}};
  if (!s.field().empty()) j["field"] = EscapeInvalidUtf8(s.field());
  if (s.pos().known()) j["position"] = EscapeInvalidUtf8(s.pos().ToString());
  return j;
}

}  // namespace artel::api
