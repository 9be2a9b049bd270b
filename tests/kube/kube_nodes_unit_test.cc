// Unit tests of Kubernetes mode's node half without an API server: Node
// objects as placement nodes (kube/nodes.h), Kueue's topologyAssignment
// written and read back (kube/kueue_map.h), and the engine calls the
// controller uses for them (placement of TAS flavors only, incremental node
// changes, NodeFailures evictions, a restore pinned to named nodes).
#include <gtest/gtest.h>

#include "core/engine.h"
#include "kube/kueue_map.h"
#include "kube/nodes.h"

namespace artel::kube {
namespace {

using core::Amount;
namespace pl = core::placement;
constexpr Amount kGpu = 1000;

Json NodeObj(const std::string& name, const std::string& block, Json allocatable, bool ready = true) {
  return {
      {"metadata",
       {{"name", name}, {"labels", {{"block", block}, {"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB"}}}}},
      {"spec",
       {{"taints", Json::array({{{"key", "dedicated"}, {"value", "ml"}, {"effect", "NoSchedule"}}})}}},
      {"status",
       {{"allocatable", allocatable},
        {"conditions", Json::array({{{"type", "Ready"}, {"status", ready ? "True" : "False"}}})}}}};
}

TEST(KubeNodeSpec, ReadsLabelsTaintsReadinessAndCapacity) {
  auto n =
      NodeSpecFromObject(NodeObj("n1", "b1", {{"cpu", "8"}, {"memory", "32Gi"}, {"nvidia.com/gpu", "4"}}));
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(n->name, "n1");
  EXPECT_EQ(n->labels.at("block"), "b1");
  ASSERT_EQ(n->taints.size(), 1u);
  EXPECT_EQ(n->taints[0].effect, "NoSchedule");
  EXPECT_TRUE(n->ready);
  EXPECT_EQ(n->allocatable.at("nvidia.com/gpu"), 4 * kGpu);
  EXPECT_EQ(n->allocatable.at("cpu"), 8000);
  Json cordoned = NodeObj("n2", "b1", {{"cpu", "8"}});
  cordoned["spec"]["unschedulable"] = true;
  EXPECT_FALSE(NodeSpecFromObject(cordoned)->ready);
  EXPECT_FALSE(NodeSpecFromObject(NodeObj("n3", "b1", {{"cpu", "8"}}, false))->ready);
  // A bad quantity names the node and the field.
  auto bad = NodeSpecFromObject(NodeObj("n4", "b1", {{"cpu", "lots"}}));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("Node n4: status.allocatable.cpu"), std::string::npos)
      << bad.status().ToString();
}

TEST(KubeNodeSpec, MigInstancesBecomeGpuLayouts) {
  auto n = NodeSpecFromObject(
      NodeObj("m1", "b1", {{"nvidia.com/mig-1g.10gb", "7"}, {"nvidia.com/mig-3g.40gb", "2"}}));
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  // 2 x 3g.40gb fill one GPU (4 + 4 slices), 7 x 1g.10gb another.
  ASSERT_EQ(n->gpus.size(), 2u);
  int ones = 0, threes = 0;
  for (const pl::GpuSpec& g : n->gpus) {
    EXPECT_TRUE(g.mig);
    for (const pl::MigInstanceSpec& m : g.mig_layout) (m.profile == "1g.10gb" ? ones : threes)++;
  }
  EXPECT_EQ(ones, 7);
  EXPECT_EQ(threes, 2);
  pl::Cluster c;
  EXPECT_TRUE(c.AddNode(*n).ok());
  // MIG on a product without MIG geometry is an error that says so.
  Json t4 = NodeObj("t1", "b1", {{"nvidia.com/mig-1g.10gb", "1"}});
  t4["metadata"]["labels"]["nvidia.com/gpu.product"] = "Tesla-T4";
  auto bad = NodeSpecFromObject(t4);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("nvidia.com/gpu.product"), std::string::npos);
}

TEST(KubeTopologyAssignment, WrittenAndReadBack) {
  std::vector<std::pair<std::string, int32_t>> nodes = {{"n1", 2}, {"n2", 1}};
  Json ta = TopologyAssignmentJson(nodes);
  EXPECT_EQ(ta["levels"], Json::array({"kubernetes.io/hostname"}));
  EXPECT_EQ(ta["slices"][0]["domainCount"], 2);
  EXPECT_EQ(ta["slices"][0]["podCounts"]["individual"], Json::array({2, 1}));
  auto back = ParseTopologyAssignment(ta, "t");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, nodes);
  // Universal values and counts, prefix and suffix, as Kueue may write them.
  Json k = {{"levels", {"block", "kubernetes.io/hostname"}},
            {"slices",
             {{{"domainCount", 2},
               {"valuesPerLevel",
                {{{"universal", "b1"}}, {{"individual", {{"prefix", "node-"}, {"roots", {"a", "b"}}}}}}},
               {"podCounts", {{"universal", 3}}}}}}};
  back = ParseTopologyAssignment(k, "t");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, (std::vector<std::pair<std::string, int32_t>>{{"node-a", 3}, {"node-b", 3}}));
  // v1beta1 domains, written and read.
  Json v1 = {{"levels", {"kubernetes.io/hostname"}}, {"domains", {{{"values", {"x"}}, {"count", 4}}}}};
  EXPECT_EQ(*ParseTopologyAssignment(v1, "t"), (std::vector<std::pair<std::string, int32_t>>{{"x", 4}}));
  Json st = {
      {"admission", {{"podSetAssignments", Json::array({{{"name", "main"}, {"topologyAssignment", ta}}})}}}};
  TopologyAssignmentsToV1beta1(&st);
  const Json& d = st["admission"]["podSetAssignments"][0]["topologyAssignment"];
  EXPECT_FALSE(d.contains("slices"));
  EXPECT_EQ(d["domains"][1]["values"], Json::array({"n2"}));
  EXPECT_EQ(*ParseTopologyAssignment(d, "t"), nodes);
  // Errors name the field.
  k["slices"][0]["domainCount"] = 3;
  auto bad = ParseTopologyAssignment(k, "status.admission.podSetAssignments[0].topologyAssignment");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().ToString().find("podSetAssignments[0].topologyAssignment.slices[0]"),
            std::string::npos)
      << bad.status().ToString();
}

// Two flavors: "tas" (with a Topology) and "plain"; a ClusterQueue with both.
core::Config TwoFlavors() {
  core::Config c;
  c.topologies.push_back({"blocks", {"block", "kubernetes.io/hostname"}, {}, {}});
  core::ResourceFlavorSpec tas;
  tas.name = "tas";
  tas.topology_name = "blocks";
  core::ResourceFlavorSpec plain;
  plain.name = "plain";
  c.flavors = {tas, plain};
  for (const char* name : {"tas-cq", "plain-cq"}) {
    core::ClusterQueueSpec q;
    q.name = name;
    q.namespace_selector = core::LabelSelector{};
    core::ResourceGroupSpec g;
    g.covered_resources = {"nvidia.com/gpu"};
    core::FlavorQuotasSpec f;
    f.flavor = std::string(name) == "tas-cq" ? "tas" : "plain";
    f.resources.push_back({"nvidia.com/gpu", 100 * kGpu, std::nullopt, std::nullopt});
    g.flavors.push_back(f);
    q.resource_groups.push_back(g);
    c.cluster_queues.push_back(q);
  }
  c.local_queues.push_back({"ns", "tas", "tas-cq"});
  c.local_queues.push_back({"ns", "plain", "plain-cq"});
  return c;
}

core::WorkloadSpec Gang(const std::string& name, const std::string& queue, int count, int gpus) {
  core::WorkloadSpec w;
  w.ns = "ns";
  w.name = name;
  w.queue = queue;
  core::PodSetSpec ps;
  ps.count = count;
  ps.requests["nvidia.com/gpu"] = gpus * kGpu;
  if (queue == "tas") ps.topology.mut().required = "block";
  w.pod_sets.push_back(ps);
  return w;
}

pl::NodeSpec GpuNode(const std::string& name, const std::string& block, int gpus) {
  pl::NodeSpec n;
  n.name = name;
  n.labels["block"] = block;
  n.allocatable["nvidia.com/gpu"] = gpus * kGpu;
  return n;
}

std::map<std::string, int> NodesOf(const core::WorkloadInfo* w) {
  std::map<std::string, int> out;
  for (const core::PodPlacementInfo& p : w->placements) out[p.node]++;
  return out;
}

TEST(KubeEngineNodes, TopologyFlavorsPlacedNodesFollowedIncrementally) {
  core::Engine e(core::EngineOptions{.place_topology_flavors_only = true});
  ASSERT_TRUE(e.Configure(TwoFlavors()).ok());
  ASSERT_TRUE(e.AddNode(GpuNode("a1", "a", 4)).ok());
  ASSERT_TRUE(e.AddNode(GpuNode("a2", "a", 4)).ok());
  EXPECT_FALSE(e.AddNode(GpuNode("a2", "a", 4)).ok());  // duplicate
  // The plain flavor is quota-only: 16 GPUs per pod admit although no node has them.
  ASSERT_TRUE(e.Submit(Gang("plain", "plain", 2, 16), 0).ok());
  // The TAS gang needs 3 x 4 GPUs in one block: block a has 8.
  ASSERT_TRUE(e.Submit(Gang("big", "tas", 3, 4), 0).ok());
  core::CycleResult r = e.Schedule(1);
  EXPECT_EQ(r.admitted, std::vector<std::string>{"ns/plain"}) << e.Find("ns/plain")->pending->message;
  EXPECT_TRUE(e.Find("ns/plain")->placements.empty());
  EXPECT_EQ(e.Find("ns/big")->state, core::WorkloadState::kPending);
  EXPECT_NE(e.Find("ns/big")->pending->message.find("block"), std::string::npos)
      << e.Find("ns/big")->pending->message;
  // A third node in block a: admitted there.
  ASSERT_TRUE(e.AddNode(GpuNode("a3", "a", 4)).ok());
  r = e.Schedule(2);
  ASSERT_EQ(r.admitted, std::vector<std::string>{"ns/big"});
  EXPECT_EQ(NodesOf(e.Find("ns/big")), (std::map<std::string, int>{{"a1", 1}, {"a2", 1}, {"a3", 1}}));
  // a3 not ready: nothing new goes there; a NodeFailures eviction requeues.
  ASSERT_TRUE(e.SetNodeReady("a3", false).ok());
  EXPECT_FALSE(e.SetNodeReady("zz", false).ok());
  ASSERT_TRUE(e.Evict("ns/big", core::EvictionReason::kNodeFailures, "node a3 is not ready", 3).ok());
  r = e.Schedule(3);
  ASSERT_EQ(r.evictions.size(), 1u);
  EXPECT_EQ(r.evictions[0].reason, core::EvictionReason::kNodeFailures);
  ASSERT_TRUE(e.CompleteEviction("ns/big", 4).ok());
  r = e.Schedule(4);
  EXPECT_TRUE(r.admitted.empty());
  EXPECT_EQ(e.Find("ns/big")->state, core::WorkloadState::kPending);
  ASSERT_TRUE(e.SetNodeReady("a3", true).ok());
  r = e.Schedule(5);
  EXPECT_EQ(r.admitted, std::vector<std::string>{"ns/big"});
}

// Placement-aware preemption on TAS flavors: quota is plentiful, the nodes
// are not; the victim is the workload whose pods free the block.
TEST(KubeEngineNodes, PreemptionFreesTheBlock) {
  core::Config c = TwoFlavors();
  c.cluster_queues[0].preemption.within_cluster_queue = core::WithinClusterQueuePolicy::kLowerPriority;
  core::Engine e(core::EngineOptions{.place_topology_flavors_only = true});
  ASSERT_TRUE(e.Configure(c).ok());
  ASSERT_TRUE(e.SetNodes({GpuNode("a1", "a", 4), GpuNode("a2", "a", 4), GpuNode("b1", "b", 4)}).ok());
  ASSERT_TRUE(e.Submit(Gang("low-a", "tas", 2, 4), 0).ok());  // fills block a
  ASSERT_TRUE(e.Submit(Gang("low-b", "tas", 1, 2), 0).ok());  // half of block b
  core::CycleResult r = e.Schedule(1);
  ASSERT_EQ(r.admitted.size(), 2u);
  EXPECT_EQ(NodesOf(e.Find("ns/low-a")), (std::map<std::string, int>{{"a1", 1}, {"a2", 1}}));
  core::WorkloadSpec high = Gang("high", "tas", 2, 4);
  high.priority = 100;
  ASSERT_TRUE(e.Submit(high, 2).ok());
  r = e.Schedule(2);
  ASSERT_EQ(r.evictions.size(), 1u);
  EXPECT_EQ(r.evictions[0].victim, "ns/low-a");
  ASSERT_TRUE(e.CompleteEviction("ns/low-a", 3).ok());
  r = e.Schedule(3);
  EXPECT_EQ(r.admitted, std::vector<std::string>{"ns/high"});
  EXPECT_EQ(NodesOf(e.Find("ns/high")), (std::map<std::string, int>{{"a1", 1}, {"a2", 1}}));
}

TEST(KubeEngineNodes, RestoreOnNamedNodes) {
  core::Engine e(core::EngineOptions{.place_topology_flavors_only = true});
  ASSERT_TRUE(e.Configure(TwoFlavors()).ok());
  ASSERT_TRUE(e.SetNodes({GpuNode("a1", "a", 4), GpuNode("a2", "a", 4), GpuNode("b1", "b", 4)}).ok());
  ASSERT_TRUE(e.Submit(Gang("g", "tas", 3, 2), 0).ok());
  core::PodSetAssignment psa;
  psa.name = "main";
  psa.count = 3;
  psa.flavors["nvidia.com/gpu"] = "tas";
  // The placement read back puts 1 pod on a1 and 2 on a2, not where a fresh
  // placement (binpacking) would: it is kept as written.
  ASSERT_TRUE(e.RestoreOnNodes("ns/g", "tas-cq", {psa}, 0, {{{"a1", 1}, {"a2", 2}}}).ok());
  EXPECT_EQ(NodesOf(e.Find("ns/g")), (std::map<std::string, int>{{"a1", 1}, {"a2", 2}}));
  ASSERT_TRUE(e.Submit(Gang("h", "tas", 1, 4), 0).ok());
  // a node gone, or too small, leaves the workload pending (nothing changed).
  ASSERT_TRUE(e.Submit(Gang("x", "tas", 1, 4), 0).ok());
  EXPECT_FALSE(e.RestoreOnNodes("ns/x", "tas-cq", {psa}, 0, {{{"b1", 1}}}).ok());  // 1 pod, 3 admitted
  EXPECT_FALSE(e.RestoreOnNodes("ns/x", "tas-cq", {psa}, 0, {{{"zz", 3}}}).ok());
  core::PodSetAssignment one = psa;
  one.count = 1;
  EXPECT_FALSE(e.RestoreOnNodes("ns/x", "tas-cq", {one}, 0, {{{"a1", 1}}}).ok());  // a1 has 2 GPUs left
  EXPECT_EQ(e.Find("ns/x")->state, core::WorkloadState::kPending);
}

}  // namespace
}  // namespace artel::kube
