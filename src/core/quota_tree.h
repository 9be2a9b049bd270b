// QuotaTree: the hierarchical quota of one engine, per (flavor, resource).
//
// Nodes are ClusterQueues (leaves) and cohorts. For every node and every
// flavor-resource pair `fr` the tree keeps the Kueue v1beta2 quantities
// (docs/semantics.md section "Quota tree"):
//
//   subtree(CQ)     = nominal
//   subtree(cohort) = nominal + sum_children (child.subtree - child.local)
//   local(n)        = max(0, subtree - lendingLimit) if lendingLimit set, else 0
//   usage(cohort)   = sum_children max(0, child.usage - child.local)
//   available(root) = subtree - usage
//   available(n)    = max(0, local - usage)
//                     + min(available(parent),
//                           borrowingLimit set ? subtree - local
//                                                - max(0, usage - local)
//                                                + borrowingLimit : inf)
//   potential(root) = subtree
//   potential(n)    = min(local + potential(parent), subtree + borrowingLimit)
//
// Usage is maintained incrementally: adding or removing usage at a
// ClusterQueue walks up the parent chain and updates each ancestor by the
// change of `max(0, usage - local)` of the child below it, so every update
// costs O(depth) per fr. Queries of `available` also cost O(depth).
//
// A cohort cycle is rejected by the engine before a tree is built.
//
// Thread-safety: none; owned by one `EngineImpl`.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/id.h"
#include "core/quantity.h"

namespace artel::core {

inline constexpr Amount kNoLimit = -1;

// A sparse vector of (fr, amount), sorted by fr. The usage of one workload.
using FrAmounts = std::vector<std::pair<FrId, Amount>>;

// Adds `a` of `fr` to `acc`; a new entry is appended (sort afterwards where
// the order matters).
inline void AddTo(FrAmounts* acc, FrId fr, Amount a) {
  for (auto& [f, v] : *acc) {
    if (f == fr) {
      v += a;
      return;
    }
  }
  acc->emplace_back(fr, a);
}

class QuotaTree {
 public:
  struct Node {
    std::string name;
    bool is_cohort = false;
    NodeId parent;  // invalid for a root
    std::vector<NodeId> children;
    int32_t depth = 0;   // root = 0
    int32_t height = 0;  // distance to the furthest leaf; ClusterQueues 0
    Amount fair_weight = 1000;
    // Dense per-fr arrays, sized `num_frs()`.
    IdVector<FrId, Amount> nominal;
    IdVector<FrId, Amount> borrowing_limit;  // kNoLimit = unset
    IdVector<FrId, Amount> lending_limit;    // kNoLimit = unset
    IdVector<FrId, Amount> subtree;
    IdVector<FrId, Amount> local;
    IdVector<FrId, Amount> usage;
    IdVector<FrId, uint8_t> has_quota;  // fr is declared in this node's resource groups
  };

  QuotaTree() = default;

  // Building. `AddNode` returns the node index. `SetParent` links; call
  // `Finalize` once all nodes, quotas and links are in.
  NodeId AddNode(std::string name, bool is_cohort);
  void SetParent(NodeId node, NodeId parent);
  FrId InternFr(FlavorId flavor, ResourceId resource);
  // The pair's id, or an invalid one when no queue declares it.
  FrId FindFr(FlavorId flavor, ResourceId resource) const;
  void SetQuota(NodeId node, FrId fr, Amount nominal, Amount borrowing_limit, Amount lending_limit);
  void Finalize();

  size_t num_frs() const { return fr_keys_.size(); }
  size_t num_nodes() const { return nodes_.size(); }
  // Every flavor-resource id and every node id, in order.
  IdRange<FrId> frs() const { return IdRange<FrId>(fr_keys_.size()); }
  IdRange<NodeId> nodes() const { return nodes_.ids(); }
  std::pair<FlavorId, ResourceId> FrKey(FrId fr) const { return fr_keys_[fr]; }
  const Node& node(NodeId i) const { return nodes_[i]; }
  Node& mutable_node(NodeId i) { return nodes_[i]; }
  NodeId Root(NodeId n) const;

  // Usage changes at a ClusterQueue, propagated up. `sign` is +1 or -1.
  void AddUsage(NodeId cq, const FrAmounts& amounts, int sign);
  void AddUsage(NodeId cq, FrId fr, Amount amount);

  Amount Available(NodeId n, FrId fr) const;
  // One level of Available: what a node with quotas `local` and `subtree`,
  // borrowing limit `borrowing_limit` (kNoLimit: none) and usage `usage`
  // can take when its parent can give `parent_avail`.
  static Amount AvailableBelow(Amount local, Amount subtree, Amount borrowing_limit, Amount usage,
                               Amount parent_avail) {
    if (borrowing_limit != kNoLimit) {
      const Amount stored_in_parent = subtree - local;
      const Amount used_in_parent = std::max<Amount>(0, usage - local);
      parent_avail = std::min(parent_avail, stored_in_parent - used_in_parent + borrowing_limit);
    }
    return std::max<Amount>(0, local - usage) + parent_avail;
  }
  Amount PotentialAvailable(NodeId n, FrId fr) const;

  // Kueue's borrowing level of a request of `amount` at ClusterQueue `cq`:
  // 0 when it fits the queue's own quota (or the queue has no parent);
  // otherwise the height (distance to the furthest leaf) of the lowest
  // cohort whose subtree holds it, or of the root when none does.
  // `may_reclaim_in_hierarchy` is set when that subtree is not the whole
  // tree (a non-root node holds it).
  int32_t BorrowingLevel(NodeId cq, FrId fr, Amount amount, bool* may_reclaim_in_hierarchy = nullptr) const;

  // True if `n`'s usage exceeds its subtree quota in `fr`.
  bool IsBorrowing(NodeId n, FrId fr) const { return nodes_[n].usage[fr] > nodes_[n].subtree[fr]; }

  // Change of the usage the parent of `n` sees when `n`'s usage goes from
  // `old_usage` to `new_usage`.
  Amount PropagatedDelta(NodeId n, FrId fr, Amount old_usage, Amount new_usage) const;

  // Lowest common ancestor of two nodes; invalid if in different trees.
  NodeId Lca(NodeId a, NodeId b) const;

 private:
  IdVector<NodeId, Node> nodes_;
  IdVector<FrId, std::pair<FlavorId, ResourceId>> fr_keys_;
  IdVector<FlavorId, IdVector<ResourceId, FrId>> fr_table_;  // [flavor][resource] -> fr, invalid = none
};

}  // namespace artel::core
