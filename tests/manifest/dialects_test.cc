// The Volcano and KAI dialects: every kind parses, the mapping numbers,
// unsupported fields are positioned errors, workloads carry the gang
// annotations, and the examples load.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "manifest/manifest.h"

namespace artel::manifest {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

constexpr core::Amount kGi = int64_t{1} << 30;
constexpr core::Amount kM = core::kMilli;  // one unit in milli-units

core::Config MustParse(const std::string& text, Extras* extras = nullptr) {
  core::Config c;
  Status s = ParseInto(text, "d.yaml", &c, extras);
  EXPECT_TRUE(s.ok()) << s.ToString();
  if (s.ok()) {
    Status v = Validate(c);
    EXPECT_TRUE(v.ok()) << v.ToString();
  }
  return c;
}

Status ParseError(const std::string& text) {
  core::Config c;
  Status s = ParseInto(text, "d.yaml", &c);
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(c.cluster_queues.empty());
  return s;
}

std::vector<core::WorkloadSpec> MustWorkloads(const std::string& text) {
  std::vector<core::WorkloadSpec> out;
  Status s = ParseWorkloads(text, "w.yaml", &out);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return out;
}

Status WorkloadError(const std::string& text) {
  std::vector<core::WorkloadSpec> out;
  Status s = ParseWorkloads(text, "w.yaml", &out);
  EXPECT_FALSE(s.ok());
  EXPECT_TRUE(out.empty());
  return s;
}

const core::ClusterQueueSpec* FindCq(const core::Config& c, const std::string& name) {
  for (const auto& cq : c.cluster_queues) {
    if (cq.name == name) return &cq;
  }
  return nullptr;
}

const core::CohortSpec* FindCohort(const core::Config& c, const std::string& name) {
  for (const auto& co : c.cohorts) {
    if (co.name == name) return &co;
  }
  return nullptr;
}

const core::ResourceQuotaSpec* Quota(const std::vector<core::ResourceGroupSpec>& groups,
                                     const std::string& res) {
  for (const auto& rg : groups) {
    for (const auto& fq : rg.flavors) {
      for (const auto& q : fq.resources) {
        if (q.name == res) return &q;
      }
    }
  }
  return nullptr;
}

std::vector<std::string> LocalQueues(const core::Config& c) {
  std::vector<std::string> out;
  for (const auto& lq : c.local_queues) out.push_back(lq.ns + "/" + lq.name + "->" + lq.cluster_queue);
  return out;
}

// ---------------------------------------------------------------- Volcano

constexpr char kVolcanoTree[] = R"(apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: research}
spec:
  deserved: {cpu: "64", nvidia.com/gpu: "16"}
  capability: {cpu: "128", nvidia.com/gpu: "24"}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: team-a}
spec:
  parent: research
  weight: 3
  deserved: {cpu: "32", nvidia.com/gpu: "6"}
  capability: {nvidia.com/gpu: "10"}
  guarantee: {resource: {nvidia.com/gpu: "2"}}
  reclaimable: true
  dequeueStrategy: fifo
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: team-b}
spec:
  parent: root
  deserved: {nvidia.com/gpu: "4"}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: team-c}
spec:
  parent: research
  weight: 1
---
apiVersion: v1
kind: Namespace
metadata: {name: ml}
)";

TEST(VolcanoTest, QueueTreeMapping) {
  core::Config c = MustParse(kVolcanoTree);
  // research has children: a Cohort; its own share is what they leave.
  const core::CohortSpec* research = FindCohort(c, "research");
  ASSERT_NE(research, nullptr);
  EXPECT_EQ(research->parent, kVolcanoRootCohort);
  const core::ResourceQuotaSpec* gpu = Quota(research->resource_groups, "nvidia.com/gpu");
  ASSERT_NE(gpu, nullptr);
  EXPECT_EQ(gpu->nominal, 10 * kM);         // 16 - 6 (team-a) - 0 (team-c)
  EXPECT_EQ(gpu->borrowing_limit, 8 * kM);  // capability 24 - deserved 16
  const core::ResourceQuotaSpec* cpu = Quota(research->resource_groups, "cpu");
  EXPECT_EQ(cpu->nominal, 32 * kM);
  EXPECT_EQ(cpu->borrowing_limit, 64 * kM);
  EXPECT_EQ(FindCq(c, "research"), nullptr);

  const core::ClusterQueueSpec* a = FindCq(c, "team-a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->cohort, "research");
  EXPECT_EQ(a->fair_weight, 3 * kM);
  EXPECT_EQ(a->queueing_strategy, core::QueueingStrategy::kStrictFIFO);
  EXPECT_EQ(a->preemption.reclaim_within_cohort, core::ReclaimWithinCohortPolicy::kAny);
  EXPECT_EQ(a->preemption.within_cluster_queue, core::WithinClusterQueuePolicy::kLowerPriority);
  ASSERT_TRUE(a->namespace_selector.has_value());
  ASSERT_EQ(a->resource_groups.size(), 1u);
  EXPECT_THAT(a->resource_groups[0].covered_resources, ElementsAre("cpu", "nvidia.com/gpu"));
  EXPECT_EQ(a->resource_groups[0].flavors[0].flavor, kDialectFlavor);
  gpu = Quota(a->resource_groups, "nvidia.com/gpu");
  EXPECT_EQ(gpu->nominal, 6 * kM);
  EXPECT_EQ(gpu->borrowing_limit, 4 * kM);  // 10 - 6
  EXPECT_EQ(gpu->lending_limit, 4 * kM);    // 6 - guarantee 2
  cpu = Quota(a->resource_groups, "cpu");
  EXPECT_EQ(cpu->nominal, 32 * kM);
  EXPECT_FALSE(cpu->borrowing_limit.has_value());  // no capability for cpu: unlimited
  EXPECT_FALSE(cpu->lending_limit.has_value());

  const core::ClusterQueueSpec* b = FindCq(c, "team-b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->cohort, kVolcanoRootCohort);                 // parent: root
  EXPECT_EQ(Quota(b->resource_groups, "cpu")->nominal, 0);  // covers every resource of the tree

  const core::ClusterQueueSpec* cc = FindCq(c, "team-c");  // weight only
  ASSERT_NE(cc, nullptr);
  EXPECT_EQ(Quota(cc->resource_groups, "nvidia.com/gpu")->nominal, 0);
  EXPECT_FALSE(Quota(cc->resource_groups, "nvidia.com/gpu")->borrowing_limit.has_value());

  ASSERT_EQ(c.flavors.size(), 1u);
  EXPECT_EQ(c.flavors[0].name, kDialectFlavor);
  EXPECT_THAT(LocalQueues(c),
              UnorderedElementsAre("default/team-a->team-a", "ml/team-a->team-a", "default/team-b->team-b",
                                   "ml/team-b->team-b", "default/team-c->team-c", "ml/team-c->team-c"));
}

TEST(VolcanoTest, NamespacesLoadedLaterGetLocalQueues) {
  core::Config c;
  ASSERT_TRUE(ParseInto(kVolcanoTree, "q.yaml", &c).ok());
  ASSERT_TRUE(ParseInto("apiVersion: v1\nkind: Namespace\nmetadata: {name: late}\n", "ns.yaml", &c).ok());
  EXPECT_THAT(LocalQueues(c), ::testing::Contains("late/team-a->team-a"));
  EXPECT_TRUE(Validate(c).ok());
  EXPECT_TRUE(EnsureQueueInNamespace(&c, "other", "team-b"));
  EXPECT_FALSE(EnsureQueueInNamespace(&c, "other", "team-b"));    // already there
  EXPECT_FALSE(EnsureQueueInNamespace(&c, "other", "research"));  // a cohort, not a queue
  EXPECT_TRUE(Validate(c).ok());
}

TEST(VolcanoTest, ExistingFlavorIsReused) {
  core::Config c =
      MustParse(std::string("apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: "
                            "{name: default-flavor}\n---\n") +
                kVolcanoTree);
  EXPECT_EQ(c.flavors.size(), 1u);
}

TEST(VolcanoTest, UnsupportedFieldsAreErrors) {
  Status s = ParseError(R"(apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: q}
spec:
  weight: 1
  priority: 5
)");
  EXPECT_EQ(s.pos().line, 6);
  EXPECT_EQ(s.pos().column, 13);
  EXPECT_EQ(s.field(), "spec.priority");
  EXPECT_THAT(s.message(), HasSubstr("not supported"));
  EXPECT_THAT(s.ToString(), HasSubstr("d.yaml:6:13"));

  s = ParseError(R"(apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: q}
spec:
  deserved: {cpu: "1"}
  capabilty: {cpu: "2"}
)");
  EXPECT_EQ(s.pos().line, 6);
  EXPECT_EQ(s.pos().column, 3);
  EXPECT_THAT(s.message(), HasSubstr("did you mean capability"));

  s = ParseError(R"(apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: q}
spec:
  reclaimable: false
  deserved: {cpu: "1"}
)");
  EXPECT_EQ(s.field(), "spec.reclaimable");
  EXPECT_THAT(s.message(), HasSubstr("reclaimWithinCohort"));

  s = ParseError(R"(apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: q}
spec:
  deserved: {nvidia.com/gpu: "8"}
  capability: {nvidia.com/gpu: "4"}
)");
  EXPECT_EQ(s.field(), "spec.capability");
  EXPECT_THAT(s.message(), HasSubstr("below deserved"));

  s = ParseError(R"(apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: q}
spec:
  deserved: {nvidia.com/gpu: "2"}
  guarantee: {resource: {nvidia.com/gpu: "4"}}
)");
  EXPECT_THAT(s.message(), HasSubstr("exceeds deserved"));
}

TEST(VolcanoTest, TreeErrors) {
  Status s = ParseError(R"(apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: child}
spec:
  parent: reserch
  deserved: {cpu: "1"}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: research}
spec:
  deserved: {cpu: "4"}
)");
  EXPECT_EQ(s.pos().line, 5);
  EXPECT_EQ(s.field(), "spec.parent");
  EXPECT_THAT(s.message(), HasSubstr("did you mean research"));

  s = ParseError(R"(apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: p}
spec:
  deserved: {cpu: "4"}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: c}
spec:
  parent: p
  deserved: {cpu: "5"}
)");
  EXPECT_THAT(s.message(), HasSubstr("more than its own"));
  EXPECT_EQ(s.pos().line, 5);  // the parent's spec

  s = ParseError(R"(apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: q}
spec: {deserved: {cpu: "1"}}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: q}
spec: {deserved: {cpu: "1"}}
)");
  EXPECT_THAT(s.message(), HasSubstr("duplicate Volcano Queue"));
  EXPECT_EQ(s.pos().line, 8);  // the second metadata.name

  s = ParseError(R"(apiVersion: scheduling.volcano.sh/v1beta2
kind: Queue
metadata: {name: q}
)");
  EXPECT_THAT(s.message(), HasSubstr("use scheduling.volcano.sh/v1beta1"));

  s = ParseError(R"(apiVersion: scheduling.volcano.sh/v1beta1
kind: Queu
metadata: {name: q}
)");
  EXPECT_THAT(s.message(), HasSubstr("did you mean Queue"));
}

TEST(VolcanoTest, WorkloadKindsAreNotConfiguration) {
  Status s = ParseError(R"(apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: j}
)");
  EXPECT_THAT(s.message(), HasSubstr("is a workload"));
  s = ParseError("apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\n");
  EXPECT_THAT(s.message(), HasSubstr("is a workload"));
}

constexpr char kHyperNodes[] = R"(apiVersion: topology.volcano.sh/v1alpha1
kind: HyperNode
metadata: {name: leaf-0}
spec:
  tier: 1
  members:
    - {type: Node, selector: {regexMatch: {pattern: "^gpu-[01]$"}}}
---
apiVersion: topology.volcano.sh/v1alpha1
kind: HyperNode
metadata: {name: leaf-1}
spec:
  tier: 1
  tierName: leaf
  members:
    - {type: Node, selector: {exactMatch: {name: gpu-2}}}
    - {type: Node, selector: {labelMatch: {matchLabels: {rack: r9}}}}
---
apiVersion: topology.volcano.sh/v1alpha1
kind: HyperNode
metadata: {name: spine}
spec:
  tier: 3
  members:
    - {type: HyperNode, selector: {regexMatch: {pattern: "^leaf-"}}}
)";

TEST(VolcanoTest, HyperNodesBuildTopologyAndLabels) {
  Extras extras;
  core::Config c = MustParse(kHyperNodes, &extras);
  ASSERT_EQ(c.topologies.size(), 1u);
  EXPECT_EQ(c.topologies[0].name, kHyperNodeTopology);
  EXPECT_THAT(c.topologies[0].levels, ElementsAre("artel.dev/hypernode-tier-3", "artel.dev/hypernode-tier-2",
                                                  "artel.dev/hypernode-tier-1", "kubernetes.io/hostname"));
  ASSERT_EQ(extras.hypernodes.size(), 3u);
  EXPECT_EQ(extras.hypernodes[1].tier_name, "leaf");
  std::map<std::string, std::map<std::string, std::string>> nodes = {
      {"gpu-0", {}}, {"gpu-1", {}}, {"gpu-2", {}}, {"gpu-3", {{"rack", "r9"}}}, {"cpu-0", {}}};
  auto labels = HyperNodeLabels(extras.hypernodes, nodes);
  ASSERT_TRUE(labels.ok()) << labels.status().ToString();
  EXPECT_EQ(labels->at("gpu-0").at("artel.dev/hypernode-tier-1"), "leaf-0");
  EXPECT_EQ(labels->at("gpu-0").at("artel.dev/hypernode-tier-3"), "spine");
  EXPECT_EQ(labels->at("gpu-3").at("artel.dev/hypernode-tier-1"), "leaf-1");
  EXPECT_EQ(labels->count("cpu-0"), 0u);

  // A node in two leaves of one tier.
  std::vector<HyperNodeSpec> bad = extras.hypernodes;
  bad[1].members.push_back(HyperNodeMember{HyperNodeMember::Type::kNode, "gpu-0", "", std::nullopt});
  EXPECT_THAT(HyperNodeLabels(bad, nodes).status().message(), HasSubstr("two HyperNodes of tier 1"));
  // A member of a tier not below.
  bad = extras.hypernodes;
  bad[0].tier = 3;
  EXPECT_THAT(HyperNodeLabels(bad, nodes).status().message(), HasSubstr("not below"));
}

TEST(VolcanoTest, HyperNodeErrors) {
  Status s = ParseError(R"(apiVersion: topology.volcano.sh/v1alpha1
kind: HyperNode
metadata: {name: h}
spec:
  tier: 1
  members:
    - {type: HyperNode, selector: {labelMatch: {matchLabels: {a: b}}}}
)");
  EXPECT_THAT(s.message(), HasSubstr("selects nodes only"));
  EXPECT_EQ(s.pos().line, 7);
  s = ParseError(R"(apiVersion: topology.volcano.sh/v1alpha1
kind: HyperNode
metadata: {name: h}
spec:
  tier: 1
  members:
    - {type: Node, selector: {regexMatch: {pattern: "gpu-[0-"}}}
)");
  EXPECT_THAT(s.message(), HasSubstr("invalid regular expression"));
  s = ParseError(R"(apiVersion: topology.volcano.sh/v1alpha1
kind: HyperNode
metadata: {name: h}
spec:
  tier: 1
  members:
    - {type: Node, selector: {exactMatch: {name: a}, regexMatch: {pattern: b}}}
)");
  EXPECT_THAT(s.message(), HasSubstr("exactly one"));
}

TEST(VolcanoTest, PriorityClass) {
  core::Config c = MustParse(R"(apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
description: x
preemptionPolicy: PreemptLowerPriority
)");
  ASSERT_EQ(c.priority_classes.size(), 1u);
  EXPECT_EQ(c.priority_classes[0].value, 1000);
  Status s = ParseError(R"(apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
globalDefault: true
)");
  EXPECT_EQ(s.field(), "globalDefault");
}

TEST(VolcanoTest, VcJobGang) {
  auto ws = MustWorkloads(R"(apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata:
  name: train
  namespace: ml
  labels: {team: a}
spec:
  schedulerName: volcano
  queue: team-a
  minAvailable: 3
  priorityClassName: high
  maxRetry: 2
  networkTopology: {mode: hard, highestTierAllowed: 2}
  tasks:
    - name: master
      replicas: 1
      template:
        spec:
          containers:
            - name: m
              image: x
              command: [python, train.py]
              resources: {requests: {cpu: "2", memory: 8Gi, nvidia.com/gpu: "1"}}
    - name: worker
      replicas: 4
      minAvailable: 2
      template:
        metadata: {annotations: {gpu-fraction: "0.5"}}
        spec:
          nodeSelector: {nvidia.com/gpu.product: H100-80GB}
          tolerations: [{key: gpu, operator: Exists, effect: NoSchedule}]
          containers:
            - {name: w, image: x, resources: {requests: {cpu: "4"}, limits: {nvidia.com/gpu: "2"}}}
            - {name: sidecar, image: y, resources: {requests: {cpu: "1"}}}
)");
  ASSERT_EQ(ws.size(), 1u);
  const core::WorkloadSpec& w = ws[0];
  EXPECT_EQ(w.name, "train");
  EXPECT_EQ(w.ns, "ml");
  EXPECT_EQ(w.queue, "team-a");
  EXPECT_EQ(w.priority_class, "high");
  EXPECT_EQ(w.backoff_limit, 2);
  EXPECT_EQ(w.labels.at("team"), "a");
  EXPECT_EQ(w.annotations.at(kAnnDialect), "volcano");
  EXPECT_EQ(w.annotations.at(kAnnMinMember), "3");
  EXPECT_EQ(w.annotations.at(kAnnTopology), kHyperNodeTopology);
  EXPECT_EQ(w.annotations.at(kAnnNetworkTopologyMode), "hard");
  EXPECT_EQ(w.annotations.at(kAnnHighestTierAllowed), "2");
  ASSERT_EQ(w.pod_sets.size(), 2u);
  EXPECT_EQ(w.pod_sets[0].name, "master");
  EXPECT_EQ(w.pod_sets[0].count, 1);
  EXPECT_EQ(w.pod_sets[0].min_count, 1);  // Volcano's webhook default: the task's replicas
  EXPECT_EQ(w.pod_sets[0].requests.at("memory"), 8 * kGi * kM);
  EXPECT_THAT(w.pod_sets[0].command, ElementsAre("python", "train.py"));
  EXPECT_EQ(w.pod_sets[1].count, 4);
  EXPECT_EQ(w.pod_sets[1].min_count, 2);
  EXPECT_EQ(w.pod_sets[1].requests.at("cpu"), 5 * kM);             // summed over containers
  EXPECT_EQ(w.pod_sets[1].requests.at("nvidia.com/gpu"), 2 * kM);  // from the limit
  EXPECT_EQ(w.pod_sets[1].node_selector.at("nvidia.com/gpu.product"), "H100-80GB");
  EXPECT_EQ(w.pod_sets[1].tolerations.size(), 1u);
  EXPECT_EQ(w.pod_sets[1].annotations.at("gpu-fraction"), "0.5");
}

TEST(VolcanoTest, VcJobTaskMinimumDefaults) {
  auto job = [](const std::string& job_min, const std::string& master_min) {
    return "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: j}\nspec:\n" + job_min +
           "  tasks:\n"
           "    - name: master\n      replicas: 2\n" +
           master_min +
           "      template: {spec: {containers: [{name: c, image: x}]}}\n"
           "    - name: worker\n      replicas: 4\n      minAvailable: 1\n"
           "      template: {spec: {containers: [{name: c, image: x}]}}\n";
  };
  // No job minimum: the sum of the task minimums (master 2 by default + 1).
  auto ws = MustWorkloads(job("", ""));
  ASSERT_EQ(ws.size(), 1u);
  EXPECT_EQ(ws[0].annotations.at(kAnnMinMember), "3");
  EXPECT_EQ(ws[0].pod_sets[0].min_count, 2);
  EXPECT_EQ(ws[0].pod_sets[1].min_count, 1);
  // A job minimum at least the sum keeps the task minimums.
  ws = MustWorkloads(job("  minAvailable: 4\n", ""));
  EXPECT_EQ(ws[0].annotations.at(kAnnMinMember), "4");
  EXPECT_EQ(ws[0].pod_sets[0].min_count, 2);
  EXPECT_EQ(ws[0].pod_sets[1].min_count, 1);
  // Below the sum only the job minimum counts: the task minimums are dropped.
  ws = MustWorkloads(job("  minAvailable: 2\n", "      minAvailable: 2\n"));
  EXPECT_EQ(ws[0].annotations.at(kAnnMinMember), "2");
  EXPECT_FALSE(ws[0].pod_sets[0].min_count.has_value());
  EXPECT_FALSE(ws[0].pod_sets[1].min_count.has_value());
}

TEST(VolcanoTest, VcJobSingleTaskMinimumAndErrors) {
  auto ws = MustWorkloads(R"(apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: j}
spec:
  minAvailable: 2
  tasks:
    - {name: w, replicas: 8, template: {spec: {containers: [{name: c, image: x}]}}}
)");
  ASSERT_EQ(ws.size(), 1u);
  EXPECT_EQ(ws[0].ns, "default");
  EXPECT_EQ(ws[0].queue, "default");
  EXPECT_EQ(ws[0].pod_sets[0].min_count, 2);
  EXPECT_EQ(ws[0].annotations.count(kAnnTopology), 0u);

  Status s = WorkloadError(R"(apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: j}
spec:
  plugins: {ssh: [], svc: []}
  tasks:
    - {name: w, replicas: 1, template: {spec: {containers: [{name: c, image: x}]}}}
)");
  EXPECT_EQ(s.field(), "spec.plugins");
  EXPECT_EQ(s.pos().line, 5);
  EXPECT_THAT(s.message(), HasSubstr("not supported"));

  s = WorkloadError(R"(apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: j}
spec:
  tasks:
    - name: w
      template:
        spec:
          affinity: {podAntiAffinity: {}}
          containers: [{name: c, image: x}]
)");
  EXPECT_EQ(s.field(), "spec.tasks[0].template.spec.affinity.podAntiAffinity");
  EXPECT_EQ(s.pos().line, 9);
  EXPECT_THAT(s.message(), HasSubstr("inter-pod anti-affinity"));

  s = WorkloadError(R"(apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: j}
spec:
  minAvailable: 5
  tasks:
    - {name: w, replicas: 2, template: {spec: {containers: [{name: c, image: x}]}}}
)");
  EXPECT_EQ(s.field(), "spec.minAvailable");

  s = WorkloadError(R"(apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: j}
spec:
  networkTopology: {mode: strict}
  tasks:
    - {name: w, template: {spec: {containers: [{name: c, image: x}]}}}
)");
  EXPECT_EQ(s.field(), "spec.networkTopology.mode");

  s = WorkloadError(R"(apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: j}
spec:
  tasks:
    - {name: w, replicas: 1, tempalte: {}}
)");
  EXPECT_THAT(s.message(), HasSubstr("did you mean template"));
}

TEST(VolcanoTest, PodGroupWithPods) {
  std::string pod = R"(---
apiVersion: v1
kind: Pod
metadata:
  name: NAME
  annotations: {scheduling.k8s.io/group-name: pg, volcano.sh/task-spec: TASK}
spec:
  containers: [{name: c, image: x, resources: {requests: {nvidia.com/gpu: "1"}}}]
)";
  auto make = [&](const std::string& name, const std::string& task) {
    std::string p = pod;
    p.replace(p.find("NAME"), 4, name);
    p.replace(p.find("TASK"), 4, task);
    return p;
  };
  std::string text = R"(apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: pg}
spec:
  queue: team-b
  minMember: 3
  minTaskMember: {worker: 2}
  minResources: {nvidia.com/gpu: "3", cpu: 500m}
  networkTopology: {mode: soft}
)" + make("ps-0", "ps") +
                     make("w-0", "worker") + make("w-1", "worker") + make("w-2", "worker");
  auto ws = MustWorkloads(text);
  ASSERT_EQ(ws.size(), 1u);
  const core::WorkloadSpec& w = ws[0];
  EXPECT_EQ(w.queue, "team-b");
  EXPECT_EQ(w.annotations.at(kAnnMinMember), "3");
  EXPECT_EQ(w.annotations.at(kAnnMinResources), "cpu=500m,nvidia.com/gpu=3");
  EXPECT_EQ(w.annotations.at(kAnnNetworkTopologyMode), "soft");
  ASSERT_EQ(w.pod_sets.size(), 2u);
  EXPECT_EQ(w.pod_sets[0].name, "ps");
  EXPECT_EQ(w.pod_sets[0].count, 1);
  EXPECT_EQ(w.pod_sets[1].name, "worker");
  EXPECT_EQ(w.pod_sets[1].count, 3);
  EXPECT_EQ(w.pod_sets[1].min_count, 2);
  EXPECT_EQ(w.pod_sets[1].annotations.count("scheduling.k8s.io/group-name"), 0u);

  Status s = WorkloadError(text + R"(---
apiVersion: v1
kind: Pod
metadata:
  name: stray
  annotations: {scheduling.k8s.io/group-name: pgg}
spec:
  containers: [{name: c, image: x}]
)");
  EXPECT_THAT(s.message(), HasSubstr("did you mean pg"));

  s = WorkloadError(R"(apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: lonely}
spec: {minMember: 1}
)");
  EXPECT_THAT(s.message(), HasSubstr("has no pods"));
}

// ---------------------------------------------------------------- KAI

constexpr char kKaiTree[] = R"(apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {name: dept}
spec:
  resources:
    gpu: {quota: 16, limit: 24, overQuotaWeight: 1}
    cpu: {quota: 8000, limit: -1, overQuotaWeight: 1}
    memory: {quota: -1, limit: -1, overQuotaWeight: 1}
---
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {name: team-a}
spec:
  displayName: Team A
  parentQueue: dept
  priority: 100
  resources:
    gpu: {quota: 4.5, limit: 10, overQuotaWeight: 2, lendingLimit: 1}
    cpu: {quota: 1500, overQuotaWeight: 2}
    memory: {quota: 2048, limit: 4096, overQuotaWeight: 2}
---
apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {name: team-b}
spec:
  parentQueue: dept
  resources:
    gpu: {quota: -1, limit: -1}
)";

TEST(KaiTest, QueueTreeMapping) {
  core::Config c = MustParse(kKaiTree);
  const core::CohortSpec* dept = FindCohort(c, "dept");
  ASSERT_NE(dept, nullptr);
  EXPECT_EQ(dept->parent, kKaiRootCohort);
  EXPECT_EQ(Quota(dept->resource_groups, "nvidia.com/gpu")->nominal, 11500);  // 16 - 4.5 - 0
  EXPECT_EQ(Quota(dept->resource_groups, "nvidia.com/gpu")->borrowing_limit, 8 * kM);
  EXPECT_EQ(Quota(dept->resource_groups, "cpu")->nominal, 6500);  // 8 cpus - 1.5
  EXPECT_FALSE(Quota(dept->resource_groups, "cpu")->borrowing_limit.has_value());
  EXPECT_EQ(Quota(dept->resource_groups, "memory")->nominal, 0);  // quota -1: no own share

  const core::ClusterQueueSpec* a = FindCq(c, "team-a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->cohort, "dept");
  EXPECT_EQ(a->fair_weight, 2 * kM);
  EXPECT_THAT(a->resource_groups[0].covered_resources, ElementsAre("cpu", "memory", "nvidia.com/gpu"));
  const core::ResourceQuotaSpec* gpu = Quota(a->resource_groups, "nvidia.com/gpu");
  EXPECT_EQ(gpu->nominal, 4500);
  EXPECT_EQ(gpu->borrowing_limit, 5500);  // limit 10 - quota 4.5
  EXPECT_EQ(gpu->lending_limit, 1 * kM);
  EXPECT_EQ(Quota(a->resource_groups, "cpu")->nominal, 1500);                   // 1500 millicpus = 1.5 cpu
  EXPECT_FALSE(Quota(a->resource_groups, "cpu")->borrowing_limit.has_value());  // limit absent
  const core::ResourceQuotaSpec* mem = Quota(a->resource_groups, "memory");
  EXPECT_EQ(mem->nominal, 2048 * core::Amount{1000000} * kM);  // MB -> bytes
  EXPECT_EQ(mem->borrowing_limit, 2048 * core::Amount{1000000} * kM);

  const core::ClusterQueueSpec* b = FindCq(c, "team-b");
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(Quota(b->resource_groups, "nvidia.com/gpu")->nominal, 0);  // quota -1
  EXPECT_FALSE(Quota(b->resource_groups, "nvidia.com/gpu")->borrowing_limit.has_value());
  EXPECT_EQ(b->fair_weight, core::kDefaultFairWeight);
  EXPECT_THAT(LocalQueues(c), UnorderedElementsAre("default/team-a->team-a", "default/team-b->team-b"));
}

TEST(KaiTest, UnsupportedFieldsAreErrors) {
  Status s = ParseError(R"(apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {name: q}
spec:
  preemptMinRuntime: 10m
)");
  EXPECT_EQ(s.field(), "spec.preemptMinRuntime");
  EXPECT_EQ(s.pos().line, 5);

  s = ParseError(R"(apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {name: q}
spec:
  priority: 200
)");
  EXPECT_EQ(s.field(), "spec.priority");

  s = ParseError(R"(apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {name: q}
spec:
  resources:
    gpu: {quota: 1, overQuotaWeight: 2}
    cpu: {quota: 1, overQuotaWeight: 3}
)");
  EXPECT_EQ(s.field(), "spec.resources.cpu.overQuotaWeight");
  EXPECT_THAT(s.message(), HasSubstr("one fair-sharing weight"));

  s = ParseError(R"(apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {name: q}
spec:
  resources:
    gpu: {quota: 4, limit: 2}
)");
  EXPECT_THAT(s.message(), HasSubstr("below quota"));

  s = ParseError(R"(apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {name: q}
spec:
  resources:
    gpus: {quota: 4}
)");
  EXPECT_THAT(s.message(), HasSubstr("did you mean gpu"));
  EXPECT_EQ(s.pos().line, 6);
  EXPECT_EQ(s.pos().column, 5);

  s = ParseError(R"(apiVersion: scheduling.run.ai/v2
kind: Queue
metadata: {name: q}
spec:
  parentQueue: nowhere
  resources: {gpu: {quota: 1}}
)");
  EXPECT_THAT(s.message(), HasSubstr("not defined in this file"));
}

TEST(KaiTest, Topology) {
  core::Config c = MustParse(R"(apiVersion: kai.scheduler/v1alpha1
kind: Topology
metadata: {name: t}
spec:
  levels:
    - nodeLabel: zone
    - nodeLabel: rack
)");
  ASSERT_EQ(c.topologies.size(), 1u);
  EXPECT_THAT(c.topologies[0].levels, ElementsAre("zone", "rack"));
  Status s = ParseError(R"(apiVersion: kai.scheduler/v1alpha1
kind: Topology
metadata: {name: t}
spec:
  levels:
    - nodeLabel: zone
    - nodeLabel: zone
)");
  EXPECT_THAT(s.message(), HasSubstr("used by two levels"));
}

TEST(KaiTest, PodGroupWithSubGroups) {
  std::string text = R"(apiVersion: scheduling.run.ai/v2alpha2
kind: PodGroup
metadata:
  name: pg
  namespace: ns
  labels: {kai.scheduler/queue: team-a}
spec:
  minMember: 3
  priorityClassName: train
  topologyConstraint: {topology: topo, requiredTopologyLevel: rack}
  subGroups:
    - {name: leader, minMember: 1}
    - name: workers
      minMember: 2
      topologyConstraint: {topology: topo, preferredTopologyLevel: host}
)";
  auto pod = [](const std::string& name, const std::string& sub, const std::string& gpu) {
    return "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name +
           "\n  namespace: ns\n  annotations: {pod-group-name: pg, gpu-fraction: \"0.5\"}\n  labels: "
           "{kai.scheduler/subgroup-name: " +
           sub + "}\nspec:\n  containers: [{name: c, image: x, resources: {limits: {nvidia.com/gpu: \"" +
           gpu + "\"}}}]\n";
  };
  auto ws = MustWorkloads(text + pod("l", "leader", "1") + pod("w0", "workers", "2") +
                          pod("w1", "workers", "2") + pod("w2", "workers", "2"));
  ASSERT_EQ(ws.size(), 1u);
  const core::WorkloadSpec& w = ws[0];
  EXPECT_EQ(w.queue, "team-a");
  EXPECT_EQ(w.priority_class, "train");
  EXPECT_EQ(w.annotations.at(kAnnDialect), "kai");
  EXPECT_EQ(w.annotations.at(kAnnMinMember), "3");
  EXPECT_EQ(w.annotations.at(kAnnTopology), "topo");
  EXPECT_EQ(w.annotations.at(kAnnKaiRequiredPlacement), "rack");
  ASSERT_EQ(w.pod_sets.size(), 2u);
  EXPECT_EQ(w.pod_sets[0].name, "leader");
  EXPECT_EQ(w.pod_sets[0].min_count, 1);  // a subgroup minimum equal to its count: all of it is required
  EXPECT_EQ(w.pod_sets[0].annotations.at(kAnnKaiRequiredPlacement), "rack");
  EXPECT_EQ(w.pod_sets[0].annotations.count(kAnnKaiPreferredPlacement), 0u);
  EXPECT_EQ(w.pod_sets[1].name, "workers");
  EXPECT_EQ(w.pod_sets[1].count, 3);
  EXPECT_EQ(w.pod_sets[1].min_count, 2);
  EXPECT_EQ(w.pod_sets[1].annotations.at(kAnnKaiRequiredPlacement), "rack");
  EXPECT_EQ(w.pod_sets[1].annotations.at(kAnnKaiPreferredPlacement), "host");
  EXPECT_EQ(w.pod_sets[1].annotations.at("gpu-fraction"), "0.5");
  EXPECT_EQ(w.pod_sets[1].annotations.count("pod-group-name"), 0u);

  Status s =
      WorkloadError(text + pod("l", "leader", "1") + pod("w0", "workers", "2") + pod("w1", "workers", "1"));
  EXPECT_THAT(s.message(), HasSubstr("differs from pod w0"));
  s = WorkloadError(text + pod("l", "leader", "1") + pod("w0", "workrs", "2"));
  EXPECT_THAT(s.message(), HasSubstr("did you mean workers"));
  s = WorkloadError(text + pod("l", "leader", "1"));
  EXPECT_THAT(s.message(), HasSubstr("subgroup \"workers\" has no pods"));
  s = WorkloadError(R"(apiVersion: scheduling.run.ai/v2alpha2
kind: PodGroup
metadata: {name: pg}
spec:
  queue: q
  preemptibility: non-preemptible
)");
  EXPECT_EQ(s.field(), "spec.preemptibility");
  EXPECT_EQ(s.pos().line, 6);
}

// ---------------------------------------------------------------- Kueue workloads

TEST(WorkloadsTest, KueueWorkloadAndBatchJob) {
  auto ws = MustWorkloads(R"(apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: wl, namespace: team-a}
spec:
  queueName: default
  priority: 7
  podSets:
    - name: main
      count: 4
      minCount: 2
      template:
        spec:
          containers: [{name: c, image: x, resources: {requests: {nvidia.com/gpu: "1"}}}]
      topologyRequest: {required: rack, podSetSliceRequiredTopology: host, podSetSliceSize: 2}
---
apiVersion: batch/v1
kind: Job
metadata:
  name: job
  labels: {kueue.x-k8s.io/queue-name: user-queue, kueue.x-k8s.io/priority-class: high}
  annotations: {kueue.x-k8s.io/job-min-parallelism: "2"}
spec:
  parallelism: 3
  completions: 3
  backoffLimit: 1
  suspend: true
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, image: x, command: [sleep], args: ["10"], resources: {requests: {cpu: 250m}}}]
)");
  ASSERT_EQ(ws.size(), 2u);
  EXPECT_EQ(ws[0].queue, "default");
  EXPECT_EQ(ws[0].priority, 7);
  EXPECT_EQ(ws[0].pod_sets[0].min_count, 2);
  EXPECT_EQ(ws[0].pod_sets[0].annotations.at("kueue.x-k8s.io/podset-required-topology"), "rack");
  EXPECT_EQ(ws[0].pod_sets[0].annotations.at("kueue.x-k8s.io/podset-slice-size"), "2");
  EXPECT_EQ(ws[1].ns, "default");
  EXPECT_EQ(ws[1].queue, "user-queue");
  EXPECT_EQ(ws[1].priority_class, "high");
  EXPECT_EQ(ws[1].backoff_limit, 1);
  EXPECT_EQ(ws[1].pod_sets[0].count, 3);
  EXPECT_EQ(ws[1].pod_sets[0].min_count, 2);
  EXPECT_THAT(ws[1].pod_sets[0].command, ElementsAre("sleep", "10"));
  EXPECT_EQ(ws[1].pod_sets[0].requests.at("cpu"), 250);

  Status s = WorkloadError("apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec: {}\n");
  EXPECT_THAT(s.message(), HasSubstr("kueue.x-k8s.io/queue-name"));
  s = WorkloadError("apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: q}\n");
  EXPECT_THAT(s.message(), HasSubstr("not a workload"));
}

// What the API server serves: v1beta2's priorityClassRef, server-set
// metadata, defaulted pod fields; terminationGracePeriodSeconds is kept.
TEST(WorkloadsTest, KueueWorkloadAsServedByTheApiServer) {
  auto ws = MustWorkloads(R"(apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata:
  name: job-x-1
  namespace: team-a
  generateName: job-x-
  uid: 1f2e
  resourceVersion: "9"
  generation: 1
spec:
  queueName: default
  priorityClassRef: {group: kueue.x-k8s.io, kind: WorkloadPriorityClass, name: high}
  priority: 100
  podSets:
    - name: main
      count: 1
      template:
        metadata: {creationTimestamp: null}
        spec:
          dnsPolicy: ClusterFirst
          enableServiceLinks: true
          terminationGracePeriodSeconds: 12
          containers:
            - {name: c, image: x, terminationMessagePath: /dev/termination-log, terminationMessagePolicy: File}
      topologyRequest: {preferred: rack, podSetGroupName: g}
status: {conditions: []}
)");
  ASSERT_EQ(ws.size(), 1u);
  EXPECT_EQ(ws[0].priority_class, "high");
  EXPECT_EQ(ws[0].priority, 100);
  EXPECT_EQ(ws[0].termination_grace, 12000);
  EXPECT_EQ(ws[0].pod_sets[0].annotations.at("kueue.x-k8s.io/podset-preferred-topology"), "rack");

  Status s = WorkloadError(R"(apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: w, namespace: a}
spec:
  queueName: q
  priorityClassRef: {group: kueue.x-k8s.io, kind: PriorityClass, name: high}
  podSets: [{name: main, count: 1, template: {spec: {containers: [{name: c}]}}}]
)");
  EXPECT_EQ(s.field(), "spec.priorityClassRef.kind");
  s = WorkloadError(R"(apiVersion: kueue.x-k8s.io/v1beta1
kind: Workload
metadata: {name: w, namespace: a}
spec:
  queueName: q
  priorityClassSource: somewhere
  podSets: [{name: main, count: 1, template: {spec: {containers: [{name: c}]}}}]
)");
  EXPECT_EQ(s.field(), "spec.priorityClassSource");
}

// ---------------------------------------------------------------- examples

std::string ReadText(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::ostringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

TEST(ExamplesTest, DialectExamplesLoadAndTheirWorkloadsParse) {
  for (const char* dir : {"volcano", "kai"}) {
    std::filesystem::path root = std::filesystem::path(ARTEL_EXAMPLES_DIR) / dir;
    core::Config c;
    Extras extras;
    Status s = LoadPath(root.string(), &c, &extras);
    ASSERT_TRUE(s.ok()) << s.ToString();
    Status v = Validate(c);
    EXPECT_TRUE(v.ok()) << v.ToString();
    EXPECT_FALSE(c.cluster_queues.empty()) << dir;
    if (std::string(dir) == "volcano") {
      EXPECT_EQ(extras.hypernodes.size(), 3u);
    }
    for (const auto& e : std::filesystem::directory_iterator(root / "workloads")) {
      std::vector<core::WorkloadSpec> ws;
      Status ws_status = ParseWorkloads(ReadText(e.path()), e.path().string(), &ws);
      EXPECT_TRUE(ws_status.ok()) << ws_status.ToString();
      EXPECT_FALSE(ws.empty()) << e.path();
      for (const core::WorkloadSpec& w : ws) {
        EXPECT_TRUE(
            std::any_of(c.local_queues.begin(), c.local_queues.end(),
                        [&](const core::LocalQueueSpec& lq) { return lq.ns == w.ns && lq.name == w.queue; }))
            << w.ns << "/" << w.name << " -> " << w.queue;
      }
    }
  }
}

}  // namespace

TEST(NodeAffinityTest, RequiredTermsAreReadAndPreferredAccepted) {
  auto w = MustWorkloads(R"(apiVersion: batch/v1
kind: Job
metadata: {name: j, namespace: team-a, labels: {kueue.x-k8s.io/queue-name: q}}
spec:
  template:
    spec:
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
              - matchExpressions:
                  - {key: gpu, operator: In, values: [a100, h100]}
                  - {key: spot, operator: DoesNotExist}
              - matchExpressions: [{key: gen, operator: Gt, values: ["3"]}]
                matchFields: [{key: metadata.name, operator: In, values: [node-1]}]
          preferredDuringSchedulingIgnoredDuringExecution:
            - {weight: 1, preference: {matchExpressions: [{key: zone, operator: In, values: [a]}]}}
      containers: [{name: c, image: x}]
)");
  ASSERT_EQ(w.size(), 1u);
  const auto& aff = w[0].pod_sets.at(0).node_affinity;
  ASSERT_EQ(aff.size(), 2u);
  ASSERT_EQ(aff[0].match_expressions.size(), 2u);
  EXPECT_EQ(aff[0].match_expressions[0].op, "In");
  EXPECT_EQ(aff[0].match_expressions[0].values, (std::vector<std::string>{"a100", "h100"}));
  ASSERT_EQ(aff[1].match_expressions.size(), 2u);
  EXPECT_EQ(aff[1].match_expressions[1].key, "kubernetes.io/hostname");  // matchFields metadata.name
  EXPECT_TRUE(core::NodeAffinityMatches(aff, {{"gpu", "h100"}}));
  EXPECT_FALSE(core::NodeAffinityMatches(aff, {{"gpu", "h100"}, {"spot", "true"}}));
  EXPECT_TRUE(core::NodeAffinityMatches(aff, {{"gen", "4"}, {"kubernetes.io/hostname", "node-1"}}));
  EXPECT_FALSE(core::NodeAffinityMatches(aff, {{"gen", "3"}, {"kubernetes.io/hostname", "node-1"}}));
  EXPECT_FALSE(core::NodeAffinityMatches(aff, {{"gen", "x"}, {"kubernetes.io/hostname", "node-1"}}));
}

TEST(NodeAffinityTest, BadTermsArePositionedErrors) {
  auto job = [](const std::string& terms) {
    return "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j, namespace: team-a, labels: "
           "{kueue.x-k8s.io/queue-name: q}}\nspec:\n  template:\n"
           "    spec:\n      affinity:\n        nodeAffinity:\n          "
           "requiredDuringSchedulingIgnoredDuringExecution:\n"
           "            nodeSelectorTerms: " +
           terms + "\n      containers: [{name: c, image: x}]\n";
  };
  Status s = WorkloadError(job("[{matchExpressions: [{key: gpu, operator: Near, values: [a]}]}]"));
  EXPECT_THAT(s.field(), HasSubstr("nodeSelectorTerms[0].matchExpressions[0].operator"));
  s = WorkloadError(job("[{matchExpressions: [{key: gen, operator: Gt, values: [\"x\"]}]}]"));
  EXPECT_THAT(s.message(), HasSubstr("exactly one integer"));
  s = WorkloadError(job("[{matchExpressions: [{key: gpu, operator: In}]}]"));
  EXPECT_THAT(s.message(), HasSubstr("at least one value"));
  s = WorkloadError(job("[]"));
  EXPECT_THAT(s.message(), HasSubstr("at least one term"));
  s = WorkloadError(job("[{}]"));
  EXPECT_THAT(s.message(), HasSubstr("matchExpressions or matchFields"));
  s = WorkloadError(job("[{matchFields: [{key: metadata.labels, operator: In, values: [a]}]}]"));
  EXPECT_THAT(s.message(), HasSubstr("only metadata.name"));
  EXPECT_GT(s.pos().line, 0);
}

}  // namespace artel::manifest
