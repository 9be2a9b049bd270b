#include "core/placement/mig_policy.h"

#include <tuple>

namespace artel::core::placement {

using internal::GpuState;
using internal::MigInstance;

namespace {

// Instances of `g` overlapping slices `want`; false if one is busy.
bool IdleOverlaps(const GpuState& g, uint8_t want, std::vector<int32_t>* out, int* slices, int* compute,
                  bool* media) {
  out->clear();
  *slices = 0;
  *compute = 0;
  *media = false;
  for (size_t i = 0; i < g.instances.size(); ++i) {
    const MigInstance& in = g.instances[i];
    if (!(SliceMask(in.shape, in.start) & want)) continue;
    if (in.busy) return false;
    out->push_back(static_cast<int32_t>(i));
    *slices += Shape(in.shape).slices;
    *compute += Shape(in.shape).compute;
    *media = *media || Shape(in.shape).media;
  }
  return true;
}

class MinFragmentation final : public MigSlotPolicy {
 public:
  std::optional<MigChoice> Choose(const std::vector<GpuState>& gpus,
                                  const std::array<int8_t, kNumGpuModels>& shape_by_model) const override {
    std::optional<MigChoice> best;
    // (action, -destroyed slices, busy slices, headroom): larger is better;
    // ties keep the earlier (lower gpu, lower slot).
    std::tuple<int, int, int, uint32_t> best_key{};
    std::vector<int32_t> overlap;
    for (size_t gi = 0; gi < gpus.size(); ++gi) {
      const GpuState& g = gpus[gi];
      if (!g.mig || g.model < 0) continue;
      int shape = shape_by_model[g.model];
      if (shape < 0) continue;
      int busy = __builtin_popcount(g.busy_mask);
      auto consider = [&](std::tuple<int, int, int, uint32_t> key, MigChoice c) {
        if (!best || key > best_key) {
          best_key = key;
          best = std::move(c);
        }
      };
      // 1. Reuse an idle instance of this shape.
      for (size_t i = 0; i < g.instances.size(); ++i) {
        const MigInstance& in = g.instances[i];
        if (in.busy || in.shape != shape) continue;
        // Headroom is unchanged by reuse: the slices were held already.
        consider(
            {3, 0, busy, Headroom(g.mask, g.compute, g.media)},
            MigChoice{
                static_cast<int32_t>(gi), static_cast<int8_t>(shape), in.start, static_cast<int32_t>(i), {}});
      }
      for (int s = 0; s < kMigMemorySlices; ++s) {
        if (!(Shape(shape).start_mask & (1u << s))) continue;
        uint8_t want = SliceMask(shape, s);
        // 2. Create in free slices.
        if (CanCreate(shape, s, g.mask, g.compute, g.media)) {
          uint32_t h =
              Headroom(g.mask | want, g.compute + Shape(shape).compute, g.media || Shape(shape).media);
          consider({2, 0, busy, h},
                   MigChoice{
                       static_cast<int32_t>(gi), static_cast<int8_t>(shape), static_cast<int8_t>(s), -1, {}});
          continue;
        }
        // 3. Repartition: destroy the idle instances in the way.
        int slices = 0, compute = 0;
        bool media = false;
        if (!IdleOverlaps(g, want, &overlap, &slices, &compute, &media) || overlap.empty()) continue;
        uint8_t mask = g.mask;
        for (int32_t i : overlap)
          mask &= static_cast<uint8_t>(~SliceMask(g.instances[i].shape, g.instances[i].start));
        int comp = g.compute - compute;
        bool med = g.media && !media;
        if (!CanCreate(shape, s, mask, comp, med)) continue;
        uint32_t h = Headroom(mask | want, comp + Shape(shape).compute, med || Shape(shape).media);
        consider({1, -slices, busy, h}, MigChoice{static_cast<int32_t>(gi), static_cast<int8_t>(shape),
                                                  static_cast<int8_t>(s), -1, overlap});
      }
    }
    return best;
  }
};

class FirstFit final : public MigSlotPolicy {
 public:
  std::optional<MigChoice> Choose(const std::vector<GpuState>& gpus,
                                  const std::array<int8_t, kNumGpuModels>& shape_by_model) const override {
    std::vector<int32_t> overlap;
    for (size_t gi = 0; gi < gpus.size(); ++gi) {
      const GpuState& g = gpus[gi];
      if (!g.mig || g.model < 0) continue;
      int shape = shape_by_model[g.model];
      if (shape < 0) continue;
      auto gpu = static_cast<int32_t>(gi);
      for (size_t i = 0; i < g.instances.size(); ++i) {
        if (!g.instances[i].busy && g.instances[i].shape == shape) {
          return MigChoice{
              gpu, static_cast<int8_t>(shape), g.instances[i].start, static_cast<int32_t>(i), {}};
        }
      }
      for (int s = 0; s < kMigMemorySlices; ++s) {
        if (CanCreate(shape, s, g.mask, g.compute, g.media)) {
          return MigChoice{gpu, static_cast<int8_t>(shape), static_cast<int8_t>(s), -1, {}};
        }
      }
      for (int s = 0; s < kMigMemorySlices; ++s) {
        if (!(Shape(shape).start_mask & (1u << s))) continue;
        int slices = 0, compute = 0;
        bool media = false;
        if (!IdleOverlaps(g, SliceMask(shape, s), &overlap, &slices, &compute, &media) || overlap.empty())
          continue;
        uint8_t mask = g.mask;
        for (int32_t i : overlap)
          mask &= static_cast<uint8_t>(~SliceMask(g.instances[i].shape, g.instances[i].start));
        if (CanCreate(shape, s, mask, g.compute - compute, g.media && !media)) {
          return MigChoice{gpu, static_cast<int8_t>(shape), static_cast<int8_t>(s), -1, overlap};
        }
      }
    }
    return std::nullopt;
  }
};

}  // namespace

std::unique_ptr<MigSlotPolicy> MakeMigSlotPolicy(MigPolicyKind kind) {
  if (kind == MigPolicyKind::kFirstFit) return std::make_unique<FirstFit>();
  return std::make_unique<MinFragmentation>();
}

}  // namespace artel::core::placement
