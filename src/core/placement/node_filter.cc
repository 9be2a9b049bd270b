#include "core/placement/node_filter.h"

#include <algorithm>
#include <limits>

#include "core/resource_names.h"

namespace artel::core::placement {

using internal::Demand;
using internal::GpuState;
using internal::NodeClass;
using internal::NodeState;

const char* FilterReasonText(FilterReason reason) {
  switch (reason) {
    case FilterReason::kOk: return "fit";
    case FilterReason::kNotReady: return "not ready";
    case FilterReason::kFlavorLabels: return "didn't match the flavor's nodeLabels";
    case FilterReason::kNodeSelector: return "didn't match the pod's nodeSelector";
    case FilterReason::kNodeAffinity: return "didn't match the pod's node affinity";
    case FilterReason::kTaint: return "had an untolerated taint";
    case FilterReason::kCount: break;
  }
  return "?";
}

namespace {

template <typename Want>  // std::map or FlatMap of string to string
bool LabelsMatch(const Want& want, const std::map<std::string, std::string>& have) {
  for (const auto& [k, v] : want) {
    auto it = have.find(k);
    if (it == have.end() || it->second != v) return false;
  }
  return true;
}

class DefaultStaticFilter final : public StaticFilter {
 public:
  FilterReason Check(const NodeClass& node, const PodGroup& group, const GangRequest& gang) const override {
    if (!node.ready) return FilterReason::kNotReady;
    if (!LabelsMatch(gang.flavor_node_labels, node.labels)) return FilterReason::kFlavorLabels;
    if (!LabelsMatch(group.node_selector, node.labels)) return FilterReason::kNodeSelector;
    if (!NodeAffinityMatches(group.node_affinity, node.labels)) return FilterReason::kNodeAffinity;
    for (const Taint& t : node.taints) {
      if (t.effect == "PreferNoSchedule") continue;
      auto tolerated = [&](const std::vector<Toleration>& ts) {
        return std::any_of(ts.begin(), ts.end(), [&](const Toleration& x) { return x.Tolerates(t); });
      };
      if (!tolerated(group.tolerations) && !tolerated(gang.flavor_tolerations)) return FilterReason::kTaint;
    }
    return FilterReason::kOk;
  }
};

// Shares one GPU can still take for `d`.
int64_t ShareCapacity(const GpuState& g, const Demand& d, bool empty) {
  if (g.mig || g.memory_mib <= 0) return 0;
  if (!empty && g.whole_used) return 0;
  int64_t shares = empty ? 0 : g.shares;
  int64_t mem_used = empty ? 0 : g.share_mem_mib;
  int64_t cores_used = empty ? 0 : g.share_cores;
  int64_t cap = g.max_shares - shares;
  int64_t mib = d.ShareMib(g.memory_mib);
  if (mib <= 0) return 0;
  cap = std::min(cap, (g.memory_mib - mem_used) / mib);
  if (d.isolated && d.cores > 0) cap = std::min<int64_t>(cap, (100 - cores_used) / d.cores);
  return std::max<int64_t>(cap, 0);
}

int64_t MigCapacity(const GpuState& g, const Demand& d, bool empty) {
  if (!g.mig || g.model < 0) return 0;
  int shape = d.shape[g.model];
  if (shape < 0) return 0;
  if (empty) return CountCreatable(shape, 0, 0, false);
  return CountCreatable(shape, g.busy_mask, g.busy_compute, g.busy_media);
}

class DefaultCapacityFilter final : public CapacityFilter {
 public:
  int64_t Fit(const NodeState& n, const Demand& d, bool empty, int64_t cap) const override {
    int64_t fit = cap;
    for (const auto& [r, amount] : d.resources) {
      Amount alloc = r < static_cast<int32_t>(n.alloc.size()) ? n.alloc[r] : 0;
      if (alloc == kUnlimited) continue;
      Amount free = alloc - (empty ? 0 : n.used[r]);
      if (free < amount) return 0;
      fit = std::min<int64_t>(fit, free / amount);
    }
    return std::min(fit, GpuFit(n, d, empty, fit));
  }

  bool FitsOne(const NodeState& n, const Demand& d) const override {
    for (const auto& [r, amount] : d.resources) {
      Amount alloc = n.alloc[r];
      if (alloc != kUnlimited && alloc - n.used[r] < amount) return false;
    }
    if (d.kind == GpuKind::kNone) return true;
    if (d.kind == GpuKind::kWhole) return n.free_whole >= d.count;
    return GpuFit(n, d, false, 1) > 0;
  }

  FitResult Explain(const NodeState& n, const Demand& d, const std::vector<std::string>& names,
                    bool empty) const override {
    FitResult out;
    int64_t fit = std::numeric_limits<int64_t>::max() / 2;
    for (const auto& [r, amount] : d.resources) {
      Amount alloc = r < static_cast<int32_t>(n.alloc.size()) ? n.alloc[r] : 0;
      if (alloc == kUnlimited) continue;
      Amount free = alloc - (empty ? 0 : n.used[r]);
      if (free < amount) {
        out.limit = names[r];
        return out;
      }
      fit = std::min<int64_t>(fit, free / amount);
    }
    out.pods = std::min(fit, GpuFit(n, d, empty, fit));
    if (out.pods == 0) out.limit = GpuLimitName(d);
    return out;
  }

 private:
  static std::string GpuLimitName(const Demand& d) {
    switch (d.kind) {
      case GpuKind::kWhole: return kGpuResource;
      case GpuKind::kMigProfile:
      case GpuKind::kMigNeed: return "MIG slots";
      case GpuKind::kShare: return "GPU share capacity";
      case GpuKind::kNone: break;
    }
    return "?";
  }

  static int64_t GpuFit(const NodeState& n, const Demand& d, bool empty, int64_t cap) {
    switch (d.kind) {
      case GpuKind::kNone: return cap;
      case GpuKind::kWhole: return (empty ? n.whole_total : n.free_whole) / d.count;
      case GpuKind::kMigProfile:
      case GpuKind::kMigNeed: {
        if (n.mig_slices == 0) return 0;
        int64_t total = 0;
        for (const GpuState& g : n.gpus) total += MigCapacity(g, d, empty);
        return total / d.count;
      }
      case GpuKind::kShare: {
        int64_t total = 0;
        int64_t gpus = 0;
        for (const GpuState& g : n.gpus) {
          int64_t c = ShareCapacity(g, d, empty);
          total += c;
          gpus += c > 0 ? 1 : 0;
        }
        if (gpus < d.count) return 0;
        return total / d.count;
      }
    }
    return 0;
  }
};

}  // namespace

std::unique_ptr<StaticFilter> MakeDefaultStaticFilter() { return std::make_unique<DefaultStaticFilter>(); }
std::unique_ptr<CapacityFilter> MakeCapacityFilter() { return std::make_unique<DefaultCapacityFilter>(); }

}  // namespace artel::core::placement
