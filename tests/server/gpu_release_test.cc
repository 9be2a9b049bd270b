// A GPU is handed out again only after its previous pods are gone (issue 10,
// section 3), against the real arteld with fake GPUs:
// - a cancelled pod that ignores SIGTERM keeps its GPUs (and the name) until
//   it is SIGKILLed at the end of its grace period;
// - after kill -9 during such a cancel, the restarted daemon finds the pod,
//   SIGKILLs it at the journaled deadline, and holds its GPUs until then;
// - a pod that exits at once, in the window between its start and the
//   journaled start, runs exactly once across the crash (start ids);
// - finished workloads keep retries, startedAt, admittedAt and pods across
//   restarts; `artel run --wait` exits with the workload's exit code.
//
// The old pod writes heartbeats; the new one records, when it starts,
// whether the old pod's process group still exists and how many beats
// there were. Nothing sleeps to wait: every wait polls with a deadline.

#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "harness.h"
#include "store/store.h"

namespace artel::testing {
namespace {

const std::vector<std::string> Flags(const std::string& dir, const std::string& gpus = "2xA100-80GB") {
  return {"-m", dir + "/cluster.yaml", "--fake-gpus", gpus};
}

// True while a live (not zombie) process is in process group `pgid`.
bool GroupAlive(int pgid) {
  if (pgid <= 0) return false;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return false;
  bool alive = false;
  while (dirent* de = readdir(proc)) {
    char* end = nullptr;
    long pid = std::strtol(de->d_name, &end, 10);
    if (end == de->d_name || *end != '\0' || pid <= 0) continue;
    std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
    size_t paren = stat.rfind(')');
    if (paren == std::string::npos || paren + 2 >= stat.size()) continue;
    char state = stat[paren + 2];
    long ppid = 0, pgrp = 0;
    if (sscanf(stat.c_str() + paren + 3, " %ld %ld", &ppid, &pgrp) != 2) continue;
    if (pgrp == pgid && state != 'Z' && state != 'X') {
      alive = true;
      break;
    }
  }
  closedir(proc);
  return alive;
}

int Lines(const std::string& path) {
  std::string text = ReadFile(path);
  return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// A pod that ignores SIGTERM (the command and everything it starts) and
// appends a heartbeat line to `hb` every 20 ms.
std::vector<std::string> StubbornPod(const std::string& hb) {
  return {"/bin/sh", "-c", "trap '' TERM; while :; do echo beat >> " + hb + "; sleep 0.02; done"};
}

// A pod that records whether a live (not zombie) process of group `pgid`
// is left, and how many heartbeats `hb` holds, at the moment it starts.
// (Zombies do not count: on some hosts nobody reaps orphans.)
std::vector<std::string> ProbePod(int pgid, const std::string& hb, const std::string& out) {
  return {"/bin/sh", "-c",
          "s=gone; for f in /proc/[0-9]*/stat; do read -r l < \"$f\" 2>/dev/null || continue; "
          "set -- ${l##*\") \"}; [ \"$3\" = " +
              std::to_string(pgid) + " ] && [ \"$1\" != Z ] && s=alive; done; " + "echo \"$s $(wc -l < " +
              hb + ")\" > " + out};
}

class GpuReleaseTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = TempDir("gpurelease");
    WriteFile(dir_ + "/cluster.yaml", kTwoTeamsManifests);
    hb_ = dir_ + "/hb";
    probe_ = dir_ + "/probe";
  }
  void TearDown() override {
    if (pgid_ > 0 && GroupAlive(pgid_)) kill(-pgid_, SIGKILL);  // never leave a pod behind
    std::filesystem::remove_all(dir_);
  }

  // Submits the stubborn pod as team-a/`name` on both GPUs with a grace
  // period of `grace_s`, waits until it runs and beats, and returns its
  // process group.
  int StartStubborn(Arteld& d, const std::string& name, int grace_s) {
    Json body = Workload("team-a", name, "default", 2, StubbornPod(hb_));
    body["spec"]["terminationGracePeriodSeconds"] = grace_s;
    HttpResult r = d.Post("/api/v1/workloads", body.dump());
    EXPECT_EQ(r.status, 201) << r.body;
    int pgid = 0;
    EXPECT_TRUE(WaitFor(
        [&] {
          Json w = d.Get("/api/v1/namespaces/team-a/workloads/" + name).json();
          if (w["status"].value("phase", "") != "Running") return false;
          pgid = w["status"]["pods"][0].value("pid", 0);
          return pgid > 0 && Lines(hb_) >= 1;
        },
        20000))
        << d.log();
    pgid_ = pgid;
    return pgid;
  }

  std::string dir_, hb_, probe_;
  int pgid_ = 0;
};

// D5 (no crash): another team's workload that needs the same GPUs starts
// only once every process of the cancelled pod is gone.
TEST_F(GpuReleaseTest, CancelledPodHoldsItsGpusUntilItsProcessesAreGone) {
  Arteld d(dir_);
  ASSERT_TRUE(d.Start(Flags(dir_))) << d.log();
  int pgid = StartStubborn(d, "old", 2);
  ASSERT_GT(pgid, 0);

  HttpResult c = d.Post("/api/v1/namespaces/team-a/workloads/old/cancel", "");
  ASSERT_EQ(c.status, 200) << c.body;
  EXPECT_EQ(c.json()["status"].value("phase", ""), "Terminating") << c.body;
  HttpResult n =
      d.Post("/api/v1/workloads", Workload("team-b", "new", "default", 2, ProbePod(pgid, hb_, probe_)).dump(),
             kTeamBToken);
  ASSERT_EQ(n.status, 201) << n.body;
  // While the old pod runs, its GPUs and quota stay held.
  EXPECT_TRUE(GroupAlive(pgid));
  EXPECT_EQ(d.Phase("team-b", "new"), "Pending");
  Json gpus = d.Get("/api/v1/gpus").json();
  for (const auto& g : gpus["items"]) EXPECT_EQ(g.value("workload", ""), "team-a/old") << gpus.dump();

  ASSERT_TRUE(WaitFor([&] { return d.Phase("team-b", "new") == "Succeeded"; }, 20000))
      << d.Phase("team-b", "new") << "\n"
      << d.log();
  EXPECT_FALSE(GroupAlive(pgid));
  std::string probe = Trim(ReadFile(probe_));
  EXPECT_EQ(probe.substr(0, 4), "gone") << "the new pod started while the old one ran: " << probe;
  EXPECT_EQ(probe, "gone " + std::to_string(Lines(hb_))) << "heartbeats after the new pod started";
  EXPECT_EQ(d.Phase("team-a", "old"), "Cancelled");
  EXPECT_TRUE(d.Stop()) << d.log();
}

// D11: the name of a cancelled workload whose pods still stop is taken (409,
// "still stopping") until they are gone; then it may be submitted again and
// the new workload runs normally.
TEST_F(GpuReleaseTest, ResubmitWhileStoppingIsRefusedUntilThePodsAreGone) {
  Arteld d(dir_);
  ASSERT_TRUE(d.Start(Flags(dir_))) << d.log();
  ASSERT_GT(StartStubborn(d, "reuse", 2), 0);
  ASSERT_EQ(d.Post("/api/v1/namespaces/team-a/workloads/reuse/cancel", "").status, 200);

  Json again = Workload("team-a", "reuse", "default", 2, {"/bin/sh", "-c", "exit 0"});
  HttpResult r = d.Post("/api/v1/workloads", again.dump());
  EXPECT_EQ(r.status, 409) << r.body;
  EXPECT_NE(r.body.find("still stopping"), std::string::npos) << r.body;
  EXPECT_EQ(d.Phase("team-a", "reuse"), "Terminating");

  ASSERT_TRUE(WaitFor([&] { return d.Phase("team-a", "reuse") == "Cancelled"; }, 20000)) << d.log();
  EXPECT_FALSE(GroupAlive(pgid_));
  r = d.Post("/api/v1/workloads", again.dump());
  ASSERT_EQ(r.status, 201) << r.body;
  ASSERT_TRUE(WaitFor([&] { return d.Phase("team-a", "reuse") == "Succeeded"; }, 20000))
      << d.Phase("team-a", "reuse") << "\n"
      << d.log();
  Json w = d.Get("/api/v1/namespaces/team-a/workloads/reuse").json();
  EXPECT_EQ(w["status"].value("exitCode", -1), 0) << w.dump();
  EXPECT_EQ(w["status"]["pods"][0].value("exitCode", -1), 0) << w.dump();
  EXPECT_TRUE(d.Stop()) << d.log();
}

// D5 (with a crash): kill -9 during the cancel. The restarted daemon finds
// the pod, SIGKILLs it at the journaled deadline, and hands its GPUs to
// another workload only after that.
TEST_F(GpuReleaseTest, KillNineDuringCancelStillKillsThePodAtItsDeadlineAndHoldsItsGpus) {
  Arteld d(dir_);
  ASSERT_TRUE(d.Start(Flags(dir_))) << d.log();
  int pgid = StartStubborn(d, "old", 3);
  ASSERT_GT(pgid, 0);
  ASSERT_EQ(d.Post("/api/v1/namespaces/team-a/workloads/old/cancel", "").status, 200);
  auto cancelled = std::chrono::steady_clock::now();
  d.Kill(SIGKILL);
  ASSERT_TRUE(GroupAlive(pgid)) << "the pod ignores SIGTERM and must outlive the daemon";

  ASSERT_TRUE(d.Start(Flags(dir_))) << d.log();
  EXPECT_EQ(d.Phase("team-a", "old"), "Terminating");
  ASSERT_EQ(d.Post("/api/v1/workloads",
                   Workload("team-b", "new", "default", 2, ProbePod(pgid, hb_, probe_)).dump(), kTeamBToken)
                .status,
            201);
  // SIGKILL at the journaled deadline (3 s after the cancel), not never.
  ASSERT_TRUE(WaitFor([&] { return !GroupAlive(pgid); }, 15000)) << "the cancelled pod was never killed\n"
                                                                 << d.log();
  auto gone = std::chrono::steady_clock::now();
  EXPECT_GE(std::chrono::duration_cast<std::chrono::milliseconds>(gone - cancelled).count(), 2500)
      << "killed before its grace period ended";
  ASSERT_TRUE(WaitFor([&] { return d.Phase("team-b", "new") == "Succeeded"; }, 20000))
      << d.Phase("team-b", "new") << "\n"
      << d.log();
  std::string probe = Trim(ReadFile(probe_));
  EXPECT_EQ(probe.substr(0, 4), "gone") << "the GPUs were handed out while the old pod ran: " << probe;
  EXPECT_EQ(probe, "gone " + std::to_string(Lines(hb_)));
  EXPECT_EQ(d.Phase("team-a", "old"), "Cancelled");
  // And the next restart agrees.
  ASSERT_TRUE(d.Stop()) << d.log();
  ASSERT_TRUE(d.Start(Flags(dir_))) << d.log();
  EXPECT_EQ(d.Phase("team-a", "old"), "Cancelled");
  EXPECT_EQ(d.Phase("team-b", "new"), "Succeeded");
  EXPECT_TRUE(d.Stop()) << d.log();
}

// The same for an eviction: kill -9 while a preempted pod that outlives
// SIGTERM stops. The restarted daemon keeps the victim's GPUs held until the
// pod is SIGKILLed at its journaled deadline; only then does the preemptor run.
TEST_F(GpuReleaseTest, KillNineDuringEvictionHoldsTheVictimsGpusUntilItsPodIsGone) {
  Arteld d(dir_);
  const std::vector<std::string> flags = Flags(dir_, "4xA100-80GB");
  ASSERT_TRUE(d.Start(flags)) << d.log();
  const std::string done = dir_ + "/done", term = dir_ + "/term";
  // team-a borrows team-b's two GPUs; once the test is over it exits at once.
  Json body = Workload("team-a", "borrower", "default", 4,
                       {"/bin/sh", "-c",
                        "[ -e " + done + " ] && exit 0; trap 'echo term >> " + term +
                            "' TERM; while :; do echo beat >> " + hb_ + "; sleep 0.02; done"});
  body["spec"]["terminationGracePeriodSeconds"] = 3;
  ASSERT_EQ(d.Post("/api/v1/workloads", body.dump()).status, 201);
  int pgid = 0;
  ASSERT_TRUE(WaitFor(
      [&] {
        Json w = d.Get("/api/v1/namespaces/team-a/workloads/borrower").json();
        if (w["status"].value("phase", "") != "Running") return false;
        pgid = w["status"]["pods"][0].value("pid", 0);
        return pgid > 0 && Lines(hb_) >= 1;
      },
      20000))
      << d.log();
  pgid_ = pgid;
  // team-b reclaims its GPUs: the borrower is evicted, its pod ignores TERM.
  std::vector<std::string> probe = ProbePod(pgid, hb_, probe_);
  probe[2] += "; touch " + done;
  ASSERT_EQ(d.Post("/api/v1/workloads", Workload("team-b", "owner", "default", 2, probe).dump(), kTeamBToken)
                .status,
            201);
  // SIGTERM is sent once the eviction is journaled: the pod notes it, and goes on.
  ASSERT_TRUE(WaitFor([&] { return Lines(term) >= 1; }, 10000)) << d.log();
  EXPECT_EQ(d.Phase("team-a", "borrower"), "Evicting");
  d.Kill(SIGKILL);
  ASSERT_TRUE(GroupAlive(pgid));

  ASSERT_TRUE(d.Start(flags)) << d.log();
  EXPECT_EQ(d.Phase("team-a", "borrower"), "Evicting");
  ASSERT_TRUE(WaitFor([&] { return !GroupAlive(pgid); }, 15000)) << "the evicted pod was never killed\n"
                                                                 << d.log();
  ASSERT_TRUE(WaitFor([&] { return d.Phase("team-b", "owner") == "Succeeded"; }, 20000))
      << d.Phase("team-b", "owner") << "\n"
      << d.log();
  std::string seen = Trim(ReadFile(probe_));
  EXPECT_EQ(seen.substr(0, 4), "gone") << "the GPUs were handed out while the evicted pod ran: " << seen;
  // Requeued as it was: it runs again (and, the test being over, exits).
  ASSERT_TRUE(WaitFor([&] { return d.Phase("team-a", "borrower") == "Succeeded"; }, 20000))
      << d.Phase("team-a", "borrower") << "\n"
      << d.log();
  EXPECT_TRUE(d.Stop()) << d.log();
}

// After a restart, a pod being cancelled is tracked again: a graceful stop
// with --stop-workloads-on-exit stops it too.
TEST_F(GpuReleaseTest, RecoveredStoppingPodIsStoppedAtShutdown) {
  Arteld d(dir_);
  ASSERT_TRUE(d.Start(Flags(dir_))) << d.log();
  int pgid = StartStubborn(d, "old", 2);
  ASSERT_GT(pgid, 0);
  ASSERT_EQ(d.Post("/api/v1/namespaces/team-a/workloads/old/cancel", "").status, 200);
  d.Kill(SIGKILL);
  std::vector<std::string> flags = Flags(dir_);
  flags.push_back("--stop-workloads-on-exit");
  ASSERT_TRUE(d.Start(flags)) << d.log();
  EXPECT_EQ(d.Phase("team-a", "old"), "Terminating");
  ASSERT_TRUE(GroupAlive(pgid));
  EXPECT_TRUE(d.Stop()) << d.log();
  EXPECT_FALSE(GroupAlive(pgid)) << "the cancelled pod survived a graceful stop";
}

// D8: the pod exits at once, and arteld dies right after starting it and
// before journaling the start (failpoint start-before-journal), or right
// after journaling the start id and before forking (start-before-fork).
// Either way the pod runs exactly once.
TEST_F(GpuReleaseTest, FastPodRunsExactlyOnceAcrossACrashAroundItsStart) {
  const std::vector<std::pair<const char*, int>> rounds = {{"start-before-journal", 6},
                                                           {"start-before-fork", 2}};
  int n = 0;
  for (const auto& [failpoint, times] : rounds) {
    for (int i = 0; i < times; ++i, ++n) {
      SCOPED_TRACE(std::string(failpoint) + " #" + std::to_string(i));
      Arteld d(dir_);
      setenv("ARTEL_FAILPOINT", failpoint, 1);
      bool started = d.Start(Flags(dir_));
      unsetenv("ARTEL_FAILPOINT");
      ASSERT_TRUE(started) << d.log();
      const std::string runs = dir_ + "/runs-" + std::to_string(n);
      const std::string name = "fast-" + std::to_string(n);
      (void)d.Post("/api/v1/workloads",
                   Workload("team-a", name, "default", 1, {"/bin/sh", "-c", "echo x >> " + runs}).dump());
      int code = 0;
      ASSERT_TRUE(d.WaitExit(30000, &code)) << d.log();
      ASSERT_EQ(code, 86) << d.log();
      ASSERT_TRUE(d.Start(Flags(dir_))) << d.log();
      ASSERT_TRUE(WaitFor([&] { return d.Phase("team-a", name) == "Succeeded"; }, 20000))
          << d.Phase("team-a", name) << "\n"
          << d.log();
      EXPECT_EQ(Lines(runs), 1) << "the pod ran " << Lines(runs) << " times";
      ASSERT_TRUE(d.Stop()) << d.log();
    }
  }
}

// D14: a finished workload keeps retries, startedAt, admittedAt and its pods
// across a graceful restart (snapshot) and a kill -9 (journal replay).
TEST_F(GpuReleaseTest, FinishedWorkloadsKeepTheirStatusAcrossRestarts) {
  Arteld d(dir_);
  ASSERT_TRUE(d.Start(Flags(dir_))) << d.log();
  Json failing = Workload("team-a", "flaky", "default", 1, {"/bin/sh", "-c", "exit 3"});
  failing["spec"]["backoffLimit"] = 1;
  ASSERT_EQ(d.Post("/api/v1/workloads", failing.dump()).status, 201);
  ASSERT_EQ(d.Post("/api/v1/workloads",
                   Workload("team-a", "fine", "default", 1, {"/bin/sh", "-c", "exit 0"}).dump())
                .status,
            201);
  ASSERT_TRUE(WaitFor(
      [&] { return d.Phase("team-a", "flaky") == "Failed" && d.Phase("team-a", "fine") == "Succeeded"; },
      20000))
      << d.log();
  auto status = [&](const std::string& name) {
    Json st = d.Get("/api/v1/namespaces/team-a/workloads/" + name).json()["status"];
    st.erase("pending");
    return st;
  };
  Json flaky = status("flaky"), fine = status("fine");
  EXPECT_EQ(flaky.value("retries", 0), 1) << flaky.dump();
  EXPECT_EQ(flaky.value("exitCode", 0), 3) << flaky.dump();
  for (const Json& st : {flaky, fine}) {
    EXPECT_TRUE(st.contains("startedAt")) << st.dump();
    EXPECT_TRUE(st.contains("admittedAt")) << st.dump();
    ASSERT_TRUE(st.contains("pods")) << st.dump();
    EXPECT_EQ(st["pods"].size(), 1u) << st.dump();
  }
  EXPECT_EQ(flaky["pods"][0].value("exitCode", 0), 3);

  ASSERT_TRUE(d.Stop()) << d.log();  // snapshot
  ASSERT_TRUE(d.Start(Flags(dir_))) << d.log();
  EXPECT_EQ(status("flaky"), flaky);
  EXPECT_EQ(status("fine"), fine);
  d.Kill(SIGKILL);  // no snapshot of what follows: a new workload, replayed from the journal
  ASSERT_TRUE(d.Start(Flags(dir_))) << d.log();
  Json later = Workload("team-a", "later", "default", 1, {"/bin/sh", "-c", "exit 0"});
  ASSERT_EQ(d.Post("/api/v1/workloads", later.dump()).status, 201);
  ASSERT_TRUE(WaitFor([&] { return d.Phase("team-a", "later") == "Succeeded"; }, 20000)) << d.log();
  Json later_st = status("later");
  d.Kill(SIGKILL);
  ASSERT_TRUE(d.Start(Flags(dir_))) << d.log();
  EXPECT_EQ(status("flaky"), flaky);
  EXPECT_EQ(status("fine"), fine);
  EXPECT_EQ(status("later"), later_st);
  EXPECT_TRUE(d.Stop()) << d.log();
}

// A journal written by an older arteld (no start ids, no kill deadlines,
// empty cancel records) still recovers: cancelled stays Cancelled, finished
// stays Succeeded, an admitted workload whose journaled pod is gone is
// requeued and runs, a pending one runs.
TEST_F(GpuReleaseTest, OldJournalStillRecovers) {
  const std::string data = dir_ + "/data";
  {
    auto st = store::Store::Open(data);
    ASSERT_TRUE(st.ok()) << st.status().ToString();
    int64_t t = 1700000000000;
    std::vector<store::Record> recs;
    auto add = [&](store::RecordType type, const std::string& key, const Json& payload) {
      store::Record r;
      r.type = type;
      r.time_ms = ++t;
      r.key = key;
      r.payload = payload.is_null() ? std::string() : payload.dump();
      recs.push_back(std::move(r));
    };
    add(store::RecordType::kConfigApplied, "", Json{{"manifests", kTwoTeamsManifests}});
    Json adm = {{"clusterQueue", "team-a"},
                {"podSets",
                 {{{"name", "main"},
                   {"count", 1},
                   {"flavors", {{"nvidia.com/gpu", "a100"}}},
                   {"resourceUsage", {{"nvidia.com/gpu", "1"}}}}}},
                {"admittedAt", t}};
    auto cmd = [&](const std::string& name) {
      return std::vector<std::string>{"/bin/sh", "-c", "echo x >> " + dir_ + "/ran-" + name};
    };
    add(store::RecordType::kWorkloadSubmitted, "team-a/cancelled",
        Workload("team-a", "cancelled", "default", 1, cmd("c")));
    add(store::RecordType::kWorkloadAdmitted, "team-a/cancelled", adm);
    add(store::RecordType::kWorkloadCancelled, "team-a/cancelled", Json());
    add(store::RecordType::kWorkloadSubmitted, "team-a/finished",
        Workload("team-a", "finished", "default", 1, cmd("f")));
    add(store::RecordType::kWorkloadAdmitted, "team-a/finished", adm);
    add(store::RecordType::kWorkloadFinished, "team-a/finished",
        Json{{"exitCode", 0}, {"phase", "Succeeded"}});
    add(store::RecordType::kWorkloadSubmitted, "team-a/gone",
        Workload("team-a", "gone", "default", 1, cmd("g")));
    add(store::RecordType::kWorkloadAdmitted, "team-a/gone", adm);
    add(store::RecordType::kWorkloadStarted, "team-a/gone",
        Json{{"pods", {{{"pod", "main-0"}, {"pid", 0}, {"pgid", 0}, {"exitFile", ""}, {"gpus", {0}}}}},
             {"retries", 0}});
    add(store::RecordType::kWorkloadSubmitted, "team-b/pending",
        Workload("team-b", "pending", "default", 1, cmd("p")));
    auto seqs = (*st)->AppendBatch(recs);
    ASSERT_TRUE(seqs.ok()) << seqs.status().ToString();
  }
  Arteld d(dir_);
  ASSERT_TRUE(d.Start({"--fake-gpus", "2xA100-80GB"})) << d.log();
  EXPECT_EQ(d.Phase("team-a", "cancelled"), "Cancelled");
  EXPECT_EQ(d.Phase("team-a", "finished"), "Succeeded");
  ASSERT_TRUE(WaitFor(
      [&] { return d.Phase("team-a", "gone") == "Succeeded" && d.Phase("team-b", "pending") == "Succeeded"; },
      20000))
      << d.log();
  EXPECT_EQ(Lines(dir_ + "/ran-g"), 1);
  EXPECT_EQ(Lines(dir_ + "/ran-p"), 1);
  EXPECT_EQ(Lines(dir_ + "/ran-c"), 0);
  EXPECT_EQ(Lines(dir_ + "/ran-f"), 0);
  EXPECT_TRUE(d.Stop()) << d.log();
}

// `artel run --wait` exits with the workload's exit code.
TEST_F(GpuReleaseTest, RunWaitExitsWithTheWorkloadsExitCode) {
  Arteld d(dir_);
  ASSERT_TRUE(d.Start(Flags(dir_))) << d.log();
  std::map<std::string, std::string> env = {
      {"ARTEL_SERVER", d.url()}, {"ARTEL_TOKEN", kTeamAToken}, {"HOME", dir_}};
  std::string out, err;
  int rc = RunCommand({ARTEL_BIN, "run", "--queue", "team-a/default", "--gpus", "1", "--wait", "--",
                       "/bin/sh", "-c", "echo bye; exit 3"},
                      env, &out, &err);
  EXPECT_EQ(rc, 3) << out << err;
  EXPECT_NE(out.find("bye"), std::string::npos) << out;
  rc = RunCommand({ARTEL_BIN, "run", "--queue", "team-a/default", "--wait", "--", "/bin/sh", "-c", "exit 0"},
                  env, &out, &err);
  EXPECT_EQ(rc, 0) << out << err;
  EXPECT_TRUE(d.Stop()) << d.log();
}

}  // namespace
}  // namespace artel::testing
