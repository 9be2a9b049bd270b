// Daemon: arteld's standalone mode. It is the standalone backend of the
// control loop (loop/control_loop.h), which owns the scheduling
// `core::Engine` and its mutex, the cadence, the metrics and the watch
// events; the Daemon owns the durable `store::Store`, the
// `runtime::LocalRuntime` that runs admitted pods as processes, and the GPU
// inventory. It serves the HTTP API through `Service` (server/service.h).
//
// Durability. Every accepted mutation (config applied, workload submitted or
// cancelled) is appended to the store before the call returns, so an
// acknowledged request survives kill -9. The loop journals its own decisions
// (admitted, evicted, eviction completed, started, finished) before acting on
// them: no process starts before its admission is durable. The journal is
// also reduced into a compact model (`journal::Model`, one entry per workload)
// that snapshots are written from; recovery = snapshot + journal reduced the
// same way, then materialized into a fresh engine: pending workloads are
// resubmitted in their original order, admitted ones restored with their
// admission (`Engine::Restore`) and their processes re-adopted, or requeued
// when the processes are gone.
//
// The control loop wakes on every change (debounced by `debounce_ms`), on a
// `tick_ms` timer that reaps exits and escalates SIGKILLs (Backend::Poll), and
// runs a full scheduling pass at least every `schedule_interval_ms`. It holds
// `mu_` only while it talks to the engine (SyncLocked, the decisions);
// journal appends, process starts and stops happen outside it (Flush), so API
// calls never wait for an fsync of someone else.
//
// Thread-safety: every public method is safe to call from many threads.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <thread>
#include <vector>

#include "api/codec.h"
#include "base/thread_annotations.h"
#include "core/engine.h"
#include "loop/control_loop.h"
#include "manifest/manifest.h"
#include "runtime/runtime.h"
#include "server/auth.h"
#include "server/inventory.h"
#include "server/journal.h"
#include "server/log.h"
#include "server/pod_users.h"
#include "server/prom.h"
#include "server/redact.h"
#include "server/service.h"
#include "store/store.h"

namespace artel::server {

struct DaemonOptions {
  std::string data_dir;                // required: store and logs live here
  std::string fake_gpus;               // "8xH100-80GB,..."; empty = NVML
  std::vector<std::string> manifests;  // files/directories applied at start
  core::EngineOptions engine;
  int64_t tick_ms = 50;
  int64_t schedule_interval_ms = 1000;
  int64_t debounce_ms = 2;
  int64_t default_grace_ms = 30000;
  uint64_t snapshot_every = 20000;  // journal records between snapshots
  std::string cgroup_root;          // "" = autodetect, "none" = off
  // libartel-cuda.so for pods on GPU memory shares (docs/gpus.md); "" =
  // <arteld's dir>/../lib/libartel-cuda.so or <arteld's dir>/, if present;
  // "none" = off.
  std::string cuda_shim;
  bool stop_workloads_on_exit = false;  // SIGTERM the pods at shutdown
  // How long a Succeeded, Failed or Cancelled workload stays visible before
  // its record is deleted (journaled as WorkloadDeleted); < 0 = forever.
  int64_t finished_retention_ms = 24LL * 3600 * 1000;
  std::string hostname;  // node name; default gethostname()
  // Node pools, labels and taints of this host (server/inventory.h).
  InventoryOptions inventory;
  // Pod users and directories (docs/daemon.md, "Pod users and isolation").
  PodUserOptions pod_users;
  std::string work_dir;  // workloads' own directories; "" = <data_dir>/work
};

class Daemon : public Service, private loop::Backend {
 public:
  // Opens the store under `options.data_dir`, discovers GPUs, recovers the
  // journal and applies `options.manifests`. Does not start the loop.
  static Result<std::unique_ptr<Daemon>> Open(const DaemonOptions& options, Logger* log);
  ~Daemon() override;

  void Start();     // starts the control loop's thread
  void Shutdown();  // stops the loop, optionally the pods, writes a snapshot
  bool ready() const override { return ready_.load(); }

  // ---- mutations: durable before they return -----------------------------
  // Submits a workload. An empty `spec.name` takes `generate_name` plus a
  // random suffix. NotFound (field spec.queueName) for an unknown
  // LocalQueue; AlreadyExists for a taken name.
  Result<Json> Submit(core::WorkloadSpec spec, const std::string& generate_name,
                      const std::string& user) override;
  // Many workloads, one journal commit (AppendBatch) for all those that pass
  // the checks; each result is what Submit would have answered.
  std::vector<Result<Json>> SubmitBatch(std::vector<SubmitItem> items, const std::string& user) override;
  Result<Json> Cancel(const std::string& key, const std::string& user) override;
  // Applies a multi-document YAML body, merged by (kind, namespace, name)
  // over the current configuration. The body is parsed once
  // (manifest::SplitObjects); every object of it is authorized, and exactly
  // those parsed objects are applied, all or nothing. Tenants may only apply
  // namespaced kinds (LocalQueue, ResourceQuota) in their namespaces
  // (PermissionDenied naming the object otherwise). An object that the
  // startup manifests (`--manifests`) define may not be changed through the
  // API (FailedPrecondition, 409, naming the file): the files are applied
  // again at every start and would revert the change.
  Result<Json> Apply(std::string_view yaml, const Principal& who) override;

  // ---- queries ------------------------------------------------------------
  // Workload views are redacted for `who` (redact.h): another namespace's
  // workloads (a preemptor, victims) appear only as counts per ClusterQueue.
  Result<Json> GetWorkload(const std::string& key, const Principal& who) const override;
  Json ListWorkloads(const ListFilter& filter, const Principal& who) const override;
  Result<Json> Why(const std::string& key, const Principal& who) const override;
  // ClusterQueues, LocalQueues and Cohorts are the control loop's views.
  Json ClusterQueues() const override;
  Json LocalQueues(const std::optional<std::set<std::string>>& namespaces) const override;
  Json Cohorts() const override;
  Json Nodes() const override;
  Json Gpus(const Principal& who) const override;
  Json Config(const Principal& who) const override;
  // The value of WorkloadPriorityClass `name`; nullopt when there is none.
  std::optional<int32_t> PriorityClassValue(const std::string& name) const override;
  // The pod logs of a workload, the last `tail_bytes` of each pod's file.
  Result<std::string> Logs(const std::string& key, const std::string& pod, int64_t tail_bytes) const override;
  // The control loop's metrics, then the standalone ones (GPU telemetry,
  // workloads by phase, journal).
  std::string Metrics() const override;

  // ---- watch ----------------------------------------------------------------
  // The control loop's event ring (ControlLoop::EventsAfter). Redacted for
  // `who`: an Evicted event names its preemptor only when `who` may see it
  // (its ClusterQueue always), a ConfigApplied event names only `who`'s own
  // user.
  std::vector<Json> EventsAfter(uint64_t after, int64_t wait_ms,
                                const std::optional<std::set<std::string>>& ns, uint64_t* next,
                                const Principal& who) const override;
  uint64_t LatestEventSeq() const override;

  std::string gpu_mode() const { return gpu_mode_; }

 private:
  struct Pod {
    runtime::RunningPod rp;
    std::vector<int> gpus;  // indices into gpus_
    bool exited = false;
    runtime::Exit exit;
  };
  struct Wl {  // live daemon-side state of a workload
    core::WorkloadSpec spec;
    int64_t submitted_ms = 0;
    std::string user;
    std::string cluster_queue;  // last admission's ClusterQueue
    std::string terminal;       // "", Succeeded, Failed, Cancelled
    std::string message;
    int32_t retries = 0;
    std::vector<Pod> pods;
    bool running = false;   // pods started and not all exited
    bool deferred = false;  // recovered while its evicted pods still ran, and not restorable in the engine
    // Cancelled while its pods ran: shown as Terminating, it keeps its
    // admission (quota, GPUs) in the engine as an evicting workload until
    // every process of its pods has exited (docs/daemon.md).
    bool stopping = false;
    bool cancel_pending = false;  // a cancel is being journaled: start nothing
    bool reactivate = false;      // the daemon deactivated it in the engine to hold its admission
    int32_t own_evictions = 0;    // evictions the daemon made itself (not shown)
    int32_t quiet_evictions = 0;  // of those, not yet reported by a cycle
    int64_t kill_at_ms = -1;      // SIGKILL deadline of the current stop
    std::string start_id;         // of the latest start
    int64_t started_ms = -1;
    int64_t finished_ms = -1;
    int64_t admitted_ms = -1;
    std::optional<int> exit_code;
    int64_t used_ms = 0;  // recovered used time, handed back when a deferred workload is submitted again
  };
  Daemon(const DaemonOptions& options, Logger* log);
  Status Init();
  Status Recover();
  Status ApplyStartupManifests();
  // Apply's body once parsed. `startup`: the objects come from the
  // `--manifests` files (`files`: key -> file) and may change file-managed
  // objects.
  Result<Json> ApplyObjects(std::vector<manifest::ManifestObject> objects, const Principal& who,
                            const std::map<std::string, std::string>* files);

  int64_t NowLocked() REQUIRES(loop_.mu()) { return loop_.NowLocked(); }
  void Wake() { loop_.Wake(); }

  // ---- loop::Backend: one pass of the control loop ---------------------------
  // Poll: runtime tick (SIGKILL escalation) and exits. SyncLocked: the exits
  // into the engine. The decisions: journal records, launches and stops.
  // CycleDoneLocked: retention, launches left from recovery. Flush: the
  // journal append, then stops and launches, then a snapshot when due.
  bool Poll(int64_t now) override;
  void SyncLocked(core::Engine& engine, int64_t now) override REQUIRES(loop_.mu());
  bool SkipEvictionLocked(const core::Eviction& e, int64_t now) override REQUIRES(loop_.mu());
  void OnAdmittedLocked(const core::WorkloadInfo& info, int64_t now) override REQUIRES(loop_.mu());
  void OnEvictedLocked(const core::Eviction& e, const core::WorkloadInfo* victim, int64_t now) override
      REQUIRES(loop_.mu());
  void CycleDoneLocked(core::Engine& engine, int64_t now, bool full_pass) override REQUIRES(loop_.mu());
  void Flush(int64_t now) override;
  // What one pass gathered and decided (loop thread only).
  struct PassState {
    std::vector<runtime::Exit> exits;
    std::vector<store::Record> recs;
    std::vector<std::string> launch, stop;
    bool again = false;  // an eviction completed: run another pass
  };
  PassState pass_;

  void HandleExitsLocked(const std::vector<runtime::Exit>& exits, int64_t now,
                         std::vector<store::Record>* recs, std::vector<std::string>* launch)
      REQUIRES(loop_.mu());
  // One workload being launched by Launch (below).
  struct PendingLaunch {
    std::string key;
    runtime::LaunchSpec spec;
    store::Record starting;
    int64_t submitted_ms = 0;
    Result<std::vector<runtime::RunningPod>> started = Status(StatusCode::kInternal, "not started");
    int64_t now = 0;
  };
  // Claims an admitted workload for launch and builds its LaunchSpec and
  // Starting record; false when there is nothing to launch. REQUIRES mu_.
  bool PrepareLaunchLocked(const std::string& key, PendingLaunch* l) REQUIRES(loop_.mu());
  // Starts the pods of these workloads: their Starting records in one journal
  // commit before any fork, their Started records in one commit after.
  void Launch(const std::vector<std::string>& keys);
  // Sets each pod's user, own directory (created 0700, owned by that user)
  // and default working directory; refuses root unless allowed.
  Status PreparePodUsers(const std::string& key, int64_t submitted_ms, runtime::LaunchSpec* spec);
  // A pod set's workingDir must be absolute and usable by the pods' user.
  Status CheckWorkingDirs(const core::WorkloadSpec& spec);
  Status InitDirectories();
  void RemoveOwnDirectoriesOf(const std::string& key);
  void MaybeSnapshot(bool force);
  Status AppendAndApply(std::vector<store::Record> recs);
  void ApplyToModelLocked(const store::Record& r) REQUIRES(loop_.mu());
  void FinishLocked(const std::string& key, Wl& w, int64_t now, int exit_code, const std::string& phase,
                    std::vector<store::Record>* recs) REQUIRES(loop_.mu());
  void ReleaseGpusLocked(Wl& w) REQUIRES(loop_.mu());
  void ClaimGpuLocked(int gpu, const std::string& owner) REQUIRES(loop_.mu());
  std::vector<int> AssignGpusLocked(int count, const std::string& owner) REQUIRES(loop_.mu());
  // Fills a pod's devices, GPU indices (taking ownership) and slice limits
  // from the engine's placement.
  void ApplyPlacementLocked(const core::PodPlacementInfo& pp, const std::string& owner,
                            runtime::PodLaunch* pl, Pod* pod) REQUIRES(loop_.mu());
  // Removes a workload that reached a final state from the engine (its
  // quota released, its slot freed); the daemon keeps its record.
  void DropFromEngineLocked(const std::string& key, int64_t now) REQUIRES(loop_.mu());
  // Deletes the records of workloads finished longer than the retention ago.
  void CollectFinishedLocked(int64_t now, std::vector<store::Record>* recs) REQUIRES(loop_.mu());
  int64_t last_collect_ms_ = 0;
  // The WorkloadStarted record of `w`'s pods (`recovered`: found after a crash).
  static store::Record StartedRecord(const std::string& key, const Wl& w, bool recovered);
  // What a finished or cancelled workload keeps across a restart: retries,
  // startedAt, admittedAt and its pods (with their exit codes).
  static journal::FinalStatus FinalStatusOf(const Wl& w);
  static store::Record CancelCompletedRecord(const std::string& key, const Wl& w);
  static void RestoreFinalStatus(const journal::FinalStatus& f, Wl* w);
  // Keeps an admitted workload's admission held in the engine while its pods
  // stop, as an evicting workload (the daemon's own, unreported eviction).
  void HoldAdmissionLocked(const std::string& key, Wl& w, int64_t now) REQUIRES(loop_.mu());
  // The pods of a cancelled (Terminating) workload are all gone: release its
  // admission and journal it Cancelled.
  void CompleteCancelLocked(const std::string& key, Wl& w, int64_t now, std::vector<store::Record>* recs)
      REQUIRES(loop_.mu());
  static std::string NewStartId();
  // True when $ARTEL_FAILPOINT names `name` (crash tests; docs/daemon.md).
  static bool Failpoint(const char* name);
  void EmitLocked(const std::string& type, const std::string& key, Json extra = Json::object())
      REQUIRES(loop_.mu()) {
    loop_.EmitLocked(type, key, std::move(extra));
  }
  Json WorkloadJsonLocked(const std::string& key, const Wl& w, const Redactor& r) const REQUIRES(loop_.mu());
  // The redactor for `who` over the current state. REQUIRES: mu_ held while
  // it is used.
  Redactor RedactorLocked(const Principal& who) const REQUIRES(loop_.mu());
  std::string PhaseLocked(const std::string& key, const Wl& w) const REQUIRES(loop_.mu());
  using Docs = std::map<std::string, manifest::ManifestObject>;  // by ManifestObject::key()
  Status ConfigureFromDocsLocked(const Docs& docs, core::Config* out) const REQUIRES(loop_.mu());
  static std::string DocsToText(const Docs& docs);

  DaemonOptions options_;
  Logger* log_;
  // The control loop: the engine and the mutex that guards it (engine_ and
  // mu_ below are the loop's), the cadence, metrics and watch events.
  loop::ControlLoop loop_;
  core::Engine& engine_;
  // The loop's mutex (guards engine_ and the state below that says so).
  std::mutex& mu() const RETURN_CAPABILITY(loop_.mu()) { return loop_.mu(); }
  std::unique_ptr<store::Store> store_;
  std::unique_ptr<runtime::LocalRuntime> runtime_;
  std::unique_ptr<runtime::GpuDiscovery> discovery_;
  std::string gpu_mode_;
  std::string log_dir_;
  // Pod users and the workloads' own directories (docs/daemon.md).
  std::unique_ptr<PodUsers> pod_users_;
  std::string work_dir_;
  std::vector<std::string> logs_to_remove_
      GUARDED_BY(loop_.mu());  // workloads deleted by retention, logs still on disk (mu_)

  // Held shared by every journal append + model update, exclusively by a
  // snapshot, so that a snapshot's `upto_seq` matches the model exactly.
  mutable std::shared_mutex journal_mu_;
  uint64_t records_since_snapshot_ GUARDED_BY(loop_.mu()) = 0;  // guarded by mu_

  std::mutex apply_mu_;  // serializes ApplyObjects; taken before journal_mu_ and mu_
  std::map<std::string, Wl> wl_ GUARDED_BY(loop_.mu());
  std::set<std::string> inflight_ GUARDED_BY(loop_.mu());
  // Submit's halves. PrepareSubmitLocked runs the checks, names the workload
  // and reserves the name in inflight_; FinishSubmitLocked takes the durable
  // record and folds it into the model and the engine. REQUIRE mu_ (and
  // journal_mu_ shared across both, with the append between them).
  Result<std::string> PrepareSubmitLocked(core::WorkloadSpec* spec, const std::string& generate_name)
      REQUIRES(loop_.mu());
  Result<Json> FinishSubmitLocked(store::Record r, core::WorkloadSpec spec, const std::string& user)
      REQUIRES(loop_.mu());
  Docs docs_;                                        // "Kind/ns/name" -> the applied object
  std::map<std::string, std::string> file_managed_;  // "Kind/ns/name" -> startup manifest file
  journal::Model model_ GUARDED_BY(loop_.mu());      // the journal, reduced per workload (the snapshot form)
  std::vector<runtime::GpuInfo> gpus_;
  std::vector<std::string> gpu_owner_
      GUARDED_BY(loop_.mu());  // "ns/name/pod" shown for the GPU, or empty when free
  std::vector<std::vector<std::string>> gpu_users_
      GUARDED_BY(loop_.mu());  // every pod on the GPU (memory shares)
  // The host's node pools (placement nodes) and, per host GPU, its pool's
  // node name; flavors that match no pool, with why (after each Configure).
  std::vector<HostPool> pools_;
  std::vector<std::string> gpu_node_;
  void CheckFlavorsLocked()
      REQUIRES(loop_.mu());  // recomputes the loop's flavors without nodes and logs each as a warning
  // Maps a journaled placement's pods to this start's node pools by their
  // GPUs' UUIDs (a pod without GPUs by pool name; a placement journaled
  // before pools by the old one-node GPU order) and rewrites node and GPU
  // indices; false when that is impossible (the workload is placed again).
  bool PlacementMatchesPoolsLocked(const journal::JournaledPlacement& placement,
                                   core::placement::Placement* p) const REQUIRES(loop_.mu());
  std::set<std::string> pending_launch_ GUARDED_BY(loop_.mu());

  std::atomic<bool> ready_{false};
  std::atomic<bool> shut_down_{false};
  // Wakes the loop as soon as a pod ends (LocalRuntime::WaitForExit), so that
  // exits are reaped on the event rather than at the next tick. Started by
  // Start, joined by Shutdown.
  std::thread exit_waker_;
  std::atomic<bool> exit_waker_stop_{false};
};

}  // namespace artel::server
