// LocalRuntime against real processes. No sleeps: a process's exit is awaited
// with a pidfd (poll with a deadline), and a pod tells the test it is ready
// (its TERM trap installed) by writing to a FIFO.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "runtime/runtime.h"

namespace artel::runtime {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "artel-runtime-XXXXXX").string();
    char* p = mkdtemp(tmpl.data());
    EXPECT_NE(p, nullptr);
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::unique_ptr<LocalRuntime> MakeRuntime() {
  LocalRuntime::Options opts;
  opts.cgroup_root = "none";
  auto rt = LocalRuntime::Create(opts);
  EXPECT_TRUE(rt.ok());
  return rt.ok() ? std::move(rt).value() : nullptr;
}

PodLaunch ShPod(const std::string& name, const std::string& script, std::vector<std::string> args = {}) {
  PodLaunch p;
  p.pod = name;
  p.command = {"sh", "-c", script, "pod"};
  p.command.insert(p.command.end(), args.begin(), args.end());
  return p;
}

// Waits until `pid` has exited (any process, child or not). Returns false at
// the deadline.
bool WaitProcessExit(int pid, milliseconds limit) {
  int fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (fd < 0) return errno == ESRCH;  // Already gone (and reaped).
  pollfd p{fd, POLLIN, 0};
  int rc;
  do {
    rc = poll(&p, 1, static_cast<int>(limit.count()));
  } while (rc < 0 && errno == EINTR);
  close(fd);
  return rc == 1;
}

// Polls the runtime until `n` exits are reported or `limit` passes. A pod's
// exit is reported once every process of its group is gone, which may be a
// moment after its wrapper.
std::vector<Exit> PollExits(LocalRuntime* rt, size_t n, milliseconds limit = milliseconds(20000)) {
  std::vector<Exit> exits;
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (true) {
    auto more = rt->Poll();
    exits.insert(exits.end(), more.begin(), more.end());
    if (exits.size() >= n || std::chrono::steady_clock::now() > deadline) break;
    poll(nullptr, 0, 10);
  }
  return exits;
}

// Polls the runtime after each pod's wrapper has exited, until `n` exits are
// reported.
std::vector<Exit> AwaitExits(LocalRuntime* rt, const std::vector<RunningPod>& pods, size_t n) {
  for (const RunningPod& p : pods) EXPECT_TRUE(WaitProcessExit(p.pid, milliseconds(20000))) << p.pod;
  std::vector<Exit> exits = PollExits(rt, n);
  EXPECT_EQ(exits.size(), n);
  return exits;
}

// Reads one line from a FIFO that a pod writes when it is ready.
std::string ReadFifoLine(const std::string& path, milliseconds limit) {
  int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return "open failed";
  std::string line;
  auto deadline = std::chrono::steady_clock::now() + limit;
  while (line.find('\n') == std::string::npos) {
    auto left = std::chrono::duration_cast<milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) break;
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left)) <= 0) continue;
    char buf[64];
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n > 0) line.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return line;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::map<std::string, Exit> ByPod(const std::vector<Exit>& exits) {
  std::map<std::string, Exit> out;
  for (const Exit& e : exits) out[e.pod] = e;
  return out;
}

TEST(LocalRuntimeTest, ExitCodesMap) {
  TempDir dir;
  auto rt = MakeRuntime();
  LaunchSpec spec;
  spec.key = "team-a/codes";
  spec.log_dir = dir.path();
  spec.pods = {ShPod("ok-0", "exit 0"), ShPod("fail-0", "exit 3"), ShPod("term-0", "kill -TERM $$"),
               ShPod("kill-0", "kill -KILL $$")};
  auto pods = rt->Start(spec, 0);
  ASSERT_TRUE(pods.ok()) << pods.status().ToString();
  ASSERT_EQ(pods->size(), 4u);
  for (const RunningPod& p : *pods) {
    EXPECT_GT(p.pid, 0);
    EXPECT_EQ(p.pgid, p.pid);
    EXPECT_EQ(p.exit_file, dir.path() + "/team-a/codes/" + p.pod + ".exit");
  }
  EXPECT_TRUE(rt->IsRunning("team-a/codes"));
  auto exits = ByPod(AwaitExits(rt.get(), *pods, 4));
  EXPECT_EQ(exits["ok-0"].key, "team-a/codes");
  EXPECT_FALSE(exits["ok-0"].signaled);
  EXPECT_EQ(exits["ok-0"].exit_code, 0);
  EXPECT_FALSE(exits["fail-0"].signaled);
  EXPECT_EQ(exits["fail-0"].exit_code, 3);
  EXPECT_TRUE(exits["term-0"].signaled);
  EXPECT_EQ(exits["term-0"].signal, SIGTERM);
  EXPECT_TRUE(exits["kill-0"].signaled);
  EXPECT_EQ(exits["kill-0"].signal, SIGKILL);
  EXPECT_FALSE(rt->IsRunning("team-a/codes"));
  EXPECT_EQ(Slurp(dir.path() + "/team-a/codes/fail-0.exit"), "3\n");
  EXPECT_TRUE(rt->Poll().empty());
}

// WaitForExit reports a pod's end as it happens (its pidfd), once: the
// daemon reaps on that event instead of on its tick.
TEST(LocalRuntimeTest, WaitForExitWakesOnAPodsEndOnce) {
  TempDir dir;
  auto rt = MakeRuntime();
  EXPECT_FALSE(rt->WaitForExit(0)) << "nothing has run yet";
  LaunchSpec spec;
  spec.key = "team-a/wake";
  spec.log_dir = dir.path();
  spec.pods = {ShPod("main-0", "exit 0")};
  auto pods = rt->Start(spec, 0);
  ASSERT_TRUE(pods.ok()) << pods.status().ToString();
  ASSERT_TRUE(rt->WaitForExit(10000)) << "the pod's end did not wake WaitForExit";
  EXPECT_FALSE(rt->WaitForExit(0)) << "one end is reported once";
  auto exits = AwaitExits(rt.get(), *pods, 1);
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_EQ(exits[0].exit_code, 0);
}

TEST(LocalRuntimeTest, EnvWorkingDirAndLogs) {
  TempDir dir;
  fs::create_directories(dir.path() + "/work");
  setenv("ARTEL_TEST_DAEMON_SECRET", "hunter2", 1);
  auto rt = MakeRuntime();
  LaunchSpec spec;
  spec.key = "team-b/env";
  spec.log_dir = dir.path() + "/logs";
  PodLaunch p =
      ShPod("main-0",
            "echo \"dev=$CUDA_VISIBLE_DEVICES\"; echo \"foo=$FOO\"; echo \"lim=$ARTEL_GPU_MEMORY_LIMIT\"; "
            "echo \"wl=$ARTEL_WORKLOAD pod=$ARTEL_POD\"; echo \"cwd=$(pwd)\"; "
            "echo \"secret=${ARTEL_TEST_DAEMON_SECRET-unset}\"; echo \"arg=$1\"; echo oops >&2");
  p.command.push_back("first arg");
  p.env = {{"FOO", "bar baz"}};
  p.working_dir = dir.path() + "/work";
  p.visible_devices = {"GPU-fake-h-0", "MIG-abc"};
  p.slice_env = {{"ARTEL_GPU_MEMORY_LIMIT", "20Gi"}};
  spec.pods = {p};
  auto pods = rt->Start(spec, 0);
  ASSERT_TRUE(pods.ok()) << pods.status().ToString();
  auto exits = AwaitExits(rt.get(), *pods, 1);
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_EQ(exits[0].exit_code, 0);
  std::string log = Slurp(dir.path() + "/logs/team-b/env/main-0.log");
  EXPECT_NE(log.find("dev=GPU-fake-h-0,MIG-abc\n"), std::string::npos) << log;
  EXPECT_NE(log.find("foo=bar baz\n"), std::string::npos) << log;
  EXPECT_NE(log.find("lim=20Gi\n"), std::string::npos) << log;
  EXPECT_NE(log.find("wl=team-b/env pod=main-0\n"), std::string::npos) << log;
  EXPECT_NE(log.find("cwd=" + fs::canonical(dir.path() + "/work").string() + "\n"), std::string::npos) << log;
  EXPECT_NE(log.find("secret=unset\n"), std::string::npos) << log;  // Not inherited from the daemon.
  EXPECT_NE(log.find("arg=first arg\n"), std::string::npos) << log;
  EXPECT_NE(log.find("oops\n"), std::string::npos) << log;  // stderr goes to the same log.
  unsetenv("ARTEL_TEST_DAEMON_SECRET");
}

TEST(LocalRuntimeTest, StopSendsTermThenKillAfterGrace) {
  TempDir dir;
  std::string ready_a = dir.path() + "/ready-a", ready_b = dir.path() + "/ready-b";
  ASSERT_EQ(mkfifo(ready_a.c_str(), 0600), 0);
  ASSERT_EQ(mkfifo(ready_b.c_str(), 0600), 0);
  auto rt = MakeRuntime();
  LaunchSpec spec;
  spec.key = "team-a/stop";
  spec.log_dir = dir.path();
  spec.grace_ms = 5000;
  // a: exits 42 on TERM. b: ignores TERM, so only SIGKILL ends it.
  spec.pods = {ShPod("a-0", "trap 'exit 42' TERM; echo ready > \"$1\"; sleep 1000 & wait", {ready_a}),
               ShPod("b-0", "trap '' TERM; echo ready > \"$1\"; sleep 1000", {ready_b})};
  auto pods = rt->Start(spec, 1000);
  ASSERT_TRUE(pods.ok()) << pods.status().ToString();
  ASSERT_EQ(ReadFifoLine(ready_a, milliseconds(20000)), "ready\n");
  ASSERT_EQ(ReadFifoLine(ready_b, milliseconds(20000)), "ready\n");
  EXPECT_TRUE(rt->Poll().empty());

  ASSERT_TRUE(rt->Stop("team-a/stop", 1000).ok());
  ASSERT_TRUE(WaitProcessExit((*pods)[0].pid, milliseconds(20000)));
  auto first = PollExits(rt.get(), 1);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].pod, "a-0");
  EXPECT_FALSE(first[0].signaled);
  EXPECT_EQ(first[0].exit_code, 42);  // The TERM trap ran.

  // Just before the grace period ends nothing is killed.
  rt->Tick(5999);
  EXPECT_FALSE(WaitProcessExit((*pods)[1].pid, milliseconds(300)));
  EXPECT_TRUE(rt->Poll().empty());
  EXPECT_TRUE(rt->IsRunning("team-a/stop"));

  rt->Tick(6000);
  ASSERT_TRUE(WaitProcessExit((*pods)[1].pid, milliseconds(20000)));
  auto second = PollExits(rt.get(), 1);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].pod, "b-0");
  EXPECT_TRUE(second[0].signaled);
  EXPECT_EQ(second[0].signal, SIGKILL);
  EXPECT_FALSE(rt->IsRunning("team-a/stop"));
  EXPECT_EQ(rt->Stop("team-a/stop", 7000).code(), StatusCode::kNotFound);
}

TEST(LocalRuntimeTest, ZeroGraceKillsAtOnce) {
  TempDir dir;
  auto rt = MakeRuntime();
  LaunchSpec spec;
  spec.key = "ns/now";
  spec.log_dir = dir.path();
  spec.grace_ms = 0;
  spec.pods = {ShPod("main-0", "trap '' TERM; sleep 1000")};
  auto pods = rt->Start(spec, 0);
  ASSERT_TRUE(pods.ok());
  ASSERT_TRUE(rt->Stop("ns/now", 0).ok());
  auto exits = AwaitExits(rt.get(), *pods, 1);
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_EQ(exits[0].signal, SIGKILL);
}

// True if some process still runs the wrapper of pod `marker` (or a child
// forked from it that has not exec'd yet) `limit` after the call: processes
// that were sent SIGKILL may take a moment to be scheduled and die.
bool WrapperRunning(const std::string& marker, milliseconds limit = milliseconds(5000)) {
  std::vector<int> pids;
  for (const auto& entry : fs::directory_iterator("/proc")) {
    std::ifstream in(entry.path() / "cmdline", std::ios::binary);
    std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (cmdline.find(marker + '\0') != std::string::npos)
      pids.push_back(std::atoi(entry.path().filename().c_str()));
  }
  for (int pid : pids) {
    if (!WaitProcessExit(pid, limit)) return true;
  }
  return false;
}

TEST(LocalRuntimeTest, PartialStartFailureKillsTheStartedPods) {
  TempDir dir;
  auto rt = MakeRuntime();
  LaunchSpec spec;
  spec.key = "ns/partial";
  spec.log_dir = dir.path();
  PodLaunch missing;
  missing.pod = "main-2";
  missing.command = {"artel-no-such-command-xyz"};
  spec.pods = {ShPod("main-0", "sleep 1000"), ShPod("main-1", "sleep 1000"), missing};
  auto pods = rt->Start(spec, 0);
  ASSERT_FALSE(pods.ok());
  EXPECT_NE(pods.status().message().find("pod main-2"), std::string::npos) << pods.status().message();
  EXPECT_NE(pods.status().message().find("not found in PATH"), std::string::npos) << pods.status().message();
  EXPECT_FALSE(rt->IsRunning("ns/partial"));
  // The two started wrappers were killed and reaped before Start returned.
  EXPECT_FALSE(WrapperRunning("artel-pod:ns/partial/main-0"));
  EXPECT_FALSE(WrapperRunning("artel-pod:ns/partial/main-1"));
  EXPECT_TRUE(rt->Poll().empty());

  PodLaunch bad_dir = ShPod("main-1", "true");
  bad_dir.working_dir = dir.path() + "/no-such-dir";
  spec.pods = {ShPod("main-0", "sleep 1000"), bad_dir};
  pods = rt->Start(spec, 0);
  ASSERT_FALSE(pods.ok());
  EXPECT_NE(pods.status().message().find("working directory"), std::string::npos) << pods.status().message();
  EXPECT_FALSE(WrapperRunning("artel-pod:ns/partial/main-0"));
  EXPECT_FALSE(rt->IsRunning("ns/partial"));
}

TEST(LocalRuntimeTest, RejectsBadSpecsAndDuplicates) {
  TempDir dir;
  auto rt = MakeRuntime();
  LaunchSpec spec;
  spec.key = "no-namespace";
  spec.log_dir = dir.path();
  spec.pods = {ShPod("main-0", "true")};
  EXPECT_EQ(rt->Start(spec, 0).status().code(), StatusCode::kInvalidArgument);
  spec.key = "ns/../x";
  EXPECT_EQ(rt->Start(spec, 0).status().code(), StatusCode::kInvalidArgument);
  spec.key = "ns/dup";
  spec.pods = {ShPod("main-0", "trap 'exit 0' TERM; sleep 1000 & wait")};
  auto pods = rt->Start(spec, 0);
  ASSERT_TRUE(pods.ok());
  EXPECT_EQ(rt->Start(spec, 0).status().code(), StatusCode::kAlreadyExists);
  ASSERT_TRUE(rt->Stop("ns/dup", 0).ok());
  rt->Tick(spec.grace_ms);  // Whether or not the trap was installed yet, it ends.
  AwaitExits(rt.get(), *pods, 1);
}

// Runs the "old daemon" in a child process: it starts one pod and exits, so
// the pod outlives it and is no longer a child of this process.
RunningPod StartPodInOldDaemon(const LaunchSpec& spec) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  pid_t daemon = fork();
  if (daemon == 0) {
    close(fds[0]);
    auto rt = MakeRuntime();
    auto pods = rt->Start(spec, 0);
    std::string out = pods.ok() ? std::to_string((*pods)[0].pid) + " " + (*pods)[0].exit_file : "error";
    ssize_t n = write(fds[1], out.data(), out.size());
    _exit(n > 0 && pods.ok() ? 0 : 1);
  }
  close(fds[1]);
  std::string out;
  char buf[512];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  EXPECT_EQ(waitpid(daemon, &status, 0), daemon);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << out;
  RunningPod rp;
  rp.pod = spec.pods[0].pod;
  std::istringstream in(out);
  in >> rp.pid >> rp.exit_file;
  rp.pgid = rp.pid;
  return rp;
}

TEST(LocalRuntimeTest, AdoptAfterRestartSeesLaterExitThroughExitFile) {
  TempDir dir;
  std::string go = dir.path() + "/go";
  ASSERT_EQ(mkfifo(go.c_str(), 0600), 0);
  LaunchSpec spec;
  spec.key = "team-a/adopt";
  spec.log_dir = dir.path();
  spec.pods = {ShPod("main-0", "read line < \"$1\"; exit 7", {go})};
  RunningPod old = StartPodInOldDaemon(spec);
  ASSERT_GT(old.pid, 0);
  EXPECT_EQ(waitpid(old.pid, nullptr, WNOHANG), -1);  // Not our child.

  auto rt = MakeRuntime();  // The restarted daemon.
  RunningPod journaled = old;
  journaled.exit_file.clear();  // Found through /proc/<pid>/cmdline instead.
  ASSERT_TRUE(rt->Adopt("team-a/adopt", {journaled}, 1000));
  EXPECT_TRUE(rt->IsRunning("team-a/adopt"));
  EXPECT_TRUE(rt->Poll().empty());

  {
    std::ofstream release(go);  // Opens once the pod waits on the FIFO.
    release << "go\n";
  }
  ASSERT_TRUE(WaitProcessExit(old.pid, milliseconds(20000)));
  auto exits = rt->Poll();
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_EQ(exits[0].key, "team-a/adopt");
  EXPECT_EQ(exits[0].pod, "main-0");
  EXPECT_FALSE(exits[0].signaled);
  EXPECT_EQ(exits[0].exit_code, 7);
  EXPECT_FALSE(rt->IsRunning("team-a/adopt"));

  // Adopting it again after it is gone: its exit file still tells the outcome.
  auto rt2 = MakeRuntime();
  ASSERT_TRUE(rt2->Adopt("team-a/adopt", {old}, 1000));
  exits = rt2->Poll();
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_EQ(exits[0].exit_code, 7);
  // Without the exit file nothing is known: nothing is adopted.
  fs::remove(old.exit_file);
  EXPECT_FALSE(rt2->Adopt("team-a/adopt", {old}, 1000));
  EXPECT_FALSE(rt2->IsRunning("team-a/adopt"));
}

// A daemon that died before journaling a start: the restarted one finds the
// live pod by its marker (with its GPUs), and once it exited, by an exit
// file no older than the admission.
TEST(LocalRuntimeTest, FindsPodsThatWereNeverJournaled) {
  TempDir dir;
  std::string go = dir.path() + "/go";
  ASSERT_EQ(mkfifo(go.c_str(), 0600), 0);
  LaunchSpec spec;
  spec.key = "team-a/lost";
  spec.log_dir = dir.path();
  spec.pods = {ShPod("main-0", "read line < \"$1\"; exit 3", {go})};
  spec.pods[0].visible_devices = {"GPU-aaa", "MIG-bbb"};
  RunningPod old = StartPodInOldDaemon(spec);
  ASSERT_GT(old.pid, 0);

  auto rt = MakeRuntime();
  std::vector<RunningPod> found = rt->Find("team-a/lost", dir.path(), 0);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].pod, "main-0");
  EXPECT_EQ(found[0].pid, old.pid);
  EXPECT_EQ(found[0].pgid, old.pid);
  EXPECT_EQ(found[0].exit_file, old.exit_file);
  EXPECT_EQ(found[0].visible_devices, (std::vector<std::string>{"GPU-aaa", "MIG-bbb"}));
  EXPECT_TRUE(rt->Find("team-a/lost-too", dir.path(), 0).empty());  // a prefix is not a match
  EXPECT_TRUE(rt->Find("team-b/lost", dir.path(), 0).empty());
  TempDir other;  // another daemon's data dir: its namesake pods are not ours
  EXPECT_TRUE(rt->Find("team-a/lost", other.path(), 0).empty());

  {
    std::ofstream release(go);
    release << "go\n";
  }
  ASSERT_TRUE(WaitProcessExit(old.pid, milliseconds(20000)));
  found = rt->Find("team-a/lost", dir.path(), 0);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].pid, 0);
  EXPECT_EQ(found[0].exit_file, old.exit_file);
  ASSERT_TRUE(rt->Adopt("team-a/lost", found, 1000));
  auto exits = rt->Poll();
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_EQ(exits[0].exit_code, 3);
  // An exit file older than the admission belongs to an earlier run.
  int64_t later = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count() +
                  60000;
  EXPECT_TRUE(rt->Find("team-a/lost", dir.path(), later).empty());
}

TEST(LocalRuntimeTest, AdoptedPodIsStoppedWithTermThenKill) {
  TempDir dir;
  std::string ready = dir.path() + "/ready";
  ASSERT_EQ(mkfifo(ready.c_str(), 0600), 0);
  LaunchSpec spec;
  spec.key = "team-a/adopt-stop";
  spec.log_dir = dir.path();
  spec.pods = {ShPod("main-0", "trap '' TERM; echo ready > \"$1\"; sleep 1000", {ready})};
  RunningPod old = StartPodInOldDaemon(spec);
  ASSERT_EQ(ReadFifoLine(ready, milliseconds(20000)), "ready\n");
  auto rt = MakeRuntime();
  ASSERT_TRUE(rt->Adopt(spec.key, {old}, 2000));
  ASSERT_TRUE(rt->Stop(spec.key, 100).ok());
  EXPECT_FALSE(WaitProcessExit(old.pid, milliseconds(200)));  // TERM is ignored.
  rt->Tick(2100);
  ASSERT_TRUE(WaitProcessExit(old.pid, milliseconds(20000)));
  auto exits = PollExits(rt.get(), 1);
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_TRUE(exits[0].signaled);  // No exit file: reported as SIGKILL.
  EXPECT_EQ(exits[0].signal, SIGKILL);
}

// Start ids: a restarted daemon learns from the start file what became of a
// journaled start. A start that ran is found (alive: its wrapper holds the
// start file's lock; or exited, with its exit file); a start that never ran
// is not, and its start file is claimed so that it never can.
TEST(LocalRuntimeTest, FindStartTellsARunStartFromOneThatNeverRan) {
  TempDir dir;
  std::string ready = dir.path() + "/ready";
  ASSERT_EQ(mkfifo(ready.c_str(), 0600), 0);
  LaunchSpec spec;
  spec.key = "team-a/ids";
  spec.log_dir = dir.path();
  spec.start_id = "start-1";
  spec.pods = {ShPod("main-0", "trap '' TERM; echo ready > \"$1\"; sleep 1000", {ready})};
  RunningPod old = StartPodInOldDaemon(spec);
  ASSERT_EQ(ReadFifoLine(ready, milliseconds(20000)), "ready\n");
  EXPECT_EQ(Slurp(dir.path() + "/team-a/ids/main-0.start"), "start-1 " + std::to_string(old.pid) + "\n");

  auto rt = MakeRuntime();
  // Another id: that start never ran, and now never will.
  EXPECT_TRUE(rt->FindStart(spec.key, dir.path(), "start-0", {"main-0"}).empty());
  EXPECT_TRUE(rt->FindStart(spec.key, dir.path(), "start-1", {"other-0"}).empty());
  EXPECT_EQ(Slurp(dir.path() + "/team-a/ids/other-0.start"), "abandoned start-1\n");
  std::vector<RunningPod> found = rt->FindStart(spec.key, dir.path(), "start-1", {"main-0"});
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].pid, old.pid);
  EXPECT_EQ(found[0].pgid, old.pid);
  EXPECT_EQ(found[0].start_id, "start-1");
  ASSERT_TRUE(rt->Adopt(spec.key, found, 1000));
  EXPECT_TRUE(rt->Poll().empty());               // alive: the lock is held
  ASSERT_TRUE(rt->StopAt(spec.key, 0, 0).ok());  // a deadline already past: SIGKILL now
  std::vector<Exit> exits = PollExits(rt.get(), 1);
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_TRUE(exits[0].signaled);
  EXPECT_EQ(exits[0].signal, SIGKILL);

  // Once it exited with a status, the exit file tells it.
  spec.start_id = "start-2";
  spec.pods = {ShPod("main-0", "exit 5")};
  old = StartPodInOldDaemon(spec);
  ASSERT_TRUE(WaitProcessExit(old.pid, milliseconds(20000)));
  auto rt2 = MakeRuntime();
  found = rt2->FindStart(spec.key, dir.path(), "start-2", {"main-0"});
  ASSERT_EQ(found.size(), 1u);
  ASSERT_TRUE(rt2->Adopt(spec.key, found, 1000));
  exits = PollExits(rt2.get(), 1);
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_EQ(exits[0].exit_code, 5);
  EXPECT_TRUE(rt2->FindStart(spec.key, dir.path(), "start-1", {"main-0"}).empty());  // replaced by start-2
}

TEST(LocalRuntimeTest, AdoptRefusesAPidThatIsNotThePod) {
  auto rt = MakeRuntime();
  RunningPod impostor;
  impostor.pod = "main-0";
  impostor.pid = getpid();  // Alive, but not our wrapper (a reused pid).
  impostor.pgid = getpid();
  EXPECT_FALSE(rt->Adopt("ns/impostor", {impostor}, 1000));
  EXPECT_FALSE(rt->IsRunning("ns/impostor"));
}

TEST(LocalRuntimeTest, CgroupStatusSaysWhy) {
  LocalRuntime::Options none;
  none.cgroup_root = "none";
  auto rt = LocalRuntime::Create(none);
  ASSERT_TRUE(rt.ok());
  EXPECT_NE((*rt)->cgroup_status().find("disabled"), std::string::npos);

  TempDir dir;  // A plain directory is not a cgroup v2 hierarchy.
  LocalRuntime::Options plain;
  plain.cgroup_root = dir.path();
  rt = LocalRuntime::Create(plain);
  ASSERT_TRUE(rt.ok());
  EXPECT_NE((*rt)->cgroup_status().find("not a cgroup v2 hierarchy"), std::string::npos)
      << (*rt)->cgroup_status();
}

}  // namespace
}  // namespace artel::runtime
