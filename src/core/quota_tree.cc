#include "core/quota_tree.h"

#include <algorithm>
#include <functional>

namespace artel::core {

NodeId QuotaTree::AddNode(std::string name, bool is_cohort) {
  Node n;
  n.name = std::move(name);
  n.is_cohort = is_cohort;
  return nodes_.push_back(std::move(n));
}

void QuotaTree::SetParent(NodeId node, NodeId parent) {
  nodes_[node].parent = parent;
  nodes_[parent].children.push_back(node);
}

FrId QuotaTree::InternFr(FlavorId flavor, ResourceId resource) {
  FrId found = FindFr(flavor, resource);
  if (found.valid()) return found;
  const FrId id = fr_keys_.push_back({flavor, resource});
  if (!fr_table_.contains(flavor)) fr_table_.resize(static_cast<size_t>(flavor.value()) + 1);
  IdVector<ResourceId, FrId>& row = fr_table_[flavor];
  if (!row.contains(resource)) row.resize(static_cast<size_t>(resource.value()) + 1, FrId());
  row[resource] = id;
  return id;
}

FrId QuotaTree::FindFr(FlavorId flavor, ResourceId resource) const {
  if (!fr_table_.contains(flavor)) return {};
  const IdVector<ResourceId, FrId>& row = fr_table_[flavor];
  return row.contains(resource) ? row[resource] : FrId();
}

void QuotaTree::SetQuota(NodeId node, FrId fr, Amount nominal, Amount borrowing_limit, Amount lending_limit) {
  Node& n = nodes_[node];
  size_t size = std::max(num_frs(), static_cast<size_t>(fr.value()) + 1);
  if (n.nominal.size() < size) {
    n.nominal.resize(size, 0);
    n.borrowing_limit.resize(size, kNoLimit);
    n.lending_limit.resize(size, kNoLimit);
    n.has_quota.resize(size, 0);
  }
  n.nominal[fr] = nominal;
  n.borrowing_limit[fr] = borrowing_limit;
  n.lending_limit[fr] = lending_limit;
  n.has_quota[fr] = 1;
}

void QuotaTree::Finalize() {
  size_t f = num_frs();
  for (Node& n : nodes_) {
    n.nominal.resize(f, 0);
    n.borrowing_limit.resize(f, kNoLimit);
    n.lending_limit.resize(f, kNoLimit);
    n.has_quota.resize(f, 0);
    n.subtree.assign(f, 0);
    n.local.assign(f, 0);
    n.usage.assign(f, 0);
  }
  // Depths, then subtree quotas bottom-up (children before parents).
  std::vector<NodeId> order;
  order.reserve(nodes_.size());
  std::function<void(NodeId, int32_t)> visit = [&](NodeId i, int32_t depth) {
    nodes_[i].depth = depth;
    for (NodeId c : nodes_[i].children) visit(c, depth + 1);
    order.push_back(i);  // post-order
  };
  for (NodeId i : nodes_.ids()) {
    if (!nodes_[i].parent.valid()) visit(i, 0);
  }
  for (NodeId i : order) {
    Node& n = nodes_[i];
    n.height = n.is_cohort && !n.children.empty() ? 1 : 0;
    for (NodeId c : n.children) {
      if (nodes_[c].is_cohort) n.height = std::max(n.height, nodes_[c].height + 1);
    }
    for (FrId fr : frs()) {
      Amount s = n.nominal[fr];
      for (NodeId c : n.children) s += nodes_[c].subtree[fr] - nodes_[c].local[fr];
      n.subtree[fr] = s;
      n.local[fr] = n.lending_limit[fr] == kNoLimit ? 0 : std::max<Amount>(0, s - n.lending_limit[fr]);
    }
  }
}

NodeId QuotaTree::Root(NodeId n) const {
  while (nodes_[n].parent.valid()) n = nodes_[n].parent;
  return n;
}

Amount QuotaTree::PropagatedDelta(NodeId n, FrId fr, Amount old_usage, Amount new_usage) const {
  Amount local = nodes_[n].local[fr];
  return std::max<Amount>(0, new_usage - local) - std::max<Amount>(0, old_usage - local);
}

void QuotaTree::AddUsage(NodeId cq, FrId fr, Amount amount) {
  NodeId n = cq;
  Amount delta = amount;
  while (n.valid() && delta != 0) {
    Node& node = nodes_[n];
    Amount old_usage = node.usage[fr];
    node.usage[fr] = old_usage + delta;
    if (!node.parent.valid()) break;
    delta = PropagatedDelta(n, fr, old_usage, node.usage[fr]);
    n = node.parent;
  }
}

void QuotaTree::AddUsage(NodeId cq, const FrAmounts& amounts, int sign) {
  for (const auto& [fr, a] : amounts) AddUsage(cq, fr, sign * a);
}

Amount QuotaTree::Available(NodeId n, FrId fr) const {
  const Node& node = nodes_[n];
  if (!node.parent.valid()) return node.subtree[fr] - node.usage[fr];
  return AvailableBelow(node.local[fr], node.subtree[fr], node.borrowing_limit[fr], node.usage[fr],
                        Available(node.parent, fr));
}

Amount QuotaTree::PotentialAvailable(NodeId n, FrId fr) const {
  const Node& node = nodes_[n];
  if (!node.parent.valid()) return node.subtree[fr];
  Amount a = node.local[fr] + PotentialAvailable(node.parent, fr);
  if (node.borrowing_limit[fr] != kNoLimit) a = std::min(a, node.subtree[fr] + node.borrowing_limit[fr]);
  return a;
}

int32_t QuotaTree::BorrowingLevel(NodeId cq, FrId fr, Amount amount, bool* may_reclaim) const {
  const Node& c = nodes_[cq];
  bool has_parent = c.parent.valid();
  if (may_reclaim) *may_reclaim = has_parent;
  if (c.usage[fr] + amount <= c.subtree[fr] || !has_parent) return 0;
  Amount remaining = amount - std::max<Amount>(0, c.local[fr] - c.usage[fr]);
  NodeId n = c.parent;
  while (true) {
    const Node& node = nodes_[n];
    if (node.usage[fr] + remaining <= node.subtree[fr]) {
      if (may_reclaim) *may_reclaim = node.parent.valid();
      return node.height;
    }
    remaining -= std::max<Amount>(0, node.local[fr] - node.usage[fr]);
    if (!node.parent.valid()) {
      if (may_reclaim) *may_reclaim = false;
      return node.height;
    }
    n = node.parent;
  }
}

NodeId QuotaTree::Lca(NodeId a, NodeId b) const {
  while (a.valid() && b.valid() && a != b) {
    if (nodes_[a].depth > nodes_[b].depth) {
      a = nodes_[a].parent;
    } else if (nodes_[b].depth > nodes_[a].depth) {
      b = nodes_[b].parent;
    } else {
      a = nodes_[a].parent;
      b = nodes_[b].parent;
    }
  }
  return (a.valid() && a == b) ? a : NodeId();
}

}  // namespace artel::core
