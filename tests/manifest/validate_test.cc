#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "manifest/manifest.h"

namespace artel::manifest {
namespace {

using ::testing::HasSubstr;

constexpr const char* kBase = R"(apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: h100}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: team-a}
spec:
  cohortName: ai
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: h100
      resources: [{name: nvidia.com/gpu, nominalQuota: 8}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: default, namespace: team-a}
spec: {clusterQueue: team-a}
)";

core::Config Load(const std::string& text, const std::string& source = "v.yaml") {
  core::Config c;
  Status s = ParseInto(text, source, &c);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return c;
}

TEST(ValidateTest, ValidConfigWithImplicitCohort) {
  // Cohort "ai" has no Cohort object: Kueue creates it implicitly.
  Status s = Validate(Load(kBase));
  EXPECT_TRUE(s.ok()) << s.ToString();
}

TEST(ValidateTest, DanglingLocalQueueReference) {
  core::Config c = Load(kBase);
  core::Config more = Load(R"(apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: other, namespace: team-b}
spec: {clusterQueue: team-aa}
)",
                           "lq.yaml");
  c.local_queues.push_back(more.local_queues[0]);
  // Accepted, as Kueue does (its workloads wait with ClusterQueueMissing),
  // and reported as a warning with the position and a hint.
  EXPECT_TRUE(Validate(c).ok()) << Validate(c).ToString();
  std::vector<Status> warnings = Warnings(c);
  ASSERT_EQ(warnings.size(), 1u);
  const Status& s = warnings[0];
  EXPECT_EQ(s.pos().file, "lq.yaml");
  EXPECT_EQ(s.pos().line, 1);
  EXPECT_EQ(s.field(), "spec.clusterQueue");
  EXPECT_THAT(s.message(), HasSubstr("ClusterQueue \"team-aa\", which is not defined"));
  EXPECT_THAT(s.message(), HasSubstr("did you mean team-a?"));
}

TEST(ValidateTest, MissingFlavorIsRefused) {
  core::Config c = Load(kBase);
  c.flavors.clear();
  Status s = Validate(c);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.field(), "spec.resourceGroups[0].flavors[0].name");
  EXPECT_EQ(s.pos().line, 5);  // the ClusterQueue document
  EXPECT_THAT(s.message(), HasSubstr("ResourceFlavor \"h100\", which is not defined"));
}

TEST(ValidateTest, MissingFlavorInCohort) {
  core::Config c = Load(std::string(kBase) + R"(---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: ai}
spec:
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: a100
      resources: [{name: nvidia.com/gpu, nominalQuota: 8}]
)");
  Status s = Validate(c);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("Cohort \"ai\" refers to ResourceFlavor \"a100\""));
}

TEST(ValidateTest, CohortCycleReportsPath) {
  core::Config c = Load(std::string(kBase) + R"(---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: ai}
spec: {parentName: org}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: org}
spec: {parentName: company}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: company}
spec: {parentName: ai}
)");
  Status s = Validate(c);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("cohort cycle: ai -> org -> company -> ai"));
  EXPECT_EQ(s.field(), "spec.parentName");
  EXPECT_EQ(s.pos().line, 22);
}

TEST(ValidateTest, SelfParentIsACycle) {
  core::Config c =
      Load("apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {name: x}\nspec: {parentName: x}\n");
  Status s = Validate(c);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("cohort cycle: x -> x"));
}

TEST(ValidateTest, ImplicitParentIsNotACycle) {
  core::Config c = Load(
      "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {name: x}\nspec: {parentName: y}\n---\n"
      "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {name: z}\nspec: {parentName: x}\n");
  Status s = Validate(c);
  EXPECT_TRUE(s.ok()) << s.ToString();
}

TEST(ValidateTest, DuplicateNames) {
  core::Config c = Load(kBase);
  core::Config again = Load(kBase, "again.yaml");
  c.cluster_queues.push_back(again.cluster_queues[0]);
  Status s = Validate(c);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.pos().file, "again.yaml");
  EXPECT_THAT(s.message(), HasSubstr("duplicate ClusterQueue \"team-a\" (first defined at v.yaml:5:1)"));

  core::Config lq = Load(kBase);
  lq.local_queues.push_back(lq.local_queues[0]);
  lq.local_queues.back().ns = "other";  // same name, other namespace: fine
  EXPECT_TRUE(Validate(lq).ok());
  lq.local_queues.push_back(lq.local_queues[0]);
  EXPECT_THAT(Validate(lq).message(), HasSubstr("duplicate LocalQueue \"team-a/default\""));
}

TEST(ValidateTest, ProgrammaticConfigGetsPerObjectRules) {
  core::Config c = Load(kBase);
  core::ResourceQuotaSpec& q = c.cluster_queues[0].resource_groups[0].flavors[0].resources[0];
  q.lending_limit = 9000;
  Status s = Validate(c);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.field(), "spec.resourceGroups[0].flavors[0].resources[0].lendingLimit");
  EXPECT_EQ(s.pos().line, 5);
  EXPECT_THAT(s.message(), HasSubstr("lendingLimit (9) must not exceed nominalQuota (8)"));

  q.lending_limit.reset();
  q.nominal = -1;
  EXPECT_THAT(Validate(c).message(), HasSubstr("must not be negative"));

  q.nominal = 1000;
  c.cluster_queues[0].cohort.clear();
  q.borrowing_limit = 0;
  EXPECT_THAT(Validate(c).message(), HasSubstr("borrowingLimit must not be set"));
}

TEST(ValidateTest, ResourceInTwoGroups) {
  core::Config c = Load(kBase);
  core::ResourceGroupSpec extra = c.cluster_queues[0].resource_groups[0];
  extra.flavors[0].flavor = "other";
  c.cluster_queues[0].resource_groups.push_back(extra);
  Status s = Validate(c);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.field(), "spec.resourceGroups[1].coveredResources[0]");
  EXPECT_THAT(s.message(), HasSubstr("already covered by resourceGroups[0]"));
}

TEST(ValidateTest, FlavorTopologyMustExist) {
  core::Config c = Load(
      "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: f}\nspec: {topologyName: "
      "t}\n");
  EXPECT_THAT(Validate(c).message(), HasSubstr("Topology \"t\", which is not defined"));
}

TEST(ValidateTest, NamespaceNames) {
  core::Config c = Load(kBase);
  c.local_queues[0].ns = "Team_A";
  Status s = Validate(c);
  EXPECT_EQ(s.field(), "metadata.namespace");
  EXPECT_THAT(s.message(), HasSubstr("invalid namespace"));
}

}  // namespace
}  // namespace artel::manifest
