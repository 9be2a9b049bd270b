// Node pools of one host (server/inventory.h): GPU feature discovery labels,
// grouping by model and MIG mode or by the config's nodePools, labels and
// taints from the config, flavor matching, and the config file's nodePools.

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "server/config.h"
#include "server/inventory.h"

namespace artel::server {
namespace {

std::vector<runtime::GpuInfo> Fake(const std::string& spec) {
  auto d = runtime::MakeFakeDiscovery(spec);
  EXPECT_TRUE(d.ok()) << d.status().ToString();
  return *(*d)->Discover();
}

const HostPool* Find(const std::vector<HostPool>& pools, const std::string& name) {
  for (const HostPool& p : pools) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

TEST(InventoryPoolsTest, GroupsByModelAndMigWithGpuFeatureDiscoveryLabels) {
  auto gpus = Fake("2xA100-80GB,2xH100-PCIe,1xA100-80GB,2xA100-80GB:mig");
  auto pools = BuildHostPools("h1", gpus, {}, true, nullptr);
  ASSERT_TRUE(pools.ok()) << pools.status().ToString();
  ASSERT_EQ(pools->size(), 3u);
  const HostPool* a = Find(*pools, "a100-80gb");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->node.name, "h1/a100-80gb");
  EXPECT_EQ(a->gpus, (std::vector<int>{0, 1, 4}));
  EXPECT_EQ(a->node.gpus.size(), 3u);
  EXPECT_EQ(a->node.gpus[2].uuid, gpus[4].uuid);
  EXPECT_EQ(a->node.labels.at("nvidia.com/gpu.product"), "NVIDIA-A100-SXM4-80GB");
  EXPECT_EQ(a->node.labels.at("nvidia.com/gpu.memory"), "81920");
  EXPECT_EQ(a->node.labels.at("nvidia.com/gpu.count"), "3");
  EXPECT_EQ(a->node.labels.at("nvidia.com/mig.capable"), "true");
  EXPECT_EQ(a->node.labels.at("nvidia.com/mig.config"), "all-disabled");
  EXPECT_EQ(a->node.labels.at("artel.dev/node-pool"), "a100-80gb");
  EXPECT_EQ(a->node.labels.at("artel.dev/host"), "h1");
  const HostPool* h = Find(*pools, "h100-pcie");
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->node.labels.at("nvidia.com/gpu.product"), "NVIDIA-H100-PCIe");
  const HostPool* m = Find(*pools, "a100-80gb-mig");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->node.labels.at("nvidia.com/mig.strategy"), "mixed");
  EXPECT_EQ(m->node.labels.count("nvidia.com/mig.config"), 0u);  // no layout yet: the config says
  EXPECT_TRUE(m->node.gpus[0].mig);
  // Real MIG-mode GPUs are not offered (no MIG reconfiguration).
  auto real = BuildHostPools("h1", gpus, {}, false, nullptr);
  ASSERT_TRUE(real.ok());
  EXPECT_EQ(Find(*real, "a100-80gb-mig"), nullptr);
}

TEST(InventoryPoolsTest, MigConfigLabelSpellsMediaEngineProfilesAsMigParted) {
  // mig-parted names the config of GPUs cut into 1g.10gb+me "all-1g.10gb.me".
  auto gpus = Fake("2xA100-80GB:mig");
  std::vector<const runtime::GpuInfo*> ptrs;
  for (runtime::GpuInfo& g : gpus) {
    g.mig_instances = {{"1g.10gb+me", 0, "MIG-" + g.uuid}};
    ptrs.push_back(&g);
  }
  EXPECT_EQ(GpuFeatureLabels(ptrs).at("nvidia.com/mig.config"), "all-1g.10gb.me");
  for (runtime::GpuInfo& g : gpus) g.mig_instances = {{"3g.40gb", 0, "MIG-" + g.uuid}};
  EXPECT_EQ(GpuFeatureLabels(ptrs).at("nvidia.com/mig.config"), "all-3g.40gb");
}

TEST(InventoryPoolsTest, ConfiguredPoolsTakeGpusInOrderWithLabelsAndTaints) {
  auto gpus = Fake("4xA100-80GB,2xA100-80GB:mig");
  InventoryOptions o;
  o.labels["topology.kubernetes.io/zone"] = "z1";
  o.taints.push_back({"nvidia.com/gpu", "present", "NoSchedule"});
  NodePoolConfig cpu;
  cpu.name = "standard";
  NodePoolConfig small;
  small.name = "small";
  small.has_gpus = true;
  small.product = "NVIDIA-A100-SXM4-80GB";  // the GFD form works too
  small.mig = false;
  small.count = 1;
  small.labels["artel.dev/node-pool"] = "shared";
  small.taints.push_back({"artel.dev/dedicated", "x", "NoSchedule"});
  NodePoolConfig picked;
  picked.name = "picked";
  picked.has_gpus = true;
  picked.indices = {3, 4};
  NodePoolConfig none;
  none.name = "none";
  none.has_gpus = true;
  none.product = "H100-80GB";
  o.pools = {cpu, small, picked, none};
  std::vector<std::string> notes;
  auto pools = BuildHostPools("h", gpus, o, true, &notes);
  ASSERT_TRUE(pools.ok()) << pools.status().ToString();
  const HostPool* s = Find(*pools, "standard");
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(s->gpus.empty());
  EXPECT_EQ(s->node.labels.count("nvidia.com/gpu.product"), 0u);
  const HostPool* sm = Find(*pools, "small");
  ASSERT_NE(sm, nullptr);
  EXPECT_EQ(sm->gpus, std::vector<int>{0});
  EXPECT_EQ(sm->node.labels.at("artel.dev/node-pool"), "shared");  // the pool's labels override
  EXPECT_EQ(sm->node.labels.at("topology.kubernetes.io/zone"), "z1");
  ASSERT_EQ(sm->node.taints.size(), 2u);
  EXPECT_EQ(sm->node.taints[1].key, "artel.dev/dedicated");
  const HostPool* pk = Find(*pools, "picked");
  ASSERT_NE(pk, nullptr);
  EXPECT_EQ(pk->gpus, (std::vector<int>{3, 4}));  // indices, across models and MIG modes
  EXPECT_EQ(Find(*pools, "none"), nullptr);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("node pool none"), std::string::npos) << notes[0];
  // The rest: one automatic pool per model and MIG mode.
  const HostPool* rest = Find(*pools, "a100-80gb");
  ASSERT_NE(rest, nullptr);
  EXPECT_EQ(rest->gpus, (std::vector<int>{1, 2}));
  const HostPool* rest_mig = Find(*pools, "a100-80gb-mig");
  ASSERT_NE(rest_mig, nullptr);
  EXPECT_EQ(rest_mig->gpus, std::vector<int>{5});
}

TEST(InventoryPoolsTest, FlavorsMatchLabelsAndTolerateTaints) {
  auto gpus = Fake("2xA100-80GB,2xA100-40GB");
  InventoryOptions o;
  NodePoolConfig a;
  a.name = "a100-80g";
  a.has_gpus = true;
  a.product = "A100-80GB";
  a.taints.push_back({"nvidia.com/gpu", "present", "NoSchedule"});
  o.pools = {a};
  auto pools = BuildHostPools("h", gpus, o, true, nullptr);
  ASSERT_TRUE(pools.ok());
  std::vector<core::placement::NodeSpec> nodes;
  for (const HostPool& p : *pools) nodes.push_back(p.node);

  core::Config cfg;
  core::ResourceFlavorSpec ok;
  ok.name = "a100-80g";
  ok.node_labels = {{"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB"}, {"artel.dev/node-pool", "a100-80g"}};
  ok.tolerations.push_back(core::Toleration{"nvidia.com/gpu", "Exists", "", "NoSchedule"});
  core::ResourceFlavorSpec untolerated = ok;
  untolerated.name = "untolerated";
  untolerated.tolerations.clear();
  core::ResourceFlavorSpec forty;
  forty.name = "a100-40g";
  forty.node_labels = {{"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB"}};  // the automatic pool, no taint
  core::ResourceFlavorSpec h100;
  h100.name = "h100";
  h100.node_labels = {{"nvidia.com/gpu.product", "NVIDIA-H100-PCIe"}};
  core::ResourceFlavorSpec any;
  any.name = "any";  // no nodeLabels: every untainted pool
  cfg.flavors = {ok, untolerated, forty, h100, any};
  auto missing = FlavorsWithoutNodes(cfg, nodes);
  EXPECT_EQ(missing.size(), 2u);
  ASSERT_TRUE(missing.count("untolerated"));
  EXPECT_NE(missing["untolerated"].find("taint nvidia.com/gpu=present:NoSchedule"), std::string::npos)
      << missing["untolerated"];
  ASSERT_TRUE(missing.count("h100"));
  EXPECT_NE(missing["h100"].find("nvidia.com/gpu.product=NVIDIA-H100-PCIe"), std::string::npos)
      << missing["h100"];
  EXPECT_TRUE(FlavorMatchesNode(ok, nodes[0]));
  EXPECT_FALSE(FlavorMatchesNode(ok, nodes[1]));
  EXPECT_TRUE(FlavorMatchesNode(forty, nodes[1]));

  // Each flavor's GPU product (issue 16): its own nodeLabels value, or the
  // one product of the pools it matches ("any" tolerates no taint, so only
  // the 40GB pool); a flavor over pools of two products has none.
  auto products = FlavorGpuProducts(cfg, nodes);
  EXPECT_EQ(products["a100-80g"], "NVIDIA-A100-SXM4-80GB");
  EXPECT_EQ(products["h100"], "NVIDIA-H100-PCIe");  // its nodeLabels, though no node here
  EXPECT_EQ(products["any"], "NVIDIA-A100-SXM4-40GB");
  core::Config two;
  core::ResourceFlavorSpec both;
  both.name = "both";
  both.tolerations.push_back(core::Toleration{"nvidia.com/gpu", "Exists", "", "NoSchedule"});
  two.flavors = {both};
  EXPECT_EQ(FlavorGpuProducts(two, nodes).count("both"), 0u);  // 80GB and 40GB pools: unlike, left out
}

std::string WriteTemp(const std::string& text) {
  std::string path =
      (std::filesystem::temp_directory_path() / ("artel-inv-" + std::to_string(getpid()) + ".yaml")).string();
  std::ofstream(path) << text;
  return path;
}

TEST(InventoryPoolsTest, ConfigFileNodePools) {
  std::string path = WriteTemp(R"(fakeGpus: 2xA100-80GB
hostname: box
nodeLabels: {topology.kubernetes.io/zone: z}
nodeTaints: [{key: k, value: v, effect: NoSchedule}]
nodePools:
  - name: cpu
  - name: a
    gpus: {product: A100-80GB, mig: false, count: 1, indices: [0, 1]}
    labels: {artel.dev/node-pool: pool-a}
    taints: [{key: nvidia.com/gpu, effect: NoExecute}]
)");
  ArteldConfig c;
  Status s = LoadArteldConfig(path, &c);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(c.daemon.hostname, "box");
  EXPECT_EQ(c.daemon.inventory.labels.at("topology.kubernetes.io/zone"), "z");
  ASSERT_EQ(c.daemon.inventory.taints.size(), 1u);
  ASSERT_EQ(c.daemon.inventory.pools.size(), 2u);
  EXPECT_FALSE(c.daemon.inventory.pools[0].has_gpus);
  const NodePoolConfig& a = c.daemon.inventory.pools[1];
  EXPECT_TRUE(a.has_gpus);
  EXPECT_EQ(a.product, "A100-80GB");
  EXPECT_TRUE(a.mig.has_value() && !*a.mig);
  EXPECT_EQ(a.count, 1);
  EXPECT_EQ(a.indices, (std::vector<int>{0, 1}));
  EXPECT_EQ(a.labels.at("artel.dev/node-pool"), "pool-a");
  EXPECT_EQ(a.taints[0].effect, "NoExecute");

  // Bad input: a clear error with file, line and field.
  struct Bad {
    const char* yaml;
    const char* field;
    const char* message;
  };
  for (const Bad& b : {
           Bad{"nodePools:\n  - gpus: {product: A100-80GB}\n", "nodePools[0].name", "needs a name"},
           Bad{"nodePools:\n  - name: a\n  - name: a\n", "nodePools[1].name", "defined twice"},
           Bad{"nodePools:\n  - name: a b\n", "nodePools[0].name", "letters"},
           Bad{"nodePools:\n  - name: a\n    gpus: {model: x}\n", "nodePools[0].gpus.model", "unknown field"},
           Bad{"nodePools:\n  - name: a\n    gpus: {count: 0}\n", "nodePools[0].gpus.count", "at least 1"},
           Bad{"nodePools:\n  - name: a\n    taints: [{key: k, effect: Never}]\n",
               "nodePools[0].taints[0].effect", "NoSchedule"},
           Bad{"nodeLabels: [a]\n", "nodeLabels", "map"},
       }) {
    std::string p = WriteTemp(b.yaml);
    ArteldConfig bad;
    Status e = LoadArteldConfig(p, &bad);
    EXPECT_FALSE(e.ok()) << b.yaml;
    EXPECT_NE(e.ToString().find(b.field), std::string::npos) << e.ToString();
    EXPECT_NE(e.ToString().find(b.message), std::string::npos) << e.ToString();
    EXPECT_NE(e.ToString().find(p + ":"), std::string::npos) << e.ToString();
  }
  std::filesystem::remove(path);
}

// Kueue's fairSharing.preemptionStrategies as scheduler.fairSharingPreemptionStrategies.
TEST(ConfigTest, FairSharingPreemptionStrategies) {
  std::string path = WriteTemp(
      "scheduler:\n  fairSharing: true\n  fairSharingPreemptionStrategies: [LessThanInitialShare]\n");
  ArteldConfig c;
  Status s = LoadArteldConfig(path, &c);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(c.daemon.engine.fair_sharing);
  EXPECT_EQ(c.daemon.engine.fair_sharing_strategies,
            std::vector<core::FairSharingStrategy>{core::FairSharingStrategy::kLessThanInitialShare});
  ArteldConfig d;
  ASSERT_TRUE(LoadArteldConfig(WriteTemp("scheduler: {fairSharing: true}\n"), &d).ok());
  EXPECT_EQ(d.daemon.engine.fair_sharing_strategies, core::EngineOptions{}.fair_sharing_strategies);
  for (const char* bad :
       {"scheduler: {fairSharingPreemptionStrategies: [Fastest]}\n",
        "scheduler: {fairSharingPreemptionStrategies: []}\n",
        "scheduler: {fairSharingPreemptionStrategies: [LessThanInitialShare, LessThanInitialShare]}\n",
        "scheduler: {fairSharingPreemptionStrategies: LessThanInitialShare}\n"}) {
    ArteldConfig e;
    Status st = LoadArteldConfig(WriteTemp(bad), &e);
    EXPECT_FALSE(st.ok()) << bad;
    EXPECT_NE(st.ToString().find("scheduler.fairSharingPreemptionStrategies"), std::string::npos)
        << st.ToString();
    EXPECT_EQ(e.daemon.engine.fair_sharing_strategies, core::EngineOptions{}.fair_sharing_strategies);
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace artel::server
