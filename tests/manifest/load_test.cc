#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "manifest/manifest.h"

namespace artel::manifest {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string Data(const std::string& rel) { return std::string(ARTEL_MANIFEST_TEST_DATA) + "/" + rel; }

std::vector<std::string> FlavorNames(const core::Config& c) {
  std::vector<std::string> out;
  for (const auto& f : c.flavors) out.push_back(f.name);
  return out;
}

TEST(LoadTest, SingleFile) {
  core::Config c;
  Status s = LoadPath(Data("plain/10-flavors.yaml"), &c);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_THAT(FlavorNames(c), ElementsAre("h100", "a100"));
  EXPECT_EQ(c.flavors[0].pos.file, Data("plain/10-flavors.yaml"));
  EXPECT_EQ(c.flavors[0].pos.line, 2);
  EXPECT_EQ(c.flavors[1].pos.line, 10);
}

TEST(LoadTest, PlainDirectoryReadsYamlInNameOrderAndSkipsScenarios) {
  core::Config c;
  Status s = LoadPath(Data("plain"), &c);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_THAT(FlavorNames(c), ElementsAre("h100", "a100"));
  ASSERT_EQ(c.cluster_queues.size(), 1u);
  EXPECT_EQ(c.cluster_queues[0].pos.file, Data("plain") + "/20-queues.yml");
  ASSERT_EQ(c.local_queues.size(), 1u);
  EXPECT_TRUE(Validate(c).ok()) << Validate(c).ToString();
}

TEST(LoadTest, KustomizationFollowsResourcesInOrder) {
  core::Config c;
  Status s = LoadPath(Data("kustomize"), &c);
  ASSERT_TRUE(s.ok()) << s.ToString();
  // queues/ first (a plain directory: cq.yaml before lq.yaml), then the flavors.
  ASSERT_EQ(c.cluster_queues.size(), 1u);
  EXPECT_EQ(c.cluster_queues[0].name, "team-x");
  EXPECT_THAT(FlavorNames(c), ElementsAre("h100", "a100"));
  ASSERT_EQ(c.local_queues.size(), 1u);
  EXPECT_EQ(c.local_queues[0].ns, "team-x");  // kustomization `namespace:` wins
  EXPECT_TRUE(Validate(c).ok()) << Validate(c).ToString();
}

TEST(LoadTest, KustomizationErrors) {
  core::Config c;
  Status patches = LoadPath(Data("kustomize-patches"), &c);
  ASSERT_FALSE(patches.ok());
  EXPECT_EQ(patches.field(), "patches");
  EXPECT_EQ(patches.pos().line, 3);
  EXPECT_THAT(patches.message(), HasSubstr("only the resources and namespace"));

  Status missing = LoadPath(Data("kustomize-missing"), &c);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.pos().file, Data("kustomize-missing") + "/kustomization.yml");
  EXPECT_EQ(missing.pos().line, 3);
  EXPECT_EQ(missing.field(), "resources[1]");
  EXPECT_THAT(missing.message(), HasSubstr("resource \"nope.yaml\" not found"));

  Status cycle = LoadPath(Data("self-include"), &c);
  ASSERT_FALSE(cycle.ok());
  EXPECT_THAT(cycle.message(), HasSubstr("cycle"));
  EXPECT_TRUE(c.flavors.empty());
}

TEST(LoadTest, ConfigUnchangedWhenALaterFileFails) {
  core::Config c;
  ASSERT_TRUE(LoadPath(Data("plain/10-flavors.yaml"), &c).ok());
  Status s = LoadPath(Data("broken"), &c);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.pos().file, Data("broken") + "/20-syntax.yaml");
  EXPECT_EQ(s.pos().line, 5);  // yaml-cpp reports the unterminated flow sequence at end of input
  EXPECT_THAT(FlavorNames(c), ElementsAre("h100", "a100"));  // "fine" from 10-ok.yaml not added
}

TEST(LoadTest, MissingPath) {
  core::Config c;
  Status s = LoadPath(Data("does-not-exist"), &c);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_THAT(s.ToString(), HasSubstr("does-not-exist: no such file or directory"));
}

}  // namespace
}  // namespace artel::manifest
