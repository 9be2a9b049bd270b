// Issue 10, section 1: a team's guarantee holds on the host's real GPUs.
// arteld presents its GPUs as node pools labelled like GPU feature discovery
// (plus the config's nodePools); a flavor has capacity only in the pools its
// nodeLabels and tolerations match, a workload runs only on GPUs of its
// flavor's pool, and a flavor that matches no pool is warned about in the
// log, in the ClusterQueue's status and by `artel check --inventory`.
//
// These tests run the README's own configuration, examples/dev-cluster.

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <chrono>
#include <map>
#include <set>

#include "harness.h"

namespace artel::testing {
namespace {

const std::string kSrc = ARTEL_SOURCE_DIR;
const std::string kConfig = kSrc + "/examples/dev-cluster/arteld.yaml";
constexpr const char* kAdmin = "demo-admin-token";
constexpr const char* kNlp = "demo-nlp-token";
constexpr const char* kSpeech = "demo-speech-token";
constexpr const char* kVision = "demo-vision-token";

// Prints its GPUs, then runs until SIGTERM (bounded: a failed test leaves
// no long-lived pod).
const std::vector<std::string> kEchoThenWait = {"/bin/sh", "-c",
                                                "echo \"$CUDA_VISIBLE_DEVICES\"; exec sleep 120"};

// The dev-cluster's tokens, in a private copy (0600) for this test.
std::string Tokens(const std::string& dir) {
  std::string path = dir + "/tokens.yaml";
  WriteFile(path, ReadFile(kSrc + "/examples/dev-cluster/tokens.yaml"));
  chmod(path.c_str(), 0600);
  return path;
}

std::vector<std::string> Flags(const std::string& dir, std::vector<std::string> extra = {}) {
  std::vector<std::string> f = {"--config", kConfig, "--tokens", Tokens(dir), "--grace-period", "1"};
  f.insert(f.end(), extra.begin(), extra.end());
  return f;
}

std::string Path(const std::string& ns, const std::string& name) {
  return "/api/v1/namespaces/" + ns + "/workloads/" + name;
}

std::string PhaseOf(const Arteld& d, const std::string& ns, const std::string& name) {
  Json w = d.Get(Path(ns, name), kAdmin).json();
  return w.is_object() && w.contains("status") ? w["status"].value("phase", "") : "";
}

// GPU UUID -> node pool (label artel.dev/node-pool of the GPU's node).
std::map<std::string, std::string> PoolOfGpu(const Arteld& d) {
  std::map<std::string, std::string> pool_of_node, out;
  const Json nodes = d.Get("/api/v1/nodes", kAdmin).json();
  for (const Json& n : nodes["items"]) {
    pool_of_node[n.value("name", "")] = n["labels"].value("artel.dev/node-pool", "");
  }
  const Json gpus = d.Get("/api/v1/gpus", kAdmin).json();
  for (const Json& g : gpus["items"]) {
    out[g.value("uuid", "")] = pool_of_node[g.value("node", "")];
  }
  return out;
}

struct Running {
  std::string flavor;
  std::vector<std::string> gpus;
};

// The running workloads of `ns`: flavor of nvidia.com/gpu and the pods' GPUs.
std::map<std::string, Running> RunningIn(const Arteld& d, const std::string& ns) {
  std::map<std::string, Running> out;
  const Json list = d.Get("/api/v1/namespaces/" + ns + "/workloads", kAdmin).json();
  for (const Json& w : list["items"]) {
    if (w["status"].value("phase", "") != "Running") continue;
    Running r;
    r.flavor = w["status"]["admission"]["podSets"][0]["flavors"].value("nvidia.com/gpu", "");
    for (const Json& p : w["status"].value("pods", Json::array())) {
      for (const Json& g : p["gpus"]) r.gpus.push_back(g.get<std::string>());
    }
    out[w["metadata"].value("name", "")] = r;
  }
  return out;
}

int GpusOn(const std::map<std::string, Running>& rs, const std::string& flavor) {
  int n = 0;
  for (const auto& [name, r] : rs) n += r.flavor == flavor ? static_cast<int>(r.gpus.size()) : 0;
  return n;
}

TEST(InventoryTest, GuaranteeHoldsOnTheDevClusterAndPodsRunOnTheirFlavorsPool) {
  std::string dir = TempDir("inventory");
  Arteld d(dir);
  ASSERT_TRUE(d.Start(Flags(dir))) << d.log();
  // Every flavor of the dev cluster has GPUs on the fake host.
  const Json cqs = d.Get("/api/v1/clusterqueues", kAdmin).json();
  for (const Json& cq : cqs["items"]) {
    EXPECT_TRUE(cq["flavorsWithoutNodes"].empty()) << cq.dump();
  }
  // vision takes its own 16 A100-80GB (its guarantee).
  for (int i = 0; i < 4; ++i) {
    std::string name = "v" + std::to_string(i);
    ASSERT_EQ(d.Post("/api/v1/workloads", Workload("team-vision", name, "default", 4, kEchoThenWait).dump(),
                     kVision)
                  .status,
              201);
  }
  ASSERT_TRUE(WaitFor([&] { return RunningIn(d, "team-vision").size() == 4; }, 20000)) << d.log();
  // nlp: 12 jobs of 4 GPUs, no selector (`artel run` as tenant nlp).
  for (int i = 0; i < 12; ++i) {
    std::string name = "n" + std::to_string(i);
    ASSERT_EQ(
        d.Post("/api/v1/workloads", Workload("team-nlp", name, "default", 4, kEchoThenWait).dump(), kNlp)
            .status,
        201);
  }
  ASSERT_TRUE(WaitFor([&] { return RunningIn(d, "team-nlp").size() == 12; }, 30000)) << d.log();
  auto nlp = RunningIn(d, "team-nlp");
  // nlp's 16 + the 16 A100-80GB nobody claims yet (speech's), the rest on A100-40GB.
  EXPECT_EQ(GpusOn(nlp, "a100-80g"), 32);
  EXPECT_EQ(GpusOn(nlp, "a100-40g"), 16);

  // speech's prod job (priority class prod), well inside its guarantee: it
  // runs at once on a pool where speech's own quota is free (Kueue's flavor
  // fungibility tries the next flavor before preempting: h100 here).
  Json prod = Workload("team-speech", "prod", "prod", 4, kEchoThenWait);
  prod["spec"]["priorityClassName"] = "prod-workload";
  ASSERT_EQ(d.Post("/api/v1/workloads", prod.dump(), kSpeech).status, 201);
  // One cycle (1 s) plus the grace period (1 s), and slack for a loaded host.
  ASSERT_TRUE(WaitFor([&] { return PhaseOf(d, "team-speech", "prod") == "Running"; }, 1000 + 1000 + 5000))
      << d.Get(Path("team-speech", "prod") + "/why", kAdmin).body << "\n"
      << d.log();
  // A second prod job pinned to A100-80GB: that pool is full (vision 16, nlp
  // 32 of which 16 are borrowed from speech), so it reclaims nlp's borrowed
  // GPUs through quota preemption, which works now that nlp can only borrow
  // GPUs that exist.
  Json pinned = Workload("team-speech", "prod-a100", "prod", 4, kEchoThenWait);
  pinned["spec"]["priorityClassName"] = "prod-workload";
  pinned["spec"]["podSets"][0]["nodeSelector"] = {{"nvidia.com/gpu.product", "NVIDIA-A100-SXM4-80GB"}};
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(d.Post("/api/v1/workloads", pinned.dump(), kSpeech).status, 201);
  ASSERT_TRUE(
      WaitFor([&] { return PhaseOf(d, "team-speech", "prod-a100") == "Running"; }, 1000 + 1000 + 5000))
      << d.Get(Path("team-speech", "prod-a100") + "/why", kAdmin).body << "\n"
      << d.log();
  auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  RecordProperty("speech_reclaim_running_ms", std::to_string(ms));
  EXPECT_EQ(RunningIn(d, "team-speech").at("prod-a100").flavor, "a100-80g");

  // nlp keeps at most its guarantee (16) plus what nobody else claims
  // (48 - vision 16 - speech 4 = 28 A100-80GB); the evicted job waits or
  // runs on the A100-40GB pool.
  nlp = RunningIn(d, "team-nlp");
  EXPECT_GE(GpusOn(nlp, "a100-80g"), 16);
  EXPECT_LE(GpusOn(nlp, "a100-80g"), 28);
  EXPECT_EQ(GpusOn(RunningIn(d, "team-vision"), "a100-80g"), 16);

  // Every running pod's GPUs are GPUs of its flavor's pool, and the pod sees
  // exactly them (CUDA_VISIBLE_DEVICES).
  auto pool_of = PoolOfGpu(d);
  std::set<std::string> seen;
  for (const char* ns : {"team-vision", "team-nlp", "team-speech"}) {
    for (const auto& [name, r] : RunningIn(d, ns)) {
      EXPECT_EQ(r.gpus.size(), 4u) << ns << "/" << name;
      for (const std::string& g : r.gpus) {
        EXPECT_EQ(pool_of[g], r.flavor)
            << ns << "/" << name << " admitted on " << r.flavor << " runs on " << g;
        EXPECT_TRUE(seen.insert(g).second) << "GPU " << g << " given twice";
      }
      // The pod's last line (a requeued workload's log holds each run).
      const std::string log_path = dir + "/data/logs/" + ns + "/" + name + "/main-0.log";
      auto last_line = [&] {
        std::string log = ReadFile(log_path);
        while (!log.empty() && log.back() == '\n') log.pop_back();
        return log.substr(log.rfind('\n') == std::string::npos ? 0 : log.rfind('\n') + 1);
      };
      std::string want;
      for (const std::string& g : r.gpus) want += (want.empty() ? "" : ",") + g;
      EXPECT_TRUE(WaitFor([&] { return last_line() == want; }, 10000))
          << ns << "/" << name << ": " << last_line();
    }
  }
  EXPECT_TRUE(d.Stop()) << d.log();
  std::filesystem::remove_all(dir);
}

// The README's original command with 48 A100-80GB only: a100-40g, h100 and
// the other pools have no GPUs. Their flavors are warned about, and no
// workload is admitted on them: nlp's overflow waits instead of running on
// A100s charged to a100-40g, and a job pinned to H100 PCIe stays pending
// with a clear reason.
TEST(InventoryTest, FlavorsWithoutGpusAreWarnedAboutAndNeverAdmitted) {
  std::string dir = TempDir("inventory-missing");
  Arteld d(dir);
  ASSERT_TRUE(d.Start(Flags(dir, {"--fake-gpus", "48xA100-80GB"}))) << d.log();
  // The log, at start.
  std::string log = d.log();
  EXPECT_NE(log.find("flavor matches no node"), std::string::npos) << log;
  EXPECT_NE(log.find("flavor=h100"), std::string::npos) << log;
  EXPECT_NE(log.find("flavor=a100-40g"), std::string::npos) << log;
  EXPECT_EQ(log.find("flavor=a100-80g "), std::string::npos) << log;
  // The ClusterQueue's status.
  auto cq_missing = [&](const std::string& cq) {
    std::set<std::string> out;
    const Json cqs = d.Get("/api/v1/clusterqueues", kAdmin).json();
    for (const Json& q : cqs["items"]) {
      if (q.value("name", "") != cq) continue;
      for (const Json& f : q["flavorsWithoutNodes"]) out.insert(f.get<std::string>());
      EXPECT_EQ(q["warnings"].size(), q["flavorsWithoutNodes"].size()) << q.dump();
    }
    return out;
  };
  std::set<std::string> missing = cq_missing("nlp-regular");
  EXPECT_TRUE(missing.count("a100-40g") && missing.count("h100") && missing.count("hgx-h100")) << d.log();
  EXPECT_FALSE(missing.count("a100-80g"));

  // nlp's 12 jobs: 8 run on a100-80g (32 GPUs); the 4 that quota would put
  // on a100-40g are not admitted there (no such GPU) and wait.
  for (int i = 0; i < 12; ++i) {
    std::string name = "n" + std::to_string(i);
    ASSERT_EQ(
        d.Post("/api/v1/workloads", Workload("team-nlp", name, "default", 4, kEchoThenWait).dump(), kNlp)
            .status,
        201);
  }
  // A job pinned to H100 PCIe, which this host does not have.
  Json pinned = Workload("team-nlp", "pinned", "default", 4, kEchoThenWait);
  pinned["spec"]["podSets"][0]["nodeSelector"] = {{"nvidia.com/gpu.product", "NVIDIA-H100-PCIe"}};
  ASSERT_EQ(d.Post("/api/v1/workloads", pinned.dump(), kNlp).status, 201);
  ASSERT_TRUE(WaitFor([&] { return RunningIn(d, "team-nlp").size() == 8; }, 30000)) << d.log();
  Json why;
  ASSERT_TRUE(WaitFor(
      [&] {
        why = d.Get(Path("team-nlp", "pinned") + "/why", kNlp).json();
        return why.value("reason", "") == "Infeasible" || why.value("reason", "") == "Unschedulable";
      },
      10000))
      << why.dump();
  // Infeasible: no node pool has the H100 PCIe product label (nor the h100
  // flavor's labels); it is not admitted on h100.
  EXPECT_EQ(why.value("reason", ""), "Infeasible") << why.dump();
  EXPECT_NE(why.value("message", "").find("nodeSelector"), std::string::npos) << why.dump();
  EXPECT_FALSE(d.Get(Path("team-nlp", "pinned"), kNlp).json()["status"].contains("admission"));
  // speech's prod job runs on its free A100-80GB guarantee.
  Json prod = Workload("team-speech", "prod", "prod", 4, kEchoThenWait);
  prod["spec"]["priorityClassName"] = "prod-workload";
  ASSERT_EQ(d.Post("/api/v1/workloads", prod.dump(), kSpeech).status, 201);
  ASSERT_TRUE(WaitFor([&] { return PhaseOf(d, "team-speech", "prod") == "Running"; }, 1000 + 1000 + 5000))
      << d.log();
  // Nothing was ever admitted on a flavor without GPUs.
  const Json all = d.Get("/api/v1/workloads", kAdmin).json();
  for (const Json& w : all["items"]) {
    std::string phase = w["status"].value("phase", "");
    if (phase == "Pending") continue;
    EXPECT_EQ(w["status"]["admission"]["podSets"][0]["flavors"].value("nvidia.com/gpu", ""), "a100-80g")
        << w.dump();
  }
  auto nlp = RunningIn(d, "team-nlp");
  EXPECT_EQ(nlp.size(), 8u);
  EXPECT_EQ(GpusOn(nlp, "a100-80g"), 32);
  EXPECT_EQ(PhaseOf(d, "team-nlp", "pinned"), "Pending");

  // On a config change: a new flavor that matches nothing is warned about.
  const std::string ghost = R"(apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: ghost}
spec:
  nodeLabels: {artel.dev/node-pool: ghost}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: ghost-queue}
spec:
  namespaceSelector: {}
  resourceGroups:
    - coveredResources: [nvidia.com/gpu]
      flavors:
        - name: ghost
          resources: [{name: nvidia.com/gpu, nominalQuota: 8}]
)";
  HttpResult r = d.Post("/api/v1/apply", ghost, kAdmin, "application/yaml");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(WaitFor([&] { return d.log().find("flavor=ghost") != std::string::npos; }, 5000)) << d.log();
  EXPECT_EQ(cq_missing("ghost-queue"), std::set<std::string>{"ghost"});

  // `artel check --inventory` says the same before arteld ever starts.
  std::string out, err;
  int rc = RunCommand({ARTEL_BIN, "check", "--inventory", "--config", kConfig, "--fake-gpus", "48xA100-80GB"},
                      {}, &out, &err);
  EXPECT_EQ(rc, 0) << out << err;
  EXPECT_NE(err.find("warning: ResourceFlavor h100 matches no node"), std::string::npos) << out << err;
  EXPECT_NE(err.find("warning: ResourceFlavor a100-40g matches no node"), std::string::npos) << out << err;
  EXPECT_NE(out.find("nvidia.com/gpu.product=NVIDIA-A100-SXM4-80GB"), std::string::npos) << out;
  EXPECT_TRUE(d.Stop()) << d.log();
  std::filesystem::remove_all(dir);
}

// `artel check --inventory` on the dev cluster's own inventory: one node pool
// per flavor pool, GFD labels, and no warning.
TEST(InventoryTest, CheckInventoryDescribesTheDevClusterPools) {
  std::string out, err;
  int rc = RunCommand({ARTEL_BIN, "check", "--inventory", "--config", kConfig}, {}, &out, &err);
  ASSERT_EQ(rc, 0) << out << err;
  EXPECT_NE(out.find("ok: every flavor matches a node pool"), std::string::npos) << out << err;
  EXPECT_EQ(err.find("warning"), std::string::npos) << err;
  for (const char* want :
       {"label nvidia.com/gpu.product=NVIDIA-H100-PCIe", "label nvidia.com/gpu.product=NVIDIA-A100-SXM4-40GB",
        "label nvidia.com/gpu.memory=81920", "label nvidia.com/mig.config=all-1g.10gb",
        "label nvidia.com/mig.capable=true", "taint artel.dev/dedicated=hgx:NoSchedule",
        "flavor h100: ", "162 GPUs"}) {
    EXPECT_NE(out.find(want), std::string::npos) << want << "\n" << out;
  }
}

// A journaled placement names its node pool and GPUs: after a crash and a
// restart whose config lists the pools in another order, a running pod keeps
// its GPUs in its own pool, and they are not handed out again.
TEST(InventoryTest, PlacementsSurviveARestartWithReorderedPools) {
  std::string dir = TempDir("inventory-restart");
  WriteFile(dir + "/cluster.yaml", kTwoTeamsManifests);  // flavor a100 without nodeLabels: any pool
  auto config = [&](bool reversed) {
    std::string a = "  - name: big\n    gpus: {product: A100-80GB}\n";
    std::string b = "  - name: small\n    gpus: {product: A100-40GB}\n";
    WriteFile(dir + "/arteld.yaml",
              "fakeGpus: 2xA100-80GB,2xA100-40GB\nnodePools:\n" + (reversed ? b + a : a + b));
    return std::vector<std::string>{
        "--config", dir + "/arteld.yaml", "-m", dir + "/cluster.yaml", "--grace-period", "0"};
  };
  auto pinned = [&](const std::string& name, int gpus) {
    Json w = Workload("team-a", name, "default", gpus, kEchoThenWait);
    w["spec"]["podSets"][0]["nodeSelector"] = {{"artel.dev/node-pool", "small"}};
    return w.dump();
  };
  Arteld d(dir);
  ASSERT_TRUE(d.Start(config(false))) << d.log();
  ASSERT_EQ(d.Post("/api/v1/workloads", pinned("first", 1)).status, 201);
  ASSERT_TRUE(WaitFor([&] { return d.Phase("team-a", "first") == "Running"; }, 20000)) << d.log();
  Json w = d.Get(Path("team-a", "first")).json();
  const std::string gpu = w["status"]["pods"][0]["gpus"][0];
  d.Kill(SIGKILL);
  ASSERT_TRUE(d.Start(config(true))) << d.log();
  ASSERT_TRUE(WaitFor([&] { return d.Phase("team-a", "first") == "Running"; }, 20000)) << d.log();
  w = d.Get(Path("team-a", "first")).json();
  EXPECT_EQ(w["status"]["pods"][0]["gpus"][0], gpu) << w.dump();
  EXPECT_EQ(d.log().find("journaled placement does not match"), std::string::npos) << d.log();
  // The small pool has one free GPU: a 2-GPU job pinned to it waits.
  ASSERT_EQ(d.Post("/api/v1/workloads", pinned("second", 2)).status, 201);
  Json why;
  ASSERT_TRUE(WaitFor(
      [&] {
        why = d.Get(Path("team-a", "second") + "/why").json();
        return why.value("reason", "") == "Unschedulable";
      },
      10000))
      << why.dump() << d.log();
  EXPECT_EQ(d.Phase("team-a", "second"), "Pending");
  // A 1-GPU job pinned to it gets the other GPU of the pool.
  ASSERT_EQ(d.Post("/api/v1/workloads", pinned("third", 1)).status, 201);
  ASSERT_TRUE(WaitFor([&] { return d.Phase("team-a", "third") == "Running"; }, 20000)) << d.log();
  Json t = d.Get(Path("team-a", "third")).json();
  EXPECT_NE(t["status"]["pods"][0]["gpus"][0], gpu) << t.dump();
  EXPECT_TRUE(d.Stop()) << d.log();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace artel::testing
