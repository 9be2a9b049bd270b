// Node filters: which nodes may take a pod of a group at all, and how many.
//
// Filtering happens in two stages, each a policy behind an interface:
//
//  1. `StaticFilter` looks only at a node's static attributes (`NodeClass`:
//     labels, taints, readiness). Because many nodes share a class, the
//     cluster runs it once per class and group, not once per node. The
//     default chain, in this order, reports the first failing check:
//       a. readiness: a node that is not ready takes no new pods;
//       b. the admitted flavor's nodeLabels: every one must match exactly;
//       c. the pod's nodeSelector: every entry must match exactly;
//       d. taints: every NoSchedule or NoExecute taint must be tolerated by
//          one of the pod's or the flavor's tolerations (PreferNoSchedule
//          never filters).
//  2. `CapacityFilter` counts how many more pods of a demand fit on a node
//     given its current usage (or, with `empty`, given none: the test for
//     "can never fit"). It takes the minimum over:
//       a. every generic resource (cpu, memory, pods, extended): free / request;
//       b. whole GPUs: free whole devices / devices per pod;
//       c. MIG: instances of the demand's shape that could be created on the
//          node's MIG GPUs of a model with that shape, treating idle
//          instances as free space (they may be repartitioned), divided by
//          instances per pod;
//       d. shares: per non-MIG GPU with known memory, the shares it can still
//          take (by memory, cores and share count), summed and divided by
//          devices per pod, and zero if fewer GPUs than devices per pod can
//          take one.
//     For MIG and shares the count is an upper bound: device choice may fit
//     fewer, which the cluster discovers when it applies a pod.
//
// Tie-breaks: filters do not order nodes. When a count is zero, the first
// limiting resource in the order above is the one reported.
//
// Thread-safety: stateless policies.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/placement/cluster_state.h"
#include "core/placement/placement.h"

namespace artel::core::placement {

enum class FilterReason : int8_t {
  kOk = 0,
  kNotReady,
  kFlavorLabels,
  kNodeSelector,
  kNodeAffinity,
  kTaint,
  kCount,
};
const char* FilterReasonText(FilterReason reason);

class StaticFilter {
 public:
  virtual ~StaticFilter() = default;
  virtual FilterReason Check(const internal::NodeClass& node, const PodGroup& group,
                             const GangRequest& gang) const = 0;
};

// The default chain a-d above.
std::unique_ptr<StaticFilter> MakeDefaultStaticFilter();

struct FitResult {
  int64_t pods = 0;
  // When `pods` is 0: the limiting resource, e.g. "cpu", "nvidia.com/gpu",
  // "MIG slots for 3g.40gb", "GPU memory for shares".
  std::string limit;
};

class CapacityFilter {
 public:
  virtual ~CapacityFilter() = default;
  // REQUIRES: `cap` > 0; the answer is at most `cap` (callers pass what they
  // still need, which bounds the work).
  virtual int64_t Fit(const internal::NodeState& node, const internal::Demand& demand, bool empty,
                      int64_t cap) const = 0;
  // Fit(node, demand, false, 1) > 0, without the divisions.
  virtual bool FitsOne(const internal::NodeState& node, const internal::Demand& demand) const = 0;
  // Like Fit, naming the limit when nothing fits. Slower; for reasons.
  virtual FitResult Explain(const internal::NodeState& node, const internal::Demand& demand,
                            const std::vector<std::string>& resource_names, bool empty) const = 0;
};

std::unique_ptr<CapacityFilter> MakeCapacityFilter();

}  // namespace artel::core::placement
