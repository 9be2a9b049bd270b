// No tenant learns another tenant's names (issue 10 section 6, audit D7).
//
// team-a fills the cluster (borrowing team-b's idle GPUs) with pods that
// ignore SIGTERM; team-b's workload reclaims, and waits for the evicted pods
// to stop (the grace period). Meanwhile and after, team-b must not see
// team-a's workload names, nor team-a team-b's: not in /metrics (403 for
// tenants), the victims' lastEviction, the Evicted watch events (follow=false
// and SSE), the preemptor's pending message, or /why. The admin still sees
// every name.

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "../server/harness.h"

namespace artel::testing {
namespace {

constexpr const char* kMetricsToken = "metrics-token-0001";

class NameRedactionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = TempDir("redaction");
    WriteFile(dir_ + "/cluster.yaml", kTwoTeamsManifests);
    WriteFile(dir_ + "/tokens.yaml", std::string(kTokensYaml) + "  - {token: " + kMetricsToken +
                                         ", user: prometheus, role: metrics}\n");
    d_ = std::make_unique<Arteld>(dir_);
    std::string err;
    ASSERT_TRUE(d_->Start({"--fake-gpus", "4xA100-80GB", "--tokens", dir_ + "/tokens.yaml", "-m",
                           dir_ + "/cluster.yaml", "--grace-period", "4", "--stop-workloads-on-exit"},
                          &err))
        << err;
  }
  void TearDown() override {
    for (const auto& w : d_->Get("/api/v1/workloads").json().value("items", Json::array())) {
      d_->Post("/api/v1/namespaces/" + w["metadata"].value("namespace", "") + "/workloads/" +
                   w["metadata"].value("name", "") + "/cancel",
               "");
    }
    EXPECT_TRUE(d_->Stop()) << d_->log();
    std::filesystem::remove_all(dir_);
  }
  Json Get(const std::string& path, const std::string& token) const { return d_->Get(path, token).json(); }

  std::string dir_;
  std::unique_ptr<Arteld> d_;
};

// `text` names no workload of namespace `ns` ("ns/...").
::testing::AssertionResult NamesNone(const std::string& text, const std::string& ns) {
  if (text.find(ns + "/") == std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "names a workload of " << ns << ": " << text;
}

TEST_F(NameRedactionTest, TenantsSeeOtherTeamsOnlyAsClusterQueueCounts) {
  const std::vector<std::string> stubborn = {"sh", "-c", "trap '' TERM; sleep 60"};
  // team-a takes all 4 GPUs: 2 of its own, 2 borrowed from idle team-b.
  for (int i = 1; i <= 4; ++i) {
    ASSERT_EQ(d_->Post("/api/v1/workloads",
                       Workload("team-a", "secret-a" + std::to_string(i), "default", 1, stubborn).dump(),
                       kTeamAToken)
                  .status,
              201);
  }
  ASSERT_TRUE(WaitFor(
      [&] {
        for (int i = 1; i <= 4; ++i) {
          if (d_->Phase("team-a", "secret-a" + std::to_string(i)) != "Running") return false;
        }
        return true;
      },
      15000))
      << d_->log();

  // /metrics names every team's pods: admin and the metrics role only.
  EXPECT_EQ(d_->Get("/metrics", kTeamAToken).status, 403);
  EXPECT_EQ(d_->Get("/metrics", kTeamBToken).status, 403);
  HttpResult m = d_->Get("/metrics", kMetricsToken);
  EXPECT_EQ(m.status, 200);
  EXPECT_NE(m.body.find("secret-a1"), std::string::npos) << "the scraper sees workload labels";
  EXPECT_EQ(d_->Get("/metrics", kAdminToken).status, 200);
  // The metrics token reads nothing else.
  EXPECT_EQ(d_->Get("/api/v1/workloads", kMetricsToken).status, 403);
  EXPECT_EQ(d_->Get("/api/v1/config", kMetricsToken).status, 403);
  EXPECT_EQ(Get("/api/v1/whoami", kMetricsToken).value("role", ""), "metrics");

  // team-b reclaims 2 GPUs; its workloads wait for the stubborn pods.
  ASSERT_EQ(d_->Post("/api/v1/workloads", Workload("team-b", "secret-b1", "default", 2, stubborn).dump(),
                     kTeamBToken)
                .status,
            201);
  const std::string b1 = "/api/v1/namespaces/team-b/workloads/secret-b1";
  Json admin_view;
  ASSERT_TRUE(WaitFor(
      [&] {
        admin_view = Get(b1, kAdminToken);
        return admin_view["status"]["pending"].value("reason", "") == "WaitingForEvictions";
      },
      10000))
      << admin_view.dump();
  // The admin sees the victims by name; team-b only as counts per ClusterQueue.
  EXPECT_NE(admin_view["status"]["pending"].value("message", "").find("team-a/secret-a"), std::string::npos)
      << admin_view.dump();
  Json b_view = Get(b1, kTeamBToken);
  std::string pending = b_view["status"]["pending"].value("message", "");
  EXPECT_TRUE(NamesNone(b_view.dump(), "team-a"));
  EXPECT_NE(pending.find("in ClusterQueue team-a"), std::string::npos) << pending;
  Json why_b = Get(b1 + "/why", kTeamBToken);
  EXPECT_TRUE(NamesNone(why_b.dump(), "team-a"));
  EXPECT_EQ(why_b.value("reason", ""), "WaitingForEvictions") << why_b.dump();
  Json why_admin = Get(b1 + "/why", kAdminToken);
  EXPECT_NE(why_admin.dump().find("team-a/secret-a"), std::string::npos) << why_admin.dump();
  // team-b's lists say nothing more.
  EXPECT_TRUE(NamesNone(d_->Get("/api/v1/workloads", kTeamBToken).body, "team-a"));

  // The victims: team-a sees that a workload of ClusterQueue team-b evicted
  // them, not which.
  std::vector<std::string> victims;
  ASSERT_TRUE(WaitFor(
      [&] {
        victims.clear();
        for (int i = 1; i <= 4; ++i) {
          std::string n = "secret-a" + std::to_string(i);
          if (Get("/api/v1/namespaces/team-a/workloads/" + n, kAdminToken)["status"].contains(
                  "lastEviction")) {
            victims.push_back(n);
          }
        }
        return victims.size() == 2;
      },
      10000));
  for (const auto& v : victims) {
    const std::string path = "/api/v1/namespaces/team-a/workloads/" + v;
    Json a_view = Get(path, kTeamAToken);
    const Json& le = a_view["status"]["lastEviction"];
    EXPECT_FALSE(le.contains("preemptor")) << le.dump();
    EXPECT_EQ(le.value("preemptorClusterQueue", ""), "team-b") << le.dump();
    EXPECT_NE(le.value("message", "").find("a workload in ClusterQueue team-b"), std::string::npos)
        << le.dump();
    EXPECT_TRUE(NamesNone(a_view.dump(), "team-b"));
    Json admin_le = Get(path, kAdminToken)["status"]["lastEviction"];
    EXPECT_EQ(admin_le.value("preemptor", ""), "team-b/secret-b1") << admin_le.dump();
  }
  EXPECT_TRUE(NamesNone(d_->Get("/api/v1/workloads", kTeamAToken).body, "team-b"));

  // Watch, follow=false: team-a's Evicted events carry the ClusterQueue only.
  Json events = Get("/api/v1/watch?follow=false&since=0", kTeamAToken);
  int evicted = 0;
  for (const auto& e : events.value("items", Json::array())) {
    if (e.value("type", "") != "Evicted") continue;
    ++evicted;
    EXPECT_FALSE(e.contains("preemptor")) << e.dump();
    EXPECT_EQ(e.value("preemptorClusterQueue", ""), "team-b") << e.dump();
  }
  EXPECT_EQ(evicted, 2) << events.dump();
  EXPECT_TRUE(NamesNone(events.dump(), "team-b"));
  Json admin_events = Get("/api/v1/watch?follow=false&since=0", kAdminToken);
  EXPECT_NE(admin_events.dump().find("\"preemptor\":\"team-b/secret-b1\""), std::string::npos);

  // Watch, SSE: the same.
  std::string stream;
  {
    httplib::Client c("127.0.0.1", d_->port());
    c.set_read_timeout(10, 0);
    c.Get("/api/v1/watch?since=0", {{"Authorization", std::string("Bearer ") + kTeamAToken}},
          [&](const char* data, size_t len) {
            stream.append(data, len);
            // Both Evicted events, each complete (an SSE event ends in a blank line).
            size_t first = stream.find("event: Evicted");
            size_t second = first == std::string::npos ? first : stream.find("event: Evicted", first + 1);
            return second == std::string::npos || stream.find("\n\n", second) == std::string::npos;
          });
  }
  EXPECT_NE(stream.find("event: Evicted"), std::string::npos) << stream;
  EXPECT_NE(stream.find("\"preemptorClusterQueue\":\"team-b\""), std::string::npos) << stream;
  EXPECT_TRUE(NamesNone(stream, "team-b"));

  // A tenant's user name does not reach the other tenant either.
  ASSERT_EQ(d_->Post("/api/v1/apply",
                     "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: cap, namespace: team-a}\n"
                     "spec: {hard: {requests.nvidia.com/gpu: '8'}}\n",
                     kTeamAToken, "application/yaml")
                .status,
            200);
  Json b_events = Get("/api/v1/watch?follow=false&since=0", kTeamBToken);
  bool config_event = false;
  for (const auto& e : b_events.value("items", Json::array())) {
    if (e.value("type", "") != "ConfigApplied") continue;
    config_event = true;
    EXPECT_NE(e.value("user", ""), "alice") << e.dump();
  }
  EXPECT_TRUE(config_event) << b_events.dump();
  EXPECT_TRUE(NamesNone(b_events.dump(), "team-a"));
}

TEST_F(NameRedactionTest, WhyCountsOtherTeamsCandidatesInsteadOfNamingThem) {
  // Both teams run at their guarantee; team-b's running work has a higher
  // priority than team-a's, so team-a's come first among the workloads
  // that "it would fit if these were preempted" lists for team-b's next one.
  for (int i = 1; i <= 2; ++i) {
    ASSERT_EQ(
        d_->Post("/api/v1/workloads",
                 Workload("team-a", "hidden-a" + std::to_string(i), "default", 1, {"sleep", "60"}).dump(),
                 kTeamAToken)
            .status,
        201);
    // Tenants set priority through a WorkloadPriorityClass (prod = 1000).
    Json b = Workload("team-b", "run-b" + std::to_string(i), "default", 1, {"sleep", "60"});
    b["spec"]["priorityClassName"] = "prod";
    ASSERT_EQ(d_->Post("/api/v1/workloads", b.dump(), kTeamBToken).status, 201);
  }
  ASSERT_TRUE(WaitFor(
      [&] {
        return d_->Phase("team-a", "hidden-a1") == "Running" &&
               d_->Phase("team-a", "hidden-a2") == "Running" && d_->Phase("team-b", "run-b1") == "Running" &&
               d_->Phase("team-b", "run-b2") == "Running";
      },
      15000))
      << d_->log();
  ASSERT_EQ(d_->Post("/api/v1/workloads", Workload("team-b", "next-b", "default", 1, {"sleep", "60"}).dump(),
                     kTeamBToken)
                .status,
            201);
  const std::string why = "/api/v1/namespaces/team-b/workloads/next-b/why";
  Json admin;
  ASSERT_TRUE(WaitFor(
      [&] {
        admin = Get(why, kAdminToken);
        return admin.value("message", "").find("it would fit if these were preempted") != std::string::npos;
      },
      10000))
      << admin.dump();
  ASSERT_NE(admin.dump().find("team-a/hidden-a"), std::string::npos) << admin.dump();
  Json b = Get(why, kTeamBToken);
  EXPECT_TRUE(NamesNone(b.dump(), "team-a"));
  EXPECT_NE(b.value("message", "").find("in ClusterQueue team-a"), std::string::npos) << b.dump();
  ASSERT_TRUE(b.contains("wouldPreemptOthers")) << b.dump();
  EXPECT_EQ(b["wouldPreemptOthers"][0].value("clusterQueue", ""), "team-a") << b.dump();
  EXPECT_TRUE(NamesNone(d_->Get("/api/v1/namespaces/team-b/workloads/next-b", kTeamBToken).body, "team-a"));
}

}  // namespace
}  // namespace artel::testing
