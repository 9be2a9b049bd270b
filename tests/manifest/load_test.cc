#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

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

// Files are read through the bounded loader: invalid UTF-8 and alias bombs
// are errors naming file:line:column and the field, and nothing is loaded.
TEST(LoadTest, InvalidUtf8AndAliasBombsInFilesAreErrors) {
  std::string dir = ::testing::TempDir() + "/artel-load-bounded";
  std::filesystem::create_directories(dir);
  std::string utf8 = dir + "/lq.yaml";
  std::ofstream(utf8) << "apiVersion: kueue.x-k8s.io/v1beta1\nkind: LocalQueue\nmetadata:\n  name: q\n"
                         "  namespace: team-a\n  labels: {team: \"\xff\"}\nspec:\n  clusterQueue: cq\n";
  core::Config c;
  Status s = LoadPath(utf8, &c);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.pos().file, utf8);
  EXPECT_EQ(s.pos().line, 6);
  EXPECT_EQ(s.field(), "metadata.labels.team");
  EXPECT_THAT(s.message(), HasSubstr("not valid UTF-8"));
  EXPECT_TRUE(c.local_queues.empty());

  std::string bomb = dir + "/bomb.yaml";
  {
    std::ofstream out(bomb);
    out << "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ResourceFlavor\nmetadata:\n  name: f\n  labels:\n"
           "    a0: &a0 x\n";
    for (int l = 1; l <= 9; ++l) {
      out << "    a" << l << ": &a" << l << " [";
      for (int i = 0; i < 9; ++i) out << (i ? ",*a" : "*a") << l - 1;
      out << "]\n";
    }
  }
  s = LoadPath(bomb, &c);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.pos().file, bomb);
  EXPECT_THAT(s.field(), ::testing::StartsWith("metadata.labels.a"));
  EXPECT_THAT(s.message(), HasSubstr("more than 100000 nodes"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace artel::manifest
