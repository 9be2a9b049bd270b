// The request annotations read into typed fields (manifest/typed_fields.h).
#include "manifest/typed_fields.h"

#include <gtest/gtest.h>

#include "manifest/manifest.h"

namespace artel::manifest {
namespace {

core::WorkloadSpec Wl(std::map<std::string, std::string> ann,
                      std::vector<std::map<std::string, std::string>> sets) {
  core::WorkloadSpec w;
  w.ns = "team-a";
  w.name = "job";
  w.annotations = std::move(ann);
  for (size_t i = 0; i < sets.size(); ++i) {
    core::PodSetSpec ps;
    ps.name = "set-" + std::to_string(i);
    ps.annotations = std::move(sets[i]);
    w.pod_sets.push_back(std::move(ps));
  }
  return w;
}

TEST(TypedFieldsTest, ReadsGangKeysAndTheWorkloadWins) {
  core::WorkloadSpec w =
      Wl({{kAnnMinMember, "3"},
          {kAnnTopology, "volcano-hypernodes"},
          {kAnnNetworkTopologyMode, "soft"},
          {kAnnHighestTierAllowed, "2"}},
         {{{kAnnMinMember, "9"}, {kAnnScore, "spread"}, {kAnnHighestTierName, "leaf"}}, {}});
  ASSERT_TRUE(ReadTypedFields(&w).ok());
  EXPECT_EQ(w.gang->min_member, 3);  // the workload's, not the pod set's 9
  EXPECT_EQ(w.gang->topology, "volcano-hypernodes");
  EXPECT_EQ(w.gang->network_mode, "soft");
  EXPECT_EQ(w.gang->highest_tier, 2);
  EXPECT_EQ(w.gang->highest_tier_name, "leaf");  // first given, on a pod set
  EXPECT_TRUE(w.gang->spread);
  EXPECT_FALSE(w.gang->subgroup_topologies);
}

TEST(TypedFieldsTest, AnEmptyNetworkModeIsHardAndMinMemberZeroIsOne) {
  core::WorkloadSpec w = Wl({{kAnnNetworkTopologyMode, ""}, {kAnnMinMember, "0"}}, {{}});
  ASSERT_TRUE(ReadTypedFields(&w).ok());
  EXPECT_EQ(w.gang->network_mode, "hard");
  EXPECT_EQ(w.gang->min_member, 1);
}

TEST(TypedFieldsTest, ReadsTopologyRequestsPerAnnotationMap) {
  core::WorkloadSpec w =
      Wl({{kAnnKaiRequiredPlacement, "zone"}, {kAnnDialect, "kai"}},
         {{{kAnnKueueRequired, " rack "}, {kAnnKueueGroupName, "g"}},
          {{kAnnKueueSliceRequired, "host"}, {kAnnKueueSliceSize, "4"}, {kAnnKueueUnconstrained, "false"}},
          {{kAnnKueueUnconstrained, "true"}, {kAnnKaiPreferredPlacement, "rack"}}});
  ASSERT_TRUE(ReadTypedFields(&w).ok());
  EXPECT_EQ(w.topology->kai_required, "zone");
  EXPECT_TRUE(w.gang->subgroup_topologies);
  EXPECT_EQ(w.pod_sets[0].topology->required, "rack");  // trimmed
  EXPECT_EQ(w.pod_sets[0].topology->group, "g");
  EXPECT_TRUE(w.pod_sets[0].topology->KueueAsks());
  EXPECT_EQ(w.pod_sets[1].topology->slice_required, "host");
  EXPECT_EQ(w.pod_sets[1].topology->slice_size, 4);
  EXPECT_FALSE(w.pod_sets[1].topology->unconstrained);
  EXPECT_TRUE(w.pod_sets[2].topology->unconstrained);
  EXPECT_EQ(w.pod_sets[2].topology->kai_preferred, "rack");
  EXPECT_FALSE(w.pod_sets[2].topology->KueueAsks());
}

TEST(TypedFieldsTest, ReadsKaiGpuShares) {
  core::WorkloadSpec w = Wl({}, {{{kAnnKaiGpuFraction, "0.5"}, {kAnnKaiGpuDevices, "2"}},
                                 {{kAnnKaiGpuMemory, "2048"}},
                                 {{kAnnKaiGpuDevices, "2"}}});
  ASSERT_TRUE(ReadTypedFields(&w).ok());
  EXPECT_EQ(w.pod_sets[0].gpu_share->fraction, 500);
  EXPECT_EQ(w.pod_sets[0].gpu_share->devices, 2);
  EXPECT_EQ(w.pod_sets[1].gpu_share->memory_mib, 2048);
  EXPECT_FALSE(w.pod_sets[2].gpu_share->any());  // a device count alone asks for nothing
}

TEST(TypedFieldsTest, ABadValueIsAnErrorNamingTheAnnotationAndChangesNothing) {
  struct Case {
    std::map<std::string, std::string> wl, set;
    std::string field, expected;
  };
  const std::vector<Case> cases = {
      {{{kAnnMinMember, "abc"}}, {}, "metadata.annotations[artel.dev/min-member]", "whole number"},
      {{{kAnnMinMember, "-1"}}, {}, "metadata.annotations[artel.dev/min-member]", "whole number"},
      {{{kAnnNetworkTopologyMode, "medium"}},
       {},
       "metadata.annotations[artel.dev/network-topology-mode]",
       "hard or soft"},
      {{{kAnnHighestTierAllowed, "1x"}},
       {},
       "metadata.annotations[artel.dev/highest-tier-allowed]",
       "whole number"},
      {{}, {{kAnnScore, "random"}}, "podSets[0].annotations[artel.dev/score]", "binpack or spread"},
      {{},
       {{kAnnKueueSliceSize, "0"}},
       "podSets[0].annotations[kueue.x-k8s.io/podset-slice-size]",
       "whole number"},
      {{},
       {{kAnnKueueUnconstrained, "yes"}},
       "podSets[0].annotations[kueue.x-k8s.io/podset-unconstrained-topology]",
       "true or false"},
      {{}, {{kAnnKaiGpuFraction, "1.5"}}, "podSets[0].annotations[gpu-fraction]", "(0, 1]"},
      {{}, {{kAnnKaiGpuMemory, "lots"}}, "podSets[0].annotations[gpu-memory]", "MiB"},
      {{},
       {{kAnnKaiGpuFraction, "0.5"}, {kAnnKaiGpuDevices, "1.5"}},
       "podSets[0].annotations[gpu-fraction-num-devices]",
       "whole number"},
  };
  for (const Case& c : cases) {
    core::WorkloadSpec w = Wl(c.wl, {c.set});
    const core::WorkloadSpec before = w;
    Status s = ReadTypedFields(&w);
    ASSERT_FALSE(s.ok()) << c.field;
    EXPECT_EQ(s.field(), c.field);
    EXPECT_NE(s.message().find(c.expected), std::string::npos) << s.message();
    EXPECT_EQ(w.gang, before.gang);
    EXPECT_EQ(w.pod_sets[0].topology, before.pod_sets[0].topology);
    EXPECT_EQ(w.pod_sets[0].gpu_share, before.pod_sets[0].gpu_share);
  }
}

TEST(TypedFieldsTest, ThePathNamesTheCallersField) {
  core::WorkloadSpec w = Wl({}, {{}, {{kAnnScore, "x"}}});
  Status s = ReadTypedFields(&w, [](int i) {
    return i < 0 ? std::string("meta")
                 : "spec.podSets[" + std::to_string(i) + "].template.metadata.annotations";
  });
  EXPECT_EQ(s.field(), "spec.podSets[1].template.metadata.annotations[artel.dev/score]");
}

TEST(TypedFieldsTest, LenientSkipsBadValuesAndKeepsTheRest) {
  core::WorkloadSpec w = Wl({{kAnnMinMember, "abc"}, {kAnnTopology, "net"}}, {{{kAnnKueueRequired, "rack"}}});
  ReadTypedFieldsLenient(&w);
  EXPECT_EQ(w.gang->min_member, 0);
  EXPECT_EQ(w.gang->topology, "net");
  EXPECT_EQ(w.pod_sets[0].topology->required, "rack");
}

}  // namespace
}  // namespace artel::manifest
