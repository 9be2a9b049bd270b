// Reading pod requests and typed GPU and topology requests into placement requests.
#include <charconv>
#include <string>

#include "core/placement/gpu_geometry.h"
#include "core/placement/placement.h"
#include "core/resource_names.h"

namespace artel::core::placement {

namespace {

constexpr const char* kGpu = kGpuResource;
constexpr const char* kMigPrefix = kMigResourcePrefix;
constexpr const char* kNeedMemory = kGpuMemoryNeed;
constexpr const char* kNeedCompute = kGpuComputeNeed;
constexpr const char* kHamiMem = kHamiGpuMemory;
constexpr const char* kHamiMemPct = kHamiGpuMemoryPercent;
constexpr const char* kHamiCores = kHamiGpuCores;

Result<int32_t> WholeCount(const std::string& name, Amount a) {
  if (a <= 0 || a % kMilli != 0) return InvalidArgument(name + " must be a positive whole number");
  if (a / kMilli > 1024) return InvalidArgument(name + " is too large");
  return static_cast<int32_t>(a / kMilli);
}

std::string Trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return std::string(s);
}

}  // namespace

const char* PlaceOutcomeName(PlaceOutcome outcome) {
  switch (outcome) {
    case PlaceOutcome::kPlaced: return "placed";
    case PlaceOutcome::kUnschedulable: return "unschedulable";
    case PlaceOutcome::kInfeasible: return "infeasible";
  }
  return "?";
}

bool IsGpuResource(std::string_view name) {
  return name == kGpu || name.starts_with(kMigPrefix) || name == kNeedMemory || name == kNeedCompute ||
         name == kHamiMem || name == kHamiMemPct || name == kHamiCores;
}

Result<Amount> ParseGpuCompute(std::string_view text) {
  std::string t = Trim(text);
  size_t slash = t.find('/');
  if (slash != std::string::npos) {
    int64_t num = 0, den = 0;
    auto r1 = std::from_chars(t.data(), t.data() + slash, num);
    auto r2 = std::from_chars(t.data() + slash + 1, t.data() + t.size(), den);
    if (r1.ec != std::errc() || r1.ptr != t.data() + slash || r2.ec != std::errc() ||
        r2.ptr != t.data() + t.size() || den <= 0 || num <= 0 || num > den) {
      return InvalidArgument("gpu-compute \"" + t + "\": expected a fraction like 3/7");
    }
    return (num * kMilli + den - 1) / den;
  }
  Result<Amount> q = ParseQuantity(t);
  if (!q.ok()) return InvalidArgument("gpu-compute \"" + t + "\": " + q.status().message());
  if (*q <= 0 || *q > kMilli) return InvalidArgument("gpu-compute \"" + t + "\" must be in (0, 1]");
  return *q;
}

Result<GpuRequest> ParseGpuRequest(const FlatMap<std::string, Amount>& requests,
                                   const GpuShareRequest& share) {
  GpuRequest out;
  auto set_kind = [&](GpuKind k, const std::string& why) -> Status {
    if (out.kind != GpuKind::kNone && out.kind != k) {
      return InvalidArgument("conflicting GPU requests: " + why +
                             " cannot be combined with another GPU request kind");
    }
    out.kind = k;
    return Status::Ok();
  };
  int32_t gpus = 0;
  if (auto it = requests.find(kGpu); it != requests.end() && it->second != 0) {
    Result<int32_t> n = WholeCount(kGpu, it->second);
    if (!n.ok()) return n.status();
    gpus = *n;
  }
  bool hami = false;
  if (auto it = requests.find(kHamiMem); it != requests.end() && it->second != 0) {
    if (it->second < 0) return InvalidArgument(std::string(kHamiMem) + " must be positive");
    out.memory_mib = (it->second + kMilli - 1) / kMilli;
    hami = true;
  }
  if (auto it = requests.find(kHamiMemPct); it != requests.end() && it->second != 0) {
    if (it->second < 0 || it->second > 100 * kMilli)
      return InvalidArgument(std::string(kHamiMemPct) + " must be in 1..100");
    out.memory_permille = static_cast<int32_t>(it->second / 100);  // percent * 1000 milli -> permille
    hami = true;
  }
  if (auto it = requests.find(kHamiCores); it != requests.end() && it->second != 0) {
    if (it->second < 0 || it->second > 100 * kMilli)
      return InvalidArgument(std::string(kHamiCores) + " must be in 0..100");
    out.cores_percent = static_cast<int32_t>(it->second / kMilli);
    hami = true;
  }
  if (hami) {
    if (Status s = set_kind(GpuKind::kShare, "nvidia.com/gpumem"); !s.ok()) return s;
    out.count = gpus > 0 ? gpus : 1;
    out.isolated = true;
  } else if (gpus > 0) {
    out.kind = GpuKind::kWhole;
    out.count = gpus;
  }
  for (const auto& [name, amount] : requests) {
    if (!name.starts_with(kMigPrefix) || amount == 0) continue;
    if (Status s = set_kind(GpuKind::kMigProfile, name); !s.ok()) return s;
    if (!out.mig_profile.empty()) return InvalidArgument("a pod may ask for one MIG profile only");
    Result<int32_t> n = WholeCount(name, amount);
    if (!n.ok()) return n.status();
    // nvidia.com/mig-1g.10gb.me (the device plugin's name) is the profile 1g.10gb+me.
    out.mig_profile = CanonicalMigProfile(name.substr(std::string_view(kMigPrefix).size()));
    out.count = *n;
  }
  auto need = requests.find(kNeedMemory);
  auto compute = requests.find(kNeedCompute);
  if ((need != requests.end() && need->second != 0) || (compute != requests.end() && compute->second != 0)) {
    if (Status s = set_kind(GpuKind::kMigNeed, kNeedMemory); !s.ok()) return s;
    out.count = 1;
    if (need != requests.end()) {
      if (need->second < 0) return InvalidArgument(std::string(kNeedMemory) + " must be positive");
      // milli-bytes -> MiB, rounding up.
      Amount bytes = (need->second + kMilli - 1) / kMilli;
      out.memory_mib = (bytes + (1 << 20) - 1) >> 20;
    }
    if (compute != requests.end() && compute->second != 0) {
      if (compute->second < 0 || compute->second > kMilli) {
        return InvalidArgument(std::string(kNeedCompute) + " must be a fraction of one GPU");
      }
      out.compute_slices = std::max<int32_t>(1, static_cast<int32_t>((compute->second * 7 + 990) / kMilli));
    }
  }
  if (share.any()) {
    if (Status s = set_kind(GpuKind::kShare, "gpu-fraction"); !s.ok()) return s;
    if (hami) return InvalidArgument("gpu-fraction/gpu-memory cannot be combined with nvidia.com/gpumem");
    out.isolated = false;
    out.count = share.devices > 0 ? share.devices : 1;
    if (share.fraction > 0) {
      if (share.fraction > kMilli) return InvalidArgument("gpu-fraction must be in (0, 1]");
      out.memory_permille = static_cast<int32_t>(share.fraction);
    } else {
      out.memory_mib = share.memory_mib;
    }
  }
  return out;
}

Result<PodGroup> PodGroupFromSpec(const PodSetSpec& spec) {
  PodGroup g;
  g.name = spec.name;
  g.count = spec.count;
  g.min_count = spec.min_count ? *spec.min_count : -1;
  for (const auto& [name, amount] : spec.requests) {
    if (!IsGpuResource(name)) g.requests[name] = amount;
  }
  Result<GpuRequest> gpu = ParseGpuRequest(spec.requests, spec.gpu_share);
  if (!gpu.ok()) return gpu.status();
  g.gpu = *gpu;
  g.node_selector = spec.node_selector;
  g.node_affinity = spec.node_affinity;
  g.tolerations = spec.tolerations;
  return g;
}

Result<TopologyConstraint> TopologyFromRequest(const TopologyRequest& r) {
  TopologyConstraint c;
  if (!r.required.empty() && !r.kai_required.empty() && r.required != r.kai_required) {
    return InvalidArgument("podset-required-topology and topology-required-placement disagree");
  }
  if (!r.preferred.empty() && !r.kai_preferred.empty() && r.preferred != r.kai_preferred) {
    return InvalidArgument("podset-preferred-topology and topology-preferred-placement disagree");
  }
  c.required_level = r.required.empty() ? r.kai_required : r.required;
  c.preferred_level = r.preferred.empty() ? r.kai_preferred : r.preferred;
  if (r.unconstrained && (!c.required_level.empty() || !c.preferred_level.empty())) {
    return InvalidArgument(
        "podset-unconstrained-topology cannot be combined with a required or preferred topology");
  }
  c.slice_level = r.slice_required;
  if (r.slice_size < 0) return InvalidArgument("podset-slice-size must be a positive integer");
  c.slice_size = r.slice_size;
  if (c.slice_level.empty() != (c.slice_size == 0)) {
    return InvalidArgument("podset-slice-required-topology and podset-slice-size go together");
  }
  return c;
}

Result<TopologyConstraint> TopologyFromVolcano(const TopologyLevels& topology, std::string_view mode,
                                               int32_t highest_tier_allowed) {
  std::vector<std::string> tiers = topology.levels;  // widest first
  if (!tiers.empty() && tiers.back() == kHostnameLabel) tiers.pop_back();
  auto n = static_cast<int32_t>(tiers.size());
  if (n == 0) return InvalidArgument("topology " + topology.name + " has no level above the hosts");
  if (highest_tier_allowed < 1 || highest_tier_allowed > n) {
    return InvalidArgument("highestTierAllowed " + std::to_string(highest_tier_allowed) +
                           " is not a tier of topology " + topology.name + " (1.." + std::to_string(n) + ")");
  }
  TopologyConstraint c;
  const std::string& level = tiers[n - highest_tier_allowed];
  c.preferred_level = tiers[n - 1];  // tier 1: as close as possible
  if (mode.empty() || mode == "hard") {
    c.required_level = level;
  } else if (mode != "soft") {
    return InvalidArgument("networkTopology.mode \"" + std::string(mode) + "\" must be hard or soft");
  }
  return c;
}

}  // namespace artel::core::placement
