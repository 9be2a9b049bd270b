#include "kube/ungater.h"

#include <algorithm>
#include <vector>

#include "core/placement/placement.h"
#include "kube/kueue_map.h"

namespace artel::kube {
namespace {

bool Gated(const Json& pod) {
  const Json gates = pod.value("spec", Json::object()).value("schedulingGates", Json::array());
  return std::any_of(gates.begin(), gates.end(),
                     [](const Json& g) { return g.value("name", "") == kTopologyGate; });
}

bool Active(const Json& pod) {
  const Json meta = pod.value("metadata", Json::object());
  if (meta.contains("deletionTimestamp") && !meta["deletionTimestamp"].is_null()) return false;
  std::string phase = pod.value("status", Json::object()).value("phase", "");
  return phase != "Succeeded" && phase != "Failed";
}

// The node a pod is (or will be) on: its hostname nodeSelector, else its nodeName.
std::string PinnedNode(const Json& pod) {
  const Json spec = pod.value("spec", Json::object());
  const Json sel = spec.value("nodeSelector", Json::object());
  if (auto it = sel.find(core::placement::kHostnameLabel); it != sel.end() && it->is_string())
    return it->get<std::string>();
  return spec.value("nodeName", "");
}

int64_t Rv(const Json& obj) {
  const std::string rv = obj.value("metadata", Json::object()).value("resourceVersion", "");
  try {
    return rv.empty() ? 0 : std::stoll(rv);
  } catch (...) {
    return 0;
  }
}

// What the ungater reads of a pod; the rest of the object is not kept (with
// thousands of pods the full objects cost hundreds of MiB).
Json Trim(const Json& pod) {
  Json out = Json::object();
  const Json meta = pod.value("metadata", Json::object());
  Json m = Json::object();
  for (const char* k : {"name", "namespace", "resourceVersion", "deletionTimestamp"})
    if (meta.contains(k)) m[k] = meta[k];
  const Json labels = meta.value("labels", Json::object());
  if (labels.contains(kPodSetLabel)) m["labels"][kPodSetLabel] = labels[kPodSetLabel];
  const Json ann = meta.value("annotations", Json::object());
  if (ann.contains(kWorkloadAnnotation)) m["annotations"][kWorkloadAnnotation] = ann[kWorkloadAnnotation];
  out["metadata"] = m;
  const Json spec = pod.value("spec", Json::object());
  Json sp = Json::object();
  for (const char* k : {"schedulingGates", "nodeSelector", "nodeName"})
    if (spec.contains(k)) sp[k] = spec[k];
  out["spec"] = sp;
  const Json status = pod.value("status", Json::object());
  if (status.contains("phase")) out["status"]["phase"] = status["phase"];
  return out;
}

// Whether some pod set of the Workload's admission has a topology assignment.
bool HasTopologyAssignment(const Json& wl) {
  auto st = wl.find("status");
  if (st == wl.end() || !st->is_object()) return false;
  auto adm = st->find("admission");
  if (adm == st->end() || !adm->is_object()) return false;
  auto psa = adm->find("podSetAssignments");
  if (psa == adm->end() || !psa->is_array()) return false;
  for (const Json& p : *psa) {
    if (!p.is_object()) continue;
    auto ta = p.find("topologyAssignment");
    if (ta != p.end() && !ta->is_null()) return true;
  }
  return false;
}

}  // namespace

TopologyUngater::TopologyUngater(ClientConfig config, Resource workloads, server::Logger* log)
    : config_(std::move(config)), workloads_res_(std::move(workloads)), log_(log) {}

TopologyUngater::~TopologyUngater() { Stop(); }

void TopologyUngater::OnWorkloadEvent(const Json& wl, bool deleted) {
  // Called on the controller's loop thread (AddWorkloadListener): read the
  // key in place rather than copying the metadata.
  auto meta = wl.find("metadata");
  const bool has_meta = meta != wl.end() && meta->is_object();
  std::string key =
      (has_meta ? meta->value("namespace", "") : "") + "/" + (has_meta ? meta->value("name", "") : "");
  {
    std::lock_guard<std::mutex> l(mu_);
    // Only Workloads admitted with a topology assignment have pods to
    // ungate (Reconcile): the others are not kept.
    if (deleted || !HasTopologyAssignment(wl)) {
      workloads_.erase(key);
    } else {
      workloads_[key] = wl;
    }
  }
  if (!deleted) Enqueue(key);
}

void TopologyUngater::Start(bool watch_workloads) {
  pod_client_ = std::make_unique<Client>(config_);
  writer_ = std::make_unique<Client>(config_);
  worker_ = std::thread([this] { WorkerMain(); });
  Informer::Handler ph;
  auto pod_put = [this](const Json& full, bool deleted) {
    const Json pod = Trim(full);
    const Json meta = pod.value("metadata", Json::object());
    std::string ns = meta.value("namespace", ""), name = meta.value("name", "");
    std::string wl = meta.value("annotations", Json::object()).value(kWorkloadAnnotation, "");
    std::string key;
    {
      std::lock_guard<std::mutex> l(mu_);
      auto owner = pod_owner_.find(ns + "/" + name);
      if (owner != pod_owner_.end()) {
        pods_[owner->second].erase(name);
        key = owner->second;
        pod_owner_.erase(owner);
      }
      if (!deleted && !wl.empty()) {
        key = ns + "/" + wl;
        // Our own patch's answer may be newer than what the informer
        // delivers next (an older event still in flight): keep the newer.
        Json& cached = pods_[key][name];
        if (cached.is_null() || Rv(pod) >= Rv(cached)) cached = pod;
        pod_owner_[ns + "/" + name] = key;
      }
    }
    if (!key.empty()) Enqueue(key);
  };
  ph.on_add = [pod_put](const Json& o) { pod_put(o, false); };
  ph.on_update = [pod_put](const Json& o) { pod_put(o, false); };
  ph.on_delete = [pod_put](const Json& o) { pod_put(o, true); };
  ListOptions po;
  po.label_selector = kPodSetLabel;
  pods_inf_ = std::make_unique<Informer>(pod_client_.get(), kPods, "", ph, po);
  pods_inf_->SetSlimCache(true);  // the handler keeps its own trimmed copy
  pods_inf_->Start();
  if (!watch_workloads) return;
  wl_client_ = std::make_unique<Client>(config_);
  Informer::Handler wh;
  wh.on_add = [this](const Json& o) { OnWorkloadEvent(o, false); };
  wh.on_update = [this](const Json& o) { OnWorkloadEvent(o, false); };
  wh.on_delete = [this](const Json& o) { OnWorkloadEvent(o, true); };
  wls_inf_ = std::make_unique<Informer>(wl_client_.get(), workloads_res_, "", wh);
  wls_inf_->SetSlimCache(true);  // the handler keeps its own copy (workloads_)
  wls_inf_->Start();
}

void TopologyUngater::Stop() {
  if (pods_inf_) pods_inf_->Stop();
  if (wls_inf_) wls_inf_->Stop();
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
}

void TopologyUngater::Enqueue(const std::string& key) {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (!queued_.insert(key).second) return;
    queue_.push_back(key);
  }
  cv_.notify_one();
}

void TopologyUngater::WorkerMain() {
  for (;;) {
    std::string key;
    {
      std::unique_lock<std::mutex> l(mu_);
      cv_.wait(l, [this] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      key = queue_.front();
      queue_.pop_front();
      queued_.erase(key);
    }
    Reconcile(key);
  }
}

void TopologyUngater::Reconcile(const std::string& key) {
  Json wl;
  std::map<std::string, Json> pods;
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = workloads_.find(key);
    if (it == workloads_.end()) return;
    wl = it->second;
    auto p = pods_.find(key);
    if (p == pods_.end()) return;
    pods = p->second;
  }
  auto obs = ObserveWorkload(wl);
  if (!obs.ok() || !obs->quota_reserved || obs->evicted || obs->finished) return;
  const std::string ns = key.substr(0, key.find('/'));
  bool stale = false;  // a patch failed on a pod our cache had older than the cluster
  for (size_t i = 0; i < obs->admission.size() && i < obs->topology.size(); ++i) {
    const std::vector<std::pair<std::string, int32_t>>& nodes = obs->topology[i];
    if (nodes.empty()) continue;
    const std::string& pod_set = obs->admission[i].name;
    std::vector<std::pair<std::string, int32_t>> left = nodes;
    std::vector<const Json*> gated;  // by name (std::map order)
    for (const auto& [name, pod] : pods) {
      const Json meta = pod.value("metadata", Json::object());
      if (meta.value("labels", Json::object()).value(kPodSetLabel, "") != pod_set || !Active(pod)) continue;
      if (Gated(pod)) {
        if (PinnedNode(pod).empty()) {
          gated.push_back(&pod);
          continue;
        }
      }
      std::string node = PinnedNode(pod);
      for (auto& [n, c] : left) {
        if (n == node && c > 0) {
          --c;
          break;
        }
      }
    }
    for (const Json* pod : gated) {
      auto slot = std::find_if(left.begin(), left.end(), [](const auto& nc) { return nc.second > 0; });
      if (slot == left.end()) break;  // more pods than assigned: they wait
      const std::string name = pod->value("metadata", Json::object()).value("name", "");
      Json gates = Json::array();
      for (const Json& g : (*pod)["spec"].value("schedulingGates", Json::array())) {
        if (g.value("name", "") != kTopologyGate) gates.push_back(g);
      }
      Json patch = {{"spec",
                     {{"nodeSelector", {{core::placement::kHostnameLabel, slot->first}}},
                      {"schedulingGates", gates.empty() ? Json(nullptr) : gates}}}};
      auto r = writer_->MergePatch(kPods, ns, name, patch);
      if (!r.ok()) {
        log_->Warn("topology ungating failed", {{"pod", ns + "/" + name}, {"error", r.error().ToString()}});
        // Read it back: when the cluster has a newer pod (pinned meanwhile by
        // a pass that worked on the same pods), decide again on it.
        auto fresh = writer_->Get(kPods, ns, name);
        if (fresh.ok() && Rv(fresh.value()) > Rv(*pod)) {
          std::lock_guard<std::mutex> l(mu_);
          Json& cached = pods_[key][name];
          if (Rv(fresh.value()) > Rv(cached)) cached = Trim(fresh.value());
          stale = true;
        }
        continue;
      }
      {
        // The patched pod is what the next pass must count, whatever the
        // informer has delivered by then.
        std::lock_guard<std::mutex> l(mu_);
        Json& cached = pods_[key][name];
        if (Rv(r.value()) > Rv(cached)) cached = Trim(r.value());
      }
      slot->second--;
      ungated_++;
    }
  }
  if (stale) Enqueue(key);
}

}  // namespace artel::kube
