// A stand-in for libcuda.so.1 (built as tests' lib/fake_cuda/libcuda.so.1)
// so that libartel-cuda runs through the real dynamic-linking path on hosts
// without a GPU. Two in-memory devices of FAKE_CUDA_TOTAL_BYTES each
// (default 80 GiB) with fixed UUIDs; it hands out addresses, never memory,
// refuses what its device cannot hold, and counts every call so that a
// test can prove an allocation never reached it (fakeCudaCalls).
// FAKE_CUDA_BLOCK_BYTES makes an allocation of exactly that size create
// FAKE_CUDA_BLOCK_FILE and hang, for a test that kills a process there.
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "cuda_shim/cuda_abi.h"

namespace {

constexpr int kDevices = 2;
std::mutex mu;
std::atomic<long long> used[kDevices];
std::atomic<long long> peak[kDevices];
std::atomic<unsigned long long> next_address{0x7f0000000000ULL};
std::atomic<unsigned long long> next_handle{1};
std::map<unsigned long long, std::pair<int, long long>> ptrs;  // address -> device, bytes
struct Phys {
  int dev;
  long long bytes;
  int refs;
  int maps;
};
std::map<CUmemGenericAllocationHandle, Phys> handles;
std::map<CUdeviceptr, std::pair<size_t, CUmemGenericAllocationHandle>> maps;
thread_local int current = -1;

std::mutex calls_mu;
std::map<std::string, long> calls;
std::atomic<long> launches{0};

void Count(const char* name) {
  std::lock_guard<std::mutex> lock(calls_mu);
  ++calls[name];
}

long long Total() {
  const char* t = std::getenv("FAKE_CUDA_TOTAL_BYTES");
  return t != nullptr ? std::atoll(t) : 80LL << 30;
}

void MaybeBlock(size_t n) {
  const char* b = std::getenv("FAKE_CUDA_BLOCK_BYTES");
  const char* f = std::getenv("FAKE_CUDA_BLOCK_FILE");
  if (b == nullptr || f == nullptr || std::strtoull(b, nullptr, 10) != n) return;
  if (int fd = open(f, O_WRONLY | O_CREAT | O_CLOEXEC, 0600); fd >= 0) close(fd);
  for (;;) pause();
}

// Takes `n` bytes of the current device (mu held); false when it is full.
bool Take(int dev, long long n) {
  if (used[dev] + n > Total()) return false;
  used[dev] += n;
  if (used[dev] > peak[dev]) peak[dev] = used[dev].load();
  return true;
}

CUresult Alloc(const char* name, CUdeviceptr* p, size_t n) {
  Count(name);
  if (current < 0) return CUDA_ERROR_INVALID_CONTEXT;
  if (p == nullptr || n == 0) return CUDA_ERROR_INVALID_VALUE;
  MaybeBlock(n);
  std::lock_guard<std::mutex> lock(mu);
  if (!Take(current, static_cast<long long>(n))) return CUDA_ERROR_OUT_OF_MEMORY;
  *p = next_address.fetch_add((n + 0xfffff) & ~0xfffffULL);
  ptrs[*p] = {current, static_cast<long long>(n)};
  return CUDA_SUCCESS;
}

CUresult Free(const char* name, CUdeviceptr p) {
  Count(name);
  std::lock_guard<std::mutex> lock(mu);
  auto it = ptrs.find(p);
  if (it == ptrs.end()) return CUDA_ERROR_INVALID_VALUE;
  used[it->second.first] -= it->second.second;
  ptrs.erase(it);
  return CUDA_SUCCESS;
}

long long ArrayBytes(size_t w, size_t h, size_t d, CUarray_format f, unsigned c) {
  long long e =
      (f == CU_AD_FORMAT_UNSIGNED_INT8 || f == CU_AD_FORMAT_SIGNED_INT8)                               ? 1
      : (f == CU_AD_FORMAT_HALF || f == CU_AD_FORMAT_UNSIGNED_INT16 || f == CU_AD_FORMAT_SIGNED_INT16) ? 2
                                                                                                       : 4;
  return static_cast<long long>(w ? w : 1) * (h ? h : 1) * (d ? d : 1) * (c ? c : 1) * e;
}

void PhysDrop(std::map<CUmemGenericAllocationHandle, Phys>::iterator it) {
  if (it->second.refs <= 0 && it->second.maps <= 0) {
    used[it->second.dev] -= it->second.bytes;
    handles.erase(it);
  }
}

}  // namespace

extern "C" {

long fakeCudaCalls(const char* name) {
  std::lock_guard<std::mutex> lock(calls_mu);
  auto it = calls.find(name);
  return it == calls.end() ? 0 : it->second;
}
long long fakeCudaUsed(int dev) { return used[dev]; }
long long fakeCudaPeak(int dev) { return peak[dev]; }
long fakeCudaLaunches() { return launches; }

CUresult cuInit(unsigned int) { return CUDA_SUCCESS; }
CUresult cuDriverGetVersion(int* v) {
  *v = 12040;
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetCount(int* n) {
  *n = kDevices;
  return CUDA_SUCCESS;
}
CUresult cuDeviceGet(CUdevice* d, int ordinal) {
  if (ordinal < 0 || ordinal >= kDevices) return CUDA_ERROR_INVALID_VALUE;
  *d = ordinal;
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetUuid(CUuuid* u, CUdevice d) {
  Count("cuDeviceGetUuid");
  if (d < 0 || d >= kDevices) return CUDA_ERROR_INVALID_VALUE;
  // GPU-d0112233-4455-6677-8899-aabbccddeeff, d = device ordinal.
  static const unsigned char bytes[16] = {0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77,
                                          0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff};
  std::memcpy(u->bytes, bytes, 16);
  u->bytes[0] = static_cast<char>(d << 4);
  return CUDA_SUCCESS;
}
CUresult cuDeviceGetUuid_v2(CUuuid* u, CUdevice d) { return cuDeviceGetUuid(u, d); }
CUresult cuDevicePrimaryCtxRetain(CUcontext* c, CUdevice d) {
  if (d < 0 || d >= kDevices) return CUDA_ERROR_INVALID_VALUE;
  *c = reinterpret_cast<CUcontext>(static_cast<uintptr_t>(d + 1));
  return CUDA_SUCCESS;
}
CUresult cuCtxSetCurrent(CUcontext c) {
  current = static_cast<int>(reinterpret_cast<uintptr_t>(c)) - 1;
  return CUDA_SUCCESS;
}
CUresult cuCtxGetDevice(CUdevice* d) {
  if (current < 0) return CUDA_ERROR_INVALID_CONTEXT;
  *d = current;
  return CUDA_SUCCESS;
}

CUresult cuMemAlloc_v2(CUdeviceptr* p, size_t n) { return Alloc("cuMemAlloc_v2", p, n); }
CUresult cuMemAllocManaged(CUdeviceptr* p, size_t n, unsigned int) {
  return Alloc("cuMemAllocManaged", p, n);
}
CUresult cuMemAllocAsync(CUdeviceptr* p, size_t n, CUstream) { return Alloc("cuMemAllocAsync", p, n); }
CUresult cuMemAllocAsync_ptsz(CUdeviceptr* p, size_t n, CUstream) {
  return Alloc("cuMemAllocAsync_ptsz", p, n);
}
CUresult cuMemAllocFromPoolAsync(CUdeviceptr* p, size_t n, CUmemoryPool, CUstream) {
  return Alloc("cuMemAllocFromPoolAsync", p, n);
}
CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* p, size_t n, CUmemoryPool, CUstream) {
  return Alloc("cuMemAllocFromPoolAsync_ptsz", p, n);
}
CUresult cuMemAllocPitch_v2(CUdeviceptr* p, size_t* pitch, size_t w, size_t h, unsigned int) {
  *pitch = (w + 511) / 512 * 512;
  return Alloc("cuMemAllocPitch_v2", p, *pitch * h);
}
CUresult cuMemFree_v2(CUdeviceptr p) { return Free("cuMemFree_v2", p); }
CUresult cuMemFreeAsync(CUdeviceptr p, CUstream) { return Free("cuMemFreeAsync", p); }
CUresult cuMemFreeAsync_ptsz(CUdeviceptr p, CUstream) { return Free("cuMemFreeAsync_ptsz", p); }

CUresult ArrayAlloc(const char* name, void** out, long long bytes) {
  CUdeviceptr p;
  CUresult r = Alloc(name, &p, static_cast<size_t>(bytes));
  if (r == CUDA_SUCCESS) *out = reinterpret_cast<void*>(p);
  return r;
}
CUresult cuArrayCreate_v2(CUarray* a, const CUDA_ARRAY_DESCRIPTOR* d) {
  return ArrayAlloc("cuArrayCreate_v2", reinterpret_cast<void**>(a),
                    ArrayBytes(d->Width, d->Height, 1, d->Format, d->NumChannels));
}
CUresult cuArray3DCreate_v2(CUarray* a, const CUDA_ARRAY3D_DESCRIPTOR* d) {
  return ArrayAlloc("cuArray3DCreate_v2", reinterpret_cast<void**>(a),
                    ArrayBytes(d->Width, d->Height, d->Depth, d->Format, d->NumChannels));
}
CUresult cuMipmappedArrayCreate(CUmipmappedArray* a, const CUDA_ARRAY3D_DESCRIPTOR* d, unsigned int levels) {
  long long bytes = 0;
  size_t w = d->Width, h = d->Height, z = d->Depth;
  for (unsigned l = 0; l < (levels ? levels : 1); ++l) {
    bytes += ArrayBytes(w, h, z, d->Format, d->NumChannels);
    w = w > 1 ? w / 2 : w, h = h > 1 ? h / 2 : h, z = z > 1 ? z / 2 : z;
  }
  return ArrayAlloc("cuMipmappedArrayCreate", reinterpret_cast<void**>(a), bytes);
}
CUresult cuArrayDestroy(CUarray a) { return Free("cuArrayDestroy", reinterpret_cast<CUdeviceptr>(a)); }
CUresult cuMipmappedArrayDestroy(CUmipmappedArray a) {
  return Free("cuMipmappedArrayDestroy", reinterpret_cast<CUdeviceptr>(a));
}

CUresult cuMemCreate(CUmemGenericAllocationHandle* h, size_t n, const CUmemAllocationProp* prop,
                     unsigned long long) {
  Count("cuMemCreate");
  if (prop == nullptr || prop->location.id < 0 || prop->location.id >= kDevices)
    return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(mu);
  if (!Take(prop->location.id, static_cast<long long>(n))) return CUDA_ERROR_OUT_OF_MEMORY;
  *h = next_handle++;
  handles[*h] = {prop->location.id, static_cast<long long>(n), 1, 0};
  return CUDA_SUCCESS;
}
CUresult cuMemRelease(CUmemGenericAllocationHandle h) {
  Count("cuMemRelease");
  std::lock_guard<std::mutex> lock(mu);
  auto it = handles.find(h);
  if (it == handles.end() || it->second.refs <= 0) return CUDA_ERROR_INVALID_VALUE;
  --it->second.refs;
  PhysDrop(it);
  return CUDA_SUCCESS;
}
CUresult cuMemAddressReserve(CUdeviceptr* p, size_t n, size_t, CUdeviceptr, unsigned long long) {
  Count("cuMemAddressReserve");
  *p = next_address.fetch_add((n + 0x1fffff) & ~0x1fffffULL);
  return CUDA_SUCCESS;
}
CUresult cuMemAddressFree(CUdeviceptr, size_t) {
  Count("cuMemAddressFree");
  return CUDA_SUCCESS;
}
CUresult cuMemMap(CUdeviceptr p, size_t n, size_t, CUmemGenericAllocationHandle h, unsigned long long) {
  Count("cuMemMap");
  std::lock_guard<std::mutex> lock(mu);
  auto it = handles.find(h);
  if (it == handles.end() || it->second.refs <= 0) return CUDA_ERROR_INVALID_VALUE;
  ++it->second.maps;
  maps[p] = {n, h};
  return CUDA_SUCCESS;
}
CUresult cuMemUnmap(CUdeviceptr p, size_t n) {
  Count("cuMemUnmap");
  std::lock_guard<std::mutex> lock(mu);
  for (auto it = maps.lower_bound(p); it != maps.end() && it->first < p + n;) {
    auto h = handles.find(it->second.second);
    it = maps.erase(it);
    if (h != handles.end()) {
      --h->second.maps;
      PhysDrop(h);
    }
  }
  return CUDA_SUCCESS;
}
CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle* h, void* addr) {
  Count("cuMemRetainAllocationHandle");
  std::lock_guard<std::mutex> lock(mu);
  const CUdeviceptr a = reinterpret_cast<CUdeviceptr>(addr);
  auto it = maps.upper_bound(a);
  if (it == maps.begin()) return CUDA_ERROR_INVALID_VALUE;
  --it;
  if (a >= it->first + it->second.first) return CUDA_ERROR_INVALID_VALUE;
  *h = it->second.second;
  ++handles[*h].refs;
  return CUDA_SUCCESS;
}
CUresult cuMemGetInfo_v2(size_t* free_bytes, size_t* total_bytes) {
  Count("cuMemGetInfo_v2");
  if (current < 0) return CUDA_ERROR_INVALID_CONTEXT;
  *total_bytes = static_cast<size_t>(Total());
  *free_bytes = static_cast<size_t>(Total() - used[current]);
  return CUDA_SUCCESS;
}

#define FAKE_LAUNCH(name) \
  Count(name);            \
  ++launches;             \
  return CUDA_SUCCESS;
CUresult cuLaunchKernel(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                        CUstream, void**, void**){FAKE_LAUNCH("cuLaunchKernel")} CUresult
    cuLaunchKernel_ptsz(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                        CUstream, void**, void**){FAKE_LAUNCH("cuLaunchKernel_ptsz")} CUresult
    cuLaunchKernelEx(const CUlaunchConfig*, CUfunction, void**,
                     void**){FAKE_LAUNCH("cuLaunchKernelEx")} CUresult
    cuLaunchKernelEx_ptsz(const CUlaunchConfig*, CUfunction, void**,
                          void**){FAKE_LAUNCH("cuLaunchKernelEx_ptsz")} CUresult
    cuLaunchCooperativeKernel(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                              unsigned, CUstream, void**){FAKE_LAUNCH("cuLaunchCooperativeKernel")} CUresult
    cuLaunchCooperativeKernel_ptsz(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                   unsigned, CUstream,
                                   void**){FAKE_LAUNCH("cuLaunchCooperativeKernel_ptsz")} CUresult
    cuGraphLaunch(CUgraphExec, CUstream){FAKE_LAUNCH("cuGraphLaunch")} CUresult
    cuGraphLaunch_ptsz(CUgraphExec, CUstream){FAKE_LAUNCH("cuGraphLaunch_ptsz")}
#undef FAKE_LAUNCH

CUresult cuGetProcAddress(const char* sym, void** pfn, int ver, cuuint64_t flags);
CUresult cuGetProcAddress_v2(const char* sym, void** pfn, int ver, cuuint64_t flags,
                             CUdriverProcAddressQueryResult* status);

}  // extern "C"

namespace {
// What the fake's cuGetProcAddress knows, by exported name; like the real
// driver it maps a base name to its newest version ("cuMemAlloc" ->
// cuMemAlloc_v2) and, with the per-thread flag, to the _ptsz variant.
#define E(f) \
  { #f, reinterpret_cast < void*>(&f) }
const std::pair<const char*, void*> kTable[] = {E(cuInit),
                                                E(cuDriverGetVersion),
                                                E(cuDeviceGetCount),
                                                E(cuDeviceGet),
                                                E(cuDeviceGetUuid_v2),
                                                E(cuDevicePrimaryCtxRetain),
                                                E(cuCtxSetCurrent),
                                                E(cuCtxGetDevice),
                                                E(cuMemAlloc_v2),
                                                E(cuMemAllocManaged),
                                                E(cuMemAllocAsync),
                                                E(cuMemAllocAsync_ptsz),
                                                E(cuMemAllocFromPoolAsync),
                                                E(cuMemAllocFromPoolAsync_ptsz),
                                                E(cuMemAllocPitch_v2),
                                                E(cuMemFree_v2),
                                                E(cuMemFreeAsync),
                                                E(cuMemFreeAsync_ptsz),
                                                E(cuArrayCreate_v2),
                                                E(cuArray3DCreate_v2),
                                                E(cuMipmappedArrayCreate),
                                                E(cuArrayDestroy),
                                                E(cuMipmappedArrayDestroy),
                                                E(cuMemCreate),
                                                E(cuMemRelease),
                                                E(cuMemAddressReserve),
                                                E(cuMemAddressFree),
                                                E(cuMemMap),
                                                E(cuMemUnmap),
                                                E(cuMemRetainAllocationHandle),
                                                E(cuMemGetInfo_v2),
                                                E(cuLaunchKernel),
                                                E(cuLaunchKernel_ptsz),
                                                E(cuLaunchKernelEx),
                                                E(cuLaunchKernelEx_ptsz),
                                                E(cuLaunchCooperativeKernel),
                                                E(cuLaunchCooperativeKernel_ptsz),
                                                E(cuGraphLaunch),
                                                E(cuGraphLaunch_ptsz),
                                                E(cuGetProcAddress),
                                                E(cuGetProcAddress_v2)};
#undef E

void* Find(const std::string& name) {
  for (const auto& [n, f] : kTable) {
    if (name == n) return f;
  }
  return nullptr;
}
}  // namespace

extern "C" CUresult cuGetProcAddress(const char* sym, void** pfn, int, cuuint64_t flags) {
  Count("cuGetProcAddress");
  const std::string base = sym;
  void* f = nullptr;
  if (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) f = Find(base + "_ptsz");
  if (f == nullptr) f = Find(base + "_v2");
  if (f == nullptr) f = Find(base);
  *pfn = f;
  return f != nullptr ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

extern "C" CUresult cuGetProcAddress_v2(const char* sym, void** pfn, int ver, cuuint64_t flags,
                                        CUdriverProcAddressQueryResult* status) {
  CUresult r = cuGetProcAddress(sym, pfn, ver, flags);
  if (status != nullptr) *status = r == CUDA_SUCCESS ? 0 : 1;
  return r;
}
