// Controller: arteld's Kubernetes backend. It speaks Kueue's API
// (kueue.x-k8s.io/v1beta2, or v1beta1 where the cluster serves only that):
// the configuration (ResourceFlavor, Cohort, ClusterQueue, LocalQueue,
// WorkloadPriorityClass, Topology) and the Workloads come from informers; the
// decisions of the shared control loop (loop::ControlLoop) go back to the
// cluster as Workload status (admission, conditions), Events and
// ClusterQueue/LocalQueue status. The cluster is the state: there is no
// journal, and a restart rebuilds the engine from the API objects alone.
//
// Threads. Informer callbacks only enqueue and wake the loop. The loop
// thread drains the queues in `Poll` (no lock), folds them into the engine in
// `SyncLocked` (the loop's lock held), records the writes its decisions need
// in `OnAdmittedLocked` / `OnEvictedLocked`, and hands them to the writer
// threads in `Flush`. The writers do every API call; no API I/O happens under
// the engine lock or on the loop thread.
//
// Writes. Writes are coalesced per object: only the latest desired status of
// each Workload is written, one write in flight per object. A Workload status
// write is a PUT of the status subresource carrying the resourceVersion of the
// object the decision was made on, so a decision made on a stale object is
// refused (409) rather than written over a user's change. The engine follows
// what is written: an admission whose write is refused is requeued in the
// engine and decided again on the fresh object (docs/kubernetes.md, "Restart
// and failure semantics").
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/engine.h"
#include "kube/client.h"
#include "kube/kueue_map.h"
#include "loop/control_loop.h"
#include "server/log.h"
#include "server/redact.h"
#include "server/service.h"

namespace artel::kube {

struct ControllerOptions {
  core::EngineOptions engine;
  loop::LoopOptions loop;
  // Writer threads (status writes, Events, queue statuses), each with its own
  // connection. Admissions, evictions and requeues may use every one of them;
  // pending explanations, queue statuses and Events at most
  // `background_writers` at once, so that they cannot take the API server's
  // capacity from admissions.
  int writers = 16;
  int background_writers = 2;
  // Events waiting to be posted: when this many are queued, a new one is
  // dropped (and counted), as client-go's event recorder drops events when
  // its queue of 1,000 is full (k8s.io/client-go/tools/record: maxQueuedEvents
  // with watch.DropIfChannelFull). Events are best effort; statuses are not.
  int max_queued_events = 1000;
  int64_t queue_status_interval_ms = 1000;    // at most one CQ/LQ status write per object per interval
  int64_t pending_status_interval_ms = 1000;  // pending explanations refreshed at most this often
  // A pending explanation whose reason kind is unchanged (only its details,
  // such as amounts or preemption candidates, moved) is rewritten at most this
  // often per Workload: with thousands pending, every admission would
  // otherwise rewrite them all.
  int64_t pending_rewrite_interval_ms = 30000;
  // Queue statuses are rebuilt when something they are built from changed (a
  // workload event, a decision, a queue object, the configuration) and, as a
  // safety net, every this often in any case (0: never).
  int64_t queue_status_full_pass_ms = 10000;
  std::string field_manager = "artel";
  std::string kueue_version;  // "" = discover (v1beta2 preferred, else v1beta1)
  std::string instance;       // reportingInstance of Events (default: hostname)
  bool events = true;         // write core v1 Events on Workloads
  // Test hook: called on a writer thread just before each status write (ns,
  // name, write type: "admit", "pending", "evict", "requeue" for a Workload's
  // status; "queue" for a ClusterQueue's (ns "") or LocalQueue's; "priority"
  // for a Workload's spec.priority).
  std::function<void(const std::string&, const std::string&, const std::string&)> before_status_write;
};

// The nodes the engine places on (kube/nodes.h): started by Controller::Start
// before the first pass, polled and folded into the engine by the loop.
class NodeSource {
 public:
  virtual ~NodeSource() = default;
  // Starts watching; returns once the first list is delivered (or fails
  // after `timeout_ms`). `wake` asks the loop for a pass.
  virtual Status Start(std::function<void()> wake, int64_t timeout_ms) = 0;
  virtual void Stop() = 0;
  // Loop thread, no lock: true when a pass is needed.
  virtual bool Poll(int64_t now) = 0;
  // Loop thread, loop lock held: fold the changes into the engine (after
  // the configuration, before the workloads).
  virtual void SyncLocked(core::Engine& engine, int64_t now) = 0;
};

// Counters for tests and /metrics.
struct ControllerStats {
  uint64_t status_writes = 0;
  uint64_t status_conflicts = 0;
  uint64_t admissions_requeued = 0;  // admission writes refused: workload requeued in the engine
  uint64_t restored = 0;             // workloads restored with their admission from the cluster
  uint64_t events_written = 0;
  uint64_t events_dropped = 0;  // not posted: max_queued_events were waiting
  uint64_t queue_status_writes = 0;
  // Pending explanations handed to the writers (a later one replaces one not
  // yet written).
  uint64_t pending_explanations = 0;
  uint64_t queue_statuses_staged = 0;  // ClusterQueue/LocalQueue statuses handed to the writers
};

// The controller is also what arteld's HTTP API serves in Kubernetes mode
// (server::Service): the read verbs from the engine and the loop's views;
// every mutation answers FailedPrecondition (use kubectl: the cluster is the
// source of truth).
class Controller : public server::Service, public loop::Backend {
 public:
  // `config` is used for one Client per informer and per writer thread.
  Controller(ClientConfig config, ControllerOptions options, server::Logger* log,
             std::function<int64_t()> now_ms);
  ~Controller() override;
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;

  // Discovers the Kueue API version, starts the informers, waits (up to
  // `sync_timeout_ms`) until every one has listed, folds the whole cluster
  // into the engine (admitted Workloads restored with their admission,
  // pending ones submitted in creation order) and only then starts the loop.
  Status Start(int64_t sync_timeout_ms = 60000);
  // Stops the loop, the informers and the writers (writes not yet made are
  // dropped: the cluster keeps what landed, and the next start decides again).
  void Stop();
  bool ready() const override { return ready_.load(); }
  // Placement nodes (kube/nodes.h); before Start. Not owned.
  void SetNodeSource(NodeSource* nodes) { nodes_ = nodes; }

  loop::ControlLoop& control_loop() { return *loop_; }
  const std::string& kueue_version() const { return version_; }
  ControllerStats stats() const;
  // Unfinished Workloads of a LocalQueue (spec.queueName in that namespace),
  // as the controller last saw them. Thread-safe (takes the loop's lock).
  int LocalQueueWorkloads(const std::string& ns, const std::string& local_queue) const;

  // Workload objects as the controller folds them (the newest per key, the
  // answers to its own writes included), for the Job integration and the
  // topology ungater: the cluster's Workloads are then watched and parsed once
  // instead of once per component. The current Workloads are replayed to `fn`
  // as additions before it is added; then every change and deletion follows.
  // Called on the loop thread with the loop's lock held: `fn` must be short
  // and must not call back into the controller. After Start.
  using WorkloadListener = std::function<void(const Json& obj, bool deleted)>;
  void AddWorkloadListener(WorkloadListener fn);
  // Object conditions of the current configuration (Active per queue).
  std::vector<ObjectCondition> Conditions() const;

  // ---- server::Service (controller_service.cc) ------------------------------
  Result<Json> Submit(core::WorkloadSpec spec, const std::string& generate_name,
                      const std::string& user) override;
  Result<Json> Cancel(const std::string& key, const std::string& user) override;
  Result<Json> Apply(std::string_view yaml, const server::Principal& who) override;
  Result<Json> GetWorkload(const std::string& key, const server::Principal& who) const override;
  Json ListWorkloads(const server::ListFilter& filter, const server::Principal& who) const override;
  Result<Json> Why(const std::string& key, const server::Principal& who) const override;
  Json ClusterQueues() const override;
  Json LocalQueues(const std::optional<std::set<std::string>>& namespaces) const override;
  Json Cohorts() const override;
  Json Nodes() const override;
  Json Gpus(const server::Principal& who) const override;
  Json Config(const server::Principal& who) const override;
  std::optional<int32_t> PriorityClassValue(const std::string& name) const override;
  Result<std::string> Logs(const std::string& key, const std::string& pod, int64_t tail_bytes) const override;
  std::string Metrics() const override;
  std::vector<Json> EventsAfter(uint64_t after, int64_t wait_ms,
                                const std::optional<std::set<std::string>>& ns, uint64_t* next,
                                const server::Principal& who) const override;
  uint64_t LatestEventSeq() const override;

  // ---- loop::Backend -------------------------------------------------------
  bool Poll(int64_t now) override;
  void SyncLocked(core::Engine& engine, int64_t now) override;
  // The evictions the controller makes itself to put a restored, already
  // evicted workload back into the evicting state are not reported.
  bool SkipEvictionLocked(const core::Eviction& e, int64_t now) override;
  void OnAdmittedLocked(const core::WorkloadInfo& info, int64_t now) override;
  void OnEvictedLocked(const core::Eviction& e, const core::WorkloadInfo* victim, int64_t now) override;
  // After the pass's decisions: the pending explanations and the queue
  // statuses to write (each rate-limited).
  void CycleDoneLocked(core::Engine& engine, int64_t now, bool full_pass) override;
  void Flush(int64_t now) override;

 private:
  enum class Kind {
    kFlavor,
    kCohort,
    kClusterQueue,
    kLocalQueue,
    kPriorityClass,
    kTopology,
    kNamespace,
    kWorkload
  };
  struct InEvent {
    Kind kind;
    bool deleted = false;
    Json obj;
  };
  // A write handed to the writer threads.
  struct Write {
    // kPriority: a Workload's spec.priority, after its WorkloadPriorityClass's value changed.
    enum class Type { kAdmit, kPending, kEvict, kRequeue, kQueueStatus, kEvent, kPriority };
    Type type = Type::kPending;
    std::string key;  // coalescing key: "wl/ns/name", "cq/name", "lq/ns/name"; empty for events
    Resource resource;
    std::string ns, name, uid;
    Json object;  // the object decided on (Workload), or the Event body
    Json status;  // the full new status
    std::string precondition_rv;
    std::optional<core::Eviction> eviction;  // kEvict: recomputed on a conflict
    uint64_t gen = 0;                        // kAdmit: the admission generation
    std::vector<Json> events;                // Events posted once the write landed
    int32_t priority = 0;                    // kPriority: the new spec.priority
  };
  struct WriteResult {
    Write::Type type;
    std::string key;
    std::string ns, name, uid;
    uint64_t gen = 0;
    enum class Outcome { kOk, kRefused, kGone, kFailed } outcome = Outcome::kOk;
    Json object;  // the object after the write (kOk), or as re-read
  };
  // The loop's view of one Workload object (loop thread only).
  struct Wl {
    std::string uid;
    Json obj;  // newest object seen (informer or our own write)
    int64_t rv = 0;
    int64_t created_ms = 0;
    std::string spec_dump;  // spec as last submitted (minus active)
    int64_t spec_gen = 0;   // metadata.generation of the object spec_dump was last compared with
    bool in_engine = false;
    bool finished = false;  // Finished in the cluster: forgotten by the engine
    bool broken = false;    // an admission write was rejected for good; wait for a change
    std::string broken_rv;
    uint64_t write_gen = 0;  // generation of the latest write handed over
    uint64_t admit_gen = 0;  // generation of the latest admission decided
    bool admit_inflight = false;
    Json desired_status;      // the latest status handed to the writers (null = none)
    std::string pending_msg;  // the pending explanation last written
    int pending_kind = -1;    // its PendingReason::Kind
    int64_t pending_at = 0;   // when it was written
    int64_t pending_written_ms = -1;
  };

  // An Event waiting to be posted, kept as its JSON text (a few hundred
  // bytes, against several KB as a parsed tree: thousands may be queued).
  struct QueuedEvent {
    std::string ns;
    std::string reason;
    std::string body;
  };
  static QueuedEvent Queued(const Json& event);

  void Enqueue(Kind kind, bool deleted, const Json& obj);
  void Complete(WriteResult r);
  Status Discover();
  Resource Res(Kind kind) const;
  void WriterMain(int index);
  void DoWrite(Client& client, Write w);
  void PostEvent(Client& client, const QueuedEvent& event);
  void QueueEvents(std::vector<Json> events);
  void Stage(Write w);
  std::string Rfc3339(int64_t ms) const;

  // Loop-thread helpers (mu() held).
  void ApplyConfigLocked(core::Engine& engine, int64_t now);
  void HandleWorkloadLocked(core::Engine& engine, const Json& obj, bool deleted, int64_t now,
                            std::vector<std::string>* to_submit, std::vector<std::string>* to_restore);
  void SubmitLocked(core::Engine& engine, const std::string& key, int64_t now);
  bool RestoreLocked(core::Engine& engine, const std::string& key, int64_t now);
  void DropLocked(core::Engine& engine, const std::string& key, int64_t now, bool finished);
  void RequeueLocked(core::Engine& engine, const std::string& key, int64_t now);
  void HandleResultLocked(core::Engine& engine, const WriteResult& r, int64_t now);
  void PendingStatusesLocked(core::Engine& engine, int64_t now);
  void PriorityClassesLocked();
  void QueueStatusesLocked(core::Engine& engine, int64_t now);
  Json WorkloadEvent(const Json& obj, const std::string& type, const std::string& reason,
                     const std::string& message, int64_t now) const;
  const Json& BaseStatus(const Wl& w) const;
  // Service helpers (loop mu() held).
  server::Redactor RedactorLocked(const server::Principal& who) const;
  std::string PhaseLocked(const std::string& key, const Wl& w) const;
  Json WorkloadJsonLocked(const std::string& key, const Wl& w, const server::Redactor& red) const;

  ClientConfig config_;
  NodeSource* nodes_ = nullptr;
  ControllerOptions options_;
  server::Logger* log_;
  std::function<int64_t()> now_ms_;
  std::string version_;
  std::unique_ptr<loop::ControlLoop> loop_;
  std::vector<std::unique_ptr<Client>> informer_clients_;
  std::vector<std::unique_ptr<Informer>> informers_;
  std::atomic<bool> ready_{false};
  std::atomic<bool> started_{false};
  std::atomic<bool> initial_done_{false};

  // Inbox: informer events and write results, filled by other threads.
  std::mutex in_mu_;
  std::vector<InEvent> inbox_;
  std::vector<WriteResult> results_;

  // Loop-thread state.
  std::vector<InEvent> events_;    // drained by Poll
  std::vector<WriteResult> done_;  // drained by Poll
  bool config_dirty_ = false;
  // WorkloadPriorityClasses created or whose value changed since the last
  // pass: the Workloads that reference them get the new spec.priority.
  std::set<std::string> wpc_changed_;
  std::optional<BuiltConfig> built_;  // built by Poll, applied by SyncLocked
  ConfigBuilder
      config_builder_;  // Poll's (loop thread): objects unchanged since the last build are not re-read
  std::map<std::string, std::map<std::string, Json>> config_objs_;  // kind -> key -> object
  std::vector<WorkloadListener> wl_listeners_;                      // AddWorkloadListener (mu() held)
  std::map<std::string, Wl> wls_;          // "ns/name"; changed only with mu() held (the Service reads it)
  std::vector<Write> staged_;              // decided under the lock, handed over by Flush
  std::set<std::string> quiet_evictions_;  // restored evicted workloads: their engine eviction is not news
  std::map<std::string, Json> queue_status_written_;  // "cq/name" -> status last handed over
  std::map<std::string, int64_t> queue_status_at_;
  std::unordered_map<std::string, std::string>
      queue_status_inputs_;  // key -> inputs of the last status built
  int64_t last_queue_status_ms_ = -1;
  int64_t last_queue_walk_ms_ = -1;  // the last pass that looked at every queue
  bool queue_dirty_ = true;          // a workload, decision, write result or configuration changed since
  bool queue_throttled_ = false;     // a queue was skipped by the per-queue interval in the last pass
  // The queue-status index, kept between passes: brought up to date with the
  // workloads changed since (queue_dirty_keys_), rebuilt after a new
  // configuration (queue_index_stale_) and on every full pass.
  std::unique_ptr<QueueStatusIndex> queue_index_;
  std::set<std::string> queue_dirty_keys_;
  std::set<std::string> queue_touched_;  // "cq/NAME", "lq/NS/NAME": objects changed, or left for later
  bool queue_index_stale_ = true;
  int64_t last_pending_scan_ms_ = -1;

  // Conditions of the current configuration (read by Conditions()).
  mutable std::mutex cond_mu_;
  std::vector<ObjectCondition> conditions_;
  std::vector<ObjectCondition> loop_conditions_;  // the same, read by the loop without cond_mu_

  // Writer queue: coalesced per key, one write in flight per key.
  std::mutex out_mu_;
  std::condition_variable out_cv_;
  std::map<std::string, Write> desired_;  // key -> latest write not yet taken
  std::deque<std::string> ready_keys_;    // keys with a desired write, not in flight
  // The same for admissions, evictions and requeues: taken before ready_keys_
  // and Events, so that thousands of pending explanations do not delay them.
  // A key may be in both (moved ahead); a writer skips a key in flight or
  // without a desired write.
  std::deque<std::string> urgent_keys_;
  // ClusterQueue and LocalQueue statuses: taken by the background writers
  // before ready_keys_ (pending explanations), so that a queue's counts do not
  // wait behind thousands of explanations. At most one write per queue and
  // queue_status_interval_ms is staged, so they cannot starve the others.
  std::deque<std::string> queue_keys_;
  static bool Urgent(Write::Type t);
  std::deque<std::string>& LaneLocked(Write::Type t);  // the deque a key with a write of type t waits in
  std::set<std::string> inflight_;
  int background_busy_ = 0;  // writers now writing a key of queue_keys_ or ready_keys_, or posting an Event
  bool event_turn_ = false;  // the next background writer posts an Event (when both wait)
  std::deque<QueuedEvent> event_queue_;  // Events: a new one is dropped when full (QueueEventLocked)
  bool QueueEventLocked(QueuedEvent event);
  bool stopping_ = false;
  std::vector<std::thread> writers_;
  std::map<std::string, std::pair<std::string, std::string>>
      rv_alias_;  // key -> (rv decided on, rv after our write)

  mutable std::mutex stats_mu_;
  ControllerStats stats_;
};

}  // namespace artel::kube
