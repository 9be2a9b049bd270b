// What one nomination produces: the flavor assignment of a workload in a
// ClusterQueue (Assignment, by the FlavorAssigner of flavor_assigner.h),
// the victims it needs (Target, by the PreemptionPolicy of
// preemption_policy.h), and the cycle's entry that carries both (Entry).
//
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/workload_state.h"

namespace artel::core {

struct Target {
  WlId id;
  EvictionReason reason;
  bool nodes = false;  // chosen to free node capacity (PlacementTargets)
};

enum class Mode : int8_t { kNoFit = 0, kNoCandidates = 1, kPreempt = 2, kReclaim = 3, kFit = 4 };

struct PodSetAssign {
  int32_t count = 0;
  std::vector<std::pair<ResourceId, FlavorId>> flavors;  // (resource, flavor)
};

// The outcome of flavor assignment for one workload.
struct Assignment {
  Mode mode = Mode::kNoFit;
  int32_t borrow_level = 0;
  std::vector<PodSetAssign> pod_sets;
  FrAmounts usage;  // total over all pod sets, sorted by fr
  // Explanation of the most limiting spot: kNoFlavor or kInfeasible (no
  // flavor's nodes can ever hold a pod; both with `message`),
  // kInsufficientQuota, or kNone with `ref` possibly set (a flavor that
  // needs preemption).
  PendingReason::Kind kind = PendingReason::Kind::kNone;
  ReasonRef ref;
  std::string message;
};

// One request of a pod set, with the resource group that covers it.
struct GroupReq {
  int32_t group;
  ResourceId resource;
  Amount total;
};

// One ClusterQueue head nominated in a cycle.
struct Entry {
  WlId wl;
  CqId cq;
  Assignment assignment;
  std::vector<Target> targets;
  // Not nominated: the head fails the bulk bound (EngineImpl::BoundFails),
  // so the cycle parks it as a failure that changes nothing for the others.
  bool bound = false;
  // The head's keys in the classical admission order, read when the cycle
  // takes it (RunRound), so that ordering reads no workload again.
  bool waiting = false;  // Wl::waiting_preemption
  int32_t priority = 0;
  int64_t queued_at = 0;
  uint64_t uid = 0;
};

}  // namespace artel::core
