#include "manifest/yaml_util.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace artel::manifest::yaml {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

Node Parse(const std::string& text) {
  Result<std::vector<Node>> docs = ParseDocuments(text, "t.yaml");
  EXPECT_TRUE(docs.ok()) << docs.status().ToString();
  return docs->at(0);
}

TEST(YamlUtilTest, SyntaxErrorIsOneBased) {
  Result<std::vector<Node>> docs = ParseDocuments("a: 1\nb: [1, 2\n", "bad.yaml");
  ASSERT_FALSE(docs.ok());
  EXPECT_EQ(docs.status().pos().file, "bad.yaml");
  EXPECT_GE(docs.status().pos().line, 2);
  EXPECT_GE(docs.status().pos().column, 1);
  EXPECT_THAT(docs.status().message(), HasSubstr("YAML syntax error"));
}

TEST(YamlUtilTest, ChildPathsAndPositions) {
  Node root = Parse("spec:\n  items:\n    - name: a\n    - name: b\n");
  Node name = root["spec"]["items"].At(1)["name"];
  EXPECT_EQ(name.path(), "spec.items[1].name");
  EXPECT_EQ(name.Pos().line, 4);
  EXPECT_EQ(name.Pos().column, 13);
  EXPECT_EQ(*name.AsString(), "b");
}

TEST(YamlUtilTest, MissingChildFallsBackToParentPosition) {
  Node root = Parse("x: 1\nspec:\n  a: 1\n");
  Node missing = root["spec"]["b"]["c"];
  EXPECT_FALSE(missing.present());
  EXPECT_EQ(missing.path(), "spec.b.c");
  EXPECT_EQ(missing.Pos().line, 3);
  Status s = root["spec"].MissingError("b");
  EXPECT_EQ(s.ToString(), "t.yaml:3:3: spec.b: missing required field \"b\"");
}

TEST(YamlUtilTest, NullIsAbsent) {
  Node root = Parse("a:\nb: ~\n");
  EXPECT_FALSE(root["a"].present());
  EXPECT_FALSE(root["b"].present());
  std::string out = "keep";
  EXPECT_TRUE(root.ReadString("a", &out).ok());
  EXPECT_EQ(out, "keep");
  EXPECT_FALSE(root.ReadString("a", &out, kRequired).ok());
}

TEST(YamlUtilTest, UnknownKeyGetsEditDistanceHint) {
  Node root = Parse("nominalQuote: 1\n");
  Status s = root.CheckKeys({"name", "nominalQuota", "borrowingLimit"});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.field(), "nominalQuote");
  EXPECT_EQ(s.pos().line, 1);
  EXPECT_EQ(s.pos().column, 1);
  EXPECT_THAT(s.message(), HasSubstr("did you mean nominalQuota?"));
}

TEST(YamlUtilTest, UnknownKeyWithoutHintListsAllowed) {
  Node root = Parse("zzzzzzzz: 1\n");
  Status s = root.CheckKeys({"name", "value"});
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("allowed fields: name, value"));
}

TEST(YamlUtilTest, HintTableOnlyWhenTargetAllowed) {
  Node root = Parse("minCount: 1\n");
  Status s = root.CheckKeys({"name", "count"});
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), Not(HasSubstr("nominalQuota")));
  const FieldHint extra[] = {{"minCount", "count", "custom reason"}};
  const std::string_view allowed[] = {"name", "count"};
  Status t = root.CheckKeys(allowed, extra);
  EXPECT_THAT(t.message(), HasSubstr("did you mean count? (custom reason)"));
}

TEST(YamlUtilTest, DuplicateKeyIsAnError) {
  Node root = Parse("a: 1\na: 2\n");
  Status s = root.CheckKeys({"a"});
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("duplicate field"));
  EXPECT_EQ(s.pos().line, 2);
}

TEST(YamlUtilTest, TypedGetters) {
  Node root = Parse("i: 42\nq: \"42\"\nf: 1.5\nb: true\nm: {x: 1}\nl: [a, b]\nmem: 36Gi\n");
  EXPECT_EQ(*root["i"].AsInt(0, 100), 42);
  EXPECT_THAT(root["q"].AsInt(0, 100).status().message(), HasSubstr("remove the quotes"));
  EXPECT_THAT(root["f"].AsInt(0, 100).status().message(), HasSubstr("expected an integer"));
  EXPECT_THAT(root["i"].AsInt(0, 10).status().message(), HasSubstr("out of range"));
  EXPECT_EQ(*root["f"].AsQuantity(), 1500);
  EXPECT_EQ(*root["q"].AsQuantity(), 42000);
  EXPECT_EQ(*root["mem"].AsQuantity(), int64_t{36} * 1024 * 1024 * 1024 * 1000);
  EXPECT_TRUE(*root["b"].AsBool());
  EXPECT_THAT(root["m"].AsStringList().status().message(), HasSubstr("expected a list, got a map"));
  EXPECT_EQ(root["l"].AsStringList()->size(), 2u);
  EXPECT_EQ(root["m"].AsStringMap()->at("x"), "1");
}

TEST(YamlUtilTest, EnumListsAllowedValues) {
  enum class Color { kRed, kBlue };
  Node root = Parse("c: Green\n");
  Result<Color> c = root["c"].AsEnum<Color>({{"Red", Color::kRed}, {"Blue", Color::kBlue}});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().ToString(), "t.yaml:1:4: c: invalid value \"Green\"; must be one of Red, Blue");
}

TEST(YamlUtilTest, LookupFollowsPaths) {
  Node root = Parse("spec:\n  hard:\n    requests.nvidia.com/gpu: 4\n  list:\n    - a\n    - b\n");
  EXPECT_EQ(root.Lookup("spec.hard[requests.nvidia.com/gpu]").Pos().line, 3);
  EXPECT_EQ(root.Lookup("spec.list[1]").Pos().line, 6);
  // Missing tail: position of the deepest existing node.
  EXPECT_EQ(root.Lookup("spec.list[7].name").Pos().line, 5);
}

TEST(YamlUtilTest, SuggestField) {
  const std::string_view allowed[] = {"cohortName", "resourceGroups", "preemption"};
  EXPECT_EQ(SuggestField("resourceGroup", allowed), "resourceGroups");
  EXPECT_EQ(SuggestField("cohort", allowed), "cohortName");  // from the built-in table
  EXPECT_EQ(SuggestField("xyz", allowed), "");
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3);
}

}  // namespace
}  // namespace artel::manifest::yaml
