#include "server/daemon.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>

#include "api/manifest_files.h"
#include "core/quantity.h"
#include "core/resource_names.h"
#include "manifest/manifest.h"

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

int64_t GpusPerPod(const core::PodSetSpec& ps) {
  int64_t n = 0;
  for (const auto& [res, amt] : ps.requests) {
    if (core::IsDeviceResource(res)) n += (amt + 999) / 1000;
  }
  return n;
}

// The placement of pod `pod` ("<pod set>-<k>": the k-th placement of its
// pod set, as Launch assigns them); null without one.
const core::PodPlacementInfo* PodPlacement(const core::WorkloadInfo& info, const std::string& pod) {
  size_t dash = pod.rfind('-');
  if (dash == std::string::npos) return nullptr;
  const std::string set = pod.substr(0, dash);
  int k = std::atoi(pod.c_str() + dash + 1);
  for (const core::PodPlacementInfo& pp : info.placements) {
    if (pp.pod_set != set) continue;
    if (k-- == 0) return &pp;
  }
  return nullptr;
}

// The compute slices (of 7) a MIG profile such as "3g.40gb" holds.
int MigComputeSlices(const std::string& profile) {
  int n = std::atoi(profile.c_str());
  return n > 0 ? n : 1;
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

std::string PodKey(const std::string& key, const std::string& pod) { return key + "/" + pod; }

// libartel-cuda.so for pods on memory shares: the flag's path, else the
// build tree's (bin/arteld, lib/libartel-cuda.so) or one next to arteld.
// Pods of other users must be able to read it: a path they cannot reach
// is preloaded by nobody (ld.so skips it), so that is logged.
std::string FindCudaShim(const std::string& flag, Logger* log) {
  if (flag == "none") return "";
  std::string path = flag;
  if (path.empty()) {
    std::error_code ec;
    const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec).parent_path();
    for (const std::filesystem::path& p : {exe / "../lib/libartel-cuda.so", exe / "libartel-cuda.so"}) {
      if (!ec && std::filesystem::is_regular_file(p, ec)) {
        path = std::filesystem::weakly_canonical(p, ec).string();
        break;
      }
    }
    if (path.empty()) {
      log->Warn("libartel-cuda.so not found: GPU memory shares are not enforced (--cuda-shim)", {});
      return "";
    }
  }
  struct stat st;
  if (path.empty() || path[0] != '/' || stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    log->Warn("--cuda-shim is not an absolute path to a file: GPU memory shares are not enforced",
              {{"path", path}});
    return "";
  }
  bool others_can_read = (st.st_mode & S_IROTH) != 0;
  for (std::filesystem::path d = std::filesystem::path(path).parent_path();
       others_can_read && d != d.root_path(); d = d.parent_path()) {
    others_can_read = stat(d.c_str(), &st) == 0 && (st.st_mode & S_IXOTH) != 0;
  }
  log->Info("libartel-cuda", {{"path", path}, {"other_users_can_read", others_can_read ? "true" : "false"}});
  return path;
}

}  // namespace

Daemon::Daemon(const DaemonOptions& options, Logger* log)
    : options_(options),
      log_(log),
      loop_(options.engine,
            loop::LoopOptions{options.tick_ms, options.schedule_interval_ms, options.debounce_ms}, log,
            WallMs),
      engine_(loop_.engine()) {
  loop_.SetBackend(this);
}

Daemon::~Daemon() { Shutdown(); }

Result<std::unique_ptr<Daemon>> Daemon::Open(const DaemonOptions& options, Logger* log) {
  std::unique_ptr<Daemon> d(new Daemon(options, log));
  if (Status s = d->Init(); !s.ok()) return s;
  return d;
}

// Before the loop or any request thread starts: nothing is shared yet.
Status Daemon::Init() NO_THREAD_SAFETY_ANALYSIS {
  if (options_.data_dir.empty()) return InvalidArgument("--data-dir is required");
  if (Status s = InitDirectories(); !s.ok()) return s;
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
  // The host's GPUs are node pools of the placement library (one placement
  // node "<host>/<pool>" per pool, labelled like GPU feature discovery plus
  // the config's labels and taints; server/inventory.h): pods are admitted
  // only when their GPUs (whole, MIG instance or memory share) are free in a
  // pool whose labels carry their flavor's nodeLabels and nodeSelector, and
  // start on the GPUs it chose. Without GPUs, admission is quota-only.
  gpu_node_.assign(gpus_.size(), "");
  if (!gpus_.empty()) {
    std::vector<std::string> notes;
    // Creating or destroying MIG instances is not implemented for real
    // GPUs: offering one would admit pods onto instances nobody makes.
    for (const runtime::GpuInfo& g : gpus_) {
      if (g.mig_enabled && gpu_mode_ != "fake") {
        log_->Warn("MIG-mode GPU not offered (MIG reconfiguration is not implemented)",
                   {{"gpu", std::to_string(g.index)}, {"uuid", g.uuid}});
      }
    }
    auto pools = BuildHostPools(options_.hostname, gpus_, options_.inventory, gpu_mode_ == "fake", &notes);
    if (!pools.ok()) return pools.status();
    pools_ = std::move(pools).value();
    for (const std::string& n : notes) log_->Warn("node pool", {{"detail", n}});
    std::vector<core::placement::NodeSpec> nodes;
    for (const HostPool& p : pools_) {
      for (int g : p.gpus) gpu_node_[static_cast<size_t>(g)] = p.node.name;
      std::string labels;
      for (const auto& [k, v] : p.node.labels) labels += (labels.empty() ? "" : ",") + k + "=" + v;
      log_->Info("node pool",
                 {{"node", p.node.name}, {"gpus", std::to_string(p.gpus.size())}, {"labels", labels}});
      nodes.push_back(p.node);
    }
    if (Status s = engine_.SetNodes(std::move(nodes)); !s.ok()) return s;
  }

  runtime::LocalRuntime::Options ro;
  ro.cgroup_root = options_.cgroup_root;
  ro.cuda_shim = FindCudaShim(options_.cuda_shim, log_);
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

bool Daemon::PlacementMatchesPoolsLocked(const journal::JournaledPlacement& j,
                                         core::placement::Placement* p) const {
  // Host GPU index -> (pool, index in the pool's node).
  std::vector<std::pair<int32_t, int32_t>> where(gpus_.size(), {-1, -1});
  for (size_t k = 0; k < pools_.size(); ++k) {
    for (size_t i = 0; i < pools_[k].gpus.size(); ++i) {
      where[static_cast<size_t>(pools_[k].gpus[i])] = {static_cast<int32_t>(k), static_cast<int32_t>(i)};
    }
  }
  // Before node pools the host was one node of its offered GPUs, in order.
  std::vector<int> old_node;
  for (size_t g = 0; g < gpus_.size(); ++g) {
    if (!gpus_[g].mig_enabled || gpu_mode_ == "fake") old_node.push_back(static_cast<int>(g));
  }
  const std::vector<journal::PlacedPod>& pods = j.pods;
  if (pods.size() != p->pods.size()) return false;
  for (size_t i = 0; i < p->pods.size(); ++i) {
    core::placement::PodPlacement& pod = p->pods[i];
    const std::vector<int32_t> used = journal::PlacedGpus(pods[i].placement);
    // The host GPUs the pod uses: by UUID, or by the old single node's order.
    std::vector<int> host;
    if (pods[i].uuids) {
      const std::vector<std::string>& uuids = *pods[i].uuids;
      if (uuids.size() != used.size()) return false;
      for (const std::string& u : uuids) {
        int found = -1;
        for (size_t g = 0; g < gpus_.size(); ++g) {
          if (gpus_[g].uuid == u) found = static_cast<int>(g);
        }
        if (found < 0) return false;
        host.push_back(found);
      }
    } else {
      if (pod.node != 0) return false;
      for (int32_t g : used) {
        if (g < 0 || static_cast<size_t>(g) >= old_node.size()) return false;
        host.push_back(old_node[static_cast<size_t>(g)]);
      }
    }
    // All in one pool; rewrite the node and the in-node GPU indices.
    int32_t node = -1;
    std::vector<int32_t> local;
    for (int h : host) {
      auto [k, idx] = where[static_cast<size_t>(h)];
      if (k < 0 || (node >= 0 && k != node)) return false;
      node = k;
      local.push_back(idx);
    }
    if (node < 0) {
      // A pod without GPUs: its pool by name (journaled before pools: node 0).
      if (pods[i].node_name.empty()) continue;
      const std::string& name = pods[i].node_name;
      for (size_t k = 0; k < pools_.size(); ++k) {
        if (pools_[k].node.name == name) node = static_cast<int32_t>(k);
      }
      if (node < 0) return false;
    }
    pod.node = node;
    size_t n = 0;
    for (int32_t& g : pod.gpus) g = local[n++];
    for (auto& m : pod.mig) m.gpu = local[n++];
    for (auto& sh : pod.shares) sh.gpu = local[n++];
  }
  return true;
}

void Daemon::CheckFlavorsLocked() {
  if (pools_.empty()) {
    loop_.SetFlavorsWithoutNodesLocked({});  // no GPUs: admission is quota-only
    return;
  }
  std::vector<core::placement::NodeSpec> nodes;
  for (const HostPool& p : pools_) nodes.push_back(p.node);
  std::map<std::string, std::string> without = FlavorsWithoutNodes(engine_.config(), nodes);
  for (const auto& [flavor, why] : without) {
    log_->Warn("flavor matches no node", {{"flavor", flavor}, {"detail", why}});
  }
  loop_.SetFlavorsWithoutNodesLocked(std::move(without));
}

// Directories and pod users (docs/daemon.md, "Pod users and isolation"):
// the data dir is 0711 when pods run as other users (they must reach their
// own directories under work/, never list or read the rest) and 0700
// otherwise; logs/ is 0700, work/ and work/<ns>/ 0711 and arteld's.
Status Daemon::InitDirectories() {
  std::error_code ec;
  const bool switching = CanSwitchUsers();
  fs::create_directories(options_.data_dir, ec);
  if (ec) return InvalidArgument("cannot create data dir " + options_.data_dir + ": " + ec.message());
  if (chmod(options_.data_dir.c_str(), switching ? 0711 : 0700) != 0) {
    log_->Warn("cannot set the mode of the data dir",
               {{"dir", options_.data_dir}, {"error", std::strerror(errno)}});
  }
  log_dir_ = (fs::path(options_.data_dir) / "logs").string();
  work_dir_ = options_.work_dir.empty() ? (fs::path(options_.data_dir) / "work").string() : options_.work_dir;
  for (const auto& [dir, mode] : {std::pair<std::string, mode_t>{log_dir_, 0700}, {work_dir_, 0711}}) {
    fs::create_directories(dir, ec);
    if (ec || chmod(dir.c_str(), mode) != 0) {
      return FailedPrecondition("cannot create " + dir + " with mode " + (mode == 0700 ? "0700" : "0711") +
                                ": " + (ec ? ec.message() : std::string(std::strerror(errno))));
    }
  }
  auto users = PodUsers::Open(options_.pod_users, (fs::path(options_.data_dir) / "pod-users.json").string(),
                              switching);
  if (!users.ok()) return users.status();
  pod_users_ = std::move(users).value();
  if (!switching) {
    log_->Warn(
        "arteld cannot switch users (not root, and without CAP_SETUID, CAP_SETGID, CAP_CHOWN and "
        "CAP_KILL): pods run as arteld's own user and can read its tokens file and journal; tenant isolation "
        "needs arteld to run as root or with those capabilities",
        {{"uid", std::to_string(geteuid())}});
    return Status::Ok();
  }
  // Pods must be able to walk down to their directories as other users.
  fs::path abs = fs::absolute(work_dir_, ec);
  for (fs::path p = abs; !p.empty(); p = p.parent_path()) {
    struct stat st {};
    if (stat(p.c_str(), &st) == 0 && (st.st_mode & S_IXOTH) == 0) {
      char mode[8];
      std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
      return FailedPrecondition(
          "pods run as their own users and cannot reach their working directories under " + work_dir_ + ": " +
          p.string() + " has mode " + mode + " (no search permission for others); run `chmod o+x " +
          p.string() + "`, or put dataDir or runtime.workDir elsewhere");
    }
    if (p == p.parent_path()) break;
  }
  log_->Info("pods run as their namespace's user",
             {{"uid_range", std::to_string(options_.pod_users.range_first) + "-" +
                                std::to_string(options_.pod_users.range_last)},
              {"configured", std::to_string(options_.pod_users.configured.size())},
              {"work_dir", work_dir_}});
  return Status::Ok();
}

// The workload's own directories (<work>/<ns>/<name>-<ms>: one per
// incarnation of the name), deleted with its record.
void Daemon::RemoveOwnDirectoriesOf(const std::string& key) {
  const std::string ns = key.substr(0, key.find('/'));
  const std::string prefix = key.substr(key.find('/') + 1) + "-";
  std::error_code ec;
  for (fs::directory_iterator it(fs::path(work_dir_) / ns, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string n = it->path().filename().string();
    if (n.size() <= prefix.size() || n.compare(0, prefix.size(), prefix) != 0 ||
        n.find_first_not_of("0123456789", prefix.size()) != std::string::npos) {
      continue;
    }
    if (Status s = RemoveOwnDirectory(it->path().string()); !s.ok()) {
      log_->Warn("could not delete the workload's directory", {{"workload", key}, {"error", s.message()}});
    }
  }
}

Status Daemon::CheckWorkingDirs(const core::WorkloadSpec& spec) {
  for (size_t i = 0; i < spec.pod_sets.size(); ++i) {
    const std::string& dir = spec.pod_sets[i].working_dir;
    if (dir.empty()) continue;
    const std::string field = "spec.podSets[" + std::to_string(i) + "].workingDir";
    Status s = Status::Ok();
    if (!fs::path(dir).is_absolute()) {
      s = InvalidArgument("workingDir \"" + dir + "\" must be an absolute path");
    } else {
      auto user = pod_users_->For(spec.ns);
      s = user.ok() ? CheckDirAccessAs(dir, *user) : user.status();
    }
    if (!s.ok()) {
      s.WithField(field);
      return s;
    }
  }
  return Status::Ok();
}

Status Daemon::PreparePodUsers(const std::string& key, int64_t submitted_ms, runtime::LaunchSpec* spec) {
  const std::string ns = key.substr(0, key.find('/'));
  const std::string name = key.substr(key.find('/') + 1);
  auto user = pod_users_->For(ns);
  if (!user.ok()) return user.status();
  // The workload's own directory: <work>/<ns>/<name>-<submitted ms>, so a
  // name submitted again after deletion starts clean; a retry keeps it.
  const fs::path ns_dir = fs::path(work_dir_) / ns;
  const fs::path own = ns_dir / (name + "-" + std::to_string(submitted_ms));
  for (const auto& [dir, mode] : {std::pair<fs::path, mode_t>{ns_dir, 0711}, {own, 0700}}) {
    if (mkdir(dir.c_str(), mode) != 0 && errno != EEXIST) {
      return FailedPrecondition("cannot create working directory " + dir.string() + ": " +
                                std::strerror(errno));
    }
  }
  struct stat st {};
  if (lstat(own.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return FailedPrecondition("working directory " + own.string() + " is not a directory");
  }
  if (user->uid >= 0 &&
      (st.st_uid != static_cast<uid_t>(user->uid) || st.st_gid != static_cast<gid_t>(user->gid))) {
    if (chown(own.c_str(), static_cast<uid_t>(user->uid), static_cast<gid_t>(user->gid)) != 0) {
      return FailedPrecondition("cannot give working directory " + own.string() + " to uid " +
                                std::to_string(user->uid) + ": " + std::strerror(errno));
    }
  }
  // 0700 again if the pod opened it up in an earlier try (best effort: an
  // arteld with capabilities but without CAP_FOWNER cannot).
  chmod(own.c_str(), 0700);
  for (runtime::PodLaunch& pl : spec->pods) {
    pl.uid = user->uid;
    pl.gid = user->gid;
    if (pl.working_dir.empty()) pl.working_dir = own.string();
    if (pl.env.count("HOME") == 0) pl.env["HOME"] = own.string();
  }
  return Status::Ok();
}

// ---------------------------------------------------------------------------
// Journal model

void Daemon::ApplyToModelLocked(const store::Record& r) {
  journal::Reduce(r, &model_);
  ++records_since_snapshot_;
}

Status Daemon::AppendAndApply(std::vector<store::Record> recs) {
  if (recs.empty()) return Status::Ok();
  auto seqs = store_->AppendBatch(recs);
  if (!seqs.ok()) {
    log_->Error("journal append failed", {{"error", seqs.status().message()}});
    return seqs.status();
  }
  std::lock_guard<std::mutex> lock(mu());
  for (size_t i = 0; i < recs.size(); ++i) {
    recs[i].seq = i < seqs->size() ? (*seqs)[i] : 0;
    ApplyToModelLocked(recs[i]);
  }
  return Status::Ok();
}

void Daemon::MaybeSnapshot(bool force) {
  {
    std::lock_guard<std::mutex> lock(mu());
    if (!force && records_since_snapshot_ < options_.snapshot_every) return;
    if (records_since_snapshot_ == 0) return;
  }
  std::unique_lock<std::shared_mutex> jl(journal_mu_);
  store::Snapshot snap;
  {
    std::lock_guard<std::mutex> lock(mu());
    snap.state = journal::EncodeSnapshot(model_);
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

Status Daemon::ConfigureFromDocsLocked(const Docs& docs, core::Config* out) const {
  core::Config cfg;
  std::vector<const manifest::ManifestObject*> objs;
  objs.reserve(docs.size());
  for (const auto& [k, o] : docs) objs.push_back(&o);
  if (Status s = manifest::ParseObjects(objs, &cfg); !s.ok()) return s;
  if (Status s = manifest::Validate(cfg); !s.ok()) return s;
  core::Engine probe(options_.engine);
  if (Status s = probe.Configure(cfg); !s.ok()) return s;
  for (const Status& w : manifest::Warnings(cfg))
    log_->Warn("configuration warning", {{"detail", w.ToString()}});
  *out = std::move(cfg);
  return Status::Ok();
}

std::string Daemon::DocsToText(const Docs& docs) {
  std::string text;
  for (const auto& [k, o] : docs) text += "---\n" + o.text;
  return text;
}

Status Daemon::Recover() {
  auto rec = store_->Recover();
  if (!rec.ok()) return rec.status();
  std::lock_guard<std::mutex> lock(mu());
  if (rec->snapshot) {
    if (Status s = journal::DecodeSnapshot(rec->snapshot->state, &model_); !s.ok()) return s;
  }
  for (const auto& r : rec->records) journal::Reduce(r, &model_);
  records_since_snapshot_ = rec->records.size();
  log_->Info("recovered journal",
             {{"snapshot", rec->snapshot ? std::to_string(rec->snapshot->upto_seq) : "none"},
              {"records", std::to_string(rec->records.size())},
              {"workloads", std::to_string(model_.workloads.size())}});

  if (!model_.config.empty()) {
    // The journal holds each applied object as its own document; a journal
    // written before objects were split that way is read the same way (by
    // the parser, so every object it held is now listed).
    auto docs = manifest::SplitObjects(model_.config, "journal");
    if (!docs.ok()) return docs.status();
    for (auto& d : *docs) {
      std::string key = d.key();
      docs_[key] = std::move(d);
    }
    core::Config cfg;
    if (Status s = ConfigureFromDocsLocked(docs_, &cfg); !s.ok()) return s;
    if (Status s = engine_.Configure(cfg); !s.ok()) return s;
    CheckFlavorsLocked();
  }

  // Materialize in submission order.
  std::vector<std::pair<uint64_t, std::string>> order;
  for (const auto& [k, p] : model_.workloads) order.emplace_back(p.order, k);
  std::sort(order.begin(), order.end());
  std::vector<store::Record> fixups;
  int64_t now = NowLocked();
  size_t adopted = 0, requeued = 0, restored = 0;
  for (const auto& entry : order) {
    // A plain reference, not a structured binding: the lambdas below
    // capture it, which clang accepts only from version 16.
    const std::string& key = entry.second;
    const journal::WorkloadRecord& p = model_.workloads[key];
    using journal::Phase;
    auto spec = WorkloadFromJson(p.spec);
    if (!spec.ok()) {
      log_->Error("unreadable workload in journal", {{"workload", key}, {"error", spec.status().message()}});
      continue;
    }
    Wl w;
    w.spec = *spec;
    w.submitted_ms = p.submitted_ms;
    if (p.admission) w.cluster_queue = p.admission->cluster_queue;
    if (p.phase == Phase::kCancelled) {
      w.terminal = "Cancelled";
      w.finished_ms = p.finished_ms >= 0 ? p.finished_ms : now;  // older journals: from this start
      if (p.result) RestoreFinalStatus(*p.result, &w);
      wl_[key] = std::move(w);
      continue;
    }
    if (p.phase == Phase::kFinished) {
      const journal::FinalStatus result = p.result.value_or(journal::FinalStatus{});
      w.finished_ms = p.finished_ms >= 0 ? p.finished_ms : now;
      w.terminal = result.phase.empty() ? "Succeeded" : result.phase;
      if (result.exit_code) w.exit_code = *result.exit_code;
      w.message = result.message;
      RestoreFinalStatus(result, &w);
      wl_[key] = std::move(w);
      continue;
    }
    int64_t grace = w.spec.termination_grace.value_or(options_.default_grace_ms);
    std::vector<runtime::RunningPod> pods;
    std::vector<Pod> wpods;
    bool alive = false;
    bool unrecorded = false;
    const std::string start_id = p.starting ? p.starting->start_id : "";
    if (!start_id.empty()) {
      // The start was journaled before its fork (WorkloadStarting): its
      // start files tell which pods ran. A pod that never ran is claimed so
      // that it never will; if none ran, nothing was started.
      std::vector<std::string> names;
      std::map<std::string, std::vector<int>> gpus_of;
      for (const journal::StartingPod& sp : p.starting->pods) {
        names.push_back(sp.pod);
        gpus_of[names.back()] = sp.gpus;
      }
      w.retries = p.starting->retries;
      w.start_id = start_id;
      const bool journaled = p.started && p.started->start_id == start_id;
      if (journaled) w.started_ms = p.started->started_at_ms;
      pods = runtime_->FindStart(key, log_dir_, start_id, names);
      if (!pods.empty()) {
        alive = runtime_->Adopt(key, pods, grace);
        unrecorded = !journaled;
        for (const std::string& name : names) {
          Pod pod;
          pod.rp.pod = name;
          pod.gpus = gpus_of[name];
          bool ran = false;
          for (const runtime::RunningPod& rp : pods) {
            if (rp.pod == name) {
              pod.rp = rp;
              ran = true;
            }
          }
          if (!ran) {  // never started (the daemon died between two pods' forks)
            pod.exited = true;
            pod.exit.signaled = true;
            pod.exit.signal = SIGKILL;
          }
          wpods.push_back(std::move(pod));
        }
        if (alive && unrecorded) {
          log_->Warn("found pods started but not journaled before a crash; adopted them",
                     {{"workload", key}, {"pods", std::to_string(pods.size())}, {"start", start_id}});
        }
      } else if (p.phase == Phase::kAdmitted) {
        log_->Info("journaled start never began; starting again", {{"workload", key}, {"start", start_id}});
      }
    } else {
      if (p.started) {
        for (const journal::StartedPod& sp : p.started->pods) {
          Pod pod;
          pod.rp.pod = sp.pod;
          pod.rp.pid = static_cast<int>(sp.pid);
          pod.rp.pgid = static_cast<int>(sp.pgid);
          pod.rp.exit_file = sp.exit_file;
          pod.gpus = sp.gpus;
          pods.push_back(pod.rp);
          wpods.push_back(pod);
        }
        w.retries = p.started->retries;
      }
      alive = !pods.empty() && runtime_->Adopt(key, pods, grace);
      // Journals of an older arteld (no start ids): pods the journal does
      // not know, because the daemon died after starting them and before
      // journaling the start. Find them by their process marker instead of
      // starting a second copy; without a journaled start, an exit file
      // written since the admission also counts. A newer admission
      // ("startIds") journals every start before its fork: no search.
      const bool legacy = !(p.admission && p.admission->start_ids);
      if (legacy && !alive &&
          (p.phase == Phase::kAdmitted || p.phase == Phase::kEvicting || p.phase == Phase::kCancelling)) {
        int64_t since = std::numeric_limits<int64_t>::max();
        if (pods.empty() && p.admission) since = p.admission->admitted_at_ms.value_or(since);
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
    }
    auto claim = [&](Wl& wl) REQUIRES(mu()) {
      for (auto& pod : wl.pods) {
        for (int g : pod.gpus) {
          ClaimGpuLocked(g, PodKey(key, pod.rp.pod));
        }
      }
    };
    // The admission journaled for this workload, put back into the engine.
    auto restore = [&]() REQUIRES(mu()) -> Status {
      if (!p.admission) return InvalidArgument("bad admission record: none journaled");
      const journal::Admitted& adm = *p.admission;
      if (!adm.pod_sets_error.empty()) return InvalidArgument(adm.pod_sets_error);
      std::optional<core::placement::Placement> placed;
      if (adm.placement) {
        core::placement::Placement pl = adm.placement->ToPlacement();
        if (PlacementMatchesPoolsLocked(*adm.placement, &pl)) {
          placed = std::move(pl);
        } else {
          log_->Warn("journaled placement does not match this start's node pools; placing again",
                     {{"workload", key}});
        }
      } else if (!adm.placement_error.empty()) {
        log_->Warn("journaled placement unreadable; placing again",
                   {{"workload", key}, {"error", adm.placement_error}});
      }
      return engine_.Restore(key, adm.cluster_queue, adm.pod_sets, adm.admitted_at_ms.value_or(now),
                             placed ? &*placed : nullptr, adm.admission_seq);
    };
    // The time it ran in earlier admissions counts against its maximum
    // runtime (docs/semantics.md §11). An admission being restored counts
    // from its own admittedAt, on top of what it had used before it.
    // An eviction whose pods are gone counts its admission's run as its
    // record says (Persisted::used_ms).
    const bool restores_admission = p.admission && (p.phase == Phase::kAdmitted || alive);
    const int64_t used_ms = restores_admission ? p.admission->used_ms.value_or(0) : p.used_ms;
    w.used_ms = used_ms;
    auto submit = [&]() -> Status {
      Status s = engine_.Submit(w.spec, p.submitted_ms).status();
      if (s.ok() && used_ms > 0) s = engine_.RestoreUsedTime(key, used_ms);
      return s;
    };
    const int64_t kill_at = p.kill_at_ms >= 0 ? p.kill_at_ms : now + grace;  // older journals: a fresh grace
    if ((p.phase == Phase::kEvicting || p.phase == Phase::kCancelling) && alive) {
      // Its pods are still stopping: SIGKILL at the journaled deadline, and
      // keep their admission (quota, GPUs) held in the engine until they are
      // gone, so that nothing else is placed on those GPUs meanwhile.
      w.pods = std::move(wpods);
      w.running = true;
      w.kill_at_ms = kill_at;
      if (p.admission) w.admitted_ms = p.admission->admitted_at_ms.value_or(-1);
      claim(w);
      Status s = submit();
      if (s.ok()) s = restore();
      if (s.ok()) {
        HoldAdmissionLocked(key, w, now);
      } else {
        // Not restorable (its queue or flavor is gone): outside the engine,
        // the GPUs are still shown held until the pods exit.
        log_->Warn("stopping pods' admission not restored", {{"workload", key}, {"error", s.message()}});
        DropFromEngineLocked(key, now);
        w.deferred = p.phase == Phase::kEvicting;
      }
      if (p.phase == Phase::kCancelling) {
        w.terminal = "Cancelled";
        w.stopping = true;
        w.finished_ms = p.finished_ms >= 0 ? p.finished_ms : now;
      }
      (void)runtime_->StopAt(key, now, kill_at);
      wl_[key] = std::move(w);
      continue;
    }
    if (p.phase == Phase::kCancelling) {
      // Cancelled, and nothing of it runs any more: the cancel is complete.
      w.terminal = "Cancelled";
      w.finished_ms = p.finished_ms >= 0 ? p.finished_ms : now;
      if (p.admission) w.admitted_ms = p.admission->admitted_at_ms.value_or(-1);
      w.pods = std::move(wpods);
      for (Pod& pod : w.pods) pod.exited = true;
      fixups.push_back(CancelCompletedRecord(key, w));
      wl_[key] = std::move(w);
      continue;
    }
    if (Status s = submit(); !s.ok()) {
      log_->Error("journal workload rejected on recovery", {{"workload", key}, {"error", s.message()}});
      w.terminal = "Failed";
      w.message = "rejected on recovery: " + s.message();
      wl_[key] = std::move(w);
      continue;
    }
    bool requeue = p.phase == Phase::kEvicting || (!pods.empty() && !alive);
    if (p.phase == Phase::kAdmitted && !requeue) {
      Status s = restore();
      if (s.ok()) {
        ++restored;
        w.admitted_ms = p.admission->admitted_at_ms.value_or(now);
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
    if (requeue && p.phase != Phase::kPending) {
      ++requeued;
      fixups.push_back(
          journal::MakeRecord(key, WallMs(), journal::EvictionCompleted{"RecoveredWithoutPods", {}}));
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
  // Each file is parsed on its own, so that errors name it and every object
  // remembers the file that manages it.
  std::vector<manifest::ManifestObject> objects;
  std::map<std::string, std::string> files;  // key -> file
  for (const auto& path : options_.manifests) {
    auto fl = ReadManifestFiles(path);
    if (!fl.ok()) return fl.status();
    for (const auto& f : *fl) {
      auto objs = manifest::SplitObjects(f.text, f.path);
      if (!objs.ok()) return objs.status();
      for (auto& o : *objs) {
        std::string key = o.key();
        auto [it, inserted] = files.emplace(key, f.path);
        if (!inserted) {
          // The later file wins, as when the texts were joined.
          log_->Warn("startup manifests define an object twice; the later one is applied",
                     {{"object", o.display()}, {"first", it->second}, {"second", f.path}});
          it->second = f.path;
          objects.erase(std::remove_if(objects.begin(), objects.end(),
                                       [&](const manifest::ManifestObject& x) { return x.key() == key; }),
                        objects.end());
        }
        objects.push_back(std::move(o));
      }
    }
  }
  if (objects.empty()) return Status::Ok();
  Principal admin{"arteld", Role::kAdmin, {}};
  auto r = ApplyObjects(std::move(objects), admin, &files);
  if (!r.ok()) return r.status();
  log_->Info("applied startup manifests", {{"changed", std::to_string(r->value("changed", 0))},
                                           {"fileManaged", std::to_string(files.size())}});
  return Status::Ok();
}

// ---------------------------------------------------------------------------
// Mutations

namespace {

// A PermissionDenied, InvalidArgument, ... naming `o` with its position.
Status ObjectError(StatusCode code, const manifest::ManifestObject& o, const std::string& msg) {
  Status s(code, msg);
  if (!o.field.empty()) s.WithField(o.field);
  s.WithPos(o.pos);
  return s;
}

// True when `cfg` (one object parsed alone) holds exactly the namespaced
// object `o` names and nothing else.
bool OnlyThisNamespacedObject(const core::Config& cfg, const manifest::ManifestObject& o) {
  bool others = !cfg.flavors.empty() || !cfg.cohorts.empty() || !cfg.cluster_queues.empty() ||
                !cfg.priority_classes.empty() || !cfg.namespaces.empty() || !cfg.topologies.empty();
  if (others) return false;
  if (o.kind == "LocalQueue") {
    return cfg.resource_quotas.empty() && cfg.local_queues.size() == 1 && cfg.local_queues[0].ns == o.ns &&
           cfg.local_queues[0].name == o.name;
  }
  if (o.kind == "ResourceQuota") {
    return cfg.local_queues.empty() && cfg.resource_quotas.size() == 1 && cfg.resource_quotas[0].ns == o.ns &&
           cfg.resource_quotas[0].name == o.name;
  }
  return false;
}

}  // namespace

Result<Json> Daemon::Apply(std::string_view yaml, const Principal& who) {
  // Parsed once, by the parser the engine's configuration is built with.
  auto objects = manifest::SplitObjects(yaml, "request");
  if (!objects.ok()) return objects.status();
  if (objects->empty()) return InvalidArgument("no manifests in the request body");
  return ApplyObjects(std::move(objects).value(), who, nullptr);
}

Result<Json> Daemon::ApplyObjects(std::vector<manifest::ManifestObject> objects, const Principal& who,
                                  const std::map<std::string, std::string>* files) {
  // One apply at a time: each merges over the configuration the previous
  // one left, so that concurrent applies do not drop each other's objects.
  std::lock_guard<std::mutex> serial(apply_mu_);
  std::map<std::string, const manifest::ManifestObject*> seen;
  for (const auto& o : objects) {
    // Authorization, per parsed object. Tenants apply only namespaced
    // objects in their own namespaces.
    if (!who.is_admin()) {
      if (!o.namespaced) {
        return ObjectError(StatusCode::kPermissionDenied, o,
                           "user " + who.user + " may not apply " + o.display() +
                               ": only admins may create or change cluster-scoped objects");
      }
      if (!who.CanUseNamespace(o.ns)) {
        return ObjectError(StatusCode::kPermissionDenied, o,
                           "user " + who.user + " may not apply " + o.display() + ": namespace " + o.ns +
                               " is not one of the user's");
      }
      // What the engine makes of this object alone must be that one object:
      // a second check, on the parsed configuration itself, that nothing
      // else rides along (e.g. a dialect kind that creates queues).
      core::Config one;
      if (Status s = manifest::ParseObjects({&o}, &one); !s.ok()) return s;
      if (!OnlyThisNamespacedObject(one, o)) {
        return ObjectError(StatusCode::kPermissionDenied, o,
                           "user " + who.user + " may not apply " + o.display() +
                               ": it defines more than one namespaced object");
      }
    }
    auto [it, inserted] = seen.emplace(o.key(), &o);
    if (!inserted) {
      return ObjectError(StatusCode::kInvalidArgument, o,
                         o.display() + " is given twice (also at " + it->second->pos.ToString() + ")");
    }
    // What is journaled (o.text) must read back as this very object, or a
    // restart would apply something else.
    auto again = manifest::SplitObjects(o.text, "stored");
    if (!again.ok() || again->size() != 1 || (*again)[0].key() != o.key() ||
        (*again)[0].api_version != o.api_version) {
      return ObjectError(StatusCode::kInvalidArgument, o,
                         o.display() + " cannot be stored faithfully (it does not read back as itself)");
    }
  }
  std::shared_lock<std::shared_mutex> jl(journal_mu_);
  Docs merged;
  core::Config cfg;
  int changed = 0;
  Json out_objects = Json::array();
  {
    std::lock_guard<std::mutex> lock(mu());
    if (files == nullptr) {
      // A change to an object of the startup manifests would be reverted at
      // the next start: refuse it up front (re-applying it unchanged is fine).
      for (const auto& o : objects) {
        auto f = file_managed_.find(o.key());
        if (f == file_managed_.end()) continue;
        auto cur = docs_.find(o.key());
        if (cur != docs_.end() && cur->second.text == o.text) continue;
        // Admins learn the file; tenants only that there is one (a path of
        // the daemon's host is not theirs to know).
        const std::string file = who.is_admin() ? " " + f->second : "";
        return ObjectError(StatusCode::kFailedPrecondition, o,
                           o.display() + " is managed by the startup manifest" + file +
                               " (arteld --manifests), which is applied again at every start; change it "
                               "there and restart arteld");
      }
    }
    merged = docs_;
    for (auto& o : objects) {
      std::string key = o.key();
      auto it = merged.find(key);
      bool same = it != merged.end() && it->second.text == o.text;
      if (!same) ++changed;
      out_objects.push_back({{"kind", o.kind}, {"namespace", o.ns}, {"name", o.name}, {"changed", !same}});
      merged[key] = std::move(o);
    }
    if (files != nullptr) {
      for (const auto& [k, f] : *files) file_managed_[k] = f;
    }
    if (changed == 0) return Json{{"changed", 0}, {"objects", out_objects}};
    if (Status s = ConfigureFromDocsLocked(merged, &cfg); !s.ok()) return s;
  }
  store::Record r = journal::MakeRecord("", WallMs(), journal::ConfigApplied{DocsToText(merged)});
  auto seq = store_->Append(r);
  if (!seq.ok()) return Status(StatusCode::kInternal, "store: " + seq.status().message());
  {
    std::lock_guard<std::mutex> lock(mu());
    r.seq = *seq;
    ApplyToModelLocked(r);
    if (Status s = engine_.Configure(cfg); !s.ok()) return s;
    CheckFlavorsLocked();
    docs_ = std::move(merged);
    EmitLocked("ConfigApplied", "", {{"user", who.user}, {"changed", changed}});
  }
  log_->Info("config applied", {{"user", who.user}, {"changed", std::to_string(changed)}});
  Wake();
  return Json{{"changed", changed}, {"objects", out_objects}};
}

namespace {

// Submit's checks that need no lock: working directories, and that the spec
// encodes. Encoding runs before the name is reserved in inflight_: an encoding
// failure (a string that is not UTF-8 throws in dump()) used to escape with the
// name still reserved, so every later submit of it got 409 until restart. The
// codec refuses such strings; this keeps a failed submit a no-op.
Status CheckEncodes(const core::WorkloadSpec& spec) {
  try {
    (void)WorkloadSpecToJson(spec).dump();
  } catch (const Json::exception& e) {
    return InvalidArgument(std::string("cannot encode the workload: ") + e.what());
  }
  return Status::Ok();
}

}  // namespace

Result<std::string> Daemon::PrepareSubmitLocked(core::WorkloadSpec* spec_ptr,
                                                const std::string& generate_name) {
  core::WorkloadSpec& spec = *spec_ptr;
  std::string key;
  if (!ready_) return Status(StatusCode::kFailedPrecondition, "arteld is not ready");
  auto taken = [&](const std::string& k) REQUIRES(mu()) {
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
  if (auto old = wl_.find(key); old != wl_.end() && old->second.stopping) {
    // A cancelled workload of this name still has pods running: the name
    // (and its runtime slot, logs and GPUs) is free only once they are gone.
    int64_t left_ms = std::max<int64_t>(0, old->second.kill_at_ms - WallMs());
    return AlreadyExists("workload " + key +
                         " is still stopping: the pods of the cancelled workload have not " +
                         "all exited yet (SIGKILL in " + std::to_string((left_ms + 999) / 1000) +
                         " s at most); submit again once it is Cancelled");
  }
  if (taken(key)) return AlreadyExists("workload " + key + " already exists");
  const core::Config& cfg = engine_.config();
  bool lq = std::any_of(cfg.local_queues.begin(), cfg.local_queues.end(), [&](const core::LocalQueueSpec& q) {
    return q.ns == spec.ns && q.name == spec.queue;
  });
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
  return key;
}

Result<Json> Daemon::FinishSubmitLocked(store::Record r, core::WorkloadSpec spec, const std::string& user) {
  const std::string key = r.key;
  ApplyToModelLocked(r);
  int64_t now = NowLocked();
  if (Status s = engine_.Submit(spec, now).status(); !s.ok()) {
    // Pre-checks passed but the engine refused (a config change raced us):
    // journal the withdrawal so that recovery agrees.
    store::Record c = journal::MakeRecord(key, WallMs(), journal::Cancelled{});
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
  // The caller may act in this namespace; it sees no other one's names.
  const Principal viewer{user, Role::kTenant, {wl_[key].spec.ns}};
  Json out = WorkloadJsonLocked(key, wl_[key], RedactorLocked(viewer));
  return out;
}

Result<Json> Daemon::Submit(core::WorkloadSpec spec, const std::string& generate_name,
                            const std::string& user) {
  if (Status s = CheckWorkingDirs(spec); !s.ok()) return s;
  if (Status s = CheckEncodes(spec); !s.ok()) return s;
  std::shared_lock<std::shared_mutex> jl(journal_mu_);
  std::string key;
  {
    std::lock_guard<std::mutex> lock(mu());
    auto k = PrepareSubmitLocked(&spec, generate_name);
    if (!k.ok()) return k.status();
    key = *k;
  }
  store::Record r = journal::MakeRecord(key, WallMs(), journal::Submitted{WorkloadSpecToJson(spec)});
  auto seq = store_->Append(r);
  std::lock_guard<std::mutex> lock(mu());
  inflight_.erase(key);
  if (!seq.ok()) return Status(StatusCode::kInternal, "store: " + seq.status().message());
  r.seq = *seq;
  auto out = FinishSubmitLocked(std::move(r), std::move(spec), user);
  if (out.ok()) Wake();
  return out;
}

std::vector<Result<Json>> Daemon::SubmitBatch(std::vector<SubmitItem> items, const std::string& user) {
  std::vector<Result<Json>> out(items.size(), Result<Json>(Status(StatusCode::kInternal, "not submitted")));
  std::vector<size_t> pending;  // items that passed the lock-free checks
  for (size_t i = 0; i < items.size(); ++i) {
    Status s = CheckWorkingDirs(items[i].spec);
    if (s.ok()) s = CheckEncodes(items[i].spec);
    if (s.ok()) {
      pending.push_back(i);
    } else {
      out[i] = s;
    }
  }
  std::shared_lock<std::shared_mutex> jl(journal_mu_);
  std::vector<size_t> reserved;
  std::vector<store::Record> records;
  {
    std::lock_guard<std::mutex> lock(mu());
    for (size_t i : pending) {
      auto k = PrepareSubmitLocked(&items[i].spec, items[i].generate_name);
      if (!k.ok()) {
        out[i] = k.status();
        continue;
      }
      store::Record r =
          journal::MakeRecord(*k, WallMs(), journal::Submitted{WorkloadSpecToJson(items[i].spec)});
      reserved.push_back(i);
      records.push_back(std::move(r));
    }
  }
  if (records.empty()) return out;
  // One transaction (one fsync) for the whole batch, before any answer.
  auto seqs = store_->AppendBatch(records);
  std::lock_guard<std::mutex> lock(mu());
  for (const auto& r : records) inflight_.erase(r.key);
  if (!seqs.ok()) {
    for (size_t i : reserved) out[i] = Status(StatusCode::kInternal, "store: " + seqs.status().message());
    return out;
  }
  bool any = false;
  for (size_t j = 0; j < reserved.size(); ++j) {
    records[j].seq = (*seqs)[j];
    out[reserved[j]] = FinishSubmitLocked(std::move(records[j]), std::move(items[reserved[j]].spec), user);
    any = any || out[reserved[j]].ok();
  }
  if (any) Wake();
  return out;
}

Result<Json> Daemon::Cancel(const std::string& key, const std::string& user) {
  std::shared_lock<std::shared_mutex> jl(journal_mu_);
  int64_t kill_at = -1;
  {
    std::lock_guard<std::mutex> lock(mu());
    auto it = wl_.find(key);
    if (it == wl_.end()) return NotFound("workload " + key + " not found");
    Wl& w = it->second;
    if (w.stopping) {
      return FailedPrecondition("workload " + key +
                                " is already cancelled; its pods are stopping (Terminating)");
    }
    if (!w.terminal.empty()) return FailedPrecondition("workload " + key + " is already " + w.terminal);
    if (w.cancel_pending) return FailedPrecondition("workload " + key + " is already being cancelled");
    // Pods may run (or be about to start): they get SIGKILL at this
    // deadline, journaled with the cancel so that a restarted daemon keeps it.
    const core::WorkloadInfo* info = engine_.Find(key);
    bool may_run = w.running || w.deferred ||
                   (info && (info->state == core::WorkloadState::kAdmitted ||
                             info->state == core::WorkloadState::kEvicting));
    if (may_run) {
      kill_at =
          NowLocked() + std::max<int64_t>(0, w.spec.termination_grace.value_or(options_.default_grace_ms));
      if (w.kill_at_ms >= 0 && w.kill_at_ms < kill_at) kill_at = w.kill_at_ms;  // an eviction's earlier one
    }
    w.cancel_pending = true;  // no start, retry or finish until the cancel is applied
  }
  journal::Cancelled cancel{user, std::nullopt};
  if (kill_at >= 0) cancel.kill_at_ms = kill_at;
  store::Record r = journal::MakeRecord(key, WallMs(), cancel);
  auto seq = store_->Append(r);
  if (!seq.ok()) {
    std::lock_guard<std::mutex> lock(mu());
    if (auto it = wl_.find(key); it != wl_.end()) it->second.cancel_pending = false;
    Wake();
    return Status(StatusCode::kInternal, "store: " + seq.status().message());
  }
  bool stop = false;
  std::vector<store::Record> done;
  Json out;
  int64_t now = 0;
  {
    std::lock_guard<std::mutex> lock(mu());
    r.seq = *seq;
    ApplyToModelLocked(r);
    now = NowLocked();
    auto it = wl_.find(key);
    if (it == wl_.end()) return NotFound("workload " + key + " not found");
    Wl& w = it->second;
    w.cancel_pending = false;
    pending_launch_.erase(key);
    if (!w.terminal.empty()) {
      // It finished between the check and the journal: the finish stands.
      return FailedPrecondition("workload " + key + " is already " + w.terminal);
    }
    w.terminal = "Cancelled";
    w.finished_ms = r.time_ms;  // as journaled: a restart shows the same time
    auto m = model_.workloads.find(key);
    if (w.running) {
      // Its pods stop first: until every process of them is gone it keeps
      // its admission (quota, GPUs, MIG instances, memory shares), as an
      // evicting workload does.
      w.stopping = true;
      w.kill_at_ms = kill_at >= 0 ? kill_at : now;
      HoldAdmissionLocked(key, w, now);
      stop = true;
    } else {
      DropFromEngineLocked(key, now);
      ReleaseGpusLocked(w);
      w.deferred = false;
      if (m != model_.workloads.end() && m->second.phase == journal::Phase::kCancelling) {
        // Journaled as stopping, but nothing runs: complete it now.
        done.push_back(CancelCompletedRecord(key, w));
      }
    }
    EmitLocked("Cancelled", key, {{"user", user}});
    const Principal viewer{user, Role::kTenant, {w.spec.ns}};
    out = WorkloadJsonLocked(key, w, RedactorLocked(viewer));
  }
  log_->Info(stop ? "workload cancelled; stopping its pods" : "workload cancelled",
             {{"workload", key}, {"user", user}});
  if (!done.empty()) (void)AppendAndApply(std::move(done));
  if (stop) (void)runtime_->StopAt(key, now, kill_at >= 0 ? kill_at : now);
  Wake();
  return out;
}

void Daemon::HoldAdmissionLocked(const std::string& key, Wl& w, int64_t now) {
  const core::WorkloadInfo* info = engine_.Find(key);
  if (info == nullptr || info->state != core::WorkloadState::kAdmitted) return;  // evicting already holds
  // Deactivating an admitted workload evicts it: its usage and placement
  // stay charged until CompleteEviction or Cancel, and nothing preempts it
  // again. The eviction is the daemon's own: not journaled or reported.
  if (engine_.SetActive(key, false, now).ok()) {
    ++w.own_evictions;
    ++w.quiet_evictions;
    w.reactivate = w.spec.active;
  }
}

void Daemon::CompleteCancelLocked(const std::string& key, Wl& w, int64_t now,
                                  std::vector<store::Record>* recs) {
  ReleaseGpusLocked(w);
  DropFromEngineLocked(key, now);
  w.stopping = false;
  w.running = false;
  w.deferred = false;
  w.reactivate = false;
  w.terminal = "Cancelled";
  recs->push_back(CancelCompletedRecord(key, w));
  EmitLocked("PodsStopped", key);
  log_->Info("cancelled workload's pods are gone; its GPUs and quota are free", {{"workload", key}});
}

// The record that ends a cancel: its pods are gone (EvictionCompleted with
// reason Cancelled, carrying the final status that a restart shows).
store::Record Daemon::CancelCompletedRecord(const std::string& key, const Wl& w) {
  return journal::MakeRecord(key, WallMs(), journal::EvictionCompleted{"Cancelled", FinalStatusOf(w)});
}

journal::FinalStatus Daemon::FinalStatusOf(const Wl& w) {
  journal::FinalStatus f;
  f.retries = w.retries;
  f.started_at_ms = w.started_ms;
  f.admitted_at_ms = w.admitted_ms;
  for (const Pod& p : w.pods) {
    journal::FinalPod fp{p.rp.pod, p.rp.pid, p.gpus, std::nullopt};
    if (p.exited) fp.exit_code = p.exit.signaled ? 128 + p.exit.signal : p.exit.exit_code;
    f.pods.push_back(std::move(fp));
  }
  return f;
}

void Daemon::RestoreFinalStatus(const journal::FinalStatus& f, Wl* w) {
  w->retries = f.retries;
  w->started_ms = f.started_at_ms;
  w->admitted_ms = f.admitted_at_ms;
  for (const journal::FinalPod& fp : f.pods) {
    Pod pod;
    pod.rp.pod = fp.pod;
    pod.rp.pid = static_cast<int>(fp.pid);
    pod.gpus = fp.gpus;
    pod.exited = true;
    pod.exit.exit_code = fp.exit_code.value_or(0);
    w->pods.push_back(std::move(pod));
  }
}

std::string Daemon::NewStartId() {
  thread_local std::mt19937_64 rng(std::random_device{}());
  static std::atomic<uint64_t> seq{0};
  char buf[48];
  snprintf(buf, sizeof buf, "%016llx-%llu", static_cast<unsigned long long>(rng()),
           static_cast<unsigned long long>(++seq));
  return buf;
}

// ---------------------------------------------------------------------------
// The standalone backend of the control loop

void Daemon::Start() {
  loop_.Start();
  if (runtime_ && !exit_waker_.joinable()) {
    exit_waker_ = std::thread([this] {
      while (!exit_waker_stop_.load()) {
        if (runtime_->WaitForExit(100)) loop_.Wake();
      }
    });
  }
}

void Daemon::Shutdown() {
  if (shut_down_.exchange(true)) return;
  exit_waker_stop_ = true;
  if (exit_waker_.joinable()) exit_waker_.join();
  loop_.Stop();
  if (options_.stop_workloads_on_exit && runtime_) {
    std::vector<std::string> keys;
    int64_t grace = 0;
    {
      std::lock_guard<std::mutex> lock(mu());
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

bool Daemon::Poll(int64_t now) {
  pass_ = PassState{};
  runtime_->Tick(now);
  pass_.exits = runtime_->Poll();
  return !pass_.exits.empty();
}

void Daemon::SyncLocked(core::Engine&, int64_t now) {
  HandleExitsLocked(pass_.exits, now, &pass_.recs, &pass_.launch);
}

void Daemon::CycleDoneLocked(core::Engine&, int64_t now, bool full_pass) {
  if (full_pass) CollectFinishedLocked(now, &pass_.recs);
  for (const auto& k : pending_launch_) pass_.launch.push_back(k);
  pending_launch_.clear();
  for (const auto& r : pass_.recs) {
    if (r.type == store::RecordType::kEvictionCompleted) pass_.again = true;
  }
}

void Daemon::Flush(int64_t) {
  {
    std::shared_lock<std::shared_mutex> jl(journal_mu_);
    std::vector<std::string> expired_logs;
    {
      std::lock_guard<std::mutex> lock(mu());
      expired_logs.swap(logs_to_remove_);
    }
    if (AppendAndApply(std::move(pass_.recs)).ok()) {
      // The deletion is journaled: the pods' logs go too. A name submitted
      // again cannot have started pods yet (launches come after this).
      for (const std::string& key : expired_logs) {
        std::error_code ec;
        fs::remove_all(fs::path(log_dir_) / key, ec);
        if (ec) log_->Warn("could not delete logs", {{"workload", key}, {"error", ec.message()}});
        RemoveOwnDirectoriesOf(key);
      }
    }  // else not journaled: after a restart the records come back and are collected again, logs and all
  }
  int64_t now = WallMs();
  for (const auto& k : pass_.stop) {
    int64_t kill_at = now;
    {
      std::lock_guard<std::mutex> lock(mu());
      auto it = wl_.find(k);
      if (it != wl_.end() && it->second.kill_at_ms >= 0) kill_at = it->second.kill_at_ms;
    }
    if (Status s = runtime_->StopAt(k, now, kill_at); !s.ok())
      log_->Warn("stop failed", {{"workload", k}, {"error", s.message()}});
  }
  std::vector<std::string> launch = std::move(pass_.launch);
  std::sort(launch.begin(), launch.end());
  launch.erase(std::unique(launch.begin(), launch.end()), launch.end());
  Launch(launch);
  if (pass_.again) Wake();
  pass_ = PassState{};
  MaybeSnapshot(false);
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
    auto m = model_.workloads.find(key);
    if (m == model_.workloads.end() || !journal::IsFinal(m->second.phase)) continue;
    expired.push_back(key);
  }
  for (const std::string& key : expired) {
    auto it = wl_.find(key);
    // The journal's own finish time identifies this incarnation of the name.
    int64_t journaled = model_.workloads.at(key).finished_ms;
    recs->push_back(journal::MakeRecord(key, WallMs(), journal::Deleted{"retention", journaled}));
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
  loop_.CountFinishedLocked(cq);
  journal::Finished fin{FinalStatusOf(w)};
  fin.status.exit_code = exit_code;
  fin.status.phase = phase;
  fin.status.message = w.message;
  // The finish time shown, so that a restart shows the same.
  recs->push_back(journal::MakeRecord(key, now, fin));
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

namespace {
// The engine stopped the workload because its maximum runtime ran out
// (docs/semantics.md §11): its pods are stopped and it finishes Failed.
bool StoppedForMaxRuntime(const core::WorkloadInfo& info) {
  return info.last_eviction &&
         info.last_eviction->reason == core::EvictionReason::kMaximumExecutionTimeExceeded;
}
}  // namespace

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
    if (w.stopping) {  // cancelled: now every process of its pods is gone
      CompleteCancelLocked(key, w, now, recs);
      continue;
    }
    if (w.cancel_pending) {
      // A cancel is being journaled: it finishes the workload (Cancel sees
      // that nothing runs any more), not this exit.
      ReleaseGpusLocked(w);
      continue;
    }
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
      recs->push_back(journal::MakeRecord(key, WallMs(), journal::EvictionCompleted{}));
      Status s = engine_.Submit(w.spec, w.submitted_ms).status();
      if (s.ok() && w.used_ms > 0) s = engine_.RestoreUsedTime(key, w.used_ms);
      if (!s.ok()) {
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
    if (info->state == core::WorkloadState::kEvicting && StoppedForMaxRuntime(*info)) {
      // Stopped by the engine for its maximum runtime: it does not queue
      // again; it ends Failed with the engine's reason.
      ReleaseGpusLocked(w);
      w.message = info->last_eviction->message;
      FinishLocked(key, w, now, code, "Failed", recs);
      continue;
    }
    if (info->state == core::WorkloadState::kEvicting) {
      ReleaseGpusLocked(w);
      w.pods.clear();
      std::string cq = info->cluster_queue;
      if (w.reactivate) {  // held by the daemon after a restart: it queues again as it was
        (void)engine_.SetActive(key, true, now);
        w.reactivate = false;
      }
      (void)engine_.CompleteEviction(key, now);
      recs->push_back(journal::MakeRecord(key, WallMs(), journal::EvictionCompleted{}));
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

// An admission (the loop has counted, emitted and logged it): journal it
// with its placement, and launch its pods.
void Daemon::OnAdmittedLocked(const core::WorkloadInfo& admitted, int64_t now) {
  const core::WorkloadInfo* info = &admitted;
  const std::string& key = info->key;
  std::vector<store::Record>* recs = &pass_.recs;
  std::vector<std::string>* launch = &pass_.launch;
  Wl& w = wl_[key];
  w.admitted_ms = now;
  w.cluster_queue = info->cluster_queue;
  journal::Admitted adm;
  adm.cluster_queue = info->cluster_queue;
  adm.pod_sets = info->admission;
  adm.admitted_at_ms = now;
  adm.start_ids = true;                     // every start of this admission is journaled before its fork
  adm.admission_seq = info->admission_seq;  // the preemption tie-break, restored at start
  adm.used_ms = info->used_time;  // its earlier admissions' run time (maximum runtime), restored at start
  if (const core::placement::Placement* pl = engine_.Placement(key)) {
    journal::JournaledPlacement jp;
    jp.placed = pl->placed;
    jp.group_requests = pl->group_requests;
    // Node pools by name and GPUs by UUID: recovery checks them against
    // the pools of its own start (the config or inventory may change).
    for (const core::placement::PodPlacement& pod : pl->pods) {
      journal::PlacedPod pp;
      pp.placement = pod;
      const size_t n = static_cast<size_t>(pod.node);
      if (pod.node >= 0 && n < pools_.size()) {
        pp.node_name = pools_[n].node.name;
        std::vector<std::string> uuids;
        for (int32_t g : journal::PlacedGpus(pod)) {
          uuids.push_back(g >= 0 && static_cast<size_t>(g) < pools_[n].node.gpus.size()
                              ? pools_[n].node.gpus[g].uuid
                              : std::string());
        }
        pp.uuids = std::move(uuids);
      }
      jp.pods.push_back(std::move(pp));
    }
    adm.placement = std::move(jp);
  }
  recs->push_back(journal::MakeRecord(key, WallMs(), adm));
  bool has_command = false;
  for (const auto& ps : w.spec.pod_sets) has_command = has_command || !ps.command.empty();
  if (has_command) launch->push_back(key);
}

bool Daemon::SkipEvictionLocked(const core::Eviction& e, int64_t) {
  if (e.reason != core::EvictionReason::kDeactivated) return false;
  // The daemon's own holds (HoldAdmissionLocked): already handled, not
  // journaled or reported; one whose workload has left the engine since
  // (a later submission may reuse the name) is stale.
  auto own = wl_.find(e.victim);
  const core::WorkloadInfo* cur = engine_.Find(e.victim);
  bool quiet = own != wl_.end() && own->second.quiet_evictions > 0;
  if (quiet) --own->second.quiet_evictions;
  return quiet || cur == nullptr || cur->id != e.victim_id;
}

// An eviction (the loop has counted, emitted and logged it): journal it with
// the pods' SIGKILL deadline and stop them, or complete it at once when
// nothing runs.
void Daemon::OnEvictedLocked(const core::Eviction& e, const core::WorkloadInfo* info, int64_t now) {
  std::vector<store::Record>* recs = &pass_.recs;
  std::vector<std::string>* launch = &pass_.launch;
  std::vector<std::string>* stop = &pass_.stop;
  Wl& victim = wl_[e.victim];
  if (victim.running) {
    int64_t deadline =
        now + std::max<int64_t>(0, victim.spec.termination_grace.value_or(options_.default_grace_ms));
    if (victim.kill_at_ms < 0 || deadline < victim.kill_at_ms) victim.kill_at_ms = deadline;
  }
  journal::Evicted ev{core::EvictionReasonName(e.reason), e.preemptor, e.message, std::nullopt, std::nullopt};
  // The pods' SIGKILL deadline, so that a restarted daemon keeps it.
  if (victim.running) ev.kill_at_ms = victim.kill_at_ms;
  // Its run time so far, this admission's included: a requeued workload's
  // maximum runtime keeps counting it after a restart.
  if (info) ev.used_ms = info->used_time;
  recs->push_back(journal::MakeRecord(e.victim, WallMs(), ev));
  Wl& w = wl_[e.victim];
  if (w.running) {
    stop->push_back(e.victim);
  } else if (info && info->state == core::WorkloadState::kEvicting && StoppedForMaxRuntime(*info)) {
    // Nothing runs (no command, or its start is still pending): it ends
    // Failed at once.
    launch->erase(std::remove(launch->begin(), launch->end(), e.victim), launch->end());
    ReleaseGpusLocked(w);
    w.message = e.message;
    FinishLocked(e.victim, w, now, 0, "Failed", recs);
  } else if (info && info->state == core::WorkloadState::kEvicting) {
    // Nothing runs (a reservation, or admitted this very pass): done now.
    launch->erase(std::remove(launch->begin(), launch->end(), e.victim), launch->end());
    ReleaseGpusLocked(w);
    w.pods.clear();
    (void)engine_.CompleteEviction(e.victim, now);
    recs->push_back(journal::MakeRecord(e.victim, WallMs(), journal::EvictionCompleted{}));
    EmitLocked("Requeued", e.victim, {{"clusterQueue", e.victim_cluster_queue}});
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
  // The host GPUs behind them, from the placement, in the pod's node pool
  // only: whole GPUs, the GPU of each MIG instance and of each memory share,
  // matched by exact UUID (a MIG UUID need not name its parent, and
  // "GPU-x-1" is a prefix of "GPU-x-16").
  std::vector<const std::string*> parents;
  for (const std::string& u : pp.gpus) parents.push_back(&u);
  for (const std::string& u : pp.mig_gpus) parents.push_back(&u);
  for (const std::string& u : pp.share_gpus) parents.push_back(&u);
  for (size_t g = 0; g < gpus_.size(); ++g) {
    if (!pp.node.empty() && g < gpu_node_.size() && gpu_node_[g] != pp.node) continue;
    for (const std::string* u : parents) {
      if (*u == gpus_[g].uuid) {
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
      pl->gpu_memory_share = true;  // libartel-cuda enforces it
      pl->slice_env["CUDA_DEVICE_MEMORY_LIMIT"] = std::to_string(mib) + "m";
      pl->slice_env["ARTEL_GPU_MEMORY_LIMIT"] = std::to_string(mib * 1024 * 1024);
    }
    if (cores > 0) pl->slice_env["CUDA_DEVICE_SM_LIMIT"] = std::to_string(cores);
  }
}

// Launching is batched per pass: the Starting records of every workload the
// pass launches are journaled in one commit before any of them forks, then
// the pods start, then their Started records go in one more commit. Per
// workload the order is the one recovery relies on (docs/daemon.md, "Start
// ids"): Starting durable, then fork, then Started.
bool Daemon::PrepareLaunchLocked(const std::string& key, PendingLaunch* l) {
  const core::WorkloadInfo* info = engine_.Find(key);
  auto it = wl_.find(key);
  if (info == nullptr || it == wl_.end() || info->state != core::WorkloadState::kAdmitted) return false;
  Wl& w = it->second;
  if (w.running || w.cancel_pending || w.stopping) return false;
  bool reuse = !w.pods.empty();  // a retry keeps its GPUs
  std::vector<Pod> pods;
  l->spec.key = key;
  l->spec.log_dir = log_dir_;
  l->spec.grace_ms = w.spec.termination_grace.value_or(options_.default_grace_ms);
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
      pl.env = ps->env.ToMap();
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
      if (auto m = ps->annotations.find(core::kGpuMemoryNeed);
          m != ps->annotations.end() && !pl.slice_env.count("ARTEL_GPU_MEMORY_LIMIT")) {
        auto q = core::ParseQuantity(m->second);
        if (q.ok()) pl.slice_env["ARTEL_GPU_MEMORY_LIMIT"] = std::to_string(*q / 1000);
      }
      if (auto c = ps->requests.find("cpu"); c != ps->requests.end()) pl.cpu_millis = c->second;
      if (auto m = ps->requests.find("memory"); m != ps->requests.end()) pl.memory_bytes = m->second / 1000;
      pod.rp.pod = pl.pod;
      pods.push_back(std::move(pod));
      l->spec.pods.push_back(std::move(pl));
    }
  }
  if (l->spec.pods.empty()) return false;
  w.pods = std::move(pods);
  w.running = true;  // claimed; Start below
  l->submitted_ms = w.submitted_ms;
  w.kill_at_ms = -1;
  // The start gets an id, journaled before the fork (docs/daemon.md,
  // "Start ids"): recovery then tells a start that ran from one that never
  // did, instead of guessing from file times.
  l->spec.start_id = NewStartId();
  w.start_id = l->spec.start_id;
  journal::Starting starting{l->spec.start_id, w.retries, {}};
  for (const Pod& pod : w.pods) starting.pods.push_back({pod.rp.pod, pod.gpus});
  l->starting = journal::MakeRecord(key, WallMs(), starting);
  return true;
}

void Daemon::Launch(const std::vector<std::string>& keys) {
  std::vector<PendingLaunch> ls;
  {
    std::lock_guard<std::mutex> lock(mu());
    for (const std::string& key : keys) {
      PendingLaunch l;
      l.key = key;
      if (PrepareLaunchLocked(key, &l)) ls.push_back(std::move(l));
    }
  }
  if (ls.empty()) return;
  {
    std::vector<store::Record> starting;
    for (const PendingLaunch& l : ls) starting.push_back(l.starting);
    std::shared_lock<std::shared_mutex> jl(journal_mu_);
    if (Status s = AppendAndApply(std::move(starting)); !s.ok()) {
      // Nothing may start that the journal does not know: try again later.
      for (const PendingLaunch& l : ls) {
        const std::string& key = l.key;
        std::lock_guard<std::mutex> lock(mu());
        auto it = wl_.find(key);
        if (it != wl_.end()) {
          it->second.running = false;
          if (!it->second.stopping && !it->second.cancel_pending) pending_launch_.insert(key);
        }
      }
      return;
    }
  }
  if (Failpoint("start-before-fork")) {
    log_->Warn("failpoint start-before-fork: exiting", {{"workload", ls.front().key}});
    std::_Exit(86);
  }
  for (PendingLaunch& l : ls) {
    const std::string& key = l.key;
    runtime::LaunchSpec& spec = l.spec;
    Status prepared = PreparePodUsers(key, l.submitted_ms, &spec);
    int64_t now = WallMs();
    auto started =
        prepared.ok() ? runtime_->Start(spec, now) : Result<std::vector<runtime::RunningPod>>(prepared);
    // Failpoint for the crash tests (docs/daemon.md): die with the pods
    // running and their start not journaled.
    if (started.ok() && Failpoint("start-before-journal")) {
      log_->Warn("failpoint start-before-journal: exiting", {{"workload", key}});
      std::_Exit(86);
    }
    l.started = std::move(started);
    l.now = now;
  }
  std::shared_lock<std::shared_mutex> jl(journal_mu_);
  std::vector<store::Record> recs;
  std::vector<std::pair<std::string, int64_t>> stops;  // key, SIGKILL deadline (-1: now)
  for (PendingLaunch& l : ls) {
    const std::string& key = l.key;
    const auto& started = l.started;
    const int64_t now = l.now;
    bool stop = false;
    int64_t kill_at = -1;
    {
      std::lock_guard<std::mutex> lock(mu());
      auto it = wl_.find(key);
      if (it == wl_.end()) continue;
      Wl& w = it->second;
      if (!started.ok() && w.stopping) {
        // Cancelled while it was starting, and nothing started: done.
        w.running = false;
        for (Pod& pod : w.pods) pod.exited = true;
        CompleteCancelLocked(key, w, NowLocked(), &recs);
      } else if (!started.ok()) {
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
        stop = w.stopping || info == nullptr || info->state != core::WorkloadState::kAdmitted;
        kill_at = w.kill_at_ms;
      }
    }
    if (stop) stops.emplace_back(key, kill_at);
  }
  (void)AppendAndApply(std::move(recs));
  for (const auto& [key, kill_at] : stops) {
    int64_t t = WallMs();
    (void)runtime_->StopAt(key, t, kill_at >= 0 ? kill_at : t);
  }
}

store::Record Daemon::StartedRecord(const std::string& key, const Wl& w, bool recovered) {
  journal::Started started;
  for (const Pod& pod : w.pods) {
    started.pods.push_back(
        {pod.rp.pod, pod.rp.pid, pod.rp.pgid, pod.rp.exit_file, pod.rp.start_file, pod.gpus});
  }
  started.retries = w.retries;
  started.start_id = w.start_id;
  started.started_at_ms = w.started_ms;
  started.recovered = recovered;
  return journal::MakeRecord(key, WallMs(), started);
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

uint64_t Daemon::LatestEventSeq() const { return loop_.LatestEventSeq(); }

std::vector<Json> Daemon::EventsAfter(uint64_t after, int64_t wait_ms,
                                      const std::optional<std::set<std::string>>& ns, uint64_t* next,
                                      const Principal& who) const {
  return loop_.EventsAfter(after, wait_ms, ns, next, who);
}

// ---------------------------------------------------------------------------
// Queries

std::string Daemon::PhaseLocked(const std::string& key, const Wl& w) const {
  if (w.stopping) return "Terminating";  // cancelled; its pods still hold their GPUs
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

Redactor Daemon::RedactorLocked(const Principal& who) const {
  // The redactor's functions run while the caller holds mu_ (its contract),
  // later than this function: the analysis cannot follow them there.
  auto cq_of = [this](const std::string& key) NO_THREAD_SAFETY_ANALYSIS -> std::string {
    if (const core::WorkloadInfo* info = engine_.Find(key); info != nullptr && !info->cluster_queue.empty()) {
      return info->cluster_queue;
    }
    auto it = wl_.find(key);
    return it == wl_.end() ? "" : it->second.cluster_queue;
  };
  auto is_namespace = [this](std::string_view ns) NO_THREAD_SAFETY_ANALYSIS {
    std::string prefix = std::string(ns) + "/";
    auto it = wl_.lower_bound(prefix);
    if (it != wl_.end() && it->first.compare(0, prefix.size(), prefix) == 0) return true;
    const core::Config& cfg = engine_.config();
    for (const auto& n : cfg.namespaces) {
      if (n.name == ns) return true;
    }
    for (const auto& lq : cfg.local_queues) {
      if (lq.ns == ns) return true;
    }
    for (const auto& rq : cfg.resource_quotas) {
      if (rq.ns == ns) return true;
    }
    return false;
  };
  return Redactor(who, cq_of, is_namespace);
}

Json Daemon::WorkloadJsonLocked(const std::string& key, const Wl& w, const Redactor& red) const {
  Json j = WorkloadSpecToJson(w.spec);
  j["metadata"]["creationTimestamp"] = w.submitted_ms;
  Json st = {{"phase", PhaseLocked(key, w)}};
  const core::WorkloadInfo* info = engine_.Find(key);
  if (info) {
    st["clusterQueue"] = info->cluster_queue;
    st["priority"] = info->priority;
    st["evictions"] = std::max(0, info->evictions - w.own_evictions);
    // Kueue's field: the time of its earlier admissions, counted against
    // its maximum runtime (docs/semantics.md §11).
    if (info->used_time > 0) st["accumulatedPastExecutionTimeSeconds"] = info->used_time / 1000;
    if (info->state == core::WorkloadState::kAdmitted || info->state == core::WorkloadState::kEvicting) {
      st["admission"] = AdmissionJson(*info, w.admitted_ms);
    }
    if (info->state == core::WorkloadState::kPending) {
      st["pending"] = {{"reason", core::PendingReasonKindName(info->pending->kind)},
                       {"message", red.PendingMessage(info->pending)}};
    }
    // The daemon's own holds (HoldAdmissionLocked) are not evictions to show.
    if (info->last_eviction &&
        !(w.own_evictions > 0 && info->last_eviction->reason == core::EvictionReason::kDeactivated)) {
      const auto& e = *info->last_eviction;
      st["lastEviction"] = {
          {"reason", core::EvictionReasonName(e.reason)},
          {"message", red.EvictionMessage(e.message, e.preemptor, e.preemptor_cluster_queue)},
          {"time", e.at}};
      if (!e.preemptor.empty() && red.Visible(e.preemptor)) st["lastEviction"]["preemptor"] = e.preemptor;
      if (!e.preemptor_cluster_queue.empty()) {
        st["lastEviction"]["preemptorClusterQueue"] = e.preemptor_cluster_queue;
      }
    }
  }
  if (info == nullptr && !w.cluster_queue.empty()) st["clusterQueue"] = w.cluster_queue;
  if (w.admitted_ms >= 0) st["admittedAt"] = w.admitted_ms;
  if (w.started_ms >= 0) st["startedAt"] = w.started_ms;
  if (w.finished_ms >= 0) st["finishedAt"] = w.finished_ms;
  if (w.exit_code) st["exitCode"] = *w.exit_code;
  if (w.retries) st["retries"] = w.retries;
  if (!w.message.empty()) st["message"] = red.Scrub(w.message);
  if (!w.pods.empty()) {
    Json pods = Json::array();
    for (const auto& p : w.pods) {
      Json gj = Json::array();
      for (int g : p.gpus) {
        if (g >= 0 && g < static_cast<int>(gpus_.size())) gj.push_back(gpus_[g].uuid);
      }
      Json pj = {{"name", p.rp.pod}, {"pid", p.rp.pid}, {"gpus", gj}, {"running", w.running && !p.exited}};
      // MIG instances: which slice of which GPU.
      const core::WorkloadInfo* info = engine_.Find(key);
      const core::PodPlacementInfo* pp = info != nullptr ? PodPlacement(*info, p.rp.pod) : nullptr;
      if (pp != nullptr && !pp->mig.empty()) {
        Json slices = Json::array();
        for (size_t m = 0; m < pp->mig.size(); ++m) {
          const std::string& ps = pp->mig[m];
          Json s = {{"profile", ps.substr(0, ps.find('@'))}};
          if (m < pp->mig_gpus.size()) s["gpu"] = pp->mig_gpus[m];
          if (m < pp->mig_uuids.size()) s["uuid"] = pp->mig_uuids[m];
          if (ps.find('@') != std::string::npos) s["start"] = std::atoi(ps.c_str() + ps.find('@') + 1);
          slices.push_back(std::move(s));
        }
        pj["migSlices"] = std::move(slices);
      }
      // Memory shares ("gpuIndex:memMiB:cores%"): which GPU, how much of it (the web UI's placements).
      if (pp != nullptr && !pp->shares.empty()) {
        Json shares = Json::array();
        for (size_t m = 0; m < pp->shares.size(); ++m) {
          int idx = 0, mib = 0, cores = 0;
          std::sscanf(pp->shares[m].c_str(), "%d:%d:%d", &idx, &mib, &cores);
          Json s = {{"gpuIndex", idx}, {"memoryMiB", mib}, {"corePercent", cores}};
          if (m < pp->share_gpus.size()) s["gpu"] = pp->share_gpus[m];
          shares.push_back(std::move(s));
        }
        pj["memoryShares"] = std::move(shares);
      }
      if (pp != nullptr && !pp->node.empty()) pj["node"] = pp->node;
      if (p.exited) pj["exitCode"] = p.exit.signaled ? 128 + p.exit.signal : p.exit.exit_code;
      pods.push_back(pj);
    }
    st["pods"] = pods;
  }
  j["status"] = st;
  return j;
}

Result<Json> Daemon::GetWorkload(const std::string& key, const Principal& who) const {
  std::lock_guard<std::mutex> lock(mu());
  auto it = wl_.find(key);
  if (it == wl_.end()) return NotFound("workload " + key + " not found");
  return WorkloadJsonLocked(key, it->second, RedactorLocked(who));
}

Json Daemon::ListWorkloads(const ListFilter& f, const Principal& who) const {
  std::lock_guard<std::mutex> lock(mu());
  const Redactor red = RedactorLocked(who);
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
    items.push_back(WorkloadJsonLocked(key, w, red));
  }
  return Json{{"kind", "WorkloadList"}, {"items", items}};
}

Result<Json> Daemon::Why(const std::string& key, const Principal& who) const {
  std::lock_guard<std::mutex> lock(mu());
  const Redactor red = RedactorLocked(who);
  auto it = wl_.find(key);
  if (it == wl_.end()) return NotFound("workload " + key + " not found");
  Json j = {{"workload", key}, {"phase", PhaseLocked(key, it->second)}};
  if (engine_.Find(key) == nullptr || !it->second.terminal.empty()) {  // Terminating: held, not waiting
    j["reason"] = "None";
    j["message"] = "the workload is " + PhaseLocked(key, it->second) + "; it is not waiting";
    return j;
  }
  auto r = loop_.WhyLocked(key, red);
  if (!r.ok()) return r.status();
  j.update(*r);
  return j;
}

Json Daemon::ClusterQueues() const { return loop_.ClusterQueuesJson(); }

Json Daemon::LocalQueues(const std::optional<std::set<std::string>>& namespaces) const {
  return loop_.LocalQueuesJson(namespaces);
}

Json Daemon::Cohorts() const { return loop_.CohortsJson(); }

Json Daemon::Nodes() const {
  std::lock_guard<std::mutex> lock(mu());
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
  // Each flavor's GPU product where it is known (inventory.h), for the web
  // UI's per-product grouping.
  std::vector<core::placement::NodeSpec> specs;
  for (const HostPool& p : pools_) specs.push_back(p.node);
  const Json products = FlavorGpuProducts(engine_.config(), specs);
  if (pools_.empty())
    return Json{{"kind", "NodeList"}, {"items", Json::array({n})}, {"flavorProducts", products}};
  // One item per node pool (a placement node), with its labels and taints.
  Json items = Json::array();
  for (const HostPool& p : pools_) {
    std::map<std::string, int> pm;
    int pused = 0;
    for (int g : p.gpus) {
      ++pm[gpus_[static_cast<size_t>(g)].model];
      if (!gpu_owner_[static_cast<size_t>(g)].empty()) ++pused;
    }
    Json taints = Json::array();
    for (const core::Taint& t : p.node.taints)
      taints.push_back({{"key", t.key}, {"value", t.value}, {"effect", t.effect}});
    Json j = n;
    j["name"] = p.node.name;
    j["host"] = options_.hostname;
    j["pool"] = p.name;
    j["gpus"] = p.gpus.size();
    j["gpuIndices"] = p.gpus;
    j["gpusInUse"] = pused;
    j["models"] = pm;
    j["labels"] = p.node.labels;
    j["taints"] = taints;
    items.push_back(j);
  }
  return Json{{"kind", "NodeList"}, {"items", items}, {"flavorProducts", products}};
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
  std::lock_guard<std::mutex> lock(mu());
  Json items = Json::array();
  int64_t now = WallMs();
  // The MIG instances in use, by the UUID of their GPU, from the placements
  // of the workloads that hold GPUs.
  std::map<std::string, Json> slices_of;
  for (const auto& [key, w] : wl_) {
    if (w.pods.empty() || !w.terminal.empty()) continue;
    const core::WorkloadInfo* info = engine_.Find(key);
    if (info == nullptr) continue;
    for (const auto& pod : w.pods) {
      const core::PodPlacementInfo* pp = PodPlacement(*info, pod.rp.pod);
      if (pp == nullptr) continue;
      for (size_t m = 0; m < pp->mig.size() && m < pp->mig_gpus.size(); ++m) {
        const std::string& ps = pp->mig[m];
        Json s = {{"profile", ps.substr(0, ps.find('@'))}};
        if (ps.find('@') != std::string::npos) s["start"] = std::atoi(ps.c_str() + ps.find('@') + 1);
        if (m < pp->mig_uuids.size()) s["uuid"] = pp->mig_uuids[m];
        if (who.CanUseNamespace(w.spec.ns)) {
          s["workload"] = key;
          s["pod"] = pod.rp.pod;
        } else {
          s["workload"] = "(other tenant)";
        }
        slices_of[pp->mig_gpus[m]].push_back(std::move(s));
      }
    }
  }
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
              {"node", i < gpu_node_.size() && !gpu_node_[i].empty() ? gpu_node_[i] : options_.hostname}};
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
    // Every pod on the GPU (MIG instances and memory shares hold one GPU
    // for several pods).
    if (i < gpu_users_.size() && gpu_users_[i].size() > 1) {
      Json users = Json::array();
      for (const std::string& u : gpu_users_[i]) {
        size_t slash = u.rfind('/');
        if (who.CanUseNamespace(Ns(u))) {
          users.push_back({{"workload", u.substr(0, slash)}, {"pod", u.substr(slash + 1)}});
        } else {
          users.push_back({{"workload", "(other tenant)"}});
        }
      }
      j["users"] = std::move(users);
    }
    if (g.mig_enabled) {
      Json inst = slices_of.count(g.uuid) ? slices_of[g.uuid] : Json::array();
      int used_slices = 0;
      for (const auto& s : inst) used_slices += MigComputeSlices(s.value("profile", ""));
      j["migSlices"] = {{"total", 7}, {"used", used_slices}, {"instances", std::move(inst)}};
    }
    items.push_back(j);
  }
  return Json{{"kind", "GpuList"}, {"mode", gpu_mode_}, {"items", items}};
}

std::optional<int32_t> Daemon::PriorityClassValue(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu());
  for (const core::PriorityClassSpec& p : engine_.config().priority_classes) {
    if (p.name == name) return p.value;
  }
  return std::nullopt;
}

Json Daemon::Config(const Principal& who) const {
  std::lock_guard<std::mutex> lock(mu());
  Json objs = Json::array();
  std::string text;
  for (const auto& [k, o] : docs_) {
    if (!o.ns.empty() && !who.CanUseNamespace(o.ns)) continue;
    Json j = {{"kind", o.kind}, {"namespace", o.ns}, {"name", o.name}};
    if (who.is_admin()) {
      j["apiVersion"] = o.api_version;
      auto f = file_managed_.find(k);
      if (f != file_managed_.end()) j["file"] = f->second;
    }
    objs.push_back(std::move(j));
    if (who.is_admin()) text += "---\n" + o.text;
  }
  Json j = {{"objects", objs}};
  if (who.is_admin()) j["manifests"] = text;
  return j;
}

Result<std::string> Daemon::Logs(const std::string& key, const std::string& pod, int64_t tail_bytes) const {
  std::vector<std::string> pods;
  {
    std::lock_guard<std::mutex> lock(mu());
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

std::string Daemon::Metrics() const {
  PromWriter pw;
  std::lock_guard<std::mutex> lock(mu());
  loop_.MetricsLocked(&pw);  // Kueue's names and the engine's

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
  for (const auto& smp : samples)
    pw.Sample("artel_gpu_memory_used_bytes", smp.labels, static_cast<double>(smp.mem));
  pw.Family("artel_gpu_memory_total_bytes", "gauge", "GPU framebuffer size.");
  for (size_t i = 0; i < gpus_.size(); ++i)
    pw.Sample("artel_gpu_memory_total_bytes", samples[i].labels, static_cast<double>(gpus_[i].memory_bytes));
  pw.Family("artel_gpu_healthy", "gauge", "1 when the GPU reports healthy (NVML), 0 otherwise.");
  for (const auto& g : gpus_) {
    pw.Sample("artel_gpu_healthy",
              {{"gpu", std::to_string(g.index)},
               {"UUID", g.uuid},
               {"modelName", g.model},
               {"Hostname", options_.hostname}},
              g.healthy ? 1 : 0);
  }
  pw.Family("artel_node_ready", "gauge",
            "1 when the node's runtime and GPU discovery work (standalone: this host).");
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
