// A CUDA "application" for the libartel-cuda tests: it reaches the (fake)
// driver the way real programs do and checks what the shim makes of it.
//   probe <resolve> <scenario> [args]
// resolve: dlsym    dlopen("libcuda.so.1") and dlsym each versioned name
//          procaddr dlsym cuGetProcAddress, then ask it for base names
//          procaddr_v2 / ptsz   the same through cuGetProcAddress_v2 / the
//                               per-thread-stream flag
//          linked   direct calls (probe_linked is linked to libcuda.so.1)
// Exit 0 when every check held; otherwise "FAIL: ..." on stderr and 1.
// Lines "key=value" on stdout report figures to the test.
#include <dlfcn.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "cuda_shim/cuda_abi.h"

#define API(X)                                                                                            \
  X(cuInit, "cuInit", CUresult, (unsigned int))                                                           \
  X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", CUresult, (CUcontext*, CUdevice))               \
  X(cuCtxSetCurrent, "cuCtxSetCurrent", CUresult, (CUcontext))                                            \
  X(cuMemAlloc_v2, "cuMemAlloc", CUresult, (CUdeviceptr*, size_t))                                        \
  X(cuMemAllocPitch_v2, "cuMemAllocPitch", CUresult, (CUdeviceptr*, size_t*, size_t, size_t, unsigned))   \
  X(cuMemAllocManaged, "cuMemAllocManaged", CUresult, (CUdeviceptr*, size_t, unsigned))                   \
  X(cuMemAllocAsync, "cuMemAllocAsync", CUresult, (CUdeviceptr*, size_t, CUstream))                       \
  X(cuMemAllocFromPoolAsync, "cuMemAllocFromPoolAsync", CUresult,                                         \
    (CUdeviceptr*, size_t, CUmemoryPool, CUstream))                                                       \
  X(cuMemFree_v2, "cuMemFree", CUresult, (CUdeviceptr))                                                   \
  X(cuMemFreeAsync, "cuMemFreeAsync", CUresult, (CUdeviceptr, CUstream))                                  \
  X(cuArrayCreate_v2, "cuArrayCreate", CUresult, (CUarray*, const CUDA_ARRAY_DESCRIPTOR*))                \
  X(cuArray3DCreate_v2, "cuArray3DCreate", CUresult, (CUarray*, const CUDA_ARRAY3D_DESCRIPTOR*))          \
  X(cuArrayDestroy, "cuArrayDestroy", CUresult, (CUarray))                                                \
  X(cuMipmappedArrayCreate, "cuMipmappedArrayCreate", CUresult,                                           \
    (CUmipmappedArray*, const CUDA_ARRAY3D_DESCRIPTOR*, unsigned))                                        \
  X(cuMipmappedArrayDestroy, "cuMipmappedArrayDestroy", CUresult, (CUmipmappedArray))                     \
  X(cuMemCreate, "cuMemCreate", CUresult,                                                                 \
    (CUmemGenericAllocationHandle*, size_t, const CUmemAllocationProp*, unsigned long long))              \
  X(cuMemRelease, "cuMemRelease", CUresult, (CUmemGenericAllocationHandle))                               \
  X(cuMemAddressReserve, "cuMemAddressReserve", CUresult,                                                 \
    (CUdeviceptr*, size_t, size_t, CUdeviceptr, unsigned long long))                                      \
  X(cuMemAddressFree, "cuMemAddressFree", CUresult, (CUdeviceptr, size_t))                                \
  X(cuMemMap, "cuMemMap", CUresult,                                                                       \
    (CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long))                      \
  X(cuMemUnmap, "cuMemUnmap", CUresult, (CUdeviceptr, size_t))                                            \
  X(cuMemRetainAllocationHandle, "cuMemRetainAllocationHandle", CUresult,                                 \
    (CUmemGenericAllocationHandle*, void*))                                                               \
  X(cuMemGetInfo_v2, "cuMemGetInfo", CUresult, (size_t*, size_t*))                                        \
  X(cuLaunchKernel, "cuLaunchKernel", CUresult,                                                           \
    (CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream, void**,  \
     void**))                                                                                             \
  X(cuLaunchKernelEx, "cuLaunchKernelEx", CUresult, (const CUlaunchConfig*, CUfunction, void**, void**))  \
  X(cuLaunchCooperativeKernel, "cuLaunchCooperativeKernel", CUresult,                                     \
    (CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream, void**)) \
  X(cuGraphLaunch, "cuGraphLaunch", CUresult, (CUgraphExec, CUstream))

#ifdef PROBE_LINKED
extern "C" {
#define DECLARE(sym, base, ret, params) ret sym params;
API(DECLARE)
#undef DECLARE
}
#endif

namespace {

struct Api {
#define FIELD(sym, base, ret, params) ret(*sym) params = nullptr;
  API(FIELD)
#undef FIELD
  // Hooked variants reached only through cuGetProcAddress's per-thread flag.
  bool per_thread = false;
};
Api api;
void* cuda = nullptr;
std::string mode;
constexpr uint64_t MiB = 1ULL << 20;
int failures = 0;

#define CHECK(cond, ...)                                                   \
  do {                                                                     \
    if (!(cond)) {                                                         \
      std::fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
      std::fprintf(stderr, __VA_ARGS__);                                   \
      std::fprintf(stderr, "\n");                                          \
      ++failures;                                                          \
    }                                                                      \
  } while (0)

long Calls(const char* name) {
  auto f = reinterpret_cast<long (*)(const char*)>(dlsym(cuda, "fakeCudaCalls"));
  return f != nullptr ? f(name) : -1;
}

// A resolved function lives in libartel-cuda (the hook), or not.
bool InShim(void* f) {
  Dl_info info;
  return f != nullptr && dladdr(f, &info) != 0 && info.dli_fname != nullptr &&
         std::strstr(info.dli_fname, "libartel-cuda") != nullptr;
}

bool Resolve() {
#ifdef PROBE_LINKED
  cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
#define SET(sym, base, ret, params) api.sym = &::sym;
  API(SET)
#undef SET
  return cuda != nullptr;
#else
  cuda = dlopen("libcuda.so.1", RTLD_NOW);
  if (cuda == nullptr) {
    std::fprintf(stderr, "FAIL: dlopen libcuda.so.1: %s\n", dlerror());
    return false;
  }
  if (mode == "dlsym") {
#define SET(sym, base, ret, params) api.sym = reinterpret_cast<decltype(api.sym)>(dlsym(cuda, #sym));
    API(SET)
#undef SET
    return true;
  }
  const bool v2 = mode == "procaddr_v2";
  api.per_thread = mode == "ptsz";
  const cuuint64_t flags = api.per_thread ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : 0;
  auto gpa =
      reinterpret_cast<CUresult (*)(const char*, void**, int, cuuint64_t)>(dlsym(cuda, "cuGetProcAddress"));
  auto gpa2 =
      reinterpret_cast<CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*)>(
          dlsym(cuda, "cuGetProcAddress_v2"));
  if (gpa == nullptr || gpa2 == nullptr) return false;
  // As CUDA runtimes do: look up cuGetProcAddress through itself first.
  void* self = nullptr;
  CHECK(gpa("cuGetProcAddress", &self, 12040, 0) == CUDA_SUCCESS &&
            InShim(self) == (getenv("LD_PRELOAD") != nullptr),
        "cuGetProcAddress of itself");
  auto lookup = [&](const char* base) -> void* {
    void* f = nullptr;
    CUdriverProcAddressQueryResult st = -1;
    if (v2) {
      if (gpa2(base, &f, 12040, flags, &st) != CUDA_SUCCESS || st != 0) return nullptr;
    } else if (gpa(base, &f, 12040, flags) != CUDA_SUCCESS) {
      return nullptr;
    }
    return f;
  };
#define SET(sym, base, ret, params) api.sym = reinterpret_cast<decltype(api.sym)>(lookup(base));
  API(SET)
#undef SET
  return true;
#endif
}

// Names of the hooked functions as the probe resolved them (for the
// InShim check), with the fake's counter name.
struct Named {
  const char* counter;
  void* f;
};
std::vector<Named> Hooked() {
  const bool p = api.per_thread;
  return {{"cuMemAlloc_v2", reinterpret_cast<void*>(api.cuMemAlloc_v2)},
          {"cuMemAllocPitch_v2", reinterpret_cast<void*>(api.cuMemAllocPitch_v2)},
          {"cuMemAllocManaged", reinterpret_cast<void*>(api.cuMemAllocManaged)},
          {p ? "cuMemAllocAsync_ptsz" : "cuMemAllocAsync", reinterpret_cast<void*>(api.cuMemAllocAsync)},
          {p ? "cuMemAllocFromPoolAsync_ptsz" : "cuMemAllocFromPoolAsync",
           reinterpret_cast<void*>(api.cuMemAllocFromPoolAsync)},
          {"cuMemFree_v2", reinterpret_cast<void*>(api.cuMemFree_v2)},
          {p ? "cuMemFreeAsync_ptsz" : "cuMemFreeAsync", reinterpret_cast<void*>(api.cuMemFreeAsync)},
          {"cuArrayCreate_v2", reinterpret_cast<void*>(api.cuArrayCreate_v2)},
          {"cuArray3DCreate_v2", reinterpret_cast<void*>(api.cuArray3DCreate_v2)},
          {"cuArrayDestroy", reinterpret_cast<void*>(api.cuArrayDestroy)},
          {"cuMipmappedArrayCreate", reinterpret_cast<void*>(api.cuMipmappedArrayCreate)},
          {"cuMipmappedArrayDestroy", reinterpret_cast<void*>(api.cuMipmappedArrayDestroy)},
          {"cuMemCreate", reinterpret_cast<void*>(api.cuMemCreate)},
          {"cuMemRelease", reinterpret_cast<void*>(api.cuMemRelease)},
          {"cuMemMap", reinterpret_cast<void*>(api.cuMemMap)},
          {"cuMemUnmap", reinterpret_cast<void*>(api.cuMemUnmap)},
          {"cuMemRetainAllocationHandle", reinterpret_cast<void*>(api.cuMemRetainAllocationHandle)},
          {"cuMemGetInfo_v2", reinterpret_cast<void*>(api.cuMemGetInfo_v2)},
          {p ? "cuLaunchKernel_ptsz" : "cuLaunchKernel", reinterpret_cast<void*>(api.cuLaunchKernel)},
          {p ? "cuLaunchKernelEx_ptsz" : "cuLaunchKernelEx", reinterpret_cast<void*>(api.cuLaunchKernelEx)},
          {p ? "cuLaunchCooperativeKernel_ptsz" : "cuLaunchCooperativeKernel",
           reinterpret_cast<void*>(api.cuLaunchCooperativeKernel)},
          {p ? "cuGraphLaunch_ptsz" : "cuGraphLaunch", reinterpret_cast<void*>(api.cuGraphLaunch)}};
}

void UseDevice(int dev) {
  CUcontext ctx = nullptr;
  api.cuInit(0);
  api.cuDevicePrimaryCtxRetain(&ctx, dev);
  api.cuCtxSetCurrent(ctx);
}

// The share's limit as the test set it (bytes, or HAMi's "1024m").
uint64_t Limit() {
  const char* v = getenv("ARTEL_GPU_MEMORY_LIMIT");
  if (v == nullptr) v = getenv("CUDA_DEVICE_MEMORY_LIMIT");
  if (v == nullptr) return 0;
  char* end = nullptr;
  uint64_t n = std::strtoull(v, &end, 10);
  return *end == 'm' ? n * MiB : n;
}

size_t FreeNow() {
  size_t f = 0, t = 0;
  CHECK(api.cuMemGetInfo_v2(&f, &t) == CUDA_SUCCESS, "cuMemGetInfo_v2");
  return f;
}

// --------------------------------------------------------------- scenarios

// Every hooked entry point: resolved to the shim, allocations charged and
// given back exactly, an allocation over the limit refused without
// reaching the driver. With expect_shim false (no LD_PRELOAD) the same
// over-limit allocations succeed: the shim is what refuses them.
int Hooks(bool expect_shim) {
  for (const Named& n : Hooked())
    CHECK(InShim(n.f) == expect_shim, "%s resolved in the shim: %d", n.counter, !expect_shim);
  UseDevice(0);
  const uint64_t limit = Limit();
  const size_t before = FreeNow();
  if (expect_shim) CHECK(before == limit, "free %zu, limit %llu", before, (unsigned long long)limit);
  CUstream s = nullptr;
  CUmemoryPool pool = nullptr;
  struct Case {
    const char* counter;
    std::function<CUresult(uint64_t, void**)> alloc;
    std::function<CUresult(void*)> free;
    uint64_t bytes_for_size;  // what an allocation of `size` charges, per unit
  };
  const bool p = api.per_thread;
  auto ptr_free = [](void* h) { return api.cuMemFree_v2(reinterpret_cast<CUdeviceptr>(h)); };
  std::vector<Case> cases = {
      {"cuMemAlloc_v2",
       [](uint64_t n, void** h) { return api.cuMemAlloc_v2(reinterpret_cast<CUdeviceptr*>(h), n); }, ptr_free,
       1},
      {"cuMemAllocManaged",
       [](uint64_t n, void** h) { return api.cuMemAllocManaged(reinterpret_cast<CUdeviceptr*>(h), n, 1); },
       ptr_free, 1},
      {p ? "cuMemAllocAsync_ptsz" : "cuMemAllocAsync",
       [&](uint64_t n, void** h) { return api.cuMemAllocAsync(reinterpret_cast<CUdeviceptr*>(h), n, s); },
       [&](void* h) { return api.cuMemFreeAsync(reinterpret_cast<CUdeviceptr>(h), s); }, 1},
      {p ? "cuMemAllocFromPoolAsync_ptsz" : "cuMemAllocFromPoolAsync",
       [&](uint64_t n, void** h) {
         return api.cuMemAllocFromPoolAsync(reinterpret_cast<CUdeviceptr*>(h), n, pool, s);
       },
       [&](void* h) { return api.cuMemFreeAsync(reinterpret_cast<CUdeviceptr>(h), s); }, 1},
      // Pitch: width 1000 bytes is rounded to a 1024-byte pitch; n = rows.
      {"cuMemAllocPitch_v2",
       [](uint64_t n, void** h) {
         size_t pitch = 0;
         return api.cuMemAllocPitch_v2(reinterpret_cast<CUdeviceptr*>(h), &pitch, 1000, n / 1024, 4);
       },
       ptr_free, 1},
      // Arrays: n bytes as a 1024-wide float4 2D array (16 KiB per row).
      {"cuArrayCreate_v2",
       [](uint64_t n, void** h) {
         CUDA_ARRAY_DESCRIPTOR d{1024, n / 16384, CU_AD_FORMAT_FLOAT, 4};
         return api.cuArrayCreate_v2(reinterpret_cast<CUarray*>(h), &d);
       },
       [](void* h) { return api.cuArrayDestroy(static_cast<CUarray>(h)); }, 1},
      {"cuArray3DCreate_v2",
       [](uint64_t n, void** h) {
         CUDA_ARRAY3D_DESCRIPTOR d{1024, 16, n / 16384 / 16, CU_AD_FORMAT_FLOAT, 4, 0};
         return api.cuArray3DCreate_v2(reinterpret_cast<CUarray*>(h), &d);
       },
       [](void* h) { return api.cuArrayDestroy(static_cast<CUarray>(h)); }, 1},
      // One level: exactly n bytes.
      {"cuMipmappedArrayCreate",
       [](uint64_t n, void** h) {
         CUDA_ARRAY3D_DESCRIPTOR d{1024, n / 16384, 0, CU_AD_FORMAT_FLOAT, 4, 0};
         return api.cuMipmappedArrayCreate(reinterpret_cast<CUmipmappedArray*>(h), &d, 1);
       },
       [](void* h) { return api.cuMipmappedArrayDestroy(static_cast<CUmipmappedArray>(h)); }, 1},
      {"cuMemCreate",
       [](uint64_t n, void** h) {
         CUmemAllocationProp prop{};
         prop.type = 1;
         prop.location = {CU_MEM_LOCATION_TYPE_DEVICE, 0};
         return api.cuMemCreate(reinterpret_cast<CUmemGenericAllocationHandle*>(h), n, &prop, 0);
       },
       [](void* h) { return api.cuMemRelease(reinterpret_cast<CUmemGenericAllocationHandle>(h)); }, 1},
  };
  for (const Case& c : cases) {
    const uint64_t size = 256 * MiB;
    void* h = nullptr;
    const long calls = Calls(c.counter);
    CHECK(c.alloc(size, &h) == CUDA_SUCCESS, "%s of 256 MiB", c.counter);
    CHECK(Calls(c.counter) == calls + 1, "%s reached the driver once", c.counter);
    if (expect_shim) CHECK(FreeNow() == before - size, "%s charged %zu", c.counter, before - FreeNow());
    // Over the limit (what is left, plus 16 KiB).
    void* h2 = nullptr;
    const uint64_t over = limit - size + 16384 * 64;
    CUresult r = c.alloc(over, &h2);
    if (expect_shim) {
      CHECK(r == CUDA_ERROR_OUT_OF_MEMORY, "%s over the limit returned %d", c.counter, r);
      CHECK(Calls(c.counter) == calls + 1, "%s over the limit reached the driver", c.counter);
    } else {
      CHECK(r == CUDA_SUCCESS, "%s over the limit without the shim returned %d", c.counter, r);
      if (r == CUDA_SUCCESS) c.free(h2);
    }
    CHECK(c.free(h) == CUDA_SUCCESS, "%s: free", c.counter);
    if (expect_shim)
      CHECK(FreeNow() == before, "%s: free gave back %zu of %zu", c.counter, FreeNow(), before);
  }
  // An unknown free changes nothing (the driver refuses it).
  CHECK(api.cuMemFree_v2(0x1234) != CUDA_SUCCESS, "free of an unknown pointer");
  CHECK(api.cuArrayDestroy(reinterpret_cast<CUarray>(0x5678)) != CUDA_SUCCESS, "destroy of an unknown array");
  if (expect_shim) CHECK(FreeNow() == before, "unknown frees changed the use");
  // Launches pass through (no compute limit set).
  const std::vector<Named> hooked = Hooked();
  CUlaunchConfig cfg{};
  long l0 = Calls(hooked[18].counter), l1 = Calls(hooked[19].counter), l2 = Calls(hooked[20].counter),
       l3 = Calls(hooked[21].counter);
  CHECK(api.cuLaunchKernel(nullptr, 1, 1, 1, 1, 1, 1, 0, s, nullptr, nullptr) == CUDA_SUCCESS, "launch");
  CHECK(api.cuLaunchKernelEx(&cfg, nullptr, nullptr, nullptr) == CUDA_SUCCESS, "launch ex");
  CHECK(api.cuLaunchCooperativeKernel(nullptr, 1, 1, 1, 1, 1, 1, 0, s, nullptr) == CUDA_SUCCESS,
        "cooperative");
  CHECK(api.cuGraphLaunch(nullptr, s) == CUDA_SUCCESS, "graph launch");
  CHECK(Calls(hooked[18].counter) == l0 + 1 && Calls(hooked[19].counter) == l1 + 1 &&
            Calls(hooked[20].counter) == l2 + 1 && Calls(hooked[21].counter) == l3 + 1,
        "each launch reached the driver once");
  return failures == 0 ? 0 : 1;
}

// NCCL's and vLLM's use of the virtual memory API.
int Vmm() {
  UseDevice(0);
  const uint64_t limit = Limit();
  const size_t before = FreeNow();
  CUmemAllocationProp prop{};
  prop.type = 1;
  prop.location = {CU_MEM_LOCATION_TYPE_DEVICE, 0};
  const size_t size = 512 * MiB;
  // NCCL (ncclCuMemAlloc / ncclCuMemFree): create, reserve, map, keep the
  // handle; free by retaining the handle from the address, releasing it
  // twice around the unmap.
  CUmemGenericAllocationHandle h = 0;
  CUdeviceptr va = 0;
  CHECK(api.cuMemCreate(&h, size, &prop, 0) == CUDA_SUCCESS, "create");
  CHECK(FreeNow() == before - size, "create charged %zu", before - FreeNow());
  CHECK(api.cuMemAddressReserve(&va, size, 0, 0, 0) == CUDA_SUCCESS, "reserve");
  CHECK(api.cuMemMap(va, size, 0, h, 0) == CUDA_SUCCESS, "map");
  CHECK(FreeNow() == before - size, "map added a charge");
  // A second create would pass the limit: refused before the driver.
  CUmemGenericAllocationHandle h2 = 0;
  const long creates = Calls("cuMemCreate");
  CHECK(api.cuMemCreate(&h2, limit - size + 2 * MiB, &prop, 0) == CUDA_ERROR_OUT_OF_MEMORY,
        "create over the limit");
  CHECK(Calls("cuMemCreate") == creates, "create over the limit reached the driver");
  CUmemGenericAllocationHandle again = 0;
  CHECK(api.cuMemRetainAllocationHandle(&again, reinterpret_cast<void*>(va + 4096)) == CUDA_SUCCESS,
        "retain");
  CHECK(again == h, "retained handle");
  CHECK(api.cuMemRelease(again) == CUDA_SUCCESS, "release 1");
  CHECK(FreeNow() == before - size, "still held after one release");
  CHECK(api.cuMemUnmap(va, size) == CUDA_SUCCESS, "unmap");
  CHECK(FreeNow() == before - size, "still held by its handle after unmap");
  CHECK(api.cuMemRelease(h) == CUDA_SUCCESS, "release 2");
  CHECK(FreeNow() == before, "all given back: %zu of %zu", FreeNow(), before);
  CHECK(api.cuMemAddressFree(va, size) == CUDA_SUCCESS, "address free");
  // Release right after map; the unmap frees the memory.
  CHECK(api.cuMemCreate(&h, size, &prop, 0) == CUDA_SUCCESS, "create 2");
  CHECK(api.cuMemAddressReserve(&va, 2 * size, 0, 0, 0) == CUDA_SUCCESS, "reserve 2");
  CHECK(api.cuMemMap(va, size, 0, h, 0) == CUDA_SUCCESS, "map 2a");
  CHECK(api.cuMemMap(va + size, size, 0, h, 0) == CUDA_SUCCESS, "map 2b (the same memory twice)");
  CHECK(api.cuMemRelease(h) == CUDA_SUCCESS, "release after map");
  CHECK(FreeNow() == before - size, "mapped memory still charged once: %zu", before - FreeNow());
  CHECK(api.cuMemUnmap(va, size) == CUDA_SUCCESS, "unmap a");
  CHECK(FreeNow() == before - size, "one mapping left");
  CHECK(api.cuMemUnmap(va + size, size) == CUDA_SUCCESS, "unmap b");
  CHECK(FreeNow() == before, "unmap freed it");
  // A release of an unknown handle changes nothing.
  CHECK(api.cuMemRelease(987654) != CUDA_SUCCESS, "unknown release");
  CHECK(FreeNow() == before, "unknown release changed the use");
  // The fake device agrees: nothing left.
  auto used = reinterpret_cast<long long (*)(int)>(dlsym(cuda, "fakeCudaUsed"));
  CHECK(used != nullptr && used(0) == 0, "driver still holds %lld", used ? used(0) : -1);
  return failures == 0 ? 0 : 1;
}

// cuMemGetInfo_v2 and NVML agree on the share: total = limit, free = limit - use.
int MemInfo() {
  UseDevice(0);
  const uint64_t limit = Limit();
  CUdeviceptr p = 0;
  CHECK(api.cuMemAlloc_v2(&p, 300 * MiB) == CUDA_SUCCESS, "alloc");
  size_t f = 0, t = 0;
  CHECK(api.cuMemGetInfo_v2(&f, &t) == CUDA_SUCCESS, "mem get info");
  CHECK(t == limit && f == limit - 300 * MiB, "cuda total %zu free %zu", t, f);
  void* nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW);
  CHECK(nvml != nullptr, "dlopen nvml");
  if (nvml == nullptr) return 1;
  auto init = reinterpret_cast<nvmlReturn_t (*)()>(dlsym(nvml, "nvmlInit_v2"));
  auto by_index = reinterpret_cast<nvmlReturn_t (*)(unsigned, nvmlDevice_t*)>(
      dlsym(nvml, "nvmlDeviceGetHandleByIndex_v2"));
  auto info =
      reinterpret_cast<nvmlReturn_t (*)(nvmlDevice_t, nvmlMemory_t*)>(dlsym(nvml, "nvmlDeviceGetMemoryInfo"));
  auto info2 = reinterpret_cast<nvmlReturn_t (*)(nvmlDevice_t, nvmlMemory_v2_t*)>(
      dlsym(nvml, "nvmlDeviceGetMemoryInfo_v2"));
  CHECK(init() == NVML_SUCCESS, "nvml init");
  nvmlDevice_t d0 = nullptr, d1 = nullptr;
  by_index(0, &d0);
  by_index(1, &d1);
  nvmlMemory_t m{};
  nvmlMemory_v2_t m2{};
  CHECK(info(d0, &m) == NVML_SUCCESS, "nvml memory");
  CHECK(m.total == t && m.free == f && m.used == 300 * MiB, "nvml total %llu free %llu used %llu", m.total,
        m.free, m.used);
  CHECK(info2(d0, &m2) == NVML_SUCCESS, "nvml memory v2");
  CHECK(m2.total == t && m2.free == f && m2.used == 300 * MiB, "nvml v2 total %llu free %llu used %llu",
        m2.total, m2.free, m2.used);
  // The other GPU is not the pod's (CUDA_VISIBLE_DEVICES): left as NVML says.
  CHECK(info(d1, &m) == NVML_SUCCESS && m.total == 80ULL << 30 && m.used == 0, "other GPU total %llu",
        m.total);
  std::printf("cuda_free=%zu cuda_total=%zu nvml_free=%llu nvml_total=%llu\n", f, t, m2.free, m2.total);
  return failures == 0 ? 0 : 1;
}

// n processes share one limit: together they get exactly the limit.
int Fork(int n) {
  const uint64_t limit = Limit(), chunk = 64 * MiB;
  int up[2], down[2];
  if (pipe(up) != 0 || pipe(down) != 0) return 1;
  std::vector<pid_t> kids;
  for (int i = 0; i < n; ++i) {
    pid_t pid = fork();
    if (pid == 0) {
      UseDevice(0);
      std::vector<CUdeviceptr> mine;
      for (;;) {
        CUdeviceptr p = 0;
        CUresult r = api.cuMemAlloc_v2(&p, chunk);
        if (r != CUDA_SUCCESS) break;
        mine.push_back(p);
        sched_yield();  // interleave with the siblings
      }
      int got = static_cast<int>(mine.size());
      (void)!write(up[1], &got, sizeof got);
      char c;
      (void)!read(down[0], &c, 1);  // hold it until the parent has counted
      for (CUdeviceptr p : mine) api.cuMemFree_v2(p);
      _exit(0);
    }
    kids.push_back(pid);
  }
  int total = 0;
  for (int i = 0; i < n; ++i) {
    int got = 0;
    CHECK(read(up[0], &got, sizeof got) == sizeof got, "read from child");
    total += got;
  }
  std::printf("chunks=%d\n", total);
  CHECK(static_cast<uint64_t>(total) * chunk == limit, "%d processes got %d chunks of 64 MiB, limit %llu", n,
        total, (unsigned long long)limit);
  for (int i = 0; i < n; ++i) (void)!write(down[1], "x", 1);
  for (pid_t k : kids) {
    int st = 0;
    waitpid(k, &st, 0);
  }
  UseDevice(0);
  CHECK(FreeNow() == limit, "after the children freed: %zu", FreeNow());
  return failures == 0 ? 0 : 1;
}

bool WaitForFile(const std::string& f) {
  for (int i = 0; i < 20000; ++i) {  // 20 s at most
    struct stat st;
    if (stat(f.c_str(), &st) == 0) return true;
    usleep(1000);
  }
  return false;
}

// A process killed with kill -9 mid-allocation (inside the driver, its
// charge made) and one killed holding the segment's lock: the survivors'
// next allocation that would fail reconciles, and the lock recovers.
int Kill9(const std::string& dir) {
  const uint64_t limit = Limit();
  const std::string ready = dir + "/blocked", locked = dir + "/locked";
  pid_t a = fork();
  if (a == 0) {
    UseDevice(0);
    CUdeviceptr p = 0;
    if (api.cuMemAlloc_v2(&p, limit / 2) != CUDA_SUCCESS) _exit(3);
    setenv("FAKE_CUDA_BLOCK_FILE", ready.c_str(), 1);
    api.cuMemAlloc_v2(&p, limit / 4);  // FAKE_CUDA_BLOCK_BYTES: hangs in the driver
    _exit(4);
  }
  CHECK(WaitForFile(ready), "child never reached the driver");
  UseDevice(0);
  CHECK(FreeNow() == limit / 4, "the blocked child holds 3/4: free %zu", FreeNow());
  kill(a, SIGKILL);
  int st = 0;
  waitpid(a, &st, 0);
  // Still charged to the dead process until an allocation needs it.
  CHECK(FreeNow() == limit / 4, "charges left by the dead child: free %zu", FreeNow());
  CUdeviceptr big = 0;
  CHECK(api.cuMemAlloc_v2(&big, limit) == CUDA_SUCCESS, "the whole limit after the dead child is reconciled");
  CHECK(FreeNow() == 0, "free %zu", FreeNow());
  CHECK(api.cuMemFree_v2(big) == CUDA_SUCCESS, "free");
  // Killed while holding the lock.
  pid_t b = fork();
  if (b == 0) {
    auto hold = reinterpret_cast<void (*)(const char*)>(dlsym(RTLD_DEFAULT, "artelCudaShimTestHoldLock"));
    if (hold == nullptr) _exit(5);
    hold(locked.c_str());
  }
  CHECK(WaitForFile(locked), "child never took the lock");
  kill(b, SIGKILL);
  waitpid(b, &st, 0);
  CHECK(api.cuMemAlloc_v2(&big, limit) == CUDA_SUCCESS, "allocation after the lock holder died");
  CHECK(api.cuMemFree_v2(big) == CUDA_SUCCESS, "free");
  CHECK(FreeNow() == limit, "free %zu", FreeNow());
  return failures == 0 ? 0 : 1;
}

// Many threads allocate and free against one limit: the driver never holds
// more than the limit, and everything comes back.
int Threads(int n, int iterations) {
  UseDevice(0);
  const uint64_t limit = Limit();
  std::atomic<long> ok{0}, refused{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < n; ++t) {
    ts.emplace_back([&, t] {
      UseDevice(0);
      std::mt19937 rng(t);
      std::vector<CUdeviceptr> held;
      for (int i = 0; i < iterations; ++i) {
        CUdeviceptr p = 0;
        const uint64_t size = (1 + rng() % 8) * 8 * MiB;
        CUresult r = (i % 3 == 0) ? api.cuMemAllocAsync(&p, size, nullptr) : api.cuMemAlloc_v2(&p, size);
        if (r == CUDA_SUCCESS) {
          ++ok;
          held.push_back(p);
        } else {
          ++refused;
        }
        if (held.size() > 7 || (r != CUDA_SUCCESS && !held.empty())) {
          api.cuMemFree_v2(held.front());
          held.erase(held.begin());
        }
      }
      for (CUdeviceptr p : held) api.cuMemFree_v2(p);
    });
  }
  for (auto& t : ts) t.join();
  auto peak = reinterpret_cast<long long (*)(int)>(dlsym(cuda, "fakeCudaPeak"));
  std::printf("ok=%ld refused=%ld peak=%lld\n", ok.load(), refused.load(), peak ? peak(0) : -1);
  CHECK(peak != nullptr && static_cast<uint64_t>(peak(0)) <= limit, "driver peak %lld over limit", peak(0));
  CHECK(ok > 0 && refused > 0, "the limit was reached and allocations succeeded");
  CHECK(FreeNow() == limit, "free %zu after all threads freed", FreeNow());
  return failures == 0 ? 0 : 1;
}

// A million alloc/free pairs close to the limit: never a false OOM.
int Million() {
  UseDevice(0);
  const uint64_t limit = Limit();
  for (int i = 0; i < 1000000; ++i) {
    CUdeviceptr p = 0;
    const uint64_t size = (i % 2 == 0) ? limit : limit - (static_cast<uint64_t>(i) % 4096) * 4096 - 1;
    CUresult r = (i % 4 == 1) ? api.cuMemAllocAsync(&p, size, nullptr) : api.cuMemAlloc_v2(&p, size);
    if (r != CUDA_SUCCESS) {
      CHECK(false, "pair %d: allocation of %llu returned %d", i, (unsigned long long)size, r);
      break;
    }
    r = (i % 4 == 1) ? api.cuMemFreeAsync(p, nullptr) : api.cuMemFree_v2(p);
    if (r != CUDA_SUCCESS) {
      CHECK(false, "pair %d: free returned %d", i, r);
      break;
    }
  }
  CHECK(FreeNow() == limit, "free %zu after a million pairs", FreeNow());
  return failures == 0 ? 0 : 1;
}

// Launches as fast as possible for `seconds`; prints the fake GPU's busy
// percentage over the last third (each launch costs FAKE_GPU_LAUNCH_US).
int Compute(double seconds) {
  UseDevice(0);
  auto now = [] {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
  };
  const double cost_us = std::atof(getenv("FAKE_GPU_LAUNCH_US"));
  const double start = now(), tail = start + seconds * 2 / 3;
  long tail_launches = 0;
  double tail_start = 0;
  for (double t = start; t < start + seconds; t = now()) {
    for (int i = 0; i < 10; ++i) api.cuLaunchKernel(nullptr, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr);
    if (t >= tail) {
      if (tail_start == 0) tail_start = t;
      tail_launches += 10;
    }
  }
  const double util = 100.0 * tail_launches * cost_us / ((now() - tail_start) * 1e6);
  std::printf("util=%.1f\n", util);
  return 0;
}

int BadLimit() {
  UseDevice(0);
  CUdeviceptr p = 0;
  CHECK(api.cuMemAlloc_v2(&p, MiB) == CUDA_ERROR_OUT_OF_MEMORY, "allocation with a bad limit");
  CHECK(Calls("cuMemAlloc_v2") == 0, "reached the driver");
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  alarm(60);  // a hang (a lock never recovered) fails instead of blocking the test
  if (argc < 3) {
    std::fprintf(stderr, "usage: probe <dlsym|procaddr|procaddr_v2|ptsz|linked> <scenario> [args]\n");
    return 2;
  }
  mode = argv[1];
  if (!Resolve()) return 1;
  const std::string s = argv[2];
  if (s == "hooks") return Hooks(getenv("LD_PRELOAD") != nullptr);
  if (s == "vmm") return Vmm();
  if (s == "meminfo") return MemInfo();
  if (s == "fork") return Fork(argc > 3 ? std::atoi(argv[3]) : 4);
  if (s == "kill9") return Kill9(argc > 3 ? argv[3] : "/tmp");
  if (s == "threads") return Threads(16, argc > 3 ? std::atoi(argv[3]) : 2000);
  if (s == "million") return Million();
  if (s == "compute") return Compute(argc > 3 ? std::atof(argv[3]) : 1.5);
  if (s == "badlimit") return BadLimit();
  std::fprintf(stderr, "unknown scenario %s\n", s.c_str());
  return 2;
}
