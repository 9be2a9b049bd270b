// Unit and acceptance tests of the placement library (issue 3, items 1-5).
#include "core/placement/placement.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/placement/gpu_geometry.h"
#include "core/placement/topology_policy.h"

namespace artel::core::placement {
namespace {

constexpr Amount kGi = Amount{1} << 30;

NodeSpec GpuNode(const std::string& name, int gpus, std::map<std::string, std::string> labels = {},
                 const std::string& model = "H100-80GB", bool mig = false) {
  NodeSpec n;
  n.name = name;
  n.labels = std::move(labels);
  n.allocatable = {{"cpu", 64 * kMilli}, {"memory", 512 * kGi * kMilli}, {"pods", 110 * kMilli}};
  for (int i = 0; i < gpus; ++i) {
    GpuSpec g;
    g.model = model;
    g.mig = mig;
    n.gpus.push_back(g);
  }
  return n;
}

PodGroup WholeGpuPods(int count, int gpus_each, int min = -1) {
  PodGroup g;
  g.count = count;
  g.min_count = min;
  g.requests = {{"cpu", 4 * kMilli}};
  g.gpu.kind = GpuKind::kWhole;
  g.gpu.count = gpus_each;
  return g;
}

GangRequest Gang(std::vector<PodGroup> groups) {
  GangRequest r;
  r.groups = std::move(groups);
  return r;
}

PodGroup FromRequests(std::map<std::string, Amount> req, GpuShareRequest share = {}) {
  PodSetSpec spec;
  spec.requests = std::move(req);
  spec.gpu_share = share;
  Result<PodGroup> g = PodGroupFromSpec(spec);
  EXPECT_TRUE(g.ok()) << (g.ok() ? "" : g.status().ToString());
  return g.ok() ? *g : PodGroup{};
}

std::vector<std::string> NodesOf(const Cluster& c, const Placement& p) {
  std::vector<std::string> out;
  for (const PodPlacement& pp : p.pods) out.push_back(c.node_name(pp.node));
  std::sort(out.begin(), out.end());
  return out;
}

// Commits `count` whole-GPU pods on `node` directly (to set up usage).
void Occupy(Cluster& c, const std::string& key, const std::string& node, int gpus) {
  GangRequest r = Gang({WholeGpuPods(1, gpus)});
  r.groups[0].node_selector = {{std::string(kHostnameLabel), node}};
  PlaceResult p = c.Place(r);
  ASSERT_TRUE(p.ok()) << p.reason;
  ASSERT_TRUE(c.Commit(key, p.placement).ok());
}

// ------------------------------------------------------------ geometry

TEST(GeometryTest, ModelsAndProfiles) {
  EXPECT_EQ(FindGpuModel("NVIDIA-H100-80GB-HBM3"), 2);
  EXPECT_EQ(FindGpuModel("A100-SXM4-40GB"), 0);
  EXPECT_EQ(FindGpuModel("NVIDIA-A100-SXM4-80GB"), 1);
  EXPECT_EQ(FindGpuModel("H200-141GB"), 3);
  EXPECT_EQ(FindGpuModel("H100-94GB"), -1);
  EXPECT_EQ(FindGpuModel("T4"), -1);
  EXPECT_EQ(FindProfile(2, "3g.40gb"), static_cast<int>(ProfileShape::k3g));
  EXPECT_EQ(FindProfile(0, "1g.10gb"), static_cast<int>(ProfileShape::k1gDouble));  // A100-40GB: 2 slices
  EXPECT_EQ(FindProfile(2, "1g.10gb"), static_cast<int>(ProfileShape::k1Slice));    // H100: 1 slice
  EXPECT_EQ(FindProfile(3, "7g.141gb"), static_cast<int>(ProfileShape::k7g));
  EXPECT_EQ(FindProfile(2, "3g.20gb"), -1);
  // Media-engine profiles by NVIDIA's name and by the device plugin's
  // resource-name form ('+' is not allowed in Kubernetes resource names).
  EXPECT_EQ(FindProfile(2, "1g.10gb+me"), static_cast<int>(ProfileShape::k1SliceMe));
  EXPECT_EQ(FindProfile(2, "1g.10gb.me"), static_cast<int>(ProfileShape::k1SliceMe));
  EXPECT_EQ(FindProfile(3, "1g.18gb.me"), static_cast<int>(ProfileShape::k1SliceMe));
  EXPECT_EQ(FindProfile(2, "3g.40gb.me"), -1);
  EXPECT_EQ(CanonicalMigProfile("1g.10gb.me"), "1g.10gb+me");
  EXPECT_EQ(CanonicalMigProfile("3g.40gb"), "3g.40gb");
  EXPECT_EQ(MigResourceName("1g.10gb+me"), "nvidia.com/mig-1g.10gb.me");
  EXPECT_EQ(MigResourceName("3g.40gb"), "nvidia.com/mig-3g.40gb");
}

TEST(GeometryTest, SmallestProfileThatFits) {
  // 18Gi = 18432 MiB: 1g.10gb (9856) is too small, 1g.20gb (19968) fits.
  EXPECT_EQ(SmallestShapeFor(2, 18432, 0), static_cast<int>(ProfileShape::k1gDouble));
  EXPECT_EQ(SmallestShapeFor(2, 18432, 2), static_cast<int>(ProfileShape::k2g));
  EXPECT_EQ(SmallestShapeFor(2, 40000, 0), static_cast<int>(ProfileShape::k3g));
  EXPECT_EQ(SmallestShapeFor(2, 40000, 4), static_cast<int>(ProfileShape::k4g));
  EXPECT_EQ(SmallestShapeFor(2, 90000, 0), -1);
  EXPECT_EQ(SmallestShapeFor(0, 4000, 0), static_cast<int>(ProfileShape::k1Slice));
}

TEST(GeometryTest, SlotRules) {
  const int k1 = static_cast<int>(ProfileShape::k1Slice), k1me = static_cast<int>(ProfileShape::k1SliceMe),
            k3 = static_cast<int>(ProfileShape::k3g), k4 = static_cast<int>(ProfileShape::k4g),
            k7 = static_cast<int>(ProfileShape::k7g), k2 = static_cast<int>(ProfileShape::k2g);
  EXPECT_FALSE(CanCreate(k1, 7, 0, 0, false));  // 1g never at slot 7
  EXPECT_TRUE(CanCreate(k1, 6, 0, 0, false));
  EXPECT_FALSE(CanCreate(k2, 6, 0, 0, false));
  EXPECT_TRUE(CanCreate(k3, 4, SliceMask(k4, 0), 4, false));  // 4g@0 + 3g@4
  EXPECT_FALSE(CanCreate(k3, 2, 0, 0, false));
  EXPECT_FALSE(CanCreate(k7, 0, SliceMask(k1, 6), 1, false));
  EXPECT_FALSE(CanCreate(k1me, 3, SliceMask(k1me, 0), 1, true));  // one media-engine instance
  // Compute budget: 4g@0 (4) + 2g@4 (2) + 1g@6 (1) = 7, then nothing more.
  uint8_t mask = SliceMask(k4, 0) | SliceMask(k2, 4) | SliceMask(k1, 6);
  EXPECT_FALSE(CanCreate(k1, 7, mask, 7, false));
  EXPECT_EQ(CountCreatable(k1, 0, 0, false), 7);
  EXPECT_EQ(CountCreatable(k3, 0, 0, false), 2);
  // Headroom: a 2-slice instance at 6 keeps 4g possible, at 0 it does not.
  const int k1d = static_cast<int>(ProfileShape::k1gDouble);
  EXPECT_GT(Headroom(SliceMask(k1d, 6), 1, false), Headroom(SliceMask(k1d, 0), 1, false));
  EXPECT_GT(Headroom(SliceMask(k1d, 6), 1, false), Headroom(SliceMask(k1d, 4), 1, false));
}

TEST(GeometryTest, ParseInstance) {
  std::string p;
  int s = -1;
  EXPECT_TRUE(ParseMigInstance("3g.40gb@4", &p, &s));
  EXPECT_EQ(p, "3g.40gb");
  EXPECT_EQ(s, 4);
  EXPECT_FALSE(ParseMigInstance("3g.40gb", &p, &s));
  EXPECT_FALSE(ParseMigInstance("3g.40gb@x", &p, &s));
}

// ------------------------------------------------------------ requests

TEST(RequestTest, Kinds) {
  PodGroup w = FromRequests({{"nvidia.com/gpu", 2 * kMilli}, {"cpu", kMilli}});
  EXPECT_EQ(w.gpu.kind, GpuKind::kWhole);
  EXPECT_EQ(w.gpu.count, 2);
  EXPECT_EQ(w.requests.count("nvidia.com/gpu"), 0u);
  EXPECT_EQ(w.requests.at("cpu"), kMilli);

  PodGroup m = FromRequests({{"nvidia.com/mig-3g.40gb", kMilli}});
  EXPECT_EQ(m.gpu.kind, GpuKind::kMigProfile);
  EXPECT_EQ(m.gpu.mig_profile, "3g.40gb");
  PodGroup me = FromRequests({{"nvidia.com/mig-1g.10gb.me", kMilli}});
  EXPECT_EQ(me.gpu.kind, GpuKind::kMigProfile);
  EXPECT_EQ(me.gpu.mig_profile, "1g.10gb+me");

  Result<Amount> c = ParseGpuCompute("3/7");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*c, 429);
  PodGroup n = FromRequests({{"artel.dev/gpu-memory", 18 * kGi * kMilli}, {"artel.dev/gpu-compute", *c}});
  EXPECT_EQ(n.gpu.kind, GpuKind::kMigNeed);
  EXPECT_EQ(n.gpu.memory_mib, 18432);
  EXPECT_EQ(n.gpu.compute_slices, 3);
  EXPECT_EQ(FromRequests({{"artel.dev/gpu-compute", 500}}).gpu.compute_slices, 4);

  PodGroup h = FromRequests({{"nvidia.com/gpu", kMilli},
                             {"nvidia.com/gpumem", 3000 * kMilli},
                             {"nvidia.com/gpucores", 30 * kMilli}});
  EXPECT_EQ(h.gpu.kind, GpuKind::kShare);
  EXPECT_EQ(h.gpu.memory_mib, 3000);
  EXPECT_EQ(h.gpu.cores_percent, 30);
  EXPECT_TRUE(h.gpu.isolated);

  PodGroup k = FromRequests({}, GpuShareRequest{.fraction = 500});
  EXPECT_EQ(k.gpu.kind, GpuKind::kShare);
  EXPECT_EQ(k.gpu.memory_permille, 500);
  EXPECT_FALSE(k.gpu.isolated);

  EXPECT_FALSE(ParseGpuRequest({{"nvidia.com/gpu", kMilli}, {"nvidia.com/mig-1g.10gb", kMilli}}, {}).ok());
  EXPECT_FALSE(ParseGpuRequest({{"nvidia.com/gpu", 500}}, {}).ok());
  EXPECT_FALSE(ParseGpuCompute("8/7").ok());
}

TEST(RequestTest, TopologyRequests) {
  Result<TopologyConstraint> k = TopologyFromRequest(TopologyRequest{.required = "rack"});
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(k->required_level, "rack");
  Result<TopologyConstraint> kai =
      TopologyFromRequest(TopologyRequest{.kai_required = "zone", .kai_preferred = "rack"});
  ASSERT_TRUE(kai.ok());
  EXPECT_EQ(kai->required_level, "zone");
  EXPECT_EQ(kai->preferred_level, "rack");
  EXPECT_FALSE(TopologyFromRequest(TopologyRequest{.slice_size = 2}).ok());
  EXPECT_FALSE(TopologyFromRequest(TopologyRequest{.required = "rack", .kai_required = "zone"}).ok());
  EXPECT_FALSE(TopologyFromRequest(TopologyRequest{.required = "rack", .unconstrained = true}).ok());

  TopologyLevels t{"net", {"spine", "leaf", std::string(kHostnameLabel)}};
  Result<TopologyConstraint> hard = TopologyFromVolcano(t, "hard", 2);
  ASSERT_TRUE(hard.ok());
  EXPECT_EQ(hard->required_level, "spine");
  EXPECT_EQ(hard->preferred_level, "leaf");
  Result<TopologyConstraint> soft = TopologyFromVolcano(t, "soft", 1);
  ASSERT_TRUE(soft.ok());
  EXPECT_TRUE(soft->required_level.empty());
  EXPECT_FALSE(TopologyFromVolcano(t, "hard", 3).ok());
  EXPECT_FALSE(TopologyFromVolcano(t, "firm", 1).ok());
}

TEST(TopologyPolicyTest, LevelsToTryAndBestFit) {
  EXPECT_EQ(LevelsToTry(-1, 2, 3), (std::vector<int32_t>{2, 1, 0}));
  EXPECT_EQ(LevelsToTry(1, 2, 3), (std::vector<int32_t>{2, 1}));
  EXPECT_EQ(LevelsToTry(1, -1, 3), (std::vector<int32_t>{1}));
  std::vector<DomainCandidate> c = {
      {0, 10, true, false}, {1, 4, true, false}, {2, 2, false, false}, {3, 4, true, true}};
  MakeBestFitDomainChooser()->Order(&c);
  EXPECT_EQ(c[0].domain, 3);  // smallest full, in use first
  EXPECT_EQ(c[1].domain, 1);
  EXPECT_EQ(c[2].domain, 0);
  EXPECT_EQ(c[3].domain, 2);  // partial fits last
}

// ------------------------------------------------------------- filters

TEST(FilterTest, SelectorTaintsReadinessFlavor) {
  Cluster c;
  NodeSpec a = GpuNode("a", 1, {{"pool", "x"}});
  NodeSpec b = GpuNode("b", 1, {{"pool", "y"}});
  b.taints = {{"dedicated", "ml", "NoSchedule"}};
  NodeSpec d = GpuNode("d", 1, {{"pool", "y"}});
  d.ready = false;
  ASSERT_TRUE(c.AddNode(a).ok());
  ASSERT_TRUE(c.AddNode(b).ok());
  ASSERT_TRUE(c.AddNode(d).ok());

  GangRequest r = Gang({WholeGpuPods(1, 1)});
  r.groups[0].node_selector = {{"pool", "y"}};
  PlaceResult p = c.Place(r);
  EXPECT_EQ(p.outcome, PlaceOutcome::kInfeasible) << p.reason;
  EXPECT_NE(p.reason.find("untolerated taint"), std::string::npos) << p.reason;
  EXPECT_NE(p.reason.find("not ready"), std::string::npos) << p.reason;
  EXPECT_NE(p.reason.find("nodeSelector"), std::string::npos) << p.reason;

  r.flavor_tolerations = {{"dedicated", "Equal", "ml", "NoSchedule"}};
  p = c.Place(r);
  ASSERT_TRUE(p.ok()) << p.reason;
  EXPECT_EQ(NodesOf(c, p.placement), std::vector<std::string>{"b"});

  GangRequest f = Gang({WholeGpuPods(1, 1)});
  f.flavor_node_labels = {{"pool", "x"}};
  p = c.Place(f);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(NodesOf(c, p.placement), std::vector<std::string>{"a"});

  ASSERT_TRUE(c.SetReady("d", true).ok());
  r.flavor_tolerations.clear();
  p = c.Place(r);
  ASSERT_TRUE(p.ok()) << p.reason;
  EXPECT_EQ(NodesOf(c, p.placement), std::vector<std::string>{"d"});
}

TEST(FilterTest, CapacityAndInfeasible) {
  Cluster c;
  ASSERT_TRUE(c.AddNode(GpuNode("a", 4)).ok());
  PlaceResult p = c.Place(Gang({WholeGpuPods(1, 8)}));
  EXPECT_EQ(p.outcome, PlaceOutcome::kInfeasible) << p.reason;
  GangRequest cpu = Gang({WholeGpuPods(1, 1)});
  cpu.groups[0].requests["cpu"] = 65 * kMilli;
  p = c.Place(cpu);
  EXPECT_EQ(p.outcome, PlaceOutcome::kInfeasible) << p.reason;
  EXPECT_NE(p.reason.find("cpu"), std::string::npos) << p.reason;
  GangRequest ext = Gang({WholeGpuPods(1, 1)});
  ext.groups[0].requests["example.com/fpga"] = kMilli;
  EXPECT_EQ(c.Place(ext).outcome, PlaceOutcome::kInfeasible);
  GangRequest mig = Gang({FromRequests({{"nvidia.com/mig-9g.99gb", kMilli}})});
  EXPECT_EQ(c.Place(mig).outcome, PlaceOutcome::kInfeasible);
  // Capacity now, not ever: unschedulable.
  Occupy(c, "x", "a", 3);
  p = c.Place(Gang({WholeGpuPods(1, 2)}));
  EXPECT_EQ(p.outcome, PlaceOutcome::kUnschedulable) << p.reason;
}

// --------------------------------------------------------------- score

TEST(ScoreTest, BinpackAndSpread) {
  Cluster c;
  for (const char* n : {"a", "b", "c"}) ASSERT_TRUE(c.AddNode(GpuNode(n, 8)).ok());
  Occupy(c, "x", "b", 4);
  PlaceResult p = c.Place(Gang({WholeGpuPods(2, 1)}));
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(NodesOf(c, p.placement), (std::vector<std::string>{"b", "b"}));  // binpack: the fullest node
  GangRequest s = Gang({WholeGpuPods(2, 1)});
  s.score = ScorePolicy::kSpread;
  p = c.Place(s);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(NodesOf(c, p.placement), (std::vector<std::string>{"a", "c"}));  // spread: the emptiest, one each

  // CPU-only pods binpack by cpu/memory ratio.
  Cluster d;
  NodeSpec small = GpuNode("small", 0);
  NodeSpec big = GpuNode("big", 0);
  big.allocatable["cpu"] = 128 * kMilli;
  ASSERT_TRUE(d.AddNode(big).ok());
  ASSERT_TRUE(d.AddNode(small).ok());
  PodGroup cpu;
  cpu.count = 1;
  cpu.requests = {{"cpu", 32 * kMilli}};
  p = d.Place(Gang({cpu}));
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(NodesOf(d, p.placement), std::vector<std::string>{"small"});
}

// ----------------------------------------------------------------- gang

TEST(GangTest, AllOrNothingAndMinCount) {
  Cluster c;
  for (const char* n : {"a", "b", "c"}) ASSERT_TRUE(c.AddNode(GpuNode(n, 1)).ok());
  PlaceResult p = c.Place(Gang({WholeGpuPods(4, 1)}));
  EXPECT_EQ(p.outcome, PlaceOutcome::kInfeasible) << p.reason;  // 3 GPUs in all
  Occupy(c, "x", "a", 1);
  p = c.Place(Gang({WholeGpuPods(3, 1)}));
  EXPECT_EQ(p.outcome, PlaceOutcome::kUnschedulable) << p.reason;
  EXPECT_NE(p.reason.find("3 whole nvidia.com/gpu"), std::string::npos) << p.reason;
  EXPECT_EQ(c.FreeWholeGpus(), 2);  // Place changed nothing
  ASSERT_TRUE(c.CheckInvariants().ok());
  p = c.Place(Gang({WholeGpuPods(3, 1, /*min=*/2)}));
  ASSERT_TRUE(p.ok()) << p.reason;
  EXPECT_EQ(p.placement.placed[0], 2);
  // Volcano minMember over two groups: 1 + 1 placed >= 2.
  GangRequest two = Gang({WholeGpuPods(2, 1, 0), WholeGpuPods(2, 1, 0)});
  two.min_member = 3;
  EXPECT_NE(c.Place(two).outcome, PlaceOutcome::kPlaced);
  two.min_member = 2;
  EXPECT_TRUE(c.Place(two).ok());
}

TEST(GangTest, GangFailsOnCpuThoughGpusSuffice) {
  // The GPU aggregate passes, the node scan must still reject: 2 pods need
  // 40 cpu each and only one node has room.
  Cluster c;
  ASSERT_TRUE(c.AddNode(GpuNode("a", 2)).ok());
  ASSERT_TRUE(c.AddNode(GpuNode("b", 2)).ok());
  GangRequest big = Gang({WholeGpuPods(1, 1)});
  big.groups[0].requests["cpu"] = 40 * kMilli;
  big.groups[0].node_selector = {{std::string(kHostnameLabel), "b"}};
  PlaceResult p = c.Place(big);
  ASSERT_TRUE(p.ok());
  ASSERT_TRUE(c.Commit("x", p.placement).ok());
  GangRequest r = Gang({WholeGpuPods(2, 1)});
  r.groups[0].requests["cpu"] = 40 * kMilli;
  p = c.Place(r);
  EXPECT_EQ(p.outcome, PlaceOutcome::kUnschedulable);
  EXPECT_NE(p.reason.find("no free cpu"), std::string::npos) << p.reason;
  EXPECT_NE(p.reason.find("1 node can take 1 pod now"), std::string::npos) << p.reason;
}

TEST(GangTest, CommitReleaseAndStale) {
  Cluster c;
  ASSERT_TRUE(c.AddNode(GpuNode("a", 2)).ok());
  PlaceResult p1 = c.Place(Gang({WholeGpuPods(1, 2)}));
  PlaceResult p2 = c.Place(Gang({WholeGpuPods(1, 2)}));
  ASSERT_TRUE(p1.ok() && p2.ok());
  ASSERT_TRUE(c.Commit("w1", p1.placement).ok());
  EXPECT_EQ(c.Commit("w1", p1.placement).code(), StatusCode::kAlreadyExists);
  Status s = c.Commit("w2", p2.placement);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
  EXPECT_FALSE(c.Holds("w2"));
  EXPECT_EQ(c.FreeWholeGpus(), 0);
  ASSERT_TRUE(c.Release("w1").ok());
  EXPECT_EQ(c.Release("w1").code(), StatusCode::kNotFound);
  EXPECT_EQ(c.FreeWholeGpus(), 2);
  ASSERT_TRUE(c.Commit("w2", p2.placement).ok());
  EXPECT_EQ(c.VisibleDevices(p2.placement.pods[0]), "GPU-a-0,GPU-a-1");
  ASSERT_TRUE(c.CheckInvariants().ok());
  Cluster copy = c;
  ASSERT_TRUE(copy.Release("w2").ok());
  EXPECT_EQ(copy.FreeWholeGpus(), 2);
  EXPECT_EQ(c.FreeWholeGpus(), 0);
  ASSERT_TRUE(copy.CheckInvariants().ok());
}

// ------------------------------------------------------------- topology

// Two racks, two nodes each, two GPUs per node with one busy: each rack has
// 2 free GPUs, the cluster 4.
Cluster TwoRacks() {
  Cluster c;
  EXPECT_TRUE(c.AddTopology({"default", {"topology/rack", std::string(kHostnameLabel)}}).ok());
  int i = 0;
  for (const char* rack : {"r1", "r2"}) {
    for (int k = 0; k < 2; ++k) {
      std::string name = std::string("n") + std::to_string(i++);
      EXPECT_TRUE(c.AddNode(GpuNode(name, 2, {{"topology/rack", rack}})).ok());
      Occupy(c, "busy-" + name, name, 1);
    }
  }
  return c;
}

TEST(TopologyTest, RequiredRackPendsPreferredRackPlaces) {
  Cluster c = TwoRacks();
  GangRequest r = Gang({WholeGpuPods(4, 1)});
  r.topology = "default";
  r.constraint.required_level = "topology/rack";
  PlaceResult p = c.Place(r);
  EXPECT_EQ(p.outcome, PlaceOutcome::kUnschedulable) << p.reason;
  EXPECT_NE(p.reason.find("required topology topology/rack unmet: r1 fits 2, r2 fits 2"), std::string::npos)
      << p.reason;

  r.constraint = {};
  r.constraint.preferred_level = "topology/rack";
  p = c.Place(r);
  ASSERT_TRUE(p.ok()) << p.reason;
  EXPECT_EQ(NodesOf(c, p.placement), (std::vector<std::string>{"n0", "n1", "n2", "n3"}));
  ASSERT_TRUE(c.Commit("gang", p.placement).ok());
  ASSERT_TRUE(c.CheckInvariants().ok());
}

// Placement-aware preemption reads the scopes: a node's required-level
// domain (or the node itself), -1 where the gang may not run (taint, not
// ready, another pool, outside only_nodes); capacity does not matter.
TEST(TopologyTest, PreemptionScopesFollowFiltersAndRequiredLevel) {
  Cluster c = TwoRacks();  // n0, n1 in r1; n2, n3 in r2; each half busy
  NodeSpec tainted = GpuNode("n4", 2, {{"topology/rack", "r2"}});
  tainted.taints = {{"dedicated", "ml", "NoSchedule"}};
  ASSERT_TRUE(c.AddNode(tainted).ok());
  NodeSpec other = GpuNode("n5", 2, {{"topology/rack", "r1"}, {"pool", "cpu"}});
  ASSERT_TRUE(c.AddNode(other).ok());
  ASSERT_TRUE(c.SetReady("n3", false).ok());
  Occupy(c, "full-n0", "n0", 1);  // no free GPU left on n0: still in scope

  GangRequest r = Gang({WholeGpuPods(4, 1)});
  r.topology = "default";
  r.constraint.required_level = "topology/rack";
  std::vector<int32_t> s = c.PreemptionScopes(r);
  ASSERT_EQ(s.size(), 6u);
  EXPECT_GE(s[0], 0);
  EXPECT_EQ(s[1], s[0]);  // r1
  EXPECT_EQ(s[5], s[0]);  // n5 is in r1 too
  EXPECT_GE(s[2], 0);
  EXPECT_NE(s[2], s[0]);  // r2
  EXPECT_EQ(s[3], -1);    // not ready
  EXPECT_EQ(s[4], -1);    // untolerated taint

  // Without a required level every usable node is its own scope.
  r.constraint = {};
  s = c.PreemptionScopes(r);
  EXPECT_EQ(s, (std::vector<int32_t>{0, 1, 2, -1, -1, 5}));
  // A node selector and only_nodes narrow the usable nodes.
  r.groups[0].node_selector = {{"pool", "cpu"}};
  EXPECT_EQ(c.PreemptionScopes(r), (std::vector<int32_t>{-1, -1, -1, -1, -1, 5}));
  r.groups[0].node_selector.clear();
  r.only_nodes = {1, 2};
  EXPECT_EQ(c.PreemptionScopes(r), (std::vector<int32_t>{-1, 1, 2, -1, -1, -1}));
}

TEST(TopologyTest, RequiredBestFitDomain) {
  // r1 has 4 free GPUs, r2 has 2: a 2-pod gang goes to r2 (best fit), so
  // that r1 stays whole for a 4-pod gang.
  Cluster c;
  ASSERT_TRUE(c.AddTopology({"t", {"rack", std::string(kHostnameLabel)}}).ok());
  ASSERT_TRUE(c.AddNode(GpuNode("a", 2, {{"rack", "r1"}})).ok());
  ASSERT_TRUE(c.AddNode(GpuNode("b", 2, {{"rack", "r1"}})).ok());
  ASSERT_TRUE(c.AddNode(GpuNode("c", 2, {{"rack", "r2"}})).ok());
  GangRequest small = Gang({WholeGpuPods(2, 1)});
  small.topology = "t";
  small.constraint.required_level = "rack";
  PlaceResult p = c.Place(small);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(NodesOf(c, p.placement), (std::vector<std::string>{"c", "c"}));
  ASSERT_TRUE(c.Commit("small", p.placement).ok());
  GangRequest big = Gang({WholeGpuPods(4, 1)});
  big.topology = "t";
  big.constraint.required_level = "rack";
  p = c.Place(big);
  ASSERT_TRUE(p.ok()) << p.reason;
  EXPECT_EQ(NodesOf(c, p.placement), (std::vector<std::string>{"a", "a", "b", "b"}));
  // A gang larger than any rack is infeasible.
  GangRequest huge = Gang({WholeGpuPods(5, 1)});
  huge.topology = "t";
  huge.constraint.required_level = "rack";
  EXPECT_EQ(c.Place(huge).outcome, PlaceOutcome::kInfeasible);
}

TEST(TopologyTest, PreferredNarrowestLevelThatFits) {
  Cluster c;
  ASSERT_TRUE(c.AddTopology({"t", {"zone", "rack", std::string(kHostnameLabel)}}).ok());
  ASSERT_TRUE(c.AddNode(GpuNode("a", 2, {{"zone", "z1"}, {"rack", "r1"}})).ok());
  ASSERT_TRUE(c.AddNode(GpuNode("b", 2, {{"zone", "z1"}, {"rack", "r2"}})).ok());
  ASSERT_TRUE(c.AddNode(GpuNode("c", 2, {{"zone", "z2"}, {"rack", "r3"}})).ok());
  ASSERT_TRUE(c.AddNode(GpuNode("d", 2, {{"zone", "z2"}, {"rack", "r3"}})).ok());
  GangRequest r = Gang({WholeGpuPods(4, 1)});
  r.topology = "t";
  r.constraint.preferred_level = "rack";
  PlaceResult p = c.Place(r);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(NodesOf(c, p.placement), (std::vector<std::string>{"c", "c", "d", "d"}));  // rack r3 holds all 4
  // KAI: required zone, preferred rack; with r3 taken, zone z1 spans two racks.
  ASSERT_TRUE(c.Commit("first", p.placement).ok());
  r.constraint.required_level = "zone";
  p = c.Place(r);
  ASSERT_TRUE(p.ok()) << p.reason;
  EXPECT_EQ(NodesOf(c, p.placement), (std::vector<std::string>{"a", "a", "b", "b"}));
}

TEST(TopologyTest, SlicesEachInOneDomain) {
  Cluster c;
  ASSERT_TRUE(c.AddTopology({"t", {"block", "rack", std::string(kHostnameLabel)}}).ok());
  // Block b1: racks r1 (3 nodes) and r2 (3 nodes), one GPU each.
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(
        c.AddNode(GpuNode("n" + std::to_string(i), 1, {{"block", "b1"}, {"rack", i < 3 ? "r1" : "r2"}}))
            .ok());
  }
  GangRequest r = Gang({WholeGpuPods(4, 1)});
  r.topology = "t";
  r.constraint.required_level = "block";
  r.constraint.slice_level = "rack";
  r.constraint.slice_size = 2;
  PlaceResult p = c.Place(r);
  ASSERT_TRUE(p.ok()) << p.reason;
  int r1 = 0;
  for (const PodPlacement& pp : p.placement.pods) r1 += pp.node < 3 ? 1 : 0;
  EXPECT_EQ(r1, 2);  // two slices of two, one per rack
  r.constraint.slice_size = 4;
  EXPECT_NE(c.Place(r).outcome, PlaceOutcome::kPlaced);
}

TEST(TopologyTest, PerGroupConstraintsPlaceEachGroupOnItsOwn) {
  // Two hosts with 2 GPUs each. Each group asks for 2 pods on one host
  // (Kueue fits each PodSet's request on its own): together they need both
  // hosts, which one gang-wide constraint could never give.
  Cluster c;
  ASSERT_TRUE(c.AddTopology({"t", {std::string(kHostnameLabel)}}).ok());
  ASSERT_TRUE(c.AddNode(GpuNode("a", 2)).ok());
  ASSERT_TRUE(c.AddNode(GpuNode("b", 2)).ok());
  GangRequest r = Gang({WholeGpuPods(2, 1), WholeGpuPods(2, 1)});
  r.topology = "t";
  r.constraint.required_level = kHostnameLabel;
  EXPECT_NE(c.Place(r).outcome, PlaceOutcome::kPlaced);
  TopologyConstraint host;
  host.required_level = kHostnameLabel;
  r.constraint = {};  // no gang constraint: each group anywhere, under its own
  r.group_constraints = {host, host};
  const int64_t free_before = c.FreeWholeGpus();
  PlaceResult p = c.Place(r);
  ASSERT_TRUE(p.ok()) << p.reason;
  EXPECT_EQ(c.FreeWholeGpus(), free_before) << "Place is tentative";
  ASSERT_TRUE(c.CheckInvariants().ok());
  ASSERT_EQ(p.placement.placed, (std::vector<int32_t>{2, 2}));
  std::map<int32_t, std::set<int32_t>> nodes_of_group;
  for (const PodPlacement& pp : p.placement.pods) nodes_of_group[pp.group].insert(pp.node);
  EXPECT_EQ(nodes_of_group[0].size(), 1u);
  EXPECT_EQ(nodes_of_group[1].size(), 1u);
  EXPECT_NE(*nodes_of_group[0].begin(), *nodes_of_group[1].begin());
  ASSERT_TRUE(c.Commit("w", p.placement).ok());
  EXPECT_EQ(c.FreeWholeGpus(), 0);
  // A third group that fits nowhere fails the whole request and changes nothing.
  ASSERT_TRUE(c.Release("w").ok());
  r.groups.push_back(WholeGpuPods(1, 1));
  r.group_constraints.push_back(host);
  PlaceResult q = c.Place(r);
  EXPECT_EQ(q.outcome, PlaceOutcome::kUnschedulable) << q.reason;
  EXPECT_NE(q.reason.find("pod set"), std::string::npos) << q.reason;
  EXPECT_EQ(c.FreeWholeGpus(), 4);
  ASSERT_TRUE(c.CheckInvariants().ok());
}

TEST(TopologyTest, PartialGangKeepsTheMostPods) {
  // Rack r1 fits 2 one-GPU pods, r2 fits 4. Six pods with a minimum of 2
  // get 4 in r2 (Kueue's PodSetReducer: the largest count that fits), not
  // the 2 of the tightest rack; and the cluster is left as it was.
  Cluster c;
  ASSERT_TRUE(c.AddTopology({"t", {"rack", std::string(kHostnameLabel)}}).ok());
  ASSERT_TRUE(c.AddNode(GpuNode("a", 2, {{"rack", "r1"}})).ok());
  ASSERT_TRUE(c.AddNode(GpuNode("b", 3, {{"rack", "r2"}})).ok());
  ASSERT_TRUE(c.AddNode(GpuNode("c", 1, {{"rack", "r2"}})).ok());
  GangRequest r = Gang({WholeGpuPods(6, 1, 2)});
  r.topology = "t";
  r.constraint.required_level = "rack";
  PlaceResult p = c.Place(r);
  ASSERT_TRUE(p.ok()) << p.reason;
  EXPECT_EQ(NodesOf(c, p.placement), (std::vector<std::string>{"b", "b", "b", "c"}));
  EXPECT_EQ(c.FreeWholeGpus(), 6);
  ASSERT_TRUE(c.CheckInvariants().ok());
  // A preference: all 6 fit over both racks, as without a minimum.
  r.constraint = {};
  r.constraint.preferred_level = "rack";
  p = c.Place(r);
  ASSERT_TRUE(p.ok()) << p.reason;
  EXPECT_EQ(p.placement.placed, (std::vector<int32_t>{6}));
  // A gang minimum over two groups (Volcano/KAI): 1 + 5 pods, at least 2 in
  // all, in one rack: r2 takes the leader and 3 workers.
  GangRequest g = Gang({WholeGpuPods(1, 1, 1), WholeGpuPods(5, 1, 1)});
  g.min_member = 2;
  g.topology = "t";
  g.constraint.required_level = "rack";
  p = c.Place(g);
  ASSERT_TRUE(p.ok()) << p.reason;
  EXPECT_EQ(p.placement.placed, (std::vector<int32_t>{1, 3}));
  EXPECT_EQ(NodesOf(c, p.placement), (std::vector<std::string>{"b", "b", "b", "c"}));
  // KAI subgroups, each under its own (preferred host) constraint inside the
  // gang's required rack: again the rack that holds the most pods.
  TopologyConstraint host;
  host.preferred_level = kHostnameLabel;
  g.group_constraints = {host, host};
  p = c.Place(g);
  ASSERT_TRUE(p.ok()) << p.reason;
  EXPECT_EQ(p.placement.placed, (std::vector<int32_t>{1, 3}));
  EXPECT_EQ(c.FreeWholeGpus(), 6);
  ASSERT_TRUE(c.CheckInvariants().ok());
}

TEST(TopologyTest, PendingReasonCountsTheGangTogether) {
  // Each host fits 3 one-cpu pods; a leader and 3 workers need 4 on one
  // host. The reason says what the gang gets per host (3), not the sum of
  // each group's own fit (1 + 3).
  Cluster c;
  ASSERT_TRUE(c.AddTopology({"t", {std::string(kHostnameLabel)}}).ok());
  for (const char* name : {"n0", "n1"}) {
    NodeSpec n;
    n.name = name;
    n.allocatable = {{"cpu", 3 * kMilli}, {"pods", 10 * kMilli}};
    ASSERT_TRUE(c.AddNode(n).ok());
  }
  PodGroup leader, workers;
  leader.name = "leader";
  leader.requests = {{"cpu", kMilli}};
  workers = leader;
  workers.name = "workers";
  workers.count = 3;
  GangRequest r = Gang({leader, workers});
  r.topology = "t";
  r.constraint.required_level = kHostnameLabel;
  PlaceResult p = c.Place(r);
  ASSERT_EQ(p.outcome, PlaceOutcome::kUnschedulable) << p.reason;
  EXPECT_NE(p.reason.find("unmet: n0 fits 3, n1 fits 3"), std::string::npos) << p.reason;
  ASSERT_TRUE(c.CheckInvariants().ok());
  EXPECT_TRUE(c.Place(Gang({leader})).ok());  // nothing was left behind
}

TEST(TopologyTest, AntiFragmentationTieBreak) {
  // Equal scores everywhere (all candidate nodes are empty 8-GPU hosts); the
  // pod goes to the rack that is already in use, keeping rack r2 whole.
  Cluster c;
  ASSERT_TRUE(c.AddTopology({"t", {"rack", std::string(kHostnameLabel)}}).ok());
  ASSERT_TRUE(c.AddNode(GpuNode("a", 8, {{"rack", "r2"}})).ok());
  ASSERT_TRUE(c.AddNode(GpuNode("b", 8, {{"rack", "r2"}})).ok());
  ASSERT_TRUE(c.AddNode(GpuNode("c", 8, {{"rack", "r1"}})).ok());
  ASSERT_TRUE(c.AddNode(GpuNode("d", 8, {{"rack", "r1"}})).ok());
  Occupy(c, "full", "d", 8);
  PlaceResult p = c.Place(Gang({WholeGpuPods(1, 1)}));  // no topology named: the first one breaks ties
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(NodesOf(c, p.placement), std::vector<std::string>{"c"});
}

// ------------------------------------------------------------------ MIG

TEST(MigTest, MemoryNeedThenProfileOnEmptyH100) {
  Cluster c;
  ASSERT_TRUE(c.AddNode(GpuNode("gpu-0", 1, {}, "H100-80GB", /*mig=*/true)).ok());
  PlaceResult p = c.Place(Gang({FromRequests({{"artel.dev/gpu-memory", 18 * kGi * kMilli}})}));
  ASSERT_TRUE(p.ok()) << p.reason;
  ASSERT_EQ(p.placement.pods[0].mig.size(), 1u);
  const MigAssignment& m = p.placement.pods[0].mig[0];
  EXPECT_EQ(m.profile, "1g.20gb");
  EXPECT_EQ(m.start, 6);  // keeps 4g@0 and 3g@0 possible
  EXPECT_TRUE(m.create);
  ASSERT_TRUE(c.Commit("small", p.placement).ok());
  EXPECT_EQ(c.VisibleDevices(p.placement.pods[0]), "MIG-GPU-gpu-0-0-1g.20gb-6");

  p = c.Place(Gang({FromRequests({{"nvidia.com/mig-3g.40gb", kMilli}})}));
  ASSERT_TRUE(p.ok()) << p.reason;
  EXPECT_EQ(p.placement.pods[0].mig[0].start, 0);
  ASSERT_TRUE(c.Commit("big", p.placement).ok());
  EXPECT_EQ(c.MigLayout(0, 0), (std::vector<std::string>{"3g.40gb@0", "1g.20gb@6"}));
  ASSERT_TRUE(c.CheckInvariants().ok());
  // Release keeps the layout, idle; the same profile reuses the instance.
  ASSERT_TRUE(c.Release("big").ok());
  EXPECT_EQ(c.MigLayout(0, 0).size(), 2u);
  EXPECT_TRUE(c.BusyMigInstances(0, 0) == std::vector<std::string>{"1g.20gb@6"});
  p = c.Place(Gang({FromRequests({{"nvidia.com/mig-3g.40gb", kMilli}})}));
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p.placement.pods[0].mig[0].create);
}

TEST(MigTest, RepartitionOnlyIdleInstances) {
  Cluster c;
  NodeSpec n = GpuNode("g", 1, {}, "A100-80GB", true);
  n.gpus[0].mig_layout = {{"4g.40gb", 0}, {"3g.40gb", 4}};
  ASSERT_TRUE(c.AddNode(n).ok());
  // Take the 3g (reuse, no repartition).
  PlaceResult p = c.Place(Gang({FromRequests({{"nvidia.com/mig-3g.40gb", kMilli}})}));
  ASSERT_TRUE(p.ok());
  EXPECT_FALSE(p.placement.pods[0].mig[0].create);
  EXPECT_EQ(p.placement.pods[0].mig[0].start, 4);
  ASSERT_TRUE(c.Commit("three", p.placement).ok());
  // 7g needs the whole GPU; the 3g in the way is busy: refused.
  p = c.Place(Gang({FromRequests({{"nvidia.com/mig-7g.80gb", kMilli}})}));
  EXPECT_EQ(p.outcome, PlaceOutcome::kUnschedulable) << p.reason;
  // A 2g fits only by repartitioning the idle 4g: allowed.
  p = c.Place(Gang({FromRequests({{"nvidia.com/mig-2g.20gb", kMilli}})}));
  ASSERT_TRUE(p.ok()) << p.reason;
  ASSERT_EQ(p.placement.pods[0].mig[0].destroy.size(), 1u);
  EXPECT_EQ(p.placement.pods[0].mig[0].destroy[0].profile, "4g.40gb");
  // Once the 3g is released, 7g repartitions both idle instances.
  ASSERT_TRUE(c.Release("three").ok());
  p = c.Place(Gang({FromRequests({{"nvidia.com/mig-7g.80gb", kMilli}})}));
  ASSERT_TRUE(p.ok()) << p.reason;
  EXPECT_EQ(p.placement.pods[0].mig[0].destroy.size(), 2u);
  ASSERT_TRUE(c.Commit("seven", p.placement).ok());
  EXPECT_EQ(c.MigLayout(0, 0), std::vector<std::string>{"7g.80gb@0"});
  ASSERT_TRUE(c.CheckInvariants().ok());
}

TEST(MigTest, BadLayoutsRejected) {
  Cluster c;
  NodeSpec n = GpuNode("g", 1, {}, "H100-80GB", true);
  n.gpus[0].mig_layout = {{"3g.40gb", 2}};
  EXPECT_FALSE(c.AddNode(n).ok());
  n.gpus[0].mig_layout = {{"4g.40gb", 0}, {"3g.40gb", 0}};
  EXPECT_FALSE(c.AddNode(n).ok());
  n.gpus[0].mig_layout = {{"3g.20gb", 0}};
  EXPECT_FALSE(c.AddNode(n).ok());
  NodeSpec t4 = GpuNode("t", 1, {}, "T4", true);
  EXPECT_FALSE(c.AddNode(t4).ok());
}

TEST(MigTest, BinpacksAcrossGpusAndNodes) {
  Cluster c;
  ASSERT_TRUE(c.AddNode(GpuNode("a", 2, {}, "H100-80GB", true)).ok());
  ASSERT_TRUE(c.AddNode(GpuNode("b", 2, {}, "H100-80GB", true)).ok());
  for (int i = 0; i < 7; ++i) {
    PlaceResult p = c.Place(Gang({FromRequests({{"nvidia.com/mig-1g.10gb", kMilli}})}));
    ASSERT_TRUE(p.ok());
    EXPECT_EQ(c.node_name(p.placement.pods[0].node), "a");
    EXPECT_EQ(p.placement.pods[0].mig[0].gpu, 0) << i;
    ASSERT_TRUE(c.Commit("p" + std::to_string(i), p.placement).ok());
  }
  // GPU 0 of a is full (7 compute slices); the next goes to GPU 1 of a.
  PlaceResult p = c.Place(Gang({FromRequests({{"nvidia.com/mig-1g.10gb", kMilli}})}));
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(c.node_name(p.placement.pods[0].node), "a");
  EXPECT_EQ(p.placement.pods[0].mig[0].gpu, 1);
  ASSERT_TRUE(c.CheckInvariants().ok());
}

// --------------------------------------------------------------- shares

TEST(ShareTest, HamiPacking) {
  Cluster c;
  ASSERT_TRUE(c.AddNode(GpuNode("a", 2, {}, "A100-80GB")).ok());
  PodGroup pod = FromRequests({{"nvidia.com/gpu", kMilli},
                               {"nvidia.com/gpumem", 20000 * kMilli},
                               {"nvidia.com/gpucores", 25 * kMilli}});
  for (int i = 0; i < 8; ++i) {
    PlaceResult p = c.Place(Gang({pod}));
    ASSERT_TRUE(p.ok()) << i << ": " << p.reason;
    const ShareAssignment& s = p.placement.pods[0].shares.at(0);
    EXPECT_EQ(s.gpu, i < 4 ? 0 : 1) << i;  // fill GPU 0 first
    EXPECT_EQ(s.memory_mib, 20000);
    EXPECT_EQ(s.cores_percent, 25);
    EXPECT_TRUE(s.isolated);
    ASSERT_TRUE(c.Commit("s" + std::to_string(i), p.placement).ok());
  }
  PlaceResult p = c.Place(Gang({pod}));
  EXPECT_EQ(p.outcome, PlaceOutcome::kUnschedulable) << p.reason;
  EXPECT_EQ(c.FreeWholeGpus(), 0);
  EXPECT_EQ(c.Place(Gang({WholeGpuPods(1, 1)})).outcome, PlaceOutcome::kUnschedulable);
  ASSERT_TRUE(c.CheckInvariants().ok());
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(c.Release("s" + std::to_string(i)).ok());
  EXPECT_EQ(c.FreeWholeGpus(), 2);
}

TEST(ShareTest, KaiFractionsAndWholeGpusStayWhole) {
  Cluster c;
  ASSERT_TRUE(c.AddNode(GpuNode("a", 2, {}, "H100-80GB")).ok());
  PodGroup half = FromRequests({}, GpuShareRequest{.fraction = 500});
  PlaceResult p = c.Place(Gang({half}));
  ASSERT_TRUE(p.ok());
  ASSERT_TRUE(c.Commit("h1", p.placement).ok());
  EXPECT_EQ(p.placement.pods[0].shares[0].memory_mib, 40960);
  EXPECT_FALSE(p.placement.pods[0].shares[0].isolated);
  // The second half goes to the same GPU: GPU 1 stays whole.
  p = c.Place(Gang({half}));
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p.placement.pods[0].shares[0].gpu, 0);
  ASSERT_TRUE(c.Commit("h2", p.placement).ok());
  EXPECT_EQ(c.FreeWholeGpus(), 1);
  p = c.Place(Gang({WholeGpuPods(1, 1)}));
  ASSERT_TRUE(p.ok());
  // Spread puts a share on the emptiest GPU.
  ASSERT_TRUE(c.Release("h2").ok());
  GangRequest s = Gang({half});
  s.score = ScorePolicy::kSpread;
  p = c.Place(s);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p.placement.pods[0].shares[0].gpu, 1);
}

}  // namespace
}  // namespace artel::core::placement
