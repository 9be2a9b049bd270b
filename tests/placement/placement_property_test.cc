// rapidcheck properties of dynamic MIG placement: random streams of MIG
// requests (profiles and memory needs, on random GPU models, with releases
// in between) never produce overlapping or invalid instances and never
// exceed a node's capacity, under both slot policies; and `Place` never
// changes the cluster.
//
// Like tests/property, the properties run a fixed number of cases from a
// fixed seed unless RC_PARAMS says otherwise, so `make test` is
// deterministic.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "core/placement/gpu_geometry.h"
#include "core/placement/placement.h"

namespace artel::core::placement {
namespace {

[[maybe_unused]] const int kDefaultParams = [] {
  setenv("RC_PARAMS", "seed=20240603 max_success=200", /*overwrite=*/0);
  return 0;
}();

struct Snapshot {
  std::vector<std::vector<std::string>> layouts;
  int64_t busy;
  int64_t free_whole;
  bool operator==(const Snapshot&) const = default;
};

Snapshot Take(const Cluster& c, int gpus) {
  Snapshot s{{}, c.MigBusySlices(), c.FreeWholeGpus()};
  for (int n = 0; n < c.node_count(); ++n) {
    for (int g = 0; g < gpus; ++g) s.layouts.push_back(c.MigLayout(n, g));
  }
  return s;
}

void RunStream(MigPolicyKind policy) {
  const int nodes = *rc::gen::inRange(1, 3);
  const int gpus = *rc::gen::inRange(1, 3);
  const int model = *rc::gen::inRange(0, kNumGpuModels);
  Cluster c(ClusterOptions{policy});
  for (int n = 0; n < nodes; ++n) {
    NodeSpec spec;
    spec.name = "n" + std::to_string(n);
    spec.allocatable = {{"cpu", 8 * kMilli}};
    for (int g = 0; g < gpus; ++g) spec.gpus.push_back(GpuSpec{GpuModel(model).name, 0, "", true, {}, 10});
    RC_ASSERT(c.AddNode(spec).ok());
  }
  std::vector<std::string> held;
  const int steps = *rc::gen::inRange(10, 60);
  for (int i = 0; i < steps; ++i) {
    int action = *rc::gen::inRange(0, 10);
    if (action < 3 && !held.empty()) {
      size_t k = *rc::gen::inRange<size_t>(0, held.size());
      RC_ASSERT(c.Release(held[k]).ok());
      held.erase(held.begin() + static_cast<std::ptrdiff_t>(k));
    } else {
      PodGroup pod;
      pod.count = *rc::gen::inRange(1, 3);
      pod.requests = {{"cpu", 500}};
      if (*rc::gen::arbitrary<bool>()) {
        pod.gpu.kind = GpuKind::kMigProfile;
        pod.gpu.mig_profile = GpuModel(model).profile[*rc::gen::inRange(0, kNumShapes)];
      } else {
        pod.gpu.kind = GpuKind::kMigNeed;
        pod.gpu.memory_mib = *rc::gen::inRange<int64_t>(1000, GpuModel(model).memory_mib);
        pod.gpu.compute_slices = *rc::gen::inRange(0, 8);
      }
      pod.gpu.count = *rc::gen::inRange(1, 3);
      GangRequest r;
      r.groups = {pod};
      r.score = *rc::gen::arbitrary<bool>() ? ScorePolicy::kBinpack : ScorePolicy::kSpread;
      Snapshot before = Take(c, gpus);
      PlaceResult p = c.Place(r);
      RC_ASSERT(Take(c, gpus) == before);  // tentative: no change
      if (p.ok()) {
        int instances = 0;
        for (const PodPlacement& pp : p.placement.pods) instances += static_cast<int>(pp.mig.size());
        RC_ASSERT(instances == pod.count * pod.gpu.count);
        std::string key = "w" + std::to_string(i);
        Status s = c.Commit(key, p.placement);
        RC_ASSERT(s.ok());
        held.push_back(key);
      }
    }
    Status inv = c.CheckInvariants();
    RC_ASSERT(inv.ok());
    RC_ASSERT(c.MigBusySlices() <= c.MigTotalSlices());
  }
  for (const std::string& k : held) RC_ASSERT(c.Release(k).ok());
  RC_ASSERT(c.MigBusySlices() == 0);
  RC_ASSERT(c.CheckInvariants().ok());
}

RC_GTEST_PROP(MigPropertyTest, MinFragmentationStreamsStayValid, ()) {
  RunStream(MigPolicyKind::kMinFragmentation);
}
RC_GTEST_PROP(MigPropertyTest, FirstFitStreamsStayValid, ()) { RunStream(MigPolicyKind::kFirstFit); }

// Mixed whole/share/MIG-free streams on a small cluster: Place is
// tentative and committed usage never exceeds capacity.
RC_GTEST_PROP(PlacementPropertyTest, MixedStreamsRespectCapacity, ()) {
  Cluster c;
  RC_ASSERT(c.AddTopology({"t", {"rack", std::string(kHostnameLabel)}}).ok());
  const int nodes = *rc::gen::inRange(2, 6);
  for (int n = 0; n < nodes; ++n) {
    NodeSpec spec;
    spec.name = "n" + std::to_string(n);
    spec.labels = {{"rack", n % 2 ? "r1" : "r0"}};
    spec.allocatable = {{"cpu", 16 * kMilli}, {"pods", 20 * kMilli}};
    for (int g = 0; g < 4; ++g) spec.gpus.push_back(GpuSpec{"A100-80GB", 0, "", false, {}, 4});
    RC_ASSERT(c.AddNode(spec).ok());
  }
  std::vector<std::string> held;
  for (int i = 0; i < 40; ++i) {
    if (*rc::gen::inRange(0, 4) == 0 && !held.empty()) {
      RC_ASSERT(c.Release(held.back()).ok());
      held.pop_back();
      continue;
    }
    PodGroup pod;
    pod.count = *rc::gen::inRange(1, 6);
    pod.min_count = *rc::gen::inRange(0, pod.count + 1);
    pod.requests = {{"cpu", *rc::gen::inRange<int64_t>(1, 8) * kMilli}};
    int kind = *rc::gen::inRange(0, 3);
    if (kind == 1) {
      pod.gpu = GpuRequest{GpuKind::kWhole, *rc::gen::inRange(1, 5)};
    } else if (kind == 2) {
      pod.gpu.kind = GpuKind::kShare;
      pod.gpu.count = *rc::gen::inRange(1, 3);
      pod.gpu.memory_mib = *rc::gen::inRange<int64_t>(1000, 40000);
      pod.gpu.cores_percent = *rc::gen::inRange(0, 60);
    }
    GangRequest r;
    r.groups = {pod};
    r.topology = *rc::gen::arbitrary<bool>() ? "t" : "";
    if (!r.topology.empty()) {
      (*rc::gen::arbitrary<bool>() ? r.constraint.required_level : r.constraint.preferred_level) = "rack";
    }
    int64_t free_before = c.FreeWholeGpus();
    PlaceResult p = c.Place(r);
    RC_ASSERT(c.FreeWholeGpus() == free_before);
    RC_ASSERT(c.CheckInvariants().ok());
    if (!p.ok()) continue;
    RC_ASSERT(p.placement.placed[0] >= pod.min());
    RC_ASSERT(p.placement.placed[0] <= pod.count);
    if (r.constraint.required_level == "rack") {
      for (const PodPlacement& pp : p.placement.pods) RC_ASSERT(pp.node % 2 == p.placement.pods[0].node % 2);
    }
    std::string key = "w" + std::to_string(i);
    RC_ASSERT(c.Commit(key, p.placement).ok());
    held.push_back(key);
    RC_ASSERT(c.CheckInvariants().ok());
  }
}

}  // namespace
}  // namespace artel::core::placement
