// Time limits in arteld (docs/semantics.md §11): a workload past its
// maximum runtime is stopped by the daemon and reported Failed with the
// engine's reason; a workload that ends in time succeeds as before.

#include <gtest/gtest.h>

#include <string>

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
  ASSERT_EQ(d.Post("/api/v1/workloads", Workload("team-a", "endless", "default", 1, {"sleep", "600"}).dump()).status,
            201);
  // Queued behind it: admitted once the stopped workload's GPU is free.
  ASSERT_EQ(d.Post("/api/v1/workloads", Workload("team-a", "quick", "default", 1, {"true"}).dump()).status, 201);
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

}  // namespace
}  // namespace artel::testing
