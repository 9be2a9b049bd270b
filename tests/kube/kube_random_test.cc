// The randomized comparison of issue 11 §5: one random sequence of
// operations (Workloads submitted with random teams, sizes and priorities;
// admitted ones finished) goes through arteld's Kubernetes mode on a real
// control plane; after each step the admitted, pending and preempted sets
// read from the cluster are recorded as that step's expectations of a
// Scenario, which then runs through the scenario runner (`artel test`, the
// simulator on the same core). The scenario passes only if the simulator
// makes the same decisions at every step.
//
// The controller side plays Kueue's job framework for evictions (it clears
// the reservation of every evicted Workload, as a job does once its pods are
// gone); the simulator completes evictions at once. Workloads of one step are
// created within one second and listed in the scenario in the controller's
// own order (creationTimestamp, then uid), and each step starts in a later
// second than the previous one, so that both sides see the same FIFO order.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <random>
#include <tuple>

#include "controller_env.h"

namespace artel::testing {
namespace {

constexpr int kWait = 30000;

std::string Name(const Json& w) { return w["metadata"].value("name", ""); }

std::string YamlList(const std::set<std::string>& names) {
  std::string s = "[";
  for (const std::string& n : names) s += (s.size() > 1 ? ", " : "") + n;
  return s + "]";
}

TEST(KubeRandom, kube_ControllerMatchesScenarioRunner) {
  KubeEnv env;
  std::string error;
  ASSERT_TRUE(env.Up(&error)) << error;
  const std::string ex = std::string(ARTEL_SOURCE_DIR) + "/examples/two-teams/";
  // The two-teams queues without the namespace ResourceQuotas (those are core
  // v1 objects the API server enforces on pods; the engine does not read
  // them in Kubernetes mode).
  const std::vector<std::string> files = {"namespaces.yaml", "resource-flavor.yaml", "cluster-queues.yaml",
                                          "local-queues.yaml"};
  for (const std::string& f : files) ASSERT_TRUE(env.Kubectl({"apply", "-f", ex + f}).ok()) << f;
  ASSERT_TRUE(env.StartArteld({}, &error)) << error;

  unsigned seed = static_cast<unsigned>(std::chrono::steady_clock::now().time_since_epoch().count());
  if (const char* s = std::getenv("ARTEL_TEST_SEED")) seed = static_cast<unsigned>(std::atoll(s));
  SCOPED_TRACE("ARTEL_TEST_SEED=" + std::to_string(seed));
  std::mt19937 rng(seed);

  std::string steps;
  std::set<std::string> preempted_total;
  int next = 0, at = 0;
  time_t last_second = 0;
  // Lets the controller settle, playing the job framework for evictions,
  // and records the step with its expectations. Settled: the cluster shows
  // what arteld's engine holds, nothing is evicting and every pending
  // workload has been tried.
  auto settle_and_record = [&](const std::string& ops) {
    std::set<std::string> preempted, admitted, pending;
    bool settled = WaitFor(
        [&] {
          admitted.clear();
          pending.clear();
          bool evicting = false;
          for (const auto& [k, w] : env.Workloads()) {
            if (IsTrue(w, "Finished")) continue;
            if (Reserved(w) && IsTrue(w, "Evicted")) {
              preempted.insert(Name(w));
              EXPECT_EQ(env.ClearReservation(w["metadata"]["namespace"], Name(w)), "");
              evicting = true;
              continue;
            }
            (Reserved(w) ? admitted : pending).insert(Name(w));
          }
          if (evicting) return false;
          HttpResult r = env.arteld->Get("/api/v1/workloads");
          if (r.status != 200) return false;
          std::set<std::string> e_admitted, e_pending;
          for (const Json& w : r.json().value("items", Json::array())) {
            std::string phase = w["status"].value("phase", "");
            std::string name = w["metadata"].value("name", "");
            if (phase == "Admitted") e_admitted.insert(name);
            if (phase == "Evicting") return false;
            if (phase == "Pending" || phase == "Inactive") {
              if (w["status"].value("pending", Json::object()).value("reason", "") == "NotYetTried")
                return false;
              e_pending.insert(name);
            }
          }
          return e_admitted == admitted && e_pending == pending;
        },
        kWait);
    EXPECT_TRUE(settled) << "did not settle: admitted " << YamlList(admitted) << " pending "
                         << YamlList(pending);
    steps += "    - at: " + std::to_string(at) + "s\n" + ops;
    at += 60;
    steps += "      expect:\n        admitted: " + YamlList(admitted) +
             "\n        pending: " + YamlList(pending) + "\n        preempted: " + YamlList(preempted) + "\n";
    preempted_total.insert(preempted.begin(), preempted.end());
    return settled;
  };
  for (int step = 0; step < 8; ++step) {
    // Finish one admitted workload now and then (a step of its own).
    std::vector<std::string> admitted_now;
    for (const auto& [k, w] : env.Workloads())
      if (Reserved(w)) admitted_now.push_back(k);
    if (!admitted_now.empty() && rng() % 2 == 0) {
      std::string key = admitted_now[rng() % admitted_now.size()];
      std::string ns = key.substr(0, key.find('/')), name = key.substr(key.find('/') + 1);
      ASSERT_EQ(env.Finish(ns, name), "");
      ASSERT_TRUE(settle_and_record("      finish: [" + name + "]\n")) << env.arteld->log();
    }
    // Submit 1-3 workloads, in a later second than everything before, while
    // arteld is paused (SIGSTOP) so that it sees them together, as the
    // scenario runner does.
    ASSERT_TRUE(WaitFor([&] { return time(nullptr) > last_second; }, 5000));
    ASSERT_EQ(kill(env.arteld->pid(), SIGSTOP), 0);
    std::vector<std::string> created;
    int n = 1 + static_cast<int>(rng() % 3);
    for (int i = 0; i < n; ++i) {
      bool a = rng() % 2 == 0;
      std::string ns = a ? "team-a" : "team-b";
      std::string name = std::string(a ? "a-" : "b-") + std::to_string(next++);
      int gpus = 1 + static_cast<int>(rng() % 2);
      int prio = static_cast<int>(rng() % 3) * 10;
      ASSERT_EQ(env.Create(ns, name, "default", gpus, prio), "");
      created.push_back(ns + "/" + name);
    }
    ASSERT_EQ(kill(env.arteld->pid(), SIGCONT), 0);
    // The controller's order of this step's workloads: creationTimestamp, uid.
    std::vector<std::tuple<std::string, std::string, std::string>> order;  // ts, uid, key
    std::map<std::string, Json> wls = env.Workloads();
    for (const std::string& key : created) {
      const Json& w = wls[key];
      order.emplace_back(w["metadata"].value("creationTimestamp", ""), w["metadata"].value("uid", ""), key);
      struct tm tm {};
      strptime(w["metadata"].value("creationTimestamp", "").c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm);
      last_second = std::max(last_second, timegm(&tm));
    }
    std::sort(order.begin(), order.end());
    std::string ops = "      submit:\n";
    for (const auto& [ts, uid, key] : order) {
      const Json& w = wls[key];
      const Json& ps = w["spec"]["podSets"][0];
      std::string gpus =
          ps["template"]["spec"]["containers"][0]["resources"]["requests"].value("nvidia.com/gpu", "0");
      ops += "        - {name: " + Name(w) + ", namespace: " + w["metadata"].value("namespace", "") +
             ", queue: default, priority: " + std::to_string(w["spec"].value("priority", 0)) +
             ", podSets: [{name: main, count: 1, requests: {cpu: \"1\", nvidia.com/gpu: \"" + gpus +
             "\"}}]}\n";
    }
    ASSERT_TRUE(settle_and_record(ops)) << env.arteld->log();
  }

  // The same sequence through the scenario runner.
  std::string scenario = "apiVersion: artel.dev/v1alpha1\nkind: Scenario\nmetadata: {name: kube-random-" +
                         std::to_string(seed) + "}\nspec:\n  config:\n";
  for (const std::string& f : files) scenario += "    - file: " + ex + f + "\n";
  scenario += "  steps:\n" + steps;
  std::string path = env.dir + "/random-scenario.yaml";
  WriteFile(path, scenario, 0644);
  std::string out, err;
  int rc = RunCommand({ARTEL_BIN, "test", path}, {}, &out, &err);
  EXPECT_EQ(rc, 0) << out << err << "\n" << scenario;
  EXPECT_NE(out.find("1 passed, 0 failed"), std::string::npos) << out << err << "\n" << scenario;
  std::cout << "seed " << seed << ": " << next << " workloads, preempted " << YamlList(preempted_total)
            << "\n";
}

}  // namespace
}  // namespace artel::testing
