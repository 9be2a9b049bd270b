// libartel-cuda: enforces a pod's GPU memory share (and, roughly, its
// compute share) from inside the pod's processes. Loaded by LD_PRELOAD; it
// exports the hooked CUDA driver and NVML entry points, and also hands out
// its hooks where CUDA runtimes look functions up at run time: through
// dlsym() on libcuda.so.1 and through cuGetProcAddress(_v2). docs/gpus.md,
// "libartel-cuda", has the design, the environment contract and the limits.
//
// Every hook forwards to the real function (dlopen of libcuda.so.1 or
// libnvidia-ml.so.1, dlsym on that handle). Allocations are charged in the
// pod's shared segment (segment.h) before the driver is called, so that
// two processes cannot both pass the check; an allocation over the limit
// returns CUDA_ERROR_OUT_OF_MEMORY without reaching the driver. Frees give
// back exactly what their allocation charged, by pointer or handle; an
// unknown free changes nothing.
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "cuda_shim/cuda_abi.h"
#include "cuda_shim/segment.h"

using artel::cuda_shim::Segment;

namespace {

// ---------------------------------------------------------------- settings

void Warn(const char* fmt, const std::string& a) { std::fprintf(stderr, fmt, a.c_str()); }

// "21474836480", "20480m" / "20g" (HAMi's CUDA_DEVICE_MEMORY_LIMIT: k, m, g
// are binary units). False on anything else.
bool ParseBytes(const char* s, uint64_t* out) {
  if (s == nullptr || *s < '0' || *s > '9') return false;
  errno = 0;
  char* end = nullptr;
  unsigned long long v = std::strtoull(s, &end, 10);
  if (errno != 0) return false;
  uint64_t mult = 1;
  if (*end == 'k' || *end == 'K')
    mult = 1ULL << 10, ++end;
  else if (*end == 'm' || *end == 'M')
    mult = 1ULL << 20, ++end;
  else if (*end == 'g' || *end == 'G')
    mult = 1ULL << 30, ++end;
  if (*end == 'i' || *end == 'b' || *end == 'B') ++end;  // "Mi", "MB"
  if (*end != '\0' || v > UINT64_MAX / mult) return false;
  *out = v * mult;
  return true;
}

struct Config {
  bool memory_limited = false;
  bool bad_limit = false;  // refuse every allocation (fail closed)
  uint64_t limit = 0;
  int compute_percent = 0;  // 0 = no compute limit
  std::string visible;      // CUDA_VISIBLE_DEVICES, for NVML
};

Config g_cfg;
Segment g_seg;

void LoadConfig() {
  const char* name = "ARTEL_GPU_MEMORY_LIMIT";
  const char* v = getenv(name);
  if (v == nullptr || *v == '\0') v = getenv(name = "CUDA_DEVICE_MEMORY_LIMIT");
  if (v != nullptr && *v != '\0') {
    g_cfg.memory_limited = true;
    if (!ParseBytes(v, &g_cfg.limit)) {
      g_cfg.bad_limit = true;
      Warn(
          "libartel-cuda: %s is not a byte count (\"123\", \"20480m\", \"20g\"); every GPU allocation is "
          "refused\n",
          std::string(name) + "=" + v);
    }
  }
  name = "ARTEL_GPU_COMPUTE_PERCENT";
  const char* c = getenv(name);
  if (c == nullptr || *c == '\0') c = getenv(name = "CUDA_DEVICE_SM_LIMIT");
  if (c != nullptr && *c != '\0') {
    char* end = nullptr;
    long p = std::strtol(c, &end, 10);
    if (*end != '\0' || p < 0 || p > 100) {
      Warn("libartel-cuda: %s is not a percentage 0-100; no compute limit\n", std::string(name) + "=" + c);
    } else if (p > 0 && p < 100) {
      g_cfg.compute_percent = static_cast<int>(p);
    }
  }
  if (const char* vis = getenv("CUDA_VISIBLE_DEVICES")) g_cfg.visible = vis;
  std::string error;
  const char* path = getenv("ARTEL_CUDA_SHM");
  if (!g_seg.Open(path != nullptr ? path : "", &error)) {
    Warn("libartel-cuda: %s\n", "cannot map any accounting segment; limits are not enforced");
  } else if (!error.empty()) {
    Warn("libartel-cuda: %s\n", error);
  }
}

// ---------------------------------------------------------------- real functions

using DlsymFn = void* (*)(void*, const char*);
DlsymFn g_real_dlsym = nullptr;

DlsymFn RealDlsym() {
  if (g_real_dlsym == nullptr) {
    void* f = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    if (f == nullptr) f = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
    g_real_dlsym = reinterpret_cast<DlsymFn>(f);
  }
  return g_real_dlsym;
}

// The hooked entry points: name, our hook, and where the real one goes.
struct Hook {
  const char* name;
  void* hook;
  void** real;
  bool nvml;
};

}  // namespace

// Declarations of every hook (defined below), so that the table can name them.
extern "C" {
#define ARTEL_ALLOC_HOOKS(X)                                                                                 \
  X(cuMemAlloc_v2, CUresult, (CUdeviceptr * p, size_t n))                                                    \
  X(cuMemAllocPitch_v2, CUresult, (CUdeviceptr * p, size_t * pitch, size_t w, size_t h, unsigned int e))     \
  X(cuMemAllocManaged, CUresult, (CUdeviceptr * p, size_t n, unsigned int flags))                            \
  X(cuMemAllocAsync, CUresult, (CUdeviceptr * p, size_t n, CUstream s))                                      \
  X(cuMemAllocAsync_ptsz, CUresult, (CUdeviceptr * p, size_t n, CUstream s))                                 \
  X(cuMemAllocFromPoolAsync, CUresult, (CUdeviceptr * p, size_t n, CUmemoryPool pool, CUstream s))           \
  X(cuMemAllocFromPoolAsync_ptsz, CUresult, (CUdeviceptr * p, size_t n, CUmemoryPool pool, CUstream s))      \
  X(cuMemFree_v2, CUresult, (CUdeviceptr p))                                                                 \
  X(cuMemFreeAsync, CUresult, (CUdeviceptr p, CUstream s))                                                   \
  X(cuMemFreeAsync_ptsz, CUresult, (CUdeviceptr p, CUstream s))                                              \
  X(cuArrayCreate_v2, CUresult, (CUarray * a, const CUDA_ARRAY_DESCRIPTOR* d))                               \
  X(cuArray3DCreate_v2, CUresult, (CUarray * a, const CUDA_ARRAY3D_DESCRIPTOR* d))                           \
  X(cuArrayDestroy, CUresult, (CUarray a))                                                                   \
  X(cuMipmappedArrayCreate, CUresult,                                                                        \
    (CUmipmappedArray * a, const CUDA_ARRAY3D_DESCRIPTOR* d, unsigned int l))                                \
  X(cuMipmappedArrayDestroy, CUresult, (CUmipmappedArray a))                                                 \
  X(cuMemCreate, CUresult,                                                                                   \
    (CUmemGenericAllocationHandle * h, size_t n, const CUmemAllocationProp* prop, unsigned long long flags)) \
  X(cuMemRelease, CUresult, (CUmemGenericAllocationHandle h))                                                \
  X(cuMemMap, CUresult,                                                                                      \
    (CUdeviceptr p, size_t n, size_t offset, CUmemGenericAllocationHandle h, unsigned long long flags))      \
  X(cuMemUnmap, CUresult, (CUdeviceptr p, size_t n))                                                         \
  X(cuMemRetainAllocationHandle, CUresult, (CUmemGenericAllocationHandle * h, void* addr))                   \
  X(cuMemGetInfo_v2, CUresult, (size_t * free_bytes, size_t * total_bytes))                                  \
  X(cuLaunchKernel, CUresult,                                                                                \
    (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,             \
     unsigned shmem, CUstream s, void** params, void** extra))                                               \
  X(cuLaunchKernel_ptsz, CUresult,                                                                           \
    (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,             \
     unsigned shmem, CUstream s, void** params, void** extra))                                               \
  X(cuLaunchKernelEx, CUresult, (const CUlaunchConfig* cfg, CUfunction f, void** params, void** extra))      \
  X(cuLaunchKernelEx_ptsz, CUresult, (const CUlaunchConfig* cfg, CUfunction f, void** params, void** extra)) \
  X(cuLaunchCooperativeKernel, CUresult,                                                                     \
    (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,             \
     unsigned shmem, CUstream s, void** params))                                                             \
  X(cuLaunchCooperativeKernel_ptsz, CUresult,                                                                \
    (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,             \
     unsigned shmem, CUstream s, void** params))                                                             \
  X(cuGraphLaunch, CUresult, (CUgraphExec g, CUstream s))                                                    \
  X(cuGraphLaunch_ptsz, CUresult, (CUgraphExec g, CUstream s))                                               \
  X(cuGetProcAddress, CUresult, (const char* sym, void** pfn, int ver, cuuint64_t flags))                    \
  X(cuGetProcAddress_v2, CUresult,                                                                           \
    (const char* sym, void** pfn, int ver, cuuint64_t flags, CUdriverProcAddressQueryResult* status))

#define ARTEL_NVML_HOOKS(X)                                                    \
  X(nvmlDeviceGetMemoryInfo, nvmlReturn_t, (nvmlDevice_t d, nvmlMemory_t * m)) \
  X(nvmlDeviceGetMemoryInfo_v2, nvmlReturn_t, (nvmlDevice_t d, nvmlMemory_v2_t * m))

#define ARTEL_DECLARE(name, ret, params) __attribute__((visibility("default"))) ret name params;
ARTEL_ALLOC_HOOKS(ARTEL_DECLARE)
ARTEL_NVML_HOOKS(ARTEL_DECLARE)
#undef ARTEL_DECLARE
}

namespace {

// Real function pointers, named real_<hook>.
#define ARTEL_REAL(name, ret, params) decltype(&::name) real_##name = nullptr;
ARTEL_ALLOC_HOOKS(ARTEL_REAL)
ARTEL_NVML_HOOKS(ARTEL_REAL)
#undef ARTEL_REAL

// Helpers the shim calls but does not hook.
CUresult (*real_cuCtxGetDevice)(CUdevice*) = nullptr;
CUresult (*real_cuDeviceGetUuid)(CUuuid*, CUdevice) = nullptr;
CUresult (*real_cuDeviceGetUuid_v2)(CUuuid*, CUdevice) = nullptr;
nvmlReturn_t (*real_nvmlInit_v2)() = nullptr;
nvmlReturn_t (*real_nvmlDeviceGetUUID)(nvmlDevice_t, char*, unsigned int) = nullptr;
nvmlReturn_t (*real_nvmlDeviceGetHandleByUUID)(const char*, nvmlDevice_t*) = nullptr;
nvmlReturn_t (*real_nvmlDeviceGetProcessUtilization)(nvmlDevice_t, nvmlProcessUtilizationSample_t*,
                                                     unsigned int*, unsigned long long) = nullptr;

Hook g_hooks[] = {
#define ARTEL_ENTRY(name, ret, params) \
  {#name, reinterpret_cast<void*>(&::name), reinterpret_cast<void**>(&real_##name), false},
    ARTEL_ALLOC_HOOKS(ARTEL_ENTRY)
#undef ARTEL_ENTRY
#define ARTEL_ENTRY(name, ret, params) \
  {#name, reinterpret_cast<void*>(&::name), reinterpret_cast<void**>(&real_##name), true},
        ARTEL_NVML_HOOKS(ARTEL_ENTRY)
#undef ARTEL_ENTRY
};

void* g_cuda = nullptr;
void* g_nvml = nullptr;
pthread_once_t g_config_once = PTHREAD_ONCE_INIT;
pthread_once_t g_cuda_once = PTHREAD_ONCE_INIT;
pthread_once_t g_nvml_once = PTHREAD_ONCE_INIT;

void Resolve(void* handle, bool nvml) {
  DlsymFn sym = RealDlsym();
  for (Hook& h : g_hooks) {
    if (h.nvml == nvml) *h.real = sym(handle, h.name);
  }
}

// Set while this thread loads a library: lookups made by its constructors
// are not hooked (they would wait on the initialisation running).
thread_local bool t_loading = false;

void InitCuda() {
  pthread_once(&g_config_once, LoadConfig);
  t_loading = true;
  g_cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NODELETE);
  t_loading = false;
  if (g_cuda == nullptr) return;
  Resolve(g_cuda, false);
  DlsymFn sym = RealDlsym();
  real_cuCtxGetDevice = reinterpret_cast<decltype(real_cuCtxGetDevice)>(sym(g_cuda, "cuCtxGetDevice"));
  real_cuDeviceGetUuid = reinterpret_cast<decltype(real_cuDeviceGetUuid)>(sym(g_cuda, "cuDeviceGetUuid"));
  real_cuDeviceGetUuid_v2 =
      reinterpret_cast<decltype(real_cuDeviceGetUuid_v2)>(sym(g_cuda, "cuDeviceGetUuid_v2"));
}

void InitNvml() {
  pthread_once(&g_config_once, LoadConfig);
  t_loading = true;
  g_nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_NODELETE);
  t_loading = false;
  if (g_nvml == nullptr) return;
  Resolve(g_nvml, true);
  DlsymFn sym = RealDlsym();
  real_nvmlInit_v2 = reinterpret_cast<decltype(real_nvmlInit_v2)>(sym(g_nvml, "nvmlInit_v2"));
  real_nvmlDeviceGetUUID =
      reinterpret_cast<decltype(real_nvmlDeviceGetUUID)>(sym(g_nvml, "nvmlDeviceGetUUID"));
  real_nvmlDeviceGetHandleByUUID =
      reinterpret_cast<decltype(real_nvmlDeviceGetHandleByUUID)>(sym(g_nvml, "nvmlDeviceGetHandleByUUID"));
  real_nvmlDeviceGetProcessUtilization = reinterpret_cast<decltype(real_nvmlDeviceGetProcessUtilization)>(
      sym(g_nvml, "nvmlDeviceGetProcessUtilization"));
}

inline void EnsureCuda() { pthread_once(&g_cuda_once, InitCuda); }
inline void EnsureNvml() { pthread_once(&g_nvml_once, InitNvml); }

// Our hook for a real function pointer, or the pointer itself.
void* HookFor(void* real, bool nvml) {
  if (real == nullptr) return real;
  for (const Hook& h : g_hooks) {
    if (h.nvml == nvml && *h.real == real) return h.hook;
  }
  return real;
}

// ---------------------------------------------------------------- GPU of the caller

std::atomic<int> g_dev_gpu[64];  // device ordinal -> segment GPU index + 1

void FormatUuid(const CUuuid& u, char* out, size_t len) {
  const unsigned char* b = reinterpret_cast<const unsigned char*>(u.bytes);
  std::snprintf(out, len, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
                b[15]);
}

// "GPU-xxxxxxxx-xxxx-..." of a device, as NVML and CUDA_VISIBLE_DEVICES write it.
bool UuidOf(CUdevice dev, char* uuid, size_t len) {
  CUuuid u;
  CUresult r = CUDA_ERROR_NOT_FOUND;
  if (real_cuDeviceGetUuid_v2 != nullptr) r = real_cuDeviceGetUuid_v2(&u, dev);
  if (r != CUDA_SUCCESS && real_cuDeviceGetUuid != nullptr) r = real_cuDeviceGetUuid(&u, dev);
  if (r != CUDA_SUCCESS) return false;
  FormatUuid(u, uuid, len);
  return true;
}

int GpuForDevice(CUdevice dev) {
  if (dev < 0 || dev >= 64) return -1;
  if (int c = g_dev_gpu[dev].load(std::memory_order_relaxed); c > 0) return c - 1;
  char uuid[96];
  if (!UuidOf(dev, uuid, sizeof uuid)) return -1;
  int g = g_seg.GpuIndex(uuid);
  if (g >= 0) g_dev_gpu[dev].store(g + 1, std::memory_order_relaxed);
  return g;
}

// The segment GPU of the calling thread's current context; -1 if none.
int CurrentGpu() {
  CUdevice dev = -1;
  if (real_cuCtxGetDevice == nullptr || real_cuCtxGetDevice(&dev) != CUDA_SUCCESS) return -1;
  return GpuForDevice(dev);
}

// ---------------------------------------------------------------- records

struct Charge {
  uint64_t bytes;
  int gpu;
};
// A physical allocation of the virtual memory API: it holds memory while a
// handle to it or a mapping of it remains.
struct Phys {
  uint64_t bytes;
  int gpu;
  int refs;  // handles (cuMemCreate, cuMemRetainAllocationHandle)
  int maps;  // cuMemMap mappings
};
struct Mapping {
  size_t size;
  Phys* phys;
};

std::mutex g_mu;                                   // guards the maps below (process-local)
std::unordered_map<uint64_t, Charge> g_ptrs;       // device pointers
std::unordered_map<const void*, Charge> g_arrays;  // CUarray and CUmipmappedArray
std::unordered_map<CUmemGenericAllocationHandle, Phys*> g_handles;
std::map<CUdeviceptr, Mapping> g_maps;  // by start address

void Record(std::unordered_map<uint64_t, Charge>* m, uint64_t key, Charge c) {
  Charge old{0, -1};
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto [it, added] = m->try_emplace(key, c);
    if (!added) {
      // The driver reused an address whose free we never saw: that memory
      // was released, so its charge goes.
      old = it->second;
      it->second = c;
    }
  }
  if (old.gpu >= 0) g_seg.Release(old.gpu, old.bytes);
}

void Forget(std::unordered_map<uint64_t, Charge>* m, uint64_t key) {
  Charge c{0, -1};
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto it = m->find(key);
    if (it == m->end()) return;  // not ours: nothing to give back
    c = it->second;
    m->erase(it);
  }
  g_seg.Release(c.gpu, c.bytes);
}

// Charges `bytes` on `gpu`, then runs the driver call; gives the charge
// back if the call fails. Over the limit: CUDA_ERROR_OUT_OF_MEMORY, and the
// driver is not called.
template <class Call>
CUresult Charged(int gpu, uint64_t bytes, Call call) {
  if (!g_cfg.memory_limited || gpu < 0) return call();
  if (g_cfg.bad_limit) return CUDA_ERROR_OUT_OF_MEMORY;
  if (!g_seg.Reserve(gpu, bytes, g_cfg.limit)) return CUDA_ERROR_OUT_OF_MEMORY;
  CUresult r = call();
  if (r != CUDA_SUCCESS) g_seg.Release(gpu, bytes);
  return r;
}

// Every few seconds an allocation also drops dead processes' charges, so
// that a share's free memory recovers before anyone hits the limit.
std::atomic<int64_t> g_next_reconcile{0};
int64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}
void MaybeReconcile() {
  int64_t now = NowNs(), next = g_next_reconcile.load(std::memory_order_relaxed);
  if (now < next || !g_next_reconcile.compare_exchange_strong(next, now + 2000000000LL)) return;
  // The first call only starts the clock: an allocation that would fail
  // reconciles by itself.
  if (next != 0 && g_cfg.memory_limited) g_seg.Reconcile();
}

template <class Real>
CUresult AllocPtr(Real real, CUdeviceptr* p, uint64_t bytes, int gpu) {
  MaybeReconcile();
  CUresult r = Charged(gpu, bytes, real);
  if (r == CUDA_SUCCESS && g_cfg.memory_limited && gpu >= 0 && p != nullptr)
    Record(&g_ptrs, *p, {bytes, gpu});
  return r;
}

template <class Real>
CUresult FreePtr(Real real, CUdeviceptr p) {
  CUresult r = real();
  if (r == CUDA_SUCCESS && g_cfg.memory_limited) Forget(&g_ptrs, p);
  return r;
}

uint64_t ElementBytes(CUarray_format f) {
  switch (f) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8: return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF: return 2;
    default: return 4;  // 32-bit formats; an estimate for the others
  }
}

uint64_t ArrayBytes(size_t w, size_t h, size_t d, CUarray_format f, unsigned channels) {
  auto at_least_1 = [](size_t v) { return static_cast<uint64_t>(v == 0 ? 1 : v); };
  return at_least_1(w) * at_least_1(h) * at_least_1(d) * at_least_1(channels) * ElementBytes(f);
}

// ---------------------------------------------------------------- compute share

struct Bucket {
  std::mutex mu;
  double tokens = 0;
  double rate = 0;  // launches per second; 0 = unthrottled
  int64_t last_ns = 0;
  int64_t window_start_ns = 0;
  uint64_t window_launches = 0;
  unsigned long long last_sample_us = 0;
  nvmlDevice_t dev = nullptr;
  bool looked_up = false;
};
Bucket g_buckets[Segment::kMaxGpus];
constexpr int64_t kWindowNs = 100000000;  // 100 ms feedback period

// The pod's SM utilisation (percent, summed over its processes) on the GPU
// of bucket `b` since the last sample; -1 when NVML cannot tell.
int PodUtilisation(Bucket* b, int gpu, CUdevice cu_dev) {
  EnsureNvml();
  if (real_nvmlDeviceGetProcessUtilization == nullptr) return -1;
  if (!b->looked_up) {
    b->looked_up = true;
    char uuid[96];
    if (real_nvmlInit_v2 != nullptr) real_nvmlInit_v2();
    if (UuidOf(cu_dev, uuid, sizeof uuid) && real_nvmlDeviceGetHandleByUUID != nullptr) {
      real_nvmlDeviceGetHandleByUUID(uuid, &b->dev);
    }
  }
  if (b->dev == nullptr) return -1;
  nvmlProcessUtilizationSample_t samples[256];
  unsigned int n = 256;
  if (real_nvmlDeviceGetProcessUtilization(b->dev, samples, &n, b->last_sample_us) != NVML_SUCCESS) return -1;
  int sum = 0;
  bool any = false;
  for (unsigned int i = 0; i < n && i < 256; ++i) {
    if (samples[i].timeStamp > b->last_sample_us) b->last_sample_us = samples[i].timeStamp;
    if (static_cast<int>(samples[i].pid) == getpid() || g_seg.HasPid(static_cast<int>(samples[i].pid))) {
      sum += static_cast<int>(samples[i].smUtil);
      any = true;
    }
  }
  (void)gpu;
  return any ? sum : 0;
}

// Token bucket: each launch takes a token; the rate follows the share's
// percentage by the utilisation NVML measured over the last window.
void Throttle() {
  if (g_cfg.compute_percent <= 0) return;
  CUdevice dev = -1;
  if (real_cuCtxGetDevice == nullptr || real_cuCtxGetDevice(&dev) != CUDA_SUCCESS) return;
  int gpu = GpuForDevice(dev);
  if (gpu < 0) return;
  Bucket& b = g_buckets[gpu];
  int64_t sleep_ns = 0;
  {
    std::lock_guard<std::mutex> lock(b.mu);
    int64_t now = NowNs();
    if (b.window_start_ns == 0) b.window_start_ns = b.last_ns = now;
    ++b.window_launches;
    if (now - b.window_start_ns >= kWindowNs) {
      const double target = g_cfg.compute_percent;
      const double seconds = static_cast<double>(now - b.window_start_ns) / 1e9;
      const double observed = static_cast<double>(b.window_launches) / seconds;
      int util = PodUtilisation(&b, gpu, dev);
      if (util > target * 1.05) {
        double base = b.rate > 0 && b.rate < observed ? b.rate : observed;
        b.rate = base * target / util;
        if (b.rate < 1) b.rate = 1;
      } else if (util >= 0 && b.rate > 0 && util < target * 0.9) {
        b.rate = util == 0 ? 0 : b.rate * (target / util < 2 ? target / util : 2);
      }
      b.window_start_ns = now;
      b.window_launches = 0;
    }
    if (b.rate > 0) {
      b.tokens += static_cast<double>(now - b.last_ns) * b.rate / 1e9;
      const double burst = b.rate / 100 > 1 ? b.rate / 100 : 1;  // 10 ms of launches
      if (b.tokens > burst) b.tokens = burst;
      b.tokens -= 1;
      if (b.tokens < 0) sleep_ns = static_cast<int64_t>(-b.tokens / b.rate * 1e9);
    }
    b.last_ns = now;
  }
  if (sleep_ns > 0) {
    timespec ts{static_cast<time_t>(sleep_ns / 1000000000), static_cast<long>(sleep_ns % 1000000000)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
  }
}

// ---------------------------------------------------------------- NVML

bool NvmlApplies(nvmlDevice_t d, char* uuid, size_t len) {
  if (!g_cfg.memory_limited || real_nvmlDeviceGetUUID == nullptr) return false;
  if (real_nvmlDeviceGetUUID(d, uuid, static_cast<unsigned>(len)) != NVML_SUCCESS) return false;
  // NVML sees every GPU of the node; only the pod's own are rewritten when
  // CUDA_VISIBLE_DEVICES names them by UUID (as arteld does).
  if (g_cfg.visible.find("GPU-") == std::string::npos) return true;
  size_t at = g_cfg.visible.find(uuid);
  size_t end = at == std::string::npos ? at : at + std::strlen(uuid);
  return at != std::string::npos && (at == 0 || g_cfg.visible[at - 1] == ',') &&
         (end == g_cfg.visible.size() || g_cfg.visible[end] == ',');
}

// The share's view: total = the limit (at most the card), used = the pod's.
void ShareView(const char* uuid, unsigned long long real_total, unsigned long long* total,
               unsigned long long* free_bytes, unsigned long long* used) {
  const int g = g_seg.FindGpu(uuid);
  const unsigned long long t = g_cfg.bad_limit ? 0 : (g_cfg.limit < real_total ? g_cfg.limit : real_total);
  const unsigned long long u = g >= 0 ? g_seg.Used(g) : 0;
  *total = t;
  *used = u;
  *free_bytes = u < t ? t - u : 0;
}

void AtforkPrepare() { g_mu.lock(); }
void AtforkParent() { g_mu.unlock(); }
void AtforkChild() {
  // CUDA does not survive fork: the child's pointers are not its own. It
  // starts with no records and a slot of its own.
  g_ptrs.clear();
  g_arrays.clear();
  // Phys objects are left behind in the child (a few bytes each).
  g_handles.clear();
  g_maps.clear();
  g_seg.AfterFork();
  g_mu.unlock();
}

__attribute__((constructor)) void RegisterAtfork() {
  pthread_atfork(AtforkPrepare, AtforkParent, AtforkChild);
}

}  // namespace

// ================================================================ hooks

extern "C" {

CUresult cuMemAlloc_v2(CUdeviceptr* p, size_t n) {
  EnsureCuda();
  if (real_cuMemAlloc_v2 == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return AllocPtr([&] { return real_cuMemAlloc_v2(p, n); }, p, n, CurrentGpu());
}

CUresult cuMemAllocPitch_v2(CUdeviceptr* p, size_t* pitch, size_t w, size_t h, unsigned int e) {
  EnsureCuda();
  if (real_cuMemAllocPitch_v2 == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  const int gpu = CurrentGpu();
  // The driver picks the pitch; 512 bytes covers its alignment. The charge
  // is corrected to pitch * height once it is known.
  const uint64_t estimate = ((static_cast<uint64_t>(w) + 511) / 512 * 512) * (h == 0 ? 1 : h);
  CUresult r = Charged(gpu, estimate, [&] { return real_cuMemAllocPitch_v2(p, pitch, w, h, e); });
  if (r == CUDA_SUCCESS && g_cfg.memory_limited && gpu >= 0) {
    const uint64_t actual = static_cast<uint64_t>(*pitch) * (h == 0 ? 1 : h);
    if (actual > estimate) g_seg.Add(gpu, actual - estimate);
    if (actual < estimate) g_seg.Release(gpu, estimate - actual);
    Record(&g_ptrs, *p, {actual, gpu});
  }
  return r;
}

CUresult cuMemAllocManaged(CUdeviceptr* p, size_t n, unsigned int flags) {
  EnsureCuda();
  if (real_cuMemAllocManaged == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return AllocPtr([&] { return real_cuMemAllocManaged(p, n, flags); }, p, n, CurrentGpu());
}

CUresult cuMemAllocAsync(CUdeviceptr* p, size_t n, CUstream s) {
  EnsureCuda();
  if (real_cuMemAllocAsync == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return AllocPtr([&] { return real_cuMemAllocAsync(p, n, s); }, p, n, CurrentGpu());
}

CUresult cuMemAllocAsync_ptsz(CUdeviceptr* p, size_t n, CUstream s) {
  EnsureCuda();
  if (real_cuMemAllocAsync_ptsz == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return AllocPtr([&] { return real_cuMemAllocAsync_ptsz(p, n, s); }, p, n, CurrentGpu());
}

CUresult cuMemAllocFromPoolAsync(CUdeviceptr* p, size_t n, CUmemoryPool pool, CUstream s) {
  EnsureCuda();
  if (real_cuMemAllocFromPoolAsync == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return AllocPtr([&] { return real_cuMemAllocFromPoolAsync(p, n, pool, s); }, p, n, CurrentGpu());
}

CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* p, size_t n, CUmemoryPool pool, CUstream s) {
  EnsureCuda();
  if (real_cuMemAllocFromPoolAsync_ptsz == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return AllocPtr([&] { return real_cuMemAllocFromPoolAsync_ptsz(p, n, pool, s); }, p, n, CurrentGpu());
}

CUresult cuMemFree_v2(CUdeviceptr p) {
  EnsureCuda();
  if (real_cuMemFree_v2 == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return FreePtr([&] { return real_cuMemFree_v2(p); }, p);
}

CUresult cuMemFreeAsync(CUdeviceptr p, CUstream s) {
  EnsureCuda();
  if (real_cuMemFreeAsync == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return FreePtr([&] { return real_cuMemFreeAsync(p, s); }, p);
}

CUresult cuMemFreeAsync_ptsz(CUdeviceptr p, CUstream s) {
  EnsureCuda();
  if (real_cuMemFreeAsync_ptsz == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return FreePtr([&] { return real_cuMemFreeAsync_ptsz(p, s); }, p);
}

CUresult cuArrayCreate_v2(CUarray* a, const CUDA_ARRAY_DESCRIPTOR* d) {
  EnsureCuda();
  if (real_cuArrayCreate_v2 == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  if (d == nullptr) return real_cuArrayCreate_v2(a, d);
  const int gpu = CurrentGpu();
  const uint64_t bytes = ArrayBytes(d->Width, d->Height, 1, d->Format, d->NumChannels);
  CUresult r = Charged(gpu, bytes, [&] { return real_cuArrayCreate_v2(a, d); });
  if (r == CUDA_SUCCESS && g_cfg.memory_limited && gpu >= 0) {
    std::lock_guard<std::mutex> lock(g_mu);
    g_arrays[*a] = {bytes, gpu};
  }
  return r;
}

CUresult cuArray3DCreate_v2(CUarray* a, const CUDA_ARRAY3D_DESCRIPTOR* d) {
  EnsureCuda();
  if (real_cuArray3DCreate_v2 == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  if (d == nullptr) return real_cuArray3DCreate_v2(a, d);
  const int gpu = CurrentGpu();
  const uint64_t bytes = ArrayBytes(d->Width, d->Height, d->Depth, d->Format, d->NumChannels);
  CUresult r = Charged(gpu, bytes, [&] { return real_cuArray3DCreate_v2(a, d); });
  if (r == CUDA_SUCCESS && g_cfg.memory_limited && gpu >= 0) {
    std::lock_guard<std::mutex> lock(g_mu);
    g_arrays[*a] = {bytes, gpu};
  }
  return r;
}

namespace {
CUresult DestroyArray(const void* key, CUresult r) {
  if (r != CUDA_SUCCESS || !g_cfg.memory_limited) return r;
  Charge c{0, -1};
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto it = g_arrays.find(key);
    if (it == g_arrays.end()) return r;
    c = it->second;
    g_arrays.erase(it);
  }
  g_seg.Release(c.gpu, c.bytes);
  return r;
}
}  // namespace

CUresult cuArrayDestroy(CUarray a) {
  EnsureCuda();
  if (real_cuArrayDestroy == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return DestroyArray(a, real_cuArrayDestroy(a));
}

CUresult cuMipmappedArrayCreate(CUmipmappedArray* a, const CUDA_ARRAY3D_DESCRIPTOR* d, unsigned int levels) {
  EnsureCuda();
  if (real_cuMipmappedArrayCreate == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  if (d == nullptr) return real_cuMipmappedArrayCreate(a, d, levels);
  const int gpu = CurrentGpu();
  uint64_t bytes = 0;
  size_t w = d->Width, h = d->Height, z = d->Depth;
  for (unsigned int l = 0; l < (levels == 0 ? 1 : levels); ++l) {
    bytes += ArrayBytes(w, h, z, d->Format, d->NumChannels);
    w = w > 1 ? w / 2 : w;
    h = h > 1 ? h / 2 : h;
    z = z > 1 ? z / 2 : z;
  }
  CUresult r = Charged(gpu, bytes, [&] { return real_cuMipmappedArrayCreate(a, d, levels); });
  if (r == CUDA_SUCCESS && g_cfg.memory_limited && gpu >= 0) {
    std::lock_guard<std::mutex> lock(g_mu);
    g_arrays[*a] = {bytes, gpu};
  }
  return r;
}

CUresult cuMipmappedArrayDestroy(CUmipmappedArray a) {
  EnsureCuda();
  if (real_cuMipmappedArrayDestroy == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  return DestroyArray(a, real_cuMipmappedArrayDestroy(a));
}

// The virtual memory API (NCCL, vLLM, PyTorch's expandable segments): the
// physical allocation of cuMemCreate is what holds memory. It is charged at
// create and given back when neither a handle nor a mapping is left, so
// that both "release right after map, unmap later" and "unmap, then
// release" free it exactly once. Map and unmap never add a charge.
CUresult cuMemCreate(CUmemGenericAllocationHandle* h, size_t n, const CUmemAllocationProp* prop,
                     unsigned long long flags) {
  EnsureCuda();
  if (real_cuMemCreate == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  int gpu = -1;
  if (prop != nullptr && prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE)
    gpu = GpuForDevice(prop->location.id);
  MaybeReconcile();
  CUresult r = Charged(gpu, n, [&] { return real_cuMemCreate(h, n, prop, flags); });
  if (r == CUDA_SUCCESS && g_cfg.memory_limited && gpu >= 0) {
    Phys* stale = nullptr;
    {
      std::lock_guard<std::mutex> lock(g_mu);
      Phys*& slot = g_handles[*h];
      if (slot != nullptr && --slot->refs <= 0 && slot->maps <= 0) stale = slot;
      slot = new Phys{n, gpu, 1, 0};
    }
    if (stale != nullptr) {
      g_seg.Release(stale->gpu, stale->bytes);
      delete stale;
    }
  }
  return r;
}

namespace {
// Gives back a physical allocation once nothing refers to it (g_mu held).
Phys* DropIfUnused(Phys* p) { return p->refs <= 0 && p->maps <= 0 ? p : nullptr; }
void Free(Phys* p) {
  if (p == nullptr) return;
  g_seg.Release(p->gpu, p->bytes);
  delete p;
}
}  // namespace

CUresult cuMemRelease(CUmemGenericAllocationHandle h) {
  EnsureCuda();
  if (real_cuMemRelease == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  CUresult r = real_cuMemRelease(h);
  if (r != CUDA_SUCCESS || !g_cfg.memory_limited) return r;
  Phys* gone = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto it = g_handles.find(h);
    if (it == g_handles.end()) return r;
    Phys* p = it->second;
    if (--p->refs <= 0) g_handles.erase(it);
    gone = DropIfUnused(p);
  }
  Free(gone);
  return r;
}

CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle* h, void* addr) {
  EnsureCuda();
  if (real_cuMemRetainAllocationHandle == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  CUresult r = real_cuMemRetainAllocationHandle(h, addr);
  if (r != CUDA_SUCCESS || !g_cfg.memory_limited || h == nullptr) return r;
  std::lock_guard<std::mutex> lock(g_mu);
  const CUdeviceptr a = reinterpret_cast<CUdeviceptr>(addr);
  auto it = g_maps.upper_bound(a);
  if (it == g_maps.begin()) return r;
  --it;
  if (a >= it->first + it->second.size) return r;
  Phys* p = it->second.phys;
  ++p->refs;
  g_handles[*h] = p;
  return r;
}

CUresult cuMemMap(CUdeviceptr ptr, size_t n, size_t offset, CUmemGenericAllocationHandle h,
                  unsigned long long flags) {
  EnsureCuda();
  if (real_cuMemMap == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  CUresult r = real_cuMemMap(ptr, n, offset, h, flags);
  if (r != CUDA_SUCCESS || !g_cfg.memory_limited) return r;
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = g_handles.find(h);
  if (it == g_handles.end()) return r;
  ++it->second->maps;
  g_maps[ptr] = {n, it->second};
  return r;
}

CUresult cuMemUnmap(CUdeviceptr ptr, size_t n) {
  EnsureCuda();
  if (real_cuMemUnmap == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  CUresult r = real_cuMemUnmap(ptr, n);
  if (r != CUDA_SUCCESS || !g_cfg.memory_limited) return r;
  std::vector<Phys*> gone;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    // Every mapping that starts inside [ptr, ptr + n) goes.
    for (auto it = g_maps.lower_bound(ptr); it != g_maps.end() && it->first < ptr + n;) {
      Phys* p = it->second.phys;
      --p->maps;
      it = g_maps.erase(it);
      if (DropIfUnused(p) != nullptr) gone.push_back(p);
    }
  }
  for (Phys* p : gone) Free(p);
  return r;
}

CUresult cuMemGetInfo_v2(size_t* free_bytes, size_t* total_bytes) {
  EnsureCuda();
  if (real_cuMemGetInfo_v2 == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  CUresult r = real_cuMemGetInfo_v2(free_bytes, total_bytes);
  if (r != CUDA_SUCCESS || !g_cfg.memory_limited || free_bytes == nullptr || total_bytes == nullptr) return r;
  CUdevice dev = -1;
  if (real_cuCtxGetDevice == nullptr || real_cuCtxGetDevice(&dev) != CUDA_SUCCESS) return r;
  char uuid[96];
  if (GpuForDevice(dev) < 0 || !UuidOf(dev, uuid, sizeof uuid)) return r;
  unsigned long long total, free_share, used;
  ShareView(uuid, *total_bytes, &total, &free_share, &used);
  *total_bytes = total;
  *free_bytes = free_share;
  return r;
}

CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                        unsigned bz, unsigned shmem, CUstream s, void** params, void** extra) {
  EnsureCuda();
  if (real_cuLaunchKernel == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  Throttle();
  return real_cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shmem, s, params, extra);
}

CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                             unsigned bz, unsigned shmem, CUstream s, void** params, void** extra) {
  EnsureCuda();
  if (real_cuLaunchKernel_ptsz == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  Throttle();
  return real_cuLaunchKernel_ptsz(f, gx, gy, gz, bx, by, bz, shmem, s, params, extra);
}

CUresult cuLaunchKernelEx(const CUlaunchConfig* cfg, CUfunction f, void** params, void** extra) {
  EnsureCuda();
  if (real_cuLaunchKernelEx == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  Throttle();
  return real_cuLaunchKernelEx(cfg, f, params, extra);
}

CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig* cfg, CUfunction f, void** params, void** extra) {
  EnsureCuda();
  if (real_cuLaunchKernelEx_ptsz == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  Throttle();
  return real_cuLaunchKernelEx_ptsz(cfg, f, params, extra);
}

CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                   unsigned by, unsigned bz, unsigned shmem, CUstream s, void** params) {
  EnsureCuda();
  if (real_cuLaunchCooperativeKernel == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  Throttle();
  return real_cuLaunchCooperativeKernel(f, gx, gy, gz, bx, by, bz, shmem, s, params);
}

CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                                        unsigned by, unsigned bz, unsigned shmem, CUstream s, void** params) {
  EnsureCuda();
  if (real_cuLaunchCooperativeKernel_ptsz == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  Throttle();
  return real_cuLaunchCooperativeKernel_ptsz(f, gx, gy, gz, bx, by, bz, shmem, s, params);
}

CUresult cuGraphLaunch(CUgraphExec g, CUstream s) {
  EnsureCuda();
  if (real_cuGraphLaunch == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  Throttle();
  return real_cuGraphLaunch(g, s);
}

CUresult cuGraphLaunch_ptsz(CUgraphExec g, CUstream s) {
  EnsureCuda();
  if (real_cuGraphLaunch_ptsz == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  Throttle();
  return real_cuGraphLaunch_ptsz(g, s);
}

// A runtime asks for "cuMemAlloc" with a version and gets the matching
// versioned function; the hook is whatever we have for that function.
CUresult cuGetProcAddress(const char* sym, void** pfn, int ver, cuuint64_t flags) {
  EnsureCuda();
  if (real_cuGetProcAddress == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  CUresult r = real_cuGetProcAddress(sym, pfn, ver, flags);
  if (r == CUDA_SUCCESS && pfn != nullptr) *pfn = HookFor(*pfn, false);
  return r;
}

CUresult cuGetProcAddress_v2(const char* sym, void** pfn, int ver, cuuint64_t flags,
                             CUdriverProcAddressQueryResult* status) {
  EnsureCuda();
  if (real_cuGetProcAddress_v2 == nullptr) return CUDA_ERROR_NOT_INITIALIZED;
  CUresult r = real_cuGetProcAddress_v2(sym, pfn, ver, flags, status);
  if (r == CUDA_SUCCESS && pfn != nullptr) *pfn = HookFor(*pfn, false);
  return r;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t* m) {
  EnsureNvml();
  if (real_nvmlDeviceGetMemoryInfo == nullptr) return NVML_ERROR_NOT_FOUND;
  nvmlReturn_t r = real_nvmlDeviceGetMemoryInfo(d, m);
  char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
  if (r == NVML_SUCCESS && m != nullptr && NvmlApplies(d, uuid, sizeof uuid)) {
    ShareView(uuid, m->total, &m->total, &m->free, &m->used);
  }
  return r;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t d, nvmlMemory_v2_t* m) {
  EnsureNvml();
  if (real_nvmlDeviceGetMemoryInfo_v2 == nullptr) return NVML_ERROR_NOT_FOUND;
  nvmlReturn_t r = real_nvmlDeviceGetMemoryInfo_v2(d, m);
  char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
  if (r == NVML_SUCCESS && m != nullptr && NvmlApplies(d, uuid, sizeof uuid)) {
    ShareView(uuid, m->total, &m->total, &m->free, &m->used);
    m->reserved = 0;
  }
  return r;
}

// Runtimes that dlopen libcuda.so.1 and dlsym its entry points (the CUDA
// runtime looks up cuGetProcAddress this way) get our hooks: the real
// lookup runs first, and a result that is one of the real functions we
// hook is swapped for the hook. Other names pass through untouched. A
// caller's RTLD_NEXT is resolved relative to this library, not the caller
// (docs/gpus.md, limits).
__attribute__((visibility("default"))) void* dlsym(void* __restrict handle,
                                                   const char* __restrict name) noexcept {
  DlsymFn real = RealDlsym();
  if (real == nullptr) return nullptr;
  void* f = real(handle, name);
  if (f == nullptr || t_loading || (name[0] != 'c' && name[0] != 'n')) return f;
  if (name[0] == 'c' && name[1] == 'u') {
    EnsureCuda();
    return HookFor(f, false);
  }
  if (std::strncmp(name, "nvml", 4) == 0) {
    EnsureNvml();
    return HookFor(f, true);
  }
  return f;
}

// Test hook (tests/cuda_shim): takes the segment's lock, creates
// `ready_file`, and never returns, so that a test can kill -9 a process
// holding the lock.
__attribute__((visibility("default"))) void artelCudaShimTestHoldLock(const char* ready_file) {
  pthread_once(&g_config_once, LoadConfig);
  g_seg.HoldLockForever(ready_file);
}

}  // extern "C"
