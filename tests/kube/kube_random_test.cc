// Randomized differential test of arteld's Kubernetes mode (issue 11, §5):
// the same random history of operations goes through the scenario runner
// (src/sim, what `artel test` runs) and through the real arteld binary in
// Kubernetes mode against a real kube-apiserver, and after every step the
// admitted, pending and evicted sets (and the flavors of every admission)
// must agree.
//
// The configuration (one per seed, its names prefixed "s<seed>-"): two
// cohorts of two ClusterQueues each, resource groups [cpu, memory] (one
// flavor) and [nvidia.com/gpu] (two flavors, tried in order), random nominal
// quotas and borrowing limits, preemption reclaimWithinCohort: Any and
// withinClusterQueue: LowerPriority, two WorkloadPriorityClasses, one
// namespace and one LocalQueue per ClusterQueue.
//
// Operations (one per step): create a Workload (random queue, priority
// class, cpu/memory or GPU requests, 1-3 pods); finish an admitted one (the
// test sets its Finished condition, as a job framework does); delete one;
// deactivate one (spec.active=false); activate an inactive one again; kill -9
// arteld and start it again (the engine is rebuilt from the cluster alone; the
// scenario side has no event: nothing may change).
//
// How evictions complete. Artel's controller, like Kueue, keeps an evicted
// Workload's quota until the workload's side clears the reservation: Kueue's
// job framework does it once the pods are gone; for a plain Workload with no
// job, nobody does. So the test plays the job side: whenever it sees a
// Workload with Evicted=True while QuotaReserved is still True, it clears the
// reservation at once (status.admission removed, QuotaReserved=False,
// Admitted=False) and records the eviction (the victim and its reason: the
// Preempted condition's reason, or Deactivated). The scenario runner
// completes every eviction at once (docs/scenarios.md, "Run semantics"):
// with the job side answering at once, both model "the pods vanish as soon
// as they are told to".
//
// When arteld is done with a step (quiescent): every Workload of the seed in
// the cluster is known to arteld at the same resourceVersion (GET
// /api/v1/workloads serves the controller's view), arteld's phase agrees with
// the cluster (Admitted <=> QuotaReserved=True and not Finished; nothing
// Evicting; no active pending Workload NotYetTried), no eviction waits for
// the job side, and two such reads agree with a scheduling pass in between
// (the /metrics counter artel_scheduler_cycles_total moved). arteld runs
// with scheduler.intervalMs 100 so that passes come often.
//
// Time. The scenario puts step i at i seconds. A queue is ordered by
// priority, then creation time (a preempted Workload keeps its creation time,
// as in Kueue: its KEP-1282 changes that only for PodsReady evictions), and
// on Kubernetes that is creationTimestamp, which has one-second resolution.
// While arteld runs, Workloads created in the same second keep their order of
// arrival; after a restart arteld orders them by (creationTimestamp, uid),
// and the uid is random (the API keeps no finer creation order). So that both
// sides have one order, the test creates at
// most one Workload per wall-clock second: a create waits for the second
// after the previous create (at most one second).
//
// A mismatch fails with the seed, the step, the history written as a
// scenario file (with the Kubernetes observations as its expectations: save
// it and run `artel test FILE` to reproduce the runner's side) and the
// runner's diff (want = Kubernetes, got = runner).
//
// Seeds: 4, 13, 21 by default (picked because between them they exercise
// every operation, a restart, and evictions of every reason the
// configuration allows: InClusterQueue, InCohortReclamation, Deactivated);
// ARTEL_RANDOM_SEEDS="7,8,9" runs others,
// ARTEL_RANDOM_STEPS the steps per seed (default 30). One API server and
// one arteld serve all seeds (each seed has its own names).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "../server/harness.h"
#include "k8s_fixture.h"
#include "kube/client.h"
#include "kube/kubeconfig.h"
#include "sim/runner.h"
#include "sim/scenario.h"

namespace artel::testing {
namespace {

constexpr int kStepDeadlineMs = 60000;
const char* const kGpu = "nvidia.com/gpu";

std::vector<uint64_t> Seeds() {
  std::vector<uint64_t> out;
  const char* env = std::getenv("ARTEL_RANDOM_SEEDS");
  std::string s = env != nullptr ? env : "4,13,21";
  std::string cur;
  for (char c : s + ",") {
    if (c >= '0' && c <= '9') {
      cur += c;
    } else if (!cur.empty()) {
      out.push_back(std::stoull(cur));
      cur.clear();
    }
  }
  return out;
}

int Steps() {
  const char* env = std::getenv("ARTEL_RANDOM_STEPS");
  int n = env != nullptr ? std::atoi(env) : 0;
  return n > 0 ? n : 30;
}

int64_t WallMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Safe reads of nested JSON (missing or null members read as empty).
const Json& At(const Json& j, const std::string& k) {
  static const Json kNull;
  if (!j.is_object()) return kNull;
  auto it = j.find(k);
  return it == j.end() ? kNull : *it;
}
std::string Str(const Json& j, const std::string& a, const std::string& b = "") {
  const Json& v = b.empty() ? At(j, a) : At(At(j, a), b);
  return v.is_string() ? v.get<std::string>() : "";
}

const Json* Cond(const Json& wl, const std::string& type) {
  const Json& conds = At(At(wl, "status"), "conditions");
  if (!conds.is_array()) return nullptr;
  for (const Json& c : conds)
    if (Str(c, "type") == type) return &c;
  return nullptr;
}
bool CondTrue(const Json& wl, const std::string& type) {
  const Json* c = Cond(wl, type);
  return c != nullptr && Str(*c, "status") == "True";
}

// ---- the random model -------------------------------------------------------

struct QueueCfg {
  std::string name;  // ClusterQueue, also its namespace
  std::string cohort;
  int cpu = 0, cpu_borrow = -1;  // -1: no borrowing limit
  int mem_gi = 0;
  int a100 = 0, a100_borrow = -1;
  int h100 = 0;
};

struct WlSpec {
  std::string ns, name, priority_class;
  int priority = 0;
  int count = 1;
  bool gpu = false;
  int cpu = 1, mem_gi = 0, gpus = 0;
};

struct Op {
  enum Kind { kCreate, kFinish, kDelete, kDeactivate, kActivate, kRestart } kind = kCreate;
  WlSpec wl;           // kCreate
  std::string target;  // ns/name for the others
};

const char* OpName(Op::Kind k) {
  switch (k) {
    case Op::kCreate: return "create";
    case Op::kFinish: return "finish";
    case Op::kDelete: return "delete";
    case Op::kDeactivate: return "deactivate";
    case Op::kActivate: return "activate";
    case Op::kRestart: return "restart-arteld";
  }
  return "?";
}

// What the cluster said after a step (the expectations of that step).
struct Observed {
  std::set<std::string> admitted, pending;                            // ns/name
  std::vector<std::pair<std::string, std::string>> evictions;         // ns/name, reason
  std::map<std::string, std::map<std::string, std::string>> flavors;  // ns/name -> resource -> flavor
};

struct Seed {
  uint64_t seed = 0;
  std::string p;  // name prefix
  std::vector<QueueCfg> queues;
  std::string low, high;
  int low_value = 10, high_value = 1000;

  std::string ConfigYaml() const {
    std::ostringstream y;
    y << "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: " << p << "std}\n---\n";
    y << "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: " << p << "a100}\n---\n";
    y << "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: " << p << "h100}\n---\n";
    y << "apiVersion: kueue.x-k8s.io/v1beta2\nkind: WorkloadPriorityClass\nmetadata: {name: " << low
      << "}\nvalue: " << low_value << "\n---\n";
    y << "apiVersion: kueue.x-k8s.io/v1beta2\nkind: WorkloadPriorityClass\nmetadata: {name: " << high
      << "}\nvalue: " << high_value << "\n";
    for (const QueueCfg& q : queues) {
      y << "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: " << q.name << "}\n";
      y << "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: " << q.name
        << "}\nspec:\n"
        << "  cohortName: " << q.cohort << "\n  namespaceSelector: {}\n"
        << "  preemption: {reclaimWithinCohort: Any, withinClusterQueue: LowerPriority}\n"
        << "  resourceGroups:\n"
        << "  - coveredResources: [cpu, memory]\n    flavors:\n    - name: " << p << "std\n      resources:\n"
        << "      - {name: cpu, nominalQuota: \"" << q.cpu << "\""
        << (q.cpu_borrow >= 0 ? ", borrowingLimit: \"" + std::to_string(q.cpu_borrow) + "\"" : "") << "}\n"
        << "      - {name: memory, nominalQuota: \"" << q.mem_gi << "Gi\"}\n"
        << "  - coveredResources: [" << kGpu << "]\n    flavors:\n"
        << "    - name: " << p << "a100\n      resources:\n"
        << "      - {name: " << kGpu << ", nominalQuota: \"" << q.a100 << "\""
        << (q.a100_borrow >= 0 ? ", borrowingLimit: \"" + std::to_string(q.a100_borrow) + "\"" : "") << "}\n"
        << "    - name: " << p << "h100\n      resources:\n"
        << "      - {name: " << kGpu << ", nominalQuota: \"" << q.h100 << "\"}\n";
      y << "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {name: lq, namespace: "
        << q.name << "}\nspec: {clusterQueue: " << q.name << "}\n";
    }
    return y.str();
  }
};

Seed MakeSeed(uint64_t seed, std::mt19937_64& rng) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  Seed s;
  s.seed = seed;
  s.p = "s" + std::to_string(seed) + "-";
  s.low = s.p + "low";
  s.high = s.p + "high";
  const char* letters = "abcd";
  for (int i = 0; i < 4; ++i) {
    QueueCfg q;
    q.name = s.p + letters[i];
    q.cohort = s.p + (i < 2 ? "co1" : "co2");
    q.cpu = pick(2, 5);
    q.cpu_borrow = pick(0, 2) == 0 ? pick(0, 2) : -1;
    q.mem_gi = pick(3, 8);
    q.a100 = pick(0, 2);
    q.a100_borrow = pick(0, 2) == 0 ? pick(0, 2) : -1;
    q.h100 = pick(0, 1);
    s.queues.push_back(q);
  }
  return s;
}

// ---- the scenario side --------------------------------------------------------

std::string Ref(const std::string& key) { return "\"" + key + "\""; }

std::string ScenarioYaml(const Seed& s, const std::vector<Op>& ops, const std::vector<Observed>& seen) {
  std::ostringstream y;
  y << "# kube_random_test, seed " << s.seed << ": expectations are what arteld did on Kubernetes\n";
  y << "apiVersion: artel.dev/v1alpha1\nkind: Scenario\nmetadata: {name: kube-random-seed-" << s.seed
    << "}\nspec:\n";
  y << "  config:\n  - inline: |\n";
  std::istringstream cfg(s.ConfigYaml());
  for (std::string line; std::getline(cfg, line);) y << "      " << line << "\n";
  y << "  steps:\n";
  for (size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    y << "  - at: " << i << "s\n";
    switch (op.kind) {
      case Op::kCreate: {
        const WlSpec& w = op.wl;
        y << "    submit:\n    - name: " << w.name << "\n      namespace: " << w.ns << "\n      queue: lq\n"
          << "      priorityClass: " << w.priority_class
          << "\n      podSets:\n      - name: main\n        count: " << w.count
          << "\n        requests: {cpu: \"" << w.cpu << "\"";
        if (w.mem_gi > 0) y << ", memory: " << w.mem_gi << "Gi";
        if (w.gpus > 0) y << ", " << kGpu << ": \"" << w.gpus << "\"";
        y << "}\n";
        break;
      }
      case Op::kFinish: y << "    finish: [" << Ref(op.target) << "]\n"; break;
      case Op::kDelete: y << "    cancel: [" << Ref(op.target) << "]\n"; break;
      case Op::kDeactivate: y << "    deactivate: [" << Ref(op.target) << "]\n"; break;
      case Op::kActivate: y << "    activate: [" << Ref(op.target) << "]\n"; break;
      case Op::kRestart: y << "    # arteld was killed (-9) and started again: nothing changes\n"; break;
    }
    if (i >= seen.size()) continue;
    const Observed& o = seen[i];
    auto list = [&](const std::set<std::string>& keys) {
      std::string out = "[";
      for (const std::string& k : keys) out += (out.size() > 1 ? ", " : "") + Ref(k);
      return out + "]";
    };
    y << "    expect:\n      admitted: " << list(o.admitted) << "\n      pending: " << list(o.pending)
      << "\n";
    y << "      evictions: [";
    for (size_t e = 0; e < o.evictions.size(); ++e)
      y << (e ? ", " : "") << "{victim: " << Ref(o.evictions[e].first)
        << ", reason: " << o.evictions[e].second << "}";
    y << "]\n";
    if (!o.flavors.empty()) {
      y << "      flavors:\n";
      for (const auto& [key, per_res] : o.flavors) {
        y << "        " << Ref(key) << ": {main: {";
        bool first = true;
        for (const auto& [res, fl] : per_res) {
          y << (first ? "" : ", ") << "\"" << res << "\": " << fl;
          first = false;
        }
        y << "}}\n";
      }
    }
  }
  return y.str();
}

// Runs the history through the scenario runner; "" when it agrees with
// every observation, else the runner's diff.
std::string RunScenarioSide(const std::string& yaml, const std::string& file) {
  std::vector<sim::ScenarioDoc> docs = sim::ParseScenarios(yaml, file);
  if (docs.size() != 1) return "expected one scenario document, got " + std::to_string(docs.size());
  if (!docs[0].scenario) return "the scenario does not load: " + docs[0].error.ToString();
  std::ostringstream trace;
  sim::ScenarioResult r = sim::RunScenario(*docs[0].scenario, &trace);
  if (r.passed) return "";
  std::string out;
  for (const std::string& f : r.failures) out += "  " + f + "\n";
  return out + "runner trace:\n" + trace.str();
}

// ---- the Kubernetes side ----------------------------------------------------

Json WorkloadObject(const Seed& s, const WlSpec& w) {
  Json req = {{"cpu", std::to_string(w.cpu)}};
  if (w.mem_gi > 0) req["memory"] = std::to_string(w.mem_gi) + "Gi";
  if (w.gpus > 0) req[kGpu] = std::to_string(w.gpus);
  return {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
          {"kind", "Workload"},
          {"metadata", {{"name", w.name}, {"namespace", w.ns}}},
          {"spec",
           {{"queueName", "lq"},
            // What Kueue's webhook sets from the class (no webhook runs here).
            {"priority", w.priority_class == s.high ? s.high_value : s.low_value},
            {"priorityClassRef",
             {{"group", "kueue.x-k8s.io"}, {"kind", "WorkloadPriorityClass"}, {"name", w.priority_class}}},
            {"podSets",
             Json::array({{{"name", "main"},
                           {"count", w.count},
                           {"template",
                            {{"spec",
                              {{"restartPolicy", "Never"},
                               {"containers", Json::array({{{"name", "c"},
                                                            {"image", "busybox"},
                                                            {"resources", {{"requests", req}}}}})}}}}}}})}}}};
}

std::string EvictionReason(const Json& wl) {
  const Json* ev = Cond(wl, "Evicted");
  std::string r = ev != nullptr ? Str(*ev, "reason") : "";
  if (r == "Preempted") {
    const Json* pr = Cond(wl, "Preempted");
    return pr != nullptr && !Str(*pr, "reason").empty() ? Str(*pr, "reason") : "Preempted";
  }
  if (r == "InactiveWorkload") return "Deactivated";
  return r.empty() ? "Unknown" : r;
}

class KubeRandom : public ::testing::Test {
 public:
  void SetUp() override {
    auto c = K8sCluster::Start();
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    k8s_ = std::move(c).value();
    auto kc = kube::LoadKubeconfig(k8s_->kubeconfig());
    ASSERT_TRUE(kc.ok()) << kc.status().ToString();
    client_ = std::make_unique<kube::Client>(*kc);
    dir_ = TempDir("kube-random");
    WriteFile(dir_ + "/arteld.yaml", "scheduler:\n  intervalMs: 100\n");
    arteld_ = std::make_unique<Arteld>(dir_);
    std::string error;
    ASSERT_TRUE(arteld_->Start(ArteldArgs(), &error)) << error;
  }
  std::vector<std::string> ArteldArgs() const {
    return {"--kubeconfig", k8s_->kubeconfig(), "--config", dir_ + "/arteld.yaml"};
  }

  std::string ArteldLogTail() const {
    std::string log = arteld_->log();
    return log.size() > 6000 ? log.substr(log.size() - 6000) : log;
  }

  // Applies the seed's configuration and waits until every ClusterQueue and
  // LocalQueue of it is Active.
  std::string ApplyConfig(const Seed& s) {
    auto r = k8s_->Kubectl({"apply", "--server-side", "-f", "-"}, s.ConfigYaml());
    if (!r.ok()) return r.status().ToString();
    bool ok = WaitFor(
        [&] {
          for (const QueueCfg& q : s.queues) {
            auto cq = client_->Get(kube::kClusterQueues, "", q.name);
            auto lq = client_->Get(kube::kLocalQueues, q.name, "lq");
            if (!cq.ok() || !lq.ok() || !CondTrue(*cq, "Active") || !CondTrue(*lq, "Active")) return false;
          }
          return true;
        },
        kStepDeadlineMs);
    return ok ? "" : "the queues of seed " + std::to_string(s.seed) + " did not become Active";
  }

  // The job side of an eviction: the pods are gone, the reservation is
  // cleared (what Kueue's job framework does).
  std::string ClearReservation(const std::string& ns, const std::string& name) {
    auto r = kube::UpdateWithRetry(
        *client_, kube::kWorkloads, ns, name,
        [](Json& w) {
          if (!CondTrue(w, "Evicted") || !CondTrue(w, "QuotaReserved")) return false;
          Json& st = w["status"];
          st.erase("admission");
          for (Json& c : st["conditions"]) {
            std::string t = Str(c, "type");
            if ((t == "QuotaReserved" || t == "Admitted") && Str(c, "status") == "True") {
              c["status"] = "False";
              c["reason"] = t == "QuotaReserved" ? "Pending" : "NoReservation";
              c["message"] = "the pods are gone (kube_random_test plays the job side)";
            }
          }
          return true;
        },
        /*status=*/true, 10);
    if (!r.ok() && !r.error().NotFound()) return r.error().message;
    return "";
  }

  std::string Apply(const Seed& s, const Op& op) {
    size_t slash = op.target.find('/');
    std::string ns = op.target.substr(0, slash),
                name = slash == std::string::npos ? "" : op.target.substr(slash + 1);
    switch (op.kind) {
      case Op::kCreate: {
        auto r = client_->Create(kube::kWorkloads, op.wl.ns, WorkloadObject(s, op.wl));
        return r.ok() ? "" : r.error().message;
      }
      case Op::kFinish: {
        auto r = kube::UpdateWithRetry(
            *client_, kube::kWorkloads, ns, name,
            [](Json& w) {
              Json& conds = w["status"]["conditions"];
              if (!conds.is_array()) conds = Json::array();
              conds.push_back({{"type", "Finished"},
                               {"status", "True"},
                               {"reason", "Succeeded"},
                               {"message", "done (kube_random_test)"},
                               {"lastTransitionTime", "2026-01-01T00:00:00Z"}});
              return true;
            },
            /*status=*/true, 10);
        return r.ok() ? "" : r.error().message;
      }
      case Op::kDelete: {
        auto r = client_->Delete(kube::kWorkloads, ns, name);
        return r.ok() ? "" : r.error().message;
      }
      case Op::kDeactivate:
      case Op::kActivate: {
        auto r = client_->MergePatch(kube::kWorkloads, ns, name,
                                     {{"spec", {{"active", op.kind == Op::kActivate}}}});
        return r.ok() ? "" : r.error().message;
      }
      case Op::kRestart: {
        // kill -9 and start again: the engine is rebuilt from the cluster.
        log_before_restart_ = arteld_->log().size();
        arteld_->Kill(SIGKILL);
        std::string error;
        return arteld_->Start(ArteldArgs(), &error) ? "" : "arteld did not start again: " + error;
      }
    }
    return "unknown op";
  }

  uint64_t Cycles() const {
    HttpResult m = arteld_->Get("/metrics");
    std::istringstream in(m.body);
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("artel_scheduler_cycles_total ", 0) == 0)
        return std::stoull(line.substr(line.find(' ') + 1));
    }
    return 0;
  }

  // Waits until arteld is done with the step (see the top of the file),
  // playing the job side of every eviction meanwhile. Fills `out`; returns
  // "" or why it did not settle.
  std::string Settle(const Seed& s, Observed* out) {
    std::string last_state, why;
    uint64_t last_cycles = 0;
    bool have_last = false;
    std::string error;
    bool ok = WaitFor(
        [&] {
          auto list = client_->ListAll(kube::kWorkloads, "");
          if (!list.ok()) {
            why = "list workloads: " + list.error().message;
            return false;
          }
          std::map<std::string, Json> cluster;
          for (const Json& w : At(*list, "items")) {
            std::string ns = Str(w, "metadata", "namespace");
            if (ns.rfind(s.p, 0) != 0) continue;
            cluster[ns + "/" + Str(w, "metadata", "name")] = w;
          }
          // The job side: evictions waiting for the pods to go.
          bool cleared = false;
          for (const auto& [key, w] : cluster) {
            if (CondTrue(w, "Evicted") && CondTrue(w, "QuotaReserved") && !CondTrue(w, "Finished")) {
              std::string reason = EvictionReason(w);
              std::string err = ClearReservation(Str(w, "metadata", "namespace"), Str(w, "metadata", "name"));
              if (!err.empty()) {
                error = "clearing the reservation of " + key + ": " + err;
                return true;
              }
              out->evictions.emplace_back(key, reason);
              cleared = true;
            }
          }
          if (cleared) {
            have_last = false;
            why = "evictions were completed";
            return false;
          }
          HttpResult r = arteld_->Get("/api/v1/workloads");
          if (r.status != 200) {
            why = "arteld GET /api/v1/workloads: " + std::to_string(r.status) + " " + r.body;
            return false;
          }
          uint64_t cycles = Cycles();
          std::map<std::string, Json> engine;
          Json items = r.json();
          for (const Json& w : At(items, "items")) {
            std::string ns = Str(w, "metadata", "namespace");
            if (ns.rfind(s.p, 0) != 0) continue;
            engine[ns + "/" + Str(w, "metadata", "name")] = w;
          }
          Observed o;
          std::ostringstream state;
          for (const auto& [key, w] : cluster) {
            auto it = engine.find(key);
            if (it == engine.end()) {
              why = key + " is not known to arteld yet";
              return have_last = false;
            }
            const Json& e = it->second;
            std::string rv = Str(w, "metadata", "resourceVersion");
            if (Str(e, "metadata", "resourceVersion") != rv) {
              why = key + ": arteld has resourceVersion " + Str(e, "metadata", "resourceVersion") +
                    ", the cluster " + rv;
              return have_last = false;
            }
            std::string phase = Str(e, "status", "phase");
            bool finished = CondTrue(w, "Finished");
            bool reserved = CondTrue(w, "QuotaReserved") && !finished;
            std::string want = finished ? "Finished" : reserved ? "Admitted" : "Pending";
            std::string got = phase == "Inactive" ? "Pending" : phase;
            if (got != want) {
              why = key + ": arteld says " + phase + ", the cluster " + want;
              return have_last = false;
            }
            if (phase == "Pending" && Str(At(At(e, "status"), "pending"), "reason") == "NotYetTried") {
              why = key + " is not tried yet";
              return have_last = false;
            }
            if (reserved) {
              o.admitted.insert(key);
              const Json& psas = At(At(At(w, "status"), "admission"), "podSetAssignments");
              if (psas.is_array()) {
                for (const Json& psa : psas) {
                  const Json& fls = At(psa, "flavors");
                  if (!fls.is_object()) continue;
                  for (const auto& [res, fl] : fls.items())
                    if (fl.is_string()) o.flavors[key][res] = fl.get<std::string>();
                }
              }
            } else if (!finished) {
              o.pending.insert(key);
            }
            state << key << "@" << rv << "=" << want << ";";
          }
          for (const auto& [key, e] : engine) {
            if (!cluster.count(key)) {
              why = key + " is deleted in the cluster but arteld still lists it";
              return have_last = false;
            }
          }
          if (have_last && state.str() == last_state && cycles > last_cycles) {
            out->admitted = std::move(o.admitted);
            out->pending = std::move(o.pending);
            out->flavors = std::move(o.flavors);
            return true;
          }
          if (!have_last || state.str() != last_state) {
            last_state = state.str();
            last_cycles = cycles;
            have_last = true;
          }
          why = "waiting for a scheduling pass to confirm";
          return false;
        },
        kStepDeadlineMs);
    if (!error.empty()) return error;
    return ok ? "" : "arteld did not settle within " + std::to_string(kStepDeadlineMs) + " ms: " + why;
  }

  // Every admission survives a restart: what arteld logged since the last
  // restart says none was dropped ("" or the offending lines).
  std::string DroppedAdmissions() const {
    std::string log = arteld_->log();
    std::istringstream in(log.size() > log_before_restart_ ? log.substr(log_before_restart_) : "");
    std::string out;
    for (std::string line; std::getline(in, line);)
      if (line.find("admission not restorable") != std::string::npos) out += line + "\n";
    return out;
  }

  size_t log_before_restart_ = 0;
  std::unique_ptr<K8sCluster> k8s_;
  std::unique_ptr<kube::Client> client_;
  std::unique_ptr<Arteld> arteld_;
  std::string dir_;
};

Op RandomOp(const Seed& s, int step, std::mt19937_64& rng, const Observed& last,
            const std::set<std::string>& inactive, const std::set<std::string>& alive) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  auto any_of = [&](const std::vector<std::string>& v) { return v[pick(0, static_cast<int>(v.size()) - 1)]; };
  std::vector<std::string> admitted(last.admitted.begin(), last.admitted.end());
  std::vector<std::string> all(alive.begin(), alive.end());
  std::vector<std::string> active, inactive_v(inactive.begin(), inactive.end());
  for (const std::string& k : all)
    if (!inactive.count(k)) active.push_back(k);
  int roll = pick(0, 99);
  Op op;
  if (roll >= 50 && roll < 54 && step > 0) {
    op.kind = Op::kRestart;
  } else if (roll >= 55 && roll < 72 && !admitted.empty()) {
    op.kind = Op::kFinish;
    op.target = any_of(admitted);
  } else if (roll >= 72 && roll < 82 && !all.empty()) {
    op.kind = Op::kDelete;
    op.target = any_of(all);
  } else if (roll >= 82 && roll < 94 && !active.empty()) {
    op.kind = Op::kDeactivate;
    op.target = any_of(active);
  } else if (roll >= 94 && !inactive_v.empty()) {
    op.kind = Op::kActivate;
    op.target = any_of(inactive_v);
  } else {
    op.kind = Op::kCreate;
    WlSpec& w = op.wl;
    w.ns = s.queues[pick(0, static_cast<int>(s.queues.size()) - 1)].name;
    w.name = "w" + std::to_string(step);
    w.priority_class = pick(0, 2) == 0 ? s.high : s.low;
    w.count = pick(1, 3);
    w.gpu = pick(0, 9) < 4;
    w.cpu = w.gpu ? 1 : pick(1, 2);
    w.mem_gi = w.gpu ? 0 : pick(1, 3);
    w.gpus = w.gpu ? pick(1, 2) : 0;
    op.target = w.ns + "/" + w.name;
  }
  return op;
}

// Runs one history (random from `rng`, or `fixed`) on seed `s`'s
// configuration, comparing both sides after every step.
void RunHistory(KubeRandom* t, const Seed& s, std::mt19937_64& rng, int steps, const std::vector<Op>* fixed,
                Observed* last_out = nullptr) {
  const uint64_t seed = s.seed;
  if (fixed != nullptr) steps = static_cast<int>(fixed->size());
  ASSERT_EQ(t->ApplyConfig(s), "") << t->ArteldLogTail();
  std::vector<Op> ops;
  std::vector<Observed> seen;
  std::set<std::string> alive, inactive;
  int64_t created_at_ms = -1;  // wall time just after the previous create
  Observed last;
  for (int i = 0; i < steps; ++i) {
    Op op = fixed != nullptr ? (*fixed)[i] : RandomOp(s, i, rng, last, inactive, alive);
    if (op.kind == Op::kCreate && created_at_ms >= 0) {
      // One create per wall-clock second (creationTimestamp has one-second
      // resolution; see the top).
      int64_t next_second = (created_at_ms / 1000 + 1) * 1000;
      ASSERT_TRUE(WaitFor([&] { return WallMs() >= next_second; }, 5000));
    }
    std::string err = t->Apply(s, op);
    if (op.kind == Op::kCreate) created_at_ms = WallMs();
    ASSERT_EQ(err, "") << "seed " << seed << " step " << i << ": " << OpName(op.kind) << " " << op.target;
    ops.push_back(op);
    switch (op.kind) {
      case Op::kCreate: alive.insert(op.target); break;
      case Op::kFinish: alive.erase(op.target); break;
      case Op::kDelete:
        alive.erase(op.target);
        inactive.erase(op.target);
        break;
      case Op::kDeactivate: inactive.insert(op.target); break;
      case Op::kActivate: inactive.erase(op.target); break;
      case Op::kRestart: break;
    }
    Observed o;
    std::string settle = t->Settle(s, &o);
    if (op.kind == Op::kRestart && settle.empty()) settle = t->DroppedAdmissions();
    std::string file = "kube-random-seed-" + std::to_string(seed) + ".yaml";
    seen.push_back(o);
    std::string yaml = ScenarioYaml(s, ops, seen);
    if (!settle.empty()) {
      FAIL() << "seed " << seed << " step " << i << " (" << OpName(op.kind) << " " << op.target
             << "): " << settle << "\nhistory:\n"
             << yaml << "\narteld log tail:\n"
             << t->ArteldLogTail();
    }
    std::string diff = RunScenarioSide(yaml, file);
    if (!diff.empty()) {
      // Kept for `artel test` (the directory is left in place on failure).
      std::string path = t->dir_ + "/" + file;
      WriteFile(path, yaml, 0644);
      FAIL() << "seed " << seed << " step " << i << " (" << OpName(op.kind) << " " << op.target
             << "): Kubernetes (want) and the scenario runner (got) disagree:\n"
             << diff << "\nthe history, as a scenario whose expectations are what arteld did on Kubernetes "
             << "(`artel test " << path << "` reproduces the runner's side):\n"
             << yaml << "\narteld log tail:\n"
             << t->ArteldLogTail();
    }
    last = o;
    if (last_out != nullptr) *last_out = o;
  }
  // What this seed exercised (so that a run shows it did something).
  std::map<std::string, int> kinds, reasons;
  for (const Op& op : ops) kinds[OpName(op.kind)]++;
  for (const Observed& o : seen)
    for (const auto& [victim, reason] : o.evictions) reasons[reason]++;
  std::string summary;
  for (const auto& [k, n] : kinds) summary += " " + k + "=" + std::to_string(n);
  summary += "; evictions:";
  for (const auto& [r, n] : reasons) summary += " " + r + "=" + std::to_string(n);
  std::printf("kube_random_test: seed %llu agreed at every step:%s; at the end %zu admitted, %zu pending\n",
              static_cast<unsigned long long>(seed), summary.c_str(), last.admitted.size(),
              last.pending.size());
  std::fflush(stdout);
  // Clean up: the next seed starts on an empty set of Workloads.
  for (const std::string& key : alive) {
    size_t slash = key.find('/');
    (void)t->client_->Delete(kube::kWorkloads, key.substr(0, slash), key.substr(slash + 1));
  }
}

TEST_F(KubeRandom, kube_RandomHistoriesAgreeWithTheScenarioRunner) {
  const int steps = Steps();
  for (uint64_t seed : Seeds()) {
    std::printf("kube_random_test: seed %llu, %d steps (ARTEL_RANDOM_SEEDS=%llu to rerun)\n",
                static_cast<unsigned long long>(seed), steps, static_cast<unsigned long long>(seed));
    std::fflush(stdout);
    std::mt19937_64 rng(seed);
    Seed s = MakeSeed(seed, rng);
    RunHistory(this, s, rng, steps, nullptr);
    if (HasFatalFailure() || HasFailure()) return;
  }
}

// A directed history (the same machinery, fixed operations): a preempted
// Workload keeps its place in the queue, across a restart of arteld too.
// w0 (low) is admitted, w1 (low) waits behind it, w2 (high) preempts w0,
// which is requeued ahead of w1 (Kueue orders a preempted Workload by its
// creation time). arteld is killed and started again; when w2 finishes, w0
// (not w1) is admitted again, on both sides.
TEST_F(KubeRandom, kube_RequeuedVictimKeepsItsPlaceAcrossRestart) {
  Seed s;
  s.seed = 900;
  s.p = "s900-";
  s.low = s.p + "low";
  s.high = s.p + "high";
  for (const char* q : {"a", "b", "c", "d"}) {
    QueueCfg c;
    c.name = s.p + q;
    c.cohort = s.p + "co1";
    c.cpu = q[0] == 'a' ? 2 : 0;
    c.mem_gi = 4;
    s.queues.push_back(c);
  }
  auto create = [&](const std::string& name, const std::string& pc) {
    Op op;
    op.kind = Op::kCreate;
    op.wl.ns = s.p + "a";
    op.wl.name = name;
    op.wl.priority_class = pc;
    op.wl.cpu = 2;
    op.target = op.wl.ns + "/" + name;
    return op;
  };
  Op restart;
  restart.kind = Op::kRestart;
  Op finish;
  finish.kind = Op::kFinish;
  finish.target = s.p + "a/w2";
  std::vector<Op> ops = {create("w0", s.low), create("w1", s.low), create("w2", s.high), restart, finish};
  std::mt19937_64 rng(s.seed);
  Observed last;
  RunHistory(this, s, rng, 0, &ops, &last);
  ASSERT_FALSE(HasFailure());
  EXPECT_EQ(last.admitted, std::set<std::string>({s.p + "a/w0"}));
  EXPECT_EQ(last.pending, std::set<std::string>({s.p + "a/w1"}));
}

}  // namespace
}  // namespace artel::testing
