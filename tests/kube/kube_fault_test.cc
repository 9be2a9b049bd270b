// Faults for arteld's Kubernetes mode, on a real control plane: kill -9 of
// arteld at random points under a stream of Workloads being created and
// finished; an API server restart and an expired watch in the middle; 409
// conflicts when a user edits a Workload while arteld writes it. The
// invariants are read from the cluster alone (`kubectl get workloads`):
// never more quota reserved than exists, nothing lost, every ClusterQueue's
// reservation equal to the sum of its admitted workloads.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <set>

#include "controller_env.h"
#include "core/quantity.h"
#include "kube/controller.h"
#include "kube/kubeconfig.h"

namespace artel::testing {
namespace {

constexpr int kWait = 30000;

const char* kPool = R"(apiVersion: v1
kind: Namespace
metadata: {name: load}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: gpu}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: pool}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [cpu, nvidia.com/gpu]
    flavors:
    - name: gpu
      resources:
      - {name: cpu, nominalQuota: "100"}
      - {name: nvidia.com/gpu, nominalQuota: "4"}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: q, namespace: load}
spec: {clusterQueue: pool}
)";

// GPUs reserved in the cluster, from status.admission of every reserved Workload.
int64_t ReservedGpus(const std::map<std::string, Json>& wls) {
  int64_t sum = 0;
  for (const auto& [k, w] : wls) {
    if (!Reserved(w)) continue;
    for (const Json& ps : w["status"]["admission"].value("podSetAssignments", Json::array())) {
      auto q = core::ParseQuantity(ps.value("resourceUsage", Json::object()).value("nvidia.com/gpu", "0"));
      if (q.ok()) sum += *q;
    }
  }
  return sum;
}

int64_t CqReservedGpus(KubeEnv& env, const std::string& cq) {
  Json j = env.Get("clusterqueues.kueue.x-k8s.io", "", cq);
  for (const Json& f : j["status"].value("flavorsReservation", Json::array()))
    for (const Json& r : f.value("resources", Json::array()))
      if (r.value("name", "") == "nvidia.com/gpu") {
        auto q = core::ParseQuantity(r.value("total", "0"));
        return q.ok() ? *q : -1;
      }
  return 0;
}

class KubeFaults : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    ASSERT_TRUE(env_.Up(&error)) << error;
  }
  void StartArteld() {
    std::string error;
    ASSERT_TRUE(env_.StartArteld({}, &error)) << error;
  }
  KubeEnv env_;
};

// kill -9 at random points while Workloads are created and finished: the
// cluster never shows more GPUs reserved than the pool has (no double
// admission, before or after any restart), and in the end every Workload
// gets admitted and finishes (none lost); the ClusterQueue's reservation
// equals the sum of its admitted workloads.
TEST_F(KubeFaults, kube_KillDashNineUnderLoad) {
  ASSERT_EQ(env_.Apply(kPool), "");
  StartArteld();
  unsigned seed = static_cast<unsigned>(std::chrono::steady_clock::now().time_since_epoch().count());
  if (const char* s = std::getenv("ARTEL_TEST_SEED")) seed = static_cast<unsigned>(std::atoll(s));
  std::mt19937 rng(seed);
  SCOPED_TRACE("ARTEL_TEST_SEED=" + std::to_string(seed));
  int created = 0;
  auto check = [&](const char* when) {
    auto wls = env_.Workloads();
    int64_t gpus = ReservedGpus(wls);
    EXPECT_LE(gpus, 4 * core::kMilli) << when;
    return wls;
  };
  for (int round = 0; round < 5; ++round) {
    int ops = 1 + static_cast<int>(rng() % 8);
    for (int i = 0; i < ops; ++i) {
      auto wls = check("under load");
      std::vector<std::string> reserved;
      for (const auto& [k, w] : wls)
        if (Reserved(w)) reserved.push_back(w["metadata"]["name"]);
      if (!reserved.empty() && rng() % 3 == 0) {
        ASSERT_EQ(env_.Finish("load", reserved[rng() % reserved.size()]), "");
      } else {
        // Random priorities: a restart that forgot what is admitted would
        // let a later, higher-priority workload in over the older ones.
        ASSERT_EQ(env_.Create("load", "w-" + std::to_string(created++), "q", 1 + static_cast<int>(rng() % 2),
                              static_cast<int>(rng() % 3) * 10),
                  "");
      }
    }
    env_.arteld->Kill(SIGKILL);
    check("after kill -9");
    StartArteld();
    check("after restart");
  }
  // Quiescence: the pool is as full as the pending workloads allow, and the
  // ClusterQueue's status says exactly what the workloads say.
  ASSERT_TRUE(WaitFor(
      [&] {
        auto wls = env_.Workloads();
        int64_t gpus = ReservedGpus(wls);
        bool waiting_fits = false;
        for (const auto& [k, w] : wls) {
          if (Reserved(w) || IsTrue(w, "Finished")) continue;
          int64_t need = 0;
          auto q = core::ParseQuantity(
              w["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"]["requests"].value(
                  "nvidia.com/gpu", "0"));
          if (q.ok()) need = *q;
          if (gpus + need <= 4 * core::kMilli) waiting_fits = true;
        }
        return !waiting_fits && CqReservedGpus(env_, "pool") == gpus;
      },
      kWait))
      << "reserved " << ReservedGpus(env_.Workloads()) << " cq " << CqReservedGpus(env_, "pool");
  // Drain: finishing what is admitted lets every other one in; none is lost.
  ASSERT_TRUE(WaitFor(
      [&] {
        auto wls = check("drain");
        int finished = 0;
        for (const auto& [k, w] : wls) {
          if (IsTrue(w, "Finished")) {
            finished++;
          } else if (Reserved(w)) {
            EXPECT_EQ(env_.Finish("load", w["metadata"]["name"]), "");
          }
        }
        return finished == created;
      },
      60000))
      << created << " created";
}

// An API server restart and an expired watch in the middle: arteld is
// frozen (SIGSTOP) while Workloads are created, etcd is compacted and the
// API server restarted, so that its watches resume from a resourceVersion
// that no longer exists (410 Gone) and must re-list; everything that fits
// is admitted afterwards, exactly once.
TEST_F(KubeFaults, kube_ApiServerRestartAndExpiredWatch) {
  ASSERT_EQ(env_.Apply(kPool), "");
  StartArteld();
  ASSERT_EQ(env_.Create("load", "before", "q", 1), "");
  ASSERT_TRUE(WaitFor([&] { return Reserved(env_.Workload("load", "before")); }, kWait));
  // 1. A plain API server restart.
  ASSERT_TRUE(env_.k8s->RestartApiServer().ok());
  ASSERT_EQ(env_.Create("load", "after-restart", "q", 1), "");
  ASSERT_TRUE(WaitFor([&] { return Reserved(env_.Workload("load", "after-restart")); }, kWait))
      << env_.arteld->log();
  // 2. An expired watch.
  ASSERT_EQ(kill(env_.arteld->pid(), SIGSTOP), 0);
  ASSERT_EQ(env_.Create("load", "while-frozen-1", "q", 1), "");
  ASSERT_EQ(env_.Create("load", "while-frozen-2", "q", 1), "");
  ASSERT_EQ(env_.Finish("load", "before"), "");
  for (int i = 0; i < 5; ++i)  // move the revision on
    ASSERT_TRUE(env_.Kubectl({"label", "--overwrite", "namespace", "load", "rev=" + std::to_string(i)}).ok());
  ASSERT_TRUE(env_.k8s->CompactEtcd().ok());
  ASSERT_TRUE(env_.k8s->RestartApiServer().ok());
  ASSERT_EQ(kill(env_.arteld->pid(), SIGCONT), 0);
  ASSERT_TRUE(WaitFor(
      [&] {
        return Reserved(env_.Workload("load", "while-frozen-1")) &&
               Reserved(env_.Workload("load", "while-frozen-2"));
      },
      kWait))
      << env_.arteld->log();
  auto wls = env_.Workloads();
  EXPECT_EQ(ReservedGpus(wls), 3 * core::kMilli);
  EXPECT_TRUE(WaitFor([&] { return CqReservedGpus(env_, "pool") == 3 * core::kMilli; }, kWait));
}

// 409: a user edits the Workload between arteld's decision and its write.
// The controller runs in-process with a hook that edits (labels) the
// Workload just before each admission write, so that the write carries a
// stale resourceVersion: it must be refused, the workload requeued and
// admitted again on the fresh object, and the user's edit kept.
TEST_F(KubeFaults, kube_ConflictingUserEditIsNotOverwritten) {
  ASSERT_EQ(env_.Apply(kPool), "");
  auto cfg = kube::LoadKubeconfig(env_.k8s->kubeconfig());
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  server::Logger log(server::Logger::Format::kLogfmt, server::LogLevel::kWarn);
  kube::ControllerOptions opts;
  std::atomic<int> edits{0};
  opts.before_status_write = [&](const std::string& ns, const std::string& name, const std::string& type) {
    // The first admission attempt of each workload meets a user's edit.
    if (type != "admit") return;
    Json w = env_.Workload(ns, name);
    if (w["metadata"].value("labels", Json::object()).contains("edited")) return;
    if (env_.Kubectl({"label", "workloads.kueue.x-k8s.io", name, "-n", ns, "edited=yes"}).ok()) edits++;
  };
  kube::Controller ctl(std::move(cfg).value(), opts, &log, [] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  });
  ASSERT_TRUE(ctl.Start(30000).ok());
  for (int i = 0; i < 3; ++i) ASSERT_EQ(env_.Create("load", "c-" + std::to_string(i), "q", 1), "");
  EXPECT_TRUE(WaitFor(
      [&] {
        for (int i = 0; i < 3; ++i)
          if (!Reserved(env_.Workload("load", "c-" + std::to_string(i)))) return false;
        return true;
      },
      kWait));
  for (int i = 0; i < 3; ++i) {
    Json w = env_.Workload("load", "c-" + std::to_string(i));
    EXPECT_EQ(w["metadata"]["labels"].value("edited", ""), "yes") << w.dump(1);
    EXPECT_EQ(AdmittedCq(w), "pool");
  }
  EXPECT_EQ(edits.load(), 3);
  kube::ControllerStats s = ctl.stats();
  EXPECT_GE(s.status_conflicts, 3u);
  EXPECT_GE(s.admissions_requeued, 3u);
  ctl.Stop();
  EXPECT_EQ(ReservedGpus(env_.Workloads()), 3 * core::kMilli);
}

// Holds the status writes that `hold` selects (by Workload name and write
// type, see ControllerOptions::before_status_write) until Open(); counts how
// many wait at once. Open it before the controller stops (OpenOnExit).
struct WriteGate {
  std::function<bool(const std::string& name, const std::string& type)> hold;
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  int held = 0;
  int most_held = 0;
  void Hook(const std::string& name, const std::string& type) {
    if (!hold(name, type)) return;
    std::unique_lock<std::mutex> l(mu);
    most_held = std::max(most_held, ++held);
    cv.wait(l, [&] { return open; });
    --held;
  }
  void Open() {
    {
      std::lock_guard<std::mutex> l(mu);
      open = true;
    }
    cv.notify_all();
  }
  int Held() {
    std::lock_guard<std::mutex> l(mu);
    return held;
  }
  int MostHeld() {
    std::lock_guard<std::mutex> l(mu);
    return most_held;
  }
};

struct OpenOnExit {
  WriteGate& gate;
  ~OpenOnExit() { gate.Open(); }
};

// The controller in-process on env_'s cluster, its status writes going
// through `gate`.
std::unique_ptr<kube::Controller> GatedController(KubeEnv& env, kube::ControllerOptions opts, WriteGate* gate,
                                                  server::Logger* log) {
  auto cfg = kube::LoadKubeconfig(env.k8s->kubeconfig());
  if (!cfg.ok()) return nullptr;
  opts.before_status_write = [gate](const std::string&, const std::string& name, const std::string& type) {
    gate->Hook(name, type);
  };
  return std::make_unique<kube::Controller>(std::move(cfg).value(), opts, log, [] {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  });
}

// run-0 .. run-3 (1 GPU each) fill kPool's 4 GPUs.
bool FillPool(KubeEnv& env) {
  for (int i = 0; i < 4; ++i)
    if (!env.Create("load", "run-" + std::to_string(i), "q", 1).empty()) return false;
  return WaitFor(
      [&] {
        for (int i = 0; i < 4; ++i)
          if (!Reserved(env.Workload("load", "run-" + std::to_string(i)))) return false;
        return true;
      },
      kWait);
}

// A started controller with one background writer (and 4 writers) whose
// status writes go through `gate`, on a pool its four run-* Workloads fill;
// null when any of that fails. The gate must hold nothing until then.
std::unique_ptr<kube::Controller> OneBackgroundWriterOnAFullPool(KubeEnv& env, WriteGate* gate,
                                                                 server::Logger* log) {
  kube::ControllerOptions opts;
  opts.writers = 4;
  opts.background_writers = 1;
  auto ctl = GatedController(env, opts, gate, log);
  if (ctl == nullptr || !ctl->Start(30000).ok() || !FillPool(env)) return nullptr;
  return ctl;
}

// Pending explanations cannot hold back admissions: they (and Events) are
// written by at most `background_writers` writers at once, and an admission
// takes any other writer; Events beyond `max_queued_events` are dropped. The
// hook holds every pending explanation write (but the next head's) until the
// end of the test: with all writers stuck in explanations, the admission
// after a release would never be written.
TEST_F(KubeFaults, kube_AdmissionsAreNotHeldBehindPendingExplanations) {
  ASSERT_EQ(env_.Apply(kPool), "");
  server::Logger log(server::Logger::Format::kLogfmt, server::LogLevel::kWarn);
  WriteGate gate;
  // wait-0 is the next head: its own key must not stall.
  gate.hold = [](const std::string& name, const std::string& type) {
    return type == "pending" && name != "wait-0";
  };
  kube::ControllerOptions opts;
  opts.writers = 4;
  opts.background_writers = 2;
  opts.max_queued_events = 1;
  auto ctl = GatedController(env_, opts, &gate, &log);
  ASSERT_NE(ctl, nullptr);
  OpenOnExit open_on_exit{gate};
  ASSERT_TRUE(ctl->Start(30000).ok());
  ASSERT_TRUE(FillPool(env_));
  for (int i = 0; i < 6; ++i) ASSERT_EQ(env_.Create("load", "wait-" + std::to_string(i), "q", 1), "");
  // Explanations for all six are handed to the writers; those the hook holds
  // (five) fill the background writers.
  ASSERT_TRUE(WaitFor([&] { return gate.Held() >= 2 && ctl->stats().pending_explanations >= 6; }, kWait));
  ASSERT_EQ(env_.Finish("load", "run-0"), "");
  EXPECT_TRUE(WaitFor([&] { return Reserved(env_.Workload("load", "wait-0")); }, kWait))
      << env_.Workload("load", "wait-0").dump(1);
  EXPECT_EQ(gate.MostHeld(), 2) << "more pending explanations written at once than background_writers";
  // Events are posted by the background writers too: with both held, the
  // admission's two Events (QuotaReserved, Admitted) overflow a queue of one.
  EXPECT_TRUE(WaitFor([&] { return ctl->stats().events_dropped >= 1; }, kWait));
  for (int i = 1; i < 6; ++i) EXPECT_FALSE(Reserved(env_.Workload("load", "wait-" + std::to_string(i))));
}

// Queue statuses are not held behind pending explanations: the background
// writers take them first. One background writer is held by the hook on the
// ClusterQueue's status write that follows wait-0's creation; meanwhile
// wait-1..4 get explanations, and the ClusterQueue's next status (5 pending)
// waits for the one in flight. Once the hook lets go, that status is
// written before any of the four explanations. Before queue statuses had a
// lane of their own, they waited in the explanations' FIFO and came after
// them (in the Kueue harness, the ClusterQueue counts lagged the last
// finish by 20 s: docs/performance.md, "The harness's floor").
TEST_F(KubeFaults, kube_QueueStatusIsNotHeldBehindPendingExplanations) {
  ASSERT_EQ(env_.Apply(kPool), "");
  server::Logger log(server::Logger::Format::kLogfmt, server::LogLevel::kWarn);
  WriteGate gate;
  std::atomic<bool> armed{false};
  std::mutex order_mu;
  std::vector<std::string> order;  // writes after the held one: "queue:NAME" or "pending:NAME"
  bool held_once = false;
  gate.hold = [&](const std::string& name, const std::string& type) {
    std::lock_guard<std::mutex> l(order_mu);
    if (held_once) order.push_back(type + ":" + name);
    if (!armed || held_once || type != "queue" || name != "pool") return false;
    held_once = true;
    return true;
  };
  auto ctl = OneBackgroundWriterOnAFullPool(env_, &gate, &log);
  ASSERT_NE(ctl, nullptr);
  OpenOnExit open_on_exit{gate};
  ASSERT_TRUE(WaitFor(
      [&] {
        Json s = env_.Get("clusterqueues.kueue.x-k8s.io", "", "pool")["status"];
        return s.value("reservingWorkloads", 0) == 4 && s.value("pendingWorkloads", -1) == 0;
      },
      kWait));
  armed = true;
  ASSERT_EQ(env_.Create("load", "wait-0", "q", 1), "");
  ASSERT_TRUE(WaitFor([&] { return gate.Held() == 1; }, kWait))
      << "the ClusterQueue's status was not written";
  const uint64_t explained = ctl->stats().pending_explanations;
  const uint64_t staged = ctl->stats().queue_statuses_staged;
  for (int i = 1; i < 5; ++i) ASSERT_EQ(env_.Create("load", "wait-" + std::to_string(i), "q", 1), "");
  // The four explanations and both queues' next statuses are handed over.
  ASSERT_TRUE(WaitFor(
      [&] {
        return ctl->stats().pending_explanations >= explained + 4 &&
               ctl->stats().queue_statuses_staged >= staged + 2;
      },
      kWait));
  gate.Open();
  ASSERT_TRUE(WaitFor(
      [&] {
        Json s = env_.Get("clusterqueues.kueue.x-k8s.io", "", "pool")["status"];
        return s.value("pendingWorkloads", 0) == 5;
      },
      kWait));
  std::lock_guard<std::mutex> l(order_mu);
  auto pool = std::find(order.begin(), order.end(), "queue:pool");
  ASSERT_NE(pool, order.end()) << "no second ClusterQueue status write";
  for (auto it = order.begin(); it != pool; ++it)
    EXPECT_NE(it->rfind("pending:wait-", 0), 0u) << "explanation written before the queue's status: " << *it;
}

// A pending explanation replaced by an admission before it was written is
// never written, and neither is its Pending Event. One background writer,
// held by the hook on another Workload's explanation, keeps wl-y's
// explanation waiting; wl-y (higher priority) is admitted into the quota
// run-0 frees, which replaces it. After the hook lets go, wl-y's admission
// Events are posted and no Pending Event for wl-y is.
TEST_F(KubeFaults, kube_ExplanationReplacedBeforeItsWriteHasNoEvent) {
  ASSERT_EQ(env_.Apply(kPool), "");
  server::Logger log(server::Logger::Format::kLogfmt, server::LogLevel::kWarn);
  WriteGate gate;
  gate.hold = [](const std::string& name, const std::string& type) {
    return type == "pending" && name == "hold";
  };
  auto ctl = OneBackgroundWriterOnAFullPool(env_, &gate, &log);
  ASSERT_NE(ctl, nullptr);
  OpenOnExit open_on_exit{gate};
  ASSERT_EQ(env_.Create("load", "hold", "q", 1), "");
  ASSERT_TRUE(WaitFor([&] { return gate.Held() == 1; }, kWait));
  const uint64_t before = ctl->stats().pending_explanations;
  ASSERT_EQ(env_.Create("load", "wl-y", "q", 1, /*priority=*/10), "");
  ASSERT_TRUE(WaitFor([&] { return ctl->stats().pending_explanations > before; }, kWait));
  ASSERT_EQ(env_.Finish("load", "run-0"), "");
  ASSERT_TRUE(WaitFor([&] { return Reserved(env_.Workload("load", "wl-y")); }, kWait));
  gate.Open();
  std::set<std::string> reasons;
  EXPECT_TRUE(WaitFor(
      [&] {
        auto ev = env_.k8s->Kubectl({"get", "events", "-n", "load", "-o", "json"});
        if (!ev.ok()) return false;
        reasons.clear();
        const Json list = Json::parse(*ev);
        for (const Json& e : list["items"])
          if (e["involvedObject"].value("name", "") == "wl-y") reasons.insert(e.value("reason", ""));
        return reasons.count("Admitted") > 0;
      },
      kWait))
      << "events posted " << ctl->stats().events_written << ", dropped " << ctl->stats().events_dropped;
  EXPECT_EQ(reasons.count("Pending"), 0u) << "an Event for an explanation that was never written";
  EXPECT_FALSE(Reserved(env_.Workload("load", "hold")));
}

// kill -9 between a preemption and the victim letting go: after the restart
// the victim (Evicted, still holding its quota) is evicting again in the
// engine, so no second victim is chosen, and the preemptor is admitted once
// the victim's side clears its reservation.
TEST_F(KubeFaults, kube_RestartBetweenEvictionAndRelease) {
  ASSERT_EQ(env_.Apply(R"(apiVersion: v1
kind: Namespace
metadata: {name: prio}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: gpu}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: prio}
spec:
  namespaceSelector: {}
  preemption: {withinClusterQueue: LowerPriority}
  resourceGroups:
  - coveredResources: [cpu, nvidia.com/gpu]
    flavors:
    - name: gpu
      resources:
      - {name: cpu, nominalQuota: "8"}
      - {name: nvidia.com/gpu, nominalQuota: "2"}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: q, namespace: prio}
spec: {clusterQueue: prio}
)"),
            "");
  StartArteld();
  ASSERT_EQ(env_.Create("prio", "low-1", "q", 1, 0), "");
  ASSERT_EQ(env_.Create("prio", "low-2", "q", 1, 0), "");
  ASSERT_TRUE(WaitFor(
      [&] { return Reserved(env_.Workload("prio", "low-1")) && Reserved(env_.Workload("prio", "low-2")); },
      kWait));
  ASSERT_EQ(env_.Create("prio", "high", "q", 1, 10), "");
  std::string victim, other;
  ASSERT_TRUE(WaitFor(
      [&] {
        for (const char* n : {"low-1", "low-2"})
          if (IsTrue(env_.Workload("prio", n), "Evicted")) victim = n;
        return !victim.empty();
      },
      kWait));
  other = victim == "low-1" ? "low-2" : "low-1";
  env_.arteld->Kill(SIGKILL);
  StartArteld();
  // The engine holds the victim as evicting again (not as a fresh admission).
  EXPECT_TRUE(WaitFor(
      [&] {
        HttpResult r = env_.arteld->Get("/api/v1/namespaces/prio/workloads/" + victim);
        return r.json()["status"].value("phase", "") == "Evicting";
      },
      kWait))
      << env_.arteld->log();
  ASSERT_EQ(env_.ClearReservation("prio", victim), "");
  ASSERT_TRUE(WaitFor([&] { return Reserved(env_.Workload("prio", "high")); }, kWait)) << env_.arteld->log();
  Json o = env_.Workload("prio", other);
  EXPECT_TRUE(Reserved(o)) << o.dump(1);
  EXPECT_FALSE(IsTrue(o, "Evicted")) << o.dump(1);
  EXPECT_LE(ReservedGpus(env_.Workloads()), 2 * core::kMilli);
}

}  // namespace
}  // namespace artel::testing
