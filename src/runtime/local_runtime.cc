// `LocalRuntime` implementation: pods as process groups on this host.
//
// Every pod runs under a tiny /bin/sh wrapper (the group leader):
//
//   /bin/sh -c '<kWrapper>' artel-pod:<ns>/<name>/<pod> <exit-file> <start-id> <command...>
//
// The wrapper runs the command in the foreground, then writes its exit status
// to <exit-file> (`<log_dir>/<ns>/<name>/<pod>.exit`) and exits with it. The
// runtime opens that file (and the log) before the child drops to the pod's
// user and hands it over as descriptor 3, which the command itself does not
// inherit: the pod needs no access to the log directory (0700, arteld's). Its
// `$0` names the pod, so `ps` shows which pod a process belongs to, and
// `Adopt` checks /proc/<pid>/cmdline to tell the pod from a process that
// reused its pid. After a daemon restart the pods are no longer our children,
// so their exits are detected with kill(pid, 0) and read from the exit file.
//
// The wrapper traps TERM/INT/HUP with a no-op, so it outlives a graceful stop
// long enough to record the command's real status; the command itself gets
// the default dispositions. A status above 128 is the shell's encoding of
// "killed by signal status-128" and is reported as such. A pod whose wrapper
// died without writing the file (SIGKILL) is reported as killed by SIGKILL.
//
// Start ids. Before anything of the pod runs, the child (PodChild) claims the
// pod's start file `<log_dir>/<ns>/<name>/<pod>.start`: it writes
// "<start-id> <pid>" to a temporary file, takes an exclusive flock on it and
// link()s it to the start file (which fails if the name exists). The locked
// descriptor is kept as fd 9 across exec by the wrapper (closed for the
// command), so the lock is held exactly as long as the wrapper lives. A
// restarted daemon (`FindStart`) reads the start file: the id there means the
// start ran (the lock says whether it still runs, the exit file how it
// ended); no start file means it never ran, and the daemon claims the name
// itself ("abandoned <id>"), so a child of the dead daemon that had not
// reached its claim yet fails it and exits without running anything.
//
// A pod's exit is reported once its whole process group is gone: when the
// wrapper ends, what is left of the group gets SIGKILL and the exit waits
// for the group to empty, so that the pod's GPUs are never handed out while
// one of its processes still runs.
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <random>
#include <sstream>

#include "runtime/runtime.h"

extern char** environ;

namespace artel::runtime {
namespace {

namespace fs = std::filesystem;

constexpr char kShell[] = "/bin/sh";
constexpr char kWrapper[] =
    "f=\"$1\"; shift 2; trap ':' TERM INT HUP; \"$@\" 3>&- 9>&-; rc=$?; echo \"$rc\" >&3; exit \"$rc\"";
// The wrapper of an older arteld (no start id), still recognised on adoption.
constexpr char kLegacyWrapper[] =
    "f=\"$1\"; shift; trap ':' TERM INT HUP; \"$@\"; rc=$?; echo \"$rc\" > \"$f\"; exit \"$rc\"";
// The descriptor the wrapper keeps its start-file lock on (kWrapper's 9>&-).
constexpr int kStartLockFd = 9;
constexpr char kNamePrefix[] = "artel-pod:";
constexpr char kDefaultPath[] = "/usr/local/bin:/usr/bin:/bin";

// Variables a pod inherits from the daemon; everything else comes from the
// launch spec, so the daemon's own secrets (tokens, keys) never leak into pods.
constexpr const char* kInheritedEnv[] = {"PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "TZ", "TMPDIR"};

std::string Errno(int err) { return std::strerror(err); }

// Creates `base` and `base/rel` level by level, each 0700 (a tenant's pod
// runs as another user and must not read other tenants' logs).
Status MakePrivateDirs(const std::string& base, const std::string& rel) {
  std::string path = base;
  std::stringstream parts(rel);
  std::string part;
  bool first = true;
  while (first || std::getline(parts, part, '/')) {
    if (!first) path += "/" + part;
    first = false;
    if (mkdir(path.c_str(), 0700) != 0) {
      if (errno != EEXIST) {
        return FailedPrecondition("cannot create log directory " + path + ": " + Errno(errno));
      }
      if (path != base) chmod(path.c_str(), 0700);
    }
  }
  return Status::Ok();
}

bool ValidName(const std::string& s) {
  return !s.empty() && s != "." && s != ".." && s.find('/') == std::string::npos &&
         s.find('\0') == std::string::npos;
}

// Reads a small file whole; nullopt when it cannot be opened.
std::optional<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Status WriteFile(const std::string& path, const std::string& data) {
  int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return FailedPrecondition("cannot open " + path + ": " + Errno(errno));
  ssize_t n = write(fd, data.data(), data.size());
  int err = errno;
  close(fd);
  if (n != static_cast<ssize_t>(data.size())) {
    return FailedPrecondition("cannot write \"" + data + "\" to " + path + ": " + Errno(err));
  }
  return Status::Ok();
}

std::vector<std::string> ProcCmdline(int pid) {
  std::vector<std::string> out;
  auto data = ReadFile("/proc/" + std::to_string(pid) + "/cmdline");
  if (!data) return out;
  std::string cur;
  for (char c : *data) {
    if (c == '\0') {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  return out;
}

// True when `pid` exists and is not a zombie.
bool ProcessAlive(int pid) {
  if (pid <= 0) return false;
  if (kill(pid, 0) != 0 && errno != EPERM) return false;
  auto stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return false;
  size_t paren = stat->rfind(')');
  if (paren == std::string::npos || paren + 2 >= stat->size()) return true;
  char state = (*stat)[paren + 2];
  return state != 'Z' && state != 'X';
}

Exit ExitFromShellStatus(int code) {
  Exit e;
  if (code > 128 && code < 128 + 65) {
    e.signaled = true;
    e.signal = code - 128;
  } else {
    e.exit_code = code;
  }
  return e;
}

Exit ExitFromWaitStatus(int status) {
  if (WIFSIGNALED(status)) {
    Exit e;
    e.signaled = true;
    e.signal = WTERMSIG(status);
    return e;
  }
  return ExitFromShellStatus(WEXITSTATUS(status));
}

// The status the wrapper recorded, if it got to write one.
std::optional<Exit> ReadExitFile(const std::string& path) {
  if (path.empty()) return std::nullopt;
  auto data = ReadFile(path);
  if (!data) return std::nullopt;
  char* end = nullptr;
  long code = std::strtol(data->c_str(), &end, 10);
  if (end == data->c_str() || code < 0 || code > 255) return std::nullopt;
  return ExitFromShellStatus(static_cast<int>(code));
}

// True when argv is a pod wrapper's (this arteld's or an older one's).
bool IsWrapperArgv(const std::vector<std::string>& argv) {
  return argv.size() >= 5 && argv[0] == kShell && (argv[2] == kWrapper || argv[2] == kLegacyWrapper);
}

bool ValidStartId(const std::string& id) {
  if (id.empty() || id.size() > 64) return false;
  return std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
  });
}

std::string NewStartId() {
  static std::atomic<uint64_t> seq{0};
  std::random_device rd;
  uint64_t r = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  char buf[48];
  snprintf(buf, sizeof buf, "%016llx-%llu", static_cast<unsigned long long>(r),
           static_cast<unsigned long long>(++seq));
  return buf;
}

// True while some process holds the lock a pod's wrapper takes on its start
// file: the wrapper (or the child about to become it) still runs.
bool StartFileHeld(const std::string& path) {
  if (path.empty()) return false;
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool held = flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  close(fd);  // Drops the probe's own shared lock, if it got one.
  return held;
}

// True when a live (not zombie) process is in process group `pgid`.
bool GroupAlive(int pgid) {
  if (pgid <= 0) return false;
  if (kill(-pgid, 0) != 0 && errno == ESRCH) return false;
  // Members that are only zombies do not count: their parent (init, or
  // whoever adopted them) reaps them, and they hold nothing.
  bool alive = false;
  if (DIR* proc = opendir("/proc")) {
    while (dirent* de = readdir(proc)) {
      char* end = nullptr;
      long pid = std::strtol(de->d_name, &end, 10);
      if (end == de->d_name || *end != '\0' || pid <= 0) continue;
      auto stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
      if (!stat) continue;
      size_t paren = stat->rfind(')');
      if (paren == std::string::npos || paren + 2 >= stat->size()) continue;
      char state = (*stat)[paren + 2];
      long ppid = 0, pgrp = 0;
      if (sscanf(stat->c_str() + paren + 3, " %ld %ld", &ppid, &pgrp) != 2) continue;
      if (pgrp == pgid && state != 'Z' && state != 'X') {
        alive = true;
        break;
      }
    }
    closedir(proc);
  }
  return alive;
}

// Resolves argv[0] the way execvp would, against the pod's PATH, so that a
// missing command fails `Start` with a clear message instead of exit 127.
Result<std::string> ResolveCommand(const std::string& cmd, const std::string& path_var,
                                   const std::string& cwd) {
  auto executable = [](const std::string& p) {
    struct stat st {};
    return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(p.c_str(), X_OK) == 0;
  };
  if (cmd.empty()) return InvalidArgument("empty command");
  if (cmd.find('/') != std::string::npos) {
    std::string p = (cmd[0] != '/' && !cwd.empty()) ? cwd + "/" + cmd : cmd;
    if (!executable(p)) return InvalidArgument("command " + cmd + " is not an executable file");
    return cmd;
  }
  std::stringstream dirs(path_var);
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (dir.empty()) dir = ".";
    std::string p = dir + "/" + cmd;
    if (executable(p)) return p;
  }
  return InvalidArgument("command " + cmd + " not found in PATH " + path_var);
}

struct Pod {
  std::string name;
  int pid = 0;
  int pgid = 0;
  std::string exit_file;
  std::string start_file;  // locked by the live wrapper; empty for older pods
  std::string cgroup;      // directory, or empty
  std::string cuda_dir;    // libartel-cuda's segment directory, or empty
  std::string marker;      // the wrapper's $0, checked for adopted pods
  bool adopted = false;
  bool done = false;
  int pidfd = -1;  // the wrapper's pidfd, in the runtime's epoll set until done
  // The wrapper has ended; its exit is reported once the group is empty.
  std::optional<Exit> draining;
};

// True when `pid` runs our wrapper for the pod named by `marker`.
bool IsOurs(int pid, const std::string& marker) {
  std::vector<std::string> argv = ProcCmdline(pid);
  return IsWrapperArgv(argv) && argv[3] == marker;
}

struct Workload {
  std::vector<Pod> pods;
  int64_t grace_ms = 0;
  std::optional<int64_t> kill_at_ms;
  bool killed = false;
};

// What the pod's child needs, all built before the clone: the child shares
// the daemon's memory (CLONE_VM) and may only make system calls.
struct PodChildArgs {
  int err_pipe_w = -1, exit_fd = -1, log_fd = -1, null_fd = -1;
  const char* start_tmp = nullptr;
  const char* start_file = nullptr;
  const char* start_text = nullptr;
  size_t start_text_len = 0;
  const char* procs = nullptr;  // "" when the pod has no cgroup
  bool switch_user = false;
  uid_t uid = 0;
  gid_t gid = 0;
  const char* working_dir = nullptr;  // "" for none
  char** candidates = nullptr;        // switch_user: the command's candidate paths
  size_t n_candidates = 0;
  char** argv = nullptr;
  char** envp = nullptr;
};

// The child side of StartPod, run by clone(CLONE_VM | CLONE_VFORK) on a
// stack of its own: the daemon's thread waits until it execs or exits, so
// nothing of the daemon's address space is copied (a fork of a daemon with a
// large heap copied its page tables for every pod: docs/performance.md,
// "Submit to done against Slurm"). It makes system calls only (no
// allocation, no locks, no sanitizer runtime: it runs on a stack the
// sanitizers do not know), and reports (stage, errno) through the error
// pipe on failure.
__attribute__((no_sanitize("address", "undefined"))) [[noreturn]] void PodChildDie(int err_fd, int stage) {
  int msg[2] = {stage, errno};
  ssize_t ignored = write(err_fd, msg, sizeof(msg));
  (void)ignored;
  _exit(127);
}

__attribute__((no_sanitize("address", "undefined"))) int PodChild(void* arg) {
  const PodChildArgs& a = *static_cast<const PodChildArgs*>(arg);
  // The descriptors it needs move above 9 first, so that none of them is
  // overwritten when the exit file becomes descriptor 3.
  int err_fd = fcntl(a.err_pipe_w, F_DUPFD_CLOEXEC, 10);
  if (err_fd < 0) err_fd = a.err_pipe_w;
  // Keep the error pipe clear of kStartLockFd.
  if (err_fd <= kStartLockFd) {
    err_fd = fcntl(a.err_pipe_w, F_DUPFD_CLOEXEC, kStartLockFd + 1);
    if (err_fd < 0) PodChildDie(a.err_pipe_w, 1);
  }
  if (setsid() < 0) PodChildDie(err_fd, 1);
  // Claim the start file (see the top of this file) before anything of
  // the pod runs: locked, then linked under its name, which fails if a
  // restarted daemon abandoned this start meanwhile.
  int start_fd = open(a.start_tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (start_fd >= 0 && start_fd <= kStartLockFd) {
    // Clear of the descriptors rearranged below (a daemon started with
    // stdin closed would get 0 here).
    int moved = fcntl(start_fd, F_DUPFD_CLOEXEC, kStartLockFd + 1);
    close(start_fd);
    start_fd = moved;
  }
  if (start_fd < 0 || flock(start_fd, LOCK_EX) != 0) PodChildDie(err_fd, 6);
  {
    char buf[160];
    size_t n = 0;
    for (size_t i = 0; i < a.start_text_len; ++i) {
      if (n < sizeof buf - 24) buf[n++] = a.start_text[i];
    }
    char digits[24];
    size_t nd = 0;
    for (unsigned long v = static_cast<unsigned long>(syscall(SYS_getpid)); v > 0 || nd == 0; v /= 10) {
      digits[nd++] = static_cast<char>('0' + v % 10);
    }
    while (nd > 0) buf[n++] = digits[--nd];
    buf[n++] = '\n';
    if (write(start_fd, buf, n) != static_cast<ssize_t>(n)) PodChildDie(err_fd, 6);
  }
  if (link(a.start_tmp, a.start_file) != 0) {
    int err = errno;
    unlink(a.start_tmp);
    errno = err;
    PodChildDie(err_fd, 6);
  }
  unlink(a.start_tmp);
  if (a.procs[0] != '\0') {
    int fd = open(a.procs, O_WRONLY | O_CLOEXEC);
    if (fd < 0 || write(fd, "0", 1) != 1) PodChildDie(err_fd, 2);
    close(fd);
  }
  int xfd = fcntl(a.exit_fd, F_DUPFD_CLOEXEC, 10);
  if (xfd < 0) PodChildDie(err_fd, 4);
  if (dup2(a.null_fd, STDIN_FILENO) < 0 || dup2(a.log_fd, STDOUT_FILENO) < 0 ||
      dup2(a.log_fd, STDERR_FILENO) < 0 || dup2(xfd, 3) < 0) {
    PodChildDie(err_fd, 4);
  }
  // The start-file lock goes with the wrapper across exec (not CLOEXEC).
  if (start_fd == kStartLockFd) {
    if (fcntl(start_fd, F_SETFD, 0) != 0) PodChildDie(err_fd, 6);
  } else if (dup2(start_fd, kStartLockFd) < 0) {
    PodChildDie(err_fd, 6);
  }
  // Only now drop to the pod's user: the start file above is claimed as arteld.
  if (a.switch_user) {
    // No supplementary groups, then gid, then uid (real, effective and
    // saved). Raw system calls: they change this task alone, which is what
    // the child needs (glibc's wrappers would signal the daemon's threads).
    if (syscall(SYS_setgroups, 0, nullptr) != 0 || syscall(SYS_setresgid, a.gid, a.gid, a.gid) != 0 ||
        syscall(SYS_setresuid, a.uid, a.uid, a.uid) != 0) {
      PodChildDie(err_fd, 7);
    }
    if (a.uid != 0 && syscall(SYS_setresuid, 0, 0, 0) == 0) {  // must be irreversible
      errno = EPERM;
      PodChildDie(err_fd, 7);
    }
  }
  // As the pod's user: the kernel checks the directory as that user.
  if (a.working_dir[0] != '\0' && chdir(a.working_dir) != 0) PodChildDie(err_fd, 3);
  if (a.switch_user) {
    char* found = nullptr;
    for (size_t i = 0; i < a.n_candidates; ++i) {
      char* c = a.candidates[i];
      struct stat cst {};
      if (found == nullptr && stat(c, &cst) == 0 && S_ISREG(cst.st_mode) && access(c, X_OK) == 0) {
        found = c;
      }
    }
    if (found == nullptr) {
      errno = ENOENT;
      PodChildDie(err_fd, 8);
    }
    a.argv[6] = found;  // the command, after the wrapper's five words
  }
  // The daemon's handlers are not the pod's (and must not run on this
  // shared memory): defaults, then the signals the parent blocked for the
  // clone are unblocked.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) sigaction(sig, &dfl, nullptr);
  }
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
#ifdef SYS_close_range
  // Descriptors the daemon opened without O_CLOEXEC must not leak in.
  // Descriptor 3 is the exit file and kStartLockFd the start-file lock,
  // both for the wrapper alone.
  syscall(SYS_close_range, 4U, static_cast<unsigned>(kStartLockFd - 1), 4U /* CLOSE_RANGE_CLOEXEC */);
  syscall(SYS_close_range, static_cast<unsigned>(kStartLockFd + 1), ~0U, 4U /* CLOSE_RANGE_CLOEXEC */);
#endif
  execve(kShell, a.argv, a.envp);
  PodChildDie(err_fd, 5);
}

// Starts PodChild in a child process that shares the caller's memory until
// it execs: clone(CLONE_VM | CLONE_VFORK) on an mmap'd stack, with every
// signal blocked around it so that no handler of the daemon runs in the
// child. Returns the pid, or -1 with errno.
pid_t SpawnPodChild(PodChildArgs* args) {
  constexpr size_t kStack = 256 * 1024;
  void* stack = mmap(nullptr, kStack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (stack == MAP_FAILED) return -1;
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pid_t pid = clone(PodChild, static_cast<char*>(stack) + kStack, CLONE_VM | CLONE_VFORK | SIGCHLD, args);
  const int err = errno;
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  munmap(stack, kStack);
  errno = err;
  return pid;
}

class LocalRuntimeImpl final : public LocalRuntime {
 public:
  explicit LocalRuntimeImpl(Options options)
      : exit_epoll_(epoll_create1(EPOLL_CLOEXEC)),
        cuda_shim_(options.cuda_shim),
        cuda_shm_root_(fs::is_directory(options.cuda_shm_root) ? options.cuda_shm_root : "/tmp") {
    SetUpCgroups(options.cgroup_root);
  }
  ~LocalRuntimeImpl() override {
    for (auto& [key, w] : workloads_) {
      for (Pod& p : w.pods) Unwatch(&p);
    }
    if (exit_epoll_ >= 0) close(exit_epoll_);
  }

  bool WaitForExit(int timeout_ms) override {
    if (exit_epoll_ < 0) return false;
    epoll_event ev[64];
    int n = epoll_wait(exit_epoll_, ev, 64, timeout_ms);
    return n > 0;
  }

  std::string cgroup_status() const override { return cgroup_status_; }

  Result<std::vector<RunningPod>> Start(const LaunchSpec& spec, int64_t now_ms) override {
    (void)now_ms;
    size_t slash = spec.key.find('/');
    if (slash == std::string::npos || !ValidName(spec.key.substr(0, slash)) ||
        !ValidName(spec.key.substr(slash + 1))) {
      return InvalidArgument("workload key \"" + spec.key + "\" is not namespace/name");
    }
    if (spec.log_dir.empty()) return InvalidArgument("launch of " + spec.key + ": log_dir is empty");
    if (spec.pods.empty()) return InvalidArgument("launch of " + spec.key + ": no pods");
    const std::string start_id = spec.start_id.empty() ? NewStartId() : spec.start_id;
    if (!ValidStartId(start_id)) {
      return InvalidArgument("launch of " + spec.key + ": start id \"" + start_id +
                             "\" is not 1-64 letters, digits, '-' or '_'");
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (workloads_.count(spec.key) != 0) return AlreadyExists("workload " + spec.key + " is already running");
    std::string dir = spec.log_dir + "/" + spec.key;
    if (Status s = MakePrivateDirs(spec.log_dir, spec.key); !s.ok()) return s;

    Workload w;
    w.grace_ms = spec.grace_ms;
    std::vector<RunningPod> out;
    for (const PodLaunch& p : spec.pods) {
      auto pod = StartPod(spec.key, dir, p, start_id);
      if (!pod.ok()) {
        // Roll back: a workload runs whole or not at all.
        for (Pod& started : w.pods) KillAndReap(&started);
        Status s = pod.status();
        return Status(s.code(), "starting " + spec.key + " pod " + p.pod + ": " + s.message());
      }
      RunningPod rp;
      rp.pod = pod->name;
      rp.pid = pod->pid;
      rp.pgid = pod->pgid;
      rp.exit_file = pod->exit_file;
      rp.start_id = start_id;
      rp.start_file = pod->start_file;
      out.push_back(std::move(rp));
      w.pods.push_back(std::move(pod).value());
      Watch(&w.pods.back());
    }
    workloads_.emplace(spec.key, std::move(w));
    return out;
  }

  Status Stop(const std::string& key, int64_t now_ms) override {
    int64_t grace = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = workloads_.find(key);
      if (it == workloads_.end()) return NotFound("workload " + key + " is not running");
      grace = it->second.grace_ms;
    }
    return StopAt(key, now_ms, now_ms + std::max<int64_t>(grace, 0));
  }

  Status StopAt(const std::string& key, int64_t now_ms, int64_t kill_at_ms) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = workloads_.find(key);
    if (it == workloads_.end()) return NotFound("workload " + key + " is not running");
    Workload& w = it->second;
    bool now_kill = kill_at_ms <= now_ms;
    for (Pod& p : w.pods) {
      if (Signalable(p)) kill(-p.pgid, now_kill ? SIGKILL : SIGTERM);
    }
    if (now_kill) {
      w.killed = true;
    } else if (!w.kill_at_ms || *w.kill_at_ms > kill_at_ms) {
      w.kill_at_ms = kill_at_ms;
    }
    return Status::Ok();
  }

  void Tick(int64_t now_ms) override {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [key, w] : workloads_) {
      if (w.killed || !w.kill_at_ms || now_ms < *w.kill_at_ms) continue;
      for (Pod& p : w.pods) {
        if (Signalable(p)) kill(-p.pgid, SIGKILL);
      }
      w.killed = true;
    }
  }

  std::vector<Exit> Poll() override {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<Exit> exits;
    for (auto it = workloads_.begin(); it != workloads_.end();) {
      bool all_done = true;
      for (Pod& p : it->second.pods) {
        if (!p.done) {
          if (std::optional<Exit> e = CheckExit(&p)) {
            e->key = it->first;
            e->pod = p.name;
            exits.push_back(*e);
          }
          if (p.done) Unwatch(&p);
        }
        all_done = all_done && p.done;
      }
      it = all_done ? workloads_.erase(it) : std::next(it);
    }
    return exits;
  }

  bool Adopt(const std::string& key, const std::vector<RunningPod>& pods, int64_t grace_ms) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (workloads_.count(key) != 0) return true;
    Workload w;
    w.grace_ms = grace_ms;
    bool any = false;
    for (const RunningPod& rp : pods) {
      Pod p;
      p.name = rp.pod;
      p.pid = rp.pid;
      p.pgid = rp.pgid > 0 ? rp.pgid : rp.pid;
      p.exit_file = rp.exit_file;
      p.start_file = rp.start_id.empty() ? std::string() : rp.start_file;
      p.adopted = true;
      p.marker = kNamePrefix + key + "/" + rp.pod;
      bool ours = false;
      if (!p.start_file.empty()) {
        // The wrapper's lock on its start file says whether it lives; the
        // start file must be this start's (a pid may be reused, a lock not).
        auto content = ReadFile(p.start_file);
        ours =
            rp.pid > 0 && content && content->rfind(rp.start_id + " ", 0) == 0 && StartFileHeld(p.start_file);
      } else {
        std::vector<std::string> argv = ProcCmdline(rp.pid);
        ours = rp.pid > 0 && IsWrapperArgv(argv) && argv[3] == p.marker;
        if (ours && p.exit_file.empty()) p.exit_file = argv[4];
        ours = ours && ProcessAlive(rp.pid);
      }
      if (ours) {
        any = true;
      } else {
        // Gone (or its pid now belongs to someone else): only its exit file
        // can tell what happened. Poll reports it, or SIGKILL when absent.
        p.pid = 0;
        if (ReadExitFile(p.exit_file)) any = true;
      }
      w.pods.push_back(std::move(p));
    }
    if (!any) return false;
    workloads_.emplace(key, std::move(w));
    return true;
  }

  std::vector<RunningPod> Find(const std::string& key, const std::string& log_dir,
                               int64_t since_ms) override {
    std::vector<RunningPod> out;
    const std::string prefix = std::string(kNamePrefix) + key + "/";
    // Only pods of this runtime's log directory: another daemon on the host
    // (another data dir) may run a workload of the same name.
    const std::string own_dir = (fs::path(log_dir) / key).string() + "/";
    // Live wrappers: their $0 names the workload and the pod.
    if (DIR* proc = opendir("/proc")) {
      while (dirent* de = readdir(proc)) {
        char* end = nullptr;
        long pid = std::strtol(de->d_name, &end, 10);
        if (end == de->d_name || *end != '\0' || pid <= 0) continue;
        std::vector<std::string> argv = ProcCmdline(static_cast<int>(pid));
        if (!IsWrapperArgv(argv)) continue;
        if (argv[3].rfind(prefix, 0) != 0 || argv[4].rfind(own_dir, 0) != 0) continue;
        if (!ProcessAlive(static_cast<int>(pid))) continue;
        // The wrapper leads its process group (setsid). A child it forked
        // for the command shows the same cmdline until it execs: skip it.
        if (getpgid(static_cast<pid_t>(pid)) != static_cast<pid_t>(pid)) continue;
        RunningPod rp;
        rp.pod = argv[3].substr(prefix.size());
        rp.pid = static_cast<int>(pid);
        rp.pgid = rp.pid;  // setsid made the wrapper its group leader
        rp.exit_file = argv[4];
        if (auto env = ReadFile("/proc/" + std::to_string(pid) + "/environ")) {
          std::string_view rest(*env);
          while (!rest.empty()) {
            size_t nul = rest.find('\0');
            std::string_view kv = rest.substr(0, nul);
            constexpr std::string_view kVar = "CUDA_VISIBLE_DEVICES=";
            if (kv.substr(0, kVar.size()) == kVar) {
              std::string_view v = kv.substr(kVar.size());
              while (!v.empty()) {
                size_t comma = v.find(',');
                if (comma != 0) rp.visible_devices.emplace_back(v.substr(0, comma));
                if (comma == std::string_view::npos) break;
                v.remove_prefix(comma + 1);
              }
            }
            if (nul == std::string_view::npos) break;
            rest.remove_prefix(nul + 1);
          }
        }
        out.push_back(std::move(rp));
      }
      closedir(proc);
    }
    // Pods that already exited: a fresh exit file in the workload's directory.
    std::error_code ec;
    const fs::path dir = fs::path(log_dir) / key;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      const fs::path& f = it->path();
      if (f.extension() != ".exit") continue;
      std::string pod = f.stem().string();
      bool live = false;
      for (const RunningPod& rp : out) live = live || rp.pod == pod;
      if (live) continue;
      struct stat st {};
      if (stat(f.c_str(), &st) != 0) continue;
      int64_t mtime_ms = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1000000;
      if (mtime_ms < since_ms) continue;
      // Opened (empty) at the start: a status only once the wrapper wrote it.
      if (!ReadExitFile(f.string())) continue;
      RunningPod rp;
      rp.pod = pod;
      rp.exit_file = f.string();
      out.push_back(std::move(rp));
    }
    std::sort(out.begin(), out.end(), [](const RunningPod& a, const RunningPod& b) { return a.pod < b.pod; });
    return out;
  }

  std::vector<RunningPod> FindStart(const std::string& key, const std::string& log_dir,
                                    const std::string& start_id,
                                    const std::vector<std::string>& pods) override {
    std::vector<RunningPod> out;
    if (!ValidStartId(start_id)) return out;
    const fs::path dir = fs::path(log_dir) / key;
    for (const std::string& pod : pods) {
      if (!ValidName(pod)) continue;
      const std::string start_file = (dir / (pod + ".start")).string();
      std::optional<std::string> content = ReadFile(start_file);
      if (!content) {
        // Never claimed by this start's child: claim it for ourselves, so
        // that a child of the dead daemon that is still on its way fails.
        std::error_code ec;
        fs::create_directories(dir, ec);
        const std::string tmp = start_file + ".abandon." + start_id;
        int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd >= 0) {
          const std::string text = "abandoned " + start_id + "\n";
          ssize_t n = write(fd, text.data(), text.size());
          (void)n;
          close(fd);
          if (link(tmp.c_str(), start_file.c_str()) != 0) content = ReadFile(start_file);  // the child won
          unlink(tmp.c_str());
        }
        if (!content) continue;  // not started, and now it never will
      }
      std::istringstream in(*content);
      std::string id;
      int pid = 0;
      in >> id >> pid;
      // Another id: the file of an earlier start, not yet replaced, so this
      // start's child was never forked (the file is removed before the fork).
      if (id != start_id || pid <= 0) continue;
      RunningPod rp;
      rp.pod = pod;
      rp.pid = pid;
      rp.pgid = pid;  // the child called setsid before it claimed the file
      rp.exit_file = (dir / (pod + ".exit")).string();
      rp.start_id = start_id;
      rp.start_file = start_file;
      out.push_back(std::move(rp));
    }
    return out;
  }

  bool IsRunning(const std::string& key) const override {
    std::lock_guard<std::mutex> lock(mu_);
    return workloads_.count(key) != 0;
  }

 private:
  void SetUpCgroups(const std::string& root_option) {
    if (root_option == "none") {
      cgroup_status_ = "cgroup limits disabled (cgroup root \"none\")";
      return;
    }
    std::string root = root_option.empty() ? "/sys/fs/cgroup" : root_option;
    auto controllers = ReadFile(root + "/cgroup.controllers");
    if (!controllers) {
      cgroup_status_ = "cgroup v2 limits unavailable: " + root +
                       " is not a cgroup v2 hierarchy (no cgroup.controllers; cgroup v1 or hybrid host); "
                       "pods run without cpu/memory limits";
      return;
    }
    for (const char* c : {"cpu", "memory"}) {
      if ((" " + *controllers + " ").find(std::string(" ") + c) == std::string::npos) {
        cgroup_status_ = std::string("cgroup v2 limits unavailable: controller \"") + c +
                         "\" is not enabled for " + root + " (cgroup.controllers: \"" +
                         controllers->substr(0, controllers->find('\n')) +
                         "\"); delegate it from the parent cgroup; pods run without cpu/memory limits";
        return;
      }
    }
    std::string base = root + "/artel";
    if (mkdir(base.c_str(), 0755) != 0 && errno != EEXIST) {
      cgroup_status_ = "cgroup v2 limits unavailable: cannot create " + base + ": " + Errno(errno) +
                       " (run arteld as root or give it a delegated cgroup with --cgroup-root); "
                       "pods run without cpu/memory limits";
      return;
    }
    for (const std::string& dir : {root, base}) {
      Status s = WriteFile(dir + "/cgroup.subtree_control", "+cpu +memory");
      if (!s.ok()) {
        cgroup_status_ = "cgroup v2 limits unavailable: " + s.message() +
                         " (a cgroup with processes cannot delegate controllers; give arteld an empty "
                         "delegated cgroup with --cgroup-root); pods run without cpu/memory limits";
        return;
      }
    }
    cgroup_base_ = base;
    cgroup_status_ = "cgroup v2 limits active under " + base;
  }

  // Creates the pod's cgroup with its limits; empty when cgroups are off.
  Result<std::string> MakeCgroup(const std::string& key, const PodLaunch& p) {
    if (cgroup_base_.empty()) return std::string();
    std::string name = key + "." + p.pod;
    for (char& c : name) {
      if (c == '/') c = '.';
    }
    std::string dir = cgroup_base_ + "/" + name;
    if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
      return FailedPrecondition("cannot create cgroup " + dir + ": " + Errno(errno));
    }
    // cpu.max is "<quota> <period>" in microseconds: 1000 millis = one CPU.
    std::string cpu = p.cpu_millis > 0 ? std::to_string(p.cpu_millis * 100) + " 100000" : "max 100000";
    std::string mem = p.memory_bytes > 0 ? std::to_string(p.memory_bytes) : "max";
    for (const auto& [file, value] :
         {std::pair<std::string, std::string>{"cpu.max", cpu}, {"memory.max", mem}}) {
      if (Status s = WriteFile(dir + "/" + file, value); !s.ok()) {
        rmdir(dir.c_str());
        return s;
      }
    }
    return dir;
  }

  Result<Pod> StartPod(const std::string& key, const std::string& dir, const PodLaunch& p,
                       const std::string& start_id) {
    if (!ValidName(p.pod)) return InvalidArgument("pod name \"" + p.pod + "\" is not valid");
    if (p.command.empty()) return InvalidArgument("no command");
    // A pod switching users is checked by the kernel, as that user, when
    // it enters the directory (a check as arteld's user would tell a
    // tenant which of arteld's paths exist).
    if (!p.working_dir.empty() && p.uid < 0) {
      std::error_code ec;
      if (!fs::is_directory(p.working_dir, ec)) {
        return InvalidArgument("working directory " + p.working_dir + " does not exist");
      }
    }
    // Environment: the inherited allowlist, then the spec, then Artel's own.
    std::map<std::string, std::string> env;
    for (const char* name : kInheritedEnv) {
      // Another user's pod does not get arteld's home and user names.
      const std::string_view n = name;
      if (p.uid >= 0 && (n == "HOME" || n == "USER" || n == "LOGNAME")) continue;
      if (const char* v = getenv(name)) env[name] = v;
    }
    for (const auto& [k, v] : p.env) env[k] = v;
    if (env.count("PATH") == 0) env["PATH"] = kDefaultPath;
    std::string devices;
    for (const std::string& d : p.visible_devices) devices += (devices.empty() ? "" : ",") + d;
    env["CUDA_VISIBLE_DEVICES"] = devices;  // Empty: the pod sees no GPU.
    for (const auto& [k, v] : p.slice_env) env[k] = v;
    env["ARTEL_WORKLOAD"] = key;
    env["ARTEL_POD"] = p.pod;

    // A pod of another user has its command looked up as that user, in the
    // child (so a tenant cannot probe arteld's paths); here only the
    // candidates are listed.
    std::vector<std::string> candidates;
    Result<std::string> cmd = p.command[0];
    if (p.uid >= 0) {
      if (p.command[0].empty()) return InvalidArgument("empty command");
      if (p.command[0].find('/') != std::string::npos) {
        candidates.push_back(p.command[0]);
      } else {
        std::stringstream dirs(env["PATH"]);
        for (std::string d; std::getline(dirs, d, ':');) {
          candidates.push_back((d.empty() ? "." : d) + "/" + p.command[0]);
        }
      }
    } else {
      cmd = ResolveCommand(p.command[0], env["PATH"], p.working_dir);
      if (!cmd.ok()) return cmd.status();
    }
    std::vector<char*> candidate_ptrs;
    for (std::string& c : candidates) candidate_ptrs.push_back(c.data());

    Pod pod;
    pod.name = p.pod;
    pod.exit_file = dir + "/" + p.pod + ".exit";
    pod.start_file = dir + "/" + p.pod + ".start";
    std::string log_file = dir + "/" + p.pod + ".log";
    unlink(pod.exit_file.c_str());  // A leftover from an earlier run must not be read as this run's status.
    // The earlier start's file goes before the fork: a start file that names
    // another id then proves that this start's child was never forked.
    if (unlink(pod.start_file.c_str()) != 0 && errno != ENOENT) {
      return FailedPrecondition("cannot remove " + pod.start_file + ": " + Errno(errno));
    }
    const std::string start_tmp = pod.start_file + "." + start_id + ".tmp";
    const std::string start_text = start_id + " ";  // the child appends its pid
    const bool switch_user = p.uid >= 0;
    const uid_t uid = switch_user ? static_cast<uid_t>(p.uid) : 0;
    const gid_t gid = switch_user ? static_cast<gid_t>(p.gid >= 0 ? p.gid : p.uid) : 0;

    auto cg = MakeCgroup(key, p);
    if (!cg.ok()) return cg.status();
    pod.cgroup = *cg;
    if (p.gpu_memory_share && !cuda_shim_.empty()) {
      // The pod's accounting segment lives in a directory only its user can
      // reach (mkdtemp: 0700, a name no one can squat).
      std::string tmpl = cuda_shm_root_ + "/artel-cuda-XXXXXX";
      if (mkdtemp(tmpl.data()) == nullptr || (switch_user && chown(tmpl.c_str(), uid, gid) != 0)) {
        const int err = errno;
        RemoveCgroup(pod);
        return FailedPrecondition("cannot create the GPU share directory under " + cuda_shm_root_ + ": " +
                                  Errno(err));
      }
      pod.cuda_dir = tmpl;
      env["ARTEL_CUDA_SHM"] = tmpl + "/segment";
      const std::string user_preload = env.count("LD_PRELOAD") ? " " + env["LD_PRELOAD"] : "";
      env["LD_PRELOAD"] = cuda_shim_ + user_preload;
    }

    // Everything the child needs is built before the clone: the child only
    // makes system calls (PodChild).
    std::vector<std::string> args = {kShell,        "-c",     kWrapper, kNamePrefix + key + "/" + p.pod,
                                     pod.exit_file, start_id, *cmd};
    args.insert(args.end(), p.command.begin() + 1, p.command.end());
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<std::string> env_strings;
    for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
    std::vector<char*> envp;
    for (std::string& e : env_strings) envp.push_back(e.data());
    envp.push_back(nullptr);
    std::string procs = pod.cgroup.empty() ? std::string() : pod.cgroup + "/cgroup.procs";

    // Opened here, before the child drops to the pod's user: log and exit
    // files are arteld's (0600); the pod only holds descriptors to them.
    int log_fd = open(log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (log_fd < 0) {
      RemoveCgroup(pod);
      return FailedPrecondition("cannot open log file " + log_file + ": " + Errno(errno));
    }
    fchmod(log_fd, 0600);  // A log left by an older version may be 0644.
    int exit_fd = open(pod.exit_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (exit_fd < 0) {
      int err = errno;
      close(log_fd);
      RemoveCgroup(pod);
      return FailedPrecondition("cannot open exit file " + pod.exit_file + ": " + Errno(err));
    }
    int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    int err_pipe[2];
    if (null_fd < 0 || pipe2(err_pipe, O_CLOEXEC) != 0) {
      int err = errno;
      close(log_fd);
      close(exit_fd);
      if (null_fd >= 0) close(null_fd);
      RemoveCgroup(pod);
      return FailedPrecondition("cannot set up pod I/O: " + Errno(err));
    }

    PodChildArgs child;
    child.err_pipe_w = err_pipe[1];
    child.exit_fd = exit_fd;
    child.log_fd = log_fd;
    child.null_fd = null_fd;
    child.start_tmp = start_tmp.c_str();
    child.start_file = pod.start_file.c_str();
    child.start_text = start_text.data();
    child.start_text_len = start_text.size();
    child.procs = procs.c_str();
    child.switch_user = switch_user;
    child.uid = uid;
    child.gid = gid;
    child.working_dir = p.working_dir.c_str();
    child.candidates = candidate_ptrs.data();
    child.n_candidates = candidate_ptrs.size();
    child.argv = argv.data();
    child.envp = envp.data();
    pid_t pid = SpawnPodChild(&child);
    int spawn_errno = errno;
    close(err_pipe[1]);
    close(log_fd);
    close(exit_fd);
    close(null_fd);
    if (pid < 0) {
      close(err_pipe[0]);
      RemoveCgroup(pod);
      return FailedPrecondition("cannot start the pod process (clone): " + Errno(spawn_errno));
    }
    int msg[2] = {0, 0};
    ssize_t n;
    do {
      n = read(err_pipe[0], msg, sizeof(msg));
    } while (n < 0 && errno == EINTR);
    close(err_pipe[0]);
    if (n > 0) {
      int status = 0;
      waitpid(pid, &status, 0);
      RemoveCgroup(pod);
      static const char* const kStages[] = {
          "start",           "setsid",       "join cgroup",          "chdir to working directory",
          "redirect output", "exec /bin/sh", "claim the start file", "switch to the pod's user",
          "find the command"};
      std::string stage = msg[0] >= 1 && msg[0] <= 8 ? kStages[msg[0]] : kStages[0];
      if (msg[0] == 8) {
        return InvalidArgument("command " + p.command[0] +
                               (p.command[0].find('/') != std::string::npos
                                    ? " is not an executable file"
                                    : " not found in PATH " + env["PATH"]) +
                               " for uid " + std::to_string(uid) + " gid " + std::to_string(gid));
      }
      if (msg[0] == 3) stage += " " + p.working_dir;
      if (switch_user && (msg[0] == 3 || msg[0] == 7)) {
        stage += " as uid " + std::to_string(uid) + " gid " + std::to_string(gid);
      }
      return FailedPrecondition(stage + " failed: " + Errno(msg[1]));
    }
    pod.pid = pid;
    pod.pgid = pid;  // setsid made the wrapper a session and group leader.
    return pod;
  }

  // Whether the pod's process group may be signalled: its wrapper was seen
  // alive, so the group id is still the pod's.
  static bool Signalable(const Pod& p) { return !p.done && !p.draining && p.pid > 0 && p.pgid > 0; }

  // Returns the pod's exit if it has ended, marking it done.
  std::optional<Exit> CheckExit(Pod* p) {
    if (p->draining) {
      if (GroupAlive(p->pgid)) {
        kill(-p->pgid, SIGKILL);  // The group is non-empty, so its id is still the pod's.
        return std::nullopt;
      }
      std::optional<Exit> exit = p->draining;
      p->draining.reset();
      p->done = true;
      RemoveCgroup(*p);
      return exit;
    }
    std::optional<Exit> exit;
    bool seen_alive = false;  // the group id is the pod's: leftovers may be killed
    if (p->pid > 0 && !p->start_file.empty() && p->adopted) {
      if (StartFileHeld(p->start_file)) return std::nullopt;  // Adopted, still running.
      seen_alive = true;
    } else if (p->pid > 0) {
      // Peek first: while the wrapper is a zombie its pid (= the group id)
      // cannot be reused, so the group can be cleaned up safely.
      siginfo_t info{};
      int rc = waitid(P_PID, static_cast<id_t>(p->pid), &info, WEXITED | WNOHANG | WNOWAIT);
      if (rc == 0 && info.si_pid == p->pid) {
        kill(-p->pgid, SIGKILL);  // Leftover background processes of the pod.
        int status = 0;
        waitpid(p->pid, &status, 0);
        exit = ExitFromWaitStatus(status);
      } else if (rc == 0) {
        return std::nullopt;  // Our child, still running.
      } else if (ProcessAlive(p->pid) && (p->marker.empty() || IsOurs(p->pid, p->marker))) {
        return std::nullopt;  // Adopted (not our child), still running.
      } else {
        seen_alive = p->adopted;
      }
    }
    if (!exit) {
      exit = ReadExitFile(p->exit_file);
      if (!exit) {
        exit = Exit{};
        exit->signaled = true;
        exit->signal = SIGKILL;
      }
    }
    // Our child's group was killed above while the wrapper was a zombie; an
    // adopted one's is killed now that its wrapper is seen gone. Either way
    // the exit waits until no process of the group is left.
    if (seen_alive && GroupAlive(p->pgid)) kill(-p->pgid, SIGKILL);
    if ((seen_alive || !p->adopted) && GroupAlive(p->pgid)) {
      p->draining = exit;
      return std::nullopt;
    }
    p->done = true;
    RemoveCgroup(*p);
    return exit;
  }

  // A pidfd (pidfd_open, close-on-exec) of the pod's wrapper, one-shot in the
  // epoll set behind WaitForExit: it turns readable when the wrapper ends.
  // Without pidfds (Linux < 5.3) exits are found by Poll alone.
  void Watch(Pod* p) {
    if (exit_epoll_ < 0 || p->pid <= 0) return;
    int fd = static_cast<int>(syscall(SYS_pidfd_open, p->pid, 0));
    if (fd < 0) return;
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLONESHOT;
    ev.data.fd = fd;
    if (epoll_ctl(exit_epoll_, EPOLL_CTL_ADD, fd, &ev) != 0) {
      close(fd);
      return;
    }
    p->pidfd = fd;
  }
  static void Unwatch(Pod* p) {
    if (p->pidfd >= 0) close(p->pidfd);  // closing removes it from the epoll set
    p->pidfd = -1;
  }

  void KillAndReap(Pod* p) {
    Unwatch(p);
    kill(-p->pgid, SIGKILL);
    int status = 0;
    while (waitpid(p->pid, &status, 0) < 0 && errno == EINTR) {
    }
    p->done = true;
    RemoveCgroup(*p);
  }

  // Also removes the pod's libartel-cuda segment directory.
  static void RemoveCgroup(const Pod& p) {
    if (!p.cgroup.empty()) rmdir(p.cgroup.c_str());
    if (!p.cuda_dir.empty()) {
      unlink((p.cuda_dir + "/segment").c_str());
      rmdir(p.cuda_dir.c_str());
    }
  }

  const int exit_epoll_;  // WaitForExit's epoll set of the pods' pidfds; -1 if none
  mutable std::mutex mu_;
  std::map<std::string, Workload> workloads_;
  const std::string cuda_shim_, cuda_shm_root_;
  std::string cgroup_base_;  // empty = no cgroup limits
  std::string cgroup_status_;
};

}  // namespace

Result<std::unique_ptr<LocalRuntime>> LocalRuntime::Create(Options options) {
  struct stat st {};
  if (stat(kShell, &st) != 0) return FailedPrecondition(std::string("local runtime needs ") + kShell);
  return std::unique_ptr<LocalRuntime>(std::make_unique<LocalRuntimeImpl>(std::move(options)));
}

}  // namespace artel::runtime
