// Namespaces to queues (issue 12): a namespace with the team label gets the
// LocalQueues of the configured template, kept in sync when the label
// changes, and a queue that still holds workloads is never deleted. On a
// real control plane with the real arteld (docs/kubernetes.md, "Namespaces
// to queues").
#include <gtest/gtest.h>

#include <fstream>

#include "controller_env.h"

namespace artel::testing {
namespace {

constexpr int kWait = 30000;

const char* kClusterQueues = R"(apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: default-flavor}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: nlp}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu, nvidia.com/gpu]
    flavors:
    - name: default-flavor
      resources:
      - {name: cpu, nominalQuota: "8"}
      - {name: nvidia.com/gpu, nominalQuota: "4"}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: nlp-prod}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu, nvidia.com/gpu]
    flavors:
    - name: default-flavor
      resources:
      - {name: cpu, nominalQuota: "8"}
      - {name: nvidia.com/gpu, nominalQuota: "4"}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: vision}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu, nvidia.com/gpu]
    flavors:
    - name: default-flavor
      resources:
      - {name: cpu, nominalQuota: "8"}
      - {name: nvidia.com/gpu, nominalQuota: "4"}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: vision-prod}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu, nvidia.com/gpu]
    flavors:
    - name: default-flavor
      resources:
      - {name: cpu, nominalQuota: "8"}
      - {name: nvidia.com/gpu, nominalQuota: "4"}
)";

const char* kConfig = R"(kubernetes:
  namespaceQueues:
    teamLabel: example.com/team
    defaultTemplate: team
    resyncSeconds: 1
    templates:
      team:
      - {name: default, clusterQueue: "{team}"}
      - {name: prod, clusterQueue: "{team}-prod"}
      solo:
      - {name: "{namespace}-only", clusterQueue: "{team}"}
)";

class KubeNamespaceQueues : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    ASSERT_TRUE(env_.Up(&error)) << error;
  }
  // spec.clusterQueue of a LocalQueue, "" when absent; "managed:" prefix when ours.
  std::string Queue(const std::string& ns, const std::string& name) {
    Json lq = env_.Get("localqueues.kueue.x-k8s.io", ns, name);
    if (!lq.is_object()) return "";
    std::string managed =
        lq["metadata"].value("labels", Json::object()).value("app.kubernetes.io/managed-by", "") == "artel"
            ? "managed:"
            : "";
    return managed + lq["spec"].value("clusterQueue", "");
  }
  std::string Log() { return env_.arteld ? env_.arteld->log() : ""; }
  KubeEnv env_;
};

TEST_F(KubeNamespaceQueues, kube_LabelledNamespacesGetTheTemplatesQueues) {
  ASSERT_EQ(env_.Apply(kClusterQueues), "");
  // A namespace labelled before arteld starts, one with a hand-made queue, one unlabelled.
  ASSERT_TRUE(env_.Kubectl({"create", "namespace", "u-alice"}).ok());
  ASSERT_TRUE(env_.Kubectl({"label", "namespace", "u-alice", "example.com/team=nlp"}).ok());
  ASSERT_TRUE(env_.Kubectl({"create", "namespace", "u-bob"}).ok());
  ASSERT_EQ(env_.Apply("apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {name: default, "
                       "namespace: u-bob}\nspec: {clusterQueue: vision}\n"),
            "");
  ASSERT_TRUE(env_.Kubectl({"create", "namespace", "u-carol"}).ok());
  std::string cfg = env_.dir + "/arteld.yaml";
  std::ofstream(cfg) << kConfig;
  std::string error;
  ASSERT_TRUE(env_.StartArteld({"--config", cfg}, &error)) << error;

  // The labelled namespace gets both queues of the default template.
  EXPECT_TRUE(WaitFor([&] { return Queue("u-alice", "default") == "managed:nlp"; }, kWait)) << Log();
  EXPECT_TRUE(WaitFor([&] { return Queue("u-alice", "prod") == "managed:nlp-prod"; }, kWait)) << Log();
  EXPECT_EQ(Queue("u-carol", "default"), "");  // unlabelled: nothing

  // Labelling later works too; the hand-made queue is left as it is.
  ASSERT_TRUE(env_.Kubectl({"label", "namespace", "u-bob", "example.com/team=nlp"}).ok());
  EXPECT_TRUE(WaitFor([&] { return Queue("u-bob", "prod") == "managed:nlp-prod"; }, kWait)) << Log();
  EXPECT_EQ(Queue("u-bob", "default"), "vision");
  EXPECT_NE(Log().find("made by hand"), std::string::npos) << Log();

  // Another template chosen by label.
  ASSERT_TRUE(env_.Kubectl({"label", "namespace", "u-carol", "example.com/team=vision",
                            "artel.dev/queue-template=solo"})
                  .ok());
  EXPECT_TRUE(WaitFor([&] { return Queue("u-carol", "u-carol-only") == "managed:vision"; }, kWait)) << Log();

  // A workload in u-alice/default is admitted through the made queue.
  ASSERT_EQ(env_.Create("u-alice", "w1", "default", 1), "");
  ASSERT_TRUE(WaitFor([&] { return AdmittedCq(env_.Workload("u-alice", "w1")) == "nlp"; }, kWait))
      << env_.Workload("u-alice", "w1").dump(1) << Log();

  // The team changes: prod (empty) is re-pointed at once; default still
  // holds w1 and is kept on nlp until w1 is finished.
  ASSERT_TRUE(env_.Kubectl({"label", "--overwrite", "namespace", "u-alice", "example.com/team=vision"}).ok());
  EXPECT_TRUE(WaitFor([&] { return Queue("u-alice", "prod") == "managed:vision-prod"; }, kWait)) << Log();
  EXPECT_TRUE(WaitFor([&] { return Log().find("still holds workloads") != std::string::npos; }, kWait))
      << Log();
  EXPECT_EQ(Queue("u-alice", "default"), "managed:nlp");
  EXPECT_EQ(AdmittedCq(env_.Workload("u-alice", "w1")), "nlp");
  ASSERT_EQ(env_.Finish("u-alice", "w1"), "");
  EXPECT_TRUE(WaitFor([&] { return Queue("u-alice", "default") == "managed:vision"; }, kWait)) << Log();

  // The label removed: the managed queue goes, the hand-made one stays.
  ASSERT_TRUE(env_.Kubectl({"label", "namespace", "u-bob", "example.com/team-"}).ok());
  EXPECT_TRUE(WaitFor([&] { return Queue("u-bob", "prod").empty(); }, kWait)) << Log();
  EXPECT_EQ(Queue("u-bob", "default"), "vision");
}

// A template that is not configured, named by a namespace label: nothing is
// made or removed, and the log says why. Bad configuration is refused with
// file:line and the field.
TEST_F(KubeNamespaceQueues, kube_BadTemplatesAreRefusedOrReported) {
  std::string cfg = env_.dir + "/bad.yaml";
  std::ofstream(cfg) << "kubernetes:\n  namespaceQueues:\n    defaultTemplate: nope\n    templates:\n"
                        "      team:\n      - {name: default, clusterQueue: \"{team}\"}\n";
  Arteld bad(env_.dir);
  std::string error;
  EXPECT_FALSE(bad.Start({"--kubeconfig", env_.k8s->kubeconfig(), "--config", cfg}, &error));
  EXPECT_NE((error + bad.log()).find("bad.yaml:3"), std::string::npos) << error << bad.log();
  EXPECT_NE((error + bad.log()).find("kubernetes.namespaceQueues.defaultTemplate"), std::string::npos)
      << error << bad.log();

  ASSERT_EQ(env_.Apply(kClusterQueues), "");
  std::string good = env_.dir + "/arteld.yaml";
  std::ofstream(good) << kConfig;
  ASSERT_TRUE(env_.StartArteld({"--config", good}, &error)) << error;
  ASSERT_TRUE(env_.Kubectl({"create", "namespace", "u-dan"}).ok());
  ASSERT_TRUE(env_.Kubectl({"label", "namespace", "u-dan", "example.com/team=nlp",
                            "artel.dev/queue-template=missing"})
                  .ok());
  EXPECT_TRUE(WaitFor([&] { return Log().find("not configured") != std::string::npos; }, kWait)) << Log();
  EXPECT_EQ(Queue("u-dan", "default"), "");
}

}  // namespace
}  // namespace artel::testing
