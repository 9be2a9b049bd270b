// Behavioural tests of the Engine on small hand-built configurations.
#include "core/engine.h"

#include <gtest/gtest.h>

namespace artel::core {
namespace {

constexpr Amount kGpu = 1000;

ClusterQueueSpec Cq(const std::string& name, const std::string& cohort, Amount nominal,
                    std::optional<Amount> borrowing = std::nullopt) {
  ClusterQueueSpec q;
  q.name = name;
  q.cohort = cohort;
  q.namespace_selector = LabelSelector{};
  ResourceGroupSpec g;
  g.covered_resources = {"nvidia.com/gpu"};
  FlavorQuotasSpec f;
  f.flavor = "a100";
  f.resources.push_back({"nvidia.com/gpu", nominal, borrowing, std::nullopt});
  g.flavors.push_back(f);
  q.resource_groups.push_back(g);
  q.preemption.reclaim_within_cohort = ReclaimWithinCohortPolicy::kAny;
  q.preemption.within_cluster_queue = WithinClusterQueuePolicy::kLowerPriority;
  return q;
}

Config TwoTeams() {
  Config c;
  c.flavors.push_back({"a100"});
  c.cluster_queues.push_back(Cq("team-a", "shared", 2 * kGpu));
  c.cluster_queues.push_back(Cq("team-b", "shared", 2 * kGpu));
  c.local_queues.push_back({"team-a", "default", "team-a"});
  c.local_queues.push_back({"team-b", "default", "team-b"});
  return c;
}

WorkloadSpec Job(const std::string& ns, const std::string& name, int gpus, int priority = 0) {
  WorkloadSpec w;
  w.ns = ns;
  w.name = name;
  w.queue = "default";
  w.priority = priority;
  PodSetSpec ps;
  ps.count = 1;
  ps.requests["nvidia.com/gpu"] = gpus * kGpu;
  w.pod_sets.push_back(ps);
  return w;
}

// Runs cycles, completing evictions at once, until nothing changes.
void Settle(Engine& e, Time now) {
  for (int i = 0; i < 100; ++i) {
    CycleResult r = e.Schedule(now);
    for (const auto& ev : r.evictions) ASSERT_TRUE(e.CompleteEviction(ev.victim, now).ok());
    if (r.admitted.empty() && r.evictions.empty()) return;
  }
  FAIL() << "did not settle";
}

TEST(EngineTest, APendingReasonIsBuiltOnlyWhenTheWorkloadIsRead) {
  // Memory per pending workload (issue 17 §3): the engine keeps a pending
  // workload's reason as its kind until someone reads the workload.
  Engine e;
  ASSERT_TRUE(e.Configure(TwoTeams()).ok());
  Result<WorkloadId> big = e.Submit(Job("team-a", "big", 8), 0);  // more than the cohort has
  ASSERT_TRUE(big.ok());
  Settle(e, 0);
  EXPECT_EQ(e.PendingKind(*big), PendingReason::Kind::kInsufficientQuota);
  std::vector<const WorkloadInfo*> unread = e.Workloads(/*with_reasons=*/false);
  ASSERT_EQ(unread.size(), 1u);
  EXPECT_FALSE(unread[0]->pending.boxed()) << "a scan without reasons must not build them";
  const WorkloadInfo* read = e.Get(*big);
  ASSERT_NE(read, nullptr);
  EXPECT_EQ(read->pending->kind, PendingReason::Kind::kInsufficientQuota);
  EXPECT_EQ(read->pending->cluster_queue, "team-a");
  EXPECT_EQ(read->pending->resource, "nvidia.com/gpu");
  EXPECT_NE(read->pending->message.find("team-a/big"), std::string::npos) << read->pending->message;
  // Admitted: no reason, and PendingKind says so.
  Result<WorkloadId> small = e.Submit(Job("team-b", "small", 1), 1);
  ASSERT_TRUE(small.ok());
  Settle(e, 1);
  EXPECT_EQ(e.PendingKind(*small), PendingReason::Kind::kNone);
  EXPECT_FALSE(e.Get(*small)->pending.boxed());
  EXPECT_EQ(e.Get(*small)->pending->kind, PendingReason::Kind::kNone);
}

TEST(EngineTest, WorkloadsWithEqualPodSetsShareThem) {
  // Memory per pending workload (issue 17 §3): workloads submitted with
  // equal pod sets share one array, each submitted as its own copy.
  Engine e;
  ASSERT_TRUE(e.Configure(TwoTeams()).ok());
  Result<WorkloadId> a = e.Submit(Job("team-a", "a", 1), 0);
  Result<WorkloadId> b = e.Submit(Job("team-b", "b", 1), 1);  // equal, built separately
  Result<WorkloadId> c = e.Submit(Job("team-a", "c", 2), 2);  // differs
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  const WorkloadInfo* ia = e.Get(*a);
  const WorkloadInfo* ib = e.Get(*b);
  const WorkloadInfo* ic = e.Get(*c);
  EXPECT_TRUE(ia->spec.pod_sets.SharesWith(ib->spec.pod_sets));
  EXPECT_FALSE(ia->spec.pod_sets.SharesWith(ic->spec.pod_sets));
  EXPECT_EQ(ic->spec.pod_sets[0].requests.at("nvidia.com/gpu"), 2 * kGpu);
  // A caller's copy that it changes leaves the engine's workloads alone.
  WorkloadInfo copy = *ia;
  copy.spec.pod_sets.mut(0).requests["nvidia.com/gpu"] = 7 * kGpu;
  EXPECT_EQ(e.Get(*a)->spec.pod_sets[0].requests.at("nvidia.com/gpu"), kGpu);
  EXPECT_EQ(e.Get(*b)->spec.pod_sets[0].requests.at("nvidia.com/gpu"), kGpu);
  // Equal in what the hash reads but not in full: not shared.
  WorkloadSpec d = Job("team-b", "d", 1);
  d.pod_sets.mut(0).tolerations.push_back({"gpu", "Exists", "", ""});
  Result<WorkloadId> did = e.Submit(d, 3);
  ASSERT_TRUE(did.ok());
  WorkloadSpec f = Job("team-b", "f", 1);
  f.pod_sets.mut(0).tolerations.push_back({"cpu", "Exists", "", ""});
  Result<WorkloadId> fid = e.Submit(f, 4);
  ASSERT_TRUE(fid.ok());
  EXPECT_FALSE(e.Get(*did)->spec.pod_sets.SharesWith(e.Get(*fid)->spec.pod_sets));
  EXPECT_EQ(e.Get(*fid)->spec.pod_sets[0].tolerations[0].key, "cpu");
  // The shared workloads are scheduled as if they had their own: both fit.
  Settle(e, 5);
  EXPECT_EQ(e.Get(*a)->state, WorkloadState::kAdmitted);
  EXPECT_EQ(e.Get(*b)->state, WorkloadState::kAdmitted);
}

TEST(EngineTest, StrictFifoReasonsAreWrittenWhenRead) {
  // A Schedule call costs nothing per workload queued behind a StrictFIFO
  // head (issue 17 §2): those read as BlockedByStrictFIFO behind the head
  // of the last call, a reason built when the workload is read.
  Config c = TwoTeams();
  c.cluster_queues[0].queueing_strategy = QueueingStrategy::kStrictFIFO;
  c.cluster_queues[0].cohort.clear();  // no borrowing: the head does not fit
  Engine e;
  ASSERT_TRUE(e.Configure(c).ok());
  Result<WorkloadId> big = e.Submit(Job("team-a", "big", 3, 5), 0);  // more than team-a has
  ASSERT_TRUE(big.ok());
  std::vector<WorkloadId> small;
  for (int i = 0; i < 3; ++i) {
    Result<WorkloadId> id = e.Submit(Job("team-a", "s" + std::to_string(i), 1), 1 + i);
    ASSERT_TRUE(id.ok());
    small.push_back(*id);
  }
  Settle(e, 10);
  EXPECT_EQ(e.AdmittedCount(), 0u);  // StrictFIFO: nothing passes the head
  for (const WorkloadInfo* w : e.Workloads(/*with_reasons=*/false)) {
    if (w->id != *big) {
      EXPECT_FALSE(w->pending.boxed()) << w->key << ": no reason built by the call";
    }
  }
  EXPECT_EQ(e.PendingKind(*big), PendingReason::Kind::kInsufficientQuota);
  EXPECT_EQ(e.PendingKind(small[1]), PendingReason::Kind::kBlockedByStrictFIFO);
  const WorkloadInfo* s0 = e.Get(small[0]);
  ASSERT_NE(s0, nullptr);
  EXPECT_EQ(s0->pending->kind, PendingReason::Kind::kBlockedByStrictFIFO);
  EXPECT_EQ(s0->pending->cluster_queue, "team-a");
  EXPECT_EQ(s0->pending->message, "team-a/s0: behind the StrictFIFO head team-a/big of ClusterQueue team-a");
  // A second read keeps the reason it built (a reference into it stays valid).
  const std::string* message = &s0->pending->message;
  EXPECT_EQ(&e.Get(small[0])->pending->message, message);
  // Submitted after the call: not tried yet, whatever is ahead of it.
  Result<WorkloadId> late = e.Submit(Job("team-a", "late", 1), 11);
  ASSERT_TRUE(late.ok());
  EXPECT_EQ(e.PendingKind(*late), PendingReason::Kind::kNotYetTried);
  // The head leaves: after the next call, the first small one is admitted
  // and the others read as behind the new head.
  ASSERT_TRUE(e.Cancel("team-a/big", 12).ok());
  Settle(e, 12);
  EXPECT_EQ(e.Get(small[0])->state, WorkloadState::kAdmitted);
  EXPECT_EQ(e.Get(small[1])->state, WorkloadState::kAdmitted);
  // team-a's 2 GPUs are taken: s2 is the head now, late behind it.
  EXPECT_EQ(e.PendingKind(small[2]), PendingReason::Kind::kPreemptionNoCandidates);
  EXPECT_EQ(e.Get(*late)->pending->message,
            "team-a/late: behind the StrictFIFO head team-a/s2 of ClusterQueue team-a");
}

TEST(EngineTest, BorrowsIdleQuotaThenOwnerReclaims) {
  Engine e;
  ASSERT_TRUE(e.Configure(TwoTeams()).ok());
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(e.Submit(Job("team-a", "a-" + std::to_string(i), 1), 0).ok());
  Settle(e, 0);
  EXPECT_EQ(e.AdmittedCount(), 4u);  // two of them borrow team-b's idle GPUs
  ASSERT_TRUE(e.Submit(Job("team-b", "b-0", 2), 10).ok());
  CycleResult r = e.Schedule(10);
  ASSERT_EQ(r.evictions.size(), 2u);
  for (const auto& ev : r.evictions) {
    EXPECT_EQ(ev.reason, EvictionReason::kInCohortReclamation);
    EXPECT_EQ(ev.preemptor, "team-b/b-0");
  }
  EXPECT_EQ(e.Find("team-b/b-0")->pending->kind, PendingReason::Kind::kWaitingForEvictions);
  for (const auto& ev : r.evictions) ASSERT_TRUE(e.CompleteEviction(ev.victim, 11).ok());
  Settle(e, 11);
  EXPECT_EQ(e.Find("team-b/b-0")->state, WorkloadState::kAdmitted);
  EXPECT_EQ(e.AdmittedCount(), 3u);
  EXPECT_EQ(e.PendingCount(), 2u);
}

TEST(EngineTest, AboveQuotaStaysPendingWithReason) {
  Engine e;
  ASSERT_TRUE(e.Configure(TwoTeams()).ok());
  ASSERT_TRUE(e.Submit(Job("team-a", "big", 5), 0).ok());
  Settle(e, 0);
  const WorkloadInfo* w = e.Find("team-a/big");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->state, WorkloadState::kPending);
  EXPECT_EQ(w->pending->kind, PendingReason::Kind::kInsufficientQuota);
  EXPECT_EQ(w->pending->resource, "nvidia.com/gpu");
  EXPECT_EQ(w->pending->flavor, "a100");
  EXPECT_EQ(w->pending->requested, 5 * kGpu);
  EXPECT_EQ(w->pending->available, 4 * kGpu);
  EXPECT_EQ(w->pending->missing, kGpu);
  EXPECT_FALSE(w->pending->message.empty());
}

TEST(EngineTest, PriorityPreemptsWithinQueue) {
  Engine e;
  Config c = TwoTeams();
  c.cluster_queues[0].cohort = "";
  c.cluster_queues[1].cohort = "";
  ASSERT_TRUE(e.Configure(c).ok());
  ASSERT_TRUE(e.Submit(Job("team-a", "low", 2, 0), 0).ok());
  Settle(e, 0);
  ASSERT_TRUE(e.Submit(Job("team-a", "high", 2, 1000), 1).ok());
  CycleResult r = e.Schedule(1);
  ASSERT_EQ(r.evictions.size(), 1u);
  EXPECT_EQ(r.evictions[0].victim, "team-a/low");
  EXPECT_EQ(r.evictions[0].reason, EvictionReason::kInClusterQueue);
}

TEST(EngineTest, OneHeadCyclesReachSameOutcome) {
  for (bool multi : {true, false}) {
    EngineOptions o;
    o.multi_admission = multi;
    Engine e(o);
    ASSERT_TRUE(e.Configure(TwoTeams()).ok());
    for (int i = 0; i < 6; ++i)
      ASSERT_TRUE(e.Submit(Job("team-a", "a-" + std::to_string(i), 1, i % 3), i).ok());
    Settle(e, 10);
    EXPECT_EQ(e.AdmittedCount(), 4u) << multi;
  }
}

}  // namespace
}  // namespace artel::core

namespace artel::core {
namespace {

TEST(EngineWhyTest, NamesWhatWouldHaveToBePreempted) {
  Engine e;
  Config c = TwoTeams();
  c.cluster_queues[1].preemption.reclaim_within_cohort = ReclaimWithinCohortPolicy::kNever;
  ASSERT_TRUE(e.Configure(c).ok());
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(e.Submit(Job("team-a", "a-" + std::to_string(i), 1), i).ok());
  Settle(e, 5);
  ASSERT_TRUE(e.Submit(Job("team-b", "b-0", 1), 10).ok());
  Settle(e, 10);
  auto why = e.Why("team-b/b-0");
  ASSERT_TRUE(why.ok());
  EXPECT_EQ(why->kind, PendingReason::Kind::kPreemptionNoCandidates);
  ASSERT_EQ(why->would_preempt.size(), 1u);
  EXPECT_EQ(why->would_preempt[0].rfind("team-a/", 0), 0u);
  EXPECT_NE(why->message.find("would fit if these were preempted"), std::string::npos);
  EXPECT_FALSE(e.Why("team-b/nope").ok());
}

}  // namespace
}  // namespace artel::core

namespace artel::core {
namespace {

TEST(EngineRestoreTest, RestoredAdmissionHoldsQuota) {
  Engine e;
  ASSERT_TRUE(e.Configure(TwoTeams()).ok());
  ASSERT_TRUE(e.Submit(Job("team-a", "a-0", 3), 0).ok());
  PodSetAssignment ps;
  ps.name = "main";
  ps.count = 1;
  ps.flavors["nvidia.com/gpu"] = "a100";
  ASSERT_TRUE(e.Restore("team-a/a-0", "team-a", {ps}, 0).ok());
  EXPECT_EQ(e.Find("team-a/a-0")->state, WorkloadState::kAdmitted);
  ASSERT_TRUE(e.Submit(Job("team-b", "b-0", 2), 1).ok());
  Settle(e, 1);
  // 3 + 2 > 4: b-0 reclaims its nominal 2 by evicting a-0 (which borrows 1).
  EXPECT_EQ(e.Find("team-b/b-0")->state, WorkloadState::kAdmitted);
  EXPECT_EQ(e.Find("team-a/a-0")->state, WorkloadState::kPending);
  EXPECT_FALSE(e.Restore("team-a/a-0", "nope", {ps}, 0).ok());
}

// Admitted at the same instant, the later admission is evicted first; the
// admission order comes back with Restore (arteld journals it), not from the
// order of the Restore calls or the uid.
TEST(EngineRestoreTest, RestoredAdmissionOrderBreaksEqualAdmissionTimes) {
  Engine e;
  ASSERT_TRUE(e.Configure(TwoTeams()).ok());
  PodSetAssignment ps;
  ps.name = "main";
  ps.count = 1;
  ps.flavors["nvidia.com/gpu"] = "a100";
  const std::pair<const char*, uint64_t> restored[] = {{"a-1", 1}, {"a-2", 3}, {"a-3", 2}};
  for (const auto& [name, seq] : restored) {
    ASSERT_TRUE(e.Submit(Job("team-a", name, 1), 0).ok());
    ASSERT_TRUE(e.Restore(std::string("team-a/") + name, "team-a", {ps}, 0, nullptr, seq).ok());
    EXPECT_EQ(e.Find(std::string("team-a/") + name)->admission_seq, seq);
  }
  // team-a holds 3 of 4 GPUs; team-b's 2 reclaim one: a-2, admitted last.
  ASSERT_TRUE(e.Submit(Job("team-b", "b-0", 2), 1).ok());
  Settle(e, 1);
  EXPECT_EQ(e.Find("team-b/b-0")->state, WorkloadState::kAdmitted);
  EXPECT_EQ(e.Find("team-a/a-2")->state, WorkloadState::kPending);
  EXPECT_EQ(e.Find("team-a/a-1")->state, WorkloadState::kAdmitted);
  EXPECT_EQ(e.Find("team-a/a-3")->state, WorkloadState::kAdmitted);
  // Later admissions number after the restored ones.
  EXPECT_GT(e.Find("team-b/b-0")->admission_seq, 3u);
}

}  // namespace
}  // namespace artel::core

// Workload handles, Forget, parking in place, and reasons built on read.
namespace artel::core {
namespace {

WorkloadId MustSubmit(Engine& e, WorkloadSpec spec, Time now) {
  Result<WorkloadId> id = e.Submit(std::move(spec), now);
  EXPECT_TRUE(id.ok()) << id.status().ToString();
  return id.ok() ? *id : kNoWorkload;
}

TEST(EngineHandleTest, IdsMatchKeysInResultsAndCalls) {
  Engine e;
  ASSERT_TRUE(e.Configure(TwoTeams()).ok());
  std::vector<WorkloadId> a;
  for (int i = 0; i < 4; ++i) a.push_back(MustSubmit(e, Job("team-a", "a-" + std::to_string(i), 1), 0));
  CycleResult r = e.Schedule(0);
  ASSERT_EQ(r.admitted.size(), 4u);
  ASSERT_EQ(r.admitted_ids.size(), r.admitted.size());
  for (size_t i = 0; i < r.admitted.size(); ++i) {
    ASSERT_NE(e.Get(r.admitted_ids[i]), nullptr);
    EXPECT_EQ(e.Get(r.admitted_ids[i])->key, r.admitted[i]);
    EXPECT_EQ(e.Find(r.admitted[i])->id, r.admitted_ids[i]);
  }
  WorkloadId b = MustSubmit(e, Job("team-b", "b-0", 2), 1);
  r = e.Schedule(1);
  ASSERT_EQ(r.evictions.size(), 2u);
  for (const Eviction& ev : r.evictions) {
    EXPECT_EQ(ev.preemptor_id, b);
    EXPECT_EQ(e.Get(ev.victim_id)->key, ev.victim);
    EXPECT_TRUE(e.CompleteEviction(ev.victim_id, 2).ok());
    EXPECT_EQ(e.Get(ev.victim_id)->state, WorkloadState::kPending);
    EXPECT_EQ(e.Get(ev.victim_id)->pending->message, "requeued after eviction");
    // Completing twice is a precondition failure, not a crash.
    EXPECT_EQ(e.CompleteEviction(ev.victim_id, 2).code(), StatusCode::kFailedPrecondition);
  }
  r = e.Schedule(2);
  ASSERT_EQ(r.admitted_ids, std::vector<WorkloadId>{b});
  EXPECT_TRUE(e.Finish(b, 3).ok());
  EXPECT_EQ(e.Get(b)->state, WorkloadState::kFinished);
  EXPECT_EQ(e.Finish(b, 3).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(e.Finish(WorkloadId{999}, 3).code(), StatusCode::kNotFound);
  EXPECT_EQ(e.Get(WorkloadId{999}), nullptr);
}

TEST(EngineForgetTest, FreesTheKeyAndReusesTheSlot) {
  Engine e;
  ASSERT_TRUE(e.Configure(TwoTeams()).ok());
  WorkloadId x = MustSubmit(e, Job("team-a", "x", 1), 0);
  WorkloadId y = MustSubmit(e, Job("team-a", "y", 1), 0);
  EXPECT_EQ(e.Forget(x).code(), StatusCode::kFailedPrecondition);  // still pending
  Settle(e, 0);
  ASSERT_TRUE(e.Finish(x, 1).ok());
  ASSERT_TRUE(e.Forget(x).ok());
  EXPECT_EQ(e.Find("team-a/x"), nullptr);
  EXPECT_EQ(e.Get(x), nullptr);
  EXPECT_EQ(e.Forget(x).code(), StatusCode::kNotFound);
  EXPECT_EQ(e.Finish(x, 1).code(), StatusCode::kNotFound);
  // The key may come back; the free slot is reused.
  WorkloadId x2 = MustSubmit(e, Job("team-a", "x", 1), 2);
  EXPECT_EQ(x2, x);
  EXPECT_EQ(e.Get(x2)->key, "team-a/x");
  EXPECT_EQ(e.Get(x2)->state, WorkloadState::kPending);
  EXPECT_EQ(e.Get(x2)->pending->kind, PendingReason::Kind::kNotYetTried);
  EXPECT_EQ(e.Get(x2)->pending->message, "waiting for the next scheduling cycle");
  // Workloads() stays in submission order although x2 sits in an older slot.
  std::vector<std::string> keys;
  for (const WorkloadInfo* w : e.Workloads()) keys.push_back(w->key);
  EXPECT_EQ(keys, (std::vector<std::string>{"team-a/y", "team-a/x"}));
  Settle(e, 2);
  EXPECT_EQ(e.Get(x2)->state, WorkloadState::kAdmitted);
  EXPECT_EQ(e.Get(y)->state, WorkloadState::kAdmitted);
}

TEST(EngineForgetTest, CancelledWorkloadCanBeForgotten) {
  Engine e;
  ASSERT_TRUE(e.Configure(TwoTeams()).ok());
  ASSERT_TRUE(e.Submit(Job("team-a", "big", 9), 0).ok());
  Settle(e, 0);  // parked: above what the cohort can ever give
  WorkloadId big = e.Find("team-a/big")->id;
  ASSERT_TRUE(e.Cancel("team-a/big", 1).ok());
  ASSERT_TRUE(e.Forget(big).ok());
  WorkloadId next = MustSubmit(e, Job("team-b", "small", 1), 2);
  EXPECT_EQ(next, big);
  Settle(e, 2);
  EXPECT_EQ(e.Get(next)->state, WorkloadState::kAdmitted);
  EXPECT_EQ(e.PendingCount(), 0u);
}

Config TwoCohorts() {
  Config c;
  c.flavors.push_back({"a100"});
  c.cluster_queues.push_back(Cq("team-a", "left", 2 * kGpu));
  c.cluster_queues.push_back(Cq("team-b", "right", 2 * kGpu));
  c.local_queues.push_back({"team-a", "default", "team-a"});
  c.local_queues.push_back({"team-b", "default", "team-b"});
  return c;
}

// A workload that did not fit waits until quota is released in its own
// cohort tree: a release elsewhere does not make it a head again (no
// decision), a release in its tree does.
TEST(EngineParkTest, OnlyAReleaseInItsTreeRequeuesAParkedWorkload) {
  Engine e;
  ASSERT_TRUE(e.Configure(TwoCohorts()).ok());
  WorkloadId a0 = MustSubmit(e, Job("team-a", "a-0", 2), 0);
  WorkloadId b0 = MustSubmit(e, Job("team-b", "b-0", 2), 0);
  Settle(e, 0);
  WorkloadId a1 = MustSubmit(e, Job("team-a", "a-1", 1), 1);
  CycleResult r = e.Schedule(1);
  EXPECT_EQ(r.decisions, 1);  // a-1 tried, parked
  EXPECT_EQ(e.Get(a1)->pending->kind, PendingReason::Kind::kPreemptionNoCandidates);
  r = e.Schedule(2);
  EXPECT_EQ(r.decisions, 0);  // nothing changed: a-1 is not retried
  ASSERT_TRUE(e.Finish(b0, 3).ok());
  r = e.Schedule(3);
  EXPECT_EQ(r.decisions, 0);  // released in the other tree
  ASSERT_TRUE(e.Finish(a0, 4).ok());
  r = e.Schedule(4);
  EXPECT_EQ(r.decisions, 1);
  EXPECT_EQ(r.admitted_ids, std::vector<WorkloadId>{a1});
}

// A new workload ahead of parked ones in the queue order is a head at once;
// the parked ones behind it stay parked.
TEST(EngineParkTest, NewHigherPriorityWorkloadIsTriedBeforeParkedOnes) {
  Engine e;
  ASSERT_TRUE(e.Configure(TwoCohorts()).ok());
  WorkloadId a0 = MustSubmit(e, Job("team-a", "a-0", 1), 0);
  Settle(e, 0);
  MustSubmit(e, Job("team-a", "low-big", 2), 1);
  MustSubmit(e, Job("team-a", "low-big2", 2), 1);
  CycleResult r = e.Schedule(1);
  EXPECT_EQ(r.decisions, 2);  // both tried one after the other, both parked
  WorkloadId hi = MustSubmit(e, Job("team-a", "high-small", 1, /*priority=*/10), 2);
  r = e.Schedule(2);
  EXPECT_EQ(r.decisions, 1);
  EXPECT_EQ(r.admitted_ids, std::vector<WorkloadId>{hi});
  ASSERT_TRUE(e.Finish(a0, 3).ok());
  ASSERT_TRUE(e.Finish(hi, 3).ok());
  r = e.Schedule(3);
  ASSERT_EQ(r.admitted.size(), 1u);
  EXPECT_EQ(r.admitted[0], "team-a/low-big");
}

// A deep queue that cannot fit is parked in bulk: a release in the cohort
// costs a few cycles, not one per queued workload, and the admissions,
// decisions and pending reasons are those of trying each in turn
// (EngineOptions::bulk_park = false).
TEST(EngineParkTest, DeepQueueThatCannotFitIsParkedInBulk) {
  Config c;
  c.flavors.push_back({"a100"});
  for (const char* team : {"team-a", "team-b"}) {
    ClusterQueueSpec q = Cq(team, "shared", 4 * kGpu);
    q.preemption.within_cluster_queue = WithinClusterQueuePolicy::kNever;
    c.cluster_queues.push_back(q);
    c.local_queues.push_back({team, "default", team});
  }
  EngineOptions one_by_one;
  one_by_one.bulk_park = false;
  Engine e, ref(one_by_one);
  constexpr int kDeep = 300;
  for (Engine* x : {&e, &ref}) {
    ASSERT_TRUE(x->Configure(c).ok());
    MustSubmit(*x, Job("team-a", "a-run", 4), 0);
    MustSubmit(*x, Job("team-b", "b-run", 4), 0);
    Settle(*x, 0);
    for (int i = 0; i < kDeep; ++i) {
      MustSubmit(*x, Job("team-a", "a-" + std::to_string(i), 3), 1);
      MustSubmit(*x, Job("team-b", "b-" + std::to_string(i), 3), 1);
    }
  }
  CycleResult r = e.Schedule(1), rr = ref.Schedule(1);
  EXPECT_EQ(r.decisions, 2 * kDeep);
  EXPECT_EQ(rr.decisions, 2 * kDeep);
  EXPECT_LE(r.rounds, 2);
  EXPECT_GE(rr.rounds, kDeep);
  // team-b's release: one 3-GPU job of team-b fits, then nothing does.
  for (Engine* x : {&e, &ref}) ASSERT_TRUE(x->Finish("team-b/b-run", 2).ok());
  r = e.Schedule(2);
  rr = ref.Schedule(2);
  EXPECT_EQ(r.admitted, rr.admitted);
  EXPECT_EQ(r.admitted, std::vector<std::string>{"team-b/b-0"});
  EXPECT_EQ(r.decisions, rr.decisions);
  EXPECT_LE(r.rounds, 3);
  EXPECT_GE(rr.rounds, kDeep - 1);
  EXPECT_EQ(e.PendingCount(), ref.PendingCount());
  for (const std::string key : {"team-a/a-0", "team-a/a-299", "team-b/b-1", "team-b/b-299"}) {
    const WorkloadInfo* w = e.Find(key);
    const WorkloadInfo* v = ref.Find(key);
    ASSERT_NE(w, nullptr);
    ASSERT_NE(v, nullptr);
    EXPECT_EQ(w->state, WorkloadState::kPending) << key;
    EXPECT_EQ(w->pending->kind, v->pending->kind) << key;
    EXPECT_EQ(w->pending->message, v->pending->message) << key;
  }
}

// The only ClusterQueue of its tree with queued work: the heads ahead of the
// first that can fit are parked one by one without an examination, so the
// small job deep in the queue is admitted within a few cycles.
TEST(EngineParkTest, HeadsThatCannotFitAreSkippedInTheOnlyActiveQueue) {
  Config c;
  c.flavors.push_back({"a100"});
  for (const char* team : {"team-a", "team-b"}) {
    ClusterQueueSpec q = Cq(team, "shared", 4 * kGpu);
    q.preemption.within_cluster_queue = WithinClusterQueuePolicy::kNever;
    c.cluster_queues.push_back(q);
    c.local_queues.push_back({team, "default", team});
  }
  EngineOptions one_by_one;
  one_by_one.bulk_park = false;
  Engine e, ref(one_by_one);
  constexpr int kDeep = 300;
  for (Engine* x : {&e, &ref}) {
    ASSERT_TRUE(x->Configure(c).ok());
    MustSubmit(*x, Job("team-a", "a-run", 4), 0);
    MustSubmit(*x, Job("team-b", "b-run", 3), 0);
    Settle(*x, 0);
    for (int i = 0; i < kDeep; ++i) MustSubmit(*x, Job("team-a", "a-" + std::to_string(i), 2), 1);
    MustSubmit(*x, Job("team-a", "a-small", 1), 2);
  }
  CycleResult r = e.Schedule(2), rr = ref.Schedule(2);
  EXPECT_EQ(r.admitted, rr.admitted);
  EXPECT_EQ(r.admitted, std::vector<std::string>{"team-a/a-small"});
  EXPECT_EQ(r.decisions, rr.decisions);
  EXPECT_LE(r.rounds, 3);
  EXPECT_GE(rr.rounds, kDeep);
  for (const std::string key : {"team-a/a-0", "team-a/a-299"}) {
    const WorkloadInfo* w = e.Find(key);
    const WorkloadInfo* v = ref.Find(key);
    ASSERT_NE(w, nullptr);
    ASSERT_NE(v, nullptr);
    // The kind is the same; the amounts are read from the state now (a-small
    // took the last free GPU since), not from the cycle that would have tried it.
    EXPECT_EQ(w->pending->kind, v->pending->kind) << key;
    EXPECT_EQ(w->pending->resource, v->pending->resource) << key;
  }
}

TEST(EngineReasonTest, NoFlavorKeepsTheDetail) {
  Config c = TwoTeams();
  c.flavors[0].node_taints.push_back({"dedicated", "ml", "NoSchedule"});
  Engine e;
  ASSERT_TRUE(e.Configure(c).ok());
  WorkloadId id = MustSubmit(e, Job("team-a", "a-0", 1), 0);
  Settle(e, 0);
  const WorkloadInfo* w = e.Get(id);
  EXPECT_EQ(w->pending->kind, PendingReason::Kind::kNoFlavor);
  EXPECT_EQ(w->pending->pod_set, "main");
  EXPECT_NE(w->pending->message.find("untolerated taint dedicated=ml:NoSchedule"), std::string::npos)
      << w->pending->message;
}

// Reasons name quota-tree nodes; a new configuration rebuilds the tree, and
// the reason read afterwards still names the node that blocked.
// `why` while the quota a workload needs is held by workloads being evicted:
// not "never", not "may not preempt": it is tried again when they stop,
// after the workload that waits for those evictions.
TEST(EngineReasonTest, WhySaysEvictionsInFlightWillFreeTheQuota) {
  Engine e;
  ASSERT_TRUE(e.Configure(TwoTeams()).ok());
  MustSubmit(e, Job("team-a", "a-1", 2), 0);
  MustSubmit(e, Job("team-a", "a-2", 2), 0);
  Settle(e, 0);
  ASSERT_EQ(e.Find("team-a/a-2")->state, WorkloadState::kAdmitted);  // borrows team-b's 2
  MustSubmit(e, Job("team-b", "b-1", 2), 1);
  e.Schedule(1);  // reclaims: a-2 is evicted, its pods still stopping
  ASSERT_EQ(e.Find("team-a/a-2")->state, WorkloadState::kEvicting);
  MustSubmit(e, Job("team-a", "a-3", 2), 1);
  e.Schedule(1);
  auto why = e.Why("team-a/a-3");
  ASSERT_TRUE(why.ok());
  EXPECT_EQ(why->would_preempt, std::vector<std::string>{"team-a/a-2"});
  EXPECT_NE(
      why->message.find("being evicted already, so it is tried again as soon as they stop (after 1 workload"),
      std::string::npos)
      << why->message;
  EXPECT_EQ(why->message.find("no preemption can help"), std::string::npos) << why->message;
  EXPECT_EQ(why->message.find("may not preempt"), std::string::npos) << why->message;
}

TEST(EngineReasonTest, ReasonSurvivesReconfiguration) {
  Engine e;
  ASSERT_TRUE(e.Configure(TwoTeams()).ok());
  WorkloadId id = MustSubmit(e, Job("team-a", "big", 5), 0);
  Settle(e, 0);
  Config c = TwoTeams();
  c.cohorts.push_back({"extra"});  // shifts tree node ids
  std::swap(c.cluster_queues[0], c.cluster_queues[1]);
  ASSERT_TRUE(e.Configure(c).ok());
  const WorkloadInfo* w = e.Get(id);
  EXPECT_EQ(w->pending->kind, PendingReason::Kind::kInsufficientQuota);
  EXPECT_EQ(w->pending->level, "shared");
  EXPECT_EQ(w->pending->flavor, "a100");
  EXPECT_EQ(w->pending->requested, 5 * kGpu);
}

}  // namespace
}  // namespace artel::core

// Restore with nodes: the placement a workload had is committed as is (so a
// restarted daemon keeps pods on their GPUs); a placement that no longer
// fits fails and changes nothing; without one, the pods are placed anew.
namespace artel::core {
namespace {

std::vector<placement::NodeSpec> OneHost(int gpus) {
  placement::NodeSpec n;
  n.name = "host";
  for (int i = 0; i < gpus; ++i) {
    placement::GpuSpec g;
    g.model = "A100-80GB";
    n.gpus.push_back(g);
  }
  return {n};
}

PodSetAssignment OneGpuAdmission() {
  PodSetAssignment ps;
  ps.name = "main";
  ps.count = 1;
  ps.flavors["nvidia.com/gpu"] = "a100";
  return ps;
}

TEST(EngineRestoreTest, PlacementIsRestoredAsIsOrRefused) {
  // The "old daemon": two one-GPU workloads placed on a 3-GPU host.
  Engine before;
  ASSERT_TRUE(before.Configure(TwoTeams()).ok());
  ASSERT_TRUE(before.SetNodes(OneHost(3)).ok());
  ASSERT_TRUE(before.Submit(Job("team-a", "a-0", 1), 0).ok());
  ASSERT_TRUE(before.Submit(Job("team-a", "a-1", 1), 0).ok());
  Settle(before, 0);
  ASSERT_NE(before.Placement("team-a/a-1"), nullptr);
  const placement::Placement kept = *before.Placement("team-a/a-1");
  const std::string devices = before.Find("team-a/a-1")->placements.at(0).visible_devices;
  ASSERT_FALSE(devices.empty());

  // The restarted one restores only a-1, on its GPU.
  Engine after;
  ASSERT_TRUE(after.Configure(TwoTeams()).ok());
  ASSERT_TRUE(after.SetNodes(OneHost(3)).ok());
  ASSERT_TRUE(after.Submit(Job("team-a", "a-1", 1), 0).ok());
  ASSERT_TRUE(after.Restore("team-a/a-1", "team-a", {OneGpuAdmission()}, 0, &kept).ok());
  EXPECT_EQ(after.Find("team-a/a-1")->placements.at(0).visible_devices, devices);
  // Two GPUs are left: a 3-GPU job waits for the nodes, a 2-GPU one fits elsewhere.
  ASSERT_TRUE(after.Submit(Job("team-b", "big", 3), 1).ok());
  ASSERT_TRUE(after.Submit(Job("team-b", "pair", 2), 1).ok());
  Settle(after, 1);
  EXPECT_EQ(after.Find("team-b/big")->state, WorkloadState::kPending);
  EXPECT_EQ(after.Find("team-b/big")->pending->kind, PendingReason::Kind::kUnschedulable);
  ASSERT_EQ(after.Find("team-b/pair")->state, WorkloadState::kAdmitted);
  EXPECT_EQ(after.Find("team-b/pair")->placements.at(0).visible_devices.find(devices), std::string::npos);

  // A third engine where "pair" took that GPU first: the old placement no
  // longer fits; nothing changes.
  Engine busy;
  ASSERT_TRUE(busy.Configure(TwoTeams()).ok());
  ASSERT_TRUE(busy.SetNodes(OneHost(1)).ok());
  ASSERT_TRUE(busy.Submit(Job("team-b", "pair", 1), 0).ok());
  Settle(busy, 0);
  ASSERT_TRUE(busy.Submit(Job("team-a", "a-1", 1), 1).ok());
  Status s = busy.Restore("team-a/a-1", "team-a", {OneGpuAdmission()}, 0, before.Placement("team-a/a-0"));
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_EQ(busy.Find("team-a/a-1")->state, WorkloadState::kPending);
  EXPECT_EQ(busy.AdmittedCount(), 1u);

  // Without a placement the pods are placed anew, where there is room.
  Engine fresh;
  ASSERT_TRUE(fresh.Configure(TwoTeams()).ok());
  ASSERT_TRUE(fresh.SetNodes(OneHost(1)).ok());
  ASSERT_TRUE(fresh.Submit(Job("team-a", "a-1", 1), 0).ok());
  ASSERT_TRUE(fresh.Restore("team-a/a-1", "team-a", {OneGpuAdmission()}, 0).ok());
  ASSERT_NE(fresh.Placement("team-a/a-1"), nullptr);
  ASSERT_TRUE(fresh.Submit(Job("team-a", "a-2", 1), 0).ok());
  EXPECT_FALSE(fresh.Restore("team-a/a-2", "team-a", {OneGpuAdmission()}, 0).ok());  // no GPU left
  EXPECT_EQ(fresh.Find("team-a/a-2")->state, WorkloadState::kPending);
}

}  // namespace
}  // namespace artel::core

// GPU slices and `pods` are charged by admission and charged the same by a
// restore of that admission (the daemon's journal replay).
namespace artel::core {
namespace {

Amount UsageOf(const Engine& e, const std::string& cq, const std::string& res) {
  for (const QuotaUsage& u : e.Usage()) {
    if (!u.is_cohort && u.node == cq && u.resource == res) return u.usage;
  }
  return -1;
}

TEST(EngineRestoreTest, ImplicitChargesRoundTrip) {
  Config c;
  c.flavors.push_back({"a100"});
  ClusterQueueSpec q = Cq("team-a", "", 4 * kGpu);
  q.resource_groups[0].covered_resources = {"nvidia.com/gpu", "artel.dev/gpu-memory", "pods"};
  q.resource_groups[0].flavors[0].resources.push_back(
      {"artel.dev/gpu-memory", Amount{1} << 50, std::nullopt, std::nullopt});
  q.resource_groups[0].flavors[0].resources.push_back({"pods", 100 * kGpu, std::nullopt, std::nullopt});
  c.cluster_queues.push_back(q);
  c.local_queues.push_back({"team-a", "default", "team-a"});
  auto job = [](const std::string& name, std::map<std::string, Amount> req, GpuShareRequest share) {
    WorkloadSpec w;
    w.ns = "team-a";
    w.name = name;
    w.queue = "default";
    PodSetSpec ps;
    ps.count = 2;
    ps.requests = std::move(req);
    ps.gpu_share = share;
    w.pod_sets.push_back(ps);
    return w;
  };
  // A KAI half GPU per pod (1 GPU for two pods) and a memory need charged as memory, with a
  // zero nvidia.com/gpu request that must stay zero.
  const Amount mem = Amount{10} * (Amount{1} << 30) * 1000;  // 10 GiB in milli-bytes
  Engine a;
  ASSERT_TRUE(a.Configure(c).ok());
  ASSERT_TRUE(a.Submit(job("frac", {}, GpuShareRequest{.fraction = 500}), 0).ok());
  ASSERT_TRUE(
      a.Submit(job("need", {{"nvidia.com/gpu", 0}, {"artel.dev/gpu-memory", mem}}, GpuShareRequest{}), 0)
          .ok());
  Settle(a, 0);
  ASSERT_EQ(a.Find("team-a/frac")->state, WorkloadState::kAdmitted);
  ASSERT_EQ(a.Find("team-a/need")->state, WorkloadState::kAdmitted);
  EXPECT_EQ(UsageOf(a, "team-a", "nvidia.com/gpu"), 1 * kGpu);
  EXPECT_EQ(UsageOf(a, "team-a", "pods"), 4 * kGpu);
  EXPECT_EQ(UsageOf(a, "team-a", "artel.dev/gpu-memory"), 2 * mem);
  Engine b;
  ASSERT_TRUE(b.Configure(c).ok());
  for (const char* name : {"frac", "need"}) {
    const WorkloadInfo* w = a.Find(std::string("team-a/") + name);
    ASSERT_TRUE(b.Submit(w->spec, 0).ok());
    ASSERT_TRUE(b.Restore(w->key, "team-a", w->admission, 0).ok()) << name;
  }
  EXPECT_EQ(UsageOf(b, "team-a", "nvidia.com/gpu"), 1 * kGpu);
  EXPECT_EQ(UsageOf(b, "team-a", "pods"), 4 * kGpu);
  EXPECT_EQ(UsageOf(b, "team-a", "artel.dev/gpu-memory"), 2 * mem);
  // A configuration change rebuilds usage from the restored admissions' records.
  ASSERT_TRUE(b.Configure(c).ok());
  EXPECT_EQ(UsageOf(b, "team-a", "nvidia.com/gpu"), 1 * kGpu);
  EXPECT_EQ(UsageOf(b, "team-a", "pods"), 4 * kGpu);
}

// Flavors bound to nodes (docs/semantics.md §4): with nodes, a flavor whose
// nodes can never hold a pod of the pod set is skipped (Excluded in `why`)
// and the next flavor is tried; when no flavor's nodes can, the workload is
// Infeasible, and a change of nodes retries it.
TEST(EngineFlavorNodesTest, FlavorWithoutNodesIsSkippedAndNodeChangesRetry) {
  Config c;
  ResourceFlavorSpec f40{"a100-40g"}, f80{"a100-80g"};
  f40.node_labels["nvidia.com/gpu.product"] = "NVIDIA-A100-SXM4-40GB";
  f80.node_labels["nvidia.com/gpu.product"] = "NVIDIA-A100-SXM4-80GB";
  c.flavors = {f40, f80};
  ClusterQueueSpec q = Cq("nlp", "", 24 * kGpu);
  q.resource_groups[0].flavors[0].flavor = "a100-40g";
  FlavorQuotasSpec q80;
  q80.flavor = "a100-80g";
  q80.resources.push_back({"nvidia.com/gpu", 8 * kGpu, std::nullopt, std::nullopt});
  q.resource_groups[0].flavors.push_back(q80);
  c.cluster_queues.push_back(q);
  c.local_queues.push_back({"team-nlp", "default", "nlp"});
  auto host = [](const std::string& name, const std::string& product, int gpus) {
    placement::NodeSpec n;
    n.name = name;
    n.labels["nvidia.com/gpu.product"] = product;
    for (int i = 0; i < gpus; ++i) n.gpus.push_back(placement::GpuSpec{"A100-80GB"});
    return n;
  };
  Engine e;
  ASSERT_TRUE(e.Configure(c).ok());
  ASSERT_TRUE(e.SetNodes({host("h80", "NVIDIA-A100-SXM4-80GB", 8)}).ok());
  WorkloadId small = MustSubmit(e, Job("team-nlp", "small", 4), 0);
  WorkloadId wide = MustSubmit(e, Job("team-nlp", "wide", 12), 0);
  WorkloadId more = MustSubmit(e, Job("team-nlp", "more", 6), 0);
  Settle(e, 0);
  ASSERT_EQ(e.Get(small)->state, WorkloadState::kAdmitted);
  EXPECT_EQ(e.Get(small)->admission[0].flavors.at("nvidia.com/gpu"), "a100-80g");
  // 12 GPUs: no a100-80g node holds them, and no node has a100-40g's labels.
  ASSERT_EQ(e.Get(wide)->state, WorkloadState::kPending);
  EXPECT_EQ(e.Get(wide)->pending->kind, PendingReason::Kind::kInfeasible) << e.Get(wide)->pending->message;
  // 6 GPUs: short of a100-80g quota; a100-40g is listed as excluded by `why`.
  ASSERT_EQ(e.Get(more)->state, WorkloadState::kPending);
  auto why = e.Why("team-nlp/more");
  ASSERT_TRUE(why.ok());
  ASSERT_EQ(why->flavors.size(), 2u) << why->message;
  EXPECT_EQ(why->flavors[0].flavor, "a100-40g");
  EXPECT_EQ(why->flavors[0].outcome, FlavorAttempt::Outcome::kExcluded);
  EXPECT_NE(
      why->flavors[0].message.find(
          "no node matches flavor a100-40g's nodeLabels (nvidia.com/gpu.product=NVIDIA-A100-SXM4-40GB)"),
      std::string::npos)
      << why->flavors[0].message;
  EXPECT_EQ(why->flavors[1].flavor, "a100-80g");
  EXPECT_NE(why->flavors[1].outcome, FlavorAttempt::Outcome::kExcluded);
  // A 40GB host appears: both waiting workloads are retried and run on it.
  ASSERT_TRUE(
      e.SetNodes({host("h80", "NVIDIA-A100-SXM4-80GB", 8), host("h40", "NVIDIA-A100-SXM4-40GB", 24)}).ok());
  Settle(e, 1);
  ASSERT_EQ(e.Get(wide)->state, WorkloadState::kAdmitted) << e.Get(wide)->pending->message;
  EXPECT_EQ(e.Get(wide)->admission[0].flavors.at("nvidia.com/gpu"), "a100-40g");
  ASSERT_EQ(e.Get(more)->state, WorkloadState::kAdmitted) << e.Get(more)->pending->message;
  EXPECT_EQ(e.Get(more)->admission[0].flavors.at("nvidia.com/gpu"), "a100-40g");
}

}  // namespace
}  // namespace artel::core
