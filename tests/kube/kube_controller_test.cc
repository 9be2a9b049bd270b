// End-to-end tests of arteld's Kubernetes mode on a real control plane:
// configuration applied with kubectl (the examples, with `apply -k`),
// Workloads created with kubectl, and what the controller writes read back
// with `kubectl get workloads -o json` (status.admission, conditions and
// their reasons), Events and ClusterQueue status.
#include <gtest/gtest.h>

#include "controller_env.h"

namespace artel::testing {
namespace {

constexpr int kWait = 30000;

#ifndef ARTEL_SOURCE_DIR
#define ARTEL_SOURCE_DIR "."
#endif

class KubeController : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    ASSERT_TRUE(env_.Up(&error)) << error;
  }
  void StartArteld(const std::vector<std::string>& extra = {}) {
    std::string error;
    ASSERT_TRUE(env_.StartArteld(extra, &error)) << error;
  }
  void ApplyTwoTeams() { ASSERT_EQ(env_.ApplyK(std::string(ARTEL_SOURCE_DIR) + "/examples/two-teams"), ""); }
  bool WaitReserved(const std::string& ns, const std::string& name, const std::string& cq) {
    return WaitFor([&] { return AdmittedCq(env_.Workload(ns, name)) == cq; }, kWait);
  }
  std::string Dump(const std::string& ns, const std::string& name) {
    return env_.Workload(ns, name).dump(1) + "\narteld log tail:\n" +
           (env_.arteld ? env_.arteld->log().substr(
                              env_.arteld->log().size() > 4000 ? env_.arteld->log().size() - 4000 : 0)
                        : "");
  }
  KubeEnv env_;
};

// The examples apply cleanly to the real API server with Kueue's CRDs.
TEST_F(KubeController, kube_ExamplesApplyWithKubectlK) {
  for (const char* ex : {"examples/dev-cluster", "examples/two-teams"}) {
    std::string err = env_.ApplyK(std::string(ARTEL_SOURCE_DIR) + "/" + ex);
    EXPECT_EQ(err, "") << ex;
  }
  StartArteld();
  // Every ClusterQueue of both examples becomes Active.
  auto cqs = env_.k8s->Kubectl({"get", "clusterqueues.kueue.x-k8s.io", "-o", "json"});
  ASSERT_TRUE(cqs.ok()) << cqs.status().ToString();
  std::vector<std::string> names;
  const Json cq_list = Json::parse(*cqs);
  for (const Json& cq : cq_list["items"]) names.push_back(cq["metadata"]["name"]);
  ASSERT_FALSE(names.empty());
  for (const std::string& n : names) {
    EXPECT_TRUE(
        WaitFor([&] { return IsTrue(env_.Get("clusterqueues.kueue.x-k8s.io", "", n), "Active"); }, kWait))
        << n << ": " << env_.Get("clusterqueues.kueue.x-k8s.io", "", n).dump(1);
  }
}

// A Workload created with kubectl is admitted: status.admission and the
// QuotaReserved/Admitted conditions as Kueue writes them, an Event, and the
// ClusterQueue's status counts it.
TEST_F(KubeController, kube_WorkloadCreatedWithKubectlIsAdmitted) {
  ApplyTwoTeams();
  StartArteld();
  ASSERT_EQ(env_.Create("team-a", "a-1", "default", 1), "");
  ASSERT_TRUE(WaitReserved("team-a", "a-1", "team-a")) << Dump("team-a", "a-1");
  Json w = env_.Workload("team-a", "a-1");
  EXPECT_TRUE(IsTrue(w, "Admitted")) << w.dump(1);
  EXPECT_EQ(Reason(w, "QuotaReserved"), "QuotaReserved");
  EXPECT_EQ(Reason(w, "Admitted"), "Admitted");
  const Json& psa = w["status"]["admission"]["podSetAssignments"];
  ASSERT_EQ(psa.size(), 1u) << w.dump(1);
  EXPECT_EQ(psa[0].value("name", ""), "main");
  EXPECT_EQ(psa[0].value("count", 0), 1);
  EXPECT_EQ(psa[0]["flavors"].value("nvidia.com/gpu", ""), "a100");
  EXPECT_EQ(psa[0]["resourceUsage"].value("nvidia.com/gpu", ""), "1");
  // Events on the Workload.
  EXPECT_TRUE(WaitFor(
      [&] {
        auto ev = env_.k8s->Kubectl({"get", "events", "-n", "team-a", "-o", "json"});
        if (!ev.ok()) return false;
        std::set<std::string> reasons;
        const Json list = Json::parse(*ev);
        for (const Json& e : list["items"])
          if (e["involvedObject"].value("name", "") == "a-1") reasons.insert(e.value("reason", ""));
        return reasons.count("QuotaReserved") && reasons.count("Admitted");
      },
      kWait))
      << env_.arteld->log();
  // The ClusterQueue's status counts it (written at a bounded rate).
  EXPECT_TRUE(WaitFor(
      [&] {
        Json cq = env_.Get("clusterqueues.kueue.x-k8s.io", "", "team-a");
        return cq["status"].value("admittedWorkloads", -1) == 1 &&
               cq["status"].value("reservingWorkloads", -1) == 1;
      },
      kWait))
      << env_.Get("clusterqueues.kueue.x-k8s.io", "", "team-a").dump(1);
  EXPECT_TRUE(WaitFor(
      [&] {
        Json lq = env_.Get("localqueues.kueue.x-k8s.io", "team-a", "default");
        return lq["status"].value("admittedWorkloads", -1) == 1;
      },
      kWait))
      << env_.Get("localqueues.kueue.x-k8s.io", "team-a", "default").dump(1);
  // The artel read verbs work against a Kubernetes-mode arteld.
  HttpResult g = env_.arteld->Get("/api/v1/namespaces/team-a/workloads/a-1");
  EXPECT_EQ(g.status, 200) << g.body;
  EXPECT_EQ(g.json()["status"].value("phase", ""), "Admitted") << g.body;
  // Mutations are refused: the cluster is the source of truth.
  HttpResult p =
      env_.arteld->Post("/api/v1/namespaces/team-a/workloads", Workload("team-a", "x", "default", 1).dump());
  EXPECT_EQ(p.status, 409) << p.body;
  EXPECT_NE(p.body.find("kubectl"), std::string::npos) << p.body;
  // A pending one carries the explanation in QuotaReserved=False.
  ASSERT_EQ(env_.Create("team-a", "big", "default", 64), "");
  EXPECT_TRUE(WaitFor(
      [&] {
        Json b = env_.Workload("team-a", "big");
        const Json* c = Condition(b, "QuotaReserved");
        return c != nullptr && c->value("status", "") == "False" && !c->value("message", "").empty();
      },
      kWait))
      << Dump("team-a", "big");
  HttpResult why = env_.arteld->Get("/api/v1/namespaces/team-a/workloads/big/why");
  EXPECT_EQ(why.status, 200) << why.body;
  // The artel CLI's read verbs against a Kubernetes-mode arteld.
  auto cli = [&](std::vector<std::string> args, const std::string& want) {
    args.insert(args.begin(), ARTEL_BIN);
    args.push_back("--server");
    args.push_back(env_.arteld->url());
    std::string out, err;
    int rc = RunCommand(args, {}, &out, &err);
    EXPECT_EQ(rc, 0) << args[1] << ": " << out << err;
    EXPECT_NE(out.find(want), std::string::npos) << args[1] << ": " << out << err;
  };
  cli({"get", "wl", "-A"}, "a-1");
  cli({"why", "team-a/big"}, "Reason:");
  cli({"top"}, "team-a");
  cli({"events", "-A"}, "a-1");
}

// Borrowing, then reclaim when the owner returns: team-a borrows team-b's
// idle GPUs; team-b's workload reclaims them (Evicted + Preempted with reason
// InCohortReclamation); once the evicted workload's side clears its
// reservation, team-b's workload is admitted and the victim waits.
TEST_F(KubeController, kube_BorrowingAndReclaim) {
  ApplyTwoTeams();
  StartArteld();
  for (int i = 1; i <= 4; ++i) ASSERT_EQ(env_.Create("team-a", "a-" + std::to_string(i), "default", 1), "");
  for (int i = 1; i <= 4; ++i) ASSERT_TRUE(WaitReserved("team-a", "a-" + std::to_string(i), "team-a")) << i;
  ASSERT_EQ(env_.Create("team-b", "b-1", "default", 2), "");
  // Two of team-a's borrowed GPUs are reclaimed: the two newest workloads.
  std::vector<std::string> victims;
  ASSERT_TRUE(WaitFor(
      [&] {
        victims.clear();
        for (int i = 1; i <= 4; ++i)
          if (IsTrue(env_.Workload("team-a", "a-" + std::to_string(i)), "Evicted"))
            victims.push_back("a-" + std::to_string(i));
        return victims.size() == 2;
      },
      kWait))
      << victims.size();
  for (const std::string& v : victims) {
    Json w = env_.Workload("team-a", v);
    EXPECT_EQ(Reason(w, "Evicted"), "Preempted") << w.dump(1);
    EXPECT_TRUE(IsTrue(w, "Preempted")) << w.dump(1);
    EXPECT_EQ(Reason(w, "Preempted"), "InCohortReclamation") << w.dump(1);
    // Quota stays held until the workload's side lets go.
    EXPECT_TRUE(IsTrue(w, "QuotaReserved"));
  }
  EXPECT_FALSE(Reserved(env_.Workload("team-b", "b-1")));
  for (const std::string& v : victims) ASSERT_EQ(env_.ClearReservation("team-a", v), "");
  ASSERT_TRUE(WaitReserved("team-b", "b-1", "team-b")) << Dump("team-b", "b-1");
  for (const std::string& v : victims) {
    Json w = env_.Workload("team-a", v);
    EXPECT_FALSE(Reserved(w)) << w.dump(1);
    EXPECT_TRUE(WaitFor([&] { return IsTrue(env_.Workload("team-a", v), "Requeued"); }, kWait))
        << env_.Workload("team-a", v).dump(1);
  }
}

// Priority preemption inside one ClusterQueue (withinClusterQueue:
// LowerPriority): the low-priority workload is evicted with reason
// InClusterQueue and the high one admitted once the victim lets go.
TEST_F(KubeController, kube_PriorityPreemption) {
  ASSERT_EQ(env_.Apply(R"(apiVersion: v1
kind: Namespace
metadata: {name: solo}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: gpu}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: solo}
spec:
  namespaceSelector: {}
  preemption: {withinClusterQueue: LowerPriority}
  resourceGroups:
  - coveredResources: [cpu, nvidia.com/gpu]
    flavors:
    - name: gpu
      resources:
      - {name: cpu, nominalQuota: "8"}
      - {name: nvidia.com/gpu, nominalQuota: "2"}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: q, namespace: solo}
spec: {clusterQueue: solo}
)"),
            "");
  StartArteld();
  ASSERT_EQ(env_.Create("solo", "low-1", "q", 1, 0), "");
  ASSERT_EQ(env_.Create("solo", "low-2", "q", 1, 0), "");
  ASSERT_TRUE(WaitReserved("solo", "low-1", "solo"));
  ASSERT_TRUE(WaitReserved("solo", "low-2", "solo"));
  ASSERT_EQ(env_.Create("solo", "high", "q", 1, 100), "");
  std::string victim;
  ASSERT_TRUE(WaitFor(
      [&] {
        for (const char* n : {"low-1", "low-2"})
          if (IsTrue(env_.Workload("solo", n), "Evicted")) victim = n;
        return !victim.empty();
      },
      kWait));
  Json v = env_.Workload("solo", victim);
  EXPECT_EQ(Reason(v, "Preempted"), "InClusterQueue") << v.dump(1);
  EXPECT_FALSE(Reserved(env_.Workload("solo", "high")));
  ASSERT_EQ(env_.ClearReservation("solo", victim), "");
  ASSERT_TRUE(WaitReserved("solo", "high", "solo")) << Dump("solo", "high");
  EXPECT_FALSE(Reserved(env_.Workload("solo", victim)));
  // Finished frees the quota: the victim comes back.
  ASSERT_EQ(env_.Finish("solo", "high"), "");
  EXPECT_TRUE(WaitReserved("solo", victim, "solo")) << Dump("solo", victim);
}

// Fair sharing (arteld --fair-sharing): two teams flood a cohort whose idle
// pool lends 6 GPUs; with weights 2:1 the pool is split 4:2.
TEST_F(KubeController, kube_FairSharing) {
  ASSERT_EQ(env_.Apply(R"(apiVersion: v1
kind: Namespace
metadata: {name: team-a, labels: {artel.dev/team: team-a}}
---
apiVersion: v1
kind: Namespace
metadata: {name: team-b, labels: {artel.dev/team: team-b}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: a100}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: team-a}
spec:
  cohortName: shared
  namespaceSelector: {matchLabels: {artel.dev/team: team-a}}
  preemption: {reclaimWithinCohort: Any, withinClusterQueue: LowerPriority}
  fairSharing: {weight: "2"}
  resourceGroups:
  - coveredResources: [cpu, nvidia.com/gpu]
    flavors:
    - name: a100
      resources:
      - {name: cpu, nominalQuota: "16"}
      - {name: nvidia.com/gpu, nominalQuota: "2"}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: team-b}
spec:
  cohortName: shared
  namespaceSelector: {matchLabels: {artel.dev/team: team-b}}
  preemption: {reclaimWithinCohort: Any, withinClusterQueue: LowerPriority}
  fairSharing: {weight: "1"}
  resourceGroups:
  - coveredResources: [cpu, nvidia.com/gpu]
    flavors:
    - name: a100
      resources:
      - {name: cpu, nominalQuota: "16"}
      - {name: nvidia.com/gpu, nominalQuota: "2"}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: idle-pool}
spec:
  cohortName: shared
  resourceGroups:
  - coveredResources: [cpu, nvidia.com/gpu]
    flavors:
    - name: a100
      resources:
      - {name: cpu, nominalQuota: "48"}
      - {name: nvidia.com/gpu, nominalQuota: "6"}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: default, namespace: team-a}
spec: {clusterQueue: team-a}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: default, namespace: team-b}
spec: {clusterQueue: team-b}
)"),
            "");
  // Both teams' workloads exist before arteld starts: one decision over all.
  for (int i = 0; i < 10; ++i) {
    ASSERT_EQ(env_.Create("team-a", "a-" + std::to_string(i), "default", 1), "");
    ASSERT_EQ(env_.Create("team-b", "b-" + std::to_string(i), "default", 1), "");
  }
  StartArteld({"--fair-sharing"});
  auto count = [&](const std::string& cq) {
    int n = 0;
    for (const auto& [k, w] : env_.Workloads())
      if (AdmittedCq(w) == cq) n++;
    return n;
  };
  // Fair-sharing preemptions (InCohortFairSharing) hold the quota until the
  // victims' side lets go; the test plays the job framework's part.
  int preempted = 0;
  EXPECT_TRUE(WaitFor(
      [&] {
        for (const auto& [k, w] : env_.Workloads()) {
          if (Reserved(w) && IsTrue(w, "Evicted")) {
            EXPECT_EQ(Reason(w, "Preempted"), "InCohortFairSharing") << w.dump(1);
            std::string ns = w["metadata"]["namespace"], name = w["metadata"]["name"];
            if (env_.ClearReservation(ns, name).empty()) preempted++;
          }
        }
        return count("team-a") == 6 && count("team-b") == 4;
      },
      kWait))
      << "team-a " << count("team-a") << " team-b " << count("team-b");
  // The share of both teams is equal (Kueue's weighted share, x1000).
  HttpResult m = env_.arteld->Get("/metrics");
  auto share = [&](const std::string& cq) -> std::string {
    std::string key = "kueue_cluster_queue_weighted_share{cluster_queue=\"" + cq + "\"} ";
    size_t at = m.body.find(key);
    return at == std::string::npos ? "missing"
                                   : m.body.substr(at + key.size(), m.body.find('\n', at) - at - key.size());
  };
  EXPECT_EQ(share("team-a"), share("team-b")) << m.body;
  EXPECT_NE(share("team-a"), "0");
  EXPECT_GE(preempted, 1);
}

// An invalid ClusterQueue gets Active=False with a reason and message; the
// rest keeps working; fixing it makes it Active.
TEST_F(KubeController, kube_InvalidClusterQueueIsInactiveRestWorks) {
  ApplyTwoTeams();
  ASSERT_EQ(env_.Apply(R"(apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: broken}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu, nvidia.com/gpu]
    flavors:
    - name: no-such-flavor
      resources:
      - {name: cpu, nominalQuota: "8"}
      - {name: nvidia.com/gpu, nominalQuota: "1"}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: broken, namespace: team-a}
spec: {clusterQueue: broken}
)"),
            "");
  StartArteld();
  ASSERT_TRUE(WaitFor(
      [&] {
        Json cq = env_.Get("clusterqueues.kueue.x-k8s.io", "", "broken");
        const Json* c = Condition(cq, "Active");
        return c != nullptr && c->value("status", "") == "False";
      },
      kWait))
      << env_.Get("clusterqueues.kueue.x-k8s.io", "", "broken").dump(1);
  Json cq = env_.Get("clusterqueues.kueue.x-k8s.io", "", "broken");
  EXPECT_EQ(Reason(cq, "Active"), "FlavorNotFound") << cq.dump(1);
  EXPECT_NE(Message(cq, "Active").find("no-such-flavor"), std::string::npos) << cq.dump(1);
  ASSERT_EQ(env_.Create("team-a", "stuck", "broken", 1), "");
  ASSERT_EQ(env_.Create("team-a", "fine", "default", 1), "");
  EXPECT_TRUE(WaitReserved("team-a", "fine", "team-a")) << Dump("team-a", "fine");
  EXPECT_FALSE(Reserved(env_.Workload("team-a", "stuck")));
  // Fixed: the flavor appears, the queue turns Active and admits.
  ASSERT_EQ(
      env_.Apply(
          "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: no-such-flavor}\n"),
      "");
  EXPECT_TRUE(WaitFor(
      [&] { return IsTrue(env_.Get("clusterqueues.kueue.x-k8s.io", "", "broken"), "Active"); }, kWait));
  EXPECT_TRUE(WaitReserved("team-a", "stuck", "broken")) << Dump("team-a", "stuck");
}

// spec.active=false evicts an admitted Workload (reason Deactivated, as in
// Kueue v0.17); deleting a Workload frees its quota.
TEST_F(KubeController, kube_DeactivateAndDelete) {
  ApplyTwoTeams();
  StartArteld();
  ASSERT_EQ(env_.Create("team-a", "wl-x", "default", 4), "");
  ASSERT_TRUE(WaitReserved("team-a", "wl-x", "team-a"));
  ASSERT_EQ(env_.Create("team-a", "wl-y", "default", 4), "");
  ASSERT_TRUE(env_.Kubectl({"patch", "workloads.kueue.x-k8s.io", "wl-x", "-n", "team-a", "--type=merge", "-p",
                            R"({"spec":{"active":false}})"})
                  .ok());
  ASSERT_TRUE(WaitFor([&] { return IsTrue(env_.Workload("team-a", "wl-x"), "Evicted"); }, kWait))
      << Dump("team-a", "wl-x");
  Json x = env_.Workload("team-a", "wl-x");
  EXPECT_EQ(Reason(x, "Evicted"), "Deactivated") << x.dump(1);
  ASSERT_TRUE(env_.Kubectl({"delete", "workloads.kueue.x-k8s.io", "wl-x", "-n", "team-a"}).ok());
  EXPECT_TRUE(WaitReserved("team-a", "wl-y", "team-a")) << Dump("team-a", "wl-y");
}

// Every queue status follows every change, however the change comes: the
// controller rebuilds only the queues whose inputs changed since their last
// status, so a missed input would leave a stale count or usage here. Admit
// (team-a borrows from team-b), submit one that cannot fit, finish one,
// delete the pending one and the last admitted one; after each step every
// ClusterQueue and LocalQueue of the cohort shows the right counts and usage.
TEST_F(KubeController, kube_QueueStatusesFollowEveryChange) {
  ApplyTwoTeams();
  // No periodic full pass: every status below must come from a change the
  // controller saw (its dirty marking), not from a rebuild that happens anyway.
  StartArteld({"--kube-queue-status-full-pass-ms", "0"});
  struct Want {
    int pending, admitted;
    std::string gpus, borrowed;  // ClusterQueue: flavorsUsage a100/nvidia.com/gpu total, borrowed
  };
  auto gpu = [](const Json& st, const char* field) -> std::string {
    for (const Json& f : st.value("flavorsUsage", Json::array()))
      for (const Json& r : f.value("resources", Json::array()))
        if (r.value("name", "") == "nvidia.com/gpu")
          return r.contains(field) ? r[field].get<std::string>() : "-";
    return "none";
  };
  auto check = [&](const std::string& step, const Want& a, const Want& b) {
    auto matches = [&](const std::string& team, const Want& w, std::string* got) {
      Json cq = env_.Get("clusterqueues.kueue.x-k8s.io", "", team)["status"];
      Json lq = env_.Get("localqueues.kueue.x-k8s.io", team, "default")["status"];
      *got = team + " cq " + cq.dump() + "\n" + team + " lq " + lq.dump();
      return cq.value("pendingWorkloads", -1) == w.pending &&
             cq.value("admittedWorkloads", -1) == w.admitted &&
             cq.value("reservingWorkloads", -1) == w.admitted && gpu(cq, "total") == w.gpus &&
             gpu(cq, "borrowed") == w.borrowed && lq.value("pendingWorkloads", -1) == w.pending &&
             lq.value("admittedWorkloads", -1) == w.admitted && gpu(lq, "total") == w.gpus;
    };
    std::string got_a, got_b;
    EXPECT_TRUE(WaitFor([&] { return matches("team-a", a, &got_a) && matches("team-b", b, &got_b); }, kWait))
        << step << ":\n"
        << got_a << "\n"
        << got_b;
  };
  ASSERT_EQ(env_.Create("team-a", "a-1", "default", 1), "");
  ASSERT_EQ(env_.Create("team-a", "a-2", "default", 2), "");
  ASSERT_TRUE(WaitReserved("team-a", "a-1", "team-a"));
  ASSERT_TRUE(WaitReserved("team-a", "a-2", "team-a"));
  check("two admitted, one GPU borrowed", {0, 2, "3", "1"}, {0, 0, "0", "0"});
  ASSERT_EQ(env_.Create("team-a", "a-3", "default", 4), "");  // 3 + 4 > the cohort's 4
  check("one pending", {1, 2, "3", "1"}, {0, 0, "0", "0"});
  ASSERT_EQ(env_.Finish("team-a", "a-2"), "");
  check("a-2 finished", {1, 1, "1", "0"}, {0, 0, "0", "0"});
  ASSERT_TRUE(env_.Kubectl({"delete", "workloads.kueue.x-k8s.io", "a-3", "-n", "team-a"}).ok());
  check("a-3 deleted", {0, 1, "1", "0"}, {0, 0, "0", "0"});
  ASSERT_EQ(env_.Create("team-b", "b-1", "default", 2), "");
  ASSERT_TRUE(WaitReserved("team-b", "b-1", "team-b"));
  check("b-1 admitted", {0, 1, "1", "0"}, {0, 1, "2", "0"});
  ASSERT_TRUE(env_.Kubectl({"delete", "workloads.kueue.x-k8s.io", "a-1", "-n", "team-a"}).ok());
  check("a-1 deleted", {0, 0, "0", "0"}, {0, 1, "2", "0"});
}

// The ClusterRole of deploy/kubernetes/clusterrole.yaml is enough: arteld
// runs as a user bound to it (and nothing else) and admits, writes queue
// status and Events.
TEST_F(KubeController, kube_RunsWithTheShippedClusterRole) {
  ApplyTwoTeams();
  ASSERT_EQ(env_.Apply("apiVersion: v1\nkind: Namespace\nmetadata: {name: artel-system}\n"), "");
  ASSERT_TRUE(
      env_.Kubectl({"apply", "-f", std::string(ARTEL_SOURCE_DIR) + "/deploy/kubernetes/clusterrole.yaml"})
          .ok());
  ASSERT_TRUE(env_.Kubectl({"create", "clusterrolebinding", "artel-test-user",
                            "--clusterrole=artel-controller", "--user=artel-controller-test"})
                  .ok());
  auto kc = env_.k8s->UserKubeconfig("artel-controller-test", {});
  ASSERT_TRUE(kc.ok()) << kc.status().ToString();
  // Not an admin: it may not create ClusterQueues (the integrations of
  // issue 12 make it create Workloads, so the role grants that).
  EXPECT_FALSE(
      env_.k8s
          ->KubectlAs(*kc, {"create", "--validate=false", "-f", "-"},
                      "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: nope}\n"
                      "spec: {namespaceSelector: {}}\n")
          .ok());
  EXPECT_TRUE(env_.Get("clusterqueues.kueue.x-k8s.io", "", "nope").is_null());
  env_.arteld = std::make_unique<Arteld>(env_.dir);
  std::string error;
  ASSERT_TRUE(env_.arteld->Start({"--kubeconfig", *kc}, &error)) << error;
  ASSERT_EQ(env_.Create("team-a", "a-1", "default", 1), "");
  ASSERT_TRUE(WaitReserved("team-a", "a-1", "team-a")) << Dump("team-a", "a-1");
  EXPECT_TRUE(WaitFor(
      [&] {
        return env_.Get("clusterqueues.kueue.x-k8s.io", "", "team-a")["status"].value("admittedWorkloads",
                                                                                      -1) == 1;
      },
      kWait));
  EXPECT_TRUE(WaitFor(
      [&] {
        auto ev = env_.k8s->Kubectl({"get", "events", "-n", "team-a", "-o", "json"});
        if (!ev.ok()) return false;
        const Json list = Json::parse(*ev);
        for (const Json& e : list["items"])
          if (e.value("reason", "") == "Admitted") return true;
        return false;
      },
      kWait));
  EXPECT_EQ(env_.arteld->log().find("forbidden"), std::string::npos) << env_.arteld->log();
}

}  // namespace
}  // namespace artel::testing
