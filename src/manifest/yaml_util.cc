#include "manifest/yaml_util.h"

#include <yaml-cpp/anchor.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <set>
#include <sstream>
#include <unordered_map>

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

Status Node::ReadStringMap(std::string_view key, core::FlatMap<std::string, std::string>* out,
                           Requirement req) const {
  return ReadWith(*this, key, out, req, [](const Node& n) { return n.AsStringMap(); });
}

size_t ValidUtf8Prefix(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  size_t n = s.size(), i = 0;
  while (i < n) {
    unsigned char c = p[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len = 0;
    unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;  // overlong
      if (c == 0xED) hi = 0x9F;  // surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;  // overlong
      if (c == 0xF4) hi = 0x8F;  // above U+10FFFF
    } else {
      return i;
    }
    if (n - i < len) return i;
    if (p[i + 1] < lo || p[i + 1] > hi) return i;
    for (size_t k = 2; k < len; ++k) {
      if (p[i + k] < 0x80 || p[i + k] > 0xBF) return i;
    }
    i += len;
  }
  return n;
}

std::string EscapeInvalidUtf8(std::string_view s) {
  std::string out;
  while (!s.empty()) {
    size_t ok = ValidUtf8Prefix(s);
    out.append(s.substr(0, ok));
    if (ok == s.size()) break;
    char hex[8];
    std::snprintf(hex, sizeof hex, "\\x%02X", static_cast<unsigned>(static_cast<unsigned char>(s[ok])));
    out += hex;
    s.remove_prefix(ok + 1);
  }
  return out;
}

namespace {

// Replays a YAML stream's events and enforces LoadLimits (see yaml_util.h).
// On the first violation it records the error and throws Stop to end the
// parse at once.
class BudgetHandler : public YAML::EventHandler {
 public:
  struct Stop {};

  BudgetHandler(const std::string& source, const LoadLimits& limits) : source_(source), limits_(limits) {}

  const Status& error() const { return error_; }

  void OnDocumentStart(const YAML::Mark& mark) override {
    // yaml-cpp 0.7 does not consume a token it cannot start a node with
    // (a ',' at the start of a document): it reports an empty document and
    // then the same one again, forever. A document that starts where the
    // previous one started made no progress.
    if (documents_ > 0 && mark.pos == last_start_.pos && mark.line == last_start_.line) {
      path_.clear();
      Fail(mark, "YAML syntax error: unexpected character at the start of a document");
    }
    last_start_ = mark;
    if (++documents_ > limits_.max_documents) {
      path_.clear();
      Fail(mark, "more than " + std::to_string(limits_.max_documents) + " documents");
    }
    open_.clear();
    anchors_.clear();
    nodes_ = 0;
    bytes_ = 0;
  }
  void OnDocumentEnd() override {}

  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    Position(mark, nullptr);
    Count(mark, 1, 0);
    Anchor(anchor, 1, 0);
  }

  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    Position(mark, nullptr);
    auto it = anchors_.find(anchor);
    if (it == anchors_.end() || !it->second.done) {
      Fail(mark, "an alias is used inside the node it refers to (a recursive YAML structure)");
    }
    Count(mark, it->second.nodes, it->second.bytes);
  }

  void OnScalar(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                const std::string& value) override {
    bool is_key = Position(mark, &value);
    size_t valid = ValidUtf8Prefix(value);
    if (valid != value.size()) {
      char byte[8];
      std::snprintf(byte, sizeof byte, "0x%02X",
                    static_cast<unsigned>(static_cast<unsigned char>(value[valid])));
      Fail(mark, std::string(is_key ? "a key" : "the value") + " is not valid UTF-8 (byte " + byte +
                     " at offset " + std::to_string(valid) + ")");
    }
    int64_t size = static_cast<int64_t>(value.size());
    Count(mark, 1, size);
    Anchor(anchor, 1, size);
  }

  void OnSequenceStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    Open(mark, anchor, false);
  }
  void OnSequenceEnd() override { Close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string&, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    Open(mark, anchor, true);
  }
  void OnMapEnd() override { Close(); }

 private:
  struct Container {
    bool is_map = false;
    bool expect_key = true;  // maps: the next node is a key
    std::string key;         // maps: the key of the value being read
    int64_t index = 0;       // lists: the index of the next item
    int64_t start_nodes = 0;
    int64_t start_bytes = 0;
    YAML::anchor_t anchor = YAML::NullAnchor;
    std::string path;
  };
  struct Size {
    int64_t nodes = 0;
    int64_t bytes = 0;
    bool done = false;
  };

  // Moves to the next node of the innermost container and sets path_ to that
  // node's field path. Returns true when the node is a map key; `scalar` is
  // the key's text when it is a scalar.
  bool Position(const YAML::Mark&, const std::string* scalar) {
    if (open_.empty()) {
      path_.clear();
      return false;
    }
    Container& top = open_.back();
    if (!top.is_map) {
      path_ = top.path + "[" + std::to_string(top.index++) + "]";
      return false;
    }
    if (top.expect_key) {
      top.expect_key = false;
      // A key that is not valid UTF-8 is reported before it can be used in
      // a path; a non-scalar key shows as "?".
      top.key = scalar != nullptr && IsValidUtf8(*scalar) ? *scalar : "?";
      path_ = top.path;
      return true;
    }
    top.expect_key = true;
    path_ = JoinPath(top.path, top.key);
    return false;
  }

  void Open(const YAML::Mark& mark, YAML::anchor_t anchor, bool is_map) {
    Position(mark, nullptr);
    if (static_cast<int>(open_.size()) >= limits_.max_depth) {
      Fail(mark, "maps and lists are nested more than " + std::to_string(limits_.max_depth) + " levels deep");
    }
    Count(mark, 1, 0);
    Container c;
    c.is_map = is_map;
    c.start_nodes = nodes_ - 1;
    c.start_bytes = bytes_;
    c.anchor = anchor;
    c.path = path_;
    if (anchor != YAML::NullAnchor) anchors_[anchor] = Size{};  // open: an alias to it is a cycle
    open_.push_back(std::move(c));
  }

  void Close() {
    if (open_.empty()) return;
    Container c = std::move(open_.back());
    open_.pop_back();
    Anchor(c.anchor, nodes_ - c.start_nodes, bytes_ - c.start_bytes);
  }

  void Anchor(YAML::anchor_t anchor, int64_t nodes, int64_t bytes) {
    if (anchor == YAML::NullAnchor) return;
    anchors_[anchor] = Size{nodes, bytes, true};
  }

  // Both counts stay below 2 * limit: an alias stands for at most what was
  // already counted.
  void Count(const YAML::Mark& mark, int64_t nodes, int64_t bytes) {
    nodes_ += nodes;
    bytes_ += bytes;
    if (nodes_ > limits_.max_nodes) {
      Fail(mark, "document expands to more than " + std::to_string(limits_.max_nodes) +
                     " nodes (YAML aliases count each time they are used)");
    }
    if (bytes_ > limits_.max_scalar_bytes) {
      Fail(mark, "document expands to more than " + std::to_string(limits_.max_scalar_bytes) +
                     " bytes of text (YAML aliases count each time they are used)");
    }
  }

  [[noreturn]] void Fail(const YAML::Mark& mark, std::string message) {
    error_ = InvalidArgument(std::move(message));
    if (!path_.empty()) error_.WithField(path_);
    SourcePos pos;
    pos.file = source_;
    if (!mark.is_null()) {
      pos.line = mark.line + 1;
      pos.column = mark.column + 1;
    }
    error_.WithPos(std::move(pos));
    throw Stop{};
  }

  const std::string& source_;
  const LoadLimits& limits_;
  Status error_;
  std::vector<Container> open_;
  std::unordered_map<YAML::anchor_t, Size> anchors_;
  std::string path_;
  int64_t nodes_ = 0;
  int64_t bytes_ = 0;
  int64_t documents_ = 0;
  YAML::Mark last_start_;
};

Status SyntaxError(const YAML::Exception& e, const std::string& source) {
  // yaml-cpp quotes the offending character, which may be a byte that is
  // not UTF-8; error bodies are JSON.
  Status s = InvalidArgument("YAML syntax error: " + EscapeInvalidUtf8(e.msg));
  SourcePos pos;
  pos.file = source;
  if (!e.mark.is_null()) {
    pos.line = e.mark.line + 1;
    pos.column = e.mark.column + 1;
  }
  s.WithPos(std::move(pos));
  return s;
}

}  // namespace

Result<std::vector<YAML::Node>> LoadDocuments(std::string_view text, const std::string& source,
                                              const LoadLimits& limits) {
  std::string copy(text);
  try {
    std::istringstream in(copy);
    YAML::Parser parser(in);
    BudgetHandler budget(source, limits);
    try {
      while (parser.HandleNextDocument(budget)) {
      }
    } catch (const BudgetHandler::Stop&) {
      return budget.error();
    }
    // Within the limits: build the node graph (aliases stay shared).
    return YAML::LoadAll(copy);
  } catch (const YAML::Exception& e) {
    return SyntaxError(e, source);
  }
}

Result<std::vector<Node>> ParseDocuments(std::string_view text, const std::string& source,
                                         const LoadLimits& limits) {
  Result<std::vector<YAML::Node>> docs = LoadDocuments(text, source, limits);
  if (!docs.ok()) return docs.status();
  std::vector<Node> out;
  out.reserve(docs->size());
  for (YAML::Node& d : *docs) out.emplace_back(std::move(d), source);
  return out;
}

}  // namespace artel::manifest::yaml
