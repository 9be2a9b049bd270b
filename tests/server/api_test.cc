// The HTTP API: the authorization matrix over every endpoint x role x
// namespace, bad input that must change nothing, limits, and watch.

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "harness.h"

namespace artel::testing {
namespace {

class ApiTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(TempDir("api"));
    WriteFile(*dir_ + "/cluster.yaml", kTwoTeamsManifests);
    WriteFile(*dir_ + "/tokens.yaml", kTokensYaml);
    d_ = new Arteld(*dir_);
    std::string err;
    ASSERT_TRUE(d_->Start({"--fake-gpus", "2xA100-80GB", "--tokens", *dir_ + "/tokens.yaml", "-m",
                           *dir_ + "/cluster.yaml", "--max-body-bytes", "16384"},
                          &err))
        << err;
  }
  static void TearDownTestSuite() {
    EXPECT_TRUE(d_->Stop());
    delete d_;
    std::filesystem::remove_all(*dir_);
    delete dir_;
  }
  static uint64_t JournalSeq() {
    std::string m = d_->Get("/metrics").body;
    auto pos = m.find("\nartel_journal_last_seq ");
    return pos == std::string::npos ? 0 : std::stoull(m.substr(pos + 24));
  }
  static size_t WorkloadCount() { return d_->Get("/api/v1/workloads").json()["items"].size(); }

  static std::string* dir_;
  static Arteld* d_;
};
std::string* ApiTest::dir_ = nullptr;
Arteld* ApiTest::d_ = nullptr;

struct Who {
  const char* name;
  std::string token;
};

TEST_F(ApiTest, AuthorizationMatrix) {
  ASSERT_EQ(d_->Post("/api/v1/workloads", Workload("team-a", "wa", "default", 0).dump()).status, 201);
  ASSERT_EQ(d_->Post("/api/v1/workloads", Workload("team-b", "wb", "default", 0).dump()).status, 201);
  const std::vector<Who> who = {{"admin", kAdminToken},
                                {"tenant-own", kTeamAToken},
                                {"tenant-other", kTeamBToken},
                                {"no-token", ""},
                                {"bad-token", "not-a-real-token"}};
  // Expected statuses, in the order of `who`. Namespace-scoped paths use team-a.
  struct Case {
    std::string method, path;
    std::vector<int> expect;
    std::string body = "";
  };
  int n = 0;
  auto fresh = [&](const std::string& ns) {
    return Workload(ns, "m" + std::to_string(n++), "default", 0).dump();
  };
  const std::string lq_yaml =
      "apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {name: extra, namespace: "
      "team-a}\nspec: {clusterQueue: team-a}\n";
  const std::string rf_yaml =
      "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: extra-flavor}\n";
  std::vector<Case> cases = {
      {"GET", "/healthz", {200, 200, 200, 200, 200}},
      {"GET", "/readyz", {200, 200, 200, 200, 200}},
      {"GET", "/metrics", {200, 403, 403, 401, 401}},  // admin or the metrics role
      {"GET", "/api/v1/whoami", {200, 200, 200, 401, 401}},
      {"GET", "/api/v1/config", {200, 200, 200, 401, 401}},
      {"GET", "/api/v1/workloads", {200, 200, 200, 401, 401}},
      {"GET", "/api/v1/workloads?namespace=team-a", {200, 200, 403, 401, 401}},
      {"GET", "/api/v1/namespaces/team-a/workloads", {200, 200, 403, 401, 401}},
      {"GET", "/api/v1/namespaces/team-a/workloads/wa", {200, 200, 403, 401, 401}},
      {"GET", "/api/v1/namespaces/team-a/workloads/wa/why", {200, 200, 403, 401, 401}},
      {"GET", "/api/v1/namespaces/team-a/workloads/wa/logs", {200, 200, 403, 401, 401}},
      {"GET", "/api/v1/namespaces/team-a/workloads/missing", {404, 404, 403, 401, 401}},
      {"POST", "/api/v1/workloads", {201, 201, 403, 401, 401}, "team-a"},
      {"POST", "/api/v1/namespaces/team-a/workloads", {201, 201, 403, 401, 401}, "team-a"},
      {"POST", "/api/v1/namespaces/team-a/workloads/wa/cancel", {200, 409, 403, 401, 401}},
      {"DELETE", "/api/v1/namespaces/team-a/workloads/wa", {409, 409, 403, 401, 401}},
      {"POST", "/api/v1/apply", {200, 200, 403, 401, 401}, lq_yaml},
      {"POST", "/api/v1/apply", {200, 403, 403, 401, 401}, rf_yaml},
      {"GET", "/api/v1/clusterqueues", {200, 200, 200, 401, 401}},
      {"GET", "/api/v1/clusterqueues/team-a", {200, 200, 200, 401, 401}},
      {"GET", "/api/v1/cohorts", {200, 200, 200, 401, 401}},
      {"GET", "/api/v1/localqueues", {200, 200, 200, 401, 401}},
      {"GET", "/api/v1/localqueues?namespace=team-a", {200, 200, 403, 401, 401}},
      {"GET", "/api/v1/namespaces/team-a/localqueues", {200, 200, 403, 401, 401}},
      {"GET", "/api/v1/nodes", {200, 200, 200, 401, 401}},
      {"GET", "/api/v1/gpus", {200, 200, 200, 401, 401}},
      {"GET", "/api/v1/watch?namespace=team-a&timeout=0", {-1, -1, 403, 401, 401}},
  };
  for (const auto& c : cases) {
    for (size_t i = 0; i < who.size(); ++i) {
      if (c.expect[i] == -1) continue;  // a stream: covered by WatchStreamsEvents
      HttpResult r;
      if (c.method == "GET") {
        r = d_->Get(c.path, who[i].token);
      } else if (c.method == "DELETE") {
        r = d_->Delete(c.path, who[i].token);
      } else {
        std::string body = c.body == "team-a" ? fresh("team-a") : c.body;
        r = d_->Post(c.path, body, who[i].token,
                     c.body.find("kind:") != std::string::npos ? "application/yaml" : "application/json");
      }
      EXPECT_EQ(r.status, c.expect[i])
          << c.method << " " << c.path << " as " << who[i].name << ": " << r.body;
      if (r.status >= 400 && c.path.rfind("/api/", 0) == 0) {
        Json j = r.json();
        EXPECT_TRUE(j.is_object() && j.contains("code") && j.contains("message")) << r.body;
      }
    }
  }
  // Tenants see only their namespaces in lists.
  Json wls = d_->Get("/api/v1/workloads", kTeamBToken).json()["items"];
  for (const auto& w : wls) {
    EXPECT_EQ(w["metadata"].value("namespace", ""), "team-b");
  }
  Json lqs = d_->Get("/api/v1/localqueues", kTeamAToken).json()["items"];
  for (const auto& q : lqs) {
    EXPECT_EQ(q.value("namespace", ""), "team-a");
  }
  EXPECT_EQ(d_->Get("/api/v1/config", kTeamAToken).json().count("manifests"), 0u);
  // Tokens never reach the log.
  EXPECT_EQ(d_->log().find(kTeamAToken), std::string::npos);
}

TEST_F(ApiTest, BadInputIsRejectedAndChangesNothing) {
  const uint64_t start = JournalSeq();
  ASSERT_EQ(d_->Post("/api/v1/workloads", Workload("team-a", "dup", "default", 0).dump()).status, 201);
  // Two records follow: the submission, journaled before the answer, and the
  // admission, journaled after the engine decides it (the phase can read
  // "Admitted" before that). Wait for both, so that neither is counted
  // against the rejected requests below.
  ASSERT_TRUE(
      WaitFor([&] { return d_->Phase("team-a", "dup") == "Admitted" && JournalSeq() >= start + 2; }, 5000));
  size_t before = WorkloadCount();
  uint64_t seq = JournalSeq();
  ASSERT_GT(seq, 0u);
  Json unknown = Workload("team-a", "u1", "default", 1);
  unknown["spec"]["podSets"][0]["gpus"] = 1;
  Json badq = Workload("team-a", "q1", "nope", 1);
  struct Case {
    const char* what;
    std::string body;
    int status;
    std::string code, field;
  };
  std::vector<Case> cases = {
      {"malformed JSON", "{\"metadata\": {", 400, "InvalidArgument", ""},
      {"not an object", "[1,2,3]", 400, "InvalidArgument", ""},
      {"unknown field", unknown.dump(), 400, "InvalidArgument", "spec.podSets[0].gpus"},
      {"oversized body", std::string(20000, ' ') + Workload("team-a", "big", "default", 1).dump(), 413,
       "PayloadTooLarge", ""},
      {"unknown queue", badq.dump(), 404, "NotFound", "spec.queueName"},
      {"forbidden namespace", Workload("team-b", "f1", "default", 1).dump(), 403, "PermissionDenied", ""},
      {"duplicate", Workload("team-a", "dup", "default", 0).dump(), 409, "AlreadyExists", ""},
      {"bad name", Workload("team-a", "Bad_Name", "default", 0).dump(), 400, "InvalidArgument",
       "metadata.name"},
      {"deep nesting", std::string(5000, '[') + std::string(5000, ']'), 400, "InvalidArgument", ""},
      {"negative quantity", Workload("team-a", "neg", "default", -1).dump(), 400, "InvalidArgument", ""},
  };
  for (const auto& c : cases) {
    auto r = d_->Post("/api/v1/workloads", c.body, kTeamAToken);
    EXPECT_EQ(r.status, c.status) << c.what << ": " << r.body;
    Json j = r.json();
    EXPECT_EQ(j.value("code", ""), c.code) << c.what << ": " << r.body;
    if (!c.field.empty()) {
      EXPECT_EQ(j.value("field", ""), c.field) << c.what;
    }
  }
  EXPECT_EQ(d_->Post("/api/v1/apply", "kind: ClusterQueue\nmetadata: {name: x}\nspec: {bogus: 1}\n").status,
            400);
  EXPECT_EQ(d_->Get("/api/v1/no-such-endpoint").status, 404);
  EXPECT_EQ(WorkloadCount(), before);
  EXPECT_EQ(JournalSeq(), seq) << "a rejected request reached the journal";
}

// POST /api/v1/workloads:batch answers each item as POST /api/v1/workloads
// would, in order; a malformed batch gets 400 and changes nothing.
TEST_F(ApiTest, BatchAnswersPerItemAndBadBatchChangesNothing) {
  Json job = Json::parse(R"({"apiVersion": "batch/v1", "kind": "Job",
      "metadata": {"generateName": "bj-", "namespace": "team-a", "labels": {"kueue.x-k8s.io/queue-name": "default"}},
      "spec": {"template": {"spec": {"containers": [{"name": "c", "command": ["true"]}]}}}})");
  Json items = Json::array({Workload("team-a", "batch-1", "default", 0, {"true"}), job,
                            Workload("team-b", "batch-2", "default", 0),  // not team-a's namespace
                            Workload("team-a", "batch-1", "default", 0),  // taken by item 0
                            Workload("team-a", "batch-3", "nope", 0)});   // no such LocalQueue
  auto r = d_->Post("/api/v1/workloads:batch", Json{{"items", items}}.dump(), kTeamAToken);
  ASSERT_EQ(r.status, 200) << r.body;
  Json a = r.json()["items"];
  ASSERT_EQ(a.size(), 5u) << r.body;
  EXPECT_EQ(a[0].value("status", 0), 201);
  EXPECT_EQ(a[0]["object"]["metadata"].value("name", ""), "batch-1");
  EXPECT_EQ(a[1].value("status", 0), 201);
  std::string generated = a[1]["object"]["metadata"].value("name", "");
  EXPECT_EQ(generated.rfind("bj-", 0), 0u) << generated;
  EXPECT_EQ(a[2].value("status", 0), 403);
  EXPECT_EQ(a[2]["error"].value("code", ""), "PermissionDenied");
  EXPECT_EQ(a[3].value("status", 0), 409);
  EXPECT_EQ(a[4].value("status", 0), 404);
  EXPECT_EQ(a[4]["error"].value("field", ""), "spec.queueName");
  EXPECT_EQ(d_->Phase("team-b", "batch-2"), "");
  EXPECT_EQ(d_->Phase("team-a", "batch-3"), "");
  ASSERT_TRUE(WaitFor([&] { return d_->Phase("team-a", "batch-1") == "Succeeded"; }, 10000)) << d_->log();
  ASSERT_TRUE(WaitFor([&] { return d_->Phase("team-a", generated) == "Succeeded"; }, 10000)) << d_->log();

  size_t before = WorkloadCount();
  uint64_t seq = JournalSeq();
  std::string too_many = "{\"items\": [0";
  for (int i = 0; i < 1000; ++i) too_many += ",0";  // 1,001 items
  too_many += "]}";
  for (const std::string& body :
       {std::string("[]"), std::string("{\"items\": {}}"), std::string("{}"), too_many}) {
    auto b = d_->Post("/api/v1/workloads:batch", body, kTeamAToken);
    EXPECT_EQ(b.status, 400) << body.substr(0, 40) << ": " << b.body;
    EXPECT_EQ(b.json().value("field", ""), "items") << b.body;
  }
  EXPECT_EQ(WorkloadCount(), before);
  EXPECT_EQ(JournalSeq(), seq) << "a rejected batch reached the journal";
}

TEST_F(ApiTest, JobIsMappedToWorkload) {
  std::string job = R"(apiVersion: batch/v1
kind: Job
metadata:
  name: job-1
  namespace: team-a
  labels: {kueue.x-k8s.io/queue-name: default}
spec:
  parallelism: 2
  template:
    spec:
      containers: [{name: c, image: busybox, command: ["true"], resources: {requests: {nvidia.com/gpu: "1"}}}]
)";
  auto r = d_->Post("/api/v1/workloads", job, kTeamAToken, "application/yaml");
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(r.json()["spec"]["podSets"][0].value("count", 0), 2);
  ASSERT_TRUE(WaitFor([&] { return d_->Phase("team-a", "job-1") == "Succeeded"; }, 10000)) << d_->log();
}

// A Kueue Workload is read by the same reader as in `artel apply -f`,
// scenarios and the Kubernetes controller (docs/kubernetes.md).
TEST_F(ApiTest, KueueWorkloadIsAccepted) {
  std::string wl = R"(apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: kueue-1, namespace: team-a}
spec:
  queueName: default
  podSets:
    - name: main
      count: 2
      template: {spec: {containers: [{name: c, image: busybox, command: ["true"], resources: {requests: {nvidia.com/gpu: "1"}}}]}}
)";
  auto r = d_->Post("/api/v1/workloads", wl, kTeamAToken, "application/yaml");
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(r.json()["spec"]["podSets"][0].value("count", 0), 2);
  ASSERT_TRUE(WaitFor([&] { return d_->Phase("team-a", "kueue-1") == "Succeeded"; }, 10000)) << d_->log();
  // A misspelled field is refused with its path.
  std::string bad = wl;
  bad.replace(bad.find("count: 2"), 8, "cuont: 2");
  bad.replace(bad.find("kueue-1"), 7, "kueue-2");
  auto e = d_->Post("/api/v1/workloads", bad, kTeamAToken, "application/yaml");
  EXPECT_EQ(e.status, 400) << e.body;
  EXPECT_EQ(e.json().value("field", ""), "spec.podSets[0].cuont") << e.body;
}

TEST_F(ApiTest, WatchStreamsEvents) {
  std::atomic<bool> got{false};
  std::thread reader([&] {
    httplib::Client c("127.0.0.1", d_->port());
    c.set_read_timeout(10, 0);
    std::string buf;
    c.Get("/api/v1/watch?since=0", {{"Authorization", std::string("Bearer ") + kTeamAToken}},
          [&](const char* data, size_t len) {
            buf.append(data, len);
            if (buf.find("\"workload\":\"team-a/watched\"") != std::string::npos) {
              EXPECT_EQ(buf.find("team-b/"), std::string::npos) << "a tenant saw another namespace";
              got = true;
              return false;
            }
            return true;
          });
  });
  // The stream starts at the current event; give it a moment to subscribe, then act.
  ASSERT_TRUE(WaitFor(
      [&] {
        d_->Post("/api/v1/workloads",
                 Workload("team-b", "noise" + std::to_string(rand()), "default", 0).dump());
        return d_->Post("/api/v1/workloads", Workload("team-a", "watched", "default", 0).dump()).status ==
                   201 ||
               got;
      },
      5000));
  reader.join();
  EXPECT_TRUE(got);
}

TEST(ApiLimitsTest, RateLimitAnswers429) {
  std::string dir = TempDir("rate");
  WriteFile(dir + "/tokens.yaml", kTokensYaml);
  Arteld d(dir);
  ASSERT_TRUE(d.Start({"--tokens", dir + "/tokens.yaml", "--rate-limit", "2", "--rate-burst", "3"}));
  int limited = 0;
  for (int i = 0; i < 10; ++i) {
    auto r = d.Get("/api/v1/whoami", kTeamAToken);
    if (r.status == 429) {
      ++limited;
      EXPECT_EQ(r.json().value("code", ""), "ResourceExhausted");
    }
  }
  EXPECT_GE(limited, 5);
  EXPECT_EQ(d.Get("/api/v1/whoami", kTeamBToken).status, 200);  // per user
  EXPECT_TRUE(d.Stop());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace artel::testing
