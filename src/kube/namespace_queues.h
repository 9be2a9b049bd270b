// NamespaceQueues: LocalQueues made from a template for every namespace
// that carries a team label (issue 12, "Namespaces to queues").
//
// A platform with one namespace per user or team wants each of them to have
// the same LocalQueues (say `default` and `prod`) pointing at the team's
// ClusterQueues. Here a namespace labelled `<teamLabel>=<team>` gets the
// LocalQueues of a template from arteld's configuration; the template may
// name its ClusterQueues with the placeholders `{team}` and `{namespace}`.
// The queues it makes carry the label `app.kubernetes.io/managed-by=artel`
// and the annotation `artel.dev/queue-template`; queues made by hand are
// never touched.
//
// Kept in sync: a label added, changed or removed, or a template changed in
// the configuration, creates the missing queues and removes or re-points
// (LocalQueue.spec.clusterQueue is immutable: delete, then create) the
// managed queues that are no longer wanted, but never a queue that still
// holds workloads (`holds` says how many unfinished Workloads name it):
// such a queue is kept, reported in the log and in `waiting()`, and looked
// at again every `resync_ms` until it is empty.
//
// Threads. Two informers (Namespaces, LocalQueues) feed a set of dirty
// namespaces; one worker thread reconciles one namespace at a time and does
// every API call. Only the leader runs it (like every writer of arteld).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/status.h"
#include "kube/client.h"
#include "server/log.h"

namespace artel::kube {

struct QueueTemplateEntry {
  std::string name;           // LocalQueue name
  std::string cluster_queue;  // may hold {team} and {namespace}
};

struct NamespaceQueuesOptions {
  std::string team_label = "artel.dev/team";
  // Optional: a namespace label naming its template; else default_template.
  std::string template_label = "artel.dev/queue-template";
  std::string default_template;
  std::map<std::string, std::vector<QueueTemplateEntry>> templates;
  int64_t resync_ms = 10000;  // queues kept because they hold workloads are looked at again this often
  std::string field_manager = "artel";
  bool enabled() const { return !templates.empty(); }
};

// Substitutes {team} and {namespace}.
std::string ExpandQueueTemplate(const std::string& text, const std::string& team, const std::string& ns);

class NamespaceQueues {
 public:
  // `localqueues`: the LocalQueue resource at the Kueue version the
  // controller discovered. `holds(ns, name)`: unfinished Workloads of that
  // LocalQueue (the controller knows; thread-safe).
  NamespaceQueues(ClientConfig config, Resource localqueues, NamespaceQueuesOptions options,
                  server::Logger* log, std::function<int(const std::string&, const std::string&)> holds);
  ~NamespaceQueues();
  NamespaceQueues(const NamespaceQueues&) = delete;
  NamespaceQueues& operator=(const NamespaceQueues&) = delete;

  Status Start(int64_t sync_timeout_ms = 60000);
  void Stop();

  struct Stats {
    uint64_t created = 0, deleted = 0, failed = 0;
  };
  Stats stats() const;
  // "ns/name" of managed queues kept although unwanted, because they hold workloads.
  std::set<std::string> waiting() const;

 private:
  struct Lq {
    std::string cluster_queue, uid, rv;
    bool managed = false;
    bool deleting = false;
  };
  void MarkDirty(const std::string& ns);
  void WorkerMain();
  void Reconcile(const std::string& ns);
  std::vector<QueueTemplateEntry> Desired(const std::map<std::string, std::string>& labels,
                                          const std::string& ns, std::string* template_name) const;

  ClientConfig config_;
  Resource lq_res_;
  NamespaceQueuesOptions options_;
  server::Logger* log_;
  std::function<int(const std::string&, const std::string&)> holds_;
  std::unique_ptr<Client> informer_client_, client_;
  std::unique_ptr<Informer> ns_informer_, lq_informer_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::set<std::string> dirty_;
  std::map<std::string, std::map<std::string, std::string>> ns_labels_;  // namespaces not terminating
  std::map<std::string, std::map<std::string, Lq>> lqs_;                 // ns -> name -> queue
  std::set<std::string> waiting_;
  std::set<std::string> warned_;  // "ns/name" of hand-made queues in a template's way (logged once)
  Stats stats_;
  std::thread worker_;
};

}  // namespace artel::kube
