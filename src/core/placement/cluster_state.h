// Internal state of a placement `Cluster`, shared by its policies.
//
// Not part of the public API: only files under src/core/placement/ and the
// placement tests include it. A `NodeState` is what one node has and holds
// now; a `Demand` is one pod of a pod group with its resource names interned
// and its GPU request resolved per GPU model. Policies read these structs and
// never mutate them; only cluster.cc changes state.
//
// Thread-safety: plain values.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/model.h"
#include "core/placement/gpu_geometry.h"
#include "core/placement/placement.h"
#include "core/quantity.h"

namespace artel::core::placement::internal {

struct MigInstance {
  int8_t shape = 0;
  int8_t start = 0;
  bool busy = false;
};

struct GpuState {
  int8_t model = -1;  // gpu_geometry.h model index, -1 = no MIG geometry
  bool mig = false;
  bool whole_used = false;
  bool media = false;       // a media-engine instance exists
  bool busy_media = false;  // ... and is busy
  uint8_t mask = 0;         // memory slices held by instances (busy or idle)
  uint8_t busy_mask = 0;    // memory slices held by busy instances
  int8_t compute = 0;       // compute slices held by instances
  int8_t busy_compute = 0;
  int16_t shares = 0;
  int16_t max_shares = 10;
  int32_t share_cores = 0;  // percent, summed over isolated shares with a limit
  int64_t memory_mib = 0;
  int64_t share_mem_mib = 0;  // memory limits of the shares, summed
  std::vector<MigInstance> instances;

  bool WholeFree() const { return !mig && !whole_used && shares == 0; }
  // Nothing placed on it (idle MIG instances do not count).
  bool Untouched() const { return !whole_used && shares == 0 && busy_mask == 0; }
};

// Static attributes that filters read; nodes with equal ones share a class,
// so a filter runs once per class instead of once per node.
struct NodeClass {
  std::map<std::string, std::string> labels;
  std::vector<Taint> taints;
  bool ready = true;
};

struct NodeState {
  std::string name;
  int32_t klass = 0;
  bool ready = true;
  std::vector<Amount> alloc;  // per interned resource; kUnlimited = no limit
  std::vector<Amount> used;
  int32_t pods = 0;
  int16_t whole_total = 0;  // non-MIG GPUs
  int16_t free_whole = 0;
  int32_t mig_slices = 0;  // 8 per MIG-mode GPU
  int32_t mig_busy_slices = 0;
  int64_t share_mem_total = 0;  // memory of non-MIG GPUs
  int64_t share_mem_used = 0;
  std::vector<GpuState> gpus;
  std::vector<std::string> gpu_uuids;
  bool InUse() const { return pods > 0; }
};

struct Demand {
  int32_t group = 0;
  std::vector<std::pair<int32_t, Amount>> resources;  // interned, non-zero
  GpuKind kind = GpuKind::kNone;
  int32_t count = 0;
  std::array<int8_t, kNumGpuModels> shape{-1, -1, -1, -1};  // MIG shape per model
  int64_t share_mib = 0;                                    // kShare fixed limit, or 0
  int32_t share_permille = 0;                               // kShare relative limit when share_mib == 0
  int32_t cores = 0;
  bool isolated = true;

  // The memory limit of a share on a GPU with `gpu_mib` memory.
  int64_t ShareMib(int64_t gpu_mib) const {
    if (share_mib > 0) return share_mib;
    if (share_permille > 0) return gpu_mib * share_permille / 1000;
    return gpu_mib;
  }
};

// Domain membership of nodes for one topology, for the fragmentation
// tie-break: `in_use[level][domain]` counts pods placed in the domain.
struct DomainView {
  const std::vector<std::vector<int32_t>>* node_domain = nullptr;  // [level][node], -1 = none
  const std::vector<std::vector<int64_t>>* pods = nullptr;         // [level][domain]
};

// A topology's levels and domains: which domain of each level every node is
// in, and the nodes and placed pods of every domain.
struct Topo {
  std::string name;
  std::vector<std::string> levels;
  std::vector<std::vector<int32_t>> node_domain;                       // [level][node]
  std::vector<std::vector<int64_t>> domain_pods;                       // [level][domain]
  std::vector<std::vector<std::string>> domain_label;                  // [level][domain] the level's value
  std::vector<std::vector<std::vector<int32_t>>> domain_nodes;         // [level][domain]
  std::vector<std::unordered_map<std::string, int32_t>> domain_index;  // [level] path -> domain
};

}  // namespace artel::core::placement::internal
