#include "loop/control_loop.h"

#include <algorithm>
#include <chrono>

#include "core/quantity.h"
#include "core/resource_names.h"

namespace artel::loop {
namespace {

std::string Ns(const std::string& key) { return key.substr(0, key.find('/')); }

double Units(core::Amount a) { return static_cast<double>(a) / 1000.0; }

bool IsReclaim(core::EvictionReason r) {
  return r == core::EvictionReason::kInCohortReclamation ||
         r == core::EvictionReason::kInCohortReclaimWhileBorrowing;
}

// Kueue's eviction reasons (kueue_evicted_workloads_total{reason}).
std::string KueueEvictedReason(core::EvictionReason r) {
  switch (r) {
    case core::EvictionReason::kClusterQueueStopped: return "ClusterQueueStopped";
    case core::EvictionReason::kLocalQueueStopped: return "LocalQueueStopped";
    case core::EvictionReason::kDeactivated: return "InactiveWorkload";
    // Kueue deactivates a workload whose maximumExecutionTimeSeconds ran out.
    case core::EvictionReason::kMaximumExecutionTimeExceeded: return "InactiveWorkload";
    case core::EvictionReason::kNodeFailures: return "NodeFailures";
    default: return "Preempted";
  }
}

}  // namespace

ControlLoop::ControlLoop(core::EngineOptions engine_options, LoopOptions options, server::Logger* log,
                         std::function<int64_t()> now_ms)
    : options_(options), log_(log), now_ms_(std::move(now_ms)), engine_(std::move(engine_options)) {}

ControlLoop::~ControlLoop() { Stop(); }

void ControlLoop::SetBackend(Backend* b) { backend_ = b; }

int64_t ControlLoop::NowLocked() {
  last_now_ = std::max(last_now_, now_ms_());
  return last_now_;
}

// ---------------------------------------------------------------------------
// Cadence

void ControlLoop::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void ControlLoop::Stop() {
  {
    std::lock_guard<std::mutex> l(wake_mu_);
    stopping_ = true;
  }
  wake_cv_.notify_all();
  {
    std::lock_guard<std::mutex> l(ev_mu_);
    stopped_ = true;
  }
  ev_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void ControlLoop::Wake() {
  {
    std::lock_guard<std::mutex> l(wake_mu_);
    dirty_ = true;
  }
  wake_cv_.notify_one();
}

void ControlLoop::Loop() {
  while (true) {
    {
      base::UniqueLock l(wake_mu_);
      wake_cv_.wait_for(l.get(), std::chrono::milliseconds(options_.tick_ms),
                        [&]() REQUIRES(wake_mu_) { return dirty_ || stopping_; });
      if (stopping_) break;
      if (dirty_ && options_.debounce_ms > 0) {
        // Debounce: let a burst of changes land before the pass runs.
        wake_cv_.wait_for(l.get(), std::chrono::milliseconds(options_.debounce_ms),
                          [&]() REQUIRES(wake_mu_) { return stopping_; });
        if (stopping_) break;
      }
    }
    Step();
  }
}

bool ControlLoop::Step() {
  bool changed;
  {
    std::lock_guard<std::mutex> l(wake_mu_);
    changed = dirty_;
    dirty_ = false;
  }
  std::lock_guard<std::mutex> pass(pass_mu_);
  int64_t now = now_ms_();
  bool schedule = changed || now - last_schedule_ >= options_.schedule_interval_ms;
  if (schedule) last_schedule_ = now;
  uint64_t before = cycles();
  Pass(schedule);
  return cycles() != before;
}

void ControlLoop::RunOnce(bool schedule) {
  std::lock_guard<std::mutex> pass(pass_mu_);
  if (schedule) last_schedule_ = now_ms_();
  Pass(schedule);
}

// REQUIRES pass_mu_.
void ControlLoop::Pass(bool schedule) {
  int64_t now = now_ms_();
  const bool polled = backend_ != nullptr && backend_->Poll(now);
  {
    std::lock_guard<std::mutex> lock(mu_);
    now = NowLocked();
    if (backend_ != nullptr) backend_->SyncLocked(engine_, now);
    if (schedule || polled) ScheduleLocked(now);
    if (backend_ != nullptr) backend_->CycleDoneLocked(engine_, now, schedule);
  }
  if (backend_ != nullptr) backend_->Flush(now_ms_());
}

// ---------------------------------------------------------------------------
// Decisions

void ControlLoop::ScheduleLocked(int64_t now) {
  auto t0 = std::chrono::steady_clock::now();
  core::CycleResult res = engine_.Schedule(now);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  cycle_hist_.Observe(secs);
  ++cycles_total_;
  for (const auto& key : res.admitted) {
    const core::WorkloadInfo* info = engine_.Find(key);
    if (info == nullptr) continue;
    ++admitted_total_[info->cluster_queue];
    wait_hist_[info->cluster_queue].Observe(static_cast<double>(now - info->queued_at) / 1000.0);
    if (auto rw = reclaim_wait_.find(key); rw != reclaim_wait_.end()) {
      // It reclaimed quota to get in: from its creation to this admission.
      if (rw->second == info->id) {
        reclaim_hist_[info->cluster_queue].Observe(static_cast<double>(now - info->created) / 1000.0);
      }
      reclaim_wait_.erase(rw);
    }
    EmitLocked("Admitted", key, {{"clusterQueue", info->cluster_queue}});
    log_->Info("workload admitted", {{"workload", key}, {"queue", info->cluster_queue}});
    if (backend_ != nullptr) backend_->OnAdmittedLocked(*info, now);
  }
  for (const auto& e : res.evictions) {
    if (backend_ != nullptr && backend_->SkipEvictionLocked(e, now)) continue;
    ++evicted_total_[{e.victim_cluster_queue, KueueEvictedReason(e.reason)}];
    if (!e.preemptor.empty())
      ++preempted_total_[{e.preemptor_cluster_queue, core::EvictionReasonName(e.reason)}];
    if (IsReclaim(e.reason) && !e.preemptor.empty()) reclaim_wait_[e.preemptor] = e.preemptor_id;
    EmitLocked("Evicted", e.victim,
               {{"clusterQueue", e.victim_cluster_queue},
                {"reason", core::EvictionReasonName(e.reason)},
                {"preemptor", e.preemptor},
                {"preemptorClusterQueue", e.preemptor_cluster_queue}});
    log_->Info("workload evicted", {{"workload", e.victim},
                                    {"queue", e.victim_cluster_queue},
                                    {"reason", core::EvictionReasonName(e.reason)},
                                    {"preemptor", e.preemptor}});
    if (backend_ != nullptr) backend_->OnEvictedLocked(e, engine_.Find(e.victim), now);
  }
}

void ControlLoop::CountFinishedLocked(const std::string& cluster_queue) {
  if (!cluster_queue.empty()) ++finished_total_[cluster_queue];
}

uint64_t ControlLoop::cycles() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cycles_total_;
}

// ---------------------------------------------------------------------------
// Events

void ControlLoop::EmitLocked(const std::string& type, const std::string& key, Json extra) {
  Json body = std::move(extra);
  body["type"] = type;
  body["time"] = now_ms_();
  if (!key.empty()) body["workload"] = key;
  std::lock_guard<std::mutex> l(ev_mu_);
  body["seq"] = ++event_seq_;
  events_.push_back({event_seq_, key.empty() ? "" : Ns(key), std::move(body)});
  while (events_.size() > 8192) events_.pop_front();
  ev_cv_.notify_all();
}

uint64_t ControlLoop::LatestEventSeq() const {
  std::lock_guard<std::mutex> l(ev_mu_);
  return event_seq_;
}

std::vector<Json> ControlLoop::EventsAfter(uint64_t after, int64_t wait_ms,
                                           const std::optional<std::set<std::string>>& ns, uint64_t* next,
                                           const server::Principal& who) const {
  base::UniqueLock l(ev_mu_);
  ev_cv_.wait_for(l.get(), std::chrono::milliseconds(wait_ms),
                  [&]() REQUIRES(ev_mu_) { return event_seq_ > after || stopped_.load(); });
  std::vector<Json> out;
  for (const auto& e : events_) {
    if (e.seq <= after) continue;
    if (ns && !e.ns.empty() && !ns->count(e.ns)) continue;
    if (ns && e.ns.empty() && e.body.value("type", "") != "ConfigApplied") continue;
    out.push_back(e.body);
    if (who.is_admin()) continue;
    Json& b = out.back();
    if (b.contains("preemptor")) {
      std::string p = b.value("preemptor", "");
      size_t slash = p.find('/');
      if (!p.empty() && (slash == std::string::npos || !who.CanUseNamespace(p.substr(0, slash)))) {
        b.erase("preemptor");
      }
    }
    if (b.contains("user") && b.value("user", "") != who.user) b.erase("user");
  }
  *next = std::max(after, event_seq_);
  return out;
}

// ---------------------------------------------------------------------------
// Explanations

Result<Json> ControlLoop::WhyLocked(const std::string& key, const server::Redactor& red) const {
  Json j = Json::object();
  auto r = engine_.Why(key);
  if (!r.ok()) return r.status();
  const core::PendingReason& p = *r;
  j["reason"] = core::PendingReasonKindName(p.kind);
  j["message"] = red.PendingMessage(p);
  if (p.kind == core::PendingReason::Kind::kNone) {
    const core::WorkloadInfo* info = engine_.Find(key);
    j["message"] = "admitted to ClusterQueue " + info->cluster_queue;
    return j;
  }
  if (!p.cluster_queue.empty()) j["clusterQueue"] = p.cluster_queue;
  if (!p.pod_set.empty()) j["podSet"] = p.pod_set;
  if (!p.flavor.empty()) j["flavor"] = p.flavor;
  if (!p.resource.empty()) {
    j["resource"] = p.resource;
    j["requested"] = core::FormatQuantity(p.requested);
    j["available"] = core::FormatQuantity(p.available);
    j["missing"] = core::FormatQuantity(p.missing);
  }
  if (!p.level.empty()) j["level"] = p.level;
  if (!p.would_preempt.empty()) {
    j["wouldPreempt"] = red.VisibleOnly(p.would_preempt);
    if (!red.all()) {
      // The others, counted per ClusterQueue.
      std::map<std::string, int> others;
      for (const auto& v : p.would_preempt) {
        if (red.Visible(v)) continue;
        const core::WorkloadInfo* vi = engine_.Find(v);
        ++others[vi != nullptr ? vi->cluster_queue : ""];
      }
      Json o = Json::array();
      for (const auto& [cq, n] : others) o.push_back({{"clusterQueue", cq}, {"count", n}});
      if (!o.empty()) j["wouldPreemptOthers"] = o;
    }
  }
  if (!p.flavors.empty()) {
    Json fl = Json::array();
    for (const core::FlavorAttempt& f : p.flavors) {
      Json a = {{"flavor", f.flavor},
                {"podSet", f.pod_set},
                {"outcome", core::FlavorAttemptOutcomeName(f.outcome)}};
      if (!f.resource.empty()) {
        a["resource"] = f.resource;
        a["requested"] = core::FormatQuantity(f.requested);
        a["available"] = core::FormatQuantity(f.available);
        a["maxAvailable"] = core::FormatQuantity(f.max_available);
        a["missing"] = core::FormatQuantity(std::max<int64_t>(0, f.requested - f.available));
      }
      if (!f.level.empty()) a["level"] = f.level;
      a["message"] = red.Scrub(f.message);
      fl.push_back(std::move(a));
    }
    j["flavors"] = std::move(fl);
  }
  return j;
}

// ---------------------------------------------------------------------------
// Read views

namespace {
Json UsageEntry(const core::QuotaUsage& u) {
  Json e = {{"flavor", u.flavor},
            {"resource", u.resource},
            {"nominal", core::FormatQuantity(u.nominal)},
            {"subtreeQuota", core::FormatQuantity(u.subtree_quota)},
            {"usage", core::FormatQuantity(u.usage)},
            {"borrowed", core::FormatQuantity(u.borrowed)}};
  if (u.borrowing_limit) e["borrowingLimit"] = core::FormatQuantity(*u.borrowing_limit);
  if (u.lending_limit) e["lendingLimit"] = core::FormatQuantity(*u.lending_limit);
  return e;
}
}  // namespace

Json ControlLoop::ClusterQueuesJson() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, std::pair<int, int>> counts;  // pending, admitted
  for (const core::WorkloadInfo* w : engine_.Workloads(/*with_reasons=*/false)) {
    if (w->cluster_queue.empty()) continue;
    if (w->state == core::WorkloadState::kPending) ++counts[w->cluster_queue].first;
    if (w->state == core::WorkloadState::kAdmitted || w->state == core::WorkloadState::kEvicting) {
      ++counts[w->cluster_queue].second;
    }
  }
  std::map<std::string, Json> res;
  for (const auto& u : engine_.Usage()) {
    if (u.is_cohort) continue;
    res[u.node].push_back(UsageEntry(u));
  }
  Json items = Json::array();
  for (const auto& cq : engine_.config().cluster_queues) {
    // Flavors of this queue that match no node pool of the host: their
    // quota cannot be used here (docs/daemon.md, "Node pools").
    Json missing = Json::array(), warnings = Json::array();
    for (const auto& rg : cq.resource_groups) {
      for (const auto& fq : rg.flavors) {
        auto it = flavors_without_nodes_.find(fq.flavor);
        if (it == flavors_without_nodes_.end() ||
            std::find(missing.begin(), missing.end(), fq.flavor) != missing.end())
          continue;
        missing.push_back(fq.flavor);
        warnings.push_back(it->second);
      }
    }
    items.push_back({{"name", cq.name},
                     {"flavorsWithoutNodes", missing},
                     {"warnings", warnings},
                     {"cohort", cq.cohort},
                     {"pendingWorkloads", counts[cq.name].first},
                     {"admittedWorkloads", counts[cq.name].second},
                     {"stopPolicy", cq.stop_policy == core::StopPolicy::kNone   ? "None"
                                    : cq.stop_policy == core::StopPolicy::kHold ? "Hold"
                                                                                : "HoldAndDrain"},
                     {"resources", res.count(cq.name) ? res[cq.name] : Json::array()}});
  }
  return Json{{"kind", "ClusterQueueList"}, {"items", items}};
}

Json ControlLoop::LocalQueuesJson(const std::optional<std::set<std::string>>& namespaces) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, std::pair<int, int>> counts;
  for (const core::WorkloadInfo* w : engine_.Workloads(/*with_reasons=*/false)) {
    std::string k = w->spec.ns + "/" + w->spec.queue;
    if (w->state == core::WorkloadState::kPending) ++counts[k].first;
    if (w->state == core::WorkloadState::kAdmitted || w->state == core::WorkloadState::kEvicting)
      ++counts[k].second;
  }
  Json items = Json::array();
  for (const auto& lq : engine_.config().local_queues) {
    if (namespaces && !namespaces->count(lq.ns)) continue;
    std::string k = lq.ns + "/" + lq.name;
    items.push_back({{"namespace", lq.ns},
                     {"name", lq.name},
                     {"clusterQueue", lq.cluster_queue},
                     {"pendingWorkloads", counts[k].first},
                     {"admittedWorkloads", counts[k].second}});
  }
  return Json{{"kind", "LocalQueueList"}, {"items", items}};
}

Json ControlLoop::CohortsJson() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, Json> res;
  for (const auto& u : engine_.Usage()) {
    if (u.is_cohort) res[u.node].push_back(UsageEntry(u));
  }
  std::map<std::string, std::string> parents;
  for (const auto& c : engine_.config().cohorts) parents[c.name] = c.parent;
  for (const auto& cq : engine_.config().cluster_queues) {
    if (!cq.cohort.empty() && !parents.count(cq.cohort)) parents[cq.cohort] = "";
  }
  for (const auto& [name, j] : res) parents.emplace(name, "");
  Json items = Json::array();
  for (const auto& [name, parent] : parents) {
    Json members = Json::array();
    for (const auto& cq : engine_.config().cluster_queues) {
      if (cq.cohort == name) members.push_back(cq.name);
    }
    for (const auto& [n2, p2] : parents) {
      if (p2 == name) members.push_back(n2);
    }
    items.push_back({{"name", name},
                     {"parent", parent},
                     {"members", members},
                     {"resources", res.count(name) ? res[name] : Json::array()}});
  }
  return Json{{"kind", "CohortList"}, {"items", items}};
}

// ---------------------------------------------------------------------------
// Metrics

std::string ControlLoop::MetricsText() const {
  server::PromWriter pw;
  std::lock_guard<std::mutex> lock(mu_);
  MetricsLocked(&pw);
  return pw.text();
}

void ControlLoop::MetricsLocked(server::PromWriter* out) const {
  server::PromWriter& pw = *out;
  const core::Config& cfg = engine_.config();
  std::map<std::string, std::string> cohort_of;
  for (const auto& cq : cfg.cluster_queues) cohort_of[cq.name] = cq.cohort;

  std::map<std::string, std::pair<int, int>> pending;  // active, inadmissible
  std::map<std::string, int> active;
  for (const core::WorkloadInfo* w : engine_.Workloads(/*with_reasons=*/false)) {
    if (w->cluster_queue.empty()) continue;
    if (w->state == core::WorkloadState::kPending) {
      const core::PendingReason::Kind kind = engine_.PendingKind(w->id);
      bool act = kind == core::PendingReason::Kind::kNotYetTried ||
                 kind == core::PendingReason::Kind::kWaitingForEvictions;
      (act ? pending[w->cluster_queue].first : pending[w->cluster_queue].second)++;
    } else if (w->state == core::WorkloadState::kAdmitted || w->state == core::WorkloadState::kEvicting) {
      ++active[w->cluster_queue];
    }
  }
  pw.Family("kueue_pending_workloads", "gauge",
            "Pending workloads per ClusterQueue and status (active|inadmissible).");
  for (const auto& cq : cfg.cluster_queues) {
    pw.Sample("kueue_pending_workloads", {{"cluster_queue", cq.name}, {"status", "active"}},
              pending[cq.name].first);
    pw.Sample("kueue_pending_workloads", {{"cluster_queue", cq.name}, {"status", "inadmissible"}},
              pending[cq.name].second);
  }
  pw.Family("kueue_admitted_active_workloads", "gauge", "Admitted workloads that are active (not finished).");
  for (const auto& cq : cfg.cluster_queues)
    pw.Sample("kueue_admitted_active_workloads", {{"cluster_queue", cq.name}}, active[cq.name]);
  // Kueue counts workloads that hold a quota reservation apart from admitted
  // ones (admission checks may still run); Artel admits when it reserves, so
  // the two are the same workloads.
  pw.Family("kueue_reserving_active_workloads", "gauge", "Workloads that hold a quota reservation.");
  for (const auto& cq : cfg.cluster_queues)
    pw.Sample("kueue_reserving_active_workloads", {{"cluster_queue", cq.name}}, active[cq.name]);
  pw.Family("kueue_admitted_workloads_total", "counter", "Workloads admitted since arteld started.");
  for (const auto& cq : cfg.cluster_queues) {
    pw.Sample("kueue_admitted_workloads_total", {{"cluster_queue", cq.name}},
              admitted_total_.count(cq.name) ? admitted_total_.at(cq.name) : 0);
  }
  pw.Family("kueue_finished_workloads_total", "counter", "Workloads that finished (Succeeded or Failed).");
  for (const auto& cq : cfg.cluster_queues) {
    pw.Sample("kueue_finished_workloads_total", {{"cluster_queue", cq.name}},
              finished_total_.count(cq.name) ? finished_total_.at(cq.name) : 0);
  }
  pw.Family("kueue_evicted_workloads_total", "counter", "Evictions per ClusterQueue and reason.");
  for (const auto& [k, v] : evicted_total_) {
    pw.Sample("kueue_evicted_workloads_total", {{"cluster_queue", k.first}, {"reason", k.second}}, v);
  }
  pw.Family("kueue_preempted_workloads_total", "counter",
            "Preemptions per preempting ClusterQueue and reason.");
  for (const auto& [k, v] : preempted_total_) {
    pw.Sample("kueue_preempted_workloads_total",
              {{"preempting_cluster_queue", k.first}, {"reason", k.second}}, v);
  }
  pw.Family("kueue_admission_wait_time_seconds", "histogram",
            "Time from creation (or requeue) to admission.");
  for (const auto& [cq, h] : wait_hist_)
    pw.WriteHistogram("kueue_admission_wait_time_seconds", {{"cluster_queue", cq}}, h);
  pw.Family("kueue_cluster_queue_status", "gauge",
            "ClusterQueue status (pending|active|terminating); 1 for the current one.");
  for (const auto& cq : cfg.cluster_queues) {
    bool stopped = cq.stop_policy != core::StopPolicy::kNone;
    pw.Sample("kueue_cluster_queue_status", {{"cluster_queue", cq.name}, {"status", "pending"}},
              stopped ? 1 : 0);
    pw.Sample("kueue_cluster_queue_status", {{"cluster_queue", cq.name}, {"status", "active"}},
              stopped ? 0 : 1);
    pw.Sample("kueue_cluster_queue_status", {{"cluster_queue", cq.name}, {"status", "terminating"}}, 0);
  }

  std::vector<core::QuotaUsage> usage = engine_.Usage();
  auto quota_family = [&](const std::string& name, const std::string& help, auto getter) {
    pw.Family(name, "gauge", help);
    for (const auto& u : usage) {
      if (u.is_cohort) continue;
      std::optional<core::Amount> v = getter(u);
      if (!v) continue;
      pw.Sample(name,
                {{"cohort", cohort_of[u.node]},
                 {"cluster_queue", u.node},
                 {"flavor", u.flavor},
                 {"resource", u.resource}},
                Units(*v));
    }
  };
  quota_family("kueue_cluster_queue_resource_usage", "Admitted usage per ClusterQueue, flavor and resource.",
               [](const core::QuotaUsage& u) { return std::optional<core::Amount>(u.usage); });
  quota_family("kueue_cluster_queue_nominal_quota", "nominalQuota per ClusterQueue, flavor and resource.",
               [](const core::QuotaUsage& u) { return std::optional<core::Amount>(u.nominal); });
  quota_family("kueue_cluster_queue_borrowing_limit", "borrowingLimit per ClusterQueue, flavor and resource.",
               [](const core::QuotaUsage& u) { return u.borrowing_limit; });
  quota_family("kueue_cluster_queue_lending_limit", "lendingLimit per ClusterQueue, flavor and resource.",
               [](const core::QuotaUsage& u) { return u.lending_limit; });
  pw.Family("kueue_cluster_queue_weighted_share", "gauge",
            "Dominant resource share (x1000) of a ClusterQueue.");
  for (const auto& cq : cfg.cluster_queues) {
    pw.Sample("kueue_cluster_queue_weighted_share", {{"cluster_queue", cq.name}},
              static_cast<double>(engine_.DominantResourceShare(cq.name)));
  }

  // Per-flavor GPU view: every quota-tree node, flavor and nvidia.com/
  // resource (unlike flavors are separate series). arteld's
  // /api/v1/history reads these back from Prometheus for ranges longer than
  // its in-memory ring (server/prom_history.h).
  std::map<std::string, std::string> parent_of = cohort_of;
  for (const auto& c : cfg.cohorts) parent_of[c.name] = c.parent;
  auto flavor_family = [&](const std::string& name, const std::string& help, auto getter) {
    pw.Family(name, "gauge", help);
    for (const auto& u : usage) {
      if (u.resource.rfind("nvidia.com/", 0) != 0) continue;
      pw.Sample(name,
                {{"team", u.node},
                 {"kind", u.is_cohort ? "cohort" : "cluster_queue"},
                 {"parent", parent_of[u.node]},
                 {"flavor", u.flavor},
                 {"resource", u.resource}},
                Units(getter(u)));
    }
  };
  flavor_family("artel_flavor_guaranteed_gpus",
                "Guarantee (subtree quota) per quota-tree node, flavor, resource.",
                [](const core::QuotaUsage& u) { return u.subtree_quota; });
  flavor_family("artel_flavor_used_gpus", "Admitted usage per quota-tree node, flavor and resource.",
                [](const core::QuotaUsage& u) { return u.usage; });
  flavor_family("artel_flavor_borrowed_gpus",
                "Usage beyond the guarantee per quota-tree node, flavor, resource.",
                [](const core::QuotaUsage& u) { return u.borrowed; });

  // Per-team GPU view: every quota-tree node, summed over flavors.
  struct Team {
    bool cohort = false;
    core::Amount guaranteed = 0, used = 0, borrowed = 0;
  };
  std::map<std::string, Team> teams;
  for (const auto& u : usage) {
    if (u.resource != core::kGpuResource) continue;
    Team& t = teams[u.node];
    t.cohort = u.is_cohort;
    t.guaranteed += u.subtree_quota;
    t.used += u.usage;
    t.borrowed += u.borrowed;
  }
  pw.Family("artel_team_guaranteed_gpus", "gauge",
            "GPUs guaranteed to a quota-tree node (subtree quota, all flavors).");
  pw.Family("artel_team_used_gpus", "gauge", "GPUs held by admitted workloads under a quota-tree node.");
  pw.Family("artel_team_borrowed_gpus", "gauge", "GPUs a quota-tree node uses beyond its guarantee.");
  for (const auto& [name, t] : teams) {
    server::Labels l = {{"team", name}, {"kind", t.cohort ? "cohort" : "cluster_queue"}};
    pw.Sample("artel_team_guaranteed_gpus", l, Units(t.guaranteed));
    pw.Sample("artel_team_used_gpus", l, Units(t.used));
    pw.Sample("artel_team_borrowed_gpus", l, Units(t.borrowed));
  }
  pw.Family("artel_reclaim_latency_seconds", "histogram",
            "From an owner's submission to its admission, for admissions that needed reclaim.");
  for (const auto& [cq, h] : reclaim_hist_)
    pw.WriteHistogram("artel_reclaim_latency_seconds", {{"cluster_queue", cq}}, h);
  pw.Family("artel_scheduler_cycle_duration_seconds", "histogram",
            "Duration of one scheduling pass (Engine::Schedule).");
  pw.WriteHistogram("artel_scheduler_cycle_duration_seconds", {}, cycle_hist_);
  pw.Family("artel_scheduler_cycles_total", "counter", "Scheduling passes run.");
  pw.Sample("artel_scheduler_cycles_total", {}, static_cast<double>(cycles_total_));
}

}  // namespace artel::loop
