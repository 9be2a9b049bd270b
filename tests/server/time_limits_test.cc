// Time limits in arteld (docs/semantics.md §11): a workload past its
// maximum runtime is stopped by the daemon and reported Failed with the
// engine's reason; a workload that ends in time succeeds as before.

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <string>
#include <vector>

#include "harness.h"

namespace artel::testing {
namespace {

// One team whose ClusterQueue gives every workload a 1-second maximum
// runtime (artel.dev/timeLimits).
const char* kLimitedQueue = R"(apiVersion: v1
kind: Namespace
metadata: {name: team-a, labels: {artel.dev/team: team-a}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: a100}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: team-a}
spec:
  namespaceSelector: {matchLabels: {artel.dev/team: team-a}}
  artel.dev/timeLimits: {defaultMaximumExecutionTimeSeconds: 1}
  resourceGroups:
    - coveredResources: [nvidia.com/gpu]
      flavors:
        - name: a100
          resources: [{name: nvidia.com/gpu, nominalQuota: 1}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: default, namespace: team-a}
spec: {clusterQueue: team-a}
)";

TEST(TimeLimitsDaemonTest, WorkloadOverItsMaximumRuntimeIsStoppedAndFailed) {
  std::string dir = TempDir("timelimits");
  WriteFile(dir + "/cluster.yaml", kLimitedQueue);
  Arteld d(dir);
  ASSERT_TRUE(d.Start({"-m", dir + "/cluster.yaml", "--fake-gpus", "1xA100-80GB"})) << d.log();
  ASSERT_EQ(d.Post("/api/v1/workloads", Workload("team-a", "endless", "default", 1, {"sleep", "600"}).dump())
                .status,
            201);
  // Queued behind it: admitted once the stopped workload's GPU is free.
  ASSERT_EQ(d.Post("/api/v1/workloads", Workload("team-a", "quick", "default", 1, {"true"}).dump()).status,
            201);
  ASSERT_TRUE(WaitFor([&] { return d.Phase("team-a", "endless") == "Failed"; }, 30000))
      << d.Phase("team-a", "endless") << "\n"
      << d.log();
  Json wl = d.Get("/api/v1/namespaces/team-a/workloads/endless").json();
  Json st = wl["status"];
  EXPECT_NE(st.value("message", "").find("maximum runtime of 1s exceeded"), std::string::npos) << wl.dump();
  ASSERT_TRUE(WaitFor([&] { return d.Phase("team-a", "quick") == "Succeeded"; }, 30000)) << d.log();
  // Failed is final: a restart shows the same.
  ASSERT_TRUE(d.Stop());
  ASSERT_TRUE(d.Start({"-m", dir + "/cluster.yaml", "--fake-gpus", "1xA100-80GB"})) << d.log();
  EXPECT_EQ(d.Phase("team-a", "endless"), "Failed");
  st = d.Get("/api/v1/namespaces/team-a/workloads/endless").json()["status"];
  EXPECT_NE(st.value("message", "").find("maximum runtime"), std::string::npos) << st.dump();
  EXPECT_TRUE(d.Stop());
  std::filesystem::remove_all(dir);
}

// A workload's own maximum runtime (Kueue's spec.maximumExecutionTimeSeconds)
// is accepted by the API, stops it, and is kept by the journal.
TEST(TimeLimitsDaemonTest, WorkloadsOwnMaximumRuntime) {
  std::string dir = TempDir("timelimits-own");
  std::string config = kLimitedQueue;
  const std::string limits = "  artel.dev/timeLimits: {defaultMaximumExecutionTimeSeconds: 1}\n";
  ASSERT_NE(config.find(limits), std::string::npos);
  config.erase(config.find(limits), limits.size());  // no queue limit
  WriteFile(dir + "/cluster.yaml", config);
  const std::vector<std::string> flags = {"-m", dir + "/cluster.yaml", "--fake-gpus", "1xA100-80GB"};
  Arteld d(dir);
  ASSERT_TRUE(d.Start(flags)) << d.log();
  Json own = Workload("team-a", "own", "default", 1, {"sleep", "600"});
  own["spec"]["maximumExecutionTimeSeconds"] = 1;
  ASSERT_EQ(d.Post("/api/v1/workloads", own.dump()).status, 201);
  ASSERT_TRUE(WaitFor([&] { return d.Phase("team-a", "own") == "Failed"; }, 30000))
      << d.Phase("team-a", "own") << "\n"
      << d.log();
  Json wl = d.Get("/api/v1/namespaces/team-a/workloads/own").json();
  EXPECT_NE(wl["status"].value("message", "").find("maximum runtime of 1s exceeded"), std::string::npos)
      << wl.dump();
  ASSERT_TRUE(d.Stop());
  ASSERT_TRUE(d.Start(flags)) << d.log();
  wl = d.Get("/api/v1/namespaces/team-a/workloads/own").json();
  EXPECT_EQ(wl["spec"].value("maximumExecutionTimeSeconds", 0), 1) << wl.dump();
  EXPECT_TRUE(d.Stop());
  std::filesystem::remove_all(dir);
}

// A queue whose workloads may run 4 seconds in total, and where a
// higher-priority workload preempts a lower one.
const char* kPreemptingLimitedQueue = R"(apiVersion: v1
kind: Namespace
metadata: {name: team-a, labels: {artel.dev/team: team-a}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: a100}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: team-a}
spec:
  namespaceSelector: {matchLabels: {artel.dev/team: team-a}}
  preemption: {withinClusterQueue: LowerPriority}
  artel.dev/timeLimits: {defaultMaximumExecutionTimeSeconds: 4}
  resourceGroups:
    - coveredResources: [nvidia.com/gpu]
      flavors:
        - name: a100
          resources: [{name: nvidia.com/gpu, nominalQuota: 1}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: default, namespace: team-a}
spec: {clusterQueue: team-a}
)";

int64_t WallNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The time a workload ran before it was preempted keeps counting toward its
// maximum runtime after arteld crashes and starts again: the journal keeps
// it, and the second admission is stopped once the total reaches the limit.
TEST(TimeLimitsDaemonTest, UsedTimeSurvivesARestart) {
  std::string dir = TempDir("timelimits-restart");
  WriteFile(dir + "/cluster.yaml", kPreemptingLimitedQueue);
  const std::vector<std::string> flags = {"-m", dir + "/cluster.yaml", "--fake-gpus", "1xA100-80GB"};
  Arteld d(dir);
  ASSERT_TRUE(d.Start(flags)) << d.log();
  const std::string path = "/api/v1/namespaces/team-a/workloads/";
  ASSERT_EQ(
      d.Post("/api/v1/workloads", Workload("team-a", "low", "default", 1, {"sleep", "600"}).dump()).status,
      201);
  ASSERT_TRUE(WaitFor([&] { return d.Phase("team-a", "low") == "Running"; }, 30000)) << d.log();
  const int64_t first = d.Get(path + "low").json()["status"].value("admittedAt", int64_t{0});
  ASSERT_GT(first, 0);
  // Let it run 2.5 of its 4 seconds (a time limit is what is tested: the
  // wait is for time itself to pass), then preempt it.
  ASSERT_TRUE(WaitFor([&] { return WallNowMs() >= first + 2500; }, 10000));
  ASSERT_EQ(d.Post("/api/v1/workloads", Workload("team-a", "high", "default", 1, {"sleep", "600"}, 10).dump())
                .status,
            201);
  ASSERT_TRUE(WaitFor([&] { return d.Phase("team-a", "low") == "Pending"; }, 30000))
      << d.Phase("team-a", "low") << "\n"
      << d.log();
  const int64_t used =
      d.Get(path + "low").json()["status"].value("accumulatedPastExecutionTimeSeconds", int64_t{0});
  EXPECT_GE(used, 2);
  EXPECT_LT(used, 4);

  // A crash: the journal is all that is left of the engine's state.
  d.Kill(SIGKILL);
  ASSERT_TRUE(d.Start(flags)) << d.log();
  Json st = d.Get(path + "low").json()["status"];
  EXPECT_EQ(st.value("accumulatedPastExecutionTimeSeconds", int64_t{0}), used) << st.dump();

  // Free the GPU: `low` is admitted again and runs only what is left.
  (void)d.Delete(path + "high");
  ASSERT_TRUE(WaitFor([&] { return d.Phase("team-a", "low") == "Failed"; }, 30000))
      << d.Phase("team-a", "low") << "\n"
      << d.log();
  st = d.Get(path + "low").json()["status"];
  EXPECT_NE(st.value("message", "").find("maximum runtime of 4s exceeded"), std::string::npos) << st.dump();
  // Stopped when the total reached 4s: the second admission ran 4s minus
  // what it had used (plus up to a second until the loop's next pass, and
  // the pod's exit), not 4s more.
  const int64_t second = st.value("admittedAt", int64_t{0});
  const int64_t finished = st.value("finishedAt", int64_t{0});
  EXPECT_GT(second, first) << st.dump();
  EXPECT_GT(finished, second) << st.dump();
  EXPECT_LT(finished - second, 3500) << st.dump();
  EXPECT_TRUE(d.Stop());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace artel::testing
