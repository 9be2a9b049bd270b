// The accounting that libartel-cuda shares across every process of one pod:
// a small file mapped MAP_SHARED (its path from ARTEL_CUDA_SHM; created if
// absent, mode 0600) holding, per GPU UUID, the share's limit and one slot
// per process with the bytes that process has charged. The pod's use of a
// GPU is the sum of its slots, so a dead process is reconciled by dropping
// its slot (kill(pid, 0) == ESRCH, or a pid reused by a process with
// another start time); nothing is ever subtracted below zero.
//
// Thread-safety: every method may be called from any thread of any process
// mapping the segment; they serialise on one process-shared robust mutex in
// the segment (a holder that dies is recovered through EOWNERDEAD). The
// process-local fields (own pid, cached slot indices) are reset in a forked
// child by AfterFork(), which must run before the child uses the segment.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace artel::cuda_shim {

class Segment {
 public:
  static constexpr int kMaxGpus = 16;
  static constexpr int kMaxProcs = 128;

  // Maps `path` (created if absent); an empty path, or one that cannot be
  // opened, gives a private anonymous segment (shared only with forked
  // children) and sets `error` to say why when it was not empty.
  bool Open(const std::string& path, std::string* error);
  // Index of the GPU with this UUID, added if new; -1 when the table is full.
  int GpuIndex(const char* uuid);
  // Index of the GPU with this UUID, or -1 if no process has used it yet.
  int FindGpu(const char* uuid);
  // Charges `bytes` to this process on GPU `gpu` if the pod's use stays at
  // or under `limit` (dead processes are reconciled first when it would
  // not). False: nothing charged.
  bool Reserve(int gpu, uint64_t bytes, uint64_t limit);
  // Charges without a limit check (a driver that allocated more than the
  // estimate reserved, such as a pitch rounded up).
  void Add(int gpu, uint64_t bytes);
  // Returns what was charged; never below zero.
  void Release(int gpu, uint64_t bytes);
  // The pod's bytes on GPU `gpu` (sum of all live processes' slots).
  uint64_t Used(int gpu);
  // True when `pid` has a slot (any GPU): a process of this pod.
  bool HasPid(int pid);
  // Drops the slots of processes that no longer exist; returns how many.
  int Reconcile();
  // In a forked child: a new pid and start time, no cached slots.
  void AfterFork();
  // Test hook: takes the lock, creates `ready_file`, never returns (the
  // caller is killed).
  [[noreturn]] void HoldLockForever(const char* ready_file);

 private:
  struct Layout;
  bool Lock();
  void Unlock();
  int OwnSlotLocked(int gpu);
  uint64_t UsedLocked(int gpu) const;
  int ReconcileLocked();

  Layout* seg_ = nullptr;
  int pid_ = 0;
  uint64_t start_time_ = 0;
  uint64_t pidns_ = 0;
  int slot_[kMaxGpus] = {};  // cached own slot + 1 per GPU; 0 = unknown
};

// The start time (clock ticks since boot) of `pid` from /proc, 0 if unknown.
uint64_t ProcessStartTime(pid_t pid);

}  // namespace artel::cuda_shim
