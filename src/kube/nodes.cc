#include "kube/nodes.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "core/placement/gpu_geometry.h"
#include "core/quantity.h"

namespace artel::kube {
namespace {

namespace pl = core::placement;

const std::string* StrField(const Json& o, const char* key) {
  auto it = o.find(key);
  return it != o.end() && it->is_string() ? &it->get_ref<const std::string&>() : nullptr;
}

constexpr char kMigPrefix[] = "nvidia.com/mig-";

// The MIG instances a node advertises (nvidia.com/mig-<profile>: N), laid
// out first-fit, widest first, on as few GPUs of the node's model as hold
// them. The device plugin does not say which GPU holds which instance; the
// layout only has to hold the same instances.
Status LayOutMig(int model, const std::vector<std::pair<std::string, int64_t>>& mig,
                 std::vector<pl::GpuSpec>* gpus) {
  struct Inst {
    int shape;
    std::string profile;
  };
  std::vector<Inst> insts;
  for (const auto& [profile, count] : mig) {
    int shape = pl::FindProfile(model, profile);
    if (shape < 0)
      return InvalidArgument("MIG profile " + profile + " is unknown for " + pl::GpuModel(model).name);
    for (int64_t i = 0; i < count; ++i) insts.push_back({shape, pl::CanonicalMigProfile(profile)});
  }
  std::stable_sort(insts.begin(), insts.end(), [](const Inst& a, const Inst& b) {
    return pl::Shape(a.shape).slices > pl::Shape(b.shape).slices;
  });
  struct State {
    uint8_t mask = 0;
    int compute = 0;
    bool media = false;
    pl::GpuSpec spec;
  };
  std::vector<State> st;
  for (const Inst& in : insts) {
    bool done = false;
    for (size_t g = 0; g <= st.size() && !done; ++g) {
      if (g == st.size()) {
        State s;
        s.spec.model = pl::GpuModel(model).name;
        s.spec.mig = true;
        st.push_back(std::move(s));
      }
      State& s = st[g];
      for (int start = 0; start < pl::kMigMemorySlices && !done; ++start) {
        if (!pl::CanCreate(in.shape, start, s.mask, s.compute, s.media)) continue;
        s.mask |= pl::SliceMask(in.shape, start);
        s.compute += pl::Shape(in.shape).compute;
        s.media = s.media || pl::Shape(in.shape).media;
        s.spec.mig_layout.push_back({in.profile, start});
        done = true;
      }
      if (!done && s.mask == 0) return InvalidArgument("MIG profile " + in.profile + " fits no GPU");
    }
  }
  for (State& s : st) gpus->push_back(std::move(s.spec));
  return Status::Ok();
}

}  // namespace

Result<pl::NodeSpec> NodeSpecFromObject(const Json& node) {
  pl::NodeSpec n;
  if (!node.is_object()) return InvalidArgument("a Node must be an object");
  const Json meta = node.value("metadata", Json::object());
  const std::string* name = StrField(meta, "name");
  if (name == nullptr || name->empty()) return InvalidArgument("Node: metadata.name is required");
  n.name = *name;
  const std::string where = "Node " + n.name + ": ";
  if (auto it = meta.find("labels"); it != meta.end() && it->is_object()) {
    for (auto l = it->begin(); l != it->end(); ++l) {
      if (l->is_string()) n.labels[l.key()] = l->get<std::string>();
    }
  }
  const Json spec = node.value("spec", Json::object());
  bool unschedulable = spec.value("unschedulable", false);
  if (auto it = spec.find("taints"); it != spec.end() && it->is_array()) {
    for (const Json& t : *it) {
      core::Taint taint;
      taint.key = t.value("key", "");
      taint.value = t.value("value", "");
      taint.effect = t.value("effect", "");
      // Cordoning is readiness here; the scheduler's own taint is not repeated.
      if (taint.key == "node.kubernetes.io/unschedulable") continue;
      n.taints.push_back(std::move(taint));
    }
  }
  const Json status = node.value("status", Json::object());
  bool ready = false;
  if (auto it = status.find("conditions"); it != status.end() && it->is_array()) {
    for (const Json& c : *it) {
      if (c.value("type", "") == "Ready") ready = c.value("status", "") == "True";
    }
  }
  n.ready = ready && !unschedulable;
  std::vector<std::pair<std::string, int64_t>> mig;
  int64_t whole = 0;
  if (auto it = status.find("allocatable"); it != status.end() && it->is_object()) {
    for (auto a = it->begin(); a != it->end(); ++a) {
      std::string text = a->is_string() ? a->get<std::string>() : a->is_number() ? a->dump() : "";
      Result<core::Amount> q = core::ParseQuantity(text);
      if (!q.ok())
        return InvalidArgument(where + "status.allocatable." + a.key() + ": " + q.status().message());
      const std::string& res = a.key();
      if (res.starts_with(kMigPrefix)) {
        if (*q >= 1000) mig.emplace_back(res.substr(sizeof(kMigPrefix) - 1), *q / 1000);
        continue;
      }
      if (res == "nvidia.com/gpu") whole = *q / 1000;
      n.allocatable[res] = *q;
    }
  }
  if (!mig.empty()) {
    auto product = n.labels.find(pl::kGpuProductLabel);
    int model = product == n.labels.end() ? -1 : pl::FindGpuModel(product->second);
    if (model < 0) {
      return InvalidArgument(where + "advertises MIG instances but its " + pl::kGpuProductLabel +
                             " label names no GPU model with MIG geometry");
    }
    for (int64_t i = 0; i < whole; ++i) n.gpus.push_back(pl::GpuSpec{.model = pl::GpuModel(model).name});
    if (Status s = LayOutMig(model, mig, &n.gpus); !s.ok()) return InvalidArgument(where + s.message());
    n.allocatable.erase("nvidia.com/gpu");
  }
  return n;
}

NodeWatcher::NodeWatcher(ClientConfig config, NodeWatcherOptions options, server::Logger* log)
    : config_(std::move(config)), options_(options), log_(log) {}

NodeWatcher::~NodeWatcher() { Stop(); }

Status NodeWatcher::Start(std::function<void()> wake, int64_t timeout_ms) {
  wake_ = std::move(wake);
  client_ = std::make_unique<Client>(config_);
  Informer::Handler h;
  auto put = [this](const Json& o, bool deleted) {
    std::string name = o.value("metadata", Json::object()).value("name", "");
    {
      std::lock_guard<std::mutex> l(in_mu_);
      inbox_[name] = deleted ? std::nullopt : std::optional<Json>(o);
    }
    if (wake_) wake_();
  };
  h.on_add = [put](const Json& o) { put(o, false); };
  h.on_update = [put](const Json& o) { put(o, false); };
  h.on_delete = [put](const Json& o) { put(o, true); };
  h.on_synced = [this] {
    std::lock_guard<std::mutex> l(in_mu_);
    synced_ = true;
  };
  informer_ = std::make_unique<Informer>(client_.get(), kNodes, "", h);
  informer_->Start();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    {
      std::lock_guard<std::mutex> l(in_mu_);
      if (synced_) return Status::Ok();
    }
    if (std::chrono::steady_clock::now() > deadline) {
      std::string err = informer_->last_error();
      return FailedPrecondition(
          "the Node informer did not list the nodes in time" + (err.empty() ? std::string() : ": " + err) +
          " (arteld needs get/list/watch on nodes: deploy/kubernetes/clusterrole.yaml)");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void NodeWatcher::Stop() {
  if (informer_) informer_->Stop();
}

bool NodeWatcher::Poll(int64_t now) {
  {
    std::lock_guard<std::mutex> l(in_mu_);
    for (auto& [name, obj] : inbox_) changes_[name] = std::move(obj);
    inbox_.clear();
  }
  if (!changes_.empty()) return true;
  for (const auto& [name, since] : not_ready_since_) {
    if (!lost_.count(name) && now - since >= options_.lost_grace_ms) return true;
  }
  return false;
}

void NodeWatcher::EvictOnLocked(core::Engine& engine, const std::string& node, const std::string& why,
                                int64_t now) {
  for (const core::WorkloadInfo* w : engine.Workloads(/*with_reasons=*/false)) {
    if (w->state != core::WorkloadState::kAdmitted) continue;
    bool on = std::any_of(w->placements.begin(), w->placements.end(),
                          [&](const core::PodPlacementInfo& p) { return p.node == node; });
    if (!on) continue;
    log_->Warn("node lost: evicting its workload", {{"node", node}, {"workload", w->key}, {"why", why}});
    (void)engine.Evict(w->key, core::EvictionReason::kNodeFailures, "node " + node + " " + why, now);
  }
}

void NodeWatcher::SyncLocked(core::Engine& engine, int64_t now) {
  bool rebuild = false;
  std::vector<std::pair<std::string, bool>> readiness;
  std::vector<pl::NodeSpec> added;
  for (auto& [name, obj] : changes_) {
    auto it = nodes_.find(name);
    if (!obj) {
      if (it == nodes_.end()) continue;
      if (!lost_.count(name)) EvictOnLocked(engine, name, "was deleted", now);
      nodes_.erase(it);
      not_ready_since_.erase(name);
      lost_.erase(name);
      rebuild = true;
      {
        std::lock_guard<std::mutex> l(stats_mu_);
        nodes_lost_++;
      }
      continue;
    }
    auto spec = NodeSpecFromObject(*obj);
    if (!spec.ok()) {
      log_->Warn("node left out of placement", {{"node", name}, {"error", spec.status().ToString()}});
      continue;
    }
    // The Ready condition (not cordoning) decides whether the node is lost.
    bool cond_ready = false;
    for (const Json& c : obj->value("status", Json::object()).value("conditions", Json::array())) {
      if (c.value("type", "") == "Ready") cond_ready = c.value("status", "") == "True";
    }
    if (cond_ready) {
      not_ready_since_.erase(name);
      lost_.erase(name);
    } else if (!not_ready_since_.count(name)) {
      not_ready_since_[name] = now;
    }
    if (it == nodes_.end()) {
      added.push_back(*spec);
      nodes_[name] = std::move(*spec);
      continue;
    }
    pl::NodeSpec& old = it->second;
    bool same = old.labels == spec->labels && old.allocatable == spec->allocatable &&
                old.taints.size() == spec->taints.size() && old.gpus.size() == spec->gpus.size();
    for (size_t i = 0; same && i < old.taints.size(); ++i) {
      same = old.taints[i].key == spec->taints[i].key && old.taints[i].value == spec->taints[i].value &&
             old.taints[i].effect == spec->taints[i].effect;
    }
    for (size_t i = 0; same && i < old.gpus.size(); ++i) {
      same = old.gpus[i].model == spec->gpus[i].model && old.gpus[i].mig == spec->gpus[i].mig &&
             old.gpus[i].mig_layout.size() == spec->gpus[i].mig_layout.size();
    }
    if (!same) rebuild = true;
    if (old.ready != spec->ready) readiness.emplace_back(name, spec->ready);
    old = std::move(*spec);
  }
  changes_.clear();
  // Nodes not ready past the grace: their workloads go elsewhere.
  for (const auto& [name, since] : not_ready_since_) {
    if (lost_.count(name) || now - since < options_.lost_grace_ms) continue;
    lost_.insert(name);
    EvictOnLocked(engine, name, "is not ready", now);
    std::lock_guard<std::mutex> l(stats_mu_);
    nodes_lost_++;
  }
  if (!rebuild && !added.empty() && engine.cluster() == nullptr) rebuild = true;
  if (rebuild) {
    std::vector<pl::NodeSpec> all;
    all.reserve(nodes_.size());
    for (const auto& [name, n] : nodes_) all.push_back(n);
    if (Status s = engine.SetNodes(std::move(all)); !s.ok())
      log_->Warn("nodes not applied", {{"error", s.ToString()}});
    return;
  }
  for (pl::NodeSpec& n : added) {
    if (Status s = engine.AddNode(std::move(n)); !s.ok())
      log_->Warn("node not added", {{"error", s.ToString()}});
  }
  for (const auto& [name, ready] : readiness) {
    if (Status s = engine.SetNodeReady(name, ready); !s.ok())
      log_->Warn("node readiness not applied", {{"node", name}, {"error", s.ToString()}});
  }
}

uint64_t NodeWatcher::nodes_lost() const {
  std::lock_guard<std::mutex> l(stats_mu_);
  return nodes_lost_;
}

}  // namespace artel::kube
