// Smaller defects of issue 10 (section 7), end to end on the real arteld and
// the real artel CLI: `run` argument parsing, start-up manifest errors, the
// preemption tie-break among workloads admitted at the same instant (also
// after a restart), and the GPU each pod is shown on.

#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <set>
#include <sstream>

#include "harness.h"

namespace artel::testing {
namespace {

class SmallDefectsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = TempDir("small");
    WriteFile(dir_ + "/cluster.yaml", kTwoTeamsManifests);
    WriteFile(dir_ + "/tokens.yaml", kTokensYaml);
    d_ = std::make_unique<Arteld>(dir_);
  }
  void TearDown() override {
    if (d_->running()) {
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
    }
    std::filesystem::remove_all(dir_);
  }
  // The cluster is applied through the API on the first start (not with
  // -m: startup manifests are file-managed, and the tests change them).
  bool Start(const std::vector<std::string>& extra = {}, std::string* err = nullptr) {
    std::vector<std::string> args = {"--tokens", dir_ + "/tokens.yaml", "--grace-period", "1",
                                     "--stop-workloads-on-exit"};
    args.insert(args.end(), extra.begin(), extra.end());
    if (!d_->Start(args, err)) return false;
    if (applied_) return true;
    auto r = d_->Post("/api/v1/apply", ReadFile(dir_ + "/cluster.yaml"), kAdminToken, "application/yaml");
    if (r.status != 200) {
      if (err) *err = "apply: " + std::to_string(r.status) + " " + r.body;
      return false;
    }
    applied_ = true;
    return true;
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
  bool applied_ = false;
};

// `-e K=V -- cmd --flag`: a repeatable option just before `--` used to take
// the `--` as the end of its list, so that the command's flags were read as
// artel's ("The following argument was not expected: --epochs").
TEST_F(SmallDefectsTest, RunCommandAfterDoubleDashKeepsItsFlags) {
  std::string err;
  ASSERT_TRUE(Start({"--fake-gpus", "4xA100-80GB"}, &err)) << err;
  std::string out;
  ASSERT_EQ(Cli({"run", "-q", "team-a/default", "--name", "env-last", "-e", "FOO=1", "-e", "BAR=2", "--",
                 "sh", "-c", "exit 0", "--epochs", "3"},
                kTeamAToken, &out),
            0)
      << out;
  ASSERT_EQ(Cli({"run", "-q", "team-a/default", "--name", "selector-last", "--node-selector",
                 "nvidia.com/gpu.product=NVIDIA-A100-SXM4-80GB", "--", "sh", "-c", "exit 0"},
                kTeamAToken, &out),
            0)
      << out;
  auto w = d_->Get("/api/v1/namespaces/team-a/workloads/env-last").json();
  const Json& ps = w["spec"]["podSets"][0];
  EXPECT_EQ(ps["command"], Json({"sh", "-c", "exit 0", "--epochs", "3"})) << w.dump();
  std::string env = ps.dump();
  EXPECT_NE(env.find("FOO"), std::string::npos) << env;
  EXPECT_NE(env.find("BAR"), std::string::npos) << env;
  auto s = d_->Get("/api/v1/namespaces/team-a/workloads/selector-last").json();
  EXPECT_EQ(s["spec"]["podSets"][0]["command"], Json({"sh", "-c", "exit 0"})) << s.dump();
}

// A start-up manifest error names the file and the line in it, not the
// joined text ("request:1215:9").
TEST_F(SmallDefectsTest, StartupManifestErrorNamesTheFile) {
  std::filesystem::create_directories(dir_ + "/manifests");
  WriteFile(dir_ + "/manifests/a-good.yaml", kTwoTeamsManifests);
  WriteFile(dir_ + "/manifests/b-bad.yaml",
            "apiVersion: kueue.x-k8s.io/v1beta2\n"
            "kind: ResourceFlavor\n"
            "metadata: {name: h100}\n"
            "---\n"
            "apiVersion: kueue.x-k8s.io/v1beta2\n"
            "kind: ClusterQueue\n"
            "metadata: {name: broken}\n"
            "spec:\n"
            "  cohortNmae: shared\n");
  std::string err;
  ASSERT_FALSE(d_->Start({"--tokens", dir_ + "/tokens.yaml", "-m", dir_ + "/manifests"}, &err));
  EXPECT_NE(err.find(dir_ + "/manifests/b-bad.yaml:9:"), std::string::npos) << err;
  EXPECT_EQ(err.find("request:"), std::string::npos) << err;
}

// Workloads admitted at the same instant: the victim is the one admitted
// last (Kueue orders candidates by a later quota reservation first), and
// the order survives a restart of arteld.
TEST_F(SmallDefectsTest, SameInstantAdmissionsEvictTheLastAdmittedAlsoAfterRestart) {
  std::string err;
  ASSERT_TRUE(Start({"--fake-gpus", "4xA100-80GB"}, &err)) << err;
  const std::string held =
      "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: team-a}\nspec:\n"
      "  cohortName: shared\n  stopPolicy: %s\n"
      "  namespaceSelector: {matchLabels: {artel.dev/team: team-a}}\n"
      "  preemption: {reclaimWithinCohort: Any, withinClusterQueue: LowerPriority}\n"
      "  resourceGroups:\n    - coveredResources: [nvidia.com/gpu]\n      flavors:\n"
      "        - name: a100\n          resources: [{name: nvidia.com/gpu, nominalQuota: 2}]\n";
  auto with_policy = [&](const std::string& p) {
    std::string s = held;
    s.replace(s.find("%s"), 2, p);
    return s;
  };
  // Held: the three wait; released: one cycle admits all three at one instant.
  ASSERT_EQ(d_->Post("/api/v1/apply", with_policy("Hold"), kAdminToken, "application/yaml").status, 200);
  for (int i = 1; i <= 3; ++i) {
    auto r = d_->Post("/api/v1/workloads",
                      Workload("team-a", "a-" + std::to_string(i), "default", 1, {"sleep", "60"}).dump(),
                      kTeamAToken);
    ASSERT_EQ(r.status, 201) << r.body;
  }
  ASSERT_EQ(d_->Post("/api/v1/apply", with_policy("None"), kAdminToken, "application/yaml").status, 200);
  auto all_running = [&] {
    for (int i = 1; i <= 3; ++i) {
      if (d_->Phase("team-a", "a-" + std::to_string(i)) != "Running") return false;
    }
    return true;
  };
  ASSERT_TRUE(WaitFor(all_running, 15000)) << d_->log();
  int64_t at = -1;
  for (int i = 1; i <= 3; ++i) {
    auto w = d_->Get("/api/v1/namespaces/team-a/workloads/a-" + std::to_string(i)).json();
    int64_t t = w["status"].value("admittedAt", int64_t{-1});
    if (at < 0) at = t;
    ASSERT_EQ(t, at) << "the three must be admitted at one instant for this test: " << w.dump();
  }

  // Restart after a crash: the admissions are restored from the journal and
  // the running pods adopted.
  d_->Kill(SIGKILL);
  ASSERT_TRUE(Start({"--fake-gpus", "4xA100-80GB"}, &err)) << err;
  ASSERT_TRUE(WaitFor(all_running, 15000)) << d_->log();

  // team-b reclaims one GPU (4 GPUs, team-a holds 3): a-3, admitted last.
  auto r = d_->Post("/api/v1/workloads", Workload("team-b", "b-1", "default", 2, {"sleep", "60"}).dump(),
                    kTeamBToken);
  ASSERT_EQ(r.status, 201) << r.body;
  ASSERT_TRUE(WaitFor([&] { return d_->Phase("team-b", "b-1") == "Running"; }, 15000)) << d_->log();
  EXPECT_EQ(d_->Phase("team-a", "a-1"), "Running");
  EXPECT_EQ(d_->Phase("team-a", "a-2"), "Running");
  auto a3 = d_->Get("/api/v1/namespaces/team-a/workloads/a-3").json();
  EXPECT_EQ(a3["status"]["lastEviction"].value("reason", ""), "InCohortReclamation") << a3.dump();
}

// Pods on MIG instances are shown on the GPU the placement put them on, and
// only there: with 17 GPUs, "GPU-fake-<host>-1" is a prefix of the MIG GPU
// "GPU-fake-<host>-16", and a substring match put every MIG pod on GPU 1
// too. The GPU list says which slices are used, and by whom.
TEST_F(SmallDefectsTest, MigPodsAreShownOnTheirOwnGpuWithTheirSlices) {
  std::string err;
  ASSERT_TRUE(Start({"--fake-gpus", "16xA100-80GB,1xA100-80GB:mig"}, &err)) << err;
  const char* mig_quota = R"(apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: a100-mig}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: team-a}
spec:
  cohortName: shared
  namespaceSelector: {matchLabels: {artel.dev/team: team-a}}
  resourceGroups:
    - coveredResources: [nvidia.com/gpu]
      flavors:
        - name: a100
          resources: [{name: nvidia.com/gpu, nominalQuota: 2}]
    - coveredResources: [nvidia.com/mig-1g.10gb]
      flavors:
        - name: a100-mig
          resources: [{name: nvidia.com/mig-1g.10gb, nominalQuota: 7}]
)";
  ASSERT_EQ(d_->Post("/api/v1/apply", mig_quota, kAdminToken, "application/yaml").status, 200);
  // A whole-GPU workload first, so that GPU 1 is someone else's: the MIG
  // pods must not be shown there.
  auto whole = d_->Post("/api/v1/workloads",
                        Workload("team-a", "whole", "default", 2, {"sleep", "60"}).dump(), kTeamAToken);
  ASSERT_EQ(whole.status, 201) << whole.body;
  ASSERT_TRUE(WaitFor([&] { return d_->Phase("team-a", "whole") == "Running"; }, 15000)) << d_->log();
  Json wl = Workload("team-a", "mig", "default", 0, {"sleep", "60"});
  Json& ps = wl["spec"]["podSets"][0];
  ps["count"] = 3;
  ps["requests"] = {{"nvidia.com/mig-1g.10gb", "1"}};
  auto r = d_->Post("/api/v1/workloads", wl.dump(), kTeamAToken);
  ASSERT_EQ(r.status, 201) << r.body;
  ASSERT_TRUE(WaitFor([&] { return d_->Phase("team-a", "mig") == "Running"; }, 15000)) << d_->log();
  auto w = d_->Get("/api/v1/namespaces/team-a/workloads/mig", kTeamAToken).json();
  const Json& pods = w["status"]["pods"];
  ASSERT_EQ(pods.size(), 3u) << w.dump();
  std::string mig_gpu;
  std::set<std::string> slice_uuids;
  for (const auto& p : pods) {
    ASSERT_EQ(p["gpus"].size(), 1u) << p.dump();
    if (mig_gpu.empty()) mig_gpu = p["gpus"][0].get<std::string>();
    EXPECT_EQ(p["gpus"][0], mig_gpu) << p.dump();
    ASSERT_EQ(p["migSlices"].size(), 1u) << p.dump();
    EXPECT_EQ(p["migSlices"][0].value("profile", ""), "1g.10gb");
    EXPECT_EQ(p["migSlices"][0].value("gpu", ""), mig_gpu);
    slice_uuids.insert(p["migSlices"][0].value("uuid", ""));
  }
  EXPECT_EQ(slice_uuids.size(), 3u);
  EXPECT_EQ(mig_gpu.substr(mig_gpu.size() - 3), "-16") << mig_gpu;

  auto gpus = d_->Get("/api/v1/gpus", kTeamAToken).json();
  int with_mig_pods = 0;
  for (const auto& g : gpus["items"]) {
    if (g.value("uuid", "") == mig_gpu) {
      ASSERT_TRUE(g.contains("migSlices")) << g.dump();
      EXPECT_EQ(g["migSlices"].value("used", 0), 3) << g.dump();
      EXPECT_EQ(g["migSlices"].value("total", 0), 7) << g.dump();
      ASSERT_EQ(g["migSlices"]["instances"].size(), 3u) << g.dump();
      for (const auto& s : g["migSlices"]["instances"]) EXPECT_EQ(s.value("workload", ""), "team-a/mig");
      ++with_mig_pods;
    } else {
      EXPECT_NE(g.value("workload", ""), "team-a/mig")
          << "GPU " << g.value("uuid", "") << " is not the pods' GPU";
      EXPECT_FALSE(g.contains("users")) << g.dump();
    }
  }
  EXPECT_EQ(with_mig_pods, 1);
  std::string table;
  ASSERT_EQ(Cli({"get", "gpus"}, kTeamAToken, &table), 0) << table;
  EXPECT_NE(table.find("3/7"), std::string::npos) << table;
  EXPECT_NE(table.find("main-2:1g.10gb"), std::string::npos) << table;

  // Quota per flavor: whole GPUs and MIG instances are never added up
  // (team-a: 2 GPUs of a100 and 7 MIG 1g.10gb instances, not "9").
  // The cells of the first table line whose first cells are `head`.
  auto row = [](const std::string& text, const std::vector<std::string>& head) {
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
      std::vector<std::string> c;
      std::istringstream in(line);
      for (std::string w; in >> w;) c.push_back(w);
      if (c.size() >= head.size() && std::equal(head.begin(), head.end(), c.begin())) return c;
    }
    return std::vector<std::string>{};
  };
  ASSERT_EQ(Cli({"top"}, kAdminToken, &table), 0) << table;
  auto mig_row = row(table, {"cq/team-a", "a100-mig/mig-1g.10gb"});
  ASSERT_GE(mig_row.size(), 5u) << table;
  EXPECT_EQ(mig_row[2], "7") << table;  // guaranteed
  EXPECT_EQ(mig_row[3], "3") << table;  // used
  auto gpu_row = row(table, {"cq/team-a", "a100"});
  ASSERT_GE(gpu_row.size(), 5u) << table;
  EXPECT_EQ(gpu_row[2], "2") << table;
  EXPECT_EQ(gpu_row[3], "2") << table;  // the whole-GPU workload
  ASSERT_EQ(Cli({"get", "cq", "team-a"}, kAdminToken, &table), 0) << table;
  EXPECT_NE(table.find("GPU-FLAVOR"), std::string::npos) << table;
  auto cq_mig = row(table, {"team-a", "shared", "0", "2", "a100-mig/mig-1g.10gb"});
  ASSERT_EQ(cq_mig.size(), 7u) << table;
  EXPECT_EQ(cq_mig[5], "3") << table;  // usage
  EXPECT_EQ(cq_mig[6], "7") << table;  // nominal
  ASSERT_EQ(Cli({"describe", "cq", "team-a"}, kAdminToken, &table), 0) << table;
  auto desc = row(table, {"a100-mig"});
  ASSERT_EQ(desc.size(), 7u) << table;
  EXPECT_EQ(desc[1], "nvidia.com/mig-1g.10gb");
  EXPECT_EQ(desc[2], "7");  // nominal
  EXPECT_EQ(desc[5], "3");  // used
}

// `why` through the API and the CLI: one entry per flavor tried, the headline
// from the flavor that came closest, and "no preemption can help" only when
// no flavor can ever hold the request.
TEST_F(SmallDefectsTest, WhyListsEveryFlavorTried) {
  std::string err;
  // 8 GPUs: a pod of 6 fits the node, so only quota can rule it out (a
  // pod larger than every node is Infeasible before any quota is tried).
  ASSERT_TRUE(Start({"--fake-gpus", "8xA100-80GB"}, &err)) << err;
  const char* two_flavors = R"(apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: standard}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: team-a}
spec:
  cohortName: shared
  namespaceSelector: {matchLabels: {artel.dev/team: team-a}}
  resourceGroups:
    - coveredResources: [nvidia.com/gpu]
      flavors:
        - name: standard
          resources: [{name: nvidia.com/gpu, nominalQuota: 0}]
        - name: a100
          resources: [{name: nvidia.com/gpu, nominalQuota: 2}]
)";
  ASSERT_EQ(d_->Post("/api/v1/apply", two_flavors, kAdminToken, "application/yaml").status, 200);
  // team-b holds its own 2 GPUs: team-a can get 2 now, 4 at most.
  ASSERT_EQ(d_->Post("/api/v1/workloads", Workload("team-b", "b-1", "default", 2, {"sleep", "60"}).dump(),
                     kTeamBToken)
                .status,
            201);
  ASSERT_TRUE(WaitFor([&] { return d_->Phase("team-b", "b-1") == "Running"; }, 15000)) << d_->log();
  ASSERT_EQ(
      d_->Post("/api/v1/workloads", Workload("team-a", "later", "default", 4).dump(), kTeamAToken).status,
      201);
  ASSERT_EQ(
      d_->Post("/api/v1/workloads", Workload("team-a", "never", "default", 6).dump(), kTeamAToken).status,
      201);
  Json why;
  ASSERT_TRUE(WaitFor(
      [&] {
        why = d_->Get("/api/v1/namespaces/team-a/workloads/later/why", kTeamAToken).json();
        return why.value("reason", "") == "InsufficientQuota";
      },
      10000))
      << why.dump();
  EXPECT_EQ(why.value("flavor", ""), "a100") << why.dump();
  ASSERT_EQ(why["flavors"].size(), 2u) << why.dump();
  EXPECT_EQ(why["flavors"][0].value("flavor", ""), "standard");
  EXPECT_EQ(why["flavors"][0].value("outcome", ""), "ExceedsMaximum");
  EXPECT_EQ(why["flavors"][0].value("maxAvailable", ""), "0");
  EXPECT_EQ(why["flavors"][1].value("flavor", ""), "a100");
  EXPECT_EQ(why["flavors"][1].value("outcome", ""), "InsufficientUnusedQuota");
  EXPECT_EQ(why["flavors"][1].value("missing", ""), "2");
  EXPECT_EQ(why["flavors"][1].value("maxAvailable", ""), "4");
  EXPECT_EQ(why.value("message", "").find("no preemption can help"), std::string::npos) << why.dump();

  Json never;
  ASSERT_TRUE(WaitFor(
      [&] {
        never = d_->Get("/api/v1/namespaces/team-a/workloads/never/why", kTeamAToken).json();
        return never.value("reason", "") == "InsufficientQuota";
      },
      10000))
      << never.dump();
  EXPECT_NE(never.value("message", "").find("no preemption can help"), std::string::npos) << never.dump();
  ASSERT_EQ(never["flavors"].size(), 2u) << never.dump();
  EXPECT_EQ(never["flavors"][1].value("outcome", ""), "ExceedsMaximum");

  std::string out;
  ASSERT_EQ(Cli({"why", "team-a/later"}, kTeamAToken, &out), 0) << out;
  EXPECT_NE(out.find("Flavors tried:\n  flavor standard: "), std::string::npos) << out;
  EXPECT_NE(out.find("\n  flavor a100: not enough unused nvidia.com/gpu, 2 more needed"), std::string::npos)
      << out;
  ASSERT_EQ(Cli({"why", "team-a/later", "-o", "json"}, kTeamAToken, &out), 0) << out;
  EXPECT_NE(out.find("\"outcome\": \"ExceedsMaximum\""), std::string::npos) << out;
}

}  // namespace
}  // namespace artel::testing
