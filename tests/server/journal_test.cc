// The typed journal (src/server/journal.h): every payload survives its
// encoding, payloads of older daemons decode as they always meant, the
// reduction follows the journal's state machine (docs/daemon.md), and a
// snapshot gives back the model it was written from.
#include "server/journal.h"

#include <gtest/gtest.h>

namespace artel::server::journal {
namespace {

using store::RecordType;

store::Record Raw(RecordType type, const std::string& key, const std::string& payload, int64_t t = 1000) {
  store::Record r;
  r.type = type;
  r.key = key;
  r.time_ms = t;
  r.payload = payload;
  return r;
}

template <typename P>
P RoundTrip(const P& p) {
  store::Record r = MakeRecord("ns/w", 5, p);
  EXPECT_EQ(r.type, TypeOf(Payload(p)));
  Payload back = DecodePayload(r.type, r.payload);
  EXPECT_TRUE(std::holds_alternative<P>(back)) << r.payload;
  return std::get<P>(back);
}

Admitted SampleAdmission() {
  Admitted a;
  a.cluster_queue = "cq";
  core::PodSetAssignment ps;
  ps.name = "main";
  ps.count = 2;
  ps.flavors = {{"nvidia.com/gpu", "h100"}};
  ps.resource_usage = {{"nvidia.com/gpu", 2000}, {"cpu", 1500}};
  a.pod_sets.push_back(ps);
  a.admitted_at_ms = 1234;
  a.start_ids = true;
  a.admission_seq = 77;
  a.used_ms = 9000;
  JournaledPlacement jp;
  PlacedPod pp;
  pp.placement.group = 0;
  pp.placement.node = 1;
  pp.placement.gpus = {3};
  core::placement::MigAssignment m;
  m.gpu = 4;
  m.profile = "3g.40gb";
  m.start = 4;
  m.create = true;
  m.destroy.push_back({"1g.10gb", 4});
  pp.placement.mig.push_back(m);
  pp.placement.shares.push_back({5, 8192, 30, true});
  pp.node_name = "host/pool-b";
  pp.uuids = std::vector<std::string>{"GPU-3", "GPU-4", "GPU-5"};
  jp.pods.push_back(pp);
  jp.placed = {1};
  jp.group_requests = {{{"cpu", 1500}}};
  a.placement = jp;
  return a;
}

TEST(JournalPayloads, EveryPayloadRoundTrips) {
  EXPECT_EQ(RoundTrip(ConfigApplied{"kind: ClusterQueue\n"}).manifests, "kind: ClusterQueue\n");
  EXPECT_EQ(RoundTrip(Submitted{Json{{"metadata", {{"name", "w"}}}}}).spec["metadata"]["name"], "w");

  Cancelled c = RoundTrip(Cancelled{"alice", 4242});
  EXPECT_EQ(c.user, "alice");
  EXPECT_EQ(c.kill_at_ms, 4242);
  EXPECT_FALSE(RoundTrip(Cancelled{}).kill_at_ms.has_value());

  Admitted a = RoundTrip(SampleAdmission());
  EXPECT_EQ(a.cluster_queue, "cq");
  ASSERT_EQ(a.pod_sets.size(), 1u);
  EXPECT_EQ(a.pod_sets[0].count, 2);
  EXPECT_EQ(a.pod_sets[0].flavors.at("nvidia.com/gpu"), "h100");
  EXPECT_EQ(a.pod_sets[0].resource_usage.at("cpu"), 1500);
  EXPECT_EQ(a.admitted_at_ms, 1234);
  EXPECT_TRUE(a.start_ids);
  EXPECT_EQ(a.admission_seq, 77u);
  EXPECT_EQ(a.used_ms, 9000);
  EXPECT_TRUE(a.pod_sets_error.empty());
  EXPECT_TRUE(a.placement_error.empty());
  ASSERT_TRUE(a.placement.has_value());
  ASSERT_EQ(a.placement->pods.size(), 1u);
  const PlacedPod& pp = a.placement->pods[0];
  EXPECT_EQ(pp.node_name, "host/pool-b");
  EXPECT_EQ(pp.uuids, (std::vector<std::string>{"GPU-3", "GPU-4", "GPU-5"}));
  EXPECT_EQ(pp.placement.node, 1);
  EXPECT_EQ(PlacedGpus(pp.placement), (std::vector<int32_t>{3, 4, 5}));
  ASSERT_EQ(pp.placement.mig.size(), 1u);
  EXPECT_TRUE(pp.placement.mig[0].create);
  ASSERT_EQ(pp.placement.mig[0].destroy.size(), 1u);
  EXPECT_EQ(pp.placement.mig[0].destroy[0].profile, "1g.10gb");
  EXPECT_EQ(pp.placement.shares[0].memory_mib, 8192);
  EXPECT_EQ(a.placement->ToPlacement().group_requests[0].at("cpu"), 1500);

  Evicted e = RoundTrip(Evicted{"InCohortReclamation", "ns/p", "reclaimed", 99, 1000});
  EXPECT_EQ(e.reason, "InCohortReclamation");
  EXPECT_EQ(e.preemptor, "ns/p");
  EXPECT_EQ(e.kill_at_ms, 99);
  EXPECT_EQ(e.used_ms, 1000);
  EXPECT_FALSE(RoundTrip(Evicted{"Preempted", "", "", std::nullopt, std::nullopt}).kill_at_ms.has_value());

  FinalStatus fs;
  fs.retries = 2;
  fs.started_at_ms = 10;
  fs.admitted_at_ms = 5;
  fs.pods = {{"main-0", 321, {0, 1}, 137}, {"main-1", 322, {}, std::nullopt}};
  EvictionCompleted ec = RoundTrip(EvictionCompleted{"Cancelled", fs});
  EXPECT_EQ(ec.reason, "Cancelled");
  EXPECT_EQ(ec.status.retries, 2);
  ASSERT_EQ(ec.status.pods.size(), 2u);
  EXPECT_EQ(ec.status.pods[0].exit_code, 137);
  EXPECT_FALSE(ec.status.pods[1].exit_code.has_value());
  EXPECT_EQ(ec.status.pods[0].gpus, (std::vector<int>{0, 1}));

  Starting st = RoundTrip(Starting{"s-1", 1, {{"main-0", {2}}}});
  EXPECT_EQ(st.start_id, "s-1");
  EXPECT_EQ(st.retries, 1);
  ASSERT_EQ(st.pods.size(), 1u);
  EXPECT_EQ(st.pods[0].gpus, std::vector<int>{2});

  Started sd;
  sd.pods = {{"main-0", 41, 41, "/x/exit", "/x/start", {2}}};
  sd.retries = 1;
  sd.start_id = "s-1";
  sd.started_at_ms = 77;
  sd.recovered = true;
  Started sd2 = RoundTrip(sd);
  ASSERT_EQ(sd2.pods.size(), 1u);
  EXPECT_EQ(sd2.pods[0].pgid, 41);
  EXPECT_EQ(sd2.pods[0].start_file, "/x/start");
  EXPECT_EQ(sd2.started_at_ms, 77);
  EXPECT_TRUE(sd2.recovered);

  FinalStatus done = fs;
  done.exit_code = 3;
  done.phase = "Failed";
  done.message = "exit 3";
  Finished f = RoundTrip(Finished{done});
  EXPECT_EQ(f.status.exit_code, 3);
  EXPECT_EQ(f.status.phase, "Failed");
  EXPECT_EQ(f.status.message, "exit 3");

  Deleted d = RoundTrip(Deleted{"retention", 555});
  EXPECT_EQ(d.finished_ms, 555);
}

// Payloads as earlier daemons wrote them (docs/store.md, docs/daemon.md).
TEST(JournalPayloads, OlderPayloadsDecodeAsTheyMeant) {
  // A cancel without a payload (or without killAt) cancels at once.
  auto c = std::get<Cancelled>(DecodePayload(RecordType::kWorkloadCancelled, ""));
  EXPECT_FALSE(c.kill_at_ms.has_value());
  // An admission from before start ids, admission sequence and placements.
  auto a = std::get<Admitted>(DecodePayload(
      RecordType::kWorkloadAdmitted,
      R"({"clusterQueue":"cq","podSets":[{"name":"main","count":1,"flavors":{"cpu":"f"},"resourceUsage":{"cpu":"2"}}]})"));
  EXPECT_TRUE(a.pod_sets_error.empty()) << a.pod_sets_error;
  EXPECT_EQ(a.pod_sets.at(0).resource_usage.at("cpu"), 2000);
  EXPECT_FALSE(a.start_ids);
  EXPECT_FALSE(a.admitted_at_ms.has_value());
  EXPECT_FALSE(a.used_ms.has_value());
  EXPECT_FALSE(a.placement.has_value());
  EXPECT_TRUE(a.placement_error.empty());
  // A placement from before node pools: no nodeName, no uuids.
  auto b = std::get<Admitted>(DecodePayload(
      RecordType::kWorkloadAdmitted,
      R"({"clusterQueue":"cq","podSets":[],"placement":{"pods":[{"group":0,"node":0,"gpus":[1],"mig":[],"shares":[]}],"placed":[1],"groupRequests":[{}]}})"));
  ASSERT_TRUE(b.placement.has_value()) << b.placement_error;
  EXPECT_TRUE(b.placement->pods.at(0).node_name.empty());
  EXPECT_FALSE(b.placement->pods.at(0).uuids.has_value());
  // The first WorkloadStarted form had no pods list: nothing to adopt.
  auto s =
      std::get<Started>(DecodePayload(RecordType::kWorkloadStarted, R"({"pids":[1,2],"pgid":1,"gpus":[0]})"));
  EXPECT_TRUE(s.pods.empty());
  // A plain EvictionCompleted has no payload.
  auto ec = std::get<EvictionCompleted>(DecodePayload(RecordType::kEvictionCompleted, ""));
  EXPECT_TRUE(ec.reason.empty());
  EXPECT_TRUE(std::holds_alternative<Ignored>(DecodePayload(RecordType::kNodeChanged, "{}")));
}

TEST(JournalPayloads, UnreadableFieldsAreReportedNotThrown) {
  // Not JSON: the empty payload of its type.
  auto e = std::get<Evicted>(DecodePayload(RecordType::kWorkloadEvicted, "{not json"));
  EXPECT_TRUE(e.reason.empty());
  // Fields of the wrong type take their defaults.
  auto c =
      std::get<Cancelled>(DecodePayload(RecordType::kWorkloadCancelled, R"({"user":7,"killAt":"soon"})"));
  EXPECT_TRUE(c.user.empty());
  EXPECT_FALSE(c.kill_at_ms.has_value());
  // Pod sets that cannot be read: the admission says why (it is not restored).
  auto a = std::get<Admitted>(
      DecodePayload(RecordType::kWorkloadAdmitted, R"({"clusterQueue":"cq","podSets":[{"name":"m"}]})"));
  EXPECT_NE(a.pod_sets_error.find("bad admission record"), std::string::npos) << a.pod_sets_error;
  EXPECT_TRUE(a.pod_sets.empty());
  auto none = std::get<Admitted>(DecodePayload(RecordType::kWorkloadAdmitted, "{}"));
  EXPECT_FALSE(none.pod_sets_error.empty());
  // A placement that cannot be read: placed again, and said so.
  auto p = std::get<Admitted>(
      DecodePayload(RecordType::kWorkloadAdmitted,
                    R"({"clusterQueue":"cq","podSets":[],"placement":{"pods":[{"group":"x"}]}})"));
  EXPECT_TRUE(p.pod_sets_error.empty());
  EXPECT_FALSE(p.placement.has_value());
  EXPECT_NE(p.placement_error.find("bad placement record"), std::string::npos);
  auto u = std::get<Admitted>(DecodePayload(
      RecordType::kWorkloadAdmitted,
      R"({"clusterQueue":"cq","podSets":[],"placement":{"pods":[{"group":0,"node":0,"gpus":[],"mig":[],"shares":[],"uuids":[1]}],"placed":[],"groupRequests":[]}})"));
  EXPECT_FALSE(u.placement.has_value());
  EXPECT_FALSE(u.placement_error.empty());
}

TEST(JournalPhases, NamesRoundTrip) {
  for (Phase p : {Phase::kPending, Phase::kAdmitted, Phase::kEvicting, Phase::kCancelling, Phase::kFinished,
                  Phase::kCancelled}) {
    EXPECT_EQ(ParsePhase(PhaseName(p)), p);
  }
  EXPECT_FALSE(ParsePhase("Running").has_value());
  EXPECT_TRUE(IsFinal(Phase::kFinished));
  EXPECT_TRUE(IsFinal(Phase::kCancelled));
  EXPECT_FALSE(IsFinal(Phase::kCancelling));
}

class JournalReduce : public ::testing::Test {
 protected:
  void Apply(const std::string& key, const Payload& p, int64_t t = 1000) {
    Reduce(MakeRecord(key, t, p), &model_);
  }
  const WorkloadRecord& W(const std::string& key) { return model_.workloads.at(key); }
  Model model_;
};

TEST_F(JournalReduce, AdmitEvictRequeue) {
  Apply("", ConfigApplied{"cfg"});
  EXPECT_EQ(model_.config, "cfg");
  Apply("ns/a", Submitted{Json{{"x", 1}}}, 10);
  Apply("ns/b", Submitted{Json{{"x", 2}}}, 11);
  EXPECT_EQ(W("ns/a").order, 1u);
  EXPECT_EQ(W("ns/b").order, 2u);
  EXPECT_EQ(W("ns/a").submitted_ms, 10);
  EXPECT_EQ(W("ns/a").phase, Phase::kPending);
  Apply("ns/a", SampleAdmission());
  EXPECT_EQ(W("ns/a").phase, Phase::kAdmitted);
  EXPECT_EQ(W("ns/a").used_ms, 9000);
  Apply("ns/a", Starting{"s1", 0, {{"main-0", {0}}}});
  Apply("ns/a", Started{{{"main-0", 5, 5, "e", "", {0}}}, 0, "s1", 20, false});
  ASSERT_TRUE(W("ns/a").started.has_value());
  // Two evictions: the earlier SIGKILL deadline holds.
  Apply("ns/a", Evicted{"Preempted", "ns/b", "", 500, 9500});
  Apply("ns/a", Evicted{"Preempted", "ns/b", "", 700, std::nullopt});
  EXPECT_EQ(W("ns/a").phase, Phase::kEvicting);
  EXPECT_EQ(W("ns/a").kill_at_ms, 500);
  EXPECT_EQ(W("ns/a").used_ms, 9500);
  Apply("ns/a", EvictionCompleted{});
  EXPECT_EQ(W("ns/a").phase, Phase::kPending);
  EXPECT_FALSE(W("ns/a").admission.has_value());
  EXPECT_FALSE(W("ns/a").started.has_value());
  EXPECT_FALSE(W("ns/a").starting.has_value());
  EXPECT_EQ(W("ns/a").kill_at_ms, -1);
  EXPECT_EQ(W("ns/a").used_ms, 9500);  // kept for its next admission
  // Records of unknown workloads change nothing.
  Apply("ns/zz", SampleAdmission());
  EXPECT_EQ(model_.workloads.count("ns/zz"), 0u);
}

TEST_F(JournalReduce, CancelWhileRunningThenFinalAndDeleted) {
  Apply("ns/a", Submitted{Json::object()});
  Apply("ns/a", SampleAdmission());
  Apply("ns/a", Cancelled{"alice", 800}, 600);
  EXPECT_EQ(W("ns/a").phase, Phase::kCancelling);
  EXPECT_EQ(W("ns/a").kill_at_ms, 800);
  EXPECT_EQ(W("ns/a").finished_ms, 600);
  // A start begun before the cancel is still recorded.
  Apply("ns/a", Started{{{"main-0", 5, 5, "e", "", {}}}, 0, "s1", 20, false});
  EXPECT_TRUE(W("ns/a").started.has_value());
  // Other loop records while Cancelling are stale.
  Apply("ns/a", Evicted{"Preempted", "", "", 100, std::nullopt});
  EXPECT_EQ(W("ns/a").phase, Phase::kCancelling);
  EXPECT_EQ(W("ns/a").kill_at_ms, 800);
  FinalStatus fs;
  fs.retries = 1;
  Apply("ns/a", EvictionCompleted{"Cancelled", fs});
  EXPECT_EQ(W("ns/a").phase, Phase::kCancelled);
  ASSERT_TRUE(W("ns/a").result.has_value());
  EXPECT_EQ(W("ns/a").result->retries, 1);
  EXPECT_FALSE(W("ns/a").admission.has_value());
  // Final: a late admission record is stale.
  Apply("ns/a", SampleAdmission());
  EXPECT_EQ(W("ns/a").phase, Phase::kCancelled);
  // A deletion for another incarnation does nothing; the right one drops it.
  Apply("ns/a", Deleted{"retention", 601});
  EXPECT_EQ(model_.workloads.count("ns/a"), 1u);
  Apply("ns/a", Deleted{"retention", std::nullopt});
  EXPECT_EQ(model_.workloads.count("ns/a"), 1u);
  Apply("ns/a", Deleted{"retention", 600});
  EXPECT_EQ(model_.workloads.count("ns/a"), 0u);
}

TEST_F(JournalReduce, CancelAtOnceAndFinishBeforeCancel) {
  // A pending workload, or an older journal's cancel: at once.
  Apply("ns/p", Submitted{Json::object()});
  Apply("ns/p", Cancelled{"bob", std::nullopt}, 70);
  EXPECT_EQ(W("ns/p").phase, Phase::kCancelled);
  EXPECT_EQ(W("ns/p").finished_ms, 70);
  // Submitted again: a fresh record.
  Apply("ns/p", Submitted{Json::object()}, 80);
  EXPECT_EQ(W("ns/p").phase, Phase::kPending);
  EXPECT_EQ(W("ns/p").finished_ms, -1);
  // A kill deadline on a pending workload still cancels at once.
  Apply("ns/p", Cancelled{"bob", 999}, 90);
  EXPECT_EQ(W("ns/p").phase, Phase::kCancelled);

  Apply("ns/f", Submitted{Json::object()});
  Apply("ns/f", SampleAdmission());
  Apply("ns/f", Cancelled{"bob", 900}, 100);
  FinalStatus done;
  done.exit_code = 0;
  done.phase = "Succeeded";
  Apply("ns/f", Finished{done}, 110);
  EXPECT_EQ(W("ns/f").phase, Phase::kFinished);
  EXPECT_EQ(W("ns/f").finished_ms, 110);
  EXPECT_EQ(W("ns/f").result->phase, "Succeeded");
}

TEST_F(JournalReduce, SnapshotGivesBackTheModel) {
  Apply("", ConfigApplied{"cfg: 1"});
  Apply("ns/a", Submitted{Json{{"spec", {{"queueName", "q"}}}}}, 10);
  Apply("ns/a", SampleAdmission());
  Apply("ns/a", Starting{"s1", 2, {{"main-0", {0}}}});
  Apply("ns/a", Evicted{"Preempted", "", "", 400, 50});
  Apply("ns/b", Submitted{Json::object()}, 11);
  FinalStatus done;
  done.exit_code = 1;
  done.phase = "Failed";
  done.pods = {{"main-0", 7, {1}, 1}};
  Apply("ns/b", Finished{done}, 30);
  const std::string text = EncodeSnapshot(model_);
  Model back;
  ASSERT_TRUE(DecodeSnapshot(text, &back).ok());
  EXPECT_EQ(EncodeSnapshot(back), text);
  EXPECT_EQ(back.config, "cfg: 1");
  EXPECT_EQ(back.order, 2u);
  const WorkloadRecord& a = back.workloads.at("ns/a");
  EXPECT_EQ(a.phase, Phase::kEvicting);
  EXPECT_EQ(a.kill_at_ms, 400);
  EXPECT_EQ(a.used_ms, 50);
  EXPECT_EQ(a.spec["spec"]["queueName"], "q");
  ASSERT_TRUE(a.admission.has_value());
  EXPECT_EQ(a.admission->placement->pods.at(0).node_name, "host/pool-b");
  EXPECT_EQ(a.starting->retries, 2);
  const WorkloadRecord& b = back.workloads.at("ns/b");
  EXPECT_EQ(b.phase, Phase::kFinished);
  EXPECT_EQ(b.result->pods.at(0).exit_code, 1);
  EXPECT_EQ(b.finished_ms, 30);

  // A corrupt snapshot is refused and changes nothing.
  Model kept = back;
  Status s = DecodeSnapshot("[1,2", &kept);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(EncodeSnapshot(kept), text);
}

// Records exactly as an older daemon stored them, reduced.
TEST(JournalReduceRaw, OlderRecords) {
  Model m;
  Reduce(Raw(RecordType::kWorkloadSubmitted, "ns/a", R"({"metadata":{"name":"a"}})", 1), &m);
  Reduce(Raw(RecordType::kWorkloadAdmitted, "ns/a",
             R"({"clusterQueue":"cq","podSets":[{"name":"main","count":1,"flavors":{},"resourceUsage":{}}]})",
             2),
         &m);
  EXPECT_EQ(m.workloads.at("ns/a").phase, Phase::kAdmitted);
  EXPECT_EQ(m.workloads.at("ns/a").used_ms, 0);
  // An older journal's cancel (no payload): cancelled at once, even admitted.
  Reduce(Raw(RecordType::kWorkloadCancelled, "ns/a", "", 3), &m);
  EXPECT_EQ(m.workloads.at("ns/a").phase, Phase::kCancelled);
  EXPECT_EQ(m.workloads.at("ns/a").finished_ms, 3);
  // An unreadable submission still makes a record (recovery reports it).
  Reduce(Raw(RecordType::kWorkloadSubmitted, "ns/b", "{oops", 4), &m);
  EXPECT_TRUE(m.workloads.at("ns/b").spec.is_object());
  EXPECT_EQ(m.workloads.at("ns/b").order, 2u);
}

// A snapshot written before phases were typed (the same JSON) reads back.
TEST(JournalSnapshot, OlderSnapshotReads) {
  const char* old = R"({"version":1,"config":"c","order":3,"workloads":[
    {"key":"ns/x","spec":{},"submittedMs":5,"order":3,"phase":"Cancelled","admission":null,
     "starting":null,"started":null,"result":{"user":"alice"},"finishedMs":9,"killAtMs":-1,"usedMs":0}]})";
  Model m;
  ASSERT_TRUE(DecodeSnapshot(old, &m).ok());
  EXPECT_EQ(m.order, 3u);
  const WorkloadRecord& x = m.workloads.at("ns/x");
  EXPECT_EQ(x.phase, Phase::kCancelled);
  EXPECT_EQ(x.finished_ms, 9);
  ASSERT_TRUE(x.result.has_value());
  EXPECT_EQ(x.result->retries, 0);
  EXPECT_FALSE(x.admission.has_value());
}

}  // namespace
}  // namespace artel::server::journal
