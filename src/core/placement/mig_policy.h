// Dynamic MIG: where on a node's GPUs to put one MIG instance.
//
// A pod asks for a profile, or for a need that the cluster has already
// turned into the smallest profile that fits on each GPU model
// (gpu_geometry.h `SmallestShapeFor`). A `MigSlotPolicy` picks the GPU and
// start slot, and says whether an idle instance is reused, a new one is
// created in free slices, or idle instances are destroyed to make room (a
// repartition). Busy instances are never touched.
//
// `MinFragmentationMigPolicy` (the default) considers every option on every
// MIG GPU of the node and takes the best by this order:
//
//  1. the least disruptive action: reuse an idle instance of exactly this
//     profile; else create one in free slices; else repartition, destroying
//     the fewest memory slices of idle instances;
//  2. binpack across GPUs: the GPU whose busy instances hold the most memory
//     slices, so that untouched GPUs stay whole for 7g requests;
//  3. the largest headroom left on that GPU (gpu_geometry.h `Headroom`):
//     the state after the change that can still host the most 7g, then 4g,
//     3g, 2g, 1g (double) and 1g instances. This is what keeps slots from
//     becoming unusable: an 18 GB request on an empty H100 goes to
//     1g.20gb@6, which keeps 4g@0 and three 2g possible, rather than @0,
//     which would rule out 4g;
//  4. the lower GPU index, then the lower start slot.
//
// `FirstFitMigPolicy` is the baseline the benchmarks compare with (the way
// peers pick from fixed geometries): the first GPU, in index order, where
// the profile fits at all; on it, reuse an idle instance of the profile,
// else the lowest free start slot, else the lowest start slot whose
// overlapping instances are all idle (destroying them).
//
// Thread-safety: stateless policies.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "core/placement/cluster_state.h"

namespace artel::core::placement {

struct MigChoice {
  int32_t gpu = 0;
  int8_t shape = 0;
  int8_t start = 0;
  int32_t reuse = -1;            // index into GpuState::instances, or -1 to create
  std::vector<int32_t> destroy;  // indices into GpuState::instances (idle), for a repartition
};

class MigSlotPolicy {
 public:
  virtual ~MigSlotPolicy() = default;
  // `shape_by_model[m]` is the shape to use on GPUs of model m (-1 = none).
  virtual std::optional<MigChoice> Choose(const std::vector<internal::GpuState>& gpus,
                                          const std::array<int8_t, kNumGpuModels>& shape_by_model) const = 0;
};

std::unique_ptr<MigSlotPolicy> MakeMigSlotPolicy(MigPolicyKind kind);

}  // namespace artel::core::placement
