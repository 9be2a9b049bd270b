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
using FrAmounts = std::vector<std::pair<int32_t, Amount>>;

class QuotaTree {
 public:
  struct Node {
    std::string name;
    bool is_cohort = false;
    int32_t parent = -1;
    std::vector<int32_t> children;
    int32_t depth = 0;   // root = 0
    int32_t height = 0;  // distance to the furthest leaf; ClusterQueues 0
    Amount fair_weight = 1000;
    // Dense per-fr arrays, sized `num_frs()`.
    std::vector<Amount> nominal;
    std::vector<Amount> borrowing_limit;  // kNoLimit = unset
    std::vector<Amount> lending_limit;    // kNoLimit = unset
    std::vector<Amount> subtree;
    std::vector<Amount> local;
    std::vector<Amount> usage;
    std::vector<uint8_t> has_quota;  // fr is declared in this node's resource groups
  };

  QuotaTree() = default;

  // Building. `AddNode` returns the node index. `SetParent` links; call
  // `Finalize` once all nodes, quotas and links are in.
  int32_t AddNode(std::string name, bool is_cohort);
  void SetParent(int32_t node, int32_t parent);
  int32_t InternFr(FlavorId flavor, ResourceId resource);
  int32_t FindFr(FlavorId flavor, ResourceId resource) const;
  void SetQuota(int32_t node, int32_t fr, Amount nominal, Amount borrowing_limit, Amount lending_limit);
  void Finalize();

  size_t num_frs() const { return fr_keys_.size(); }
  size_t num_nodes() const { return nodes_.size(); }
  std::pair<FlavorId, ResourceId> FrKey(int32_t fr) const { return fr_keys_[fr]; }
  const Node& node(int32_t i) const { return nodes_[i]; }
  Node& mutable_node(int32_t i) { return nodes_[i]; }
  int32_t Root(int32_t n) const;

  // Usage changes at a ClusterQueue, propagated up. `sign` is +1 or -1.
  void AddUsage(int32_t cq, const FrAmounts& amounts, int sign);
  void AddUsage(int32_t cq, int32_t fr, Amount amount);

  Amount Available(int32_t n, int32_t fr) const;
  Amount PotentialAvailable(int32_t n, int32_t fr) const;

  // Kueue's borrowing level of a request of `amount` at ClusterQueue `cq`:
  // 0 when it fits the queue's own quota (or the queue has no parent);
  // otherwise the height (distance to the furthest leaf) of the lowest
  // cohort whose subtree holds it, or of the root when none does.
  // `may_reclaim_in_hierarchy` is set when that subtree is not the whole
  // tree (a non-root node holds it).
  int32_t BorrowingLevel(int32_t cq, int32_t fr, Amount amount,
                         bool* may_reclaim_in_hierarchy = nullptr) const;

  // True if `n`'s usage exceeds its subtree quota in `fr`.
  bool IsBorrowing(int32_t n, int32_t fr) const { return nodes_[n].usage[fr] > nodes_[n].subtree[fr]; }

  // Change of the usage the parent of `n` sees when `n`'s usage goes from
  // `old_usage` to `new_usage`.
  Amount PropagatedDelta(int32_t n, int32_t fr, Amount old_usage, Amount new_usage) const;

  // Lowest common ancestor of two nodes; -1 if in different trees.
  int32_t Lca(int32_t a, int32_t b) const;

 private:
  std::vector<Node> nodes_;
  std::vector<std::pair<FlavorId, ResourceId>> fr_keys_;
  std::vector<std::vector<int32_t>> fr_table_;  // [flavor][resource] -> fr, -1 = none
};

}  // namespace artel::core
