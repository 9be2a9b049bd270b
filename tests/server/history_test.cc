// UsageHistory (server/history.h): the ring is driven by explicit sample
// times, never by sleeping.
#include "server/history.h"

#include <gtest/gtest.h>

#include "server/prom_history.h"

namespace artel::server {
namespace {

using Json = nlohmann::json;

// team-a borrows `a_used - 2` GPUs of team-b's guarantee (2 each) in cohort pool.
Json Cqs(int a_used, int b_used) {
  auto res = [](int nominal, int used) {
    return Json::array({{{"flavor", "a100"},
                         {"resource", "nvidia.com/gpu"},
                         {"nominal", std::to_string(nominal)},
                         {"usage", std::to_string(used)},
                         {"borrowed", std::to_string(std::max(0, used - nominal))}},
                        {{"flavor", "a100"}, {"resource", "cpu"}, {"nominal", "64"}, {"usage", "1500m"}}});
  };
  return Json{
      {"kind", "ClusterQueueList"},
      {"items", Json::array({{{"name", "team-a"}, {"cohort", "pool"}, {"resources", res(2, a_used)}},
                             {{"name", "team-b"}, {"cohort", "pool"}, {"resources", res(2, b_used)}}})}};
}
Json Cohorts(int used) {
  return Json{{"kind", "CohortList"},
              {"items", Json::array({{{"name", "pool"},
                                      {"parent", ""},
                                      {"resources", Json::array({{{"flavor", "a100"},
                                                                  {"resource", "nvidia.com/gpu"},
                                                                  {"subtreeQuota", "4"},
                                                                  {"usage", std::to_string(used)},
                                                                  {"borrowed", "0"}}})}}})}};
}

const Json* Find(const Json& h, const std::string& kind, const std::string& name) {
  for (const auto& s : h["series"]) {
    if (s["kind"] == kind && s["name"] == name) return &s;
  }
  return nullptr;
}

TEST(UsageHistoryTest, SamplesOncePerIntervalAndDerivesLent) {
  UsageHistory h({.interval_ms = 10000, .capacity = 100});
  EXPECT_TRUE(h.MaybeSample(1'000'000, Cqs(4, 0), Cohorts(4)));
  EXPECT_FALSE(h.MaybeSample(1'009'999, Cqs(1, 1), Cohorts(2)));  // within the interval
  EXPECT_TRUE(h.MaybeSample(1'010'000, Cqs(2, 2), Cohorts(4)));
  Json j = h.ToJson(0);
  EXPECT_EQ(j["intervalSeconds"], 10.0);
  ASSERT_EQ(j["series"].size(), 3u);  // cpu is not kept
  const Json* a = Find(j, "ClusterQueue", "team-a");
  const Json* b = Find(j, "ClusterQueue", "team-b");
  const Json* pool = Find(j, "Cohort", "pool");
  ASSERT_TRUE(a && b && pool);
  EXPECT_EQ((*a)["t"], Json::array({1000.0, 1010.0}));
  EXPECT_EQ((*a)["cohort"], "pool");
  EXPECT_EQ((*a)["used"], Json::array({4.0, 2.0}));
  EXPECT_EQ((*a)["borrowed"], Json::array({2.0, 0.0}));
  EXPECT_EQ((*a)["lent"], Json::array({0.0, 0.0}));
  // team-b lent the 2 GPUs team-a borrowed, then nothing.
  EXPECT_EQ((*b)["lent"], Json::array({2.0, 0.0}));
  EXPECT_EQ((*pool)["nominal"], Json::array({4.0, 4.0}));
  EXPECT_EQ((*pool)["parent"], "");
  // since= keeps the later points only.
  Json later = h.ToJson(1'005'000);
  ASSERT_TRUE(Find(later, "ClusterQueue", "team-a"));
  EXPECT_EQ((*Find(later, "ClusterQueue", "team-a"))["t"], Json::array({1010.0}));
}

TEST(UsageHistoryTest, RingIsBounded) {
  UsageHistory h({.interval_ms = 1000, .capacity = 5});
  for (int i = 0; i < 20; ++i) EXPECT_TRUE(h.MaybeSample(i * 1000, Cqs(i % 3, 0), Cohorts(i % 3)));
  EXPECT_EQ(h.series(), 3u);
  EXPECT_EQ(h.points(), 15u);
  Json j = h.ToJson(0);
  const Json* a = Find(j, "ClusterQueue", "team-a");
  ASSERT_TRUE(a);
  EXPECT_EQ((*a)["t"], Json::array({15.0, 16.0, 17.0, 18.0, 19.0}));
}

TEST(UsageHistoryTest, GoneQueuesAgeOut) {
  UsageHistory h({.interval_ms = 1000, .capacity = 3});
  h.MaybeSample(0, Cqs(1, 1), Cohorts(2));
  Json empty{{"kind", "ClusterQueueList"}, {"items", Json::array()}};
  for (int i = 1; i <= 5; ++i) h.MaybeSample(i * 1000, empty, Cohorts(0));
  EXPECT_EQ(h.series(), 1u);  // only the cohort is left
}

TEST(UsageHistoryTest, MalformedViewsAreIgnored) {
  UsageHistory h({});
  EXPECT_TRUE(h.MaybeSample(0, Json("nonsense"), Json::object()));
  EXPECT_EQ(h.series(), 0u);
  Json odd = {{"items", Json::array({{{"name", 7}, {"resources", Json::array({"x", {{"resource", 3}}})}}})}};
  EXPECT_TRUE(h.MaybeSample(20000, odd, odd));
  EXPECT_EQ(h.series(), 0u);
}

}  // namespace
}  // namespace artel::server

// PrometheusHistory::FromMatrices (server/prom_history.h): query_range
// results become the ring's JSON shape, with lent derived per instant and
// unlike flavors kept apart.
namespace artel::server {
namespace {

Json Matrix(const std::string& kind, const std::string& name, const std::string& parent,
            const std::string& flavor, std::vector<std::pair<double, std::string>> values) {
  Json v = Json::array();
  for (auto& [t, x] : values) v.push_back(Json::array({t, x}));
  return Json{{"metric",
               {{"__name__", "x"},
                {"team", name},
                {"kind", kind},
                {"parent", parent},
                {"flavor", flavor},
                {"resource", "nvidia.com/gpu"}}},
              {"values", v}};
}

TEST(PrometheusHistoryTest, MatricesBecomeSeriesWithLent) {
  Json g = Json::array({Matrix("cluster_queue", "team-a", "pool", "a100", {{100, "2"}, {110, "2"}}),
                        Matrix("cluster_queue", "team-b", "pool", "a100", {{100, "2"}, {110, "2"}}),
                        Matrix("cluster_queue", "team-b", "pool", "h100", {{100, "1"}}),
                        Matrix("cohort", "pool", "", "a100", {{100, "4"}, {110, "4"}})});
  Json u = Json::array({Matrix("cluster_queue", "team-a", "pool", "a100", {{100, "1"}, {110, "3"}}),
                        Matrix("cluster_queue", "team-b", "pool", "a100", {{100, "0"}, {110, "0"}})});
  Json b = Json::array({Matrix("cluster_queue", "team-a", "pool", "a100", {{100, "0"}, {110, "1"}})});
  Json h = PrometheusHistory::FromMatrices(g, u, b, 10);
  EXPECT_EQ(h["source"], "prometheus");
  EXPECT_EQ(h["series"].size(), 4u);  // team-a, team-b a100, team-b h100, pool
  const Json* a = Find(h, "ClusterQueue", "team-a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ((*a)["cohort"], "pool");
  EXPECT_EQ((*a)["t"], Json::array({100.0, 110.0}));
  EXPECT_EQ((*a)["used"], Json::array({1.0, 3.0}));
  EXPECT_EQ((*a)["borrowed"], Json::array({0.0, 1.0}));
  int h100 = 0;
  for (const auto& s : h["series"]) {
    if (s["name"] == "team-b" && s["flavor"] == "a100") {
      EXPECT_EQ(s["lent"], Json::array({0.0, 1.0}));
    }
    if (s["flavor"] == "h100") {
      ++h100;
      EXPECT_EQ(s["nominal"], Json::array({1.0}));
    }
  }
  EXPECT_EQ(h100, 1);
  EXPECT_EQ(PrometheusHistory::FromMatrices(Json("junk"), Json::array({1, 2}), Json(), 10)["series"].size(),
            0u);
}

TEST(PrometheusHistoryTest, UrlMustBeHostAndPort) {
  EXPECT_TRUE(PrometheusHistory::ValidateUrl("http://127.0.0.1:9090").ok());
  EXPECT_TRUE(PrometheusHistory::ValidateUrl("http://prom.example:9090/").ok());
  EXPECT_FALSE(PrometheusHistory::ValidateUrl("https://prom:9090").ok());
  EXPECT_FALSE(PrometheusHistory::ValidateUrl("http://prom:9090/api?x=1").ok());
  EXPECT_FALSE(PrometheusHistory::ValidateUrl("prom:9090").ok());
}

}  // namespace
}  // namespace artel::server
