// Node scoring: among the nodes that can take a pod, which is best.
//
// A `NodeScorer` maps a node and one pod's demand to an integer; higher is
// better. Scores are compared only between nodes for the same demand, so
// each demand kind uses the measure that matters for it:
//
//  1. Whole GPUs: the whole GPUs the node would have left after the pod.
//     Binpack prefers the fewest left (best fit: the hole left behind is the
//     smallest, and untouched nodes stay whole for 8-GPU pods); spread
//     prefers the most.
//  2. MIG instances: the share of the node's MIG memory slices that busy
//     instances hold. Binpack prefers the fullest node, spread the emptiest.
//  3. Memory shares: the share of the node's GPU memory given out as shares;
//     binpack prefers the fullest, spread the emptiest.
//  4. No GPU: the mean, over the resources the pod requests that the node
//     limits, of (used + request) / allocatable, in thousandths (the
//     Kubernetes MostAllocated / LeastAllocated shape). Binpack prefers the
//     highest, spread the lowest.
//
// Ties are not broken here: the cluster breaks them with the
// anti-fragmentation policy (fragmentation.h), then by node order.
//
// Binpack is the default (GPU clusters strand capacity when they spread);
// spread is chosen per workload or per flavor (`GangRequest::score`).
//
// Thread-safety: stateless policies.
#pragma once

#include <cstdint>
#include <memory>

#include "core/placement/cluster_state.h"
#include "core/placement/placement.h"

namespace artel::core::placement {

class NodeScorer {
 public:
  virtual ~NodeScorer() = default;
  // REQUIRES: the pod fits on `node`.
  virtual int64_t Score(const internal::NodeState& node, const internal::Demand& demand) const = 0;
};

std::unique_ptr<NodeScorer> MakeNodeScorer(ScorePolicy policy);

}  // namespace artel::core::placement
