#include "kube/controller.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <utility>

namespace artel::kube {
namespace {

constexpr const char* kGroup = "kueue.x-k8s.io";

// obj[key] when obj is an object holding key, else an empty object: a
// reference, never a copy (Json::value copies the subtree, and metadata holds
// managedFields).
const Json& Field(const Json& obj, const char* key) {
  static const Json kEmpty = Json::object();
  if (!obj.is_object()) return kEmpty;
  auto it = obj.find(key);
  return it != obj.end() ? *it : kEmpty;
}

std::string KeyOf(const Json& obj) {
  const Json& m = Field(obj, "metadata");
  if (!m.is_object()) return "/";
  return m.value("namespace", std::string()) + "/" + m.value("name", std::string());
}

std::string Str(const Json& obj, const char* a, const char* b) {
  if (!obj.is_object()) return "";
  auto it = obj.find(a);
  if (it == obj.end() || !it->is_object()) return "";
  auto jt = it->find(b);
  if (jt == it->end() || !jt->is_string()) return "";
  return jt->get<std::string>();
}

int64_t Rv(const Json& obj) {
  std::string s = Str(obj, "metadata", "resourceVersion");
  if (s.empty()) return 0;
  try {
    return std::stoll(s);
  } catch (...) {
    return 0;
  }
}

int64_t Generation(const Json& obj) {
  const Json& m = Field(obj, "metadata");
  if (!m.is_object()) return 0;
  auto it = m.find("generation");
  return it != m.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}

// The spec that decides what the engine holds, minus spec.active (followed
// separately through Engine::SetActive).
std::string SpecDump(const Json& obj) {
  Json spec = Field(obj, "spec");
  if (spec.is_object()) spec.erase("active");
  return spec.dump();
}

bool SpecActive(const Json& obj) {
  const Json& spec = Field(obj, "spec");
  if (!spec.is_object()) return true;
  auto it = spec.find("active");
  return it == spec.end() || !it->is_boolean() || it->get<bool>();
}

// A status without the timestamps that change on every rebuild, to decide
// whether a queue's status changed.
std::string Fingerprint(Json status) {
  if (status.is_object() && status.contains("conditions") && status["conditions"].is_array()) {
    for (Json& c : status["conditions"])
      if (c.is_object()) c.erase("lastTransitionTime");
  }
  return status.dump();
}

bool Transient(const ApiError& e) { return e.http == 0 || e.http == 429 || e.http >= 500; }

}  // namespace

Controller::Controller(ClientConfig config, ControllerOptions options, server::Logger* log,
                       std::function<int64_t()> now_ms)
    : config_(std::move(config)), options_(std::move(options)), log_(log), now_ms_(std::move(now_ms)) {
  // Kueue places only TAS pod sets; the rest is kube-scheduler's
  // (docs/kubernetes.md, "Nodes and topology").
  options_.engine.place_topology_flavors_only = true;
  if (options_.instance.empty()) {
    char host[256] = {0};
    if (gethostname(host, sizeof(host) - 1) == 0) options_.instance = host;
    if (options_.instance.empty()) options_.instance = "arteld";
  }
  if (options_.writers < 1) options_.writers = 1;
  options_.background_writers = std::clamp(options_.background_writers, 1, options_.writers);
  if (options_.max_queued_events < 1) options_.max_queued_events = 1;
  // Made here, not in Start, so that the read verbs of the API are served
  // (empty) by a replica waiting for the leader Lease (src/kube/leader.h).
  loop_ = std::make_unique<loop::ControlLoop>(options_.engine, options_.loop, log_, now_ms_);
  loop_->SetBackend(this);
}

Controller::~Controller() { Stop(); }

ControllerStats Controller::stats() const {
  std::lock_guard<std::mutex> l(stats_mu_);
  return stats_;
}

std::vector<ObjectCondition> Controller::Conditions() const {
  std::lock_guard<std::mutex> l(cond_mu_);
  return conditions_;
}

std::string Controller::Rfc3339(int64_t ms) const { return FormatRfc3339(ms); }

Resource Controller::Res(Kind kind) const {
  switch (kind) {
    case Kind::kFlavor: return Resource{kGroup, version_, "resourceflavors", false};
    case Kind::kCohort: return Resource{kGroup, version_, "cohorts", false};
    case Kind::kClusterQueue: return Resource{kGroup, version_, "clusterqueues", false};
    case Kind::kLocalQueue: return Resource{kGroup, version_, "localqueues", true};
    case Kind::kPriorityClass: return Resource{kGroup, version_, "workloadpriorityclasses", false};
    case Kind::kTopology: return Resource{kGroup, version_, "topologies", false};
    case Kind::kNamespace: return Resource{"", "v1", "namespaces", false};
    case Kind::kWorkload: return Resource{kGroup, version_, "workloads", true};
  }
  return Resource{};
}

Status Controller::Discover() {
  Client client(config_);
  if (!options_.kueue_version.empty()) {
    version_ = options_.kueue_version;
    return Status::Ok();
  }
  auto group = client.Raw("GET", std::string("/apis/") + kGroup);
  if (!group.ok()) {
    const ApiError& e = group.error();
    if (e.http == 404)
      return FailedPrecondition(
          "the cluster does not serve kueue.x-k8s.io: install Kueue's CRDs first (docs/kubernetes.md)");
    return FailedPrecondition("cannot reach the API server at " + config_.server + ": " +
                              (e.message.empty() ? e.reason : e.message));
  }
  std::set<std::string> versions;
  for (const Json& v : group.value().value("versions", Json::array()))
    if (v.is_object()) versions.insert(v.value("version", std::string()));
  if (versions.count("v1beta2")) {
    version_ = "v1beta2";
  } else if (versions.count("v1beta1")) {
    version_ = "v1beta1";
  } else {
    return FailedPrecondition("kueue.x-k8s.io is served without v1beta2 or v1beta1");
  }
  return Status::Ok();
}

// ---------------------------------------------------------------- start/stop

Status Controller::Start(int64_t sync_timeout_ms) {
  if (started_.exchange(true)) return FailedPrecondition("controller already started");
  if (Status s = Discover(); !s.ok()) return s;
  log_->Info("kubernetes mode",
             {{"server", config_.server}, {"kueue", std::string(kGroup) + "/" + version_}});
  for (int i = 0; i < options_.writers; ++i) writers_.emplace_back([this, i] { WriterMain(i); });

  // Which of the kinds the cluster serves (Cohort and Topology are newer
  // than the rest; a kind that is not served is simply empty).
  std::set<std::string> served;
  auto unlisted = std::make_shared<std::atomic<int>>(0);  // informers whose first list is not delivered yet
  {
    Client client(config_);
    auto list = client.Raw("GET", std::string("/apis/") + kGroup + "/" + version_);
    if (list.ok()) {
      for (const Json& r : list.value().value("resources", Json::array()))
        if (r.is_object()) served.insert(r.value("name", std::string()));
    }
  }
  for (Kind kind : {Kind::kNamespace, Kind::kFlavor, Kind::kCohort, Kind::kClusterQueue, Kind::kLocalQueue,
                    Kind::kPriorityClass, Kind::kTopology, Kind::kWorkload}) {
    Resource r = Res(kind);
    if (kind != Kind::kNamespace && !served.empty() && !served.count(r.plural)) {
      log_->Info("kind not served by this cluster; treated as empty", {{"resource", r.plural}});
      continue;
    }
    Informer::Handler h;
    h.on_add = [this, kind](const Json& o) { Enqueue(kind, false, o); };
    h.on_update = [this, kind](const Json& o) { Enqueue(kind, false, o); };
    h.on_delete = [this, kind](const Json& o) { Enqueue(kind, true, o); };
    // HasSynced() turns true before the listed objects reach the handlers;
    // on_synced comes after them, so the first one means "all in the inbox".
    unlisted->fetch_add(1);
    auto first = std::make_shared<std::atomic<bool>>(false);
    h.on_synced = [unlisted, first] {
      if (!first->exchange(true)) unlisted->fetch_sub(1);
    };
    informer_clients_.push_back(std::make_unique<Client>(config_));
    informers_.push_back(std::make_unique<Informer>(informer_clients_.back().get(), r, "", h));
    informers_.back()->SetSlimCache(true);  // the loop keeps its own copy of every object
  }
  for (auto& inf : informers_) inf->Start();
  // The cluster is the state: everything is listed before the first pass.
  int64_t deadline = now_ms_() + sync_timeout_ms;
  for (;;) {
    if (unlisted->load() == 0) break;
    if (now_ms_() > deadline) {
      Stop();
      return FailedPrecondition("the informers did not list the cluster within " +
                                std::to_string(sync_timeout_ms / 1000) + "s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (nodes_ != nullptr) {
    if (Status s = nodes_->Start([this] { loop_->Wake(); }, std::max<int64_t>(1, deadline - now_ms_()));
        !s.ok()) {
      Stop();
      return s;
    }
  }
  // Everything listed is in the inbox now: fold it in without scheduling
  // (restores before any decision), then start the loop.
  loop_->RunOnce(false);
  initial_done_ = true;
  {
    std::lock_guard<std::mutex> l(loop_->mu());
    log_->Info("cluster state loaded", {{"workloads", std::to_string(wls_.size())},
                                        {"restored", std::to_string(stats().restored)},
                                        {"pending", std::to_string(loop_->engine().PendingCount())}});
  }
  loop_->Start();
  ready_ = true;
  return Status::Ok();
}

void Controller::Stop() {
  ready_ = false;
  if (loop_) loop_->Stop();
  if (nodes_ != nullptr) nodes_->Stop();
  for (auto& inf : informers_) inf->Stop();
  {
    std::lock_guard<std::mutex> l(out_mu_);
    stopping_ = true;
  }
  out_cv_.notify_all();
  for (auto& t : writers_)
    if (t.joinable()) t.join();
  writers_.clear();
}

void Controller::Enqueue(Kind kind, bool deleted, const Json& obj) {
  {
    std::lock_guard<std::mutex> l(in_mu_);
    inbox_.push_back(InEvent{kind, deleted, obj});
  }
  if (loop_) loop_->Wake();
}

void Controller::Complete(WriteResult r) {
  {
    std::lock_guard<std::mutex> l(in_mu_);
    results_.push_back(std::move(r));
  }
  if (loop_) loop_->Wake();
}

// ---------------------------------------------------------------- loop side

bool Controller::Poll(int64_t now) {
  (void)now;
  {
    std::lock_guard<std::mutex> l(in_mu_);
    if (events_.empty()) {
      events_.swap(inbox_);
    } else {
      for (auto& e : inbox_) events_.push_back(std::move(e));
      inbox_.clear();
    }
    for (auto& r : results_) done_.push_back(std::move(r));
    results_.clear();
  }
  // Configuration kinds: keep the latest object of each; rebuild off the lock.
  static const char* kNames[] = {"flavor", "cohort", "cq", "lq", "wpc", "topology", "ns", "wl"};
  std::vector<InEvent> workloads;
  for (InEvent& e : events_) {
    if (e.kind == Kind::kWorkload) {
      workloads.push_back(std::move(e));
      continue;
    }
    auto& objs = config_objs_[kNames[static_cast<int>(e.kind)]];
    std::string key = KeyOf(e.obj);
    // A queue's object is part of its status' inputs (its resourceVersion, a status edited by someone else).
    if (e.kind == Kind::kClusterQueue || e.kind == Kind::kLocalQueue) {
      queue_dirty_ = true;
      queue_touched_.insert(
          (e.kind == Kind::kClusterQueue ? "cq" : "lq") +
          (e.kind == Kind::kClusterQueue ? "/" + key.substr(key.find('/') + 1) : "/" + key));
    }
    if (e.deleted) {
      objs.erase(key);
      config_dirty_ = true;
      continue;
    }
    auto it = objs.find(key);
    // As Kueue's WorkloadPriorityClass reconciler (since v0.16,
    // pkg/controller/core/workloadpriorityclass_controller.go): a class that
    // is created, or whose value changes, is written into the spec.priority of
    // the Workloads that reference it.
    if (e.kind == Kind::kPriorityClass &&
        (it == objs.end() || Field(it->second, "value") != Field(e.obj, "value")))
      wpc_changed_.insert(Str(e.obj, "metadata", "name"));
    // Our own status writes come back as updates: only a change outside
    // status reconfigures (an object's spec, labels of a Namespace).
    if (it != objs.end()) {
      Json a = it->second, b = e.obj;
      a.erase("status");
      b.erase("status");
      if (a.is_object() && a.contains("metadata")) {
        a["metadata"].erase("resourceVersion");
        a["metadata"].erase("managedFields");
      }
      if (b.is_object() && b.contains("metadata")) {
        b["metadata"].erase("resourceVersion");
        b["metadata"].erase("managedFields");
      }
      it->second = e.obj;
      if (a == b) continue;
    } else {
      objs[key] = e.obj;
    }
    config_dirty_ = true;
  }
  events_ = std::move(workloads);
  if (config_dirty_) {
    KueueObjects k;
    auto fill = [&](const char* name, std::vector<Json>* out) {
      for (const auto& [key, obj] : config_objs_[name]) out->push_back(obj);
    };
    fill("flavor", &k.resource_flavors);
    fill("cohort", &k.cohorts);
    fill("cq", &k.cluster_queues);
    fill("lq", &k.local_queues);
    fill("wpc", &k.priority_classes);
    fill("topology", &k.topologies);
    fill("ns", &k.namespaces);
    built_ = config_builder_.Build(k);
    config_dirty_ = false;
  }
  const bool nodes_changed = nodes_ != nullptr && nodes_->Poll(now);
  return !events_.empty() || !done_.empty() || built_.has_value() || nodes_changed;
}

void Controller::ApplyConfigLocked(core::Engine& engine, int64_t now) {
  (void)now;
  BuiltConfig built = std::move(*built_);
  built_.reset();
  if (Status s = engine.Configure(built.config); !s.ok()) {
    // BuildConfig leaves invalid objects out, so this is a bug; keep the
    // previous configuration running.
    log_->Error("configuration refused by the engine; keeping the previous one", {{"error", s.ToString()}});
    return;
  }
  for (const ObjectCondition& c : built.conditions) {
    if (!c.active)
      log_->Warn("inactive", {{"kind", c.kind},
                              {"name", c.ns.empty() ? c.name : c.ns + "/" + c.name},
                              {"reason", c.reason},
                              {"message", c.message}});
  }
  loop_conditions_ = built.conditions;
  {
    std::lock_guard<std::mutex> l(cond_mu_);
    conditions_ = std::move(built.conditions);
  }
  last_queue_status_ms_ = -1;  // write queue statuses on this pass
  queue_dirty_ = true;
  queue_index_stale_ = true;  // it points into the old configuration
}

const Json& Controller::BaseStatus(const Wl& w) const {
  static const Json kEmpty = Json::object();
  if (!w.desired_status.is_null()) return w.desired_status;
  auto it = w.obj.find("status");
  return it != w.obj.end() && it->is_object() ? *it : kEmpty;
}

void Controller::SyncLocked(core::Engine& engine, int64_t now) {
  if (built_) {
    ApplyConfigLocked(engine, now);
    // Workloads that could not be submitted (an unknown priority class, a
    // missing flavor) get another chance on the new configuration.
    for (auto& [key, w] : wls_) {
      if (!w.in_engine && !w.finished) {
        w.broken = false;
        events_.push_back(InEvent{Kind::kWorkload, false, w.obj});
      }
    }
  }
  if (nodes_ != nullptr) nodes_->SyncLocked(engine, now);
  // Fold the objects: the newest one per key wins; older ones (an informer
  // lagging behind our own write) are ignored.
  std::vector<std::string> touched;
  std::set<std::string> touched_set;
  std::set<std::string> deleted;
  auto touch = [&](const std::string& key) {
    if (touched_set.insert(key).second) touched.push_back(key);
  };
  auto fold = [&](Json&& obj, bool is_delete) {
    std::string key = KeyOf(obj);
    std::string uid = Str(obj, "metadata", "uid");
    auto it = wls_.find(key);
    if (is_delete) {
      if (it != wls_.end() && it->second.uid == uid) {
        deleted.insert(key);
        touch(key);
      }
      return;
    }
    // The controller never reads managedFields, and they are often the
    // largest part of a Workload once several managers have written it:
    // drop them before the object is kept (writes drop them too).
    if (auto m = obj.find("metadata"); m != obj.end() && m->is_object()) m->erase("managedFields");
    int64_t rv = Rv(obj);
    if (it != wls_.end() && it->second.uid == uid) {
      if (rv != 0 && rv < it->second.rv) return;
      if (rv == it->second.rv && !it->second.obj.is_null() && it->second.in_engine) {
        it->second.obj = std::move(obj);
        return;
      }
    }
    if (it != wls_.end() && it->second.uid != uid) {
      // Deleted and created again under the same name: the old one goes.
      for (const WorkloadListener& fn : wl_listeners_) fn(it->second.obj, true);
      if (it->second.in_engine) DropLocked(engine, key, now, false);
      wls_.erase(it);
      it = wls_.end();
    }
    deleted.erase(key);
    Wl& w = wls_[key];
    if (w.uid.empty()) {
      w.uid = uid;
      auto created = ParseRfc3339(Str(obj, "metadata", "creationTimestamp"));
      w.created_ms = created.ok() ? *created : now;
    }
    w.obj = std::move(obj);
    w.rv = rv;
    touch(key);
  };
  for (InEvent& e : events_) fold(std::move(e.obj), e.deleted);
  events_.clear();
  if (!wpc_changed_.empty()) PriorityClassesLocked();
  if (!done_.empty()) queue_dirty_ = true;
  for (WriteResult& r : done_) {
    if (r.type == Write::Type::kPriority) {
      // The informer brings the changed Workload; a failure waits for the class's next change.
      if (r.outcome == WriteResult::Outcome::kFailed)
        log_->Warn("workload priority not updated", {{"workload", r.ns + "/" + r.name}});
      continue;
    }
    if (r.type == Write::Type::kQueueStatus) {
      if (r.outcome != WriteResult::Outcome::kOk) {
        queue_status_written_.erase(r.key);
        queue_status_inputs_.erase(r.key);  // rebuild it on the next pass
      }
      continue;
    }
    std::string key = r.ns + "/" + r.name;
    auto it = wls_.find(key);
    if (it == wls_.end()) {
      // Deleted while its write was in flight: the alias that write left goes too.
      std::lock_guard<std::mutex> l(out_mu_);
      rv_alias_.erase("wl/" + key);
      continue;
    }
    if (it->second.uid != r.uid) continue;
    Wl& w = it->second;
    if (r.gen >= w.admit_gen) w.admit_inflight = false;
    if (r.gen >= w.write_gen) w.desired_status = Json();  // nothing newer of ours is on the way
    if (r.type == Write::Type::kPending && r.outcome != WriteResult::Outcome::kOk) w.pending_msg.clear();
    if (r.outcome == WriteResult::Outcome::kFailed && r.type == Write::Type::kAdmit) {
      // The API server rejected the admission for good (not a conflict):
      // the workload leaves the engine until its object changes.
      w.broken = true;
      w.broken_rv = Str(w.obj, "metadata", "resourceVersion");
      if (w.in_engine) DropLocked(engine, key, now, false);
      std::lock_guard<std::mutex> l(stats_mu_);
      stats_.admissions_requeued++;
      continue;
    }
    if (r.outcome == WriteResult::Outcome::kRefused && r.type == Write::Type::kAdmit) {
      std::lock_guard<std::mutex> l(stats_mu_);
      stats_.admissions_requeued++;
    }
    if (r.object.is_object()) fold(std::move(r.object), false);
    touch(key);
  }
  done_.clear();

  if (!touched.empty()) queue_dirty_ = true;
  queue_dirty_keys_.insert(touched.begin(), touched.end());
  // Reconcile each touched workload: first what frees quota, then restores
  // (in admission order), then submissions (in creation order, uid tie-break).
  std::vector<std::string> to_submit, to_restore;
  for (const std::string& key : touched) {
    if (deleted.count(key)) {
      auto it = wls_.find(key);
      if (it != wls_.end()) {
        for (const WorkloadListener& fn : wl_listeners_) fn(it->second.obj, true);
        if (it->second.in_engine) DropLocked(engine, key, now, false);
        wls_.erase(it);
      }
      {
        std::lock_guard<std::mutex> l(out_mu_);
        rv_alias_.erase("wl/" + key);  // bounded by the workloads that exist
      }
      continue;
    }
    auto it = wls_.find(key);
    if (it == wls_.end()) continue;
    for (const WorkloadListener& fn : wl_listeners_) fn(it->second.obj, false);
    HandleWorkloadLocked(engine, it->second.obj, false, now, &to_submit, &to_restore);
  }
  std::vector<std::pair<std::pair<int64_t, std::string>, std::string>> order;
  for (const std::string& key : to_restore) {
    const Wl& w = wls_[key];
    auto obs = ObserveWorkload(w.obj);
    order.push_back({{obs.ok() ? obs->admitted_at_ms : 0, w.uid}, key});
  }
  std::sort(order.begin(), order.end());
  for (const auto& [k, key] : order) {
    if (!RestoreLocked(engine, key, now)) {
      // Not restorable (its ClusterQueue or flavor is gone): it waits as
      // pending and is decided again.
      if (!wls_[key].in_engine) SubmitLocked(engine, key, now);
    }
  }
  order.clear();
  for (const std::string& key : to_submit) {
    const Wl& w = wls_[key];
    order.push_back({{w.created_ms, w.uid}, key});
  }
  std::sort(order.begin(), order.end());
  for (const auto& [k, key] : order) SubmitLocked(engine, key, now);
}

void Controller::CycleDoneLocked(core::Engine& engine, int64_t now, bool full_pass) {
  (void)full_pass;
  if (!initial_done_) return;
  PendingStatusesLocked(engine, now);
  QueueStatusesLocked(engine, now);
}

void Controller::HandleWorkloadLocked(core::Engine& engine, const Json& obj, bool deleted, int64_t now,
                                      std::vector<std::string>* to_submit,
                                      std::vector<std::string>* to_restore) {
  (void)deleted;
  std::string key = KeyOf(obj);
  Wl& w = wls_[key];
  auto obs_r = ObserveWorkload(obj);
  if (!obs_r.ok()) {
    log_->Warn("cannot read the status of a Workload; ignored",
               {{"workload", key}, {"error", obs_r.status().ToString()}});
    return;
  }
  const ObservedState& obs = *obs_r;
  if (obs.finished) {
    if (w.in_engine) DropLocked(engine, key, now, true);
    w.finished = true;
    return;
  }
  if (w.finished) return;  // a Finished workload stays finished
  if (!w.in_engine) {
    if (w.broken && Str(obj, "metadata", "resourceVersion") == w.broken_rv) return;
    w.broken = false;
    if (obs.quota_reserved && !obs.admission.empty()) {
      to_restore->push_back(key);
    } else {
      to_submit->push_back(key);
    }
    return;
  }
  const core::WorkloadInfo* info = engine.Find(key);
  if (info == nullptr) {
    w.in_engine = false;
    to_submit->push_back(key);
    return;
  }
  // spec.active.
  bool active = SpecActive(obj);
  if (active != info->spec.active) {
    (void)engine.SetActive(key, active, now);
    info = engine.Find(key);
  }
  // Other spec changes: the engine gets the new spec. An admitted workload
  // keeps its admission (Kueue's webhook forbids pod-set changes while it is
  // admitted; a priority change takes effect for later preemptions).
  // metadata.generation moves with every spec change (the Workload CRD has a
  // status subresource), so the spec is compared only when it moved.
  int64_t gen = Generation(obj);
  std::string dump = gen != 0 && gen == w.spec_gen ? w.spec_dump : SpecDump(obj);
  w.spec_gen = gen;
  if (dump != w.spec_dump) {
    if (info->state == core::WorkloadState::kPending) {
      DropLocked(engine, key, now, false);
      to_submit->push_back(key);
      return;
    }
    if (info->state == core::WorkloadState::kAdmitted) {
      auto spec = WorkloadFromObject(obj, engine.config());
      if (spec.ok() &&
          (spec->priority != info->spec.priority || spec->priority_class != info->spec.priority_class)) {
        std::string cq = info->cluster_queue;
        std::vector<core::PodSetAssignment> admission = info->admission;
        core::Time admitted_at = info->admitted_at;
        uint64_t seq = info->admission_seq;
        DropLocked(engine, key, now, false);
        SubmitLocked(engine, key, now);
        if (w.in_engine) {
          if (Status s = engine.Restore(key, cq, admission, admitted_at, nullptr, seq); !s.ok())
            log_->Warn("priority change: admission not kept", {{"workload", key}, {"error", s.ToString()}});
        }
        info = engine.Find(key);
        if (info == nullptr) return;
      }
    }
    w.spec_dump = dump;
  }
  // Quota: the engine follows what the object says.
  if ((info->state == core::WorkloadState::kAdmitted || info->state == core::WorkloadState::kEvicting) &&
      !obs.quota_reserved && !w.admit_inflight) {
    if (info->state == core::WorkloadState::kEvicting) {
      // The workload's side cleared QuotaReserved after our eviction: the
      // quota is released and the workload requeued (as Kueue does once
      // its job framework has stopped the pods).
      (void)engine.CompleteEviction(key, now);
      Write wr;
      wr.type = Write::Type::kRequeue;
      wr.status = RequeuedStatus(BaseStatus(w), Rfc3339(now), Generation(obj));
      wr.gen = ++w.write_gen;
      w.desired_status = wr.status;
      wr.key = "wl/" + key;
      wr.resource = Res(Kind::kWorkload);
      wr.ns = Str(obj, "metadata", "namespace");
      wr.name = Str(obj, "metadata", "name");
      wr.uid = w.uid;
      wr.object = obj;
      wr.precondition_rv = Str(obj, "metadata", "resourceVersion");
      w.pending_msg.clear();
      Stage(std::move(wr));
    } else {
      // Admitted in the engine, not in the cluster (a write refused, or
      // the reservation cleared by someone else): requeue.
      RequeueLocked(engine, key, now);
    }
    return;
  }
  if (info->state == core::WorkloadState::kPending && obs.quota_reserved && !obs.admission.empty() &&
      !w.admit_inflight) {
    // Reserved in the cluster (an admission of ours that landed although
    // its write looked failed, or another admitter): follow the cluster.
    DropLocked(engine, key, now, false);
    to_restore->push_back(key);
  }
}

void Controller::SubmitLocked(core::Engine& engine, const std::string& key, int64_t now) {
  Wl& w = wls_[key];
  if (w.in_engine) return;
  auto spec = WorkloadFromObject(w.obj, engine.config());
  if (!spec.ok()) {
    w.broken = true;
    w.broken_rv = Str(w.obj, "metadata", "resourceVersion");
    log_->Warn("invalid Workload; not queued", {{"workload", key}, {"error", spec.status().ToString()}});
    if (options_.events)
      Stage(Write{
          Write::Type::kEvent, "", Resource{}, "", "", "",
          WorkloadEvent(w.obj, "Warning", "Pending", "invalid Workload: " + spec.status().message(), now)});
    return;
  }
  auto id = engine.Submit(std::move(spec).value(), w.created_ms);
  if (!id.ok()) {
    w.broken = true;
    w.broken_rv = Str(w.obj, "metadata", "resourceVersion");
    log_->Warn("Workload not queued", {{"workload", key}, {"error", id.status().ToString()}});
    return;
  }
  w.in_engine = true;
  w.spec_dump = SpecDump(w.obj);
  w.spec_gen = Generation(w.obj);
  w.pending_msg.clear();
  (void)now;
}

bool Controller::RestoreLocked(core::Engine& engine, const std::string& key, int64_t now) {
  Wl& w = wls_[key];
  auto obs = ObserveWorkload(w.obj);
  if (!obs.ok()) return false;
  SubmitLocked(engine, key, now);
  if (!w.in_engine) return false;
  int64_t at = obs->admitted_at_ms >= 0 ? obs->admitted_at_ms : now;
  // A TAS admission keeps its nodes (its pods may be pinned there already).
  const bool pinned = engine.cluster() != nullptr && std::any_of(obs->topology.begin(), obs->topology.end(),
                                                                 [](const auto& t) { return !t.empty(); });
  Status restored = pinned ? engine.RestoreOnNodes(key, obs->cluster_queue, obs->admission, at, obs->topology)
                           : engine.Restore(key, obs->cluster_queue, obs->admission, at);
  if (Status s = restored; !s.ok()) {
    log_->Warn("admission not restorable; the workload is pending again",
               {{"workload", key}, {"clusterQueue", obs->cluster_queue}, {"error", s.ToString()}});
    return true;  // submitted, pending
  }
  // Evicted before the restart and still holding its quota: it is evicting
  // again in the engine (so that no second victim is chosen for the same
  // preemptor) until its side clears the reservation.
  if (obs->evicted && SpecActive(w.obj)) {
    (void)engine.SetActive(key, false, now);
    (void)engine.SetActive(key, true, now);
    quiet_evictions_.insert(key);
  }
  std::lock_guard<std::mutex> l(stats_mu_);
  stats_.restored++;
  return true;
}

bool Controller::SkipEvictionLocked(const core::Eviction& e, int64_t now) {
  (void)now;
  // Called for every eviction of a cycle, skipped or not: the victim's queues change.
  queue_dirty_ = true;
  queue_dirty_keys_.insert(e.victim);
  return e.reason == core::EvictionReason::kDeactivated && quiet_evictions_.erase(e.victim) > 0;
}

void Controller::DropLocked(core::Engine& engine, const std::string& key, int64_t now, bool finished) {
  auto it = wls_.find(key);
  if (it != wls_.end()) it->second.in_engine = false;
  const core::WorkloadInfo* info = engine.Find(key);
  if (info == nullptr) return;
  core::WorkloadId id = info->id;
  if (finished &&
      (info->state == core::WorkloadState::kAdmitted || info->state == core::WorkloadState::kEvicting)) {
    loop_->CountFinishedLocked(info->cluster_queue);
    (void)engine.Finish(id, now);
  } else {
    (void)engine.Cancel(key, now);
  }
  (void)engine.Forget(id);
}

void Controller::RequeueLocked(core::Engine& engine, const std::string& key, int64_t now) {
  DropLocked(engine, key, now, false);
  SubmitLocked(engine, key, now);
}

// Decisions -> writes.

void Controller::OnAdmittedLocked(const core::WorkloadInfo& info, int64_t now) {
  auto it = wls_.find(info.key);
  if (it == wls_.end()) return;
  Wl& w = it->second;
  queue_dirty_ = true;
  queue_dirty_keys_.insert(info.key);
  Write wr;
  wr.type = Write::Type::kAdmit;
  wr.key = "wl/" + info.key;
  wr.resource = Res(Kind::kWorkload);
  wr.ns = info.spec.ns;
  wr.name = info.spec.name;
  wr.uid = w.uid;
  wr.object = w.obj;
  wr.precondition_rv = Str(w.obj, "metadata", "resourceVersion");
  wr.status = AdmittedStatus(BaseStatus(w), info, Rfc3339(now), Generation(w.obj));
  if (version_ == "v1beta1") TopologyAssignmentsToV1beta1(&wr.status);
  wr.gen = ++w.write_gen;
  w.admit_gen = wr.gen;
  w.admit_inflight = true;
  w.desired_status = wr.status;
  w.pending_msg.clear();
  if (options_.events) {
    double waited = std::max<int64_t>(0, now - info.queued_at) / 1000.0;
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.0fs", waited);
    wr.events.push_back(WorkloadEvent(
        w.obj, "Normal", "QuotaReserved",
        "Quota reserved in ClusterQueue " + info.cluster_queue + ", wait time since queued was " + buf, now));
    wr.events.push_back(WorkloadEvent(
        w.obj, "Normal", "Admitted",
        "Admitted by ClusterQueue " + info.cluster_queue + ", wait time since reservation was 0s", now));
  }
  staged_.push_back(std::move(wr));
}

void Controller::OnEvictedLocked(const core::Eviction& e, const core::WorkloadInfo* victim, int64_t now) {
  (void)victim;
  auto it = wls_.find(e.victim);
  if (it == wls_.end()) return;
  Wl& w = it->second;
  queue_dirty_ = true;
  Write wr;
  wr.type = Write::Type::kEvict;
  wr.key = "wl/" + e.victim;
  wr.resource = Res(Kind::kWorkload);
  wr.ns = Str(w.obj, "metadata", "namespace");
  wr.name = Str(w.obj, "metadata", "name");
  wr.uid = w.uid;
  wr.object = w.obj;
  wr.precondition_rv = Str(w.obj, "metadata", "resourceVersion");
  wr.status = EvictedStatus(BaseStatus(w), e, Rfc3339(now), Generation(w.obj));
  wr.eviction = e;
  wr.gen = ++w.write_gen;
  w.desired_status = wr.status;
  if (options_.events) {
    bool preempted = e.reason == core::EvictionReason::kInClusterQueue ||
                     e.reason == core::EvictionReason::kInCohortReclamation ||
                     e.reason == core::EvictionReason::kInCohortFairSharing ||
                     e.reason == core::EvictionReason::kInCohortReclaimWhileBorrowing;
    std::string msg =
        e.message.empty() ? std::string("evicted: ") + core::EvictionReasonName(e.reason) : e.message;
    if (preempted) wr.events.push_back(WorkloadEvent(w.obj, "Normal", "Preempted", msg, now));
    wr.events.push_back(WorkloadEvent(w.obj, "Normal", "Evicted", msg, now));
  }
  staged_.push_back(std::move(wr));
}

void Controller::PendingStatusesLocked(core::Engine& engine, int64_t now) {
  if (last_pending_scan_ms_ >= 0 && now - last_pending_scan_ms_ < options_.pending_status_interval_ms) return;
  last_pending_scan_ms_ = now;
  for (auto& [key, w] : wls_) {
    if (!w.in_engine || w.admit_inflight) continue;
    const core::WorkloadInfo* info = engine.Find(key);
    if (info == nullptr || info->state != core::WorkloadState::kPending) continue;
    if (info->pending->kind == core::PendingReason::Kind::kNone ||
        info->pending->kind == core::PendingReason::Kind::kNotYetTried)
      continue;
    if (info->pending->message == w.pending_msg) continue;
    if (!w.pending_msg.empty() && w.pending_kind == static_cast<int>(info->pending->kind) &&
        now - w.pending_at < options_.pending_rewrite_interval_ms)
      continue;
    auto why = engine.Why(key);
    if (!why.ok()) continue;
    w.pending_msg = info->pending->message;
    w.pending_kind = static_cast<int>(info->pending->kind);
    w.pending_at = now;
    Write wr;
    wr.type = Write::Type::kPending;
    wr.key = "wl/" + key;
    wr.resource = Res(Kind::kWorkload);
    wr.ns = info->spec.ns;
    wr.name = info->spec.name;
    wr.uid = w.uid;
    wr.object = w.obj;
    wr.precondition_rv = Str(w.obj, "metadata", "resourceVersion");
    wr.status = PendingStatus(BaseStatus(w), *why, Rfc3339(now), Generation(w.obj));
    if (wr.status == BaseStatus(w)) continue;
    wr.gen = ++w.write_gen;
    w.desired_status = wr.status;
    if (options_.events)
      wr.events.push_back(WorkloadEvent(w.obj, "Normal", "Pending", PendingMessage(*why), now));
    staged_.push_back(std::move(wr));
    {
      std::lock_guard<std::mutex> l(stats_mu_);
      stats_.pending_explanations++;
    }
  }
}

void Controller::QueueStatusesLocked(core::Engine& engine, int64_t now) {
  if (last_queue_status_ms_ >= 0 && now - last_queue_status_ms_ < options_.queue_status_interval_ms) return;
  // Nothing the statuses are built from changed since the last pass (no
  // workload event, decision, write result or configuration) and no queue was
  // left for later by the per-queue interval: skip the walk. A full pass
  // still runs every queue_status_full_pass_ms, in case a change came by a
  // path that does not mark the queues dirty.
  if (!queue_dirty_ && !queue_throttled_ && last_queue_walk_ms_ >= 0 &&
      (options_.queue_status_full_pass_ms <= 0 ||
       now - last_queue_walk_ms_ < options_.queue_status_full_pass_ms))
    return;
  bool full = options_.queue_status_full_pass_ms > 0 && last_queue_walk_ms_ >= 0 &&
              now - last_queue_walk_ms_ >= options_.queue_status_full_pass_ms;
  last_queue_status_ms_ = now;
  if (full || last_queue_walk_ms_ < 0) last_queue_walk_ms_ = now;
  queue_dirty_ = false;
  queue_throttled_ = false;
  // The queues to look at: every one after a rebuild (and with fair sharing,
  // whose shares are read from the engine), else those whose workloads, object
  // or last write changed, or that an earlier pass left for later.
  std::set<std::string> touched;
  touched.swap(queue_touched_);
  bool all = engine.options().fair_sharing;
  if (!queue_index_ || queue_index_stale_ || full) {
    queue_index_ = std::make_unique<QueueStatusIndex>(engine);
    queue_index_stale_ = false;
    all = true;
  } else {
    queue_index_->Update(engine, {queue_dirty_keys_.begin(), queue_dirty_keys_.end()}, &touched);
  }
  queue_dirty_keys_.clear();
  const QueueStatusIndex& index = *queue_index_;
  const auto& cq_objs = config_objs_["cq"];
  const auto& lq_objs = config_objs_["lq"];
  for (const ObjectCondition& c : loop_conditions_) {
    bool cq = c.kind == "ClusterQueue";
    if (!cq && c.kind != "LocalQueue") continue;
    std::string key = cq ? "cq/" + c.name : "lq/" + c.ns + "/" + c.name;
    const auto& objs = cq ? cq_objs : lq_objs;
    auto it = objs.find(c.ns + "/" + c.name);
    if (it == objs.end()) continue;
    const Json& obj = it->second;
    auto at = queue_status_at_.find(key);
    if (at != queue_status_at_.end() && now - at->second < options_.queue_status_interval_ms) {
      queue_throttled_ = true;
      queue_touched_.insert(key);
      continue;
    }
    // Untouched, and built before (a failed write forgets its inputs): the same inputs.
    if (!all && !touched.count(key) && queue_status_inputs_.count(key)) continue;
    // A queue whose inputs (counts, usage, flavors, condition, object) are those of the last pass
    // that built its status gets the same status: skip building and fingerprinting it.
    std::string inputs = QueueStatusInputs(index, engine, cq, c.ns, c.name) + "|" + c.reason + "|" +
                         (c.active ? "1" : "0") + "|" + c.message + "|" + c.field + "|" +
                         Str(obj, "metadata", "resourceVersion") + "|" + std::to_string(Generation(obj));
    auto in_it = queue_status_inputs_.find(key);
    if (in_it != queue_status_inputs_.end() && in_it->second == inputs) continue;
    queue_status_inputs_[key] = std::move(inputs);
    const Json& current = Field(obj, "status");
    Json status = cq ? ClusterQueueStatus(index, engine, c.name, c, current, Rfc3339(now), Generation(obj))
                     : LocalQueueStatus(index, c.ns, c.name, c, current, Rfc3339(now), Generation(obj));
    std::string fp = Fingerprint(status);
    auto wr_it = queue_status_written_.find(key);
    if (wr_it != queue_status_written_.end() && wr_it->second == fp) continue;
    if (Fingerprint(current) == fp) {
      queue_status_written_[key] = fp;
      continue;
    }
    queue_status_written_[key] = fp;
    queue_status_at_[key] = now;
    Write wr;
    wr.type = Write::Type::kQueueStatus;
    wr.key = key;
    wr.resource = Res(cq ? Kind::kClusterQueue : Kind::kLocalQueue);
    wr.ns = c.ns;
    wr.name = c.name;
    wr.status = std::move(status);
    staged_.push_back(std::move(wr));
    std::lock_guard<std::mutex> l(stats_mu_);
    stats_.queue_statuses_staged++;
  }
}

Json Controller::WorkloadEvent(const Json& obj, const std::string& type, const std::string& reason,
                               const std::string& message, int64_t now) const {
  std::string ns = Str(obj, "metadata", "namespace");
  std::string name = Str(obj, "metadata", "name");
  std::string ts = Rfc3339(now);
  Json ev = {
      {"apiVersion", "v1"},
      {"kind", "Event"},
      {"metadata", {{"generateName", name + "."}, {"namespace", ns}}},
      {"involvedObject",
       {{"apiVersion", obj.value("apiVersion", std::string(kGroup) + "/" + version_)},
        {"kind", "Workload"},
        {"namespace", ns},
        {"name", name},
        {"uid", Str(obj, "metadata", "uid")},
        {"resourceVersion", Str(obj, "metadata", "resourceVersion")}}},
      {"reason", reason},
      {"message", TruncateConditionMessage(message)},
      {"type", type},
      {"source", {{"component", "artel-controller"}}},
      {"reportingComponent", "artel-controller"},
      {"reportingInstance", options_.instance},
      {"firstTimestamp", ts},
      {"lastTimestamp", ts},
      {"count", 1},
  };
  return ev;
}

void Controller::Flush(int64_t now) {
  (void)now;
  if (staged_.empty()) return;
  std::vector<Write> staged;
  staged.swap(staged_);
  for (Write& w : staged) Stage(std::move(w));
}

// The Workloads that reference a WorkloadPriorityClass in wpc_changed_ and
// whose spec.priority is not its value get it written (a merge patch of the
// spec, as Kueue's reconciler updates it; the Workload's own event then
// re-queues it with the new priority).
void Controller::PriorityClassesLocked() {
  std::map<std::string, int32_t> values;
  for (const std::string& name : wpc_changed_) {
    auto& objs = config_objs_["wpc"];
    auto it = objs.find("/" + name);  // cluster-scoped: KeyOf is "/name"
    if (it == objs.end()) continue;
    const Json& v = Field(it->second, "value");
    if (v.is_number_integer()) values[name] = v.get<int32_t>();
  }
  wpc_changed_.clear();
  if (values.empty()) return;
  for (const auto& [key, w] : wls_) {
    const Json& spec = Field(w.obj, "spec");
    std::string cls;
    auto text = [](const Json& o, const char* k) {
      const Json& v = Field(o, k);
      return v.is_string() ? v.get<std::string>() : std::string();
    };
    if (const Json& ref = Field(spec, "priorityClassRef"); !ref.empty()) {  // v1beta2
      if (text(ref, "group") == kGroup && text(ref, "kind") == "WorkloadPriorityClass")
        cls = text(ref, "name");
    } else if (text(spec, "priorityClassSource") == "kueue.x-k8s.io/workloadpriorityclass") {  // v1beta1
      cls = text(spec, "priorityClassName");
    }
    auto v = values.find(cls);
    if (cls.empty() || v == values.end()) continue;
    const Json& cur = Field(spec, "priority");
    if (cur.is_number_integer() && cur.get<int64_t>() == v->second) continue;
    Write wr;
    wr.type = Write::Type::kPriority;
    wr.key = "prio/" + key;
    wr.resource = Res(Kind::kWorkload);
    wr.ns = Str(w.obj, "metadata", "namespace");
    wr.name = Str(w.obj, "metadata", "name");
    wr.uid = w.uid;
    wr.priority = v->second;
    staged_.push_back(std::move(wr));
  }
}

// Admissions, evictions and requeues: the writers' first lane (urgent_keys_).
bool Controller::Urgent(Write::Type t) {
  return t == Write::Type::kAdmit || t == Write::Type::kEvict || t == Write::Type::kRequeue;
}

std::deque<std::string>& Controller::LaneLocked(Write::Type t) {
  if (Urgent(t)) return urgent_keys_;
  return t == Write::Type::kQueueStatus ? queue_keys_ : ready_keys_;
}

// Stage: hands one write to the writers (any thread but the writers).
void Controller::Stage(Write w) {
  std::optional<QueuedEvent> event;
  if (w.type == Write::Type::kEvent) event = Queued(w.object);
  bool dropped = false;
  {
    std::lock_guard<std::mutex> l(out_mu_);
    if (event) {
      dropped = !QueueEventLocked(std::move(*event));
    } else {
      const Write::Type type = w.type;
      bool urgent = Urgent(type);
      std::string key = w.key;
      auto it = desired_.find(key);
      if (it != desired_.end()) {
        // Coalesce: the newer status replaces the older; events of both go,
        // but for an older pending explanation, which is then never written:
        // its Pending Event would describe a status nobody saw.
        if (it->second.type != Write::Type::kPending) {
          std::vector<Json> events = std::move(it->second.events);
          for (Json& e : w.events) events.push_back(std::move(e));
          w.events = std::move(events);
        }
        it->second = std::move(w);
        if (urgent && !inflight_.count(key)) urgent_keys_.push_back(key);  // moved ahead
      } else {
        desired_.emplace(key, std::move(w));
        if (!inflight_.count(key)) LaneLocked(type).push_back(key);
      }
    }
  }
  if (dropped) {
    std::lock_guard<std::mutex> l(stats_mu_);
    stats_.events_dropped++;
    return;
  }
  out_cv_.notify_one();
}

// ---------------------------------------------------------------- writers

void Controller::WriterMain(int index) {
  (void)index;
  Client client(config_);
  std::unique_lock<std::mutex> l(out_mu_);
  for (;;) {
    // Admissions, evictions and requeues on any writer, first. Queue statuses, pending
    // explanations and Events on at most background_writers writers at once, so that they cannot
    // take the API server's capacity from admissions; those writers take a status write (a
    // queue's before an explanation) and an Event in turn while both are waiting.
    out_cv_.wait(l, [&] {
      return stopping_ || !urgent_keys_.empty() ||
             (background_busy_ < options_.background_writers &&
              (!queue_keys_.empty() || !ready_keys_.empty() || !event_queue_.empty()));
    });
    if (stopping_) return;
    const bool urgent = !urgent_keys_.empty();
    const bool statuses = !queue_keys_.empty() || !ready_keys_.empty();
    const bool event = !urgent && !event_queue_.empty() && (!statuses || event_turn_);
    if (!urgent && statuses && !event_queue_.empty()) event_turn_ = !event_turn_;
    if (!urgent) ++background_busy_;
    if (event) {
      QueuedEvent ev = std::move(event_queue_.front());
      event_queue_.pop_front();
      l.unlock();
      PostEvent(client, ev);
      l.lock();
      --background_busy_;
      continue;
    }
    std::deque<std::string>& lane = urgent ? urgent_keys_ : !queue_keys_.empty() ? queue_keys_ : ready_keys_;
    std::string key = std::move(lane.front());
    lane.pop_front();
    auto it = inflight_.count(key) ? desired_.end() : desired_.find(key);
    if (it == desired_.end()) {  // queued twice (the write in flight queues it again), or taken
      if (!urgent) --background_busy_;
      continue;
    }
    Write w = std::move(it->second);
    desired_.erase(it);
    inflight_.insert(key);
    l.unlock();
    DoWrite(client, std::move(w));
    l.lock();
    if (!urgent) --background_busy_;
    inflight_.erase(key);
    if (auto next = desired_.find(key); next != desired_.end()) {
      LaneLocked(next->second.type).push_back(key);
      out_cv_.notify_one();
    }
  }
}

// Queues one Event unless max_queued_events are waiting (out_mu_ held);
// false when it is dropped.
bool Controller::QueueEventLocked(QueuedEvent event) {
  if (event_queue_.size() >= static_cast<size_t>(options_.max_queued_events)) return false;
  event_queue_.push_back(std::move(event));
  return true;
}

// QueueEvents: the Events of a status write that landed, posted by a
// background writer (WriterMain); dropped and counted when
// ControllerOptions::max_queued_events are waiting.
void Controller::QueueEvents(std::vector<Json> events) {
  if (events.empty()) return;
  std::vector<QueuedEvent> queued;
  queued.reserve(events.size());
  for (const Json& e : events) queued.push_back(Queued(e));
  uint64_t dropped = 0;
  {
    std::lock_guard<std::mutex> l(out_mu_);
    for (QueuedEvent& q : queued)
      if (!QueueEventLocked(std::move(q))) ++dropped;
  }
  if (dropped > 0) {
    std::lock_guard<std::mutex> l(stats_mu_);
    stats_.events_dropped += dropped;
  }
  out_cv_.notify_one();
}

Controller::QueuedEvent Controller::Queued(const Json& event) {
  QueuedEvent q;
  if (auto m = event.find("metadata"); m != event.end() && m->is_object()) q.ns = m->value("namespace", "");
  q.reason = event.value("reason", std::string());
  q.body = event.dump();
  return q;
}

void Controller::PostEvent(Client& client, const QueuedEvent& ev) {
  static const Resource kEventsRes{"", "v1", "events", true};
  auto r = client.Raw("POST", ResourcePath(kEventsRes, ev.ns), ev.body, "application/json");
  if (r.ok()) {
    std::lock_guard<std::mutex> l(stats_mu_);
    stats_.events_written++;
  } else {
    log_->Debug("event not written", {{"reason", ev.reason}, {"error", r.error().message}});
  }
}

void Controller::DoWrite(Client& client, Write w) {
  WriteResult res;
  res.type = w.type;
  res.key = w.key;
  res.ns = w.ns;
  res.name = w.name;
  res.uid = w.uid;
  res.gen = w.gen;
  int64_t backoff_ms = 50;
  auto wait = [&]() -> bool {  // false when stopping
    std::unique_lock<std::mutex> l(out_mu_);
    out_cv_.wait_for(l, std::chrono::milliseconds(backoff_ms), [&] { return stopping_; });
    backoff_ms = std::min<int64_t>(backoff_ms * 2, 2000);
    return !stopping_;
  };

  // A merge patch, retried on transient errors: a Workload's spec.priority
  // (kPriority) or a queue's status (kQueueStatus).
  if (w.type == Write::Type::kPriority || w.type == Write::Type::kQueueStatus) {
    const bool prio = w.type == Write::Type::kPriority;
    for (int attempt = 0; attempt < 5; ++attempt) {
      if (options_.before_status_write)
        options_.before_status_write(w.ns, w.name, prio ? "priority" : "queue");
      auto r = prio ? client.MergePatch(w.resource, w.ns, w.name, Json{{"spec", {{"priority", w.priority}}}})
                    : client.MergePatch(w.resource, w.resource.namespaced ? w.ns : "", w.name,
                                        Json{{"status", w.status}}, true);
      if (r.ok()) {
        if (!prio) {
          std::lock_guard<std::mutex> l(stats_mu_);
          stats_.queue_status_writes++;
        }
        Complete(std::move(res));
        return;
      }
      if (prio && r.error().NotFound()) {
        res.outcome = WriteResult::Outcome::kGone;
        Complete(std::move(res));
        return;
      }
      if (!Transient(r.error()) || !wait()) break;
    }
    res.outcome = WriteResult::Outcome::kFailed;
    Complete(std::move(res));
    return;
  }

  // A Workload status: PUT of the status subresource with the
  // resourceVersion the decision was made on.
  std::string rv = w.precondition_rv;
  {
    std::lock_guard<std::mutex> l(out_mu_);
    auto a = rv_alias_.find(w.key);
    if (a != rv_alias_.end() && a->second.first == rv) rv = a->second.second;
  }
  Json obj = std::move(w.object);
  obj["metadata"]["resourceVersion"] = rv;
  obj["status"] = w.status;
  obj.erase("managedFields");
  if (obj["metadata"].contains("managedFields")) obj["metadata"].erase("managedFields");
  std::string decided_rv = rv;
  int conflicts = 0;
  for (;;) {
    if (options_.before_status_write) {
      static const char* kTypes[] = {"admit", "pending", "evict", "requeue", "queue", "event", "priority"};
      options_.before_status_write(w.ns, w.name, kTypes[static_cast<int>(w.type)]);
    }
    auto r = client.UpdateStatus(w.resource, w.ns, obj);
    if (r.ok()) {
      {
        std::lock_guard<std::mutex> l(stats_mu_);
        stats_.status_writes++;
      }
      {
        std::lock_guard<std::mutex> l(out_mu_);
        rv_alias_[w.key] = {decided_rv, Str(r.value(), "metadata", "resourceVersion")};
      }
      res.object = r.value();
      QueueEvents(std::move(w.events));
      Complete(std::move(res));
      return;
    }
    const ApiError& e = r.error();
    if (e.NotFound()) {
      res.outcome = WriteResult::Outcome::kGone;
      Complete(std::move(res));
      return;
    }
    if (Transient(e)) {
      if (!wait()) return;  // stopping: dropped; the next start decides again
      continue;
    }
    if (!e.Conflict()) {
      log_->Error("Workload status write rejected", {{"workload", w.ns + "/" + w.name},
                                                     {"http", std::to_string(e.http)},
                                                     {"reason", e.reason},
                                                     {"message", e.message}});
      res.outcome = WriteResult::Outcome::kFailed;
      Complete(std::move(res));
      return;
    }
    // 409: the object changed since the decision. Read it again.
    {
      std::lock_guard<std::mutex> l(stats_mu_);
      stats_.status_conflicts++;
    }
    Json fresh;
    for (;;) {
      auto g = client.Get(w.resource, w.ns, w.name);
      if (g.ok()) {
        fresh = g.value();
        break;
      }
      if (g.error().NotFound()) {
        res.outcome = WriteResult::Outcome::kGone;
        Complete(std::move(res));
        return;
      }
      if (!wait()) return;
    }
    if (Str(fresh, "metadata", "uid") != w.uid) {
      res.outcome = WriteResult::Outcome::kGone;
      Complete(std::move(res));
      return;
    }
    auto obs = ObserveWorkload(fresh);
    res.object = fresh;
    bool retry = false;
    std::string now = FormatRfc3339(now_ms_());
    switch (w.type) {
      case Write::Type::kAdmit: {
        // An earlier attempt of this very write may have landed (its answer
        // lost): then the cluster already says what we wanted.
        std::string cq = w.status.value("admission", Json::object()).value("clusterQueue", std::string());
        if (obs.ok() && obs->quota_reserved && obs->cluster_queue == cq) {
          QueueEvents(std::move(w.events));
          Complete(std::move(res));
          return;
        }
        break;  // refused: the loop requeues the workload and decides again
      }
      case Write::Type::kEvict:
        if (obs.ok() && obs->quota_reserved && !obs->finished && w.eviction) {
          obj = fresh;
          obj["status"] =
              EvictedStatus(fresh.value("status", Json::object()), *w.eviction, now, Generation(fresh));
          retry = true;
        }
        break;
      case Write::Type::kRequeue:
        if (obs.ok() && !obs->quota_reserved && !obs->finished) {
          obj = fresh;
          obj["status"] = RequeuedStatus(fresh.value("status", Json::object()), now, Generation(fresh));
          retry = true;
        }
        break;
      default: break;
    }
    if (retry && ++conflicts < 5) {
      if (obj["metadata"].contains("managedFields")) obj["metadata"].erase("managedFields");
      decided_rv = Str(fresh, "metadata", "resourceVersion");
      continue;
    }
    res.outcome = WriteResult::Outcome::kRefused;
    Complete(std::move(res));
    return;
  }
}

}  // namespace artel::kube
