// kueue_diff: plays `artel test` scenario files (docs/scenarios.md) against a
// controller on a real kube-apiserver (real Kueue's minimalkueue, or arteld in
// Kubernetes mode) and compares what the controller wrote on the objects with
// each step's expectations, which `artel test` checks against the core
// engine (issue 13 §3; docs/semantics.md, "Differential run against real
// Kueue"; the script tests/kube/kueue_diff.sh starts the control plane and
// the controllers and runs this program).
//
// Why C++: it reuses Artel's own scenario reader (sim::ParseScenarios: the
// steps, workloads and expectations exactly as `artel test` reads them),
// runs the engine's side in process (sim::RunScenario) and talks to the API
// server with Artel's Kubernetes client (src/kube/client.h). A Go program
// would have had to restate the scenario format.
//
// What the driver does per scenario (names of cluster-scoped objects and of
// namespaces get a per-scenario prefix, so that one control plane and one
// controller serve many scenarios; every object it makes carries the label
// artel.dev/kueue-diff=<prefix>):
// - applies the configuration's Kueue objects (ResourceFlavor, Cohort,
//   ClusterQueue, LocalQueue, WorkloadPriorityClass; Namespaces with their
//   labels), as the manifests are written (v1beta1 objects have their two
//   renamed fields moved to v1beta2: cohort -> cohortName, parent ->
//   parentName);
// - plays each step: submit creates a Workload (spec.priority resolved from
//   the WorkloadPriorityClass, as Kueue's job framework does for a job's
//   workload: pkg/controller/jobframework/reconciler.go); finish sets the
//   Finished condition; cancel deletes the Workload; deactivate/activate set
//   spec.active; apply applies the changed objects;
// - plays the job's side: a Workload with Evicted=True that still holds its
//   quota reservation gets it cleared at once (status.admission removed,
//   QuotaReserved=False), as Kueue's job framework does once a job is
//   stopped and as Kueue's own scalability runner does for plain Workloads
//   (test/performance/scheduler/runner/controller/controller.go); a deleted
//   Workload gets its finalizers removed (the job framework removes
//   kueue.x-k8s.io/resource-in-use when the job is gone);
// - waits until the controller settles: no Workload or ClusterQueue of the
//   scenario changed (resourceVersion) for --settle-ms, every active
//   Workload has been looked at (it has a QuotaReserved condition; a
//   Workload never looked at, as behind a StrictFIFO head, is waited for
//   three quiet intervals), and the driver had nothing to do; it polls every
//   50 ms with a deadline;
// - time: a step's `at` is virtual. The driver does not wait for it; runs
//   with `runtime` end when their virtual end is reached (the driver sets
//   Finished), in time order, settling after each instant, as the runner
//   does (docs/scenarios.md, "Run semantics"). Scenarios that need the
//   controller's own clock (maximum execution time, admission fair sharing's
//   usage decay) are skipped with that reason;
// - creation order: Kueue orders a queue by priority, then creationTimestamp
//   (1 s resolution), then UID (pkg/cache/queue/cluster_queue.go,
//   baseCompareFunc). So that the scenario's order is the only order, two
//   Workloads of one priority are never created in the same wall-clock
//   second: the driver waits for the next second when needed.
// - compares, at every step with `expect`: admitted, pending, finished,
//   preempted, evictions (victim and reason: the Preempted condition's
//   reason, else the Evicted one's), flavors, admittedCounts and the usage
//   of ClusterQueues (status.flavorsReservation). Not compared: cohort usage
//   (Kueue's Cohort status has none), pendingReasons and pendingMessages
//   (Artel's own explanations), share, failed, placements, migLayouts.
//
// Output: one line per scenario, `AGREE|DIFFER|SKIP|ERROR|ENGINE-FAIL file: name`
// (SKIP and ERROR with the reason), the mismatches indented below, then the
// counts. Exit status 1 when a scenario differs or errs.
//
// Thread-safety: a single-threaded program.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "api/codec.h"
#include "core/quantity.h"
#include "kube/client.h"
#include "kube/kubeconfig.h"
#include "kube/kueue_map.h"
#include "sim/duration.h"
#include "sim/runner.h"
#include "sim/scenario.h"

namespace artel {
namespace {

using kube::Json;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

const char* const kLabel = "artel.dev/kueue-diff";
const char* const kManager = "kueue-diff";

struct Options {
  std::string kubeconfig;
  std::string prefix = "kd";
  int settle_ms = 500;
  int step_timeout_s = 30;
  // Which scenarios this run plays: "off" those without fair sharing,
  // "on" those with it, "unsupported" all (fair-sharing ones are skipped).
  std::string fair_sharing = "off";
  std::vector<std::string> paths;
  int shard = 0, shards = 1;
  bool verbose = false;
};

Status OkStatus() { return Status(); }
Status Internal(std::string msg) { return Status(StatusCode::kInternal, std::move(msg)); }
Status DeadlineExceeded(std::string msg) { return Status(StatusCode::kResourceExhausted, std::move(msg)); }

int64_t WallMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now().time_since_epoch()).count();
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const Json* FindCond(const Json& obj, const std::string& type) {
  if (!obj.contains("status") || !obj["status"].is_object()) return nullptr;
  auto it = obj["status"].find("conditions");
  if (it == obj["status"].end() || !it->is_array()) return nullptr;
  for (const Json& c : *it)
    if (c.value("type", "") == type) return &c;
  return nullptr;
}
bool CondTrue(const Json& obj, const std::string& type) {
  const Json* c = FindCond(obj, type);
  return c != nullptr && c->value("status", "") == "True";
}

// ---- the raw manifests of a scenario (spec.config and steps[].apply) ----

// Reads one config source list (`[{file: ..} | {inline: ..}]`) or an inline
// string into YAML documents. `dir` is the scenario file's directory.
Status ReadSources(const YAML::Node& src, const fs::path& dir, std::vector<std::string>* docs);

Status ReadManifestPath(const fs::path& p, std::vector<std::string>* docs) {
  if (fs::is_directory(p)) {
    fs::path kust = p / "kustomization.yaml";
    if (fs::exists(kust)) {
      YAML::Node k = YAML::LoadFile(kust.string());
      for (const auto& r : k["resources"])
        ARTEL_RETURN_IF_ERROR(ReadManifestPath(p / r.as<std::string>(), docs));
      return OkStatus();
    }
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(p))
      if (e.is_regular_file() && (e.path().extension() == ".yaml" || e.path().extension() == ".yml"))
        files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      std::string text = ReadFile(f.string());
      if (text.find("kind: Scenario") != std::string::npos) continue;
      docs->push_back(text);
    }
    return OkStatus();
  }
  if (!fs::exists(p)) return NotFound("no manifest " + p.string());
  docs->push_back(ReadFile(p.string()));
  return OkStatus();
}

Status ReadSources(const YAML::Node& src, const fs::path& dir, std::vector<std::string>* docs) {
  if (!src) return OkStatus();
  if (src.IsScalar()) {
    docs->push_back(src.as<std::string>());
    return OkStatus();
  }
  for (const auto& s : src) {
    if (s["inline"]) docs->push_back(s["inline"].as<std::string>());
    if (s["file"]) ARTEL_RETURN_IF_ERROR(ReadManifestPath(dir / s["file"].as<std::string>(), docs));
  }
  return OkStatus();
}

// A YAML node as JSON, as kubectl reads a manifest: quoted scalars stay
// strings; plain ones that read as an integer, a number, a boolean or null
// become that (YAML 1.2's core schema).
Json NodeToJson(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map: {
      Json o = Json::object();
      for (const auto& kv : n) o[kv.first.as<std::string>()] = NodeToJson(kv.second);
      return o;
    }
    case YAML::NodeType::Sequence: {
      Json a = Json::array();
      for (const auto& x : n) a.push_back(NodeToJson(x));
      return a;
    }
    case YAML::NodeType::Scalar: {
      const std::string& v = n.Scalar();
      if (n.Tag() != "?") return v;  // quoted or tagged: a string
      if (v == "true" || v == "True" || v == "TRUE") return true;
      if (v == "false" || v == "False" || v == "FALSE") return false;
      if (v == "null" || v == "~" || v.empty()) return nullptr;
      char* end = nullptr;
      long long i = std::strtoll(v.c_str(), &end, 10);
      if (end != nullptr && *end == '\0' && !v.empty()) return i;
      double d = std::strtod(v.c_str(), &end);
      if (end != nullptr && *end == '\0' && v.find_first_of("0123456789") != std::string::npos) return d;
      return v;
    }
    default: return nullptr;
  }
}

Result<std::vector<Json>> ToObjects(const std::vector<std::string>& texts) {
  std::vector<Json> out;
  for (const std::string& t : texts) {
    std::vector<YAML::Node> nodes;
    try {
      nodes = YAML::LoadAll(t);
    } catch (const std::exception& e) {
      return InvalidArgument(std::string("YAML: ") + e.what());
    }
    for (const YAML::Node& n : nodes) {
      if (!n || n.IsNull()) continue;
      Json j = NodeToJson(n);
      if (j.is_object()) out.push_back(std::move(j));
    }
  }
  return out;
}

struct RawScenario {
  std::vector<Json> config;
  std::map<size_t, std::vector<Json>> apply;  // step index -> objects
};

Result<RawScenario> ReadRaw(const std::string& file, size_t doc_index) {
  std::vector<YAML::Node> docs;
  try {
    docs = YAML::LoadAllFromFile(file);
  } catch (const std::exception& e) {
    return InvalidArgument(std::string("YAML: ") + e.what());
  }
  std::vector<YAML::Node> real;
  for (auto& d : docs)
    if (d && !d.IsNull()) real.push_back(d);
  if (doc_index >= real.size()) return InvalidArgument("document index out of range");
  const YAML::Node& spec = real[doc_index]["spec"];
  fs::path dir = fs::path(file).parent_path();
  RawScenario raw;
  std::vector<std::string> texts;
  ARTEL_RETURN_IF_ERROR(ReadSources(spec["config"], dir, &texts));
  ARTEL_ASSIGN_OR_RETURN(raw.config, ToObjects(texts));
  size_t i = 0;
  for (const auto& step : spec["steps"]) {
    if (step["apply"]) {
      std::vector<std::string> t;
      ARTEL_RETURN_IF_ERROR(ReadSources(step["apply"], dir, &t));
      ARTEL_ASSIGN_OR_RETURN(raw.apply[i], ToObjects(t));
    }
    ++i;
  }
  return raw;
}

// ---- names ----

class Names {
 public:
  explicit Names(std::string prefix) : p_(std::move(prefix)) {}
  std::string Cluster(const std::string& n) const { return p_ + n; }
  std::string Ns(const std::string& n) const { return p_ + n; }
  std::string Strip(const std::string& n) const { return n.rfind(p_, 0) == 0 ? n.substr(p_.size()) : n; }
  const std::string& prefix() const { return p_; }
  // The value of the artel.dev/kueue-diff label: the prefix without its '-'.
  std::string label() const { return p_.substr(0, p_.size() - 1); }

 private:
  std::string p_;
};

const std::set<std::string> kKinds = {"ResourceFlavor",        "Cohort",   "ClusterQueue", "LocalQueue",
                                      "WorkloadPriorityClass", "Namespace"};

const kube::Resource* ResourceOf(const std::string& kind) {
  if (kind == "ResourceFlavor") return &kube::kResourceFlavors;
  if (kind == "Cohort") return &kube::kCohorts;
  if (kind == "ClusterQueue") return &kube::kClusterQueues;
  if (kind == "LocalQueue") return &kube::kLocalQueues;
  if (kind == "WorkloadPriorityClass") return &kube::kWorkloadPriorityClasses;
  if (kind == "Namespace") return &kube::kNamespaces;
  return nullptr;
}

void RenameSelector(Json* sel, const Names& names) {
  if (!sel->is_object()) return;
  if (sel->contains("matchLabels") && (*sel)["matchLabels"].is_object()) {
    Json& ml = (*sel)["matchLabels"];
    if (ml.contains("kubernetes.io/metadata.name") && ml["kubernetes.io/metadata.name"].is_string())
      ml["kubernetes.io/metadata.name"] = names.Ns(ml["kubernetes.io/metadata.name"].get<std::string>());
  }
  if (sel->contains("matchExpressions") && (*sel)["matchExpressions"].is_array()) {
    for (Json& e : (*sel)["matchExpressions"]) {
      if (e.value("key", "") != "kubernetes.io/metadata.name" || !e.contains("values")) continue;
      for (Json& v : e["values"])
        if (v.is_string()) v = names.Ns(v.get<std::string>());
    }
  }
}

// The object as the driver applies it: v1beta2, prefixed names, labelled.
Json Rename(Json obj, const Names& names) {
  const std::string kind = obj.value("kind", "");
  Json& md = obj["metadata"];
  const std::string name = md.value("name", "");
  if (kind == "Namespace") {
    md["name"] = names.Ns(name);
  } else if (kind == "LocalQueue") {
    md["namespace"] = names.Ns(md.value("namespace", "default"));
  } else {
    md["name"] = names.Cluster(name);
  }
  if (!md.contains("labels") || !md["labels"].is_object()) md["labels"] = Json::object();
  md["labels"][kLabel] = names.label();
  if (kind != "Namespace") obj["apiVersion"] = "kueue.x-k8s.io/v1beta2";
  if (!obj.contains("spec") || !obj["spec"].is_object()) return obj;
  Json& spec = obj["spec"];
  if ((kind == "ClusterQueue" || kind == "Cohort") && spec.contains("resourceGroups") &&
      spec["resourceGroups"].is_array())
    for (Json& rg : spec["resourceGroups"])
      if (rg.contains("flavors") && rg["flavors"].is_array())
        for (Json& f : rg["flavors"])
          if (f.contains("name") && f["name"].is_string())
            f["name"] = names.Cluster(f["name"].get<std::string>());
  if (kind == "ClusterQueue") {
    if (spec.contains("cohort")) {
      spec["cohortName"] = spec["cohort"];
      spec.erase("cohort");
    }
    if (spec.contains("cohortName") && spec["cohortName"].is_string())
      spec["cohortName"] = names.Cluster(spec["cohortName"].get<std::string>());
    if (spec.contains("namespaceSelector")) RenameSelector(&spec["namespaceSelector"], names);
  } else if (kind == "Cohort") {
    if (spec.contains("parent")) {
      spec["parentName"] = spec["parent"];
      spec.erase("parent");
    }
    if (spec.contains("parentName") && spec["parentName"].is_string())
      spec["parentName"] = names.Cluster(spec["parentName"].get<std::string>());
  } else if (kind == "LocalQueue") {
    if (spec.contains("clusterQueue") && spec["clusterQueue"].is_string())
      spec["clusterQueue"] = names.Cluster(spec["clusterQueue"].get<std::string>());
  }
  return obj;
}

// ---- what is not comparable ----

std::string SkipReason(const sim::Scenario& sc, const RawScenario& raw, const std::string& file_text) {
  if (!sc.nodes.empty()) return "uses nodes";
  auto check_objs = [](const std::vector<Json>& objs) -> std::string {
    for (const Json& o : objs) {
      std::string kind = o.value("kind", "");
      std::string api = o.value("apiVersion", "");
      if (kind == "Topology") return "Topology (TAS) objects: topology-aware flavors need nodes";
      if (!kKinds.count(kind) || (kind != "Namespace" && api.rfind("kueue.x-k8s.io/", 0) != 0))
        return "configuration object " + api + " " + kind + " is not Kueue's";
      if (kind == "ClusterQueue" && o.contains("spec") && o["spec"].contains("admissionChecks"))
        return "ClusterQueue admissionChecks";
    }
    return "";
  };
  if (std::string r = check_objs(raw.config); !r.empty()) return r;
  for (const auto& [i, objs] : raw.apply)
    if (std::string r = check_objs(objs); !r.empty()) return r;
  if (sc.options.admission_fair_sharing)
    return "admission fair sharing (usage decays on the controller's clock)";
  // Both controllers run with Kueue's default strategies (one arteld
  // serves every scenario; minimalkueue has no fair sharing at all).
  if (sc.options.fair_sharing &&
      sc.options.fair_sharing_strategies != core::EngineOptions{}.fair_sharing_strategies)
    return "fair-sharing preemption strategies other than Kueue's default (the controller runs with the "
           "default)";
  if (file_text.find("artel.dev/timeLimits") != std::string::npos)
    return "Artel's time limits (artel.dev/timeLimits: the controller's clock)";
  if (file_text.find("maximumExecutionTimeSeconds") != std::string::npos)
    return "maximum execution time (the controller's clock)";
  for (const auto& st : sc.steps)
    for (const auto& ev : st.events) {
      if (ev.kind != sim::Event::Kind::kSubmit) continue;
      const core::WorkloadSpec& w = ev.submit.spec;
      for (const auto& [k, v] : w.annotations)
        if (k.rfind("artel.dev/", 0) == 0) return "Artel workload annotation " + k;
      for (const auto& ps : w.pod_sets)
        for (const auto& [k, v] : ps.annotations)
          if (k.rfind("artel.dev/", 0) == 0 || k.find("gpu") != std::string::npos)
            return "Artel pod-set annotation " + k;
    }
  if (file_text.find("manifest:") != std::string::npos || file_text.find("- file:") != std::string::npos) {
    // `submit: [{manifest|file}]`: workloads in another dialect.
    for (const auto& st : sc.steps)
      for (const auto& ev : st.events)
        if (ev.kind == sim::Event::Kind::kSubmit && ev.submit.spec.labels.count("kueue.x-k8s.io/queue-name"))
          return "workload manifest in another dialect";
  }
  return "";
}

// ---- the driver ----

struct Observed {
  std::map<std::string, Json> workloads;  // "ns/name" (scenario namespaces) -> object
  std::map<std::string, Json> cqs;        // scenario name -> object
};

class Driver {
 public:
  Driver(kube::Client* client, const Options& opt, const sim::Scenario& sc, const RawScenario& raw,
         std::string prefix)
      : c_(client), opt_(opt), sc_(sc), raw_(raw), names_(std::move(prefix)) {}

  // Plays the scenario; mismatches go to failures(). An error stops it.
  Status Run() {
    ARTEL_RETURN_IF_ERROR(ApplyConfig(raw_.config, true));
    ARTEL_RETURN_IF_ERROR(WaitQueuesSeen());
    for (size_t i = 0; i < sc_.steps.size(); ++i) {
      const sim::Step& step = sc_.steps[i];
      ARTEL_RETURN_IF_ERROR(FinishRunsUpTo(step.at));
      now_ = step.at;
      for (const sim::Event& ev : step.events) ARTEL_RETURN_IF_ERROR(Play(ev, i));
      ARTEL_RETURN_IF_ERROR(Settle());
      ARTEL_RETURN_IF_ERROR(FinishRunsUpTo(step.at));
      if (step.expect) Compare(*step.expect);
    }
    return OkStatus();
  }
  void Cleanup();
  const std::vector<std::string>& failures() const { return failures_; }
  const std::vector<std::string>& trace() const { return trace_; }

 private:
  std::string Key(const std::string& ns, const std::string& name) const { return ns + "/" + name; }
  std::string KeyOf(const sim::WorkloadRef& r) const {
    if (r.text.find('/') != std::string::npos) return r.text;
    for (const auto& [k, ns] : submitted_ns_)
      if (k.substr(k.find('/') + 1) == r.text) return k;
    return "default/" + r.text;
  }
  std::string Show(const std::string& key) const {
    std::string name = key.substr(key.find('/') + 1);
    int n = 0;
    for (const auto& [k, v] : submitted_ns_)
      if (k.substr(k.find('/') + 1) == name) ++n;
    return n > 1 ? key : name;
  }
  std::string At() const { return "at " + sim::FormatDuration(now_); }
  void Trace(const std::string& s) {
    if (opt_.verbose) trace_.push_back(At() + " " + s);
  }

  Status EnsureNamespace(const std::string& ns, const Json& labels = Json::object()) {
    if (namespaces_.count(ns) && labels.empty()) return OkStatus();
    namespaces_.insert(ns);
    Json obj = {{"apiVersion", "v1"},
                {"kind", "Namespace"},
                {"metadata", {{"name", names_.Ns(ns)}, {"labels", labels}}}};
    obj["metadata"]["labels"][kLabel] = names_.label();
    auto r = c_->Apply(kube::kNamespaces, "", obj, kManager);
    if (!r.ok()) return Internal("namespace " + ns + ": " + r.error().ToString());
    return OkStatus();
  }

  Status ApplyConfig(const std::vector<Json>& objs, bool initial) {
    static const std::vector<std::string> order = {"Namespace", "WorkloadPriorityClass", "ResourceFlavor",
                                                   "Cohort",    "ClusterQueue",          "LocalQueue"};
    for (const std::string& kind : order) {
      for (const Json& o : objs) {
        if (o.value("kind", "") != kind) continue;
        const std::string name = o["metadata"].value("name", "");
        if (kind == "WorkloadPriorityClass") priorities_[name] = o.value("value", 0);
        if (kind == "Namespace") {
          ARTEL_RETURN_IF_ERROR(EnsureNamespace(name, o["metadata"].value("labels", Json::object())));
          continue;
        }
        if (kind == "LocalQueue")
          ARTEL_RETURN_IF_ERROR(EnsureNamespace(o["metadata"].value("namespace", "default")));
        if (kind == "ClusterQueue") cq_names_.insert(name);
        Json r = Rename(o, names_);
        auto res = c_->Apply(*ResourceOf(kind), r["metadata"].value("namespace", ""), r, kManager);
        if (!res.ok()) return Internal(kind + " " + name + ": " + res.error().ToString());
      }
    }
    (void)initial;
    return OkStatus();
  }

  // The controller has seen every ClusterQueue (it wrote a condition).
  Status WaitQueuesSeen() {
    int64_t deadline = NowMs() + opt_.step_timeout_s * 1000;
    while (true) {
      ARTEL_ASSIGN_OR_RETURN(Observed o, Observe());
      bool all = true;
      for (const std::string& cq : cq_names_)
        if (!o.cqs.count(cq) || FindCond(o.cqs[cq], "Active") == nullptr) all = false;
      if (all) return OkStatus();
      if (NowMs() > deadline)
        return DeadlineExceeded("the controller wrote no Active condition on every ClusterQueue");
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }

  Json WorkloadObject(const core::WorkloadSpec& w) {
    Json wl = {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
               {"kind", "Workload"},
               {"metadata", {{"name", w.name}, {"namespace", names_.Ns(w.ns)}}}};
    Json labels = Json::object();
    for (const auto& [k, v] : w.labels) labels[k] = v;
    labels[kLabel] = names_.label();
    wl["metadata"]["labels"] = labels;
    if (!w.annotations.empty()) wl["metadata"]["annotations"] = w.annotations;
    Json spec = {{"queueName", w.queue}, {"active", w.active}};
    int32_t prio = 0;
    if (w.priority_class) {
      prio = priorities_.count(*w.priority_class) ? priorities_[*w.priority_class] : 0;
      spec["priorityClassRef"] = {{"group", "kueue.x-k8s.io"},
                                  {"kind", "WorkloadPriorityClass"},
                                  {"name", names_.Cluster(*w.priority_class)}};
    }
    if (w.priority) prio = *w.priority;
    spec["priority"] = prio;
    Json pss = Json::array();
    for (const core::PodSetSpec& ps : w.pod_sets) {
      Json req = Json::object();
      for (const auto& [r, a] : ps.requests) req[r] = core::FormatQuantity(a);
      Json pod = {{"restartPolicy", "Never"},
                  {"containers",
                   Json::array({{{"name", "c"}, {"image", "busybox"}, {"resources", {{"requests", req}}}}})}};
      if (!ps.node_selector.empty()) pod["nodeSelector"] = ps.node_selector;
      if (!ps.tolerations.empty()) pod["tolerations"] = api::TolerationsToJson(ps.tolerations);
      if (!ps.node_affinity.empty()) {
        pod["affinity"] = {{"nodeAffinity",
                            {{"requiredDuringSchedulingIgnoredDuringExecution",
                              {{"nodeSelectorTerms", api::NodeAffinityToJson(ps.node_affinity)}}}}}};
      }
      Json tmpl = {{"spec", pod}};
      if (!ps.annotations.empty()) tmpl["metadata"] = {{"annotations", ps.annotations}};
      Json pj = {{"name", ps.name}, {"count", ps.count}, {"template", tmpl}};
      if (ps.min_count) pj["minCount"] = *ps.min_count;
      pss.push_back(pj);
    }
    spec["podSets"] = pss;
    wl["spec"] = spec;
    wl["__priority"] = prio;
    return wl;
  }

  Status Play(const sim::Event& ev, size_t step_index) {
    switch (ev.kind) {
      case sim::Event::Kind::kSubmit: {
        const core::WorkloadSpec& w = ev.submit.spec;
        ARTEL_RETURN_IF_ERROR(EnsureNamespace(w.ns));
        Json obj = WorkloadObject(w);
        int32_t prio = obj["__priority"];
        obj.erase("__priority");
        // One Workload of a priority per wall-clock second (creationTimestamp).
        auto last = last_create_s_.find(prio);
        if (last != last_create_s_.end()) {
          while (std::chrono::duration_cast<std::chrono::seconds>(
                     std::chrono::system_clock::now().time_since_epoch())
                     .count() <= last->second)
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        auto r = c_->Create(kube::kWorkloads, names_.Ns(w.ns), obj);
        if (!r.ok()) return Internal("create Workload " + w.name + ": " + r.error().ToString());
        auto ts = kube::ParseRfc3339((*r)["metadata"].value("creationTimestamp", ""));
        int64_t sec = ts.ok() ? *ts / 1000
                              : std::chrono::duration_cast<std::chrono::seconds>(
                                    std::chrono::system_clock::now().time_since_epoch())
                                    .count();
        last_create_s_[prio] = std::max<int64_t>(sec, std::chrono::duration_cast<std::chrono::seconds>(
                                                          std::chrono::system_clock::now().time_since_epoch())
                                                          .count());
        std::string key = Key(w.ns, w.name);
        submitted_ns_[key] = w.ns;
        if (ev.submit.runtime)
          runtime_[key] = *ev.submit.runtime;
        else
          runtime_.erase(key);
        admitted_at_.erase(key);
        Trace("submit " + key);
        return OkStatus();
      }
      case sim::Event::Kind::kFinish: return FinishWl(KeyOf(ev.target));
      case sim::Event::Kind::kCancel: {
        std::string key = KeyOf(ev.target);
        std::string ns = key.substr(0, key.find('/')), name = key.substr(key.find('/') + 1);
        auto r = c_->Delete(kube::kWorkloads, names_.Ns(ns), name);
        if (!r.ok() && !r.error().NotFound()) return Internal("delete " + key + ": " + r.error().ToString());
        StripFinalizers(names_.Ns(ns), name);
        admitted_at_.erase(key);
        Trace("cancel " + key);
        return OkStatus();
      }
      case sim::Event::Kind::kActivate:
      case sim::Event::Kind::kDeactivate: {
        std::string key = KeyOf(ev.target);
        std::string ns = key.substr(0, key.find('/')), name = key.substr(key.find('/') + 1);
        bool on = ev.kind == sim::Event::Kind::kActivate;
        auto r = c_->MergePatch(kube::kWorkloads, names_.Ns(ns), name, {{"spec", {{"active", on}}}});
        if (!r.ok()) return Internal("patch " + key + ": " + r.error().ToString());
        Trace(std::string(on ? "activate " : "deactivate ") + key);
        return OkStatus();
      }
      case sim::Event::Kind::kApply: {
        auto it = raw_.apply.find(step_index);
        if (it == raw_.apply.end()) return Internal("apply step without manifests");
        Trace("apply");
        return ApplyConfig(it->second, false);
      }
    }
    return OkStatus();
  }

  void StripFinalizers(const std::string& real_ns, const std::string& name) {
    auto g = c_->Get(kube::kWorkloads, real_ns, name);
    if (!g.ok()) return;
    if (g->contains("metadata") && (*g)["metadata"].contains("finalizers"))
      (void)c_->MergePatch(kube::kWorkloads, real_ns, name, {{"metadata", {{"finalizers", nullptr}}}});
  }

  Status FinishWl(const std::string& key) {
    std::string ns = key.substr(0, key.find('/')), name = key.substr(key.find('/') + 1);
    for (int attempt = 0; attempt < 20; ++attempt) {
      auto g = c_->Get(kube::kWorkloads, names_.Ns(ns), name);
      if (!g.ok()) return Internal("finish " + key + ": " + g.error().ToString());
      Json w = *g;
      Json& conds = w["status"]["conditions"];
      if (!conds.is_array()) conds = Json::array();
      Json fin = {{"type", "Finished"},
                  {"status", "True"},
                  {"reason", "Succeeded"},
                  {"message", "finished by the scenario (kueue_diff)"},
                  {"lastTransitionTime", kube::FormatRfc3339(WallMs())}};
      conds.push_back(fin);
      auto r = c_->UpdateStatus(kube::kWorkloads, names_.Ns(ns), w);
      if (r.ok()) {
        admitted_at_.erase(key);
        Trace("finish " + key);
        return OkStatus();
      }
      if (!r.error().Conflict()) return Internal("finish " + key + ": " + r.error().ToString());
    }
    return Internal("finish " + key + ": conflicts");
  }

  Result<Observed> Observe() {
    Observed o;
    kube::ListOptions lo;
    lo.label_selector = std::string(kLabel) + "=" + names_.label();
    auto w = c_->ListAll(kube::kWorkloads, "", lo);
    if (!w.ok()) return Internal("list Workloads: " + w.error().ToString());
    for (const Json& x : (*w)["items"]) {
      std::string ns = names_.Strip(x["metadata"].value("namespace", ""));
      o.workloads[Key(ns, x["metadata"].value("name", ""))] = x;
    }
    auto q = c_->ListAll(kube::kClusterQueues, "", lo);
    if (!q.ok()) return Internal("list ClusterQueues: " + q.error().ToString());
    for (const Json& x : (*q)["items"]) o.cqs[names_.Strip(x["metadata"].value("name", ""))] = x;
    return o;
  }

  static bool Reserved(const Json& w) { return CondTrue(w, "QuotaReserved") && !CondTrue(w, "Finished"); }

  // Every ClusterQueue's status counts as many reserving Workloads as hold a
  // reservation in it: its status has caught up with its Workloads.
  bool CqStatusConsistent(const Observed& o) const {
    std::map<std::string, int64_t> reserving;
    for (const auto& [k, w] : o.workloads)
      if (Reserved(w) && w.contains("status") && w["status"].contains("admission"))
        ++reserving[names_.Strip(w["status"]["admission"].value("clusterQueue", ""))];
    for (const auto& [name, q] : o.cqs) {
      auto it = reserving.find(name);
      int64_t want = it != reserving.end() ? it->second : 0;
      int64_t have = q.contains("status") ? q["status"].value("reservingWorkloads", int64_t{0}) : 0;
      if (have != want) return false;
    }
    return true;
  }

  // The job's side of an eviction: clear the quota reservation.
  Result<bool> ClearEvicted(Observed* o) {
    bool acted = false;
    for (auto& [key, w] : o->workloads) {
      const Json& md = w["metadata"];
      if (md.contains("deletionTimestamp") && md.contains("finalizers")) {
        StripFinalizers(md.value("namespace", ""), md.value("name", ""));
        acted = true;
        continue;
      }
      if (!(CondTrue(w, "Evicted") && CondTrue(w, "QuotaReserved")) || CondTrue(w, "Finished")) continue;
      Json st = w["status"];
      st.erase("admission");
      Json conds = Json::array();
      for (Json c : st.value("conditions", Json::array())) {
        std::string t = c.value("type", "");
        if ((t == "QuotaReserved" || t == "Admitted") && c.value("status", "") == "True") {
          c["status"] = "False";
          c["reason"] = t == "QuotaReserved" ? "Pending" : "NoReservation";
          c["message"] = "the job is stopped (kueue_diff plays the job's side)";
          c["lastTransitionTime"] = kube::FormatRfc3339(WallMs());
        }
        conds.push_back(c);
      }
      st["conditions"] = conds;
      Json upd = w;
      upd["status"] = st;
      auto r = c_->UpdateStatus(kube::kWorkloads, md.value("namespace", ""), upd);
      acted = true;
      if (!r.ok()) {
        if (r.error().Conflict() || r.error().NotFound()) continue;  // next poll
        return Internal("clear reservation of " + key + ": " + r.error().ToString());
      }
      std::string reason;
      if (CondTrue(w, "Preempted"))
        reason = FindCond(w, "Preempted")->value("reason", "");
      else if (const Json* e = FindCond(w, "Evicted"))
        reason = e->value("reason", "");
      if (reason == "InactiveWorkload") reason = "Deactivated";
      evictions_.push_back({key, reason});
      admitted_at_.erase(key);
      Trace("evicted " + key + " (" + reason + ")");
    }
    return acted;
  }

  static std::string Fingerprint(const Observed& o) {
    std::string f;
    for (const auto& [k, w] : o.workloads) f += k + "@" + w["metadata"].value("resourceVersion", "") + ";";
    for (const auto& [k, q] : o.cqs) f += k + "@" + q["metadata"].value("resourceVersion", "") + ";";
    return f;
  }

  Status Settle() {
    int64_t start = NowMs(), deadline = start + opt_.step_timeout_s * 1000;
    int64_t last_change = start;
    std::string last_fp;
    while (true) {
      ARTEL_ASSIGN_OR_RETURN(Observed o, Observe());
      ARTEL_ASSIGN_OR_RETURN(bool acted, ClearEvicted(&o));
      std::string fp = Fingerprint(o);
      int64_t now = NowMs();
      if (acted || fp != last_fp) {
        last_fp = fp;
        last_change = now;
      }
      bool seen = true;
      for (const auto& [k, w] : o.workloads) {
        if (CondTrue(w, "Finished") || !w["spec"].value("active", true)) continue;
        if (FindCond(w, "QuotaReserved") == nullptr) seen = false;
      }
      // A Workload the controller never looks at (behind a StrictFIFO head,
      // say) never gets the condition: then three quiet intervals are enough.
      // The same holds for ClusterQueue status that lags the Workloads: a
      // controller may write it at most once per interval (arteld's
      // queue_status_interval_ms, 1 s), so a quiet spell alone is not enough.
      bool consistent = CqStatusConsistent(o);
      if (!acted && now - last_change >= (seen && consistent ? 1 : 3) * opt_.settle_ms) {
        for (const auto& [k, w] : o.workloads)
          if (Reserved(w) && !admitted_at_.count(k)) {
            admitted_at_[k] = now_;
            Trace("admitted " + k);
          }
        last_ = std::move(o);
        return OkStatus();
      }
      if (now > deadline)
        return DeadlineExceeded(At() + ": the controller did not settle within " +
                                std::to_string(opt_.step_timeout_s) + " s");
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }

  // Ends every run whose virtual end is at or before `t`, in time order.
  Status FinishRunsUpTo(core::Time t) {
    while (true) {
      std::optional<core::Time> next;
      for (const auto& [k, at] : admitted_at_) {
        auto rt = runtime_.find(k);
        if (rt == runtime_.end()) continue;
        core::Time end = at + rt->second;
        if (end <= t && (!next || end < *next)) next = end;
      }
      if (!next) return OkStatus();
      now_ = *next;
      std::vector<std::string> ending;
      for (const auto& [k, at] : admitted_at_) {
        auto rt = runtime_.find(k);
        if (rt != runtime_.end() && at + rt->second == *next) ending.push_back(k);
      }
      for (const std::string& k : ending) ARTEL_RETURN_IF_ERROR(FinishWl(k));
      ARTEL_RETURN_IF_ERROR(Settle());
    }
  }

  void CompareSet(const std::string& what, const std::vector<sim::WorkloadRef>& want_refs,
                  const std::set<std::string>& got) {
    std::set<std::string> want;
    for (const auto& r : want_refs) want.insert(KeyOf(r));
    if (want == got) return;
    auto list = [&](const std::set<std::string>& s) {
      std::string o = "[";
      for (const auto& k : s) o += (o.size() > 1 ? ", " : "") + Show(k);
      return o + "]";
    };
    std::set<std::string> missing, extra;
    std::set_difference(want.begin(), want.end(), got.begin(), got.end(),
                        std::inserter(missing, missing.end()));
    std::set_difference(got.begin(), got.end(), want.begin(), want.end(), std::inserter(extra, extra.end()));
    std::string d = At() + " expect." + what + ": engine " + list(want) + ", controller " + list(got);
    if (!missing.empty()) d += "  (missing: " + list(missing) + ")";
    if (!extra.empty()) d += "  (extra: " + list(extra) + ")";
    failures_.push_back(d);
  }

  const Json* Assignment(const std::string& key, const std::string& pod_set) {
    auto it = last_.workloads.find(key);
    if (it == last_.workloads.end() || !Reserved(it->second)) return nullptr;
    const Json& st = it->second["status"];
    if (!st.contains("admission")) return nullptr;
    const Json& adm = st["admission"];
    if (!adm.is_object() || !adm.contains("podSetAssignments") || !adm["podSetAssignments"].is_array())
      return nullptr;
    for (const Json& a : adm["podSetAssignments"])  // a reference into last_, not a copy
      if (a.value("name", "") == pod_set) return &a;
    return nullptr;
  }

  void Compare(const sim::Expectation& ex) {
    std::set<std::string> admitted, pending, finished, preempted;
    for (const auto& [k, w] : last_.workloads) {
      if (w["metadata"].contains("deletionTimestamp")) continue;
      if (CondTrue(w, "Finished"))
        finished.insert(k);
      else if (CondTrue(w, "QuotaReserved"))
        admitted.insert(k);
      else
        pending.insert(k);
    }
    for (const auto& [k, r] : evictions_) preempted.insert(k);
    if (ex.admitted) CompareSet("admitted", *ex.admitted, admitted);
    if (ex.pending) CompareSet("pending", *ex.pending, pending);
    if (ex.finished) CompareSet("finished", *ex.finished, finished);
    if (ex.preempted) CompareSet("preempted", *ex.preempted, preempted);
    if (ex.evictions) {
      std::multiset<std::pair<std::string, std::string>> want, got;
      bool reasons = true;
      for (const auto& e : *ex.evictions) {
        want.insert({KeyOf(e.victim), e.reason.value_or("")});
        if (!e.reason) reasons = false;
      }
      for (const auto& [k, r] : evictions_) got.insert({k, reasons ? r : ""});
      if (!reasons) {
        std::multiset<std::pair<std::string, std::string>> w2;
        for (const auto& [k, r] : want) w2.insert({k, ""});
        want = w2;
      }
      if (want != got) {
        auto list = [&](const std::multiset<std::pair<std::string, std::string>>& s) {
          std::string o = "[";
          for (const auto& [k, r] : s) o += (o.size() > 1 ? ", " : "") + Show(k) + (r.empty() ? "" : " " + r);
          return o + "]";
        };
        failures_.push_back(At() + " expect.evictions: engine " + list(want) + ", controller " + list(got));
      }
    }
    if (ex.flavors) {
      for (const auto& [ref, per_ps] : *ex.flavors) {
        std::string key = KeyOf(ref);
        for (const auto& [ps, res] : per_ps) {
          const Json* a = Assignment(key, ps);
          for (const auto& [r, f] : res) {
            std::string got = a == nullptr
                                  ? "(not admitted)"
                                  : names_.Strip(a->value("flavors", Json::object()).value(r, "(none)"));
            if (got != f)
              failures_.push_back(At() + " expect.flavors[" + Show(key) + "][" + ps + "][" + r +
                                  "]: engine " + f + ", controller " + got);
          }
        }
      }
    }
    if (ex.admitted_counts) {
      for (const auto& [ref, per_ps] : *ex.admitted_counts) {
        std::string key = KeyOf(ref);
        for (const auto& [ps, n] : per_ps) {
          const Json* a = Assignment(key, ps);
          int got = a == nullptr ? -1 : a->value("count", -1);
          if (got != n)
            failures_.push_back(At() + " expect.admittedCounts[" + Show(key) + "][" + ps + "]: engine " +
                                std::to_string(n) + ", controller " +
                                (got < 0 ? std::string("(not admitted)") : std::to_string(got)));
        }
      }
    }
    if (ex.usage) {
      for (const auto& u : *ex.usage) {
        if (u.is_cohort) continue;  // Kueue's Cohort status has no usage
        core::Amount got = 0;
        auto it = last_.cqs.find(u.node);
        if (it != last_.cqs.end() && it->second.contains("status")) {
          for (const Json& fr : it->second["status"].value("flavorsReservation", Json::array())) {
            if (names_.Strip(fr.value("name", "")) != u.flavor) continue;
            for (const Json& r : fr.value("resources", Json::array()))
              if (r.value("name", "") == u.resource) {
                auto q = core::ParseQuantity(r.value("total", "0"));
                if (q.ok()) got = *q;
              }
          }
        }
        if (got != u.value)
          failures_.push_back(At() + " expect.usage[clusterQueue " + u.node + " " + u.flavor + " " +
                              u.resource + "]: engine " + core::FormatQuantity(u.value) + ", controller " +
                              core::FormatQuantity(got));
      }
    }
    evictions_.clear();
  }

  kube::Client* c_;
  const Options& opt_;
  const sim::Scenario& sc_;
  const RawScenario& raw_;
  Names names_;
  core::Time now_ = 0;
  std::set<std::string> namespaces_;
  std::set<std::string> cq_names_;
  std::map<std::string, int32_t> priorities_;
  std::map<int32_t, int64_t> last_create_s_;
  std::map<std::string, std::string> submitted_ns_;  // key -> ns
  std::map<std::string, core::Time> runtime_;
  std::map<std::string, core::Time> admitted_at_;
  std::vector<std::pair<std::string, std::string>> evictions_;  // since the last expect
  Observed last_;
  std::vector<std::string> failures_;
  std::vector<std::string> trace_;
};

// Deletes what the scenario made, without waiting: Workloads (finalizers
// removed), LocalQueues, ClusterQueues, Cohorts, flavors, priority classes,
// namespaces. Finalizers of cluster-scoped objects are removed too, so that
// nothing stays behind for the next scenario's controller work.
void Driver::Cleanup() {
  kube::ListOptions lo;
  lo.label_selector = std::string(kLabel) + "=" + names_.label();
  for (const kube::Resource* r :
       {&kube::kWorkloads, &kube::kLocalQueues, &kube::kClusterQueues, &kube::kCohorts,
        &kube::kResourceFlavors, &kube::kWorkloadPriorityClasses}) {
    auto l = c_->ListAll(*r, "", lo);
    if (!l.ok()) continue;
    for (const Json& x : (*l)["items"]) {
      std::string ns = x["metadata"].value("namespace", ""), name = x["metadata"].value("name", "");
      if (x["metadata"].contains("finalizers"))
        (void)c_->MergePatch(*r, ns, name, {{"metadata", {{"finalizers", nullptr}}}});
      (void)c_->Delete(*r, ns, name);
    }
  }
  auto l = c_->ListAll(kube::kNamespaces, "", lo);
  if (l.ok())
    for (const Json& x : (*l)["items"])
      (void)c_->Delete(kube::kNamespaces, "", x["metadata"].value("name", ""));
}

int Main(int argc, char** argv) {
  Options opt;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto val = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << "kueue_diff: " << a << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--kubeconfig")
      opt.kubeconfig = val();
    else if (a == "--prefix")
      opt.prefix = val();
    else if (a == "--settle-ms")
      opt.settle_ms = std::atoi(val().c_str());
    else if (a == "--step-timeout")
      opt.step_timeout_s = std::atoi(val().c_str());
    else if (a == "--fair-sharing")
      opt.fair_sharing = val();
    else if (a == "--shard") {
      std::string s = val();
      if (std::sscanf(s.c_str(), "%d/%d", &opt.shard, &opt.shards) != 2 || opt.shards < 1 || opt.shard < 0 ||
          opt.shard >= opt.shards) {
        std::cerr << "kueue_diff: --shard I/N with 0 <= I < N\n";
        return 2;
      }
    } else if (a == "--list") {
      std::ifstream in(val());
      std::string line;
      while (std::getline(in, line))
        if (!line.empty() && line[0] != '#') opt.paths.push_back(line);
    } else if (a == "-v")
      opt.verbose = true;
    else if (!a.empty() && a[0] == '-') {
      std::cerr << "kueue_diff: unknown option " << a << "\n";
      return 2;
    } else
      opt.paths.push_back(a);
  }
  if (opt.fair_sharing != "on" && opt.fair_sharing != "off" && opt.fair_sharing != "unsupported") {
    std::cerr << "kueue_diff: --fair-sharing on|off|unsupported\n";
    return 2;
  }
  auto cfg = kube::LoadKubeconfig(opt.kubeconfig);
  if (!cfg.ok()) {
    std::cerr << "kueue_diff: " << cfg.status().ToString() << "\n";
    return 2;
  }
  cfg->qps = 0;  // the driver's own requests are not what is measured
  kube::Client client(*cfg);

  // "file" or "file::scenario-name" entries; files in the order given.
  std::vector<std::pair<std::string, std::string>> wanted;
  for (const std::string& p : opt.paths) {
    auto pos = p.find("::");
    std::string file = pos == std::string::npos ? p : p.substr(0, pos);
    std::string name = pos == std::string::npos ? "" : p.substr(pos + 2);
    if (fs::is_directory(file)) {
      std::vector<std::string> errors;
      for (const std::string& f : sim::FindScenarioFiles({file}, &errors)) wanted.push_back({f, ""});
    } else {
      wanted.push_back({file, name});
    }
  }
  std::map<std::string, int> counts;
  int index = 0;
  int rc = 0;
  for (const auto& [file, only] : wanted) {
    std::string text = ReadFile(file);
    std::vector<sim::ScenarioDoc> docs = sim::ParseScenarios(text, file);
    for (size_t d = 0; d < docs.size(); ++d) {
      const sim::ScenarioDoc& doc = docs[d];
      if (!only.empty() && doc.name != only) continue;
      int my = index++;
      if (my % opt.shards != opt.shard) continue;
      std::string head = file + ": " + doc.name;
      auto report = [&](const std::string& verdict, const std::string& detail,
                        const std::vector<std::string>& lines) {
        ++counts[verdict];
        std::cout << verdict << " " << head << (detail.empty() ? "" : "  (" + detail + ")") << "\n";
        for (const auto& l : lines) std::cout << "  " << l << "\n";
        std::cout.flush();
      };
      if (!doc.scenario) {
        report("ERROR", doc.error.ToString(), {});
        rc = 1;
        continue;
      }
      const sim::Scenario& sc = *doc.scenario;
      bool fs_on = sc.options.fair_sharing;
      if (opt.fair_sharing == "on" && !fs_on) continue;
      if (opt.fair_sharing == "off" && fs_on) continue;
      auto raw = ReadRaw(file, d);
      if (!raw.ok()) {
        report("ERROR", raw.status().ToString(), {});
        rc = 1;
        continue;
      }
      if (std::string why = SkipReason(sc, *raw, text); !why.empty()) {
        report("SKIP", why, {});
        continue;
      }
      if (opt.fair_sharing == "unsupported" && fs_on) {
        report("SKIP", "fair sharing: the controller has no option for it", {});
        continue;
      }
      sim::ScenarioResult engine = sim::RunScenario(sc);
      if (!engine.passed) {
        report("ENGINE-FAIL", "artel test fails this scenario", engine.failures);
        rc = 1;
        continue;
      }
      Driver drv(&client, opt, sc, *raw, opt.prefix + std::to_string(my) + "-");
      int64_t t0 = NowMs();
      Status st;
      try {
        st = drv.Run();
      } catch (const std::exception& e) {  // nlohmann's type errors on an unexpected object shape
        st = Internal(std::string("driver: ") + e.what());
      }
      std::string took = std::to_string((NowMs() - t0) / 100 / 10.0).substr(0, 4) + " s";
      std::vector<std::string> lines = drv.failures();
      if (opt.verbose)
        for (const auto& t : drv.trace()) lines.push_back("trace " + t);
      if (!st.ok()) {
        lines.insert(lines.begin(), st.ToString());
        report("ERROR", took, lines);
        rc = 1;
      } else if (!drv.failures().empty()) {
        report("DIFFER", took, lines);
        rc = 1;
      } else {
        report("AGREE", took, lines);
      }
      try {
        drv.Cleanup();
      } catch (const std::exception& e) {
        std::cout << "  cleanup: " << e.what() << "\n";
      }
    }
  }
  std::cout << "kueue_diff:";
  for (const auto& [k, n] : counts) std::cout << " " << n << " " << k;
  std::cout << "\n";
  return rc;
}

}  // namespace
}  // namespace artel

int main(int argc, char** argv) { return artel::Main(argc, argv); }
