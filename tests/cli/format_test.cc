// The pure helpers of the artel client (src/cli/format.h): table ages,
// RFC 3339 times, the JSONPath subset, custom columns, label selectors and
// "did you mean" suggestions.

#include "cli/format.h"

#include <gtest/gtest.h>

namespace artel::cli {
namespace {

using Json = nlohmann::json;

TEST(HumanAgeTest, LikeKubectl) {
  EXPECT_EQ(HumanAge(0), "0s");
  EXPECT_EQ(HumanAge(119), "119s");
  EXPECT_EQ(HumanAge(120), "2m");
  EXPECT_EQ(HumanAge(7 * 60 + 5), "7m5s");
  EXPECT_EQ(HumanAge(5 * 60), "5m");
  EXPECT_EQ(HumanAge(45 * 60), "45m");
  EXPECT_EQ(HumanAge(2 * 3600 + 10 * 60), "130m");  // under 3 h: minutes
  EXPECT_EQ(HumanAge(3 * 3600 + 10 * 60), "3h10m");
  EXPECT_EQ(HumanAge(5 * 3600), "5h");
  EXPECT_EQ(HumanAge(20 * 3600 + 59), "20h");
  EXPECT_EQ(HumanAge(3 * 86400), "3d");
  EXPECT_EQ(HumanAge(3 * 86400 + 4 * 3600), "3d4h");
  EXPECT_EQ(HumanAge(30 * 86400), "30d");
  EXPECT_EQ(HumanAge(3 * 365 * 86400 + 10 * 86400), "3y10d");
  EXPECT_EQ(HumanAge(-5), "-");
}

TEST(Rfc3339Test, UtcSeconds) {
  EXPECT_EQ(Rfc3339(0), "1970-01-01T00:00:00Z");
  EXPECT_EQ(Rfc3339(1796148157792), "2026-12-01T18:02:37Z");
  Json w = {{"metadata", {{"name", "a"}, {"creationTimestamp", 1796148157792}}},
            {"status", {{"admittedAt", 1796148157792}, {"startedAt", 0}, {"priority", 5}}},
            {"items", Json::array({{{"time", 1000}}})}};
  TimesToRfc3339(&w);
  EXPECT_EQ(w["metadata"]["creationTimestamp"], "2026-12-01T18:02:37Z");
  EXPECT_EQ(w["status"]["admittedAt"], "2026-12-01T18:02:37Z");
  EXPECT_TRUE(w["status"]["startedAt"].is_null());
  EXPECT_EQ(w["status"]["priority"], 5);  // not a time
  EXPECT_EQ(w["items"][0]["time"], "1970-01-01T00:00:01Z");
}

const Json kList = Json::parse(R"({"kind": "WorkloadList", "items": [
  {"metadata": {"name": "a-1", "labels": {"team": "nlp"}}, "status": {"phase": "Running"},
   "spec": {"podSets": [{"name": "main", "count": 2}]}},
  {"metadata": {"name": "a-2"}, "status": {"phase": "Pending", "pending": {"reason": "InsufficientQuota"}},
   "spec": {"podSets": [{"name": "main", "count": 1}, {"name": "w", "count": 3}]}}]})");

std::string Path(const std::string& t, const Json& j = kList) {
  std::string err;
  auto out = JsonPath(t, j, &err);
  EXPECT_TRUE(out.has_value()) << t << ": " << err;
  return out.value_or("<error: " + err + ">");
}

TEST(JsonPathTest, FieldsIndexesAndWildcards) {
  EXPECT_EQ(Path("{.kind}"), "WorkloadList");
  EXPECT_EQ(Path(".kind"), "WorkloadList");  // a bare path, as kubectl accepts
  EXPECT_EQ(Path("{.items[0].metadata.name}"), "a-1");
  EXPECT_EQ(Path("{.items[-1].metadata.name}"), "a-2");
  EXPECT_EQ(Path("{.items[*].metadata.name}"), "a-1 a-2");
  EXPECT_EQ(Path("{.items[1].spec.podSets[*].count}"), "1 3");
  EXPECT_EQ(Path("{.items[0].metadata.labels['team']}"), "nlp");
  EXPECT_EQ(Path("{$.items[0].status}"), R"({"phase":"Running"})");
  EXPECT_EQ(Path("{.items[5].metadata.name}"), "");  // missing: empty, as kubectl's get
  EXPECT_EQ(Path("{.items[0].nope.deeper}"), "");
  EXPECT_EQ(Path("name={.items[0].metadata.name}\\n"), "name=a-1\n");
}

TEST(JsonPathTest, Range) {
  EXPECT_EQ(Path(R"({range .items[*]}{.metadata.name}{"\t"}{.status.phase}{"\n"}{end})"),
            "a-1\tRunning\na-2\tPending\n");
  EXPECT_EQ(Path("{range .items[*]}[{range .spec.podSets[*]}{.name},{end}]{end}"), "[main,][main,w,]");
}

TEST(JsonPathTest, UnsupportedIsAClearError) {
  for (const char* bad : {"{.items[?(@.x==1)]}", "{..name}", "{.items[0:2]}", "{.items[0,1]}", "{.items[x]}",
                          "{.items[99999999999999999999999]}", "{.items", "{range .items[*]}{.x}", "{end}"}) {
    std::string err;
    EXPECT_FALSE(JsonPath(bad, kList, &err).has_value()) << bad;
    EXPECT_NE(err.find("jsonpath"), std::string::npos) << bad << ": " << err;
  }
  std::string err;
  JsonPath("{.items[?(@.x==1)]}", kList, &err);
  EXPECT_NE(err.find("filters"), std::string::npos) << err;
  EXPECT_NE(err.find("supported: "), std::string::npos) << err;
}

TEST(CustomColumnsTest, ParsesAndRefusesBadSpecs) {
  std::string err;
  auto cols = ParseCustomColumns("NAME:.metadata.name,PHASE:{.status.phase}", &err);
  ASSERT_TRUE(cols) << err;
  ASSERT_EQ(cols->size(), 2u);
  EXPECT_EQ((*cols)[1].header, "PHASE");
  auto v = JsonPathValues((*cols)[1].path, kList["items"][1], &err);
  ASSERT_TRUE(v);
  EXPECT_EQ(*v, std::vector<Json>{"Pending"});
  EXPECT_FALSE(ParseCustomColumns("NAME", &err));
  EXPECT_NE(err.find("HEADER:JSONPATH"), std::string::npos) << err;
  EXPECT_FALSE(ParseCustomColumns("NAME:..x", &err));
}

TEST(LabelSelectorTest, Operators) {
  std::string err;
  std::map<std::string, std::string> nlp = {{"team", "nlp"}, {"tier", "prod"}}, cv = {{"team", "cv"}}, none;
  auto match = [&](const std::string& s, const std::map<std::string, std::string>& l) {
    auto sel = ParseLabelSelector(s, &err);
    EXPECT_TRUE(sel) << s << ": " << err;
    return sel && MatchesLabels(*sel, l);
  };
  EXPECT_TRUE(match("", none));
  EXPECT_TRUE(match("team=nlp", nlp));
  EXPECT_TRUE(match("team==nlp", nlp));
  EXPECT_FALSE(match("team=nlp", cv));
  EXPECT_TRUE(match("team!=nlp", cv));
  EXPECT_TRUE(match("team!=nlp", none));  // absent: not equal
  EXPECT_TRUE(match("team in (cv, nlp)", nlp));
  EXPECT_FALSE(match("team in (cv)", nlp));
  EXPECT_TRUE(match("team notin (cv)", nlp));
  EXPECT_TRUE(match("team notin (cv)", none));
  EXPECT_TRUE(match("tier", nlp));
  EXPECT_FALSE(match("tier", cv));
  EXPECT_TRUE(match("!tier", cv));
  EXPECT_FALSE(match("!tier", nlp));
  EXPECT_TRUE(match("team in (nlp,cv),tier=prod", nlp));
  EXPECT_FALSE(match("team in (nlp,cv),tier=prod", cv));
  for (const char* bad : {"team in (a", "team in a", "te am=x", "=x", "a=b c", "team=,", "x like (a)"}) {
    EXPECT_FALSE(ParseLabelSelector(bad, &err).has_value()) << bad;
    EXPECT_NE(err.find("label selector"), std::string::npos) << err;
  }
}

TEST(SuggestTest, TyposAndPrefixes) {
  std::vector<std::string> flags = {"--namespace", "--server", "--token", "--gpus", "--output"};
  EXPECT_EQ(Suggest("--namepsace", flags), "--namespace");
  EXPECT_EQ(Suggest("--sever", flags), "--server");
  EXPECT_EQ(Suggest("--gpu", flags), "--gpus");
  EXPECT_EQ(Suggest("--frobnicate", flags), "");
  EXPECT_EQ(Suggest("foo", {"top", "get", "run"}), "");
  EXPECT_EQ(Suggest("gte", {"top", "get", "run"}), "get");
  EXPECT_EQ(EditDistance("abc", "acb"), 1u);
}

}  // namespace
}  // namespace artel::cli
