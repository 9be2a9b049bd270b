// Tests of src/kube/kueue_map: Kueue API objects (JSON as the API server
// serves them) -> core::Config / WorkloadSpec, and the status objects
// written back, checked against the shape of Kueue v1beta2's CRD schema.
#include "kube/kueue_map.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <regex>
#include <set>
#include <sstream>

#include "core/engine.h"
#include "manifest/manifest.h"

namespace artel::kube {
namespace {

using ::testing::HasSubstr;

// ---- YAML -> JSON as the API server would serve it ----

Json ScalarToJson(const YAML::Node& n) {
  const std::string& s = n.Scalar();
  if (n.Tag() == "!") return s;  // quoted
  if (s == "null" || s == "~" || s.empty()) return nullptr;
  if (s == "true") return true;
  if (s == "false") return false;
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno == 0 && end != nullptr && *end == '\0' &&
      (std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '-')) {
    return static_cast<int64_t>(v);
  }
  return s;
}

Json ToJson(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Scalar: return ScalarToJson(n);
    case YAML::NodeType::Sequence: {
      Json a = Json::array();
      for (const auto& c : n) a.push_back(ToJson(c));
      return a;
    }
    case YAML::NodeType::Map: {
      Json o = Json::object();
      for (const auto& kv : n) o[kv.first.Scalar()] = ToJson(kv.second);
      return o;
    }
    default: return nullptr;
  }
}

std::vector<Json> YamlDocs(const std::string& text) {
  std::vector<Json> out;
  for (const YAML::Node& d : YAML::LoadAll(text)) {
    if (d.IsNull()) continue;
    out.push_back(ToJson(d));
  }
  return out;
}

Json Obj(const std::string& yaml) { return YamlDocs(yaml).at(0); }

void Sort(const Json& obj, KueueObjects* objs) {
  std::string kind = obj.value("kind", "");
  if (kind == "ResourceFlavor") objs->resource_flavors.push_back(obj);
  if (kind == "Cohort") objs->cohorts.push_back(obj);
  if (kind == "ClusterQueue") objs->cluster_queues.push_back(obj);
  if (kind == "LocalQueue") objs->local_queues.push_back(obj);
  if (kind == "WorkloadPriorityClass") objs->priority_classes.push_back(obj);
  if (kind == "Topology") objs->topologies.push_back(obj);
  if (kind == "Namespace") objs->namespaces.push_back(obj);
}

KueueObjects FromYaml(const std::string& yaml) {
  KueueObjects objs;
  for (const Json& o : YamlDocs(yaml)) Sort(o, &objs);
  return objs;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// What the API server adds to every object it serves.
Json Served(Json obj) {
  obj["metadata"]["uid"] = "0b4c7a4e-1111-2222-3333-444455556666";
  obj["metadata"]["resourceVersion"] = "12345";
  obj["metadata"]["generation"] = 1;
  obj["metadata"]["creationTimestamp"] = "2026-01-02T03:04:05Z";
  obj["metadata"]["managedFields"] = Json::array({{{"manager", "kubectl"}, {"operation", "Apply"}}});
  return obj;
}

const ObjectCondition& Cond(const BuiltConfig& b, const std::string& kind, const std::string& ns,
                            const std::string& name) {
  const ObjectCondition* c = b.Find(kind, ns, name);
  if (c == nullptr) {
    static ObjectCondition missing;
    ADD_FAILURE() << "no condition for " << kind << " " << ns << "/" << name;
    return missing;
  }
  return *c;
}

template <typename T>
std::set<std::string> Names(const std::vector<T>& items) {
  std::set<std::string> out;
  for (const T& i : items) out.insert(i.name);
  return out;
}

// ---- Kueue's own CRD schema (v0.17.0, from the Go module cache) ----
//
// The status objects are checked against the openAPIV3Schema of the CRDs the
// API server would validate them with: no field the schema does not list (the
// API server would prune it silently), types, enums, patterns, lengths,
// required fields and list-map keys. Skipped, with the reason, when the module
// cache holds no Kueue (`go mod download sigs.k8s.io/kueue@v0.17.0`; make
// test downloads it for the Kubernetes tests).

std::string KueueCrdDir() {
  std::vector<std::string> roots;
  if (const char* d = std::getenv("ARTEL_KUEUE_DIR")) return std::string(d) + "/config/components/crd/bases";
  if (const char* m = std::getenv("GOMODCACHE")) roots.push_back(m);
  if (const char* g = std::getenv("GOPATH")) roots.push_back(std::string(g) + "/pkg/mod");
  if (const char* h = std::getenv("HOME")) roots.push_back(std::string(h) + "/go/pkg/mod");
  for (const std::string& r : roots) {
    std::string dir = r + "/sigs.k8s.io/kueue@v0.17.0/config/components/crd/bases";
    if (std::filesystem::exists(dir + "/kueue.x-k8s.io_workloads.yaml")) return dir;
  }
  return "";
}

// The schema of `.status` of `plural` at version v1beta2.
YAML::Node StatusSchema(const std::string& dir, const std::string& plural) {
  static std::map<std::string, YAML::Node> cache;  // the Workload CRD is large: read it once
  auto cached = cache.find(plural);
  if (cached != cache.end()) return cached->second;
  YAML::Node crd = YAML::LoadFile(dir + "/kueue.x-k8s.io_" + plural + ".yaml");
  for (const YAML::Node& v : crd["spec"]["versions"]) {
    if (v["name"].as<std::string>() == "v1beta2") {
      return cache[plural] = v["schema"]["openAPIV3Schema"]["properties"]["status"];
    }
  }
  return YAML::Node();
}

const std::regex& Regex(const std::string& pattern) {
  static std::map<std::string, std::regex> cache;
  auto it = cache.find(pattern);
  if (it == cache.end()) it = cache.emplace(pattern, std::regex(pattern)).first;
  return it->second;
}

void Validate(const YAML::Node& schema, const Json& v, const std::string& path,
              std::vector<std::string>* errs) {
  auto err = [&](const std::string& what) {
    errs->push_back(path + ": " + what + " (value " + v.dump() + ")");
  };
  if (schema["x-kubernetes-int-or-string"] && schema["x-kubernetes-int-or-string"].as<bool>()) {
    if (!v.is_string() && !v.is_number_integer()) return err("not an int or string");
    if (v.is_string() && schema["pattern"] &&
        !std::regex_match(v.get<std::string>(), Regex(schema["pattern"].as<std::string>()))) {
      err("does not match " + schema["pattern"].as<std::string>());
    }
    return;
  }
  std::string type = schema["type"] ? schema["type"].as<std::string>() : "";
  if (type == "object") {
    if (!v.is_object()) return err("not an object");
    const YAML::Node props = schema["properties"];
    const YAML::Node extra = schema["additionalProperties"];
    for (auto it = v.begin(); it != v.end(); ++it) {
      std::string child = path + "." + it.key();
      if (props && props[it.key()]) {
        Validate(props[it.key()], *it, child, errs);
      } else if (extra && extra.IsMap()) {
        Validate(extra, *it, child, errs);
      } else if (!schema["x-kubernetes-preserve-unknown-fields"]) {
        errs->push_back(child + ": not in Kueue's schema");
      }
    }
    if (schema["required"]) {
      for (const YAML::Node& r : schema["required"]) {
        if (!v.contains(r.as<std::string>())) err("lacks required " + r.as<std::string>());
      }
    }
  } else if (type == "array") {
    if (!v.is_array()) return err("not a list");
    if (schema["maxItems"] && v.size() > schema["maxItems"].as<size_t>()) err("too many items");
    if (schema["minItems"] && v.size() < schema["minItems"].as<size_t>()) err("too few items");
    std::set<std::string> keys;
    for (size_t i = 0; i < v.size(); ++i) {
      if (schema["items"]) Validate(schema["items"], v[i], path + "[" + std::to_string(i) + "]", errs);
      if (schema["x-kubernetes-list-map-keys"] && v[i].is_object()) {
        std::string key;
        for (const YAML::Node& k : schema["x-kubernetes-list-map-keys"])
          key += v[i].value(k.as<std::string>(), "") + "/";
        if (!keys.insert(key).second) err("duplicate list-map key " + key);
      }
    }
  } else if (type == "string") {
    if (!v.is_string()) return err("not a string");
    std::string s = v.get<std::string>();
    if (schema["enum"]) {
      bool found = false;
      for (const YAML::Node& e : schema["enum"]) found = found || e.as<std::string>() == s;
      if (!found) err("not one of the enum values");
    }
    if (schema["maxLength"] && s.size() > schema["maxLength"].as<size_t>()) err("too long");
    if (schema["minLength"] && s.size() < schema["minLength"].as<size_t>()) err("too short");
    if (schema["pattern"] && !std::regex_search(s, Regex(schema["pattern"].as<std::string>()))) {
      err("does not match " + schema["pattern"].as<std::string>());
    }
    if (schema["format"] && schema["format"].as<std::string>() == "date-time" && !ParseRfc3339(s).ok()) {
      err("not a date-time");
    }
  } else if (type == "integer") {
    if (!v.is_number_integer()) return err("not an integer");
    if (schema["minimum"] && v.get<int64_t>() < schema["minimum"].as<int64_t>()) err("below the minimum");
  } else if (type == "boolean") {
    if (!v.is_boolean()) err("not a boolean");
  }
}

// Checks `status` against Kueue's CRD for `plural`; false when the CRDs are
// not available (the caller skips).
bool CheckAgainstCrd(const std::string& plural, const Json& status) {
  std::string dir = KueueCrdDir();
  if (dir.empty()) return false;
  YAML::Node schema = StatusSchema(dir, plural);
  EXPECT_TRUE(schema.IsDefined() && schema.IsMap()) << plural;
  std::vector<std::string> errs;
  Validate(schema, status, "status", &errs);
  EXPECT_TRUE(errs.empty()) << plural << ":\n" << ::testing::PrintToString(errs) << "\n" << status.dump(2);
  return true;
}

constexpr char kSmall[] = R"(
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: a100}
spec: {nodeLabels: {gpu: a100}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: org}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq-a}
spec:
  cohortName: org
  namespaceSelector: {}
  preemption: {withinClusterQueue: LowerPriority, reclaimWithinCohort: Any}
  resourceGroups:
    - coveredResources: [cpu, nvidia.com/gpu]
      flavors:
        - name: a100
          resources: [{name: cpu, nominalQuota: "8"}, {name: nvidia.com/gpu, nominalQuota: 4}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq-b}
spec:
  cohortName: org
  namespaceSelector: {}
  resourceGroups:
    - coveredResources: [cpu, nvidia.com/gpu]
      flavors:
        - name: a100
          resources: [{name: cpu, nominalQuota: "8"}, {name: nvidia.com/gpu, nominalQuota: 4}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: lq-a, namespace: team-a}
spec: {clusterQueue: cq-a}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: lq-b, namespace: team-b}
spec: {clusterQueue: cq-b}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata: {name: high}
value: 1000
---
apiVersion: v1
kind: Namespace
metadata: {name: team-a, labels: {kubernetes.io/metadata.name: team-a}}
---
apiVersion: v1
kind: Namespace
metadata: {name: team-b, labels: {kubernetes.io/metadata.name: team-b}}
)";

// ---------------------------------------------------------------- BuildConfig

TEST(BuildConfigTest, DevClusterObjectsAsServedConfigureTheEngine) {
  // Every object of the dev-cluster example, as JSON with server-set metadata.
  KueueObjects objs;
  size_t count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(ARTEL_EXAMPLES_DIR "/dev-cluster")) {
    std::string name = entry.path().filename().string();
    if (entry.path().extension() != ".yaml" || name == "arteld.yaml" || name == "tokens.yaml" ||
        name == "kustomization.yaml") {
      continue;
    }
    for (const Json& o : YamlDocs(ReadFile(entry.path().string()))) {
      Sort(Served(o), &objs);
      ++count;
    }
  }
  ASSERT_GT(count, 10u);
  BuiltConfig b = BuildConfig(objs);
  for (const ObjectCondition& c : b.conditions) {
    EXPECT_TRUE(c.active) << c.kind << " " << c.name << ": " << c.reason << " " << c.message;
  }
  // The same objects read from the YAML files by the manifest loader.
  core::Config want;
  ASSERT_TRUE(manifest::LoadPath(ARTEL_EXAMPLES_DIR "/dev-cluster", &want).ok());
  EXPECT_EQ(Names(b.config.cluster_queues), Names(want.cluster_queues));
  EXPECT_EQ(Names(b.config.cohorts), Names(want.cohorts));
  EXPECT_EQ(Names(b.config.flavors), Names(want.flavors));
  EXPECT_EQ(Names(b.config.priority_classes), Names(want.priority_classes));
  EXPECT_EQ(b.config.local_queues.size(), want.local_queues.size());
  EXPECT_EQ(b.config.namespaces.size(), want.namespaces.size());
  EXPECT_EQ(b.config.topologies.size(), want.topologies.size());
  // One Active condition per ClusterQueue and LocalQueue.
  size_t queue_conditions = 0;
  for (const ObjectCondition& c : b.conditions)
    queue_conditions += c.kind == "ClusterQueue" || c.kind == "LocalQueue";
  EXPECT_EQ(queue_conditions, want.cluster_queues.size() + want.local_queues.size());
  core::Engine engine;
  EXPECT_TRUE(engine.Configure(b.config).ok());
}

TEST(BuildConfigTest, ValidObjectsAreReadyAndQuotasRead) {
  BuiltConfig b = BuildConfig(FromYaml(kSmall));
  EXPECT_EQ(b.config.cluster_queues.size(), 2u);
  EXPECT_EQ(b.config.local_queues.size(), 2u);
  const ObjectCondition& cq = Cond(b, "ClusterQueue", "", "cq-a");
  EXPECT_TRUE(cq.active);
  EXPECT_EQ(cq.reason, "Ready");
  EXPECT_EQ(Cond(b, "LocalQueue", "team-a", "lq-a").reason, "Ready");
  const core::ClusterQueueSpec& a = b.config.cluster_queues[0];
  EXPECT_EQ(a.cohort, "org");
  EXPECT_EQ(a.resource_groups[0].flavors[0].resources[0].nominal, 8000);
  EXPECT_EQ(a.resource_groups[0].flavors[0].resources[1].nominal, 4000);
  EXPECT_EQ(a.preemption.reclaim_within_cohort, core::ReclaimWithinCohortPolicy::kAny);
  core::Engine engine;
  EXPECT_TRUE(engine.Configure(b.config).ok());
}

TEST(BuildConfigTest, MissingFlavorLeavesOnlyThatQueueOut) {
  KueueObjects objs = FromYaml(kSmall);
  objs.cluster_queues[1]["spec"]["resourceGroups"][0]["flavors"][0]["name"] = "h100";
  BuiltConfig b = BuildConfig(objs);
  EXPECT_EQ(Names(b.config.cluster_queues), (std::set<std::string>{"cq-a"}));
  const ObjectCondition& c = Cond(b, "ClusterQueue", "", "cq-b");
  EXPECT_FALSE(c.active);
  EXPECT_EQ(c.reason, "FlavorNotFound");
  EXPECT_EQ(c.field, "spec.resourceGroups[0].flavors[0].name");
  EXPECT_THAT(c.message, HasSubstr("h100"));
  EXPECT_THAT(c.message, HasSubstr("spec.resourceGroups[0].flavors[0].name"));
  // Its LocalQueue stays configured, and says its ClusterQueue is inactive.
  EXPECT_EQ(b.config.local_queues.size(), 2u);
  const ObjectCondition& lq = Cond(b, "LocalQueue", "team-b", "lq-b");
  EXPECT_FALSE(lq.active);
  EXPECT_EQ(lq.reason, "ClusterQueueIsInactive");
  EXPECT_TRUE(Cond(b, "LocalQueue", "team-a", "lq-a").active);
  core::Engine engine;
  EXPECT_TRUE(engine.Configure(b.config).ok());
}

TEST(BuildConfigTest, BadQuantityIsInvalidSpecWithTheFieldPath) {
  KueueObjects objs = FromYaml(kSmall);
  objs.cluster_queues[0]["spec"]["resourceGroups"][0]["flavors"][0]["resources"][1]["nominalQuota"] =
      "4 GPUs";
  BuiltConfig b = BuildConfig(objs);
  EXPECT_EQ(Names(b.config.cluster_queues), (std::set<std::string>{"cq-b"}));
  const ObjectCondition& c = Cond(b, "ClusterQueue", "", "cq-a");
  EXPECT_FALSE(c.active);
  EXPECT_EQ(c.reason, "InvalidSpec");
  EXPECT_EQ(c.field, "spec.resourceGroups[0].flavors[0].resources[1].nominalQuota");
  EXPECT_THAT(c.message, HasSubstr("spec.resourceGroups[0].flavors[0].resources[1].nominalQuota"));
  EXPECT_EQ(Cond(b, "LocalQueue", "team-a", "lq-a").reason, "ClusterQueueIsInactive");
}

TEST(BuildConfigTest, LocalQueueNamingAMissingClusterQueue) {
  KueueObjects objs = FromYaml(kSmall);
  objs.local_queues[0]["spec"]["clusterQueue"] = "nope";
  BuiltConfig b = BuildConfig(objs);
  const ObjectCondition& c = Cond(b, "LocalQueue", "team-a", "lq-a");
  EXPECT_FALSE(c.active);
  EXPECT_EQ(c.reason, "ClusterQueueDoesNotExist");
  EXPECT_EQ(c.field, "spec.clusterQueue");
  EXPECT_THAT(c.message, HasSubstr("nope"));
  // Configured anyway: its workloads wait with ClusterQueueMissing, as in Kueue.
  EXPECT_EQ(b.config.local_queues.size(), 2u);
  core::Engine engine;
  ASSERT_TRUE(engine.Configure(b.config).ok());
  core::WorkloadSpec w;
  w.ns = "team-a";
  w.name = "w";
  w.queue = "lq-a";
  w.pod_sets.push_back(core::PodSetSpec{});
  ASSERT_TRUE(engine.Submit(w, 0).ok());
  engine.Schedule(1);
  EXPECT_EQ(engine.Find("team-a/w")->pending->kind, core::PendingReason::Kind::kClusterQueueMissing);
}

TEST(BuildConfigTest, InvalidLocalQueueIsLeftOut) {
  KueueObjects objs = FromYaml(kSmall);
  objs.local_queues[1]["spec"]["stopPolicy"] = "Sometimes";
  BuiltConfig b = BuildConfig(objs);
  EXPECT_EQ(b.config.local_queues.size(), 1u);
  const ObjectCondition& c = Cond(b, "LocalQueue", "team-b", "lq-b");
  EXPECT_FALSE(c.active);
  EXPECT_EQ(c.reason, "InvalidSpec");
  EXPECT_EQ(c.field, "spec.stopPolicy");
}

TEST(BuildConfigTest, StoppedQueuesAreConfiguredButInactive) {
  KueueObjects objs = FromYaml(kSmall);
  objs.cluster_queues[0]["spec"]["stopPolicy"] = "Hold";
  objs.local_queues[1]["spec"]["stopPolicy"] = "HoldAndDrain";
  BuiltConfig b = BuildConfig(objs);
  EXPECT_EQ(b.config.cluster_queues.size(), 2u);
  EXPECT_EQ(b.config.local_queues.size(), 2u);
  EXPECT_EQ(Cond(b, "ClusterQueue", "", "cq-a").reason, "Stopped");
  EXPECT_FALSE(Cond(b, "ClusterQueue", "", "cq-a").active);
  EXPECT_EQ(Cond(b, "LocalQueue", "team-a", "lq-a").reason, "ClusterQueueIsInactive");
  EXPECT_EQ(Cond(b, "LocalQueue", "team-b", "lq-b").reason, "Stopped");
}

TEST(BuildConfigTest, CohortCycleLeavesTheTreeOutAndTheRestRuns) {
  KueueObjects objs = FromYaml(std::string(kSmall) + R"(
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: x}
spec: {parentName: y}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: y}
spec: {parentName: x}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq-c}
spec:
  cohortName: x
  resourceGroups:
    - coveredResources: [cpu]
      flavors: [{name: a100, resources: [{name: cpu, nominalQuota: 1}]}]
)");
  BuiltConfig b = BuildConfig(objs);
  EXPECT_EQ(Names(b.config.cohorts), (std::set<std::string>{"org"}));
  EXPECT_EQ(Names(b.config.cluster_queues), (std::set<std::string>{"cq-a", "cq-b"}));
  EXPECT_EQ(Cond(b, "Cohort", "", "x").reason, "CohortCycle");
  EXPECT_EQ(Cond(b, "ClusterQueue", "", "cq-c").reason, "CohortCycle");
  EXPECT_EQ(Cond(b, "ClusterQueue", "", "cq-c").field, "spec.cohortName");
  EXPECT_FALSE(Cond(b, "ClusterQueue", "", "cq-c").active);
  core::Engine engine;
  EXPECT_TRUE(engine.Configure(b.config).ok());
}

TEST(BuildConfigTest, CohortWithMissingFlavorLeavesItsSubtreeOut) {
  KueueObjects objs = FromYaml(std::string(kSmall) + R"(
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: pool}
spec:
  parentName: org
  resourceGroups: [{coveredResources: [cpu], flavors: [{name: nope, resources: [{name: cpu, nominalQuota: 4}]}]}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: team}
spec: {parentName: pool}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: cq-c}
spec:
  cohortName: team
  resourceGroups: [{coveredResources: [cpu], flavors: [{name: a100, resources: [{name: cpu, nominalQuota: 1}]}]}]
)");
  BuiltConfig b = BuildConfig(objs);
  EXPECT_EQ(Names(b.config.cohorts), (std::set<std::string>{"org"}));
  EXPECT_EQ(Cond(b, "Cohort", "", "pool").reason, "FlavorNotFound");
  EXPECT_EQ(Cond(b, "Cohort", "", "pool").field, "spec.resourceGroups[0].flavors[0].name");
  EXPECT_EQ(Cond(b, "Cohort", "", "team").reason, "CohortInvalid");
  const ObjectCondition& cq = Cond(b, "ClusterQueue", "", "cq-c");
  EXPECT_EQ(cq.reason, "CohortInvalid");
  EXPECT_EQ(cq.field, "spec.cohortName");
  EXPECT_THAT(cq.message, HasSubstr("pool"));
  EXPECT_EQ(Names(b.config.cluster_queues), (std::set<std::string>{"cq-a", "cq-b"}));
  core::Engine engine;
  EXPECT_TRUE(engine.Configure(b.config).ok());
}

TEST(BuildConfigTest, FlavorWithMissingTopology) {
  KueueObjects objs = FromYaml(kSmall);
  objs.resource_flavors[0]["spec"]["topologyName"] = "dc";
  BuiltConfig b = BuildConfig(objs);
  EXPECT_TRUE(b.config.flavors.empty());
  EXPECT_EQ(Cond(b, "ResourceFlavor", "", "a100").reason, "TopologyNotFound");
  EXPECT_EQ(Cond(b, "ClusterQueue", "", "cq-a").reason, "TopologyNotFound");
  EXPECT_TRUE(b.config.cluster_queues.empty());
  core::Engine engine;
  EXPECT_TRUE(engine.Configure(b.config).ok());
}

TEST(BuildConfigTest, V1beta1AndV1beta2Spellings) {
  // v1beta1 spells the cohort `cohort`; v1beta2 `cohortName`. Each is an
  // unknown field in the other version.
  KueueObjects objs = FromYaml(R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: f}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: old}
spec:
  cohort: org
  flavorFungibility: {whenCanBorrow: Borrow}
  resourceGroups: [{coveredResources: [cpu], flavors: [{name: f, resources: [{name: cpu, nominalQuota: 2}]}]}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: new}
spec:
  cohortName: org
  resourceGroups: [{coveredResources: [cpu], flavors: [{name: f, resources: [{name: cpu, nominalQuota: 2}]}]}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: mixed}
spec:
  cohort: org
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: Cohort
metadata: {name: org}
spec: {parent: top}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: org2}
spec: {parentName: top}
)");
  BuiltConfig b = BuildConfig(objs);
  EXPECT_EQ(Names(b.config.cluster_queues), (std::set<std::string>{"old", "new"}));
  for (const core::ClusterQueueSpec& cq : b.config.cluster_queues) EXPECT_EQ(cq.cohort, "org");
  const ObjectCondition& mixed = Cond(b, "ClusterQueue", "", "mixed");
  EXPECT_EQ(mixed.reason, "InvalidSpec");
  EXPECT_EQ(mixed.field, "spec.cohort");
  EXPECT_THAT(mixed.message, HasSubstr("cohortName"));  // the did-you-mean hint
  for (const core::CohortSpec& co : b.config.cohorts) EXPECT_EQ(co.parent, "top");
  EXPECT_EQ(b.config.cohorts.size(), 2u);
}

TEST(BuildConfigTest, OtherInvalidObjectsAreLeftOutWithAReason) {
  KueueObjects objs = FromYaml(kSmall);
  objs.priority_classes[0]["value"] = "high";
  objs.namespaces.push_back(Obj("{apiVersion: v1, kind: Namespace, metadata: {name: Bad_Name}}"));
  objs.resource_flavors.push_back(Obj(
      "{apiVersion: kueue.x-k8s.io/v1beta2, kind: ResourceFlavor, metadata: {name: t}, spec: {nodeTaints: "
      "[{key: k, effect: Sometimes}]}}"));
  objs.cluster_queues.push_back(
      Obj("{apiVersion: scheduling.volcano.sh/v1beta1, kind: ClusterQueue, metadata: {name: v}}"));
  objs.cluster_queues.push_back(
      Json{{"apiVersion", 7}, {"kind", "ClusterQueue"}, {"metadata", {{"name", "num"}}}});
  objs.cluster_queues.push_back(Json{{"kind", "ClusterQueue"}, {"metadata", "text"}});
  objs.local_queues.push_back(Json::array());
  BuiltConfig b = BuildConfig(objs);
  EXPECT_FALSE(Cond(b, "ClusterQueue", "", "v").active);
  EXPECT_FALSE(Cond(b, "ClusterQueue", "", "num").active);
  EXPECT_TRUE(b.config.priority_classes.empty());
  EXPECT_EQ(Cond(b, "WorkloadPriorityClass", "", "high").field, "value");
  EXPECT_FALSE(Cond(b, "Namespace", "", "Bad_Name").active);
  EXPECT_EQ(Cond(b, "ResourceFlavor", "", "t").field, "spec.nodeTaints[0].effect");
  EXPECT_EQ(b.config.namespaces.size(), 2u);
  EXPECT_EQ(b.config.cluster_queues.size(), 2u);
}

TEST(BuildConfigTest, DuplicateFromTwoApiVersionsIsReadOnce) {
  KueueObjects objs = FromYaml(kSmall);
  Json again = objs.cluster_queues[0];
  again["apiVersion"] = "kueue.x-k8s.io/v1beta1";
  again["spec"]["cohort"] = again["spec"]["cohortName"];
  again["spec"].erase("cohortName");
  objs.cluster_queues.push_back(again);
  BuiltConfig b = BuildConfig(objs);
  EXPECT_EQ(b.config.cluster_queues.size(), 2u);
  core::Engine engine;
  EXPECT_TRUE(engine.Configure(b.config).ok());
}

TEST(BuildConfigTest, AThousandQueues) {
  // The benchmark's shape (1,000 ClusterQueues): every one configured.
  KueueObjects objs = FromYaml(kSmall);
  Json cq = objs.cluster_queues[1];
  Json lq = objs.local_queues[1];
  for (int i = 0; i < 1000; ++i) {
    cq["metadata"]["name"] = "q" + std::to_string(i);
    objs.cluster_queues.push_back(cq);
    lq["metadata"]["name"] = "lq" + std::to_string(i);
    lq["spec"]["clusterQueue"] = "q" + std::to_string(i);
    objs.local_queues.push_back(lq);
  }
  auto start = std::chrono::steady_clock::now();
  BuiltConfig b = BuildConfig(objs);
  auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
  std::cout << "BuildConfig of " << objs.cluster_queues.size() << " ClusterQueues and "
            << objs.local_queues.size() << " LocalQueues: " << ms << " ms\n";
  EXPECT_EQ(b.config.cluster_queues.size(), 1002u);
  EXPECT_EQ(b.config.local_queues.size(), 1002u);
  for (const ObjectCondition& c : b.conditions) EXPECT_TRUE(c.active) << c.key();

  // A builder that keeps its memo reads only what changed, with the same result.
  ConfigBuilder builder;
  builder.Build(objs);
  objs.cluster_queues[500]["status"] = {{"pendingWorkloads", 3}};  // a status write: not a change
  objs.cluster_queues[500]["metadata"]["resourceVersion"] = "999";
  objs.cluster_queues[7]["spec"]["resourceGroups"][0]["flavors"][0]["name"] = "gone";  // a real change
  objs.local_queues.pop_back();
  start = std::chrono::steady_clock::now();
  BuiltConfig again = builder.Build(objs);
  auto ms2 =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
  std::cout << "again with a memo: " << ms2 << " ms\n";
  BuiltConfig fresh = BuildConfig(objs);
  EXPECT_EQ(again.config.cluster_queues.size(), 1001u);
  EXPECT_EQ(Names(again.config.cluster_queues), Names(fresh.config.cluster_queues));
  EXPECT_EQ(again.config.local_queues.size(), fresh.config.local_queues.size());
  ASSERT_EQ(again.conditions.size(), fresh.conditions.size());
  for (size_t i = 0; i < again.conditions.size(); ++i) {
    EXPECT_EQ(again.conditions[i].key(), fresh.conditions[i].key());
    EXPECT_EQ(again.conditions[i].reason, fresh.conditions[i].reason);
    EXPECT_EQ(again.conditions[i].message, fresh.conditions[i].message);
  }
  EXPECT_EQ(Cond(again, "ClusterQueue", "", objs.cluster_queues[7]["metadata"]["name"]).reason,
            "FlavorNotFound");
}

// ---------------------------------------------------------------- Workloads

constexpr char kWorkloadV1beta2[] = R"(
apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata:
  name: job-train-1a2b3
  namespace: team-a
  uid: 5f1f3c2e-aaaa-bbbb-cccc-ddddeeeeffff
  resourceVersion: "77"
  generation: 2
  creationTimestamp: "2026-01-02T03:04:05Z"
  labels: {kueue.x-k8s.io/job-uid: 1234}
  ownerReferences: [{apiVersion: batch/v1, kind: Job, name: train, uid: 1234, controller: true}]
spec:
  queueName: lq-a
  priorityClassRef: {group: kueue.x-k8s.io, kind: WorkloadPriorityClass, name: high}
  priority: 1000
  active: true
  podSets:
    - name: driver
      count: 1
      template:
        metadata: {creationTimestamp: null}
        spec:
          restartPolicy: Never
          dnsPolicy: ClusterFirst
          schedulerName: default-scheduler
          terminationGracePeriodSeconds: 30
          securityContext: {}
          containers:
            - name: c
              image: busybox
              imagePullPolicy: IfNotPresent
              terminationMessagePath: /dev/termination-log
              terminationMessagePolicy: File
              resources: {requests: {cpu: 500m}}
    - name: workers
      count: 4
      minCount: 2
      topologyRequest: {required: cloud.provider.com/rack, podIndexLabel: batch.kubernetes.io/job-completion-index}
      template:
        spec:
          nodeSelector: {gpu: a100}
          tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
          containers:
            - name: c
              image: busybox
              resources: {limits: {nvidia.com/gpu: "2"}, requests: {cpu: "4", memory: 16Gi}}
status:
  conditions:
    - {type: QuotaReserved, status: "False", reason: Pending, message: x, lastTransitionTime: "2026-01-02T03:04:06Z"}
)";

TEST(WorkloadFromObjectTest, V1beta2AsServed) {
  BuiltConfig b = BuildConfig(FromYaml(kSmall));
  Result<core::WorkloadSpec> w = WorkloadFromObject(Obj(kWorkloadV1beta2), b.config);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ(w->ns, "team-a");
  EXPECT_EQ(w->name, "job-train-1a2b3");
  EXPECT_EQ(w->queue, "lq-a");
  EXPECT_EQ(w->priority_class.value_or(""), "high");
  EXPECT_EQ(w->priority.value_or(-1), 1000);
  EXPECT_TRUE(w->active);
  EXPECT_EQ(w->termination_grace.value_or(-1), 30000);
  ASSERT_EQ(w->pod_sets.size(), 2u);
  EXPECT_EQ(w->pod_sets[0].name, "driver");
  EXPECT_EQ(w->pod_sets[0].requests.at("cpu"), 500);
  const core::PodSetSpec& workers = w->pod_sets[1];
  EXPECT_EQ(workers.count, 4);
  EXPECT_EQ(workers.min_count.value_or(-1), 2);
  EXPECT_EQ(workers.requests.at("nvidia.com/gpu"), 2000);
  EXPECT_EQ(workers.requests.at("memory"), (int64_t{16} << 30) * 1000);
  EXPECT_EQ(workers.node_selector.at("gpu"), "a100");
  ASSERT_EQ(workers.tolerations.size(), 1u);
  EXPECT_EQ(workers.annotations.at("kueue.x-k8s.io/podset-required-topology"), "cloud.provider.com/rack");
  // The engine takes it as is.
  core::Engine engine;
  ASSERT_TRUE(engine.Configure(b.config).ok());
  EXPECT_TRUE(engine.Submit(*w, 0).ok());
}

// The reader scans the object without its status and managed fields (most
// of an admitted Workload's bytes): what it returns is the same with and
// without them, however large or odd they are.
TEST(WorkloadFromObjectTest, StatusAndManagedFieldsChangeNothing) {
  BuiltConfig b = BuildConfig(FromYaml(kSmall));
  Json bare = Obj(kWorkloadV1beta2);
  bare.erase("status");
  Json full = Obj(kWorkloadV1beta2);
  Json mf = Json::array();
  for (int i = 0; i < 50; ++i)
    mf.push_back(
        {{"manager", "m" + std::to_string(i)},
         {"operation", "Update"},
         {"subresource", "status"},
         {"fieldsType", "FieldsV1"},
         {"fieldsV1",
          {{"f:status", {{"f:conditions", {{"k:{\"type\":\"QuotaReserved\"}", Json::object()}}}}}}}});
  full["metadata"]["managedFields"] = mf;
  full["status"]["admission"] = {{"clusterQueue", "cq-a"},
                                 {"podSetAssignments", Json::array({{{"name", "driver"}}})}};
  full["status"]["unknownField"] = {{"spec", {{"queueName", "not-this-one"}}}};
  Result<core::WorkloadSpec> x = WorkloadFromObject(bare, b.config);
  Result<core::WorkloadSpec> y = WorkloadFromObject(full, b.config);
  ASSERT_TRUE(x.ok()) << x.status().ToString();
  ASSERT_TRUE(y.ok()) << y.status().ToString();
  EXPECT_EQ(y->ns, x->ns);
  EXPECT_EQ(y->name, x->name);
  EXPECT_EQ(y->queue, "lq-a");
  EXPECT_EQ(y->labels, x->labels);
  EXPECT_EQ(y->annotations, x->annotations);
  EXPECT_EQ(y->priority, x->priority);
  EXPECT_EQ(y->priority_class, x->priority_class);
  EXPECT_EQ(y->termination_grace, x->termination_grace);
  ASSERT_EQ(y->pod_sets.size(), x->pod_sets.size());
  for (size_t i = 0; i < x->pod_sets.size(); ++i) {
    EXPECT_EQ(y->pod_sets[i].name, x->pod_sets[i].name);
    EXPECT_EQ(y->pod_sets[i].count, x->pod_sets[i].count);
    EXPECT_EQ(y->pod_sets[i].min_count, x->pod_sets[i].min_count);
    EXPECT_EQ(y->pod_sets[i].requests, x->pod_sets[i].requests);
    EXPECT_EQ(y->pod_sets[i].node_selector, x->pod_sets[i].node_selector);
    EXPECT_EQ(y->pod_sets[i].annotations, x->pod_sets[i].annotations);
    EXPECT_EQ(y->pod_sets[i].tolerations.size(), x->pod_sets[i].tolerations.size());
  }
  // A spec error is still found, with the status present.
  full["spec"]["podSets"][0]["count"] = "three";
  EXPECT_FALSE(WorkloadFromObject(full, b.config).ok());
}

TEST(WorkloadFromObjectTest, V1beta1Spelling) {
  Json wl = Obj(R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: Workload
metadata: {name: w, namespace: team-b}
spec:
  queueName: lq-b
  priorityClassName: high
  priorityClassSource: kueue.x-k8s.io/workloadpriorityclass
  priority: 1000
  active: false
  podSets:
    - name: main
      count: 2
      template: {spec: {containers: [{name: c, resources: {requests: {cpu: "1"}}}]}}
)");
  BuiltConfig b = BuildConfig(FromYaml(kSmall));
  Result<core::WorkloadSpec> w = WorkloadFromObject(wl, b.config);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ(w->priority_class.value_or(""), "high");
  EXPECT_FALSE(w->active);
  EXPECT_EQ(w->pod_sets[0].count, 2);
  wl["spec"]["priorityClassSource"] = "elsewhere";
  Result<core::WorkloadSpec> bad = WorkloadFromObject(wl, b.config);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().field(), "spec.priorityClassSource");
}

TEST(WorkloadFromObjectTest, UnknownPriorityClassFallsBackToThePriorityValue) {
  Json wl = Obj(kWorkloadV1beta2);
  wl["spec"]["priorityClassRef"] = {
      {"group", "scheduling.k8s.io"}, {"kind", "PriorityClass"}, {"name", "pods-high"}};
  wl["spec"]["priority"] = 77;
  Result<core::WorkloadSpec> w = WorkloadFromObject(wl, BuildConfig(FromYaml(kSmall)).config);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_FALSE(w->priority_class.has_value());
  EXPECT_EQ(w->priority.value_or(-1), 77);
}

TEST(WorkloadFromObjectTest, ErrorsNameTheField) {
  core::Config config = BuildConfig(FromYaml(kSmall)).config;
  struct Case {
    std::string path;  // JSON pointer to change
    Json value;
    std::string field;
  };
  std::vector<Case> cases = {
      {"/spec/podSets/1/count", "four", "spec.podSets[1].count"},
      {"/spec/podSets/1/minCount", 9, "spec.podSets[1].minCount"},
      {"/spec/podSets/0/template/spec/containers/0/resources/requests/cpu", "lots",
       "spec.podSets[0].template.spec.containers[0].resources.requests[cpu]"},
      {"/spec/podSets/0/template/spec/containers", Json::array(), "spec.podSets[0].template.spec.containers"},
      {"/spec/active", "yes", "spec.active"},
      {"/spec/priorityClassRef/kind", "Nope", "spec.priorityClassRef.kind"},
      {"/spec/queueName", nullptr, "spec.queueName"},
  };
  for (const Case& c : cases) {
    Json wl = Obj(kWorkloadV1beta2);
    wl[Json::json_pointer(c.path)] = c.value;
    Result<core::WorkloadSpec> w = WorkloadFromObject(wl, config);
    ASSERT_FALSE(w.ok()) << c.path;
    EXPECT_EQ(w.status().field(), c.field) << c.path << ": " << w.status().ToString();
    EXPECT_FALSE(w.status().pos().known()) << "a position in re-serialised JSON means nothing";
  }
  Json job = Obj("{apiVersion: batch/v1, kind: Job, metadata: {name: j, namespace: a}}");
  EXPECT_EQ(WorkloadFromObject(job, config).status().field(), "kind");
}

// ---------------------------------------------------------------- status builders

// The fields Kueue v1beta2's CRD schema allows in Workload.status and its parts.
void CheckWorkloadStatusShape(const Json& st) {
  static const std::set<std::string> kStatus = {"conditions",
                                                "admission",
                                                "requeueState",
                                                "reclaimablePods",
                                                "admissionChecks",
                                                "resourceRequests",
                                                "accumulatedPastExecutionTimeSeconds",
                                                "schedulingStats",
                                                "nominatedClusterNames",
                                                "clusterName",
                                                "unhealthyNodes",
                                                "preemptionGates"};
  static const std::set<std::string> kCondition = {"type",   "status",  "lastTransitionTime",
                                                   "reason", "message", "observedGeneration"};
  static const std::set<std::string> kConditionTypes = {"QuotaReserved", "Admitted", "Evicted",  "Preempted",
                                                        "Requeued",      "Finished", "PodsReady"};
  ASSERT_TRUE(st.is_object());
  for (auto it = st.begin(); it != st.end(); ++it) EXPECT_TRUE(kStatus.count(it.key())) << it.key();
  std::set<std::string> types;
  for (const Json& c : st.value("conditions", Json::array())) {
    for (auto it = c.begin(); it != c.end(); ++it) EXPECT_TRUE(kCondition.count(it.key())) << it.key();
    for (const char* req : {"type", "status", "lastTransitionTime", "reason", "message"}) {
      EXPECT_TRUE(c.contains(req)) << c.dump();
    }
    EXPECT_TRUE(c["status"] == "True" || c["status"] == "False") << c.dump();
    EXPECT_TRUE(kConditionTypes.count(c["type"].get<std::string>())) << c.dump();
    EXPECT_TRUE(types.insert(c["type"].get<std::string>()).second) << "two conditions of type " << c["type"];
    // CamelCase reason (metav1.Condition's pattern).
    std::string reason = c["reason"];
    EXPECT_FALSE(reason.empty());
    EXPECT_TRUE(std::isupper(static_cast<unsigned char>(reason[0]))) << reason;
    EXPECT_TRUE(ParseRfc3339(c["lastTransitionTime"].get<std::string>()).ok());
    EXPECT_LE(c["message"].get<std::string>().size(), 32768u);
  }
  if (st.contains("admission")) {
    const Json& a = st["admission"];
    for (auto it = a.begin(); it != a.end(); ++it) {
      EXPECT_TRUE(it.key() == "clusterQueue" || it.key() == "podSetAssignments") << it.key();
    }
    EXPECT_TRUE(a["clusterQueue"].is_string());
    for (const Json& p : a["podSetAssignments"]) {
      static const std::set<std::string> kPsa = {
          "name", "flavors", "resourceUsage", "count", "topologyAssignment", "delayedTopologyRequest"};
      for (auto it = p.begin(); it != p.end(); ++it) EXPECT_TRUE(kPsa.count(it.key())) << it.key();
      EXPECT_TRUE(p["count"].is_number_integer());
      const Json usage = p.value("resourceUsage", Json::object());
      for (auto it = usage.begin(); it != usage.end(); ++it) {
        EXPECT_TRUE(it->is_string() && core::ParseQuantity(it->get<std::string>()).ok()) << it.key() << *it;
      }
    }
  }
}

struct Fixture {
  core::Engine engine;
  Fixture() {
    BuiltConfig b = BuildConfig(FromYaml(kSmall));
    Status s = engine.Configure(b.config);
    EXPECT_TRUE(s.ok()) << s.ToString();
  }
  const core::WorkloadInfo* Submit(const std::string& ns, const std::string& name, const std::string& queue,
                                   int64_t gpus, int32_t priority = 0, int64_t now = 0) {
    core::WorkloadSpec w;
    w.ns = ns;
    w.name = name;
    w.queue = queue;
    w.priority = priority;
    core::PodSetSpec ps;
    ps.name = "main";
    ps.count = 1;
    ps.requests = {{"cpu", 500}, {"nvidia.com/gpu", gpus * 1000}};
    w.pod_sets.push_back(ps);
    Result<core::WorkloadId> id = engine.Submit(w, now);
    EXPECT_TRUE(id.ok()) << id.status().ToString();
    return engine.Find(ns + "/" + name);
  }
};

constexpr char kT0[] = "2026-01-02T03:04:05Z";
constexpr char kT1[] = "2026-01-02T03:05:00Z";
constexpr char kT2[] = "2026-01-02T03:06:00Z";

TEST(WorkloadStatusTest, AdmittedShapeAndObserveRoundTrip) {
  Fixture f;
  f.Submit("team-a", "w", "lq-a", 2);
  f.engine.Schedule(1000);
  const core::WorkloadInfo* info = f.engine.Find("team-a/w");
  ASSERT_EQ(info->state, core::WorkloadState::kAdmitted);
  Json st = AdmittedStatus(nullptr, *info, kT0, 3);
  CheckWorkloadStatusShape(st);
  EXPECT_EQ(st["admission"]["clusterQueue"], "cq-a");
  const Json& psa = st["admission"]["podSetAssignments"][0];
  EXPECT_EQ(psa["name"], "main");
  EXPECT_EQ(psa["count"], 1);
  EXPECT_EQ(psa["flavors"]["nvidia.com/gpu"], "a100");
  EXPECT_EQ(psa["resourceUsage"]["nvidia.com/gpu"], "2");
  EXPECT_EQ(psa["resourceUsage"]["cpu"], "500m");
  const Json* qr = FindCondition(st, "QuotaReserved");
  ASSERT_NE(qr, nullptr);
  EXPECT_EQ((*qr)["status"], "True");
  EXPECT_EQ((*qr)["reason"], "QuotaReserved");
  EXPECT_EQ((*qr)["observedGeneration"], 3);
  EXPECT_EQ((*FindCondition(st, "Admitted"))["reason"], "Admitted");
  EXPECT_TRUE(IsConditionTrue(st, "Admitted"));

  // Read back (a restart): the engine gets the same admission again.
  Json obj = {{"apiVersion", "kueue.x-k8s.io/v1beta2"}, {"kind", "Workload"}, {"status", st}};
  Result<ObservedState> o = ObserveWorkload(obj);
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_TRUE(o->quota_reserved);
  EXPECT_TRUE(o->admitted);
  EXPECT_FALSE(o->evicted);
  EXPECT_FALSE(o->finished);
  EXPECT_EQ(o->cluster_queue, "cq-a");
  EXPECT_EQ(o->admitted_at_ms, *ParseRfc3339(kT0));
  ASSERT_EQ(o->admission.size(), info->admission.size());
  EXPECT_EQ(o->admission[0].name, info->admission[0].name);
  EXPECT_EQ(o->admission[0].count, info->admission[0].count);
  EXPECT_EQ(o->admission[0].flavors, info->admission[0].flavors);
  EXPECT_EQ(o->admission[0].resource_usage, info->admission[0].resource_usage);

  core::Engine fresh;
  ASSERT_TRUE(fresh.Configure(f.engine.config()).ok());
  ASSERT_TRUE(fresh.Submit(info->spec, 0).ok());
  ASSERT_TRUE(fresh.Restore("team-a/w", o->cluster_queue, o->admission, o->admitted_at_ms).ok());
  EXPECT_EQ(fresh.Find("team-a/w")->state, core::WorkloadState::kAdmitted);

  // Writing the same admission again later keeps the transition times.
  Json again = AdmittedStatus(st, *info, kT2, 3);
  EXPECT_EQ(again, st);
}

TEST(WorkloadStatusTest, PendingCarriesTheWholeExplanation) {
  Fixture f;
  f.Submit("team-a", "big", "lq-a", 16);  // more than the whole cohort (8)
  f.engine.Schedule(1000);
  Result<core::PendingReason> why = f.engine.Why("team-a/big");
  ASSERT_TRUE(why.ok());
  ASSERT_NE(why->kind, core::PendingReason::Kind::kNone);
  Json st = PendingStatus(nullptr, *why, kT0, 1);
  CheckWorkloadStatusShape(st);
  const Json* qr = FindCondition(st, "QuotaReserved");
  ASSERT_NE(qr, nullptr);
  EXPECT_EQ((*qr)["status"], "False");
  EXPECT_EQ((*qr)["reason"], "Pending");
  EXPECT_EQ((*qr)["message"], PendingMessage(*why));
  EXPECT_THAT((*qr)["message"].get<std::string>(), HasSubstr(why->message));
  EXPECT_THAT((*qr)["message"].get<std::string>(), HasSubstr("nvidia.com/gpu"));
  EXPECT_FALSE(st.contains("admission"));
  EXPECT_EQ(FindCondition(st, "Admitted"), nullptr) << "never admitted: no Admitted condition (Kueue)";

  // Same status, a later cycle: lastTransitionTime is kept.
  Json later = PendingStatus(st, *why, kT2, 1);
  EXPECT_EQ((*FindCondition(later, "QuotaReserved"))["lastTransitionTime"], kT0);

  // Per-flavor attempts are appended when the headline lacks them.
  core::PendingReason r;
  r.kind = core::PendingReason::Kind::kInsufficientQuota;
  r.message = "insufficient quota";
  core::FlavorAttempt a1, a2;
  a1.message = "flavor a100: 4 of nvidia.com/gpu available, 8 requested";
  a2.message = "flavor h100: excluded by taints";
  r.flavors = {a1, a2};
  std::string msg = PendingMessage(r);
  EXPECT_THAT(msg, HasSubstr("insufficient quota"));
  EXPECT_THAT(msg, HasSubstr(a1.message));
  EXPECT_THAT(msg, HasSubstr(a2.message));

  // Missing or stopped queues are Inadmissible (Kueue's workload controller).
  core::PendingReason missing;
  missing.kind = core::PendingReason::Kind::kLocalQueueMissing;
  missing.message = "LocalQueue team-a/nope does not exist";
  EXPECT_EQ((*FindCondition(PendingStatus(nullptr, missing, kT0), "QuotaReserved"))["reason"],
            "Inadmissible");

  // Long explanations are cut to Kubernetes' limit.
  r.message = std::string(40000, 'x');
  Json cut = PendingStatus(nullptr, r, kT0);
  std::string m = (*FindCondition(cut, "QuotaReserved"))["message"];
  EXPECT_EQ(m.size(), 32768u);
  EXPECT_TRUE(m.ends_with(" ..."));
}

TEST(WorkloadStatusTest, PreemptionEvictsThenRequeues) {
  Fixture f;
  // cq-b borrows all of cq-a's GPUs, then cq-a reclaims them.
  f.Submit("team-b", "borrower", "lq-b", 8, 0, 0);
  f.engine.Schedule(1000);
  const core::WorkloadInfo* victim = f.engine.Find("team-b/borrower");
  ASSERT_EQ(victim->state, core::WorkloadState::kAdmitted);
  Json st = AdmittedStatus(nullptr, *victim, kT0, 1);
  f.Submit("team-a", "owner", "lq-a", 4, 0, 2000);
  core::CycleResult r = f.engine.Schedule(3000);
  ASSERT_EQ(r.evictions.size(), 1u);
  const core::Eviction& e = r.evictions[0];
  EXPECT_EQ(e.reason, core::EvictionReason::kInCohortReclamation);

  Json evicted = EvictedStatus(st, e, kT1, 1);
  CheckWorkloadStatusShape(evicted);
  const Json* ev = FindCondition(evicted, "Evicted");
  ASSERT_NE(ev, nullptr);
  EXPECT_EQ((*ev)["status"], "True");
  EXPECT_EQ((*ev)["reason"], "Preempted");
  EXPECT_THAT((*ev)["message"].get<std::string>(), HasSubstr("team-a/owner"));
  const Json* pr = FindCondition(evicted, "Preempted");
  ASSERT_NE(pr, nullptr);
  EXPECT_EQ((*pr)["reason"], "InCohortReclamation");
  // The quota is still held until the pods are gone.
  EXPECT_TRUE(evicted.contains("admission"));
  EXPECT_TRUE(IsConditionTrue(evicted, "QuotaReserved"));
  Result<ObservedState> o = ObserveWorkload(Json{{"status", evicted}});
  ASSERT_TRUE(o.ok());
  EXPECT_TRUE(o->evicted);
  EXPECT_EQ(o->evicted_reason, "Preempted");
  EXPECT_TRUE(o->quota_reserved);

  Json requeued = RequeuedStatus(evicted, kT2, 1);
  CheckWorkloadStatusShape(requeued);
  EXPECT_FALSE(requeued.contains("admission"));
  const Json* qr = FindCondition(requeued, "QuotaReserved");
  EXPECT_EQ((*qr)["status"], "False");
  EXPECT_EQ((*qr)["reason"], "Pending");
  EXPECT_EQ((*qr)["lastTransitionTime"], kT2);
  const Json* adm = FindCondition(requeued, "Admitted");
  EXPECT_EQ((*adm)["status"], "False");
  EXPECT_EQ((*adm)["reason"], "NoReservation");
  const Json* rq = FindCondition(requeued, "Requeued");
  ASSERT_NE(rq, nullptr);
  EXPECT_EQ((*rq)["status"], "True");
  EXPECT_EQ((*rq)["reason"], "Preempted");

  // Admitted again later: Evicted and Preempted are cleared, Requeued stays.
  ASSERT_TRUE(f.engine.CompleteEviction("team-b/borrower", 4000).ok());
  f.engine.Schedule(4500);
  ASSERT_EQ(f.engine.Find("team-a/owner")->state, core::WorkloadState::kAdmitted);
  ASSERT_TRUE(f.engine.Finish("team-a/owner", 5000).ok());
  f.engine.Schedule(6000);
  ASSERT_EQ(f.engine.Find("team-b/borrower")->state, core::WorkloadState::kAdmitted);
  Json back = AdmittedStatus(requeued, *f.engine.Find("team-b/borrower"), kT2, 1);
  CheckWorkloadStatusShape(back);
  EXPECT_EQ((*FindCondition(back, "Evicted"))["status"], "False");
  EXPECT_EQ((*FindCondition(back, "Evicted"))["reason"], "QuotaReserved");
  EXPECT_EQ((*FindCondition(back, "Preempted"))["status"], "False");
  EXPECT_EQ((*FindCondition(back, "Admitted"))["status"], "True");
}

TEST(WorkloadStatusTest, StopAndDeactivationEvictionsDoNotRequeueAsPreempted) {
  core::Eviction e;
  e.victim = "team-a/w";
  e.victim_cluster_queue = "cq-a";
  e.reason = core::EvictionReason::kClusterQueueStopped;
  Json admitted = {{"admission", {{"clusterQueue", "cq-a"}, {"podSetAssignments", Json::array()}}}};
  SetCondition(&admitted["conditions"], "QuotaReserved", true, "QuotaReserved", "m", kT0);
  SetCondition(&admitted["conditions"], "Admitted", true, "Admitted", "m", kT0);
  Json st = EvictedStatus(admitted, e, kT1);
  CheckWorkloadStatusShape(st);
  EXPECT_EQ((*FindCondition(st, "Evicted"))["reason"], "ClusterQueueStopped");
  EXPECT_EQ(FindCondition(st, "Preempted"), nullptr);
  Json rq = RequeuedStatus(st, kT2);
  EXPECT_EQ((*FindCondition(rq, "Requeued"))["status"], "False");
  EXPECT_EQ((*FindCondition(rq, "Requeued"))["reason"], "ClusterQueueStopped");

  e.reason = core::EvictionReason::kLocalQueueStopped;
  EXPECT_EQ((*FindCondition(EvictedStatus(admitted, e, kT1), "Evicted"))["reason"], "LocalQueueStopped");
  e.reason = core::EvictionReason::kDeactivated;
  Json with_requeue = admitted;
  with_requeue["requeueState"] = {{"count", 2}, {"requeueAt", kT0}};
  Json deact = EvictedStatus(with_requeue, e, kT1);
  EXPECT_EQ((*FindCondition(deact, "Evicted"))["reason"], "Deactivated");
  EXPECT_FALSE(deact.contains("requeueState")) << "Kueue clears requeueState on deactivation";
  Json react = ReactivatedStatus(RequeuedStatus(deact, kT2), kT2);
  EXPECT_EQ((*FindCondition(react, "Requeued"))["reason"], "Reactivated");
  EXPECT_EQ((*FindCondition(react, "Requeued"))["status"], "True");
}

TEST(WorkloadStatusTest, RequeueStateIsKept) {
  Json st = {{"requeueState", {{"count", 1}, {"requeueAt", kT0}}}};
  SetCondition(&st["conditions"], "Evicted", true, "Preempted", "m", kT0);
  Json rq = RequeuedStatus(st, kT1);
  EXPECT_EQ(rq["requeueState"]["count"], 1);
  EXPECT_EQ(rq["requeueState"]["requeueAt"], kT0);
}

TEST(WorkloadStatusTest, FinishedAndObserve) {
  Json st = FinishedStatus(nullptr, true, "Job finished successfully", kT1, 4);
  CheckWorkloadStatusShape(st);
  EXPECT_EQ((*FindCondition(st, "Finished"))["reason"], "Succeeded");
  EXPECT_EQ((*FindCondition(FinishedStatus(nullptr, false, "x", kT1), "Finished"))["reason"], "Failed");
  Result<ObservedState> o = ObserveWorkload(Json{{"spec", {{"active", false}}}, {"status", st}});
  ASSERT_TRUE(o.ok());
  EXPECT_TRUE(o->finished);
  EXPECT_FALSE(o->active);
  EXPECT_FALSE(o->quota_reserved);
}

TEST(WorkloadStatusTest, ObserveRefusesWhatItCannotRead) {
  Json st = {
      {"admission",
       {{"clusterQueue", "cq-a"},
        {"podSetAssignments", {{{"name", "main"}, {"count", 1}, {"resourceUsage", {{"cpu", "lots"}}}}}}}}};
  Result<ObservedState> o = ObserveWorkload(Json{{"status", st}});
  ASSERT_FALSE(o.ok());
  EXPECT_EQ(o.status().field(), "status.admission.podSetAssignments[0].resourceUsage.cpu");
  // count left out: the pod set's count from spec.
  st["admission"]["podSetAssignments"][0].erase("count");
  st["admission"]["podSetAssignments"][0]["resourceUsage"]["cpu"] = "1500m";
  Json wl = {{"spec", {{"podSets", {{{"name", "main"}, {"count", 3}}}}}}, {"status", st}};
  o = ObserveWorkload(wl);
  ASSERT_TRUE(o.ok()) << o.status().ToString();
  EXPECT_EQ(o->admission[0].count, 3);
  EXPECT_EQ(o->admission[0].resource_usage.at("cpu"), 1500);
}

TEST(ConditionTest, TransitionTimeChangesOnlyWithTheStatus) {
  Json conds;
  EXPECT_TRUE(SetCondition(&conds, "Active", true, "Ready", "ok", kT0, 1));
  EXPECT_FALSE(SetCondition(&conds, "Active", true, "Ready", "ok", kT1, 1));
  EXPECT_EQ(conds[0]["lastTransitionTime"], kT0);
  // A new reason or message with the same status keeps the time (meta.SetStatusCondition).
  EXPECT_TRUE(SetCondition(&conds, "Active", true, "Ready", "still ok", kT1, 2));
  EXPECT_EQ(conds[0]["lastTransitionTime"], kT0);
  EXPECT_EQ(conds[0]["observedGeneration"], 2);
  EXPECT_TRUE(SetCondition(&conds, "Active", false, "Stopped", "held", kT2, 2));
  EXPECT_EQ(conds[0]["lastTransitionTime"], kT2);
  EXPECT_EQ(conds.size(), 1u);
}

TEST(TimeTest, Rfc3339) {
  EXPECT_EQ(FormatRfc3339(0), "1970-01-01T00:00:00Z");
  EXPECT_EQ(*ParseRfc3339("2026-01-02T03:04:05Z"), 1767323045000);
  EXPECT_EQ(FormatRfc3339(1767323045999), "2026-01-02T03:04:05Z");
  EXPECT_EQ(*ParseRfc3339("2026-01-02T04:04:05.25+01:00"), 1767323045250);
  EXPECT_EQ(*ParseRfc3339("2024-02-29T23:59:59Z"), *ParseRfc3339("2024-03-01T00:00:00Z") - 1000);
  for (int64_t ms : {int64_t{951782400000}, int64_t{4102444800000}, int64_t{1}}) {
    EXPECT_EQ(*ParseRfc3339(FormatRfc3339(ms)), ms / 1000 * 1000) << ms;
  }
  EXPECT_FALSE(ParseRfc3339("2026-01-02 03:04").ok());
  EXPECT_FALSE(ParseRfc3339("2026-13-02T03:04:05Z").ok());
  EXPECT_FALSE(ParseRfc3339("2026-01-02T03:04:05").ok());
}

// ---------------------------------------------------------------- queue status

void CheckQueueStatusShape(const Json& st, bool cluster_queue) {
  std::set<std::string> allowed = {"conditions",        "pendingWorkloads",   "reservingWorkloads",
                                   "admittedWorkloads", "flavorsReservation", "flavorsUsage",
                                   "fairSharing"};
  for (auto it = st.begin(); it != st.end(); ++it) EXPECT_TRUE(allowed.count(it.key())) << it.key();
  for (const char* list : {"flavorsReservation", "flavorsUsage"}) {
    EXPECT_LE(st[list].size(), 16u);
    for (const Json& f : st[list]) {
      for (auto it = f.begin(); it != f.end(); ++it)
        EXPECT_TRUE(it.key() == "name" || it.key() == "resources");
      for (const Json& r : f["resources"]) {
        for (auto it = r.begin(); it != r.end(); ++it) {
          bool ok = it.key() == "name" || it.key() == "total" || (cluster_queue && it.key() == "borrowed");
          EXPECT_TRUE(ok) << it.key() << (cluster_queue ? " in a ClusterQueue" : " in a LocalQueue");
          if (it.key() != "name") {
            EXPECT_TRUE(core::ParseQuantity(it->get<std::string>()).ok());
          }
        }
      }
    }
  }
  for (const Json& c : st["conditions"]) EXPECT_EQ(c["type"], "Active");
}

std::string Usage(const Json& st, const std::string& list, const std::string& flavor, const std::string& res,
                  const std::string& field) {
  for (const Json& f : st[list]) {
    if (f["name"] != flavor) continue;
    for (const Json& r : f["resources"]) {
      if (r["name"] == res) return r[field];
    }
  }
  return "<none>";
}

TEST(QueueStatusTest, ClusterQueueAndLocalQueueCountsAndUsage) {
  Fixture f;
  f.Submit("team-b", "b1", "lq-b", 6);  // borrows 2 from cq-a
  f.Submit("team-b", "b2", "lq-b", 6);  // does not fit: pending
  f.engine.Schedule(1000);
  BuiltConfig b = BuildConfig(FromYaml(kSmall));
  const ObjectCondition& cond = Cond(b, "ClusterQueue", "", "cq-b");
  Json st = ClusterQueueStatus(f.engine, "cq-b", cond, nullptr, kT0, 5);
  CheckQueueStatusShape(st, true);
  EXPECT_EQ(st["pendingWorkloads"], 1);
  EXPECT_EQ(st["reservingWorkloads"], 1);
  EXPECT_EQ(st["admittedWorkloads"], 1);
  EXPECT_EQ(Usage(st, "flavorsReservation", "a100", "nvidia.com/gpu", "total"), "6");
  EXPECT_EQ(Usage(st, "flavorsReservation", "a100", "nvidia.com/gpu", "borrowed"), "2");
  EXPECT_EQ(Usage(st, "flavorsUsage", "a100", "cpu", "total"), "500m");
  EXPECT_EQ(Usage(st, "flavorsUsage", "a100", "cpu", "borrowed"), "0");
  const Json* active = FindCondition(st, "Active");
  ASSERT_NE(active, nullptr);
  EXPECT_EQ((*active)["status"], "True");
  EXPECT_EQ((*active)["reason"], "Ready");
  EXPECT_EQ((*active)["observedGeneration"], 5);
  EXPECT_FALSE(st.contains("fairSharing"));

  Json idle = ClusterQueueStatus(f.engine, "cq-a", Cond(b, "ClusterQueue", "", "cq-a"), nullptr, kT0);
  EXPECT_EQ(idle["pendingWorkloads"], 0);
  EXPECT_EQ(Usage(idle, "flavorsUsage", "a100", "nvidia.com/gpu", "total"), "0");

  // An inactive condition; time kept on an unchanged rewrite.
  ObjectCondition stopped = cond;
  stopped.active = false;
  stopped.reason = "Stopped";
  stopped.message = "stopped";
  Json st2 = ClusterQueueStatus(f.engine, "cq-b", stopped, st, kT1);
  EXPECT_EQ((*FindCondition(st2, "Active"))["lastTransitionTime"], kT1);
  Json st3 = ClusterQueueStatus(f.engine, "cq-b", stopped, st2, kT2);
  EXPECT_EQ((*FindCondition(st3, "Active"))["lastTransitionTime"], kT1);

  Json lq =
      LocalQueueStatus(f.engine, "team-b", "lq-b", Cond(b, "LocalQueue", "team-b", "lq-b"), nullptr, kT0);
  CheckQueueStatusShape(lq, false);
  EXPECT_EQ(lq["pendingWorkloads"], 1);
  EXPECT_EQ(lq["admittedWorkloads"], 1);
  EXPECT_EQ(Usage(lq, "flavorsUsage", "a100", "nvidia.com/gpu", "total"), "6");
  Json lqa =
      LocalQueueStatus(f.engine, "team-a", "lq-a", Cond(b, "LocalQueue", "team-a", "lq-a"), nullptr, kT0);
  EXPECT_EQ(lqa["admittedWorkloads"], 0);
  EXPECT_EQ(Usage(lqa, "flavorsUsage", "a100", "nvidia.com/gpu", "total"), "0");
}

// The controller builds one QueueStatusIndex per status pass (one walk over
// the workloads for every queue); each status from it is the queue's own.
TEST(QueueStatusTest, OneIndexGivesEveryQueuesStatus) {
  Fixture f;
  f.Submit("team-b", "b1", "lq-b", 6);  // borrows 2 from cq-a
  f.Submit("team-b", "b2", "lq-b", 6);  // pending
  f.Submit("team-a", "a1", "lq-a", 2);
  f.Submit("team-a", "lost", "lq-missing", 1);  // a LocalQueue the configuration lacks
  f.engine.Schedule(1000);
  BuiltConfig b = BuildConfig(FromYaml(kSmall));
  QueueStatusIndex index(f.engine);
  for (const char* cq : {"cq-a", "cq-b", "not-a-queue"}) {
    ObjectCondition cond;
    cond.kind = "ClusterQueue";
    cond.name = cq;
    EXPECT_EQ(ClusterQueueStatus(index, f.engine, cq, cond, nullptr, kT0, 3),
              ClusterQueueStatus(f.engine, cq, cond, nullptr, kT0, 3))
        << cq;
  }
  Json cqb = ClusterQueueStatus(index, f.engine, "cq-b", Cond(b, "ClusterQueue", "", "cq-b"), nullptr, kT0);
  EXPECT_EQ(cqb["pendingWorkloads"], 1);
  EXPECT_EQ(cqb["admittedWorkloads"], 1);
  EXPECT_EQ(Usage(cqb, "flavorsUsage", "a100", "nvidia.com/gpu", "borrowed"), "2");
  Json cqa = ClusterQueueStatus(index, f.engine, "cq-a", Cond(b, "ClusterQueue", "", "cq-a"), nullptr, kT0);
  EXPECT_EQ(cqa["admittedWorkloads"], 1);
  EXPECT_EQ(Usage(cqa, "flavorsUsage", "a100", "nvidia.com/gpu", "total"), "2");
  for (auto [ns, lq] : std::vector<std::pair<std::string, std::string>>{
           {"team-a", "lq-a"}, {"team-b", "lq-b"}, {"team-a", "lq-missing"}, {"team-b", "lq-a"}}) {
    ObjectCondition cond;
    cond.kind = "LocalQueue";
    cond.ns = ns;
    cond.name = lq;
    EXPECT_EQ(LocalQueueStatus(index, ns, lq, cond, nullptr, kT0, 2),
              LocalQueueStatus(f.engine, ns, lq, cond, nullptr, kT0, 2))
        << ns << "/" << lq;
  }
  Json lqb = LocalQueueStatus(index, "team-b", "lq-b", Cond(b, "LocalQueue", "team-b", "lq-b"), nullptr, kT0);
  EXPECT_EQ(lqb["pendingWorkloads"], 1);
  EXPECT_EQ(lqb["admittedWorkloads"], 1);
  EXPECT_EQ(Usage(lqb, "flavorsUsage", "a100", "nvidia.com/gpu", "total"), "6");
  Json lqa = LocalQueueStatus(index, "team-a", "lq-a", Cond(b, "LocalQueue", "team-a", "lq-a"), nullptr, kT0);
  EXPECT_EQ(lqa["admittedWorkloads"], 1);
  EXPECT_EQ(Usage(lqa, "flavorsUsage", "a100", "nvidia.com/gpu", "total"), "2");
}

// The controller keeps one QueueStatusIndex between passes and updates it
// with the workloads that changed (QueueStatusIndex::Update). After any mix of
// submissions, admissions, preemptions, evictions, finishes, deactivations and
// forgets, it equals an index built afresh: every queue's status and inputs.
TEST(QueueStatusTest, UpdatedIndexEqualsAFreshOne) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    Fixture f;
    std::mt19937 rng(seed);
    QueueStatusIndex index(f.engine);
    std::vector<std::string> names;
    int64_t now = 0;
    auto pick = [&]() -> std::string { return names.empty() ? "" : names[rng() % names.size()]; };
    for (int step = 0; step < 60; ++step) {
      std::vector<std::string> changed;
      now += 1000;
      switch (rng() % 6) {
        case 0:
        case 1: {  // submit, to a known or an unknown LocalQueue, low or high priority
          bool a = rng() % 2;
          std::string ns = a ? "team-a" : "team-b";
          std::string lq = rng() % 8 == 0 ? "lq-missing" : (a ? "lq-a" : "lq-b");
          std::string name = "w" + std::to_string(step);
          f.Submit(ns, name, lq, 1 + rng() % 4, rng() % 3 == 0 ? 1000 : 0, now);
          names.push_back(ns + "/" + name);
          changed.push_back(ns + "/" + name);
          break;
        }
        case 2: {  // finish or cancel, sometimes forget
          std::string key = pick();
          if (key.empty()) break;
          if (const core::WorkloadInfo* w = f.engine.Find(key)) {
            core::WorkloadId id = w->id;
            if (rng() % 2)
              (void)f.engine.Finish(key, now);
            else
              (void)f.engine.Cancel(key, now);
            if (rng() % 2) (void)f.engine.Forget(id);
          }
          changed.push_back(key);
          break;
        }
        case 3: {  // deactivate or reactivate
          std::string key = pick();
          if (key.empty()) break;
          if (const core::WorkloadInfo* w = f.engine.Find(key))
            (void)f.engine.SetActive(key, !w->spec.active, now);
          changed.push_back(key);
          break;
        }
        case 4: {  // an eviction completes
          for (const core::WorkloadInfo* w : f.engine.Workloads()) {
            if (w->state != core::WorkloadState::kEvicting) continue;
            (void)f.engine.CompleteEviction(w->key, now);
            changed.push_back(w->key);
            break;
          }
          break;
        }
        default: break;
      }
      core::CycleResult r = f.engine.Schedule(now);
      for (const std::string& k : r.admitted) changed.push_back(k);
      for (const core::Eviction& e : r.evictions) changed.push_back(e.victim);
      index.Update(f.engine, changed);
      QueueStatusIndex fresh(f.engine);
      for (const char* cq : {"cq-a", "cq-b"}) {
        ObjectCondition cond;
        cond.kind = "ClusterQueue";
        cond.name = cq;
        ASSERT_EQ(QueueStatusInputs(index, f.engine, true, "", cq),
                  QueueStatusInputs(fresh, f.engine, true, "", cq))
            << "seed " << seed << " step " << step << " " << cq;
        ASSERT_EQ(ClusterQueueStatus(index, f.engine, cq, cond, nullptr, kT0),
                  ClusterQueueStatus(fresh, f.engine, cq, cond, nullptr, kT0))
            << "seed " << seed << " step " << step << " " << cq;
      }
      for (auto [ns, lq] : std::vector<std::pair<std::string, std::string>>{
               {"team-a", "lq-a"}, {"team-b", "lq-b"}, {"team-a", "lq-missing"}, {"team-b", "lq-missing"}}) {
        ObjectCondition cond;
        cond.kind = "LocalQueue";
        cond.ns = ns;
        cond.name = lq;
        ASSERT_EQ(QueueStatusInputs(index, f.engine, false, ns, lq),
                  QueueStatusInputs(fresh, f.engine, false, ns, lq))
            << "seed " << seed << " step " << step << " " << ns << "/" << lq;
        ASSERT_EQ(LocalQueueStatus(index, ns, lq, cond, nullptr, kT0),
                  LocalQueueStatus(fresh, ns, lq, cond, nullptr, kT0))
            << "seed " << seed << " step " << step << " " << ns << "/" << lq;
      }
    }
  }
}

TEST(QueueStatusTest, FairSharingShareIsReportedWhenOn) {
  core::EngineOptions opts;
  opts.fair_sharing = true;
  core::Engine engine(opts);
  ASSERT_TRUE(engine.Configure(BuildConfig(FromYaml(kSmall)).config).ok());
  core::WorkloadSpec w;
  w.ns = "team-b";
  w.name = "w";
  w.queue = "lq-b";
  core::PodSetSpec ps;
  ps.requests = {{"nvidia.com/gpu", 6000}};
  w.pod_sets.push_back(ps);
  ASSERT_TRUE(engine.Submit(w, 0).ok());
  engine.Schedule(1);
  ObjectCondition c;
  c.kind = "ClusterQueue";
  c.name = "cq-b";
  c.reason = "Ready";
  c.message = "ok";
  Json st = ClusterQueueStatus(engine, "cq-b", c, nullptr, kT0);
  ASSERT_TRUE(st.contains("fairSharing"));
  EXPECT_EQ(st["fairSharing"]["weightedShare"], engine.DominantResourceShare("cq-b"));
  EXPECT_GT(st["fairSharing"]["weightedShare"].get<int64_t>(), 0);
}

TEST(CrdSchemaTest, EveryStatusValidatesAgainstKueuesCrd) {
  std::string dir = KueueCrdDir();
  // make test downloads it (scripts/install-deps.sh --k8s): missing is a failure, not a skip.
  ASSERT_FALSE(dir.empty())
      << "Kueue v0.17.0 is not in the Go module cache: run scripts/install-deps.sh --k8s "
         "(go mod download in tools/k8s/kueue)";
  // The validator itself: an invented field and a bad reason are caught.
  {
    std::vector<std::string> errs;
    Json bad = {{"artelExplanation", "x"}};
    SetCondition(&bad["conditions"], "QuotaReserved", false, "not camel", "m", kT0);
    Validate(StatusSchema(dir, "workloads"), bad, "status", &errs);
    EXPECT_EQ(errs.size(), 2u) << ::testing::PrintToString(errs);
  }
  Fixture f;
  f.Submit("team-b", "borrower", "lq-b", 8);
  f.Submit("team-a", "big", "lq-a", 16);
  f.engine.Schedule(1000);
  const core::WorkloadInfo* victim = f.engine.Find("team-b/borrower");
  Json admitted = AdmittedStatus(nullptr, *victim, kT0, 1);
  EXPECT_TRUE(CheckAgainstCrd("workloads", admitted));
  Result<core::PendingReason> why = f.engine.Why("team-a/big");
  ASSERT_TRUE(why.ok());
  EXPECT_TRUE(CheckAgainstCrd("workloads", PendingStatus(nullptr, *why, kT0, 1)));
  core::PendingReason huge = *why;
  huge.message = std::string(40000, 'y');
  EXPECT_TRUE(CheckAgainstCrd("workloads", PendingStatus(nullptr, huge, kT0, 1)));
  f.Submit("team-a", "owner", "lq-a", 4, 0, 2000);
  core::CycleResult r = f.engine.Schedule(3000);
  ASSERT_EQ(r.evictions.size(), 1u);
  Json evicted = EvictedStatus(admitted, r.evictions[0], kT1, 1);
  EXPECT_TRUE(CheckAgainstCrd("workloads", evicted));
  Json requeued = RequeuedStatus(evicted, kT2, 1);
  EXPECT_TRUE(CheckAgainstCrd("workloads", requeued));
  EXPECT_TRUE(CheckAgainstCrd("workloads", ReactivatedStatus(requeued, kT2, 1)));
  EXPECT_TRUE(CheckAgainstCrd("workloads", FinishedStatus(requeued, false, "failed", kT2, 1)));

  BuiltConfig b = BuildConfig(FromYaml(kSmall));
  for (const std::string cq : {"cq-a", "cq-b"}) {
    EXPECT_TRUE(CheckAgainstCrd(
        "clusterqueues", ClusterQueueStatus(f.engine, cq, Cond(b, "ClusterQueue", "", cq), nullptr, kT0, 2)));
  }
  ObjectCondition broken;
  broken.kind = "ClusterQueue";
  broken.name = "gone";
  broken.active = false;
  broken.reason = "FlavorNotFound";
  broken.message = "m";
  EXPECT_TRUE(CheckAgainstCrd("clusterqueues", ClusterQueueStatus(f.engine, "gone", broken, nullptr, kT0)));
  EXPECT_TRUE(CheckAgainstCrd(
      "localqueues", LocalQueueStatus(f.engine, "team-b", "lq-b", Cond(b, "LocalQueue", "team-b", "lq-b"),
                                      nullptr, kT0, 1)));
  core::EngineOptions opts;
  opts.fair_sharing = true;
  core::Engine fair(opts);
  ASSERT_TRUE(fair.Configure(b.config).ok());
  EXPECT_TRUE(CheckAgainstCrd(
      "clusterqueues", ClusterQueueStatus(fair, "cq-a", Cond(b, "ClusterQueue", "", "cq-a"), nullptr, kT0)));
  // Every reason BuildConfig produces fits the condition's reason pattern.
  KueueObjects objs = FromYaml(kSmall);
  objs.cluster_queues[1]["spec"]["resourceGroups"][0]["flavors"][0]["name"] = "h100";
  objs.local_queues[0]["spec"]["clusterQueue"] = "nope";
  BuiltConfig bad = BuildConfig(objs);
  for (const ObjectCondition& c : bad.conditions) {
    if (c.kind != "ClusterQueue" && c.kind != "LocalQueue") continue;
    Json st = c.kind == "ClusterQueue" ? ClusterQueueStatus(f.engine, c.name, c, nullptr, kT0)
                                       : LocalQueueStatus(f.engine, c.ns, c.name, c, nullptr, kT0);
    EXPECT_TRUE(CheckAgainstCrd(c.kind == "ClusterQueue" ? "clusterqueues" : "localqueues", st));
  }
}

}  // namespace
}  // namespace artel::kube
