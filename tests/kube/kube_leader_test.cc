// Leader election end to end (src/kube/leader.h): two real arteld replicas
// with --leader-elect on one control plane; only the holder of the Lease
// writes. Under load the leader is killed with SIGKILL: the standby takes
// the Lease within 15 s, no Workload is admitted twice, none is lost, and
// the ClusterQueue's usage equals the sum of the admitted requests.
// Polls with deadlines; never sleeps.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <set>
#include <string>

#include "controller_env.h"

namespace artel::testing {
namespace {

constexpr int kWait = 60000;
constexpr int kWorkloads = 30;
constexpr int kQuota = 20;  // GPUs of the one ClusterQueue; each workload asks one

std::string Holder(KubeEnv& env) {
  Json l = env.Get("leases.coordination.k8s.io", "default", "artel-leader");
  return l.is_null() ? "" : l["spec"].value("holderIdentity", "");
}

std::vector<std::string> LeaderFlags(const std::string& id) {
  return {"--leader-elect",
          "--leader-elect-identity",
          id,
          "--leader-elect-lease-namespace",
          "default",
          "--leader-elect-lease-duration",
          "3s",
          "--leader-elect-renew-deadline",
          "2s",
          "--leader-elect-retry-period",
          "500ms"};
}

// The Admitted Events of each Workload ("ns/name" -> count).
std::map<std::string, int> AdmittedEvents(KubeEnv& env) {
  std::map<std::string, int> out;
  auto ev = env.Kubectl({"get", "events", "-n", "lead", "-o", "json"});
  if (!ev.ok()) return out;
  Json list = Json::parse(*ev, nullptr, false);
  if (list.is_discarded()) return out;
  for (const Json& e : list.value("items", Json::array()))
    if (e.value("reason", "") == "Admitted" && e["involvedObject"].value("kind", "") == "Workload")
      out["lead/" + e["involvedObject"].value("name", "")] += e.value("count", 1);
  return out;
}

TEST(KubeLeader, kube_FailoverUnderLoad) {
  KubeEnv env;
  std::string error;
  ASSERT_TRUE(env.Up(&error)) << error;
  ASSERT_EQ(env.Apply(R"(apiVersion: v1
kind: Namespace
metadata: {name: lead}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: gpu}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: lead}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu, nvidia.com/gpu]
    flavors:
    - name: gpu
      resources:
      - {name: cpu, nominalQuota: "100"}
      - {name: nvidia.com/gpu, nominalQuota: ")" +
                      std::to_string(kQuota) + R"("}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: q, namespace: lead}
spec: {clusterQueue: lead}
)"),
            "");
  // Replica a starts first and takes the Lease; b waits as a standby.
  ASSERT_TRUE(env.StartArteld(LeaderFlags("replica-a"), &error)) << error;
  Arteld& a = *env.arteld;
  ASSERT_TRUE(WaitFor([&] { return Holder(env) == "replica-a"; }, kWait)) << a.log();
  Arteld b(TempDir("arteld-b"));
  std::vector<std::string> bflags = {"--kubeconfig", env.k8s->kubeconfig(), "--log-level", "debug"};
  for (const std::string& f : LeaderFlags("replica-b")) bflags.push_back(f);
  ASSERT_TRUE(b.Start(bflags, &error)) << error;
  // Probes: both live and ready; /readyz says who leads.
  ASSERT_TRUE(WaitFor([&] { return a.Get("/readyz").json().value("leader", false); }, kWait))
      << a.Get("/readyz").body;
  HttpResult br = b.Get("/readyz");
  EXPECT_EQ(br.status, 200) << br.body;
  EXPECT_EQ(br.json().value("status", ""), "standby") << br.body;
  EXPECT_FALSE(br.json().value("leader", true)) << br.body;
  EXPECT_EQ(b.Get("/healthz").status, 200);
  EXPECT_NE(a.Get("/metrics").body.find("\nartel_leader 1\n"), std::string::npos);
  EXPECT_NE(b.Get("/metrics").body.find("\nartel_leader 0\n"), std::string::npos) << b.Get("/metrics").body;

  // Load: more Workloads than the quota holds, created in one request.
  std::string yaml;
  for (int i = 0; i < kWorkloads; ++i)
    yaml += "---\n" + KubeEnv::WorkloadYaml("lead", "w-" + std::to_string(i), "q", 1);
  auto created = env.Kubectl({"create", "-f", "-"}, yaml);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  auto admitted = [&](std::map<std::string, Json>* all) {
    *all = env.Workloads();
    int n = 0;
    for (const auto& [k, w] : *all)
      if (AdmittedCq(w) == "lead") ++n;
    return n;
  };
  std::map<std::string, Json> wls;
  // Kill the leader while it is admitting.
  ASSERT_TRUE(WaitFor([&] { return admitted(&wls) >= 3; }, kWait)) << a.log();
  // The standby has not loaded the cluster, let alone written to it.
  EXPECT_EQ(b.log().find("cluster state loaded"), std::string::npos) << b.log();
  a.Kill(SIGKILL);
  auto killed = std::chrono::steady_clock::now();
  ASSERT_TRUE(WaitFor([&] { return Holder(env) == "replica-b"; }, 15000)) << b.log();
  double takeover_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();
  EXPECT_LT(takeover_s, 15.0);
  Json lease = env.Get("leases.coordination.k8s.io", "default", "artel-leader");
  EXPECT_GE(lease["spec"].value("leaseTransitions", 0), 1) << lease.dump(1);
  EXPECT_TRUE(WaitFor([&] { return b.Get("/readyz").json().value("leader", false); }, kWait))
      << b.Get("/readyz").body;

  // None lost: every Workload is decided by the new leader, admitted up to
  // the quota and the rest pending with an explanation.
  auto settled = [&] {
    int adm = admitted(&wls);
    int pending = 0;
    for (const auto& [k, w] : wls) {
      const Json* c = Condition(w, "QuotaReserved");
      if (c != nullptr && c->value("status", "") == "False" && !c->value("message", "").empty()) ++pending;
    }
    return static_cast<int>(wls.size()) == kWorkloads && adm == kQuota && pending == kWorkloads - kQuota;
  };
  ASSERT_TRUE(WaitFor(settled, kWait)) << b.log().substr(b.log().size() > 6000 ? b.log().size() - 6000 : 0);

  // Five finish; the new leader admits the five that were pending longest.
  std::set<std::string> late;  // admitted by the new leader for sure
  for (const auto& [k, w] : wls)
    if (AdmittedCq(w) != "lead") late.insert(k);
  int finished = 0;
  for (const auto& [k, w] : wls) {
    if (finished == 5 || AdmittedCq(w) != "lead") continue;
    ASSERT_EQ(env.Finish("lead", w["metadata"].value("name", "")), "");
    ++finished;
  }
  ASSERT_TRUE(WaitFor(
      [&] {
        int adm = admitted(&wls), done = 0;
        for (const auto& [k, w] : wls) done += IsTrue(w, "Finished") ? 1 : 0;
        return adm == kQuota && done == 5;
      },
      kWait))
      << b.log();

  // Never admitted twice: at most one Admitted Event per Workload, and none
  // for a Workload that never held an admission. (An Event is posted after
  // its status write landed, so the killed leader may have left some
  // admissions without their Event: the count is at most one, not exactly.)
  std::map<std::string, int> events;
  int with_admission = 0;
  ASSERT_TRUE(WaitFor(
      [&] {
        events = AdmittedEvents(env);
        with_admission = 0;
        for (const auto& [k, w] : wls)
          if (AdmittedCq(w) == "lead" || IsTrue(w, "Finished")) ++with_admission;
        // The Events of the admissions the new leader made after the
        // finishes have all arrived.
        int late_admitted = 0;
        for (const std::string& k : late) {
          if (AdmittedCq(wls[k]) != "lead") continue;
          ++late_admitted;
          if (events.count(k) == 0) return false;
        }
        return late_admitted == 5;
      },
      kWait))
      << events.size();
  for (const auto& [k, n] : events) {
    EXPECT_EQ(n, 1) << k;
    EXPECT_TRUE(AdmittedCq(wls[k]) == "lead" || IsTrue(wls[k], "Finished")) << k << wls[k].dump(1);
  }
  EXPECT_EQ(with_admission, kQuota + 5);

  // The ClusterQueue's usage is the sum of the admitted requests.
  auto usage = [&] {
    Json cq = env.Get("clusterqueues.kueue.x-k8s.io", "", "lead");
    for (const Json& f : cq["status"].value("flavorsUsage", Json::array()))
      for (const Json& r : f.value("resources", Json::array()))
        if (r.value("name", "") == "nvidia.com/gpu") return r.value("total", std::string());
    return std::string();
  };
  EXPECT_TRUE(WaitFor([&] { return usage() == std::to_string(kQuota); }, kWait)) << usage();
  EXPECT_TRUE(WaitFor(
      [&] {
        Json cq = env.Get("clusterqueues.kueue.x-k8s.io", "", "lead");
        return cq["status"].value("admittedWorkloads", -1) == kQuota &&
               cq["status"].value("pendingWorkloads", -1) == kWorkloads - kQuota - 5;
      },
      kWait))
      << env.Get("clusterqueues.kueue.x-k8s.io", "", "lead").dump(1);

  // A leader that cannot renew (the API server is gone) stops writing and
  // exits non-zero once the renew deadline (2 s) has passed, before the
  // lease (3 s) could expire for anyone else.
  ASSERT_TRUE(env.k8s->StopApiServer().ok());
  auto stopped = std::chrono::steady_clock::now();
  int code = 0;
  ASSERT_TRUE(b.WaitExit(15000, &code)) << b.log();
  double exit_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - stopped).count();
  EXPECT_EQ(code, 1);
  EXPECT_LT(exit_s, 3.0);
  EXPECT_NE(b.log().find("lost the lease"), std::string::npos) << b.log();
  ASSERT_TRUE(env.k8s->StartApiServer().ok());

  // A fresh replica takes the expired Lease; a clean stop releases it at
  // once (no holder), so that the next one need not wait.
  Arteld c(TempDir("arteld-c"));
  std::vector<std::string> cflags = {"--kubeconfig", env.k8s->kubeconfig()};
  for (const std::string& f : LeaderFlags("replica-c")) cflags.push_back(f);
  ASSERT_TRUE(c.Start(cflags, &error)) << error;
  ASSERT_TRUE(WaitFor([&] { return Holder(env) == "replica-c"; }, kWait)) << c.log();
  ASSERT_TRUE(WaitFor([&] { return c.Get("/readyz").json().value("leader", false); }, kWait));
  EXPECT_TRUE(c.Stop()) << c.log();
  EXPECT_EQ(Holder(env), "");
  lease = env.Get("leases.coordination.k8s.io", "default", "artel-leader");
  EXPECT_GE(lease["spec"].value("leaseTransitions", 0), 2) << lease.dump(1);
}

}  // namespace
}  // namespace artel::testing
