// A stand-in for libnvidia-ml.so.1 (built as lib/fake_cuda/libnvidia-ml.so.1)
// matching fake_cuda.cc's two devices and UUIDs: memory queries report the
// whole card free (the shim must rewrite them), and the per-process
// utilisation is simulated from the fake driver's launch count: each
// launch "runs" FAKE_GPU_LAUNCH_US microseconds (default 100), so a
// process launching faster than 10000/s keeps the fake GPU 100% busy.
#include <dlfcn.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <mutex>

#include "cuda_shim/cuda_abi.h"

namespace {
struct Dev {
  int index;
};
Dev devs[2] = {{0}, {1}};
const char* kUuids[2] = {"GPU-00112233-4455-6677-8899-aabbccddeeff",
                         "GPU-10112233-4455-6677-8899-aabbccddeeff"};

unsigned long long Total() {
  const char* t = std::getenv("FAKE_CUDA_TOTAL_BYTES");
  return t != nullptr ? std::strtoull(t, nullptr, 10) : 80ULL << 30;
}

unsigned long long NowUs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000ULL + ts.tv_nsec / 1000;
}

std::mutex mu;
unsigned long long last_us = 0;
long last_launches = 0;
}  // namespace

extern "C" {

nvmlReturn_t nvmlInit_v2() { return NVML_SUCCESS; }
nvmlReturn_t nvmlShutdown() { return NVML_SUCCESS; }
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* n) {
  *n = 2;
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t* d) {
  if (i > 1) return NVML_ERROR_INVALID_ARGUMENT;
  *d = reinterpret_cast<nvmlDevice_t>(&devs[i]);
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetHandleByUUID(const char* uuid, nvmlDevice_t* d) {
  for (int i = 0; i < 2; ++i) {
    if (std::strcmp(uuid, kUuids[i]) == 0) {
      *d = reinterpret_cast<nvmlDevice_t>(&devs[i]);
      return NVML_SUCCESS;
    }
  }
  return NVML_ERROR_NOT_FOUND;
}
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char* out, unsigned int len) {
  std::strncpy(out, kUuids[reinterpret_cast<Dev*>(d)->index], len);
  out[len - 1] = '\0';
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t, nvmlMemory_t* m) {
  m->total = Total();
  m->free = Total();
  m->used = 0;
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t, nvmlMemory_v2_t* m) {
  m->total = Total();
  m->reserved = 1 << 20;
  m->free = Total() - m->reserved;
  m->used = 0;
  return NVML_SUCCESS;
}
nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t, nvmlProcessUtilizationSample_t* s, unsigned int* n,
                                             unsigned long long) {
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  auto launches = cuda != nullptr ? reinterpret_cast<long (*)()>(dlsym(cuda, "fakeCudaLaunches")) : nullptr;
  if (launches == nullptr || *n < 1) return NVML_ERROR_NOT_FOUND;
  std::lock_guard<std::mutex> lock(mu);
  const unsigned long long now = NowUs();
  const long count = launches();
  const char* c = std::getenv("FAKE_GPU_LAUNCH_US");
  const double cost = c != nullptr ? std::atof(c) : 100;
  double util = 0;
  if (last_us != 0 && now > last_us)
    util = 100.0 * (count - last_launches) * cost / static_cast<double>(now - last_us);
  last_us = now;
  last_launches = count;
  s[0] = {static_cast<unsigned>(getpid()), now, static_cast<unsigned>(util > 100 ? 100 : util), 0, 0, 0};
  *n = 1;
  return NVML_SUCCESS;
}

}  // extern "C"
