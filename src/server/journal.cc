#include "server/journal.h"

#include <type_traits>

#include "core/quantity.h"

namespace artel::server::journal {
namespace {

using T = store::RecordType;

// Lenient field readers: a missing field, or one of another type, is the
// default (a journal is never refused for a field; see the header).
int64_t I64(const Json& j, const char* key, int64_t def) {
  if (!j.is_object()) return def;
  auto it = j.find(key);
  return it != j.end() && it->is_number_integer() ? it->get<int64_t>() : def;
}
std::optional<int64_t> OptI64(const Json& j, const char* key) {
  if (!j.is_object()) return std::nullopt;
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<int64_t>();
}
std::string Str(const Json& j, const char* key) {
  if (!j.is_object()) return "";
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}
bool Bool(const Json& j, const char* key) {
  if (!j.is_object()) return false;
  auto it = j.find(key);
  return it != j.end() && it->is_boolean() && it->get<bool>();
}
const Json& Field(const Json& j, const char* key) {
  static const Json kNull;
  if (!j.is_object()) return kNull;
  auto it = j.find(key);
  return it != j.end() ? *it : kNull;
}
std::vector<int> Ints(const Json& j, const char* key) {
  std::vector<int> out;
  const Json& a = Field(j, key);
  if (!a.is_array()) return out;
  for (const Json& v : a)
    if (v.is_number_integer()) out.push_back(v.get<int>());
  return out;
}

// ---- admission

Json PodSetsToJson(const std::vector<core::PodSetAssignment>& sets) {
  Json out = Json::array();
  for (const auto& a : sets) {
    Json usage = Json::object();
    for (const auto& [r, v] : a.resource_usage) usage[r] = core::FormatQuantity(v);
    out.push_back({{"name", a.name}, {"count", a.count}, {"flavors", a.flavors}, {"resourceUsage", usage}});
  }
  return out;
}

// Strict: an admission whose pod sets cannot be read is not restored.
Status PodSetsFromJson(const Json& j, std::vector<core::PodSetAssignment>* out) {
  try {
    for (const auto& ps : j.at("podSets")) {
      core::PodSetAssignment a;
      a.name = ps.at("name").get<std::string>();
      a.count = ps.at("count").get<int32_t>();
      a.flavors = ps.at("flavors").get<std::map<std::string, std::string>>();
      for (auto it = ps.at("resourceUsage").begin(); it != ps.at("resourceUsage").end(); ++it) {
        auto q = core::ParseQuantity(it->get<std::string>());
        if (!q.ok()) return q.status();
        a.resource_usage[it.key()] = *q;
      }
      out->push_back(std::move(a));
    }
  } catch (const Json::exception& e) {
    return InvalidArgument(std::string("bad admission record: ") + e.what());
  }
  return Status::Ok();
}

Json PlacementToJson(const JournaledPlacement& p) {
  Json pods = Json::array();
  for (const PlacedPod& pp : p.pods) {
    const auto& pod = pp.placement;
    Json mig = Json::array();
    for (const auto& m : pod.mig) {
      Json destroy = Json::array();
      for (const auto& d : m.destroy) destroy.push_back({{"profile", d.profile}, {"start", d.start}});
      mig.push_back({{"gpu", m.gpu},
                     {"profile", m.profile},
                     {"start", m.start},
                     {"create", m.create},
                     {"destroy", destroy}});
    }
    Json shares = Json::array();
    for (const auto& sh : pod.shares) {
      shares.push_back({{"gpu", sh.gpu},
                        {"memoryMiB", sh.memory_mib},
                        {"coresPercent", sh.cores_percent},
                        {"isolated", sh.isolated}});
    }
    Json pj = {
        {"group", pod.group}, {"node", pod.node}, {"gpus", pod.gpus}, {"mig", mig}, {"shares", shares}};
    if (!pp.node_name.empty()) pj["nodeName"] = pp.node_name;
    if (pp.uuids) pj["uuids"] = *pp.uuids;
    pods.push_back(std::move(pj));
  }
  Json reqs = Json::array();
  for (const auto& g : p.group_requests) {
    Json r = Json::object();
    for (const auto& [k, v] : g) r[k] = v;
    reqs.push_back(r);
  }
  return {{"pods", pods}, {"placed", p.placed}, {"groupRequests", reqs}};
}

Status PlacementFromJson(const Json& j, JournaledPlacement* p) {
  try {
    for (const auto& pj : j.at("pods")) {
      PlacedPod pp;
      core::placement::PodPlacement& pod = pp.placement;
      pod.group = pj.at("group").get<int32_t>();
      pod.node = pj.at("node").get<int32_t>();
      pod.gpus = pj.at("gpus").get<std::vector<int32_t>>();
      for (const auto& mj : pj.at("mig")) {
        core::placement::MigAssignment m;
        m.gpu = mj.at("gpu").get<int32_t>();
        m.profile = mj.at("profile").get<std::string>();
        m.start = mj.at("start").get<int32_t>();
        m.create = mj.at("create").get<bool>();
        for (const auto& dj : mj.at("destroy")) {
          m.destroy.push_back({dj.at("profile").get<std::string>(), dj.at("start").get<int32_t>()});
        }
        pod.mig.push_back(std::move(m));
      }
      for (const auto& sj : pj.at("shares")) {
        core::placement::ShareAssignment sh;
        sh.gpu = sj.at("gpu").get<int32_t>();
        sh.memory_mib = sj.at("memoryMiB").get<int64_t>();
        sh.cores_percent = sj.at("coresPercent").get<int32_t>();
        sh.isolated = sj.at("isolated").get<bool>();
        pod.shares.push_back(sh);
      }
      if (pj.contains("nodeName")) pp.node_name = pj.at("nodeName").get<std::string>();
      if (pj.contains("uuids")) pp.uuids = pj.at("uuids").get<std::vector<std::string>>();
      p->pods.push_back(std::move(pp));
    }
    p->placed = j.at("placed").get<std::vector<int32_t>>();
    for (const auto& rj : j.at("groupRequests")) {
      std::map<std::string, core::Amount> r;
      for (auto it = rj.begin(); it != rj.end(); ++it) r[it.key()] = it->get<core::Amount>();
      p->group_requests.push_back(std::move(r));
    }
  } catch (const Json::exception& e) {
    return InvalidArgument(std::string("bad placement record: ") + e.what());
  }
  return Status::Ok();
}

Json AdmittedToJson(const Admitted& a) {
  Json j = {{"clusterQueue", a.cluster_queue}, {"podSets", PodSetsToJson(a.pod_sets)}};
  if (a.admitted_at_ms) j["admittedAt"] = *a.admitted_at_ms;
  if (a.start_ids) j["startIds"] = true;
  j["admissionSeq"] = a.admission_seq;
  if (a.used_ms) j["usedMs"] = *a.used_ms;
  if (a.placement) j["placement"] = PlacementToJson(*a.placement);
  return j;
}

Admitted AdmittedFromJson(const Json& j) {
  Admitted a;
  a.cluster_queue = Str(j, "clusterQueue");
  if (Status s = PodSetsFromJson(j, &a.pod_sets); !s.ok()) {
    a.pod_sets.clear();
    a.pod_sets_error = s.message();
  }
  a.admitted_at_ms = OptI64(j, "admittedAt");
  a.start_ids = Bool(j, "startIds");
  const Json& seq = Field(j, "admissionSeq");
  if (seq.is_number_unsigned() || seq.is_number_integer()) a.admission_seq = seq.get<uint64_t>();
  a.used_ms = OptI64(j, "usedMs");
  if (j.is_object() && j.contains("placement")) {
    JournaledPlacement p;
    if (Status s = PlacementFromJson(j["placement"], &p); s.ok()) {
      a.placement = std::move(p);
    } else {
      a.placement_error = s.message();
    }
  }
  return a;
}

// ---- final status

Json FinalStatusToJson(const FinalStatus& f) {
  Json j = Json::object();
  if (f.retries) j["retries"] = f.retries;
  if (f.started_at_ms >= 0) j["startedAt"] = f.started_at_ms;
  if (f.admitted_at_ms >= 0) j["admittedAt"] = f.admitted_at_ms;
  if (!f.pods.empty()) {
    Json pods = Json::array();
    for (const FinalPod& p : f.pods) {
      Json pj = {{"pod", p.pod}, {"pid", p.pid}, {"gpus", p.gpus}};
      if (p.exit_code) pj["exitCode"] = *p.exit_code;
      pods.push_back(std::move(pj));
    }
    j["pods"] = std::move(pods);
  }
  if (f.exit_code) j["exitCode"] = *f.exit_code;
  if (!f.phase.empty()) j["phase"] = f.phase;
  if (!f.phase.empty() || !f.message.empty()) j["message"] = f.message;
  return j;
}

FinalStatus FinalStatusFromJson(const Json& j) {
  FinalStatus f;
  f.retries = static_cast<int32_t>(I64(j, "retries", 0));
  f.started_at_ms = I64(j, "startedAt", -1);
  f.admitted_at_ms = I64(j, "admittedAt", -1);
  const Json& pods = Field(j, "pods");
  if (pods.is_array()) {
    for (const Json& pj : pods) {
      FinalPod p;
      p.pod = Str(pj, "pod");
      p.pid = I64(pj, "pid", 0);
      p.gpus = Ints(pj, "gpus");
      if (auto c = OptI64(pj, "exitCode")) p.exit_code = static_cast<int>(*c);
      f.pods.push_back(std::move(p));
    }
  }
  if (auto c = OptI64(j, "exitCode")) f.exit_code = static_cast<int>(*c);
  f.phase = Str(j, "phase");
  f.message = Str(j, "message");
  return f;
}

// ---- starts

Json StartingToJson(const Starting& s) {
  Json pods = Json::array();
  for (const StartingPod& p : s.pods) pods.push_back({{"pod", p.pod}, {"gpus", p.gpus}});
  return {{"startId", s.start_id}, {"retries", s.retries}, {"pods", pods}};
}

Starting StartingFromJson(const Json& j) {
  Starting s;
  s.start_id = Str(j, "startId");
  s.retries = static_cast<int32_t>(I64(j, "retries", 0));
  const Json& pods = Field(j, "pods");
  if (pods.is_array())
    for (const Json& pj : pods) s.pods.push_back({Str(pj, "pod"), Ints(pj, "gpus")});
  return s;
}

Json StartedToJson(const Started& s) {
  Json pods = Json::array();
  for (const StartedPod& p : s.pods) {
    Json pj = {{"pod", p.pod}, {"pid", p.pid}, {"pgid", p.pgid}, {"exitFile", p.exit_file}, {"gpus", p.gpus}};
    if (!p.start_file.empty()) pj["startFile"] = p.start_file;
    pods.push_back(std::move(pj));
  }
  Json j = {{"pods", pods}, {"retries", s.retries}};
  if (!s.start_id.empty()) j["startId"] = s.start_id;
  if (s.started_at_ms >= 0) j["startedAt"] = s.started_at_ms;
  if (s.recovered) j["recovered"] = true;
  return j;
}

Started StartedFromJson(const Json& j) {
  Started s;
  const Json& pods = Field(j, "pods");
  if (pods.is_array()) {
    for (const Json& pj : pods) {
      StartedPod p;
      p.pod = Str(pj, "pod");
      p.pid = I64(pj, "pid", 0);
      p.pgid = I64(pj, "pgid", 0);
      p.exit_file = Str(pj, "exitFile");
      p.start_file = Str(pj, "startFile");
      p.gpus = Ints(pj, "gpus");
      s.pods.push_back(std::move(p));
    }
  }
  s.retries = static_cast<int32_t>(I64(j, "retries", 0));
  s.start_id = Str(j, "startId");
  s.started_at_ms = I64(j, "startedAt", -1);
  s.recovered = Bool(j, "recovered");
  return s;
}

Json PayloadToJson(const Payload& payload) {
  return std::visit(
      [](const auto& p) -> Json {
        using P = std::decay_t<decltype(p)>;
        if constexpr (std::is_same_v<P, ConfigApplied>) {
          return {{"manifests", p.manifests}};
        } else if constexpr (std::is_same_v<P, Submitted>) {
          return p.spec;
        } else if constexpr (std::is_same_v<P, Cancelled>) {
          Json j = Json::object();
          if (!p.user.empty()) j["user"] = p.user;
          if (p.kill_at_ms) j["killAt"] = *p.kill_at_ms;
          return j;
        } else if constexpr (std::is_same_v<P, Admitted>) {
          return AdmittedToJson(p);
        } else if constexpr (std::is_same_v<P, Evicted>) {
          Json j = {{"reason", p.reason}, {"preemptor", p.preemptor}, {"message", p.message}};
          if (p.kill_at_ms) j["killAt"] = *p.kill_at_ms;
          if (p.used_ms) j["usedMs"] = *p.used_ms;
          return j;
        } else if constexpr (std::is_same_v<P, EvictionCompleted>) {
          Json j = FinalStatusToJson(p.status);
          if (!p.reason.empty()) j["reason"] = p.reason;
          return j;
        } else if constexpr (std::is_same_v<P, Starting>) {
          return StartingToJson(p);
        } else if constexpr (std::is_same_v<P, Started>) {
          return StartedToJson(p);
        } else if constexpr (std::is_same_v<P, Finished>) {
          return FinalStatusToJson(p.status);
        } else if constexpr (std::is_same_v<P, Deleted>) {
          Json j = {{"reason", p.reason}};
          if (p.finished_ms) j["finishedMs"] = *p.finished_ms;
          return j;
        } else {
          return Json::object();
        }
      },
      payload);
}

}  // namespace

const char* PhaseName(Phase phase) {
  switch (phase) {
    case Phase::kPending: return "Pending";
    case Phase::kAdmitted: return "Admitted";
    case Phase::kEvicting: return "Evicting";
    case Phase::kCancelling: return "Cancelling";
    case Phase::kFinished: return "Finished";
    case Phase::kCancelled: return "Cancelled";
  }
  return "Pending";
}

std::optional<Phase> ParsePhase(std::string_view name) {
  for (Phase p : {Phase::kPending, Phase::kAdmitted, Phase::kEvicting, Phase::kCancelling, Phase::kFinished,
                  Phase::kCancelled}) {
    if (name == PhaseName(p)) return p;
  }
  return std::nullopt;
}

core::placement::Placement JournaledPlacement::ToPlacement() const {
  core::placement::Placement p;
  for (const PlacedPod& pp : pods) p.pods.push_back(pp.placement);
  p.placed = placed;
  p.group_requests = group_requests;
  return p;
}

std::vector<int32_t> PlacedGpus(const core::placement::PodPlacement& pod) {
  std::vector<int32_t> out = pod.gpus;
  for (const auto& m : pod.mig) out.push_back(m.gpu);
  for (const auto& sh : pod.shares) out.push_back(sh.gpu);
  return out;
}

store::RecordType TypeOf(const Payload& payload) {
  return std::visit(
      [](const auto& p) -> store::RecordType {
        using P = std::decay_t<decltype(p)>;
        if constexpr (std::is_same_v<P, ConfigApplied>) return T::kConfigApplied;
        if constexpr (std::is_same_v<P, Submitted>) return T::kWorkloadSubmitted;
        if constexpr (std::is_same_v<P, Cancelled>) return T::kWorkloadCancelled;
        if constexpr (std::is_same_v<P, Admitted>) return T::kWorkloadAdmitted;
        if constexpr (std::is_same_v<P, Evicted>) return T::kWorkloadEvicted;
        if constexpr (std::is_same_v<P, EvictionCompleted>) return T::kEvictionCompleted;
        if constexpr (std::is_same_v<P, Starting>) return T::kWorkloadStarting;
        if constexpr (std::is_same_v<P, Started>) return T::kWorkloadStarted;
        if constexpr (std::is_same_v<P, Finished>) return T::kWorkloadFinished;
        if constexpr (std::is_same_v<P, Deleted>) return T::kWorkloadDeleted;
        return T::kNodeChanged;
      },
      payload);
}

std::string EncodePayload(const Payload& payload) { return PayloadToJson(payload).dump(); }

store::Record MakeRecord(std::string key, int64_t time_ms, const Payload& payload) {
  store::Record r;
  r.type = TypeOf(payload);
  r.time_ms = time_ms;
  r.key = std::move(key);
  r.payload = EncodePayload(payload);
  return r;
}

Payload DecodePayload(store::RecordType type, std::string_view text) {
  Json j = Json::object();
  if (!text.empty()) {
    j = Json::parse(text.begin(), text.end(), nullptr, false);
    if (j.is_discarded()) j = Json::object();
  }
  switch (type) {
    case T::kConfigApplied: return ConfigApplied{Str(j, "manifests")};
    case T::kWorkloadSubmitted: return Submitted{std::move(j)};
    case T::kWorkloadCancelled: return Cancelled{Str(j, "user"), OptI64(j, "killAt")};
    case T::kWorkloadAdmitted: return AdmittedFromJson(j);
    case T::kWorkloadEvicted:
      return Evicted{Str(j, "reason"), Str(j, "preemptor"), Str(j, "message"), OptI64(j, "killAt"),
                     OptI64(j, "usedMs")};
    case T::kEvictionCompleted: return EvictionCompleted{Str(j, "reason"), FinalStatusFromJson(j)};
    case T::kWorkloadStarting: return StartingFromJson(j);
    case T::kWorkloadStarted: return StartedFromJson(j);
    case T::kWorkloadFinished: return Finished{FinalStatusFromJson(j)};
    case T::kWorkloadDeleted: return Deleted{Str(j, "reason"), OptI64(j, "finishedMs")};
    case T::kNodeChanged: break;
  }
  return Ignored{};
}

// ---------------------------------------------------------------- Reduce

void Reduce(const store::Record& record, Model* model) {
  Reduce(record, DecodePayload(record.type, record.payload), model);
}

void Reduce(const store::Record& r, const Payload& payload, Model* model) {
  if (const auto* c = std::get_if<ConfigApplied>(&payload)) {
    model->config = c->manifests;
    return;
  }
  if (const auto* s = std::get_if<Submitted>(&payload)) {
    WorkloadRecord w;
    w.spec = s->spec;
    w.submitted_ms = r.time_ms;
    w.order = ++model->order;
    model->workloads[r.key] = std::move(w);
    return;
  }
  if (std::holds_alternative<Ignored>(payload)) return;
  auto it = model->workloads.find(r.key);
  if (it == model->workloads.end()) return;
  WorkloadRecord& w = it->second;
  if (const auto* d = std::get_if<Deleted>(&payload)) {
    // Only the finished workload it was decided for: the name may have been
    // submitted again between the decision and this record's commit.
    if (IsFinal(w.phase) && d->finished_ms && w.finished_ms == *d->finished_ms) model->workloads.erase(it);
    return;
  }
  // Cancelled and Finished are final until the name is submitted again. A
  // loop record can commit after a concurrent cancel of the same workload
  // (the loop decided before the cancel, appended after it); it is stale.
  if (IsFinal(w.phase)) return;
  auto min_deadline = [&](std::optional<int64_t> t) {
    if (t && *t >= 0 && (w.kill_at_ms < 0 || *t < w.kill_at_ms)) w.kill_at_ms = *t;
  };
  auto clear_run = [&] {
    w.starting.reset();
    w.started.reset();
  };
  if (w.phase == Phase::kCancelling) {
    // Cancelled while pods may run: they keep the admission until they are
    // gone. A start begun before the cancel is still recorded, so that
    // recovery finds its pods.
    if (const auto* s = std::get_if<Starting>(&payload)) {
      w.starting = *s;
    } else if (const auto* s = std::get_if<Started>(&payload)) {
      w.started = *s;
    } else if (const auto* e = std::get_if<EvictionCompleted>(&payload)) {  // the pods are gone
      w.phase = Phase::kCancelled;
      w.result = e->status;
      w.admission.reset();
      clear_run();
    } else if (const auto* f = std::get_if<Finished>(&payload)) {  // finished before the cancel took effect
      w.phase = Phase::kFinished;
      w.result = f->status;
      clear_run();
      w.finished_ms = r.time_ms;
    }
    return;
  }
  if (const auto* c = std::get_if<Cancelled>(&payload)) {
    // A cancel that names a SIGKILL deadline ("killAt") of an admitted
    // workload is Cancelling until its pods are gone; older journals (no
    // deadline) cancel at once.
    if (c->kill_at_ms && (w.phase == Phase::kAdmitted || w.phase == Phase::kEvicting)) {
      w.phase = Phase::kCancelling;
      min_deadline(c->kill_at_ms);
      w.finished_ms = r.time_ms;
      return;
    }
    w.phase = Phase::kCancelled;
    w.result.reset();
    w.admission.reset();
    clear_run();
    w.finished_ms = r.time_ms;
  } else if (const auto* a = std::get_if<Admitted>(&payload)) {
    w.phase = Phase::kAdmitted;
    if (a->used_ms) w.used_ms = *a->used_ms;
    w.admission = *a;
    clear_run();
    w.kill_at_ms = -1;
  } else if (const auto* e = std::get_if<Evicted>(&payload)) {
    if (e->used_ms) w.used_ms = *e->used_ms;
    if (w.phase == Phase::kAdmitted) w.phase = Phase::kEvicting;
    if (w.phase == Phase::kEvicting) min_deadline(e->kill_at_ms);
  } else if (std::holds_alternative<EvictionCompleted>(payload)) {
    if (w.phase == Phase::kAdmitted || w.phase == Phase::kEvicting) {
      w.phase = Phase::kPending;
      w.admission.reset();
      clear_run();
      w.kill_at_ms = -1;
    }
  } else if (const auto* s = std::get_if<Starting>(&payload)) {
    w.starting = *s;
  } else if (const auto* s = std::get_if<Started>(&payload)) {
    w.started = *s;
  } else if (const auto* f = std::get_if<Finished>(&payload)) {
    w.phase = Phase::kFinished;
    w.result = f->status;
    clear_run();
    w.finished_ms = r.time_ms;
  }
}

// ---------------------------------------------------------------- snapshots

std::string EncodeSnapshot(const Model& model) {
  Json ws = Json::array();
  for (const auto& [key, w] : model.workloads) {
    ws.push_back({{"key", key},
                  {"spec", w.spec},
                  {"submittedMs", w.submitted_ms},
                  {"order", w.order},
                  {"phase", PhaseName(w.phase)},
                  {"admission", w.admission ? AdmittedToJson(*w.admission) : Json()},
                  {"starting", w.starting ? StartingToJson(*w.starting) : Json()},
                  {"started", w.started ? StartedToJson(*w.started) : Json()},
                  {"result", w.result ? FinalStatusToJson(*w.result) : Json()},
                  {"finishedMs", w.finished_ms},
                  {"killAtMs", w.kill_at_ms},
                  {"usedMs", w.used_ms}});
  }
  return Json{{"version", 1}, {"config", model.config}, {"order", model.order}, {"workloads", ws}}.dump();
}

Status DecodeSnapshot(std::string_view text, Model* model) {
  Json s = Json::parse(text.begin(), text.end(), nullptr, false);
  if (s.is_discarded() || !s.is_object()) return Status(StatusCode::kInternal, "corrupt snapshot");
  Model m;
  m.config = Str(s, "config");
  const Json& order = Field(s, "order");
  if (order.is_number_unsigned() || order.is_number_integer()) m.order = order.get<uint64_t>();
  const Json& ws = Field(s, "workloads");
  if (ws.is_array()) {
    for (const Json& w : ws) {
      WorkloadRecord p;
      p.spec = Field(w, "spec");
      p.submitted_ms = I64(w, "submittedMs", 0);
      const Json& o = Field(w, "order");
      if (o.is_number_unsigned() || o.is_number_integer()) p.order = o.get<uint64_t>();
      p.phase = ParsePhase(Str(w, "phase")).value_or(Phase::kPending);
      if (Field(w, "admission").is_object()) p.admission = AdmittedFromJson(w["admission"]);
      if (Field(w, "starting").is_object()) p.starting = StartingFromJson(w["starting"]);
      if (Field(w, "started").is_object()) p.started = StartedFromJson(w["started"]);
      if (Field(w, "result").is_object()) p.result = FinalStatusFromJson(w["result"]);
      p.finished_ms = I64(w, "finishedMs", -1);
      p.kill_at_ms = I64(w, "killAtMs", -1);
      p.used_ms = I64(w, "usedMs", 0);
      m.workloads[Str(w, "key")] = std::move(p);
    }
  }
  *model = std::move(m);
  return Status::Ok();
}

}  // namespace artel::server::journal
