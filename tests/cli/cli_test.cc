// The artel CLI end to end (issue 16, section 1): the real artel binary
// against the real arteld (tests/server/harness.h). kubectl habits (global
// flags anywhere, unknown flags named, delete, -o name|jsonpath|
// custom-columns, -l selectors, RFC 3339 times, ages), the configuration file
// with contexts, a tenant's default namespace, Slurm-like views (REASON,
// nodes, top per flavor) and shell completion in a real bash.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <cstdlib>
#include <regex>

#include "harness.h"

namespace artel::testing {
namespace {

struct CliResult {
  int rc = -1;
  std::string out, err;
};

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = TempDir("cli");
    WriteFile(dir_ + "/tokens.yaml", kTokensYaml);
    d_ = std::make_unique<Arteld>(dir_);
    std::string err;
    ASSERT_TRUE(d_->Start({"--tokens", dir_ + "/tokens.yaml", "--grace-period", "1",
                           "--stop-workloads-on-exit", "--fake-gpus", "4xA100-80GB,1xA100-80GB:mig"},
                          &err))
        << err;
    auto r = d_->Post("/api/v1/apply", kTwoTeamsManifests, kAdminToken, "application/yaml");
    ASSERT_EQ(r.status, 200) << r.body;
  }
  void TearDown() override {
    if (d_->running()) {
      auto list = d_->Get("/api/v1/workloads").json();
      for (const auto& w : list.value("items", Json::array())) {
        d_->Post("/api/v1/namespaces/" + w["metadata"].value("namespace", "") + "/workloads/" +
                     w["metadata"].value("name", "") + "/cancel",
                 "");
      }
      EXPECT_TRUE(d_->Stop()) << d_->log();
    }
    std::filesystem::remove_all(dir_);
  }

  // Runs artel in a clean environment: only HOME (the test's directory),
  // PATH, the sanitizers' options, and `env`.
  CliResult Run(const std::vector<std::string>& args, std::map<std::string, std::string> env = {}) {
    std::vector<std::string> argv = {"/usr/bin/env", "-i", "HOME=" + dir_, "PATH=/usr/bin:/bin"};
    for (const char* keep : {"ASAN_OPTIONS", "LSAN_OPTIONS", "UBSAN_OPTIONS"}) {
      if (const char* v = std::getenv(keep)) argv.push_back(std::string(keep) + "=" + v);
    }
    for (const auto& [k, v] : env) argv.push_back(k + "=" + v);
    argv.push_back(ARTEL_BIN);
    argv.insert(argv.end(), args.begin(), args.end());
    CliResult r;
    r.rc = RunCommand(argv, {}, &r.out, &r.err);
    return r;
  }
  // With the server and a token in the environment.
  CliResult Cli(const std::vector<std::string>& args, const std::string& token = kAdminToken) {
    return Run(args, {{"ARTEL_SERVER", d_->url()}, {"ARTEL_TOKEN", token}});
  }
  void Submit(const std::string& ns, const std::string& name, int gpus,
              const std::map<std::string, std::string>& labels = {}) {
    Json w = Workload(ns, name, "default", gpus);
    for (const auto& [k, v] : labels) w["metadata"]["labels"][k] = v;
    auto r = d_->Post("/api/v1/workloads", w.dump());
    ASSERT_EQ(r.status, 201) << r.body;
  }

  std::string dir_;
  std::unique_ptr<Arteld> d_;
};

std::string Dump(const CliResult& r) {
  return "rc=" + std::to_string(r.rc) + "\nstdout:\n" + r.out + "stderr:\n" + r.err;
}

// Global flags before or after the verb, in every spelling; an unknown or
// misspelt flag or verb is named with a suggestion.
TEST_F(CliTest, GlobalFlagsAnywhereAndUnknownFlagsNamed) {
  Submit("team-a", "a-1", 1);
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"--server", d_->url(), "--token", kTeamAToken, "get", "wl", "-n", "team-a"},
           {"get", "wl", "--server", d_->url(), "--token", kTeamAToken, "-n", "team-a"},
           {"-n", "team-a", "--token=" + std::string(kTeamAToken), "get", "--server=" + d_->url(), "wl"},
           {"--namespace=team-a", "get", "wl", "a-1", "--server", d_->url(), "--token", kTeamAToken}}) {
    CliResult r = Run(args);
    EXPECT_EQ(r.rc, 0) << Dump(r);
    EXPECT_NE(r.out.find("a-1"), std::string::npos) << Dump(r);
  }
  CliResult r = Cli({"get", "wl", "--namepsace", "team-a"});
  EXPECT_EQ(r.rc, 2) << Dump(r);
  EXPECT_NE(r.err.find("unknown flag --namepsace; did you mean --namespace?"), std::string::npos) << Dump(r);
  r = Cli({"run", "-q", "team-a/default", "--gpu", "1", "--", "sleep", "1"});
  EXPECT_EQ(r.rc, 2) << Dump(r);
  EXPECT_NE(r.err.find("unknown flag --gpu; did you mean --gpus?"), std::string::npos) << Dump(r);
  r = Cli({"sumbit"});
  EXPECT_EQ(r.rc, 2) << Dump(r);
  EXPECT_NE(r.err.find("unknown command \"sumbit\""), std::string::npos) << Dump(r);
  r = Cli({"submit"});
  EXPECT_NE(r.err.find("did you mean artel run"), std::string::npos) << Dump(r);
  r = Cli({"get", "wl", "--server"});
  EXPECT_EQ(r.rc, 2) << Dump(r);
  EXPECT_NE(r.err.find("flag needs an argument: --server"), std::string::npos) << Dump(r);
  r = Cli({"get", "wrkloads"});
  EXPECT_EQ(r.rc, 2) << Dump(r);
  EXPECT_NE(r.err.find("did you mean workloads?"), std::string::npos) << Dump(r);
  r = Run({"get", "wl", "-n", "team-a", "--server", d_->url()});  // no token
  EXPECT_EQ(r.rc, 5) << Dump(r);
  EXPECT_NE(r.err.find("hint: give a token with --token, --token-file, ARTEL_TOKEN"), std::string::npos)
      << Dump(r);
  r = Cli({"help", "get"});
  EXPECT_EQ(r.rc, 0) << Dump(r);
  EXPECT_NE(r.out.find("--selector"), std::string::npos) << Dump(r);
  r = Cli({"describe", "wl", "team-a/a-1", "-o", "json"});
  EXPECT_EQ(Json::parse(r.out, nullptr, false)["metadata"].value("name", ""), "a-1") << Dump(r);
  r = Cli({"--version"});
  EXPECT_EQ(r.rc, 0) << Dump(r);
  EXPECT_NE(r.out.find("artel "), std::string::npos) << Dump(r);
  // Flags after `--` belong to the command, also after a flag without a value (--wait).
  r = Cli({"run", "-q", "team-a/default", "--name", "dashes", "--wait", "--", "sh", "-c", "exit 0",
           "--server", "x", "-n", "y"},
          kTeamAToken);
  EXPECT_EQ(r.rc, 0) << Dump(r);
  auto w = d_->Get("/api/v1/namespaces/team-a/workloads/dashes").json();
  EXPECT_EQ(w["spec"]["podSets"][0]["command"], Json({"sh", "-c", "exit 0", "--server", "x", "-n", "y"}));
}

TEST_F(CliTest, DeleteCancelsAndCancelStaysAnAlias) {
  Submit("team-a", "d-1", 1);
  Submit("team-a", "d-2", 1);
  CliResult r = Cli({"delete", "wl", "d-1", "-n", "team-a"}, kTeamAToken);
  EXPECT_EQ(r.rc, 0) << Dump(r);
  EXPECT_NE(r.out.find("workload/team-a/d-1 deleted"), std::string::npos) << Dump(r);
  r = Cli({"cancel", "team-a/d-2"}, kTeamAToken);
  EXPECT_EQ(r.rc, 0) << Dump(r);
  EXPECT_NE(r.out.find("workload/team-a/d-2 cancelled"), std::string::npos) << Dump(r);
  ASSERT_TRUE(WaitFor([&] { return d_->Phase("team-a", "d-1") == "Cancelled"; }, 10000)) << d_->log();
  // Deleting what has ended is done; a missing one is 404 unless ignored.
  r = Cli({"delete", "workload/d-1", "-n", "team-a"}, kTeamAToken);
  EXPECT_EQ(r.rc, 0) << Dump(r);
  EXPECT_NE(r.out.find("already ended (Cancelled)"), std::string::npos) << Dump(r);
  EXPECT_EQ(Cli({"delete", "wl", "nope", "-n", "team-a"}, kTeamAToken).rc, 4);
  EXPECT_EQ(Cli({"delete", "wl", "nope", "-n", "team-a", "--ignore-not-found"}, kTeamAToken).rc, 0);
  r = Cli({"delete", "d-1"}, kTeamAToken);
  EXPECT_EQ(r.rc, 2) << Dump(r);
  EXPECT_NE(r.err.find("artel delete wl NAME"), std::string::npos) << Dump(r);
  EXPECT_EQ(Cli({"delete", "cq", "team-a"}).rc, 2);
  EXPECT_EQ(Cli({"delete", "wl", "team-a/d-2"}, kTeamBToken).rc, 5);  // not its namespace
}

TEST_F(CliTest, OutputFormatsAndRfc3339Times) {
  Submit("team-a", "o-1", 1, {{"tier", "prod"}});
  Submit("team-a", "o-2", 1, {{"tier", "dev"}});
  CliResult r = Cli({"get", "wl", "-n", "team-a", "-o", "name"});
  EXPECT_EQ(r.rc, 0) << Dump(r);
  EXPECT_EQ(r.out, "workload/o-1\nworkload/o-2\n");
  r = Cli({"get", "wl", "-n", "team-a", "-o", "jsonpath={.items[*].metadata.name}"});
  EXPECT_EQ(r.out, "o-1 o-2") << Dump(r);
  r = Cli({"get", "wl", "-n", "team-a", "-o",
           R"(jsonpath={range .items[*]}{.metadata.name}={.metadata.labels.tier}{"\n"}{end})"});
  EXPECT_EQ(r.out, "o-1=prod\no-2=dev\n") << Dump(r);
  r = Cli(
      {"get", "wl", "o-2", "-n", "team-a", "-o", "jsonpath={.spec.podSets[0].requests['nvidia.com/gpu']}"});
  EXPECT_EQ(r.out, "1") << Dump(r);
  r = Cli({"get", "wl", "-n", "team-a", "-o",
           "custom-columns=NAME:.metadata.name,TIER:.metadata.labels.tier,X:.nope"});
  EXPECT_EQ(r.rc, 0) << Dump(r);
  EXPECT_TRUE(std::regex_search(r.out, std::regex("NAME +TIER +X\no-1 +prod +<none>\no-2 +dev +<none>\n")))
      << r.out;
  r = Cli({"get", "wl", "-n", "team-a", "--sort-by", "{.metadata.labels.tier}", "-o", "name"});
  EXPECT_EQ(r.out, "workload/o-2\nworkload/o-1\n") << Dump(r);  // dev < prod
  r = Cli({"get", "wl", "-n", "team-a", "--sort-by", ".metadata.name[", "-o", "name"});
  EXPECT_EQ(r.rc, 2) << Dump(r);
  r = Cli({"get", "cq", "-o", "name"});
  EXPECT_EQ(r.out, "clusterqueue/team-a\nclusterqueue/team-b\n") << Dump(r);
  r = Cli({"get", "flavors", "-o", "name"});
  EXPECT_EQ(r.out, "resourceflavor/a100\n") << Dump(r);
  // Times are RFC 3339 in JSON and YAML.
  std::regex rfc3339("\"creationTimestamp\": \"20[0-9]{2}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z\"");
  r = Cli({"get", "wl", "o-1", "-n", "team-a", "-o", "json"});
  EXPECT_TRUE(std::regex_search(r.out, rfc3339)) << r.out;
  r = Cli({"get", "wl", "-n", "team-a", "-o", "yaml"});
  EXPECT_TRUE(std::regex_search(r.out, std::regex("creationTimestamp: \"20[0-9-]+T[0-9:]+Z\""))) << r.out;
  EXPECT_NE(r.out.find("kind: \"WorkloadList\""), std::string::npos) << r.out;
  r = Cli({"events", "-n", "team-a", "-o", "json"});
  EXPECT_TRUE(std::regex_search(r.out, std::regex("\"time\":\"20[0-9-]+T[0-9:]+Z\""))) << r.out;
  // What is not supported is a clear usage error.
  r = Cli({"get", "wl", "-n", "team-a", "-o", "jsonpath={.items[?(@.x)]}"});
  EXPECT_EQ(r.rc, 2) << Dump(r);
  EXPECT_NE(r.err.find("filters [?(...)] are not supported"), std::string::npos) << Dump(r);
  r = Cli({"get", "wl", "-o", "go-template={{.x}}"});
  EXPECT_EQ(r.rc, 2) << Dump(r);
  EXPECT_NE(r.err.find("unsupported output format"), std::string::npos) << Dump(r);
}

TEST_F(CliTest, LabelSelectors) {
  Submit("team-a", "l-1", 0, {{"tier", "prod"}, {"owner", "ann"}});
  Submit("team-a", "l-2", 0, {{"tier", "dev"}});
  Submit("team-a", "l-3", 0);
  auto names = [&](const std::string& sel) {
    CliResult r = Cli({"get", "wl", "-n", "team-a", "-l", sel, "-o", "jsonpath={.items[*].metadata.name}"});
    EXPECT_EQ(r.rc, 0) << sel << ": " << Dump(r);
    return r.out;
  };
  EXPECT_EQ(names("tier=prod"), "l-1");
  EXPECT_EQ(names("tier!=prod"), "l-2 l-3");
  EXPECT_EQ(names("tier in (prod, dev)"), "l-1 l-2");
  EXPECT_EQ(names("tier notin (prod)"), "l-2 l-3");
  EXPECT_EQ(names("tier"), "l-1 l-2");
  EXPECT_EQ(names("!tier"), "l-3");
  EXPECT_EQ(names("tier,owner=ann"), "l-1");
  // An empty result says so on stderr, for every kind (no bare header).
  CliResult r = Cli({"get", "cq", "-l", "tier=prod"});
  EXPECT_EQ(r.rc, 0) << Dump(r);
  EXPECT_EQ(r.out, "") << Dump(r);
  EXPECT_NE(r.err.find("No clusterqueue found."), std::string::npos) << Dump(r);
  r = Cli({"get", "wl", "-n", "team-a", "-l", "tier in prod"});
  EXPECT_EQ(r.rc, 2) << Dump(r);
  EXPECT_NE(r.err.find("label selector"), std::string::npos) << Dump(r);
}

// squeue's REASON column by default, ages in tables; empty cells are "-".
TEST_F(CliTest, WorkloadTableHasReasonAndAge) {
  Submit("team-a", "fits", 1);
  Submit("team-a", "too-big", 8);
  ASSERT_TRUE(WaitFor(
      [&] { return d_->Phase("team-a", "fits") == "Admitted" || d_->Phase("team-a", "fits") == "Running"; },
      10000));
  std::string reason;
  ASSERT_TRUE(WaitFor(
      [&] {
        reason = d_->Get("/api/v1/namespaces/team-a/workloads/too-big")
                     .json()["status"]["pending"]
                     .value("reason", "");
        return !reason.empty() && reason != "NotYetTried";
      },
      10000));
  CliResult r = Cli({"get", "wl", "-n", "team-a"});
  EXPECT_EQ(r.rc, 0) << Dump(r);
  EXPECT_TRUE(std::regex_search(r.out, std::regex("NAME +QUEUE +PHASE +CLUSTERQUEUE +AGE +REASON\n")))
      << r.out;
  EXPECT_TRUE(
      std::regex_search(r.out, std::regex("too-big +default +Pending +team-a +[0-9]+s +" + reason + "\n")))
      << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("fits +default +(Admitted|Running) +team-a +[0-9]+s +-\n")))
      << r.out;
  r = Cli({"get", "wl", "-n", "team-a", "--no-headers"});
  EXPECT_EQ(r.out.find("NAME"), std::string::npos) << r.out;
}

// Contexts: flags override the context, which overrides the defaults; a
// token file readable by others is warned about.
TEST_F(CliTest, ConfigContexts) {
  std::string cfg = dir_ + "/xdg/artel/config";
  std::string tok = dir_ + "/team-a.token";
  WriteFile(tok, std::string(kTeamAToken) + "\n", 0600);
  Submit("team-a", "c-1", 0);
  std::map<std::string, std::string> env = {{"XDG_CONFIG_HOME", dir_ + "/xdg"}};
  CliResult r =
      Run({"config", "set-context", "dev", "--server", d_->url(), "--token-file", tok, "-n", "team-a"}, env);
  EXPECT_EQ(r.rc, 0) << Dump(r);
  EXPECT_NE(r.out.find("Context \"dev\" created"), std::string::npos) << Dump(r);
  struct stat st {};
  ASSERT_EQ(stat(cfg.c_str(), &st), 0) << "the file goes under $XDG_CONFIG_HOME/artel/config";
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  r = Run({"config", "set-context", "admin", "--server", d_->url(), "--token", kAdminToken}, env);
  EXPECT_EQ(r.rc, 0) << Dump(r);
  // The first context became the current one.
  r = Run({"get", "wl"}, env);
  EXPECT_EQ(r.rc, 0) << Dump(r);
  EXPECT_NE(r.out.find("c-1"), std::string::npos) << Dump(r);
  EXPECT_EQ(r.err, "") << "a 0600 token file gives no warning";
  r = Run({"config", "get-contexts"}, env);
  EXPECT_TRUE(std::regex_search(r.out, std::regex("\\* +dev +http://127.0.0.1:[0-9]+ +team-a +" + tok)))
      << r.out;
  r = Run({"config", "view"}, env);
  EXPECT_EQ(r.out.find(kAdminToken), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("REDACTED"), std::string::npos) << r.out;
  // --context and use-context switch; flags override the context.
  r = Run({"whoami", "--context", "admin"}, env);
  EXPECT_NE(r.out.find("role:       admin"), std::string::npos) << Dump(r);
  EXPECT_EQ(Run({"config", "use-context", "admin"}, env).rc, 0);
  r = Run({"whoami"}, env);
  EXPECT_NE(r.out.find("role:       admin"), std::string::npos) << Dump(r);
  r = Run({"whoami", "--token", kTeamBToken}, env);
  EXPECT_NE(r.out.find("user:       bob"), std::string::npos) << Dump(r);
  r = Run({"get", "wl", "--server", "http://127.0.0.1:1"}, env);
  EXPECT_EQ(r.rc, 3) << Dump(r);
  EXPECT_NE(
      r.err.find("cannot reach arteld at http://127.0.0.1:1: Connection refused (is arteld running there?"),
      std::string::npos)
      << Dump(r);
  // The environment sits between the flags and the context.
  env["ARTEL_SERVER"] = "http://127.0.0.1:1";
  EXPECT_EQ(Run({"whoami"}, env).rc, 3);
  EXPECT_EQ(Run({"whoami", "--server", d_->url()}, env).rc, 0);
  env.erase("ARTEL_SERVER");
  r = Run({"config", "use-context", "nope"}, env);
  EXPECT_EQ(r.rc, 4) << Dump(r);
  EXPECT_NE(r.err.find("it has dev, admin"), std::string::npos) << Dump(r);
  r = Run({"get", "wl", "--context", "nope"}, env);
  EXPECT_EQ(r.rc, 2) << Dump(r);
  EXPECT_NE(r.err.find("no context named nope"), std::string::npos) << Dump(r);
  // A token file others may read: used, with ssh's warning.
  chmod(tok.c_str(), 0644);
  r = Run({"get", "wl", "--context", "dev"}, env);
  EXPECT_EQ(r.rc, 0) << Dump(r);
  EXPECT_NE(r.err.find("warning: token file " + tok + " is readable by others (mode 0644)"),
            std::string::npos)
      << Dump(r);
  // ARTEL_CONFIG names another file; a malformed one is an error with its line.
  WriteFile(dir_ + "/bad", "contexts:\n  - name: x\n    sever: y\n");
  r = Run({"get", "wl"}, {{"ARTEL_CONFIG", dir_ + "/bad"}});
  EXPECT_EQ(r.rc, 2) << Dump(r);
  EXPECT_NE(r.err.find(dir_ + "/bad:3: contexts[0].sever: unknown field"), std::string::npos) << Dump(r);
}

// A tenant's token without -n acts in the tenant's first namespace (it
// used to be "default", where the tenant is refused); whoami tells a tenant
// nothing about other tenants.
TEST_F(CliTest, TenantDefaultsToItsFirstNamespace) {
  Submit("team-a", "mine", 0);
  CliResult r = Cli({"get", "wl"}, kTeamAToken);
  EXPECT_EQ(r.rc, 0) << Dump(r);
  EXPECT_NE(r.out.find("mine"), std::string::npos) << Dump(r);
  r = Cli({"run", "-q", "default", "--name", "ran", "--", "true"}, kTeamAToken);
  EXPECT_EQ(r.rc, 0) << Dump(r);
  EXPECT_NE(r.out.find("workload/team-a/ran submitted"), std::string::npos) << Dump(r);
  // An admin has no namespaces of its own: "default", as before.
  r = Cli({"get", "wl"});
  EXPECT_NE(r.err.find("in namespace default"), std::string::npos) << Dump(r);
  // -n still wins (and is refused outside the tenant's namespaces).
  EXPECT_EQ(Cli({"get", "wl", "-n", "team-b"}, kTeamAToken).rc, 5);
  r = Cli({"whoami", "-o", "json"}, kTeamAToken);
  EXPECT_EQ(r.rc, 0) << Dump(r);
  Json who = Json::parse(r.out, nullptr, false);
  EXPECT_EQ(who["namespaces"], Json({"team-a"})) << r.out;
  EXPECT_EQ(r.out.find("team-b"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("bob"), std::string::npos) << r.out;
  auto raw = d_->Get("/api/v1/whoami", kTeamAToken);
  EXPECT_EQ(raw.body.find("team-b"), std::string::npos) << raw.body;
}

// `get wl -w`: the list, then one line per change, until interrupted.
TEST_F(CliTest, GetWatchPrintsEachChange) {
  Submit("team-a", "w-1", 1);
  std::string out = dir_ + "/watch.out";
  std::vector<std::string> args = {"/usr/bin/env", "-i", "HOME=" + dir_, "ARTEL_SERVER=" + d_->url(),
                                   "ARTEL_TOKEN=" + std::string(kTeamAToken)};
  for (const char* keep : {"ASAN_OPTIONS", "LSAN_OPTIONS", "UBSAN_OPTIONS"}) {
    if (const char* v = std::getenv(keep)) args.push_back(std::string(keep) + "=" + v);
  }
  for (const char* a : {ARTEL_BIN, "get", "wl", "-w"}) args.push_back(a);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = -1;
  ASSERT_EQ(posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ), 0);
  posix_spawn_file_actions_destroy(&fa);
  auto has = [&](const std::string& re) {
    return WaitFor([&] { return std::regex_search(ReadFile(out), std::regex(re)); }, 10000);
  };
  EXPECT_TRUE(has("NAME +QUEUE +PHASE +CLUSTERQUEUE +AGE +REASON\nw-1 +default")) << ReadFile(out);
  Submit("team-a", "w-2", 1);
  EXPECT_TRUE(has("\nw-2 +default +(Pending|Admitted|Running) ")) << ReadFile(out);
  auto r = d_->Post("/api/v1/namespaces/team-a/workloads/w-1/cancel", "");
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(has("\nw-1 +default +(Terminating|Cancelled) ")) << ReadFile(out);
  kill(pid, SIGTERM);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_EQ(Cli({"get", "cq", "-w"}).rc, 2);
}

// sinfo-like nodes (product, flavors, allocation, MIG slices) and top per
// flavor.
TEST_F(CliTest, NodesAndTopPerFlavor) {
  Submit("team-a", "t-1", 3);  // borrows one of team-b's GPUs
  ASSERT_TRUE(WaitFor(
      [&] { return d_->Phase("team-a", "t-1") == "Admitted" || d_->Phase("team-a", "t-1") == "Running"; },
      10000));
  CliResult r = Cli({"get", "nodes"});
  EXPECT_EQ(r.rc, 0) << Dump(r);
  EXPECT_TRUE(
      std::regex_search(r.out, std::regex("NAME +PRODUCT +FLAVORS +GPUS +ALLOC +IDLE +MIG-SLICES +STATE\n")))
      << r.out;
  EXPECT_NE(r.out.find("a100"), std::string::npos) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex(" 0/7 +"))) << r.out;  // the MIG GPU's slices
  // A tenant does not see the flavors' node labels: "?".
  r = Cli({"get", "nodes"}, kTeamAToken);
  EXPECT_EQ(r.rc, 0) << Dump(r);
  r = Cli({"top"});
  EXPECT_EQ(r.rc, 0) << Dump(r);
  EXPECT_TRUE(std::regex_search(r.out, std::regex("cq/team-a +a100 +2 +3 +1 "))) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("GPU-FLAVOR +NOMINAL +USED +BORROWED +IDLE +USED/NOMINAL")))
      << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("\na100 +4 +3 +1 +1 +\\["))) << r.out;
  r = Cli({"top", "-o", "json"});
  Json top = Json::parse(r.out, nullptr, false);
  ASSERT_TRUE(top.is_object()) << r.out;
  EXPECT_EQ(top["flavors"][0]["used"], "3") << r.out;
}

// `artel completion bash`, sourced in a real bash: verbs, flags and names
// asked of arteld with the global flags already typed.
TEST_F(CliTest, BashCompletion) {
  Submit("team-a", "w-alpha", 0);
  Submit("team-a", "w-beta", 0);
  CliResult r = Cli({"completion", "bash"});
  ASSERT_EQ(r.rc, 0) << Dump(r);
  WriteFile(dir_ + "/artel.bash", r.out);
  std::string bin_dir = std::filesystem::path(ARTEL_BIN).parent_path().string();
  auto complete = [&](const std::string& words, int cword) {
    std::string script = "source " + dir_ + "/artel.bash; COMP_WORDS=(" + words +
                         "); COMP_CWORD=" + std::to_string(cword) +
                         "; _artel; printf '%s\\n' \"${COMPREPLY[@]}\" | sort";
    std::string out, err;
    std::vector<std::string> argv = {"/usr/bin/env",
                                     "-i",
                                     "HOME=" + dir_,
                                     "PATH=" + bin_dir + ":/usr/bin:/bin",
                                     "ARTEL_SERVER=" + d_->url(),
                                     "ARTEL_TOKEN=" + std::string(kAdminToken)};
    for (const char* keep : {"ASAN_OPTIONS", "LSAN_OPTIONS", "UBSAN_OPTIONS"}) {
      if (const char* v = std::getenv(keep)) argv.push_back(std::string(keep) + "=" + v);
    }
    for (const char* a : {"/bin/bash", "--norc", "-c"}) argv.push_back(a);
    argv.push_back(script);
    int rc = RunCommand(argv, {}, &out, &err);
    EXPECT_EQ(rc, 0) << words << ": " << err;
    return out;
  };
  EXPECT_EQ(complete("artel de", 1), "delete\ndescribe\n");
  EXPECT_EQ(complete("artel get c", 2), "clusterqueues\ncohorts\ncq\n");
  EXPECT_EQ(complete("artel get wl --sel", 3), "--selector\n");
  EXPECT_EQ(complete("artel get wl --names", 3), "--namespace\n");
  EXPECT_EQ(complete("artel -n team-a get wl w-", 5), "w-alpha\nw-beta\n");
  EXPECT_EQ(complete("artel get wl w- -n team-a", 3), "w-alpha\nw-beta\n");
  EXPECT_EQ(complete("artel logs -n team-a w-b", 4), "w-beta\n");
  EXPECT_EQ(complete("artel get cq ''", 3), "team-a\nteam-b\n");
  EXPECT_EQ(complete("artel get flavors ''", 3), "a100\n");
  EXPECT_EQ(complete("artel run -q ''", 3), "team-a/default\nteam-b/default\n");
  EXPECT_EQ(complete("artel get wl -o j", 4), "json\njsonpath=\n");
  EXPECT_EQ(complete("artel get wl -n ''", 4), "team-a\nteam-b\n");
  r = Cli({"completion", "zsh"});
  EXPECT_EQ(r.rc, 0) << Dump(r);
  EXPECT_NE(r.out.find("bashcompinit"), std::string::npos);
}

// The build puts kubectl-artel next to artel (a symlink): found on the PATH
// by its name, as kubectl finds plugins, it is the same client, and its help
// names itself `kubectl artel`.
TEST_F(CliTest, KubectlPluginIsTheSameBinary) {
  std::filesystem::path bin = std::filesystem::path(ARTEL_BIN).parent_path();
  ASSERT_TRUE(std::filesystem::is_symlink(bin / "kubectl-artel")) << bin;
  Submit("team-a", "plugged", 1);
  auto run = [&](std::vector<std::string> args) {
    std::vector<std::string> argv = {"/usr/bin/env",
                                     "-i",
                                     "HOME=" + dir_,
                                     "PATH=" + bin.string() + ":/usr/bin:/bin",
                                     "ARTEL_SERVER=" + d_->url(),
                                     "ARTEL_TOKEN=" + std::string(kAdminToken)};
    for (const char* keep : {"ASAN_OPTIONS", "LSAN_OPTIONS", "UBSAN_OPTIONS"}) {
      if (const char* v = std::getenv(keep)) argv.push_back(std::string(keep) + "=" + v);
    }
    argv.push_back("kubectl-artel");
    argv.insert(argv.end(), args.begin(), args.end());
    CliResult r;
    r.rc = RunCommand(argv, {}, &r.out, &r.err);
    return r;
  };
  CliResult r = run({"get", "wl", "-n", "team-a", "-o", "name"});
  EXPECT_EQ(r.rc, 0) << Dump(r);
  EXPECT_NE(r.out.find("plugged"), std::string::npos) << Dump(r);
  r = run({"--help"});
  EXPECT_EQ(r.rc, 0) << Dump(r);
  EXPECT_NE(r.out.find("kubectl artel"), std::string::npos) << Dump(r);
  // Under its own name the help says artel, not kubectl.
  r = Cli({"--help"});
  EXPECT_EQ(r.out.find("kubectl artel"), std::string::npos) << Dump(r);
}

// The client's own HTTP/1.1 and TLS (cli/http.h) against arteld serving
// HTTPS: a CA bundle, the system's CAs (which do not know this server), the
// host name check, and --insecure-skip-tls-verify; requests with and without
// a body.
TEST(CliTlsTest, VerifiesTheServerAndSpeaksThroughTls) {
  const std::string dir = TempDir("cli-tls");
  std::string out, err;
  // A self-signed certificate for the IP address 127.0.0.1 only.
  ASSERT_EQ(RunCommand({"/usr/bin/openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
                        dir + "/key.pem", "-out", dir + "/cert.pem", "-days", "2", "-subj",
                        "/CN=artel-cli-test", "-addext", "subjectAltName=IP:127.0.0.1"},
                       {}, &out, &err),
            0)
      << "openssl (scripts/install-deps.sh installs it): " << err;
  chmod((dir + "/key.pem").c_str(), 0600);
  WriteFile(dir + "/tokens.yaml", kTokensYaml);
  WriteFile(dir + "/teams.yaml", kTwoTeamsManifests, 0644);
  Arteld d(dir);
  ASSERT_TRUE(d.Start({"--tokens", dir + "/tokens.yaml", "--fake-gpus", "2xA100-80GB", "--tls-cert",
                       dir + "/cert.pem", "--tls-key", dir + "/key.pem", "--stop-workloads-on-exit"},
                      &err))
      << err;
  ASSERT_EQ(d.url().rfind("https://127.0.0.1:", 0), 0u) << d.url();
  auto cli = [&](const std::string& server, std::vector<std::string> args) {
    std::vector<std::string> argv = {"/usr/bin/env",
                                     "-i",
                                     "HOME=" + dir,
                                     "PATH=/usr/bin:/bin",
                                     "ARTEL_SERVER=" + server,
                                     "ARTEL_TOKEN=" + std::string(kAdminToken)};
    for (const char* keep : {"ASAN_OPTIONS", "LSAN_OPTIONS", "UBSAN_OPTIONS"}) {
      if (const char* v = std::getenv(keep)) argv.push_back(std::string(keep) + "=" + v);
    }
    argv.push_back(ARTEL_BIN);
    argv.insert(argv.end(), args.begin(), args.end());
    CliResult r;
    r.rc = RunCommand(argv, {}, &r.out, &r.err);
    return r;
  };
  const std::string ca = "--cacert=" + dir + "/cert.pem";
  // With the CA bundle: a GET, then POSTs with bodies.
  CliResult r = cli(d.url(), {"whoami", ca});
  EXPECT_EQ(r.rc, 0) << Dump(r);
  EXPECT_NE(r.out.find("role:       admin"), std::string::npos) << Dump(r);
  r = cli(d.url(), {"apply", "-f", dir + "/teams.yaml", ca});
  EXPECT_EQ(r.rc, 0) << Dump(r);
  r = cli(d.url(), {"run", "-q", "team-a/default", "--gpus", "1", "--name", "over-tls", ca, "--", "true"});
  EXPECT_EQ(r.rc, 0) << Dump(r);
  r = cli(d.url(), {"get", "wl", "-n", "team-a", "-o", "name", ca});
  EXPECT_EQ(r.rc, 0) << Dump(r);
  EXPECT_NE(r.out.find("over-tls"), std::string::npos) << Dump(r);
  // Without it the system's CAs do not know the certificate.
  r = cli(d.url(), {"whoami"});
  EXPECT_EQ(r.rc, 3) << Dump(r);
  EXPECT_NE(r.err.find("TLS handshake failed"), std::string::npos) << Dump(r);
  EXPECT_NE(r.err.find("--cacert"), std::string::npos) << Dump(r);
  // The certificate names 127.0.0.1, not localhost: the name check refuses.
  const std::string by_name = "https://localhost:" + std::to_string(d.port());
  r = cli(by_name, {"whoami", ca});
  EXPECT_EQ(r.rc, 3) << Dump(r);
  EXPECT_NE(r.err.find("TLS handshake failed"), std::string::npos) << Dump(r);
  // Unless verification is off.
  r = cli(by_name, {"whoami", "--insecure-skip-tls-verify"});
  EXPECT_EQ(r.rc, 0) << Dump(r);
  // A CA bundle that is not one is named.
  r = cli(d.url(), {"whoami", "--cacert=" + dir + "/teams.yaml"});
  EXPECT_EQ(r.rc, 3) << Dump(r);
  EXPECT_NE(r.err.find("cannot read the CA bundle " + dir + "/teams.yaml"), std::string::npos) << Dump(r);
  // Plain HTTP to the TLS port is not an answer.
  r = cli("http://127.0.0.1:" + std::to_string(d.port()), {"whoami"});
  EXPECT_EQ(r.rc, 3) << Dump(r);
  EXPECT_NE(r.err.find("cannot reach arteld"), std::string::npos) << Dump(r);
  EXPECT_TRUE(d.Stop()) << d.log();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace artel::testing
