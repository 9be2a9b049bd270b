#include "naive_scheduler.h"

#include <algorithm>
#include <cassert>
#include <limits>
#include <set>

namespace artel::proptest {

using core::Amount;

// ---------------------------------------------------------------------------
// NaiveQuotaTree

NaiveQuotaTree::NaiveQuotaTree(const core::Config& c) {
  auto add_groups = [](NodeInfo& n, const std::vector<core::ResourceGroupSpec>& groups) {
    for (const auto& g : groups) {
      for (const auto& fq : g.flavors) {
        for (const auto& rq : fq.resources) {
          n.quota[{fq.flavor, rq.name}] = Quota{rq.nominal, rq.borrowing_limit, rq.lending_limit};
        }
      }
    }
  };
  for (const auto& co : c.cohorts) {
    NodeInfo& n = nodes_[co.name];
    n.cohort = true;
    n.parent = co.parent;
    add_groups(n, co.resource_groups);
  }
  // Implicit cohorts: named as a parent or by a ClusterQueue, never declared.
  for (const auto& co : c.cohorts) {
    if (!co.parent.empty() && !nodes_.count(co.parent)) nodes_[co.parent].cohort = true;
  }
  for (const auto& q : c.cluster_queues) {
    if (!q.cohort.empty() && !nodes_.count(q.cohort)) nodes_[q.cohort].cohort = true;
  }
  for (const auto& q : c.cluster_queues) {
    NodeInfo& n = nodes_[q.name];
    n.cohort = false;
    n.parent = q.cohort;
    add_groups(n, q.resource_groups);
  }
}

std::optional<std::string> NaiveQuotaTree::Parent(const std::string& node) const {
  const std::string& p = nodes_.at(node).parent;
  if (p.empty()) return std::nullopt;
  return p;
}

std::string NaiveQuotaTree::Root(const std::string& node) const {
  std::string n = node;
  while (auto p = Parent(n)) n = *p;
  return n;
}

std::vector<std::string> NaiveQuotaTree::Children(const std::string& node) const {
  std::vector<std::string> out;
  for (const auto& [name, info] : nodes_) {
    if (info.parent == node) out.push_back(name);
  }
  return out;
}

std::vector<std::string> NaiveQuotaTree::Nodes() const {
  std::vector<std::string> out;
  for (const auto& [name, info] : nodes_) out.push_back(name);
  return out;
}

std::vector<FlavorResource> NaiveQuotaTree::FlavorResources() const {
  std::set<FlavorResource> s;
  for (const auto& [name, info] : nodes_) {
    for (const auto& [fr, q] : info.quota) s.insert(fr);
  }
  for (const auto& [cq, m] : usage_) {
    for (const auto& [fr, a] : m) s.insert(fr);
  }
  return {s.begin(), s.end()};
}

const NaiveQuotaTree::Quota* NaiveQuotaTree::QuotaOf(const std::string& n, const FlavorResource& fr) const {
  const auto& q = nodes_.at(n).quota;
  auto it = q.find(fr);
  return it == q.end() ? nullptr : &it->second;
}

Amount NaiveQuotaTree::Nominal(const std::string& n, const FlavorResource& fr) const {
  const Quota* q = QuotaOf(n, fr);
  return q ? q->nominal : 0;
}

std::optional<Amount> NaiveQuotaTree::BorrowingLimit(const std::string& n, const FlavorResource& fr) const {
  const Quota* q = QuotaOf(n, fr);
  return q ? q->borrowing_limit : std::nullopt;
}

std::optional<Amount> NaiveQuotaTree::LendingLimit(const std::string& n, const FlavorResource& fr) const {
  const Quota* q = QuotaOf(n, fr);
  return q ? q->lending_limit : std::nullopt;
}

// subtreeQuota(CQ) = nominal; subtreeQuota(cohort) = nominal +
// sum_children (child.subtreeQuota - child.localQuota).
Amount NaiveQuotaTree::Subtree(const std::string& n, const FlavorResource& fr) const {
  Amount s = Nominal(n, fr);
  for (const auto& c : Children(n)) s += Subtree(c, fr) - Local(c, fr);
  return s;
}

// localQuota = max(0, subtreeQuota - lendingLimit) if lendingLimit set, else 0.
Amount NaiveQuotaTree::Local(const std::string& n, const FlavorResource& fr) const {
  auto ll = LendingLimit(n, fr);
  if (!ll) return 0;
  return std::max<Amount>(0, Subtree(n, fr) - *ll);
}

// What node `n` with `usage` draws from its parent: max(0, usage - localQuota).
Amount NaiveQuotaTree::Draw(const std::string& n, const FlavorResource& fr, Amount usage) const {
  return std::max<Amount>(0, usage - Local(n, fr));
}

// usage(CQ) = its workloads; usage(cohort) = sum_children max(0, child.usage - child.localQuota).
Amount NaiveQuotaTree::Usage(const std::string& n, const FlavorResource& fr) const {
  if (!nodes_.at(n).cohort) {
    auto it = usage_.find(n);
    if (it == usage_.end()) return 0;
    auto jt = it->second.find(fr);
    return jt == it->second.end() ? 0 : jt->second;
  }
  Amount u = 0;
  for (const auto& c : Children(n)) u += Draw(c, fr, Usage(c, fr));
  return u;
}

Amount NaiveQuotaTree::Available(const std::string& n, const FlavorResource& fr) const {
  auto parent = Parent(n);
  if (!parent) return Subtree(n, fr) - Usage(n, fr);
  Amount local = Local(n, fr), usage = Usage(n, fr);
  Amount from_parent = Available(*parent, fr);
  if (auto bl = BorrowingLimit(n, fr)) {
    from_parent = std::min(from_parent, (Subtree(n, fr) - local) - std::max<Amount>(0, usage - local) + *bl);
  }
  return std::max<Amount>(0, local - usage) + from_parent;
}

Amount NaiveQuotaTree::PotentialAvailable(const std::string& n, const FlavorResource& fr) const {
  auto parent = Parent(n);
  if (!parent) return Subtree(n, fr);
  Amount a = Local(n, fr) + PotentialAvailable(*parent, fr);
  if (auto bl = BorrowingLimit(n, fr)) a = std::min(a, Subtree(n, fr) + *bl);
  return a;
}

int NaiveQuotaTree::Height(const std::string& n) const {
  int h = 0;
  for (const auto& c : Children(n)) h = std::max(h, Height(c) + 1);
  return h;
}

NaiveQuotaTree::Level NaiveQuotaTree::BorrowingLevel(const std::string& cq, const FlavorResource& fr,
                                                     Amount amount) const {
  Level out;
  auto parent = Parent(cq);
  out.may_reclaim = parent.has_value();
  if (!parent || Usage(cq, fr) + amount <= Subtree(cq, fr)) return out;
  auto local_available = [&](const std::string& n) {
    return std::max<Amount>(0, Local(n, fr) - Usage(n, fr));
  };
  Amount remaining = amount - local_available(cq);
  for (std::optional<std::string> n = parent; n; n = Parent(*n)) {
    out.level = Height(*n);
    out.may_reclaim = Parent(*n).has_value();
    if (Usage(*n, fr) + remaining <= Subtree(*n, fr)) return out;
    remaining -= local_available(*n);
  }
  out.may_reclaim = false;
  return out;
}

// ---------------------------------------------------------------------------
// NaiveScheduler

NaiveScheduler::NaiveScheduler(core::Config config) : config_(std::move(config)) {}

void NaiveScheduler::Submit(const core::WorkloadSpec& spec, core::Time now) {
  Wl w;
  w.spec = spec;
  w.key = spec.ns + "/" + spec.name;
  if (spec.priority) {
    w.priority = *spec.priority;
  } else if (spec.priority_class) {
    for (const auto& pc : config_.priority_classes) {
      if (pc.name == *spec.priority_class) w.priority = pc.value;
    }
  }
  w.created = now;
  w.uid = next_uid_++;
  wls_.push_back(std::move(w));
}

void NaiveScheduler::Release(const Wl& released) {
  // BestEffortFIFO: a release anywhere in the cohort tree requeues the
  // parked workloads of that tree.
  const core::ClusterQueueSpec* cq = ClusterQueueOf(released);
  if (cq == nullptr) return;
  NaiveQuotaTree tree(config_);
  std::string root = tree.Root(cq->name);
  for (Wl& w : wls_) {
    if (w.state != State::kParked) continue;
    const core::ClusterQueueSpec* wcq = ClusterQueueOf(w);
    if (wcq != nullptr && tree.Root(wcq->name) == root) w.state = State::kPending;
  }
}

void NaiveScheduler::Finish(const std::string& key) {
  for (Wl& w : wls_) {
    if (w.key == key && w.state == State::kAdmitted) {
      w.state = State::kGone;
      Release(w);
      return;
    }
  }
  assert(false && "Finish of a workload that is not admitted");
}

void NaiveScheduler::Cancel(const std::string& key) {
  for (Wl& w : wls_) {
    if (w.key != key || w.state == State::kGone) continue;
    bool admitted = w.state == State::kAdmitted;
    w.state = State::kGone;
    if (admitted) Release(w);
    return;
  }
}

const core::ClusterQueueSpec* NaiveScheduler::ClusterQueueOf(const Wl& w) const {
  for (const auto& lq : config_.local_queues) {
    if (lq.ns != w.spec.ns || lq.name != w.spec.queue) continue;
    for (const auto& cq : config_.cluster_queues) {
      if (cq.name == lq.cluster_queue) return &cq;
    }
  }
  return nullptr;
}

NaiveQuotaTree NaiveScheduler::Tree(const std::vector<std::pair<std::string, FrMap>>& extra) const {
  std::map<std::string, FrMap> usage;
  for (const Wl& w : wls_) {
    if (w.state != State::kAdmitted) continue;
    for (const auto& [fr, a] : w.usage) usage[ClusterQueueOf(w)->name][fr] += a;
  }
  for (const auto& [cq, m] : extra) {
    for (const auto& [fr, a] : m) usage[cq][fr] += a;
  }
  NaiveQuotaTree tree(config_);
  tree.SetUsage(std::move(usage));
  return tree;
}

NaiveScheduler::Assignment NaiveScheduler::Assign(const NaiveQuotaTree& tree, const Wl& w,
                                                  const core::ClusterQueueSpec& cq,
                                                  const std::vector<int32_t>& counts) const {
  Assignment a;
  a.mode = Mode::kFit;
  FrMap acc;  // usage of earlier pod sets, per flavor-resource
  for (size_t i = 0; i < w.spec.pod_sets.size(); ++i) {
    const core::PodSetSpec& ps = w.spec.pod_sets[i];
    a.admission.counts.push_back(counts[i]);
    a.admission.flavors.emplace_back();
    for (const auto& group : cq.resource_groups) {
      // This pod set's total requests of the group's resources.
      std::vector<std::pair<std::string, Amount>> req;
      for (const auto& [res, per_pod] : ps.requests) {
        if (per_pod == 0) continue;
        if (std::find(group.covered_resources.begin(), group.covered_resources.end(), res) !=
            group.covered_resources.end())
          req.emplace_back(res, per_pod * counts[i]);
      }
      if (req.empty()) continue;
      struct Try {
        Mode mode = Mode::kNoFit;
        int level = 0;
        std::string flavor;
      };
      std::optional<Try> best;
      for (const auto& fq : group.flavors) {
        Try t;
        t.mode = Mode::kFit;
        t.flavor = fq.flavor;
        for (const auto& [res, total] : req) {
          FlavorResource fr{fq.flavor, res};
          Amount val = total + (acc.count(fr) ? acc.at(fr) : 0);
          Mode m;
          if (val > tree.PotentialAvailable(cq.name, fr)) {
            m = Mode::kNoFit;
          } else if (val <= tree.Available(cq.name, fr)) {
            m = Mode::kFit;
            t.level = std::max(t.level, tree.BorrowingLevel(cq.name, fr, val).level);
          } else if (val <= tree.Nominal(cq.name, fr) || tree.BorrowingLevel(cq.name, fr, val).may_reclaim) {
            // Would need preemption; every policy is Never, so there is no
            // candidate. It carries the level at which it would fit now.
            m = Mode::kNoCandidates;
            t.level = std::max(t.level, tree.BorrowingLevel(cq.name, fr, val).level);
          } else {
            m = Mode::kNoFit;
          }
          t.mode = std::min(t.mode, m);
        }
        bool better;
        if (!best) {
          better = true;
        } else if (t.mode != best->mode) {
          better = t.mode > best->mode;
        } else {
          better = t.mode == Mode::kFit && t.level < best->level;
        }
        if (better) best = t;
        bool stop = t.mode == Mode::kFit && (t.level == 0 || cq.flavor_fungibility.when_can_borrow ==
                                                                 core::FungibilityPolicy::kMayStopSearch);
        if (stop) break;
      }
      if (!best || best->mode == Mode::kNoFit) {
        a.mode = Mode::kNoFit;
        a.usage.clear();
        return a;
      }
      for (const auto& [res, total] : req) {
        a.admission.flavors[i][res] = best->flavor;
        acc[{best->flavor, res}] += total;
      }
      a.mode = std::min(a.mode, best->mode);
      a.level = std::max(a.level, best->level);
    }
    for (const auto& [res, per_pod] : ps.requests) {
      if (per_pod != 0 && !a.admission.flavors[i].count(res)) {
        a.mode = Mode::kNoFit;  // not covered by the ClusterQueue
        a.no_flavor = true;
        a.usage.clear();
        return a;
      }
    }
  }
  a.usage = acc;
  return a;
}

NaiveScheduler::Assignment NaiveScheduler::Nominate(const NaiveQuotaTree& tree, const Wl& w,
                                                    const core::ClusterQueueSpec& cq) const {
  std::vector<int32_t> full, delta;
  int64_t total = 0;
  for (const auto& ps : w.spec.pod_sets) {
    full.push_back(ps.count);
    delta.push_back(ps.count - ps.min_count.value_or(ps.count));
    total += delta.back();
  }
  Assignment a = Assign(tree, w, cq, full);
  if (a.mode == Mode::kFit || total == 0 || a.no_flavor) return a;
  auto counts = [&](int64_t x) {
    std::vector<int32_t> c;
    for (size_t i = 0; i < full.size(); ++i)
      c.push_back(static_cast<int32_t>(full[i] - delta[i] * x / total));
    return c;
  };
  int64_t lo = 1, hi = total;
  std::optional<Assignment> found;
  while (lo <= hi) {
    int64_t mid = lo + (hi - lo) / 2;
    Assignment b = Assign(tree, w, cq, counts(mid));
    if (b.mode == Mode::kFit) {
      found = b;
      hi = mid - 1;
    } else {
      lo = mid + 1;
    }
  }
  return found ? *found : a;
}

bool NaiveScheduler::Cycle() {
  struct Entry {
    Wl* w;
    const core::ClusterQueueSpec* cq;
    Assignment a;
  };
  std::vector<std::pair<std::string, FrMap>> reserved;
  NaiveQuotaTree snapshot = Tree(reserved);
  std::vector<Entry> entries;
  for (const auto& cq : config_.cluster_queues) {
    Wl* head = nullptr;
    for (Wl& w : wls_) {
      if (w.state != State::kPending || ClusterQueueOf(w) != &cq) continue;
      std::map<std::string, std::string> labels;
      for (const auto& ns : config_.namespaces) {
        if (ns.name == w.spec.ns) labels = ns.labels;
      }
      labels["kubernetes.io/metadata.name"] = w.spec.ns;
      if (!cq.namespace_selector || !cq.namespace_selector->Matches(labels)) continue;
      auto key = [](const Wl* x) { return std::make_tuple(-x->priority, x->created, x->uid); };
      if (head == nullptr || key(&w) < key(head)) head = &w;
    }
    if (head != nullptr) entries.push_back(Entry{head, &cq, Nominate(snapshot, *head, cq)});
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& x, const Entry& y) {
    return std::make_tuple(x.a.level, -x.w->priority, x.w->created, x.w->uid) <
           std::make_tuple(y.a.level, -y.w->priority, y.w->created, y.w->uid);
  });
  bool changed = false;
  for (Entry& e : entries) {
    NaiveQuotaTree now = Tree(reserved);
    if (e.a.mode == Mode::kFit) {
      bool fits = true;
      for (const auto& [fr, amt] : e.a.usage) fits = fits && amt <= now.Available(e.cq->name, fr);
      if (!fits) continue;  // taken by a higher entry this cycle; next cycle
      e.w->state = State::kAdmitted;
      e.w->admission = e.a.admission;
      e.w->usage = e.a.usage;
      changed = true;
      continue;
    }
    if (e.a.mode == Mode::kNoCandidates &&
        e.cq->preemption.reclaim_within_cohort != core::ReclaimWithinCohortPolicy::kAny) {
      FrMap r;
      for (const auto& [fr, amt] : e.a.usage) {
        Amount x = std::min(amt, now.Nominal(e.cq->name, fr) - now.Usage(e.cq->name, fr));
        if (e.a.level > 0) {  // borrowing: up to the borrowing limit, all without one
          std::optional<Amount> bl = now.BorrowingLimit(e.cq->name, fr);
          x = bl ? std::min(amt, now.Nominal(e.cq->name, fr) + *bl - now.Usage(e.cq->name, fr)) : amt;
        }
        if (x > 0) r[fr] = x;
      }
      if (!r.empty()) reserved.emplace_back(e.cq->name, r);
    }
    if (e.cq->queueing_strategy == core::QueueingStrategy::kBestEffortFIFO) {
      e.w->state = State::kParked;
      changed = true;
    }
  }
  return changed;
}

void NaiveScheduler::Settle() {
  for (int i = 0; i < 10000 && Cycle(); ++i) {
  }
}

std::map<std::string, NaiveScheduler::Admission> NaiveScheduler::Admitted() const {
  std::map<std::string, Admission> out;
  for (const Wl& w : wls_) {
    if (w.state == State::kAdmitted) out[w.key] = w.admission;
  }
  return out;
}

}  // namespace artel::proptest
