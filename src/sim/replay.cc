#include "sim/replay.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <queue>
#include <set>
#include <unordered_map>

namespace artel::sim {
namespace {

using core::Amount;
using core::Time;

constexpr Time kNever = std::numeric_limits<Time>::max();
constexpr double kMsPerHour = 3600.0 * 1000.0;
constexpr int kProgressEvery = 1 << 14;

// Buffers JainIndex reuses between calls.
struct JainScratch {
  std::vector<size_t> order;
};

double JainIndexWith(const std::vector<core::Amount>& held, const std::vector<core::Amount>& demand,
                     const std::vector<core::Amount>& weights, core::Amount capacity, JainScratch* scratch);

enum class JobState : uint8_t { kNotSubmitted, kPending, kRunning, kEvicting, kDone, kSkipped };

struct TimedJob {
  Time t;
  int64_t job;
  int32_t epoch;
  bool operator>(const TimedJob& o) const {
    if (t != o.t) return t > o.t;
    return job > o.job;
  }
};
using MinHeap = std::priority_queue<TimedJob, std::vector<TimedJob>, std::greater<>>;

// Time-weighted averages over buckets of virtual time whose width doubles
// whenever the run outgrows 2 * max_points buckets, so memory stays bounded
// without knowing the end time in advance.
class Buckets {
 public:
  Buckets(size_t width, int max_points) : width_(width), max_points_(std::max(1, max_points)) {}

  // Adds `values` held over [a, b).
  void Add(Time a, Time b, const std::vector<double>& values) {
    if (b <= a) return;
    while (static_cast<size_t>((b - 1) / step_) >= 2 * static_cast<size_t>(max_points_)) Merge();
    for (Time s = a; s < b;) {
      size_t idx = static_cast<size_t>(s / step_);
      Time e = std::min<Time>(b, static_cast<Time>(idx + 1) * step_);
      if (idx >= sums_.size()) sums_.resize(idx + 1, std::vector<double>(width_, 0.0));
      double dt = static_cast<double>(e - s);
      for (size_t k = 0; k < width_; ++k) sums_[idx][k] += values[k] * dt;
      s = e;
    }
  }

  // Averages per bucket over [0, end).
  void Finish(Time end, std::vector<double>* t, std::vector<std::vector<double>>* out) {
    while (sums_.size() > static_cast<size_t>(max_points_)) Merge();
    size_t n = std::max<size_t>(1, sums_.size());
    sums_.resize(n, std::vector<double>(width_, 0.0));
    out->assign(width_, std::vector<double>(n, 0.0));
    t->resize(n);
    for (size_t i = 0; i < n; ++i) {
      Time a = static_cast<Time>(i) * step_;
      Time b = std::min<Time>(end, a + step_);
      double len = static_cast<double>(std::max<Time>(1, b - a));
      (*t)[i] = static_cast<double>(a) / 1000.0;
      for (size_t k = 0; k < width_; ++k) (*out)[k][i] = sums_[i][k] / len;
    }
  }

 private:
  void Merge() {
    std::vector<std::vector<double>> merged((sums_.size() + 1) / 2, std::vector<double>(width_, 0.0));
    for (size_t i = 0; i < sums_.size(); ++i) {
      for (size_t k = 0; k < width_; ++k) merged[i / 2][k] += sums_[i][k];
    }
    sums_ = std::move(merged);
    step_ *= 2;
  }

  size_t width_;
  int max_points_;
  Time step_ = 1000;
  std::vector<std::vector<double>> sums_;
};

class Simulator {
 public:
  Simulator(const core::Config& config, const std::vector<TenantBinding>& tenants,
            const std::vector<TraceJob>& jobs, Amount capacity, const ReplayOptions& options)
      : config_(config),
        jobs_(jobs),
        capacity_(capacity),
        options_(options),
        engine_(options.engine),
        buckets_(2 * tenants.size() + 2, options.max_points) {
    result_.tenants.resize(tenants.size());
    for (size_t i = 0; i < tenants.size(); ++i) {
      result_.tenants[i].binding = tenants[i];
      tenant_index_.emplace(tenants[i].tenant, static_cast<int32_t>(i));
    }
    T_ = tenants.size();
    held_.assign(T_, 0);
    pending_gpus_.assign(T_, 0);
    pending_jobs_.assign(T_, 0);
    pending_sizes_.resize(T_);
    min_pending_.assign(T_, 0);
    guarantee_.assign(T_, 0);
    peak_held_.assign(T_, 0);
    for (size_t i = 0; i < T_; ++i) guarantee_[i] = tenants[i].guarantee;
    lost_ms_.assign(T_, 0.0);
    waits_.resize(T_);
    jcts_.resize(T_);
    unmet_since_.assign(T_, -1);
    reclaim_sum_.assign(T_, 0);
    weights_.resize(T_);
    used_ms_.assign(T_, 0);
    borrowed_ms_.assign(T_, 0);
    demand_ms_.assign(T_, 0);
    satisfied_ms_.assign(T_, 0);
    for (size_t i = 0; i < T_; ++i) {
      Amount g = tenants[i].guarantee;
      weights_[i] = g > 0 ? g : core::kMilli;
    }
  }

  Result<ReplayResult> Run() {
    core::Config config = config_;
    for (auto& q : config.cluster_queues) {
      if (options_.reserve_after) q.reserve_after = options_.reserve_after;
      if (options_.backfill_window) q.backfill_window = options_.backfill_window;
      if (options_.min_runtime) q.min_runtime = options_.min_runtime;
      if (options_.reclaim_min_runtime) q.reclaim_min_runtime = options_.reclaim_min_runtime;
      if (options_.preemption_delay) q.preemption_delay = options_.preemption_delay;
    }
    if (Status s = engine_.Configure(config); !s.ok()) return s;
    start_ns_ = Now();
    const size_t n = jobs_.size();
    // Arrival order: by submission time, ties in trace order. Sorting (time,
    // index) pairs reads each job once instead of chasing rows in every
    // comparison.
    std::vector<std::pair<Time, int64_t>> keyed(n);
    for (size_t j = 0; j < n; ++j) keyed[j] = {jobs_[j].submit, static_cast<int64_t>(j)};
    if (!std::is_sorted(keyed.begin(), keyed.end())) std::sort(keyed.begin(), keyed.end());
    order_.resize(n);
    arrival_at_.resize(n);
    for (size_t k = 0; k < n; ++k) {
      arrival_at_[k] = keyed[k].first;
      order_[k] = keyed[k].second;
    }
    state_.assign(n, JobState::kNotSubmitted);
    hot_.resize(n);
    for (size_t j = 0; j < n; ++j) {
      hot_[j] = {jobs_[j].submit, jobs_[j].duration, jobs_[j].gpus};
    }
    wid_.assign(n, core::kNoWorkload);
    epoch_.assign(n, 0);
    started_.assign(n, 0);
    tenant_of_.assign(n, -1);
    result_.outcomes.assign(n, JobOutcome{});
    std::map<std::string, int64_t> unbound;
    for (size_t j = 0; j < n; ++j) {
      auto it = tenant_index_.find(jobs_[j].tenant);
      if (it == tenant_index_.end()) {
        ++unbound[jobs_[j].tenant];
        state_[j] = JobState::kSkipped;
      } else {
        tenant_of_[j] = it->second;
        ++result_.tenants[it->second].jobs;
      }
    }
    for (const auto& [tenant, count] : unbound) {
      result_.warnings.push_back(
          fmt::format("tenant {} has no queue binding: {} jobs skipped", tenant, count));
    }
    // Such a job would sit pending to the end without a word; say why.
    int64_t too_large = 0;
    for (size_t j = 0; j < n && capacity_ > 0; ++j) {
      if (state_[j] == JobState::kSkipped || jobs_[j].gpus <= capacity_) continue;
      ++result_.tenants[tenant_of_[j]].too_large;
      if (++too_large > static_cast<int64_t>(kMaxTooLargeWarnings)) continue;
      const TraceJob& job = jobs_[j];
      result_.warnings.push_back(fmt::format(
          "job {}{} of tenant {} asks for {:g} GPUs, more than the cluster's {:g}: it can never be admitted",
          job.id,
          job.line > 0 && job.id != fmt::format("line{}", job.line) ? fmt::format(" (line {})", job.line)
                                                                    : std::string(),
          job.tenant, static_cast<double>(job.gpus) / core::kMilli,
          static_cast<double>(capacity_) / core::kMilli));
    }
    if (too_large > static_cast<int64_t>(kMaxTooLargeWarnings)) {
      result_.warnings.push_back(fmt::format("... and {} more jobs larger than the cluster",
                                             too_large - static_cast<int64_t>(kMaxTooLargeWarnings)));
    }
    result_.cluster.jobs = static_cast<int64_t>(n);
    arrivals_total_ = static_cast<int64_t>(n);

    size_t ai = 0;
    bool dirty = false;
    Time tick = 0;
    RecordState();
    for (;;) {
      Time next = kNever;
      while (ai < n && state_[order_[ai]] == JobState::kSkipped) ++ai;
      if (ai < n) next = arrival_at_[ai];
      while (!finishes_.empty() && Stale(finishes_.top())) finishes_.pop();
      if (!finishes_.empty()) next = std::min(next, finishes_.top().t);
      if (!evictions_.empty()) next = std::min(next, evictions_.top().t);
      if (dirty) next = std::min(next, tick);
      // The engine's own instants (a maximum runtime running out, a minimum
      // runtime or preemption delay ending); a pending tick covers them.
      std::optional<Time> timed = dirty ? std::nullopt : engine_.NextTimedEvent();
      if (timed) next = std::min(next, std::max(*timed, now_));
      if (next == kNever) break;
      if (options_.until && next > *options_.until) {
        Integrate(*options_.until);
        now_ = *options_.until;
        break;
      }
      Integrate(next);
      now_ = next;
      bool changed = timed && *timed <= now_;
      while (!finishes_.empty() && finishes_.top().t == now_) {
        TimedJob ev = finishes_.top();
        finishes_.pop();
        if (Stale(ev)) continue;
        if (Status s = FinishJob(ev.job); !s.ok()) return s;
        changed = true;
      }
      while (!evictions_.empty() && evictions_.top().t == now_) {
        TimedJob ev = evictions_.top();
        evictions_.pop();
        if (Status s = CompleteEviction(ev.job); !s.ok()) return s;
        changed = true;
      }
      while (ai < n && (state_[order_[ai]] == JobState::kSkipped || arrival_at_[ai] == now_)) {
        int64_t j = order_[ai++];
        if (state_[j] == JobState::kSkipped) continue;
        if (Status s = SubmitJob(j); !s.ok()) return s;
        changed = true;
      }
      if (changed && !dirty) {
        dirty = true;
        tick = options_.interval <= 0
                   ? now_
                   : (now_ + options_.interval - 1) / options_.interval * options_.interval;
      }
      if (dirty && now_ >= tick) {
        if (Status s = Settle(); !s.ok()) return s;
        dirty = false;
      }
      RecordState();
      if (options_.progress && events_ >= next_progress_) {
        next_progress_ = events_ + kProgressEvery;
        options_.progress({events_, now_, arrivals_done_, arrivals_total_});
      }
    }
    if (options_.progress) options_.progress({events_, now_, arrivals_done_, arrivals_total_});
    return Finalize();
  }

 private:
  int64_t Now() const { return options_.wall_clock_ns ? options_.wall_clock_ns() : 0; }

  bool Stale(const TimedJob& ev) const {
    return ev.epoch != epoch_[ev.job] || state_[ev.job] != JobState::kRunning;
  }

  // The job behind an engine handle, or -1.
  int64_t JobOf(core::WorkloadId id) const { return id < job_of_id_.size() ? job_of_id_[id] : -1; }

  Amount Gpus(int64_t j) const { return hot_[j].gpus; }

  void AddPending(int64_t j) {
    int32_t t = tenant_of_[j];
    state_[j] = JobState::kPending;
    pending_gpus_[t] += Gpus(j);
    ++pending_jobs_[t];
    // (size, count) pairs sorted by size: few distinct sizes per tenant.
    auto& sizes = pending_sizes_[t];
    const Amount g = Gpus(j);
    auto it = std::lower_bound(sizes.begin(), sizes.end(), g,
                               [](const std::pair<Amount, int64_t>& p, Amount v) { return p.first < v; });
    if (it != sizes.end() && it->first == g) {
      ++it->second;
    } else {
      sizes.insert(it, {g, 1});
    }
    min_pending_[t] = sizes.front().first;
  }

  void RemovePending(int64_t j) {
    int32_t t = tenant_of_[j];
    pending_gpus_[t] -= Gpus(j);
    --pending_jobs_[t];
    auto& sizes = pending_sizes_[t];
    const Amount g = Gpus(j);
    auto it = std::lower_bound(sizes.begin(), sizes.end(), g,
                               [](const std::pair<Amount, int64_t>& p, Amount v) { return p.first < v; });
    if (--it->second == 0) sizes.erase(it);
    min_pending_[t] = sizes.empty() ? 0 : sizes.front().first;
  }

  Status SubmitJob(int64_t j) {
    const TraceJob& job = jobs_[j];
    const TenantBinding& b = result_.tenants[tenant_of_[j]].binding;
    core::WorkloadSpec spec;
    spec.ns = b.ns;
    char name[24];
    name[0] = 'j';
    auto [end, ec] = std::to_chars(name + 1, name + sizeof(name), j);
    (void)ec;
    spec.name.assign(name, end);
    spec.queue = b.queue;
    // One pod of the job's GPUs: built once per size and shared (the engine
    // then finds it among its recent pod sets without comparing).
    core::SharedVec<core::PodSetSpec>& shared = pod_sets_by_size_[Gpus(j)];
    if (shared.empty()) {
      core::PodSetSpec& ps = shared.emplace_back();
      ps.count = 1;
      ps.requests.emplace(options_.gpu_resource, Gpus(j));
      if (!options_.node_selector.empty()) ps.node_selector = options_.node_selector;
    }
    spec.pod_sets = shared;
    if (options_.estimate_factor > 0) {
      spec.max_runtime =
          static_cast<core::Time>(std::ceil(static_cast<double>(job.duration) * options_.estimate_factor));
    }
    Result<core::WorkloadId> id = engine_.Submit(std::move(spec), now_);
    if (!id.ok()) {
      return InvalidArgument(
          fmt::format("job {} (line {}): submit failed: {}", job.id, job.line, id.status().ToString()));
    }
    wid_[j] = *id;
    if (job_of_id_.size() <= *id) job_of_id_.resize(*id + 1, -1);
    job_of_id_[*id] = j;
    AddPending(j);
    ++events_;
    ++arrivals_done_;
    return Status::Ok();
  }

  Status FinishJob(int64_t j) {
    if (Status s = engine_.Finish(wid_[j], now_); !s.ok()) return s;
    // The replay never asks about finished jobs: free the engine's slot.
    job_of_id_[wid_[j]] = -1;
    if (Status s = engine_.Forget(wid_[j]); !s.ok()) return s;
    int32_t t = tenant_of_[j];
    held_[t] -= Gpus(j);
    state_[j] = JobState::kDone;
    result_.outcomes[j].finish = now_;
    TenantReport& tr = result_.tenants[t];
    ++tr.completed;
    jcts_[t].push_back(static_cast<double>(now_ - hot_[j].submit) / 1000.0);
    ++events_;
    return Status::Ok();
  }

  Status CompleteEviction(int64_t j) {
    const core::WorkloadInfo* info = engine_.Get(wid_[j]);
    if (info != nullptr && info->state == core::WorkloadState::kEvicting) {
      if (Status s = engine_.CompleteEviction(wid_[j], now_); !s.ok()) return s;
    }
    int32_t t = tenant_of_[j];
    info = engine_.Get(wid_[j]);
    if (info != nullptr && info->state == core::WorkloadState::kFinished) {
      // Stopped for its maximum runtime (docs/semantics.md §11): it ends
      // here, failed, and does not queue again.
      job_of_id_[wid_[j]] = -1;
      if (Status s = engine_.Forget(wid_[j]); !s.ok()) return s;
      held_[t] -= Gpus(j);
      state_[j] = JobState::kDone;
      result_.outcomes[j].finish = now_;
      ++result_.tenants[t].completed;
      jcts_[t].push_back(static_cast<double>(now_ - hot_[j].submit) / 1000.0);
      ++events_;
      return Status::Ok();
    }
    held_[t] -= Gpus(j);
    lost_ms_[t] += static_cast<double>(Gpus(j)) * static_cast<double>(now_ - started_[j]);
    AddPending(j);
    ++events_;
    return Status::Ok();
  }

  Status Settle() {
    for (int round = 0;; ++round) {
      if (round > 100000) return InvalidArgument(fmt::format("at {} ms: scheduling does not settle", now_));
      int64_t t0 = Now();
      core::CycleResult r = engine_.Schedule(now_);
      schedule_ns_ += Now() - t0;
      ++result_.cluster.schedule_calls;
      result_.cluster.decisions += r.decisions;
      for (size_t k = 0; k < r.admitted_ids.size(); ++k) {
        int64_t j = JobOf(r.admitted_ids[k]);
        if (j < 0 || state_[j] != JobState::kPending) {
          return InvalidArgument("engine admitted an unknown workload " + r.admitted[k]);
        }
        int32_t t = tenant_of_[j];
        RemovePending(j);
        state_[j] = JobState::kRunning;
        started_[j] = now_;
        held_[t] += Gpus(j);
        JobOutcome& o = result_.outcomes[j];
        if (o.first_admit < 0) {
          o.first_admit = now_;
          ++result_.tenants[t].admitted;
          waits_[t].push_back(static_cast<double>(now_ - hot_[j].submit) / 1000.0);
        }
        finishes_.push({now_ + hot_[j].duration, j, epoch_[j]});
        ++events_;
      }
      bool again = false;
      for (const core::Eviction& ev : r.evictions) {
        int64_t j = JobOf(ev.victim_id);
        if (j < 0 || state_[j] != JobState::kRunning) {
          return InvalidArgument("engine evicted an unknown or idle workload " + ev.victim);
        }
        int32_t t = tenant_of_[j];
        ++epoch_[j];
        state_[j] = JobState::kEvicting;
        // A stop for the maximum runtime ends the job; it is no preemption.
        if (ev.reason != core::EvictionReason::kMaximumExecutionTimeExceeded) {
          ++result_.outcomes[j].evictions;
          ++result_.tenants[t].preemptions;
          const core::Time age = now_ - started_[j];
          core::Time& youngest = result_.cluster.youngest_preempted_run;
          if (youngest < 0 || age < youngest) youngest = age;
        }
        int64_t pj = JobOf(ev.preemptor_id);
        result_.evictions.push_back(
            {now_, j, t, core::EvictionReasonName(ev.reason), ev.preemptor, pj >= 0 ? tenant_of_[pj] : -1});
        ++events_;
        if (options_.grace <= 0) {
          if (Status s = CompleteEviction(j); !s.ok()) return s;
          again = true;
        } else {
          evictions_.push({now_ + options_.grace, j, epoch_[j]});
        }
      }
      if (!again) break;
    }
    return Status::Ok();
  }

  // Integrates the current state over [last_, to).
  void Integrate(Time to) {
    if (to <= last_) return;
    Time dt = to - last_;
    double ddt = static_cast<double>(dt);
    Amount used = 0, demand = 0;
    for (size_t t = 0; t < T_; ++t) {
      Amount g = guarantee_[t];
      Amount d = held_[t] + pending_gpus_[t];
      used_ms_[t] += static_cast<double>(held_[t]) * ddt;
      borrowed_ms_[t] += static_cast<double>(std::max<Amount>(0, held_[t] - g)) * ddt;
      if (g > 0 && d >= g) {
        demand_ms_[t] += ddt;
        if (held_[t] >= g) satisfied_ms_[t] += ddt;
      }
      used += held_[t];
      demand += d;
      sample_[t] = static_cast<double>(held_[t]) / core::kMilli;
      sample_[T_ + t] = static_cast<double>(pending_jobs_[t]);
    }
    sample_[2 * T_] = static_cast<double>(used) / core::kMilli;
    sample_[2 * T_ + 1] = static_cast<double>(std::min(capacity_, demand)) / core::kMilli;
    cluster_used_ms_ += static_cast<double>(used) * ddt;
    cluster_bound_ms_ += static_cast<double>(std::min(capacity_, demand)) * ddt;
    cluster_cap_ms_ += static_cast<double>(capacity_) * ddt;
    if (active_) {
      jain_ms_ += jain_ * ddt;
      active_ms_ += ddt;
    }
    buckets_.Add(last_, to, sample_);
    last_ = to;
  }

  // Called after every batch: derived state for the next interval.
  void RecordState() {
    if (sample_.empty()) sample_.assign(2 * T_ + 2, 0.0);
    std::vector<Amount>& demand = demand_scratch_;
    demand.resize(T_);
    active_ = false;
    Amount used = 0;
    for (size_t t = 0; t < T_; ++t) {
      used += held_[t];
      demand[t] = held_[t] + pending_gpus_[t];
      if (demand[t] > 0) active_ = true;
      peak_held_[t] = std::max(peak_held_[t], held_[t]);
      // A reclaim episode: a pending job fits into the unused guarantee.
      const Amount unused = guarantee_[t] - held_[t];
      const bool unmet = min_pending_[t] > 0 && min_pending_[t] <= unused;
      if (unmet && unmet_since_[t] < 0) {
        unmet_since_[t] = now_;
      } else if (!unmet && unmet_since_[t] >= 0) {
        CloseEpisode(t);
      }
    }
    result_.cluster.peak_used = std::max(result_.cluster.peak_used, used);
    if (active_) jain_ = JainIndexWith(held_, demand, weights_, capacity_, &jain_scratch_);
  }

  void CloseEpisode(size_t t) {
    TenantReport& tr = result_.tenants[t];
    Time latency = now_ - unmet_since_[t];
    ++tr.reclaims;
    tr.reclaim_latency_max = std::max(tr.reclaim_latency_max, latency);
    reclaim_sum_[t] += latency;
    unmet_since_[t] = -1;
  }

  // ClusterReport::sizes, from the outcomes of the submitted jobs.
  void SizeClasses() {
    struct Class {
      const char* label;
      Amount lo, hi;  // milli-GPUs, inclusive; hi -1 = none
    };
    static constexpr Class kClasses[] = {{"under 1", 0, core::kMilli - 1},
                                         {"1", core::kMilli, core::kMilli},
                                         {"over 1, under 8", core::kMilli + 1, 8 * core::kMilli - 1},
                                         {"8 to 31", 8 * core::kMilli, 32 * core::kMilli - 1},
                                         {"32 or more", 32 * core::kMilli, -1}};
    constexpr size_t kN = sizeof(kClasses) / sizeof(kClasses[0]);
    std::vector<std::vector<double>> waits(kN);
    std::vector<int64_t> jobs(kN, 0);
    for (size_t j = 0; j < hot_.size(); ++j) {
      if (tenant_of_[j] < 0) continue;  // not submitted: its tenant has no queue
      const Amount g = hot_[j].gpus;
      size_t k = 0;
      while (k + 1 < kN && g > kClasses[k].hi) ++k;
      ++jobs[k];
      const JobOutcome& o = result_.outcomes[j];
      if (o.first_admit >= 0)
        waits[k].push_back(static_cast<double>(o.first_admit - hot_[j].submit) / 1000.0);
    }
    result_.cluster.sizes.clear();
    for (size_t k = 0; k < kN; ++k) {
      if (jobs[k] == 0) continue;
      SizeClassReport sc;
      sc.label = kClasses[k].label;
      sc.min_gpus = kClasses[k].lo;
      sc.max_gpus = kClasses[k].hi;
      sc.jobs = jobs[k];
      sc.admitted = static_cast<int64_t>(waits[k].size());
      sc.wait = ComputePercentiles(&waits[k]);
      result_.cluster.sizes.push_back(std::move(sc));
    }
  }

  Result<ReplayResult> Finalize() {
    ClusterReport& c = result_.cluster;
    c.capacity = capacity_;
    c.end = now_;
    c.events = events_;
    for (size_t t = 0; t < T_; ++t) {
      TenantReport& tr = result_.tenants[t];
      tr.peak_held = peak_held_[t];
      if (unmet_since_[t] >= 0) {
        ++tr.reclaims_unresolved;
        CloseEpisode(t);
      }
      if (tr.reclaims > 0) tr.reclaim_latency_mean = reclaim_sum_[t] / tr.reclaims;
      tr.gpu_hours = used_ms_[t] / core::kMilli / kMsPerHour;
      tr.gpu_hours_borrowed = borrowed_ms_[t] / core::kMilli / kMsPerHour;
      tr.gpu_hours_lost = lost_ms_[t] / core::kMilli / kMsPerHour;
      tr.demand_hours = demand_ms_[t] / kMsPerHour;
      tr.guarantee_satisfaction = demand_ms_[t] > 0 ? satisfied_ms_[t] / demand_ms_[t] : -1;
      tr.never_admitted = tr.jobs - tr.admitted;
      tr.wait = ComputePercentiles(&waits_[t]);
      tr.waits = waits_[t];
      tr.jct = ComputePercentiles(&jcts_[t]);
      c.preemptions += tr.preemptions;
      c.gpu_hours_lost += tr.gpu_hours_lost;
    }
    SizeClasses();
    c.utilization = cluster_cap_ms_ > 0 ? cluster_used_ms_ / cluster_cap_ms_ : 0;
    c.bound = cluster_cap_ms_ > 0 ? cluster_bound_ms_ / cluster_cap_ms_ : 0;
    c.jain = active_ms_ > 0 ? jain_ms_ / active_ms_ : 1.0;
    std::vector<std::vector<double>> cols;
    buckets_.Finish(std::max<Time>(now_, 1), &result_.series.t, &cols);
    result_.series.held.assign(cols.begin(), cols.begin() + static_cast<long>(T_));
    result_.series.pending.assign(cols.begin() + static_cast<long>(T_),
                                  cols.begin() + static_cast<long>(2 * T_));
    result_.series.used = cols[2 * T_];
    result_.series.bound = cols[2 * T_ + 1];
    if (options_.wall_clock_ns) {
      c.wall_seconds = static_cast<double>(Now() - start_ns_) / 1e9;
      c.schedule_seconds = static_cast<double>(schedule_ns_) / 1e9;
      if (c.wall_seconds > 0) c.events_per_second = static_cast<double>(c.events) / c.wall_seconds;
      if (c.schedule_seconds > 0)
        c.decisions_per_second = static_cast<double>(c.decisions) / c.schedule_seconds;
    }
    return std::move(result_);
  }

  const core::Config& config_;
  const std::vector<TraceJob>& jobs_;
  Amount capacity_;
  const ReplayOptions& options_;
  core::Engine engine_;
  Buckets buckets_;
  ReplayResult result_;
  size_t T_ = 0;
  std::unordered_map<std::string, int32_t> tenant_index_;

  std::vector<int64_t> order_;
  std::vector<Time> arrival_at_;  // jobs_[order_[k]].submit
  // What the event loop reads of each job, dense (TraceJob carries strings).
  struct JobHot {
    Time submit;
    Time duration;
    Amount gpus;  // milli-GPUs
  };
  std::vector<JobHot> hot_;
  std::vector<JobState> state_;
  std::vector<int32_t> epoch_;
  std::vector<Time> started_;
  std::vector<int32_t> tenant_of_;
  std::vector<core::WorkloadId> wid_;  // per job: its engine handle while submitted
  std::vector<int64_t> job_of_id_;     // per engine handle: the job, -1 when free
  MinHeap finishes_, evictions_;
  Time now_ = 0, last_ = 0;
  int64_t events_ = 0, next_progress_ = 0, arrivals_done_ = 0, arrivals_total_ = 0;
  int64_t start_ns_ = 0, schedule_ns_ = 0;

  std::vector<Amount> held_, pending_gpus_, weights_;
  std::vector<int64_t> pending_jobs_;
  std::vector<std::vector<std::pair<Amount, int64_t>>> pending_sizes_;  // per tenant, sorted by size
  // Per tenant, kept in compact arrays for RecordState and Integrate, which
  // run at every instant: the least pending size (0: none), the guarantee
  // (TenantBinding::guarantee) and the peak held (TenantReport::peak_held,
  // written at the end).
  std::vector<Amount> min_pending_, guarantee_, peak_held_;
  std::unordered_map<Amount, core::SharedVec<core::PodSetSpec>> pod_sets_by_size_;  // SubmitJob
  std::vector<Time> unmet_since_, reclaim_sum_;
  std::vector<double> used_ms_, borrowed_ms_, demand_ms_, satisfied_ms_;
  std::vector<double> lost_ms_;                    // per tenant
  std::vector<std::vector<double>> waits_, jcts_;  // per tenant, seconds
  std::vector<double> sample_;
  std::vector<Amount> demand_scratch_;
  JainScratch jain_scratch_;
  double cluster_used_ms_ = 0, cluster_bound_ms_ = 0, cluster_cap_ms_ = 0;
  double jain_ = 1.0, jain_ms_ = 0, active_ms_ = 0;
  bool active_ = false;
};

}  // namespace

Percentiles ComputePercentiles(std::vector<double>* values) {
  Percentiles p;
  if (values->empty()) return p;
  std::sort(values->begin(), values->end());
  auto rank = [&](double q) {
    size_t n = values->size();
    size_t r = static_cast<size_t>(std::ceil(q / 100.0 * static_cast<double>(n)));
    return (*values)[std::clamp<size_t>(r, 1, n) - 1];
  };
  p.p50 = rank(50);
  p.p95 = rank(95);
  p.p99 = rank(99);
  p.max = values->back();
  p.mean = std::accumulate(values->begin(), values->end(), 0.0) / static_cast<double>(values->size());
  return p;
}

namespace {

double JainIndexWith(const std::vector<Amount>& held, const std::vector<Amount>& demand,
                     const std::vector<Amount>& weights, Amount capacity, JainScratch* scratch) {
  // Every tenant ordered by demand/weight (exactly, ties by index). The
  // order is kept between calls and restored by insertion sort: between two
  // calls of a replay few demands move, so this is close to linear.
  std::vector<size_t>& order = scratch->order;
  if (order.size() != demand.size()) {
    order.resize(demand.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  }
  auto less = [&](size_t a, size_t b) {
    __int128 x = static_cast<__int128>(demand[a]) * weights[b],
             y = static_cast<__int128>(demand[b]) * weights[a];
    return x != y ? x < y : a < b;
  };
  for (size_t k = 1; k < order.size(); ++k) {
    size_t v = order[k];
    size_t m = k;
    for (; m > 0 && less(v, order[m - 1]); --m) order[m] = order[m - 1];
    order[m] = v;
  }
  // The active tenants (some demand), in that order: counted and summed
  // here, then walked once for the water-filling and the index.
  Amount total_demand = 0;
  size_t active = 0;
  double weight_left = 0;
  for (size_t i : order) {
    if (demand[i] > 0) {
      ++active;
      total_demand += demand[i];
      weight_left += static_cast<double>(weights[i]);
    }
  }
  if (active == 0) return 1.0;
  // Weighted water-filling of min(capacity, demand), smallest demand/weight
  // first; each tenant's held / fair share enters the index as its share is
  // set.
  double remaining = static_cast<double>(std::min(capacity, total_demand));
  double sum = 0, sum_sq = 0;
  for (size_t i : order) {
    if (demand[i] <= 0) continue;
    double share = weight_left > 0 ? remaining * static_cast<double>(weights[i]) / weight_left : 0;
    double f = std::min(share, static_cast<double>(demand[i]));
    remaining -= f;
    weight_left -= static_cast<double>(weights[i]);
    double x = f > 0 ? static_cast<double>(held[i]) / f : 0;
    sum += x;
    sum_sq += x * x;
  }
  if (sum_sq <= 0) return 1.0;
  return sum * sum / (static_cast<double>(active) * sum_sq);
}

}  // namespace

double JainIndex(const std::vector<Amount>& held, const std::vector<Amount>& demand,
                 const std::vector<Amount>& weights, Amount capacity) {
  JainScratch scratch;
  return JainIndexWith(held, demand, weights, capacity, &scratch);
}

Result<ReplayResult> Replay(const core::Config& config, const std::vector<TenantBinding>& tenants,
                            const std::vector<TraceJob>& jobs, core::Amount capacity,
                            const ReplayOptions& options) {
  Simulator sim(config, tenants, jobs, capacity, options);
  return sim.Run();
}

namespace {

struct QuotaTreeView {
  std::map<std::string, std::string> parent;  // node -> parent cohort ("" = root)
  std::map<std::string, Amount> subtree;      // node -> subtree quota of the resource, over flavors
  std::set<std::string> cohorts;
};

Result<QuotaTreeView> BuildView(const core::Config& config, const std::string& resource,
                                const std::string& flavor) {
  core::Engine engine;
  if (Status s = engine.Configure(config); !s.ok()) return s;
  QuotaTreeView v;
  for (const core::CohortSpec& c : config.cohorts) {
    v.parent[c.name] = c.parent;
    v.cohorts.insert(c.name);
  }
  for (const core::ClusterQueueSpec& cq : config.cluster_queues) {
    v.parent[cq.name] = cq.cohort;
    if (!cq.cohort.empty() && !v.parent.count(cq.cohort)) {
      v.parent[cq.cohort] = "";  // implicit cohort
      v.cohorts.insert(cq.cohort);
    }
  }
  for (const core::QuotaUsage& u : engine.Usage()) {
    if (u.resource == resource && (flavor.empty() || u.flavor == flavor))
      v.subtree[u.node] += u.subtree_quota;
  }
  return v;
}

}  // namespace

Result<Amount> ConfigCapacity(const core::Config& config, const std::string& resource,
                              const std::string& flavor) {
  Result<QuotaTreeView> v = BuildView(config, resource, flavor);
  if (!v.ok()) return v.status();
  Amount total = 0;
  for (const auto& [node, parent] : v->parent) {
    if (parent.empty()) total += v->subtree.count(node) ? v->subtree.at(node) : 0;
  }
  return total;
}

Result<Amount> NamespaceGuarantee(const core::Config& config, const std::string& ns,
                                  const std::string& resource, const std::string& flavor) {
  Result<QuotaTreeView> v = BuildView(config, resource, flavor);
  if (!v.ok()) return v.status();
  // Which namespaces each ClusterQueue serves.
  std::map<std::string, std::set<std::string>> served;
  for (const core::LocalQueueSpec& lq : config.local_queues) served[lq.cluster_queue].insert(lq.ns);
  // The nodes that contain only ClusterQueues serving `ns` alone.
  std::map<std::string, bool> pure;  // node -> every CQ below serves only ns
  std::set<std::string> mine;        // CQs serving ns
  for (const core::ClusterQueueSpec& cq : config.cluster_queues) {
    const std::set<std::string>& s = served[cq.name];
    bool only = s.size() == 1 && *s.begin() == ns;
    if (s.count(ns)) mine.insert(cq.name);
    if (!only && s.empty()) only = true;  // a CQ nobody uses does not spoil purity
    pure[cq.name] = only;
    for (std::string p = cq.cohort; !p.empty(); p = v->parent[p]) {
      if (!pure.count(p)) pure[p] = true;
      pure[p] = pure[p] && only;
    }
  }
  std::set<std::string> tops;
  for (const std::string& cq : mine) {
    std::string node = cq;
    if (!pure[node]) {
      tops.insert(node);  // shared ClusterQueue: its own quota
      continue;
    }
    for (std::string p = v->parent[node]; !p.empty() && pure[p]; p = v->parent[p]) node = p;
    tops.insert(node);
  }
  Amount total = 0;
  for (const std::string& node : tops) total += v->subtree.count(node) ? v->subtree.at(node) : 0;
  return total;
}

}  // namespace artel::sim
