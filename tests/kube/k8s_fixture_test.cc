// Smoke tests of the Kubernetes test control plane (tests/kube/k8s_fixture.h,
// scripts/k8s-up.sh): the API server answers with RBAC and the pinned
// version, Kueue's CRDs are served, the API server restarts on the same
// port, an etcd compaction expires old resourceVersions (410), a restricted
// user is refused, and with the controller manager, the scheduler and the
// fake kubelet a Job's pod runs to Succeeded.
#include "k8s_fixture.h"

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <iterator>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

namespace artel::testing {
namespace {

using Json = nlohmann::json;

// Polls `pred` every 100 ms until it holds or `timeout_ms` passes.
bool Eventually(const std::function<bool()>& pred, int timeout_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return pred();
}

// True while `pid` runs (a zombie, exited but not yet reaped by its new
// parent, does not count).
bool Alive(int pid) {
  if (pid <= 0) return false;
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  size_t paren = stat.rfind(')');
  if (paren == std::string::npos || paren + 2 >= stat.size()) return false;
  char state = stat[paren + 2];
  return state != 'Z' && state != 'X';
}

std::unique_ptr<K8sCluster> MustStart(const K8sOptions& o) {
  auto c = K8sCluster::Start(o);
  if (!c.ok()) {
    ADD_FAILURE() << c.status().ToString();
    return nullptr;
  }
  return std::move(c).value();
}

Json Parse(const Result<std::string>& r) {
  if (!r.ok()) return Json();
  auto j = Json::parse(r.value(), nullptr, false);
  return j.is_discarded() ? Json() : j;
}

TEST(K8sFixture, ApiServerCrdsRestartCompactionAndStop) {
  auto c = MustStart({});
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->server().rfind("https://127.0.0.1:", 0), 0u) << c->server();

  auto ns = c->Kubectl({"get", "namespace", "default", "-o", "json"});
  ASSERT_TRUE(ns.ok()) << ns.status().ToString();
  EXPECT_EQ(Parse(ns)["metadata"]["name"], "default");

  // /version: the pinned release, as semver (clients refuse anything else).
  Json version = Parse(c->Kubectl({"get", "--raw", "/version"}));
  EXPECT_EQ(version.value("gitVersion", ""), "v1.36.3") << version.dump();
  EXPECT_TRUE(std::regex_match(version.value("gitVersion", ""), std::regex(R"(v\d+\.\d+\.\d+)")));

  // Kueue's CRDs are Established and served at v1beta2 (and v1beta1).
  auto cqs = c->Kubectl({"get", "clusterqueues.v1beta2.kueue.x-k8s.io", "-o", "json"});
  ASSERT_TRUE(cqs.ok()) << cqs.status().ToString();
  EXPECT_EQ(Parse(cqs)["items"].size(), 0u);
  EXPECT_TRUE(c->Kubectl({"get", "workloads.v1beta1.kueue.x-k8s.io", "-A"}).ok());
  auto created = c->Kubectl({"apply", "--server-side", "-f", "-"}, R"(apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: default-flavor
)");
  ASSERT_TRUE(created.ok()) << created.status().ToString();

  // A user without bindings is authenticated but refused by RBAC.
  auto user = c->UserKubeconfig("alice", {"team-a"});
  ASSERT_TRUE(user.ok()) << user.status().ToString();
  auto who = Parse(c->KubectlAs(user.value(), {"auth", "whoami", "-o", "json"}));
  EXPECT_EQ(who["status"]["userInfo"]["username"], "alice") << who.dump();
  auto denied = c->KubectlAs(user.value(), {"get", "resourceflavors.kueue.x-k8s.io"});
  ASSERT_FALSE(denied.ok());
  EXPECT_NE(denied.status().message().find("forbidden"), std::string::npos) << denied.status().message();

  // Restart: same port, same etcd, the object is still there.
  int old_pid = c->pid("kube-apiserver");
  ASSERT_TRUE(Alive(old_pid));
  ASSERT_TRUE(c->StopApiServer().ok());
  EXPECT_FALSE(Alive(old_pid));
  EXPECT_FALSE(c->Kubectl({"get", "--raw", "/readyz", "--request-timeout=2s"}).ok());
  Status st = c->StartApiServer();
  ASSERT_TRUE(st.ok()) << st.ToString() << "\n" << c->LogTail("kube-apiserver");
  EXPECT_NE(c->pid("kube-apiserver"), old_pid);
  EXPECT_TRUE(c->Kubectl({"get", "resourceflavor", "default-flavor"}).ok());
  st = c->RestartApiServer();
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_TRUE(c->Kubectl({"get", "resourceflavor", "default-flavor"}).ok());

  // Compaction: a watch from a resourceVersion older than the compacted
  // revision answers 410 Gone (as an ERROR event of the watch stream).
  Json list = Parse(c->Kubectl({"get", "--raw", "/api/v1/namespaces"}));
  std::string old_rv = list["metadata"].value("resourceVersion", "");
  ASSERT_FALSE(old_rv.empty());
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(c->Kubectl({"create", "namespace", "churn-" + std::to_string(i)}).ok());
  }
  st = c->CompactEtcd();
  ASSERT_TRUE(st.ok()) << st.ToString();
  auto watch =
      c->Kubectl({"get", "--raw", "/api/v1/namespaces?watch=1&timeoutSeconds=5&resourceVersion=" + old_rv,
                  "--request-timeout=20s"});
  // The stream's first (and only) event is the 410 error.
  ASSERT_TRUE(watch.ok()) << watch.status().ToString();
  Json event = Json::parse(watch.value().substr(0, watch.value().find('\n')), nullptr, false);
  ASSERT_FALSE(event.is_discarded()) << watch.value();
  EXPECT_EQ(event["type"], "ERROR") << watch.value();
  EXPECT_EQ(event["object"].value("code", 0), 410) << watch.value();

  // Stop: every process gone, by pid.
  std::vector<int> pids = {c->pid("etcd"), c->pid("kube-apiserver"), c->pid("watchdog")};
  for (int p : pids) EXPECT_TRUE(Alive(p)) << p;
  c.reset();
  for (int p : pids) EXPECT_TRUE(Eventually([&] { return !Alive(p); }, 5000)) << p;
}

TEST(K8sFixture, JobPodRunsToSucceededOnFakeKubelet) {
  K8sOptions o;
  o.controller_manager = true;
  o.scheduler = true;
  o.fake_kubelet = true;
  o.kueue_crds = false;
  o.fake_nodes = "node-a:cpu=8,memory=32Gi,nvidia.com/gpu=4";
  auto c = MustStart(o);
  ASSERT_NE(c, nullptr);

  Json node = Parse(c->Kubectl({"get", "node", "node-a", "-o", "json"}));
  EXPECT_EQ(node["status"]["allocatable"].value("nvidia.com/gpu", ""), "4") << node.dump();

  auto job = c->Kubectl({"apply", "-f", "-"}, R"(apiVersion: batch/v1
kind: Job
metadata:
  name: hello
spec:
  backoffLimit: 0
  template:
    metadata:
      annotations:
        artel.dev/fake-run-seconds: "1"
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: registry.invalid/hello:1
        resources:
          requests: {cpu: "1", memory: 1Gi}
)");
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  bool done = Eventually(
      [&] {
        Json j = Parse(c->Kubectl({"get", "job", "hello", "-o", "json"}));
        return j["status"].value("succeeded", 0) == 1;
      },
      120000);
  ASSERT_TRUE(done) << c->Kubectl({"get", "job,pods", "-o", "wide"}).value() << "\n"
                    << c->LogTail("fake-kubelet") << c->LogTail("kube-controller-manager");
  Json pods = Parse(c->Kubectl({"get", "pods", "-l", "job-name=hello", "-o", "json"}));
  ASSERT_EQ(pods["items"].size(), 1u);
  EXPECT_EQ(pods["items"][0]["spec"].value("nodeName", ""), "node-a");
  EXPECT_EQ(pods["items"][0]["status"].value("phase", ""), "Succeeded");

  // A pod with a non-zero fake exit code fails; deleting a running pod
  // completes (the fake kubelet removes it with grace 0).
  auto failing = c->Kubectl({"apply", "-f", "-"}, R"(apiVersion: v1
kind: Pod
metadata:
  name: failing
  annotations:
    artel.dev/fake-run-seconds: "0"
    artel.dev/fake-exit-code: "3"
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: registry.invalid/x:1
---
apiVersion: v1
kind: Pod
metadata:
  name: forever
spec:
  containers:
  - name: main
    image: registry.invalid/x:1
)");
  ASSERT_TRUE(failing.ok()) << failing.status().ToString();
  EXPECT_TRUE(Eventually(
      [&] {
        return Parse(c->Kubectl({"get", "pod", "failing", "-o", "json"}))["status"].value("phase", "") ==
               "Failed";
      },
      60000));
  EXPECT_TRUE(Eventually(
      [&] {
        return Parse(c->Kubectl({"get", "pod", "forever", "-o", "json"}))["status"].value("phase", "") ==
               "Running";
      },
      60000));
  auto del = c->Kubectl({"delete", "pod", "forever", "--wait=true", "--timeout=60s"});
  EXPECT_TRUE(del.ok()) << del.status().ToString();
  EXPECT_FALSE(c->Kubectl({"get", "pod", "forever"}).ok());
}

TEST(K8sFixture, MissingBinariesAreAnError) {
  const char* old = getenv("ARTEL_K8S_BIN");
  std::string saved = old != nullptr ? old : "";
  setenv("ARTEL_K8S_BIN", "/nonexistent/artel-k8s-bin", 1);
  auto c = K8sCluster::Start({});
  if (old != nullptr) {
    setenv("ARTEL_K8S_BIN", saved.c_str(), 1);
  } else {
    unsetenv("ARTEL_K8S_BIN");
  }
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("tools/k8s/build.sh"), std::string::npos) << c.status().message();
}

}  // namespace
}  // namespace artel::testing
