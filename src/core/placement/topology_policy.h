// Topology-aware placement: which domain (zone, rack, block, host) a gang
// goes to.
//
// A topology is a list of node label keys from the widest level to the
// narrowest. A gang's `TopologyConstraint` names a required level (all pods
// in one domain of it), a preferred level (start packing there) or both (KAI
// allows a required zone with a preferred rack), and optionally a slice
// size and level (each `slice_size` consecutive pods of a group in one
// domain of the slice level, as Kueue's podset-slice-* annotations).
//
// The search, driven by cluster.cc with this file's policies:
//
//  1. `LevelsToTry`: the preferred level, then each wider level in turn, up
//     to the required level (or up to the widest level without one). With
//     only a requirement, just the required level. "Preferred means the
//     narrowest level that fits."
//  2. At each level, every domain gets an estimate: per pod group, the sum
//     over its nodes of the pods that fit now (node_filter.h). Domains whose
//     estimate covers every group's minimum are candidates.
//  3. `DomainChooser` orders the candidates. `BestFitDomainChooser`:
//       a. domains that can take every group's full count before those that
//          can take only the minimums;
//       b. best fit: the smallest estimated capacity (the least slack), so
//          that large free domains stay whole for large gangs and big gangs
//          are not starved by fragmentation;
//       c. domains that already hold pods before untouched ones;
//       d. the domain's order of first appearance among the nodes.
//  4. The gang is placed inside the first candidate where the node-level
//     placement (node_scorer.h, fragmentation.h) succeeds; estimates are
//     upper bounds for MIG and shares, so a candidate can still fail, and
//     then the next is tried.
//  5. If no domain at any tried level works: with a required level the gang
//     is unschedulable, and the reason lists the best domains and what they
//     fit; with only a preference the gang is placed across domains, filling
//     the domains of the preferred level in descending order of estimate
//     (the fewest domains), nodes outside any domain last.
//
// Volcano's `networkTopology` maps onto this: tier 1 is the narrowest level
// above the hosts, `mode: hard` with `highestTierAllowed: N` is a required
// level at tier N, `soft` a preferred one.
//
// Thread-safety: stateless policies.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

namespace artel::core::placement {

struct DomainCandidate {
  int32_t domain = 0;
  int64_t capacity = 0;  // estimated pods, summed over groups (each node counted up to the group count)
  bool full = false;     // fits every group's full count
  bool in_use = false;   // holds pods already
};

class DomainChooser {
 public:
  virtual ~DomainChooser() = default;
  // Sorts `candidates` best first.
  virtual void Order(std::vector<DomainCandidate>* candidates) const = 0;
};

std::unique_ptr<DomainChooser> MakeBestFitDomainChooser();

// Level indices to try, narrowest first; -1 means "no level" and is never
// returned. `required` and `preferred` are level indices or -1.
std::vector<int32_t> LevelsToTry(int32_t required, int32_t preferred, int32_t num_levels);

}  // namespace artel::core::placement
