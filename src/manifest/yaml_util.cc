#include "manifest/yaml_util.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <set>

namespace artel::manifest::yaml {
namespace {

// Mistakes seen in the wild. The quota entries come from tutorials that show
// other schedulers' queue objects (min/max capacity, Volcano `capability`),
// and from users who put Workload pod-set fields (`minCount`) on a quota.
constexpr FieldHint kBuiltinHints[] = {
    {"minCount", "nominalQuota",
     "minCount is the partial-admission field of a Workload pod set; a ClusterQueue guarantees "
     "quota with nominalQuota"},
    {"min", "nominalQuota", "the guaranteed amount of a quota is nominalQuota"},
    {"minimum", "nominalQuota", "the guaranteed amount of a quota is nominalQuota"},
    {"quota", "nominalQuota", "the guaranteed amount of a quota is nominalQuota"},
    {"nominal", "nominalQuota", ""},
    {"guaranteed", "nominalQuota", "the guaranteed amount of a quota is nominalQuota"},
    {"deserved", "nominalQuota", "Volcano's deserved corresponds to nominalQuota"},
    {"limit", "nominalQuota", "the guaranteed amount of a quota is nominalQuota"},
    {"capability", "nominalQuota", "Volcano's capability is nominalQuota plus borrowingLimit"},
    {"maxCount", "borrowingLimit",
     "the most a ClusterQueue may take beyond its nominalQuota is borrowingLimit"},
    {"max", "borrowingLimit", "the most a ClusterQueue may take beyond its nominalQuota is borrowingLimit"},
    {"maximum", "borrowingLimit",
     "the most a ClusterQueue may take beyond its nominalQuota is borrowingLimit"},
    {"maxQuota", "borrowingLimit",
     "the most a ClusterQueue may take beyond its nominalQuota is borrowingLimit"},
    {"borrowLimit", "borrowingLimit", ""},
    {"lendLimit", "lendingLimit", ""},
    {"cohort", "cohortName", "kueue.x-k8s.io/v1beta2 renamed spec.cohort to spec.cohortName"},
    {"cohortName", "cohort", "kueue.x-k8s.io/v1beta1 spells it spec.cohort (cohortName is v1beta2)"},
    {"parent", "parentName", "kueue.x-k8s.io/v1beta2 renamed spec.parent to spec.parentName"},
    {"parentName", "parent", "kueue.x-k8s.io/v1beta1 spells it spec.parent (parentName is v1beta2)"},
    {"queue", "clusterQueue", "a LocalQueue points at its ClusterQueue with spec.clusterQueue"},
    {"clusterQueueName", "clusterQueue", ""},
    {"resources", "coveredResources", ""},
    {"flavor", "flavors", ""},
    {"priority", "value", "a WorkloadPriorityClass sets its priority with the top-level value field"},
    {"weight", "fairSharing", "the fair-sharing weight is fairSharing.weight"},
};

std::string ToLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

SourcePos PosOf(const YAML::Node& n, const std::string& source) {
  SourcePos pos;
  pos.file = source;
  YAML::Mark m = n.Mark();
  if (!m.is_null()) {
    pos.line = m.line + 1;
    pos.column = m.column + 1;
  }
  return pos;
}

std::string Quote(std::string_view s) { return "\"" + std::string(s) + "\""; }

std::string JoinNames(const std::vector<std::string_view>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += ", ";
    out += names[i];
  }
  return out;
}

}  // namespace

std::span<const FieldHint> BuiltinFieldHints() { return kBuiltinHints; }

int EditDistance(std::string_view a, std::string_view b) {
  std::string x = ToLower(a), y = ToLower(b);
  std::vector<int> prev(y.size() + 1), cur(y.size() + 1);
  for (size_t j = 0; j <= y.size(); ++j) prev[j] = static_cast<int>(j);
  for (size_t i = 1; i <= x.size(); ++i) {
    cur[0] = static_cast<int>(i);
    for (size_t j = 1; j <= y.size(); ++j) {
      int sub = prev[j - 1] + (x[i - 1] == y[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[y.size()];
}

namespace {

const FieldHint* FindHint(std::string_view unknown, std::span<const std::string_view> allowed,
                          std::span<const FieldHint> hints) {
  auto allowed_has = [&](std::string_view s) {
    return std::find(allowed.begin(), allowed.end(), s) != allowed.end();
  };
  for (std::span<const FieldHint> table : {hints, BuiltinFieldHints()}) {
    for (const FieldHint& h : table) {
      if (h.unknown == unknown && allowed_has(h.suggestion)) return &h;
    }
  }
  return nullptr;
}

}  // namespace

std::string SuggestField(std::string_view unknown, std::span<const std::string_view> allowed,
                         std::span<const FieldHint> hints) {
  if (const FieldHint* h = FindHint(unknown, allowed, hints)) return std::string(h->suggestion);
  int best = std::max<int>(2, static_cast<int>(unknown.size()) / 3) + 1;
  std::string_view best_name;
  for (std::string_view a : allowed) {
    int d = EditDistance(unknown, a);
    if (d < best) {
      best = d;
      best_name = a;
    }
  }
  return std::string(best_name);
}

std::string JoinPath(std::string_view parent, std::string_view key) {
  if (parent.empty()) return std::string(key);
  std::string out(parent);
  out += '.';
  out += key;
  return out;
}

// ---- Node ----

Node::Node(YAML::Node yaml, std::string source)
    : yaml_(std::move(yaml)), source_(std::make_shared<const std::string>(std::move(source))) {
  present_ = yaml_.IsDefined() && !yaml_.IsNull();
  fallback_.file = *source_;
  if (yaml_.IsDefined()) fallback_ = PosOf(yaml_, *source_);
}

Node::Node(YAML::Node yaml, bool present, std::shared_ptr<const std::string> source, std::string path,
           SourcePos fallback)
    : yaml_(std::move(yaml)),
      present_(present),
      source_(std::move(source)),
      path_(std::move(path)),
      fallback_(std::move(fallback)) {}

Node& Node::operator=(const Node& other) {
  if (this == &other) return *this;
  yaml_.reset(other.yaml_);
  present_ = other.present_;
  source_ = other.source_;
  path_ = other.path_;
  fallback_ = other.fallback_;
  return *this;
}

Node Node::Child(YAML::Node yaml, bool present, std::string path) const {
  SourcePos pos = Pos();
  if (present) {
    SourcePos own = PosOf(yaml, source());
    if (own.known()) pos = own;
  } else if (yaml.IsDefined()) {
    // An explicit `key:` (null) has its own position, which beats the parent's.
    SourcePos own = PosOf(yaml, source());
    if (own.known()) pos = own;
  }
  return Node(present ? std::move(yaml) : YAML::Node(), present, source_, std::move(path), std::move(pos));
}

const std::string& Node::source() const {
  static const std::string kEmpty;
  return source_ ? *source_ : kEmpty;
}

bool Node::IsPlainScalar() const { return IsScalar() && yaml_.Tag() != "!"; }

std::string_view Node::KindName() const {
  if (!present_) return "nothing";
  if (yaml_.IsMap()) return "a map";
  if (yaml_.IsSequence()) return "a list";
  return "a scalar";
}

SourcePos Node::Pos() const {
  if (present_) {
    SourcePos own = PosOf(yaml_, source());
    if (own.known()) return own;
  }
  SourcePos pos = fallback_;
  if (pos.file.empty()) pos.file = source();
  return pos;
}

Status Node::Error(std::string message) const {
  Status s = InvalidArgument(std::move(message));
  s.WithField(path_).WithPos(Pos());
  return s;
}

Status Node::ExpectMap() const {
  if (IsMap()) return Status::Ok();
  return Error("expected a map, got " + std::string(KindName()));
}

Status Node::ExpectList() const {
  if (IsList()) return Status::Ok();
  return Error("expected a list, got " + std::string(KindName()));
}

Status Node::ExpectScalar() const {
  if (IsScalar()) return Status::Ok();
  return Error("expected a single value, got " + std::string(KindName()));
}

Node Node::operator[](std::string_view key) const {
  std::string path = JoinPath(path_, key);
  if (IsMap()) {
    for (auto it = yaml_.begin(); it != yaml_.end(); ++it) {
      if (it->first.IsScalar() && it->first.Scalar() == key) {
        YAML::Node v = it->second;
        return Child(v, v.IsDefined() && !v.IsNull(), std::move(path));
      }
    }
  }
  return Child(YAML::Node(YAML::NodeType::Undefined), false, std::move(path));
}

Node Node::At(size_t i) const {
  std::string path = path_ + "[" + std::to_string(i) + "]";
  if (IsList() && i < yaml_.size()) {
    YAML::Node v = yaml_[i];
    return Child(v, !v.IsNull(), std::move(path));
  }
  return Child(YAML::Node(YAML::NodeType::Undefined), false, std::move(path));
}

size_t Node::size() const { return (IsMap() || IsList()) ? yaml_.size() : 0; }

std::vector<MapEntry> Node::Entries() const {
  std::vector<MapEntry> out;
  if (!IsMap()) return out;
  for (auto it = yaml_.begin(); it != yaml_.end(); ++it) {
    MapEntry e;
    e.key = it->first.IsScalar() ? it->first.Scalar() : std::string();
    e.key_pos = PosOf(it->first, source());
    YAML::Node v = it->second;
    e.value = Child(v, !v.IsNull(), path_ + "[" + e.key + "]");
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<Node> Node::Items() const {
  std::vector<Node> out;
  for (size_t i = 0; i < (IsList() ? yaml_.size() : 0); ++i) out.push_back(At(i));
  return out;
}

Node Node::Lookup(std::string_view rel) const {
  Node cur = *this;
  size_t i = 0;
  while (i < rel.size()) {
    if (rel[i] == '.') {
      ++i;
      continue;
    }
    if (rel[i] == '[') {
      size_t end = rel.find(']', i);
      if (end == std::string_view::npos) break;
      std::string_view inner = rel.substr(i + 1, end - i - 1);
      size_t index = 0;
      auto [p, ec] = std::from_chars(inner.data(), inner.data() + inner.size(), index);
      if (ec == std::errc() && p == inner.data() + inner.size() && cur.IsList()) {
        cur = cur.At(index);
      } else {
        // `[key]` addresses a map entry with a user-chosen key.
        Node next = cur[inner];
        next.path_ = cur.path_ + "[" + std::string(inner) + "]";
        cur = std::move(next);
      }
      i = end + 1;
      continue;
    }
    size_t end = rel.find_first_of(".[", i);
    if (end == std::string_view::npos) end = rel.size();
    cur = cur[rel.substr(i, end - i)];
    i = end;
  }
  return cur;
}

Status Node::CheckKeys(std::span<const std::string_view> allowed, std::span<const FieldHint> hints) const {
  if (Status s = ExpectMap(); !s.ok()) return s;
  std::set<std::string> seen;
  for (auto it = yaml_.begin(); it != yaml_.end(); ++it) {
    SourcePos key_pos = PosOf(it->first, source());
    if (!it->first.IsScalar()) {
      Status s = InvalidArgument("field names must be plain strings");
      s.WithField(path_).WithPos(key_pos);
      return s;
    }
    const std::string& key = it->first.Scalar();
    std::string path = JoinPath(path_, key);
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      std::string msg = "unknown field " + Quote(key);
      if (const FieldHint* h = FindHint(key, allowed, hints)) {
        msg += "; did you mean " + std::string(h->suggestion) + "?";
        if (!h->reason.empty()) msg += " (" + std::string(h->reason) + ")";
      } else if (std::string guess = SuggestField(key, allowed, hints); !guess.empty()) {
        msg += "; did you mean " + guess + "?";
      } else {
        msg +=
            "; allowed fields: " + JoinNames(std::vector<std::string_view>(allowed.begin(), allowed.end()));
      }
      Status s = InvalidArgument(std::move(msg));
      s.WithField(std::move(path)).WithPos(std::move(key_pos));
      return s;
    }
    if (!seen.insert(key).second) {
      Status s = InvalidArgument("duplicate field " + Quote(key));
      s.WithField(std::move(path)).WithPos(std::move(key_pos));
      return s;
    }
  }
  return Status::Ok();
}

Status Node::MissingError(std::string_view key) const {
  Status s = InvalidArgument("missing required field " + Quote(key));
  s.WithField(JoinPath(path_, key)).WithPos(Pos());
  return s;
}

Status Node::InvalidEnum(std::string_view got, const std::vector<std::string_view>& allowed) const {
  return Error("invalid value " + Quote(got) + "; must be one of " + JoinNames(allowed));
}

Result<std::string> Node::AsString() const {
  if (Status s = ExpectScalar(); !s.ok()) return s;
  return yaml_.Scalar();
}

Result<int64_t> Node::AsInt(int64_t min, int64_t max) const {
  if (Status s = ExpectScalar(); !s.ok()) return s;
  const std::string& text = yaml_.Scalar();
  if (!IsPlainScalar())
    return Error("expected an integer, got the string " + Quote(text) + " (remove the quotes)");
  int64_t v = 0;
  const char* b = text.data();
  const char* e = b + text.size();
  if (b != e && *b == '+') ++b;
  auto [p, ec] = std::from_chars(b, e, v);
  if (ec == std::errc::result_out_of_range) {
    return Error("integer " + text + " is out of range [" + std::to_string(min) + ", " + std::to_string(max) +
                 "]");
  }
  if (ec != std::errc() || p != e || b == e) return Error("expected an integer, got " + Quote(text));
  if (v < min || v > max) {
    return Error("integer " + text + " is out of range [" + std::to_string(min) + ", " + std::to_string(max) +
                 "]");
  }
  return v;
}

Result<bool> Node::AsBool() const {
  if (Status s = ExpectScalar(); !s.ok()) return s;
  const std::string& text = yaml_.Scalar();
  if (IsPlainScalar()) {
    if (text == "true" || text == "True" || text == "TRUE") return true;
    if (text == "false" || text == "False" || text == "FALSE") return false;
  }
  return Error("expected true or false, got " + Quote(text));
}

Result<core::Amount> Node::AsQuantity() const {
  if (Status s = ExpectScalar(); !s.ok()) return s;
  Result<core::Amount> r = core::ParseQuantity(yaml_.Scalar());
  if (!r.ok()) return Error(r.status().message());
  return r;
}

Result<std::vector<std::string>> Node::AsStringList() const {
  if (Status s = ExpectList(); !s.ok()) return s;
  std::vector<std::string> out;
  for (const Node& item : Items()) {
    Result<std::string> s = item.AsString();
    if (!s.ok()) return s.status();
    out.push_back(std::move(*s));
  }
  return out;
}

Result<std::map<std::string, std::string>> Node::AsStringMap() const {
  if (Status s = ExpectMap(); !s.ok()) return s;
  std::map<std::string, std::string> out;
  for (const MapEntry& e : Entries()) {
    if (!e.value.present()) {
      out[e.key] = "";  // `key:` with no value is the empty string, as in kubectl.
      continue;
    }
    Result<std::string> s = e.value.AsString();
    if (!s.ok()) return s.status();
    if (!out.emplace(e.key, std::move(*s)).second) return e.value.Error("duplicate key " + Quote(e.key));
  }
  return out;
}

namespace {

template <typename T, typename Fn>
Status ReadWith(const Node& parent, std::string_view key, T* out, Requirement req, Fn convert) {
  Node child = parent[key];
  if (!child.present()) return req == kRequired ? parent.MissingError(key) : Status::Ok();
  auto r = convert(child);
  if (!r.ok()) return r.status();
  *out = static_cast<T>(std::move(*r));
  return Status::Ok();
}

}  // namespace

Status Node::ReadString(std::string_view key, std::string* out, Requirement req) const {
  return ReadWith(*this, key, out, req, [](const Node& n) { return n.AsString(); });
}

Status Node::ReadInt32(std::string_view key, int32_t* out, Requirement req) const {
  return ReadWith(*this, key, out, req, [](const Node& n) { return n.AsInt(INT32_MIN, INT32_MAX); });
}

Status Node::ReadBool(std::string_view key, bool* out, Requirement req) const {
  return ReadWith(*this, key, out, req, [](const Node& n) { return n.AsBool(); });
}

Status Node::ReadQuantity(std::string_view key, core::Amount* out, Requirement req) const {
  return ReadWith(*this, key, out, req, [](const Node& n) { return n.AsQuantity(); });
}

Status Node::ReadStringList(std::string_view key, std::vector<std::string>* out, Requirement req) const {
  return ReadWith(*this, key, out, req, [](const Node& n) { return n.AsStringList(); });
}

Status Node::ReadStringMap(std::string_view key, std::map<std::string, std::string>* out,
                           Requirement req) const {
  return ReadWith(*this, key, out, req, [](const Node& n) { return n.AsStringMap(); });
}

Result<std::vector<Node>> ParseDocuments(std::string_view text, const std::string& source) {
  std::vector<YAML::Node> docs;
  try {
    docs = YAML::LoadAll(std::string(text));
  } catch (const YAML::Exception& e) {
    Status s = InvalidArgument("YAML syntax error: " + e.msg);
    SourcePos pos;
    pos.file = source;
    if (!e.mark.is_null()) {
      pos.line = e.mark.line + 1;
      pos.column = e.mark.column + 1;
    }
    s.WithPos(std::move(pos));
    return s;
  }
  std::vector<Node> out;
  out.reserve(docs.size());
  for (YAML::Node& d : docs) out.emplace_back(std::move(d), source);
  return out;
}

}  // namespace artel::manifest::yaml
