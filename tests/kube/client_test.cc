// The Kubernetes client (src/kube) against a real kube-apiserver + etcd
// started by the test fixture (tests/kube/k8s_fixture.h): requests, paging,
// conflicts, patch and server-side apply (also of Kueue objects and the
// Workload status subresource), watch with bookmarks, 410 Gone and the
// informer's re-list, an API server killed in the middle of a watch,
// client-certificate and bearer-token auth, RBAC refusals, the rate limiter.
// No sleeps to wait: every wait polls with a deadline.
#include "kube/client.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "k8s_fixture.h"
#include "kube/kubeconfig.h"

namespace artel::kube {
namespace {

using testing::K8sCluster;
using testing::K8sOptions;

bool Eventually(const std::function<bool()>& pred, int timeout_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return pred();
}

std::unique_ptr<K8sCluster> MustStart(const K8sOptions& o = {}) {
  auto c = K8sCluster::Start(o);
  if (!c.ok()) {
    ADD_FAILURE() << c.status().ToString();
    return nullptr;
  }
  return std::move(c).value();
}

ClientConfig AdminConfig(const K8sCluster& k) {
  auto cfg = LoadKubeconfig(k.kubeconfig());
  EXPECT_TRUE(cfg.ok()) << cfg.status().ToString();
  ClientConfig c = cfg.ok() ? cfg.value() : ClientConfig{};
  c.qps = 0;  // tests are not rate limited unless they say so
  return c;
}

Json ConfigMap(const std::string& name, const std::map<std::string, std::string>& data,
               const std::map<std::string, std::string>& labels = {}) {
  Json cm = {
      {"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", name}}}, {"data", Json::object()}};
  for (const auto& [k, v] : data) cm["data"][k] = v;
  for (const auto& [k, v] : labels) cm["metadata"]["labels"][k] = v;
  return cm;
}

std::string Rv(const Json& obj) { return obj["metadata"].value("resourceVersion", ""); }
std::string Name(const Json& obj) { return obj["metadata"].value("name", ""); }

#define ASSERT_API_OK(expr)                                         \
  do {                                                              \
    auto _r = (expr);                                               \
    ASSERT_TRUE(_r.ok()) << #expr << ": " << _r.error().ToString(); \
  } while (0)

TEST(KubeClient, ConfigMapCrudPagingConflictsAndThreads) {
  auto k = MustStart({.kueue_crds = false});
  ASSERT_TRUE(k);
  Client c(AdminConfig(*k));

  // Create, get, duplicate, update, delete.
  auto created = c.Create(kConfigMaps, "default", ConfigMap("one", {{"a", "1"}}));
  ASSERT_TRUE(created.ok()) << created.error().ToString();
  EXPECT_FALSE(Rv(*created).empty());
  auto got = c.Get(kConfigMaps, "default", "one");
  ASSERT_TRUE(got.ok()) << got.error().ToString();
  EXPECT_EQ((*got)["data"]["a"], "1");
  auto dup = c.Create(kConfigMaps, "default", ConfigMap("one", {}));
  ASSERT_FALSE(dup.ok());
  EXPECT_TRUE(dup.error().AlreadyExists()) << dup.error().ToString();
  Json upd = *got;
  upd["data"]["a"] = "2";
  auto updated = c.Update(kConfigMaps, "", upd);  // ns from metadata.namespace
  ASSERT_TRUE(updated.ok()) << updated.error().ToString();
  EXPECT_EQ((*updated)["data"]["a"], "2");
  EXPECT_NE(Rv(*updated), Rv(*got));

  // A stale resourceVersion is a Conflict; UpdateWithRetry re-reads.
  Json stale = *got;
  stale["data"]["a"] = "stale";
  auto conflict = c.Update(kConfigMaps, "default", stale);
  ASSERT_FALSE(conflict.ok());
  EXPECT_TRUE(conflict.error().Conflict()) << conflict.error().ToString();
  int calls = 0;
  auto retried = UpdateWithRetry(c, kConfigMaps, "default", "one", [&](Json& obj) {
    if (++calls == 1) {
      // Someone else writes between our read and our write: the first PUT conflicts.
      EXPECT_TRUE(c.MergePatch(kConfigMaps, "default", "one", Json{{"data", {{"other", "x"}}}}).ok());
    }
    obj["data"]["b"] = "retried";
    return true;
  });
  ASSERT_TRUE(retried.ok()) << retried.error().ToString();
  EXPECT_EQ(calls, 2);
  EXPECT_EQ((*retried)["data"]["b"], "retried");
  EXPECT_EQ((*retried)["data"]["other"], "x");  // the other writer's change is kept
  // Nothing to do: no write.
  uint64_t before = c.requests();
  auto noop = UpdateWithRetry(c, kConfigMaps, "default", "one", [](Json&) { return false; });
  ASSERT_TRUE(noop.ok());
  EXPECT_EQ(c.requests(), before + 1);

  // Delete with a wrong uid precondition is refused; with the right one it goes.
  auto wrong = c.Delete(kConfigMaps, "default", "one", 0, "00000000-0000-0000-0000-000000000000");
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.error().http, 409) << wrong.error().ToString();
  ASSERT_API_OK(c.Delete(kConfigMaps, "default", "one", 0, (*retried)["metadata"]["uid"].get<std::string>()));
  auto gone = c.Get(kConfigMaps, "default", "one");
  ASSERT_FALSE(gone.ok());
  EXPECT_TRUE(gone.error().NotFound()) << gone.error().ToString();
  EXPECT_EQ(gone.error().reason, "NotFound");

  // Paging: limit=2 over 5 objects gives 3 pages; ListAll follows them.
  for (int i = 0; i < 5; ++i)
    ASSERT_API_OK(
        c.Create(kConfigMaps, "default", ConfigMap("page-" + std::to_string(i), {}, {{"set", "paging"}})));
  ListOptions o;
  o.label_selector = "set=paging";
  o.limit = 2;
  int pages = 0;
  std::set<std::string> names;
  for (;;) {
    auto page = c.List(kConfigMaps, "default", o);
    ASSERT_TRUE(page.ok()) << page.error().ToString();
    ++pages;
    EXPECT_LE((*page)["items"].size(), 2u);
    for (const auto& item : (*page)["items"]) names.insert(Name(item));
    o.continue_token = (*page)["metadata"].value("continue", "");
    if (o.continue_token.empty()) break;
  }
  EXPECT_EQ(pages, 3);
  EXPECT_EQ(names.size(), 5u);
  ListOptions all;
  all.label_selector = "set=paging";
  all.limit = 2;
  auto listed = c.ListAll(kConfigMaps, "default", all);
  ASSERT_TRUE(listed.ok()) << listed.error().ToString();
  EXPECT_EQ((*listed)["items"].size(), 5u);
  EXPECT_FALSE((*listed)["metadata"].value("resourceVersion", "").empty());

  // One client, several threads: connections are pooled, nothing is lost.
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i) {
        std::string n = "t" + std::to_string(t) + "-" + std::to_string(i);
        if (!c.Create(kConfigMaps, "default", ConfigMap(n, {}, {{"set", "threads"}})).ok()) ++failures;
        if (!c.Get(kConfigMaps, "default", n).ok()) ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  ListOptions th;
  th.label_selector = "set=threads";
  auto tl = c.ListAll(kConfigMaps, "default", th);
  ASSERT_TRUE(tl.ok());
  EXPECT_EQ((*tl)["items"].size(), 40u);

  // Raw: any path.
  auto version = c.Raw("GET", "/version");
  ASSERT_TRUE(version.ok()) << version.error().ToString();
  EXPECT_EQ((*version).value("major", ""), "1");
  auto readyz = c.Raw("GET", "/readyz");
  ASSERT_TRUE(readyz.ok());
  EXPECT_EQ(*readyz, Json("ok"));
}

Json Workload(const std::string& name) {
  return Json::parse(R"({
    "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
    "metadata": {"name": ")" +
                     name + R"(", "namespace": "default"},
    "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 1, "template": {"spec": {
      "restartPolicy": "Never",
      "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}]}}}]}})");
}

TEST(KubeClient, MergePatchApplyAndKueueStatus) {
  auto k = MustStart();
  ASSERT_TRUE(k);
  Client c(AdminConfig(*k));

  // Server-side apply creates, then updates; fields of another manager are kept.
  auto applied = c.Apply(kConfigMaps, "default", ConfigMap("ssa", {{"mine", "1"}}), "artel-test");
  ASSERT_TRUE(applied.ok()) << applied.error().ToString();
  EXPECT_EQ((*applied)["data"]["mine"], "1");
  ASSERT_API_OK(c.Apply(kConfigMaps, "default", ConfigMap("ssa", {{"theirs", "2"}}), "someone-else"));
  auto again = c.Apply(kConfigMaps, "default", ConfigMap("ssa", {{"mine", "3"}}), "artel-test");
  ASSERT_TRUE(again.ok()) << again.error().ToString();
  EXPECT_EQ((*again)["data"]["mine"], "3");
  EXPECT_EQ((*again)["data"]["theirs"], "2");
  // Without force, taking over another manager's field conflicts.
  auto taken = c.Apply(kConfigMaps, "default", ConfigMap("ssa", {{"theirs", "9"}}), "artel-test", false);
  ASSERT_FALSE(taken.ok());
  EXPECT_EQ(taken.error().http, 409) << taken.error().ToString();
  // Merge patch: set one key, delete another (null).
  auto patched = c.MergePatch(kConfigMaps, "default", "ssa", Json{{"data", {{"p", "x"}, {"mine", nullptr}}}});
  ASSERT_TRUE(patched.ok()) << patched.error().ToString();
  EXPECT_EQ((*patched)["data"]["p"], "x");
  EXPECT_FALSE((*patched)["data"].contains("mine"));

  // Kueue objects by server-side apply (cluster-scoped and namespaced).
  Json rf = {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
             {"kind", "ResourceFlavor"},
             {"metadata", {{"name", "default-flavor"}}}};
  ASSERT_API_OK(c.Apply(kResourceFlavors, "", rf, "artel-test"));
  Json cq = Json::parse(R"({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
    "metadata": {"name": "cq"}, "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["cpu"],
    "flavors": [{"name": "default-flavor", "resources": [{"name": "cpu", "nominalQuota": "4"}]}]}]}})");
  ASSERT_API_OK(c.Apply(kClusterQueues, "", cq, "artel-test"));
  Json lq = {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
             {"kind", "LocalQueue"},
             {"metadata", {{"name", "lq"}, {"namespace", "default"}}},
             {"spec", {{"clusterQueue", "cq"}}}};
  ASSERT_API_OK(c.Apply(kLocalQueues, "", lq, "artel-test"));
  auto wl = c.Create(kWorkloads, "default", Workload("w1"));
  ASSERT_TRUE(wl.ok()) << wl.error().ToString();
  auto cqs = c.ListAll(kClusterQueues, "");
  ASSERT_TRUE(cqs.ok());
  EXPECT_EQ((*cqs)["items"].size(), 1u);
  // The same objects through v1beta1 (the conversion the cluster serves).
  auto v1 = c.Get(V1beta1(kClusterQueues), "", "cq");
  ASSERT_TRUE(v1.ok()) << v1.error().ToString();
  EXPECT_EQ((*v1)["apiVersion"], "kueue.x-k8s.io/v1beta1");

  // Status subresource by apply: a pending condition. The spec is untouched.
  Json pending = {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
                  {"kind", "Workload"},
                  {"metadata", {{"name", "w1"}, {"namespace", "default"}}},
                  {"status",
                   {{"conditions",
                     {{{"type", "QuotaReserved"},
                       {"status", "False"},
                       {"reason", "Pending"},
                       {"message", "waiting for quota"},
                       {"lastTransitionTime", "2026-01-01T00:00:00Z"}}}}}}};
  auto st = c.Apply(kWorkloads, "default", pending, "artel-test", true, /*status=*/true);
  ASSERT_TRUE(st.ok()) << st.error().ToString();
  EXPECT_EQ((*st)["status"]["conditions"][0]["reason"], "Pending");
  // Status through the main resource is ignored (status is a subresource).
  Json via_main = *st;
  via_main["status"]["conditions"][0]["message"] = "should not stick";
  auto ignored = c.Update(kWorkloads, "default", via_main);
  ASSERT_TRUE(ignored.ok()) << ignored.error().ToString();
  EXPECT_EQ((*ignored)["status"]["conditions"][0]["message"], "waiting for quota");

  // UpdateStatus (PUT .../status): admission with QuotaReserved=True, as the controller writes it.
  auto admitted = UpdateWithRetry(
      c, kWorkloads, "default", "w1",
      [](Json& w) {
        w["status"]["admission"] = Json::parse(R"({"clusterQueue": "cq", "podSetAssignments": [
            {"name": "main", "flavors": {"cpu": "default-flavor"}, "resourceUsage": {"cpu": "1"}, "count": 1}]})");
        w["status"]["conditions"] =
            Json::parse(R"([{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved",
            "message": "Quota reserved in ClusterQueue cq", "lastTransitionTime": "2026-01-01T00:00:01Z"}])");
        return true;
      },
      /*status=*/true);
  ASSERT_TRUE(admitted.ok()) << admitted.error().ToString();
  EXPECT_EQ((*admitted)["status"]["admission"]["clusterQueue"], "cq");
  // Merge patch of the status subresource.
  auto ms = c.MergePatch(kWorkloads, "default", "w1", Json{{"status", {{"requeueState", {{"count", 1}}}}}},
                         /*status=*/true);
  ASSERT_TRUE(ms.ok()) << ms.error().ToString();
  EXPECT_EQ((*ms)["status"]["requeueState"]["count"], 1);
  EXPECT_EQ((*ms)["status"]["admission"]["clusterQueue"], "cq");
  // The CRD's validation answers 422 Invalid with its message.
  Json bad = Workload("bad");
  bad["spec"]["podSets"][0]["count"] = -1;
  auto invalid = c.Create(kWorkloads, "default", bad);
  ASSERT_FALSE(invalid.ok());
  EXPECT_EQ(invalid.error().http, 422);
  EXPECT_EQ(invalid.error().reason, "Invalid");
  EXPECT_NE(invalid.error().message.find("count"), std::string::npos) << invalid.error().message;
}

// Records what a watch or an informer delivers.
struct Recorder {
  std::mutex mu;
  std::vector<std::string> events;  // "TYPE name rv"
  void Add(const std::string& type, const Json& obj) {
    std::lock_guard<std::mutex> l(mu);
    events.push_back(type + " " + obj["metadata"].value("name", "") + " " +
                     obj["metadata"].value("resourceVersion", ""));
  }
  bool Has(const std::string& prefix) {
    std::lock_guard<std::mutex> l(mu);
    for (const auto& e : events)
      if (e.rfind(prefix, 0) == 0) return true;
    return false;
  }
  std::string Dump() {
    std::lock_guard<std::mutex> l(mu);
    std::string s;
    for (const auto& e : events) s += e + "\n";
    return s;
  }
};

TEST(KubeClient, WatchSeesChangesAndBookmarksAndStopsOnInterrupt) {
  auto k = MustStart({.kueue_crds = false});
  ASSERT_TRUE(k);
  Client c(AdminConfig(*k));
  auto list = c.List(kConfigMaps, "default");
  ASSERT_TRUE(list.ok());
  ListOptions o;
  o.resource_version = (*list)["metadata"].value("resourceVersion", "");
  Recorder rec;
  std::atomic<bool> stop{false};
  std::optional<ApiResult<std::string>> result;
  // timeoutSeconds=6: the API server sends a bookmark shortly before it ends the stream.
  std::thread watcher([&] {
    result = c.Watch(
        kConfigMaps, "default", o,
        [&](const WatchEvent& e) {
          rec.Add(e.type, e.object);
          return true;
        },
        &stop, 6);
  });
  ASSERT_API_OK(c.Create(kConfigMaps, "default", ConfigMap("w", {{"a", "1"}})));
  ASSERT_API_OK(c.MergePatch(kConfigMaps, "default", "w", Json{{"data", {{"a", "2"}}}}));
  ASSERT_API_OK(c.Delete(kConfigMaps, "default", "w"));
  EXPECT_TRUE(Eventually([&] { return rec.Has("DELETED w"); }, 20000)) << rec.Dump();
  EXPECT_TRUE(rec.Has("ADDED w"));
  EXPECT_TRUE(rec.Has("MODIFIED w"));
  EXPECT_TRUE(Eventually([&] { return rec.Has("BOOKMARK"); }, 20000)) << rec.Dump();
  watcher.join();  // the server ends the stream at timeoutSeconds
  ASSERT_TRUE(result && result->ok()) << (result ? result->error().ToString() : "no result");
  EXPECT_FALSE(result->value().empty());
  EXPECT_NE(result->value(), o.resource_version);

  // A watch blocked with nothing to say returns as soon as it is interrupted.
  result.reset();
  auto now = c.List(kConfigMaps, "default");
  ASSERT_TRUE(now.ok());
  o.resource_version = (*now)["metadata"].value("resourceVersion", "");
  Recorder rec2;
  std::thread blocked([&] {
    result = c.Watch(
        kConfigMaps, "default", o,
        [&](const WatchEvent& e) {
          rec2.Add(e.type, e.object);
          return true;
        },
        &stop, 300);
  });
  // It is connected once it has delivered an event; then it waits in a read.
  ASSERT_API_OK(c.Create(kConfigMaps, "default", ConfigMap("w2", {})));
  ASSERT_TRUE(Eventually([&] { return rec2.Has("ADDED w2"); }, 20000)) << rec2.Dump();
  auto t0 = std::chrono::steady_clock::now();
  stop = true;
  // The watch is in a read (it has delivered an event): one cut ends it.
  c.Interrupt(&stop);
  blocked.join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  ASSERT_TRUE(result && result->ok()) << (result ? result->error().ToString() : "no result");
}

// Compares the informer's cache with a fresh list (names and resourceVersions).
std::map<std::string, std::string> ByName(const std::vector<Json>& items) {
  std::map<std::string, std::string> m;
  for (const auto& i : items) m[Name(i)] = Rv(i);
  return m;
}
std::map<std::string, std::string> Fresh(Client& c, const std::string& selector) {
  ListOptions o;
  o.label_selector = selector;
  auto l = c.ListAll(kConfigMaps, "default", o);
  if (!l.ok()) return {{"error", l.error().ToString()}};
  return ByName((*l)["items"].get<std::vector<Json>>());
}

Informer::Handler Recording(Recorder* rec, std::atomic<int>* synced) {
  Informer::Handler h;
  h.on_add = [rec](const Json& o) { rec->Add("add", o); };
  h.on_update = [rec](const Json& o) { rec->Add("update", o); };
  h.on_delete = [rec](const Json& o) { rec->Add("delete", o); };
  h.on_synced = [synced] { ++*synced; };
  return h;
}

TEST(KubeClient, InformerRelistsAfter410AndDeliversTheDifference) {
  auto k = MustStart({.kueue_crds = false});
  ASSERT_TRUE(k);
  Client c(AdminConfig(*k));
  for (const char* n : {"keep", "change", "remove"})
    ASSERT_API_OK(c.Create(kConfigMaps, "default", ConfigMap(n, {{"v", "0"}}, {{"set", "inf"}})));
  Recorder rec;
  std::atomic<int> synced{0};
  ListOptions sel;
  sel.label_selector = "set=inf";
  Informer inf(&c, kConfigMaps, "default", Recording(&rec, &synced), sel);
  inf.SetPageSize(2);            // the list is paged
  inf.SetBackoff(60000, 60000);  // after an error it waits until the test wakes it (Stop/Retry)
  inf.Start();
  // A second informer keeps only each object's identity (the controller's setting): the same
  // events, and a cache of namespace, name, uid and resourceVersion only.
  Recorder slim_rec;
  std::atomic<int> slim_synced{0};
  Informer slim(&c, kConfigMaps, "default", Recording(&slim_rec, &slim_synced), sel);
  slim.SetPageSize(2);
  slim.SetBackoff(60000, 60000);
  slim.SetSlimCache(true);
  slim.Start();
  ASSERT_TRUE(Eventually([&] { return inf.HasSynced() && synced.load() == 1; }, 20000)) << inf.last_error();
  ASSERT_TRUE(Eventually([&] { return slim.HasSynced() && slim_synced.load() == 1; }, 20000))
      << slim.last_error();
  EXPECT_EQ(ByName(inf.Snapshot()), Fresh(c, "set=inf"));
  EXPECT_EQ(ByName(slim.Snapshot()), Fresh(c, "set=inf"));
  for (const Json& o : slim.Snapshot()) {
    EXPECT_EQ(o.size(), 1u) << o.dump();  // metadata only
    EXPECT_FALSE(o["metadata"].value("uid", "").empty()) << o.dump();
    EXPECT_FALSE(o["metadata"].contains("labels")) << o.dump();
  }
  EXPECT_TRUE(rec.Has("add keep") && rec.Has("add change") && rec.Has("add remove")) << rec.Dump();
  EXPECT_TRUE(slim_rec.Has("add keep") && slim_rec.Has("add change") && slim_rec.Has("add remove"))
      << slim_rec.Dump();

  // Cut the informer off while the history it knows is compacted away.
  ASSERT_TRUE(k->StopApiServer().ok());
  ASSERT_TRUE(Eventually([&] { return inf.reconnects() >= 1; }, 20000));  // it noticed, and waits
  ASSERT_TRUE(Eventually([&] { return slim.reconnects() >= 1; }, 20000));
  ASSERT_TRUE(k->StartApiServer().ok()) << k->LogTail("kube-apiserver");
  std::string stale_rv = inf.resource_version();
  ASSERT_API_OK(c.Create(kConfigMaps, "default", ConfigMap("new", {{"v", "1"}}, {{"set", "inf"}})));
  ASSERT_API_OK(c.MergePatch(kConfigMaps, "default", "change", Json{{"data", {{"v", "1"}}}}));
  ASSERT_API_OK(c.Delete(kConfigMaps, "default", "remove"));
  ASSERT_TRUE(k->CompactEtcd().ok());
  // Restarted so that its watch cache does not hold the history either.
  ASSERT_TRUE(k->RestartApiServer().ok()) << k->LogTail("kube-apiserver");

  // A plain watch from the stale resourceVersion: 410.
  ListOptions old;
  old.resource_version = stale_rv;
  auto w = c.Watch(
      kConfigMaps, "default", old, [](const WatchEvent&) { return true; }, nullptr, 5);
  ASSERT_FALSE(w.ok());
  EXPECT_TRUE(w.error().Gone()) << w.error().ToString();

  // The informer resumes from the stale resourceVersion, gets 410, re-lists.
  inf.SetBackoff(50, 1000);
  inf.Retry();
  slim.SetBackoff(50, 1000);
  slim.Retry();
  ASSERT_TRUE(Eventually([&] { return inf.relists() >= 1; }, 30000)) << inf.last_error();
  ASSERT_TRUE(Eventually([&] { return ByName(inf.Snapshot()) == Fresh(c, "set=inf"); }, 20000));
  EXPECT_TRUE(Eventually([&] { return synced.load() == 2; }, 5000));
  EXPECT_TRUE(rec.Has("add new")) << rec.Dump();
  EXPECT_TRUE(rec.Has("update change")) << rec.Dump();
  EXPECT_TRUE(rec.Has("delete remove")) << rec.Dump();
  EXPECT_FALSE(rec.Has("update keep")) << rec.Dump();  // unchanged: nothing delivered
  ASSERT_TRUE(Eventually([&] { return slim.relists() >= 1; }, 30000)) << slim.last_error();
  ASSERT_TRUE(Eventually([&] { return ByName(slim.Snapshot()) == Fresh(c, "set=inf"); }, 20000));
  EXPECT_TRUE(Eventually([&] { return slim_synced.load() == 2; }, 5000));
  EXPECT_TRUE(slim_rec.Has("add new")) << slim_rec.Dump();
  EXPECT_TRUE(slim_rec.Has("update change")) << slim_rec.Dump();
  EXPECT_TRUE(slim_rec.Has("delete remove")) << slim_rec.Dump();
  EXPECT_FALSE(slim_rec.Has("update keep")) << slim_rec.Dump();
  slim.Stop();
  // And it watches again: a later change arrives without another list.
  uint64_t relists = inf.relists();
  ASSERT_API_OK(c.MergePatch(kConfigMaps, "default", "keep", Json{{"data", {{"v", "2"}}}}));
  EXPECT_TRUE(Eventually([&] { return rec.Has("update keep"); }, 20000)) << rec.Dump();
  EXPECT_EQ(inf.relists(), relists);
  auto t0 = std::chrono::steady_clock::now();
  inf.Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
}

TEST(KubeClient, InformerReconnectsAcrossAnApiServerRestart) {
  auto k = MustStart({.kueue_crds = false});
  ASSERT_TRUE(k);
  Client c(AdminConfig(*k));
  for (const char* n : {"a", "b"})
    ASSERT_API_OK(c.Create(kConfigMaps, "default", ConfigMap(n, {{"v", "0"}}, {{"set", "rs"}})));
  Recorder rec;
  std::atomic<int> synced{0};
  ListOptions sel;
  sel.label_selector = "set=rs";
  Informer inf(&c, kConfigMaps, "default", Recording(&rec, &synced), sel);
  inf.SetBackoff(100, 1000);
  inf.Start();
  ASSERT_TRUE(Eventually([&] { return inf.HasSynced(); }, 20000)) << inf.last_error();
  // A change before the outage arrives through the watch.
  ASSERT_API_OK(c.MergePatch(kConfigMaps, "default", "a", Json{{"data", {{"v", "1"}}}}));
  ASSERT_TRUE(Eventually([&] { return rec.Has("update a"); }, 20000)) << rec.Dump();

  // Kill the API server in the middle of the watch, start it again, change
  // things at once (the informer may or may not have reconnected yet).
  ASSERT_TRUE(k->StopApiServer().ok());
  ASSERT_TRUE(Eventually([&] { return inf.reconnects() >= 1; }, 20000)) << inf.last_error();
  ASSERT_TRUE(k->StartApiServer().ok()) << k->LogTail("kube-apiserver");
  ASSERT_API_OK(c.Create(kConfigMaps, "default", ConfigMap("c", {{"v", "0"}}, {{"set", "rs"}})));
  ASSERT_API_OK(c.MergePatch(kConfigMaps, "default", "b", Json{{"data", {{"v", "1"}}}}));
  ASSERT_API_OK(c.Delete(kConfigMaps, "default", "a"));
  EXPECT_TRUE(Eventually([&] { return ByName(inf.Snapshot()) == Fresh(c, "set=rs"); }, 30000))
      << inf.last_error() << "\n"
      << rec.Dump();
  EXPECT_TRUE(rec.Has("add c")) << rec.Dump();
  EXPECT_TRUE(rec.Has("update b")) << rec.Dump();
  EXPECT_TRUE(rec.Has("delete a")) << rec.Dump();
  // After the outage: changes keep coming.
  ASSERT_API_OK(c.MergePatch(kConfigMaps, "default", "c", Json{{"data", {{"v", "after"}}}}));
  ASSERT_TRUE(Eventually(
      [&] {
        for (const auto& o : inf.Snapshot())
          if (Name(o) == "c" && o["data"].value("v", "") == "after") return true;
        return false;
      },
      20000))
      << rec.Dump();
  auto t0 = std::chrono::steady_clock::now();
  inf.Stop();  // blocked in a watch with a 300 s timeout: returns at once
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
}

TEST(KubeClient, CertificateAndTokenAuthAndRbacRefusals) {
  auto k = MustStart({.kueue_crds = false});
  ASSERT_TRUE(k);
  Client admin(AdminConfig(*k));
  // Who am I: the admin certificate is in system:masters.
  Json review = {{"apiVersion", "authentication.k8s.io/v1"}, {"kind", "SelfSubjectReview"}};
  auto me = admin.Raw("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", review.dump());
  ASSERT_TRUE(me.ok()) << me.error().ToString();

  // A certificate user without rights: 403 Forbidden with RBAC's message.
  auto alice_kc = k->UserKubeconfig("alice", {"artel-test"});
  ASSERT_TRUE(alice_kc.ok()) << alice_kc.status().ToString();
  auto alice_cfg = LoadKubeconfig(alice_kc.value());
  ASSERT_TRUE(alice_cfg.ok()) << alice_cfg.status().ToString();
  Client alice(alice_cfg.value());
  auto who = alice.Raw("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", review.dump());
  ASSERT_TRUE(who.ok()) << who.error().ToString();
  EXPECT_EQ((*who)["status"]["userInfo"]["username"], "alice");
  auto refused = alice.List(kConfigMaps, "default");
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(refused.error().Forbidden()) << refused.error().ToString();
  EXPECT_EQ(refused.error().reason, "Forbidden");
  EXPECT_NE(refused.error().message.find("alice"), std::string::npos) << refused.error().message;
  // Granted by a Role: the same request passes.
  ASSERT_API_OK(admin.Create(Resource{"rbac.authorization.k8s.io", "v1", "roles", true}, "default",
                             Json::parse(R"({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
      "metadata": {"name": "cm-reader"}, "rules": [{"apiGroups": [""], "resources": ["configmaps"],
      "verbs": ["get", "list", "watch"]}]})")));
  ASSERT_API_OK(
      admin.Create(Resource{"rbac.authorization.k8s.io", "v1", "rolebindings", true}, "default",
                   Json::parse(R"({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
      "metadata": {"name": "cm-reader"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
      "name": "cm-reader"}, "subjects": [{"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"}]})")));
  EXPECT_TRUE(Eventually([&] { return alice.List(kConfigMaps, "default").ok(); }, 20000));

  // Bearer token of a ServiceAccount (TokenRequest API), inline and from a file.
  ASSERT_API_OK(admin.Create(
      Resource{"", "v1", "serviceaccounts", true}, "default",
      Json{{"apiVersion", "v1"}, {"kind", "ServiceAccount"}, {"metadata", {{"name", "robot"}}}}));
  auto tr = admin.Raw(
      "POST", "/api/v1/namespaces/default/serviceaccounts/robot/token",
      R"({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 600}})");
  ASSERT_TRUE(tr.ok()) << tr.error().ToString();
  std::string token = (*tr)["status"].value("token", "");
  ASSERT_FALSE(token.empty());
  ClientConfig tc;
  tc.server = k->server();
  tc.ca_pem = admin.config().ca_pem;
  tc.bearer_token = token;
  Client robot(tc);
  auto rw = robot.Raw("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", review.dump());
  ASSERT_TRUE(rw.ok()) << rw.error().ToString();
  EXPECT_EQ((*rw)["status"]["userInfo"]["username"], "system:serviceaccount:default:robot");
  auto robot_refused = robot.Get(kConfigMaps, "default", "anything");
  ASSERT_FALSE(robot_refused.ok());
  EXPECT_TRUE(robot_refused.error().Forbidden()) << robot_refused.error().ToString();

  std::string token_path = k->dir() + "/robot.token";
  std::ofstream(token_path) << token << "\n";
  ClientConfig fc = tc;
  fc.bearer_token.clear();
  fc.token_file = token_path;
  Client from_file(fc);
  auto fw = from_file.Raw("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", review.dump());
  ASSERT_TRUE(fw.ok()) << fw.error().ToString();
  EXPECT_EQ((*fw)["status"]["userInfo"]["username"], "system:serviceaccount:default:robot");

  // A wrong token: 401.
  ClientConfig bad = tc;
  bad.bearer_token = "not-a-token";
  Client nobody(bad);
  auto unauth = nobody.Get(kConfigMaps, "default", "x");
  ASSERT_FALSE(unauth.ok());
  EXPECT_EQ(unauth.error().http, 401) << unauth.error().ToString();

  // The server's certificate is checked against the CA: another CA fails
  // the handshake; insecure-skip-tls-verify accepts it.
  ClientConfig wrong_ca = tc;
  wrong_ca.ca_pem = alice_cfg->client_cert_pem;  // a certificate, but not the CA
  Client mitm(wrong_ca);
  auto tls = mitm.Raw("GET", "/version");
  ASSERT_FALSE(tls.ok());
  EXPECT_TRUE(tls.error().Transport()) << tls.error().ToString();
  ClientConfig skip = tc;
  skip.ca_pem.clear();
  skip.insecure_skip_tls_verify = true;
  Client loose(skip);
  EXPECT_TRUE(loose.Raw("GET", "/version").ok());
  // No CA at all: the system roots do not know the test CA.
  ClientConfig system_roots = tc;
  system_roots.ca_pem.clear();
  Client sys(system_roots);
  auto sys_tls = sys.Raw("GET", "/version");
  ASSERT_FALSE(sys_tls.ok());
  EXPECT_TRUE(sys_tls.error().Transport());
}

TEST(KubeClient, RateLimiterCapsABurst) {
  auto k = MustStart({.kueue_crds = false});
  ASSERT_TRUE(k);
  ClientConfig cfg = AdminConfig(*k);
  cfg.qps = 1000;
  cfg.burst = 3;
  Client c(cfg);
  // A clock that never moves: no refill, so exactly the burst passes at once
  // and each later request is held back (1 ms each, so the test stays fast).
  c.SetRateLimiterClock([] { return int64_t{0}; });
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 3; ++i)
        if (c.Get(kNamespaces, "", "default").ok()) ++ok;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 12);
  EXPECT_EQ(c.requests(), 12u);
  EXPECT_EQ(c.throttled(), 9u);
}

}  // namespace
}  // namespace artel::kube
