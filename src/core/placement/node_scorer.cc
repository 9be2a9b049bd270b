#include "core/placement/node_scorer.h"

namespace artel::core::placement {

using internal::Demand;
using internal::NodeState;

namespace {

// The binpack measure; spread negates it.
int64_t Fullness(const NodeState& n, const Demand& d) {
  switch (d.kind) {
    case GpuKind::kWhole: return -(n.free_whole - d.count);
    case GpuKind::kMigProfile:
    case GpuKind::kMigNeed: return n.mig_slices == 0 ? 0 : int64_t{n.mig_busy_slices} * 1000 / n.mig_slices;
    case GpuKind::kShare: return n.share_mem_total == 0 ? 0 : n.share_mem_used * 1000 / n.share_mem_total;
    case GpuKind::kNone: break;
  }
  int64_t sum = 0;
  int64_t k = 0;
  for (const auto& [r, amount] : d.resources) {
    Amount alloc = n.alloc[r];
    if (alloc == kUnlimited || alloc <= 0) continue;
    sum += static_cast<int64_t>((static_cast<__int128>(n.used[r] + amount) * 1000) / alloc);
    ++k;
  }
  return k == 0 ? 0 : sum / k;
}

class BinpackScorer final : public NodeScorer {
 public:
  int64_t Score(const NodeState& n, const Demand& d) const override { return Fullness(n, d); }
};

class SpreadScorer final : public NodeScorer {
 public:
  int64_t Score(const NodeState& n, const Demand& d) const override { return -Fullness(n, d); }
};

}  // namespace

std::unique_ptr<NodeScorer> MakeNodeScorer(ScorePolicy policy) {
  if (policy == ScorePolicy::kSpread) return std::make_unique<SpreadScorer>();
  return std::make_unique<BinpackScorer>();
}

}  // namespace artel::core::placement
