// Jobs and pods: Artel's counterpart of Kueue's job framework for batch/v1
// Jobs and for plain pods and pod groups (docs/kubernetes.md, "Jobs and
// pods"). It turns a Job or gated pods carrying the label
// kueue.x-k8s.io/queue-name into a Workload, and follows the Workload the
// Controller admits or evicts:
//
//   Job:  Workload created (owned by the Job, one pod set "main") → the Job is
//         kept suspended until Admitted=True → the admitted flavors'
//         nodeLabels and tolerations, the podset label and the workload
//         annotation (and the topology gate for a topologyAssignment) go into
//         the pod template, and suspend=false; Evicted=True → suspend=true and
//         the template restored; once no pod is active the reservation is
//         cleared (QuotaReserved=False) so the Controller requeues it; a Job
//         Complete or Failed → Finished on the Workload.
//   Pods: a gated pod (kueue.x-k8s.io/admission) or a complete pod group
//         (kueue.x-k8s.io/pod-group-name + pod-group-total-count) → one
//         Workload; Admitted → gates removed and nodeSelector/tolerations
//         injected; Evicted → pods deleted, then the reservation cleared; all
//         pods succeeded → Finished.
//
// Threads: the informer callbacks only copy the object into a local map and
// queue its key; one worker thread reconciles one key at a time from those
// maps and does every API call (no lock held). A write is made on the object
// as last seen (resourceVersion precondition); a 409 or any error requeues the
// key with a backoff, and the next pass decides again on the fresh object.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
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
#include "kube/kueue_names.h"
#include "server/log.h"

namespace artel::kube {

// Kueue's names.
inline constexpr const char* kPriorityClassLabel = "kueue.x-k8s.io/priority-class";
inline constexpr const char* kJobMinParallelism = "kueue.x-k8s.io/job-min-parallelism";
inline constexpr const char* kJobCompletionsEqualParallelism =
    "kueue.x-k8s.io/job-completions-equal-parallelism";
inline constexpr const char* kPodGroupNameLabel = "kueue.x-k8s.io/pod-group-name";
inline constexpr const char* kPodGroupTotalCount = "kueue.x-k8s.io/pod-group-total-count";
inline constexpr const char* kIsGroupWorkload = "kueue.x-k8s.io/is-group-workload";
inline constexpr const char* kJobUidLabel = "kueue.x-k8s.io/job-uid";
inline constexpr const char* kMaxExecTimeLabel = "kueue.x-k8s.io/max-exec-time-seconds";
// Volcano's and KAI's pod-to-PodGroup links and pod set names (as the
// manifest dialects read them: src/manifest/dialects.cc).
inline constexpr const char* kVolcanoGroupAnnotation = "scheduling.k8s.io/group-name";
inline constexpr const char* kVolcanoTaskAnnotation = "volcano.sh/task-spec";
inline constexpr const char* kKaiGroupAnnotation = "pod-group-name";
inline constexpr const char* kKaiSubGroupLabel = "kai.scheduler/subgroup-name";
extern const Resource kVolcanoPodGroups;  // scheduling.volcano.sh/v1beta1 podgroups
extern const Resource kKaiPodGroups;      // scheduling.run.ai/v2alpha2 podgroups

// The name Kueue gives the Workload of an owner (jobframework's
// GetWorkloadNameForOwnerWithGVK): "<kind lower-cased>-<owner name>" cut to
// 247 characters, "-", and the first 5 hex digits of the SHA-1 of
// "Kind\ngroup\nname\nuid".
std::string WorkloadNameForOwner(const std::string& kind, const std::string& group, const std::string& name,
                                 const std::string& uid);

struct JobsOptions {
  std::string kueue_version = "v1beta2";  // the Kueue API version the Controller discovered
  std::string field_manager = "artel";
  bool jobs = true;       // batch/v1 Jobs
  bool pods = true;       // plain pods and pod groups
  bool podgroups = true;  // Volcano and KAI PodGroups (where the cluster serves them)
  bool events = true;     // Events on Jobs (CreatedWorkload, Started, Stopped) as Kueue records them
  // Run a Workload informer of its own; false when the caller feeds
  // OnWorkloadEvent (Controller::AddWorkloadListener), before Start.
  bool watch_workloads = true;
};

class JobIntegration {
 public:
  JobIntegration(ClientConfig config, JobsOptions options, server::Logger* log,
                 std::function<int64_t()> now_ms);
  ~JobIntegration();
  JobIntegration(const JobIntegration&) = delete;
  JobIntegration& operator=(const JobIntegration&) = delete;

  // Starts the informers (Jobs and pods with the queue-name label, Workloads)
  // and the worker; waits up to `sync_timeout_ms` for the first lists.
  Status Start(int64_t sync_timeout_ms = 60000);
  void Stop();
  uint64_t reconciles() const { return reconciles_.load(); }
  // A Workload added, changed or deleted (with JobsOptions::watch_workloads
  // false; may be called before Start).
  void OnWorkloadEvent(const Json& obj, bool deleted) { OnWorkload(obj, deleted); }

 private:
  enum class Outcome { kDone, kRetry };
  void Enqueue(const std::string& key);
  void OnJob(const Json& obj, bool deleted);
  void OnPod(const Json& obj, bool deleted);
  void OnWorkload(const Json& obj, bool deleted);
  void OnPodGroup(bool volcano, const Json& obj, bool deleted);
  // The reconcile key a pod belongs to ("" = not one arteld manages): its
  // Volcano or KAI PodGroup, its pod group, or itself.
  std::string PodKeyOf(const Json& pod) const;
  std::vector<Json> PodsOfLocked(const std::string& key) const;  // mu_ held
  std::vector<Json> OwnedLocked(
      const std::string& owner_uid) const;  // Workloads by controller owner; mu_ held
  Outcome ReconcilePodGroup(const std::string& ns, const std::string& name, bool volcano);
  void WorkerMain();
  Outcome Reconcile(const std::string& key);
  Outcome ReconcileJob(const std::string& ns, const std::string& name);
  Outcome ReconcilePods(const std::string& ns, const std::string& name, bool group);
  // Pods admitted together under one Workload: a plain pod, a pod group, a
  // Volcano or KAI PodGroup's pods.
  struct PodSetGroup {
    std::string ns, name;                          // for logs
    std::vector<Json> pods;                        // sorted by name
    Json wl;                                       // its Workload, or null
    int64_t total = 1;                             // pods to wait for before the Workload is made
    std::function<std::string(const Json&)> role;  // pod -> pod set name
    std::string wl_name, queue;
    Json owners = Json::array(), wl_annotations = Json::object();
    Json priority_labels, priority_spec;  // the owner's labels (priority class, max exec time), pod spec
    bool delete_when_gone = true;         // the Workload is deleted once every pod is gone
  };
  Outcome ReconcileGroup(const PodSetGroup& g);

  // Helpers on the worker thread.
  Outcome CreateWorkload(const Json& wl, bool* created = nullptr);
  // A core v1 Event on `obj` (best effort).
  void PostEvent(const Json& obj, const std::string& api_version, const std::string& kind,
                 const std::string& reason, const std::string& message);
  Outcome WriteWorkloadStatus(const Json& wl, const Json& status);
  Outcome DeleteOwnedWorkloads(const std::string& ns, const std::string& owner_kind,
                               const std::string& owner_name, const std::string& keep_uid);
  // Priority of a new Workload: the WorkloadPriorityClass named by the
  // priority-class label, else the pod template's PriorityClass. Sets
  // spec.priority and the class reference on `wl`; false when a class named
  // does not exist (retried later).
  bool SetPriority(const Json& labels, const Json& pod_spec, Json* wl, std::string* error);
  // The admitted flavors' nodeLabels/tolerations (from the ResourceFlavor
  // informer; a GET for one it has not seen yet).
  bool FlavorInfo(const Json& psa, Json* node_selector, Json* tolerations, std::string* error);
  std::string Now() const;

  ClientConfig config_;
  JobsOptions options_;
  server::Logger* log_;
  std::function<int64_t()> now_ms_;
  std::unique_ptr<Client> client_;  // the worker's writes and reads
  std::vector<std::unique_ptr<Client>> informer_clients_;
  std::vector<std::unique_ptr<Informer>> informers_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, Json> jobs_, pods_, wls_;             // "ns/name" -> newest object seen
  std::map<std::string, Json> vpgs_, kpgs_;                   // Volcano and KAI PodGroups
  std::map<std::string, Json> flavors_;                       // ResourceFlavors by name
  std::map<std::string, std::set<std::string>> pods_by_key_;  // reconcile key -> pod keys
  std::map<std::string, std::set<std::string>> wl_by_owner_;  // controller owner uid -> Workload keys
  bool volcano_ = false, kai_ = false;  // served by the cluster (set before the informers start)
  std::deque<std::string> queue_;
  std::set<std::string> queued_;             // in queue_
  std::set<std::string> inflight_;           // being reconciled
  std::set<std::string> requeue_;            // queued again while in flight
  std::map<std::string, int64_t> retry_at_;  // key -> when to retry (ms)
  std::map<std::string, int> failures_;
  bool stopping_ = false;
  std::thread worker_;
  std::atomic<uint64_t> reconciles_{0};
};

}  // namespace artel::kube
