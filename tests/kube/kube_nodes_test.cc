// Kubernetes mode with Node objects (docs/kubernetes.md, "Nodes and
// topology"): a flavor with a Topology is placed on the nodes all or nothing,
// the placement is written as Kueue's topologyAssignment, the topology
// ungater pins the gated pods with a hostname nodeSelector so that the real
// kube-scheduler binds them where Artel decided; MIG instances; a node added
// admits a waiting gang; a node lost evicts (NodeFailures) and requeues.
// One scenario: each kube test starts its own API server.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>

#include "controller_env.h"

namespace artel::testing {
namespace {

constexpr int kWait = 60000;

// Nodes the fake kubelet runs: block b1 = n1, n2; block b2 = n3; m1 carries
// seven 1g.10gb MIG instances of an A100-80GB.
constexpr char kNodesYaml[] = R"(nodes:
- name: n1
  labels: {example.com/pool: gpu, example.com/block: b1, nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}
  capacity: {cpu: "8", memory: 32Gi, nvidia.com/gpu: "4"}
- name: n2
  labels: {example.com/pool: gpu, example.com/block: b1, nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}
  capacity: {cpu: "8", memory: 32Gi, nvidia.com/gpu: "4"}
- name: n3
  labels: {example.com/pool: gpu, example.com/block: b2, nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}
  capacity: {cpu: "8", memory: 32Gi, nvidia.com/gpu: "4"}
- name: m1
  labels: {example.com/pool: gpu, example.com/block: b3, nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB}
  capacity: {cpu: "8", memory: 32Gi, nvidia.com/mig-1g.10gb: "7"}
)";

constexpr char kConfig[] = R"(apiVersion: kueue.x-k8s.io/v1beta2
kind: Topology
metadata: {name: blocks}
spec:
  levels:
  - nodeLabel: example.com/block
  - nodeLabel: kubernetes.io/hostname
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: tas}
spec: {topologyName: blocks, nodeLabels: {example.com/pool: gpu}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu, nvidia.com/gpu, nvidia.com/mig-1g.10gb]
    flavors:
    - name: tas
      resources:
      - {name: cpu, nominalQuota: "100"}
      - {name: nvidia.com/gpu, nominalQuota: "100"}
      - {name: nvidia.com/mig-1g.10gb, nominalQuota: "20"}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: lq, namespace: default}
spec: {clusterQueue: cq}
)";

// A Workload of `count` pods each asking `amount` of `resource`, all in one
// block (podset-required-topology).
std::string TasWorkload(const std::string& name, int count, const std::string& resource, int amount) {
  return "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Workload\nmetadata: {name: " + name +
         ", namespace: default}\nspec:\n  queueName: lq\n  podSets:\n  - name: main\n    count: " +
         std::to_string(count) +
         "\n    template:\n      metadata:\n        annotations: {kueue.x-k8s.io/podset-required-topology: "
         "example.com/block}\n      spec:\n        restartPolicy: Never\n        containers:\n        - "
         "name: c\n"
         "          image: busybox\n          resources:\n            requests: {cpu: \"1\", " +
         resource + ": \"" + std::to_string(amount) + "\"}\n            limits: {" + resource + ": \"" +
         std::to_string(amount) + "\"}\n";
}

// The pods of a workload as the Job integration makes them: gated by the
// topology gate, with the pod-set label and the workload annotation.
std::string GatedPods(const std::string& wl, int count, const std::string& resource, int amount) {
  std::string y;
  for (int i = 0; i < count; ++i) {
    y += "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: " + wl + "-" + std::to_string(i) +
         "\n  namespace: default\n  labels: {kueue.x-k8s.io/podset: main}\n  annotations: "
         "{kueue.x-k8s.io/workload: " +
         wl +
         "}\nspec:\n  schedulingGates: [{name: kueue.x-k8s.io/topology}]\n  restartPolicy: Never\n  "
         "containers:\n"
         "  - name: c\n    image: busybox\n    resources:\n      requests: {cpu: \"1\", " +
         resource + ": \"" + std::to_string(amount) + "\"}\n      limits: {" + resource + ": \"" +
         std::to_string(amount) + "\"}\n";
  }
  return y;
}

// node -> pods, from a pod set's topologyAssignment (v1beta2, hostname level).
std::map<std::string, int> Assignment(const Json& wl) {
  std::map<std::string, int> out;
  if (!Reserved(wl)) return out;
  const Json psa = wl["status"]["admission"]["podSetAssignments"][0];
  if (!psa.contains("topologyAssignment")) return out;
  const Json& ta = psa["topologyAssignment"];
  if (ta["levels"].back() != "kubernetes.io/hostname") return out;
  for (const Json& s : ta["slices"]) {
    const int n = s["domainCount"];
    const Json& v = s["valuesPerLevel"].back();
    const Json& pc = s["podCounts"];
    for (int i = 0; i < n; ++i) {
      std::string node = v.contains("universal") ? v["universal"].get<std::string>()
                                                 : v["individual"]["roots"][i].get<std::string>();
      out[node] += pc.contains("universal") ? pc["universal"].get<int>() : pc["individual"][i].get<int>();
    }
  }
  return out;
}

class KubeNodes : public ::testing::Test {
 protected:
  void SetUp() override {
    nodes_file_ = TempDir("nodes") + "/nodes.yaml";
    std::ofstream(nodes_file_) << kNodesYaml;
    std::string error;
    ASSERT_TRUE(
        env_.Up(&error, K8sOptions{.scheduler = true, .fake_kubelet = true, .fake_nodes = nodes_file_}))
        << error;
  }
  // node -> pods bound there, over the pods of workload `wl`.
  std::map<std::string, int> Bound(const std::string& wl, int count) {
    std::map<std::string, int> out;
    for (int i = 0; i < count; ++i) {
      Json p = env_.Get("pod", "default", wl + "-" + std::to_string(i));
      std::string node = p.is_object() ? p["spec"].value("nodeName", "") : "";
      if (!node.empty()) out[node]++;
    }
    return out;
  }
  // A Node made with kubectl (no kubelet runs its pods): Ready, in `block`.
  void AddNode(const std::string& name, const std::string& block) {
    ASSERT_EQ(env_.Apply("apiVersion: v1\nkind: Node\nmetadata:\n  name: " + name +
                         "\n  labels: {example.com/pool: gpu, example.com/block: " + block +
                         ", kubernetes.io/hostname: " + name +
                         ", nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3}\n"),
              "");
    auto r = env_.Kubectl(
        {"patch", "node", name, "--subresource=status", "--type=merge", "-p",
         R"({"status":{"capacity":{"cpu":"8","memory":"32Gi","pods":"110","nvidia.com/gpu":"4"},)"
         R"("allocatable":{"cpu":"8","memory":"32Gi","pods":"110","nvidia.com/gpu":"4"},)"
         R"("conditions":[{"type":"Ready","status":"True","reason":"Test",)"
         R"("lastHeartbeatTime":"2026-01-01T00:00:00Z","lastTransitionTime":"2026-01-01T00:00:00Z"}]}})"});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    // The API server taints a new Node not-ready; the node lifecycle
    // controller (not running here) would lift it once Ready.
    auto t = env_.Kubectl({"taint", "node", name, "node.kubernetes.io/not-ready-"});
    ASSERT_TRUE(t.ok()) << t.status().ToString();
  }
  std::string Dump(const std::string& name) {
    std::string log = env_.arteld ? env_.arteld->log() : "";
    return env_.Workload("default", name).dump(1) + "\narteld log tail:\n" +
           log.substr(log.size() > 4000 ? log.size() - 4000 : 0);
  }
  KubeEnv env_;
  std::string nodes_file_;
};

TEST_F(KubeNodes, kube_TopologyPlacementPinsPodsAndFollowsNodes) {
  ASSERT_EQ(env_.Apply(kConfig), "");
  std::string error;
  ASSERT_TRUE(env_.StartArteld({"--kube-node-lost-grace-ms", "2000"}, &error)) << error;

  // 1. A gang of 4 x 2 GPUs in one block: only b1 (n1 + n2) holds it. The
  // pods bind where the topologyAssignment says.
  ASSERT_EQ(env_.Apply(TasWorkload("g1", 4, "nvidia.com/gpu", 2)), "");
  ASSERT_TRUE(WaitFor([&] { return !Assignment(env_.Workload("default", "g1")).empty(); }, kWait))
      << Dump("g1");
  const std::map<std::string, int> want = Assignment(env_.Workload("default", "g1"));
  EXPECT_EQ(want, (std::map<std::string, int>{{"n1", 2}, {"n2", 2}})) << Dump("g1");
  ASSERT_EQ(env_.Apply(GatedPods("g1", 4, "nvidia.com/gpu", 2)), "");
  ASSERT_TRUE(WaitFor([&] { return Bound("g1", 4) == want; }, kWait)) << Dump("g1");
  for (int i = 0; i < 4; ++i) {
    Json p = env_.Get("pod", "default", "g1-" + std::to_string(i));
    EXPECT_EQ(p["spec"]["nodeSelector"].value("kubernetes.io/hostname", ""), p["spec"].value("nodeName", ""));
  }

  // 2. A gang of 3 x 4 GPUs in one block fits no block now (b2 has 4 GPUs):
  // pending, and the reason says so.
  ASSERT_EQ(env_.Apply(TasWorkload("g2", 3, "nvidia.com/gpu", 4)), "");
  ASSERT_TRUE(WaitFor(
      [&] {
        Json w = env_.Workload("default", "g2");
        return Reason(w, "QuotaReserved") == "Pending" && !Message(w, "QuotaReserved").empty();
      },
      kWait))
      << Dump("g2");
  std::string why = Message(env_.Workload("default", "g2"), "QuotaReserved");
  EXPECT_NE(why.find("example.com/block"), std::string::npos) << why;

  // 3. MIG: two pods of one 1g.10gb instance each go to m1.
  ASSERT_EQ(env_.Apply(TasWorkload("mig", 2, "nvidia.com/mig-1g.10gb", 1)), "");
  ASSERT_TRUE(WaitFor([&] { return !Assignment(env_.Workload("default", "mig")).empty(); }, kWait))
      << Dump("mig");
  EXPECT_EQ(Assignment(env_.Workload("default", "mig")), (std::map<std::string, int>{{"m1", 2}}));
  ASSERT_EQ(env_.Apply(GatedPods("mig", 2, "nvidia.com/mig-1g.10gb", 1)), "");
  ASSERT_TRUE(WaitFor(
      [&] {
        return Bound("mig", 2) == (std::map<std::string, int>{{"m1", 2}});
      },
      kWait))
      << Dump("mig");

  // 4. Two nodes join block b2: g2 now fits there and is admitted.
  AddNode("n4", "b2");
  AddNode("n5", "b2");
  ASSERT_TRUE(WaitFor([&] { return !Assignment(env_.Workload("default", "g2")).empty(); }, kWait))
      << Dump("g2");
  const std::map<std::string, int> g2 = Assignment(env_.Workload("default", "g2"));
  EXPECT_EQ(g2, (std::map<std::string, int>{{"n3", 1}, {"n4", 1}, {"n5", 1}})) << Dump("g2");

  // 5. A restart reads the placements back: nothing moves, nothing is re-admitted.
  env_.arteld->Stop();
  ASSERT_TRUE(env_.StartArteld({"--kube-node-lost-grace-ms", "2000"}, &error)) << error;
  ASSERT_TRUE(
      WaitFor([&] { return env_.arteld->log().find("cluster state loaded") != std::string::npos; }, kWait));
  EXPECT_EQ(env_.arteld->log().find("admission not restorable"), std::string::npos) << env_.arteld->log();
  EXPECT_EQ(Assignment(env_.Workload("default", "g1")), want);
  EXPECT_EQ(Assignment(env_.Workload("default", "g2")), g2);

  // 6. n4 is deleted: g2 is evicted (NodeFailures); once its side clears the
  // reservation it is requeued and waits (b2 is too small again).
  ASSERT_TRUE(env_.Kubectl({"delete", "node", "n4"}).ok());
  ASSERT_TRUE(WaitFor(
      [&] {
        Json w = env_.Workload("default", "g2");
        return IsTrue(w, "Evicted") && Reason(w, "Evicted") == "NodeFailures";
      },
      kWait))
      << Dump("g2");
  EXPECT_TRUE(Reserved(env_.Workload("default", "g1")));
  ASSERT_EQ(env_.ClearReservation("default", "g2"), "");
  ASSERT_TRUE(WaitFor(
      [&] {
        Json w = env_.Workload("default", "g2");
        return !Reserved(w) && Reason(w, "Requeued") == "NodeFailures" &&
               Reason(w, "QuotaReserved") == "Pending" &&
               Message(w, "QuotaReserved").find("example.com/block") != std::string::npos;
      },
      kWait))
      << Dump("g2");

  // 7. n4 comes back: g2 is admitted again; then n5 goes NotReady and stays
  // so past the grace (2 s here): evicted again, the message names the node.
  AddNode("n4", "b2");
  ASSERT_TRUE(WaitFor([&] { return Assignment(env_.Workload("default", "g2")) == g2; }, kWait)) << Dump("g2");
  auto nr = env_.Kubectl(
      {"patch", "node", "n5", "--subresource=status", "--type=merge", "-p",
       R"({"status":{"conditions":[{"type":"Ready","status":"False","reason":"Test",)"
       R"("lastHeartbeatTime":"2026-01-01T00:00:00Z","lastTransitionTime":"2026-01-01T00:00:00Z"}]}})"});
  ASSERT_TRUE(nr.ok()) << nr.status().ToString();
  ASSERT_TRUE(WaitFor(
      [&] {
        Json w = env_.Workload("default", "g2");
        return IsTrue(w, "Evicted") && Reason(w, "Evicted") == "NodeFailures" &&
               Message(w, "Evicted").find("node n5 is not ready") != std::string::npos;
      },
      kWait))
      << Dump("g2");

  // arteld's node view: the Node objects with Artel's pods on them.
  Json nodes = env_.arteld->Get("/api/v1/nodes").json();
  std::map<std::string, Json> by_name;
  for (const Json& n : nodes.value("items", Json::array())) by_name[n.value("name", "")] = n;
  ASSERT_TRUE(by_name.count("n1")) << nodes.dump(1);
  EXPECT_EQ(by_name["n1"]["gpus"], 4);
  EXPECT_EQ(by_name["n1"]["gpusInUse"], 4);
  EXPECT_EQ(by_name["n5"]["ready"], false);
  EXPECT_EQ(by_name["m1"]["migInstances"], 7);
  // The web UI's per-product view: flavor tas spans H100 and A100 nodes, so it names no product.
  ASSERT_TRUE(nodes.contains("flavorProducts") && nodes["flavorProducts"].is_object()) << nodes.dump(1);
  EXPECT_FALSE(nodes["flavorProducts"].contains("tas")) << nodes["flavorProducts"].dump();
}

}  // namespace
}  // namespace artel::testing
