// ControlLoop: the engine's cadence and the work that every decision needs,
// shared by arteld's two modes (docs/daemon.md, "Layout").
//
//   core (pure) <- loop (cadence, decisions, views, metrics) <- backends
//     standalone: server::Daemon (SQLite journal + local runtime)
//     kubernetes: the controller (API objects + pods)
//
// The loop owns the scheduling `core::Engine` and the mutex that guards it.
// It wakes on `Wake()` (debounced by `debounce_ms`, so that a burst of
// changes lands before the pass), on a `tick_ms` timer, and runs a full
// scheduling pass at least every `schedule_interval_ms` of the injected
// clock. One pass:
//
//   Backend::Poll(now)            no lock: reap processes, drain queues
//   lock mu()
//     Backend::SyncLocked         fold that input into the engine
//     Engine::Schedule            when woken, polled a change, or on the interval
//     per decision, in order:     metrics (Kueue's names), watch event, log line,
//                                 then Backend::OnAdmittedLocked / OnEvictedLocked
//     Backend::CycleDoneLocked
//   unlock
//   Backend::Flush(now)           no lock: journal, start/stop pods, write objects
//
// It also serves what both modes show from the engine: the ClusterQueue,
// LocalQueue and Cohort views, the `why` explanation, the Kueue-named
// metrics, and the watch-event ring behind /api/v1/watch.
//
// Thread-safety: every public method is safe from any thread except where it
// says REQUIRES mu(). Passes never overlap (RunOnce and the loop thread
// take turns). Backend hooks run on the thread that runs the pass.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>

#include "base/thread_annotations.h"
#include "core/engine.h"
#include "core/status.h"
#include "server/auth.h"
#include "server/log.h"
#include "server/prom.h"
#include "server/redact.h"

namespace artel::loop {

using Json = nlohmann::json;

struct LoopOptions {
  int64_t tick_ms = 50;                 // the loop wakes at least this often (Poll)
  int64_t schedule_interval_ms = 1000;  // a full scheduling pass at least this often
  int64_t debounce_ms = 2;              // after a Wake, wait this long for more changes
};

// The mode-specific half. Called on the thread that runs the pass.
class Backend {
 public:
  virtual ~Backend() = default;
  // No lock held: gather outside input (reap processes, drain watch queues)
  // without touching the engine. True when something changed that needs a
  // scheduling pass.
  virtual bool Poll(int64_t now) = 0;
  // mu() held: fold the gathered input into the engine (Configure, Submit,
  // Finish, CompleteEviction, SetActive, ...).
  virtual void SyncLocked(core::Engine& engine, int64_t now) = 0;
  // mu() held, once per eviction of a pass, before anything else is done
  // with it: true when the eviction is the backend's own doing (e.g. it
  // deactivated a workload to hold its quota while its pods stop) and must
  // not be reported: no metrics, event, log line or OnEvictedLocked.
  virtual bool SkipEvictionLocked(const core::Eviction& e, int64_t now) {
    (void)e;
    (void)now;
    return false;
  }
  // mu() held, after Engine::Schedule, in decision order (admissions first,
  // then evictions, as the engine reports them). The loop has already
  // counted the metrics, emitted the watch event and logged the decision.
  virtual void OnAdmittedLocked(const core::WorkloadInfo& info, int64_t now) = 0;
  virtual void OnEvictedLocked(const core::Eviction& e, const core::WorkloadInfo* victim, int64_t now) = 0;
  // mu() held, at the end of every pass's locked part. `full_pass`: this
  // pass was a full one (woken or on the interval), not one that only ran
  // because Poll saw a change.
  virtual void CycleDoneLocked(core::Engine& engine, int64_t now, bool full_pass) {
    (void)engine;
    (void)now;
    (void)full_pass;
  }
  // No lock held: carry out what the decisions need (journal, start/stop
  // pods, write API objects).
  virtual void Flush(int64_t now) = 0;
};

class ControlLoop {
 public:
  // The clock is injected (milliseconds; production: wall clock).
  ControlLoop(core::EngineOptions engine_options, LoopOptions options, server::Logger* log,
              std::function<int64_t()> now_ms);
  ~ControlLoop();  // Stop()
  ControlLoop(const ControlLoop&) = delete;
  ControlLoop& operator=(const ControlLoop&) = delete;

  void SetBackend(Backend* b);  // before Start / RunOnce
  void Start();                 // the loop thread
  void Stop();                  // joins it; ends EventsAfter waits; idempotent
  bool stopping() const { return stopped_.load(); }
  void Wake();  // something changed: run a pass soon (debounced)

  std::mutex& mu() const RETURN_CAPABILITY(mu_) { return mu_; }  // guards the engine and the loop's state
  core::Engine& engine() { return engine_; }                     // REQUIRES mu()
  const core::Engine& engine() const { return engine_; }         // REQUIRES mu()
  // The injected clock, never going backwards. REQUIRES mu().
  int64_t NowLocked() REQUIRES(mu_);

  // One pass, synchronously (tests and simulator-style drivers).
  // `schedule`: a full pass (Engine::Schedule runs); otherwise it runs only
  // when Backend::Poll reports a change.
  void RunOnce(bool schedule = true);
  // What the loop thread does after each wait: takes the Wake flag, makes
  // the pass a full one when it was set or `schedule_interval_ms` passed on
  // the injected clock since the last full one, and runs it. Returns whether
  // Engine::Schedule ran. (Public for tests of the cadence.)
  bool Step();

  // ---- watch events (the /api/v1/watch stream) ----------------------------
  // REQUIRES mu() (so that events are in decision order).
  void EmitLocked(const std::string& type, const std::string& key, Json extra = Json::object()) REQUIRES(mu_);
  // Events with seq > `after` in the given namespaces (nullopt = all),
  // waiting up to `wait_ms` for the first one. *next is the seq to pass
  // next. Redacted for `who`: an event names a preemptor only when `who`
  // may see it, a user name only when it is `who`'s own.
  std::vector<Json> EventsAfter(uint64_t after, int64_t wait_ms,
                                const std::optional<std::set<std::string>>& ns, uint64_t* next,
                                const server::Principal& who) const;
  uint64_t LatestEventSeq() const;

  // ---- metrics --------------------------------------------------------------
  // The Kueue-named metrics both modes export (pending/admitted gauges,
  // admitted/finished/evicted/preempted totals, admission wait time, queue
  // status, quota usage and limits, weighted share) and Artel's engine
  // metrics (team GPUs, reclaim latency, cycle duration, cycles), as
  // Prometheus text.
  std::string MetricsText() const;
  void MetricsLocked(server::PromWriter* pw) const REQUIRES(mu_);
  // A workload of `cluster_queue` finished (Succeeded or Failed). REQUIRES mu().
  void CountFinishedLocked(const std::string& cluster_queue) REQUIRES(mu_);
  uint64_t cycles() const;  // scheduling passes run

  // ---- read views, built from the engine ------------------------------------
  Json ClusterQueuesJson() const;
  Json LocalQueuesJson(const std::optional<std::set<std::string>>& ns) const;
  Json CohortsJson() const;
  // Flavors that match no node (flavor -> why), shown with the ClusterQueues
  // that use them. REQUIRES mu().
  void SetFlavorsWithoutNodesLocked(std::map<std::string, std::string> f) REQUIRES(mu_) {
    flavors_without_nodes_ = std::move(f);
  }
  // The explanation of pending workload `key` (engine part of `artel why`),
  // redacted by `red`: reason, message, flavors tried, would-preempt set.
  // REQUIRES mu().
  Result<Json> WhyLocked(const std::string& key, const server::Redactor& red) const REQUIRES(mu_);

 private:
  void Loop();
  void Pass(bool schedule);
  void ScheduleLocked(int64_t now) REQUIRES(mu_);

  const LoopOptions options_;
  server::Logger* log_;
  std::function<int64_t()> now_ms_;
  Backend* backend_ = nullptr;

  mutable std::mutex mu_;
  core::Engine engine_;
  int64_t last_now_ GUARDED_BY(mu_) = 0;
  std::map<std::string, std::string> flavors_without_nodes_ GUARDED_BY(mu_);

  // Metrics (mu_).
  std::map<std::string, uint64_t> admitted_total_ GUARDED_BY(mu_);                         // cq
  std::map<std::pair<std::string, std::string>, uint64_t> evicted_total_ GUARDED_BY(mu_);  // cq, reason
  std::map<std::pair<std::string, std::string>, uint64_t> preempted_total_
      GUARDED_BY(mu_);                                                     // preempting cq, reason
  std::map<std::string, uint64_t> finished_total_ GUARDED_BY(mu_);         // cq
  std::map<std::string, server::Histogram> wait_hist_ GUARDED_BY(mu_);     // cq
  std::map<std::string, server::Histogram> reclaim_hist_ GUARDED_BY(mu_);  // cq
  server::Histogram cycle_hist_ GUARDED_BY(mu_){
      {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1}};
  uint64_t cycles_total_ GUARDED_BY(mu_) = 0;
  // Preemptors that reclaimed quota, by key -> their engine id, until admitted.
  std::map<std::string, core::WorkloadId> reclaim_wait_ GUARDED_BY(mu_);

  // Watch events.
  struct Event {
    uint64_t seq;
    std::string ns;
    Json body;
  };
  mutable std::mutex ev_mu_;
  mutable std::condition_variable ev_cv_;
  std::deque<Event> events_ GUARDED_BY(ev_mu_);
  uint64_t event_seq_ GUARDED_BY(ev_mu_) = 0;

  // Cadence.
  std::mutex pass_mu_;  // one pass at a time
  std::mutex wake_mu_;
  std::condition_variable wake_cv_;
  bool dirty_ GUARDED_BY(wake_mu_) = false;
  bool stopping_ GUARDED_BY(wake_mu_) = false;
  int64_t last_schedule_ GUARDED_BY(pass_mu_) = 0;
  std::thread thread_;
  std::atomic<bool> stopped_{false};
};

}  // namespace artel::loop
