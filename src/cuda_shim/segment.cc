// The shared accounting segment of libartel-cuda (segment.h).
#include "cuda_shim/segment.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

namespace artel::cuda_shim {

namespace {
constexpr uint32_t kMagic = 0x31554341;  // "ACU1"
constexpr uint32_t kVersion = 1;

uint64_t OwnPidNamespace() {
  struct stat st;
  return stat("/proc/self/ns/pid", &st) == 0 ? static_cast<uint64_t>(st.st_ino) : 0;
}
}  // namespace

struct Segment::Layout {
  struct Slot {
    int32_t pid;  // 0 = free
    uint32_t pad;
    uint64_t pidns;       // inode of the process's pid namespace
    uint64_t start_time;  // detects a reused pid
    uint64_t used;        // bytes charged by this process
  };
  struct Gpu {
    char uuid[96];  // "" = free
    Slot procs[kMaxProcs];
  };
  uint32_t magic;
  uint32_t version;
  pthread_mutex_t mu;
  Gpu gpus[kMaxGpus];
};

uint64_t ProcessStartTime(pid_t pid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[1024];
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = '\0';
  const char* p = std::strrchr(buf, ')');  // the command may hold spaces and ')'
  if (p == nullptr) return 0;
  // Fields after the command: state is field 3, starttime field 22.
  int field = 2;
  for (; *p != '\0'; ++p) {
    if (*p == ' ' && ++field == 22) return std::strtoull(p + 1, nullptr, 10);
  }
  return 0;
}

bool Segment::Open(const std::string& path, std::string* error) {
  pid_ = getpid();
  start_time_ = ProcessStartTime(pid_);
  pidns_ = OwnPidNamespace();
  void* mem = MAP_FAILED;
  bool fresh = false;
  int fd = -1;
  if (!path.empty()) {
    fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
      *error = "cannot open " + path + ": " + std::strerror(errno) + "; limits apply per process";
    } else if (flock(fd, LOCK_EX) != 0) {
      *error = "cannot lock " + path + ": " + std::strerror(errno) + "; limits apply per process";
    } else {
      struct stat st;
      if (fstat(fd, &st) == 0 && st.st_size < static_cast<off_t>(sizeof(Layout))) {
        fresh = st.st_size == 0;
        if (!fresh || ftruncate(fd, sizeof(Layout)) != 0) {
          *error = path + " is not an accounting segment (size " + std::to_string(st.st_size) +
                   "); limits apply per process";
          fresh = false;
        }
      }
      if (error->empty()) {
        mem = mmap(nullptr, sizeof(Layout), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (mem == MAP_FAILED) *error = "cannot map " + path + ": " + std::strerror(errno);
      }
    }
  }
  if (mem == MAP_FAILED) {
    if (fd >= 0) close(fd);
    fd = -1;
    mem = mmap(nullptr, sizeof(Layout), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) return false;
    fresh = true;
  }
  seg_ = static_cast<Layout*>(mem);
  // Initialised once, under the file lock: a second process waits for it.
  if (fresh || seg_->magic != kMagic) {
    if (!fresh && seg_->magic != 0 && seg_->magic != kMagic && error->empty()) {
      *error = path + " has an unknown layout; it is reinitialised";
    }
    std::memset(static_cast<void*>(seg_), 0, sizeof(Layout));
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
    pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
    pthread_mutex_init(&seg_->mu, &a);
    pthread_mutexattr_destroy(&a);
    seg_->version = kVersion;
    __atomic_store_n(&seg_->magic, kMagic, __ATOMIC_RELEASE);
  }
  if (fd >= 0) {
    // Explicitly: the mapping keeps the open file, and with it a flock.
    flock(fd, LOCK_UN);
    close(fd);
  }
  return true;
}

bool Segment::Lock() {
  int r = pthread_mutex_lock(&seg_->mu);
  if (r == EOWNERDEAD) {
    // A process died holding the lock. Each update under the lock is a
    // single store to a slot, so the data is whole; its slot goes below.
    pthread_mutex_consistent(&seg_->mu);
    ReconcileLocked();
    return true;
  }
  return r == 0;
}

void Segment::Unlock() { pthread_mutex_unlock(&seg_->mu); }

int Segment::GpuIndex(const char* uuid) {
  if (seg_ == nullptr || !Lock()) return -1;
  int found = -1, free_index = -1;
  for (int g = 0; g < kMaxGpus && found < 0; ++g) {
    if (seg_->gpus[g].uuid[0] == '\0') {
      if (free_index < 0) free_index = g;
    } else if (std::strncmp(seg_->gpus[g].uuid, uuid, sizeof seg_->gpus[g].uuid) == 0) {
      found = g;
    }
  }
  if (found < 0 && free_index >= 0) {
    std::snprintf(seg_->gpus[free_index].uuid, sizeof seg_->gpus[free_index].uuid, "%s", uuid);
    found = free_index;
  }
  Unlock();
  return found;
}

int Segment::FindGpu(const char* uuid) {
  if (seg_ == nullptr || !Lock()) return -1;
  int found = -1;
  for (int g = 0; g < kMaxGpus && found < 0; ++g) {
    if (seg_->gpus[g].uuid[0] != '\0' &&
        std::strncmp(seg_->gpus[g].uuid, uuid, sizeof seg_->gpus[g].uuid) == 0) {
      found = g;
    }
  }
  Unlock();
  return found;
}

uint64_t Segment::UsedLocked(int gpu) const {
  uint64_t sum = 0;
  for (const Layout::Slot& s : seg_->gpus[gpu].procs) {
    if (s.pid != 0) sum += s.used;
  }
  return sum;
}

int Segment::OwnSlotLocked(int gpu) {
  Layout::Slot* procs = seg_->gpus[gpu].procs;
  if (int c = slot_[gpu] - 1;
      c >= 0 && procs[c].pid == pid_ && procs[c].start_time == start_time_ && procs[c].pidns == pidns_) {
    return c;
  }
  int free_index = -1;
  for (int i = 0; i < kMaxProcs; ++i) {
    if (procs[i].pid == pid_ && procs[i].pidns == pidns_ && procs[i].start_time == start_time_) {
      slot_[gpu] = i + 1;
      return i;
    }
    if (procs[i].pid == 0 && free_index < 0) free_index = i;
  }
  if (free_index < 0 && ReconcileLocked() > 0) {
    for (int i = 0; i < kMaxProcs && free_index < 0; ++i) {
      if (procs[i].pid == 0) free_index = i;
    }
  }
  if (free_index < 0) return -1;
  procs[free_index] = {pid_, 0, pidns_, start_time_, 0};
  slot_[gpu] = free_index + 1;
  return free_index;
}

bool Segment::Reserve(int gpu, uint64_t bytes, uint64_t limit) {
  if (seg_ == nullptr || gpu < 0 || gpu >= kMaxGpus || !Lock()) return false;
  bool ok = false;
  int slot = OwnSlotLocked(gpu);
  if (slot >= 0) {
    uint64_t used = UsedLocked(gpu);
    if (bytes > limit || used > limit - bytes) {
      // Would fail: first drop what dead processes left behind.
      if (ReconcileLocked() > 0) used = UsedLocked(gpu);
    }
    ok = bytes <= limit && used <= limit - bytes;
    if (ok) seg_->gpus[gpu].procs[slot].used += bytes;
  }
  Unlock();
  return ok;
}

void Segment::Add(int gpu, uint64_t bytes) {
  if (seg_ == nullptr || gpu < 0 || gpu >= kMaxGpus || !Lock()) return;
  if (int slot = OwnSlotLocked(gpu); slot >= 0) seg_->gpus[gpu].procs[slot].used += bytes;
  Unlock();
}

void Segment::Release(int gpu, uint64_t bytes) {
  if (seg_ == nullptr || gpu < 0 || gpu >= kMaxGpus || !Lock()) return;
  if (int slot = OwnSlotLocked(gpu); slot >= 0) {
    uint64_t& used = seg_->gpus[gpu].procs[slot].used;
    used -= bytes < used ? bytes : used;
  }
  Unlock();
}

uint64_t Segment::Used(int gpu) {
  if (seg_ == nullptr || gpu < 0 || gpu >= kMaxGpus || !Lock()) return 0;
  uint64_t used = UsedLocked(gpu);
  Unlock();
  return used;
}

bool Segment::HasPid(int pid) {
  if (seg_ == nullptr || !Lock()) return false;
  bool found = false;
  for (int g = 0; g < kMaxGpus && !found; ++g) {
    for (const Layout::Slot& s : seg_->gpus[g].procs) {
      if (s.pid == pid && s.pidns == pidns_) found = true;
    }
  }
  Unlock();
  return found;
}

int Segment::ReconcileLocked() {
  int dropped = 0;
  for (Layout::Gpu& g : seg_->gpus) {
    if (g.uuid[0] == '\0') continue;
    for (Layout::Slot& s : g.procs) {
      // Only a process of our own pid namespace can be checked by pid.
      if (s.pid == 0 || s.pidns != pidns_) continue;
      if (s.pid == pid_ && s.start_time == start_time_) continue;
      bool dead = kill(s.pid, 0) != 0 && errno == ESRCH;
      if (!dead) {
        uint64_t st = ProcessStartTime(s.pid);
        dead = st != 0 && s.start_time != 0 && st != s.start_time;  // pid reused
      }
      if (dead) {
        s = {};
        ++dropped;
      }
    }
  }
  return dropped;
}

int Segment::Reconcile() {
  if (seg_ == nullptr || !Lock()) return 0;
  int n = ReconcileLocked();
  Unlock();
  return n;
}

void Segment::AfterFork() {
  pid_ = getpid();
  start_time_ = ProcessStartTime(pid_);
  for (int& s : slot_) s = 0;
}

void Segment::HoldLockForever(const char* ready_file) {
  if (seg_ != nullptr) Lock();
  if (int fd = open(ready_file, O_WRONLY | O_CREAT | O_CLOEXEC, 0600); fd >= 0) close(fd);
  for (;;) pause();
}

}  // namespace artel::cuda_shim
