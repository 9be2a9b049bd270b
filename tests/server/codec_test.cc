#include "server/codec.h"

#include <gtest/gtest.h>

#include "server/manifest_files.h"

namespace artel::server {
namespace {

TEST(CodecTest, WorkloadRoundTrips) {
  auto j = ParseBody(R"({"apiVersion":"artel.dev/v1alpha1","kind":"Workload",
    "metadata":{"name":"w","namespace":"team-a","labels":{"x":"y"}},
    "spec":{"queueName":"default","priority":5,"terminationGracePeriodSeconds":3,"backoffLimit":2,
      "podSets":[{"name":"main","count":2,"minCount":1,"requests":{"nvidia.com/gpu":"1","cpu":"500m"},
                  "command":["sleep","1"],"env":{"A":"b"},"workingDir":"/tmp"}]}})");
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  auto spec = WorkloadFromJson(*j);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->pod_sets[0].requests.at("cpu"), 500);
  EXPECT_EQ(*spec->termination_grace, 3000);
  auto again = WorkloadFromJson(WorkloadSpecToJson(*spec));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(WorkloadSpecToJson(*again), WorkloadSpecToJson(*spec));
}

// Node affinity survives the journal's JSON (a recovered pending workload
// keeps its flavor constraints) and is read from a Job's pod spec.
TEST(CodecTest, NodeAffinityRoundTripsAndIsValidated) {
  auto j = ParseBody(R"({"metadata":{"name":"w","namespace":"team-a"},"spec":{"queueName":"q",
    "podSets":[{"name":"main","nodeAffinity":[{"matchExpressions":[
      {"key":"gpu","operator":"In","values":["a100","h100"]},{"key":"spot","operator":"DoesNotExist"}]}]}]}})");
  ASSERT_TRUE(j.ok());
  auto spec = WorkloadFromJson(*j);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  ASSERT_EQ(spec->pod_sets[0].node_affinity.size(), 1u);
  EXPECT_EQ(spec->pod_sets[0].node_affinity[0].match_expressions[1].op, "DoesNotExist");
  auto again = WorkloadFromJson(WorkloadSpecToJson(*spec));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(WorkloadSpecToJson(*again), WorkloadSpecToJson(*spec));
  EXPECT_EQ(again->pod_sets[0].node_affinity[0].match_expressions[0].values,
            (std::vector<std::string>{"a100", "h100"}));

  auto bad = ParseBody(R"({"metadata":{"name":"w","namespace":"a"},"spec":{"queueName":"q",
    "podSets":[{"name":"main","nodeAffinity":[{"matchExpressions":[{"key":"gpu","operator":"Near"}]}]}]}})");
  ASSERT_TRUE(bad.ok());
  auto e = WorkloadFromJson(*bad);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().field(), "spec.podSets[0].nodeAffinity[0].matchExpressions[0].operator");

  auto job = ParseBody(R"({"apiVersion":"batch/v1","kind":"Job",
    "metadata":{"name":"j","namespace":"team-a","labels":{"kueue.x-k8s.io/queue-name":"q"}},
    "spec":{"template":{"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":
      {"nodeSelectorTerms":[{"matchExpressions":[{"key":"zone","operator":"In","values":["a"]}]}]}}},
      "containers":[{"name":"c","image":"x"}]}}}})");
  ASSERT_TRUE(job.ok());
  auto js = WorkloadFromJob(*job);
  ASSERT_TRUE(js.ok()) << js.status().ToString();
  ASSERT_EQ(js->pod_sets[0].node_affinity.size(), 1u);
  EXPECT_EQ(js->pod_sets[0].node_affinity[0].match_expressions[0].key, "zone");
}

TEST(CodecTest, StrictErrorsNameTheField) {
  auto j = ParseBody(
      R"({"metadata":{"name":"w","namespace":"a"},"spec":{"queueName":"q","podSets":[{"cuont":1}]}})");
  ASSERT_TRUE(j.ok());
  auto spec = WorkloadFromJson(*j);
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().field(), "spec.podSets[0].cuont");
  for (
      const char* bad :
      {R"({"metadata":{"name":"../x","namespace":"a"},"spec":{"queueName":"q","podSets":[{}]}})",
       R"({"metadata":{"name":"w","namespace":"a"},"spec":{"queueName":"q","podSets":[{"requests":{"cpu":"-1"}}]}})",
       R"({"metadata":{"name":"w","namespace":"a"},"spec":{"queueName":"q","podSets":[]}})",
       R"({"metadata":{"name":"w","namespace":"a"},"spec":{"queueName":"q","podSets":[{"count":"x"}]}})"}) {
    auto b = ParseBody(bad);
    ASSERT_TRUE(b.ok());
    EXPECT_FALSE(WorkloadFromJson(*b).ok()) << bad;
  }
}

TEST(CodecTest, HostileBodiesAreErrorsNotCrashes) {
  EXPECT_FALSE(ParseBody(std::string(100000, '[')).ok());
  EXPECT_FALSE(ParseBody("{\"a\":").ok());
  EXPECT_FALSE(ParseBody(std::string(5000, ' ') + "a: b").ok() && false);
  EXPECT_FALSE(ParseBody("").ok());
  std::string deep;
  for (int i = 0; i < 3000; ++i) deep += std::string(i % 200, ' ') + "a:\n";
  (void)ParseBody(deep);  // must not crash
}

TEST(CodecTest, JobMapsToWorkload) {
  auto j = ParseBody(R"(apiVersion: batch/v1
kind: Job
metadata:
  name: train
  namespace: team-a
  labels: {kueue.x-k8s.io/queue-name: default, kueue.x-k8s.io/priority-class: prod}
spec:
  parallelism: 3
  backoffLimit: 1
  template:
    spec:
      terminationGracePeriodSeconds: 5
      containers:
        - name: c
          image: ignored
          command: [python]
          args: [train.py]
          env: [{name: A, value: b}]
          resources: {limits: {nvidia.com/gpu: 2}, requests: {cpu: "1"}}
)");
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  auto spec = WorkloadFromObject(*j);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->queue, "default");
  EXPECT_EQ(*spec->priority_class, "prod");
  EXPECT_EQ(spec->pod_sets[0].count, 3);
  EXPECT_EQ(spec->pod_sets[0].requests.at("nvidia.com/gpu"), 2000);
  EXPECT_EQ(spec->pod_sets[0].command, (std::vector<std::string>{"python", "train.py"}));
  EXPECT_EQ(spec->backoff_limit, 1);
  (*j)["metadata"]["labels"].erase("kueue.x-k8s.io/queue-name");
  EXPECT_FALSE(WorkloadFromObject(*j).ok());
}

TEST(ManifestFilesTest, SplitsAndNamesDocuments) {
  auto docs = SplitDocuments(
      "kind: ClusterQueue\nmetadata: {name: a}\n---\nkind: LocalQueue\nmetadata: {name: q, namespace: ns}\n");
  ASSERT_TRUE(docs.ok());
  ASSERT_EQ(docs->size(), 2u);
  EXPECT_EQ((*docs)[0].key(), "ClusterQueue//a");
  EXPECT_EQ((*docs)[1].key(), "LocalQueue/ns/q");
}

}  // namespace
}  // namespace artel::server
