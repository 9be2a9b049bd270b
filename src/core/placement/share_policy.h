// Memory shares (HAMi- and KAI-style GPU sharing): which GPUs of a node
// take one pod's shares.
//
// A share is part of one GPU: a memory limit (fixed MiB, or a fraction of
// the device's memory) and, for isolated shares, a compute limit in percent
// (0 = unlimited). HAMi-core enforces both; KAI fractions are recorded with
// `isolated = false`, and only their memory counts against the device. A
// pod that asks for N shared devices gets N distinct GPUs of the node.
//
// A GPU can take a share if it is not in MIG mode, is not held whole, knows
// its memory, has fewer than `max_shares` shares, has the memory left and,
// for an isolated share with a compute limit, the percent left.
//
// `ShareSlotPolicy` orders the eligible GPUs and takes the first N:
//   binpack (default):
//    1. GPUs that already hold shares before untouched ones (an untouched
//       GPU stays whole for whole-GPU pods and for other tenants);
//    2. the least memory left after the share (best fit);
//    3. the lower GPU index.
//   spread:
//    1. the most memory left after the share (untouched GPUs first);
//    2. the lower GPU index.
//
// Thread-safety: stateless policies.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/placement/cluster_state.h"
#include "core/placement/placement.h"

namespace artel::core::placement {

class ShareSlotPolicy {
 public:
  virtual ~ShareSlotPolicy() = default;
  // Returns `demand.count` GPU indices, or an empty vector if the node
  // cannot take the pod.
  virtual std::vector<int32_t> Choose(const std::vector<internal::GpuState>& gpus,
                                      const internal::Demand& demand) const = 0;
};

// True if `gpu` can take one share of `demand`.
bool CanTakeShare(const internal::GpuState& gpu, const internal::Demand& demand);

std::unique_ptr<ShareSlotPolicy> MakeShareSlotPolicy(ScorePolicy policy);

}  // namespace artel::core::placement
