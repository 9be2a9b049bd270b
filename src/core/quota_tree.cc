#include "core/quota_tree.h"

#include <algorithm>
#include <functional>

namespace artel::core {

int32_t QuotaTree::AddNode(std::string name, bool is_cohort) {
  Node n;
  n.name = std::move(name);
  n.is_cohort = is_cohort;
  nodes_.push_back(std::move(n));
  return static_cast<int32_t>(nodes_.size() - 1);
}

void QuotaTree::SetParent(int32_t node, int32_t parent) {
  nodes_[node].parent = parent;
  nodes_[parent].children.push_back(node);
}

int32_t QuotaTree::InternFr(FlavorId flavor, ResourceId resource) {
  int32_t found = FindFr(flavor, resource);
  if (found >= 0) return found;
  int32_t id = static_cast<int32_t>(fr_keys_.size());
  fr_keys_.emplace_back(flavor, resource);
  const size_t f = static_cast<size_t>(flavor.value());
  if (fr_table_.size() <= f) fr_table_.resize(f + 1);
  std::vector<int32_t>& row = fr_table_[f];
  const size_t r = static_cast<size_t>(resource.value());
  if (row.size() <= r) row.resize(r + 1, -1);
  row[r] = id;
  return id;
}

int32_t QuotaTree::FindFr(FlavorId flavor, ResourceId resource) const {
  if (!flavor.valid() || !resource.valid() || static_cast<size_t>(flavor.value()) >= fr_table_.size())
    return -1;
  const std::vector<int32_t>& row = fr_table_[static_cast<size_t>(flavor.value())];
  const size_t r = static_cast<size_t>(resource.value());
  return r < row.size() ? row[r] : -1;
}

void QuotaTree::SetQuota(int32_t node, int32_t fr, Amount nominal, Amount borrowing_limit,
                         Amount lending_limit) {
  Node& n = nodes_[node];
  size_t size = std::max(num_frs(), static_cast<size_t>(fr) + 1);
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
  std::vector<int32_t> order;
  order.reserve(nodes_.size());
  std::function<void(int32_t, int32_t)> visit = [&](int32_t i, int32_t depth) {
    nodes_[i].depth = depth;
    for (int32_t c : nodes_[i].children) visit(c, depth + 1);
    order.push_back(i);  // post-order
  };
  for (int32_t i = 0; i < static_cast<int32_t>(nodes_.size()); ++i) {
    if (nodes_[i].parent < 0) visit(i, 0);
  }
  for (int32_t i : order) {
    Node& n = nodes_[i];
    n.height = n.is_cohort && !n.children.empty() ? 1 : 0;
    for (int32_t c : n.children) {
      if (nodes_[c].is_cohort) n.height = std::max(n.height, nodes_[c].height + 1);
    }
    for (size_t fr = 0; fr < f; ++fr) {
      Amount s = n.nominal[fr];
      for (int32_t c : n.children) s += nodes_[c].subtree[fr] - nodes_[c].local[fr];
      n.subtree[fr] = s;
      n.local[fr] = n.lending_limit[fr] == kNoLimit ? 0 : std::max<Amount>(0, s - n.lending_limit[fr]);
    }
  }
}

int32_t QuotaTree::Root(int32_t n) const {
  while (nodes_[n].parent >= 0) n = nodes_[n].parent;
  return n;
}

Amount QuotaTree::PropagatedDelta(int32_t n, int32_t fr, Amount old_usage, Amount new_usage) const {
  Amount local = nodes_[n].local[fr];
  return std::max<Amount>(0, new_usage - local) - std::max<Amount>(0, old_usage - local);
}

void QuotaTree::AddUsage(int32_t cq, int32_t fr, Amount amount) {
  int32_t n = cq;
  Amount delta = amount;
  while (n >= 0 && delta != 0) {
    Node& node = nodes_[n];
    Amount old_usage = node.usage[fr];
    node.usage[fr] = old_usage + delta;
    if (node.parent < 0) break;
    delta = PropagatedDelta(n, fr, old_usage, node.usage[fr]);
    n = node.parent;
  }
}

void QuotaTree::AddUsage(int32_t cq, const FrAmounts& amounts, int sign) {
  for (const auto& [fr, a] : amounts) AddUsage(cq, fr, sign * a);
}

Amount QuotaTree::Available(int32_t n, int32_t fr) const {
  const Node& node = nodes_[n];
  if (node.parent < 0) return node.subtree[fr] - node.usage[fr];
  Amount local_avail = std::max<Amount>(0, node.local[fr] - node.usage[fr]);
  Amount parent_avail = Available(node.parent, fr);
  if (node.borrowing_limit[fr] != kNoLimit) {
    Amount stored_in_parent = node.subtree[fr] - node.local[fr];
    Amount used_in_parent = std::max<Amount>(0, node.usage[fr] - node.local[fr]);
    Amount with_max = stored_in_parent - used_in_parent + node.borrowing_limit[fr];
    parent_avail = std::min(parent_avail, with_max);
  }
  return local_avail + parent_avail;
}

Amount QuotaTree::PotentialAvailable(int32_t n, int32_t fr) const {
  const Node& node = nodes_[n];
  if (node.parent < 0) return node.subtree[fr];
  Amount a = node.local[fr] + PotentialAvailable(node.parent, fr);
  if (node.borrowing_limit[fr] != kNoLimit) a = std::min(a, node.subtree[fr] + node.borrowing_limit[fr]);
  return a;
}

int32_t QuotaTree::BorrowingLevel(int32_t cq, int32_t fr, Amount amount, bool* may_reclaim) const {
  const Node& c = nodes_[cq];
  bool has_parent = c.parent >= 0;
  if (may_reclaim) *may_reclaim = has_parent;
  if (c.usage[fr] + amount <= c.subtree[fr] || !has_parent) return 0;
  Amount remaining = amount - std::max<Amount>(0, c.local[fr] - c.usage[fr]);
  int32_t n = c.parent;
  while (true) {
    const Node& node = nodes_[n];
    if (node.usage[fr] + remaining <= node.subtree[fr]) {
      if (may_reclaim) *may_reclaim = node.parent >= 0;
      return node.height;
    }
    remaining -= std::max<Amount>(0, node.local[fr] - node.usage[fr]);
    if (node.parent < 0) {
      if (may_reclaim) *may_reclaim = false;
      return node.height;
    }
    n = node.parent;
  }
}

int32_t QuotaTree::Lca(int32_t a, int32_t b) const {
  while (a >= 0 && b >= 0 && a != b) {
    if (nodes_[a].depth > nodes_[b].depth) {
      a = nodes_[a].parent;
    } else if (nodes_[b].depth > nodes_[a].depth) {
      b = nodes_[b].parent;
    } else {
      a = nodes_[a].parent;
      b = nodes_[b].parent;
    }
  }
  return (a >= 0 && a == b) ? a : -1;
}

}  // namespace artel::core
