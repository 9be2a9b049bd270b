// Crash test: while 2,000 submissions are in flight, kill -9 arteld at
// random points five times. After each restart every acknowledged
// submission is present exactly once, nothing is admitted twice (admitted
// usage never exceeds the cohort's 4 GPUs), and each queue's quota usage
// equals the sum of its admitted workloads.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "harness.h"

namespace artel::testing {
namespace {

constexpr int kTotal = 2000;
constexpr int kThreads = 8;
constexpr int kKills = 5;

struct Shared {
  std::atomic<int> port{0};
  std::mutex mu;
  std::set<std::string> acked;
  std::set<std::string> cancelled;
  std::atomic<int> done{0};
};

// Checks the invariants against the live daemon; returns "" when they hold.
std::string CheckInvariants(const Arteld& d, const std::set<std::string>& acked,
                            const std::set<std::string>& cancelled) {
  auto list = d.Get("/api/v1/workloads");
  if (list.status != 200) return "list failed: " + std::to_string(list.status);
  std::map<std::string, int> seen;
  std::map<std::string, double> admitted_gpus;  // cq -> gpus
  double admitted_total = 0;
  Json items = list.json()["items"];
  for (const auto& w : items) {
    std::string key = w["metadata"].value("namespace", "") + "/" + w["metadata"].value("name", "");
    ++seen[key];
    std::string phase = w["status"].value("phase", "");
    if (phase == "Admitted" || phase == "Running" || phase == "Evicting") {
      double g = 0;
      for (const auto& ps : w["status"]["admission"]["podSets"]) {
        g += std::stod(ps["resourceUsage"].value("nvidia.com/gpu", "0"));
      }
      admitted_gpus[w["status"].value("clusterQueue", "")] += g;
      admitted_total += g;
    }
  }
  for (const auto& [k, n] : seen) {
    if (n != 1) return k + " listed " + std::to_string(n) + " times";
  }
  for (const auto& k : acked) {
    if (!seen.count(k)) {
      return "acknowledged submission " + k + " is missing (of " + std::to_string(seen.size()) +
             " listed; body " + list.body.substr(0, 200) + ")";
    }
  }
  for (const auto& k : cancelled) {
    auto r =
        d.Get("/api/v1/namespaces/" + k.substr(0, k.find('/')) + "/workloads/" + k.substr(k.find('/') + 1));
    if (r.json()["status"].value("phase", "") != "Cancelled")
      return "acknowledged cancel of " + k + " was lost";
  }
  if (admitted_total > 4) return "admitted " + std::to_string(admitted_total) + " GPUs of a 4-GPU cohort";
  Json cqs = d.Get("/api/v1/clusterqueues").json()["items"];
  for (const auto& cq : cqs) {
    double usage = 0;
    for (const auto& r : cq["resources"]) {
      if (r.value("resource", "") == "nvidia.com/gpu") usage += std::stod(r.value("usage", "0"));
    }
    std::string name = cq.value("name", "");
    if (usage != admitted_gpus[name]) {
      return "ClusterQueue " + name + " usage " + std::to_string(usage) + " != admitted " +
             std::to_string(admitted_gpus[name]);
    }
  }
  return "";
}

TEST(CrashTest, KillNineFiveTimesLosesNothingAcknowledged) {
  std::string dir = TempDir("crash");
  WriteFile(dir + "/cluster.yaml", kTwoTeamsManifests);
  Arteld d(dir);
  std::vector<std::string> flags = {"-m", dir + "/cluster.yaml", "--fake-gpus", "4xA100-80GB"};
  ASSERT_TRUE(d.Start(flags));
  Shared s;
  s.port = d.port();

  auto submitter = [&](int t) {
    std::mt19937 rng(t);
    for (int i = t; i < kTotal; i += kThreads) {
      std::string ns = i % 2 ? "team-a" : "team-b";
      std::string name = "c-" + std::to_string(i);
      std::string body = Workload(ns, name, "default", 1 + static_cast<int>(rng() % 2)).dump();
      while (true) {
        int port = s.port.load();
        if (port == 0) {
          std::this_thread::yield();
          continue;
        }
        httplib::Client c("127.0.0.1", port);
        c.set_connection_timeout(2, 0);
        auto r = c.Post("/api/v1/workloads", body, "application/json");
        if (r && (r->status == 201 || r->status == 409)) {
          // 409: an earlier attempt was durable before the crash.
          std::lock_guard<std::mutex> l(s.mu);
          s.acked.insert(ns + "/" + name);
          break;
        }
      }
    }
    ++s.done;
  };
  // Cancels admitted work now and then so that admissions keep happening.
  std::atomic<bool> stop_canceller{false};
  std::thread canceller([&] {
    std::mt19937 rng(99);
    while (!stop_canceller) {
      int port = s.port.load();
      if (port != 0) {
        httplib::Client c("127.0.0.1", port);
        c.set_connection_timeout(2, 0);
        auto r = c.Get("/api/v1/workloads?fieldSelector=status.phase%3DAdmitted");
        if (r && r->status == 200) {
          auto items = Json::parse(r->body, nullptr, false)["items"];
          if (items.is_array() && !items.empty()) {
            const auto& w = items[rng() % items.size()];
            std::string ns = w["metadata"].value("namespace", ""), name = w["metadata"].value("name", "");
            {
              // Only what its submitter saw acknowledged: a retried POST may
              // legitimately re-create a cancelled name.
              std::lock_guard<std::mutex> l(s.mu);
              if (!s.acked.count(ns + "/" + name)) continue;
            }
            auto cr =
                c.Post("/api/v1/namespaces/" + ns + "/workloads/" + name + "/cancel", "", "application/json");
            if (cr && cr->status == 200) {
              std::lock_guard<std::mutex> l(s.mu);
              s.cancelled.insert(ns + "/" + name);
            }
          }
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) threads.emplace_back(submitter, t);

  std::mt19937 rng(7);
  for (int k = 0; k < kKills; ++k) {
    // Kill at a random point of the run: after a random share of the work.
    size_t target = static_cast<size_t>((k + 1) * kTotal / (kKills + 2)) + rng() % 150;
    ASSERT_TRUE(WaitFor(
        [&] {
          std::lock_guard<std::mutex> l(s.mu);
          return s.acked.size() >= target;
        },
        60000));
    s.port = 0;
    d.Kill(SIGKILL);
    std::set<std::string> acked, cancelled;
    {
      std::lock_guard<std::mutex> l(s.mu);
      acked = s.acked;
      cancelled = s.cancelled;
    }
    ASSERT_TRUE(d.Start(flags)) << d.log();
    // The list and the queue views are two requests and the loop may admit
    // in between: a true violation persists, a race resolves on a re-read.
    std::string err;
    WaitFor([&] { return (err = CheckInvariants(d, acked, cancelled)).empty(); }, 3000);
    EXPECT_EQ(err, "") << "after kill " << k + 1;
    s.port = d.port();
  }
  for (auto& t : threads) t.join();
  stop_canceller = true;
  canceller.join();
  ASSERT_TRUE(WaitFor([&] { return CheckInvariants(d, s.acked, s.cancelled).empty(); }, 10000))
      << CheckInvariants(d, s.acked, s.cancelled);
  EXPECT_EQ(s.acked.size(), static_cast<size_t>(kTotal));
  EXPECT_TRUE(d.Stop());
  std::filesystem::remove_all(dir);
}

// A batch (POST /api/v1/workloads:batch) is acknowledged only once its one
// journal commit is durable: kill -9 right after each answer loses nothing.
TEST(CrashTest, BatchAcknowledgedSurvivesKillNine) {
  std::string dir = TempDir("crash-batch");
  WriteFile(dir + "/cluster.yaml", kTwoTeamsManifests);
  Arteld d(dir);
  std::vector<std::string> flags = {"-m", dir + "/cluster.yaml", "--fake-gpus", "4xA100-80GB"};
  ASSERT_TRUE(d.Start(flags));
  std::set<std::string> acked;
  for (int round = 0; round < 3; ++round) {
    Json items = Json::array();
    for (int i = 0; i < 300; ++i) {
      std::string name = "b" + std::to_string(round) + "-" + std::to_string(i);
      items.push_back(Workload(i % 2 ? "team-a" : "team-b", name, "default", 1, {"true"}));
    }
    auto r = d.Post("/api/v1/workloads:batch", Json{{"items", items}}.dump());
    ASSERT_EQ(r.status, 200) << r.body;
    d.Kill(SIGKILL);
    const Json answers = r.json()["items"];  // a copy: r.json() is a temporary
    ASSERT_EQ(answers.size(), 300u) << r.body;
    for (const auto& a : answers) {
      ASSERT_EQ(a.value("status", 0), 201) << a.dump();
      acked.insert(a["object"]["metadata"].value("namespace", "") + "/" +
                   a["object"]["metadata"].value("name", ""));
    }
    ASSERT_TRUE(d.Start(flags)) << d.log();
    std::set<std::string> seen;
    const Json listed = d.Get("/api/v1/workloads").json()["items"];
    ASSERT_TRUE(listed.is_array());
    for (const auto& w : listed) {
      seen.insert(w["metadata"].value("namespace", "") + "/" + w["metadata"].value("name", ""));
    }
    for (const auto& k : acked) EXPECT_TRUE(seen.count(k)) << k << " acknowledged, lost after kill -9";
  }
  EXPECT_EQ(acked.size(), 900u);
  EXPECT_TRUE(d.Stop());
  std::filesystem::remove_all(dir);
}

// A crash after a workload's pods started but before the start was
// journaled (failpoint start-before-journal): the restarted daemon must find
// the running pod and adopt it, not start the workload a second time. The
// pod appends a line to `runs` when it starts, then waits on a FIFO.
TEST(CrashTest, PodsStartedButNotJournaledAreAdoptedNotStartedTwice) {
  std::string dir = TempDir("startcrash");
  WriteFile(dir + "/cluster.yaml", kTwoTeamsManifests);
  const std::string runs = dir + "/runs", go = dir + "/go";
  ASSERT_EQ(mkfifo(go.c_str(), 0600), 0);
  ASSERT_EQ(chmod(go.c_str(), 0666), 0);  // the pod runs as its namespace's user
  auto starts = [&] {
    std::string text = ReadFile(runs);
    return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
  };
  Arteld d(dir);
  std::vector<std::string> flags = {"-m", dir + "/cluster.yaml", "--fake-gpus", "4xA100-80GB"};
  setenv("ARTEL_FAILPOINT", "start-before-journal", 1);
  bool started = d.Start(flags);
  unsetenv("ARTEL_FAILPOINT");
  ASSERT_TRUE(started) << d.log();
  Json body = Workload("team-a", "once", "default", 1,
                       {"/bin/sh", "-c", "echo started >> " + runs + "; read line < " + go});
  // The daemon may die before the reply is written: the submission is
  // committed before the loop can admit it, so it is there after a restart.
  (void)d.Post("/api/v1/workloads", body.dump());
  int code = 0;
  ASSERT_TRUE(d.WaitExit(30000, &code)) << d.log();
  EXPECT_EQ(code, 86) << d.log();
  ASSERT_TRUE(WaitFor([&] { return starts() == 1; }, 10000));

  ASSERT_TRUE(d.Start(flags)) << d.log();
  ASSERT_TRUE(WaitFor([&] { return d.Phase("team-a", "once") == "Running"; }, 20000))
      << d.Phase("team-a", "once") << "\n"
      << d.log();
  EXPECT_NE(d.log().find("found pods started but not journaled"), std::string::npos) << d.log();
  {
    std::ofstream release(go);  // opens once a pod waits on the FIFO
    release << "go\n";
  }
  ASSERT_TRUE(WaitFor([&] { return d.Phase("team-a", "once") == "Succeeded"; }, 20000))
      << d.Phase("team-a", "once") << "\n"
      << d.log();
  EXPECT_EQ(starts(), 1) << "the workload was started twice";

  // The recovered start was journaled: another restart agrees.
  ASSERT_TRUE(d.Stop());
  ASSERT_TRUE(d.Start(flags)) << d.log();
  EXPECT_EQ(d.Phase("team-a", "once"), "Succeeded");
  EXPECT_EQ(starts(), 1);
  EXPECT_TRUE(d.Stop());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace artel::testing
