#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "manifest/manifest.h"

namespace artel::manifest {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr core::Amount kGi = int64_t{1} << 30;

Status Parse(const std::string& text, core::Config* config) { return ParseInto(text, "m.yaml", config); }

core::Config MustParse(const std::string& text) {
  core::Config c;
  Status s = Parse(text, &c);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return c;
}

Status ParseError(const std::string& text) {
  core::Config c;
  Status s = Parse(text, &c);
  EXPECT_FALSE(s.ok());
  return s;
}

TEST(ParseTest, ResourceFlavorBothVersions) {
  for (const char* version : {"v1beta1", "v1beta2"}) {
    core::Config c = MustParse(std::string("apiVersion: kueue.x-k8s.io/") + version + R"(
kind: ResourceFlavor
metadata:
  name: h100
  uid: 1234
  creationTimestamp: "2024-01-01T00:00:00Z"
spec:
  nodeLabels: {nvidia.com/gpu.product: H100-80GB}
  nodeTaints:
    - {key: gpu, value: "true", effect: NoSchedule}
  tolerations:
    - {key: spot, operator: Exists, effect: NoExecute}
  topologyName: default
status: {anything: goes}
)");
    ASSERT_EQ(c.flavors.size(), 1u) << version;
    const core::ResourceFlavorSpec& rf = c.flavors[0];
    EXPECT_EQ(rf.name, "h100");
    EXPECT_EQ(rf.node_labels.at("nvidia.com/gpu.product"), "H100-80GB");
    ASSERT_EQ(rf.node_taints.size(), 1u);
    EXPECT_EQ(rf.node_taints[0].effect, "NoSchedule");
    ASSERT_EQ(rf.tolerations.size(), 1u);
    EXPECT_EQ(rf.tolerations[0].op, "Exists");
    EXPECT_EQ(rf.topology_name, "default");
    EXPECT_EQ(rf.pos.file, "m.yaml");
    EXPECT_EQ(rf.pos.line, 1);
  }
}

constexpr const char* kClusterQueueBody = R"(
kind: ClusterQueue
metadata: {name: team-a}
spec:
  COHORT: ai
  resourceGroups:
    - coveredResources: [cpu, memory, nvidia.com/gpu]
      flavors:
        - name: h100
          resources:
            - {name: cpu, nominalQuota: 64}
            - {name: memory, nominalQuota: 512Gi}
            - {name: nvidia.com/gpu, nominalQuota: 8, borrowingLimit: "4", lendingLimit: 2}
        - name: a100
          resources:
            - {name: cpu, nominalQuota: "1.5"}
            - {name: memory, nominalQuota: 0}
            - {name: nvidia.com/gpu, nominalQuota: 0}
  queueingStrategy: StrictFIFO
  namespaceSelector:
    matchLabels: {team: a}
    matchExpressions:
      - {key: env, operator: In, values: [prod, dev]}
  preemption:
    withinClusterQueue: LowerOrNewerEqualPriority
    reclaimWithinCohort: Any
    borrowWithinCohort: {policy: LowerPriority, maxPriorityThreshold: 100}
  flavorFungibility:
    whenCanBorrow: TryNextFlavor
    whenCanPreempt: MAYSTOP
    preference: PreemptionOverBorrowing
  fairSharing: {weight: "0.5"}
  stopPolicy: Hold
  admissionChecksStrategy: {admissionChecks: []}
)";

std::string ClusterQueueYaml(const std::string& version, const std::string& cohort_field,
                             const std::string& may_stop) {
  std::string body = kClusterQueueBody;
  body.replace(body.find("COHORT"), 6, cohort_field);
  body.replace(body.find("MAYSTOP"), 7, may_stop);
  return "apiVersion: kueue.x-k8s.io/" + version + body;
}

void ExpectTeamA(const core::Config& c) {
  ASSERT_EQ(c.cluster_queues.size(), 1u);
  const core::ClusterQueueSpec& cq = c.cluster_queues[0];
  EXPECT_EQ(cq.name, "team-a");
  EXPECT_EQ(cq.cohort, "ai");
  ASSERT_EQ(cq.resource_groups.size(), 1u);
  const core::ResourceGroupSpec& rg = cq.resource_groups[0];
  EXPECT_THAT(rg.covered_resources, ElementsAre("cpu", "memory", "nvidia.com/gpu"));
  ASSERT_EQ(rg.flavors.size(), 2u);
  EXPECT_EQ(rg.flavors[0].flavor, "h100");
  EXPECT_EQ(rg.flavors[0].resources[0].nominal, 64000);
  EXPECT_EQ(rg.flavors[0].resources[1].nominal, 512 * kGi * 1000);
  EXPECT_EQ(rg.flavors[0].resources[2].borrowing_limit, 4000);
  EXPECT_EQ(rg.flavors[0].resources[2].lending_limit, 2000);
  EXPECT_FALSE(rg.flavors[0].resources[0].borrowing_limit.has_value());
  EXPECT_EQ(rg.flavors[1].resources[0].nominal, 1500);
  EXPECT_EQ(cq.queueing_strategy, core::QueueingStrategy::kStrictFIFO);
  ASSERT_TRUE(cq.namespace_selector.has_value());
  EXPECT_EQ(cq.namespace_selector->match_labels.at("team"), "a");
  ASSERT_EQ(cq.namespace_selector->match_expressions.size(), 1u);
  EXPECT_THAT(cq.namespace_selector->match_expressions[0].values, ElementsAre("prod", "dev"));
  EXPECT_EQ(cq.preemption.within_cluster_queue, core::WithinClusterQueuePolicy::kLowerOrNewerEqualPriority);
  EXPECT_EQ(cq.preemption.reclaim_within_cohort, core::ReclaimWithinCohortPolicy::kAny);
  EXPECT_EQ(cq.preemption.borrow_within_cohort, core::BorrowWithinCohortPolicy::kLowerPriority);
  EXPECT_EQ(cq.preemption.max_priority_threshold, 100);
  EXPECT_EQ(cq.flavor_fungibility.when_can_borrow, core::FungibilityPolicy::kTryNextFlavor);
  EXPECT_EQ(cq.flavor_fungibility.when_can_preempt, core::FungibilityPolicy::kMayStopSearch);
  EXPECT_EQ(cq.flavor_fungibility.preference, core::FungibilityPreference::kPreemptionOverBorrowing);
  EXPECT_EQ(cq.fair_weight, 500);
  EXPECT_EQ(cq.stop_policy, core::StopPolicy::kHold);
}

TEST(ParseTest, ClusterQueueV1beta1) {
  core::Config c = MustParse(ClusterQueueYaml("v1beta1", "cohort", "Preempt"));
  ExpectTeamA(c);
}

TEST(ParseTest, ClusterQueueV1beta2) {
  core::Config c = MustParse(ClusterQueueYaml("v1beta2", "cohortName", "MayStopSearch"));
  ExpectTeamA(c);
}

TEST(ParseTest, ClusterQueueDefaults) {
  core::Config c = MustParse("apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: q}\n");
  const core::ClusterQueueSpec& cq = c.cluster_queues.at(0);
  EXPECT_FALSE(cq.namespace_selector.has_value());  // absent = no namespace
  EXPECT_EQ(cq.fair_weight, core::kDefaultFairWeight);
  EXPECT_EQ(cq.queueing_strategy, core::QueueingStrategy::kBestEffortFIFO);
  EXPECT_EQ(cq.flavor_fungibility.when_can_borrow, core::FungibilityPolicy::kMayStopSearch);
  EXPECT_EQ(cq.flavor_fungibility.when_can_preempt, core::FungibilityPolicy::kTryNextFlavor);

  core::Config all = MustParse(
      "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: q}\nspec:\n  "
      "namespaceSelector: {}\n");
  ASSERT_TRUE(all.cluster_queues.at(0).namespace_selector.has_value());  // {} = all namespaces
  EXPECT_TRUE(all.cluster_queues[0].namespace_selector->match_labels.empty());
}

TEST(ParseTest, CohortFieldSpelledPerVersion) {
  Status s = ParseError(ClusterQueueYaml("v1beta2", "cohort", "MayStopSearch"));
  EXPECT_EQ(s.field(), "spec.cohort");
  EXPECT_THAT(s.message(), HasSubstr("did you mean cohortName?"));
  Status t = ParseError(ClusterQueueYaml("v1beta1", "cohortName", "Preempt"));
  EXPECT_THAT(t.message(), HasSubstr("did you mean cohort?"));
}

TEST(ParseTest, V1beta2RejectsV1beta1FungibilityValues) {
  Status s = ParseError(ClusterQueueYaml("v1beta2", "cohortName", "Preempt"));
  EXPECT_EQ(s.field(), "spec.flavorFungibility.whenCanPreempt");
  EXPECT_THAT(s.message(), HasSubstr("must be one of MayStopSearch, TryNextFlavor"));
}

TEST(ParseTest, BackfillWindowOfTimeLimits) {
  core::Config c = MustParse(R"(apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: q}
spec:
  artel.dev/timeLimits: {reserveAfterSeconds: 60, backfillWindowSeconds: 3600}
)");
  ASSERT_EQ(c.cluster_queues.size(), 1u);
  EXPECT_EQ(c.cluster_queues[0].backfill_window, std::optional<core::Time>(3600 * 1000));
  EXPECT_FALSE(MustParse("apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: q}\n")
                   .cluster_queues[0]
                   .backfill_window.has_value());
  // A window without reservations, or not a positive whole number of
  // seconds: an error at the field.
  Status s = ParseError(R"(apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: q}
spec:
  artel.dev/timeLimits:
    backfillWindowSeconds: 3600
)");
  EXPECT_EQ(s.pos().line, 6);
  EXPECT_EQ(s.field(), "spec.artel.dev/timeLimits.backfillWindowSeconds");
  EXPECT_THAT(s.message(), HasSubstr("set reserveAfterSeconds or reservePriority"));
  Status z = ParseError(R"(apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: q}
spec:
  artel.dev/timeLimits: {reservePriority: 10, backfillWindowSeconds: 0}
)");
  EXPECT_EQ(z.pos().line, 5);
  EXPECT_THAT(z.message(), HasSubstr("out of range"));
}

TEST(ParseTest, CohortBothVersions) {
  core::Config c = MustParse(R"(
apiVersion: kueue.x-k8s.io/v1alpha1
kind: Cohort
metadata: {name: a}
spec: {parent: root}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: Cohort
metadata: {name: b}
spec:
  parent: root
  fairSharing: {weight: 2}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: c}
spec:
  parentName: root
  resourceGroups:
    - coveredResources: [nvidia.com/gpu]
      flavors:
        - name: h100
          resources: [{name: nvidia.com/gpu, nominalQuota: 16, lendingLimit: 8}]
)");
  ASSERT_EQ(c.cohorts.size(), 3u);
  EXPECT_EQ(c.cohorts[0].parent, "root");
  EXPECT_EQ(c.cohorts[1].fair_weight, 2000);
  EXPECT_EQ(c.cohorts[2].parent, "root");
  EXPECT_EQ(c.cohorts[2].resource_groups.at(0).flavors.at(0).resources.at(0).nominal, 16000);
  EXPECT_EQ(c.cohorts[2].pos.line, 14);

  Status s = ParseError(
      "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {name: a}\nspec: {parent: x}\n");
  EXPECT_THAT(s.message(), HasSubstr("did you mean parentName?"));
}

TEST(ParseTest, LocalQueuePriorityClassTopologyBothVersions) {
  for (const char* version : {"v1beta1", "v1beta2"}) {
    std::string api = std::string("apiVersion: kueue.x-k8s.io/") + version + "\n";
    core::Config c = MustParse(api + R"(kind: LocalQueue
metadata: {name: default, namespace: team-a}
spec:
  clusterQueue: team-a
  stopPolicy: HoldAndDrain
  fairSharing: {weight: 3}
---
)" + api + R"(kind: WorkloadPriorityClass
metadata: {name: prod}
value: 1000
description: "production"
---
)" + api + R"(kind: Topology
metadata: {name: default}
spec:
  levels:
    - nodeLabel: topology/block
    - nodeLabel: kubernetes.io/hostname
)");
    ASSERT_EQ(c.local_queues.size(), 1u) << version;
    EXPECT_EQ(c.local_queues[0].ns, "team-a");
    EXPECT_EQ(c.local_queues[0].cluster_queue, "team-a");
    EXPECT_EQ(c.local_queues[0].stop_policy, core::StopPolicy::kHoldAndDrain);
    EXPECT_EQ(c.local_queues[0].fair_weight, 3000);
    ASSERT_EQ(c.priority_classes.size(), 1u);
    EXPECT_EQ(c.priority_classes[0].value, 1000);
    EXPECT_EQ(c.priority_classes[0].description, "production");
    ASSERT_EQ(c.topologies.size(), 1u);
    EXPECT_THAT(c.topologies[0].levels, ElementsAre("topology/block", "kubernetes.io/hostname"));
  }
  core::Config alpha = MustParse(
      "apiVersion: kueue.x-k8s.io/v1alpha1\nkind: Topology\nmetadata: {name: t}\nspec: {levels: [{nodeLabel: "
      "a}]}\n");
  EXPECT_EQ(alpha.topologies.size(), 1u);
}

TEST(ParseTest, CoreKinds) {
  core::Config c = MustParse(R"(
apiVersion: v1
kind: Namespace
metadata:
  name: team-a
  labels: {team: a}
---
apiVersion: v1
kind: ResourceQuota
metadata: {name: gpus, namespace: team-a}
spec:
  hard:
    requests.nvidia.com/gpu: 8
    requests.memory: 1Ti
)");
  ASSERT_EQ(c.namespaces.size(), 1u);
  EXPECT_EQ(c.namespaces[0].labels.at("team"), "a");
  ASSERT_EQ(c.resource_quotas.size(), 1u);
  EXPECT_EQ(c.resource_quotas[0].ns, "team-a");
  EXPECT_EQ(c.resource_quotas[0].hard.at("requests.nvidia.com/gpu"), 8000);
  EXPECT_EQ(c.resource_quotas[0].hard.at("requests.memory"), 1024 * kGi * 1000);
}

TEST(ParseTest, ListKindAndEmptyDocuments) {
  core::Config c = MustParse(R"(
---
---
apiVersion: v1
kind: List
items:
  - apiVersion: kueue.x-k8s.io/v1beta2
    kind: ResourceFlavor
    metadata: {name: a}
  - apiVersion: kueue.x-k8s.io/v1beta2
    kind: ResourceFlavor
    metadata: {name: b}
---
)");
  ASSERT_EQ(c.flavors.size(), 2u);
  EXPECT_EQ(c.flavors[1].pos.line, 10);
}

TEST(ParseTest, AppendsToExistingConfig) {
  core::Config c =
      MustParse("apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: a}\n");
  ASSERT_TRUE(
      Parse("apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: b}\n", &c).ok());
  ASSERT_EQ(c.flavors.size(), 2u);
  EXPECT_EQ(c.flavors[1].name, "b");
}

// ---- errors ----

TEST(ParseErrorTest, YamlSyntaxError) {
  Status s = ParseError("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: [a\n");
  EXPECT_EQ(s.pos().file, "m.yaml");
  EXPECT_GE(s.pos().line, 4);
  EXPECT_THAT(s.ToString(), HasSubstr("YAML syntax error"));
}

// The ClusterQueue that a well-known tutorial has users copy: `minCount`
// under a flavor resource instead of a quota.
TEST(ParseErrorTest, MinCountUnderClusterQueueSuggestsNominalQuota) {
  Status s = ParseError(R"(apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata:
  name: cluster-queue
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: ["cpu", "memory"]
    flavors:
    - name: default-flavor
      resources:
      - name: "cpu"
        nominalQuota: 9
      - name: "memory"
        minCount: 2
)");
  EXPECT_EQ(s.field(), "spec.resourceGroups[0].flavors[0].resources[1].minCount");
  EXPECT_EQ(s.pos().line, 15);
  EXPECT_EQ(s.pos().column, 9);
  EXPECT_THAT(s.message(), HasSubstr("did you mean nominalQuota?"));
  EXPECT_THAT(
      s.ToString(),
      HasSubstr("m.yaml:15:9: spec.resourceGroups[0].flavors[0].resources[1].minCount: unknown field"));
}

TEST(ParseErrorTest, TypoGetsDidYouMean) {
  Status s = ParseError(R"(apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: q}
spec:
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: f
      resources:
      - {name: cpu, nominalQuote: 1}
)");
  EXPECT_EQ(s.field(), "spec.resourceGroups[0].flavors[0].resources[0].nominalQuote");
  EXPECT_EQ(s.pos().line, 10);
  EXPECT_THAT(s.message(), HasSubstr("did you mean nominalQuota?"));
}

TEST(ParseErrorTest, MapWhereListExpected) {
  Status s = ParseError(R"(apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: q}
spec:
  resourceGroups:
    coveredResources: [cpu]
)");
  EXPECT_EQ(s.field(), "spec.resourceGroups");
  EXPECT_EQ(s.pos().line, 6);
  EXPECT_THAT(s.message(), HasSubstr("expected a list, got a map"));
}

TEST(ParseErrorTest, NonIntegerPriority) {
  Status s = ParseError(
      "apiVersion: kueue.x-k8s.io/v1beta2\nkind: WorkloadPriorityClass\n"
      "metadata: {name: p}\nvalue: 1.5\n");
  EXPECT_EQ(s.ToString(), "m.yaml:4:8: value: expected an integer, got \"1.5\"");
  Status big = ParseError(
      "apiVersion: kueue.x-k8s.io/v1beta2\nkind: WorkloadPriorityClass\n"
      "metadata: {name: p}\nvalue: 3000000000\n");
  EXPECT_THAT(big.message(), HasSubstr("out of range"));
}

TEST(ParseErrorTest, BadEnumListsAllowedValues) {
  Status s = ParseError(
      "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: q}\n"
      "spec:\n  queueingStrategy: FIFO\n");
  EXPECT_EQ(s.ToString(),
            "m.yaml:5:21: spec.queueingStrategy: invalid value \"FIFO\"; must be one of BestEffortFIFO, "
            "StrictFIFO");
}

TEST(ParseErrorTest, BadQuantity) {
  Status s = ParseError(R"(apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: q}
spec:
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: f
      resources:
      - {name: cpu, nominalQuota: 12 cores}
)");
  EXPECT_EQ(s.field(), "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota");
  EXPECT_EQ(s.pos().line, 10);
  EXPECT_THAT(s.message(), HasSubstr("invalid quantity"));
}

TEST(ParseErrorTest, RequiredFields) {
  Status no_name = ParseError("apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {}\n");
  EXPECT_EQ(no_name.field(), "metadata.name");
  EXPECT_THAT(no_name.message(), HasSubstr("missing required field"));
  Status no_ns = ParseError(
      "apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {name: q}\nspec: {clusterQueue: c}\n");
  EXPECT_EQ(no_ns.field(), "metadata.namespace");
  EXPECT_EQ(no_ns.pos().line, 3);
  Status no_cq = ParseError(
      "apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {name: q, namespace: a}\nspec: {}\n");
  EXPECT_EQ(no_cq.field(), "spec.clusterQueue");
  Status no_value =
      ParseError("apiVersion: kueue.x-k8s.io/v1beta2\nkind: WorkloadPriorityClass\nmetadata: {name: p}\n");
  EXPECT_EQ(no_value.field(), "value");
}

TEST(ParseErrorTest, UnknownKindAndApiVersion) {
  Status kind = ParseError("apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueues\nmetadata: {name: q}\n");
  EXPECT_EQ(kind.field(), "kind");
  EXPECT_EQ(kind.pos().line, 2);
  EXPECT_THAT(kind.message(), HasSubstr("unsupported kind \"ClusterQueues\""));
  EXPECT_THAT(kind.message(), HasSubstr("did you mean ClusterQueue?"));
  Status api = ParseError("apiVersion: kueue.x-k8s.io/v1\nkind: ClusterQueue\nmetadata: {name: q}\n");
  EXPECT_EQ(api.field(), "apiVersion");
  EXPECT_THAT(api.message(), HasSubstr("kueue.x-k8s.io/v1beta1 or kueue.x-k8s.io/v1beta2"));
  Status scenario = ParseError("apiVersion: artel.dev/v1alpha1\nkind: Scenario\nmetadata: {name: s}\n");
  EXPECT_THAT(scenario.message(), HasSubstr("artel test"));
  // A workload names the verb that submits it; `artel submit` does not exist.
  for (const char* wl : {"apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\n",
                         "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n",
                         "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: v}\n"}) {
    Status job = ParseError(wl);
    EXPECT_EQ(job.field(), "kind") << wl;
    EXPECT_THAT(job.message(), HasSubstr("artel apply -f")) << wl;
    EXPECT_THAT(job.message(), Not(HasSubstr("artel submit"))) << wl;
  }
  Status not_map = ParseError("- a\n- b\n");
  EXPECT_THAT(not_map.message(), HasSubstr("expected a map, got a list"));
}

TEST(ParseErrorTest, PerObjectRulesArePositionedExactly) {
  Status s = ParseError(R"(apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: q}
spec:
  cohortName: c
  resourceGroups:
  - coveredResources: [cpu, memory]
    flavors:
    - name: f
      resources:
      - {name: cpu, nominalQuota: 1, lendingLimit: 2}
      - {name: memory, nominalQuota: 1}
)");
  EXPECT_EQ(s.field(), "spec.resourceGroups[0].flavors[0].resources[0].lendingLimit");
  EXPECT_EQ(s.pos().line, 11);
  EXPECT_THAT(s.message(), HasSubstr("must not exceed nominalQuota"));
}

TEST(ParseErrorTest, FlavorMustListCoveredResources) {
  Status s = ParseError(R"(apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: q}
spec:
  resourceGroups:
  - coveredResources: [cpu, memory]
    flavors:
    - name: f
      resources:
      - {name: cpu, nominalQuota: 1}
      - {name: nvidia.com/gpu, nominalQuota: 1}
)");
  EXPECT_EQ(s.field(), "spec.resourceGroups[0].flavors[0].resources[1].name");
  EXPECT_EQ(s.pos().line, 11);
  EXPECT_THAT(s.message(), HasSubstr("expected \"memory\""));
}

TEST(ParseErrorTest, BorrowingLimitWithoutCohort) {
  Status s = ParseError(R"(apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: q}
spec:
  resourceGroups:
  - coveredResources: [cpu]
    flavors:
    - name: f
      resources:
      - {name: cpu, nominalQuota: 1, borrowingLimit: 2}
)");
  EXPECT_EQ(s.field(), "spec.resourceGroups[0].flavors[0].resources[0].borrowingLimit");
  EXPECT_THAT(s.message(), HasSubstr("borrowingLimit must not be set"));
}

TEST(ParseErrorTest, ErrorInsideListItemNamesItsPath) {
  Status s = ParseError(R"(apiVersion: v1
kind: List
items:
  - apiVersion: kueue.x-k8s.io/v1beta2
    kind: ResourceFlavor
    metadata: {name: a}
    spec: {nodeLabelz: {}}
)");
  EXPECT_EQ(s.field(), "items[0].spec.nodeLabelz");
  EXPECT_EQ(s.pos().line, 7);
}

TEST(ParseErrorTest, ConfigUnchangedOnError) {
  core::Config c =
      MustParse("apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: keep}\n");
  Status s = Parse(R"(apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: a}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: q, namespace: n}
spec: {clusterQueue: c}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: b, bogus: 1}
)",
                   &c);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.pos().line, 12);
  ASSERT_EQ(c.flavors.size(), 1u);
  EXPECT_EQ(c.flavors[0].name, "keep");
  EXPECT_TRUE(c.local_queues.empty());
}

}  // namespace
}  // namespace artel::manifest
