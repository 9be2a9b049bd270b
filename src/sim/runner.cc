#include "sim/runner.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

#include "core/engine.h"
#include "manifest/manifest.h"
#include "sim/duration.h"

namespace artel::sim {
namespace {

namespace fs = std::filesystem;

// Settling normally takes a handful of rounds; a scenario that keeps
// admitting and evicting forever is a core bug the runner must not hang on.
constexpr int kMaxSettleRounds = 10000;

std::string JoinList(const std::vector<std::string>& items) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += ", ";
    out += items[i];
  }
  return out + "]";
}

std::string JoinSet(const std::set<std::string>& items) {
  return JoinList(std::vector<std::string>(items.begin(), items.end()));
}

std::string FormatShare(int64_t drs) { return drs < 0 ? "Inf" : std::to_string(drs); }

std::vector<core::placement::NodeSpec> ToPlacementNodes(const std::vector<NodeSpec>& nodes) {
  std::vector<core::placement::NodeSpec> out;
  for (const NodeSpec& n : nodes) {
    core::placement::NodeSpec p;
    p.name = n.name;
    p.labels = n.labels;
    p.taints = n.taints;
    p.allocatable = n.capacity;
    if (n.gpus) {
      for (int i = 0; i < n.gpus->count; ++i) {
        core::placement::GpuSpec g;
        g.model = n.gpus->model;
        g.mig = n.gpus->mig;
        auto it = n.gpus->mig_layout.find(i);
        if (it != n.gpus->mig_layout.end()) {
          for (const MigInstance& m : it->second) g.mig_layout.push_back({m.profile, m.start});
        }
        p.gpus.push_back(std::move(g));
      }
    }
    out.push_back(std::move(p));
  }
  return out;
}

class Runner {
 public:
  Runner(const Scenario& sc, std::ostream* trace) : sc_(sc), engine_(sc.options), trace_(trace) {}

  ScenarioResult Run() {
    config_ = sc_.config;
    Status st = engine_.Configure(config_);
    if (!st.ok()) return Abort("configure: " + st.ToString());
    if (!sc_.nodes.empty()) {
      std::vector<core::placement::NodeSpec> nodes = ToPlacementNodes(sc_.nodes);
      if (!sc_.extras.hypernodes.empty()) {
        // Volcano HyperNodes become tier labels on their member nodes.
        std::map<std::string, std::map<std::string, std::string>> labels;
        for (const auto& n : nodes) labels[n.name] = n.labels;
        auto tiers = manifest::HyperNodeLabels(sc_.extras.hypernodes, labels);
        if (!tiers.ok()) return Abort("hypernodes: " + tiers.status().ToString());
        for (auto& n : nodes) {
          auto it = tiers->find(n.name);
          if (it != tiers->end()) n.labels.insert(it->second.begin(), it->second.end());
        }
      }
      st = engine_.SetNodes(std::move(nodes));
      if (!st.ok()) return Abort("nodes: " + st.ToString());
    }
    for (const Step& step : sc_.steps) {
      if (Status s = AdvanceTo(step.at); !s.ok()) return Abort(s.message());
      for (const Event& ev : step.events) {
        if (Status s = Apply(ev); !s.ok()) {
          return Abort(fmt::format("at {} {} ({}): {}", FormatDuration(now_), ev.field, ev.pos.ToString(),
                                   s.ToString()));
        }
      }
      if (Status s = Settle(); !s.ok()) return Abort(s.message());
      // Runs that end exactly now (zero runtimes) belong to this instant.
      if (Status s = AdvanceTo(step.at); !s.ok()) return Abort(s.message());
      if (step.expect) Check(*step.expect);
    }
    result_.passed = result_.failures.empty();
    return result_;
  }

 private:
  ScenarioResult Abort(std::string message) {
    result_.failures.push_back(std::move(message));
    result_.passed = false;
    return result_;
  }

  void Trace(const std::string& line) {
    if (trace_ != nullptr)
      *trace_ << "    " << fmt::format("{:>8}", FormatDuration(now_)) << "  " << line << "\n";
  }

  // ---- names ----

  std::string ShortName(const std::string& key) const {
    size_t slash = key.find('/');
    return slash == std::string::npos ? key : key.substr(slash + 1);
  }

  // Workloads are shown by name, or as namespace/name when the name alone is
  // ambiguous in this scenario.
  std::string Display(const std::string& key) const {
    auto it = keys_by_name_.find(ShortName(key));
    if (it != keys_by_name_.end() && it->second.size() > 1) return key;
    return ShortName(key);
  }

  // The key a reference names, if it names exactly one submitted workload.
  std::optional<std::string> Resolve(const WorkloadRef& ref) const {
    if (ref.text.find('/') != std::string::npos) return ref.text;
    auto it = keys_by_name_.find(ref.text);
    if (it == keys_by_name_.end() || it->second.size() != 1) return std::nullopt;
    return it->second.front();
  }

  Result<std::string> ResolveForEvent(const WorkloadRef& ref) const {
    if (ref.text.find('/') != std::string::npos) return ref.text;
    auto it = keys_by_name_.find(ref.text);
    if (it == keys_by_name_.end()) return NotFound("no workload named " + ref.text + " was submitted");
    if (it->second.size() > 1) {
      return InvalidArgument("workload name " + ref.text + " is ambiguous; write namespace/name");
    }
    return it->second.front();
  }

  // How an expected reference is shown and compared: as `Display` would show
  // the workload it names, or verbatim when it names none.
  std::string Normalize(const WorkloadRef& ref) const {
    std::optional<std::string> key = Resolve(ref);
    return key ? Display(*key) : ref.text;
  }

  // ---- time and settling ----

  std::optional<core::Time> NextAutoFinish() const {
    std::optional<core::Time> next;
    for (const auto& [key, start] : started_) {
      auto rt = runtime_.find(key);
      if (rt == runtime_.end()) continue;
      core::Time due = start + rt->second;
      if (!next || due < *next) next = due;
    }
    return next;
  }

  // Processes the runs that end at or before `t`, in time order, settling
  // after each instant, and moves the clock to `t`.
  Status AdvanceTo(core::Time t) {
    for (;;) {
      // Runs of workloads that left Admitted some other way are stale.
      for (auto it = started_.begin(); it != started_.end();) {
        const core::WorkloadInfo* info = engine_.Find(it->first);
        bool running = info != nullptr && info->state == core::WorkloadState::kAdmitted;
        it = running ? std::next(it) : started_.erase(it);
      }
      std::optional<core::Time> next = NextAutoFinish();
      // The engine's own deadlines (a maximum runtime running out) are
      // instants too: it decides at them, then the engine settles.
      std::optional<core::Time> timed = engine_.NextTimedEvent();
      if (timed && (!next || *timed < *next)) next = std::max(*timed, now_);
      if (!next || *next > t) break;
      now_ = std::max(now_, *next);
      // Everything due at this instant finishes in submission order, then the
      // engine settles once, as if the pods had exited together.
      std::vector<std::string> due;
      for (const core::WorkloadInfo* info : engine_.Workloads(/*with_reasons=*/false)) {
        auto st = started_.find(info->key);
        auto rt = runtime_.find(info->key);
        if (st != started_.end() && rt != runtime_.end() && st->second + rt->second <= now_)
          due.push_back(info->key);
      }
      for (const std::string& key : due) {
        started_.erase(key);
        if (Status s = engine_.Finish(key, now_); !s.ok()) {
          return InvalidArgument(fmt::format("at {}: finishing {} after its runtime failed: {}",
                                             FormatDuration(now_), Display(key), s.ToString()));
        }
        Trace("finished " + Display(key) + " (runtime elapsed)");
      }
      if (Status s = Settle(); !s.ok()) return s;
    }
    now_ = std::max(now_, t);
    return Status::Ok();
  }

  void RecordEviction(const core::Eviction& ev) {
    started_.erase(ev.victim);
    std::string line = "evicted " + Display(ev.victim) + " (" + core::EvictionReasonName(ev.reason) + ")";
    if (!ev.preemptor.empty()) line += " by " + Display(ev.preemptor);
    Trace(line);
    evictions_.push_back(ev);
  }

  // Completes every eviction in flight: those `issued` by Schedule(), and, as
  // a safety net, any other workload still Evicting (described by its
  // `last_eviction`).
  Status CompleteEvictions(const std::vector<core::Eviction>& issued, bool* changed) {
    std::set<std::string> done;
    for (const core::Eviction& ev : issued) {
      const core::WorkloadInfo* info = engine_.Find(ev.victim);
      RecordEviction(ev);
      done.insert(ev.victim);
      if (info == nullptr || info->state != core::WorkloadState::kEvicting) continue;
      if (Status s = engine_.CompleteEviction(ev.victim, now_); !s.ok()) return s;
      *changed = true;
    }
    std::vector<std::pair<std::string, std::shared_ptr<const core::Eviction>>> evicting;
    for (const core::WorkloadInfo* info : engine_.Workloads(/*with_reasons=*/false)) {
      if (info->state == core::WorkloadState::kEvicting)
        evicting.emplace_back(info->key, info->last_eviction);
    }
    for (auto& [key, last] : evicting) {
      if (!done.count(key)) {
        core::Eviction ev = last ? *last : core::Eviction{};
        ev.victim = key;
        RecordEviction(ev);
      }
      if (Status s = engine_.CompleteEviction(key, now_); !s.ok()) return s;
      *changed = true;
    }
    return Status::Ok();
  }

  Status Settle() {
    for (int round = 0; round < kMaxSettleRounds; ++round) {
      // Schedule() also reports evictions issued since the previous call
      // (deactivation, a configuration change), so it runs first and the
      // victims are completed right after.
      core::CycleResult r = engine_.Schedule(now_);
      for (const std::string& key : r.admitted) {
        started_[key] = now_;
        Trace("admitted " + Display(key) + DescribeAdmission(key));
      }
      bool changed = false;
      if (Status s = CompleteEvictions(r.evictions, &changed); !s.ok()) return Failed(s);
      if (r.admitted.empty() && r.evictions.empty() && !changed) return Status::Ok();
    }
    return InvalidArgument(fmt::format("at {}: scheduling did not settle after {} rounds",
                                       FormatDuration(now_), kMaxSettleRounds));
  }

  Status Failed(const Status& s) const {
    return InvalidArgument(
        fmt::format("at {}: completing an eviction failed: {}", FormatDuration(now_), s.ToString()));
  }

  std::string DescribeAdmission(const std::string& key) const {
    const core::WorkloadInfo* info = engine_.Find(key);
    if (info == nullptr) return "";
    std::string out;
    for (const core::PodSetAssignment& ps : info->admission) {
      out += out.empty() ? " [" : "; ";
      out += ps.name + " x" + std::to_string(ps.count);
      for (const auto& [res, flavor] : ps.flavors) out += " " + res + "=" + flavor;
    }
    return out.empty() ? out : out + "]";
  }

  // ---- events ----

  Status Apply(const Event& ev) {
    switch (ev.kind) {
      case Event::Kind::kSubmit: {
        const core::WorkloadSpec& spec = ev.submit.spec;
        std::string key = spec.ns + "/" + spec.name;
        // A Volcano or KAI queue named directly gets its LocalQueue in this
        // namespace on first use (docs/dialects.md).
        if (manifest::EnsureQueueInNamespace(&config_, spec.ns, spec.queue)) {
          if (Status s = engine_.Configure(config_); !s.ok()) return s;
        }
        if (Status s = engine_.Submit(spec, now_).status(); !s.ok()) return s;
        auto& keys = keys_by_name_[spec.name];
        if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
        if (ev.submit.runtime) {
          runtime_[key] = *ev.submit.runtime;
        } else {
          runtime_.erase(key);
        }
        Trace("submit " + Display(key));
        return Status::Ok();
      }
      case Event::Kind::kFinish:
      case Event::Kind::kCancel:
      case Event::Kind::kActivate:
      case Event::Kind::kDeactivate: {
        Result<std::string> key = ResolveForEvent(ev.target);
        if (!key.ok()) return key.status();
        Status s;
        if (ev.kind == Event::Kind::kFinish) {
          s = engine_.Finish(*key, now_);
        } else if (ev.kind == Event::Kind::kCancel) {
          s = engine_.Cancel(*key, now_);
        } else {
          s = engine_.SetActive(*key, ev.kind == Event::Kind::kActivate, now_);
        }
        if (!s.ok()) return s;
        if (ev.kind == Event::Kind::kFinish || ev.kind == Event::Kind::kCancel) started_.erase(*key);
        Trace(std::string(EventKindName(ev.kind)) + " " + Display(*key));
        return Status::Ok();
      }
      case Event::Kind::kApply: {
        MergeConfig(ev.patch, &config_);
        if (Status s = engine_.Configure(config_); !s.ok()) return s;
        Trace("apply configuration");
        return Status::Ok();
      }
    }
    return Status::Ok();
  }

  // ---- expectations ----

  void Fail(const std::string& what, const std::string& detail) {
    result_.failures.push_back(fmt::format("at {} {}: {}", FormatDuration(now_), what, detail));
  }

  void CompareSets(const std::string& what, const std::vector<WorkloadRef>& want_refs,
                   const std::set<std::string>& got) {
    std::set<std::string> want;
    for (const WorkloadRef& r : want_refs) want.insert(Normalize(r));
    if (want == got) return;
    std::vector<std::string> missing, unexpected;
    std::set_difference(want.begin(), want.end(), got.begin(), got.end(), std::back_inserter(missing));
    std::set_difference(got.begin(), got.end(), want.begin(), want.end(), std::back_inserter(unexpected));
    std::string detail = "want " + JoinSet(want) + ", got " + JoinSet(got) + "  (";
    if (!missing.empty()) detail += "missing: " + JoinList(missing).substr(1, JoinList(missing).size() - 2);
    if (!missing.empty() && !unexpected.empty()) detail += "; ";
    if (!unexpected.empty()) {
      detail += "unexpected: " + JoinList(unexpected).substr(1, JoinList(unexpected).size() - 2);
    }
    Fail(what, detail + ")");
  }

  std::set<std::string> InState(core::WorkloadState state) const {
    std::set<std::string> out;
    for (const core::WorkloadInfo* info : engine_.Workloads(/*with_reasons=*/false)) {
      if (info->state == state) out.insert(Display(info->key));
    }
    return out;
  }

  // The workload a map key of an expectation names, or a failure line.
  const core::WorkloadInfo* FindForExpect(const std::string& what, const WorkloadRef& ref) {
    std::optional<std::string> key = Resolve(ref);
    const core::WorkloadInfo* info = key ? engine_.Find(*key) : nullptr;
    if (info == nullptr) Fail(what, "no workload " + ref.text);
    return info;
  }

  const core::WorkloadInfo* FindAdmitted(const std::string& what, const WorkloadRef& ref) {
    const core::WorkloadInfo* info = FindForExpect(what, ref);
    if (info != nullptr && info->state != core::WorkloadState::kAdmitted) {
      Fail(what, ref.text + " is not admitted (state " + core::WorkloadStateName(info->state) + ")");
      return nullptr;
    }
    return info;
  }

  static const core::PodSetAssignment* FindPodSet(const core::WorkloadInfo& info, const std::string& name) {
    for (const core::PodSetAssignment& ps : info.admission) {
      if (ps.name == name) return &ps;
    }
    return nullptr;
  }

  void CheckEvictions(const std::vector<EvictionExpect>& want) {
    std::vector<bool> used(evictions_.size(), false);
    std::vector<std::string> missing;
    for (const EvictionExpect& w : want) {
      std::string victim = Normalize(w.victim);
      bool found = false;
      for (size_t i = 0; i < evictions_.size() && !found; ++i) {
        const core::Eviction& ev = evictions_[i];
        if (used[i] || Display(ev.victim) != victim) continue;
        if (w.reason && *w.reason != core::EvictionReasonName(ev.reason)) continue;
        if (w.preemptor && Normalize(*w.preemptor) != (ev.preemptor.empty() ? "" : Display(ev.preemptor)))
          continue;
        used[i] = true;
        found = true;
      }
      if (!found) {
        std::string d = "{victim: " + victim;
        if (w.reason) d += ", reason: " + *w.reason;
        if (w.preemptor) d += ", preemptor: " + Normalize(*w.preemptor);
        missing.push_back(d + "}");
      }
    }
    std::vector<std::string> unexpected;
    for (size_t i = 0; i < evictions_.size(); ++i) {
      if (used[i]) continue;
      const core::Eviction& ev = evictions_[i];
      std::string d = "{victim: " + Display(ev.victim) + ", reason: " + core::EvictionReasonName(ev.reason);
      if (!ev.preemptor.empty()) d += ", preemptor: " + Display(ev.preemptor);
      unexpected.push_back(d + "}");
    }
    if (missing.empty() && unexpected.empty()) return;
    std::string detail;
    if (!missing.empty()) detail += "missing " + JoinList(missing);
    if (!missing.empty() && !unexpected.empty()) detail += "; ";
    if (!unexpected.empty()) detail += "unexpected " + JoinList(unexpected);
    Fail("expect.evictions", detail);
  }

  void Check(const Expectation& ex) {
    size_t failures_before = result_.failures.size();
    if (ex.admitted) CompareSets("expect.admitted", *ex.admitted, InState(core::WorkloadState::kAdmitted));
    if (ex.pending) CompareSets("expect.pending", *ex.pending, InState(core::WorkloadState::kPending));
    if (ex.finished) CompareSets("expect.finished", *ex.finished, InState(core::WorkloadState::kFinished));
    if (ex.failed) {
      std::set<std::string> got;
      for (const core::WorkloadInfo* info : engine_.Workloads()) {
        if (info->state == core::WorkloadState::kFinished && info->failed) got.insert(Display(info->key));
      }
      CompareSets("expect.failed", *ex.failed, got);
    }
    if (ex.preempted) {
      std::set<std::string> got;
      for (const core::Eviction& ev : evictions_) got.insert(Display(ev.victim));
      CompareSets("expect.preempted", *ex.preempted, got);
    }
    if (ex.evictions) CheckEvictions(*ex.evictions);
    if (ex.flavors) {
      for (const auto& [ref, per_ps] : *ex.flavors) {
        std::string what = "expect.flavors[" + ref.text + "]";
        const core::WorkloadInfo* info = FindAdmitted(what, ref);
        if (info == nullptr) continue;
        for (const auto& [ps_name, per_res] : per_ps) {
          const core::PodSetAssignment* ps = FindPodSet(*info, ps_name);
          if (ps == nullptr) {
            Fail(what, "no pod set " + ps_name);
            continue;
          }
          for (const auto& [res, want] : per_res) {
            auto it = ps->flavors.find(res);
            std::string got = it == ps->flavors.end() ? "(none)" : it->second;
            if (got != want) Fail(what + "." + ps_name + "[" + res + "]", "want " + want + ", got " + got);
          }
        }
      }
    }
    if (ex.admitted_counts) {
      for (const auto& [ref, counts] : *ex.admitted_counts) {
        std::string what = "expect.admittedCounts[" + ref.text + "]";
        const core::WorkloadInfo* info = FindAdmitted(what, ref);
        if (info == nullptr) continue;
        for (const auto& [ps_name, want] : counts) {
          const core::PodSetAssignment* ps = FindPodSet(*info, ps_name);
          if (ps == nullptr) {
            Fail(what, "no pod set " + ps_name);
          } else if (ps->count != want) {
            Fail(what + "." + ps_name, fmt::format("want {}, got {}", want, ps->count));
          }
        }
      }
    }
    if (ex.usage) {
      std::vector<core::QuotaUsage> rows = engine_.Usage();
      for (const UsageExpect& u : *ex.usage) {
        std::string what = fmt::format("expect.usage[{} {} {} {}]", u.is_cohort ? "cohort" : "clusterQueue",
                                       u.node, u.flavor, u.resource);
        auto it = std::find_if(rows.begin(), rows.end(), [&](const core::QuotaUsage& r) {
          return r.node == u.node && r.is_cohort == u.is_cohort && r.flavor == u.flavor &&
                 r.resource == u.resource;
        });
        if (it == rows.end()) {
          Fail(what, "no such node, flavor and resource in the quota tree");
        } else if (it->usage != u.value) {
          Fail(what, "want " + core::FormatQuantity(u.value) + ", got " + core::FormatQuantity(it->usage));
        }
      }
    }
    if (ex.pending_reasons) {
      for (const auto& [ref, want] : *ex.pending_reasons) {
        std::string what = "expect.pendingReasons[" + ref.text + "]";
        const core::WorkloadInfo* info = FindForExpect(what, ref);
        if (info == nullptr) continue;
        if (info->state != core::WorkloadState::kPending) {
          Fail(what, "want " + want + ", but the workload is " + core::WorkloadStateName(info->state));
          continue;
        }
        std::string got = core::PendingReasonKindName(info->pending->kind);
        if (got != want) {
          std::string detail = "want " + want + ", got " + got;
          if (!info->pending->message.empty()) detail += " (" + info->pending->message + ")";
          Fail(what, detail);
        }
      }
    }
    if (ex.pending_messages) {
      for (const auto& [ref, want] : *ex.pending_messages) {
        std::string what = "expect.pendingMessages[" + ref.text + "]";
        const core::WorkloadInfo* info = FindForExpect(what, ref);
        if (info == nullptr) continue;
        if (info->state != core::WorkloadState::kPending) {
          Fail(what,
               "the workload is " + std::string(core::WorkloadStateName(info->state)) + ", not pending");
          continue;
        }
        auto why = engine_.Why(info->key);
        std::string got = why.ok() ? why->message : why.status().message();
        for (const std::string& s : want.contains) {
          if (got.find(s) == std::string::npos) Fail(what, "want a message with \"" + s + "\", got: " + got);
        }
        for (const std::string& s : want.excludes) {
          if (got.find(s) != std::string::npos)
            Fail(what, "want a message without \"" + s + "\", got: " + got);
        }
      }
    }
    if (ex.share) {
      for (const auto& [node, want] : *ex.share) {
        int64_t got = engine_.DominantResourceShare(node);
        if (got != want)
          Fail("expect.share[" + node + "]", "want " + FormatShare(want) + ", got " + FormatShare(got));
      }
    }
    if (ex.placements) {
      for (const auto& [wl, per_ps] : *ex.placements) {
        std::string what = "expect.placements[" + wl + "]";
        const core::WorkloadInfo* info = FindForExpect(what, WorkloadRef{wl, {}});
        if (info == nullptr) continue;
        for (const auto& [ps, want_nodes] : per_ps) {
          std::vector<std::string> want = want_nodes, got;
          for (const auto& p : info->placements) {
            if (p.pod_set == ps) got.push_back(p.node);
          }
          std::sort(want.begin(), want.end());
          std::sort(got.begin(), got.end());
          if (want != got)
            Fail(what + "." + ps,
                 "want " + JoinList(want) + ", got " + JoinList(got) + " (compared as a multiset)");
        }
      }
    }
    if (ex.mig_layouts) {
      const core::placement::Cluster* cluster = engine_.cluster();
      for (const auto& [key, want_list] : *ex.mig_layouts) {
        std::string what = "expect.migLayouts[" + key + "]";
        size_t slash = key.rfind('/');
        if (cluster == nullptr || slash == std::string::npos) {
          Fail(what, cluster == nullptr ? "the scenario has no nodes" : "key must be node/gpuIndex");
          continue;
        }
        int32_t node = cluster->FindNode(key.substr(0, slash));
        int gpu = std::atoi(key.substr(slash + 1).c_str());
        if (node < 0) {
          Fail(what, "no node " + key.substr(0, slash));
          continue;
        }
        std::vector<std::string> want, got = cluster->MigLayout(node, gpu);
        for (const auto& m : want_list) want.push_back(m.profile + "@" + std::to_string(m.start));
        std::sort(want.begin(), want.end());
        std::sort(got.begin(), got.end());
        if (want != got) Fail(what, "want " + JoinList(want) + ", got " + JoinList(got));
      }
    }
    size_t mismatches = result_.failures.size() - failures_before;
    Trace(mismatches == 0 ? "expect: ok" : fmt::format("expect: {} mismatch(es)", mismatches));
    evictions_.clear();
  }

  const Scenario& sc_;
  core::Engine engine_;
  std::ostream* trace_;
  core::Config config_;
  core::Time now_ = 0;
  std::map<std::string, core::Time> runtime_;  // key -> runtime from the submit event
  std::map<std::string, core::Time> started_;  // key -> start of the current run
  std::map<std::string, std::vector<std::string>> keys_by_name_;
  std::vector<core::Eviction> evictions_;  // since the previous expect step
  ScenarioResult result_;
};

bool HasYamlExtension(const fs::path& p) {
  std::string ext = p.extension().string();
  return ext == ".yaml" || ext == ".yml";
}

}  // namespace

ScenarioResult RunScenario(const Scenario& scenario, std::ostream* trace) {
  Runner runner(scenario, trace);
  return runner.Run();
}

std::vector<std::string> FindScenarioFiles(const std::vector<std::string>& paths,
                                           std::vector<std::string>* missing) {
  std::vector<std::string> files;
  for (const std::string& path : paths) {
    std::error_code ec;
    if (fs::is_directory(path, ec)) {
      std::vector<std::string> found;
      for (auto it =
               fs::recursive_directory_iterator(path, fs::directory_options::skip_permission_denied, ec);
           !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (it->is_regular_file(ec) && HasYamlExtension(it->path()) &&
            LooksLikeScenarioFile(it->path().string())) {
          found.push_back(it->path().string());
        }
      }
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else if (fs::exists(path, ec)) {
      files.push_back(path);
    } else if (missing != nullptr) {
      missing->push_back(path);
    }
  }
  return files;
}

RunSummary RunTestPaths(const std::vector<std::string>& paths, const RunOptions& options, std::ostream& out) {
  RunSummary summary;
  std::vector<std::string> missing;
  std::vector<std::string> files = FindScenarioFiles(paths, &missing);
  for (const std::string& m : missing) {
    out << "ERROR " << m << ": no such file or directory\n";
    ++summary.failed;
  }
  for (const std::string& file : files) {
    for (const ScenarioDoc& doc : LoadScenarioFile(file)) {
      // A document whose name could not be read cannot be filtered out; it is
      // reported so that a broken file never passes silently.
      if (!options.filter.empty() && !doc.name.empty() &&
          doc.name.find(options.filter) == std::string::npos) {
        continue;
      }
      if (!doc.error.ok()) {
        out << "ERROR " << doc.error.ToString() << "\n";
        ++summary.failed;
        continue;
      }
      if (options.verbose) out << "RUN  " << file << ": " << doc.name << "\n";
      ScenarioResult r = RunScenario(*doc.scenario, options.verbose ? &out : nullptr);
      out << (r.passed ? "PASS " : "FAIL ") << file << ": " << doc.name << "\n";
      for (const std::string& line : r.failures) out << "  " << line << "\n";
      (r.passed ? summary.passed : summary.failed) += 1;
    }
  }
  out << summary.passed << " passed, " << summary.failed << " failed\n";
  return summary;
}

}  // namespace artel::sim
