// A tenant's own pods against the daemon and against other tenants
// (docs/security.md, docs/daemon.md "Pod users and isolation"): pods run as
// their namespace's unprivileged user in their own 0700 directory, and get
// EACCES on the tokens file, the journal and other tenants' logs; arteld
// refuses a tokens file others may read, and root pods unless allowed.
//
// The uid parts need arteld to run as root (the test machine and CI do);
// elsewhere they are skipped with a message.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "../server/harness.h"

namespace artel::testing {
namespace {

namespace fs = std::filesystem;

// team-b is mapped to a configured user; team-a gets one from the range.
constexpr const char* kConfig = R"(runtime:
  podUidRange: 62000-62099
  podUsers:
    team-b: {uid: 1500, gid: 1501}
)";

unsigned Mode(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return 07777 + 1;  // never a valid mode
  return st.st_mode & 07777;
}

class PodIsolationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = TempDir("podiso");
    WriteFile(dir_ + "/cluster.yaml", kTwoTeamsManifests);
    WriteFile(dir_ + "/tokens.yaml", kTokensYaml);
  }
  void TearDown() override {
    if (d_) d_->Stop();
    fs::remove_all(dir_);
  }
  bool Start(const std::string& config, std::string* error = nullptr) {
    WriteFile(dir_ + "/arteld.yaml", config);
    d_ = std::make_unique<Arteld>(dir_);
    return d_->Start({"--config", dir_ + "/arteld.yaml", "--tokens", dir_ + "/tokens.yaml", "-m",
                      dir_ + "/cluster.yaml", "--fake-gpus", "2xA100-80GB", "--grace-period", "0"},
                     error);
  }
  // Submits a one-pod workload running `script` under sh, waits for it to
  // finish, and returns its log as its tenant reads it through the API.
  std::string RunScript(const std::string& ns, const std::string& name, const std::string& token,
                        const std::string& script) {
    HttpResult r =
        d_->Post("/api/v1/workloads", Workload(ns, name, "default", 0, {"sh", "-c", script}).dump(), token);
    EXPECT_EQ(r.status, 201) << r.body;
    EXPECT_TRUE(WaitFor([&] { return d_->Phase(ns, name) == "Succeeded"; }, 20000))
        << d_->Phase(ns, name) << "\n"
        << d_->log();
    return d_->Get("/api/v1/namespaces/" + ns + "/workloads/" + name + "/logs", token).body;
  }

  std::string dir_;
  std::unique_ptr<Arteld> d_;
};

// The value printed after "key=" on its own line of `log` ("" when absent).
std::string Value(const std::string& log, const std::string& key) {
  size_t at = log.find(key + "=");
  if (at == std::string::npos) return "";
  size_t end = log.find('\n', at);
  return log.substr(at + key.size() + 1,
                    end == std::string::npos ? std::string::npos : end - at - key.size() - 1);
}

TEST_F(PodIsolationTest, PodCannotReadTokensJournalOrAnotherTenantsLog) {
  // make test runs as root (README, CI): without root the isolation goes unchecked, which is a failure.
  ASSERT_EQ(geteuid(), 0u) << "needs root: arteld switches pods to other users only as root "
                              "(or with CAP_SETUID/CAP_SETGID/CAP_CHOWN/CAP_KILL); run make test as root";
  ASSERT_TRUE(Start(kConfig)) << d_->log();
  const std::string data = dir_ + "/data";
  // team-b writes a log; team-a's pod then tries to read it.
  std::string blog = RunScript("team-b", "private", kTeamBToken,
                               "echo team-b-secret-line; echo uid=$(id -u); "
                               "echo gid=$(id -g); echo cwd=$(pwd)");
  EXPECT_NE(blog.find("team-b-secret-line"), std::string::npos) << blog;
  const std::string b_log = data + "/logs/team-b/private/main-0.log";
  ASSERT_TRUE(fs::exists(b_log));

  const std::string journal = data + "/artel.db";
  const std::string tokens = dir_ + "/tokens.yaml";
  std::string log = RunScript(
      "team-a", "probe", kTeamAToken,
      "echo uid=$(id -u); echo groups=$(id -G); echo cwd=$(pwd); echo cwdmode=$(stat -c %a .); "
      "cat " +
          tokens + "; echo tokens_rc=$?; cat " + journal +
          " >/dev/null; echo journal_rc=$?; "
          "cat " +
          b_log + "; echo blog_rc=$?; ls " + data +
          "/logs; echo lslogs_rc=$?; "
          "ls " +
          data +
          "/work/team-b; echo lswork_rc=$?; echo fd3=$(test -e /proc/self/fd/3 && echo open || echo closed)");

  // EACCES on each secret, and none of their contents in the log.
  for (const char* rc : {"tokens_rc", "journal_rc", "blog_rc", "lslogs_rc", "lswork_rc"}) {
    EXPECT_NE(Value(log, rc), "0") << rc << "\n" << log;
    EXPECT_NE(Value(log, rc), "") << rc << "\n" << log;
  }
  size_t denied = 0;
  for (size_t at = log.find("Permission denied"); at != std::string::npos;
       at = log.find("Permission denied", at + 1))
    ++denied;
  EXPECT_GE(denied, 5u) << log;
  EXPECT_EQ(log.find("admin-token-0001"), std::string::npos) << log;
  EXPECT_EQ(log.find("team-b-secret-line"), std::string::npos) << log;
  EXPECT_EQ(Value(log, "fd3"), "closed") << "the exit-file descriptor leaked into the command\n" << log;

  // team-a runs as a uid of the range, with no supplementary groups, in its
  // own 0700 directory; team-b as its configured user: different users.
  const std::string a_uid = Value(log, "uid");
  ASSERT_FALSE(a_uid.empty()) << log;
  int uid = std::stoi(a_uid);
  EXPECT_GE(uid, 62000) << log;
  EXPECT_LE(uid, 62099) << log;
  EXPECT_EQ(Value(log, "groups"), a_uid) << log;
  EXPECT_EQ(Value(blog, "uid"), "1500") << blog;
  EXPECT_EQ(Value(blog, "gid"), "1501") << blog;
  const std::string cwd = Value(log, "cwd");
  EXPECT_EQ(cwd.rfind(data + "/work/team-a/probe-", 0), 0u) << log;
  EXPECT_EQ(Value(log, "cwdmode"), "700") << log;
  struct stat st {};
  ASSERT_EQ(stat(cwd.c_str(), &st), 0) << cwd;
  EXPECT_EQ(static_cast<int>(st.st_uid), uid);
  EXPECT_EQ(Value(blog, "cwd").rfind(data + "/work/team-b/private-", 0), 0u) << blog;

  // Arteld's files: secrets 0600, the log tree 0700, the data dir only
  // traversable (pods reach their directories, never list it).
  EXPECT_EQ(Mode(journal), 0600u);
  EXPECT_EQ(Mode(data + "/pod-users.json"), 0600u);
  EXPECT_EQ(Mode(data + "/logs"), 0700u);
  EXPECT_EQ(Mode(data + "/logs/team-b/private"), 0700u);
  EXPECT_EQ(Mode(b_log), 0600u);
  EXPECT_EQ(Mode(data), 0711u);
  for (const char* f : {"/artel.db-wal", "/artel.db-shm"}) {
    if (fs::exists(data + f)) {
      EXPECT_EQ(Mode(data + f), 0600u) << f;
    }
  }

  // The allocation survives a restart.
  ASSERT_TRUE(d_->Stop());
  ASSERT_TRUE(d_->Start({"--config", dir_ + "/arteld.yaml", "--tokens", tokens, "-m", dir_ + "/cluster.yaml",
                         "--fake-gpus", "2xA100-80GB"}))
      << d_->log();
  std::string again = RunScript("team-a", "again", kTeamAToken, "echo uid=$(id -u)");
  EXPECT_EQ(Value(again, "uid"), a_uid) << again;
}

TEST_F(PodIsolationTest, RefusesTokensFileOthersMayRead) {
  WriteFile(dir_ + "/tokens.yaml", kTokensYaml, 0644);
  std::string error;
  EXPECT_FALSE(Start("", &error));
  EXPECT_NE(error.find("tokens file " + dir_ + "/tokens.yaml has mode 0644"), std::string::npos) << error;
  EXPECT_NE(error.find("chmod 600 " + dir_ + "/tokens.yaml"), std::string::npos) << error;
  // Group-writable is refused too; 0600 starts.
  chmod((dir_ + "/tokens.yaml").c_str(), 0620);
  EXPECT_FALSE(Start("", &error));
  chmod((dir_ + "/tokens.yaml").c_str(), 0600);
  ASSERT_TRUE(Start("")) << d_->log();
  // Serving (and authenticating) with the private file.
  EXPECT_TRUE(WaitFor([&] { return d_->Get("/api/v1/clusterqueues").status == 200; }, 10000)) << d_->log();
}

TEST_F(PodIsolationTest, RootPodsOnlyWhereAllowed) {
  std::string error;
  EXPECT_FALSE(Start("runtime: {podUsers: {team-a: {uid: 0}}}\n", &error));
  EXPECT_NE(error.find("runtime.podUsers.team-a.uid"), std::string::npos) << error;
  EXPECT_NE(error.find("runtime.allowRoot"), std::string::npos) << error;
  // make test runs as root (README, CI): without root the isolation goes unchecked, which is a failure.
  ASSERT_EQ(geteuid(), 0u) << "needs root: arteld switches pods to other users only as root "
                              "(or with CAP_SETUID/CAP_SETGID/CAP_CHOWN/CAP_KILL); run make test as root";
  ASSERT_TRUE(Start("runtime: {allowRoot: [team-a], podUidRange: 62100-62199}\n")) << d_->log();
  EXPECT_EQ(Value(RunScript("team-a", "root", kTeamAToken, "echo uid=$(id -u)"), "uid"), "0");
  std::string b = Value(RunScript("team-b", "user", kTeamBToken, "echo uid=$(id -u)"), "uid");
  ASSERT_FALSE(b.empty());
  EXPECT_GE(std::stoi(b), 62100);
}

TEST_F(PodIsolationTest, WorkdirMustBeUsableByThePodsUser) {
  // make test runs as root (README, CI): without root the isolation goes unchecked, which is a failure.
  ASSERT_EQ(geteuid(), 0u) << "needs root: arteld switches pods to other users only as root "
                              "(or with CAP_SETUID/CAP_SETGID/CAP_CHOWN/CAP_KILL); run make test as root";
  ASSERT_TRUE(Start(kConfig)) << d_->log();
  // A directory only root may enter: refused at submit, naming the field.
  const std::string closed = dir_ + "/closed";
  fs::create_directories(closed);
  chmod(closed.c_str(), 0700);
  Json w = Workload("team-a", "closed", "default", 0, {"sh", "-c", "pwd"});
  w["spec"]["podSets"][0]["workingDir"] = closed;
  HttpResult r = d_->Post("/api/v1/workloads", w.dump(), kTeamAToken);
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("workingDir"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("Permission denied"), std::string::npos) << r.body;
  // Arteld's own directories are no better.
  w["metadata"]["name"] = "logs";
  w["spec"]["podSets"][0]["workingDir"] = dir_ + "/data/logs";
  EXPECT_EQ(d_->Post("/api/v1/workloads", w.dump(), kTeamAToken).status, 400);
  w["metadata"]["name"] = "relative";
  w["spec"]["podSets"][0]["workingDir"] = "data";
  EXPECT_EQ(d_->Post("/api/v1/workloads", w.dump(), kTeamAToken).status, 400);

  // `artel run --workdir` with a readable directory: the README's example.
  const std::string open = dir_ + "/project";
  fs::create_directories(open);
  chmod(open.c_str(), 0755);
  WriteFile(open + "/train.sh", "echo trained in $(pwd)\n", 0644);
  std::string out, err;
  int rc =
      RunCommand({ARTEL_BIN, "run", "--queue", "team-a/default", "--name", "wd", "--workdir", open, "--wait",
                  "--", "sh", "train.sh"},
                 {{"ARTEL_SERVER", d_->url()}, {"ARTEL_TOKEN", kTeamAToken}, {"HOME", dir_}}, &out, &err);
  EXPECT_EQ(rc, 0) << out << err << d_->log();
  EXPECT_NE(out.find("trained in " + open), std::string::npos) << out << err;
  // The CLI reports the refusal with the field.
  rc = RunCommand({ARTEL_BIN, "run", "--queue", "team-a/default", "--workdir", closed, "--", "pwd"},
                  {{"ARTEL_SERVER", d_->url()}, {"ARTEL_TOKEN", kTeamAToken}, {"HOME", dir_}}, &out, &err);
  EXPECT_NE(rc, 0);
  EXPECT_NE((out + err).find("workingDir"), std::string::npos) << out << err;
}

// The workload's own directory goes with its record (retention), deleted as
// the pod's user: links the pod left are removed, never followed.
TEST_F(PodIsolationTest, OwnDirectoryIsDeletedWithTheRecordAsThePodsUser) {
  // make test runs as root (README, CI): without root the isolation goes unchecked, which is a failure.
  ASSERT_EQ(geteuid(), 0u) << "needs root: arteld switches pods to other users only as root "
                              "(or with CAP_SETUID/CAP_SETGID/CAP_CHOWN/CAP_KILL); run make test as root";
  const std::string victim = dir_ + "/victim";
  fs::create_directories(victim);
  chmod(victim.c_str(), 0755);
  WriteFile(victim + "/keep", "arteld's\n", 0644);
  WriteFile(dir_ + "/arteld.yaml", kConfig);
  d_ = std::make_unique<Arteld>(dir_);
  ASSERT_TRUE(d_->Start({"--config", dir_ + "/arteld.yaml", "--tokens", dir_ + "/tokens.yaml", "-m",
                         dir_ + "/cluster.yaml", "--fake-gpus", "2xA100-80GB", "--finished-retention", "1s"}))
      << d_->log();
  std::string log = RunScript("team-a", "scratch", kTeamAToken,
                              "mkdir -p a/b && echo x > a/b/f && ln -s " + victim + " link && ln -s " +
                                  victim + "/keep a/keeplink && chmod 000 a/b && echo cwd=$(pwd)");
  const std::string own = Value(log, "cwd");
  ASSERT_EQ(own.rfind(dir_ + "/data/work/team-a/scratch-", 0), 0u) << log;
  ASSERT_TRUE(fs::exists(own + "/a"));
  EXPECT_TRUE(WaitFor([&] { return !fs::exists(own); }, 15000)) << d_->log();
  EXPECT_EQ(ReadFile(victim + "/keep"), "arteld's\n");
}

}  // namespace
}  // namespace artel::testing
