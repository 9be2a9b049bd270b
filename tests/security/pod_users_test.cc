// Pod users (src/server/pod_users.h): the allocation of a uid per namespace
// (stable across restarts, collisions skipped, never root unless allowed)
// and the config keys that drive it (runtime.podUsers, allowRoot,
// podUidRange). Pure unit tests: no root needed, nothing is started.
#include "server/pod_users.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <set>
#include <string>

#include "../server/harness.h"
#include "server/config.h"

namespace artel::server {
namespace {

namespace fs = std::filesystem;
using artel::testing::ReadFile;
using artel::testing::TempDir;
using artel::testing::WriteFile;

TEST(PodUsersTest, EachNamespaceGetsItsOwnUidThatSurvivesARestart) {
  const std::string dir = TempDir("podusers");
  const std::string state = dir + "/pod-users.json";
  PodUserOptions o;
  o.range_first = 70000;
  o.range_last = 70003;  // four uids: collisions are certain among four namespaces
  o.configured["fixed"] = PodUser{1500, 1501};
  std::map<std::string, int64_t> first;
  {
    auto users = PodUsers::Open(o, state, true);
    ASSERT_TRUE(users.ok()) << users.status().message();
    std::set<int64_t> seen;
    for (const char* ns : {"team-a", "team-b", "team-c", "team-d"}) {
      auto u = (*users)->For(ns);
      ASSERT_TRUE(u.ok()) << u.status().message();
      EXPECT_GE(u->uid, 70000);
      EXPECT_LE(u->uid, 70003);
      EXPECT_EQ(u->gid, u->uid);
      EXPECT_TRUE(seen.insert(u->uid).second) << ns << " shares uid " << u->uid;
      first[ns] = u->uid;
    }
    // The range is full: a fifth namespace is refused, not given a used uid.
    auto full = (*users)->For("team-e");
    ASSERT_FALSE(full.ok());
    EXPECT_NE(full.status().message().find("runtime.podUidRange"), std::string::npos);
    auto fixed = (*users)->For("fixed");
    ASSERT_TRUE(fixed.ok());
    EXPECT_EQ(fixed->uid, 1500);
    EXPECT_EQ(fixed->gid, 1501);
  }
  EXPECT_EQ(fs::status(state).permissions() & fs::perms::all, fs::perms::owner_read | fs::perms::owner_write);
  // A restart asks in another order and gets the same uids.
  auto again = PodUsers::Open(o, state, true);
  ASSERT_TRUE(again.ok());
  for (const char* ns : {"team-d", "team-c", "team-b", "team-a"}) {
    auto u = (*again)->For(ns);
    ASSERT_TRUE(u.ok());
    EXPECT_EQ(u->uid, first[ns]) << ns;
  }
  // A configured user that takes an allocated uid would merge two tenants.
  PodUserOptions clash = o;
  clash.configured["other"] = PodUser{first["team-b"], first["team-b"]};
  auto refused = PodUsers::Open(clash, state, true);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("already allocated to namespace team-b"), std::string::npos)
      << refused.status().message();
  // A damaged allocation file stops arteld rather than reallocating.
  WriteFile(state, "{not json");
  auto damaged = PodUsers::Open(o, state, true);
  ASSERT_FALSE(damaged.ok());
  EXPECT_NE(damaged.status().message().find(state), std::string::npos);
  fs::remove_all(dir);
}

TEST(PodUsersTest, RootOnlyWhereAllowedAndNoSwitchWithoutPrivileges) {
  const std::string dir = TempDir("podusers");
  PodUserOptions o;
  o.allow_root.insert("ops");
  o.configured["sneaky"] = PodUser{0, 0};  // as if the config check were bypassed
  auto users = PodUsers::Open(o, dir + "/pod-users.json", true);
  ASSERT_TRUE(users.ok());
  auto ops = (*users)->For("ops");
  ASSERT_TRUE(ops.ok());
  EXPECT_EQ(ops->uid, 0);
  auto sneaky = (*users)->For("sneaky");
  ASSERT_FALSE(sneaky.ok());
  EXPECT_EQ(sneaky.status().code(), StatusCode::kPermissionDenied);
  // Not switching: every namespace runs as arteld's own user (uid -1).
  auto plain = PodUsers::Open(o, dir + "/pod-users.json", false);
  ASSERT_TRUE(plain.ok());
  auto ops_plain = (*plain)->For("ops");
  ASSERT_TRUE(ops_plain.ok());
  EXPECT_EQ(ops_plain->uid, -1);
  auto team = (*plain)->For("team-a");
  if (geteuid() == 0) {
    // Root that cannot switch would run team-a's pods as root: refused.
    ASSERT_FALSE(team.ok());
    EXPECT_EQ(team.status().code(), StatusCode::kPermissionDenied);
    EXPECT_NE(team.status().message().find("runtime.allowRoot"), std::string::npos);
  } else {
    ASSERT_TRUE(team.ok());
    EXPECT_EQ(team->uid, -1);
  }
  EXPECT_FALSE(fs::exists(dir + "/pod-users.json"));
  fs::remove_all(dir);
}

TEST(PodUsersTest, ConfigKeysAreCheckedWithFileLineAndField) {
  const std::string dir = TempDir("podusers");
  auto load = [&](const std::string& text, ArteldConfig* c) {
    WriteFile(dir + "/arteld.yaml", text);
    return LoadArteldConfig(dir + "/arteld.yaml", c);
  };
  ArteldConfig ok;
  ASSERT_TRUE(load("runtime:\n  podUsers: {team-a: {uid: 1500}, ops: {uid: 0}}\n  allowRoot: [ops]\n"
                   "  podUidRange: 70000-70999\n  workDir: w\n",
                   &ok)
                  .ok());
  EXPECT_EQ(ok.daemon.pod_users.configured["team-a"].uid, 1500);
  EXPECT_EQ(ok.daemon.pod_users.configured["team-a"].gid, 1500);
  EXPECT_EQ(ok.daemon.pod_users.range_first, 70000);
  EXPECT_EQ(ok.daemon.pod_users.range_last, 70999);
  EXPECT_EQ(ok.daemon.work_dir, dir + "/w");
  struct Bad {
    const char* yaml;
    const char* field;
  };
  for (const Bad& b :
       {Bad{"runtime:\n  podUsers: {team-a: {uid: 0}}\n", "runtime.podUsers.team-a.uid"},
        Bad{"runtime:\n  podUsers: {team-a: {uid: 5, gid: 0}}\n", "runtime.podUsers.team-a.gid"},
        Bad{"runtime:\n  podUsers: {team-a: {uid: -3}}\n", "runtime.podUsers.team-a.uid"},
        Bad{"runtime:\n  podUsers: {team-a: {gid: 5}}\n", "runtime.podUsers.team-a.uid"},
        Bad{"runtime:\n  podUsers: {team-a: {uid: 5, user: x}}\n", "runtime.podUsers.team-a.user"},
        Bad{"runtime:\n  podUidRange: 62000\n", "runtime.podUidRange"},
        Bad{"runtime:\n  podUidRange: 0-10\n", "runtime.podUidRange"},
        Bad{"runtime:\n  podUidRange: 9-8\n", "runtime.podUidRange"},
        Bad{"runtime:\n  allowRoot: ops\n", "runtime.allowRoot"}}) {
    ArteldConfig c;
    Status s = load(b.yaml, &c);
    ASSERT_FALSE(s.ok()) << b.yaml;
    EXPECT_NE(s.ToString().find(b.field), std::string::npos) << b.yaml << " -> " << s.ToString();
    EXPECT_NE(s.ToString().find("arteld.yaml:"), std::string::npos) << s.ToString();
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace artel::server
