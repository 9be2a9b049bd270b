// The names of the resources Artel gives a meaning to: GPUs and their
// slices. One place for them, so that the engine, placement, the daemon
// and the CLI agree (docs/gpus.md describes each).
//
// Thread-safety: constants.
#pragma once

#include <string_view>

namespace artel::core {

inline constexpr char kGpuResource[] = "nvidia.com/gpu";         // whole GPUs
inline constexpr char kMigResourcePrefix[] = "nvidia.com/mig-";  // + a MIG profile, e.g. 1g.10gb
// A MIG instance chosen by need: memory (bytes) and a fraction of the
// compute (sevenths, see placement::ParseGpuCompute).
inline constexpr char kGpuMemoryNeed[] = "artel.dev/gpu-memory";
inline constexpr char kGpuComputeNeed[] = "artel.dev/gpu-compute";
// HAMi's shared-GPU requests: memory in MiB, memory in percent, compute in
// percent.
inline constexpr char kHamiGpuMemory[] = "nvidia.com/gpumem";
inline constexpr char kHamiGpuMemoryPercent[] = "nvidia.com/gpumem-percentage";
inline constexpr char kHamiGpuCores[] = "nvidia.com/gpucores";

// Whole GPUs or MIG instances: what a pod gets devices for.
inline bool IsDeviceResource(std::string_view name) {
  return name == kGpuResource || name.starts_with(kMigResourcePrefix);
}

}  // namespace artel::core
