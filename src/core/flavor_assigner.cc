#include "core/flavor_assigner.h"

#include <algorithm>

#include "core/placement/placement.h"
#include "core/preemption.h"
#include "core/preemption_policy.h"

namespace artel::core {
namespace {

struct FlavorTry {
  Mode mode = Mode::kNoFit;
  int32_t level = 0;
  FlavorId flavor;
};

bool Better(const FlavorTry& a, const FlavorTry& b, FungibilityPreference pref) {
  // Is `a` strictly better than `b`?
  auto usable = [](Mode m) { return m >= Mode::kPreempt; };
  if (usable(a.mode) != usable(b.mode)) return usable(a.mode);
  if (!usable(a.mode)) return a.mode > b.mode;
  if (pref == FungibilityPreference::kPreemptionOverBorrowing) {
    if (a.level != b.level) return a.level < b.level;
    return a.mode > b.mode;
  }
  if (a.mode != b.mode) return a.mode > b.mode;
  return a.level < b.level;
}

bool ShouldTryNext(const FlavorTry& t, const FlavorFungibilitySpec& f) {
  switch (t.mode) {
    case Mode::kFit:
      if (t.level == 0) return false;
      return f.when_can_borrow == FungibilityPolicy::kTryNextFlavor;
    case Mode::kPreempt:
    case Mode::kReclaim: return f.when_can_preempt == FungibilityPolicy::kTryNextFlavor;
    default: return true;
  }
}

// Does the flavor exclude the pod set by taints or labels? Sets `why`.
// Labels follow Kueue's flavor selector: the pod set's nodeSelector and
// required node affinity, cut down to the label keys this flavor has, must
// match the flavor's nodeLabels as if they were a node's. A selector key the
// flavor has no label for says nothing about the flavor (Kueue
// flavorassigner.go, "selector only uses flavor's own keys"); a node affinity
// term left with no requirement after the cut matches the flavor.
bool FlavorExcludes(const ResourceFlavorSpec* flavor, const PodSetSpec& ps, std::string* why) {
  if (flavor == nullptr) return false;
  for (const Taint& t : flavor->node_taints) {
    if (t.effect != "NoSchedule" && t.effect != "NoExecute") continue;
    bool tolerated = false;
    for (const Toleration& tol : ps.tolerations) tolerated = tolerated || tol.Tolerates(t);
    for (const Toleration& tol : flavor->tolerations) tolerated = tolerated || tol.Tolerates(t);
    if (!tolerated) {
      *why = "untolerated taint " + t.key + (t.value.empty() ? "" : "=" + t.value) + ":" + t.effect;
      return true;
    }
  }
  const auto& labels = flavor->node_labels;
  for (const auto& [k, v] : ps.node_selector) {
    auto it = labels.find(k);
    if (it != labels.end() && it->second != v) {
      *why = "nodeSelector " + k + "=" + v + " does not match flavor label " + k + "=" + it->second;
      return true;
    }
  }
  if (!ps.node_affinity.empty()) {
    std::vector<NodeSelectorTerm> cut;
    bool any = false;
    for (const NodeSelectorTerm& t : ps.node_affinity) {
      NodeSelectorTerm c;
      for (const NodeSelectorRequirement& r : t.match_expressions) {
        if (labels.count(r.key)) c.match_expressions.push_back(r);
      }
      if (c.match_expressions.empty()) {
        any = true;  // this term allows every flavor
        break;
      }
      cut.push_back(std::move(c));
    }
    if (!any && !NodeAffinityMatches(cut, flavor->node_labels)) {
      *why = "the pod set's node affinity does not match the flavor's nodeLabels";
      return true;
    }
  }
  return false;
}

// Kueue's TAS flavor rule (flavorassigner): a pod set with a Kueue topology
// request may only use a flavor whose topology (topologyName) has the levels
// it names; a pod set without one skips flavors with a topology, unless every
// flavor of the queue has one (then the request is implied). Sets `why`.
bool TasExcludes(const EngineImpl& e, const CqRt& cq, const ResourceFlavorSpec* flavor, const PodSetSpec& ps,
                 std::string* why) {
  const TopologyRequest& t = ps.topology;
  auto level = [](const std::string& l) { return l.empty() ? nullptr : &l; };
  const std::string* required = level(t.required);
  const std::string* preferred = level(t.preferred);
  const std::string* slice = level(t.slice_required);
  const bool request = t.KueueAsks() || t.unconstrained;
  const bool tas = flavor != nullptr && !flavor->topology_name.empty();
  if (!request) {
    if (!tas || cq.all_tas) return false;
    *why = "a topology flavor (" + flavor->topology_name + "), and the pod set asks for no topology";
    return true;
  }
  if (!tas) {
    *why = "no topologyName, and the pod set asks for a topology";
    return true;
  }
  const TopologySpec* topo = nullptr;
  for (const TopologySpec& t : e.config.topologies) {
    if (t.name == flavor->topology_name) topo = &t;
  }
  if (topo == nullptr) {
    *why = "its topology " + flavor->topology_name + " is not defined";
    return true;
  }
  for (const std::string* level : {required, preferred, slice}) {
    if (level == nullptr) continue;
    if (std::find(topo->levels.begin(), topo->levels.end(), *level) == topo->levels.end()) {
      *why = "its topology " + topo->name + " has no level " + *level;
      return true;
    }
  }
  return false;
}

// Artel's node rule (docs/semantics.md, "Flavors bound to nodes"): with
// nodes, and placement matching labels, a flavor is a candidate for pod set
// `i` only if some ready node carries the flavor's nodeLabels, matches the
// pod set's nodeSelector and required node affinity, has its taints
// tolerated by the pod set's and the flavor's tolerations, and, empty, holds
// one pod of the pod set (static feasibility: what is placed now is the
// placement step's business). Flavor -> nodes is bound once per
// configuration or nodes change (EngineImpl::BindFlavorsToNodes); the answer
// per pod set and flavor is kept on the workload until the next change.
// Sets `why`.
bool NodesExclude(EngineImpl& e, WlId id, size_t i, FlavorId f, std::string* why) {
  if (!e.cluster || !e.opts.placement_matches_labels || !e.FlavorPlaced(f)) return false;
  Wl& w = e.wls[id];
  const size_t nf = e.flavors.size();
  if (!w.node_fit) w.node_fit = std::make_unique<NodeFit>();
  NodeFit& nfit = *w.node_fit;
  if (nfit.gen != e.nodes_gen || nfit.fit.size() != w.pod_sets.size() * nf) {
    nfit.gen = e.nodes_gen;
    nfit.fit.assign(w.pod_sets.size() * nf, -1);
    nfit.why.clear();
  }
  const size_t slot = i * nf + static_cast<size_t>(f.value());
  if (nfit.fit[slot] < 0) {
    std::string bad;
    bool fits = true;
    if (e.flavor_nodes.contains(f) && e.flavor_nodes[f].empty()) {
      fits = false;
      bad = e.flavor_nodes_why[f];
    } else if (e.flavor_nodes.contains(f)) {
      auto pg = placement::PodGroupFromSpec(w.info.spec.pod_sets[i]);
      if (pg.ok()) {  // else placement reports the error
        const ResourceFlavorSpec* fs = e.flavors[f].spec;
        pg->count = 1;
        pg->min_count = 1;
        placement::GangRequest g;
        if (fs != nullptr) {
          g.flavor_node_labels = fs->node_labels;
          g.flavor_tolerations = fs->tolerations;
        }
        g.only_nodes = e.flavor_nodes[f];
        g.groups.push_back(std::move(*pg));
        fits = e.cluster->CanEverHost(g, &bad);
        if (!fits)
          bad +=
              " (of the " + std::to_string(e.flavor_nodes[f].size()) + " node(s) with the flavor's labels)";
      }
    }
    nfit.fit[slot] = fits ? 1 : 0;
    if (!fits) {
      if (nfit.why.size() != nfit.fit.size()) nfit.why.resize(nfit.fit.size());
      nfit.why[slot] = std::move(bad);
    }
  }
  if (nfit.fit[slot] == 1) return false;
  *why = nfit.why[slot];
  return true;
}

bool CanPreemptWhileBorrowing(const EngineImpl& e, const CqRt& cq) {
  return e.preemption->MayPreemptWhileBorrowing(*cq.spec);
}

// The quota-tree node that limits `val` most: the first node on the path
// whose borrowing limit binds, or the root.
NodeId BlockingNode(const QuotaTree& tree, NodeId n, FrId fr) {
  if (!tree.node(n).parent.valid()) return n;
  const auto& node = tree.node(n);
  if (node.borrowing_limit[fr] != kNoLimit) {
    Amount stored = node.subtree[fr] - node.local[fr];
    Amount used = std::max<Amount>(0, node.usage[fr] - node.local[fr]);
    Amount cap = stored - used + node.borrowing_limit[fr];
    if (cap <= tree.Available(node.parent, fr)) return n;
  }
  return BlockingNode(tree, node.parent, fr);
}

Amount Get(const FrAmounts& acc, FrId fr) {
  for (const auto& [f, v] : acc) {
    if (f == fr) return v;
  }
  return 0;
}

void KueueAssign(EngineImpl& e, WlId id, CqId cqi, const std::vector<int32_t>& counts, Assignment* out,
                 std::vector<FlavorTried>* tried = nullptr) {
  const Wl& w = e.wls[id];
  const CqRt& cq = e.cqs[cqi];
  const QuotaTree& tree = e.tree;
  const NodeId node = cq.node;
  const FlavorFungibilitySpec& fung = cq.spec->flavor_fungibility;
  Assignment& a = *out;
  a.mode = Mode::kFit;
  a.borrow_level = 0;
  a.kind = PendingReason::Kind::kNone;
  a.ref = ReasonRef{};
  a.message.clear();
  a.usage.clear();
  // Reuse the pod-set buffers of an earlier assignment.
  if (a.pod_sets.size() > w.pod_sets.size()) a.pod_sets.resize(w.pod_sets.size());
  size_t used_pod_sets = 0;
  FrAmounts& acc = a.usage;
  std::vector<GroupReq>& reqs = e.assign_reqs;
  FrAmounts& req = e.assign_fr;
  for (size_t i = 0; i < w.pod_sets.size(); ++i) {
    const PodSetReq& ps = w.pod_sets[i];
    const PodSetSpec& pss = w.info.spec.pod_sets[i];  // read only for taints, topology and messages
    if (a.pod_sets.size() <= i) a.pod_sets.emplace_back();
    PodSetAssign& psa = a.pod_sets[i];
    used_pod_sets = i + 1;
    psa.count = counts[i];
    psa.flavors.clear();
    // The pod set's requests with their resource groups.
    reqs.clear();
    for (const auto& [res, per_pod] : ps.per_pod) {
      if (res == cq.pods_res) continue;  // counted below
      const int32_t group = e.GroupOf(cq, res);
      // A zero request needs nothing, but gets a flavor where a group covers
      // it (Kueue: "zero resource request defined in clusterQueue").
      if (per_pod == 0 && group < 0) continue;
      if (per_pod == 0 && res == cq.gpu_res && ps.implicit_gpu > 0)
        continue;  // the slice's charge stands for it
      if (group < 0 && IsSlicingHint(e.resources.Name(res))) {
        continue;  // a GPU-slice need, read by placement; not quota unless a group covers it
      }
      if (group < 0) {
        a.mode = Mode::kNoFit;
        a.kind = PendingReason::Kind::kNoFlavor;
        a.ref.pod_set = static_cast<int32_t>(i);
        a.ref.resource = res;
        a.message = "resource " + e.resources.Name(res) + " is not covered by ClusterQueue " + cq.name;
        a.pod_sets.resize(used_pod_sets);
        return;
      }
      reqs.push_back({group, res, per_pod * counts[i]});
    }
    if (cq.pods_res.valid())
      reqs.push_back({e.GroupOf(cq, cq.pods_res), cq.pods_res, Amount{1000} * counts[i]});
    if (ps.implicit_gpu > 0 && !e.HintIsQuota(cq, ps)) {
      // A GPU slice is GPU quota (see ImplicitGpu in engine.cc).
      if (!cq.gpu_res.valid()) {
        a.mode = Mode::kNoFit;
        a.kind = PendingReason::Kind::kNoFlavor;
        a.ref.pod_set = static_cast<int32_t>(i);
        a.message = "pod set " + pss.name +
                    " asks for a GPU slice, charged as nvidia.com/gpu, which ClusterQueue " + cq.name +
                    " does not cover";
        a.pod_sets.resize(used_pod_sets);
        return;
      }
      reqs.push_back({e.GroupOf(cq, cq.gpu_res), cq.gpu_res, ps.implicit_gpu * counts[i]});
    }
    for (size_t g = 0; g < cq.groups.size(); ++g) {
      bool any = false;
      for (const GroupReq& r : reqs) any = any || r.group == static_cast<int32_t>(g);
      if (!any) continue;
      FlavorTry best;
      ReasonRef best_reason;
      bool have_reason = false;
      FlavorTry reason_try;      // the flavor `best_reason` comes from
      bool reason_ever = false;  // ... and whether it can ever fit
      std::string excluded;
      bool node_excluded = false;  // some flavor's nodes can never hold a pod
      const size_t tried_from = tried != nullptr ? tried->size() : 0;
      auto note_excluded = [&](FlavorId f, const std::string& why) {
        if (!excluded.empty()) excluded += "; ";
        excluded += "flavor " + e.flavors[f].name + ": " + why;
        if (tried == nullptr) return;
        FlavorTried ft;
        ft.pod_set = static_cast<int32_t>(i);
        ft.flavor = f;
        ft.excluded = true;
        ft.why = why;
        tried->push_back(std::move(ft));
      };
      for (FlavorId f : cq.groups[g].flavors) {
        const ResourceFlavorSpec* fspec = e.flavors[f].spec;
        if (fspec != nullptr && (!fspec->node_taints.empty() || !fspec->node_labels.empty())) {
          std::string why;
          if (FlavorExcludes(fspec, pss, &why)) {
            note_excluded(f, why);
            continue;
          }
        }
        if ((fspec != nullptr && !fspec->topology_name.empty()) || ps.has_topology) {
          std::string why;
          if (TasExcludes(e, cq, fspec, pss, &why)) {
            note_excluded(f, why);
            continue;
          }
        }
        {
          std::string why;
          if (NodesExclude(e, id, i, f, &why)) {
            node_excluded = true;
            note_excluded(f, why);
            continue;
          }
        }
        FlavorTry t;
        t.flavor = f;
        t.mode = Mode::kFit;
        ReasonRef r;
        bool ever = true;  // every request within what the queue can ever get here
        Amount potential = 0;
        req.clear();
        bool needs_preemption = false;
        for (const GroupReq& gr : reqs) {
          if (gr.group != static_cast<int32_t>(g)) continue;
          const ResourceId res = gr.resource;
          FrId fr = tree.FindFr(f, res);
          Amount val = gr.total + (fr.valid() ? Get(acc, fr) : 0);
          if (!fr.valid()) {
            t.mode = Mode::kNoFit;
            r.resource = res;
            r.requested = val;
            ever = false;
            break;
          }
          req.emplace_back(fr, val);
          Amount pa = tree.PotentialAvailable(node, fr);
          Amount av = tree.Available(node, fr);
          bool may_reclaim = false;
          int32_t level = tree.BorrowingLevel(node, fr, val, &may_reclaim);
          Mode m;
          if (val > pa) {
            m = Mode::kNoFit;
            ever = false;
          } else if (val <= av) {
            m = Mode::kFit;
            t.level = std::max(t.level, level);
          } else if (val <= tree.node(node).nominal[fr] || may_reclaim || CanPreemptWhileBorrowing(e, cq)) {
            m = Mode::kPreempt;
            needs_preemption = true;
          } else {
            m = Mode::kNoFit;
          }
          if (m < Mode::kFit && (!r.set() || (val > pa && potential >= r.requested))) {
            // The first resource short now; one that can never fit wins.
            r.resource = res;
            r.requested = val;
            r.available = std::max<Amount>(0, av);
            r.missing = val - r.available;
            r.level = BlockingNode(tree, node, fr);
            potential = pa;
          }
          t.mode = std::min(t.mode, m);
        }
        if (t.mode == Mode::kPreempt && needs_preemption) {
          std::sort(req.begin(), req.end());
          std::vector<Target>& targets = e.assign_targets;
          GetTargets(e, id, cqi, req, &targets);
          if (targets.empty()) {
            t.mode = Mode::kNoCandidates;
            // Kueue's oracle: the level at which the request would fit as
            // things are (it decides how much quota the head holds back).
            int32_t level = 0;
            for (const auto& [fr, v] : req) level = std::max(level, e.tree.BorrowingLevel(node, fr, v));
            t.level = std::max(t.level, level);
          } else {
            bool all_outside = true;
            for (const Target& tg : targets) all_outside = all_outside && e.wls[tg.id].cq != cqi;
            t.mode = all_outside ? Mode::kReclaim : Mode::kPreempt;
            // The borrowing level that counts is the one after the preemptions.
            QuotaTree& mt = e.tree;
            for (const Target& tg : targets) mt.AddUsage(e.cqs[e.wls[tg.id].cq].node, e.wls[tg.id].usage, -1);
            int32_t level = 0;
            for (const auto& [fr, v] : req) level = std::max(level, mt.BorrowingLevel(node, fr, v));
            for (const Target& tg : targets) mt.AddUsage(e.cqs[e.wls[tg.id].cq].node, e.wls[tg.id].usage, +1);
            t.level = std::max(t.level, level);
          }
        }
        r.flavor = f;
        r.pod_set = static_cast<int32_t>(i);
        if (tried != nullptr) {
          FlavorTried ft;
          ft.pod_set = static_cast<int32_t>(i);
          ft.flavor = f;
          ft.mode = t.mode;
          ft.ever_fits = ever;
          ft.resource = r.resource;
          ft.requested = r.requested;
          ft.available = r.available;
          ft.potential = potential;
          ft.level = r.level;
          tried->push_back(std::move(ft));
        }
        // The reason comes from the flavor that came closest: the better
        // mode; between equal modes that cannot be used, one the queue can
        // ever get over one it cannot, then the smaller shortfall. (Not the
        // first flavor tried: a CPU flavor with no GPU quota would hide the
        // GPU flavor that matters.)
        if (t.mode < Mode::kFit) {
          bool closer;
          if (!have_reason) {
            closer = true;
          } else if (t.mode != reason_try.mode) {
            closer = t.mode > reason_try.mode;
          } else if (t.mode >= Mode::kPreempt) {
            closer = Better(t, reason_try, fung.preference);
          } else if (ever != reason_ever) {
            closer = ever;
          } else {
            closer = r.missing < best_reason.missing;
          }
          if (closer) {
            best_reason = r;
            reason_try = t;
            reason_ever = ever;
            have_reason = true;
          }
        }
        if (!best.flavor.valid() || Better(t, best, fung.preference)) best = t;
        if (!ShouldTryNext(t, fung)) break;
      }
      if (tried != nullptr && best.flavor.valid() && best.mode == Mode::kFit) {
        tried->resize(tried_from);  // this group does not hold the workload back
      }
      if (!best.flavor.valid() || best.mode == Mode::kNoFit) {
        a.mode = Mode::kNoFit;
        if (!best.flavor.valid()) {
          // Excluded by the nodes: the pods can never fit on these nodes.
          a.kind = node_excluded ? PendingReason::Kind::kInfeasible : PendingReason::Kind::kNoFlavor;
          a.ref = ReasonRef{};
          a.ref.pod_set = static_cast<int32_t>(i);
          a.message = (node_excluded ? "no flavor of ClusterQueue " + cq.name +
                                           " has nodes that can hold a pod of pod set "
                                     : "no flavor of ClusterQueue " + cq.name + " fits pod set ") +
                      pss.name + (excluded.empty() ? "" : ": " + excluded);
        } else {
          a.ref = best_reason;
          a.kind = PendingReason::Kind::kInsufficientQuota;
        }
        a.pod_sets.resize(used_pod_sets);
        return;
      }
      if (best.mode < Mode::kFit && have_reason && !a.ref.set()) a.ref = best_reason;
      for (const GroupReq& gr : reqs) {
        if (gr.group != static_cast<int32_t>(g)) continue;
        psa.flavors.emplace_back(gr.resource, best.flavor);
        AddTo(&acc, tree.FindFr(best.flavor, gr.resource), gr.total);
      }
      a.mode = std::min(a.mode, best.mode);
      a.borrow_level = std::max(a.borrow_level, best.level);
    }
    std::sort(psa.flavors.begin(), psa.flavors.end());
  }
  a.pod_sets.resize(used_pod_sets);
  std::sort(acc.begin(), acc.end());
}

std::vector<int32_t> ReducedCounts(const Wl& w, int64_t x, int64_t total) {
  std::vector<int32_t> counts;
  counts.reserve(w.pod_sets.size());
  for (const PodSetReq& ps : w.pod_sets) {
    int64_t delta = ps.count - ps.min_count;
    counts.push_back(static_cast<int32_t>(ps.count - (total == 0 ? 0 : delta * x / total)));
  }
  return counts;
}

bool Usable(EngineImpl& e, WlId id, CqId cq, Assignment& a, std::vector<Target>* targets) {
  if (a.mode == Mode::kFit) return true;
  if (a.mode == Mode::kPreempt || a.mode == Mode::kReclaim) {
    GetTargets(e, id, cq, a.usage, targets);
    if (!targets->empty()) return true;
    a.mode = Mode::kNoCandidates;
  }
  return false;
}

void KueueNominate(EngineImpl& e, WlId id, CqId cq, Assignment* out, std::vector<Target>* targets) {
  const Wl& w = e.wls[id];
  targets->clear();
  std::vector<int32_t>& full = e.nominate_counts;
  full.clear();
  int64_t total_delta = 0;
  for (const PodSetReq& ps : w.pod_sets) {
    full.push_back(ps.count);
    total_delta += ps.count - ps.min_count;
  }
  Assignment& a = *out;
  KueueAssign(e, id, cq, full, &a);
  if (Usable(e, id, cq, a, targets)) return;
  if (total_delta == 0 || a.kind == PendingReason::Kind::kNoFlavor ||
      a.kind == PendingReason::Kind::kInfeasible)
    return;
  // Partial admission: the smallest reduction x in [1, total_delta] that
  // fits or has preemption targets. Fewer pods never need more quota, so
  // the predicate is monotone in x.
  int64_t lo = 1, hi = total_delta;
  std::optional<Assignment> found;
  std::vector<Target> found_targets;
  while (lo <= hi) {
    int64_t mid = lo + (hi - lo) / 2;
    std::vector<Target> t;
    Assignment b;
    KueueAssign(e, id, cq, ReducedCounts(w, mid, total_delta), &b);
    if (Usable(e, id, cq, b, &t)) {
      found = std::move(b);
      found_targets = std::move(t);
      hi = mid - 1;
    } else {
      lo = mid + 1;
    }
  }
  if (found) {
    *targets = std::move(found_targets);
    a = std::move(*found);
  }
}

class KueueFlavorAssigner final : public FlavorAssigner {
 public:
  const char* name() const override { return "kueue"; }
  void Assign(EngineImpl& e, WlId wl, CqId cq, const std::vector<int32_t>& counts, Assignment* out,
              std::vector<FlavorTried>* tried) const override {
    KueueAssign(e, wl, cq, counts, out, tried);
  }
  void Nominate(EngineImpl& e, WlId wl, CqId cq, Assignment* out,
                std::vector<Target>* targets) const override {
    KueueNominate(e, wl, cq, out, targets);
  }
};

}  // namespace

std::unique_ptr<FlavorAssigner> MakeFlavorAssigner(const EngineOptions& /*options*/) {
  return std::make_unique<KueueFlavorAssigner>();
}

}  // namespace artel::core
