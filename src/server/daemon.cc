#include "server/daemon.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "core/quantity.h"
#include "manifest/manifest.h"
#include "server/manifest_files.h"

namespace artel::server {
namespace fs = std::filesystem;
namespace {

int64_t WallMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string Ns(const std::string& key) { return key.substr(0, key.find('/')); }

std::string RandomSuffix() {
  thread_local std::mt19937_64 rng(std::random_device{}());
  static const char kAlnum[] = "bcdfghjklmnpqrstvwxz2456789";
  std::string s;
  for (int i = 0; i < 5; ++i) s.push_back(kAlnum[rng() % (sizeof kAlnum - 1)]);
  return s;
}

double Units(core::Amount a) { return static_cast<double>(a) / 1000.0; }

bool IsReclaim(core::EvictionReason r) {
  return r == core::EvictionReason::kInCohortReclamation ||
         r == core::EvictionReason::kInCohortReclaimWhileBorrowing;
}

// Kueue's eviction reasons (kueue_evicted_workloads_total{reason}).
std::string KueueEvictedReason(core::EvictionReason r) {
  switch (r) {
    case core::EvictionReason::kClusterQueueStopped: return "ClusterQueueStopped";
    case core::EvictionReason::kLocalQueueStopped: return "LocalQueueStopped";
    case core::EvictionReason::kDeactivated: return "InactiveWorkload";
    default: return "Preempted";
  }
}

int64_t GpusPerPod(const core::PodSetSpec& ps) {
  int64_t n = 0;
  for (const auto& [res, amt] : ps.requests) {
    if (res == "nvidia.com/gpu" || res.rfind("nvidia.com/mig-", 0) == 0) n += (amt + 999) / 1000;
  }
  return n;
}

Json AdmissionJson(const core::WorkloadInfo& info, int64_t admitted_at) {
  Json sets = Json::array();
  for (const auto& a : info.admission) {
    Json usage = Json::object();
    for (const auto& [r, v] : a.resource_usage) usage[r] = core::FormatQuantity(v);
    sets.push_back({{"name", a.name}, {"count", a.count}, {"flavors", a.flavors}, {"resourceUsage", usage}});
  }
  return {{"clusterQueue", info.cluster_queue}, {"podSets", sets}, {"admittedAt", admitted_at}};
}

Result<std::vector<core::PodSetAssignment>> AdmissionFromJson(const Json& j) {
  std::vector<core::PodSetAssignment> out;
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
      out.push_back(std::move(a));
    }
  } catch (const Json::exception& e) {
    return InvalidArgument(std::string("bad admission record: ") + e.what());
  }
  return out;
}

std::string PodKey(const std::string& key, const std::string& pod) { return key + "/" + pod; }

// A committed placement, journaled with the admission so that recovery puts
// the pods back on the very GPUs they run on (Engine::Restore).
Json PlacementToJson(const core::placement::Placement& p) {
  Json pods = Json::array();
  for (const auto& pod : p.pods) {
    Json mig = Json::array();
    for (const auto& m : pod.mig) {
      Json destroy = Json::array();
      for (const auto& d : m.destroy) destroy.push_back({{"profile", d.profile}, {"start", d.start}});
      mig.push_back(
          {{"gpu", m.gpu}, {"profile", m.profile}, {"start", m.start}, {"create", m.create}, {"destroy", destroy}});
    }
    Json shares = Json::array();
    for (const auto& sh : pod.shares) {
      shares.push_back({{"gpu", sh.gpu},
                        {"memoryMiB", sh.memory_mib},
                        {"coresPercent", sh.cores_percent},
                        {"isolated", sh.isolated}});
    }
    pods.push_back({{"group", pod.group}, {"node", pod.node}, {"gpus", pod.gpus}, {"mig", mig}, {"shares", shares}});
  }
  Json reqs = Json::array();
  for (const auto& g : p.group_requests) {
    Json r = Json::object();
    for (const auto& [k, v] : g) r[k] = v;
    reqs.push_back(r);
  }
  return {{"pods", pods}, {"placed", p.placed}, {"groupRequests", reqs}};
}

Result<core::placement::Placement> PlacementFromJson(const Json& j) {
  core::placement::Placement p;
  try {
    for (const auto& pj : j.at("pods")) {
      core::placement::PodPlacement pod;
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
      p.pods.push_back(std::move(pod));
    }
    p.placed = j.at("placed").get<std::vector<int32_t>>();
    for (const auto& rj : j.at("groupRequests")) {
      std::map<std::string, core::Amount> r;
      for (auto it = rj.begin(); it != rj.end(); ++it) r[it.key()] = it->get<core::Amount>();
      p.group_requests.push_back(std::move(r));
    }
  } catch (const Json::exception& e) {
    return InvalidArgument(std::string("bad placement record: ") + e.what());
  }
  return p;
}

}  // namespace

namespace {
core::EngineOptions StandaloneEngineOptions(core::EngineOptions o) {
  o.placement_matches_labels = false;  // see Init: one host stands for every node pool
  return o;
}
}  // namespace

Daemon::Daemon(const DaemonOptions& options, Logger* log)
    : options_(options), log_(log), engine_(StandaloneEngineOptions(options.engine)) {}

Daemon::~Daemon() { Shutdown(); }

Result<std::unique_ptr<Daemon>> Daemon::Open(const DaemonOptions& options, Logger* log) {
  std::unique_ptr<Daemon> d(new Daemon(options, log));
  if (Status s = d->Init(); !s.ok()) return s;
  return d;
}

Status Daemon::Init() {
  if (options_.data_dir.empty()) return InvalidArgument("--data-dir is required");
  std::error_code ec;
  fs::create_directories(options_.data_dir, ec);
  if (ec) return InvalidArgument("cannot create data dir " + options_.data_dir + ": " + ec.message());
  log_dir_ = (fs::path(options_.data_dir) / "logs").string();
  fs::create_directories(log_dir_, ec);
  if (options_.hostname.empty()) {
    char buf[256] = {0};
    gethostname(buf, sizeof buf - 1);
    options_.hostname = buf[0] ? buf : "localhost";
  }

  // GPUs: fake inventory when asked, NVML otherwise.
  if (!options_.fake_gpus.empty()) {
    auto d = runtime::MakeFakeDiscovery(options_.fake_gpus);
    if (!d.ok()) return d.status();
    discovery_ = std::move(d).value();
  } else {
    auto d = runtime::MakeNvmlDiscovery();
    if (d.ok()) {
      discovery_ = std::move(d).value();
    } else {
      log_->Warn("NVML unavailable; running without GPUs (use --fake-gpus to simulate some)",
                 {{"error", d.status().message()}});
    }
  }
  gpu_mode_ = discovery_ ? discovery_->mode() : "none";
  if (discovery_) {
    auto g = discovery_->Discover();
    if (!g.ok()) return g.status();
    gpus_ = std::move(g).value();
  }
  gpu_owner_.assign(gpus_.size(), "");
  gpu_users_.assign(gpus_.size(), {});
  log_->Info("gpu discovery", {{"mode", gpu_mode_}, {"gpus", std::to_string(gpus_.size())}});
  // The host is one node of the placement library: pods are admitted only
  // when their GPUs (whole, MIG instance or memory share) are free here, and
  // start on the GPUs it chose. Without GPUs, admission is quota-only.
  if (!gpus_.empty()) {
    core::placement::NodeSpec host;
    host.name = options_.hostname;
    host.labels[core::placement::kGpuProductLabel] = gpus_[0].model;
    for (const runtime::GpuInfo& g : gpus_) {
      if (g.mig_enabled && gpu_mode_ != "fake") {
        // Creating or destroying MIG instances is not implemented for real
        // GPUs: offering one would admit pods onto instances nobody makes.
        log_->Warn("MIG-mode GPU not offered (MIG reconfiguration is not implemented)",
                   {{"gpu", std::to_string(g.index)}, {"uuid", g.uuid}});
        continue;
      }
      core::placement::GpuSpec spec;
      spec.model = g.model;
      spec.memory_mib = g.memory_bytes / (1024 * 1024);
      spec.uuid = g.uuid;
      spec.mig = g.mig_enabled;
      for (const runtime::MigInstanceInfo& m : g.mig_instances) spec.mig_layout.push_back({m.profile, m.start_slot});
      host.gpus.push_back(std::move(spec));
    }
    if (Status s = engine_.SetNodes({host}); !s.ok()) return s;
    // Configurations describe node pools of a cluster (flavor nodeLabels,
    // pod nodeSelectors); this one host stands for all of them, so pods are
    // placed by capacity and GPU shape, not by labels.
  }

  runtime::LocalRuntime::Options ro;
  ro.cgroup_root = options_.cgroup_root;
  auto rt = runtime::LocalRuntime::Create(ro);
  if (!rt.ok()) return rt.status();
  runtime_ = std::move(rt).value();
  log_->Info("local runtime", {{"cgroups", runtime_->cgroup_status()}});

  auto st = store::Store::Open(options_.data_dir);
  if (!st.ok()) return st.status();
  store_ = std::move(st).value();
  if (Status s = Recover(); !s.ok()) return s;
  if (Status s = ApplyStartupManifests(); !s.ok()) return s;
  ready_ = true;
  return Status::Ok();
}

// ---------------------------------------------------------------------------
// Journal model

void Daemon::Reduce(std::map<std::string, Persisted>* model, uint64_t* order, std::string* config,
                    const store::Record& r) {
  Json p = Json::object();
  if (!r.payload.empty()) {
    p = Json::parse(r.payload, nullptr, false);
    if (p.is_discarded()) p = Json::object();
  }
  using T = store::RecordType;
  if (r.type == T::kConfigApplied) {
    *config = p.value("manifests", "");
    return;
  }
  if (r.type == T::kNodeChanged) return;
  if (r.type == T::kWorkloadSubmitted) {
    Persisted w;
    w.spec = p;
    w.submitted_ms = r.time_ms;
    w.order = ++*order;
    (*model)[r.key] = std::move(w);
    return;
  }
  auto it = model->find(r.key);
  if (it == model->end()) return;
  Persisted& w = it->second;
  if (r.type == T::kWorkloadDeleted) {
    // Only the finished workload it was decided for: the name may have been
    // submitted again between the decision and this record's commit.
    if ((w.phase == "Cancelled" || w.phase == "Finished") && w.finished_ms == p.value("finishedMs", int64_t{-2})) {
      model->erase(it);
    }
    return;
  }
  // Cancelled and Finished are final until the name is submitted again. A
  // loop record can commit after a concurrent cancel of the same workload
  // (the loop decided before the cancel, appended after it); it is stale.
  if (w.phase == "Cancelled" || w.phase == "Finished") return;
  switch (r.type) {
    case T::kWorkloadCancelled:
      w.phase = "Cancelled";
      w.admission = nullptr;
      w.started = nullptr;
      w.finished_ms = r.time_ms;
      break;
    case T::kWorkloadAdmitted:
      w.phase = "Admitted";
      w.admission = p;
      w.started = nullptr;
      break;
    case T::kWorkloadEvicted:
      if (w.phase == "Admitted") w.phase = "Evicting";
      break;
    case T::kEvictionCompleted:
      if (w.phase == "Admitted" || w.phase == "Evicting") {
        w.phase = "Pending";
        w.admission = nullptr;
        w.started = nullptr;
      }
      break;
    case T::kWorkloadStarted: w.started = p; break;
    case T::kWorkloadFinished:
      w.phase = "Finished";
      w.result = p;
      w.started = nullptr;
      w.finished_ms = r.time_ms;
      break;
    default: break;
  }
}

void Daemon::ApplyToModelLocked(const store::Record& r) {
  Reduce(&model_, &model_order_, &model_config_, r);
  ++records_since_snapshot_;
}

Status Daemon::AppendAndApply(std::vector<store::Record> recs) {
  if (recs.empty()) return Status::Ok();
  auto seqs = store_->AppendBatch(recs);
  if (!seqs.ok()) {
    log_->Error("journal append failed", {{"error", seqs.status().message()}});
    return seqs.status();
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < recs.size(); ++i) {
    recs[i].seq = i < seqs->size() ? (*seqs)[i] : 0;
    ApplyToModelLocked(recs[i]);
  }
  return Status::Ok();
}

void Daemon::MaybeSnapshot(bool force) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!force && records_since_snapshot_ < options_.snapshot_every) return;
    if (records_since_snapshot_ == 0) return;
  }
  std::unique_lock<std::shared_mutex> jl(journal_mu_);
  store::Snapshot snap;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Json ws = Json::array();
    for (const auto& [key, w] : model_) {
      ws.push_back({{"key", key},
                    {"spec", w.spec},
                    {"submittedMs", w.submitted_ms},
                    {"order", w.order},
                    {"phase", w.phase},
                    {"admission", w.admission},
                    {"started", w.started},
                    {"result", w.result},
                    {"finishedMs", w.finished_ms}});
    }
    snap.state =
        Json{{"version", 1}, {"config", model_config_}, {"order", model_order_}, {"workloads", ws}}.dump();
    snap.upto_seq = store_->last_seq();
    records_since_snapshot_ = 0;
  }
  if (Status s = store_->WriteSnapshot(snap); !s.ok()) {
    log_->Error("snapshot failed", {{"error", s.message()}});
  } else {
    log_->Debug("snapshot written", {{"upto_seq", std::to_string(snap.upto_seq)}});
  }
}

// ---------------------------------------------------------------------------
// Recovery

Status Daemon::ConfigureFromDocsLocked(const std::map<std::string, std::string>& docs,
                                       core::Config* out) const {
  core::Config cfg;
  if (Status s = manifest::ParseInto(DocsToText(docs), "config", &cfg); !s.ok()) return s;
  if (Status s = manifest::Validate(cfg); !s.ok()) return s;
  core::Engine probe(options_.engine);
  if (Status s = probe.Configure(cfg); !s.ok()) return s;
  for (const Status& w : manifest::Warnings(cfg)) log_->Warn("configuration warning", {{"detail", w.ToString()}});
  *out = std::move(cfg);
  return Status::Ok();
}

std::string Daemon::DocsToText(const std::map<std::string, std::string>& docs) {
  std::string text;
  for (const auto& [k, t] : docs) text += "---\n" + t;
  return text;
}

Status Daemon::Recover() {
  auto rec = store_->Recover();
  if (!rec.ok()) return rec.status();
  std::lock_guard<std::mutex> lock(mu_);
  if (rec->snapshot) {
    Json s = Json::parse(rec->snapshot->state, nullptr, false);
    if (s.is_discarded() || !s.is_object()) return Status(StatusCode::kInternal, "corrupt snapshot");
    model_config_ = s.value("config", "");
    model_order_ = s.value("order", uint64_t{0});
    for (const auto& w : s.value("workloads", Json::array())) {
      Persisted p;
      p.spec = w.value("spec", Json());
      p.submitted_ms = w.value("submittedMs", int64_t{0});
      p.order = w.value("order", uint64_t{0});
      p.phase = w.value("phase", "Pending");
      p.admission = w.value("admission", Json());
      p.started = w.value("started", Json());
      p.result = w.value("result", Json());
      p.finished_ms = w.value("finishedMs", int64_t{-1});
      model_[w.value("key", "")] = std::move(p);
    }
  }
  for (const auto& r : rec->records) Reduce(&model_, &model_order_, &model_config_, r);
  records_since_snapshot_ = rec->records.size();
  log_->Info("recovered journal",
             {{"snapshot", rec->snapshot ? std::to_string(rec->snapshot->upto_seq) : "none"},
              {"records", std::to_string(rec->records.size())},
              {"workloads", std::to_string(model_.size())}});

  if (!model_config_.empty()) {
    auto docs = SplitDocuments(model_config_);
    if (!docs.ok()) return docs.status();
    for (auto& d : *docs) docs_[d.key()] = d.text;
    core::Config cfg;
    if (Status s = ConfigureFromDocsLocked(docs_, &cfg); !s.ok()) return s;
    if (Status s = engine_.Configure(cfg); !s.ok()) return s;
  }

  // Materialize in submission order.
  std::vector<std::pair<uint64_t, std::string>> order;
  for (const auto& [k, p] : model_) order.emplace_back(p.order, k);
  std::sort(order.begin(), order.end());
  std::vector<store::Record> fixups;
  int64_t now = NowLocked();
  size_t adopted = 0, requeued = 0, restored = 0;
  for (const auto& [ord, key] : order) {
    const Persisted& p = model_[key];
    auto spec = WorkloadFromJson(p.spec);
    if (!spec.ok()) {
      log_->Error("unreadable workload in journal", {{"workload", key}, {"error", spec.status().message()}});
      continue;
    }
    Wl w;
    w.spec = *spec;
    w.submitted_ms = p.submitted_ms;
    if (p.admission.is_object()) w.cluster_queue = p.admission.value("clusterQueue", "");
    if (p.phase == "Cancelled") {
      w.terminal = "Cancelled";
      w.finished_ms = p.finished_ms >= 0 ? p.finished_ms : now;  // older journals: from this start
      wl_[key] = std::move(w);
      continue;
    }
    if (p.phase == "Finished") {
      w.finished_ms = p.finished_ms >= 0 ? p.finished_ms : now;
      w.terminal = p.result.value("phase", "Succeeded");
      if (p.result.contains("exitCode")) w.exit_code = p.result.value("exitCode", 0);
      w.message = p.result.value("message", "");
      wl_[key] = std::move(w);
      continue;
    }
    int64_t grace = w.spec.termination_grace.value_or(options_.default_grace_ms);
    std::vector<runtime::RunningPod> pods;
    std::vector<Pod> wpods;
    if (p.started.is_object()) {
      for (const auto& pj : p.started.value("pods", Json::array())) {
        Pod pod;
        pod.rp.pod = pj.value("pod", "");
        pod.rp.pid = pj.value("pid", 0);
        pod.rp.pgid = pj.value("pgid", 0);
        pod.rp.exit_file = pj.value("exitFile", "");
        pod.gpus = pj.value("gpus", std::vector<int>{});
        pods.push_back(pod.rp);
        wpods.push_back(pod);
      }
      w.retries = p.started.value("retries", 0);
    }
    bool alive = !pods.empty() && runtime_->Adopt(key, pods, grace);
    // Pods the journal does not know: the daemon died after starting them
    // and before journaling the start (or a retry's restart). Find them by
    // their process marker instead of starting a second copy; without a
    // journaled start, an exit file written since the admission also counts.
    bool unrecorded = false;
    if (!alive && (p.phase == "Admitted" || p.phase == "Evicting")) {
      int64_t since = std::numeric_limits<int64_t>::max();
      if (pods.empty() && p.admission.is_object()) since = p.admission.value("admittedAt", since);
      std::vector<runtime::RunningPod> found = runtime_->Find(key, log_dir_, since);
      if (!found.empty() && runtime_->Adopt(key, found, grace)) {
        alive = true;
        unrecorded = true;
        pods = found;
        wpods.clear();
        for (const runtime::RunningPod& rp : found) {
          Pod pod;
          pod.rp = rp;
          for (const std::string& uuid : rp.visible_devices) {
            for (size_t g = 0; g < gpus_.size(); ++g) {
              if (gpus_[g].uuid == uuid) pod.gpus.push_back(static_cast<int>(g));
            }
          }
          wpods.push_back(std::move(pod));
        }
        log_->Warn("found pods started but not journaled before a crash; adopted them",
                   {{"workload", key}, {"pods", std::to_string(found.size())}});
      }
    }
    auto claim = [&](Wl& wl) {
      for (auto& pod : wl.pods) {
        for (int g : pod.gpus) {
          ClaimGpuLocked(g, PodKey(key, pod.rp.pod));
        }
      }
    };
    if (p.phase == "Evicting" && alive) {
      // Its pods are still stopping: keep it out of the engine until they go.
      runtime_->Stop(key, now);
      w.pods = std::move(wpods);
      w.running = true;
      w.deferred = true;
      claim(w);
      wl_[key] = std::move(w);
      continue;
    }
    if (Status s = engine_.Submit(w.spec, p.submitted_ms).status(); !s.ok()) {
      log_->Error("journal workload rejected on recovery", {{"workload", key}, {"error", s.message()}});
      w.terminal = "Failed";
      w.message = "rejected on recovery: " + s.message();
      wl_[key] = std::move(w);
      continue;
    }
    bool requeue = p.phase == "Evicting" || (!pods.empty() && !alive);
    if (p.phase == "Admitted" && !requeue) {
      auto adm = AdmissionFromJson(p.admission);
      std::optional<core::placement::Placement> placed;
      if (adm.ok() && p.admission.contains("placement")) {
        auto pl = PlacementFromJson(p.admission["placement"]);
        if (pl.ok()) placed = std::move(pl).value();
      }
      Status s = adm.ok() ? engine_.Restore(key, p.admission.value("clusterQueue", ""), *adm,
                                            p.admission.value("admittedAt", now), placed ? &*placed : nullptr)
                          : adm.status();
      if (s.ok()) {
        ++restored;
        w.admitted_ms = p.admission.value("admittedAt", now);
        if (alive) {
          ++adopted;
          w.pods = std::move(wpods);
          w.running = true;
          claim(w);
          // Journal the start now, so that the next recovery agrees.
          if (unrecorded) fixups.push_back(StartedRecord(key, w, true));
        } else {
          bool has_command = false;
          for (const auto& ps : w.spec.pod_sets) has_command = has_command || !ps.command.empty();
          if (has_command) pending_launch_.insert(key);
        }
      } else {
        log_->Warn("admission not restored; requeued", {{"workload", key}, {"error", s.message()}});
        requeue = true;
      }
    }
    if (requeue && p.phase != "Pending") {
      ++requeued;
      store::Record r;
      r.type = store::RecordType::kEvictionCompleted;
      r.time_ms = WallMs();
      r.key = key;
      r.payload = Json{{"reason", "RecoveredWithoutPods"}}.dump();
      fixups.push_back(std::move(r));
    }
    wl_[key] = std::move(w);
  }
  log_->Info("recovered workloads", {{"restored", std::to_string(restored)},
                                     {"adopted", std::to_string(adopted)},
                                     {"requeued", std::to_string(requeued)}});
  if (!fixups.empty()) {
    auto seqs = store_->AppendBatch(fixups);
    if (!seqs.ok()) return seqs.status();
    for (const auto& r : fixups) ApplyToModelLocked(r);
  }
  return Status::Ok();
}

Status Daemon::ApplyStartupManifests() {
  if (options_.manifests.empty()) return Status::Ok();
  std::string text;
  for (const auto& path : options_.manifests) {
    auto t = ReadManifestText(path);
    if (!t.ok()) return t.status();
    text += *t;
  }
  Principal admin{"arteld", Role::kAdmin, {}};
  auto r = Apply(text, admin);
  if (!r.ok()) return r.status();
  log_->Info("applied startup manifests", {{"changed", std::to_string(r->value("changed", 0))}});
  return Status::Ok();
}

// ---------------------------------------------------------------------------
// Mutations

int64_t Daemon::NowLocked() {
  last_now_ = std::max(last_now_, WallMs());
  return last_now_;
}

void Daemon::Wake() {
  std::lock_guard<std::mutex> l(wake_mu_);
  dirty_ = true;
  wake_cv_.notify_one();
}

Result<Json> Daemon::Apply(std::string_view yaml, const Principal& who) {
  // Per-object checks with positions in the request body.
  core::Config scratch;
  if (Status s = manifest::ParseInto(yaml, "request", &scratch); !s.ok()) return s;
  auto docs = SplitDocuments(yaml);
  if (!docs.ok()) return docs.status();
  if (docs->empty()) return InvalidArgument("no manifests in the request body");
  for (const auto& d : *docs) {
    if (who.is_admin()) continue;
    if (!IsNamespacedKind(d.kind)) {
      return Status(StatusCode::kPermissionDenied,
                    "only admins may apply cluster-scoped " + d.kind + " " + d.name);
    }
    if (!who.CanUseNamespace(d.ns)) {
      return Status(StatusCode::kPermissionDenied, "user " + who.user + " may not act in namespace " + d.ns);
    }
  }
  std::shared_lock<std::shared_mutex> jl(journal_mu_);
  std::map<std::string, std::string> merged;
  core::Config cfg;
  int changed = 0;
  Json objects = Json::array();
  {
    std::lock_guard<std::mutex> lock(mu_);
    merged = docs_;
    for (const auto& d : *docs) {
      auto it = merged.find(d.key());
      bool same = it != merged.end() && it->second == d.text;
      if (!same) ++changed;
      merged[d.key()] = d.text;
      objects.push_back({{"kind", d.kind}, {"namespace", d.ns}, {"name", d.name}, {"changed", !same}});
    }
    if (changed == 0) return Json{{"changed", 0}, {"objects", objects}};
    if (Status s = ConfigureFromDocsLocked(merged, &cfg); !s.ok()) return s;
  }
  store::Record r;
  r.type = store::RecordType::kConfigApplied;
  r.time_ms = WallMs();
  r.payload = Json{{"manifests", DocsToText(merged)}}.dump();
  auto seq = store_->Append(r);
  if (!seq.ok()) return Status(StatusCode::kInternal, "store: " + seq.status().message());
  {
    std::lock_guard<std::mutex> lock(mu_);
    r.seq = *seq;
    ApplyToModelLocked(r);
    if (Status s = engine_.Configure(cfg); !s.ok()) return s;
    docs_ = std::move(merged);
    EmitLocked("ConfigApplied", "", {{"user", who.user}, {"changed", changed}});
  }
  log_->Info("config applied", {{"user", who.user}, {"changed", std::to_string(changed)}});
  Wake();
  return Json{{"changed", changed}, {"objects", objects}};
}

Result<Json> Daemon::Submit(core::WorkloadSpec spec, const std::string& generate_name,
                            const std::string& user) {
  // Encode before the name is reserved in inflight_: an encoding failure
  // (a string that is not UTF-8 throws in dump()) used to escape with the
  // name still reserved, so every later submit of it got 409 until restart.
  // The codec refuses such strings; this keeps a failed submit a no-op.
  try {
    (void)WorkloadSpecToJson(spec).dump();
  } catch (const Json::exception& e) {
    return InvalidArgument(std::string("cannot encode the workload: ") + e.what());
  }
  std::shared_lock<std::shared_mutex> jl(journal_mu_);
  std::string key;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!ready_) return Status(StatusCode::kFailedPrecondition, "arteld is not ready");
    auto taken = [&](const std::string& k) {
      if (inflight_.count(k) || engine_.Find(k) != nullptr) return true;
      auto it = wl_.find(k);
      return it != wl_.end() && it->second.terminal != "Cancelled";
    };
    if (spec.name.empty()) {
      for (int i = 0; i < 20 && spec.name.empty(); ++i) {
        std::string n = generate_name + RandomSuffix();
        if (!taken(spec.ns + "/" + n)) spec.name = n;
      }
      if (spec.name.empty()) return AlreadyExists("could not generate a free name from " + generate_name);
    }
    key = spec.ns + "/" + spec.name;
    if (taken(key)) return AlreadyExists("workload " + key + " already exists");
    const core::Config& cfg = engine_.config();
    bool lq =
        std::any_of(cfg.local_queues.begin(), cfg.local_queues.end(),
                    [&](const core::LocalQueueSpec& q) { return q.ns == spec.ns && q.name == spec.queue; });
    if (!lq) {
      Status s = NotFound("LocalQueue " + spec.ns + "/" + spec.queue + " does not exist");
      s.WithField("spec.queueName");
      return s;
    }
    if (spec.priority_class) {
      bool pc = std::any_of(cfg.priority_classes.begin(), cfg.priority_classes.end(),
                            [&](const core::PriorityClassSpec& p) { return p.name == *spec.priority_class; });
      if (!pc) {
        Status s = InvalidArgument("unknown priority class " + *spec.priority_class);
        s.WithField("spec.priorityClassName");
        return s;
      }
    }
    inflight_.insert(key);
  }
  store::Record r;
  r.type = store::RecordType::kWorkloadSubmitted;
  r.time_ms = WallMs();
  r.key = key;
  r.payload = WorkloadSpecToJson(spec).dump();
  auto seq = store_->Append(r);
  std::lock_guard<std::mutex> lock(mu_);
  inflight_.erase(key);
  if (!seq.ok()) return Status(StatusCode::kInternal, "store: " + seq.status().message());
  r.seq = *seq;
  ApplyToModelLocked(r);
  int64_t now = NowLocked();
  if (Status s = engine_.Submit(spec, now).status(); !s.ok()) {
    // Pre-checks passed but the engine refused (a config change raced us):
    // journal the withdrawal so that recovery agrees.
    store::Record c;
    c.type = store::RecordType::kWorkloadCancelled;
    c.time_ms = WallMs();
    c.key = key;
    if (store_->Append(c).ok()) ApplyToModelLocked(c);
    wl_.erase(key);
    return s;
  }
  Wl w;
  w.spec = std::move(spec);
  w.submitted_ms = r.time_ms;
  w.user = user;
  wl_[key] = std::move(w);
  EmitLocked("Submitted", key, {{"user", user}});
  log_->Debug("workload submitted", {{"workload", key}, {"queue", wl_[key].spec.queue}, {"user", user}});
  Json out = WorkloadJsonLocked(key, wl_[key]);
  {
    std::lock_guard<std::mutex> l(wake_mu_);
    dirty_ = true;
  }
  wake_cv_.notify_one();
  return out;
}

Result<Json> Daemon::Cancel(const std::string& key, const std::string& user) {
  std::shared_lock<std::shared_mutex> jl(journal_mu_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = wl_.find(key);
    if (it == wl_.end()) return NotFound("workload " + key + " not found");
    if (!it->second.terminal.empty()) {
      return FailedPrecondition("workload " + key + " is already " + it->second.terminal);
    }
  }
  store::Record r;
  r.type = store::RecordType::kWorkloadCancelled;
  r.time_ms = WallMs();
  r.key = key;
  auto seq = store_->Append(r);
  if (!seq.ok()) return Status(StatusCode::kInternal, "store: " + seq.status().message());
  bool stop = false;
  Json out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    r.seq = *seq;
    ApplyToModelLocked(r);
    int64_t now = NowLocked();
    auto it = wl_.find(key);
    if (it == wl_.end()) return NotFound("workload " + key + " not found");
    Wl& w = it->second;
    DropFromEngineLocked(key, now);
    pending_launch_.erase(key);
    w.terminal = "Cancelled";
    w.finished_ms = now;
    w.deferred = false;
    stop = w.running;
    EmitLocked("Cancelled", key, {{"user", user}});
    out = WorkloadJsonLocked(key, w);
  }
  log_->Info("workload cancelled", {{"workload", key}, {"user", user}});
  if (stop) runtime_->Stop(key, WallMs());
  Wake();
  return out;
}

// ---------------------------------------------------------------------------
// Engine loop

void Daemon::Start() {
  loop_ = std::thread([this] { Loop(); });
}

void Daemon::Shutdown() {
  if (shut_down_.exchange(true)) return;
  {
    std::lock_guard<std::mutex> l(wake_mu_);
    stopping_ = true;
  }
  wake_cv_.notify_all();
  ev_cv_.notify_all();
  if (loop_.joinable()) loop_.join();
  if (options_.stop_workloads_on_exit && runtime_) {
    std::vector<std::string> keys;
    int64_t grace = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (const auto& [k, w] : wl_) {
        if (w.running) {
          keys.push_back(k);
          grace = std::max(grace, w.spec.termination_grace.value_or(options_.default_grace_ms));
        }
      }
    }
    int64_t start = WallMs();
    for (const auto& k : keys) runtime_->Stop(k, start);
    while (!keys.empty() && WallMs() < start + grace + 2000) {
      runtime_->Tick(WallMs());
      runtime_->Poll();
      keys.erase(std::remove_if(keys.begin(), keys.end(),
                                [&](const std::string& k) { return !runtime_->IsRunning(k); }),
                 keys.end());
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    log_->Info("stopped workloads at shutdown");
  }
  if (store_) MaybeSnapshot(true);
  ready_ = false;
}

void Daemon::Loop() {
  int64_t last_schedule = 0;
  while (true) {
    bool changed;
    {
      std::unique_lock<std::mutex> l(wake_mu_);
      wake_cv_.wait_for(l, std::chrono::milliseconds(options_.tick_ms), [&] { return dirty_ || stopping_; });
      if (stopping_) break;
      changed = dirty_;
      if (changed && options_.debounce_ms > 0) {
        // Debounce: let a burst of changes land before the cycle runs.
        wake_cv_.wait_for(l, std::chrono::milliseconds(options_.debounce_ms), [&] { return stopping_; });
        if (stopping_) break;
      }
      dirty_ = false;
    }
    int64_t now = WallMs();
    bool schedule = changed || now - last_schedule >= options_.schedule_interval_ms;
    if (schedule) last_schedule = now;
    Cycle(schedule);
    MaybeSnapshot(false);
  }
}

void Daemon::Cycle(bool schedule) {
  std::vector<std::string> launch, stop;
  bool again = false;
  {
    std::shared_lock<std::shared_mutex> jl(journal_mu_);
    std::vector<store::Record> recs;
    int64_t now = WallMs();
    runtime_->Tick(now);
    std::vector<runtime::Exit> exits = runtime_->Poll();
    {
      std::lock_guard<std::mutex> lock(mu_);
      now = NowLocked();
      HandleExitsLocked(exits, now, &recs, &launch);
      if (schedule || !exits.empty()) ScheduleLocked(now, &recs, &launch, &stop);
      if (schedule) CollectFinishedLocked(now, &recs);
      for (const auto& k : pending_launch_) launch.push_back(k);
      pending_launch_.clear();
      for (const auto& r : recs) {
        if (r.type == store::RecordType::kEvictionCompleted) again = true;
      }
    }
    std::vector<std::string> expired_logs;
    {
      std::lock_guard<std::mutex> lock(mu_);
      expired_logs.swap(logs_to_remove_);
    }
    if (AppendAndApply(std::move(recs)).ok()) {
      // The deletion is journaled: the pods' logs go too. A name submitted
      // again cannot have started pods yet (launches come after this).
      for (const std::string& key : expired_logs) {
        std::error_code ec;
        fs::remove_all(fs::path(log_dir_) / key, ec);
        if (ec) log_->Warn("could not delete logs", {{"workload", key}, {"error", ec.message()}});
      }
    }  // else not journaled: after a restart the records come back and are collected again, logs and all
  }
  int64_t now = WallMs();
  for (const auto& k : stop) {
    if (Status s = runtime_->Stop(k, now); !s.ok())
      log_->Warn("stop failed", {{"workload", k}, {"error", s.message()}});
  }
  std::sort(launch.begin(), launch.end());
  launch.erase(std::unique(launch.begin(), launch.end()), launch.end());
  for (const auto& k : launch) Launch(k);
  if (again) Wake();
}

void Daemon::DropFromEngineLocked(const std::string& key, int64_t now) {
  const core::WorkloadInfo* info = engine_.Find(key);
  if (info == nullptr) return;
  const core::WorkloadId id = info->id;
  (void)engine_.Cancel(key, now);
  (void)engine_.Forget(id);  // frees the engine's slot; nothing asks the engine about it again
}

void Daemon::CollectFinishedLocked(int64_t now, std::vector<store::Record>* recs) {
  // A scan of every workload: at most once per second.
  if (options_.finished_retention_ms < 0 || now - last_collect_ms_ < 1000) return;
  last_collect_ms_ = now;
  std::vector<std::string> expired;
  for (const auto& [key, w] : wl_) {
    if (w.terminal.empty() || w.running || w.finished_ms < 0) continue;
    if (now - w.finished_ms < options_.finished_retention_ms) continue;
    // Its final record must be in the model already (it is appended after
    // the cycle that decided it): the deletion names that record's time.
    auto m = model_.find(key);
    if (m == model_.end() || (m->second.phase != "Finished" && m->second.phase != "Cancelled")) continue;
    expired.push_back(key);
  }
  for (const std::string& key : expired) {
    auto it = wl_.find(key);
    // The journal's own finish time identifies this incarnation of the name.
    int64_t journaled = model_.at(key).finished_ms;
    store::Record r;
    r.type = store::RecordType::kWorkloadDeleted;
    r.time_ms = WallMs();
    r.key = key;
    r.payload = Json{{"reason", "retention"}, {"finishedMs", journaled}}.dump();
    recs->push_back(std::move(r));
    EmitLocked("Deleted", key, {{"reason", "retention"}});
    logs_to_remove_.push_back(key);
    wl_.erase(it);
  }
  if (!expired.empty()) {
    log_->Info("deleted finished workloads past retention",
               {{"count", std::to_string(expired.size())},
                {"retention_s", std::to_string(options_.finished_retention_ms / 1000)}});
  }
}

void Daemon::FinishLocked(const std::string& key, Wl& w, int64_t now, int exit_code, const std::string& phase,
                          std::vector<store::Record>* recs) {
  const core::WorkloadInfo* info = engine_.Find(key);
  std::string cq = info ? info->cluster_queue : "";
  if (info &&
      (info->state == core::WorkloadState::kAdmitted || info->state == core::WorkloadState::kEvicting)) {
    (void)engine_.Finish(key, now);
  }
  DropFromEngineLocked(key, now);  // the daemon keeps the record
  w.terminal = phase;
  w.exit_code = exit_code;
  w.finished_ms = now;
  if (!cq.empty()) ++finished_total_[cq];
  store::Record r;
  r.type = store::RecordType::kWorkloadFinished;
  r.time_ms = WallMs();
  r.key = key;
  r.payload = Json{{"exitCode", exit_code}, {"phase", phase}, {"message", w.message}}.dump();
  recs->push_back(std::move(r));
  EmitLocked(phase, key, {{"exitCode", exit_code}, {"clusterQueue", cq}});
  log_->Info(phase == "Succeeded" ? "workload succeeded" : "workload failed",
             {{"workload", key}, {"queue", cq}, {"exit_code", std::to_string(exit_code)}});
}

void Daemon::ClaimGpuLocked(int g, const std::string& owner) {
  if (g < 0 || g >= static_cast<int>(gpu_owner_.size())) return;
  auto& users = gpu_users_[g];
  if (std::find(users.begin(), users.end(), owner) == users.end()) users.push_back(owner);
  if (gpu_owner_[g].empty()) gpu_owner_[g] = owner;
}

void Daemon::ReleaseGpusLocked(Wl& w) {
  // Only this workload's pods let go: a GPU shared by memory shares stays
  // in use (and named after another user) while another share holds it.
  const std::string prefix = w.spec.ns + "/" + w.spec.name + "/";
  for (auto& pod : w.pods) {
    for (int g : pod.gpus) {
      if (g < 0 || g >= static_cast<int>(gpu_owner_.size())) continue;
      auto& users = gpu_users_[g];
      users.erase(std::remove_if(users.begin(), users.end(),
                                 [&](const std::string& u) { return u.rfind(prefix, 0) == 0; }),
                  users.end());
      gpu_owner_[g] = users.empty() ? std::string() : users.front();
    }
  }
}

void Daemon::HandleExitsLocked(const std::vector<runtime::Exit>& exits, int64_t now,
                               std::vector<store::Record>* recs, std::vector<std::string>* launch) {
  std::set<std::string> touched;
  for (const auto& e : exits) {
    auto it = wl_.find(e.key);
    if (it == wl_.end()) continue;
    for (auto& pod : it->second.pods) {
      if (pod.rp.pod == e.pod && !pod.exited) {
        pod.exited = true;
        pod.exit = e;
      }
    }
    touched.insert(e.key);
  }
  for (const auto& key : touched) {
    Wl& w = wl_[key];
    if (!w.running) continue;
    bool all = std::all_of(w.pods.begin(), w.pods.end(), [](const Pod& p) { return p.exited; });
    if (!all) continue;
    w.running = false;
    int code = 0;
    bool ok = true;
    for (const auto& p : w.pods) {
      int c = p.exit.signaled ? 128 + p.exit.signal : p.exit.exit_code;
      if (c != 0) {
        ok = false;
        if (code == 0) code = c;
      }
    }
    const core::WorkloadInfo* info = engine_.Find(key);
    if (w.deferred) {
      // Recovered while being evicted: now it may queue again.
      w.deferred = false;
      ReleaseGpusLocked(w);
      w.pods.clear();
      store::Record r;
      r.type = store::RecordType::kEvictionCompleted;
      r.time_ms = WallMs();
      r.key = key;
      recs->push_back(std::move(r));
      if (Status s = engine_.Submit(w.spec, w.submitted_ms).status(); !s.ok()) {
        w.terminal = "Failed";
        w.message = "rejected on requeue: " + s.message();
      }
      EmitLocked("Requeued", key);
      continue;
    }
    if (info == nullptr) {  // cancelled while running
      ReleaseGpusLocked(w);
      continue;
    }
    if (info->state == core::WorkloadState::kEvicting) {
      ReleaseGpusLocked(w);
      w.pods.clear();
      std::string cq = info->cluster_queue;
      (void)engine_.CompleteEviction(key, now);
      store::Record r;
      r.type = store::RecordType::kEvictionCompleted;
      r.time_ms = WallMs();
      r.key = key;
      recs->push_back(std::move(r));
      EmitLocked("Requeued", key, {{"clusterQueue", cq}});
      log_->Info("eviction completed; requeued", {{"workload", key}, {"queue", cq}});
      continue;
    }
    if (info->state != core::WorkloadState::kAdmitted) continue;
    if (ok) {
      ReleaseGpusLocked(w);
      FinishLocked(key, w, now, 0, "Succeeded", recs);
    } else if (w.retries < w.spec.backoff_limit) {
      ++w.retries;
      EmitLocked("Retrying", key, {{"exitCode", code}, {"retry", w.retries}});
      log_->Info(
          "workload failed; retrying",
          {{"workload", key}, {"exit_code", std::to_string(code)}, {"retry", std::to_string(w.retries)}});
      launch->push_back(key);
    } else {
      ReleaseGpusLocked(w);
      FinishLocked(key, w, now, code, "Failed", recs);
    }
  }
}

void Daemon::ScheduleLocked(int64_t now, std::vector<store::Record>* recs, std::vector<std::string>* launch,
                            std::vector<std::string>* stop) {
  auto t0 = std::chrono::steady_clock::now();
  core::CycleResult res = engine_.Schedule(now);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  cycle_hist_.Observe(secs);
  ++cycles_total_;
  std::set<std::string> admitted_now;
  for (const auto& key : res.admitted) {
    const core::WorkloadInfo* info = engine_.Find(key);
    if (info == nullptr) continue;
    Wl& w = wl_[key];
    w.admitted_ms = now;
    w.cluster_queue = info->cluster_queue;
    ++admitted_total_[info->cluster_queue];
    wait_hist_[info->cluster_queue].Observe(static_cast<double>(now - info->queued_at) / 1000.0);
    if (w.reclaim_wait) {
      reclaim_hist_[info->cluster_queue].Observe(static_cast<double>(now - w.submitted_ms) / 1000.0);
      w.reclaim_wait = false;
    }
    store::Record r;
    r.type = store::RecordType::kWorkloadAdmitted;
    r.time_ms = WallMs();
    r.key = key;
    Json adm = AdmissionJson(*info, now);
    if (const core::placement::Placement* pl = engine_.Placement(key)) adm["placement"] = PlacementToJson(*pl);
    r.payload = adm.dump();
    recs->push_back(std::move(r));
    EmitLocked("Admitted", key, {{"clusterQueue", info->cluster_queue}});
    log_->Info("workload admitted", {{"workload", key}, {"queue", info->cluster_queue}});
    bool has_command = false;
    for (const auto& ps : w.spec.pod_sets) has_command = has_command || !ps.command.empty();
    if (has_command) {
      launch->push_back(key);
      admitted_now.insert(key);
    }
  }
  for (const auto& e : res.evictions) {
    const core::WorkloadInfo* info = engine_.Find(e.victim);
    ++evicted_total_[{e.victim_cluster_queue, KueueEvictedReason(e.reason)}];
    if (!e.preemptor.empty())
      ++preempted_total_[{e.preemptor_cluster_queue, core::EvictionReasonName(e.reason)}];
    if (IsReclaim(e.reason) && wl_.count(e.preemptor)) wl_[e.preemptor].reclaim_wait = true;
    store::Record r;
    r.type = store::RecordType::kWorkloadEvicted;
    r.time_ms = WallMs();
    r.key = e.victim;
    r.payload = Json{
        {"reason", core::EvictionReasonName(e.reason)},
        {"preemptor", e.preemptor},
        {"message",
         e.message}}.dump();
    recs->push_back(std::move(r));
    EmitLocked("Evicted", e.victim,
               {{"clusterQueue", e.victim_cluster_queue},
                {"reason", core::EvictionReasonName(e.reason)},
                {"preemptor", e.preemptor}});
    log_->Info("workload evicted", {{"workload", e.victim},
                                    {"queue", e.victim_cluster_queue},
                                    {"reason", core::EvictionReasonName(e.reason)},
                                    {"preemptor", e.preemptor}});
    Wl& w = wl_[e.victim];
    if (w.running) {
      stop->push_back(e.victim);
    } else if (info && info->state == core::WorkloadState::kEvicting) {
      // Nothing runs (a reservation, or admitted this very pass): done now.
      launch->erase(std::remove(launch->begin(), launch->end(), e.victim), launch->end());
      ReleaseGpusLocked(w);
      w.pods.clear();
      (void)engine_.CompleteEviction(e.victim, now);
      store::Record c;
      c.type = store::RecordType::kEvictionCompleted;
      c.time_ms = WallMs();
      c.key = e.victim;
      recs->push_back(std::move(c));
      EmitLocked("Requeued", e.victim, {{"clusterQueue", e.victim_cluster_queue}});
    }
  }
}

std::vector<int> Daemon::AssignGpusLocked(int count, const std::string& owner) {
  std::vector<int> out;
  for (size_t i = 0; i < gpu_owner_.size() && static_cast<int>(out.size()) < count; ++i) {
    if (gpu_owner_[i].empty()) {
      ClaimGpuLocked(static_cast<int>(i), owner);
      out.push_back(static_cast<int>(i));
    }
  }
  if (static_cast<int>(out.size()) < count && !gpu_owner_.empty()) {
    // Quota allows more than the host has (or a fake inventory is small):
    // share GPUs rather than refuse, and say so.
    log_->Warn("not enough free GPUs; sharing", {{"pod", owner}});
    for (size_t i = 0; static_cast<int>(out.size()) < count; ++i)
      out.push_back(static_cast<int>(i % gpu_owner_.size()));
  }
  return out;
}

void Daemon::ApplyPlacementLocked(const core::PodPlacementInfo& pp, const std::string& owner,
                                  runtime::PodLaunch* pl, Pod* pod) {
  // The devices the pod sees: whole GPUs or MIG instances, by UUID.
  std::string_view rest = pp.visible_devices;
  while (!rest.empty()) {
    size_t comma = rest.find(',');
    if (comma != 0) pl->visible_devices.emplace_back(rest.substr(0, comma));
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  // The host GPUs behind them (a MIG UUID names its parent GPU's UUID).
  for (size_t g = 0; g < gpus_.size(); ++g) {
    for (const std::string& d : pl->visible_devices) {
      if (d == gpus_[g].uuid || (d.rfind("MIG-", 0) == 0 && d.find(gpus_[g].uuid) != std::string::npos)) {
        pod->gpus.push_back(static_cast<int>(g));
        ClaimGpuLocked(static_cast<int>(g), owner);
        break;
      }
    }
  }
  // A memory share ("gpu:MiB:cores%"): limits for a HAMi-style interposer.
  for (const std::string& sh : pp.shares) {
    size_t a = sh.find(':'), b = sh.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    int64_t mib = std::atoll(sh.substr(a + 1, b - a - 1).c_str());
    int cores = std::atoi(sh.substr(b + 1).c_str());
    if (mib > 0) {
      pl->slice_env["CUDA_DEVICE_MEMORY_LIMIT"] = std::to_string(mib) + "m";
      pl->slice_env["ARTEL_GPU_MEMORY_LIMIT"] = std::to_string(mib * 1024 * 1024);
    }
    if (cores > 0) pl->slice_env["CUDA_DEVICE_SM_LIMIT"] = std::to_string(cores);
  }
}

void Daemon::Launch(const std::string& key) {
  runtime::LaunchSpec spec;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const core::WorkloadInfo* info = engine_.Find(key);
    auto it = wl_.find(key);
    if (info == nullptr || it == wl_.end() || info->state != core::WorkloadState::kAdmitted) return;
    Wl& w = it->second;
    if (w.running) return;
    bool reuse = !w.pods.empty();  // a retry keeps its GPUs
    std::vector<Pod> pods;
    spec.key = key;
    spec.log_dir = log_dir_;
    spec.grace_ms = w.spec.termination_grace.value_or(options_.default_grace_ms);
    size_t pi = 0;
    // With the host as a placement node, each pod starts where the engine
    // placed it: the k-th placement of a pod set is its pod k.
    std::map<std::string, std::vector<const core::PodPlacementInfo*>> placed;
    for (const core::PodPlacementInfo& pp : info->placements) placed[pp.pod_set].push_back(&pp);
    for (const auto& a : info->admission) {
      const core::PodSetSpec* ps = nullptr;
      for (const auto& p : w.spec.pod_sets) {
        if (p.name == a.name) ps = &p;
      }
      if (ps == nullptr || ps->command.empty()) continue;
      for (int32_t i = 0; i < a.count; ++i) {
        runtime::PodLaunch pl;
        pl.pod = ps->name + "-" + std::to_string(i);
        pl.command = ps->command;
        pl.env = ps->env;
        pl.env["ARTEL_WORKLOAD"] = key;
        pl.env["ARTEL_NAMESPACE"] = w.spec.ns;
        pl.env["ARTEL_POD"] = pl.pod;
        pl.env["ARTEL_CLUSTER_QUEUE"] = info->cluster_queue;
        pl.env["ARTEL_RETRY"] = std::to_string(w.retries);
        pl.working_dir = ps->working_dir;
        Pod pod;
        const auto pit = placed.find(ps->name);
        const core::PodPlacementInfo* pp =
            pit != placed.end() && static_cast<size_t>(i) < pit->second.size() ? pit->second[i] : nullptr;
        if (pp != nullptr) {
          ApplyPlacementLocked(*pp, PodKey(key, pl.pod), &pl, &pod);
        } else {
          if (reuse && pi < w.pods.size()) {
            pod.gpus = w.pods[pi].gpus;
          } else {
            pod.gpus = AssignGpusLocked(static_cast<int>(GpusPerPod(*ps)), PodKey(key, pl.pod));
          }
          for (int g : pod.gpus) {
            if (g >= 0 && g < static_cast<int>(gpus_.size())) pl.visible_devices.push_back(gpus_[g].uuid);
          }
        }
        ++pi;
        if (auto m = ps->annotations.find("artel.dev/gpu-memory");
            m != ps->annotations.end() && !pl.slice_env.count("ARTEL_GPU_MEMORY_LIMIT")) {
          auto q = core::ParseQuantity(m->second);
          if (q.ok()) pl.slice_env["ARTEL_GPU_MEMORY_LIMIT"] = std::to_string(*q / 1000);
        }
        if (auto c = ps->requests.find("cpu"); c != ps->requests.end()) pl.cpu_millis = c->second;
        if (auto m = ps->requests.find("memory"); m != ps->requests.end()) pl.memory_bytes = m->second / 1000;
        pod.rp.pod = pl.pod;
        pods.push_back(std::move(pod));
        spec.pods.push_back(std::move(pl));
      }
    }
    if (spec.pods.empty()) return;
    w.pods = std::move(pods);
    w.running = true;  // claimed; Start below
  }
  int64_t now = WallMs();
  auto started = runtime_->Start(spec, now);
  // Failpoint for the crash tests (docs/daemon.md): die with the pods
  // running and their start not journaled.
  if (started.ok() && Failpoint("start-before-journal")) {
    log_->Warn("failpoint start-before-journal: exiting", {{"workload", key}});
    std::_Exit(86);
  }
  std::shared_lock<std::shared_mutex> jl(journal_mu_);
  std::vector<store::Record> recs;
  bool stop = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = wl_.find(key);
    if (it == wl_.end()) return;
    Wl& w = it->second;
    if (!started.ok()) {
      w.running = false;
      w.message = "start failed: " + started.status().message();
      log_->Warn("workload failed to start", {{"workload", key}, {"error", started.status().message()}});
      const core::WorkloadInfo* info = engine_.Find(key);
      if (info && info->state == core::WorkloadState::kAdmitted) {
        ReleaseGpusLocked(w);
        FinishLocked(key, w, NowLocked(), 127, "Failed", &recs);
      }
    } else {
      for (auto& pod : w.pods) {
        for (const auto& rp : *started) {
          if (rp.pod == pod.rp.pod) pod.rp = rp;
        }
        pod.exited = false;
      }
      w.started_ms = now;
      recs.push_back(StartedRecord(key, w, false));
      EmitLocked("Started", key, {{"pods", static_cast<int>(w.pods.size())}});
      log_->Info("workload started", {{"workload", key}, {"pods", std::to_string(w.pods.size())}});
      const core::WorkloadInfo* info = engine_.Find(key);
      // Cancelled or evicted while starting: stop what just started.
      stop = info == nullptr || info->state != core::WorkloadState::kAdmitted;
    }
  }
  (void)AppendAndApply(std::move(recs));
  if (stop) runtime_->Stop(key, WallMs());
}

store::Record Daemon::StartedRecord(const std::string& key, const Wl& w, bool recovered) {
  Json pods = Json::array();
  for (const Pod& pod : w.pods) {
    pods.push_back({{"pod", pod.rp.pod},
                    {"pid", pod.rp.pid},
                    {"pgid", pod.rp.pgid},
                    {"exitFile", pod.rp.exit_file},
                    {"gpus", pod.gpus}});
  }
  Json payload = {{"pods", pods}, {"retries", w.retries}};
  if (recovered) payload["recovered"] = true;
  store::Record r;
  r.type = store::RecordType::kWorkloadStarted;
  r.time_ms = WallMs();
  r.key = key;
  r.payload = payload.dump();
  return r;
}

bool Daemon::Failpoint(const char* name) {
  static const std::string armed = [] {
    const char* v = std::getenv("ARTEL_FAILPOINT");
    return std::string(v == nullptr ? "" : v);
  }();
  return !armed.empty() && armed == name;
}

// ---------------------------------------------------------------------------
// Events

void Daemon::EmitLocked(const std::string& type, const std::string& key, Json extra) {
  Json body = std::move(extra);
  body["type"] = type;
  body["time"] = WallMs();
  if (!key.empty()) body["workload"] = key;
  std::lock_guard<std::mutex> l(ev_mu_);
  body["seq"] = ++event_seq_;
  events_.push_back({event_seq_, key.empty() ? "" : Ns(key), std::move(body)});
  while (events_.size() > 8192) events_.pop_front();
  ev_cv_.notify_all();
}

uint64_t Daemon::LatestEventSeq() const {
  std::lock_guard<std::mutex> l(ev_mu_);
  return event_seq_;
}

std::vector<Json> Daemon::EventsAfter(uint64_t after, int64_t wait_ms,
                                      const std::optional<std::set<std::string>>& ns, uint64_t* next) const {
  std::unique_lock<std::mutex> l(ev_mu_);
  ev_cv_.wait_for(l, std::chrono::milliseconds(wait_ms),
                  [&] { return event_seq_ > after || shut_down_.load(); });
  std::vector<Json> out;
  for (const auto& e : events_) {
    if (e.seq <= after) continue;
    if (ns && !e.ns.empty() && !ns->count(e.ns)) continue;
    if (ns && e.ns.empty() && e.body.value("type", "") != "ConfigApplied") continue;
    out.push_back(e.body);
  }
  *next = std::max(after, event_seq_);
  return out;
}

// ---------------------------------------------------------------------------
// Queries

std::string Daemon::PhaseLocked(const std::string& key, const Wl& w) const {
  if (!w.terminal.empty()) return w.terminal;
  if (w.deferred) return "Evicting";
  const core::WorkloadInfo* info = engine_.Find(key);
  if (info == nullptr) return "Unknown";
  switch (info->state) {
    case core::WorkloadState::kPending: return "Pending";
    case core::WorkloadState::kEvicting: return "Evicting";
    case core::WorkloadState::kFinished: return "Succeeded";
    case core::WorkloadState::kAdmitted: return w.running ? "Running" : "Admitted";
  }
  return "Unknown";
}

Json Daemon::WorkloadJsonLocked(const std::string& key, const Wl& w) const {
  Json j = WorkloadSpecToJson(w.spec);
  j["metadata"]["creationTimestamp"] = w.submitted_ms;
  Json st = {{"phase", PhaseLocked(key, w)}};
  const core::WorkloadInfo* info = engine_.Find(key);
  if (info) {
    st["clusterQueue"] = info->cluster_queue;
    st["priority"] = info->priority;
    st["evictions"] = info->evictions;
    if (info->state == core::WorkloadState::kAdmitted || info->state == core::WorkloadState::kEvicting) {
      st["admission"] = AdmissionJson(*info, w.admitted_ms);
    }
    if (info->state == core::WorkloadState::kPending) {
      st["pending"] = {{"reason", core::PendingReasonKindName(info->pending.kind)},
                       {"message", info->pending.message}};
    }
    if (info->last_eviction) {
      const auto& e = *info->last_eviction;
      st["lastEviction"] = {{"reason", core::EvictionReasonName(e.reason)},
                            {"preemptor", e.preemptor},
                            {"message", e.message},
                            {"time", e.at}};
    }
  }
  if (info == nullptr && !w.cluster_queue.empty()) st["clusterQueue"] = w.cluster_queue;
  if (w.admitted_ms >= 0) st["admittedAt"] = w.admitted_ms;
  if (w.started_ms >= 0) st["startedAt"] = w.started_ms;
  if (w.finished_ms >= 0) st["finishedAt"] = w.finished_ms;
  if (w.exit_code) st["exitCode"] = *w.exit_code;
  if (w.retries) st["retries"] = w.retries;
  if (!w.message.empty()) st["message"] = w.message;
  if (!w.pods.empty()) {
    Json pods = Json::array();
    for (const auto& p : w.pods) {
      Json gj = Json::array();
      for (int g : p.gpus) {
        if (g >= 0 && g < static_cast<int>(gpus_.size())) gj.push_back(gpus_[g].uuid);
      }
      Json pj = {{"name", p.rp.pod}, {"pid", p.rp.pid}, {"gpus", gj}, {"running", w.running && !p.exited}};
      if (p.exited) pj["exitCode"] = p.exit.signaled ? 128 + p.exit.signal : p.exit.exit_code;
      pods.push_back(pj);
    }
    st["pods"] = pods;
  }
  j["status"] = st;
  return j;
}

Result<Json> Daemon::GetWorkload(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = wl_.find(key);
  if (it == wl_.end()) return NotFound("workload " + key + " not found");
  return WorkloadJsonLocked(key, it->second);
}

Json Daemon::ListWorkloads(const ListFilter& f) const {
  std::lock_guard<std::mutex> lock(mu_);
  Json items = Json::array();
  for (const auto& [key, w] : wl_) {
    if (f.namespaces && !f.namespaces->count(w.spec.ns)) continue;
    bool match = true;
    for (const auto& [k, v] : f.labels) {
      auto it = w.spec.labels.find(k);
      if (it == w.spec.labels.end() || (!v.empty() && it->second != v)) match = false;
    }
    if (!match) continue;
    for (const auto& [k, v] : f.fields) {
      if (k == "status.phase" && PhaseLocked(key, w) != v) match = false;
      if (k == "spec.queueName" && w.spec.queue != v) match = false;
      if (k == "metadata.name" && w.spec.name != v) match = false;
      if (k == "metadata.namespace" && w.spec.ns != v) match = false;
      if (k == "status.clusterQueue") {
        const core::WorkloadInfo* info = engine_.Find(key);
        if (!info || info->cluster_queue != v) match = false;
      }
    }
    if (!match) continue;
    items.push_back(WorkloadJsonLocked(key, w));
  }
  return Json{{"kind", "WorkloadList"}, {"items", items}};
}

Result<Json> Daemon::Why(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = wl_.find(key);
  if (it == wl_.end()) return NotFound("workload " + key + " not found");
  Json j = {{"workload", key}, {"phase", PhaseLocked(key, it->second)}};
  if (engine_.Find(key) == nullptr) {
    j["reason"] = "None";
    j["message"] = "the workload is " + PhaseLocked(key, it->second) + "; it is not waiting";
    return j;
  }
  auto r = engine_.Why(key);
  if (!r.ok()) return r.status();
  const core::PendingReason& p = *r;
  j["reason"] = core::PendingReasonKindName(p.kind);
  j["message"] = p.message;
  if (p.kind == core::PendingReason::Kind::kNone) {
    const core::WorkloadInfo* info = engine_.Find(key);
    j["message"] = "admitted to ClusterQueue " + info->cluster_queue;
    return j;
  }
  if (!p.cluster_queue.empty()) j["clusterQueue"] = p.cluster_queue;
  if (!p.pod_set.empty()) j["podSet"] = p.pod_set;
  if (!p.flavor.empty()) j["flavor"] = p.flavor;
  if (!p.resource.empty()) {
    j["resource"] = p.resource;
    j["requested"] = core::FormatQuantity(p.requested);
    j["available"] = core::FormatQuantity(p.available);
    j["missing"] = core::FormatQuantity(p.missing);
  }
  if (!p.level.empty()) j["level"] = p.level;
  if (!p.would_preempt.empty()) j["wouldPreempt"] = p.would_preempt;
  return j;
}

namespace {
Json UsageEntry(const core::QuotaUsage& u) {
  Json e = {{"flavor", u.flavor},
            {"resource", u.resource},
            {"nominal", core::FormatQuantity(u.nominal)},
            {"subtreeQuota", core::FormatQuantity(u.subtree_quota)},
            {"usage", core::FormatQuantity(u.usage)},
            {"borrowed", core::FormatQuantity(u.borrowed)}};
  if (u.borrowing_limit) e["borrowingLimit"] = core::FormatQuantity(*u.borrowing_limit);
  if (u.lending_limit) e["lendingLimit"] = core::FormatQuantity(*u.lending_limit);
  return e;
}
}  // namespace

Json Daemon::ClusterQueues() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, std::pair<int, int>> counts;  // pending, admitted
  for (const core::WorkloadInfo* w : engine_.Workloads()) {
    if (w->cluster_queue.empty()) continue;
    if (w->state == core::WorkloadState::kPending) ++counts[w->cluster_queue].first;
    if (w->state == core::WorkloadState::kAdmitted || w->state == core::WorkloadState::kEvicting) {
      ++counts[w->cluster_queue].second;
    }
  }
  std::map<std::string, Json> res;
  for (const auto& u : engine_.Usage()) {
    if (u.is_cohort) continue;
    res[u.node].push_back(UsageEntry(u));
  }
  Json items = Json::array();
  for (const auto& cq : engine_.config().cluster_queues) {
    items.push_back({{"name", cq.name},
                     {"cohort", cq.cohort},
                     {"pendingWorkloads", counts[cq.name].first},
                     {"admittedWorkloads", counts[cq.name].second},
                     {"stopPolicy", cq.stop_policy == core::StopPolicy::kNone   ? "None"
                                    : cq.stop_policy == core::StopPolicy::kHold ? "Hold"
                                                                                : "HoldAndDrain"},
                     {"resources", res.count(cq.name) ? res[cq.name] : Json::array()}});
  }
  return Json{{"kind", "ClusterQueueList"}, {"items", items}};
}

Json Daemon::LocalQueues(const std::optional<std::set<std::string>>& namespaces) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, std::pair<int, int>> counts;
  for (const core::WorkloadInfo* w : engine_.Workloads()) {
    std::string k = w->spec.ns + "/" + w->spec.queue;
    if (w->state == core::WorkloadState::kPending) ++counts[k].first;
    if (w->state == core::WorkloadState::kAdmitted || w->state == core::WorkloadState::kEvicting)
      ++counts[k].second;
  }
  Json items = Json::array();
  for (const auto& lq : engine_.config().local_queues) {
    if (namespaces && !namespaces->count(lq.ns)) continue;
    std::string k = lq.ns + "/" + lq.name;
    items.push_back({{"namespace", lq.ns},
                     {"name", lq.name},
                     {"clusterQueue", lq.cluster_queue},
                     {"pendingWorkloads", counts[k].first},
                     {"admittedWorkloads", counts[k].second}});
  }
  return Json{{"kind", "LocalQueueList"}, {"items", items}};
}

Json Daemon::Cohorts() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, Json> res;
  for (const auto& u : engine_.Usage()) {
    if (u.is_cohort) res[u.node].push_back(UsageEntry(u));
  }
  std::map<std::string, std::string> parents;
  for (const auto& c : engine_.config().cohorts) parents[c.name] = c.parent;
  for (const auto& cq : engine_.config().cluster_queues) {
    if (!cq.cohort.empty() && !parents.count(cq.cohort)) parents[cq.cohort] = "";
  }
  for (const auto& [name, j] : res) parents.emplace(name, "");
  Json items = Json::array();
  for (const auto& [name, parent] : parents) {
    Json members = Json::array();
    for (const auto& cq : engine_.config().cluster_queues) {
      if (cq.cohort == name) members.push_back(cq.name);
    }
    for (const auto& [n2, p2] : parents) {
      if (p2 == name) members.push_back(n2);
    }
    items.push_back({{"name", name},
                     {"parent", parent},
                     {"members", members},
                     {"resources", res.count(name) ? res[name] : Json::array()}});
  }
  return Json{{"kind", "CohortList"}, {"items", items}};
}

Json Daemon::Nodes() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, int> models;
  int used = 0;
  for (size_t i = 0; i < gpus_.size(); ++i) {
    ++models[gpus_[i].model];
    if (!gpu_owner_[i].empty()) ++used;
  }
  Json n = {{"name", options_.hostname}, {"gpuMode", gpu_mode_},
            {"gpus", gpus_.size()},      {"gpusInUse", used},
            {"models", models},          {"cgroups", runtime_ ? runtime_->cgroup_status() : ""},
            {"ready", ready_.load()}};
  return Json{{"kind", "NodeList"}, {"items", Json::array({n})}};
}

namespace {
// Fake telemetry that looks like a busy GPU: stable per pod, drifting by
// the minute.
int FakeUtil(const std::string& owner, int64_t now_ms) {
  uint64_t h = std::hash<std::string>{}(owner) ^ static_cast<uint64_t>(now_ms / 60000);
  return 55 + static_cast<int>(h % 41);
}
}  // namespace

Json Daemon::Gpus(const Principal& who) const {
  std::lock_guard<std::mutex> lock(mu_);
  Json items = Json::array();
  int64_t now = WallMs();
  for (size_t i = 0; i < gpus_.size(); ++i) {
    const auto& g = gpus_[i];
    const std::string& owner = gpu_owner_[i];
    Json j = {{"index", g.index},
              {"uuid", g.uuid},
              {"model", g.model},
              {"name", g.name},
              {"memoryBytes", g.memory_bytes},
              {"migEnabled", g.mig_enabled},
              {"healthy", g.healthy},
              {"node", options_.hostname}};
    int util = g.utilization_pct;
    int64_t mem = g.memory_used_bytes;
    if (gpu_mode_ == "fake") {
      util = owner.empty() ? 0 : FakeUtil(owner, now);
      mem = owner.empty() ? 0 : g.memory_bytes * (30 + FakeUtil(owner, 0) % 50) / 100;
    }
    j["utilizationPercent"] = util;
    j["memoryUsedBytes"] = mem;
    if (!owner.empty()) {
      std::string ns = Ns(owner);
      if (who.CanUseNamespace(ns)) {
        size_t slash = owner.rfind('/');
        j["workload"] = owner.substr(0, slash);
        j["pod"] = owner.substr(slash + 1);
      } else {
        j["workload"] = "(other tenant)";
      }
    }
    items.push_back(j);
  }
  return Json{{"kind", "GpuList"}, {"mode", gpu_mode_}, {"items", items}};
}

Json Daemon::Config(const Principal& who) const {
  std::lock_guard<std::mutex> lock(mu_);
  Json objs = Json::array();
  std::string text;
  for (const auto& [k, t] : docs_) {
    auto first = k.find('/');
    auto second = k.find('/', first + 1);
    std::string ns = k.substr(first + 1, second - first - 1);
    if (!ns.empty() && !who.CanUseNamespace(ns)) continue;
    objs.push_back({{"kind", k.substr(0, first)}, {"namespace", ns}, {"name", k.substr(second + 1)}});
    if (who.is_admin()) text += "---\n" + t;
  }
  Json j = {{"objects", objs}};
  if (who.is_admin()) j["manifests"] = text;
  return j;
}

Result<std::string> Daemon::Logs(const std::string& key, const std::string& pod, int64_t tail_bytes) const {
  std::vector<std::string> pods;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = wl_.find(key);
    if (it == wl_.end()) return NotFound("workload " + key + " not found");
    for (const auto& p : it->second.pods) pods.push_back(p.rp.pod);
  }
  fs::path dir = fs::path(log_dir_) / key;
  std::error_code ec;
  if (pods.empty() && fs::is_directory(dir, ec)) {
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      if (e.path().extension() == ".log") pods.push_back(e.path().stem().string());
    }
    std::sort(pods.begin(), pods.end());
  }
  if (!pod.empty()) {
    if (std::find(pods.begin(), pods.end(), pod) == pods.end())
      return NotFound("pod " + pod + " not found in " + key);
    pods = {pod};
  }
  std::string out;
  for (const auto& p : pods) {
    std::ifstream in(dir / (p + ".log"), std::ios::binary);
    if (!in) continue;
    in.seekg(0, std::ios::end);
    int64_t size = in.tellg();
    int64_t from = tail_bytes > 0 && size > tail_bytes ? size - tail_bytes : 0;
    in.seekg(from);
    std::string body((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (pods.size() > 1) out += "==> " + p + " <==\n";
    out += body;
  }
  return out;
}

size_t Daemon::RunningCount() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const auto& [k, w] : wl_) n += w.running ? 1 : 0;
  return n;
}

std::string Daemon::Metrics() const {
  PromWriter pw;
  std::lock_guard<std::mutex> lock(mu_);
  const core::Config& cfg = engine_.config();
  std::map<std::string, std::string> cohort_of;
  for (const auto& cq : cfg.cluster_queues) cohort_of[cq.name] = cq.cohort;

  std::map<std::string, std::pair<int, int>> pending;  // active, inadmissible
  std::map<std::string, int> active;
  for (const core::WorkloadInfo* w : engine_.Workloads()) {
    if (w->cluster_queue.empty()) continue;
    if (w->state == core::WorkloadState::kPending) {
      bool act = w->pending.kind == core::PendingReason::Kind::kNotYetTried ||
                 w->pending.kind == core::PendingReason::Kind::kWaitingForEvictions;
      (act ? pending[w->cluster_queue].first : pending[w->cluster_queue].second)++;
    } else if (w->state == core::WorkloadState::kAdmitted || w->state == core::WorkloadState::kEvicting) {
      ++active[w->cluster_queue];
    }
  }
  pw.Family("kueue_pending_workloads", "gauge",
            "Pending workloads per ClusterQueue and status (active|inadmissible).");
  for (const auto& cq : cfg.cluster_queues) {
    pw.Sample("kueue_pending_workloads", {{"cluster_queue", cq.name}, {"status", "active"}},
              pending[cq.name].first);
    pw.Sample("kueue_pending_workloads", {{"cluster_queue", cq.name}, {"status", "inadmissible"}},
              pending[cq.name].second);
  }
  pw.Family("kueue_admitted_active_workloads", "gauge", "Admitted workloads that are active (not finished).");
  for (const auto& cq : cfg.cluster_queues)
    pw.Sample("kueue_admitted_active_workloads", {{"cluster_queue", cq.name}}, active[cq.name]);
  pw.Family("kueue_admitted_workloads_total", "counter", "Workloads admitted since arteld started.");
  for (const auto& cq : cfg.cluster_queues) {
    pw.Sample("kueue_admitted_workloads_total", {{"cluster_queue", cq.name}},
              admitted_total_.count(cq.name) ? admitted_total_.at(cq.name) : 0);
  }
  pw.Family("kueue_finished_workloads_total", "counter", "Workloads that finished (Succeeded or Failed).");
  for (const auto& cq : cfg.cluster_queues) {
    pw.Sample("kueue_finished_workloads_total", {{"cluster_queue", cq.name}},
              finished_total_.count(cq.name) ? finished_total_.at(cq.name) : 0);
  }
  pw.Family("kueue_evicted_workloads_total", "counter", "Evictions per ClusterQueue and reason.");
  for (const auto& [k, v] : evicted_total_) {
    pw.Sample("kueue_evicted_workloads_total", {{"cluster_queue", k.first}, {"reason", k.second}}, v);
  }
  pw.Family("kueue_preempted_workloads_total", "counter",
            "Preemptions per preempting ClusterQueue and reason.");
  for (const auto& [k, v] : preempted_total_) {
    pw.Sample("kueue_preempted_workloads_total",
              {{"preempting_cluster_queue", k.first}, {"reason", k.second}}, v);
  }
  pw.Family("kueue_admission_wait_time_seconds", "histogram",
            "Time from creation (or requeue) to admission.");
  for (const auto& [cq, h] : wait_hist_)
    pw.WriteHistogram("kueue_admission_wait_time_seconds", {{"cluster_queue", cq}}, h);
  pw.Family("kueue_cluster_queue_status", "gauge",
            "ClusterQueue status (pending|active|terminating); 1 for the current one.");
  for (const auto& cq : cfg.cluster_queues) {
    bool stopped = cq.stop_policy != core::StopPolicy::kNone;
    pw.Sample("kueue_cluster_queue_status", {{"cluster_queue", cq.name}, {"status", "pending"}},
              stopped ? 1 : 0);
    pw.Sample("kueue_cluster_queue_status", {{"cluster_queue", cq.name}, {"status", "active"}},
              stopped ? 0 : 1);
    pw.Sample("kueue_cluster_queue_status", {{"cluster_queue", cq.name}, {"status", "terminating"}}, 0);
  }

  std::vector<core::QuotaUsage> usage = engine_.Usage();
  auto quota_family = [&](const std::string& name, const std::string& help, auto getter) {
    pw.Family(name, "gauge", help);
    for (const auto& u : usage) {
      if (u.is_cohort) continue;
      std::optional<core::Amount> v = getter(u);
      if (!v) continue;
      pw.Sample(name,
                {{"cohort", cohort_of[u.node]},
                 {"cluster_queue", u.node},
                 {"flavor", u.flavor},
                 {"resource", u.resource}},
                Units(*v));
    }
  };
  quota_family("kueue_cluster_queue_resource_usage", "Admitted usage per ClusterQueue, flavor and resource.",
               [](const core::QuotaUsage& u) { return std::optional<core::Amount>(u.usage); });
  quota_family("kueue_cluster_queue_nominal_quota", "nominalQuota per ClusterQueue, flavor and resource.",
               [](const core::QuotaUsage& u) { return std::optional<core::Amount>(u.nominal); });
  quota_family("kueue_cluster_queue_borrowing_limit", "borrowingLimit per ClusterQueue, flavor and resource.",
               [](const core::QuotaUsage& u) { return u.borrowing_limit; });
  quota_family("kueue_cluster_queue_lending_limit", "lendingLimit per ClusterQueue, flavor and resource.",
               [](const core::QuotaUsage& u) { return u.lending_limit; });
  pw.Family("kueue_cluster_queue_weighted_share", "gauge",
            "Dominant resource share (x1000) of a ClusterQueue.");
  for (const auto& cq : cfg.cluster_queues) {
    pw.Sample("kueue_cluster_queue_weighted_share", {{"cluster_queue", cq.name}},
              static_cast<double>(engine_.DominantResourceShare(cq.name)));
  }

  // Per-team GPU view: every quota-tree node, summed over flavors.
  struct Team {
    bool cohort = false;
    core::Amount guaranteed = 0, used = 0, borrowed = 0;
  };
  std::map<std::string, Team> teams;
  for (const auto& u : usage) {
    if (u.resource != "nvidia.com/gpu") continue;
    Team& t = teams[u.node];
    t.cohort = u.is_cohort;
    t.guaranteed += u.subtree_quota;
    t.used += u.usage;
    t.borrowed += u.borrowed;
  }
  pw.Family("artel_team_guaranteed_gpus", "gauge",
            "GPUs guaranteed to a quota-tree node (subtree quota, all flavors).");
  pw.Family("artel_team_used_gpus", "gauge", "GPUs held by admitted workloads under a quota-tree node.");
  pw.Family("artel_team_borrowed_gpus", "gauge", "GPUs a quota-tree node uses beyond its guarantee.");
  for (const auto& [name, t] : teams) {
    Labels l = {{"team", name}, {"kind", t.cohort ? "cohort" : "cluster_queue"}};
    pw.Sample("artel_team_guaranteed_gpus", l, Units(t.guaranteed));
    pw.Sample("artel_team_used_gpus", l, Units(t.used));
    pw.Sample("artel_team_borrowed_gpus", l, Units(t.borrowed));
  }
  pw.Family("artel_reclaim_latency_seconds", "histogram",
            "From an owner's submission to its admission, for admissions that needed reclaim.");
  for (const auto& [cq, h] : reclaim_hist_)
    pw.WriteHistogram("artel_reclaim_latency_seconds", {{"cluster_queue", cq}}, h);
  pw.Family("artel_scheduler_cycle_duration_seconds", "histogram",
            "Duration of one scheduling pass (Engine::Schedule).");
  pw.WriteHistogram("artel_scheduler_cycle_duration_seconds", {}, cycle_hist_);
  pw.Family("artel_scheduler_cycles_total", "counter", "Scheduling passes run.");
  pw.Sample("artel_scheduler_cycles_total", {}, static_cast<double>(cycles_total_));

  // DCGM-exporter-style GPU telemetry, by pod. Each family's samples are
  // written together, as the text format requires.
  int64_t now = WallMs();
  struct GpuSample {
    Labels labels;
    int util;
    int64_t mem;
  };
  std::vector<GpuSample> samples;
  for (size_t i = 0; i < gpus_.size(); ++i) {
    const auto& g = gpus_[i];
    const std::string& owner = gpu_owner_[i];
    std::string ns, wl, pod;
    if (!owner.empty()) {
      size_t slash = owner.rfind('/');
      wl = owner.substr(0, slash);
      pod = owner.substr(slash + 1);
      ns = Ns(owner);
    }
    Labels l = {{"gpu", std::to_string(g.index)},
                {"UUID", g.uuid},
                {"modelName", g.model},
                {"Hostname", options_.hostname},
                {"namespace", ns},
                {"workload", wl},
                {"pod", pod},
                {"mode", gpu_mode_}};
    int util = g.utilization_pct;
    int64_t mem = g.memory_used_bytes;
    if (gpu_mode_ == "fake") {
      util = owner.empty() ? 0 : FakeUtil(owner, now);
      mem = owner.empty() ? 0 : g.memory_bytes * (30 + FakeUtil(owner, 0) % 50) / 100;
    }
    samples.push_back({l, util, mem});
  }
  pw.Family("artel_gpu_utilization_percent", "gauge",
            "GPU utilization (DCGM_FI_DEV_GPU_UTIL); synthetic in fake mode.");
  for (size_t i = 0; i < gpus_.size(); ++i) {
    pw.Sample("artel_gpu_utilization_percent", samples[i].labels, samples[i].util);
    for (const auto& m : gpus_[i].mig_instances) {
      Labels ml = samples[i].labels;
      ml.emplace_back("GPU_I_PROFILE", m.profile);
      ml.emplace_back("GPU_I_ID", std::to_string(m.start_slot));
      pw.Sample("artel_gpu_utilization_percent", ml, gpu_owner_[i].empty() ? 0 : samples[i].util);
    }
  }
  pw.Family("artel_gpu_memory_used_bytes", "gauge", "GPU framebuffer used (DCGM_FI_DEV_FB_USED).");
  for (const auto& smp : samples) pw.Sample("artel_gpu_memory_used_bytes", smp.labels, static_cast<double>(smp.mem));
  pw.Family("artel_gpu_memory_total_bytes", "gauge", "GPU framebuffer size.");
  for (size_t i = 0; i < gpus_.size(); ++i)
    pw.Sample("artel_gpu_memory_total_bytes", samples[i].labels, static_cast<double>(gpus_[i].memory_bytes));
  pw.Family("artel_gpu_healthy", "gauge", "1 when the GPU reports healthy (NVML), 0 otherwise.");
  for (const auto& g : gpus_) {
    pw.Sample("artel_gpu_healthy",
              {{"gpu", std::to_string(g.index)}, {"UUID", g.uuid}, {"modelName", g.model}, {"Hostname", options_.hostname}},
              g.healthy ? 1 : 0);
  }
  pw.Family("artel_node_ready", "gauge", "1 when the node's runtime and GPU discovery work (standalone: this host).");
  pw.Sample("artel_node_ready", {{"node", options_.hostname}}, 1);
  pw.Family("artel_workloads", "gauge", "Workloads known to arteld by phase.");
  std::map<std::string, int> phases;
  for (const auto& [k, w] : wl_) ++phases[PhaseLocked(k, w)];
  for (const auto& [p, n] : phases) pw.Sample("artel_workloads", {{"phase", p}}, n);
  pw.Family("artel_journal_last_seq", "gauge", "Sequence number of the last durable journal record.");
  pw.Sample("artel_journal_last_seq", {}, static_cast<double>(store_->last_seq()));
  return pw.text();
}

}  // namespace artel::server
