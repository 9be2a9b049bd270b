// arteld places pods on the host's GPUs with the placement library: a pod
// sees exactly the GPU it was given, a GPU is never handed out twice (more
// quota than GPUs means the rest waits, Unschedulable), a restart keeps each
// pod on its GPU, and a memory share gets its limits in the environment.

#include <gtest/gtest.h>

#include <set>

#include "harness.h"

namespace artel::testing {
namespace {

std::string PodEnvLine(const std::string& dir, const std::string& key) {
  // Each pod writes "<CUDA_VISIBLE_DEVICES>|<CUDA_DEVICE_MEMORY_LIMIT>" to its log first.
  std::string log = ReadFile(dir + "/data/logs/" + key + "/main-0.log");
  return log.substr(0, log.find('\n'));
}

const std::vector<std::string> kEchoThenWait = {
    "/bin/sh", "-c",
    "echo \"$CUDA_VISIBLE_DEVICES|$CUDA_DEVICE_MEMORY_LIMIT\"; exec sleep 60"};  // bounded: a failed test
                                                                                 // leaves no long-lived pod

TEST(DaemonPlacementTest, GpusAreNeverHandedOutTwiceAndSurviveARestart) {
  std::string dir = TempDir("placement");
  WriteFile(dir + "/cluster.yaml", kTwoTeamsManifests);  // quota: 4 GPUs in the cohort
  Arteld d(dir);
  std::vector<std::string> flags = {"-m",          dir + "/cluster.yaml", "--fake-gpus",
                                    "2xA100-80GB", "--grace-period",      "0"};
  ASSERT_TRUE(d.Start(flags)) << d.log();
  for (const char* name : {"w0", "w1", "w2"}) {
    ASSERT_EQ(
        d.Post("/api/v1/workloads", Workload("team-a", name, "default", 1, kEchoThenWait).dump()).status,
        201);
  }
  // Two GPUs: two run, the third waits for a GPU although quota allows it.
  auto running = [&] {
    int n = 0;
    for (const char* name : {"w0", "w1", "w2"}) n += d.Phase("team-a", name) == "Running";
    return n;
  };
  ASSERT_TRUE(WaitFor([&] { return running() == 2; }, 20000)) << d.log();
  std::string waiting;
  for (const char* name : {"w0", "w1", "w2"}) {
    if (d.Phase("team-a", name) == "Pending") waiting = name;
  }
  ASSERT_FALSE(waiting.empty());
  // The third may have arrived after the cycle that admitted the first two:
  // it is NotYetTried until the next cycle, which must come by itself.
  Json why;
  EXPECT_TRUE(WaitFor(
      [&] {
        why = d.Get("/api/v1/namespaces/team-a/workloads/" + waiting + "/why").json();
        return why.value("reason", "") == "Unschedulable";
      },
      10000))
      << why.dump();
  // Each running pod sees one GPU, and not the same one.
  std::set<std::string> seen;
  std::map<std::string, std::string> gpu_of;
  for (const char* name : {"w0", "w1", "w2"}) {
    if (name == waiting) continue;
    ASSERT_TRUE(WaitFor([&] { return !PodEnvLine(dir, std::string("team-a/") + name).empty(); }, 10000));
    std::string dev = PodEnvLine(dir, std::string("team-a/") + name);
    dev = dev.substr(0, dev.find('|'));
    EXPECT_EQ(dev.find(','), std::string::npos) << dev;
    EXPECT_TRUE(seen.insert(dev).second) << "GPU " << dev << " given twice";
    gpu_of[name] = dev;
    Json w = d.Get(std::string("/api/v1/namespaces/team-a/workloads/") + name).json();
    EXPECT_EQ(w["status"]["pods"][0]["gpus"][0], dev) << w.dump();
  }
  // After a crash the pods keep their GPUs and the third still waits.
  d.Kill(SIGKILL);
  ASSERT_TRUE(d.Start(flags)) << d.log();
  ASSERT_TRUE(WaitFor([&] { return running() == 2; }, 20000)) << d.log();
  for (const auto& [name, dev] : gpu_of) {
    Json w = d.Get("/api/v1/namespaces/team-a/workloads/" + name).json();
    EXPECT_EQ(w["status"]["pods"][0]["gpus"][0], dev) << w.dump();
  }
  EXPECT_EQ(d.Phase("team-a", waiting), "Pending");
  // Freeing one GPU lets the waiting workload start on exactly that GPU.
  const std::string freed_name = gpu_of.begin()->first, freed = gpu_of.begin()->second;
  ASSERT_EQ(d.Post("/api/v1/namespaces/team-a/workloads/" + freed_name + "/cancel", "").status, 200);
  ASSERT_TRUE(WaitFor([&] { return d.Phase("team-a", waiting) == "Running"; }, 20000)) << d.log();
  ASSERT_TRUE(WaitFor([&] { return !PodEnvLine(dir, "team-a/" + waiting).empty(); }, 10000));
  std::string dev = PodEnvLine(dir, "team-a/" + waiting);
  EXPECT_EQ(dev.substr(0, dev.find('|')), freed);
  for (const char* name : {"w0", "w1", "w2"})
    (void)d.Post(std::string("/api/v1/namespaces/team-a/workloads/") + name + "/cancel", "");
  EXPECT_TRUE(d.Stop()) << d.log();
  std::filesystem::remove_all(dir);
}

TEST(DaemonPlacementTest, MemorySharesGetLimitsAndShareOneGpu) {
  std::string dir = TempDir("shares");
  WriteFile(dir + "/cluster.yaml", kTwoTeamsManifests);
  Arteld d(dir);
  std::vector<std::string> flags = {"-m",          dir + "/cluster.yaml", "--fake-gpus",
                                    "1xA100-80GB", "--grace-period",      "0"};
  ASSERT_TRUE(d.Start(flags)) << d.log();
  for (const char* name : {"s0", "s1"}) {
    Json body = Workload("team-a", name, "default", 1, kEchoThenWait);
    body["spec"]["podSets"][0]["requests"]["nvidia.com/gpumem"] = "20000";  // HAMi: MiB of one GPU
    ASSERT_EQ(d.Post("/api/v1/workloads", body.dump()).status, 201) << body.dump();
  }
  ASSERT_TRUE(WaitFor(
      [&] { return d.Phase("team-a", "s0") == "Running" && d.Phase("team-a", "s1") == "Running"; }, 20000))
      << d.log();
  std::string gpu;
  for (const char* name : {"s0", "s1"}) {
    ASSERT_TRUE(WaitFor([&] { return !PodEnvLine(dir, std::string("team-a/") + name).empty(); }, 10000));
    std::string line = PodEnvLine(dir, std::string("team-a/") + name);
    EXPECT_EQ(line.substr(line.find('|') + 1), "20000m") << line;
    if (gpu.empty()) gpu = line.substr(0, line.find('|'));
    EXPECT_EQ(line.substr(0, line.find('|')), gpu) << "both shares are on the one GPU";
  }
  // When one share ends, the GPU stays in use by the other (not shown free).
  auto gpu_user = [&] {
    Json g = d.Get("/api/v1/gpus").json();
    return g["items"].empty() ? std::string() : g["items"][0].value("workload", "");
  };
  ASSERT_EQ(d.Post("/api/v1/namespaces/team-a/workloads/s0/cancel", "").status, 200);
  ASSERT_TRUE(WaitFor(
      [&] {
        Json w = d.Get("/api/v1/namespaces/team-a/workloads/s0").json();
        return w["status"].value("phase", "") == "Cancelled" &&
               !w["status"]["pods"][0].value("running", true);
      },
      20000))
      << d.log();
  ASSERT_TRUE(WaitFor([&] { return gpu_user() == "team-a/s1"; }, 10000)) << gpu_user();
  ASSERT_EQ(d.Post("/api/v1/namespaces/team-a/workloads/s1/cancel", "").status, 200);
  ASSERT_TRUE(WaitFor([&] { return gpu_user().empty(); }, 20000)) << gpu_user();
  EXPECT_TRUE(d.Stop()) << d.log();
  std::filesystem::remove_all(dir);
}

// Placement-aware preemption in arteld (issue 10 item 1; docs/semantics.md
// section 5): the cohort's quota (4 GPUs) is larger than the host (3 GPUs).
// team-b borrowed: it runs 3 one-GPU pods on a quota of 2. team-a's job fits
// its quota but no GPU is free: one of team-b's pods is evicted and team-a's
// job runs on its GPU; team-b keeps its guarantee (2 running).
TEST(DaemonPlacementTest, OwnerWithinQuotaEvictsBorrowedPodForAGpu) {
  std::string dir = TempDir("placement-preempt");
  WriteFile(dir + "/cluster.yaml", kTwoTeamsManifests);
  Arteld d(dir);
  ASSERT_TRUE(d.Start({"-m", dir + "/cluster.yaml", "--fake-gpus", "3xA100-80GB", "--grace-period", "0"}))
      << d.log();
  const std::vector<std::string> names = {"b0", "b1", "b2"};
  for (const std::string& name : names) {
    ASSERT_EQ(
        d.Post("/api/v1/workloads", Workload("team-b", name, "default", 1, kEchoThenWait).dump()).status,
        201);
  }
  auto running_b = [&] {
    int n = 0;
    for (const std::string& name : names) n += d.Phase("team-b", name) == "Running";
    return n;
  };
  ASSERT_TRUE(WaitFor([&] { return running_b() == 3; }, 20000)) << d.log();
  ASSERT_EQ(
      d.Post("/api/v1/workloads", Workload("team-a", "owner", "default", 1, kEchoThenWait).dump()).status,
      201);
  ASSERT_TRUE(WaitFor([&] { return d.Phase("team-a", "owner") == "Running"; }, 20000)) << d.log();
  EXPECT_EQ(running_b(), 2);
  // The owner's pod sees the GPU the evicted pod had, and no running pod shares it.
  ASSERT_TRUE(WaitFor([&] { return !PodEnvLine(dir, "team-a/owner").empty(); }, 10000));
  std::string mine = PodEnvLine(dir, "team-a/owner");
  mine = mine.substr(0, mine.find('|'));
  for (const std::string& name : names) {
    if (d.Phase("team-b", name) != "Running") continue;
    std::string theirs = PodEnvLine(dir, "team-b/" + name);
    EXPECT_NE(theirs.substr(0, theirs.find('|')), mine) << name;
  }
  EXPECT_TRUE(d.Stop()) << d.log();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace artel::testing
