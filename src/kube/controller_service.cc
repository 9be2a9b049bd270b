// The HTTP API's view of a Kubernetes-mode arteld (server::Service): read
// verbs from the engine and the loop's views, mutations refused.
#include <algorithm>
#include <set>

#include "api/codec.h"
#include "core/quantity.h"
#include "kube/controller.h"

namespace artel::kube {
namespace {

Status UseKubectl(const std::string& what) {
  return FailedPrecondition("arteld runs in Kubernetes mode: use kubectl to " + what +
                            " (the cluster is the source of truth)");
}

Json AdmissionJson(const core::WorkloadInfo& info) {
  Json sets = Json::array();
  for (const auto& a : info.admission) {
    Json usage = Json::object();
    for (const auto& [r, v] : a.resource_usage) usage[r] = core::FormatQuantity(v);
    sets.push_back({{"name", a.name}, {"count", a.count}, {"flavors", a.flavors}, {"resourceUsage", usage}});
  }
  return {{"clusterQueue", info.cluster_queue}, {"podSets", sets}, {"admittedAt", info.admitted_at}};
}

}  // namespace

Result<Json> Controller::Submit(core::WorkloadSpec, const std::string&, const std::string&) {
  return UseKubectl("create Workloads (kubectl create -f workload.yaml)");
}
Result<Json> Controller::Cancel(const std::string&, const std::string&) {
  return UseKubectl("delete Workloads (kubectl delete workload NAME -n NAMESPACE)");
}
Result<Json> Controller::Apply(std::string_view, const server::Principal&) {
  return UseKubectl("apply configuration (kubectl apply -f / -k)");
}

server::Redactor Controller::RedactorLocked(const server::Principal& who) const {
  auto cq_of = [this](const std::string& key) -> std::string {
    if (const core::WorkloadInfo* info = loop_->engine().Find(key); info != nullptr)
      return info->cluster_queue;
    return "";
  };
  auto is_namespace = [this](std::string_view ns) {
    std::string prefix = std::string(ns) + "/";
    auto it = wls_.lower_bound(prefix);
    if (it != wls_.end() && it->first.compare(0, prefix.size(), prefix) == 0) return true;
    const core::Config& cfg = loop_->engine().config();
    for (const auto& n : cfg.namespaces)
      if (n.name == ns) return true;
    for (const auto& lq : cfg.local_queues)
      if (lq.ns == ns) return true;
    return false;
  };
  return server::Redactor(who, cq_of, is_namespace);
}

std::string Controller::PhaseLocked(const std::string& key, const Wl& w) const {
  if (w.finished) return "Finished";
  const core::WorkloadInfo* info = w.in_engine ? loop_->engine().Find(key) : nullptr;
  if (info == nullptr) return w.broken ? "Invalid" : "Pending";
  switch (info->state) {
    case core::WorkloadState::kPending: return info->spec.active ? "Pending" : "Inactive";
    case core::WorkloadState::kAdmitted: return "Admitted";
    case core::WorkloadState::kEvicting: return "Evicting";
    case core::WorkloadState::kFinished: return "Finished";
  }
  return "Pending";
}

Json Controller::WorkloadJsonLocked(const std::string& key, const Wl& w, const server::Redactor& red) const {
  const core::WorkloadInfo* info = w.in_engine ? loop_->engine().Find(key) : nullptr;
  Json j;
  if (info != nullptr) {
    j = server::WorkloadSpecToJson(info->spec);
  } else {
    auto spec = WorkloadFromObject(w.obj, loop_->engine().config());
    if (spec.ok()) {
      j = server::WorkloadSpecToJson(*spec);
    } else {
      j = {{"metadata", w.obj.value("metadata", Json::object())}};
    }
  }
  j["metadata"]["creationTimestamp"] = w.created_ms;
  j["metadata"]["uid"] = w.uid;
  j["metadata"]["resourceVersion"] = std::to_string(w.rv);
  Json st = {{"phase", PhaseLocked(key, w)}};
  if (info != nullptr) {
    st["clusterQueue"] = info->cluster_queue;
    st["priority"] = info->priority;
    st["evictions"] = info->evictions;
    if (info->state == core::WorkloadState::kAdmitted || info->state == core::WorkloadState::kEvicting) {
      st["admission"] = AdmissionJson(*info);
      st["admittedAt"] = info->admitted_at;
    }
    if (info->state == core::WorkloadState::kPending) {
      st["pending"] = {{"reason", core::PendingReasonKindName(info->pending->kind)},
                       {"message", red.PendingMessage(info->pending)}};
    }
    if (info->last_eviction) {
      const auto& e = *info->last_eviction;
      st["lastEviction"] = {
          {"reason", core::EvictionReasonName(e.reason)},
          {"message", red.EvictionMessage(e.message, e.preemptor, e.preemptor_cluster_queue)},
          {"time", e.at}};
      if (!e.preemptor.empty() && red.Visible(e.preemptor)) st["lastEviction"]["preemptor"] = e.preemptor;
      if (!e.preemptor_cluster_queue.empty())
        st["lastEviction"]["preemptorClusterQueue"] = e.preemptor_cluster_queue;
    }
  } else {
    auto obs = ObserveWorkload(w.obj);
    if (obs.ok() && !obs->cluster_queue.empty()) st["clusterQueue"] = obs->cluster_queue;
  }
  // What the cluster says (Kueue's conditions), for `artel get -o json`.
  if (w.obj.is_object() && w.obj.contains("status") && w.obj["status"].contains("conditions"))
    st["conditions"] = w.obj["status"]["conditions"];
  j["status"] = st;
  return j;
}

Result<Json> Controller::GetWorkload(const std::string& key, const server::Principal& who) const {
  if (!loop_) return NotFound("workload " + key + " not found");
  std::lock_guard<std::mutex> l(loop_->mu());
  auto it = wls_.find(key);
  if (it == wls_.end()) return NotFound("workload " + key + " not found");
  return WorkloadJsonLocked(key, it->second, RedactorLocked(who));
}

Json Controller::ListWorkloads(const server::ListFilter& f, const server::Principal& who) const {
  Json items = Json::array();
  if (!loop_) return Json{{"items", items}};
  std::lock_guard<std::mutex> l(loop_->mu());
  const server::Redactor red = RedactorLocked(who);
  for (const auto& [key, w] : wls_) {
    std::string ns = key.substr(0, key.find('/'));
    if (f.namespaces && !f.namespaces->count(ns)) continue;
    Json j = WorkloadJsonLocked(key, w, red);
    bool match = true;
    const Json labels = j["metadata"].value("labels", Json::object());
    for (const auto& [k, v] : f.labels) {
      auto lt = labels.find(k);
      if (lt == labels.end() || (!v.empty() && *lt != v)) match = false;
    }
    for (const auto& [k, v] : f.fields) {
      if (k == "status.phase" && j["status"].value("phase", "") != v) match = false;
      if (k == "spec.queueName" && j.value("spec", Json::object()).value("queueName", "") != v) match = false;
      if (k == "status.clusterQueue" && j["status"].value("clusterQueue", "") != v) match = false;
      if (k == "metadata.name" && key.substr(key.find('/') + 1) != v) match = false;
    }
    if (match) items.push_back(std::move(j));
  }
  return Json{{"items", items}};
}

Result<Json> Controller::Why(const std::string& key, const server::Principal& who) const {
  if (!loop_) return NotFound("workload " + key + " not found");
  std::lock_guard<std::mutex> l(loop_->mu());
  auto it = wls_.find(key);
  if (it == wls_.end()) return NotFound("workload " + key + " not found");
  std::string phase = PhaseLocked(key, it->second);
  Json j = {{"workload", key}, {"phase", phase}};
  const core::WorkloadInfo* info = it->second.in_engine ? loop_->engine().Find(key) : nullptr;
  if (info == nullptr || info->state != core::WorkloadState::kPending) {
    j["reason"] = "None";
    j["message"] = "the workload is " + phase + "; it is not waiting";
    return j;
  }
  auto r = loop_->WhyLocked(key, RedactorLocked(who));
  if (!r.ok()) return r.status();
  j.update(*r);
  return j;
}

Json Controller::ClusterQueues() const { return loop_ ? loop_->ClusterQueuesJson() : Json::array(); }
Json Controller::LocalQueues(const std::optional<std::set<std::string>>& ns) const {
  return loop_ ? loop_->LocalQueuesJson(ns) : Json::array();
}

void Controller::AddWorkloadListener(WorkloadListener fn) {
  if (!loop_) return;
  std::lock_guard<std::mutex> l(loop_->mu());
  for (const auto& [key, w] : wls_)
    if (w.obj.is_object()) fn(w.obj, false);
  wl_listeners_.push_back(std::move(fn));
}

int Controller::LocalQueueWorkloads(const std::string& ns, const std::string& local_queue) const {
  if (!loop_) return 0;
  std::lock_guard<std::mutex> l(loop_->mu());
  int n = 0;
  const std::string prefix = ns + "/";
  for (auto it = wls_.lower_bound(prefix);
       it != wls_.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
    if (it->second.finished) continue;
    const Json& obj = it->second.obj;
    auto spec = obj.find("spec");
    if (spec == obj.end() || !spec->is_object()) continue;
    auto q = spec->find("queueName");
    if (q != spec->end() && q->is_string() && q->get_ref<const std::string&>() == local_queue) ++n;
  }
  return n;
}

Json Controller::Cohorts() const { return loop_ ? loop_->CohortsJson() : Json::array(); }
// The Node objects the engine places TAS pods on (kube/nodes.h), with the
// pods Artel placed on each; empty without nodes.
Json Controller::Nodes() const {
  Json items = Json::array();
  if (!loop_) return Json{{"kind", "NodeList"}, {"items", items}};
  std::lock_guard<std::mutex> l(loop_->mu());
  const core::Engine& engine = loop_->engine();
  std::map<std::string, int> placed, gpus_used;
  for (const core::WorkloadInfo* w : engine.Workloads()) {
    if (w->state != core::WorkloadState::kAdmitted && w->state != core::WorkloadState::kEvicting) continue;
    for (const core::PodPlacementInfo& p : w->placements) {
      placed[p.node]++;
      gpus_used[p.node] += static_cast<int>(p.gpus.size());
    }
  }
  for (const core::placement::NodeSpec& n : engine.nodes()) {
    Json taints = Json::array();
    for (const core::Taint& t : n.taints)
      taints.push_back({{"key", t.key}, {"value", t.value}, {"effect", t.effect}});
    Json alloc = Json::object();
    for (const auto& [res, amount] : n.allocatable) alloc[res] = core::FormatQuantity(amount);
    int mig = 0, whole = 0;
    for (const core::placement::GpuSpec& g : n.gpus) {
      mig += static_cast<int>(g.mig_layout.size());
      whole += g.mig ? 0 : 1;
    }
    if (n.gpus.empty()) {
      auto g = n.allocatable.find("nvidia.com/gpu");
      whole = g == n.allocatable.end() ? 0 : static_cast<int>(g->second / 1000);
    }
    auto pit = placed.find(n.name);
    items.push_back({{"name", n.name},
                     {"ready", n.ready},
                     {"labels", n.labels},
                     {"taints", taints},
                     {"allocatable", alloc},
                     {"gpus", whole},
                     {"gpusInUse", gpus_used[n.name]},
                     {"migInstances", mig},
                     {"placedPods", pit == placed.end() ? 0 : pit->second}});
  }
  // flavor -> GPU product, as standalone arteld names it (server::FlavorGpuProducts):
  // the flavor's own nvidia.com/gpu.product node label, else the one product
  // of the Nodes carrying all of its nodeLabels; left out when unknown or mixed.
  Json products = Json::object();
  for (const core::ResourceFlavorSpec& f : engine.config().flavors) {
    static const std::string kProduct = "nvidia.com/gpu.product";
    if (auto own = f.node_labels.find(kProduct); own != f.node_labels.end()) {
      products[f.name] = own->second;
      continue;
    }
    std::set<std::string> seen;
    bool unknown = false;
    for (const core::placement::NodeSpec& n : engine.nodes()) {
      bool match = std::all_of(f.node_labels.begin(), f.node_labels.end(), [&n](const auto& kv) {
        auto it = n.labels.find(kv.first);
        return it != n.labels.end() && it->second == kv.second;
      });
      if (!match) continue;
      auto it = n.labels.find(kProduct);
      if (it == n.labels.end()) {
        unknown = true;
      } else {
        seen.insert(it->second);
      }
    }
    if (seen.size() == 1 && !unknown) products[f.name] = *seen.begin();
  }
  return Json{{"kind", "NodeList"}, {"items", items}, {"flavorProducts", products}};
}
Json Controller::Gpus(const server::Principal&) const { return Json{{"items", Json::array()}}; }

Json Controller::Config(const server::Principal& who) const {
  Json objs = Json::array();
  for (const ObjectCondition& c : Conditions()) {
    if (!c.ns.empty() && !who.CanUseNamespace(c.ns)) continue;
    Json o = {{"kind", c.kind}, {"namespace", c.ns}, {"name", c.name}, {"active", c.active}};
    if (!c.active) {
      o["reason"] = c.reason;
      o["message"] = c.message;
    }
    objs.push_back(std::move(o));
  }
  return Json{{"mode", "kubernetes"},
              {"kueueApiVersion", std::string("kueue.x-k8s.io/") + version_},
              {"objects", objs}};
}

std::optional<int32_t> Controller::PriorityClassValue(const std::string& name) const {
  if (!loop_) return std::nullopt;
  std::lock_guard<std::mutex> l(loop_->mu());
  for (const core::PriorityClassSpec& p : loop_->engine().config().priority_classes)
    if (p.name == name) return p.value;
  return std::nullopt;
}

Result<std::string> Controller::Logs(const std::string&, const std::string&, int64_t) const {
  return UseKubectl("read pod logs (kubectl logs)");
}

std::string Controller::Metrics() const {
  std::string out = loop_ ? loop_->MetricsText() : "";
  ControllerStats s = stats();
  auto counter = [&](const char* name, const char* help, uint64_t v) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " counter\n" + name + " " +
           std::to_string(v) + "\n";
  };
  counter("artel_kube_status_writes_total", "Workload status writes that landed.", s.status_writes);
  counter("artel_kube_status_conflicts_total", "Workload status writes answered 409 Conflict.",
          s.status_conflicts);
  counter("artel_kube_admissions_requeued_total",
          "Admissions whose status write was refused; the workload was requeued.", s.admissions_requeued);
  counter("artel_kube_restored_total", "Workloads restored with their admission from the cluster.",
          s.restored);
  counter("artel_kube_events_total", "Events written on Workloads.", s.events_written);
  counter("artel_kube_events_dropped_total",
          "Events not posted because too many were waiting (best effort, as client-go's recorder).",
          s.events_dropped);
  counter("artel_kube_queue_status_writes_total", "ClusterQueue and LocalQueue status writes.",
          s.queue_status_writes);
  counter("artel_kube_pending_explanations_total",
          "Pending explanations (QuotaReserved=False and its message) handed to the writers.",
          s.pending_explanations);
  return out;
}

std::vector<Json> Controller::EventsAfter(uint64_t after, int64_t wait_ms,
                                          const std::optional<std::set<std::string>>& ns, uint64_t* next,
                                          const server::Principal& who) const {
  if (!loop_) {
    *next = after;
    return {};
  }
  return loop_->EventsAfter(after, wait_ms, ns, next, who);
}

uint64_t Controller::LatestEventSeq() const { return loop_ ? loop_->LatestEventSeq() : 0; }

}  // namespace artel::kube
