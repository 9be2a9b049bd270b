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

// ---- bounded loading (LoadDocuments) ----

// A "billion laughs" map under metadata.annotations: level k is a list of
// `fanout` aliases of level k-1, so the last level stands for fanout^levels
// nodes while the text stays under a kilobyte.
std::string AliasBomb(int levels, int fanout) {
  std::string t = "apiVersion: artel.dev/v1alpha1\nkind: Workload\nmetadata:\n  name: bomb\n  annotations:\n";
  t += "    a0: &a0 \"lol\"\n";
  for (int l = 1; l <= levels; ++l) {
    t += "    a" + std::to_string(l) + ": &a" + std::to_string(l) + " [";
    for (int i = 0; i < fanout; ++i) t += (i ? ",*a" : "*a") + std::to_string(l - 1);
    t += "]\n";
  }
  return t;
}

TEST(YamlBudgetTest, AliasBombIsRefusedWithTheField) {
  std::string bomb = AliasBomb(9, 9);  // 9^9 = 387 million nodes
  EXPECT_LT(bomb.size(), 1000u);
  Result<std::vector<YAML::Node>> docs = LoadDocuments(bomb, "bomb.yaml");
  ASSERT_FALSE(docs.ok());
  EXPECT_EQ(docs.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(docs.status().field(), ::testing::StartsWith("metadata.annotations.a"));
  EXPECT_THAT(docs.status().message(), HasSubstr("more than 100000 nodes"));
  EXPECT_THAT(docs.status().message(), HasSubstr("aliases"));
  EXPECT_EQ(docs.status().pos().file, "bomb.yaml");
  EXPECT_GE(docs.status().pos().line, 6);
  // The same through the wrapper every manifest reader uses.
  Result<std::vector<Node>> nodes = ParseDocuments(bomb, "bomb.yaml");
  ASSERT_FALSE(nodes.ok());
  EXPECT_THAT(nodes.status().ToString(), HasSubstr("bomb.yaml:"));
}

TEST(YamlBudgetTest, AliasesWithinTheBudgetAreAccepted) {
  // 9^4 = 6561 expanded nodes: shared anchors are fine when small.
  Result<std::vector<YAML::Node>> docs = LoadDocuments(AliasBomb(4, 9), "ok.yaml");
  ASSERT_TRUE(docs.ok()) << docs.status().ToString();
  ASSERT_EQ(docs->size(), 1u);
  EXPECT_EQ((*docs)[0]["metadata"]["annotations"]["a4"].size(), 9u);
  // The budget is per document and counts every use of an alias.
  LoadLimits tight;
  tight.max_nodes = 6000;
  EXPECT_FALSE(LoadDocuments(AliasBomb(4, 9), "ok.yaml", tight).ok());
  EXPECT_TRUE(LoadDocuments(AliasBomb(3, 9), "ok.yaml", tight).ok());
}

TEST(YamlBudgetTest, ExpandedTextIsBounded) {
  std::string big(1000, 'x');
  std::string t = "a: &a \"" + big + "\"\nb: [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n";
  LoadLimits limits;
  limits.max_scalar_bytes = 10000;
  Result<std::vector<YAML::Node>> docs = LoadDocuments(t, "s.yaml", limits);
  ASSERT_FALSE(docs.ok());
  // 1000 bytes for `a`, 1000 per alias, and the keys' 2 bytes: the ninth
  // alias crosses 10000.
  EXPECT_EQ(docs.status().field(), "b[8]");
  EXPECT_THAT(docs.status().message(), HasSubstr("more than 10000 bytes"));
}

TEST(YamlBudgetTest, RecursiveAliasIsRefused) {
  Result<std::vector<YAML::Node>> docs = LoadDocuments("a: &x [1, *x]\n", "r.yaml");
  ASSERT_FALSE(docs.ok());
  EXPECT_EQ(docs.status().field(), "a[1]");
  EXPECT_THAT(docs.status().message(), HasSubstr("recursive"));
  EXPECT_FALSE(LoadDocuments("&m {k: *m}\n", "r.yaml").ok());
}

TEST(YamlBudgetTest, NestingDepthIsBounded) {
  std::string deep(150, '[');
  deep += std::string(150, ']');
  Result<std::vector<YAML::Node>> docs = LoadDocuments(deep, "d.yaml");
  ASSERT_FALSE(docs.ok());
  EXPECT_THAT(docs.status().message(), HasSubstr("nested more than 100 levels"));
  EXPECT_TRUE(LoadDocuments(std::string(50, '[') + std::string(50, ']'), "d.yaml").ok());
}

TEST(YamlBudgetTest, InvalidUtf8IsRefusedWithFieldAndPosition) {
  Result<std::vector<Node>> docs =
      ParseDocuments("kind: LocalQueue\nmetadata:\n  labels:\n    team: \"a\xff\"\n", "lq.yaml");
  ASSERT_FALSE(docs.ok());
  EXPECT_EQ(docs.status().field(), "metadata.labels.team");
  EXPECT_THAT(docs.status().message(), HasSubstr("not valid UTF-8 (byte 0xFF at offset 1)"));
  EXPECT_EQ(docs.status().pos().line, 4);
  EXPECT_EQ(docs.status().pos().column, 11);
  EXPECT_EQ(docs.status().ToString(),
            "lq.yaml:4:11: metadata.labels.team: the value is not valid UTF-8 (byte 0xFF at offset 1)");
  // In a key, in a plain scalar and in a list.
  Result<std::vector<Node>> key = ParseDocuments("a:\n  \xc3\x28: 1\n", "k.yaml");
  ASSERT_FALSE(key.ok());
  EXPECT_EQ(key.status().field(), "a");
  EXPECT_THAT(key.status().message(), HasSubstr("a key is not valid UTF-8"));
  Result<std::vector<Node>> list = ParseDocuments("command: [echo, x\xed\xa0\x80]\n", "c.yaml");
  ASSERT_FALSE(list.ok());
  EXPECT_EQ(list.status().field(), "command[1]");
  // Valid text, and YAML's own escapes, which yaml-cpp encodes as UTF-8.
  EXPECT_TRUE(ParseDocuments("a: \"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"\nb: \"\\xff\"\n", "ok.yaml").ok());
}

TEST(YamlBudgetTest, ValidUtf8Prefix) {
  EXPECT_EQ(ValidUtf8Prefix(""), 0u);
  EXPECT_EQ(ValidUtf8Prefix("abc"), 3u);
  EXPECT_EQ(ValidUtf8Prefix("\xc3\xa9x"), 3u);
  EXPECT_EQ(ValidUtf8Prefix("a\xff"), 1u);              // never a lead byte
  EXPECT_EQ(ValidUtf8Prefix("a\xc0\x80"), 1u);          // overlong NUL
  EXPECT_EQ(ValidUtf8Prefix("a\xe0\x80\x80"), 1u);      // overlong
  EXPECT_EQ(ValidUtf8Prefix("a\xed\xa0\x80"), 1u);      // surrogate
  EXPECT_EQ(ValidUtf8Prefix("a\xf4\x90\x80\x80"), 1u);  // above U+10FFFF
  EXPECT_EQ(ValidUtf8Prefix("a\xe2\x82"), 1u);          // truncated
  EXPECT_EQ(ValidUtf8Prefix("\xf4\x8f\xbf\xbf"), 4u);   // U+10FFFF
}

// Found by fuzz_manifest: yaml-cpp 0.7 reports endless empty documents for a
// text that starts with ',' (LoadAll never returned, growing its vector).
TEST(YamlBudgetTest, ATokenThatStartsNoNodeIsAnErrorNotAnEndlessStream) {
  for (const char* text : {",", ", x", "# comment\n, this\na: 1\n", "a: 1\n---\n, b\n"}) {
    Result<std::vector<YAML::Node>> docs = LoadDocuments(text, "c.yaml");
    ASSERT_FALSE(docs.ok()) << text;
    EXPECT_THAT(docs.status().message(), HasSubstr("YAML syntax error")) << text;
  }
  LoadLimits few;
  few.max_documents = 3;
  EXPECT_TRUE(LoadDocuments("a: 1\n---\nb: 2\n---\nc: 3\n", "d.yaml", few).ok());
  Result<std::vector<YAML::Node>> many =
      LoadDocuments("a: 1\n---\nb: 2\n---\nc: 3\n---\nd: 4\n", "d.yaml", few);
  ASSERT_FALSE(many.ok());
  EXPECT_THAT(many.status().message(), HasSubstr("more than 3 documents"));
}

// Found by fuzz_api_body: yaml-cpp's messages quote the offending byte.
TEST(YamlBudgetTest, SyntaxErrorsQuotingInvalidBytesAreValidUtf8) {
  Result<std::vector<YAML::Node>> docs = LoadDocuments("a: \"x\\\xb0\"\n", "e.yaml");
  ASSERT_FALSE(docs.ok());
  EXPECT_TRUE(IsValidUtf8(docs.status().message())) << docs.status().message();
  EXPECT_THAT(docs.status().message(), HasSubstr("\\xB0"));
  EXPECT_EQ(EscapeInvalidUtf8("a\xff\xc3\xa9"), "a\\xFF\xc3\xa9");
}

}  // namespace
}  // namespace artel::manifest::yaml
