#include "core/placement/share_policy.h"

#include <algorithm>
#include <tuple>

namespace artel::core::placement {

using internal::Demand;
using internal::GpuState;

bool CanTakeShare(const GpuState& g, const Demand& d) {
  if (g.mig || g.whole_used || g.memory_mib <= 0 || g.shares >= g.max_shares) return false;
  int64_t mib = d.ShareMib(g.memory_mib);
  if (mib <= 0 || g.share_mem_mib + mib > g.memory_mib) return false;
  if (d.isolated && d.cores > 0 && g.share_cores + d.cores > 100) return false;
  return true;
}

namespace {

class ShareBySort final : public ShareSlotPolicy {
 public:
  explicit ShareBySort(bool spread) : spread_(spread) {}

  std::vector<int32_t> Choose(const std::vector<GpuState>& gpus, const Demand& d) const override {
    // (sort key, index); smaller key first.
    std::vector<std::tuple<int, int64_t, int32_t>> cand;
    for (size_t i = 0; i < gpus.size(); ++i) {
      const GpuState& g = gpus[i];
      if (!CanTakeShare(g, d)) continue;
      int64_t left = g.memory_mib - g.share_mem_mib - d.ShareMib(g.memory_mib);
      if (spread_) {
        cand.emplace_back(0, -left, static_cast<int32_t>(i));
      } else {
        cand.emplace_back(g.shares > 0 ? 0 : 1, left, static_cast<int32_t>(i));
      }
    }
    if (static_cast<int32_t>(cand.size()) < d.count) return {};
    std::partial_sort(cand.begin(), cand.begin() + d.count, cand.end());
    std::vector<int32_t> out;
    out.reserve(d.count);
    for (int32_t i = 0; i < d.count; ++i) out.push_back(std::get<2>(cand[i]));
    return out;
  }

 private:
  bool spread_;
};

}  // namespace

std::unique_ptr<ShareSlotPolicy> MakeShareSlotPolicy(ScorePolicy policy) {
  return std::make_unique<ShareBySort>(policy == ScorePolicy::kSpread);
}

}  // namespace artel::core::placement
