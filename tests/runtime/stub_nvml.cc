// A stand-in for libnvidia-ml.so.1 with two fixed GPUs, so that the NVML
// discovery code runs in tests on hosts without a GPU. It implements only the
// entry points nvml.cc resolves, with the NVML ABI (C linkage, int returns).
//   GPU 0: "NVIDIA H100 80GB HBM3", 81559 MiB, no MIG, 37% busy, two processes.
//   GPU 1: "NVIDIA A100-SXM4-40GB", 40960 MiB, MIG on, instances 3g.20gb at
//          slot 0 and 1g.5gb at slot 6 (MIG device indices 0 and 2; 1 empty).
#include <cstring>

namespace {

struct Dev {
  int gpu;  // parent index
  int mig;  // -1 for a full GPU
};
Dev devs[] = {{0, -1}, {1, -1}, {1, 0}, {1, 2}};
int gi_handles[8];

void Copy(char* out, unsigned int len, const char* s) {
  std::strncpy(out, s, len);
  out[len - 1] = '\0';
}

struct Memory {
  unsigned long long total, free, used;
};
struct Util {
  unsigned int gpu, memory;
};
struct Proc {
  unsigned int pid;
  unsigned long long used;
  unsigned int gi, ci;
};
struct Placement {
  unsigned int start, size;
};
struct GiInfo {
  void* device;
  unsigned int id, profile_id;
  Placement placement;
};

}  // namespace

extern "C" {

int nvmlInit_v2() { return 0; }
int nvmlShutdown() { return 0; }
const char* nvmlErrorString(int) { return "stub error"; }
int nvmlDeviceGetCount_v2(unsigned int* n) {
  *n = 2;
  return 0;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned int i, Dev** d) {
  if (i > 1) return 2;  // INVALID_ARGUMENT
  *d = &devs[i];
  return 0;
}
int nvmlDeviceGetName(Dev* d, char* out, unsigned int len) {
  if (d->mig == 0)
    Copy(out, len, "NVIDIA A100-SXM4-40GB MIG 3g.20gb");
  else if (d->mig == 2)
    Copy(out, len, "NVIDIA A100-SXM4-40GB MIG 1g.5gb");
  else
    Copy(out, len, d->gpu == 0 ? "NVIDIA H100 80GB HBM3" : "NVIDIA A100-SXM4-40GB");
  return 0;
}
int nvmlDeviceGetUUID(Dev* d, char* out, unsigned int len) {
  if (d->mig >= 0)
    Copy(out, len, d->mig == 0 ? "MIG-stub-1-0" : "MIG-stub-1-2");
  else
    Copy(out, len, d->gpu == 0 ? "GPU-stub-0" : "GPU-stub-1");
  return 0;
}
int nvmlDeviceGetMemoryInfo(Dev* d, Memory* m) {
  m->total = (d->gpu == 0 ? 81559ULL : 40960ULL) << 20;
  m->used = 1ULL << 30;
  m->free = m->total - m->used;
  return 0;
}
int nvmlDeviceGetMigMode(Dev* d, unsigned int* current, unsigned int* pending) {
  if (d->gpu == 0) return 3;  // NOT_SUPPORTED
  *current = *pending = 1;
  return 0;
}
int nvmlDeviceGetMaxMigDeviceCount(Dev*, unsigned int* n) {
  *n = 3;
  return 0;
}
int nvmlDeviceGetMigDeviceHandleByIndex(Dev*, unsigned int i, Dev** out) {
  if (i == 1) return 6;  // NOT_FOUND
  if (i > 2) return 2;
  *out = i == 0 ? &devs[2] : &devs[3];
  return 0;
}
int nvmlDeviceGetGpuInstanceId(Dev* d, unsigned int* id) {
  *id = d->mig == 0 ? 1 : 9;
  return 0;
}
int nvmlDeviceGetGpuInstanceById(Dev*, unsigned int id, int** gi) {
  *gi = &gi_handles[id % 8];
  **gi = static_cast<int>(id);
  return 0;
}
int nvmlGpuInstanceGetInfo(int* gi, GiInfo* info) {
  std::memset(info, 0, sizeof(*info));
  info->id = static_cast<unsigned int>(*gi);
  info->placement.start = *gi == 1 ? 0 : 6;
  info->placement.size = *gi == 1 ? 4 : 1;
  return 0;
}
int nvmlDeviceGetUtilizationRates(Dev* d, Util* u) {
  if (d->gpu == 1) return 3;  // NOT_SUPPORTED with MIG on, as on real drivers
  u->gpu = 37;
  u->memory = 12;
  return 0;
}
int nvmlDeviceGetComputeRunningProcesses_v3(Dev* d, unsigned int* n, Proc* out) {
  if (d->gpu == 1) {
    *n = 0;
    return 0;
  }
  if (*n < 2) {
    *n = 2;
    return 7;  // INSUFFICIENT_SIZE
  }
  *n = 2;
  out[0] = {4242, 512ULL << 20, 0, 0};
  out[1] = {4343, 2ULL << 30, 0, 0};
  return 0;
}

}  // extern "C"
