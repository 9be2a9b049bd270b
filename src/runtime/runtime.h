// Runtime: where admitted pods actually run on this host, and what GPUs the
// host has.
//
// `GpuDiscovery` reports the host's GPUs: `NvmlDiscovery` loads
// libnvidia-ml.so.1 with dlopen at run time (no build-time CUDA
// dependency); `FakeDiscovery` builds an inventory from a spec such as
// "8xH100-80GB,4xA100-40GB" for hosts without GPUs.
//
// `LocalRuntime` starts each pod of an admitted workload as a real process
// in its own process group (command, args, env, working dir; stdout and
// stderr to `<log_dir>/<ns>/<name>/<pod>.log`, directories 0700 and files
// 0600, opened before the pod drops to its own user), sets CUDA_VISIBLE_DEVICES to
// the assigned GPU or MIG UUIDs plus slice limits in the environment, and
// applies cgroup v2 cpu/memory limits when the host allows it. `Stop` sends
// SIGTERM to the process group and SIGKILL after the grace period. `Poll`
// reaps exits without blocking. The clock is injected: the runtime never
// sleeps; the daemon calls `Tick(now)` to escalate overdue SIGKILLs.
//
// Thread-safety: `LocalRuntime` methods are safe to call from many threads.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace artel::runtime {

struct MigInstanceInfo {
  std::string profile;  // e.g. "3g.40gb"
  int start_slot = 0;
  std::string uuid;  // MIG-...
};

struct GpuInfo {
  int index = 0;
  std::string uuid;
  std::string model;  // e.g. "H100-80GB" (normalised), raw name in `name`
  std::string name;
  int64_t memory_bytes = 0;
  bool mig_enabled = false;
  std::vector<MigInstanceInfo> mig_instances;
  int utilization_pct = 0;  // last sample
  int64_t memory_used_bytes = 0;
  bool healthy = true;
  struct Process {
    int pid = 0;
    int64_t used_bytes = 0;
  };
  std::vector<Process> processes;
};

class GpuDiscovery {
 public:
  virtual ~GpuDiscovery() = default;
  virtual std::string mode() const = 0;  // "nvml" or "fake"
  virtual Result<std::vector<GpuInfo>> Discover() = 0;
};

// Loads NVML; fails with a clear message when libnvidia-ml.so.1 is absent.
Result<std::unique_ptr<GpuDiscovery>> MakeNvmlDiscovery();
// The same with an explicit library path or soname (tests load a stub NVML).
Result<std::unique_ptr<GpuDiscovery>> MakeNvmlDiscovery(const std::string& library);
// Parses "8xH100-80GB,4xA100-40GB" (models per docs/gpus.md).
Result<std::unique_ptr<GpuDiscovery>> MakeFakeDiscovery(const std::string& spec);

struct PodLaunch {
  std::string pod;                   // "<podset>-<index>"
  std::vector<std::string> command;  // argv; command[0] resolved via PATH
  std::map<std::string, std::string> env;
  // Where the pod runs: it enters this directory after dropping to `uid`, so
  // the kernel checks the access as the pod's user. Empty = the runtime's.
  std::string working_dir;
  // The user the pod runs as (docs/daemon.md, "Pod users"). With uid >= 0
  // the child clears its supplementary groups and sets gid, then uid, after
  // fork and before it enters `working_dir` and execs; -1 = the runtime's
  // own user. The log and exit files are opened by the runtime before that,
  // so the pod needs no access to the log directory.
  int64_t uid = -1;
  int64_t gid = -1;
  std::vector<std::string> visible_devices;      // GPU or MIG UUIDs
  std::map<std::string, std::string> slice_env;  // e.g. ARTEL_GPU_MEMORY_LIMIT
  // On a memory share of a GPU (not a whole GPU, not a MIG instance): the
  // runtime preloads Options::cuda_shim with a segment of the pod's own
  // (docs/gpus.md, "libartel-cuda").
  bool gpu_memory_share = false;
  int64_t cpu_millis = 0;    // cgroup cpu.max when > 0
  int64_t memory_bytes = 0;  // cgroup memory.max when > 0
};

struct LaunchSpec {
  std::string key;  // "ns/name"
  std::vector<PodLaunch> pods;
  std::string log_dir;
  int64_t grace_ms = 30000;
  // Names this start (letters, digits, '-', '_'); the daemon journals it
  // before `Start` forks (docs/daemon.md, "Start ids"). Each pod's child
  // claims `<log_dir>/<ns>/<name>/<pod>.start` with it before it runs
  // anything, so that a restarted daemon can tell a start that never
  // happened from one that ran (`FindStart`). Empty: `Start` makes one.
  std::string start_id;
};

struct Exit {
  std::string key;
  std::string pod;
  int exit_code = 0;  // valid when !signaled
  int signal = 0;     // terminating signal when signaled
  bool signaled = false;
};

struct RunningPod {
  std::string pod;
  int pid = 0;
  int pgid = 0;
  // Where the pod's wrapper writes its exit status (docs/gpus.md, "Pod
  // processes"). Set by `Start`; optional for `Adopt`, which otherwise reads
  // it from the live process's command line. Journal it to learn the exit
  // code of a pod that finished while the daemon was down.
  std::string exit_file;
  // GPU or MIG UUIDs the pod was given (CUDA_VISIBLE_DEVICES); filled by
  // `Find` from the live process's environment, empty otherwise.
  std::vector<std::string> visible_devices;
  // The start this pod belongs to, and its start file (`LaunchSpec::start_id`).
  // With them `Adopt` tells whether the pod's wrapper lives by the lock it
  // holds on the start file, immune to pid reuse. Empty for pods started
  // by an older arteld: then the pid and /proc/<pid>/cmdline tell.
  std::string start_id;
  std::string start_file;
};

class LocalRuntime {
 public:
  struct Options {
    std::string cgroup_root;  // empty = autodetect /sys/fs/cgroup; "none" = disabled
    // libartel-cuda.so, preloaded into pods with `gpu_memory_share`; empty =
    // none (their limits are then advisory). Each such pod gets a directory
    // of its own under `cuda_shm_root`, 0700 and owned by the pod's user,
    // for its accounting segment (ARTEL_CUDA_SHM); removed when it exits.
    std::string cuda_shim;
    std::string cuda_shm_root = "/dev/shm";
  };
  static Result<std::unique_ptr<LocalRuntime>> Create(Options options);
  // Leaves pods running, so that a restarted daemon can `Adopt` them.
  virtual ~LocalRuntime() = default;

  // Human-readable note on cgroup support ("cgroup v2 limits active" or why not).
  virtual std::string cgroup_status() const = 0;

  // Starts every pod; on any failure kills the ones started and fails.
  virtual Result<std::vector<RunningPod>> Start(const LaunchSpec& spec, int64_t now_ms) = 0;
  // SIGTERM to each pod's process group now; SIGKILL at now + grace via Tick.
  virtual Status Stop(const std::string& key, int64_t now_ms) = 0;
  // The same with an explicit SIGKILL deadline (a journaled one, after a
  // restart; a deadline in the past kills at the next Tick). An earlier
  // deadline already set is kept.
  virtual Status StopAt(const std::string& key, int64_t now_ms, int64_t kill_at_ms) = 0;
  virtual void Tick(int64_t now_ms) = 0;
  // Reaps exited pods (non-blocking). A pod's exit is reported only once
  // every process of its process group is gone: when the wrapper exits,
  // what is left of the group gets SIGKILL, and the exit waits for it.
  virtual std::vector<Exit> Poll() = 0;
  // Blocks up to `timeout_ms` for a pod started by this runtime to end; true
  // when one did since the last call (then Poll has something to reap, or
  // will once the pod's group is empty). Lets the caller reap on the event
  // rather than on a timer. Safe from any thread, concurrently with the
  // other methods; each ended pod is reported once. Pods that were adopted
  // after a restart are not watched (their exits show at the next Poll).
  virtual bool WaitForExit(int timeout_ms) = 0;
  // After a daemon restart: re-attach to pods that still run (by pid
  // liveness, checked against the wrapper's command line so that a reused
  // pid is not mistaken for the pod). A pod that already exited but left its
  // exit file (`RunningPod::exit_file`) counts as adopted and its exit is
  // reported by the next `Poll`. Returns false, and tracks nothing, if no pod
  // is alive and none left an exit status (the caller requeues).
  virtual bool Adopt(const std::string& key, const std::vector<RunningPod>& pods, int64_t grace_ms) = 0;
  // After a daemon restart, for a workload whose start was never recorded
  // (the daemon died between starting its pods and journaling them): the
  // pods an earlier runtime left for `key` under `log_dir`. A live wrapper
  // is found by scanning /proc for its marker (`artel-pod:<key>/<pod>`); a
  // pod that already exited is found by its exit file, counted only when the
  // file was written at or after `since_ms` (wall-clock ms; the admission
  // time), so that a file left by an earlier run is not mistaken for this
  // one's. Pass the result to `Adopt`. Empty when nothing was started.
  // Only for starts without a start id (journals of an older arteld);
  // `FindStart` replaces it.
  virtual std::vector<RunningPod> Find(const std::string& key, const std::string& log_dir,
                                       int64_t since_ms) = 0;
  // After a daemon restart, for a start journaled with `start_id` before its
  // fork: what became of each of `pods` (pod names). A pod whose start file
  // holds the id ran: it is returned with its pid, alive or not (pass it to
  // `Adopt`, which also reads its exit file). A pod without it never ran
  // anything: it is left out, and its start file is claimed for the
  // restarted daemon ("abandoned <id>"), so that a child of the dead daemon
  // that had not got so far can never run it later.
  virtual std::vector<RunningPod> FindStart(const std::string& key, const std::string& log_dir,
                                            const std::string& start_id,
                                            const std::vector<std::string>& pods) = 0;
  virtual bool IsRunning(const std::string& key) const = 0;
};

}  // namespace artel::runtime
