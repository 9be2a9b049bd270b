// Unit tests of the Kubernetes client without an API server: kubeconfig and
// in-cluster config, the token bucket (injected clock), the watch-stream
// parser, ApiError parsing, and the requests the client sends (an in-process
// plain-HTTP server records them).
#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "kube/client.h"
#include "kube/kubeconfig.h"
#include "kube/rate_limit.h"

namespace artel::kube {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "artel-kube-unit-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() { fs::remove_all(path_); }
  const std::string& path() const { return path_; }
  std::string Write(const std::string& name, const std::string& text) const {
    std::string p = path_ + "/" + name;
    fs::create_directories(fs::path(p).parent_path());
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }

 private:
  std::string path_;
};

std::string B64(const std::string& in) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
    out += k[v >> 18];
    out += k[(v >> 12) & 63];
    out += k[(v >> 6) & 63];
    out += k[v & 63];
  }
  if (i + 1 == in.size()) {
    uint32_t v = uint8_t(in[i]) << 16;
    out += k[v >> 18];
    out += k[(v >> 12) & 63];
    out += "==";
  } else if (i + 2 == in.size()) {
    uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8);
    out += k[v >> 18];
    out += k[(v >> 12) & 63];
    out += k[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

const char* kTwoContexts = R"(apiVersion: v1
kind: Config
current-context: admin
clusters:
- name: local
  cluster:
    server: https://127.0.0.1:6443
    certificate-authority-data: %CA%
- name: other
  cluster:
    server: https://10.0.0.1:443
    certificate-authority: pki/ca.crt
- name: loose
  cluster:
    server: https://10.0.0.2:443
    insecure-skip-tls-verify: true
users:
- name: admin
  user:
    client-certificate-data: %CERT%
    client-key-data: %KEY%
- name: files
  user:
    client-certificate: pki/user.crt
    client-key: pki/user.key
- name: tok
  user:
    token: abc.def
- name: tokfile
  user:
    tokenFile: tok.txt
contexts:
- name: admin
  context: {cluster: local, user: admin}
- name: files
  context: {cluster: other, user: files, namespace: team-a}
- name: tok
  context: {cluster: loose, user: tok}
- name: tokfile
  context: {cluster: local, user: tokfile}
)";

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size()))
    s.replace(p, from.size(), to);
  return s;
}

std::string TwoContexts() {
  std::string s = Replace(kTwoContexts, "%CA%", B64("CA-PEM\n"));
  s = Replace(s, "%CERT%", B64("CERT-PEM\n"));
  return Replace(s, "%KEY%", B64("KEY-PEM\n"));
}

TEST(Kubeconfig, CurrentContextWithDataFields) {
  TempDir d;
  auto cfg = LoadKubeconfig(d.Write("config", TwoContexts()));
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->server, "https://127.0.0.1:6443");
  EXPECT_EQ(cfg->ca_pem, "CA-PEM\n");
  EXPECT_EQ(cfg->client_cert_pem, "CERT-PEM\n");
  EXPECT_EQ(cfg->client_key_pem, "KEY-PEM\n");
  EXPECT_EQ(cfg->default_namespace, "default");
  EXPECT_FALSE(cfg->insecure_skip_tls_verify);
  EXPECT_TRUE(cfg->bearer_token.empty());
}

TEST(Kubeconfig, NamedContextWithFilesRelativeToTheKubeconfig) {
  TempDir d;
  d.Write("pki/ca.crt", "FILE-CA\n");
  d.Write("pki/user.crt", "FILE-CERT\n");
  d.Write("pki/user.key", "FILE-KEY\n");
  std::string path = d.Write("sub/../config", TwoContexts());
  auto cfg = LoadKubeconfig(path, "files");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->server, "https://10.0.0.1:443");
  EXPECT_EQ(cfg->ca_pem, "FILE-CA\n");
  EXPECT_EQ(cfg->client_cert_pem, "FILE-CERT\n");
  EXPECT_EQ(cfg->client_key_pem, "FILE-KEY\n");
  EXPECT_EQ(cfg->default_namespace, "team-a");
}

TEST(Kubeconfig, TokensAndInsecure) {
  TempDir d;
  std::string path = d.Write("config", TwoContexts());
  auto tok = LoadKubeconfig(path, "tok");
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  EXPECT_EQ(tok->bearer_token, "abc.def");
  EXPECT_TRUE(tok->insecure_skip_tls_verify);
  EXPECT_TRUE(tok->ca_pem.empty());

  d.Write("tok.txt", "from-file\n");
  auto tf = LoadKubeconfig(path, "tokfile");
  ASSERT_TRUE(tf.ok()) << tf.status().ToString();
  EXPECT_TRUE(tf->bearer_token.empty());
  EXPECT_EQ(tf->token_file, d.path() + "/tok.txt");
}

TEST(Kubeconfig, ErrorsNameTheFileAndTheField) {
  TempDir d;
  std::string path = d.Write("config", TwoContexts());
  auto missing_ctx = LoadKubeconfig(path, "nope");
  ASSERT_FALSE(missing_ctx.ok());
  EXPECT_NE(missing_ctx.status().message().find("no context named \"nope\""), std::string::npos);
  EXPECT_NE(missing_ctx.status().message().find(path), std::string::npos);

  // The files of context "files" are not there.
  auto missing_file = LoadKubeconfig(path, "files");
  ASSERT_FALSE(missing_file.ok());
  EXPECT_NE(missing_file.status().message().find("clusters[name=other].cluster.certificate-authority"),
            std::string::npos)
      << missing_file.status().message();
  EXPECT_NE(missing_file.status().message().find("pki/ca.crt"), std::string::npos);

  auto missing_token_file = LoadKubeconfig(path, "tokfile");
  ASSERT_FALSE(missing_token_file.ok());
  EXPECT_NE(missing_token_file.status().message().find("users[name=tokfile].user.tokenFile"),
            std::string::npos)
      << missing_token_file.status().message();

  std::string bad64 = d.Write("bad64", Replace(TwoContexts(), B64("KEY-PEM\n"), "not*base64"));
  auto b = LoadKubeconfig(bad64);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("users[name=admin].user.client-key-data: not valid base64"),
            std::string::npos)
      << b.status().message();

  std::string exec = d.Write("exec", R"(current-context: c
clusters: [{name: k, cluster: {server: "https://h:1"}}]
users: [{name: u, user: {exec: {command: gcloud}}}]
contexts: [{name: c, context: {cluster: k, user: u}}]
)");
  auto e = LoadKubeconfig(exec);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("users[name=u].user.exec: not supported"), std::string::npos)
      << e.status().message();

  std::string noserver = d.Write("noserver", R"(current-context: c
clusters: [{name: k, cluster: {}}]
contexts: [{name: c, context: {cluster: k}}]
)");
  auto ns = LoadKubeconfig(noserver);
  ASSERT_FALSE(ns.ok());
  EXPECT_NE(ns.status().message().find("clusters[name=k].cluster.server: missing"), std::string::npos)
      << ns.status().message();

  std::string yaml = d.Write("broken", "clusters: [\n");
  auto y = LoadKubeconfig(yaml);
  ASSERT_FALSE(y.ok());
  EXPECT_NE(y.status().message().find(yaml), std::string::npos);

  auto none = LoadKubeconfig(d.path() + "/does-not-exist");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("does-not-exist"), std::string::npos);
}

TEST(Kubeconfig, KubeconfigListFirstFileWins) {
  TempDir d;
  std::string first = d.Write("a", R"(current-context: from-a
clusters: [{name: k, cluster: {server: "https://first:1"}}]
contexts: [{name: from-a, context: {cluster: k, user: u}}]
users: [{name: u, user: {token: tok-a}}]
)");
  std::string second = d.Write("b", R"(current-context: from-b
clusters: [{name: k, cluster: {server: "https://second:2"}}, {name: k2, cluster: {server: "https://only-b:3"}}]
contexts: [{name: from-b, context: {cluster: k2, user: u}}]
users: [{name: u, user: {token: tok-b}}]
)");
  const char* old = std::getenv("KUBECONFIG");
  std::string saved = old ? old : "";
  ::setenv("KUBECONFIG", (first + ":" + d.path() + "/missing:" + second).c_str(), 1);
  auto a = LoadKubeconfig();
  auto b = LoadKubeconfig("", "from-b");
  if (old)
    ::setenv("KUBECONFIG", saved.c_str(), 1);
  else
    ::unsetenv("KUBECONFIG");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->server, "https://first:1");
  EXPECT_EQ(a->bearer_token, "tok-a");
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->server, "https://only-b:3");
  EXPECT_EQ(b->bearer_token, "tok-a");  // user u: the first file's
}

TEST(InCluster, FromServiceAccountDirectory) {
  TempDir d;
  d.Write("token", "sa-token\n");
  d.Write("ca.crt", "SA-CA\n");
  d.Write("namespace", "kueue-system\n");
  auto cfg = InClusterConfigFrom(d.path(), "10.96.0.1", "443");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->server, "https://10.96.0.1:443");
  EXPECT_EQ(cfg->ca_pem, "SA-CA\n");
  EXPECT_EQ(cfg->token_file, d.path() + "/token");
  EXPECT_EQ(cfg->default_namespace, "kueue-system");
  auto v6 = InClusterConfigFrom(d.path(), "fd00::1", "6443");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->server, "https://[fd00::1]:6443");

  auto no_env = InClusterConfigFrom(d.path(), "", "");
  ASSERT_FALSE(no_env.ok());
  EXPECT_NE(no_env.status().message().find("KUBERNETES_SERVICE_HOST"), std::string::npos);
  TempDir empty;
  auto no_token = InClusterConfigFrom(empty.path(), "10.96.0.1", "443");
  ASSERT_FALSE(no_token.ok());
  EXPECT_NE(no_token.status().message().find(empty.path() + "/token"), std::string::npos);
}

TEST(TokenBucket, BurstThenQpsWithInjectedClock) {
  int64_t now = 1'000'000;
  TokenBucket tb(10, 3, [&] { return now; });  // 10/s: one token per 100 ms
  EXPECT_EQ(tb.Reserve(), 0);
  EXPECT_EQ(tb.Reserve(), 0);
  EXPECT_EQ(tb.Reserve(), 0);
  EXPECT_EQ(tb.Reserve(), 100'000);  // the 4th waits one interval
  EXPECT_EQ(tb.Reserve(), 200'000);  // queued behind the 4th
  EXPECT_EQ(tb.throttled(), 2u);
  now += 200'000;  // both queued ones are paid for; the bucket is empty
  EXPECT_EQ(tb.Reserve(), 100'000);
  now += 10'000'000;  // a long pause refills only up to the burst
  EXPECT_EQ(tb.Reserve(), 0);
  EXPECT_EQ(tb.Reserve(), 0);
  EXPECT_EQ(tb.Reserve(), 0);
  EXPECT_GT(tb.Reserve(), 0);
  EXPECT_EQ(tb.throttled(), 4u);

  TokenBucket unlimited(0, 1, [&] { return now; });
  for (int i = 0; i < 100; ++i) EXPECT_EQ(unlimited.Reserve(), 0);
  EXPECT_EQ(unlimited.throttled(), 0u);
}

TEST(WatchStream, SplitsChunksAtAnyByte) {
  std::string stream =
      R"({"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"1"}}})"
      "\n"
      R"({"type":"MODIFIED","object":{"metadata":{"name":"a","resourceVersion":"2"},"data":{"k":"v\nw"}}})"
      "\r\n\n"
      R"({"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"7"}}})"
      "\n"
      R"({"type":"DELETED","object":{"metadata":{"name":"a","resourceVersion":"8"}}})"
      "\n";
  // Every split into three pieces gives the same events.
  for (size_t i = 0; i <= stream.size(); i += 3) {
    for (size_t j = i; j <= stream.size(); j += 7) {
      WatchStreamParser p;
      std::vector<std::string> seen;
      auto cb = [&](const WatchEvent& e) {
        seen.push_back(e.type + ":" + e.object["metadata"].value("resourceVersion", ""));
        return true;
      };
      ASSERT_TRUE(p.Feed(std::string_view(stream).substr(0, i), cb));
      ASSERT_TRUE(p.Feed(std::string_view(stream).substr(i, j - i), cb));
      ASSERT_TRUE(p.Feed(std::string_view(stream).substr(j), cb));
      ASSERT_EQ(seen, (std::vector<std::string>{"ADDED:1", "MODIFIED:2", "BOOKMARK:7", "DELETED:8"}))
          << "split at " << i << "," << j;
      EXPECT_EQ(p.buffered(), 0u);
    }
  }
  // An incomplete line stays buffered until its newline comes.
  WatchStreamParser p;
  int n = 0;
  ASSERT_TRUE(p.Feed(R"({"type":"ADDED","obj)", [&](const WatchEvent&) { return ++n, true; }));
  EXPECT_EQ(n, 0);
  EXPECT_GT(p.buffered(), 0u);
  ASSERT_TRUE(p.Feed("ect\":{}}\n", [&](const WatchEvent&) { return ++n, true; }));
  EXPECT_EQ(n, 1);
  // The handler stops the stream.
  WatchStreamParser stop;
  int m = 0;
  EXPECT_FALSE(stop.Feed(stream, [&](const WatchEvent&) { return ++m < 2; }));
  EXPECT_EQ(m, 2);
  // Garbage is an error that names the line.
  WatchStreamParser bad;
  EXPECT_FALSE(bad.Feed("<html>oops</html>\n", [](const WatchEvent&) { return true; }));
  EXPECT_NE(bad.error().find("<html>"), std::string::npos);
}

TEST(ApiErrors, FromStatusObjectsAndPlainBodies) {
  ApiError conflict = ParseApiError(409, R"({"kind":"Status","apiVersion":"v1","status":"Failure",
      "message":"Operation cannot be fulfilled on configmaps \"x\": the object has been modified",
      "reason":"Conflict","code":409})");
  EXPECT_EQ(conflict.http, 409);
  EXPECT_TRUE(conflict.Conflict());
  EXPECT_FALSE(conflict.AlreadyExists());
  EXPECT_NE(conflict.message.find("has been modified"), std::string::npos);

  ApiError exists =
      ParseApiError(409, R"({"kind":"Status","reason":"AlreadyExists","message":"m","code":409})");
  EXPECT_TRUE(exists.AlreadyExists());
  EXPECT_FALSE(exists.Conflict());

  ApiError nf =
      ParseApiError(404, R"({"kind":"Status","reason":"NotFound","message":"not there","code":404})");
  EXPECT_TRUE(nf.NotFound());
  EXPECT_EQ(nf.ToString(), "404 NotFound: not there");

  ApiError plain = ParseApiError(503, "upstream down\n");
  EXPECT_EQ(plain.reason, "ServiceUnavailable");
  EXPECT_EQ(plain.message, "upstream down");

  // A watch ERROR event's Status: 410 Expired.
  ApiError gone = ApiErrorFromStatus(Json::parse(
      R"j({"kind":"Status","status":"Failure","message":"too old resource version: 5 (90)","reason":"Expired","code":410})j"));
  EXPECT_TRUE(gone.Gone());
  EXPECT_EQ(gone.reason, "Expired");
}

TEST(Paths, CoreGroupsNamespacesSubresources) {
  EXPECT_EQ(ResourcePath(kPods, "ns1", "p", "status"), "/api/v1/namespaces/ns1/pods/p/status");
  EXPECT_EQ(ResourcePath(kPods, ""), "/api/v1/pods");
  EXPECT_EQ(ResourcePath(kNodes, "ignored", "n1"), "/api/v1/nodes/n1");
  EXPECT_EQ(ResourcePath(kWorkloads, "t", "w"), "/apis/kueue.x-k8s.io/v1beta2/namespaces/t/workloads/w");
  EXPECT_EQ(ResourcePath(V1beta1(kClusterQueues), "", "cq"), "/apis/kueue.x-k8s.io/v1beta1/clusterqueues/cq");
  EXPECT_EQ(ResourcePath(kLeases, "kube-system"),
            "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases");
}

// A plain-HTTP server in the test process that records what the client sends.
class FakeServer {
 public:
  struct Seen {
    std::string method, path, query, content_type, auth, body;
  };
  FakeServer() {
    auto record = [this](const httplib::Request& req, httplib::Response& res) {
      {
        std::lock_guard<std::mutex> l(mu_);
        std::string q;
        for (const auto& [k, v] : req.params) q += (q.empty() ? "" : "&") + k + "=" + v;
        seen_.push_back({req.method, req.path, q, req.get_header_value("Content-Type"),
                         req.get_header_value("Authorization"), req.body});
      }
      if (req.path == "/api/v1/namespaces/default/configmaps/missing") {
        res.status = 404;
        res.set_content(
            R"({"kind":"Status","reason":"NotFound","message":"configmaps \"missing\" not found","code":404})",
            "application/json");
        return;
      }
      if (req.path == "/api/v1/namespaces/default/configmaps/busy" && busy_.fetch_sub(1) > 0) {
        res.status = 429;
        res.set_header("Retry-After", "0");
        res.set_content(R"({"kind":"Status","reason":"TooManyRequests","message":"try again","code":429})",
                        "application/json");
        return;
      }
      if (req.has_param("watch") && req.get_param_value("resourceVersion") == "hang") {
        // One event, then silence until the test ends (the client must cut it).
        res.set_chunked_content_provider("application/json", [this](size_t offset, httplib::DataSink& sink) {
          if (offset == 0) {
            std::string e = R"({"type":"ADDED","object":{"metadata":{"name":"h","resourceVersion":"21"}}})"
                            "\n";
            return sink.write(e.data(), e.size());
          }
          std::unique_lock<std::mutex> l(mu_);
          quit_cv_.wait(l, [this] { return quit_; });
          sink.done();
          return true;
        });
        return;
      }
      if (req.has_param("watch")) {
        res.set_chunked_content_provider("application/json", [](size_t, httplib::DataSink& sink) {
          // Events cut at odd places, then an expired-resourceVersion error.
          std::string all =
              R"({"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"11"}}})"
              "\n"
              R"({"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"12"}}})"
              "\n"
              R"({"type":"ERROR","object":{"kind":"Status","reason":"Expired","message":"too old","code":410}})"
              "\n";
          for (size_t i = 0; i < all.size(); i += 5)
            sink.write(all.data() + i, std::min<size_t>(5, all.size() - i));
          sink.done();
          return true;
        });
        return;
      }
      res.set_content(R"({"kind":"ConfigMap","metadata":{"name":"x"}})", "application/json");
    };
    srv_.Get(".*", record);
    srv_.Post(".*", record);
    srv_.Put(".*", record);
    srv_.Patch(".*", record);
    srv_.Delete(".*", record);
    port_ = srv_.bind_to_any_port("127.0.0.1");
    // bind_to_any_port already listens: connections queue until the loop runs.
    thread_ = std::thread([this] { srv_.listen_after_bind(); });
  }
  ~FakeServer() {
    {
      std::lock_guard<std::mutex> l(mu_);
      quit_ = true;
    }
    quit_cv_.notify_all();
    srv_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  void SetBusy(int n) { busy_ = n; }  // the next n requests for configmaps/busy answer 429
  std::vector<Seen> seen() {
    std::lock_guard<std::mutex> l(mu_);
    return seen_;
  }

 private:
  httplib::Server srv_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::vector<Seen> seen_;
  std::atomic<int> busy_{0};
  std::condition_variable quit_cv_;
  bool quit_ = false;
};

TEST(ClientRequests, ApplyPatchDeleteAndErrors) {
  FakeServer srv;
  ClientConfig cfg;
  cfg.server = srv.url();
  cfg.bearer_token = "t0k";
  Client c(cfg);
  Json cq = {
      {"apiVersion", "kueue.x-k8s.io/v1beta2"}, {"kind", "ClusterQueue"}, {"metadata", {{"name", "cq1"}}}};
  ASSERT_TRUE(c.Apply(kClusterQueues, "", cq, "artel", true, true).ok());
  ASSERT_TRUE(c.MergePatch(kWorkloads, "team", "w1", Json{{"spec", {{"active", false}}}}).ok());
  ASSERT_TRUE(c.Delete(kPods, "team", "p1", 0, "uid-1").ok());
  auto nf = c.Get(kConfigMaps, "", "missing");
  ASSERT_FALSE(nf.ok());
  EXPECT_TRUE(nf.error().NotFound());
  EXPECT_EQ(nf.error().message, "configmaps \"missing\" not found");
  EXPECT_EQ(c.requests(), 4u);

  auto seen = srv.seen();
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[0].method, "PATCH");
  EXPECT_EQ(seen[0].path, "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/cq1/status");
  EXPECT_EQ(seen[0].content_type, "application/apply-patch+yaml");
  EXPECT_EQ(seen[0].query, "fieldManager=artel&force=true");
  EXPECT_EQ(seen[0].auth, "Bearer t0k");
  EXPECT_EQ(Json::parse(seen[0].body), cq);
  EXPECT_EQ(seen[1].path, "/apis/kueue.x-k8s.io/v1beta2/namespaces/team/workloads/w1");
  EXPECT_EQ(seen[1].content_type, "application/merge-patch+json");
  EXPECT_EQ(seen[2].method, "DELETE");
  Json opts = Json::parse(seen[2].body);
  EXPECT_EQ(opts["gracePeriodSeconds"], 0);
  EXPECT_EQ(opts["preconditions"]["uid"], "uid-1");
  EXPECT_EQ(seen[3].path, "/api/v1/namespaces/default/configmaps/missing");  // ns "" = default_namespace
}

TEST(ClientRequests, TooManyRequestsIsRetriedAfterRetryAfter) {
  FakeServer srv;
  ClientConfig cfg;
  cfg.server = srv.url();
  Client c(cfg);
  srv.SetBusy(2);
  auto r = c.Delete(kConfigMaps, "default", "busy");  // any verb: a 429 was not processed
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_EQ(c.retried_after_429(), 2u);
  EXPECT_EQ(c.requests(), 3u);
  srv.SetBusy(100);  // gives up after 5 retries with the server's answer
  auto busy = c.Get(kConfigMaps, "default", "busy");
  ASSERT_FALSE(busy.ok());
  EXPECT_EQ(busy.error().http, 429);
  EXPECT_EQ(busy.error().reason, "TooManyRequests");
  EXPECT_EQ(c.retried_after_429(), 7u);
}

TEST(ClientRequests, TokenFileIsReReadWhenItChanges) {
  FakeServer srv;
  TempDir d;
  std::string tf = d.Write("token", "first\n");
  ClientConfig cfg;
  cfg.server = srv.url();
  cfg.token_file = tf;
  Client c(cfg);
  ASSERT_TRUE(c.Get(kConfigMaps, "default", "x").ok());
  d.Write("token", "second-rotated\n");
  ASSERT_TRUE(c.Get(kConfigMaps, "default", "x").ok());
  auto seen = srv.seen();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].auth, "Bearer first");
  EXPECT_EQ(seen[1].auth, "Bearer second-rotated");
}

TEST(ClientRequests, WatchStreamsEventsAndTurns410IntoGone) {
  FakeServer srv;
  ClientConfig cfg;
  cfg.server = srv.url();
  Client c(cfg);
  std::vector<std::string> types;
  ListOptions o;
  o.resource_version = "10";
  o.label_selector = "a=b,c in (d)";
  auto res = c.Watch(
      kConfigMaps, "default", o,
      [&](const WatchEvent& e) {
        types.push_back(e.type);
        return true;
      },
      nullptr, 30);
  ASSERT_FALSE(res.ok());
  EXPECT_TRUE(res.error().Gone());
  EXPECT_EQ(res.error().reason, "Expired");
  EXPECT_EQ(types, (std::vector<std::string>{"ADDED", "BOOKMARK"}));
  auto seen = srv.seen();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(
      seen[0].query,
      "allowWatchBookmarks=true&labelSelector=a=b,c in (d)&resourceVersion=10&timeoutSeconds=30&watch=1");
}

TEST(ClientRequests, WatchBlockedInAReadEndsWhenItsStopFlagIsSet) {
  FakeServer srv;
  ClientConfig cfg;
  cfg.server = srv.url();
  Client c(cfg);
  std::atomic<bool> stop{false};
  std::atomic<int> events{0};
  std::optional<ApiResult<std::string>> result;
  ListOptions o;
  o.resource_version = "hang";
  std::thread t([&] {
    result = c.Watch(
        kConfigMaps, "default", o,
        [&](const WatchEvent&) {
          ++events;
          return true;
        },
        &stop, 300);
  });
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (events.load() == 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_EQ(events.load(), 1);
  // The server says nothing more: only the flag (no Interrupt call) ends it.
  auto t0 = std::chrono::steady_clock::now();
  stop = true;
  t.join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  ASSERT_TRUE(result && result->ok()) << (result ? result->error().ToString() : "none");
  EXPECT_EQ(result->value(), "21");
}

TEST(ClientRequests, RateLimiterHoldsBackRequestsBeyondTheBurst) {
  FakeServer srv;
  ClientConfig cfg;
  cfg.server = srv.url();
  cfg.qps = 1000;  // the injected clock never moves: no refill, waits are 1 ms apart
  cfg.burst = 3;
  Client c(cfg);
  c.SetRateLimiterClock([] { return int64_t{0}; });
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(c.Get(kConfigMaps, "default", "x").ok());
  EXPECT_EQ(c.throttled(), 2u);
  EXPECT_EQ(c.requests(), 5u);
}

TEST(ClientRequests, BadTlsMaterialIsAClearError) {
  ClientConfig cfg;
  cfg.server = "https://127.0.0.1:1";
  cfg.client_cert_pem = "not a pem";
  cfg.client_key_pem = "not a pem either";
  Client c(cfg);
  auto r = c.Get(kConfigMaps, "default", "x");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().http, 0);
  EXPECT_NE(r.error().message.find("client certificate is not a PEM certificate"), std::string::npos)
      << r.error().message;
  EXPECT_EQ(c.requests(), 0u);

  ClientConfig ca;
  ca.server = "https://127.0.0.1:1";
  ca.ca_pem = "garbage";
  Client c2(ca);
  auto r2 = c2.Get(kConfigMaps, "default", "x");
  ASSERT_FALSE(r2.ok());
  EXPECT_NE(r2.error().message.find("certificate authority"), std::string::npos);

  ClientConfig refused;
  refused.server = "http://127.0.0.1:1";  // nothing listens on port 1
  Client c3(refused);
  auto r3 = c3.Get(kConfigMaps, "default", "x");
  ASSERT_FALSE(r3.ok());
  EXPECT_TRUE(r3.error().Transport());
}

}  // namespace
}  // namespace artel::kube
