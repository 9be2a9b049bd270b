#include "kube/jobs.h"

#include <openssl/evp.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <utility>

#include "kube/kueue_map.h"

namespace artel::kube {

const Resource kVolcanoPodGroups{"scheduling.volcano.sh", "v1beta1", "podgroups", true};
const Resource kKaiPodGroups{"scheduling.run.ai", "v2alpha2", "podgroups", true};

namespace {

const Resource kPriorityClasses{"scheduling.k8s.io", "v1", "priorityclasses", false};

// Labels the Job controller sets on a Job's pod template; the Workload's
// template leaves out all but batch.kubernetes.io/job-name (Kueue's
// job_controller.go cleanLabels), and a restore keeps them (they are
// immutable).
const char* const kJobManagedLabels[] = {"job-name", "controller-uid", "batch.kubernetes.io/job-name",
                                         "batch.kubernetes.io/controller-uid"};

const Json& At(const Json& j, const char* key) {
  static const Json kNull;
  if (!j.is_object()) return kNull;
  auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}
std::string Str(const Json& j, const char* key) {
  const Json& v = At(j, key);
  return v.is_string() ? v.get<std::string>() : std::string();
}
std::string Label(const Json& obj, const char* key) { return Str(At(At(obj, "metadata"), "labels"), key); }
std::string Annotation(const Json& obj, const char* key) {
  return Str(At(At(obj, "metadata"), "annotations"), key);
}
std::string Ns(const Json& obj) { return Str(At(obj, "metadata"), "namespace"); }
std::string Name(const Json& obj) { return Str(At(obj, "metadata"), "name"); }
std::string Uid(const Json& obj) { return Str(At(obj, "metadata"), "uid"); }
std::string Key(const Json& obj) { return Ns(obj) + "/" + Name(obj); }
int64_t Int(const Json& j, const char* key, int64_t def) {
  const Json& v = At(j, key);
  return v.is_number_integer() ? v.get<int64_t>() : def;
}
// Null, {} and [] are the same "nothing" when templates are compared.
bool Empty(const Json& j) {
  return j.is_null() || (j.is_object() && j.empty()) || (j.is_array() && j.empty());
}
bool SameOrEmpty(const Json& a, const Json& b) { return (Empty(a) && Empty(b)) || a == b; }
// Sets obj[key] = v, or removes the key when v is empty.
void SetOrErase(Json* obj, const char* key, const Json& v) {
  if (Empty(v))
    obj->erase(key);
  else
    (*obj)[key] = v;
}

bool WlFinished(const Json& wl) { return IsConditionTrue(At(wl, "status"), "Finished"); }
bool WlEvicted(const Json& wl) { return IsConditionTrue(At(wl, "status"), "Evicted"); }
bool WlReserved(const Json& wl) { return IsConditionTrue(At(wl, "status"), "QuotaReserved"); }
std::string EvictedMessage(const Json& wl) {
  const Json* c = FindCondition(At(wl, "status"), "Evicted");
  return c != nullptr ? Str(*c, "message") : std::string();
}
bool WlAdmitted(const Json& wl) {
  return IsConditionTrue(At(wl, "status"), "Admitted") && At(At(wl, "status"), "admission").is_object();
}

// The controller ownerReference of `obj`, or null.
const Json* ControllerOwner(const Json& obj) {
  const Json& refs = At(At(obj, "metadata"), "ownerReferences");
  if (!refs.is_array()) return nullptr;
  for (const Json& r : refs)
    if (r.is_object() && At(r, "controller").is_boolean() && r["controller"].get<bool>()) return &r;
  return nullptr;
}

std::string Sha1Hex(const std::string& data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), md, &len, EVP_sha1(), nullptr);
  std::string out;
  char buf[3];
  for (unsigned int i = 0; i < len; ++i) {
    std::snprintf(buf, sizeof buf, "%02x", md[i]);
    out += buf;
  }
  return out;
}

// FNV-1a, 8 hex digits: the pod set name of a role in a pod group.
std::string ShortHash(const std::string& data) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : data) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return std::string(buf, 8);
}

// The fields of a pod that decide where and how much it asks (its role in a
// group): containers' names, images and requests, nodeSelector, tolerations,
// affinity, priorityClassName.
std::string RoleHash(const Json& pod) {
  const Json& spec = At(pod, "spec");
  Json role = Json::object();
  for (const char* list : {"initContainers", "containers"}) {
    Json cs = Json::array();
    if (At(spec, list).is_array())
      for (const Json& c : spec[list])
        cs.push_back({{"name", At(c, "name")},
                      {"image", At(c, "image")},
                      {"requests", At(At(c, "resources"), "requests")}});
    role[list] = cs;
  }
  for (const char* k : {"nodeSelector", "tolerations", "affinity", "priorityClassName"})
    role[k] = At(spec, k);
  return ShortHash(role.dump());
}

// A PodSetInfo (Kueue's pkg/podset): what an admission adds to a pod template.
struct PodSetInfo {
  Json labels = Json::object(), annotations = Json::object(), node_selector = Json::object();
  Json tolerations = Json::array();
  std::vector<std::string> gates;
};

// Adds src's keys to *dst; false (and the key) when one has another value.
bool MergeMap(Json* dst, const Json& src, std::string* conflict) {
  if (!dst->is_object()) *dst = Json::object();
  for (auto it = src.begin(); it != src.end(); ++it) {
    auto d = dst->find(it.key());
    if (d != dst->end() && *d != it.value()) {
      *conflict = it.key();
      return false;
    }
    (*dst)[it.key()] = it.value();
  }
  return true;
}

// Merges `info` into a pod's (or pod template's) metadata and spec.
bool MergeInfo(Json* meta, Json* spec, const PodSetInfo& info, std::string* error) {
  std::string k;
  Json labels = At(*meta, "labels"), annotations = At(*meta, "annotations"), ns = At(*spec, "nodeSelector");
  if (!MergeMap(&labels, info.labels, &k)) {
    *error = "conflict for label " + k;
    return false;
  }
  if (!MergeMap(&annotations, info.annotations, &k)) {
    *error = "conflict for annotation " + k;
    return false;
  }
  if (!MergeMap(&ns, info.node_selector, &k)) {
    *error = "conflict for nodeSelector " + k;
    return false;
  }
  SetOrErase(meta, "labels", labels);
  SetOrErase(meta, "annotations", annotations);
  SetOrErase(spec, "nodeSelector", ns);
  Json tol = At(*spec, "tolerations").is_array() ? (*spec)["tolerations"] : Json::array();
  for (const Json& t : info.tolerations)
    if (std::find(tol.begin(), tol.end(), t) == tol.end()) tol.push_back(t);
  SetOrErase(spec, "tolerations", tol);
  Json gates = At(*spec, "schedulingGates").is_array() ? (*spec)["schedulingGates"] : Json::array();
  for (const std::string& g : info.gates) {
    Json gate = {{"name", g}};
    if (std::find(gates.begin(), gates.end(), gate) == gates.end()) gates.push_back(gate);
  }
  SetOrErase(spec, "schedulingGates", gates);
  return true;
}

void RemoveGate(Json* spec, const std::string& name) {
  Json gates = Json::array();
  if (At(*spec, "schedulingGates").is_array())
    for (const Json& g : (*spec)["schedulingGates"])
      if (Str(g, "name") != name) gates.push_back(g);
  SetOrErase(spec, "schedulingGates", gates);
}
bool HasGate(const Json& pod, const std::string& name) {
  const Json& gates = At(At(pod, "spec"), "schedulingGates");
  if (!gates.is_array()) return false;
  return std::any_of(gates.begin(), gates.end(), [&](const Json& g) { return Str(g, "name") == name; });
}

// A Job's pod template as the Workload keeps it (the Job controller's
// labels but job-name left out, no creationTimestamp).
Json WorkloadTemplate(const Json& tpl) {
  Json t = tpl.is_object() ? tpl : Json::object();
  Json& meta = t["metadata"];
  if (!meta.is_object()) meta = Json::object();
  meta.erase("creationTimestamp");
  if (meta.contains("labels") && meta["labels"].is_object()) {
    for (const char* l : kJobManagedLabels)
      if (std::string(l) != "batch.kubernetes.io/job-name") meta["labels"].erase(l);
    if (meta["labels"].empty()) meta.erase("labels");
  }
  if (meta.empty()) t.erase("metadata");
  return t;
}

// Puts the Workload's original template fields back into the Job's template
// (Kueue's RestorePodSetsInfo / podset.RestorePodSpec); the Job controller's
// labels present in the template stay. Returns whether anything changed.
bool RestoreTemplate(Json* tpl, const Json& orig) {
  Json& meta = (*tpl)["metadata"];
  if (!meta.is_object()) meta = Json::object();
  Json& spec = (*tpl)["spec"];
  const Json& ometa = At(orig, "metadata");
  const Json& ospec = At(orig, "spec");
  Json labels = At(ometa, "labels").is_object() ? ometa["labels"] : Json::object();
  for (const char* l : kJobManagedLabels) {
    const Json& v = At(At(meta, "labels"), l);
    if (!v.is_null()) labels[l] = v;
  }
  bool changed = false;
  auto put = [&](Json* obj, const char* key, const Json& want) {
    if (!SameOrEmpty(At(*obj, key), want)) {
      SetOrErase(obj, key, want);
      changed = true;
    }
  };
  put(&meta, "labels", labels);
  put(&meta, "annotations", At(ometa, "annotations"));
  put(&spec, "nodeSelector", At(ospec, "nodeSelector"));
  put(&spec, "tolerations", At(ospec, "tolerations"));
  put(&spec, "schedulingGates", At(ospec, "schedulingGates"));
  return changed;
}

std::optional<int64_t> AnnotationInt(const Json& obj, const char* key) {
  std::string v = Annotation(obj, key);
  if (v.empty()) return std::nullopt;
  try {
    size_t used = 0;
    int64_t n = std::stoll(v, &used);
    if (used != v.size()) return std::nullopt;
    return n;
  } catch (...) {
    return std::nullopt;
  }
}

bool JobFinished(const Json& job, bool* succeeded, std::string* message) {
  const Json& conds = At(At(job, "status"), "conditions");
  if (!conds.is_array()) return false;
  for (const Json& c : conds) {
    std::string t = Str(c, "type");
    if ((t == "Complete" || t == "Failed") && Str(c, "status") == "True") {
      *succeeded = t == "Complete";
      *message = Str(c, "message");
      if (message->empty()) *message = t == "Complete" ? "Job finished successfully" : "Job failed";
      return true;
    }
  }
  return false;
}

// The pod count of a Job's pod set: parallelism, or completions when fewer
// (Kueue's job_controller.go podsCount).
int64_t JobPodsCount(const Json& job) {
  const Json& spec = At(job, "spec");
  int64_t p = Int(spec, "parallelism", 1);
  if (At(spec, "completions").is_number_integer()) p = std::min(p, spec["completions"].get<int64_t>());
  return p;
}

// Whether a Job still asks what its Workload's pod set says: the same pod
// count and the same requests per container.
bool JobMatchesWorkload(const Json& job, const Json& podset) {
  if (JobPodsCount(job) != Int(podset, "count", -1)) return false;
  auto requests = [](const Json& tpl) {
    Json r = Json::array();
    for (const char* list : {"initContainers", "containers"}) {
      const Json& cs = At(At(tpl, "spec"), list);
      if (cs.is_array())
        for (const Json& c : cs) r.push_back({At(c, "name"), At(At(c, "resources"), "requests")});
    }
    return r;
  };
  return requests(At(At(job, "spec"), "template")) == requests(At(podset, "template"));
}

// kueue.x-k8s.io/max-exec-time-seconds on the owner -> the Workload's
// spec.maximumExecutionTimeSeconds (a positive int32; anything else is
// ignored, as Kueue's MaximumExecutionTimeSecondsForObject does).
void SetMaxExecTime(const Json& labels, Json* wl) {
  std::string v = Str(labels, kMaxExecTimeLabel);
  if (v.empty()) return;
  try {
    size_t used = 0;
    int64_t n = std::stoll(v, &used);
    if (used == v.size() && n > 0 && n <= INT32_MAX) (*wl)["spec"]["maximumExecutionTimeSeconds"] = n;
  } catch (...) {
  }
}

bool PodTerminal(const Json& pod) {
  std::string phase = Str(At(pod, "status"), "phase");
  return phase == "Succeeded" || phase == "Failed";
}

const Json& AdmissionAssignment(const Json& wl, const std::string& podset) {
  static const Json kNull;
  const Json& psas = At(At(At(wl, "status"), "admission"), "podSetAssignments");
  if (!psas.is_array() || psas.empty()) return kNull;
  for (const Json& p : psas)
    if (Str(p, "name") == podset) return p;
  return podset.empty() ? psas[0] : kNull;
}

}  // namespace

std::string WorkloadNameForOwner(const std::string& kind, const std::string& group, const std::string& name,
                                 const std::string& uid) {
  std::string lower = kind;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  std::string prefix = lower + "-" + name;
  constexpr size_t kMaxPrefix = 253 - 1 - 5;
  if (prefix.size() > kMaxPrefix) prefix.resize(kMaxPrefix);
  return prefix + "-" + Sha1Hex(kind + "\n" + group + "\n" + name + "\n" + uid).substr(0, 5);
}

JobIntegration::JobIntegration(ClientConfig config, JobsOptions options, server::Logger* log,
                               std::function<int64_t()> now_ms)
    : config_(std::move(config)), options_(std::move(options)), log_(log), now_ms_(std::move(now_ms)) {}

JobIntegration::~JobIntegration() { Stop(); }

std::string JobIntegration::Now() const { return FormatRfc3339(now_ms_()); }

Status JobIntegration::Start(int64_t sync_timeout_ms) {
  client_ = std::make_unique<Client>(config_);
  Resource wl_res = WithVersion(kWorkloads, options_.kueue_version);
  auto add = [&](const Resource& r, const std::function<void(const Json&, bool)>& fn, const ListOptions& o) {
    informer_clients_.push_back(std::make_unique<Client>(config_));
    Informer::Handler h;
    h.on_add = [fn](const Json& obj) { fn(obj, false); };
    h.on_update = [fn](const Json& obj) { fn(obj, false); };
    h.on_delete = [fn](const Json& obj) { fn(obj, true); };
    informers_.push_back(std::make_unique<Informer>(informer_clients_.back().get(), r, "", h, o));
    // Every handler keeps its own copy (wls_, jobs_, pods_, flavors_).
    informers_.back()->SetSlimCache(true);
  };
  ListOptions managed;
  managed.label_selector = kQueueNameLabel;
  if (options_.watch_workloads) add(wl_res, [this](const Json& o, bool d) { OnWorkload(o, d); }, {});
  add(WithVersion(kResourceFlavors, options_.kueue_version),
      [this](const Json& o, bool d) {
        std::lock_guard<std::mutex> l(mu_);
        if (d)
          flavors_.erase(Name(o));
        else
          flavors_[Name(o)] = o;
      },
      {});
  if (options_.jobs)
    add(
        kJobs, [this](const Json& o, bool d) { OnJob(o, d); }, managed);
  if (options_.podgroups) {
    volcano_ = client_->Raw("GET", ResourcePath(kVolcanoPodGroups, "")).ok();
    kai_ = client_->Raw("GET", ResourcePath(kKaiPodGroups, "")).ok();
    if (volcano_)
      add(
          kVolcanoPodGroups, [this](const Json& o, bool d) { OnPodGroup(true, o, d); }, managed);
    if (kai_)
      add(
          kKaiPodGroups, [this](const Json& o, bool d) { OnPodGroup(false, o, d); }, managed);
  }
  if (options_.pods || volcano_ || kai_) {
    // PodGroups' pods carry an annotation, not the queue-name label: then
    // every pod is watched (identity-only cache) and the handler keeps the
    // ones that matter.
    add(
        kPods, [this](const Json& o, bool d) { OnPod(o, d); }, volcano_ || kai_ ? ListOptions{} : managed);
  }
  for (auto& i : informers_) i->Start();
  worker_ = std::thread([this] { WorkerMain(); });
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(sync_timeout_ms);
  for (auto& i : informers_) {
    while (!i->HasSynced()) {
      if (std::chrono::steady_clock::now() > deadline)
        return FailedPrecondition("jobs and pods: the informers did not list within the sync timeout: " +
                                  i->last_error());
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  log_->Info("jobs and pods integration started",
             {{"jobs", options_.jobs ? "true" : "false"}, {"pods", options_.pods ? "true" : "false"}});
  return Status::Ok();
}

void JobIntegration::Stop() {
  for (auto& i : informers_) i->Stop();
  {
    std::lock_guard<std::mutex> l(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
  informers_.clear();
  informer_clients_.clear();
}

// ---------------------------------------------------------------- events

void JobIntegration::Enqueue(const std::string& key) {
  // mu_ held by the caller.
  if (inflight_.count(key)) {
    requeue_.insert(key);
    return;
  }
  if (queued_.insert(key).second) queue_.push_back(key);
  cv_.notify_one();
}

void JobIntegration::OnJob(const Json& obj, bool deleted) {
  std::lock_guard<std::mutex> l(mu_);
  if (deleted)
    jobs_.erase(Key(obj));
  else
    jobs_[Key(obj)] = obj;
  Enqueue("job/" + Key(obj));
}

std::string JobIntegration::PodKeyOf(const Json& pod) const {
  if (volcano_)
    if (std::string g = Annotation(pod, kVolcanoGroupAnnotation); !g.empty())
      return "vpg/" + Ns(pod) + "/" + g;
  if (kai_)
    if (std::string g = Annotation(pod, kKaiGroupAnnotation); !g.empty()) return "kpg/" + Ns(pod) + "/" + g;
  // Pods a controller owns (a Job's, a ReplicaSet's) are not plain pods.
  if (!options_.pods || Label(pod, kQueueNameLabel).empty() || ControllerOwner(pod) != nullptr) return "";
  std::string g = Label(pod, kPodGroupNameLabel);
  return g.empty() ? "pod/" + Key(pod) : "group/" + Ns(pod) + "/" + g;
}

void JobIntegration::OnPod(const Json& obj, bool deleted) {
  std::lock_guard<std::mutex> l(mu_);
  const std::string k = Key(obj);
  auto it = pods_.find(k);
  // A deleted object may be an identity-only one: what was kept says where it was.
  std::string old_key = it != pods_.end() ? PodKeyOf(it->second) : "";
  std::string new_key = deleted ? "" : PodKeyOf(obj);
  if (!old_key.empty() && old_key != new_key) {
    auto& set = pods_by_key_[old_key];
    set.erase(k);
    if (set.empty()) pods_by_key_.erase(old_key);
    Enqueue(old_key);
  }
  if (new_key.empty()) {
    if (it != pods_.end()) pods_.erase(it);
    return;
  }
  pods_[k] = obj;
  pods_by_key_[new_key].insert(k);
  Enqueue(new_key);
}

std::vector<Json> JobIntegration::PodsOfLocked(const std::string& key) const {
  std::vector<Json> out;
  auto it = pods_by_key_.find(key);
  if (it == pods_by_key_.end()) return out;
  for (const std::string& k : it->second)
    if (auto p = pods_.find(k); p != pods_.end()) out.push_back(p->second);
  return out;
}

std::vector<Json> JobIntegration::OwnedLocked(const std::string& owner_uid) const {
  std::vector<Json> out;
  auto it = wl_by_owner_.find(owner_uid);
  if (it == wl_by_owner_.end()) return out;
  for (const std::string& k : it->second)
    if (auto w = wls_.find(k); w != wls_.end()) out.push_back(w->second);
  return out;
}

void JobIntegration::OnPodGroup(bool volcano, const Json& obj, bool deleted) {
  std::lock_guard<std::mutex> l(mu_);
  auto& m = volcano ? vpgs_ : kpgs_;
  if (deleted)
    m.erase(Key(obj));
  else
    m[Key(obj)] = obj;
  Enqueue((volcano ? "vpg/" : "kpg/") + Key(obj));
}

void JobIntegration::OnWorkload(const Json& obj_in, bool deleted) {
  std::lock_guard<std::mutex> l(mu_);
  const std::string k = Key(obj_in);
  // The informers' caches keep identities only (Start): a deletion found by a
  // re-list comes as one, so its owner and annotations are read from the
  // copy kept here.
  Json kept;
  if (auto it = wls_.find(k); it != wls_.end()) {
    if (const Json* o = ControllerOwner(it->second); o != nullptr) {
      auto& set = wl_by_owner_[Str(*o, "uid")];
      set.erase(k);
      if (set.empty()) wl_by_owner_.erase(Str(*o, "uid"));
    }
    if (deleted) kept = std::move(it->second);
  }
  const Json& obj = deleted && !kept.is_null() ? kept : obj_in;
  // Only the Workloads of a Job, Pod or PodGroup (a controller owner, or a
  // pod group's annotation) are ever looked up here; a Workload created on
  // its own is the controller's alone and is not kept twice.
  const bool ours = ControllerOwner(obj) != nullptr || Annotation(obj, kIsGroupWorkload) == "true";
  if (deleted || !ours) {
    wls_.erase(k);
  } else {
    wls_[k] = obj;
    if (const Json* o = ControllerOwner(obj); o != nullptr) wl_by_owner_[Str(*o, "uid")].insert(k);
  }
  if (Annotation(obj, kIsGroupWorkload) == "true") {
    Enqueue("group/" + Key(obj));
    return;
  }
  if (const Json* o = ControllerOwner(obj); o != nullptr) {
    std::string kind = Str(*o, "kind"), api = Str(*o, "apiVersion");
    if (kind == "Job" && api == "batch/v1") Enqueue("job/" + Ns(obj) + "/" + Str(*o, "name"));
    if (kind == "Pod" && api == "v1") Enqueue("pod/" + Ns(obj) + "/" + Str(*o, "name"));
    if (kind == "PodGroup" && api.rfind("scheduling.volcano.sh/", 0) == 0)
      Enqueue("vpg/" + Ns(obj) + "/" + Str(*o, "name"));
    if (kind == "PodGroup" && api.rfind("scheduling.run.ai/", 0) == 0)
      Enqueue("kpg/" + Ns(obj) + "/" + Str(*o, "name"));
  }
}

void JobIntegration::WorkerMain() {
  using Clock = std::chrono::steady_clock;
  auto ms_now = [] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now().time_since_epoch()).count();
  };
  std::unique_lock<std::mutex> l(mu_);
  while (!stopping_) {
    int64_t now = ms_now();
    int64_t next = now + 1000;
    for (auto it = retry_at_.begin(); it != retry_at_.end();) {
      if (it->second <= now) {
        if (!inflight_.count(it->first) && queued_.insert(it->first).second) queue_.push_back(it->first);
        it = retry_at_.erase(it);
      } else {
        next = std::min(next, it->second);
        ++it;
      }
    }
    if (queue_.empty()) {
      cv_.wait_for(l, std::chrono::milliseconds(std::max<int64_t>(1, next - now)));
      continue;
    }
    std::string key = queue_.front();
    queue_.pop_front();
    queued_.erase(key);
    inflight_.insert(key);
    l.unlock();
    Outcome out = Outcome::kRetry;
    try {
      out = Reconcile(key);
    } catch (const std::exception& e) {
      log_->Error("jobs: reconcile failed", {{"key", key}, {"error", e.what()}});
    }
    reconciles_.fetch_add(1);
    l.lock();
    inflight_.erase(key);
    if (out == Outcome::kRetry) {
      int f = std::min(++failures_[key], 6);
      retry_at_[key] = ms_now() + (int64_t{100} << f);  // 200 ms .. 6.4 s
    } else {
      failures_.erase(key);
    }
    if (requeue_.erase(key) && queued_.insert(key).second) queue_.push_back(key);
  }
}

JobIntegration::Outcome JobIntegration::Reconcile(const std::string& key) {
  size_t a = key.find('/');
  size_t b = key.find('/', a + 1);
  std::string kind = key.substr(0, a), ns = key.substr(a + 1, b - a - 1), name = key.substr(b + 1);
  if (kind == "job") return ReconcileJob(ns, name);
  if (kind == "pod") return ReconcilePods(ns, name, false);
  if (kind == "group") return ReconcilePods(ns, name, true);
  if (kind == "vpg") return ReconcilePodGroup(ns, name, true);
  if (kind == "kpg") return ReconcilePodGroup(ns, name, false);
  return Outcome::kDone;
}

// ---------------------------------------------------------------- shared writes

JobIntegration::Outcome JobIntegration::CreateWorkload(const Json& wl, bool* created) {
  auto r = client_->Create(WithVersion(kWorkloads, options_.kueue_version), Ns(wl), wl);
  if (created != nullptr) *created = r.ok();
  if (r.ok() || r.error().AlreadyExists()) {
    if (r.ok()) log_->Info("workload created", {{"workload", Key(wl)}});
    return Outcome::kDone;
  }
  log_->Warn("cannot create the workload", {{"workload", Key(wl)}, {"error", r.error().ToString()}});
  return Outcome::kRetry;
}

void JobIntegration::PostEvent(const Json& obj, const std::string& api_version, const std::string& kind,
                               const std::string& reason, const std::string& message) {
  if (!options_.events) return;
  std::string ts = Now();
  Json ev = {{"apiVersion", "v1"},
             {"kind", "Event"},
             {"metadata", {{"generateName", Name(obj) + "."}, {"namespace", Ns(obj)}}},
             {"involvedObject",
              {{"apiVersion", api_version},
               {"kind", kind},
               {"namespace", Ns(obj)},
               {"name", Name(obj)},
               {"uid", Uid(obj)},
               {"resourceVersion", Str(At(obj, "metadata"), "resourceVersion")}}},
             {"reason", reason},
             {"message", TruncateConditionMessage(message)},
             {"type", "Normal"},
             {"source", {{"component", "artel-job-controller"}}},
             {"reportingComponent", "artel-job-controller"},
             {"firstTimestamp", ts},
             {"lastTimestamp", ts},
             {"count", 1}};
  auto r = client_->Create(kEvents, Ns(obj), ev);
  if (!r.ok()) log_->Debug("cannot post the event", {{"object", Key(obj)}, {"error", r.error().ToString()}});
}

JobIntegration::Outcome JobIntegration::WriteWorkloadStatus(const Json& wl, const Json& status) {
  Json obj = wl;
  obj["status"] = status;
  auto r = client_->UpdateStatus(WithVersion(kWorkloads, options_.kueue_version), Ns(wl), obj);
  if (r.ok()) return Outcome::kDone;
  if (r.error().NotFound()) return Outcome::kDone;
  if (!r.error().Conflict())
    log_->Warn("cannot write the workload status", {{"workload", Key(wl)}, {"error", r.error().ToString()}});
  return Outcome::kRetry;
}

JobIntegration::Outcome JobIntegration::DeleteOwnedWorkloads(const std::string& ns,
                                                             const std::string& owner_kind,
                                                             const std::string& owner_name,
                                                             const std::string& keep_uid) {
  std::vector<Json> gone;
  {
    std::lock_guard<std::mutex> l(mu_);
    for (const auto& [k, wl] : wls_) {
      if (Ns(wl) != ns) continue;
      const Json* o = ControllerOwner(wl);
      if (o != nullptr && Str(*o, "kind") == owner_kind && Str(*o, "name") == owner_name &&
          Str(*o, "uid") != keep_uid)
        gone.push_back(wl);
    }
  }
  Outcome out = Outcome::kDone;
  for (const Json& wl : gone) {
    auto r =
        client_->Delete(WithVersion(kWorkloads, options_.kueue_version), ns, Name(wl), std::nullopt, Uid(wl));
    if (!r.ok() && !r.error().NotFound() && !r.error().Conflict()) {
      log_->Warn("cannot delete the workload", {{"workload", Key(wl)}, {"error", r.error().ToString()}});
      out = Outcome::kRetry;
    } else if (r.ok()) {
      log_->Info("workload deleted: its owner is gone", {{"workload", Key(wl)}});
    }
  }
  return out;
}

bool JobIntegration::SetPriority(const Json& labels, const Json& pod_spec, Json* wl, std::string* error) {
  bool v1beta2 = options_.kueue_version != "v1beta1";
  Json& spec = (*wl)["spec"];
  std::string wpc = Str(labels, kPriorityClassLabel);
  if (!wpc.empty()) {
    auto r = client_->Get(WithVersion(kWorkloadPriorityClasses, options_.kueue_version), "", wpc);
    if (!r.ok()) {
      *error = "WorkloadPriorityClass " + wpc + ": " + r.error().ToString();
      return false;
    }
    spec["priority"] = Int(*r, "value", 0);
    if (v1beta2) {
      spec["priorityClassRef"] = {
          {"group", "kueue.x-k8s.io"}, {"kind", "WorkloadPriorityClass"}, {"name", wpc}};
    } else {
      spec["priorityClassName"] = wpc;
      spec["priorityClassSource"] = "kueue.x-k8s.io/workloadpriorityclass";
    }
    return true;
  }
  std::string pc = Str(pod_spec, "priorityClassName");
  if (pc.empty()) return true;
  auto r = client_->Get(kPriorityClasses, "", pc);
  if (!r.ok()) {
    *error = "PriorityClass " + pc + ": " + r.error().ToString();
    return false;
  }
  spec["priority"] = Int(*r, "value", 0);
  if (v1beta2) {
    spec["priorityClassRef"] = {{"group", "scheduling.k8s.io"}, {"kind", "PriorityClass"}, {"name", pc}};
  } else {
    spec["priorityClassName"] = pc;
    spec["priorityClassSource"] = "scheduling.k8s.io/priorityclass";
  }
  return true;
}

bool JobIntegration::FlavorInfo(const Json& psa, Json* node_selector, Json* tolerations, std::string* error) {
  std::set<std::string> seen;
  const Json& flavors = At(psa, "flavors");
  if (!flavors.is_object()) return true;
  for (auto it = flavors.begin(); it != flavors.end(); ++it) {
    if (!it.value().is_string() || !seen.insert(it.value().get<std::string>()).second) continue;
    const std::string flavor = it.value().get<std::string>();
    Json f;
    {
      std::lock_guard<std::mutex> l(mu_);
      if (auto c = flavors_.find(flavor); c != flavors_.end()) f = c->second;
    }
    if (f.is_null()) {  // not seen yet by the informer
      auto r = client_->Get(WithVersion(kResourceFlavors, options_.kueue_version), "", flavor);
      if (!r.ok()) {
        *error = "ResourceFlavor " + flavor + ": " + r.error().ToString();
        return false;
      }
      f = *r;
    }
    const Json& fs = At(f, "spec");
    const Json& nl = At(fs, "nodeLabels");
    if (nl.is_object())
      for (auto l = nl.begin(); l != nl.end(); ++l) (*node_selector)[l.key()] = l.value();
    if (At(fs, "tolerations").is_array())
      for (const Json& t : fs["tolerations"]) tolerations->push_back(t);
  }
  return true;
}

// ---------------------------------------------------------------- Jobs

JobIntegration::Outcome JobIntegration::ReconcileJob(const std::string& ns, const std::string& name) {
  Json job, wl;
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = jobs_.find(ns + "/" + name);
    if (it != jobs_.end()) job = it->second;
  }
  // A Job deleted: its Workload goes too (the garbage collector does the
  // same through the ownerReference where kube-controller-manager runs).
  if (job.is_null()) {
    // Gone from the cache: deleted, or its queue-name label removed. Only a
    // Job really gone takes its Workload along.
    auto r = client_->Get(kJobs, ns, name);
    if (r.ok()) return Outcome::kDone;
    if (!r.error().NotFound()) return Outcome::kRetry;
    return DeleteOwnedWorkloads(ns, "Job", name, "");
  }
  if (Label(job, kQueueNameLabel).empty()) return Outcome::kDone;
  const std::string uid = Uid(job);
  {
    std::lock_guard<std::mutex> l(mu_);
    for (const Json& w : OwnedLocked(uid))
      if (wl.is_null() || !WlFinished(w)) wl = w;
  }
  const Json& spec = At(job, "spec");
  const bool suspended = At(spec, "suspend").is_boolean() && spec["suspend"].get<bool>();
  const int64_t active = Int(At(job, "status"), "active", 0);
  const Resource wl_res = WithVersion(kWorkloads, options_.kueue_version);
  if (!wl.is_null() && WlFinished(wl)) return Outcome::kDone;

  // Events on the Job as Kueue's reconciler records them (Started, Stopped,
  // CreatedWorkload).
  auto update_job = [&](const Json& updated, const char* what, const char* reason = "",
                        const std::string& event_msg = "") {
    auto r = client_->Update(kJobs, ns, updated);
    if (r.ok()) {
      log_->Info(what, {{"job", ns + "/" + name}});
      if (*reason != '\0') PostEvent(*r, "batch/v1", "Job", reason, event_msg);
      return Outcome::kDone;
    }
    if (r.error().NotFound()) return Outcome::kDone;
    if (!r.error().Conflict())
      log_->Warn("cannot update the job", {{"job", ns + "/" + name}, {"error", r.error().ToString()}});
    return Outcome::kRetry;
  };

  // A Job that completed or failed finishes its Workload.
  bool succeeded = false;
  std::string message;
  if (JobFinished(job, &succeeded, &message)) {
    if (wl.is_null()) return Outcome::kDone;
    return WriteWorkloadStatus(wl, FinishedStatus(At(wl, "status"), succeeded, message, Now(),
                                                  Int(At(wl, "metadata"), "generation", 0)));
  }

  if (wl.is_null()) {
    // Not admitted: a Job created running (no webhook) is suspended first.
    if (!suspended) {
      Json j = job;
      j["spec"]["suspend"] = true;
      return update_job(j, "job suspended: not admitted yet");
    }
    if (active > 0) return Outcome::kDone;  // its pods are still going away
    Json w = {{"apiVersion", "kueue.x-k8s.io/" + options_.kueue_version},
              {"kind", "Workload"},
              {"metadata",
               {{"name", WorkloadNameForOwner("Job", "batch", name, uid)},
                {"namespace", ns},
                {"labels", {{kJobUidLabel, uid}}},
                {"ownerReferences", Json::array({{{"apiVersion", "batch/v1"},
                                                  {"kind", "Job"},
                                                  {"name", name},
                                                  {"uid", uid},
                                                  {"controller", true},
                                                  {"blockOwnerDeletion", true}}})}}},
              {"spec", {{"queueName", Label(job, kQueueNameLabel)}}}};
    Json ps = {
        {"name", "main"}, {"count", JobPodsCount(job)}, {"template", WorkloadTemplate(At(spec, "template"))}};
    if (auto m = AnnotationInt(job, kJobMinParallelism); m && *m >= 1 && *m < JobPodsCount(job))
      ps["minCount"] = *m;
    w["spec"]["podSets"] = Json::array({ps});
    SetMaxExecTime(At(At(job, "metadata"), "labels"), &w);
    std::string error;
    if (!SetPriority(At(At(job, "metadata"), "labels"), At(At(spec, "template"), "spec"), &w, &error)) {
      log_->Warn("cannot create the workload yet", {{"job", ns + "/" + name}, {"error", error}});
      return Outcome::kRetry;
    }
    bool created = false;
    Outcome out = CreateWorkload(w, &created);
    if (created) PostEvent(job, "batch/v1", "Job", "CreatedWorkload", "Created Workload: " + Key(w));
    return out;
  }

  const Json& st = At(wl, "status");
  const Json& podsets = At(At(wl, "spec"), "podSets");
  const Json orig = podsets.is_array() && !podsets.empty() ? podsets[0] : Json();
  const bool evicted = WlEvicted(wl);
  const bool admitted = WlAdmitted(wl) && !evicted;
  const bool partial = AnnotationInt(job, kJobMinParallelism).has_value();
  const bool sync_completions = Annotation(job, kJobCompletionsEqualParallelism) == "true";

  if (suspended && !WlReserved(wl) && !JobMatchesWorkload(job, orig)) {
    // The suspended Job changed (its pod count or requests) while it waited:
    // its Workload is made again (Kueue's EquivalentToWorkload).
    auto r = client_->Delete(wl_res, ns, Name(wl), std::nullopt, Uid(wl));
    if (!r.ok() && !r.error().NotFound() && !r.error().Conflict()) return Outcome::kRetry;
    log_->Info("workload deleted: its job changed; it is made again", {{"job", ns + "/" + name}});
    return Outcome::kDone;
  }
  if (evicted || (!suspended && !admitted)) {
    // Stop: suspend, then put the template (and a partial admission's
    // parallelism) back as the Workload has them (Kueue's Job.Stop).
    if (!suspended) {
      Json j = job;
      j["spec"]["suspend"] = true;
      return update_job(
          j, evicted ? "job suspended: its workload was evicted" : "job suspended: not admitted", "Stopped",
          evicted ? EvictedMessage(wl) : std::string("Not admitted by cluster queue"));
    }
    Json j = job;
    bool changed = RestoreTemplate(&j["spec"]["template"], At(orig, "template"));
    if (changed && !At(At(job, "status"), "startTime").is_null()) {
      // The template of a suspended Job may change only while startTime is unset.
      Json s = job;
      s["status"].erase("startTime");
      auto r = client_->UpdateStatus(kJobs, ns, s);
      if (r.ok() || r.error().NotFound()) return Outcome::kDone;
      return Outcome::kRetry;
    }
    if (partial) {
      int64_t count = Int(orig, "count", 1);
      if (Int(j["spec"], "parallelism", 1) != count) {
        j["spec"]["parallelism"] = count;
        if (sync_completions) j["spec"]["completions"] = count;
        changed = true;
      }
    }
    if (changed) return update_job(j, "job template restored");
    if (evicted && WlReserved(wl) && active == 0)
      return WriteWorkloadStatus(wl, RequeuedStatus(st, Now(), Int(At(wl, "metadata"), "generation", 0)));
    return Outcome::kDone;
  }

  if (suspended && admitted) {
    // Start: the admission's podSetInfo into the template, then unsuspend.
    const Json& psa = AdmissionAssignment(wl, "");
    PodSetInfo info;
    std::string error;
    if (!FlavorInfo(psa, &info.node_selector, &info.tolerations, &error)) {
      log_->Warn("cannot start the job", {{"job", ns + "/" + name}, {"error", error}});
      return Outcome::kRetry;
    }
    info.labels[kPodSetLabel] = Str(psa, "name").empty() ? "main" : Str(psa, "name");
    info.annotations[kWorkloadAnnotation] = Name(wl);
    if (!At(psa, "topologyAssignment").is_null()) info.gates.emplace_back(kTopologyGate);
    Json j = job;
    Json& tpl = j["spec"]["template"];
    if (!tpl["metadata"].is_object()) tpl["metadata"] = Json::object();
    if (!MergeInfo(&tpl["metadata"], &tpl["spec"], info, &error)) {
      // As Kueue: a podSetInfo that cannot apply will never apply.
      log_->Error("cannot start the job", {{"job", ns + "/" + name}, {"error", error}});
      return WriteWorkloadStatus(wl, FinishedStatus(st, false, "FailedToStart: " + error, Now(),
                                                    Int(At(wl, "metadata"), "generation", 0)));
    }
    if (partial) {
      int64_t count = Int(psa, "count", Int(orig, "count", 1));
      j["spec"]["parallelism"] = count;
      if (sync_completions) j["spec"]["completions"] = count;
    }
    j["spec"]["suspend"] = false;
    return update_job(j, "job started: its workload is admitted", "Started",
                      "Admitted by clusterQueue " + Str(At(st, "admission"), "clusterQueue"));
  }

  if (suspended && Str(At(wl, "spec"), "queueName") != Label(job, kQueueNameLabel)) {
    Json w = wl;
    w["spec"]["queueName"] = Label(job, kQueueNameLabel);
    auto r = client_->Update(wl_res, ns, w);
    if (r.ok() || r.error().NotFound()) return Outcome::kDone;
    return Outcome::kRetry;
  }
  return Outcome::kDone;
}

// ---------------------------------------------------------------- pods

JobIntegration::Outcome JobIntegration::ReconcilePods(const std::string& ns, const std::string& name,
                                                      bool group) {
  PodSetGroup g;
  g.ns = ns;
  g.name = name;
  std::vector<Json>& pods = g.pods;
  Json& wl = g.wl;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (group) {
      pods = PodsOfLocked("group/" + ns + "/" + name);
      auto it = wls_.find(ns + "/" + name);
      if (it != wls_.end() && Annotation(it->second, kIsGroupWorkload) == "true") wl = it->second;
    } else {
      pods = PodsOfLocked("pod/" + ns + "/" + name);
      if (!pods.empty()) {
        for (const Json& w : OwnedLocked(Uid(pods[0]))) wl = w;
      } else {
        for (const auto& [k, w] : wls_) {  // the pod is gone: its Workload by the owner's name (rare)
          const Json* o = ControllerOwner(w);
          if (Ns(w) == ns && o != nullptr && Str(*o, "kind") == "Pod" && Str(*o, "apiVersion") == "v1" &&
              Str(*o, "name") == name)
            wl = w;
        }
      }
    }
  }
  std::sort(pods.begin(), pods.end(), [](const Json& a, const Json& b) { return Name(a) < Name(b); });
  g.delete_when_gone = true;
  if (pods.empty()) return ReconcileGroup(g);
  if (group) {
    g.total = -1;
    for (const Json& p : pods)
      if (auto t = AnnotationInt(p, kPodGroupTotalCount); t && *t >= 1) g.total = *t;
    if (g.total < 1) {
      log_->Warn("pod group without a valid total count",
                 {{"group", ns + "/" + name}, {"annotation", kPodGroupTotalCount}});
      return Outcome::kDone;
    }
    g.role = [](const Json& p) { return RoleHash(p); };
    g.wl_name = name;
    g.wl_annotations = {{kIsGroupWorkload, "true"}};
    for (const Json& p : pods)
      g.owners.push_back({{"apiVersion", "v1"}, {"kind", "Pod"}, {"name", Name(p)}, {"uid", Uid(p)}});
  } else {
    g.total = 1;
    g.role = [](const Json&) { return std::string("main"); };
    g.wl_name = WorkloadNameForOwner("Pod", "", name, Uid(pods[0]));
    g.owners.push_back({{"apiVersion", "v1"},
                        {"kind", "Pod"},
                        {"name", name},
                        {"uid", Uid(pods[0])},
                        {"controller", true},
                        {"blockOwnerDeletion", true}});
  }
  g.queue = Label(pods[0], kQueueNameLabel);
  g.priority_labels = At(At(pods[0], "metadata"), "labels");
  g.priority_spec = At(pods[0], "spec");
  return ReconcileGroup(g);
}

// ---------------------------------------------------------------- Volcano and KAI PodGroups

JobIntegration::Outcome JobIntegration::ReconcilePodGroup(const std::string& ns, const std::string& name,
                                                          bool volcano) {
  const Resource& res = volcano ? kVolcanoPodGroups : kKaiPodGroups;
  PodSetGroup g;
  g.ns = ns;
  g.name = name;
  Json pg;
  {
    std::lock_guard<std::mutex> l(mu_);
    const auto& m = volcano ? vpgs_ : kpgs_;
    auto it = m.find(ns + "/" + name);
    if (it != m.end()) pg = it->second;
    g.pods = PodsOfLocked((volcano ? "vpg/" : "kpg/") + ns + "/" + name);
    if (!pg.is_null())
      for (const Json& w : OwnedLocked(Uid(pg))) g.wl = w;
  }
  if (pg.is_null()) {
    auto r = client_->Get(res, ns, name);
    if (r.ok()) return Outcome::kDone;
    if (!r.error().NotFound()) return Outcome::kRetry;
    return DeleteOwnedWorkloads(ns, "PodGroup", name, "");
  }
  if (Label(pg, kQueueNameLabel).empty()) return Outcome::kDone;
  std::sort(g.pods.begin(), g.pods.end(), [](const Json& a, const Json& b) { return Name(a) < Name(b); });
  // The gang: the Workload is made once minMember pods exist; all of them
  // are admitted together.
  g.total = std::max<int64_t>(1, Int(At(pg, "spec"), "minMember", 1));
  if (volcano)
    g.role = [](const Json& p) {
      std::string t = Annotation(p, kVolcanoTaskAnnotation);
      return t.empty() ? std::string("main") : t;
    };
  else
    g.role = [](const Json& p) {
      std::string t = Label(p, kKaiSubGroupLabel);
      return t.empty() ? std::string("main") : t;
    };
  g.wl_name = WorkloadNameForOwner("PodGroup", res.group, name, Uid(pg));
  g.owners.push_back({{"apiVersion", res.group + "/" + res.version},
                      {"kind", "PodGroup"},
                      {"name", name},
                      {"uid", Uid(pg)},
                      {"controller", true},
                      {"blockOwnerDeletion", true}});
  g.queue = Label(pg, kQueueNameLabel);
  g.priority_labels = At(At(pg, "metadata"), "labels");
  g.priority_spec = Json::object();
  if (!Str(At(pg, "spec"), "priorityClassName").empty())
    g.priority_spec["priorityClassName"] = Str(At(pg, "spec"), "priorityClassName");
  g.delete_when_gone = false;  // the PodGroup owns it; its pods may come back
  return ReconcileGroup(g);
}

JobIntegration::Outcome JobIntegration::ReconcileGroup(const PodSetGroup& g) {
  const std::string& ns = g.ns;
  const std::string& name = g.name;
  const std::vector<Json>& pods = g.pods;
  const Json& wl = g.wl;
  const int64_t total = g.total;
  const Resource wl_res = WithVersion(kWorkloads, options_.kueue_version);
  const int64_t gen = Int(At(wl, "metadata"), "generation", 0);
  if (pods.empty()) {
    // Every pod is gone: release the quota first (step 4 of the contract),
    // then the Workload goes as its owners did.
    if (wl.is_null()) return Outcome::kDone;
    if (WlReserved(wl) && !WlFinished(wl))
      return WriteWorkloadStatus(wl, RequeuedStatus(At(wl, "status"), Now(), gen));
    if (!g.delete_when_gone) return Outcome::kDone;
    auto r = client_->Delete(wl_res, ns, Name(wl), std::nullopt, Uid(wl));
    if (r.ok() || r.error().NotFound() || r.error().Conflict()) return Outcome::kDone;
    return Outcome::kRetry;
  }
  if (!wl.is_null() && WlFinished(wl)) return Outcome::kDone;

  int64_t succeeded = 0, terminal = 0, active = 0;
  for (const Json& p : pods) {
    if (PodTerminal(p)) {
      ++terminal;
      if (Str(At(p, "status"), "phase") == "Succeeded") ++succeeded;
    } else {
      ++active;
    }
  }

  if (wl.is_null()) {
    // One Workload once every pod of the group exists, all held by the gate.
    if (static_cast<int64_t>(pods.size()) < total) return Outcome::kDone;
    for (const Json& p : pods)
      if (!HasGate(p, kAdmissionGate) || !At(At(p, "metadata"), "deletionTimestamp").is_null())
        return Outcome::kDone;
    std::map<std::string, std::pair<int64_t, Json>> roles;  // pod set name -> (count, template)
    for (const Json& p : pods) {
      std::string role = g.role(p);
      auto& r = roles[role];
      if (r.first++ == 0) {
        Json t = {{"metadata", Json::object()}, {"spec", At(p, "spec")}};
        if (!At(At(p, "metadata"), "labels").is_null()) t["metadata"]["labels"] = p["metadata"]["labels"];
        if (!At(At(p, "metadata"), "annotations").is_null())
          t["metadata"]["annotations"] = p["metadata"]["annotations"];
        t["spec"].erase("nodeName");
        RemoveGate(&t["spec"], kAdmissionGate);
        r.second = t;
      }
    }
    Json w = {{"apiVersion", "kueue.x-k8s.io/" + options_.kueue_version},
              {"kind", "Workload"},
              {"metadata", {{"name", g.wl_name}, {"namespace", ns}, {"ownerReferences", g.owners}}},
              {"spec", {{"queueName", g.queue}, {"podSets", Json::array()}}}};
    if (!g.wl_annotations.empty()) w["metadata"]["annotations"] = g.wl_annotations;
    for (auto& [role, r] : roles)
      w["spec"]["podSets"].push_back({{"name", role}, {"count", r.first}, {"template", r.second}});
    SetMaxExecTime(g.priority_labels, &w);
    std::string error;
    if (!SetPriority(g.priority_labels, g.priority_spec, &w, &error)) {
      log_->Warn("cannot create the workload yet", {{"pods", ns + "/" + name}, {"error", error}});
      return Outcome::kRetry;
    }
    return CreateWorkload(w);
  }

  const Json& st = At(wl, "status");
  if (terminal >= total && active == 0) {
    bool ok = succeeded >= total;
    return WriteWorkloadStatus(
        wl, FinishedStatus(st, ok, ok ? "Pods succeeded" : "At least one pod failed", Now(), gen));
  }
  if (WlEvicted(wl)) {
    // As Kueue's pod integration: the pods of an evicted workload are deleted.
    Outcome out = Outcome::kDone;
    for (const Json& p : pods) {
      if (PodTerminal(p) || !At(At(p, "metadata"), "deletionTimestamp").is_null()) continue;
      auto r = client_->Delete(kPods, ns, Name(p), std::nullopt, Uid(p));
      if (r.ok())
        log_->Info("pod deleted: its workload was evicted", {{"pod", Key(p)}});
      else if (!r.error().NotFound())
        out = Outcome::kRetry;
    }
    if (out == Outcome::kDone && active == 0 && WlReserved(wl))
      return WriteWorkloadStatus(wl, RequeuedStatus(st, Now(), gen));
    return out;
  }
  if (WlAdmitted(wl)) {
    // Start: remove the admission gate, with the podSetInfo (nodeSelector
    // may be added while a pod is gated).
    std::map<std::string, PodSetInfo> infos;
    Outcome out = Outcome::kDone;
    for (const Json& p : pods) {
      if (!HasGate(p, kAdmissionGate)) continue;
      std::string role = g.role(p);
      const Json& psa = AdmissionAssignment(wl, role);
      if (psa.is_null()) {
        log_->Warn("pod matches no pod set of its workload", {{"pod", Key(p)}, {"workload", Key(wl)}});
        continue;
      }
      std::string error;
      if (!infos.count(role)) {
        PodSetInfo info;
        if (!FlavorInfo(psa, &info.node_selector, &info.tolerations, &error)) {
          log_->Warn("cannot start the pods", {{"workload", Key(wl)}, {"error", error}});
          return Outcome::kRetry;
        }
        info.labels[kPodSetLabel] = Str(psa, "name");
        info.annotations[kWorkloadAnnotation] = Name(wl);
        infos[role] = info;
      }
      Json q = p;
      RemoveGate(&q["spec"], kAdmissionGate);
      // Without a topologyAssignment, no ungater will come: a topology gate
      // (added at creation) goes too (Kueue's pod_controller.go prepare).
      if (At(psa, "topologyAssignment").is_null()) RemoveGate(&q["spec"], kTopologyGate);
      if (!MergeInfo(&q["metadata"], &q["spec"], infos[role], &error)) {
        log_->Error("cannot start the pod", {{"pod", Key(p)}, {"error", error}});
        return WriteWorkloadStatus(wl, FinishedStatus(st, false, "FailedToStart: " + error, Now(), gen));
      }
      auto r = client_->Update(kPods, ns, q);
      if (r.ok())
        log_->Info("pod ungated: its workload is admitted", {{"pod", Key(p)}});
      else if (!r.error().NotFound())
        out = Outcome::kRetry;
    }
    return out;
  }
  return Outcome::kDone;
}

}  // namespace artel::kube
