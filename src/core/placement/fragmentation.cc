#include "core/placement/fragmentation.h"

namespace artel::core::placement {

using internal::Demand;
using internal::DomainView;
using internal::GpuState;
using internal::NodeState;

namespace {

bool HasPartlyUsedGpuFor(const NodeState& n, const Demand& d) {
  for (const GpuState& g : n.gpus) {
    if (d.kind == GpuKind::kShare) {
      if (!g.mig && g.shares > 0 && g.shares < g.max_shares) return true;
    } else if (g.mig && g.model >= 0 && d.shape[g.model] >= 0 && g.busy_mask != 0 && g.busy_mask != 0xff) {
      return true;
    }
  }
  return false;
}

class AntiFragmentation final : public TieBreaker {
 public:
  int64_t Key(int32_t index, const NodeState& n, const Demand& d, const DomainView& domains) const override {
    int64_t key = 0;
    if (domains.node_domain != nullptr) {
      const auto& nd = *domains.node_domain;
      const auto& pods = *domains.pods;
      for (size_t level = 0; level < nd.size(); ++level) {
        int32_t dom = nd[level][index];
        bool used = dom >= 0 && pods[level][dom] > 0;
        key = (key << 1) | (used ? 1 : 0);
      }
    }
    key = (key << 1) | (n.InUse() ? 1 : 0);
    bool partly =
        (d.kind == GpuKind::kShare || d.kind == GpuKind::kMigProfile || d.kind == GpuKind::kMigNeed) &&
        HasPartlyUsedGpuFor(n, d);
    key = (key << 1) | (partly ? 1 : 0);
    return key;
  }
};

}  // namespace

std::unique_ptr<TieBreaker> MakeAntiFragmentationTieBreaker() {
  return std::make_unique<AntiFragmentation>();
}

}  // namespace artel::core::placement
