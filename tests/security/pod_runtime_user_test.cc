// The runtime's half of pod isolation (docs/daemon.md, "Pod users and
// isolation"): a pod started with a uid/gid runs as that user with no
// supplementary groups, enters its working directory as that user (so the
// kernel refuses a directory the user may not enter), cannot read arteld's
// 0600 files, and still reports its exit status although its log directory
// is 0700 and arteld's. Needs root; skipped otherwise.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "../server/harness.h"
#include "runtime/runtime.h"

namespace artel::testing {
namespace {

namespace fs = std::filesystem;
using runtime::Exit;
using runtime::LaunchSpec;
using runtime::LocalRuntime;
using runtime::PodLaunch;

constexpr int64_t kUid = 65534;  // nobody: exists, or not; either is fine for the kernel
constexpr int64_t kGid = 65533;

std::unique_ptr<LocalRuntime> MakeRuntime() {
  LocalRuntime::Options opts;
  opts.cgroup_root = "none";
  auto rt = LocalRuntime::Create(opts);
  EXPECT_TRUE(rt.ok());
  return rt.ok() ? std::move(rt).value() : nullptr;
}

std::vector<Exit> WaitExits(LocalRuntime* rt, size_t n) {
  std::vector<Exit> all;
  WaitFor(
      [&] {
        for (Exit& e : rt->Poll()) all.push_back(e);
        return all.size() >= n;
      },
      10000);
  return all;
}

unsigned Mode(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 ? (st.st_mode & 07777) : 010000;
}

TEST(PodRuntimeUserTest, PodRunsAsItsUserInItsDirectoryAndReportsItsExit) {
  ASSERT_EQ(geteuid(), 0u) << "needs root: only root can start pods as another user; run make test as root";
  const std::string dir = TempDir("rtuser");
  chmod(dir.c_str(), 0711);
  const std::string logs = dir + "/logs", work = dir + "/work";
  const std::string secret = dir + "/secret";
  WriteFile(secret, "s3cret\n", 0600);
  fs::create_directories(work);
  ASSERT_EQ(chmod(work.c_str(), 0700), 0);
  ASSERT_EQ(chown(work.c_str(), kUid, kGid), 0);

  auto rt = MakeRuntime();
  ASSERT_NE(rt, nullptr);
  LaunchSpec spec;
  spec.key = "team-a/who";
  spec.log_dir = logs;
  PodLaunch p;
  p.pod = "main-0";
  p.uid = kUid;
  p.gid = kGid;
  p.working_dir = work;
  p.command = {"sh", "-c",
               "echo uid=$(id -u) gid=$(id -g) groups=$(id -G); echo cwd=$(pwd); cat " + secret +
                   "; echo cat_rc=$?; ls " + logs + "; echo ls_rc=$?; exit 3"};
  spec.pods.push_back(p);
  auto started = rt->Start(spec, 0);
  ASSERT_TRUE(started.ok()) << started.status().message();
  std::vector<Exit> exits = WaitExits(rt.get(), 1);
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_FALSE(exits[0].signaled);
  EXPECT_EQ(exits[0].exit_code, 3);  // written by the wrapper through descriptor 3
  EXPECT_EQ(ReadFile(logs + "/team-a/who/main-0.exit"), "3\n");

  const std::string log = ReadFile(logs + "/team-a/who/main-0.log");
  EXPECT_NE(log.find("uid=65534 gid=65533 groups=65533\n"), std::string::npos) << log;
  EXPECT_NE(log.find("cwd=" + work + "\n"), std::string::npos) << log;
  EXPECT_EQ(log.find("s3cret"), std::string::npos) << log;
  EXPECT_NE(log.find("cat_rc=1"), std::string::npos) << log;
  EXPECT_NE(log.find("ls_rc=2"), std::string::npos) << log;
  EXPECT_NE(log.find("Permission denied"), std::string::npos) << log;
  // arteld's: the log tree 0700, the files 0600.
  EXPECT_EQ(Mode(logs + "/team-a"), 0700u);
  EXPECT_EQ(Mode(logs + "/team-a/who"), 0700u);
  EXPECT_EQ(Mode(logs + "/team-a/who/main-0.log"), 0600u);
  EXPECT_EQ(Mode(logs + "/team-a/who/main-0.exit"), 0600u);

  // A working directory the user may not enter fails the start, clearly.
  ASSERT_EQ(chmod(work.c_str(), 0750), 0);
  ASSERT_EQ(chown(work.c_str(), 0, 0), 0);
  spec.key = "team-a/denied";
  auto denied = rt->Start(spec, 0);
  ASSERT_FALSE(denied.ok());
  EXPECT_NE(denied.status().message().find("chdir to working directory " + work +
                                           " as uid 65534 gid 65533 failed: "
                                           "Permission denied"),
            std::string::npos)
      << denied.status().message();

  // The command is looked up as the pod's user: a script only root may run
  // is refused at start, naming the user, like a missing command.
  ASSERT_EQ(chmod(work.c_str(), 0755), 0);
  WriteFile(work + "/root-only.sh", "echo ran\n", 0700);
  spec.key = "team-a/rootonly";
  spec.pods[0].command = {work + "/root-only.sh"};
  auto refused = rt->Start(spec, 0);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("command " + work +
                                            "/root-only.sh is not an executable file for uid "
                                            "65534 gid 65533"),
            std::string::npos)
      << refused.status().message();
  spec.key = "team-a/missing";
  spec.pods[0].command = {"no-such-command-artel"};
  auto missing = rt->Start(spec, 0);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("no-such-command-artel not found in PATH"), std::string::npos)
      << missing.status().message();
  // A command in PATH runs (found as the user).
  spec.key = "team-a/path";
  spec.pods[0].command = {"true"};
  ASSERT_TRUE(rt->Start(spec, 0).ok());
  std::vector<Exit> ok = WaitExits(rt.get(), 1);
  ASSERT_EQ(ok.size(), 1u);
  EXPECT_EQ(ok[0].exit_code, 0);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace artel::testing
