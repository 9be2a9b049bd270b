// Kueue API objects <-> engine. See kueue_map.h and docs/kubernetes.md.
//
// Semantics were learned from Kueue v0.17.0 (kubernetes-sigs/kueue):
// apis/kueue/v1beta2/*_types.go (shapes, reasons), pkg/workload/workload.go
// and admissionchecks.go (which conditions change together),
// pkg/controller/core/{clusterqueue,localqueue,workload}_controller.go and
// pkg/cache/scheduler/clusterqueue.go (queue conditions),
// pkg/controller/jobframework/reconciler.go (requeue after eviction),
// pkg/scheduler/preemption/preemption.go (preemption reasons). No code or
// message text is reused.

#include "kube/kueue_map.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <ctime>
#include <map>
#include <set>
#include <unordered_map>

#include "core/quantity.h"
#include "manifest/manifest.h"

namespace artel::kube {
namespace {

constexpr size_t kMaxConditionMessage = 32 * 1024;

// ---------------------------------------------------------------- JSON access

const Json* Child(const Json& j, std::string_view key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return nullptr;
  return &*it;
}

std::string StrAt(const Json& j, std::string_view key) {
  const Json* c = Child(j, key);
  return c != nullptr && c->is_string() ? c->get<std::string>() : std::string();
}

std::string MetaName(const Json& obj) {
  const Json* m = Child(obj, "metadata");
  return m != nullptr ? StrAt(*m, "name") : std::string();
}

std::string MetaNamespace(const Json& obj) {
  const Json* m = Child(obj, "metadata");
  return m != nullptr ? StrAt(*m, "namespace") : std::string();
}

Json StatusObject(const Json& current) { return current.is_object() ? current : Json::object(); }

Status Invalid(const std::string& field, const std::string& msg) {
  Status s = InvalidArgument(msg);
  s.WithField(field);
  return s;
}

// ---------------------------------------------------------------- conditions

bool SetCond(Json* status, const std::string& type, bool value, const std::string& reason,
             const std::string& message, const std::string& now, int64_t generation) {
  Json& conds = (*status)["conditions"];
  return SetCondition(&conds, type, value, reason, message, now, generation);
}

// A condition that is True becomes False with `reason` (Kueue clears
// Evicted and Preempted when quota is reserved again).
void ResetIfTrue(Json* status, const std::string& type, const std::string& reason, const std::string& now,
                 int64_t generation) {
  const Json* c = FindCondition(*status, type);
  if (c == nullptr || StrAt(*c, "status") != "True") return;
  std::string msg = "Cleared; was: " + StrAt(*c, "message");
  SetCond(status, type, false, reason, msg, now, generation);
}

// Admitted follows QuotaReserved (Artel runs no admission checks): True
// while quota is reserved, False (NoReservation) once it is not; untouched
// when already in agreement (Kueue's SyncAdmittedCondition).
void SyncAdmitted(Json* status, const std::string& cq, const std::string& now, int64_t generation) {
  bool reserved = IsConditionTrue(*status, "QuotaReserved");
  bool admitted = IsConditionTrue(*status, "Admitted");
  if (reserved == admitted) return;
  if (reserved) {
    SetCond(status, "Admitted", true, "Admitted", fmt::format("Admitted by ClusterQueue {}", cq), now,
            generation);
  } else {
    SetCond(status, "Admitted", false, "NoReservation", "No quota is reserved for the workload", now,
            generation);
  }
}

// ---------------------------------------------------------------- time

int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {  // days since 1970-01-01 (proleptic Gregorian)
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

// ---------------------------------------------------------------- quantities

std::string Q(core::Amount a) { return core::FormatQuantity(a); }

// ---------------------------------------------------------------- config

}  // namespace

struct ObjectPiece {
  std::string kind, ns, name;
  bool v1beta2 = true;  // the spelling of field paths (v1beta1 / v1alpha1: spec.cohort, spec.parent)
  Status status;        // why it is invalid, or ok
  core::Config config;  // what it parsed into (one object)
};

// The memo of ConfigBuilder: what each object's meaningful content read as.
struct ConfigBuilder::Memo {
  std::map<std::string, ObjectPiece> pieces;  // key: kind + the object without status and server metadata
  std::set<std::string> used;                 // keys used by the current Build
};

namespace {

// What of an object the reader looks at: everything but `status` and the
// metadata the server changes on every write (resourceVersion,
// managedFields, ...), so that a status update does not re-read the object.
std::string MemoKey(const Json& obj, const std::string& kind) {
  if (!obj.is_object()) return kind + "\n" + obj.dump(-1, ' ', false, Json::error_handler_t::replace);
  Json copy = obj;
  copy.erase("status");
  if (auto m = copy.find("metadata"); m != copy.end() && m->is_object()) {
    for (const char* k : {"resourceVersion", "managedFields", "generation", "uid", "creationTimestamp"})
      m->erase(k);
  }
  return kind + "\n" + copy.dump(-1, ' ', false, Json::error_handler_t::replace);
}

// Reads one API object with the manifest reader. `expected_kind` guards
// against an informer handing the wrong list.
ObjectPiece ReadOne(const Json& obj, const std::string& expected_kind) {
  ObjectPiece p;
  p.kind = expected_kind;
  p.name = MetaName(obj);
  p.ns = MetaNamespace(obj);
  if (!obj.is_object()) {
    p.status = InvalidArgument(expected_kind + " must be an object");
    return p;
  }
  std::string kind = StrAt(obj, "kind");
  if (!kind.empty() && kind != expected_kind) {
    p.status = Invalid("kind", fmt::format("expected kind {}, got {}", expected_kind, kind));
    return p;
  }
  Json copy = obj;
  if (kind.empty()) copy["kind"] = expected_kind;  // list items from some clients lack TypeMeta
  if (!copy.contains("apiVersion")) {
    copy["apiVersion"] = expected_kind == "Namespace" ? "v1" : "kueue.x-k8s.io/v1beta2";
  }
  p.v1beta2 = StrAt(copy, "apiVersion") != "kueue.x-k8s.io/v1beta1" &&
              StrAt(copy, "apiVersion") != "kueue.x-k8s.io/v1alpha1";
  std::string source = expected_kind + " " + (p.ns.empty() ? p.name : p.ns + "/" + p.name);
  Result<std::vector<manifest::ManifestObject>> objs =
      manifest::SplitObjects(copy.dump(-1, ' ', false, Json::error_handler_t::replace), source);
  if (!objs.ok()) {
    p.status = objs.status();
    return p;
  }
  std::vector<const manifest::ManifestObject*> ptrs;
  for (const manifest::ManifestObject& o : *objs) ptrs.push_back(&o);
  p.status = manifest::ParseObjects(ptrs, &p.config);
  if (!p.status.ok()) return p;
  const core::Config& c = p.config;
  size_t read = expected_kind == "ResourceFlavor"          ? c.flavors.size()
                : expected_kind == "Cohort"                ? c.cohorts.size()
                : expected_kind == "ClusterQueue"          ? c.cluster_queues.size()
                : expected_kind == "LocalQueue"            ? c.local_queues.size()
                : expected_kind == "WorkloadPriorityClass" ? c.priority_classes.size()
                : expected_kind == "Topology"              ? c.topologies.size()
                : expected_kind == "Namespace"             ? c.namespaces.size()
                                                           : 0;
  if (read != 1) {
    p.status = Invalid("apiVersion", fmt::format("not read as one {} (apiVersion {})", expected_kind,
                                                 StrAt(copy, "apiVersion")));
  }
  return p;
}

// "message (field)" for a reader error.
std::string Describe(const Status& s) {
  if (s.field().empty()) return s.message();
  return fmt::format("{}: {}", s.field(), s.message());
}

template <typename T>
void Append(std::vector<T>* to, std::vector<T>& from) {
  for (T& x : from) to->push_back(std::move(x));
}

}  // namespace

// ---------------------------------------------------------------- helpers (public)

bool SetCondition(Json* conditions, const std::string& type, bool status, const std::string& reason,
                  const std::string& message, const std::string& now_rfc3339, int64_t generation) {
  if (!conditions->is_array()) *conditions = Json::array();
  const std::string st = status ? "True" : "False";
  std::string msg = TruncateConditionMessage(message);
  for (Json& c : *conditions) {
    if (!c.is_object() || StrAt(c, "type") != type) continue;
    bool changed = false;
    if (StrAt(c, "status") != st) {
      c["status"] = st;
      c["lastTransitionTime"] = now_rfc3339;
      changed = true;
    }
    if (StrAt(c, "reason") != reason) {
      c["reason"] = reason;
      changed = true;
    }
    if (StrAt(c, "message") != msg) {
      c["message"] = msg;
      changed = true;
    }
    if (generation > 0 && (!c.contains("observedGeneration") || c["observedGeneration"] != generation)) {
      c["observedGeneration"] = generation;
      changed = true;
    }
    if (StrAt(c, "lastTransitionTime").empty()) {
      c["lastTransitionTime"] = now_rfc3339;
      changed = true;
    }
    return changed;
  }
  Json c = {{"type", type},
            {"status", st},
            {"lastTransitionTime", now_rfc3339},
            {"reason", reason},
            {"message", msg}};
  if (generation > 0) c["observedGeneration"] = generation;
  conditions->push_back(std::move(c));
  return true;
}

const Json* FindCondition(const Json& status, const std::string& type) {
  const Json* conds = Child(status, "conditions");
  if (conds == nullptr || !conds->is_array()) return nullptr;
  for (const Json& c : *conds) {
    if (c.is_object() && StrAt(c, "type") == type) return &c;
  }
  return nullptr;
}

bool IsConditionTrue(const Json& status, const std::string& type) {
  const Json* c = FindCondition(status, type);
  return c != nullptr && StrAt(*c, "status") == "True";
}

std::string FormatRfc3339(int64_t ms) {
  int64_t secs = ms >= 0 ? ms / 1000 : -((-ms + 999) / 1000);
  int64_t days = secs >= 0 ? secs / 86400 : -((-secs + 86399) / 86400);
  int64_t rem = secs - days * 86400;
  // civil_from_days
  int64_t z = days + 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const unsigned doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t y = static_cast<int64_t>(yoe) + era * 400;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  const unsigned d = doy - (153 * mp + 2) / 5 + 1;
  const unsigned m = mp < 10 ? mp + 3 : mp - 9;
  y += m <= 2;
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z", y, m, d, rem / 3600, (rem / 60) % 60, rem % 60);
}

Result<int64_t> ParseRfc3339(const std::string& t) {
  auto bad = [&]() -> Result<int64_t> {
    return InvalidArgument(fmt::format("\"{}\" is not an RFC 3339 time (2006-01-02T15:04:05Z)", t));
  };
  auto digits = [&](size_t at, size_t n, int64_t* out) {
    if (at + n > t.size()) return false;
    int64_t v = 0;
    for (size_t i = at; i < at + n; ++i) {
      if (!std::isdigit(static_cast<unsigned char>(t[i]))) return false;
      v = v * 10 + (t[i] - '0');
    }
    *out = v;
    return true;
  };
  int64_t y, mo, d, h, mi, s;
  if (!digits(0, 4, &y) || t.size() < 20 || t[4] != '-' || !digits(5, 2, &mo) || t[7] != '-' ||
      !digits(8, 2, &d) || (t[10] != 'T' && t[10] != 't' && t[10] != ' ') || !digits(11, 2, &h) ||
      t[13] != ':' || !digits(14, 2, &mi) || t[16] != ':' || !digits(17, 2, &s)) {
    return bad();
  }
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60) return bad();
  size_t i = 19;
  int64_t frac_ms = 0;
  if (i < t.size() && t[i] == '.') {
    ++i;
    size_t start = i;
    int64_t scale = 100;
    while (i < t.size() && std::isdigit(static_cast<unsigned char>(t[i]))) {
      frac_ms += (t[i] - '0') * scale;
      scale /= 10;
      ++i;
    }
    if (i == start) return bad();
  }
  int64_t offset_s = 0;
  if (i < t.size() && (t[i] == 'Z' || t[i] == 'z')) {
    ++i;
  } else if (i < t.size() && (t[i] == '+' || t[i] == '-')) {
    int64_t oh, om;
    if (!digits(i + 1, 2, &oh) || i + 3 >= t.size() || t[i + 3] != ':' || !digits(i + 4, 2, &om))
      return bad();
    offset_s = (oh * 3600 + om * 60) * (t[i] == '+' ? 1 : -1);
    i += 6;
  } else {
    return bad();
  }
  if (i != t.size()) return bad();
  int64_t days = DaysFromCivil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d));
  return (days * 86400 + h * 3600 + mi * 60 + s - offset_s) * 1000 + frac_ms;
}

std::string TruncateConditionMessage(std::string message) {
  if (message.size() <= kMaxConditionMessage) return message;
  const std::string suffix = " ...";
  size_t cut = kMaxConditionMessage - suffix.size();
  // Do not cut a UTF-8 sequence in half: back up to a lead byte.
  while (cut > 0 && (static_cast<unsigned char>(message[cut]) & 0xC0) == 0x80) --cut;
  message.resize(cut);
  return message + suffix;
}

const ObjectCondition* BuiltConfig::Find(const std::string& kind, const std::string& ns,
                                         const std::string& name) const {
  for (const ObjectCondition& c : conditions) {
    if (c.kind == kind && c.ns == ns && c.name == name) return &c;
  }
  return nullptr;
}

// ---------------------------------------------------------------- BuildConfig

ConfigBuilder::ConfigBuilder() : memo_(std::make_unique<Memo>()) {}
ConfigBuilder::~ConfigBuilder() = default;

BuiltConfig BuildConfig(const KueueObjects& objs) {
  ConfigBuilder builder;
  return builder.Build(objs);
}

BuiltConfig ConfigBuilder::Build(const KueueObjects& objs) {
  memo_->used.clear();
  BuiltConfig out;
  auto fail = [&](const ObjectPiece& p, const std::string& reason, const std::string& message,
                  const std::string& field) {
    ObjectCondition c;
    c.kind = p.kind;
    c.ns = p.ns;
    c.name = p.name;
    c.active = false;
    c.reason = reason;
    c.message = message;
    c.field = field;
    out.conditions.push_back(std::move(c));
  };
  auto invalid = [&](const ObjectPiece& p) {
    fail(p, "InvalidSpec", fmt::format("Can't use the {}: {}", p.kind, Describe(p.status)), p.status.field());
  };
  std::set<std::string> seen;  // kind/ns/name: the first object of a name wins
  auto read_all = [&](const std::vector<Json>& list, const std::string& kind) {
    std::vector<ObjectPiece> pieces;
    for (const Json& obj : list) {
      std::string key = MemoKey(obj, kind);
      auto memo = memo_->pieces.find(key);
      if (memo == memo_->pieces.end()) memo = memo_->pieces.emplace(key, ReadOne(obj, kind)).first;
      memo_->used.insert(key);
      ObjectPiece p = memo->second;
      if (!seen.insert(kind + "/" + p.ns + "/" + p.name).second) {
        // Both API versions of one object (an informer per version): one is enough.
        continue;
      }
      if (!p.status.ok()) {
        invalid(p);
        continue;
      }
      pieces.push_back(std::move(p));
    }
    return pieces;
  };
  core::Config& cfg = out.config;

  // Namespaces and priority classes depend on nothing.
  for (ObjectPiece& p : read_all(objs.namespaces, "Namespace")) Append(&cfg.namespaces, p.config.namespaces);
  for (ObjectPiece& p : read_all(objs.priority_classes, "WorkloadPriorityClass")) {
    Append(&cfg.priority_classes, p.config.priority_classes);
  }
  // Topologies, then flavors (a flavor's topologyName must exist).
  std::set<std::string> topologies;
  for (ObjectPiece& p : read_all(objs.topologies, "Topology")) {
    topologies.insert(p.name);
    Append(&cfg.topologies, p.config.topologies);
  }
  std::map<std::string, std::string> bad_flavors;  // name -> "TopologyNotFound" | "InvalidSpec"
  std::set<std::string> flavors;
  {
    for (ObjectPiece& p : read_all(objs.resource_flavors, "ResourceFlavor")) {
      const core::ResourceFlavorSpec& rf = p.config.flavors.front();
      if (!rf.topology_name.empty() && !topologies.count(rf.topology_name)) {
        bad_flavors[p.name] = "TopologyNotFound";
        fail(p, "TopologyNotFound",
             fmt::format("Can't use the ResourceFlavor: spec.topologyName: Topology \"{}\" not found",
                         rf.topology_name),
             "spec.topologyName");
        continue;
      }
      flavors.insert(p.name);
      Append(&cfg.flavors, p.config.flavors);
    }
    for (const ObjectCondition& c : out.conditions) {
      if (c.kind == "ResourceFlavor" && !c.active && !bad_flavors.count(c.name))
        bad_flavors[c.name] = c.reason;
    }
  }
  // The flavors a resource-group list names that are not usable: the first
  // one's field path, and every name with why.
  struct FlavorProblem {
    std::string field;
    std::vector<std::string> missing, no_topology;
  };
  auto check_flavors = [&](const std::vector<core::ResourceGroupSpec>& groups) {
    FlavorProblem fp;
    for (size_t g = 0; g < groups.size(); ++g) {
      for (size_t f = 0; f < groups[g].flavors.size(); ++f) {
        const std::string& name = groups[g].flavors[f].flavor;
        if (flavors.count(name)) continue;
        if (fp.field.empty()) fp.field = fmt::format("spec.resourceGroups[{}].flavors[{}].name", g, f);
        auto it = bad_flavors.find(name);
        auto& list =
            it != bad_flavors.end() && it->second == "TopologyNotFound" ? fp.no_topology : fp.missing;
        if (std::find(list.begin(), list.end(), name) == list.end()) list.push_back(name);
      }
    }
    return fp;
  };

  // Cohorts: valid objects first, then the trees (cycles, invalid parents).
  std::vector<ObjectPiece> cohort_pieces = read_all(objs.cohorts, "Cohort");
  std::map<std::string, std::string> parent_of;                            // valid cohort objects
  std::map<std::string, std::pair<std::string, std::string>> bad_cohorts;  // name -> reason, message
  for (const ObjectCondition& c : out.conditions) {
    if (c.kind == "Cohort") bad_cohorts[c.name] = {"InvalidSpec", c.message};
  }
  for (ObjectPiece& p : cohort_pieces) {
    const core::CohortSpec& co = p.config.cohorts.front();
    FlavorProblem fp = check_flavors(co.resource_groups);
    if (!fp.field.empty()) {
      std::vector<std::string> all = fp.missing;
      all.insert(all.end(), fp.no_topology.begin(), fp.no_topology.end());
      std::string msg = fmt::format("Can't use the Cohort: {}: ResourceFlavor(s) {} not found or not usable",
                                    fp.field, fmt::join(all, ", "));
      bad_cohorts[p.name] = {"FlavorNotFound", msg};
      fail(p, "FlavorNotFound", msg, fp.field);
      continue;
    }
    parent_of[p.name] = co.parent;
  }
  // Cycles among the valid cohorts (a parent without an object is an
  // implicit root, as in Kueue).
  for (const auto& [start, unused] : parent_of) {
    std::vector<std::string> chain;
    std::string cur = start;
    while (parent_of.count(cur) && std::find(chain.begin(), chain.end(), cur) == chain.end()) {
      chain.push_back(cur);
      cur = parent_of[cur];
    }
    if (!parent_of.count(cur)) continue;  // ends at a root
    auto at = std::find(chain.begin(), chain.end(), cur);
    if (at != chain.begin()) continue;  // start leads into a cycle it is not part of: handled below
    std::vector<std::string> cycle(chain.begin(), chain.end());
    cycle.push_back(cur);
    bad_cohorts[start] = {"CohortCycle", fmt::format("Can't use the Cohort: spec.parentName: cohort cycle {}",
                                                     fmt::join(cycle, " -> "))};
  }
  // A cohort is usable when its chain up to a root passes only usable
  // cohorts. `self`: `cohort` is the object asking (its own problem is
  // returned as is); otherwise a ClusterQueue names it.
  auto chain_problem = [&](const std::string& cohort, bool self) -> std::pair<std::string, std::string> {
    std::string cur = cohort;
    std::set<std::string> visited;
    while (!cur.empty() && visited.insert(cur).second) {
      if (auto b = bad_cohorts.find(cur); b != bad_cohorts.end()) {
        if (cur == cohort && self) return b->second;
        std::string reason = b->second.first == "CohortCycle" ? "CohortCycle" : "CohortInvalid";
        return {reason, fmt::format("Can't use {}Cohort \"{}\": {}", cur == cohort ? "" : "ancestor ", cur,
                                    b->second.second)};
      }
      auto it = parent_of.find(cur);
      if (it == parent_of.end()) return {"", ""};  // an implicit cohort: a root
      cur = it->second;
    }
    if (cur.empty()) return {"", ""};
    return {"CohortCycle", fmt::format("Can't use Cohort \"{}\": its parents form a cycle", cohort)};
  };
  for (ObjectPiece& p : cohort_pieces) {
    if (!parent_of.count(p.name)) continue;  // already failed (flavors)
    auto [reason, msg] = chain_problem(p.name, true);
    if (!reason.empty()) {
      bad_cohorts[p.name] = {reason, msg};
      fail(p, reason, msg, p.v1beta2 ? "spec.parentName" : "spec.parent");
      continue;
    }
    Append(&cfg.cohorts, p.config.cohorts);
  }
  for (const auto& [name, rm] : bad_cohorts) parent_of.erase(name);

  // ClusterQueues.
  std::map<std::string, bool> cq_active;  // name -> Active (objects that exist, valid or not)
  for (const Json& obj : objs.cluster_queues) cq_active.emplace(MetaName(obj), false);
  for (ObjectPiece& p : read_all(objs.cluster_queues, "ClusterQueue")) {
    const core::ClusterQueueSpec& cq = p.config.cluster_queues.front();
    FlavorProblem fp = check_flavors(cq.resource_groups);
    if (!fp.missing.empty() || !fp.no_topology.empty()) {
      std::vector<std::string> parts;
      if (!fp.missing.empty())
        parts.push_back(fmt::format("ResourceFlavor(s) {} not found", fmt::join(fp.missing, ", ")));
      for (const std::string& f : fp.no_topology) {
        parts.push_back(fmt::format("ResourceFlavor \"{}\" names a Topology that does not exist", f));
      }
      fail(p, fp.missing.empty() ? "TopologyNotFound" : "FlavorNotFound",
           fmt::format("Can't admit new workloads: {} ({})", fmt::join(parts, "; "), fp.field), fp.field);
      continue;
    }
    if (!cq.cohort.empty()) {
      auto [reason, msg] = chain_problem(cq.cohort, false);
      if (!reason.empty()) {
        std::string field = p.v1beta2 ? "spec.cohortName" : "spec.cohort";
        fail(p, reason, fmt::format("Can't admit new workloads: {}: {}", field, msg), field);
        continue;
      }
    }
    ObjectCondition c;
    c.kind = "ClusterQueue";
    c.name = p.name;
    if (cq.stop_policy != core::StopPolicy::kNone) {
      c.active = false;
      c.reason = "Stopped";
      c.message = fmt::format("Can't admit new workloads: the ClusterQueue is stopped (spec.stopPolicy: {})",
                              cq.stop_policy == core::StopPolicy::kHold ? "Hold" : "HoldAndDrain");
    } else {
      c.reason = "Ready";
      c.message = "Ready to admit new workloads";
      cq_active[p.name] = true;
    }
    out.conditions.push_back(std::move(c));
    Append(&cfg.cluster_queues, p.config.cluster_queues);
  }

  // LocalQueues stay configured whatever their ClusterQueue's state: their
  // workloads then wait with ClusterQueueMissing (or Stopped).
  for (ObjectPiece& p : read_all(objs.local_queues, "LocalQueue")) {
    const core::LocalQueueSpec& lq = p.config.local_queues.front();
    ObjectCondition c;
    c.kind = "LocalQueue";
    c.ns = p.ns;
    c.name = p.name;
    auto cq = cq_active.find(lq.cluster_queue);
    if (lq.stop_policy != core::StopPolicy::kNone) {
      c.active = false;
      c.reason = "Stopped";
      c.message = fmt::format("The LocalQueue is stopped (spec.stopPolicy: {})",
                              lq.stop_policy == core::StopPolicy::kHold ? "Hold" : "HoldAndDrain");
    } else if (cq == cq_active.end()) {
      c.active = false;
      c.reason = "ClusterQueueDoesNotExist";
      c.message =
          fmt::format("Can't submit new workloads: spec.clusterQueue: ClusterQueue \"{}\" does not exist",
                      lq.cluster_queue);
      c.field = "spec.clusterQueue";
    } else if (!cq->second) {
      c.active = false;
      c.reason = "ClusterQueueIsInactive";
      c.message = fmt::format(
          "Can't submit new workloads: spec.clusterQueue: ClusterQueue \"{}\" is inactive", lq.cluster_queue);
      c.field = "spec.clusterQueue";
    } else {
      c.reason = "Ready";
      c.message = "Ready to take new workloads";
    }
    out.conditions.push_back(std::move(c));
    Append(&cfg.local_queues, p.config.local_queues);
  }

  // Safety net: whatever the whole-config rules still refuse is dropped, one
  // object at a time (positions name the object: "<Kind> <name>:line:col").
  for (int guard = 0; guard < 10000; ++guard) {
    Status s = manifest::Validate(cfg);
    if (s.ok()) break;
    const std::string& file = s.pos().file;
    auto space = file.find(' ');
    std::string kind = file.substr(0, space);
    std::string rest = space == std::string::npos ? "" : file.substr(space + 1);
    std::string ns, name = rest;
    if (auto slash = rest.find('/'); slash != std::string::npos) {
      ns = rest.substr(0, slash);
      name = rest.substr(slash + 1);
    }
    bool dropped = false;
    auto drop = [&](auto* list, auto match) {
      auto it = std::find_if(list->begin(), list->end(), match);
      if (it == list->end()) return;
      list->erase(it);
      dropped = true;
    };
    auto by_name = [&](const auto& x) { return x.name == name; };
    if (kind == "ResourceFlavor") drop(&cfg.flavors, by_name);
    if (kind == "Topology") drop(&cfg.topologies, by_name);
    if (kind == "Cohort") drop(&cfg.cohorts, by_name);
    if (kind == "ClusterQueue") drop(&cfg.cluster_queues, by_name);
    if (kind == "WorkloadPriorityClass") drop(&cfg.priority_classes, by_name);
    if (kind == "Namespace") drop(&cfg.namespaces, by_name);
    if (kind == "LocalQueue")
      drop(&cfg.local_queues, [&](const auto& x) { return x.ns == ns && x.name == name; });
    if (!dropped) {
      // Not attributable to one object: configure nothing rather than something invalid.
      ObjectCondition c;
      c.kind = "Configuration";
      c.active = false;
      c.reason = "InvalidSpec";
      c.message = s.ToString();
      out.conditions.push_back(std::move(c));
      out.config = core::Config{};
      break;
    }
    bool replaced = false;
    for (ObjectCondition& c : out.conditions) {
      if (c.kind == kind && c.ns == ns && c.name == name) {
        c.active = false;
        c.reason = "InvalidSpec";
        c.message = fmt::format("Can't use the {}: {}", kind, Describe(s));
        c.field = s.field();
        replaced = true;
      }
    }
    if (!replaced) {
      ObjectCondition c;
      c.kind = kind;
      c.ns = ns;
      c.name = name;
      c.active = false;
      c.reason = "InvalidSpec";
      c.message = fmt::format("Can't use the {}: {}", kind, Describe(s));
      c.field = s.field();
      out.conditions.push_back(std::move(c));
    }
  }
  // Forget objects that are gone or changed.
  for (auto it = memo_->pieces.begin(); it != memo_->pieces.end();) {
    it = memo_->used.count(it->first) ? std::next(it) : memo_->pieces.erase(it);
  }
  return out;
}

// ---------------------------------------------------------------- workloads

Result<core::WorkloadSpec> WorkloadFromObject(const Json& workload, const core::Config& config) {
  if (!workload.is_object()) return InvalidArgument("a Workload must be an object");
  std::string kind = StrAt(workload, "kind");
  std::string api = StrAt(workload, "apiVersion");
  if (kind != "Workload" || !api.starts_with("kueue.x-k8s.io/")) {
    return Invalid("kind", fmt::format("expected a kueue.x-k8s.io Workload, got {} {}", api, kind));
  }
  std::vector<core::WorkloadSpec> specs;
  std::string source = "Workload " + MetaNamespace(workload) + "/" + MetaName(workload);
  // The reader takes the object's text; it reads no status and no managed
  // fields, which are most of an admitted Workload's bytes, so they are
  // left out of the text it scans.
  Json trimmed = Json::object();
  for (const auto& [k, v] : workload.items()) {
    if (k == "status") continue;
    if (k == "metadata" && v.is_object()) {
      Json& meta = trimmed[k] = Json::object();
      for (const auto& [mk, mv] : v.items())
        if (mk != "managedFields") meta[mk] = mv;
      continue;
    }
    trimmed[k] = v;
  }
  Status s = manifest::ParseWorkloads(trimmed.dump(-1, ' ', false, Json::error_handler_t::replace), source,
                                      &specs, manifest::PodSpecMode::kKubernetes);
  if (!s.ok()) {
    s.WithPos(SourcePos{});  // positions in a re-serialised object mean nothing to its author
    return s;
  }
  if (specs.size() != 1) return InvalidArgument("expected exactly one Workload");
  core::WorkloadSpec spec = std::move(specs.front());
  if (spec.priority_class) {
    bool known =
        std::any_of(config.priority_classes.begin(), config.priority_classes.end(),
                    [&](const core::PriorityClassSpec& pc) { return pc.name == *spec.priority_class; });
    if (!known) spec.priority_class.reset();
  }
  return spec;
}

// ---------------------------------------------------------------- workload status

Json AdmittedStatus(const Json& current_status, const core::WorkloadInfo& info, const std::string& now,
                    int64_t generation) {
  Json st = StatusObject(current_status);
  Json psas = Json::array();
  for (const core::PodSetAssignment& a : info.admission) {
    Json flavors = Json::object();
    for (const auto& [res, flavor] : a.flavors) flavors[res] = flavor;
    Json usage = Json::object();
    for (const auto& [res, amount] : a.resource_usage) usage[res] = Q(amount);
    Json p = {{"name", a.name}, {"count", a.count}};
    if (!flavors.empty()) p["flavors"] = flavors;
    if (!usage.empty()) p["resourceUsage"] = usage;
    std::vector<std::pair<std::string, int32_t>> nodes;
    for (const core::PodPlacementInfo& pl : info.placements) {
      if (pl.pod_set != a.name) continue;
      auto it = std::find_if(nodes.begin(), nodes.end(), [&](const auto& n) { return n.first == pl.node; });
      if (it == nodes.end()) {
        nodes.emplace_back(pl.node, 1);
      } else {
        it->second++;
      }
    }
    if (!nodes.empty()) p["topologyAssignment"] = TopologyAssignmentJson(nodes);
    psas.push_back(std::move(p));
  }
  st["admission"] = {{"clusterQueue", info.cluster_queue}, {"podSetAssignments", psas}};
  SetCond(&st, "QuotaReserved", true, "QuotaReserved",
          fmt::format("ClusterQueue {} reserved quota for the workload", info.cluster_queue), now,
          generation);
  ResetIfTrue(&st, "Evicted", "QuotaReserved", now, generation);
  ResetIfTrue(&st, "Preempted", "QuotaReserved", now, 0);
  SyncAdmitted(&st, info.cluster_queue, now, generation);
  return st;
}

std::string PendingMessage(const core::PendingReason& why) {
  std::string msg = why.message;
  if (msg.empty()) msg = core::PendingReasonKindName(why.kind);
  if (!why.flavors.empty() && msg.find("flavors tried:") == std::string::npos) {
    std::vector<std::string> clauses;
    for (const core::FlavorAttempt& f : why.flavors) clauses.push_back(f.message);
    msg += "; flavors tried: " + fmt::format("{}", fmt::join(clauses, "; "));
  }
  if (!why.would_preempt.empty()) {
    bool named = std::all_of(why.would_preempt.begin(), why.would_preempt.end(),
                             [&](const std::string& w) { return msg.find(w) != std::string::npos; });
    if (!named) msg += "; would need to preempt: " + fmt::format("{}", fmt::join(why.would_preempt, ", "));
  }
  return msg;
}

Json PendingStatus(const Json& current_status, const core::PendingReason& why, const std::string& now,
                   int64_t generation) {
  using K = core::PendingReason::Kind;
  Json st = StatusObject(current_status);
  if (why.kind == K::kNone) return st;
  bool inadmissible = why.kind == K::kLocalQueueMissing || why.kind == K::kClusterQueueMissing ||
                      why.kind == K::kStopped || why.kind == K::kInactive;
  SetCond(&st, "QuotaReserved", false, inadmissible ? "Inadmissible" : "Pending", PendingMessage(why), now,
          generation);
  st.erase("admission");
  SyncAdmitted(&st, "", now, generation);
  return st;
}

namespace {

const char* PreemptionReason(core::EvictionReason r) {
  switch (r) {
    case core::EvictionReason::kInClusterQueue: return "InClusterQueue";
    case core::EvictionReason::kInCohortReclamation: return "InCohortReclamation";
    case core::EvictionReason::kInCohortFairSharing: return "InCohortFairSharing";
    case core::EvictionReason::kInCohortReclaimWhileBorrowing: return "InCohortReclaimWhileBorrowing";
    default: return "";
  }
}

const char* PreemptionWhy(core::EvictionReason r) {
  switch (r) {
    case core::EvictionReason::kInClusterQueue: return "priority within the ClusterQueue";
    case core::EvictionReason::kInCohortReclamation: return "the cohort reclaiming its quota";
    case core::EvictionReason::kInCohortFairSharing: return "fair sharing in the cohort";
    case core::EvictionReason::kInCohortReclaimWhileBorrowing:
      return "reclamation in the cohort while borrowing";
    default: return "";
  }
}

}  // namespace

Json EvictedStatus(const Json& current_status, const core::Eviction& e, const std::string& now,
                   int64_t generation) {
  Json st = StatusObject(current_status);
  std::string reason, message;
  const char* preempt_reason = PreemptionReason(e.reason);
  if (*preempt_reason != '\0') {
    reason = "Preempted";
    message = fmt::format("Preempted for workload {} (ClusterQueue {}) by {}", e.preemptor,
                          e.preemptor_cluster_queue, PreemptionWhy(e.reason));
  } else if (e.reason == core::EvictionReason::kClusterQueueStopped) {
    reason = "ClusterQueueStopped";
    message = fmt::format("Evicted: ClusterQueue {} is stopped (HoldAndDrain)", e.victim_cluster_queue);
  } else if (e.reason == core::EvictionReason::kLocalQueueStopped) {
    reason = "LocalQueueStopped";
    message = "Evicted: the LocalQueue is stopped (HoldAndDrain)";
  } else if (e.reason == core::EvictionReason::kNodeFailures) {
    reason = "NodeFailures";
    message = "Evicted: a node of the workload's topology assignment was lost";
  } else if (e.reason == core::EvictionReason::kMaximumExecutionTimeExceeded) {
    reason = "MaximumExecutionTimeExceeded";
    message = "Evicted: the workload exceeded its maximum execution time";
  } else {
    reason = "Deactivated";
    message = "Evicted: the workload was deactivated (spec.active is false)";
  }
  if (!e.message.empty() && e.message != message) message += "; " + e.message;
  SetCond(&st, "Evicted", true, reason, message, now, generation);
  if (*preempt_reason != '\0') SetCond(&st, "Preempted", true, preempt_reason, message, now, 0);
  if (e.reason == core::EvictionReason::kDeactivated) st.erase("requeueState");  // as Kueue on deactivation
  return st;
}

Json RequeuedStatus(const Json& current_status, const std::string& now, int64_t generation) {
  Json st = StatusObject(current_status);
  const Json* ev = FindCondition(st, "Evicted");
  std::string reason = ev != nullptr ? StrAt(*ev, "reason") : std::string();
  std::string message = ev != nullptr ? StrAt(*ev, "message") : std::string();
  if (message.empty()) message = "The workload's quota was released";
  if (!reason.empty()) SetCond(&st, "Requeued", reason == "Preempted", reason, message, now, generation);
  SetCond(&st, "QuotaReserved", false, "Pending", message, now, generation);
  st.erase("admission");
  SyncAdmitted(&st, "", now, generation);
  return st;
}

Json ReactivatedStatus(const Json& current_status, const std::string& now, int64_t generation) {
  Json st = StatusObject(current_status);
  SetCond(&st, "Requeued", true, "Reactivated", "The workload is active again (spec.active is true)", now,
          generation);
  return st;
}

Json FinishedStatus(const Json& current_status, bool succeeded, const std::string& message,
                    const std::string& now, int64_t generation) {
  Json st = StatusObject(current_status);
  SetCond(&st, "Finished", true, succeeded ? "Succeeded" : "Failed", message, now, generation);
  return st;
}

Json TopologyAssignmentJson(const std::vector<std::pair<std::string, int32_t>>& nodes) {
  Json roots = Json::array(), counts = Json::array();
  bool same = true;
  for (const auto& [node, count] : nodes) {
    roots.push_back(node);
    counts.push_back(count);
    same = same && count == nodes.front().second;
  }
  Json pod_counts = same ? Json{{"universal", nodes.front().second}} : Json{{"individual", counts}};
  Json values =
      nodes.size() == 1 ? Json{{"universal", nodes.front().first}} : Json{{"individual", {{"roots", roots}}}};
  Json slice = {
      {"domainCount", nodes.size()}, {"valuesPerLevel", Json::array({values})}, {"podCounts", pod_counts}};
  return {{"levels", Json::array({core::placement::kHostnameLabel})}, {"slices", Json::array({slice})}};
}

Result<std::vector<std::pair<std::string, int32_t>>> ParseTopologyAssignment(const Json& ta,
                                                                             const std::string& path) {
  std::vector<std::pair<std::string, int32_t>> out;
  if (!ta.is_object()) return Invalid(path, "must be an object");
  const Json* levels = Child(ta, "levels");
  if (levels == nullptr || !levels->is_array() || levels->empty())
    return Invalid(path + ".levels", "must be a non-empty list");
  const size_t lowest = levels->size() - 1;
  const bool hosts = (*levels)[lowest].is_string() &&
                     (*levels)[lowest].get<std::string>() == core::placement::kHostnameLabel;
  auto count_ok = [](const Json& c) {
    return c.is_number_integer() && c.get<int64_t>() >= 1 && c.get<int64_t>() <= INT32_MAX;
  };
  if (const Json* domains = Child(ta, "domains"); domains != nullptr) {  // v1beta1
    if (!domains->is_array()) return Invalid(path + ".domains", "must be a list");
    for (size_t d = 0; d < domains->size(); ++d) {
      const Json& dom = (*domains)[d];
      std::string dp = fmt::format("{}.domains[{}]", path, d);
      const Json* values = Child(dom, "values");
      const Json* count = Child(dom, "count");
      if (values == nullptr || !values->is_array() || values->size() != levels->size() ||
          !(*values)[lowest].is_string())
        return Invalid(dp + ".values", "must list one value per level");
      if (count == nullptr || !count_ok(*count)) return Invalid(dp + ".count", "must be a positive integer");
      if (hosts) out.emplace_back((*values)[lowest].get<std::string>(), count->get<int32_t>());
    }
    return out;
  }
  const Json* slices = Child(ta, "slices");
  if (slices == nullptr || !slices->is_array()) return Invalid(path + ".slices", "must be a list");
  for (size_t si = 0; si < slices->size(); ++si) {
    const Json& sl = (*slices)[si];
    std::string sp = fmt::format("{}.slices[{}]", path, si);
    const Json* dc = Child(sl, "domainCount");
    if (dc == nullptr || !count_ok(*dc) || dc->get<int64_t>() > 100000)
      return Invalid(sp + ".domainCount", "must be an integer from 1 to 100000");
    const size_t n = dc->get<size_t>();
    const Json* vpl = Child(sl, "valuesPerLevel");
    if (vpl == nullptr || !vpl->is_array() || vpl->size() != levels->size())
      return Invalid(sp + ".valuesPerLevel", "must have one entry per level");
    const Json& v = (*vpl)[lowest];
    std::vector<std::string> names;
    if (const Json* u = Child(v, "universal"); u != nullptr && u->is_string()) {
      names.assign(n, u->get<std::string>());
    } else if (const Json* ind = Child(v, "individual"); ind != nullptr && ind->is_object()) {
      std::string prefix = StrAt(*ind, "prefix"), suffix = StrAt(*ind, "suffix");
      const Json* roots = Child(*ind, "roots");
      if (roots == nullptr || !roots->is_array() || roots->size() != n)
        return Invalid(sp + ".valuesPerLevel.individual.roots", "must have domainCount entries");
      for (const Json& r : *roots) {
        if (!r.is_string()) return Invalid(sp + ".valuesPerLevel.individual.roots", "must be strings");
        names.push_back(prefix + r.get<std::string>() + suffix);
      }
    } else {
      return Invalid(sp + ".valuesPerLevel", "needs universal or individual");
    }
    const Json* pc = Child(sl, "podCounts");
    std::vector<int32_t> counts;
    if (pc == nullptr) return Invalid(sp + ".podCounts", "is required");
    if (const Json* u = Child(*pc, "universal"); u != nullptr) {
      if (!count_ok(*u)) return Invalid(sp + ".podCounts.universal", "must be a positive integer");
      counts.assign(n, u->get<int32_t>());
    } else if (const Json* ind = Child(*pc, "individual");
               ind != nullptr && ind->is_array() && ind->size() == n) {
      for (const Json& c : *ind) {
        if (!count_ok(c)) return Invalid(sp + ".podCounts.individual", "must be positive integers");
        counts.push_back(c.get<int32_t>());
      }
    } else {
      return Invalid(sp + ".podCounts", "needs universal or individual with domainCount entries");
    }
    if (hosts) {
      for (size_t i = 0; i < n; ++i) out.emplace_back(names[i], counts[i]);
    }
  }
  return out;
}

void TopologyAssignmentsToV1beta1(Json* status) {
  if (!status->is_object() || !status->contains("admission")) return;
  Json& psas = (*status)["admission"]["podSetAssignments"];
  if (!psas.is_array()) return;
  for (Json& p : psas) {
    if (!p.is_object() || !p.contains("topologyAssignment")) continue;
    auto nodes = ParseTopologyAssignment(p["topologyAssignment"], "topologyAssignment");
    if (!nodes.ok()) continue;
    Json domains = Json::array();
    for (const auto& [node, count] : *nodes)
      domains.push_back({{"values", Json::array({node})}, {"count", count}});
    p["topologyAssignment"] = {{"levels", Json::array({core::placement::kHostnameLabel})},
                               {"domains", domains}};
  }
}

Result<ObservedState> ObserveWorkload(const Json& workload) {
  ObservedState o;
  if (!workload.is_object()) return InvalidArgument("a Workload must be an object");
  if (const Json* spec = Child(workload, "spec"); spec != nullptr) {
    if (const Json* a = Child(*spec, "active"); a != nullptr) {
      if (!a->is_boolean()) return Invalid("spec.active", "must be a boolean");
      o.active = a->get<bool>();
    }
  }
  const Json* st = Child(workload, "status");
  if (st == nullptr) return o;
  o.quota_reserved = IsConditionTrue(*st, "QuotaReserved");
  o.admitted = IsConditionTrue(*st, "Admitted");
  o.finished = IsConditionTrue(*st, "Finished");
  o.evicted = IsConditionTrue(*st, "Evicted");
  if (o.evicted) o.evicted_reason = StrAt(*FindCondition(*st, "Evicted"), "reason");
  if (o.quota_reserved) {
    const Json* c = FindCondition(*st, "QuotaReserved");
    std::string ltt = StrAt(*c, "lastTransitionTime");
    if (!ltt.empty()) {
      Result<int64_t> t = ParseRfc3339(ltt);
      if (!t.ok())
        return Invalid("status.conditions[QuotaReserved].lastTransitionTime", t.status().message());
      o.admitted_at_ms = *t;
    }
  }
  const Json* adm = Child(*st, "admission");
  if (adm == nullptr) return o;
  o.cluster_queue = StrAt(*adm, "clusterQueue");
  const Json* psas = Child(*adm, "podSetAssignments");
  if (psas == nullptr) return o;
  if (!psas->is_array()) return Invalid("status.admission.podSetAssignments", "must be a list");
  // Pod counts default to the pod set's count in spec (Kueue leaves count out in old objects).
  std::map<std::string, int32_t> spec_counts;
  if (const Json* spec = Child(workload, "spec"); spec != nullptr) {
    if (const Json* sets = Child(*spec, "podSets"); sets != nullptr && sets->is_array()) {
      for (const Json& s : *sets) {
        std::string n = StrAt(s, "name");
        if (n.empty()) n = "main";
        const Json* c = Child(s, "count");
        spec_counts[n] = c != nullptr && c->is_number_integer() ? c->get<int32_t>() : 1;
      }
    }
  }
  for (size_t i = 0; i < psas->size(); ++i) {
    const Json& p = (*psas)[i];
    std::string path = fmt::format("status.admission.podSetAssignments[{}]", i);
    if (!p.is_object()) return Invalid(path, "must be an object");
    core::PodSetAssignment a;
    a.name = StrAt(p, "name");
    if (a.name.empty()) return Invalid(path + ".name", "is required");
    if (const Json* c = Child(p, "count"); c != nullptr) {
      if (!c->is_number_integer() || c->get<int64_t>() < 0 || c->get<int64_t>() > INT32_MAX) {
        return Invalid(path + ".count", "must be a non-negative integer");
      }
      a.count = c->get<int32_t>();
    } else {
      auto sc = spec_counts.find(a.name);
      a.count = sc != spec_counts.end() ? sc->second : 1;
    }
    if (const Json* f = Child(p, "flavors"); f != nullptr) {
      if (!f->is_object()) return Invalid(path + ".flavors", "must be a map of resource to flavor");
      for (auto it = f->begin(); it != f->end(); ++it) {
        if (!it->is_string()) return Invalid(path + ".flavors." + it.key(), "must be a string");
        a.flavors[it.key()] = it->get<std::string>();
      }
    }
    if (const Json* u = Child(p, "resourceUsage"); u != nullptr) {
      if (!u->is_object()) return Invalid(path + ".resourceUsage", "must be a map of resource to quantity");
      for (auto it = u->begin(); it != u->end(); ++it) {
        std::string text = it->is_string() ? it->get<std::string>() : it->is_number() ? it->dump() : "";
        Result<core::Amount> q = core::ParseQuantity(text);
        if (!q.ok()) return Invalid(path + ".resourceUsage." + it.key(), q.status().message());
        a.resource_usage[it.key()] = *q;
      }
    }
    std::vector<std::pair<std::string, int32_t>> nodes;
    if (const Json* ta = Child(p, "topologyAssignment"); ta != nullptr && !ta->is_null()) {
      auto parsed = ParseTopologyAssignment(*ta, path + ".topologyAssignment");
      if (!parsed.ok()) return parsed.status();
      nodes = std::move(*parsed);
    }
    o.topology.push_back(std::move(nodes));
    o.admission.push_back(std::move(a));
  }
  return o;
}

// ---------------------------------------------------------------- queue status

namespace {

struct Counts {
  int32_t pending = 0, reserving = 0, admitted = 0;
};

void Count(const core::WorkloadInfo& w, Counts* c) {
  if (w.state == core::WorkloadState::kPending && w.spec.active) ++c->pending;
  if (w.state == core::WorkloadState::kAdmitted || w.state == core::WorkloadState::kEvicting) {
    ++c->reserving;
    ++c->admitted;
  }
}

void SetActiveCondition(Json* st, const ObjectCondition& cond, const std::string& now, int64_t generation) {
  std::string reason = cond.reason.empty() ? (cond.active ? "Ready" : "Unknown") : cond.reason;
  std::string message = cond.message.empty() ? reason : cond.message;
  SetCond(st, "Active", cond.active, reason, message, now, generation);
}

}  // namespace

using FlavorResources = std::vector<std::pair<std::string, std::vector<std::string>>>;

struct QueueStatusIndex::Data {
  // What one workload adds to the counts and usage (to take it out again).
  struct Share {
    std::string cq;
    std::pair<std::string, std::string> lq;  // ns, name
    Counts counts;
    std::vector<std::pair<std::pair<std::string, std::string>, core::Amount>> used;  // flavor,res
  };
  struct Lq {
    const core::LocalQueueSpec* spec = nullptr;
    Counts counts;
    std::map<std::pair<std::string, std::string>, core::Amount> used;  // flavor,res -> admitted usage
  };
  struct Cq {
    bool configured = false;  // in the configuration (else only named by workloads)
    Counts counts;
    std::map<std::pair<std::string, std::string>, std::pair<core::Amount, core::Amount>>
        usage;  // flavor,res -> used, borrowed
    FlavorResources flavors;
  };
  std::unordered_map<std::string, Cq> cqs;
  std::map<std::pair<std::string, std::string>, Lq> lqs;  // ns,name
  std::unordered_map<std::string, Share> shares;          // workload key -> its share
  bool fair_sharing = false;

  void Add(const core::WorkloadInfo& w);
  void Remove(const std::string& key);
  void RefreshUsage(const core::Engine& engine);
};

void QueueStatusIndex::Data::Add(const core::WorkloadInfo& w) {
  Share s;
  s.cq = w.cluster_queue;
  s.lq = {w.spec.ns, w.spec.queue};
  Count(w, &s.counts);
  if (w.state == core::WorkloadState::kAdmitted || w.state == core::WorkloadState::kEvicting) {
    for (const core::PodSetAssignment& a : w.admission) {
      for (const auto& [res, amount] : a.resource_usage) {
        auto f = a.flavors.find(res);
        if (f != a.flavors.end()) s.used.push_back({{f->second, res}, amount});
      }
    }
  }
  // Counted for any queue name, configured or not, as the per-queue scans did.
  Counts& qc = cqs[s.cq].counts;
  Lq& lq = lqs[s.lq];
  for (Counts* c : {&qc, &lq.counts}) {
    c->pending += s.counts.pending;
    c->reserving += s.counts.reserving;
    c->admitted += s.counts.admitted;
  }
  for (const auto& [fr, amount] : s.used) lq.used[fr] += amount;
  shares[w.key] = std::move(s);
}

void QueueStatusIndex::Data::Remove(const std::string& key) {
  auto it = shares.find(key);
  if (it == shares.end()) return;
  const Share& s = it->second;
  Counts& qc = cqs[s.cq].counts;
  Lq& lq = lqs[s.lq];
  for (Counts* c : {&qc, &lq.counts}) {
    c->pending -= s.counts.pending;
    c->reserving -= s.counts.reserving;
    c->admitted -= s.counts.admitted;
  }
  for (const auto& [fr, amount] : s.used) {
    auto u = lq.used.find(fr);
    if (u == lq.used.end()) continue;
    u->second -= amount;
    if (u->second == 0) lq.used.erase(u);  // as if never added (a fresh walk adds no zero entry)
  }
  // A queue known only from workloads, with none left, is gone from a fresh index too.
  auto zero = [](const Counts& c) { return c.pending == 0 && c.reserving == 0 && c.admitted == 0; };
  if (lq.spec == nullptr && zero(lq.counts) && lq.used.empty()) lqs.erase(s.lq);
  auto q = cqs.find(s.cq);
  if (q != cqs.end() && !q->second.configured && zero(q->second.counts) && q->second.usage.empty())
    cqs.erase(q);
  shares.erase(it);
}

void QueueStatusIndex::Data::RefreshUsage(const core::Engine& engine) {
  for (auto& [name, q] : cqs) q.usage.clear();
  for (const core::QuotaUsage& u : engine.Usage()) {
    if (!u.is_cohort) cqs[u.node].usage[{u.flavor, u.resource}] = {u.usage, u.borrowed};
  }
}

QueueStatusIndex::QueueStatusIndex(const core::Engine& engine) : data_(std::make_unique<Data>()) {
  Data& d = *data_;
  d.fair_sharing = engine.options().fair_sharing;
  for (const core::ClusterQueueSpec& q : engine.config().cluster_queues) {
    d.cqs[q.name].configured = true;
    FlavorResources& out = d.cqs[q.name].flavors;
    for (const core::ResourceGroupSpec& g : q.resource_groups) {
      for (const core::FlavorQuotasSpec& f : g.flavors) {
        std::vector<std::string> resources;
        for (const core::ResourceQuotaSpec& r : f.resources) resources.push_back(r.name);
        out.emplace_back(f.flavor, std::move(resources));
      }
    }
  }
  // The last spec of a (namespace, name) wins, as in LocalQueueStatus.
  for (const core::LocalQueueSpec& l : engine.config().local_queues) d.lqs[{l.ns, l.name}].spec = &l;
  for (const core::WorkloadInfo* w : engine.Workloads()) d.Add(*w);
  d.RefreshUsage(engine);
}

void QueueStatusIndex::Update(const core::Engine& engine, const std::vector<std::string>& keys,
                              std::set<std::string>* queues) {
  Data& d = *data_;
  auto mark = [&](const std::string& key) {
    if (queues == nullptr) return;
    auto it = d.shares.find(key);
    if (it == d.shares.end()) return;
    queues->insert("cq/" + it->second.cq);
    queues->insert("lq/" + it->second.lq.first + "/" + it->second.lq.second);
  };
  for (const std::string& key : keys) {
    mark(key);
    d.Remove(key);
    if (const core::WorkloadInfo* w = engine.Find(key)) {
      d.Add(*w);
      mark(key);
    }
  }
  d.RefreshUsage(engine);
}

QueueStatusIndex::~QueueStatusIndex() = default;

Json ClusterQueueStatus(const core::Engine& engine, const std::string& cq, const ObjectCondition& cond,
                        const Json& current_status, const std::string& now, int64_t generation) {
  return ClusterQueueStatus(QueueStatusIndex(engine), engine, cq, cond, current_status, now, generation);
}

Json LocalQueueStatus(const core::Engine& engine, const std::string& ns, const std::string& lq,
                      const ObjectCondition& cond, const Json& current_status, const std::string& now,
                      int64_t generation) {
  return LocalQueueStatus(QueueStatusIndex(engine), ns, lq, cond, current_status, now, generation);
}

namespace {
void AddInputs(const Counts& c, std::string* out) {
  *out +=
      std::to_string(c.pending) + "," + std::to_string(c.reserving) + "," + std::to_string(c.admitted) + ";";
}
void AddInputs(const FlavorResources& flavors, std::string* out) {
  for (const auto& [flavor, resources] : flavors) {
    *out += flavor + "[";
    for (const std::string& r : resources) *out += r + ",";
    *out += "]";
  }
  *out += ";";
}
}  // namespace

std::string QueueStatusInputs(const QueueStatusIndex& index, const core::Engine& engine, bool cluster_queue,
                              const std::string& ns, const std::string& name) {
  const QueueStatusIndex::Data& d = index.data();
  std::string out;
  if (cluster_queue) {
    auto found = d.cqs.find(name);
    if (found == d.cqs.end()) return "none";
    const QueueStatusIndex::Data::Cq& q = found->second;
    AddInputs(q.counts, &out);
    AddInputs(q.flavors, &out);
    for (const auto& [fr, ub] : q.usage)
      out +=
          fr.first + "/" + fr.second + "=" + std::to_string(ub.first) + "," + std::to_string(ub.second) + ";";
    if (d.fair_sharing) out += "share=" + std::to_string(engine.DominantResourceShare(name));
    return out;
  }
  auto found = d.lqs.find({ns, name});
  if (found == d.lqs.end()) return "none";
  const QueueStatusIndex::Data::Lq& l = found->second;
  AddInputs(l.counts, &out);
  if (l.spec != nullptr) {
    out += "cq=" + l.spec->cluster_queue + ";stop=" + std::to_string(static_cast<int>(l.spec->stop_policy)) +
           ";";
    auto q = d.cqs.find(l.spec->cluster_queue);
    if (q != d.cqs.end()) AddInputs(q->second.flavors, &out);
  }
  for (const auto& [fr, amount] : l.used)
    out += fr.first + "/" + fr.second + "=" + std::to_string(amount) + ";";
  return out;
}

Json ClusterQueueStatus(const QueueStatusIndex& index, const core::Engine& engine, const std::string& cq,
                        const ObjectCondition& cond, const Json& current_status, const std::string& now,
                        int64_t generation) {
  const QueueStatusIndex::Data& d = index.data();
  Json st = StatusObject(current_status);
  static const QueueStatusIndex::Data::Cq kNone;
  auto found = d.cqs.find(cq);
  const QueueStatusIndex::Data::Cq& q = found != d.cqs.end() ? found->second : kNone;
  Json flavors = Json::array();
  for (const auto& [flavor, resources] : q.flavors) {
    Json rs = Json::array();
    for (const std::string& r : resources) {
      auto it = q.usage.find({flavor, r});
      core::Amount used = it != q.usage.end() ? it->second.first : 0;
      core::Amount borrowed = it != q.usage.end() ? it->second.second : 0;
      rs.push_back({{"name", r}, {"total", Q(used)}, {"borrowed", Q(borrowed)}});
    }
    flavors.push_back({{"name", flavor}, {"resources", rs}});
  }
  st["pendingWorkloads"] = q.counts.pending;
  st["reservingWorkloads"] = q.counts.reserving;
  st["admittedWorkloads"] = q.counts.admitted;
  // Without admission checks, reserved quota is admitted quota.
  st["flavorsReservation"] = flavors;
  st["flavorsUsage"] = flavors;
  if (d.fair_sharing) {
    int64_t share = engine.DominantResourceShare(cq);
    // Kueue reports an infinite share as the largest int64.
    st["fairSharing"] = {{"weightedShare", share < 0 ? INT64_MAX : share}};
  } else {
    st.erase("fairSharing");
  }
  SetActiveCondition(&st, cond, now, generation);
  return st;
}

Json LocalQueueStatus(const QueueStatusIndex& index, const std::string& ns, const std::string& lq,
                      const ObjectCondition& cond, const Json& current_status, const std::string& now,
                      int64_t generation) {
  const QueueStatusIndex::Data& d = index.data();
  Json st = StatusObject(current_status);
  static const QueueStatusIndex::Data::Lq kNone;
  auto found = d.lqs.find({ns, lq});
  const QueueStatusIndex::Data::Lq& l = found != d.lqs.end() ? found->second : kNone;
  Counts c = l.counts;
  // A stopped LocalQueue reports no pending workloads (Kueue).
  if (l.spec != nullptr && l.spec->stop_policy != core::StopPolicy::kNone) c.pending = 0;
  Json flavors = Json::array();
  if (l.spec != nullptr) {
    static const FlavorResources kNoFlavors;
    auto q = d.cqs.find(l.spec->cluster_queue);
    for (const auto& [flavor, resources] : q != d.cqs.end() ? q->second.flavors : kNoFlavors) {
      Json rs = Json::array();
      for (const std::string& r : resources) {
        auto it = l.used.find({flavor, r});
        rs.push_back({{"name", r}, {"total", Q(it != l.used.end() ? it->second : 0)}});
      }
      flavors.push_back({{"name", flavor}, {"resources", rs}});
    }
  }
  st["pendingWorkloads"] = c.pending;
  st["reservingWorkloads"] = c.reserving;
  st["admittedWorkloads"] = c.admitted;
  st["flavorsReservation"] = flavors;
  st["flavorsUsage"] = flavors;
  SetActiveCondition(&st, cond, now, generation);
  return st;
}

}  // namespace artel::kube
