// The two-teams story and preemption signals, end to end: real arteld, real
// CLI, real processes.

#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <thread>

#include "harness.h"

namespace artel::testing {
namespace {

class StoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = TempDir("story");
    WriteFile(dir_ + "/cluster.yaml", kTwoTeamsManifests);
    WriteFile(dir_ + "/tokens.yaml", kTokensYaml);
    d_ = std::make_unique<Arteld>(dir_);
    std::string err;
    ASSERT_TRUE(d_->Start({"--fake-gpus", "4xA100-80GB", "--tokens", dir_ + "/tokens.yaml", "-m",
                           dir_ + "/cluster.yaml", "--grace-period", "1", "--stop-workloads-on-exit"},
                          &err))
        << err;
  }
  void TearDown() override {
    // Cancel whatever still runs so no process outlives the test.
    auto list = d_->Get("/api/v1/workloads").json();
    for (const auto& w : list.value("items", Json::array())) {
      std::string phase = w["status"].value("phase", "");
      if (phase != "Succeeded" && phase != "Failed" && phase != "Cancelled") {
        d_->Post("/api/v1/namespaces/" + w["metadata"].value("namespace", "") + "/workloads/" +
                     w["metadata"].value("name", "") + "/cancel",
                 "");
      }
    }
    EXPECT_TRUE(WaitFor(
        [&] {
          return d_->Get("/metrics").body.find("artel_workloads{phase=\"Running\"}") == std::string::npos;
        },
        10000));
    EXPECT_TRUE(d_->Stop()) << d_->log();
    std::filesystem::remove_all(dir_);
  }
  int Cli(const std::vector<std::string>& args, const std::string& token, std::string* out = nullptr) {
    std::vector<std::string> argv = {ARTEL_BIN};
    argv.insert(argv.end(), args.begin(), args.end());
    std::string o, e;
    int rc = RunCommand(argv, {{"ARTEL_SERVER", d_->url()}, {"ARTEL_TOKEN", token}, {"HOME", dir_}}, &o, &e);
    if (out) *out = o + e;
    return rc;
  }

  std::string dir_;
  std::unique_ptr<Arteld> d_;
};

TEST_F(StoryTest, TeamAFillsIdleClusterThenTeamBReclaimsThenAResumes) {
  // 1. team A fills the idle cluster (its 2 GPUs plus team B's idle 2) through the CLI.
  for (int i = 1; i <= 4; ++i) {
    std::string out;
    ASSERT_EQ(Cli({"run", "--queue", "team-a/default", "--gpus", "1", "--name", "a-" + std::to_string(i),
                   "--", "sleep", "60"},
                  kTeamAToken, &out),
              0)
        << out;
  }
  ASSERT_TRUE(WaitFor(
      [&] {
        for (int i = 1; i <= 4; ++i) {
          if (d_->Phase("team-a", "a-" + std::to_string(i)) != "Running") return false;
        }
        return true;
      },
      15000))
      << d_->log();
  std::string table;
  ASSERT_EQ(Cli({"get", "wl", "-n", "team-a"}, kTeamAToken, &table), 0);
  EXPECT_NE(table.find("a-4    default   Running   team-a"), std::string::npos) << table;

  // 2. team B's workload arrives: two of A's borrowed GPUs are reclaimed.
  auto t0 = std::chrono::steady_clock::now();
  auto r = d_->Post("/api/v1/workloads", Workload("team-b", "b-1", "default", 2, {"sleep", "2"}).dump(),
                    kTeamBToken);
  ASSERT_EQ(r.status, 201) << r.body;
  ASSERT_TRUE(WaitFor([&] { return d_->Phase("team-b", "b-1") == "Running"; }, 10000)) << d_->log();
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(secs, 5.0) << "B should get its guarantee within seconds";
  int pending = 0, running = 0;
  for (int i = 1; i <= 4; ++i) {
    auto w = d_->Get("/api/v1/namespaces/team-a/workloads/a-" + std::to_string(i)).json();
    std::string phase = w["status"].value("phase", "");
    if (phase == "Pending") {
      ++pending;
      EXPECT_EQ(w["status"]["lastEviction"].value("reason", ""), "InCohortReclamation");
      EXPECT_EQ(w["status"]["lastEviction"].value("preemptor", ""), "team-b/b-1");
    }
    running += phase == "Running";
  }
  EXPECT_EQ(pending, 2);
  EXPECT_EQ(running, 2);
  std::string why;
  EXPECT_EQ(Cli({"get", "cq", "-o", "wide"}, kAdminToken, &why), 0);
  EXPECT_NE(why.find("team-b"), std::string::npos) << why;

  // The metrics say what happened, with Kueue's names.
  std::string m = d_->Get("/metrics").body;
  EXPECT_NE(m.find("kueue_evicted_workloads_total{cluster_queue=\"team-a\",reason=\"Preempted\"} 2"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("kueue_preempted_workloads_total{preempting_cluster_queue=\"team-b\",reason="
                   "\"InCohortReclamation\"} 2"),
            std::string::npos);
  EXPECT_NE(
      m.find("kueue_cluster_queue_nominal_quota{cohort=\"shared\",cluster_queue=\"team-a\",flavor=\"a100\","
             "resource=\"nvidia.com/gpu\"} 2"),
      std::string::npos);
  EXPECT_NE(m.find("artel_reclaim_latency_seconds_count{cluster_queue=\"team-b\"} 1"), std::string::npos);
  EXPECT_NE(m.find("artel_team_borrowed_gpus{team=\"team-a\",kind=\"cluster_queue\"} 0"), std::string::npos);
  EXPECT_NE(m.find("artel_gpu_utilization_percent{gpu=\"0\""), std::string::npos);

  // 3. B finishes; A's requeued work resumes.
  ASSERT_TRUE(WaitFor([&] { return d_->Phase("team-b", "b-1") == "Succeeded"; }, 15000));
  ASSERT_TRUE(WaitFor(
      [&] {
        for (int i = 1; i <= 4; ++i) {
          if (d_->Phase("team-a", "a-" + std::to_string(i)) != "Running") return false;
        }
        return true;
      },
      15000))
      << d_->log();
  std::string logs;
  EXPECT_EQ(Cli({"logs", "team-b/b-1"}, kTeamBToken, &logs), 0);
  EXPECT_EQ(Cli({"cancel", "a-1", "-n", "team-a"}, kTeamAToken), 0);
  EXPECT_EQ(Cli({"cancel", "a-2", "-n", "team-a"}, kTeamBToken), 5);  // forbidden namespace
  EXPECT_EQ(Cli({"get", "wl", "nope", "-n", "team-a"}, kTeamAToken), 4);
}

TEST_F(StoryTest, PreemptedProcessGetsSigtermThenSigkillAfterGrace) {
  std::string mark = dir_ + "/mark";
  // Ignores SIGTERM (records it), so only SIGKILL can end it.
  Json w = Workload("team-a", "stubborn", "default", 4,
                    {"sh", "-c",
                     "trap 'echo TERM >> " + mark + "' TERM; echo started >> " + mark +
                         "; while true; do sleep 0.05; done"});
  w["spec"]["terminationGracePeriodSeconds"] = 1;
  ASSERT_EQ(d_->Post("/api/v1/workloads", w.dump(), kTeamAToken).status, 201);
  ASSERT_TRUE(WaitFor([&] { return ReadFile(mark).find("started") != std::string::npos; }, 10000))
      << d_->log();
  // The pod may print before arteld has recorded its start: poll for the pid.
  int pid = 0;
  ASSERT_TRUE(WaitFor(
      [&] {
        Json st = d_->Get("/api/v1/namespaces/team-a/workloads/stubborn").json()["status"];
        if (st.contains("pods") && !st["pods"].empty()) pid = st["pods"][0].value("pid", 0);
        return pid > 0;
      },
      10000));

  ASSERT_EQ(d_->Post("/api/v1/workloads", Workload("team-b", "owner", "default", 2, {"sleep", "30"}).dump(),
                     kTeamBToken)
                .status,
            201);
  ASSERT_TRUE(WaitFor([&] { return d_->Phase("team-a", "stubborn") == "Evicting"; }, 10000));
  auto evicting_at = std::chrono::steady_clock::now();
  ASSERT_TRUE(WaitFor([&] { return ReadFile(mark).find("TERM") != std::string::npos; }, 5000))
      << "no SIGTERM seen";
  // Still there within the grace period: SIGTERM alone did not end it.
  EXPECT_EQ(kill(pid, 0), 0);
  ASSERT_TRUE(WaitFor([&] { return d_->Phase("team-a", "stubborn") == "Pending"; }, 10000));
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - evicting_at).count();
  EXPECT_GE(secs, 0.8) << "evicted before the grace period ran out";
  EXPECT_NE(kill(pid, 0), 0) << "the process survived SIGKILL";
  ASSERT_TRUE(WaitFor([&] { return d_->Phase("team-b", "owner") == "Running"; }, 10000));
}

}  // namespace
}  // namespace artel::testing
