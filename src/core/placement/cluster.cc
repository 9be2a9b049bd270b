// Cluster: node state, the gang placement search, commit and release.
//
// The search (docs/placement.md) in numbered steps:
//  1. Resolve each pod group into a `Demand` (interned resources, GPU request
//     resolved per GPU model). Unknown extended resources, MIG profiles no
//     node model has, and constraint levels the topology lacks are
//     infeasible at once.
//  2. Run the static filter once per node class and group.
//  3. Early out on aggregates: a gang that needs more whole GPUs than are
//     free in the whole cluster is unschedulable without a node scan.
//  4. Without a topology constraint, place each group on all nodes; with
//     one, first try Kueue's TAS assignment for one-group gangs
//     (PlaceKueueTas), then walk the levels and domains as
//     topology_policy.h describes. A gang that may be smaller than its size
//     (a minimum below its count) gets the most pods that fit: the search
//     runs at fixed counts, full first, then the smallest reduction that
//     fits (SearchMost, as Kueue's PodSetReducer).
//  5. Placing a group on a set of nodes is greedy per pod over a heap keyed
//     by (score, anti-fragmentation key, lower node index): the best node
//     takes one pod, is re-scored and goes back while it still fits. Each
//     pod's devices come from the MIG or share policy, or are the lowest
//     free whole GPUs.
//  6. Every change is an `Op` in a log; `Place` undoes its log before it
//     returns, so it leaves the cluster as it found it. `Commit` replays the
//     placement as ops with validation; `Release` undoes a key's ops except
//     MIG instance creation and destruction (the layout stays, idle).
//  7. On failure the reason is rebuilt from per-node explanations (filter
//     reasons, limiting resources, domain estimates), and the gang is
//     infeasible if it would not fit even on empty nodes.
#include <algorithm>
#include <cassert>
#include <limits>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>

#include "core/placement/cluster_state.h"
#include "core/placement/fragmentation.h"
#include "core/placement/kueue_tas.h"
#include "core/placement/mig_policy.h"
#include "core/placement/node_filter.h"
#include "core/placement/node_scorer.h"
#include "core/placement/placement.h"
#include "core/placement/share_policy.h"
#include "core/placement/topology_policy.h"
#include "core/resource_names.h"

namespace artel::core::placement {

using internal::Demand;
using internal::DomainView;
using internal::GpuState;
using internal::KueueTasAssignment;
using internal::KueueTasRequest;
using internal::MigInstance;
using internal::NodeClass;
using internal::NodeState;
using internal::Topo;

namespace {

bool IsStandardResource(std::string_view name) {
  return name == "cpu" || name == "memory" || name == "pods" || name == "ephemeral-storage";
}

enum class OpKind : int8_t { kPod, kWhole, kShare, kMigCreate, kMigDestroy, kMigBusy };

struct Op {
  OpKind kind;
  int8_t shape = 0;
  int8_t start = 0;
  bool isolated = true;
  int32_t node = 0;
  int32_t gpu = 0;
  int32_t cores = 0;
  int64_t mib = 0;
  const std::vector<std::pair<int32_t, Amount>>* res = nullptr;  // kPod
};

struct Committed {
  std::vector<std::vector<std::pair<int32_t, Amount>>> res;  // per group
  std::vector<Op> ops;
};

std::string Plural(int64_t n, const char* what) {
  return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
}

}  // namespace

class ClusterImpl {
 public:
  explicit ClusterImpl(ClusterOptions options)
      : options_(options),
        static_filter_(MakeDefaultStaticFilter()),
        capacity_(MakeCapacityFilter()),
        binpack_(MakeNodeScorer(ScorePolicy::kBinpack)),
        spread_(MakeNodeScorer(ScorePolicy::kSpread)),
        tiebreak_(MakeAntiFragmentationTieBreaker()),
        mig_policy_(MakeMigSlotPolicy(options.mig_policy)),
        share_binpack_(MakeShareSlotPolicy(ScorePolicy::kBinpack)),
        share_spread_(MakeShareSlotPolicy(ScorePolicy::kSpread)),
        domains_(MakeBestFitDomainChooser()) {}

  // ------------------------------------------------------------ setup
  int32_t InternResource(const std::string& name) {
    auto it = resource_index_.find(name);
    if (it != resource_index_.end()) return it->second;
    auto idx = static_cast<int32_t>(resource_names_.size());
    resource_names_.push_back(name);
    resource_index_.emplace(name, idx);
    for (NodeState& n : nodes_) {
      n.alloc.push_back(IsStandardResource(name) ? kUnlimited : 0);
      n.used.push_back(0);
    }
    return idx;
  }

  int32_t ClassOf(const std::map<std::string, std::string>& labels, const std::vector<Taint>& taints,
                  bool ready) {
    std::string key = ready ? "R" : "N";
    for (const auto& [k, v] : labels) {
      if (k == kHostnameLabel) continue;  // every node differs here; selectors on it are rare
      key += '\x1f' + k + '\x1e' + v;
    }
    key += '\x1d';
    for (const Taint& t : taints) key += t.key + '\x1e' + t.value + '\x1e' + t.effect + '\x1f';
    auto it = class_index_.find(key);
    if (it != class_index_.end()) return it->second;
    auto id = static_cast<int32_t>(classes_.size());
    NodeClass cls{labels, taints, ready};
    cls.labels.erase(kHostnameLabel);
    classes_.push_back(std::move(cls));
    class_labels_keyed_.push_back(key);
    class_index_.emplace(key, id);
    return id;
  }

  Status AddNode(NodeSpec spec) {
    if (spec.name.empty()) return InvalidArgument("node without a name");
    if (node_index_.count(spec.name)) return AlreadyExists("node " + spec.name + " already exists");
    spec.labels[kHostnameLabel] = spec.name;
    NodeState n;
    n.name = spec.name;
    n.ready = spec.ready;
    // Generic resources.
    std::vector<std::pair<int32_t, Amount>> alloc;
    for (const auto& [name, amount] : spec.allocatable) {
      if (IsGpuResource(name)) continue;
      if (amount < 0) return InvalidArgument("node " + spec.name + ": negative " + name);
      alloc.emplace_back(InternResource(name), amount);
    }
    n.alloc.resize(resource_names_.size());
    n.used.assign(resource_names_.size(), 0);
    for (size_t r = 0; r < resource_names_.size(); ++r) {
      n.alloc[r] = IsStandardResource(resource_names_[r]) ? kUnlimited : 0;
    }
    for (const auto& [r, amount] : alloc) n.alloc[r] = amount;
    // GPUs.
    if (spec.gpus.empty()) {
      auto it = spec.allocatable.find(kGpuResource);
      if (it != spec.allocatable.end() && it->second > 0) {
        if (it->second % kMilli != 0)
          return InvalidArgument("node " + spec.name + ": fractional nvidia.com/gpu");
        spec.gpus.resize(it->second / kMilli);
      }
    }
    std::string label_model;
    if (auto it = spec.labels.find(kGpuProductLabel); it != spec.labels.end()) label_model = it->second;
    for (size_t i = 0; i < spec.gpus.size(); ++i) {
      const GpuSpec& gs = spec.gpus[i];
      GpuState g;
      std::string model = gs.model.empty() ? label_model : gs.model;
      g.model = static_cast<int8_t>(FindGpuModel(model));
      g.memory_mib = gs.memory_mib > 0 ? gs.memory_mib : (g.model >= 0 ? GpuModel(g.model).memory_mib : 0);
      g.mig = gs.mig;
      g.max_shares = static_cast<int16_t>(std::clamp(gs.max_shares, 1, 1000));
      std::string where = "node " + spec.name + " GPU " + std::to_string(i);
      if (g.mig && g.model < 0) {
        return InvalidArgument(where + ": MIG mode on model \"" + model +
                               "\", which has no MIG geometry in Artel");
      }
      for (const MigInstanceSpec& ins : gs.mig_layout) {
        if (!g.mig) return InvalidArgument(where + ": a MIG layout needs mig: true");
        int shape = FindProfile(g.model, ins.profile);
        if (shape < 0) {
          return InvalidArgument(where + ": profile " + ins.profile + " does not exist on " +
                                 GpuModel(g.model).name);
        }
        if (!CanCreate(shape, ins.start, g.mask, g.compute, g.media)) {
          return InvalidArgument(where + ": " + ins.profile + "@" + std::to_string(ins.start) +
                                 " is not a valid free start slot in the layout");
        }
        AddInstance(g, static_cast<int8_t>(shape), static_cast<int8_t>(ins.start));
      }
      n.gpu_uuids.push_back(gs.uuid.empty() ? "GPU-" + spec.name + "-" + std::to_string(i) : gs.uuid);
      if (g.mig) {
        n.mig_slices += kMigMemorySlices;
      } else {
        ++n.whole_total;
        ++n.free_whole;
        n.share_mem_total += g.memory_mib;
      }
      n.gpus.push_back(std::move(g));
    }
    n.klass = ClassOf(spec.labels, spec.taints, spec.ready);
    auto idx = static_cast<int32_t>(nodes_.size());
    node_index_.emplace(n.name, idx);
    all_nodes_.push_back(idx);
    whole_capacity_ += n.whole_total;
    mig_total_slices_ += n.mig_slices;
    if (static_cast<int>(free_bucket_.size()) <= n.whole_total) free_bucket_.resize(n.whole_total + 1);
    bucket_pos_.push_back(static_cast<int32_t>(free_bucket_[n.free_whole].size()));
    free_bucket_[n.free_whole].push_back(idx);
    load_stamp_.push_back(0);
    if (n.ready) free_whole_ += n.free_whole;
    nodes_.push_back(std::move(n));
    node_labels_.push_back(spec.labels);
    for (Topo& t : topos_) AddNodeToTopology(t, idx);
    return Status::Ok();
  }

  void AddNodeToTopology(Topo& t, int32_t node) {
    const auto& labels = node_labels_[node];
    std::string path;
    bool missing = false;
    for (size_t l = 0; l < t.levels.size(); ++l) {
      auto it = labels.find(t.levels[l]);
      if (it == labels.end()) missing = true;
      if (missing) {
        t.node_domain[l].push_back(-1);
        continue;
      }
      path += it->second;
      path += '\x1f';
      auto [pos, inserted] = t.domain_index[l].emplace(path, static_cast<int32_t>(t.domain_label[l].size()));
      if (inserted) {
        t.domain_label[l].push_back(it->second);
        t.domain_pods[l].push_back(0);
        t.domain_nodes[l].emplace_back();
      }
      t.node_domain[l].push_back(pos->second);
      t.domain_nodes[l][pos->second].push_back(node);
      t.domain_pods[l][pos->second] += nodes_[node].pods;
    }
  }

  Status AddTopology(TopologyLevels spec) {
    if (spec.name.empty()) return InvalidArgument("topology without a name");
    if (spec.levels.empty()) return InvalidArgument("topology " + spec.name + " has no levels");
    for (const Topo& t : topos_) {
      if (t.name == spec.name) return AlreadyExists("topology " + spec.name + " already exists");
    }
    Topo t;
    t.name = std::move(spec.name);
    t.levels = std::move(spec.levels);
    size_t L = t.levels.size();
    t.node_domain.resize(L);
    t.domain_pods.resize(L);
    t.domain_label.resize(L);
    t.domain_nodes.resize(L);
    t.domain_index.resize(L);
    for (int32_t n = 0; n < static_cast<int32_t>(nodes_.size()); ++n) AddNodeToTopology(t, n);
    topos_.push_back(std::move(t));
    return Status::Ok();
  }

  Status SetReady(std::string_view name, bool ready) {
    int32_t i = FindNode(name);
    if (i < 0) return NotFound("node " + std::string(name) + " not found");
    NodeState& n = nodes_[i];
    if (n.ready == ready) return Status::Ok();
    if (n.ready) free_whole_ -= n.free_whole;
    n.ready = ready;
    if (n.ready) free_whole_ += n.free_whole;
    const NodeClass& c = classes_[n.klass];
    n.klass = ClassOf(c.labels, c.taints, ready);
    return Status::Ok();
  }

  int32_t FindNode(std::string_view name) const {
    auto it = node_index_.find(std::string(name));
    return it == node_index_.end() ? -1 : it->second;
  }

  // -------------------------------------------------------- primitives
  static void AddInstance(GpuState& g, int8_t shape, int8_t start) {
    MigInstance in{shape, start, false};
    auto pos = std::lower_bound(g.instances.begin(), g.instances.end(), in,
                                [](const MigInstance& a, const MigInstance& b) { return a.start < b.start; });
    g.instances.insert(pos, in);
    g.mask |= SliceMask(shape, start);
    g.compute = static_cast<int8_t>(g.compute + Shape(shape).compute);
    if (Shape(shape).media) g.media = true;
  }

  static int FindInstance(const GpuState& g, int8_t shape, int8_t start) {
    for (size_t i = 0; i < g.instances.size(); ++i) {
      if (g.instances[i].shape == shape && g.instances[i].start == start) return static_cast<int>(i);
    }
    return -1;
  }

  void DomainPods(int32_t node, int64_t delta) {
    for (Topo& t : topos_) {
      for (size_t l = 0; l < t.levels.size(); ++l) {
        int32_t d = t.node_domain[l][node];
        if (d >= 0) t.domain_pods[l][d] += delta;
      }
    }
  }

  // Keeps `free_bucket_` (nodes by free whole GPUs) in step with a node's
  // `free_whole`.
  void Rebucket(int32_t node, int old_free) {
    int now = nodes_[node].free_whole;
    if (now == old_free) return;
    std::vector<int32_t>& from = free_bucket_[old_free];
    int32_t pos = bucket_pos_[node];
    from[pos] = from.back();
    bucket_pos_[from[pos]] = pos;
    from.pop_back();
    bucket_pos_[node] = static_cast<int32_t>(free_bucket_[now].size());
    free_bucket_[now].push_back(node);
  }

  // Applies `op`; false (and no change) if it does not fit.
  bool Do(const Op& op) {
    NodeState& n = nodes_[op.node];
    switch (op.kind) {
      case OpKind::kPod: {
        for (const auto& [r, amount] : *op.res) {
          if (n.alloc[r] != kUnlimited && n.used[r] + amount > n.alloc[r]) return false;
        }
        for (const auto& [r, amount] : *op.res) n.used[r] += amount;
        ++n.pods;
        DomainPods(op.node, 1);
        return true;
      }
      case OpKind::kWhole: {
        if (op.gpu < 0 || op.gpu >= static_cast<int32_t>(n.gpus.size())) return false;
        GpuState& g = n.gpus[op.gpu];
        if (!g.WholeFree()) return false;
        g.whole_used = true;
        --n.free_whole;
        if (n.ready) --free_whole_;
        Rebucket(op.node, n.free_whole + 1);
        return true;
      }
      case OpKind::kShare: {
        if (op.gpu < 0 || op.gpu >= static_cast<int32_t>(n.gpus.size())) return false;
        GpuState& g = n.gpus[op.gpu];
        if (g.mig || g.whole_used || g.shares >= g.max_shares || op.mib <= 0 ||
            g.share_mem_mib + op.mib > g.memory_mib) {
          return false;
        }
        int32_t cores = op.isolated ? op.cores : 0;
        if (g.share_cores + cores > 100) return false;
        if (g.shares == 0) {
          --n.free_whole;
          if (n.ready) --free_whole_;
          Rebucket(op.node, n.free_whole + 1);
        }
        ++g.shares;
        g.share_mem_mib += op.mib;
        g.share_cores += cores;
        n.share_mem_used += op.mib;
        return true;
      }
      case OpKind::kMigCreate: {
        if (op.gpu < 0 || op.gpu >= static_cast<int32_t>(n.gpus.size())) return false;
        GpuState& g = n.gpus[op.gpu];
        if (!g.mig || g.model < 0 || !CanCreate(op.shape, op.start, g.mask, g.compute, g.media)) return false;
        AddInstance(g, op.shape, op.start);
        return true;
      }
      case OpKind::kMigDestroy: {
        if (op.gpu < 0 || op.gpu >= static_cast<int32_t>(n.gpus.size())) return false;
        GpuState& g = n.gpus[op.gpu];
        int i = FindInstance(g, op.shape, op.start);
        if (i < 0 || g.instances[i].busy) return false;
        g.instances.erase(g.instances.begin() + i);
        g.mask &= static_cast<uint8_t>(~SliceMask(op.shape, op.start));
        g.compute = static_cast<int8_t>(g.compute - Shape(op.shape).compute);
        if (Shape(op.shape).media) g.media = false;
        return true;
      }
      case OpKind::kMigBusy: {
        if (op.gpu < 0 || op.gpu >= static_cast<int32_t>(n.gpus.size())) return false;
        GpuState& g = n.gpus[op.gpu];
        int i = FindInstance(g, op.shape, op.start);
        if (i < 0 || g.instances[i].busy) return false;
        SetBusy(n, g, g.instances[i], true);
        return true;
      }
    }
    return false;
  }

  void SetBusy(NodeState& n, GpuState& g, MigInstance& in, bool busy) {
    in.busy = busy;
    int sign = busy ? 1 : -1;
    uint8_t m = SliceMask(in.shape, in.start);
    g.busy_mask = busy ? (g.busy_mask | m) : (g.busy_mask & static_cast<uint8_t>(~m));
    g.busy_compute = static_cast<int8_t>(g.busy_compute + sign * Shape(in.shape).compute);
    if (Shape(in.shape).media) g.busy_media = busy;
    n.mig_busy_slices += sign * Shape(in.shape).slices;
    mig_busy_slices_ += sign * Shape(in.shape).slices;
  }

  // Exact inverse of a successful Do.
  void Undo(const Op& op) {
    NodeState& n = nodes_[op.node];
    switch (op.kind) {
      case OpKind::kPod:
        for (const auto& [r, amount] : *op.res) n.used[r] -= amount;
        --n.pods;
        DomainPods(op.node, -1);
        return;
      case OpKind::kWhole:
        n.gpus[op.gpu].whole_used = false;
        ++n.free_whole;
        if (n.ready) ++free_whole_;
        Rebucket(op.node, n.free_whole - 1);
        return;
      case OpKind::kShare: {
        GpuState& g = n.gpus[op.gpu];
        --g.shares;
        g.share_mem_mib -= op.mib;
        g.share_cores -= op.isolated ? op.cores : 0;
        n.share_mem_used -= op.mib;
        if (g.shares == 0) {
          ++n.free_whole;
          if (n.ready) ++free_whole_;
          Rebucket(op.node, n.free_whole - 1);
        }
        return;
      }
      case OpKind::kMigCreate: {
        GpuState& g = n.gpus[op.gpu];
        int i = FindInstance(g, op.shape, op.start);
        assert(i >= 0 && !g.instances[i].busy);
        g.instances.erase(g.instances.begin() + i);
        g.mask &= static_cast<uint8_t>(~SliceMask(op.shape, op.start));
        g.compute = static_cast<int8_t>(g.compute - Shape(op.shape).compute);
        if (Shape(op.shape).media) g.media = false;
        return;
      }
      case OpKind::kMigDestroy: AddInstance(n.gpus[op.gpu], op.shape, op.start); return;
      case OpKind::kMigBusy: {
        GpuState& g = n.gpus[op.gpu];
        int i = FindInstance(g, op.shape, op.start);
        assert(i >= 0 && g.instances[i].busy);
        SetBusy(n, g, g.instances[i], false);
        return;
      }
    }
  }

  bool DoLogged(const Op& op) {
    if (!Do(op)) return false;
    log_.push_back(op);
    return true;
  }
  void RollbackTo(size_t checkpoint) {
    while (log_.size() > checkpoint) {
      Undo(log_.back());
      log_.pop_back();
    }
  }

  // ------------------------------------------------------------ search
  struct Ctx {
    const GangRequest* req = nullptr;
    std::vector<Demand> demands;
    // [group][class] FilterReason, -1 = not computed yet (filled lazily:
    // gangs that fail on aggregates never run the filters).
    mutable std::vector<std::vector<int8_t>> verdict;
    std::vector<const PodGroup*> filter_group;  // the group as filters see it (no hostname)
    std::vector<PodGroup> unpinned;             // storage for filter_group
    const GangRequest* filter_gang = nullptr;
    GangRequest unpinned_gang;
    // kubernetes.io/hostname in a selector pins the group to one node; it is
    // checked per node because classes leave the hostname out.
    std::vector<int32_t> pinned;  // [group] node index, -1 = none, -2 = a node that does not exist
    // [group] required node affinity that names kubernetes.io/hostname (or
    // null): checked per node, whole, for the same reason.
    std::vector<const std::vector<NodeSelectorTerm>*> host_affinity;
    const Topo* topo = nullptr;
    int32_t required = -1, preferred = -1, slice = -1;
    std::vector<char> allowed;  // [node]; empty = every node (GangRequest::only_nodes)
    DomainView tie;
    const NodeScorer* scorer = nullptr;
    const ShareSlotPolicy* share = nullptr;
    Placement placement;
  };

  FilterReason Verdict(const Ctx& c, int32_t g, int32_t klass) const {
    int8_t& v = c.verdict[g][klass];
    if (v < 0)
      v = static_cast<int8_t>(static_filter_->Check(classes_[klass], *c.filter_group[g], *c.filter_gang));
    return static_cast<FilterReason>(v);
  }

  bool HostAffinityOk(const Ctx& c, int32_t g, int32_t node) const {
    if (c.host_affinity[g] == nullptr) return true;
    std::map<std::string, std::string> labels = classes_[nodes_[node].klass].labels;
    labels[kHostnameLabel] = nodes_[node].name;
    return NodeAffinityMatches(*c.host_affinity[g], labels);
  }

  bool Eligible(const Ctx& c, int32_t g, int32_t node) const {
    if (!c.allowed.empty() && !c.allowed[node]) return false;
    const NodeState& n = nodes_[node];
    return n.ready && (c.pinned[g] == -1 || c.pinned[g] == node) &&
           Verdict(c, g, n.klass) == FilterReason::kOk && HostAffinityOk(c, g, node);
  }

  // Quick necessary condition, cheaper than Fit.
  static bool QuickFits(const NodeState& n, const Demand& d) {
    switch (d.kind) {
      case GpuKind::kWhole: return n.free_whole >= d.count;
      case GpuKind::kMigProfile:
      case GpuKind::kMigNeed: return n.mig_busy_slices < n.mig_slices;
      case GpuKind::kShare: return n.share_mem_used < n.share_mem_total;
      case GpuKind::kNone: return true;
    }
    return true;
  }

  bool ApplyPod(Ctx& c, int32_t node, const Demand& d) {
    size_t cp = log_.size();
    PodPlacement pp;
    pp.group = d.group;
    pp.node = node;
    NodeState& n = nodes_[node];
    auto fail = [&] {
      RollbackTo(cp);
      return false;
    };
    Op pod{OpKind::kPod};
    pod.node = node;
    pod.res = &d.resources;
    if (!DoLogged(pod)) return fail();
    switch (d.kind) {
      case GpuKind::kNone: break;
      case GpuKind::kWhole: {
        for (int32_t i = 0;
             i < static_cast<int32_t>(n.gpus.size()) && static_cast<int32_t>(pp.gpus.size()) < d.count; ++i) {
          if (!n.gpus[i].WholeFree()) continue;
          Op op{OpKind::kWhole};
          op.node = node;
          op.gpu = i;
          if (!DoLogged(op)) return fail();
          pp.gpus.push_back(i);
        }
        if (static_cast<int32_t>(pp.gpus.size()) < d.count) return fail();
        break;
      }
      case GpuKind::kShare: {
        std::vector<int32_t> gpus = c.share->Choose(n.gpus, d);
        if (gpus.empty()) return fail();
        for (int32_t gi : gpus) {
          Op op{OpKind::kShare};
          op.node = node;
          op.gpu = gi;
          op.mib = d.ShareMib(n.gpus[gi].memory_mib);
          op.cores = d.cores;
          op.isolated = d.isolated;
          if (!DoLogged(op)) return fail();
          pp.shares.push_back(ShareAssignment{gi, op.mib, d.isolated ? d.cores : 0, d.isolated});
        }
        break;
      }
      case GpuKind::kMigProfile:
      case GpuKind::kMigNeed: {
        for (int32_t k = 0; k < d.count; ++k) {
          std::optional<MigChoice> ch = mig_policy_->Choose(n.gpus, d.shape);
          if (!ch) return fail();
          GpuState& g = n.gpus[ch->gpu];
          MigAssignment ma;
          ma.gpu = ch->gpu;
          ma.profile = GpuModel(g.model).profile[ch->shape];
          ma.start = ch->start;
          ma.create = ch->reuse < 0;
          std::vector<std::pair<int8_t, int8_t>> victims;
          for (int32_t vi : ch->destroy) victims.emplace_back(g.instances[vi].shape, g.instances[vi].start);
          for (auto [shape, start] : victims) {
            Op op{OpKind::kMigDestroy};
            op.node = node;
            op.gpu = ch->gpu;
            op.shape = shape;
            op.start = start;
            if (!DoLogged(op)) return fail();
            ma.destroy.push_back(MigInstanceSpec{GpuModel(g.model).profile[shape], start});
          }
          Op op{OpKind::kMigCreate};
          op.node = node;
          op.gpu = ch->gpu;
          op.shape = ch->shape;
          op.start = ch->start;
          if (ma.create && !DoLogged(op)) return fail();
          op.kind = OpKind::kMigBusy;
          if (!DoLogged(op)) return fail();
          pp.mig.push_back(std::move(ma));
        }
        break;
      }
    }
    c.placement.pods.push_back(std::move(pp));
    ++c.placement.placed[d.group];
    return true;
  }

  bool keep_ops_ = false;                          // Place leaves its ops applied (PlacePerGroup)
  std::vector<std::vector<Demand>> kept_demands_;  // what those ops point into

  struct Cand {
    int64_t score;
    int64_t tie;
    int32_t node;
  };
  static bool Worse(const Cand& a, const Cand& b) {  // heap order: the best on top
    if (a.score != b.score) return a.score < b.score;
    if (a.tie != b.tie) return a.tie < b.tie;
    return a.node > b.node;
  }

  Cand MakeCand(const Ctx& c, int32_t node, const Demand& d) const {
    return Cand{c.scorer->Score(nodes_[node], d), tiebreak_->Key(node, nodes_[node], d, c.tie), node};
  }

  // Places up to `want` pods of group `g` on `nodes`; returns how many.
  int32_t PlaceGroup(Ctx& c, int32_t g, std::span<const int32_t> nodes, int32_t want) {
    if (want <= 0) return 0;
    const Demand& d = c.demands[g];
    if (d.kind == GpuKind::kWhole && nodes.data() == all_nodes_.data() && nodes.size() == all_nodes_.size()) {
      return PlaceWholeByBuckets(c, g, want);
    }
    std::vector<Cand>& heap = scratch_cands_;
    heap.clear();
    for (int32_t node : nodes) {
      const NodeState& n = nodes_[node];
      if (!QuickFits(n, d) || !Eligible(c, g, node)) continue;
      if (!capacity_->FitsOne(n, d)) continue;
      heap.push_back(MakeCand(c, node, d));
    }
    std::make_heap(heap.begin(), heap.end(), Worse);
    int32_t placed = 0;
    while (placed < want && !heap.empty()) {
      std::pop_heap(heap.begin(), heap.end(), Worse);
      int32_t node = heap.back().node;
      heap.pop_back();
      if (!ApplyPod(c, node, d)) continue;
      ++placed;
      if (placed < want && capacity_->FitsOne(nodes_[node], d)) {
        heap.push_back(MakeCand(c, node, d));
        std::push_heap(heap.begin(), heap.end(), Worse);
      }
    }
    return placed;
  }

  // PlaceGroup over all nodes for whole-GPU demands, without a full scan.
  // For such a demand a node's score depends only on its free whole GPUs
  // (node_scorer.h, step 1), so all nodes of one `free_bucket_` tie on
  // score. Buckets are loaded into the heap lazily, best score first, and a
  // bucket is loaded whenever its score is at least the heap top's, so every
  // node that ties with the best is in the heap when the best is taken: the
  // result equals the full scan's.
  int32_t PlaceWholeByBuckets(Ctx& c, int32_t g, int32_t want) {
    const Demand& d = c.demands[g];
    std::vector<Cand>& heap = scratch_cands_;
    heap.clear();
    ++stamp_;
    auto max_f = static_cast<int32_t>(free_bucket_.size()) - 1;
    bool ascending = c.scorer->Score(NodeWithFree(d.count), d) >= c.scorer->Score(NodeWithFree(max_f), d);
    int32_t next = ascending ? d.count : max_f;
    auto more = [&] { return ascending ? next <= max_f : next >= d.count; };
    int32_t placed = 0;
    while (placed < want) {
      while (more()) {
        const std::vector<int32_t>& bucket = free_bucket_[next];
        if (!bucket.empty() && !heap.empty() && c.scorer->Score(nodes_[bucket[0]], d) < heap.front().score)
          break;
        for (int32_t node : bucket) {
          if (load_stamp_[node] == stamp_ || !Eligible(c, g, node)) continue;
          load_stamp_[node] = stamp_;
          if (!capacity_->FitsOne(nodes_[node], d)) continue;
          heap.push_back(MakeCand(c, node, d));
          std::push_heap(heap.begin(), heap.end(), Worse);
        }
        next += ascending ? 1 : -1;
      }
      if (heap.empty()) break;
      std::pop_heap(heap.begin(), heap.end(), Worse);
      int32_t node = heap.back().node;
      heap.pop_back();
      if (!ApplyPod(c, node, d)) continue;
      ++placed;
      if (placed < want && capacity_->FitsOne(nodes_[node], d)) {
        heap.push_back(MakeCand(c, node, d));
        std::push_heap(heap.begin(), heap.end(), Worse);
      }
    }
    return placed;
  }

  // A probe node with `free` whole GPUs, to ask the scorer about a bucket.
  const NodeState& NodeWithFree(int32_t free) {
    probe_.free_whole = static_cast<int16_t>(free);
    probe_.whole_total = static_cast<int16_t>(free);
    return probe_;
  }

  // Per-domain estimates at `level` for every group, over `scope` (or all).
  struct Estimate {
    std::vector<int64_t> pods;  // [group * domains + domain]
    int32_t domains = 0;
  };
  Estimate Estimates(const Ctx& c, int32_t level, bool empty) const {
    Estimate e;
    const Topo& t = *c.topo;
    e.domains = static_cast<int32_t>(t.domain_label[level].size());
    auto G = static_cast<int32_t>(c.demands.size());
    e.pods.assign(static_cast<size_t>(G) * e.domains, 0);
    for (int32_t node : all_nodes_) {
      int32_t dom = t.node_domain[level][node];
      if (dom < 0) continue;
      for (int32_t g = 0; g < G; ++g) {
        const Demand& d = c.demands[g];
        const PodGroup& pg = c.req->groups[g];
        if (!Eligible(c, g, node) || (!empty && !QuickFits(nodes_[node], d))) continue;
        e.pods[static_cast<size_t>(g) * e.domains + dom] += capacity_->Fit(nodes_[node], d, empty, pg.count);
      }
    }
    return e;
  }

  std::vector<DomainCandidate> Candidates(const Ctx& c, int32_t level, const Estimate& e) const {
    std::vector<DomainCandidate> out;
    auto G = static_cast<int32_t>(c.demands.size());
    for (int32_t dom = 0; dom < e.domains; ++dom) {
      bool ok = true, full = true;
      int64_t total = 0;
      for (int32_t g = 0; g < G; ++g) {
        int64_t est = e.pods[static_cast<size_t>(g) * e.domains + dom];
        const PodGroup& pg = c.req->groups[g];
        ok = ok && est >= pg.min();
        full = full && est >= pg.count;
        total += est;
      }
      if (!ok || total < c.req->min_member) continue;
      out.push_back(DomainCandidate{dom, total, full, c.topo->domain_pods[level][dom] > 0});
    }
    domains_->Order(&out);
    return out;
  }

  bool MinsMet(const Ctx& c) const {
    int64_t total = 0;
    for (size_t g = 0; g < c.demands.size(); ++g) {
      if (c.placement.placed[g] < c.req->groups[g].min()) return false;
      total += c.placement.placed[g];
    }
    return total >= c.req->min_member;
  }

  void Truncate(Ctx& c, size_t log_cp, size_t pods_cp) {
    RollbackTo(log_cp);
    while (c.placement.pods.size() > pods_cp) {
      --c.placement.placed[c.placement.pods.back().group];
      c.placement.pods.pop_back();
    }
  }

  // Places one group's pods slice by slice, each slice in one domain of the
  // slice level (best fit) among `scope`.
  int32_t PlaceSlices(Ctx& c, int32_t g, std::span<const int32_t> scope) {
    const Topo& t = *c.topo;
    const Demand& d = c.demands[g];
    const PodGroup& pg = c.req->groups[g];
    int32_t size = c.req->constraint.slice_size;
    int32_t placed = 0;
    while (placed < pg.count) {
      int32_t want = std::min(size, pg.count - placed);
      // Group the scope's nodes by slice domain, with estimates.
      std::unordered_map<int32_t, std::pair<int64_t, std::vector<int32_t>>> by_dom;
      std::vector<int32_t> order;
      for (int32_t node : scope) {
        int32_t dom = t.node_domain[c.slice][node];
        if (dom < 0) continue;
        auto [it, inserted] = by_dom.try_emplace(dom);
        if (inserted) order.push_back(dom);
        it->second.second.push_back(node);
        if (Eligible(c, g, node) && QuickFits(nodes_[node], d))
          it->second.first += capacity_->Fit(nodes_[node], d, false, want);
      }
      std::vector<DomainCandidate> cands;
      for (int32_t dom : order) {
        int64_t est = by_dom[dom].first;
        if (est >= want) cands.push_back(DomainCandidate{dom, est, true, t.domain_pods[c.slice][dom] > 0});
      }
      domains_->Order(&cands);
      bool done = false;
      for (const DomainCandidate& dc : cands) {
        size_t log_cp = log_.size(), pods_cp = c.placement.pods.size();
        if (PlaceGroup(c, g, by_dom[dc.domain].second, want) == want) {
          done = true;
          break;
        }
        Truncate(c, log_cp, pods_cp);
      }
      if (!done) break;
      placed += want;
    }
    return placed;
  }

  // Places every group in `scope`, in the gang's order; if that fails and
  // there are several groups, once more with the groups of most pods first,
  // so that a small group (a leader) does not take the room a large one (its
  // workers) needs, as Kueue keeps worker capacity when it places a leader.
  bool PlaceInScope(Ctx& c, std::span<const int32_t> scope) {
    return InGroupOrders(c, [&](const std::vector<int32_t>& order) {
      for (int32_t g : order) {
        const PodGroup& pg = c.req->groups[g];
        int32_t placed = c.slice >= 0 ? PlaceSlices(c, g, scope) : PlaceGroup(c, g, scope, pg.count);
        if (placed < pg.min()) return false;
      }
      return MinsMet(c);
    });
  }

  // Runs `place(order)` with the groups in the gang's order; if that fails
  // and there are several groups, undoes it and runs it once more with the
  // groups of most pods first.
  template <typename F>
  bool InGroupOrders(Ctx& c, F&& place) {
    const auto G = static_cast<int32_t>(c.demands.size());
    std::vector<int32_t> order(G);
    for (int32_t g = 0; g < G; ++g) order[g] = g;
    size_t log_cp = log_.size(), pods_cp = c.placement.pods.size();
    if (place(order)) return true;
    if (G < 2) return false;
    std::stable_sort(order.begin(), order.end(),
                     [&](int32_t a, int32_t b) { return c.req->groups[a].count > c.req->groups[b].count; });
    if (std::is_sorted(order.begin(), order.end())) return false;  // the same order gives the same answer
    Truncate(c, log_cp, pods_cp);
    return place(order);
  }

  // Preferred-only fallback: fill the preferred level's domains in
  // descending order of estimate.
  bool PlaceAcross(Ctx& c, int32_t level) {
    const Topo& t = *c.topo;
    Estimate e = Estimates(c, level, false);
    std::vector<std::pair<int64_t, int32_t>> order;
    for (int32_t dom = 0; dom < e.domains; ++dom) {
      int64_t total = 0;
      for (size_t g = 0; g < c.demands.size(); ++g) total += e.pods[g * e.domains + dom];
      if (total > 0) order.emplace_back(-total, dom);
    }
    std::sort(order.begin(), order.end());
    std::vector<int32_t> outside;
    for (int32_t node : all_nodes_) {
      if (t.node_domain[level][node] < 0) outside.push_back(node);
    }
    return InGroupOrders(c, [&](const std::vector<int32_t>& groups) {
      for (int32_t g : groups) {
        int32_t want = c.req->groups[g].count;
        if (c.slice >= 0) {
          // A slice level is always required: each slice still goes into one
          // domain of it, wherever that domain is (Kueue).
          if (PlaceSlices(c, g, all_nodes_) < c.req->groups[g].min()) return false;
          continue;
        }
        int32_t placed = 0;
        for (const auto& [neg, dom] : order) {
          if (placed >= want) break;
          placed += PlaceGroup(c, g, t.domain_nodes[level][dom], want - placed);
        }
        if (placed < want) placed += PlaceGroup(c, g, outside, want - placed);
        if (placed < c.req->groups[g].min()) return false;
      }
      return MinsMet(c);
    });
  }

  int32_t LevelIndex(const Topo& t, const std::string& level) const {
    for (size_t i = 0; i < t.levels.size(); ++i) {
      if (t.levels[i] == level) return static_cast<int32_t>(i);
    }
    return -1;
  }

  PlaceResult Infeasible(std::string reason) {
    PlaceResult r;
    r.outcome = PlaceOutcome::kInfeasible;
    r.reason = std::move(reason);
    return r;
  }

  std::string DescribeDemand(const Ctx& c, int32_t g) const {
    const PodGroup& pg = c.req->groups[g];
    std::string s = Plural(pg.count, "pod");
    if (pg.min() != pg.count) s += " (min " + std::to_string(pg.min()) + ")";
    s += " of " + pg.name + " need";
    const GpuRequest& gr = pg.gpu;
    switch (gr.kind) {
      case GpuKind::kNone: {
        bool first = true;
        for (const auto& [k, v] : pg.requests) {
          s += (first ? " " : ", ") + FormatQuantity(v) + " " + k;
          first = false;
        }
        if (first) s += " a node";
        break;
      }
      case GpuKind::kWhole: s += " " + std::to_string(gr.count) + " nvidia.com/gpu"; break;
      case GpuKind::kMigProfile:
        s += " " + std::to_string(gr.count) + " " + MigResourceName(gr.mig_profile);
        break;
      case GpuKind::kMigNeed: s += " a MIG instance with " + std::to_string(gr.memory_mib) + "MiB"; break;
      case GpuKind::kShare: s += " " + std::to_string(gr.count) + " GPU share(s)"; break;
    }
    return s + " each";
  }

  // How many pods the whole gang gets in `scope` now: every group placed in
  // turn, in the gang's order and then with the groups of most pods first
  // (the larger count wins), and undone. Unlike the per-group estimates,
  // the groups compete for the same nodes here.
  int64_t GangFitIn(Ctx& c, std::span<const int32_t> scope) {
    const auto G = static_cast<int32_t>(c.demands.size());
    std::vector<int32_t> order(G);
    for (int32_t g = 0; g < G; ++g) order[g] = g;
    int64_t best = 0;
    for (int pass = 0; pass < 2; ++pass) {
      if (pass == 1) {
        std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
          return c.req->groups[a].count > c.req->groups[b].count;
        });
        if (std::is_sorted(order.begin(), order.end())) break;
      }
      size_t log_cp = log_.size(), pods_cp = c.placement.pods.size();
      int64_t got = 0;
      for (int32_t g : order) got += PlaceGroup(c, g, scope, c.req->groups[g].count);
      Truncate(c, log_cp, pods_cp);
      best = std::max(best, got);
    }
    return best;
  }

  // Why the search failed, and whether it can ever succeed.
  PlaceResult Diagnose(Ctx& c) {
    PlaceResult r;
    r.outcome = PlaceOutcome::kUnschedulable;
    std::string reason;
    bool infeasible = false;
    auto G = static_cast<int32_t>(c.demands.size());
    for (int32_t g = 0; g < G; ++g) {
      const PodGroup& pg = c.req->groups[g];
      const Demand& d = c.demands[g];
      std::array<int64_t, static_cast<int>(FilterReason::kCount)> filtered{};
      std::map<std::string, int64_t> limited;
      int64_t fit_nodes = 0, fit_pods = 0, ever_pods = 0;
      for (int32_t node : all_nodes_) {
        const NodeState& n = nodes_[node];
        FilterReason v = Verdict(c, g, n.klass);
        if (v == FilterReason::kOk && c.pinned[g] != -1 && c.pinned[g] != node)
          v = FilterReason::kNodeSelector;
        if (v == FilterReason::kOk && !HostAffinityOk(c, g, node)) v = FilterReason::kNodeAffinity;
        if (!n.ready) v = FilterReason::kNotReady;
        if (v != FilterReason::kOk) {
          ++filtered[static_cast<int>(v)];
          continue;
        }
        ever_pods += capacity_->Fit(n, d, true, pg.count);
        FitResult f = capacity_->Explain(n, d, resource_names_, false);
        if (f.pods > 0) {
          ++fit_nodes;
          fit_pods += f.pods;
        } else {
          ++limited["no free " + f.limit];
        }
      }
      if (!reason.empty()) reason += "; ";
      reason += DescribeDemand(c, g) + ": ";
      std::string parts;
      auto add = [&](const std::string& p) { parts += (parts.empty() ? "" : ", ") + p; };
      add(Plural(fit_nodes, "node") + " can take " + Plural(std::min<int64_t>(fit_pods, 1 << 30), "pod") +
          " now");
      for (int i = 1; i < static_cast<int>(FilterReason::kCount); ++i) {
        if (filtered[i] > 0)
          add(Plural(filtered[i], "node") + " " + FilterReasonText(static_cast<FilterReason>(i)));
      }
      for (const auto& [what, k] : limited) add(Plural(k, "node") + " had " + what);
      reason += parts;
      if (ever_pods < pg.min()) {
        infeasible = true;
        reason += " (even empty, the matching nodes hold only " + Plural(ever_pods, "pod") + ")";
      }
    }
    if (!infeasible && c.topo != nullptr && c.required >= 0) {
      const Topo& t = *c.topo;
      Estimate now = Estimates(c, c.required, false);
      Estimate ever = Estimates(c, c.required, true);
      std::vector<std::pair<int64_t, int32_t>> doms;
      bool any_ever = false;
      for (int32_t dom = 0; dom < now.domains; ++dom) {
        int64_t total = 0;
        bool ok_ever = true;
        for (int32_t g = 0; g < G; ++g) {
          total += now.pods[static_cast<size_t>(g) * now.domains + dom];
          ok_ever =
              ok_ever && ever.pods[static_cast<size_t>(g) * ever.domains + dom] >= c.req->groups[g].min();
        }
        any_ever = any_ever || ok_ever;
        doms.emplace_back(-total, dom);
      }
      std::sort(doms.begin(), doms.end());
      if (G > 1) {
        // The estimates add up each group's own fit, as if each had the
        // domain to itself; report what the gang as a whole gets instead.
        // Estimates bound the real counts from above, so only the domains
        // that can still make the listed four are placed.
        constexpr size_t kListed = 4;
        std::vector<std::pair<int64_t, int32_t>> exact;
        size_t i = 0;
        for (; i < doms.size(); ++i) {
          if (exact.size() >= kListed) {
            std::sort(exact.begin(), exact.end());
            if (-exact[kListed - 1].first >= -doms[i].first) break;
          }
          exact.emplace_back(-GangFitIn(c, t.domain_nodes[c.required][doms[i].second]), doms[i].second);
        }
        std::sort(exact.begin(), exact.end());
        std::copy(exact.begin(), exact.end(), doms.begin());
      }
      std::string level = t.levels[c.required];
      std::string list;
      for (size_t i = 0; i < doms.size() && i < 4; ++i) {
        list += (i ? ", " : "") + t.domain_label[c.required][doms[i].second] + " fits " +
                std::to_string(-doms[i].first);
      }
      if (doms.size() > 4) list += ", ...";
      reason += "; required topology " + level + " unmet: " + (list.empty() ? "no domain" : list);
      if (!any_ever) {
        infeasible = true;
        reason += " (no " + level + " domain is large enough even when empty)";
      }
    }
    if (!infeasible && c.topo != nullptr && c.slice >= 0 && c.req->constraint.slice_size > 0) {
      // Every slice must fit in one domain of the slice level: if no such
      // domain could hold a slice even when empty, waiting cannot help.
      const int64_t size = c.req->constraint.slice_size;
      Estimate ever = Estimates(c, c.slice, true);
      bool any = false;
      for (int32_t dom = 0; dom < ever.domains && !any; ++dom) {
        for (int32_t g = 0; g < G && !any; ++g) {
          any = ever.pods[static_cast<size_t>(g) * ever.domains + dom] >= size;
        }
      }
      if (!any) {
        infeasible = true;
        reason += "; no " + c.topo->levels[c.slice] + " domain holds a slice of " + std::to_string(size) +
                  " pods even when empty";
      }
    }
    if (infeasible) r.outcome = PlaceOutcome::kInfeasible;
    r.reason = std::move(reason);
    return r;
  }

  // Static filter state of `c` for `req` (classes, hostname pins, host
  // affinities), shared by Place and PreemptionScopes.
  void InitFilters(Ctx& c, const GangRequest& req) const {
    const auto G = static_cast<int32_t>(req.groups.size());
    c.verdict.assign(G, std::vector<int8_t>(classes_.size(), -1));
    c.pinned.assign(G, -1);
    c.host_affinity.assign(G, nullptr);
    c.unpinned.resize(G);
    c.filter_group.resize(G);
    c.filter_gang = &req;
    if (req.flavor_node_labels.count(kHostnameLabel)) {
      c.unpinned_gang.flavor_node_labels = req.flavor_node_labels;
      c.unpinned_gang.flavor_node_labels.erase(kHostnameLabel);
      c.unpinned_gang.flavor_tolerations = req.flavor_tolerations;
      c.filter_gang = &c.unpinned_gang;
    }
    for (int32_t g = 0; g < G; ++g) {
      c.filter_group[g] = &req.groups[g];
      auto pin = [&](const std::string& host) {
        int32_t node = FindNode(host);
        if (c.pinned[g] == -1) {
          c.pinned[g] = node < 0 ? -2 : node;
        } else if (c.pinned[g] != node) {
          c.pinned[g] = -2;
        }
      };
      if (c.filter_gang != &req) pin(req.flavor_node_labels.at(kHostnameLabel));
      if (auto it = req.groups[g].node_selector.find(kHostnameLabel);
          it != req.groups[g].node_selector.end()) {
        pin(it->second);
        c.unpinned[g] = req.groups[g];
        c.unpinned[g].node_selector.erase(kHostnameLabel);
        c.filter_group[g] = &c.unpinned[g];
      }
      bool names_host = false;
      for (const NodeSelectorTerm& t : req.groups[g].node_affinity) {
        for (const NodeSelectorRequirement& r : t.match_expressions)
          names_host = names_host || r.key == kHostnameLabel;
      }
      if (names_host) {
        if (c.filter_group[g] != &c.unpinned[g]) {
          c.unpinned[g] = req.groups[g];
          c.filter_group[g] = &c.unpinned[g];
        }
        c.unpinned[g].node_affinity.clear();
        c.host_affinity[g] = &req.groups[g].node_affinity;
      }
    }
  }

  // Group g's pod as the policies see it. False, with `err`, when no node
  // of this cluster can ever meet it (an unknown resource or MIG shape).
  bool ResolveDemand(const PodGroup& pg, int32_t g, Demand* out, std::string* err) const {
    Demand& d = *out;
    d.group = g;
    for (const auto& [name, amount] : pg.requests) {
      if (amount == 0 || IsGpuResource(name)) continue;
      if (amount < 0) {
        *err = "group " + pg.name + ": negative " + name;
        return false;
      }
      auto it = resource_index_.find(name);
      if (it == resource_index_.end()) {
        if (IsStandardResource(name)) continue;
        *err = "group " + pg.name + ": no node has " + name;
        return false;
      }
      d.resources.emplace_back(it->second, amount);
    }
    if (auto it = resource_index_.find("pods"); it != resource_index_.end() && !pg.requests.count("pods")) {
      d.resources.emplace_back(it->second, kMilli);
    }
    const GpuRequest& gr = pg.gpu;
    d.kind = gr.kind;
    d.count = gr.count;
    if (gr.kind != GpuKind::kNone && gr.count <= 0) {
      *err = "group " + pg.name + ": GPU count must be > 0";
      return false;
    }
    bool any_shape = false;
    for (int m = 0; m < kNumGpuModels; ++m) {
      int s = -1;
      if (gr.kind == GpuKind::kMigProfile) s = FindProfile(m, gr.mig_profile);
      if (gr.kind == GpuKind::kMigNeed) s = SmallestShapeFor(m, gr.memory_mib, gr.compute_slices);
      d.shape[m] = static_cast<int8_t>(s);
      any_shape = any_shape || s >= 0;
    }
    if (gr.kind == GpuKind::kMigProfile && !any_shape) {
      *err = "group " + pg.name + ": no GPU model has MIG profile " + gr.mig_profile + " (" +
             MigResourceName(gr.mig_profile) + ")";
      return false;
    }
    if (gr.kind == GpuKind::kMigNeed && !any_shape) {
      *err = "group " + pg.name + ": no MIG profile offers " + std::to_string(gr.memory_mib) + "MiB and " +
             std::to_string(gr.compute_slices) + "/7 compute";
      return false;
    }
    d.share_mib = gr.memory_mib;
    d.share_permille = gr.memory_permille;
    d.cores = gr.cores_percent;
    d.isolated = gr.isolated;
    return true;
  }

  // See Cluster::CanEverHost.
  bool CanEverHost(const GangRequest& req, std::string* why) const {
    Ctx c;
    c.req = &req;
    InitFilters(c, req);
    // Only the nodes asked for (a flavor's nodes): the cost is theirs, not the cluster's.
    const std::vector<int32_t>& scan = req.only_nodes.empty() ? all_nodes_ : req.only_nodes;
    const auto G = static_cast<int32_t>(req.groups.size());
    for (int32_t g = 0; g < G; ++g) {
      const PodGroup& pg = req.groups[g];
      Demand d;
      std::string bad;
      if (!ResolveDemand(pg, g, &d, &bad)) {
        *why = bad;
        return false;
      }
      std::array<int64_t, static_cast<int>(FilterReason::kCount)> filtered{};
      std::map<std::string, int64_t> small;
      int64_t considered = 0;
      bool ok = false;
      for (int32_t node : scan) {
        if (node < 0 || node >= static_cast<int32_t>(nodes_.size())) continue;
        ++considered;
        const NodeState& n = nodes_[node];
        FilterReason v = Verdict(c, g, n.klass);
        if (v == FilterReason::kOk && c.pinned[g] != -1 && c.pinned[g] != node)
          v = FilterReason::kNodeSelector;
        if (v == FilterReason::kOk && !HostAffinityOk(c, g, node)) v = FilterReason::kNodeAffinity;
        if (!n.ready) v = FilterReason::kNotReady;
        if (v != FilterReason::kOk) {
          ++filtered[static_cast<int>(v)];
          continue;
        }
        if (capacity_->Fit(n, d, true, 1) > 0) {
          ok = true;
          break;
        }
        ++small[capacity_->Explain(n, d, resource_names_, true).limit];
      }
      if (ok) continue;
      std::string parts;
      auto add = [&](const std::string& p) { parts += (parts.empty() ? "" : ", ") + p; };
      for (int i = 1; i < static_cast<int>(FilterReason::kCount); ++i) {
        if (filtered[i] > 0)
          add(Plural(filtered[i], "node") + " " + FilterReasonText(static_cast<FilterReason>(i)));
      }
      for (const auto& [what, k] : small)
        add(Plural(k, "node") + " too small even when empty (" + what + ")");
      *why = considered == 0 ? "no node" : "no node takes one pod of " + pg.name + ": " + parts;
      return false;
    }
    return true;
  }

  // See Cluster::PreemptionScopes.
  std::vector<int32_t> PreemptionScopes(const GangRequest& req) const {
    std::vector<int32_t> scope(nodes_.size(), -1);
    if (req.groups.empty()) return scope;
    Ctx c;
    c.req = &req;
    if (!req.only_nodes.empty()) {
      c.allowed.assign(nodes_.size(), 0);
      for (int32_t n : req.only_nodes) {
        if (n >= 0 && n < static_cast<int32_t>(nodes_.size())) c.allowed[n] = 1;
      }
    }
    InitFilters(c, req);
    const Topo* topo = nullptr;
    int32_t level = -1;
    if (!req.topology.empty() && !req.constraint.required_level.empty()) {
      for (const Topo& t : topos_) {
        if (t.name == req.topology) topo = &t;
      }
      if (topo != nullptr) level = LevelIndex(*topo, req.constraint.required_level);
    }
    const auto G = static_cast<int32_t>(req.groups.size());
    for (int32_t node = 0; node < static_cast<int32_t>(nodes_.size()); ++node) {
      bool usable = false;
      for (int32_t g = 0; g < G && !usable; ++g) usable = Eligible(c, g, node);
      if (!usable) continue;
      scope[node] = level >= 0 ? topo->node_domain[level][node] : node;
    }
    return scope;
  }

  PlaceResult Place(const GangRequest& req) {
    if (!req.group_constraints.empty() && req.constraint.empty()) return PlacePerGroup(req);
    Ctx c;
    c.req = &req;
    if (!req.only_nodes.empty()) {
      c.allowed.assign(nodes_.size(), 0);
      for (int32_t n : req.only_nodes) {
        if (n >= 0 && n < static_cast<int32_t>(nodes_.size())) c.allowed[n] = 1;
      }
    }
    if (req.groups.empty()) return Infeasible("the gang has no pod groups");
    auto G = static_cast<int32_t>(req.groups.size());
    // 1. Resolve demands.
    int64_t whole_needed = 0;
    for (int32_t g = 0; g < G; ++g) {
      const PodGroup& pg = req.groups[g];
      if (pg.count < 0 || pg.min() > pg.count) {
        return Infeasible("group " + pg.name + ": count " + std::to_string(pg.count) + " with min " +
                          std::to_string(pg.min()));
      }
      Demand d;
      std::string bad;
      if (!ResolveDemand(pg, g, &d, &bad)) return Infeasible(std::move(bad));
      const GpuRequest& gr = pg.gpu;
      if (gr.kind == GpuKind::kWhole) whole_needed += int64_t{pg.min()} * gr.count;
      c.demands.push_back(std::move(d));
    }
    // 2. Topology.
    if (!req.topology.empty()) {
      for (const Topo& t : topos_) {
        if (t.name == req.topology) c.topo = &t;
      }
      if (c.topo == nullptr) return Infeasible("unknown topology " + req.topology);
    } else if (!req.constraint.empty()) {
      return Infeasible("a topology constraint needs the gang's topology");
    }
    if (c.topo != nullptr) {
      auto level = [&](const std::string& name, int32_t* out) {
        if (name.empty()) return true;
        *out = LevelIndex(*c.topo, name);
        return *out >= 0;
      };
      if (!level(req.constraint.required_level, &c.required) ||
          !level(req.constraint.preferred_level, &c.preferred) ||
          !level(req.constraint.slice_level, &c.slice)) {
        return Infeasible("topology " + c.topo->name + " has no level named in the constraint");
      }
      if (c.slice >= 0 && req.constraint.slice_size <= 0)
        return Infeasible("slice level without a slice size");
    }
    const Topo* tie_topo = c.topo != nullptr ? c.topo : (topos_.empty() ? nullptr : &topos_[0]);
    if (tie_topo != nullptr) c.tie = DomainView{&tie_topo->node_domain, &tie_topo->domain_pods};
    c.scorer = req.score == ScorePolicy::kSpread ? spread_.get() : binpack_.get();
    c.share = req.score == ScorePolicy::kSpread ? share_spread_.get() : share_binpack_.get();
    // 4. Static filters per class.
    InitFilters(c, req);
    // 4b. Early out on aggregates.
    if (whole_needed > free_whole_) {
      // With a required topology, the gang is also infeasible when no domain
      // of the required level has that many GPUs at all.
      int64_t domain_capacity = whole_capacity_;
      if (c.required >= 0) {
        std::vector<int64_t> cap(c.topo->domain_label[c.required].size(), 0);
        for (int32_t node : all_nodes_) {
          int32_t dom = c.topo->node_domain[c.required][node];
          if (dom >= 0) cap[dom] += nodes_[node].whole_total;
        }
        domain_capacity = cap.empty() ? 0 : *std::max_element(cap.begin(), cap.end());
      }
      PlaceResult r;
      r.outcome = whole_needed > domain_capacity ? PlaceOutcome::kInfeasible : PlaceOutcome::kUnschedulable;
      r.reason = "the gang needs " + std::to_string(whole_needed) +
                 " whole nvidia.com/gpu; the cluster has " + std::to_string(free_whole_) + " free of " +
                 std::to_string(whole_capacity_);
      if (c.required >= 0) {
        r.reason +=
            "; the largest " + c.topo->levels[c.required] + " domain has " + std::to_string(domain_capacity);
      }
      return r;
    }
    c.placement.placed.assign(G, 0);
    if (!req.group_constraints.empty()) return PlaceGroupsInDomain(c);
    // 5. Search.
    size_t cp = log_.size();
    bool ok = SearchMost(c);
    if (!ok || !keep_ops_) RollbackTo(cp);
    if (!ok) return Diagnose(c);
    if (keep_ops_) kept_demands_.push_back(std::move(c.demands));  // the kept ops point into them
    PlaceResult r;
    r.outcome = PlaceOutcome::kPlaced;
    r.placement = std::move(c.placement);
    r.placement.group_requests.reserve(G);
    for (const PodGroup& pg : req.groups) r.placement.group_requests.push_back(pg.requests);
    return r;
  }

  // ---------------------------------------------- Kueue TAS (BestFit)
  //
  // Kueue's topology assignment for one pod set (kueue_tas.h), used for
  // one-group gangs that ask for all their pods under a required or
  // preferred level or slices. Returns false (nothing placed) if Kueue's
  // algorithm finds no assignment or a node rejects a pod.
  bool KueueTasApplies(const Ctx& c) const {
    if (c.topo == nullptr || c.demands.size() != 1 || c.req->score != ScorePolicy::kBinpack) return false;
    if (c.required >= 0 && c.preferred >= 0) return false;  // KAI's required + preferred: not a Kueue request
    const PodGroup& pg = c.req->groups[0];
    if (pg.min() != pg.count || c.req->min_member > pg.count || pg.count <= 0) return false;
    const int32_t size = c.slice >= 0 ? c.req->constraint.slice_size : 1;
    return size > 0 && pg.count % size == 0;
  }

  bool PlaceKueueTas(Ctx& c) {
    const Topo& t = *c.topo;
    const auto L = static_cast<int32_t>(t.levels.size());
    const Demand& d = c.demands[0];
    KueueTasRequest k;
    k.count = c.req->groups[0].count;
    k.slice_size = c.slice >= 0 ? c.req->constraint.slice_size : 1;
    k.slice_level = c.slice >= 0 ? c.slice : L - 1;
    k.required = c.required >= 0;
    k.unconstrained = c.required < 0 && c.preferred < 0;  // slices only
    k.level = k.required ? c.required : (c.preferred >= 0 ? c.preferred : 0);
    if (k.level > k.slice_level) return false;
    std::vector<int64_t> leaf_pods(t.domain_label[L - 1].size(), 0);
    for (int32_t node : all_nodes_) {
      int32_t dom = t.node_domain[L - 1][node];
      if (dom < 0 || !Eligible(c, 0, node) || !QuickFits(nodes_[node], d)) continue;
      // Not capped at the count: Kueue ranks domains by all they could hold.
      leaf_pods[dom] += capacity_->Fit(nodes_[node], d, false, std::numeric_limits<int32_t>::max());
    }
    std::optional<KueueTasAssignment> cur = AssignKueueTas(t, all_nodes_, node_labels_, leaf_pods, k);
    if (!cur) return false;
    for (const auto& [dom, n] : *cur) {
      if (PlaceGroup(c, 0, t.domain_nodes[L - 1][dom], static_cast<int32_t>(n)) != n) return false;
    }
    return MinsMet(c);
  }

  // Each group on its own, in order, each seeing the pods of the groups
  // before it; the result is one placement (or the first group's failure).
  PlaceResult PlacePerGroup(const GangRequest& req) {
    if (req.group_constraints.size() != req.groups.size())
      return Infeasible("one topology constraint per group expected");
    const size_t cp = log_.size();
    const bool keep = keep_ops_;
    keep_ops_ = true;
    PlaceResult out;
    out.outcome = PlaceOutcome::kPlaced;
    out.placement.placed.assign(req.groups.size(), 0);
    for (size_t g = 0; g < req.groups.size(); ++g) {
      GangRequest sub;
      sub.groups = {req.groups[g]};
      sub.flavor_node_labels = req.flavor_node_labels;
      sub.flavor_tolerations = req.flavor_tolerations;
      sub.topology = req.topology;
      sub.constraint = req.group_constraints[g];
      sub.score = req.score;
      sub.only_nodes = req.only_nodes;
      PlaceResult r = Place(sub);
      if (!r.ok()) {
        keep_ops_ = keep;
        RollbackTo(cp);
        if (!keep_ops_) kept_demands_.clear();
        r.reason = "pod set " + req.groups[g].name + ": " + r.reason;
        return r;
      }
      for (PodPlacement& pod : r.placement.pods) {
        pod.group = static_cast<int32_t>(g);
        out.placement.pods.push_back(std::move(pod));
      }
      out.placement.placed[g] = r.placement.placed[0];
      out.placement.group_requests.push_back(req.groups[g].requests);
    }
    keep_ops_ = keep;
    if (!keep_ops_) {
      RollbackTo(cp);
      kept_demands_.clear();
    }
    int64_t total = 0;
    for (int32_t n : out.placement.placed) total += n;
    if (total < req.min_member) {
      out = PlaceResult{};
      out.outcome = PlaceOutcome::kUnschedulable;
      out.reason = "the gang minimum " + std::to_string(req.min_member) +
                   " is not met: " + std::to_string(total) + " pods placed";
    }
    return out;
  }

  // A gang constraint with per-group constraints (KAI subgroups): the gang
  // takes one domain of its constraint (levels and domains ordered as in
  // Search), and every group is placed inside that domain under its own
  // constraint. Only a preference: at the end, the groups anywhere.
  PlaceResult PlaceGroupsInDomain(Ctx& c) {
    GangRequest sub = *c.req;
    sub.constraint = TopologyConstraint{};
    PlaceResult last;
    last.outcome = PlaceOutcome::kUnschedulable;
    last.reason = "no domain of the gang's topology holds every group";
    const bool slack = HasSlack(c);
    int64_t size = 0, best_placed = -1;
    for (const PodGroup& pg : c.req->groups) size += pg.count;
    std::optional<PlaceResult> best;
    if (c.topo != nullptr && (c.required >= 0 || c.preferred >= 0)) {
      for (int32_t level :
           LevelsToTry(c.required, c.preferred, static_cast<int32_t>(c.topo->levels.size()))) {
        Estimate e = Estimates(c, level, false);
        for (const DomainCandidate& dc : Candidates(c, level, e)) {
          sub.only_nodes.clear();
          for (int32_t n : c.topo->domain_nodes[level][dc.domain]) {
            if (c.allowed.empty() || c.allowed[n]) sub.only_nodes.push_back(n);
          }
          if (sub.only_nodes.empty()) continue;
          PlaceResult r = PlacePerGroup(sub);
          if (r.ok()) {
            // With a minimum below the gang's size, the domain that holds the
            // most pods wins (see SearchMost); the first of those on ties.
            if (!slack) return r;
            int64_t placed = 0;
            for (int32_t n : r.placement.placed) placed += n;
            if (placed > best_placed) {
              best_placed = placed;
              best = std::move(r);
            }
            if (best_placed == size) return *best;
            continue;
          }
          last = std::move(r);
          // Judged inside one domain: another (or this one, emptier) may do.
          if (last.outcome == PlaceOutcome::kInfeasible) last.outcome = PlaceOutcome::kUnschedulable;
          last.reason =
              c.topo->levels[level] + " " + c.topo->domain_label[level][dc.domain] + ": " + last.reason;
        }
      }
      if (best && c.required >= 0) return *best;
      if (c.required >= 0) return last;
    }
    sub.only_nodes = c.req->only_nodes;
    PlaceResult anywhere = PlacePerGroup(sub);
    if (best) {
      // Only a preference: the groups anywhere, if that holds more pods.
      int64_t placed = 0;
      if (anywhere.ok()) {
        for (int32_t n : anywhere.placement.placed) placed += n;
      }
      return placed > best_placed ? anywhere : *best;
    }
    return anywhere;
  }

  // ------------------------------------------- partial placement (most pods)
  //
  // A gang whose minimum is below its size (a group's `min_count` below its
  // count, or `min_member` below the sum of the counts) under a required or
  // preferred level gets the most pods that fit, as Kueue's partial admission
  // does (pkg/scheduler/flavorassigner/podset_reducer.go, PodSetReducer: the
  // full counts first; only when they do not fit, the smallest reduction
  // that fits). Each probe is the all-or-nothing search at fixed counts
  // (`SearchAt`), so the tie-breaks among placements of one size (preferred
  // level first, best-fit domain, Kueue's TAS assignment) stay those of the
  // full-count search. The reduction is spent from the last group towards
  // the first, each down to its minimum; a binary search finds the smallest
  // reduction that fits (fewer pods fit wherever more do); then, with two or
  // more groups reduced, each group in order grows back as far as it still
  // fits. Without a topology constraint the greedy search already places as
  // many pods as fit, so it runs as before.
  bool HasSlack(const Ctx& c) const {
    int64_t total = 0;
    bool slack = false;
    for (const PodGroup& pg : c.req->groups) {
      total += pg.count;
      slack = slack || pg.min() < pg.count;
    }
    return slack && c.req->min_member < total;
  }

  // Search with every group at exactly `counts` pods.
  bool SearchAt(Ctx& c, const std::vector<int32_t>& counts) {
    GangRequest fixed = *c.req;
    for (size_t g = 0; g < counts.size(); ++g) {
      fixed.groups[g].count = counts[g];
      fixed.groups[g].min_count = counts[g];
    }
    fixed.min_member = 0;
    const GangRequest* own = c.req;
    c.req = &fixed;
    bool ok = Search(c);
    c.req = own;
    return ok;
  }

  // SearchAt, undone: does the gang fit at `counts`?
  bool FitsAt(Ctx& c, const std::vector<int32_t>& counts) {
    size_t log_cp = log_.size(), pods_cp = c.placement.pods.size();
    bool ok = SearchAt(c, counts);
    Truncate(c, log_cp, pods_cp);
    return ok;
  }

  bool SearchMost(Ctx& c) {
    if (c.topo == nullptr || (c.required < 0 && c.preferred < 0) || !HasSlack(c)) return Search(c);
    const auto G = static_cast<int32_t>(c.req->groups.size());
    std::vector<int32_t> full(G), deltas(G);
    int64_t total = 0, total_delta = 0;
    for (int32_t g = 0; g < G; ++g) {
      const PodGroup& pg = c.req->groups[g];
      full[g] = pg.count;
      deltas[g] = pg.count - pg.min();
      total += pg.count;
      total_delta += deltas[g];
    }
    const int64_t budget = std::min(total_delta, total - std::max<int64_t>(c.req->min_member, 0));
    auto cut = [&](int64_t amount) {
      std::vector<int32_t> counts = full;
      for (int32_t g = G - 1; g >= 0 && amount > 0; --g) {
        int64_t take = std::min<int64_t>(deltas[g], amount);
        counts[g] -= static_cast<int32_t>(take);
        amount -= take;
      }
      return counts;
    };
    {
      size_t log_cp = log_.size(), pods_cp = c.placement.pods.size();
      if (SearchAt(c, full)) return true;
      Truncate(c, log_cp, pods_cp);
    }
    std::vector<int32_t> best;
    {
      int64_t lo = 1, hi = budget;
      while (lo <= hi) {
        int64_t mid = lo + (hi - lo) / 2;
        std::vector<int32_t> counts = cut(mid);
        if (FitsAt(c, counts)) {
          best = std::move(counts);
          hi = mid - 1;
        } else {
          lo = mid + 1;
        }
      }
      if (best.empty()) return false;
      int32_t reduced = 0;
      for (int32_t g = 0; g < G; ++g) reduced += best[g] < full[g] ? 1 : 0;
      for (int32_t g = 0; reduced >= 2 && g < G; ++g) {
        if (best[g] == full[g]) continue;
        std::vector<int32_t> trial = best;
        int32_t lo_g = best[g] + 1, hi_g = full[g];
        while (lo_g <= hi_g) {  // the largest count of g that still fits
          int32_t mid = lo_g + (hi_g - lo_g) / 2;
          trial[g] = mid;
          if (FitsAt(c, trial)) {
            best[g] = mid;
            lo_g = mid + 1;
          } else {
            hi_g = mid - 1;
          }
        }
      }
    }
    return SearchAt(c, best);
  }

  bool Search(Ctx& c) {
    if (c.topo == nullptr || (c.required < 0 && c.preferred < 0 && c.slice < 0))
      return PlaceInScope(c, all_nodes_);
    if (KueueTasApplies(c)) {
      size_t log_cp = log_.size(), pods_cp = c.placement.pods.size();
      if (PlaceKueueTas(c)) return true;
      Truncate(c, log_cp, pods_cp);
    }
    if (c.required < 0 && c.preferred < 0) return PlaceInScope(c, all_nodes_);
    for (int32_t level : LevelsToTry(c.required, c.preferred, static_cast<int32_t>(c.topo->levels.size()))) {
      Estimate e = Estimates(c, level, false);
      for (const DomainCandidate& dc : Candidates(c, level, e)) {
        size_t log_cp = log_.size(), pods_cp = c.placement.pods.size();
        if (PlaceInScope(c, c.topo->domain_nodes[level][dc.domain])) return true;
        Truncate(c, log_cp, pods_cp);
      }
    }
    if (c.required >= 0) return false;
    return PlaceAcross(c, c.preferred);
  }

  // ------------------------------------------------------ commit/release
  Status Commit(std::string key, const Placement& p) {
    if (committed_.count(key)) return AlreadyExists("placement " + key + " already committed");
    Committed rec;
    rec.res.resize(p.group_requests.size());
    for (size_t g = 0; g < p.group_requests.size(); ++g) {
      for (const auto& [name, amount] : p.group_requests[g]) {
        if (amount == 0 || IsGpuResource(name)) continue;
        auto it = resource_index_.find(name);
        if (it == resource_index_.end()) {
          if (IsStandardResource(name)) continue;
          return FailedPrecondition("placement " + key + ": no node has " + name);
        }
        rec.res[g].emplace_back(it->second, amount);
      }
      if (auto it = resource_index_.find("pods");
          it != resource_index_.end() && !p.group_requests[g].count("pods")) {
        rec.res[g].emplace_back(it->second, kMilli);
      }
    }
    // Not a structured binding: the lambda below uses `it`, which clang 14
    // (the fuzz build) refuses for a binding.
    auto emplaced = committed_.emplace(std::move(key), std::move(rec));
    auto it = emplaced.first;
    Committed& c = it->second;
    size_t cp = log_.size();
    auto fail = [&](const std::string& why) {
      RollbackTo(cp);
      std::string k = it->first;
      committed_.erase(it);
      return FailedPrecondition("placement " + k + " no longer fits: " + why);
    };
    for (const PodPlacement& pp : p.pods) {
      if (pp.node < 0 || pp.node >= static_cast<int32_t>(nodes_.size()) || pp.group < 0 ||
          pp.group >= static_cast<int32_t>(c.res.size())) {
        return fail("bad node or group index");
      }
      const std::string& nn = nodes_[pp.node].name;
      Op pod{OpKind::kPod};
      pod.node = pp.node;
      pod.res = &c.res[pp.group];
      if (!DoLogged(pod)) return fail("node " + nn + " lacks the requested resources");
      for (int32_t gi : pp.gpus) {
        Op op{OpKind::kWhole};
        op.node = pp.node;
        op.gpu = gi;
        if (!DoLogged(op)) return fail("GPU " + std::to_string(gi) + " of " + nn + " is not free");
      }
      for (const ShareAssignment& s : pp.shares) {
        Op op{OpKind::kShare};
        op.node = pp.node;
        op.gpu = s.gpu;
        op.mib = s.memory_mib;
        op.cores = s.cores_percent;
        op.isolated = s.isolated;
        if (!DoLogged(op))
          return fail("GPU " + std::to_string(s.gpu) + " of " + nn + " cannot take the share");
      }
      for (const MigAssignment& m : pp.mig) {
        if (m.gpu < 0 || m.gpu >= static_cast<int32_t>(nodes_[pp.node].gpus.size()))
          return fail("bad GPU index");
        int model = nodes_[pp.node].gpus[m.gpu].model;
        Op op{OpKind::kMigDestroy};
        op.node = pp.node;
        op.gpu = m.gpu;
        for (const MigInstanceSpec& v : m.destroy) {
          op.shape = static_cast<int8_t>(FindProfile(model, v.profile));
          op.start = static_cast<int8_t>(v.start);
          if (op.shape < 0 || !DoLogged(op))
            return fail("MIG instance " + v.profile + "@" + std::to_string(v.start) + " on " + nn +
                        " is busy or gone");
        }
        op.shape = static_cast<int8_t>(FindProfile(model, m.profile));
        op.start = static_cast<int8_t>(m.start);
        if (op.shape < 0) return fail("unknown MIG profile " + m.profile);
        op.kind = OpKind::kMigCreate;
        if (m.create && !DoLogged(op))
          return fail("cannot create " + m.profile + "@" + std::to_string(m.start) + " on " + nn);
        op.kind = OpKind::kMigBusy;
        if (!DoLogged(op))
          return fail("MIG instance " + m.profile + "@" + std::to_string(m.start) + " on " + nn +
                      " is not idle");
      }
    }
    c.ops.assign(log_.begin() + static_cast<std::ptrdiff_t>(cp), log_.end());
    log_.resize(cp);
    return Status::Ok();
  }

  Status Release(std::string_view key) {
    auto it = committed_.find(std::string(key));
    if (it == committed_.end()) return NotFound("no placement committed under " + std::string(key));
    const std::vector<Op>& ops = it->second.ops;
    for (auto op = ops.rbegin(); op != ops.rend(); ++op) {
      // The MIG layout stays: created instances become idle, destroyed ones stay gone.
      if (op->kind == OpKind::kMigCreate || op->kind == OpKind::kMigDestroy) continue;
      Undo(*op);
    }
    committed_.erase(it);
    return Status::Ok();
  }

  // ------------------------------------------------------ introspection
  std::vector<std::string> Layout(int32_t node, int32_t gpu, bool busy_only) const {
    std::vector<std::string> out;
    if (node < 0 || node >= static_cast<int32_t>(nodes_.size())) return out;
    const NodeState& n = nodes_[node];
    if (gpu < 0 || gpu >= static_cast<int32_t>(n.gpus.size())) return out;
    const GpuState& g = n.gpus[gpu];
    for (const MigInstance& in : g.instances) {
      if (busy_only && !in.busy) continue;
      out.push_back(std::string(GpuModel(g.model).profile[in.shape]) + "@" + std::to_string(in.start));
    }
    return out;
  }

  Status CheckInvariants() const {
    int64_t free_whole = 0, busy_slices = 0;
    for (const NodeState& n : nodes_) {
      std::string where = "node " + n.name;
      for (size_t r = 0; r < n.used.size(); ++r) {
        if (n.used[r] < 0 || (n.alloc[r] != kUnlimited && n.used[r] > n.alloc[r])) {
          return FailedPrecondition(where + ": " + resource_names_[r] + " over capacity");
        }
      }
      int64_t fw = 0, nb = 0, share_mem = 0;
      for (size_t gi = 0; gi < n.gpus.size(); ++gi) {
        const GpuState& g = n.gpus[gi];
        std::string gw = where + " GPU " + std::to_string(gi);
        if (g.WholeFree()) ++fw;
        if (g.whole_used && g.shares > 0) return FailedPrecondition(gw + ": whole and shared");
        if (g.share_mem_mib > g.memory_mib || g.shares > g.max_shares || g.share_cores > 100) {
          return FailedPrecondition(gw + ": shares over capacity");
        }
        share_mem += g.share_mem_mib;
        uint8_t mask = 0, busy = 0;
        int compute = 0, media = 0;
        for (const MigInstance& in : g.instances) {
          if (!(Shape(in.shape).start_mask & (1u << in.start)))
            return FailedPrecondition(gw + ": invalid start slot");
          uint8_t m = SliceMask(in.shape, in.start);
          if (mask & m) return FailedPrecondition(gw + ": overlapping MIG instances");
          mask |= m;
          if (in.busy) busy |= m;
          compute += Shape(in.shape).compute;
          media += Shape(in.shape).media ? 1 : 0;
          if (Shape(in.shape).slices == kMigMemorySlices && g.instances.size() != 1) {
            return FailedPrecondition(gw + ": 7g with other instances");
          }
        }
        if (!g.instances.empty() && !g.mig)
          return FailedPrecondition(gw + ": MIG instances without MIG mode");
        if (compute > kMigComputeSlices || media > 1)
          return FailedPrecondition(gw + ": compute or media over limit");
        if (mask != g.mask || busy != g.busy_mask || compute != g.compute) {
          return FailedPrecondition(gw + ": MIG bookkeeping mismatch");
        }
        nb += __builtin_popcount(busy);
      }
      if (fw != n.free_whole) return FailedPrecondition(where + ": free whole GPU count mismatch");
      if (nb != n.mig_busy_slices) return FailedPrecondition(where + ": busy MIG slice count mismatch");
      if (share_mem != n.share_mem_used) return FailedPrecondition(where + ": share memory mismatch");
      if (n.ready) free_whole += fw;
      busy_slices += nb;
    }
    if (free_whole != free_whole_) return FailedPrecondition("cluster free whole GPU count mismatch");
    if (busy_slices != mig_busy_slices_) return FailedPrecondition("cluster busy MIG slice count mismatch");
    if (!log_.empty()) return FailedPrecondition("scratch log not empty");
    return Status::Ok();
  }

  ClusterOptions options_;
  std::shared_ptr<const StaticFilter> static_filter_;
  std::shared_ptr<const CapacityFilter> capacity_;
  std::shared_ptr<const NodeScorer> binpack_;
  std::shared_ptr<const NodeScorer> spread_;
  std::shared_ptr<const TieBreaker> tiebreak_;
  std::shared_ptr<const MigSlotPolicy> mig_policy_;
  std::shared_ptr<const ShareSlotPolicy> share_binpack_;
  std::shared_ptr<const ShareSlotPolicy> share_spread_;
  std::shared_ptr<const DomainChooser> domains_;

  std::vector<NodeState> nodes_;
  std::vector<std::map<std::string, std::string>> node_labels_;
  std::vector<int32_t> all_nodes_;
  std::unordered_map<std::string, int32_t> node_index_;
  std::vector<std::string> resource_names_;
  std::unordered_map<std::string, int32_t> resource_index_;
  std::vector<NodeClass> classes_;
  std::vector<std::string> class_labels_keyed_;
  std::unordered_map<std::string, int32_t> class_index_;
  std::vector<Topo> topos_;
  std::unordered_map<std::string, Committed> committed_;
  std::vector<Op> log_;
  std::vector<Cand> scratch_cands_;
  std::vector<std::vector<int32_t>> free_bucket_{1};  // [free whole GPUs] -> nodes, any order
  std::vector<int32_t> bucket_pos_;                   // [node] -> position in its bucket
  std::vector<uint32_t> load_stamp_;                  // [node] == stamp_: already in the heap
  uint32_t stamp_ = 0;
  NodeState probe_;
  int64_t free_whole_ = 0;
  int64_t whole_capacity_ = 0;
  int64_t mig_busy_slices_ = 0;
  int64_t mig_total_slices_ = 0;
};

// ------------------------------------------------------------- Cluster

Cluster::Cluster(ClusterOptions options) : impl_(std::make_unique<ClusterImpl>(options)) {}
Cluster::~Cluster() = default;
Cluster::Cluster(Cluster&&) noexcept = default;
Cluster& Cluster::operator=(Cluster&&) noexcept = default;

Cluster::Cluster(const Cluster& other) : impl_(std::make_unique<ClusterImpl>(*other.impl_)) {
  // Committed ops point at resource vectors inside the committed records;
  // re-point them at this copy's records.
  for (auto& [key, rec] : impl_->committed_) {
    const Committed& src = other.impl_->committed_.at(key);
    for (Op& op : rec.ops) {
      if (op.kind != OpKind::kPod) continue;
      size_t g = static_cast<size_t>(op.res - src.res.data());
      op.res = &rec.res[g];
    }
  }
}
Cluster& Cluster::operator=(const Cluster& other) {
  if (this != &other) *this = Cluster(other);
  return *this;
}

Status Cluster::AddNode(NodeSpec spec) { return impl_->AddNode(std::move(spec)); }
Status Cluster::AddTopology(TopologyLevels topology) { return impl_->AddTopology(std::move(topology)); }
Status Cluster::SetReady(std::string_view node, bool ready) { return impl_->SetReady(node, ready); }
PlaceResult Cluster::Place(const GangRequest& request) { return impl_->Place(request); }
Status Cluster::Commit(std::string key, const Placement& placement) {
  return impl_->Commit(std::move(key), placement);
}
Status Cluster::Release(std::string_view key) { return impl_->Release(key); }
bool Cluster::Holds(std::string_view key) const { return impl_->committed_.count(std::string(key)) > 0; }
int32_t Cluster::node_count() const { return static_cast<int32_t>(impl_->nodes_.size()); }
const std::string& Cluster::node_name(int32_t node) const { return impl_->nodes_.at(node).name; }
int32_t Cluster::FindNode(std::string_view name) const { return impl_->FindNode(name); }
const std::string& Cluster::gpu_uuid(int32_t node, int32_t gpu) const {
  return impl_->nodes_.at(node).gpu_uuids.at(gpu);
}
std::string Cluster::MigUuid(int32_t node, int32_t gpu, std::string_view profile, int32_t start) const {
  return "MIG-" + gpu_uuid(node, gpu) + "-" + std::string(profile) + "-" + std::to_string(start);
}
std::vector<std::string> Cluster::MigLayout(int32_t node, int32_t gpu) const {
  return impl_->Layout(node, gpu, false);
}
std::vector<std::string> Cluster::BusyMigInstances(int32_t node, int32_t gpu) const {
  return impl_->Layout(node, gpu, true);
}
std::string Cluster::VisibleDevices(const PodPlacement& pod) const {
  std::string out;
  auto add = [&](const std::string& s) { out += (out.empty() ? "" : ",") + s; };
  for (int32_t g : pod.gpus) add(gpu_uuid(pod.node, g));
  for (const ShareAssignment& s : pod.shares) add(gpu_uuid(pod.node, s.gpu));
  for (const MigAssignment& m : pod.mig) add(MigUuid(pod.node, m.gpu, m.profile, m.start));
  return out;
}
int64_t Cluster::FreeWholeGpus() const { return impl_->free_whole_; }
int64_t Cluster::MigBusySlices() const { return impl_->mig_busy_slices_; }
int64_t Cluster::MigTotalSlices() const { return impl_->mig_total_slices_; }
Status Cluster::CheckInvariants() const { return impl_->CheckInvariants(); }
bool Cluster::CanEverHost(const GangRequest& request, std::string* why) const {
  return impl_->CanEverHost(request, why);
}

std::vector<int32_t> Cluster::PreemptionScopes(const GangRequest& request) const {
  return impl_->PreemptionScopes(request);
}

}  // namespace artel::core::placement
