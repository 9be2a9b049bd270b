// Kueue API objects <-> the engine: the pure translation the Kubernetes
// controller uses (docs/kubernetes.md, "Kueue API mapping").
//
// Input objects are JSON exactly as the API server serves them
// (kueue.x-k8s.io/v1beta2 and v1beta1, core v1 Namespace). Each kind is read
// by the one reader of src/manifest (the same reader `artel check`, arteld's
// `apply` and the scenario runner use): an object is serialised back to text
// (JSON is YAML) and read with manifest::SplitObjects / ParseObjects /
// ParseWorkloads, so field checks and messages are those of the manifests.
//
// Output objects are the `status` stanzas Kueue's controllers write (the
// Workload, ClusterQueue and LocalQueue status of kueue.x-k8s.io/v1beta2),
// with conditions kept the way Kubernetes' meta.SetStatusCondition keeps
// them: lastTransitionTime changes only when a condition's status changes.
// Nothing is invented in a status: whatever Artel knows beyond Kueue's
// schema (the full pending explanation, the preemptor) goes into condition
// messages.
//
// Pure: no I/O, no threads, no clock (callers pass `now`).
// Thread-safety: pure functions over their arguments.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "core/engine.h"
#include "core/model.h"
#include "core/status.h"

namespace artel::kube {

using Json = nlohmann::json;

// ---------------------------------------------------------------- config

// The configuration kinds as cached by the informers (each an object as the
// API server serves it: apiVersion, kind, metadata, spec, status).
struct KueueObjects {
  std::vector<Json> resource_flavors, cohorts, cluster_queues, local_queues, priority_classes, topologies;
  std::vector<Json> namespaces;  // core v1 Namespaces (labels, for namespaceSelector)
};

// What the controller writes into one object's status.conditions (type
// Active) — or, for kinds whose status has no conditions (Cohort, and the
// objects that are not queues), reports as an event.
struct ObjectCondition {
  std::string kind, ns, name;  // kind: ClusterQueue, LocalQueue, Cohort, ResourceFlavor, ...
  bool active = true;          // condition type Active
  // Kueue's reasons. ClusterQueue: Ready, Stopped, FlavorNotFound,
  // TopologyNotFound, and (Artel) InvalidSpec, CohortCycle, CohortInvalid.
  // LocalQueue: Ready, Stopped, ClusterQueueDoesNotExist,
  // ClusterQueueIsInactive, and (Artel) InvalidSpec. Other kinds (only when
  // left out): InvalidSpec, TopologyNotFound (ResourceFlavor), FlavorNotFound,
  // CohortCycle, CohortInvalid (Cohort).
  std::string reason, message;
  // The field the problem is in, relative to the object ("spec.resourceGroups[0].flavors[1].name");
  // empty when active. Also named in `message`.
  std::string field;
  std::string key() const { return kind + "/" + ns + "/" + name; }
};

struct BuiltConfig {
  core::Config config;  // only the valid objects (and what does not depend on invalid ones)
  std::vector<ObjectCondition>
      conditions;  // one per ClusterQueue and LocalQueue, and one per other object left out
  // The condition of `kind` ns/name, or null.
  const ObjectCondition* Find(const std::string& kind, const std::string& ns, const std::string& name) const;
};

// Never fails as a whole: an invalid object is left out and gets active=false
// with a reason and a message naming the field (the same checks and messages
// as `artel check`, through the one reader in src/manifest); the rest is
// configured. Objects that depend on a left-out object are left out too
// (a ClusterQueue whose flavor is invalid: FlavorNotFound), except
// LocalQueues, which stay configured (their workloads wait with
// ClusterQueueMissing) and report ClusterQueueDoesNotExist /
// ClusterQueueIsInactive as Kueue's LocalQueue controller does. The result is
// accepted by core::Engine::Configure.
BuiltConfig BuildConfig(const KueueObjects& objs);

// BuildConfig with a memo: an object whose content (all but `status` and the
// metadata the server changes on every write) is unchanged since the last
// Build is not read again. The controller keeps one for its lifetime: a
// configuration change then costs the cross-object checks, not re-reading
// every queue. The result is exactly BuildConfig's.
// Thread-safety: one thread at a time.
class ConfigBuilder {
 public:
  ConfigBuilder();
  ~ConfigBuilder();
  ConfigBuilder(const ConfigBuilder&) = delete;
  ConfigBuilder& operator=(const ConfigBuilder&) = delete;
  BuiltConfig Build(const KueueObjects& objs);

 private:
  struct Memo;
  std::unique_ptr<Memo> memo_;
};

// ---------------------------------------------------------------- workloads

// A Workload object (kueue.x-k8s.io v1beta2 or v1beta1) -> the engine's spec,
// through the one Workload reader of src/manifest (manifest::ParseWorkloads).
// Errors are InvalidArgument with the field path (`spec.podSets[0].count`).
// A priority class that `config` does not define is dropped (the spec's
// `priority` value, or 0, is used), since the engine refuses unknown classes.
Result<core::WorkloadSpec> WorkloadFromObject(const Json& workload, const core::Config& config);

// Workload status builders. Each takes the object's current `status` (null
// or {} for none) and returns the full new status. `now_rfc3339` is the time
// of the change ("2026-01-02T03:04:05Z"); `generation` is the object's
// metadata.generation, written as observedGeneration where Kueue writes it
// (0 = leave observedGeneration out).
//
// Admitted: status.admission {clusterQueue, podSetAssignments[{name, flavors,
// resourceUsage, count, and topologyAssignment when the engine placed the
// pod set's pods (info.placements)}]}, QuotaReserved=True (QuotaReserved), Admitted=True
// (Admitted); an Evicted or Preempted condition that is True becomes False
// (reason QuotaReserved).
Json AdmittedStatus(const Json& current_status, const core::WorkloadInfo& info,
                    const std::string& now_rfc3339, int64_t generation = 0);
// Pending: QuotaReserved=False, reason Pending (or Inadmissible when the
// queue is missing, stopped or the workload inactive), message = the full
// explanation (PendingReason::message and one line per flavor tried); no
// admission; Admitted=False (NoReservation) if it was True.
Json PendingStatus(const Json& current_status, const core::PendingReason& why, const std::string& now_rfc3339,
                   int64_t generation = 0);
// The explanation PendingStatus writes (also for events).
std::string PendingMessage(const core::PendingReason& why);
// Evicted=True with reason Preempted / ClusterQueueStopped / LocalQueueStopped
// / Deactivated, and for preemptions Preempted=True with reason
// InClusterQueue / InCohortReclamation / InCohortFairSharing /
// InCohortReclaimWhileBorrowing. The admission is kept: the quota stays held
// until RequeuedStatus.
Json EvictedStatus(const Json& current_status, const core::Eviction& e, const std::string& now_rfc3339,
                   int64_t generation = 0);
// The quota is released after an eviction (the pods are gone):
// QuotaReserved=False (Pending, the eviction's message), no admission,
// Admitted=False (NoReservation), Requeued=True with the eviction's reason
// for a preemption, Requeued=False for the other reasons (Kueue's job
// framework). requeueState is kept as it is (Artel has no PodsReady backoff).
Json RequeuedStatus(const Json& current_status, const std::string& now_rfc3339, int64_t generation = 0);
// A deactivated workload became active again: Requeued=True (Reactivated).
Json ReactivatedStatus(const Json& current_status, const std::string& now_rfc3339, int64_t generation = 0);
// Finished=True (reason Succeeded or Failed) with `message`.
Json FinishedStatus(const Json& current_status, bool succeeded, const std::string& message,
                    const std::string& now_rfc3339, int64_t generation = 0);

// What a Workload object's status says, read back (restart: rebuild the
// engine from the cluster).
struct ObservedState {
  bool quota_reserved = false, admitted = false, finished = false, evicted = false, active = true;
  std::string cluster_queue;
  std::vector<core::PodSetAssignment> admission;  // from status.admission
  int64_t admitted_at_ms = -1;                    // lastTransitionTime of QuotaReserved
  std::string evicted_reason;                     // reason of Evicted when evicted
  // Per entry of `admission`: the pods' nodes from its topologyAssignment
  // (node, pod count), in the order written; empty without one.
  std::vector<std::vector<std::pair<std::string, int32_t>>> topology;
};

// Kueue's TopologyAssignment (v1beta2) at the node level: levels
// [kubernetes.io/hostname], one slice of the nodes with their pod counts.
Json TopologyAssignmentJson(const std::vector<std::pair<std::string, int32_t>>& nodes);
// Reads a TopologyAssignment back as (node, pod count) pairs: v1beta2 slices
// (universal or individual values and counts, prefix and suffix) and
// v1beta1 domains. Only an assignment whose lowest level is
// kubernetes.io/hostname names nodes; any other yields an empty list.
// Errors name the field under `path`.
Result<std::vector<std::pair<std::string, int32_t>>> ParseTopologyAssignment(const Json& ta,
                                                                             const std::string& path);
// Rewrites every status.admission.podSetAssignments[].topologyAssignment of
// `status` in v1beta1's form (levels, domains [{values, count}]).
void TopologyAssignmentsToV1beta1(Json* status);
// Errors (InvalidArgument with the field path) for a status Artel cannot
// read back: a bad quantity in resourceUsage, a bad timestamp.
Result<ObservedState> ObserveWorkload(const Json& workload);

// ---------------------------------------------------------------- queues

// ClusterQueue / LocalQueue status as Kueue writes it (pendingWorkloads,
// reservingWorkloads, admittedWorkloads, flavorsReservation, flavorsUsage,
// conditions [Active], and fairSharing.weightedShare when the engine runs
// fair sharing), from the engine's views. A queue the engine does not know
// (left out of the configuration) gets zero counts and no flavors.
Json ClusterQueueStatus(const core::Engine& engine, const std::string& cq, const ObjectCondition& cond,
                        const Json& current_status, const std::string& now_rfc3339, int64_t generation = 0);
Json LocalQueueStatus(const core::Engine& engine, const std::string& ns, const std::string& lq,
                      const ObjectCondition& cond, const Json& current_status, const std::string& now_rfc3339,
                      int64_t generation = 0);

// The engine's views that queue statuses read, gathered once (workload counts
// per ClusterQueue and LocalQueue, usage per ClusterQueue, the flavors of each
// queue). The controller builds one per status pass, so that N queue statuses
// cost one walk over the workloads instead of N (1000 ClusterQueues and 1000
// LocalQueues over 10,000 workloads: 20M workload visits per pass before).
// Valid while the engine is not changed; the statuses are exactly those of
// the functions above. Update() brings it up to date after some workloads
// changed, at the cost of those workloads (the controller's status pass with
// 10,000 workloads touches a few per second).
class QueueStatusIndex {
 public:
  explicit QueueStatusIndex(const core::Engine& engine);
  // After the workloads `keys` ("ns/name") changed in any way (submitted,
  // admitted, evicted, finished, forgotten, deactivated), and nothing else
  // changed but quota usage: the index then equals one built afresh. A new
  // configuration needs a new index.
  // Adds to `queues` (when given) the queues whose counts or admitted usage
  // these workloads changed, before or after: "cq/NAME" and "lq/NS/NAME".
  void Update(const core::Engine& engine, const std::vector<std::string>& keys,
              std::set<std::string>* queues = nullptr);
  ~QueueStatusIndex();
  QueueStatusIndex(const QueueStatusIndex&) = delete;
  QueueStatusIndex& operator=(const QueueStatusIndex&) = delete;
  struct Data;
  const Data& data() const { return *data_; }

 private:
  std::unique_ptr<Data> data_;
};
Json ClusterQueueStatus(const QueueStatusIndex& index, const core::Engine& engine, const std::string& cq,
                        const ObjectCondition& cond, const Json& current_status,
                        const std::string& now_rfc3339, int64_t generation = 0);
// Everything of the index and the engine that ClusterQueueStatus /
// LocalQueueStatus read for one queue, as a compact string: two passes that
// give the same string (and the same condition, object and generation) give
// the same status, so the controller rebuilds only queues whose inputs
// changed. cluster_queue: true for a ClusterQueue, false for a LocalQueue.
std::string QueueStatusInputs(const QueueStatusIndex& index, const core::Engine& engine, bool cluster_queue,
                              const std::string& ns, const std::string& name);
Json LocalQueueStatus(const QueueStatusIndex& index, const std::string& ns, const std::string& lq,
                      const ObjectCondition& cond, const Json& current_status, const std::string& now_rfc3339,
                      int64_t generation = 0);

// ---------------------------------------------------------------- helpers

// Sets condition `type` in `conditions` (a JSON array, created when null)
// the way meta.SetStatusCondition does: lastTransitionTime is `now` for a new
// condition or a status change and kept otherwise; reason, message and
// observedGeneration are replaced. Returns whether anything changed.
bool SetCondition(Json* conditions, const std::string& type, bool status, const std::string& reason,
                  const std::string& message, const std::string& now_rfc3339, int64_t generation = 0);
// The condition `type` of a status' conditions, or null.
const Json* FindCondition(const Json& status, const std::string& type);
// True when condition `type` has status "True".
bool IsConditionTrue(const Json& status, const std::string& type);

// Milliseconds since the epoch <-> RFC 3339 in UTC ("2026-01-02T03:04:05Z",
// whole seconds as metav1.Time; ParseRfc3339 also reads fractions and offsets).
std::string FormatRfc3339(int64_t ms);
Result<int64_t> ParseRfc3339(const std::string& text);

// Kubernetes' limit on a condition message (32 KiB); longer ones are cut
// and end in " ...".
std::string TruncateConditionMessage(std::string message);

}  // namespace artel::kube
