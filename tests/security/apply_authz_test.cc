// Apply checks what the engine applies (issue 10 section 4, audit D1, D10).
//
// A tenant may never create or change a cluster-scoped object, or an object
// outside its namespaces, by any YAML form: every trick of the corpus below
// is refused (403 naming the object, or 400) and changes nothing, or, when
// it only holds the tenant's own objects, is applied as written. Every
// applied object is listed by GET /api/v1/config. An object of the startup
// manifests cannot be changed through the API (409 naming the file), and
// what the API did apply survives kill -9 and restart.

#include <gtest/gtest.h>
#include <signal.h>

#include <set>

#include "../server/harness.h"

namespace artel::testing {
namespace {

const std::string kLq =
    "apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {name: ok-lq, namespace: team-a}\n"
    "spec: {clusterQueue: team-a}\n";
const std::string kRqOther =
    "{apiVersion: v1, kind: ResourceQuota, metadata: {name: gpu-zero, namespace: team-b}, "
    "spec: {hard: {requests.nvidia.com/gpu: '0'}}}";
const std::string kPcFlow =
    "{apiVersion: kueue.x-k8s.io/v1beta2, kind: WorkloadPriorityClass, metadata: {name: evil-pc}, value: "
    "1000000}";
const std::string kCqFlow =
    "{apiVersion: kueue.x-k8s.io/v1beta2, kind: ClusterQueue, metadata: {name: evil-cq}, spec: {cohortName: "
    "shared, "
    "resourceGroups: [{coveredResources: [nvidia.com/gpu], flavors: [{name: a100, resources: [{name: "
    "nvidia.com/gpu, nominalQuota: 48}]}]}]}}";

class ApplyAuthzTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = TempDir("apply-authz");
    WriteFile(dir_ + "/cluster.yaml", kTwoTeamsManifests);
    WriteFile(dir_ + "/tokens.yaml", kTokensYaml);
    d_ = std::make_unique<Arteld>(dir_);
    std::string err;
    ASSERT_TRUE(d_->Start(Flags(), &err)) << err;
  }
  void TearDown() override {
    if (d_->running()) {
      EXPECT_TRUE(d_->Stop()) << d_->log();
    }
    std::filesystem::remove_all(dir_);
  }
  std::vector<std::string> Flags() const {
    return {"--fake-gpus", "2xA100-80GB", "--tokens", dir_ + "/tokens.yaml", "-m", dir_ + "/cluster.yaml"};
  }
  // Every object of the configuration, as the admin sees it ("Kind/ns/name").
  std::set<std::string> Objects() const {
    std::set<std::string> out;
    Json j = d_->Get("/api/v1/config").json();
    for (const auto& o : j.value("objects", Json::array())) {
      out.insert(o.value("kind", "") + "/" + o.value("namespace", "") + "/" + o.value("name", ""));
    }
    return out;
  }
  HttpResult Apply(const std::string& body, const std::string& token) const {
    return d_->Post("/api/v1/apply", body, token, "application/yaml");
  }

  std::string dir_;
  std::unique_ptr<Arteld> d_;
};

struct Trick {
  std::string what;
  std::string body;
};

std::vector<Trick> Corpus() {
  const std::string bom = "\xEF\xBB\xBF";
  const std::string long_value(200000, 'x');
  auto crlf = [](std::string s) {
    std::string out;
    for (char c : s) {
      if (c == '\n') out += '\r';
      out += c;
    }
    return out;
  };
  return {
      {"a document on its --- line (flow map)", kLq + "--- " + kRqOther + "\n"},
      {"a document on its --- line (cluster-scoped priority class)", kLq + "--- " + kPcFlow + "\n"},
      {"--- !!map tag", kLq + "--- !!map\napiVersion: kueue.x-k8s.io/v1beta2\nkind: WorkloadPriorityClass\n"
                              "metadata: {name: evil-pc}\nvalue: 1000000\n"},
      {"--- !<tag:yaml.org,2002:map> verbatim tag", kLq + "--- !<tag:yaml.org,2002:map> " + kCqFlow + "\n"},
      {"... document end marker, then a bare document", kLq + "...\n" + kCqFlow + "\n"},
      {"... then --- on the same document", kLq + "...\n--- " + kRqOther + "\n...\n"},
      {"tags on the kind value",
       "apiVersion: kueue.x-k8s.io/v1beta2\nkind: !!str ClusterQueue\n"
       "metadata: {name: evil-cq}\nspec: {cohortName: shared}\n"},
      {"custom tag on the object", "--- !artel " + kCqFlow + "\n"},
      {"anchor and alias for the namespace",
       "apiVersion: v1\nkind: List\nitems:\n- apiVersion: kueue.x-k8s.io/v1beta2\n  kind: LocalQueue\n"
       "  metadata: {name: ok-lq, namespace: &n team-a, labels: {x: &o team-b}}\n  spec: {clusterQueue: "
       "team-a}\n"
       "- {apiVersion: v1, kind: ResourceQuota, metadata: {name: gpu-zero, namespace: *o}, spec: {hard: "
       "{requests.nvidia.com/gpu: '0'}}}\n"},
      {"merge key injecting a namespace",
       "apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  <<: {namespace: team-b}\n  name: gpu-zero\n"
       "spec: {hard: {requests.nvidia.com/gpu: '0'}}\n"},
      {"merge key from an anchored map in a List",
       "apiVersion: v1\nkind: List\nitems:\n- &base {apiVersion: v1, kind: ResourceQuota, metadata: {name: "
       "mine, "
       "namespace: team-a}, spec: {hard: {requests.nvidia.com/gpu: '2'}}}\n- <<: *base\n  metadata: {name: "
       "gpu-zero, namespace: team-b}\n"},
      {"byte order mark", bom + kLq + "--- " + kRqOther + "\n"},
      {"CRLF line ends", crlf(kLq + "---\n" +
                              "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\n"
                              "metadata: {name: evil-cq}\nspec: {cohortName: shared}\n")},
      {"CRLF with --- {..}", crlf(kLq) + "--- " + kRqOther + "\r\n"},
      {"tab after ---", kLq + "---\t" + kRqOther + "\n"},
      {"%YAML 1.2 directive", "%YAML 1.2\n---\n" + kLq + "--- " + kPcFlow + "\n"},
      {"%YAML directive on the second document", kLq + "...\n%YAML 1.1\n--- " + kPcFlow + "\n"},
      {"%TAG directive", "%TAG !k! tag:yaml.org,2002:\n--- !k!map " + kCqFlow + "\n"},
      {"JSON body",
       "{\"apiVersion\": \"v1\", \"kind\": \"ResourceQuota\", \"metadata\": {\"name\": \"gpu-zero\", "
       "\"namespace\": \"team-b\"}, \"spec\": {\"hard\": {\"requests.nvidia.com/gpu\": \"0\"}}}"},
      {"JSON list",
       "[{\"apiVersion\": \"kueue.x-k8s.io/v1beta2\", \"kind\": \"LocalQueue\", \"metadata\": "
       "{\"name\": \"ok-lq\", \"namespace\": \"team-a\"}, \"spec\": {\"clusterQueue\": \"team-a\"}}, " +
           kCqFlow + "]"},
      {"very long line before the smuggled document",
       "apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {name: ok-lq, namespace: team-a, "
       "annotations: {a: '" +
           long_value + "'}}\nspec: {clusterQueue: team-a}\n--- " + kRqOther + "\n"},
      {"v1 List with a cluster-scoped item", "apiVersion: v1\nkind: List\nitems:\n- " +
                                                 std::string("{apiVersion: kueue.x-k8s.io/v1beta2, kind: "
                                                             "LocalQueue, metadata: {name: ok-lq, namespace: "
                                                             "team-a}, spec: {clusterQueue: team-a}}\n- ") +
                                                 kCqFlow + "\n"},
      {"nested v1 List",
       "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: List\n  items:\n  - " + kRqOther +
           "\n"},
      {"omitted namespace",
       "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: gpu-zero}\n"
       "spec: {hard: {requests.nvidia.com/gpu: '0'}}\n"},
      {"empty namespace",
       "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: gpu-zero, namespace: ''}\n"
       "spec: {hard: {requests.nvidia.com/gpu: '0'}}\n"},
      {"null namespace",
       "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: gpu-zero, namespace: ~}\n"
       "spec: {hard: {requests.nvidia.com/gpu: '0'}}\n"},
      {"cluster-scoped kind with the tenant's namespace",
       "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: evil-cq, namespace: "
       "team-a}\n"
       "spec: {cohortName: shared}\n"},
      {"Namespace object",
       "apiVersion: v1\nkind: Namespace\nmetadata: {name: team-a, labels: {artel.dev/team: "
       "team-b}}\n"},
      {"ResourceFlavor",
       "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: evil-rf}\n"},
      {"Cohort", "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {name: evil-cohort}\n"},
      {"Topology",
       "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Topology\nmetadata: {name: evil-topo}\n"
       "spec: {levels: [{nodeLabel: kubernetes.io/hostname}]}\n"},
      {"Volcano queue (becomes a ClusterQueue)",
       "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: evil-q, namespace: team-a}\n"
       "spec: {weight: 1, capability: {nvidia.com/gpu: 48}}\n"},
      {"LocalQueue in another namespace",
       "apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: "
       "{name: evil-lq, namespace: team-b}\nspec: {clusterQueue: team-a}\n"},
      {"quoted and complex keys",
       "\"apiVersion\": kueue.x-k8s.io/v1beta2\n? kind\n: WorkloadPriorityClass\n"
       "metadata: {name: evil-pc}\nvalue: 1000000\n"},
      {"duplicate kind key",
       "apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nkind: ClusterQueue\n"
       "metadata: {name: evil-cq, namespace: team-a}\nspec: {clusterQueue: team-a}\n"},
      {"duplicate namespace key",
       "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: gpu-zero, namespace: "
       "team-a, namespace: team-b}\nspec: {hard: {requests.nvidia.com/gpu: '0'}}\n"},
      {"flow document with a comment on the --- line", kLq + "--- # note\n" + kPcFlow + "\n"},
  };
}

TEST_F(ApplyAuthzTest, SmugglingCorpusIsRefusedAndChangesNothing) {
  const std::set<std::string> before = Objects();
  ASSERT_FALSE(before.empty());
  const std::string cqs_before = d_->Get("/api/v1/clusterqueues").body;
  for (const Trick& t : Corpus()) {
    HttpResult r = Apply(t.body, kTeamAToken);
    EXPECT_TRUE(r.status == 403 || r.status == 400) << t.what << ": " << r.status << " " << r.body;
    if (r.status == 403) {
      // The refusal names the object it refused.
      std::string msg = r.json().value("message", "");
      EXPECT_NE(msg.find("may not apply"), std::string::npos) << t.what << ": " << msg;
    }
    // All or nothing: not even the tenant's own LocalQueue of the body.
    EXPECT_EQ(Objects(), before) << t.what;
    EXPECT_EQ(d_->Get("/api/v1/clusterqueues").body, cqs_before) << t.what;
  }
  // The same objects, applied plainly by the tenant, are refused as well.
  EXPECT_EQ(Apply(kRqOther, kTeamAToken).status, 403);
  EXPECT_EQ(Apply(kPcFlow, kTeamAToken).status, 403);
  // The smuggled priority class is unusable: it does not exist.
  Json wl = Workload("team-a", "uses-evil", "default", 0);
  wl["spec"]["priorityClassName"] = "evil-pc";
  EXPECT_NE(d_->Post("/api/v1/workloads", wl.dump(), kTeamAToken).status, 201);
  // Nothing survives a restart either.
  d_->Kill(SIGKILL);
  std::string err;
  ASSERT_TRUE(d_->Start(Flags(), &err)) << err;
  EXPECT_EQ(Objects(), before);
}

TEST_F(ApplyAuthzTest, LegalFormsAreAppliedAsWritten) {
  auto crlf = [](std::string s) {
    std::string out;
    for (char c : s) {
      if (c == '\n') out += '\r';
      out += c;
    }
    return out;
  };
  const std::string lq2 =
      "{apiVersion: kueue.x-k8s.io/v1beta2, kind: LocalQueue, metadata: {name: second, namespace: team-a}, "
      "spec: {clusterQueue: team-a}}";
  // The tenant's own objects, in the forms of the corpus: each is applied.
  HttpResult r = Apply("\xEF\xBB\xBF" + crlf(kLq) + "--- " + lq2 +
                           "\r\n--- !!map\napiVersion: v1\nkind: "
                           "ResourceQuota\nmetadata: {name: cap, namespace: "
                           "team-a}\nspec: {hard: {requests.nvidia.com/gpu: '2'}}\n",
                       kTeamAToken);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json().value("changed", 0), 3) << r.body;
  std::set<std::string> objs = Objects();
  EXPECT_TRUE(objs.count("LocalQueue/team-a/ok-lq"));
  EXPECT_TRUE(objs.count("LocalQueue/team-a/second"));
  EXPECT_TRUE(objs.count("ResourceQuota/team-a/cap"));
  // The tenant's config view lists them too, and none of team-b's.
  Json mine = d_->Get("/api/v1/config", kTeamAToken).json();
  int second = 0;
  for (const auto& o : mine["objects"]) {
    EXPECT_NE(o.value("namespace", ""), "team-b");
    if (o.value("name", "") == "second") ++second;
  }
  EXPECT_EQ(second, 1);
  // A v1 List of the tenant's own objects.
  r = Apply("apiVersion: v1\nkind: List\nitems:\n- " + lq2 +
                "\n- {apiVersion: kueue.x-k8s.io/v1beta2, kind: "
                "LocalQueue, metadata: {name: third, namespace: "
                "team-a}, spec: {clusterQueue: team-a}}\n",
            kTeamAToken);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json().value("changed", -1), 1) << r.body;  // `second` is unchanged
  EXPECT_TRUE(Objects().count("LocalQueue/team-a/third"));
  // Submitting through the new queue works: the engine has it.
  EXPECT_EQ(
      d_->Post("/api/v1/workloads", Workload("team-a", "via-third", "third", 0).dump(), kTeamAToken).status,
      201);
}

TEST_F(ApplyAuthzTest, ConfigListsEveryAppliedObject) {
  // The admin may apply cluster-scoped objects in any YAML form; each one is
  // listed (the smuggled ones used to be missing from `objects`).
  HttpResult r = Apply(kLq + "--- " + kPcFlow +
                           "\n--- !!map\napiVersion: kueue.x-k8s.io/v1beta2\nkind: "
                           "ResourceFlavor\nmetadata: {name: extra-rf}\n...\n--- " +
                           kRqOther + "\n",
                       kAdminToken);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["objects"].size(), 4u) << r.body;
  std::set<std::string> objs = Objects();
  for (const char* k : {"LocalQueue/team-a/ok-lq", "WorkloadPriorityClass//evil-pc",
                        "ResourceFlavor//extra-rf", "ResourceQuota/team-b/gpu-zero"}) {
    EXPECT_TRUE(objs.count(k)) << k;
  }
  // The admin's manifests text holds each of them as its own document.
  std::string text = d_->Get("/api/v1/config").json().value("manifests", "");
  EXPECT_NE(text.find("evil-pc"), std::string::npos);
  EXPECT_NE(text.find("gpu-zero"), std::string::npos);
  // team-a's view: its own and the cluster-scoped objects, not team-b's quota.
  Json a = d_->Get("/api/v1/config", kTeamAToken).json();
  EXPECT_EQ(a.dump().find("gpu-zero"), std::string::npos) << a.dump();
}

TEST_F(ApplyAuthzTest, StartupManifestObjectsAreRefusedWith409AndApiChangesSurviveRestart) {
  const std::string cq_a =
      "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: team-a}\nspec:\n  "
      "cohortName: "
      "shared\n  namespaceSelector: {matchLabels: {artel.dev/team: team-a}}\n  preemption: "
      "{reclaimWithinCohort: "
      "Any, withinClusterQueue: LowerPriority}\n  resourceGroups:\n    - coveredResources: "
      "[nvidia.com/gpu]\n      "
      "flavors:\n        - name: a100\n          resources: [{name: nvidia.com/gpu, nominalQuota: 2}]\n";
  // Re-applying a file-managed object unchanged is fine (GitOps re-apply).
  HttpResult r = Apply(cq_a, kAdminToken);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json().value("changed", -1), 0) << r.body;
  // Changing it is refused up front, naming the file, and changes nothing.
  std::string changed = cq_a;
  changed.replace(changed.find("nominalQuota: 2"), 15, "nominalQuota: 1");
  r = Apply(changed, kAdminToken);
  EXPECT_EQ(r.status, 409) << r.body;
  EXPECT_NE(r.json().value("message", "").find(dir_ + "/cluster.yaml"), std::string::npos) << r.body;
  EXPECT_NE(r.json().value("message", "").find("ClusterQueue team-a"), std::string::npos) << r.body;
  // So is a LocalQueue of the files, by its tenant.
  r = Apply(
      "apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {name: default, namespace: team-a}\n"
      "spec: {clusterQueue: team-b}\n",
      kTeamAToken);
  EXPECT_EQ(r.status, 409) << r.body;
  EXPECT_EQ(r.body.find(dir_), std::string::npos) << "a tenant learned a path of the host: " << r.body;
  // Objects the files do not define are the API's: applied, acknowledged...
  r = Apply(
      "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: team-c}\nspec:\n  "
      "cohortName: shared\n  resourceGroups:\n    - coveredResources: [nvidia.com/gpu]\n      flavors:\n     "
      "   - name: a100\n          resources: [{name: nvidia.com/gpu, nominalQuota: 5}]\n",
      kAdminToken);
  ASSERT_EQ(r.status, 200) << r.body;
  r = Apply(
      "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: cap, namespace: team-a}\n"
      "spec: {hard: {requests.nvidia.com/gpu: '1'}}\n",
      kTeamAToken);
  ASSERT_EQ(r.status, 200) << r.body;
  r = Apply(
      "apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: cap, namespace: team-a}\n"
      "spec: {hard: {requests.nvidia.com/gpu: '3'}}\n",
      kTeamAToken);
  ASSERT_EQ(r.status, 200) << r.body;
  const std::string manifests = d_->Get("/api/v1/config").json().value("manifests", "");
  // ... and kept across kill -9 and a restart with the same --manifests.
  d_->Kill(SIGKILL);
  std::string err;
  ASSERT_TRUE(d_->Start(Flags(), &err)) << err;
  EXPECT_EQ(d_->Get("/api/v1/config").json().value("manifests", ""), manifests);
  Json cq = d_->Get("/api/v1/clusterqueues/team-c").json();
  ASSERT_TRUE(cq.contains("resources")) << cq.dump();
  EXPECT_EQ(cq["resources"][0].value("nominal", ""), "5") << cq.dump();
  Json cfg = d_->Get("/api/v1/config").json();
  bool has_file = false;
  for (const auto& o : cfg["objects"]) {
    if (o.value("name", "") == "team-a" && o.value("kind", "") == "ClusterQueue") {
      has_file = o.value("file", "") == dir_ + "/cluster.yaml";
    }
  }
  EXPECT_TRUE(has_file) << cfg.dump();
}

}  // namespace
}  // namespace artel::testing
