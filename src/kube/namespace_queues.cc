#include "kube/namespace_queues.h"

#include <chrono>

namespace artel::kube {
namespace {

constexpr const char* kManagedByLabel = "app.kubernetes.io/managed-by";
constexpr const char* kManagedByValue = "artel";
constexpr const char* kTemplateAnnotation = "artel.dev/queue-template";

std::map<std::string, std::string> StringMap(const Json& obj, const char* field) {
  std::map<std::string, std::string> out;
  auto m = obj.find("metadata");
  if (m == obj.end() || !m->is_object()) return out;
  auto f = m->find(field);
  if (f == m->end() || !f->is_object()) return out;
  for (auto it = f->begin(); it != f->end(); ++it)
    if (it.value().is_string()) out[it.key()] = it.value().get<std::string>();
  return out;
}

std::string Meta(const Json& obj, const char* field) {
  auto m = obj.find("metadata");
  if (m == obj.end() || !m->is_object()) return "";
  auto f = m->find(field);
  return f != m->end() && f->is_string() ? f->get<std::string>() : "";
}

}  // namespace

std::string ExpandQueueTemplate(const std::string& text, const std::string& team, const std::string& ns) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    if (text.compare(i, 6, "{team}") == 0) {
      out += team;
      i += 6;
    } else if (text.compare(i, 11, "{namespace}") == 0) {
      out += ns;
      i += 11;
    } else {
      out += text[i++];
    }
  }
  return out;
}

NamespaceQueues::NamespaceQueues(ClientConfig config, Resource localqueues, NamespaceQueuesOptions options,
                                 server::Logger* log,
                                 std::function<int(const std::string&, const std::string&)> holds)
    : config_(std::move(config)),
      lq_res_(std::move(localqueues)),
      options_(std::move(options)),
      log_(log),
      holds_(std::move(holds)) {}

NamespaceQueues::~NamespaceQueues() { Stop(); }

Status NamespaceQueues::Start(int64_t sync_timeout_ms) {
  informer_client_ = std::make_unique<Client>(config_);
  client_ = std::make_unique<Client>(config_);
  Informer::Handler nh;
  auto on_ns = [this](const Json& o) {
    std::string name = Meta(o, "name");
    bool terminating = o.contains("metadata") && o["metadata"].contains("deletionTimestamp") &&
                       !o["metadata"]["deletionTimestamp"].is_null();
    {
      std::lock_guard<std::mutex> l(mu_);
      if (terminating)
        ns_labels_.erase(name);
      else
        ns_labels_[name] = StringMap(o, "labels");
    }
    MarkDirty(name);
  };
  nh.on_add = on_ns;
  nh.on_update = on_ns;
  nh.on_delete = [this](const Json& o) {
    std::string name = Meta(o, "name");
    std::lock_guard<std::mutex> l(mu_);
    ns_labels_.erase(name);
    lqs_.erase(name);
  };
  Informer::Handler lh;
  auto on_lq = [this](const Json& o) {
    std::string ns = Meta(o, "namespace"), name = Meta(o, "name");
    Lq q;
    auto spec = o.find("spec");
    if (spec != o.end() && spec->is_object()) q.cluster_queue = spec->value("clusterQueue", std::string());
    q.uid = Meta(o, "uid");
    q.rv = Meta(o, "resourceVersion");
    auto labels = StringMap(o, "labels");
    auto it = labels.find(kManagedByLabel);
    q.managed = it != labels.end() && it->second == kManagedByValue;
    q.deleting = o.contains("metadata") && o["metadata"].contains("deletionTimestamp") &&
                 !o["metadata"]["deletionTimestamp"].is_null();
    {
      std::lock_guard<std::mutex> l(mu_);
      lqs_[ns][name] = q;
    }
    MarkDirty(ns);
  };
  lh.on_add = on_lq;
  lh.on_update = on_lq;
  lh.on_delete = [this](const Json& o) {
    std::string ns = Meta(o, "namespace"), name = Meta(o, "name");
    {
      std::lock_guard<std::mutex> l(mu_);
      auto it = lqs_.find(ns);
      if (it != lqs_.end()) it->second.erase(name);
    }
    MarkDirty(ns);
  };
  ns_informer_ = std::make_unique<Informer>(informer_client_.get(), kNamespaces, "", nh);
  lq_informer_ = std::make_unique<Informer>(informer_client_.get(), lq_res_, "", lh);
  ns_informer_->Start();
  lq_informer_->Start();
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(sync_timeout_ms);
  while (!ns_informer_->HasSynced() || !lq_informer_->HasSynced()) {
    if (std::chrono::steady_clock::now() > deadline) {
      Stop();
      return FailedPrecondition("namespace queues: the informers did not list the cluster in time");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  {
    std::lock_guard<std::mutex> l(mu_);
    stopping_ = false;
  }
  worker_ = std::thread([this] { WorkerMain(); });
  log_->Info("namespace queues started",
             {{"teamLabel", options_.team_label}, {"templates", std::to_string(options_.templates.size())}});
  return Status::Ok();
}

void NamespaceQueues::Stop() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
  if (ns_informer_) ns_informer_->Stop();
  if (lq_informer_) lq_informer_->Stop();
}

NamespaceQueues::Stats NamespaceQueues::stats() const {
  std::lock_guard<std::mutex> l(mu_);
  return stats_;
}

std::set<std::string> NamespaceQueues::waiting() const {
  std::lock_guard<std::mutex> l(mu_);
  return waiting_;
}

void NamespaceQueues::MarkDirty(const std::string& ns) {
  {
    std::lock_guard<std::mutex> l(mu_);
    dirty_.insert(ns);
  }
  cv_.notify_one();
}

std::vector<QueueTemplateEntry> NamespaceQueues::Desired(const std::map<std::string, std::string>& labels,
                                                         const std::string& ns,
                                                         std::string* template_name) const {
  std::vector<QueueTemplateEntry> out;
  auto team = labels.find(options_.team_label);
  if (team == labels.end() || team->second.empty()) return out;
  std::string tname = options_.default_template;
  if (!options_.template_label.empty()) {
    auto t = labels.find(options_.template_label);
    if (t != labels.end() && !t->second.empty()) tname = t->second;
  }
  *template_name = tname;
  auto tpl = options_.templates.find(tname);
  if (tpl == options_.templates.end()) return out;
  for (const QueueTemplateEntry& e : tpl->second)
    out.push_back({ExpandQueueTemplate(e.name, team->second, ns),
                   ExpandQueueTemplate(e.cluster_queue, team->second, ns)});
  return out;
}

void NamespaceQueues::WorkerMain() {
  auto next_resync = std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.resync_ms);
  for (;;) {
    std::string ns;
    {
      std::unique_lock<std::mutex> l(mu_);
      cv_.wait_until(l, next_resync, [this] { return stopping_ || !dirty_.empty(); });
      if (stopping_) return;
      if (std::chrono::steady_clock::now() >= next_resync) {
        // Kept queues (they held workloads): look again.
        for (const std::string& key : waiting_) dirty_.insert(key.substr(0, key.find('/')));
        next_resync = std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.resync_ms);
      }
      if (dirty_.empty()) continue;
      ns = *dirty_.begin();
      dirty_.erase(dirty_.begin());
    }
    Reconcile(ns);
  }
}

void NamespaceQueues::Reconcile(const std::string& ns) {
  std::map<std::string, std::string> labels;
  std::map<std::string, Lq> have;
  bool exists;
  {
    std::lock_guard<std::mutex> l(mu_);
    auto n = ns_labels_.find(ns);
    exists = n != ns_labels_.end();
    if (exists) labels = n->second;
    auto q = lqs_.find(ns);
    if (q != lqs_.end()) have = q->second;
  }
  std::string template_name;
  std::vector<QueueTemplateEntry> want;
  if (exists) want = Desired(labels, ns, &template_name);
  if (exists && !template_name.empty() && !options_.templates.count(template_name) &&
      labels.count(options_.team_label)) {
    std::string key = ns + "/template:" + template_name;
    std::lock_guard<std::mutex> l(mu_);
    if (warned_.insert(key).second)
      log_->Warn(
          "namespace names a queue template that is not configured; its managed queues are left as they are",
          {{"namespace", ns}, {"template", template_name}});
    return;
  }
  std::set<std::string> waiting_now;
  std::map<std::string, std::string> wanted;  // name -> cluster queue
  for (const auto& e : want) wanted[e.name] = e.cluster_queue;

  auto remove = [&](const std::string& name, const Lq& q, const std::string& why) {
    if (q.deleting) return;
    int n = holds_ ? holds_(ns, name) : 0;
    if (n > 0) {
      waiting_now.insert(ns + "/" + name);
      std::lock_guard<std::mutex> l(mu_);
      if (!waiting_.count(ns + "/" + name))
        log_->Info("managed LocalQueue kept: it still holds workloads",
                   {{"namespace", ns}, {"localQueue", name}, {"workloads", std::to_string(n)}, {"why", why}});
      return;
    }
    auto r = client_->Delete(lq_res_, ns, name, std::nullopt, q.uid);
    std::lock_guard<std::mutex> l(mu_);
    if (r.ok() || r.error().NotFound()) {
      stats_.deleted++;
      log_->Info("managed LocalQueue deleted", {{"namespace", ns}, {"localQueue", name}, {"why", why}});
    } else {
      stats_.failed++;
      waiting_now.insert(ns + "/" + name);  // try again at the next resync
      log_->Warn("managed LocalQueue not deleted",
                 {{"namespace", ns}, {"localQueue", name}, {"error", r.error().ToString()}});
    }
  };

  for (const auto& [name, q] : have) {
    if (!q.managed) continue;
    auto w = wanted.find(name);
    if (w == wanted.end()) {
      remove(name, q, exists ? "no longer in the namespace's template" : "namespace gone");
    } else if (w->second != q.cluster_queue) {
      // spec.clusterQueue is immutable: delete now, create once the delete is seen.
      remove(name, q, "its ClusterQueue changed to " + w->second);
    }
  }
  for (const auto& [name, cq] : wanted) {
    auto h = have.find(name);
    if (h != have.end()) {
      if (!h->second.managed) {
        std::lock_guard<std::mutex> l(mu_);
        if (warned_.insert(ns + "/" + name).second)
          log_->Warn("a LocalQueue made by hand has the name a template wants; left as it is",
                     {{"namespace", ns}, {"localQueue", name}});
      }
      continue;
    }
    Json lq = {{"apiVersion", "kueue.x-k8s.io/" + lq_res_.version},
               {"kind", "LocalQueue"},
               {"metadata",
                {{"name", name},
                 {"namespace", ns},
                 {"labels", {{kManagedByLabel, kManagedByValue}}},
                 {"annotations", {{kTemplateAnnotation, template_name}}}}},
               {"spec", {{"clusterQueue", cq}}}};
    auto r = client_->Create(lq_res_, ns, lq);
    std::lock_guard<std::mutex> l(mu_);
    if (r.ok()) {
      stats_.created++;
      lqs_[ns][name] = Lq{cq, Meta(r.value(), "uid"), Meta(r.value(), "resourceVersion"), true, false};
      log_->Info(
          "managed LocalQueue created",
          {{"namespace", ns}, {"localQueue", name}, {"clusterQueue", cq}, {"template", template_name}});
    } else if (r.error().AlreadyExists()) {
      // The informer has not shown it yet; its event brings the namespace back.
    } else {
      stats_.failed++;
      waiting_now.insert(ns + "/" + name);
      log_->Warn("managed LocalQueue not created",
                 {{"namespace", ns}, {"localQueue", name}, {"error", r.error().ToString()}});
    }
  }
  std::lock_guard<std::mutex> l(mu_);
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if (it->compare(0, ns.size() + 1, ns + "/") == 0)
      it = waiting_.erase(it);
    else
      ++it;
  }
  waiting_.insert(waiting_now.begin(), waiting_now.end());
}

}  // namespace artel::kube
