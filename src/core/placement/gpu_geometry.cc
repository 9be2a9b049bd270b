#include "core/placement/gpu_geometry.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <string>

#include "core/resource_names.h"

namespace artel::core::placement {
namespace {

constexpr std::array<ShapeInfo, kNumShapes> kShapes = {{
    {1, 1, 0b01111111, 7, false},  // k1Slice
    {1, 1, 0b01111111, 1, true},   // k1SliceMe
    {2, 1, 0b01010101, 4, false},  // k1gDouble
    {2, 2, 0b00010101, 3, false},  // k2g
    {4, 3, 0b00010001, 2, false},  // k3g
    {4, 4, 0b00000001, 1, false},  // k4g
    {8, 7, 0b00000001, 1, false},  // k7g
}};

// MiB of "<n>gb" read as n * 10^9 bytes.
constexpr int64_t GbToMib(int64_t gb) { return gb * 1000000000 / (1024 * 1024); }

constexpr std::array<GpuModelInfo, kNumGpuModels> kModels = {{
    {"A100-40GB",
     40960,
     {"1g.5gb", "1g.5gb+me", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"},
     {4864, 4864, 9856, 9856, 19968, 19968, 40192}},
    {"A100-80GB",
     81920,
     {"1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"},
     {9856, 9856, 19968, 19968, 40192, 40192, 80384}},
    {"H100-80GB",
     81920,
     {"1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"},
     {9856, 9856, 19968, 19968, 40192, 40192, 80384}},
    {"H200-141GB",
     143771,
     {"1g.18gb", "1g.18gb+me", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"},
     {GbToMib(18), GbToMib(18), GbToMib(35), GbToMib(35), GbToMib(71), GbToMib(71), GbToMib(141)}},
}};

// Non-media shapes from the widest to the narrowest: the headroom order.
constexpr std::array<int, 6> kHeadroomOrder = {6, 5, 4, 3, 2, 0};

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

const ShapeInfo& Shape(int shape) { return kShapes[shape]; }
const GpuModelInfo& GpuModel(int model) { return kModels[model]; }

int FindGpuModel(std::string_view product) {
  std::string p = Upper(product);
  auto has = [&](const char* s) { return p.find(s) != std::string::npos; };
  if (has("A100")) {
    if (has("80GB") || has("80G")) return 1;
    if (has("40GB") || has("40G") || p == "A100") return 0;
    return -1;
  }
  if (has("H100")) {
    // H100-94GB (NVL) and H100-96GB have other profiles; Artel has no table for them.
    if (has("94G") || has("96G") || has("NVL")) return -1;
    return 2;
  }
  if (has("H200")) return has("GH200") ? -1 : 3;
  return -1;
}

std::string CanonicalMigProfile(std::string_view profile) {
  constexpr std::string_view kResourceMe = ".me";
  if (profile.size() > kResourceMe.size() && profile.ends_with(kResourceMe)) {
    return std::string(profile.substr(0, profile.size() - kResourceMe.size())) + "+me";
  }
  return std::string(profile);
}

std::string MigResourceName(std::string_view profile) {
  std::string out = kMigResourcePrefix + std::string(profile);
  std::replace(out.begin(), out.end(), '+', '.');
  return out;
}

int FindProfile(int model, std::string_view profile) {
  if (model < 0 || model >= kNumGpuModels) return -1;
  const std::string name = CanonicalMigProfile(profile);
  for (int s = 0; s < kNumShapes; ++s) {
    if (name == kModels[model].profile[s]) return s;
  }
  return -1;
}

int SmallestShapeFor(int model, int64_t memory_mib, int compute_slices) {
  if (model < 0 || model >= kNumGpuModels) return -1;
  // Shapes are listed by (slices, compute) already; skip the media shape.
  for (int s = 0; s < kNumShapes; ++s) {
    if (kShapes[s].media) continue;
    if (kModels[model].profile_mib[s] >= memory_mib && kShapes[s].compute >= compute_slices) return s;
  }
  return -1;
}

bool CanCreate(int shape, int start, uint8_t mask, int compute, bool media) {
  const ShapeInfo& info = kShapes[shape];
  if (start < 0 || start >= kMigMemorySlices || !(info.start_mask & (1u << start))) return false;
  if (mask & SliceMask(shape, start)) return false;
  if (compute + info.compute > kMigComputeSlices) return false;
  if (info.media && media) return false;
  if (info.slices == kMigMemorySlices && (mask != 0 || compute != 0)) return false;
  return true;
}

int CountCreatable(int shape, uint8_t mask, int compute, bool media) {
  const ShapeInfo& info = kShapes[shape];
  int n = 0;
  for (int s = 0; s < kMigMemorySlices && n < info.max_instances; ++s) {
    if (CanCreate(shape, s, mask, compute, media)) {
      mask |= SliceMask(shape, s);
      compute += info.compute;
      if (info.media) media = true;
      ++n;
    }
  }
  return n;
}

uint32_t Headroom(uint8_t mask, int compute, bool media) {
  // 256 masks x 8 compute levels x 2 media states, built once.
  static const std::array<uint32_t, 256 * 8 * 2> table = [] {
    std::array<uint32_t, 256 * 8 * 2> t{};
    for (int m = 0; m < 256; ++m) {
      for (int c = 0; c <= kMigComputeSlices; ++c) {
        for (int me = 0; me < 2; ++me) {
          uint32_t key = 0;
          for (int shape : kHeadroomOrder) {
            key = (key << 3) |
                  static_cast<uint32_t>(CountCreatable(shape, static_cast<uint8_t>(m), c, me != 0));
          }
          t[(m * 8 + c) * 2 + me] = key;
        }
      }
    }
    return t;
  }();
  if (compute < 0 || compute > kMigComputeSlices) return 0;
  return table[(mask * 8 + compute) * 2 + (media ? 1 : 0)];
}

bool ParseMigInstance(std::string_view text, std::string* profile, int* start) {
  size_t at = text.find('@');
  if (at == std::string_view::npos || at == 0 || at + 1 >= text.size()) return false;
  int s = 0;
  auto [ptr, ec] = std::from_chars(text.data() + at + 1, text.data() + text.size(), s);
  if (ec != std::errc() || ptr != text.data() + text.size()) return false;
  *profile = std::string(text.substr(0, at));
  *start = s;
  return true;
}

}  // namespace artel::core::placement
