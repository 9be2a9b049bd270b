// Untrusted YAML and JSON bodies against the real arteld and the artel CLI
// (issue 10 section 5, audit D3, D9, D13, D15): a billion-laughs alias bomb
// is refused with 400 quickly and without growing the daemon's memory, both
// as a workload and through apply; invalid UTF-8 is a 400 naming the field,
// and the refused name stays free; `artel apply -f` on the bomb exits with a
// clear error instead of dying of std::bad_alloc.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>

#include "../server/harness.h"

namespace artel::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// About 700 bytes: level k is a list of 9 aliases of level k-1, so level 8
// stands for 9^8 = 43 million nodes.
std::string Bomb(const std::string& head, const std::string& indent, int levels) {
  std::string t = head + indent + "a0: &a0 \"lol\"\n";
  for (int l = 1; l <= levels; ++l) {
    t += indent + "a" + std::to_string(l) + ": &a" + std::to_string(l) + " [";
    for (int i = 0; i < 9; ++i) t += (i ? ",*a" : "*a") + std::to_string(l - 1);
    t += "]\n";
  }
  return t;
}

std::string BombWorkload(const std::string& name, int levels) {
  return Bomb("apiVersion: artel.dev/v1alpha1\nkind: Workload\nmetadata:\n  name: " + name +
                  "\n  namespace: team-a\n  annotations:\n",
              "    ", levels) +
         "spec:\n  queueName: default\n  podSets:\n  - name: main\n    count: 1\n";
}

// Peak resident memory (VmHWM) of the arteld serving `dir`, in KiB; -1 when
// it cannot be found. The harness gives each daemon its own data dir, which
// is on its command line.
long PeakRssKib(const std::string& dir) {
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    std::string pid = e.path().filename().string();
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmdline = ReadFile(e.path().string() + "/cmdline");
    if (cmdline.find("arteld") == std::string::npos || cmdline.find(dir) == std::string::npos) continue;
    std::ifstream status(e.path().string() + "/status");
    std::string line;
    while (std::getline(status, line)) {
      if (line.starts_with("VmHWM:")) return std::stol(line.substr(6));
    }
  }
  return -1;
}

class UntrustedYamlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = TempDir("untrusted-yaml");
    WriteFile(dir_ + "/cluster.yaml", kTwoTeamsManifests);
    WriteFile(dir_ + "/tokens.yaml", kTokensYaml);
    d_ = std::make_unique<Arteld>(dir_);
    std::string err;
    ASSERT_TRUE(d_->Start(
        {"--fake-gpus", "2xA100-80GB", "--tokens", dir_ + "/tokens.yaml", "-m", dir_ + "/cluster.yaml"},
        &err))
        << err;
  }
  void TearDown() override {
    EXPECT_TRUE(d_->Stop()) << d_->log();
    std::filesystem::remove_all(dir_);
  }

  std::string dir_;
  std::unique_ptr<Arteld> d_;
};

TEST_F(UntrustedYamlTest, AliasBombIsRefusedQuicklyWithBoundedMemory) {
  long before = PeakRssKib(dir_);
  ASSERT_GT(before, 0);
  for (int levels : {8, 10}) {
    std::string body = BombWorkload("bomb", levels);
    EXPECT_LT(body.size(), 900u);
    auto start = std::chrono::steady_clock::now();
    HttpResult r = d_->Post("/api/v1/namespaces/team-a/workloads", body, kTeamAToken, "application/yaml");
    auto took = std::chrono::steady_clock::now() - start;
    EXPECT_EQ(r.status, 400) << r.body;
    EXPECT_THAT(r.json().value("field", ""), StartsWith("metadata.annotations.a")) << r.body;
    EXPECT_THAT(r.json().value("message", ""), HasSubstr("more than 100000 nodes (YAML aliases")) << r.body;
    EXPECT_LT(took, std::chrono::seconds(3)) << levels << " levels";
  }
  // Through apply (a tenant's LocalQueue with the bomb in its labels).
  std::string lq = Bomb(
      "apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata:\n  name: lq-bomb\n  namespace: "
      "team-a\n"
      "  labels:\n",
      "    ", 9);
  lq += "spec:\n  clusterQueue: team-a\n";
  HttpResult a = d_->Post("/api/v1/apply", lq, kTeamAToken, "application/yaml");
  EXPECT_EQ(a.status, 400) << a.body;
  EXPECT_THAT(a.body, HasSubstr("more than 100000 nodes")) << a.body;
  long after = PeakRssKib(dir_);
  // The bomb's 43 million nodes would take gigabytes; refusing it takes
  // nothing measurable. 64 MiB leaves room for the sanitizer build's noise.
  EXPECT_LT(after - before, 64 * 1024) << "peak RSS grew from " << before << " to " << after << " KiB";
  EXPECT_EQ(d_->Get("/healthz").status, 200);
  EXPECT_EQ(d_->Phase("team-a", "bomb"), "");
}

TEST_F(UntrustedYamlTest, InvalidUtf8Is400WithTheFieldAndTheNameStaysFree) {
  std::string head =
      "apiVersion: artel.dev/v1alpha1\nkind: Workload\nmetadata:\n  name: u8b\n  namespace: team-a\nspec:\n"
      "  queueName: default\n  podSets:\n  - name: main\n    count: 1\n";
  HttpResult bad = d_->Post("/api/v1/namespaces/team-a/workloads", head + "    command: [echo, \"\xff\"]\n",
                            kTeamAToken, "application/yaml");
  EXPECT_EQ(bad.status, 400) << bad.body;
  EXPECT_EQ(bad.json().value("field", ""), "spec.podSets[0].command[1]") << bad.body;
  EXPECT_THAT(bad.json().value("message", ""), HasSubstr("not valid UTF-8"));
  // JSON with the same byte.
  HttpResult bad_json =
      d_->Post("/api/v1/namespaces/team-a/workloads",
               "{\"metadata\":{\"name\":\"u8b\",\"labels\":{\"x\":\"\xff\"}}}", kTeamAToken);
  EXPECT_EQ(bad_json.status, 400) << bad_json.body;
  EXPECT_EQ(bad_json.json().value("field", ""), "metadata.labels.x") << bad_json.body;
  // The refused name is free: a valid resubmission is created at once.
  EXPECT_EQ(d_->Get("/api/v1/namespaces/team-a/workloads/u8b", kTeamAToken).status, 404);
  HttpResult good = d_->Post("/api/v1/namespaces/team-a/workloads", head + "    command: [echo, ok]\n",
                             kTeamAToken, "application/yaml");
  EXPECT_EQ(good.status, 201) << good.body;
  // Apply: a tenant's LocalQueue label.
  HttpResult apply =
      d_->Post("/api/v1/apply",
               "apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata:\n  name: lq8\n"
               "  namespace: team-a\n  labels: {team: \"\xfe\"}\nspec:\n  clusterQueue: team-a\n",
               kTeamAToken, "application/yaml");
  EXPECT_EQ(apply.status, 400) << apply.body;
  EXPECT_THAT(apply.body, HasSubstr("metadata.labels.team")) << apply.body;
  EXPECT_THAT(apply.body, HasSubstr("not valid UTF-8")) << apply.body;
}

TEST_F(UntrustedYamlTest, SubmitRefusesFractionalGpusEmptyProgramsAndNul) {
  struct Case {
    std::string extra, field;
  };
  std::vector<Case> cases = {
      {"    requests: {nvidia.com/gpu: 500m}\n", "spec.podSets[0].requests.nvidia.com/gpu"},
      {"    requests: {nvidia.com/gpu: \"1.5\"}\n", "spec.podSets[0].requests.nvidia.com/gpu"},
      {"    requests: {nvidia.com/gpu: \"+1\"}\n", "spec.podSets[0].requests.nvidia.com/gpu"},
      {"    requests: {nvidia.com/gpu: \" 1\"}\n", "spec.podSets[0].requests.nvidia.com/gpu"},
      {"    command: [\"\"]\n", "spec.podSets[0].command[0]"},
      {"    command: [echo, \"a\\0b\"]\n", "spec.podSets[0].command[1]"},
  };
  for (const auto& c : cases) {
    HttpResult r =
        d_->Post("/api/v1/namespaces/team-a/workloads",
                 "apiVersion: artel.dev/v1alpha1\nkind: Workload\nmetadata: {name: v1, namespace: team-a}\n"
                 "spec:\n  queueName: default\n  podSets:\n  - name: main\n" +
                     c.extra,
                 kTeamAToken, "application/yaml");
    EXPECT_EQ(r.status, 400) << c.extra << r.body;
    EXPECT_EQ(r.json().value("field", ""), c.field) << c.extra << r.body;
  }
  EXPECT_EQ(d_->Phase("team-a", "v1"), "");
}

TEST_F(UntrustedYamlTest, CliApplyOfABombExitsWithAClearError) {
  std::string file = dir_ + "/bomb.yaml";
  WriteFile(file, BombWorkload("cli-bomb", 9));
  std::string out, err;
  auto start = std::chrono::steady_clock::now();
  int rc =
      RunCommand({ARTEL_BIN, "apply", "-f", file},
                 {{"ARTEL_SERVER", d_->url()}, {"ARTEL_TOKEN", kTeamAToken}, {"HOME", dir_}}, &out, &err);
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_GT(rc, 0) << out << err;
  EXPECT_LT(rc, 128) << "artel died of a signal: " << out << err;
  EXPECT_THAT(err, HasSubstr("more than 100000 nodes")) << out << err;
  EXPECT_THAT(err, HasSubstr("metadata.annotations")) << out << err;
  EXPECT_THAT(out + err, ::testing::Not(HasSubstr("bad_alloc")));
  EXPECT_LT(took, std::chrono::seconds(10));
  EXPECT_EQ(d_->Phase("team-a", "cli-bomb"), "");
}

TEST_F(UntrustedYamlTest, CliRunWithAnArgumentThatIsNotUtf8ExitsWithAClearError) {
  std::string out, err;
  int rc =
      RunCommand({ARTEL_BIN, "run", "--queue", "default", "--", "echo", "\xff"},
                 {{"ARTEL_SERVER", d_->url()}, {"ARTEL_TOKEN", kTeamAToken}, {"HOME", dir_}}, &out, &err);
  EXPECT_EQ(rc, 1) << out << err;
  EXPECT_THAT(err, HasSubstr("not valid UTF-8")) << out << err;
}

}  // namespace
}  // namespace artel::testing
