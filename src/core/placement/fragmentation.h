// Anti-fragmentation tie-break: among nodes with equal scores, prefer the
// one whose use leaves the largest free blocks.
//
// Free capacity is worth most in large, whole blocks: an empty rack can take
// a 64-pod gang, an empty host an 8-GPU pod, an untouched GPU a 7g instance
// or a whole-GPU pod. So when the score (node_scorer.h) cannot decide, a
// pod should go where it breaks no block that is still whole, and if it must
// break one, the smallest. The key of a candidate node is built from bits,
// most significant first (higher key is better):
//
//  1. for each level of the tie-break topology, from the widest (zone) to
//     the narrowest above the host (rack): 1 if the node's domain at that
//     level already holds pods (placing here breaks no whole domain);
//  2. 1 if the node itself already holds pods (no whole host is broken);
//  3. for MIG and share demands, 1 if the node has a GPU that is already
//     partly used and could host the pod type (no whole GPU is broken).
//
// Nodes whose key is still equal are taken in node order (the order of
// `Cluster::AddNode`), which is deterministic.
//
// The tie-break topology is the gang's topology, or the cluster's first one
// when the gang names none; without any topology, step 1 is empty.
//
// Thread-safety: stateless policy.
#pragma once

#include <cstdint>
#include <memory>

#include "core/placement/cluster_state.h"

namespace artel::core::placement {

class TieBreaker {
 public:
  virtual ~TieBreaker() = default;
  virtual int64_t Key(int32_t node_index, const internal::NodeState& node, const internal::Demand& demand,
                      const internal::DomainView& domains) const = 0;
};

std::unique_ptr<TieBreaker> MakeAntiFragmentationTieBreaker();

}  // namespace artel::core::placement
