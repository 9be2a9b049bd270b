// TopologyUngater: pins the pods of a TAS-admitted workload to the nodes of
// its topologyAssignment, as Kueue's topology ungater does.
//
// A pod it handles carries the scheduling gate `kueue.x-k8s.io/topology`,
// the label `kueue.x-k8s.io/podset` and the annotation
// `kueue.x-k8s.io/workload` (the Workload's name, same namespace). Once that
// Workload's status.admission gives the pod set a topologyAssignment, each
// gated pod gets the nodeSelector `kubernetes.io/hostname=<node>` and loses
// the gate, so that kube-scheduler binds it there. Per node, no more pods
// than the assignment's count are pinned: pods already ungated (their
// nodeSelector, else their nodeName) are counted first, and gated pods are
// taken in name order, so that a restart pins the same way.
//
// Threads: the two informers' callbacks only note which Workload to look at;
// one worker thread reconciles and writes (merge patches of the pods).
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "kube/client.h"
#include "kube/kueue_names.h"
#include "server/log.h"

namespace artel::kube {

class TopologyUngater {
 public:
  // `workloads`: the Workload resource at the version the controller speaks.
  TopologyUngater(ClientConfig config, Resource workloads, server::Logger* log);
  ~TopologyUngater();
  TopologyUngater(const TopologyUngater&) = delete;
  TopologyUngater& operator=(const TopologyUngater&) = delete;

  // `watch_workloads`: run a Workload informer of its own; false when the
  // caller feeds OnWorkloadEvent (Controller::AddWorkloadListener).
  void Start(bool watch_workloads = true);
  void Stop();
  uint64_t ungated() const { return ungated_.load(); }
  // A Workload added, changed or deleted: only those admitted with a topology
  // assignment are kept (their pods are ungated).
  void OnWorkloadEvent(const Json& wl, bool deleted);

 private:
  void Enqueue(const std::string& key);
  void WorkerMain();
  void Reconcile(const std::string& key);

  ClientConfig config_;
  Resource workloads_res_;
  server::Logger* log_;
  std::unique_ptr<Client> pod_client_, wl_client_, writer_;
  std::unique_ptr<Informer> pods_inf_, wls_inf_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, Json> workloads_;                    // "ns/name" -> object
  std::map<std::string, std::map<std::string, Json>> pods_;  // "ns/workload" -> pod name -> pod
  std::map<std::string, std::string> pod_owner_;             // "ns/pod" -> "ns/workload"
  std::deque<std::string> queue_;
  std::set<std::string> queued_;
  bool stop_ = false;
  std::thread worker_;
  std::atomic<uint64_t> ungated_{0};
};

}  // namespace artel::kube
