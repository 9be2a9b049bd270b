// Kueue's topology-aware scheduling (TAS) for one pod set: which
// lowest-level domains take how many pods, as Kueue's BestFit profile
// decides it (pkg/cache/scheduler/tas_flavor_snapshot.go in Kueue). The
// placement search (cluster.cc) uses it for one-group gangs that ask for all
// their pods under a required or preferred level or in slices, so that such
// workloads land where Kueue would put them; it then places the pods of each
// chosen domain on that domain's nodes by the usual node placement.
//
// The algorithm:
//  - counts: a lowest-level domain holds the pods that fit on its nodes (not
//    capped at the count: Kueue ranks domains by all they could hold); a
//    parent the sum of its children; at the slice level a domain holds
//    count / sliceSize slices, above it the sum of its children's slices;
//  - domains are ordered by slices descending, pods ascending, then by their
//    label values from the widest level down;
//  - at the requested level the tightest domain that holds every slice is
//    chosen (the first in that order on ties); without one, a required level
//    fails and a preferred one moves a level up; at the top level the
//    largest domains are taken in turn and the last one is the tightest that
//    holds the rest;
//  - then level by level down, the same "largest first, tightest last" rule
//    spreads the count over the children (pooled above the slice level, per
//    parent from the slice level down, pod by pod).
//
// Thread-safety: a pure function of its arguments.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/placement/cluster_state.h"

namespace artel::core::placement::internal {

// The pod set and constraint, as level indices of the topology.
struct KueueTasRequest {
  int64_t count = 0;           // pods of the pod set
  int64_t slice_size = 1;      // pods per slice; 1 without slices
  int32_t slice_level = 0;     // the slice level, or the lowest level without slices
  int32_t level = 0;           // the required or preferred level; 0 with slices only
  bool required = false;       // `level` is required
  bool unconstrained = false;  // slices only: no required or preferred level
};

// (lowest-level domain, pods) pairs.
using KueueTasAssignment = std::vector<std::pair<int32_t, int64_t>>;

// Kueue's assignment of `request` over topology `t`, or nullopt if Kueue's
// algorithm finds none. `leaf_pods[d]` is the number of pods lowest-level
// domain d's nodes can hold; `nodes` lists the node indices in order (a
// domain's children are in the order of their first node there), and
// `node_labels[node]` gives the label values that break ties.
// REQUIRES: request.level <= request.slice_level < t.levels.size();
// leaf_pods.size() == t.domain_label.back().size().
std::optional<KueueTasAssignment> AssignKueueTas(
    const Topo& t, const std::vector<int32_t>& nodes,
    const std::vector<std::map<std::string, std::string>>& node_labels, const std::vector<int64_t>& leaf_pods,
    const KueueTasRequest& request);

}  // namespace artel::core::placement::internal
