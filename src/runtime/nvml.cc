// `NvmlDiscovery`: GPU inventory and telemetry through NVML, loaded with
// dlopen at run time so that Artel builds and runs without CUDA. The few NVML
// types and entry points used are declared here from the public NVML API
// reference; docs/gpus.md lists every field read.
//
// Required symbols (the library is refused without them): nvmlInit_v2,
// nvmlShutdown, nvmlDeviceGetCount_v2, nvmlDeviceGetHandleByIndex_v2,
// nvmlDeviceGetName, nvmlDeviceGetUUID, nvmlDeviceGetMemoryInfo. Everything
// else (MIG, utilization, processes) is optional: a driver without it, or a
// call answering NOT_SUPPORTED, leaves the field at its default.
//
// Thread-safety: NVML itself is thread-safe; `Discover` holds a mutex so the
// reads of one sample are not interleaved.
#include <dlfcn.h>

#include <mutex>
#include <string>
#include <vector>

#include "runtime/gpu_models.h"
#include "runtime/runtime.h"

namespace artel::runtime {
namespace {

// --- NVML declarations (subset) ---------------------------------------------
using nvmlReturn_t = int;
constexpr nvmlReturn_t kNvmlSuccess = 0;
constexpr nvmlReturn_t kNvmlErrorNotFound = 6;
constexpr nvmlReturn_t kNvmlErrorInsufficientSize = 7;
constexpr unsigned int kNvmlMigEnable = 1;
constexpr unsigned int kNvmlBufferSize = 96;  // NVML_DEVICE_{NAME,UUID}_V2_BUFFER_SIZE

struct nvmlDevice_st;
using nvmlDevice_t = nvmlDevice_st*;
struct nvmlGpuInstance_st;
using nvmlGpuInstance_t = nvmlGpuInstance_st*;

struct nvmlMemory_t {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};
struct nvmlUtilization_t {
  unsigned int gpu;
  unsigned int memory;
};
// nvmlProcessInfo_v1_t (nvmlDeviceGetComputeRunningProcesses).
struct nvmlProcessInfoV1 {
  unsigned int pid;
  unsigned long long usedGpuMemory;
};
// nvmlProcessInfo_t as taken by the _v2 and _v3 entry points.
struct nvmlProcessInfoV2 {
  unsigned int pid;
  unsigned long long usedGpuMemory;
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};
struct nvmlGpuInstancePlacement_t {
  unsigned int start;
  unsigned int size;
};
struct nvmlGpuInstanceInfo_t {
  nvmlDevice_t device;
  unsigned int id;
  unsigned int profileId;
  nvmlGpuInstancePlacement_t placement;
};

struct NvmlApi {
  nvmlReturn_t (*Init)() = nullptr;
  nvmlReturn_t (*Shutdown)() = nullptr;
  const char* (*ErrorString)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*GetCount)(unsigned int*) = nullptr;
  nvmlReturn_t (*GetHandleByIndex)(unsigned int, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*GetName)(nvmlDevice_t, char*, unsigned int) = nullptr;
  nvmlReturn_t (*GetUUID)(nvmlDevice_t, char*, unsigned int) = nullptr;
  nvmlReturn_t (*GetMemoryInfo)(nvmlDevice_t, nvmlMemory_t*) = nullptr;
  // Optional.
  nvmlReturn_t (*GetMigMode)(nvmlDevice_t, unsigned int*, unsigned int*) = nullptr;
  nvmlReturn_t (*GetMaxMigDeviceCount)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*GetMigDeviceHandleByIndex)(nvmlDevice_t, unsigned int, nvmlDevice_t*) = nullptr;
  nvmlReturn_t (*GetGpuInstanceId)(nvmlDevice_t, unsigned int*) = nullptr;
  nvmlReturn_t (*GetGpuInstanceById)(nvmlDevice_t, unsigned int, nvmlGpuInstance_t*) = nullptr;
  nvmlReturn_t (*GpuInstanceGetInfo)(nvmlGpuInstance_t, nvmlGpuInstanceInfo_t*) = nullptr;
  nvmlReturn_t (*GetUtilizationRates)(nvmlDevice_t, nvmlUtilization_t*) = nullptr;
  nvmlReturn_t (*GetProcessesV2)(nvmlDevice_t, unsigned int*, nvmlProcessInfoV2*) = nullptr;  // _v3 or _v2
  nvmlReturn_t (*GetProcessesV1)(nvmlDevice_t, unsigned int*, nvmlProcessInfoV1*) = nullptr;
};

template <typename F>
void Resolve(void* lib, const char* name, F* out) {
  *out = reinterpret_cast<F>(dlsym(lib, name));
}

class NvmlDiscovery final : public GpuDiscovery {
 public:
  NvmlDiscovery(void* lib, NvmlApi api) : lib_(lib), api_(api) {}
  ~NvmlDiscovery() override {
    api_.Shutdown();
    dlclose(lib_);
  }

  std::string mode() const override { return "nvml"; }

  Result<std::vector<GpuInfo>> Discover() override {
    std::lock_guard<std::mutex> lock(mu_);
    unsigned int count = 0;
    if (nvmlReturn_t rc = api_.GetCount(&count); rc != kNvmlSuccess) return Fail("nvmlDeviceGetCount_v2", rc);
    std::vector<GpuInfo> out;
    for (unsigned int i = 0; i < count; ++i) {
      nvmlDevice_t dev = nullptr;
      GpuInfo g;
      g.index = static_cast<int>(i);
      if (api_.GetHandleByIndex(i, &dev) != kNvmlSuccess) {
        // A GPU that fell off the bus still takes its index; report it as
        // unhealthy instead of hiding it.
        g.healthy = false;
        out.push_back(std::move(g));
        continue;
      }
      char buf[kNvmlBufferSize] = {};
      if (api_.GetName(dev, buf, sizeof(buf)) == kNvmlSuccess) g.name = buf;
      char uuid[kNvmlBufferSize] = {};
      if (api_.GetUUID(dev, uuid, sizeof(uuid)) == kNvmlSuccess) g.uuid = uuid;
      nvmlMemory_t mem{};
      if (api_.GetMemoryInfo(dev, &mem) == kNvmlSuccess) {
        g.memory_bytes = static_cast<int64_t>(mem.total);
        g.memory_used_bytes = static_cast<int64_t>(mem.used);
      } else {
        g.healthy = false;
      }
      g.model = NormalizeGpuModel(g.name, g.memory_bytes);
      if (api_.GetUtilizationRates != nullptr) {
        nvmlUtilization_t u{};
        if (api_.GetUtilizationRates(dev, &u) == kNvmlSuccess) g.utilization_pct = static_cast<int>(u.gpu);
      }
      ReadMig(dev, &g);
      ReadProcesses(dev, &g.processes);
      out.push_back(std::move(g));
    }
    return out;
  }

 private:
  Status Fail(const char* what, nvmlReturn_t rc) const {
    const char* msg = api_.ErrorString != nullptr ? api_.ErrorString(rc) : nullptr;
    return Status(StatusCode::kInternal, std::string("NVML ") + what + " failed: " +
                                             (msg != nullptr ? msg : "error " + std::to_string(rc)));
  }

  void ReadMig(nvmlDevice_t dev, GpuInfo* g) const {
    if (api_.GetMigMode == nullptr) return;
    unsigned int current = 0, pending = 0;
    if (api_.GetMigMode(dev, &current, &pending) != kNvmlSuccess) return;  // Not MIG-capable.
    g->mig_enabled = current == kNvmlMigEnable;
    if (!g->mig_enabled || api_.GetMaxMigDeviceCount == nullptr || api_.GetMigDeviceHandleByIndex == nullptr)
      return;
    unsigned int max = 0;
    if (api_.GetMaxMigDeviceCount(dev, &max) != kNvmlSuccess) return;
    for (unsigned int j = 0; j < max; ++j) {
      nvmlDevice_t mig = nullptr;
      nvmlReturn_t rc = api_.GetMigDeviceHandleByIndex(dev, j, &mig);
      if (rc == kNvmlErrorNotFound) continue;  // Sparse: no instance at this index.
      if (rc != kNvmlSuccess) continue;
      MigInstanceInfo inst;
      char buf[kNvmlBufferSize] = {};
      if (api_.GetUUID(mig, buf, sizeof(buf)) == kNvmlSuccess) inst.uuid = buf;
      char name[kNvmlBufferSize] = {};
      if (api_.GetName(mig, name, sizeof(name)) == kNvmlSuccess) inst.profile = MigProfileFromName(name);
      unsigned int gi_id = 0;
      nvmlGpuInstance_t gi = nullptr;
      nvmlGpuInstanceInfo_t info{};
      if (api_.GetGpuInstanceId != nullptr && api_.GetGpuInstanceById != nullptr &&
          api_.GpuInstanceGetInfo != nullptr && api_.GetGpuInstanceId(mig, &gi_id) == kNvmlSuccess &&
          api_.GetGpuInstanceById(dev, gi_id, &gi) == kNvmlSuccess &&
          api_.GpuInstanceGetInfo(gi, &info) == kNvmlSuccess) {
        inst.start_slot = static_cast<int>(info.placement.start);
      }
      g->mig_instances.push_back(std::move(inst));
    }
  }

  // NVML's two-call pattern: ask with a buffer, grow it while it is too small.
  void ReadProcesses(nvmlDevice_t dev, std::vector<GpuInfo::Process>* out) const {
    for (unsigned int cap = 64; cap <= 65536; cap *= 4) {
      unsigned int n = cap;
      if (api_.GetProcessesV2 != nullptr) {
        std::vector<nvmlProcessInfoV2> buf(cap);
        nvmlReturn_t rc = api_.GetProcessesV2(dev, &n, buf.data());
        if (rc == kNvmlErrorInsufficientSize) continue;
        if (rc != kNvmlSuccess) return;
        for (unsigned int k = 0; k < n && k < cap; ++k) {
          out->push_back({static_cast<int>(buf[k].pid), static_cast<int64_t>(buf[k].usedGpuMemory)});
        }
        return;
      }
      if (api_.GetProcessesV1 != nullptr) {
        std::vector<nvmlProcessInfoV1> buf(cap);
        nvmlReturn_t rc = api_.GetProcessesV1(dev, &n, buf.data());
        if (rc == kNvmlErrorInsufficientSize) continue;
        if (rc != kNvmlSuccess) return;
        for (unsigned int k = 0; k < n && k < cap; ++k) {
          out->push_back({static_cast<int>(buf[k].pid), static_cast<int64_t>(buf[k].usedGpuMemory)});
        }
      }
      return;
    }
  }

  std::mutex mu_;
  void* lib_;
  NvmlApi api_;
};

}  // namespace

Result<std::unique_ptr<GpuDiscovery>> MakeNvmlDiscovery() { return MakeNvmlDiscovery("libnvidia-ml.so.1"); }

Result<std::unique_ptr<GpuDiscovery>> MakeNvmlDiscovery(const std::string& library) {
  void* lib = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* err = dlerror();
    return FailedPrecondition("NVML not available: cannot load " + library + " (" +
                              (err != nullptr ? err : "unknown error") +
                              "); install the NVIDIA driver, or run with --fake-gpus SPEC");
  }
  NvmlApi api;
  Resolve(lib, "nvmlInit_v2", &api.Init);
  Resolve(lib, "nvmlShutdown", &api.Shutdown);
  Resolve(lib, "nvmlErrorString", &api.ErrorString);
  Resolve(lib, "nvmlDeviceGetCount_v2", &api.GetCount);
  Resolve(lib, "nvmlDeviceGetHandleByIndex_v2", &api.GetHandleByIndex);
  Resolve(lib, "nvmlDeviceGetName", &api.GetName);
  Resolve(lib, "nvmlDeviceGetUUID", &api.GetUUID);
  Resolve(lib, "nvmlDeviceGetMemoryInfo", &api.GetMemoryInfo);
  Resolve(lib, "nvmlDeviceGetMigMode", &api.GetMigMode);
  Resolve(lib, "nvmlDeviceGetMaxMigDeviceCount", &api.GetMaxMigDeviceCount);
  Resolve(lib, "nvmlDeviceGetMigDeviceHandleByIndex", &api.GetMigDeviceHandleByIndex);
  Resolve(lib, "nvmlDeviceGetGpuInstanceId", &api.GetGpuInstanceId);
  Resolve(lib, "nvmlDeviceGetGpuInstanceById", &api.GetGpuInstanceById);
  Resolve(lib, "nvmlGpuInstanceGetInfo", &api.GpuInstanceGetInfo);
  Resolve(lib, "nvmlDeviceGetUtilizationRates", &api.GetUtilizationRates);
  Resolve(lib, "nvmlDeviceGetComputeRunningProcesses_v3", &api.GetProcessesV2);
  if (api.GetProcessesV2 == nullptr)
    Resolve(lib, "nvmlDeviceGetComputeRunningProcesses_v2", &api.GetProcessesV2);
  Resolve(lib, "nvmlDeviceGetComputeRunningProcesses", &api.GetProcessesV1);

  std::string missing;
  auto need = [&](bool present, const char* name) {
    if (!present) missing += std::string(missing.empty() ? "" : ", ") + name;
  };
  need(api.Init != nullptr, "nvmlInit_v2");
  need(api.Shutdown != nullptr, "nvmlShutdown");
  need(api.GetCount != nullptr, "nvmlDeviceGetCount_v2");
  need(api.GetHandleByIndex != nullptr, "nvmlDeviceGetHandleByIndex_v2");
  need(api.GetName != nullptr, "nvmlDeviceGetName");
  need(api.GetUUID != nullptr, "nvmlDeviceGetUUID");
  need(api.GetMemoryInfo != nullptr, "nvmlDeviceGetMemoryInfo");
  if (!missing.empty()) {
    dlclose(lib);
    return FailedPrecondition("NVML library " + library + " is too old: missing " + missing);
  }
  if (nvmlReturn_t rc = api.Init(); rc != kNvmlSuccess) {
    const char* msg = api.ErrorString != nullptr ? api.ErrorString(rc) : nullptr;
    std::string text = msg != nullptr ? msg : "error " + std::to_string(rc);
    dlclose(lib);
    return FailedPrecondition(
        "NVML initialisation failed: " + text +
        " (is the NVIDIA driver loaded?); run with --fake-gpus SPEC on hosts without GPUs");
  }
  return std::unique_ptr<GpuDiscovery>(std::make_unique<NvmlDiscovery>(lib, api));
}

}  // namespace artel::runtime
