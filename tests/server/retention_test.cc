// Retention of finished workloads: after `--finished-retention` a Succeeded
// or Cancelled workload's record is deleted (journaled, so a restart
// agrees), and its name can be used again. Plus the retention syntax.

#include <gtest/gtest.h>

#include "harness.h"
#include "server/config.h"

namespace artel::testing {
namespace {

TEST(RetentionSyntaxTest, UnitsAndNever) {
  EXPECT_EQ(*server::ParseRetention("90s"), 90000);
  EXPECT_EQ(*server::ParseRetention("30m"), 1800000);
  EXPECT_EQ(*server::ParseRetention("24h"), 86400000);
  EXPECT_EQ(*server::ParseRetention("7d"), 7 * 86400000LL);
  EXPECT_EQ(*server::ParseRetention("0s"), 0);
  EXPECT_EQ(*server::ParseRetention("never"), -1);
  for (const char* bad : {"", "h", "10", "1.5h", "-1h", "10w", "24 h"}) {
    EXPECT_FALSE(server::ParseRetention(bad).ok()) << bad;
  }
}

TEST(RetentionTest, FinishedWorkloadsAreDeletedAfterRetention) {
  std::string dir = TempDir("retention");
  WriteFile(dir + "/cluster.yaml", kTwoTeamsManifests);
  Arteld d(dir);
  std::vector<std::string> flags = {"-m",          dir + "/cluster.yaml",  "--fake-gpus",
                                    "2xA100-80GB", "--finished-retention", "1s"};
  ASSERT_TRUE(d.Start(flags)) << d.log();
  ASSERT_EQ(d.Post("/api/v1/workloads", Workload("team-a", "short", "default", 1, {"true"}).dump()).status,
            201);
  ASSERT_EQ(
      d.Post("/api/v1/workloads", Workload("team-b", "gone", "default", 1, {"sleep", "600"}).dump()).status,
      201);
  ASSERT_EQ(d.Post("/api/v1/namespaces/team-b/workloads/gone/cancel", "").status, 200);
  // Visible while within the retention, then deleted.
  ASSERT_TRUE(WaitFor([&] { return d.Phase("team-a", "short") == "Succeeded"; }, 20000)) << d.log();
  EXPECT_TRUE(std::filesystem::exists(dir + "/data/logs/team-a/short/main-0.log"));
  ASSERT_TRUE(
      WaitFor([&] { return d.Get("/api/v1/namespaces/team-a/workloads/short").status == 404; }, 20000))
      << d.Phase("team-a", "short");
  ASSERT_TRUE(
      WaitFor([&] { return d.Get("/api/v1/namespaces/team-b/workloads/gone").status == 404; }, 20000));
  // Their pod logs are deleted with them.
  EXPECT_TRUE(WaitFor([&] { return !std::filesystem::exists(dir + "/data/logs/team-a/short"); }, 10000));
  EXPECT_TRUE(WaitFor([&] { return !std::filesystem::exists(dir + "/data/logs/team-b/gone"); }, 10000));
  EXPECT_NE(d.log().find("deleted finished workloads past retention"), std::string::npos);
  // A restart replays the deletion.
  ASSERT_TRUE(d.Stop());
  ASSERT_TRUE(d.Start({"-m", dir + "/cluster.yaml", "--fake-gpus", "2xA100-80GB"})) << d.log();
  EXPECT_EQ(d.Get("/api/v1/namespaces/team-a/workloads/short").status, 404);
  EXPECT_EQ(d.Get("/api/v1/namespaces/team-b/workloads/gone").status, 404);
  // The name is free again.
  ASSERT_EQ(d.Post("/api/v1/workloads", Workload("team-a", "short", "default", 1, {"true"}).dump()).status,
            201);
  ASSERT_TRUE(WaitFor([&] { return d.Phase("team-a", "short") == "Succeeded"; }, 20000)) << d.log();
  // Without a retention flag the default (24 h) keeps it.
  ASSERT_TRUE(d.Stop());
  ASSERT_TRUE(d.Start({"-m", dir + "/cluster.yaml", "--fake-gpus", "2xA100-80GB"})) << d.log();
  EXPECT_EQ(d.Phase("team-a", "short"), "Succeeded");
  EXPECT_TRUE(d.Stop());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace artel::testing
