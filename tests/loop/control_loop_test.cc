// The control loop with a fake Backend and an injected clock: decisions reach
// the backend in the engine's order after the loop's own work (metrics,
// events), the backend's own evictions stay unreported, Wake is coalesced,
// and a scheduling pass runs only on a change or on the interval.
#include "loop/control_loop.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace artel::loop {
namespace {

constexpr core::Amount kGpu = 1000;

core::ClusterQueueSpec Cq(const std::string& name, const std::string& cohort, core::Amount nominal) {
  core::ClusterQueueSpec q;
  q.name = name;
  q.cohort = cohort;
  q.namespace_selector = core::LabelSelector{};
  core::ResourceGroupSpec g;
  g.covered_resources = {"nvidia.com/gpu"};
  core::FlavorQuotasSpec f;
  f.flavor = "a100";
  f.resources.push_back({"nvidia.com/gpu", nominal, std::nullopt, std::nullopt});
  g.flavors.push_back(f);
  q.resource_groups.push_back(g);
  q.preemption.reclaim_within_cohort = core::ReclaimWithinCohortPolicy::kAny;
  q.preemption.within_cluster_queue = core::WithinClusterQueuePolicy::kLowerPriority;
  return q;
}

core::Config TwoTeams() {
  core::Config c;
  c.flavors.push_back({"a100"});
  c.cluster_queues.push_back(Cq("team-a", "shared", 2 * kGpu));
  c.cluster_queues.push_back(Cq("team-b", "shared", 2 * kGpu));
  c.local_queues.push_back({"team-a", "default", "team-a"});
  c.local_queues.push_back({"team-b", "default", "team-b"});
  return c;
}

core::WorkloadSpec Job(const std::string& ns, const std::string& name, int gpus) {
  core::WorkloadSpec w;
  w.ns = ns;
  w.name = name;
  w.queue = "default";
  core::PodSetSpec ps;
  ps.count = 1;
  ps.requests["nvidia.com/gpu"] = gpus * kGpu;
  w.pod_sets.push_back(ps);
  return w;
}

// Records every hook call, and what the loop had done when it was called.
class FakeBackend : public Backend {
 public:
  explicit FakeBackend(ControlLoop* loop) : loop_(loop) {}

  // Input for the next pass (folded in by SyncLocked).
  std::vector<core::WorkloadSpec> to_submit;
  std::vector<std::string> to_complete;    // evictions whose "pods" are gone
  std::vector<std::string> to_deactivate;  // the backend's own holds
  bool poll_changed = false;

  // What the loop called.
  std::vector<std::string> calls;  // "Poll", "Sync", "Admitted ns/name", "Evicted ns/name", "Done", "Flush"
  std::vector<std::string> admitted, evicted;
  std::vector<std::string> events_seen;  // the latest watch event at each decision hook
  std::vector<bool> locked_in_unlocked_hooks;
  int skip_asked = 0;
  std::set<std::string> own;  // deactivated by the backend: SkipEvictionLocked says true

  std::mutex m;
  std::condition_variable cv;
  size_t admitted_count() {
    std::lock_guard<std::mutex> l(m);
    return admitted.size();
  }

  bool Poll(int64_t) override {
    Record("Poll");
    locked_in_unlocked_hooks.push_back(!TryLock());
    bool c = poll_changed || !to_complete.empty();
    poll_changed = false;
    return c;
  }
  void SyncLocked(core::Engine& engine, int64_t now) override {
    Record("Sync");
    for (auto& w : to_submit) EXPECT_TRUE(engine.Submit(w, now).ok());
    to_submit.clear();
    for (const auto& k : to_complete) EXPECT_TRUE(engine.CompleteEviction(k, now).ok()) << k;
    to_complete.clear();
    for (const auto& k : to_deactivate) {
      EXPECT_TRUE(engine.SetActive(k, false, now).ok());
      own.insert(k);
    }
    to_deactivate.clear();
  }
  bool SkipEvictionLocked(const core::Eviction& e, int64_t) override {
    ++skip_asked;
    return own.count(e.victim) > 0;
  }
  void OnAdmittedLocked(const core::WorkloadInfo& info, int64_t) override {
    Record("Admitted " + info.key);
    SeeLatestEvent();
    std::lock_guard<std::mutex> l(m);
    admitted.push_back(info.key);
    cv.notify_all();
  }
  void OnEvictedLocked(const core::Eviction& e, const core::WorkloadInfo* victim, int64_t) override {
    Record("Evicted " + e.victim);
    SeeLatestEvent();
    EXPECT_NE(victim, nullptr);
    if (victim != nullptr) {
      EXPECT_EQ(victim->state, core::WorkloadState::kEvicting);
    }
    evicted.push_back(e.victim);
  }
  void CycleDoneLocked(core::Engine&, int64_t, bool full_pass) override {
    Record(full_pass ? "Done full" : "Done");
  }
  void Flush(int64_t) override {
    Record("Flush");
    locked_in_unlocked_hooks.push_back(!TryLock());
  }

 private:
  void Record(const std::string& c) {
    std::lock_guard<std::mutex> l(m);
    calls.push_back(c);
  }
  bool TryLock() {
    if (!loop_->mu().try_lock()) return false;
    loop_->mu().unlock();
    return true;
  }
  void SeeLatestEvent() {
    uint64_t seq = loop_->LatestEventSeq();
    uint64_t next = 0;
    std::vector<Json> ev = loop_->EventsAfter(seq - 1, 0, std::nullopt, &next,
                                              server::Principal{"admin", server::Role::kAdmin, {}});
    events_seen.push_back(ev.empty() ? "" : ev[0].value("type", "") + " " + ev[0].value("workload", ""));
  }
  ControlLoop* loop_;
};

struct Fixture {
  int64_t clock = 1'000'000;
  server::Logger log{server::Logger::Format::kLogfmt, server::LogLevel::kError, stderr};
  ControlLoop loop{core::EngineOptions{}, LoopOptions{50, 1000, 2}, &log, [this] { return clock; }};
  FakeBackend backend{&loop};
  Fixture() {
    loop.SetBackend(&backend);
    std::lock_guard<std::mutex> l(loop.mu());
    EXPECT_TRUE(loop.engine().Configure(TwoTeams()).ok());
  }
};

// The value of the sample `name{labels}` in Prometheus text; -1 when absent.
double Sample(const std::string& text, const std::string& series) {
  size_t at = text.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  return std::stod(text.substr(at + series.size() + 2));
}

TEST(ControlLoopTest, DecisionsReachTheBackendInDecisionOrderAfterTheLoopsOwnWork) {
  Fixture f;
  // The reference: the same submissions on an engine of its own.
  core::Engine ref;
  ASSERT_TRUE(ref.Configure(TwoTeams()).ok());
  for (int i = 0; i < 4; ++i) {
    f.backend.to_submit.push_back(Job("team-a", "a-" + std::to_string(i), 1));
    ASSERT_TRUE(ref.Submit(Job("team-a", "a-" + std::to_string(i), 1), f.clock).ok());
  }
  f.loop.RunOnce();
  core::CycleResult want = ref.Schedule(f.clock);
  ASSERT_EQ(want.admitted.size(), 4u);  // two of them borrow team-b's idle GPUs
  EXPECT_EQ(f.backend.admitted, want.admitted);
  std::vector<std::string> want_calls = {"Poll", "Sync"};
  for (const auto& k : want.admitted) want_calls.push_back("Admitted " + k);
  want_calls.insert(want_calls.end(), {"Done full", "Flush"});
  EXPECT_EQ(f.backend.calls, want_calls);
  // Each admission's watch event was emitted before the backend heard of it.
  for (size_t i = 0; i < want.admitted.size(); ++i) {
    EXPECT_EQ(f.backend.events_seen[i], "Admitted " + want.admitted[i]);
  }

  // The owner returns: two of team-a's borrowers are evicted to reclaim.
  f.clock += 500;
  f.backend.calls.clear();
  f.backend.events_seen.clear();
  f.backend.to_submit.push_back(Job("team-b", "b-0", 2));
  ASSERT_TRUE(ref.Submit(Job("team-b", "b-0", 2), f.clock).ok());
  f.loop.RunOnce();
  core::CycleResult want2 = ref.Schedule(f.clock);
  ASSERT_EQ(want2.evictions.size(), 2u);
  ASSERT_EQ(f.backend.evicted.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(f.backend.evicted[i], want2.evictions[i].victim);
    EXPECT_EQ(f.backend.events_seen[i], "Evicted " + want2.evictions[i].victim);
  }
  EXPECT_EQ(f.backend.skip_asked, 2);

  // The victims' pods are gone: Poll reports a change, so even a pass that
  // is not a full one schedules, and the owner gets in.
  f.clock += 1500;
  f.backend.to_complete = f.backend.evicted;
  f.backend.calls.clear();
  f.loop.RunOnce(/*schedule=*/false);
  ASSERT_EQ(f.backend.admitted.size(), 5u);
  EXPECT_EQ(f.backend.admitted.back(), "team-b/b-0");
  EXPECT_EQ(f.backend.calls.back(), "Flush");
  EXPECT_EQ(f.backend.calls[f.backend.calls.size() - 2], "Done");  // not a full pass
  // Poll and Flush ran without the loop's lock.
  for (bool locked : f.backend.locked_in_unlocked_hooks) EXPECT_FALSE(locked);

  // Kueue's metric names, counted by the loop.
  {
    std::lock_guard<std::mutex> l(f.loop.mu());
    f.loop.CountFinishedLocked("team-a");
  }
  const std::string m = f.loop.MetricsText();
  EXPECT_EQ(Sample(m, "kueue_admitted_workloads_total{cluster_queue=\"team-a\"}"), 4) << m;
  EXPECT_EQ(Sample(m, "kueue_admitted_workloads_total{cluster_queue=\"team-b\"}"), 1);
  EXPECT_EQ(Sample(m, "kueue_finished_workloads_total{cluster_queue=\"team-a\"}"), 1);
  EXPECT_EQ(Sample(m, "kueue_evicted_workloads_total{cluster_queue=\"team-a\",reason=\"Preempted\"}"), 2);
  EXPECT_EQ(Sample(m,
                   "kueue_preempted_workloads_total{preempting_cluster_queue=\"team-b\",reason="
                   "\"InCohortReclamation\"}"),
            2);
  EXPECT_EQ(Sample(m, "kueue_admission_wait_time_seconds_count{cluster_queue=\"team-a\"}"), 4);
  // b-0 waited 1.5 s on the injected clock, from its creation, for reclaim.
  EXPECT_EQ(Sample(m, "kueue_admission_wait_time_seconds_sum{cluster_queue=\"team-b\"}"), 1.5);
  EXPECT_EQ(Sample(m, "artel_reclaim_latency_seconds_count{cluster_queue=\"team-b\"}"), 1);
  EXPECT_EQ(Sample(m, "artel_reclaim_latency_seconds_sum{cluster_queue=\"team-b\"}"), 1.5);
  EXPECT_EQ(Sample(m, "artel_scheduler_cycles_total"), 3);
  EXPECT_EQ(Sample(m, "artel_scheduler_cycle_duration_seconds_count"), 3);
  EXPECT_EQ(Sample(m, "kueue_admitted_active_workloads{cluster_queue=\"team-a\"}"), 2);
  EXPECT_EQ(Sample(m, "kueue_reserving_active_workloads{cluster_queue=\"team-b\"}"), 1);
  EXPECT_EQ(
      Sample(m,
             "kueue_cluster_queue_resource_usage{cohort=\"shared\",cluster_queue=\"team-b\",flavor=\"a100\","
             "resource=\"nvidia.com/gpu\"}"),
      2);
}

TEST(ControlLoopTest, TheBackendsOwnEvictionsAreNotReported) {
  Fixture f;
  f.backend.to_submit.push_back(Job("team-a", "a-0", 1));
  f.loop.RunOnce();
  ASSERT_EQ(f.backend.admitted.size(), 1u);
  f.backend.to_deactivate.push_back("team-a/a-0");  // e.g. a cancel holding the quota while pods stop
  f.clock += 10;
  const uint64_t seq = f.loop.LatestEventSeq();
  f.loop.RunOnce();
  EXPECT_EQ(f.backend.skip_asked, 1);
  EXPECT_TRUE(f.backend.evicted.empty());
  EXPECT_EQ(f.loop.LatestEventSeq(), seq);  // no Evicted event
  const std::string m = f.loop.MetricsText();
  EXPECT_EQ(m.find("kueue_evicted_workloads_total{"), std::string::npos) << m;
}

TEST(ControlLoopTest, WakesAreCoalescedAndNoPassRunsWithoutAChangeExceptOnTheInterval) {
  Fixture f;
  f.backend.to_submit.push_back(Job("team-a", "a-0", 1));
  // The first step is a full pass (no pass ever ran); the next one, without
  // a change and before the interval, polls the backend but does not
  // schedule.
  EXPECT_TRUE(f.loop.Step());
  EXPECT_EQ(f.backend.admitted.size(), 1u);
  EXPECT_FALSE(f.loop.Step());
  EXPECT_EQ(f.loop.cycles(), 1u);
  // A burst of wakes is one pass.
  f.backend.to_submit.push_back(Job("team-a", "a-1", 1));
  f.loop.Wake();
  f.loop.Wake();
  f.loop.Wake();
  EXPECT_TRUE(f.loop.Step());
  EXPECT_FALSE(f.loop.Step());
  EXPECT_EQ(f.loop.cycles(), 2u);
  EXPECT_EQ(f.backend.admitted.size(), 2u);
  // No change: no pass until schedule_interval_ms has passed on the clock.
  int polls = 0;
  for (const auto& c : f.backend.calls) polls += c == "Poll";
  f.clock += 999;
  EXPECT_FALSE(f.loop.Step());
  EXPECT_FALSE(f.loop.Step());
  f.clock += 1;
  EXPECT_TRUE(f.loop.Step());
  EXPECT_FALSE(f.loop.Step());
  EXPECT_EQ(f.loop.cycles(), 3u);
  int polls_after = 0;
  for (const auto& c : f.backend.calls) polls_after += c == "Poll";
  EXPECT_EQ(polls_after - polls, 4);  // every step polls the backend
  // A change that Poll reports runs a pass at once, not a full one.
  f.backend.poll_changed = true;
  EXPECT_TRUE(f.loop.Step());
  EXPECT_EQ(f.backend.calls[f.backend.calls.size() - 2], "Done");
  EXPECT_EQ(f.loop.cycles(), 4u);
}

TEST(ControlLoopTest, TheLoopThreadRunsAPassSoonAfterAWake) {
  Fixture f;
  f.loop.Start();
  {
    std::lock_guard<std::mutex> l(f.loop.mu());
    ASSERT_TRUE(f.loop.engine().Submit(Job("team-a", "a-0", 1), f.clock).ok());
  }
  f.loop.Wake();
  {
    std::unique_lock<std::mutex> l(f.backend.m);
    ASSERT_TRUE(
        f.backend.cv.wait_for(l, std::chrono::seconds(10), [&] { return !f.backend.admitted.empty(); }));
  }
  f.loop.Stop();
  EXPECT_EQ(f.backend.admitted_count(), 1u);
}

TEST(ControlLoopTest, StopEndsWatchWaits) {
  Fixture f;
  std::thread t([&] {
    uint64_t next = 0;
    auto ev = f.loop.EventsAfter(f.loop.LatestEventSeq(), 60'000, std::nullopt, &next,
                                 server::Principal{"admin", server::Role::kAdmin, {}});
    EXPECT_TRUE(ev.empty());
  });
  auto t0 = std::chrono::steady_clock::now();
  f.loop.Stop();
  t.join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(30));
}

TEST(ControlLoopTest, ViewsAndEventsAreRedactedForTenants) {
  Fixture f;
  for (int i = 0; i < 4; ++i) f.backend.to_submit.push_back(Job("team-a", "a-" + std::to_string(i), 1));
  f.loop.RunOnce();
  f.backend.to_submit.push_back(Job("team-b", "b-0", 2));
  f.backend.to_submit.push_back(Job("team-b", "b-1", 4));  // never fits
  f.loop.RunOnce();

  Json cqs = f.loop.ClusterQueuesJson();
  ASSERT_EQ(cqs["items"].size(), 2u);
  EXPECT_EQ(cqs["items"][0]["name"], "team-a");
  EXPECT_EQ(cqs["items"][0]["admittedWorkloads"], 4);  // two of them evicting
  EXPECT_EQ(cqs["items"][1]["pendingWorkloads"], 2);
  Json lqs = f.loop.LocalQueuesJson(std::set<std::string>{"team-b"});
  ASSERT_EQ(lqs["items"].size(), 1u);
  EXPECT_EQ(lqs["items"][0]["namespace"], "team-b");
  Json cohorts = f.loop.CohortsJson();
  ASSERT_EQ(cohorts["items"].size(), 1u);
  EXPECT_EQ(cohorts["items"][0]["members"], Json::array({"team-a", "team-b"}));

  // A team-a tenant sees its evictions, not who preempted them.
  const server::Principal tenant{"alice", server::Role::kTenant, {"team-a"}};
  uint64_t next = 0;
  std::vector<Json> ev = f.loop.EventsAfter(0, 0, std::set<std::string>{"team-a"}, &next, tenant);
  int evicted = 0;
  for (const Json& e : ev) {
    EXPECT_EQ(e.value("workload", "").rfind("team-a/", 0), 0u) << e.dump();
    if (e.value("type", "") == "Evicted") {
      ++evicted;
      EXPECT_FALSE(e.contains("preemptor")) << e.dump();
      EXPECT_EQ(e.value("preemptorClusterQueue", ""), "team-b");
    }
  }
  EXPECT_EQ(evicted, 2);
  EXPECT_EQ(next, f.loop.LatestEventSeq());

  // Why, for the one that can never fit.
  std::lock_guard<std::mutex> l(f.loop.mu());
  auto red = server::Redactor(
      server::Principal{"bob", server::Role::kTenant, {"team-b"}},
      [](const std::string&) { return std::string(); }, [](std::string_view) { return true; });
  auto why = f.loop.WhyLocked("team-b/b-1", red);
  ASSERT_TRUE(why.ok()) << why.status().ToString();
  EXPECT_NE((*why)["reason"], "None");
  EXPECT_FALSE((*why).value("message", "").empty());
}

}  // namespace
}  // namespace artel::loop
