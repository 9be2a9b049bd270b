// Tests of the scenario reader (sim/scenario.h) and durations (sim/duration.h):
// the accepted syntax, `{a..b}` expansion, and that every error names the
// right file:line:column and field.

#include "sim/scenario.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "sim/duration.h"

namespace artel::sim {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kConfig[] = R"(
  config:
    - inline: |
        apiVersion: kueue.x-k8s.io/v1beta2
        kind: ResourceFlavor
        metadata: {name: default-flavor}
        ---
        apiVersion: kueue.x-k8s.io/v1beta2
        kind: ClusterQueue
        metadata: {name: cq}
        spec:
          namespaceSelector: {}
          resourceGroups:
            - coveredResources: [cpu, nvidia.com/gpu]
              flavors:
                - name: default-flavor
                  resources:
                    - {name: cpu, nominalQuota: 8}
                    - {name: nvidia.com/gpu, nominalQuota: 4}
        ---
        apiVersion: kueue.x-k8s.io/v1beta2
        kind: LocalQueue
        metadata: {name: default, namespace: team-a}
        spec: {clusterQueue: cq}
)";

std::string Scenario(const std::string& spec_rest, const std::string& config = kConfig) {
  return "apiVersion: artel.dev/v1alpha1\nkind: Scenario\nmetadata: {name: t}\nspec:" + config + spec_rest;
}

// The single error of a one-document file.
Status ErrorOf(const std::string& text) {
  std::vector<ScenarioDoc> docs = ParseScenarios(text, "s.yaml");
  EXPECT_EQ(docs.size(), 1u);
  if (docs.empty()) return Status::Ok();
  return docs[0].error;
}

TEST(DurationTest, ParsesUnits) {
  EXPECT_EQ(*ParseDuration("0s"), 0);
  EXPECT_EQ(*ParseDuration("0"), 0);
  EXPECT_EQ(*ParseDuration("90s"), 90000);
  EXPECT_EQ(*ParseDuration("5m"), 300000);
  EXPECT_EQ(*ParseDuration("1h30m"), 5400000);
  EXPECT_EQ(*ParseDuration("250ms"), 250);
  EXPECT_EQ(*ParseDuration("1m500ms"), 60500);
}

TEST(DurationTest, RejectsMalformed) {
  for (const char* bad : {"", "5", "m", "5x", "30m1h", "1m1m", "-5s", "1.5s", "5 m"}) {
    EXPECT_FALSE(ParseDuration(bad).ok()) << bad;
  }
  EXPECT_THAT(ParseDuration("5").status().message(), HasSubstr("missing unit"));
}

TEST(DurationTest, FormatRoundTrips) {
  for (core::Time t : {0, 250, 1000, 90000, 300000, 5400000, 3600000 + 1}) {
    EXPECT_EQ(*ParseDuration(FormatDuration(t)), t) << FormatDuration(t);
  }
  EXPECT_EQ(FormatDuration(5400000), "1h30m");
  EXPECT_EQ(FormatDuration(0), "0s");
  EXPECT_EQ(FormatDuration(90000), "1m30s");
}

TEST(ExpandNodeNameTest, Ranges) {
  EXPECT_THAT(*ExpandNodeName("gpu-{0..3}"), ElementsAre("gpu-0", "gpu-1", "gpu-2", "gpu-3"));
  EXPECT_THAT(*ExpandNodeName("plain"), ElementsAre("plain"));
  EXPECT_THAT(*ExpandNodeName("n{08..10}"), ElementsAre("n08", "n09", "n10"));
  EXPECT_THAT(*ExpandNodeName("r{0..1}-g{1..2}"), ElementsAre("r0-g1", "r0-g2", "r1-g1", "r1-g2"));
}

TEST(ExpandNodeNameTest, Errors) {
  for (const char* bad : {"gpu-{3..1}", "gpu-{a..b}", "gpu-{0..", "gpu-}", "{0..999999999}", ""}) {
    EXPECT_FALSE(ExpandNodeName(bad).ok()) << bad;
  }
}

TEST(ScenarioParseTest, FullScenario) {
  std::string text = Scenario(R"(
  featureGates:
    fairSharing: true
    fairSharingPreemptionStrategies: [LessThanInitialShare]
    admissionFairSharing: {usageHalfLifeTime: 10m, resourceWeights: {cpu: 1}}
    multiAdmission: false
  nodes:
    - name: gpu-{0..1}
      labels: {topology/rack: r1}
      capacity: {cpu: "64", nvidia.com/gpu: "8"}
      taints: [{key: dedicated, value: ml, effect: NoSchedule}]
      gpus: {model: H100-80GB, count: 8, migLayout: {0: [3g.40gb@0, 3g.40gb@4]}}
  steps:
    - at: 0s
      submit:
        - name: a-1
          namespace: team-a
          queue: default
          priority: 100
          runtime: 10m
          labels: {app: x}
          podSets:
            - {name: main, count: 4, minCount: 2, requests: {nvidia.com/gpu: "1", cpu: 500m}}
            - name: side
              nodeSelector: {topology/rack: r1}
              tolerations: [{key: dedicated, operator: Exists}]
    - at: 5m
      finish: [a-1]
      cancel: [team-a/a-2]
      deactivate: [a-3]
      activate: [a-3]
    - at: 6m
      expect:
        admitted: [b-1]
        pending: []
        preempted: [a-1]
        finished: [a-1]
        flavors: {b-1: {main: {nvidia.com/gpu: default-flavor}}}
        usage: [{clusterQueue: cq, flavor: default-flavor, resource: nvidia.com/gpu, value: "8"}]
        evictions: [{victim: a-1, reason: InClusterQueue, preemptor: b-1}]
        admittedCounts: {a-1: {main: 2}}
        share: {cq: 0, other: Inf}
)");
  std::vector<ScenarioDoc> docs = ParseScenarios(text, "dir/s.yaml");
  ASSERT_EQ(docs.size(), 1u);
  ASSERT_TRUE(docs[0].error.ok()) << docs[0].error.ToString();
  const sim::Scenario& sc = *docs[0].scenario;
  EXPECT_EQ(sc.name, "t");
  EXPECT_EQ(sc.config.cluster_queues.size(), 1u);
  EXPECT_EQ(sc.config.local_queues.size(), 1u);
  EXPECT_TRUE(sc.options.fair_sharing);
  EXPECT_FALSE(sc.options.multi_admission);
  EXPECT_TRUE(sc.options.admission_fair_sharing);
  EXPECT_EQ(sc.options.afs.usage_half_life, 600000);
  EXPECT_EQ(sc.options.afs.resource_weights.at("cpu"), 1000);
  EXPECT_THAT(sc.options.fair_sharing_strategies,
              ElementsAre(core::FairSharingStrategy::kLessThanInitialShare));

  ASSERT_EQ(sc.nodes.size(), 2u);
  EXPECT_EQ(sc.nodes[1].name, "gpu-1");
  EXPECT_EQ(sc.nodes[1].labels.at("kubernetes.io/hostname"), "gpu-1");
  EXPECT_EQ(sc.nodes[0].capacity.at("nvidia.com/gpu"), 8000);
  ASSERT_TRUE(sc.nodes[0].gpus.has_value());
  EXPECT_TRUE(sc.nodes[0].gpus->mig);
  EXPECT_THAT(sc.nodes[0].gpus->mig_layout.at(0),
              ElementsAre(MigInstance{"3g.40gb", 0}, MigInstance{"3g.40gb", 4}));

  ASSERT_EQ(sc.steps.size(), 3u);
  ASSERT_EQ(sc.steps[0].events.size(), 1u);
  const SubmitEvent& sub = sc.steps[0].events[0].submit;
  EXPECT_EQ(sub.spec.ns, "team-a");
  EXPECT_EQ(sub.spec.priority, 100);
  EXPECT_EQ(sub.runtime, 600000);
  ASSERT_EQ(sub.spec.pod_sets.size(), 2u);
  EXPECT_EQ(sub.spec.pod_sets[0].count, 4);
  EXPECT_EQ(sub.spec.pod_sets[0].min_count, 2);
  EXPECT_EQ(sub.spec.pod_sets[0].requests.at("cpu"), 500);
  EXPECT_EQ(sub.spec.pod_sets[1].count, 1);
  EXPECT_EQ(sub.spec.pod_sets[1].tolerations.at(0).op, "Exists");

  // Events keep document order.
  const Step& s1 = sc.steps[1];
  EXPECT_EQ(s1.at, 300000);
  ASSERT_EQ(s1.events.size(), 4u);
  EXPECT_EQ(s1.events[0].kind, Event::Kind::kFinish);
  EXPECT_EQ(s1.events[1].kind, Event::Kind::kCancel);
  EXPECT_EQ(s1.events[1].target.text, "team-a/a-2");
  EXPECT_EQ(s1.events[2].kind, Event::Kind::kDeactivate);
  EXPECT_EQ(s1.events[3].kind, Event::Kind::kActivate);

  ASSERT_TRUE(sc.steps[2].expect.has_value());
  const Expectation& ex = *sc.steps[2].expect;
  ASSERT_TRUE(ex.pending.has_value());
  EXPECT_TRUE(ex.pending->empty());
  EXPECT_FALSE(ex.placements.has_value());
  ASSERT_EQ(ex.usage->size(), 1u);
  EXPECT_EQ((*ex.usage)[0].value, 8000);
  EXPECT_EQ((*ex.share)[1].second, -1);
  EXPECT_EQ((*ex.evictions)[0].reason, "InClusterQueue");
}

TEST(ScenarioParseTest, UnknownFieldHasPositionAndHint) {
  std::string text = Scenario(R"(
  steps:
    - at: 0s
      submit:
        - name: a-1
          podSet: []
)");
  Status st = ErrorOf(text);
  ASSERT_FALSE(st.ok());
  // The `podSet:` key: 4 header lines, 23 config lines and a blank one above.
  EXPECT_EQ(st.pos().file, "s.yaml");
  EXPECT_EQ(st.pos().line, 33);
  EXPECT_EQ(st.pos().column, 11);
  EXPECT_EQ(st.field(), "spec.steps[0].submit[0].podSet");
  EXPECT_THAT(st.message(), HasSubstr("did you mean `podSets`?"));
}

TEST(ScenarioParseTest, StepsMustNotGoBackInTime) {
  Status st = ErrorOf(Scenario(R"(
  steps:
    - at: 5m
    - at: 1m
)"));
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.field(), "spec.steps[1].at");
  EXPECT_EQ(st.pos().line, 31);
  EXPECT_THAT(st.message(), HasSubstr("1m comes after 5m"));
}

TEST(ScenarioParseTest, BadDurationIsPositioned) {
  Status st = ErrorOf(Scenario(R"(
  steps:
    - at: 5
)"));
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.field(), "spec.steps[0].at");
  EXPECT_EQ(st.pos().line, 30);
  EXPECT_EQ(st.pos().column, 11);
}

TEST(ScenarioParseTest, YamlSyntaxErrorIsPositioned) {
  Status st = ErrorOf("apiVersion: artel.dev/v1alpha1\nkind: Scenario\nmetadata: {name: [x\n");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.pos().file, "s.yaml");
  EXPECT_GE(st.pos().line, 3);
  EXPECT_THAT(st.message(), HasSubstr("invalid YAML"));
}

TEST(ScenarioParseTest, InlineManifestErrorsPointIntoTheScenarioFile) {
  std::string config = R"(
  config:
    - inline: |
        apiVersion: kueue.x-k8s.io/v1beta2
        kind: ResourceFlavor
        metadata: {name: f}
        spec:
          nodeLabelz: {}
)";
  Status st = ErrorOf(Scenario("\n  steps: []\n", config));
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.pos().file, "s.yaml");
  EXPECT_EQ(st.pos().line, 11);  // the `nodeLabelz` line of the scenario file
  EXPECT_EQ(st.pos().column, 11);
}

TEST(ScenarioParseTest, WrongKindAndMissingName) {
  Status st =
      ErrorOf("apiVersion: artel.dev/v1alpha1\nkind: Senario\nmetadata: {name: x}\nspec: {steps: []}\n");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.field(), "kind");
  EXPECT_THAT(st.message(), HasSubstr("did you mean `Scenario`?"));

  st = ErrorOf("apiVersion: artel.dev/v1alpha1\nkind: Scenario\nmetadata: {}\nspec: {steps: []}\n");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.field(), "metadata.name");
}

TEST(ScenarioParseTest, SeveralDocumentsFailIndependently) {
  std::string good =
      "apiVersion: artel.dev/v1alpha1\nkind: Scenario\nmetadata: {name: good}\nspec: {steps: []}\n";
  std::string bad =
      "apiVersion: artel.dev/v1alpha1\nkind: Scenario\nmetadata: {name: bad}\nspec: {stepz: []}\n";
  std::vector<ScenarioDoc> docs = ParseScenarios(good + "---\n" + bad + "---\n", "s.yaml");
  ASSERT_EQ(docs.size(), 2u);
  EXPECT_TRUE(docs[0].error.ok());
  EXPECT_FALSE(docs[1].error.ok());
  EXPECT_EQ(docs[1].name, "bad");
  EXPECT_EQ(docs[1].error.pos().line, 9);
  EXPECT_THAT(docs[1].error.message(), HasSubstr("did you mean `steps`?"));
}

TEST(ScenarioParseTest, ValueErrors) {
  auto err = [](const std::string& steps) { return ErrorOf(Scenario("\n  steps:\n" + steps)); };
  EXPECT_THAT(err("    - at: 0s\n      submit: [{name: a, podSets: [{count: 2, minCount: 3}]}]\n").message(),
              HasSubstr("minCount 3 exceeds count 2"));
  EXPECT_THAT(err("    - at: 0s\n      submit: [{name: a, podSets: [{requests: {cpu: lots}}]}]\n").message(),
              HasSubstr("invalid quantity"));
  EXPECT_THAT(err("    - at: 0s\n      submit: [{name: a, podSets: [{}], priority: 1, priorityClass: p}]\n")
                  .message(),
              HasSubstr("not both"));
  EXPECT_THAT(err("    - at: 0s\n      expect: {pendingReasons: {a: InsuficientQuota}}\n").message(),
              HasSubstr("did you mean `InsufficientQuota`?"));
  EXPECT_THAT(err("    - at: 0s\n      expect: {usage: [{flavor: f, resource: cpu, value: 1}]}\n").message(),
              HasSubstr("exactly one of `clusterQueue` or `cohort`"));
  EXPECT_THAT(err("    - at: 0s\n      expect: {migLayouts: {gpu-0: []}}\n").message(),
              HasSubstr("NODE/GPU-INDEX"));
}

TEST(ScenarioParseTest, NodeErrors) {
  auto err = [](const std::string& nodes) {
    return ErrorOf(Scenario("\n  nodes:\n" + nodes + "  steps: []\n"));
  };
  Status st = err("    - name: gpu-{3..1}\n");
  EXPECT_EQ(st.field(), "spec.nodes[0].name");
  EXPECT_THAT(st.message(), HasSubstr("empty range"));
  EXPECT_THAT(err("    - name: gpu-{0..1}\n    - name: gpu-1\n").message(),
              HasSubstr("duplicate node name gpu-1"));
  EXPECT_THAT(err("    - name: n\n      taints: [{key: k, effect: Never}]\n").message(),
              HasSubstr("NoSchedule, PreferNoSchedule or NoExecute"));
  EXPECT_THAT(err("    - name: n\n      gpus: {count: 1, mig: false, migLayout: {0: []}}\n").message(),
              HasSubstr("needs `mig: true`"));
  EXPECT_THAT(err("    - name: n\n      gpus: {count: 1, migLayout: {1: []}}\n").message(),
              HasSubstr("out of range"));
}

TEST(ScenarioParseTest, ApplyIsValidatedAgainstTheConfigItPatches) {
  std::string text = Scenario(R"(
  steps:
    - at: 1m
      apply: |
        apiVersion: kueue.x-k8s.io/v1beta2
        kind: ClusterQueue
        metadata: {name: other}
        spec:
          namespaceSelector: {}
          resourceGroups:
          - coveredResources: [cpu]
            flavors:
            - name: missing-flavor
              resources:
              - {name: cpu, nominalQuota: "1"}
)");
  Status st = ErrorOf(text);
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("missing-flavor"));
}

TEST(MergeConfigTest, ReplacesByNameAndAppends) {
  core::Config base;
  base.cluster_queues.push_back({.name = "a"});
  base.local_queues.push_back({.ns = "x", .name = "q", .cluster_queue = "a"});
  core::Config patch;
  patch.cluster_queues.push_back({.name = "a", .cohort = "c"});
  patch.cluster_queues.push_back({.name = "b"});
  patch.local_queues.push_back({.ns = "y", .name = "q", .cluster_queue = "b"});
  MergeConfig(patch, &base);
  ASSERT_EQ(base.cluster_queues.size(), 2u);
  EXPECT_EQ(base.cluster_queues[0].cohort, "c");
  EXPECT_EQ(base.local_queues.size(), 2u);
}

}  // namespace
}  // namespace artel::sim

namespace artel::sim {
namespace {

// The short form of a pod set takes required node affinity as the API does;
// malformed terms are errors with the path of the culprit.
TEST(ScenarioParseTest, PodSetNodeAffinity) {
  auto with = [](const std::string& affinity) {
    return Scenario(R"(
  steps:
    - at: 0s
      submit:
        - {name: a, queue: lq, podSets: [{requests: {cpu: "1"}, nodeAffinity: )" +
                    affinity + R"(}]}
)");
  };
  std::vector<ScenarioDoc> ok =
      ParseScenarios(with("[{matchExpressions: [{key: zone, operator: In, values: [a, b]}]}, "
                          "{matchFields: [{key: metadata.name, operator: NotIn, values: [n1]}]}]"),
                     "s.yaml");
  ASSERT_EQ(ok.size(), 1u);
  ASSERT_TRUE(ok[0].error.ok()) << ok[0].error.ToString();
  EXPECT_EQ(ErrorOf(with("[{matchExpressions: [{key: zone, operator: In}]}]")).message(),
            "operator In needs at least one value");
  EXPECT_NE(ErrorOf(with("[{matchFields: [{key: zone, operator: In, values: [a]}]}]"))
                .message()
                .find("metadata.name"),
            std::string::npos);
  EXPECT_NE(ErrorOf(with("[{}]")).message().find("a term needs"), std::string::npos);
  EXPECT_NE(ErrorOf(with("[{matchExpressions: [{key: zone, operator: Near, values: [a]}]}]"))
                .ToString()
                .find("operator"),
            std::string::npos);
}

}  // namespace
}  // namespace artel::sim
