#include "driver.h"

#include <algorithm>
#include <sstream>

namespace artel::proptest {

using core::Amount;
using core::Engine;
using core::WorkloadState;

AdmittedSet Admitted(const Engine& e) {
  AdmittedSet out;
  for (const core::WorkloadInfo* w : e.Workloads()) {
    if (w->state != WorkloadState::kAdmitted) continue;
    NaiveScheduler::Admission a;
    for (const auto& ps : w->admission) {
      a.counts.push_back(ps.count);
      a.flavors.push_back(ps.flavors);
    }
    out[w->key] = a;
  }
  return out;
}

namespace {
std::string Show(const NaiveScheduler::Admission& a) {
  std::ostringstream os;
  for (size_t i = 0; i < a.counts.size(); ++i) {
    os << (i ? " " : "") << "x" << a.counts[i] << "{";
    bool first = true;
    for (const auto& [r, f] : a.flavors[i]) {
      os << (first ? "" : ",") << r << ":" << f;
      first = false;
    }
    os << "}";
  }
  return os.str();
}
}  // namespace

std::string DescribeDiff(const AdmittedSet& a, const AdmittedSet& b, const std::string& an,
                         const std::string& bn) {
  std::ostringstream os;
  for (const auto& [k, v] : a) {
    auto it = b.find(k);
    if (it == b.end()) {
      os << "  " << k << " admitted only by " << an << " " << Show(v) << "\n";
    } else if (!(it->second == v)) {
      os << "  " << k << " " << an << "=" << Show(v) << " " << bn << "=" << Show(it->second) << "\n";
    }
  }
  for (const auto& [k, v] : b) {
    if (!a.count(k)) os << "  " << k << " admitted only by " << bn << " " << Show(v) << "\n";
  }
  return os.str();
}

std::vector<core::Eviction> Settle(Engine& e, core::Time now, bool* settled, const ScheduleHook& hook) {
  std::vector<core::Eviction> all;
  *settled = false;
  for (int i = 0; i < 200; ++i) {
    std::vector<core::QuotaUsage> before;
    if (hook) before = e.Usage();
    core::CycleResult r = e.Schedule(now);
    if (hook) hook(before, r);
    for (const auto& ev : r.evictions) {
      all.push_back(ev);
      (void)e.CompleteEviction(ev.victim, now);
    }
    if (r.admitted.empty() && r.evictions.empty()) {
      *settled = true;
      return all;
    }
  }
  return all;
}

std::vector<core::Eviction> SettleOneHead(Engine& e, core::Time now, bool* settled,
                                          const ScheduleHook& hook) {
  std::vector<core::Eviction> all;
  *settled = false;
  for (int i = 0; i < 200; ++i) {
    std::vector<core::Eviction> run;
    bool admitted = false;
    bool converged = false;
    for (int j = 0; j < 5000; ++j) {
      std::vector<core::QuotaUsage> before;
      if (hook) before = e.Usage();
      core::CycleResult r = e.Schedule(now);
      if (hook) hook(before, r);
      admitted = admitted || !r.admitted.empty();
      run.insert(run.end(), r.evictions.begin(), r.evictions.end());
      if (!r.changed) {
        converged = true;
        break;
      }
    }
    if (!converged) return all;
    for (const auto& ev : run) {
      all.push_back(ev);
      (void)e.CompleteEviction(ev.victim, now);
    }
    if (!admitted && run.empty()) {
      *settled = true;
      return all;
    }
  }
  return all;
}

std::string ResolvePick(const Engine& e, const Event& ev) {
  std::vector<std::string> keys;
  for (const core::WorkloadInfo* w : e.Workloads()) {
    if (ev.kind == Event::Kind::kFinish ? w->state == WorkloadState::kAdmitted
                                        : w->state != WorkloadState::kFinished)
      keys.push_back(w->key);
  }
  if (keys.empty()) return "";
  std::sort(keys.begin(), keys.end());
  return keys[ev.pick % keys.size()];
}

std::string ApplyBatch(const std::vector<Engine*>& engines, const Batch& batch, NaiveScheduler* naive) {
  for (const Event& ev : batch.events) {
    if (ev.kind == Event::Kind::kSubmit) {
      for (Engine* e : engines) {
        Status s = e->Submit(ev.spec, batch.at).status();
        if (!s.ok()) return "Submit " + ev.spec.name + " failed: " + s.ToString();
      }
      if (naive) naive->Submit(ev.spec, batch.at);
      continue;
    }
    std::string key = ResolvePick(*engines[0], ev);
    if (key.empty()) continue;
    for (Engine* e : engines) {
      Status s = ev.kind == Event::Kind::kFinish ? e->Finish(key, batch.at) : e->Cancel(key, batch.at);
      if (!s.ok()) return "Finish/Cancel " + key + " failed: " + s.ToString();
    }
    if (naive) {
      if (ev.kind == Event::Kind::kFinish) {
        naive->Finish(key);
      } else {
        naive->Cancel(key);
      }
    }
  }
  return "";
}

ReclaimProbe RunReclaimProbe(uint64_t seed, size_t qi) {
  ReclaimProbe out;
  Scenario s = GenerateScenario(seed);
  core::ClusterQueueSpec& q = s.config.cluster_queues[qi % s.config.cluster_queues.size()];
  q.preemption.reclaim_within_cohort = core::ReclaimWithinCohortPolicy::kAny;
  for (auto& g : q.resource_groups) {
    for (auto& rq : g.flavors.front().resources) rq.nominal = std::max<Amount>(rq.nominal, 2 * kUnit);
  }
  out.in_cohort = !q.cohort.empty();
  const std::string ns = "ns" + q.name.substr(2);
  Rng thin(seed ^ 0x5eed);
  for (Batch& b : s.batches) {
    std::erase_if(b.events, [&](const Event& ev) {
      return ev.kind == Event::Kind::kSubmit && ev.spec.ns == ns && thin.Chance(60);
    });
  }
  Engine e;
  if (!e.Configure(s.config).ok()) return out;
  core::Time now = 0;
  for (const Batch& b : s.batches) {
    if (!ApplyBatch({&e}, b).empty()) return out;
    Settle(e, b.at, &out.settled);
    if (!out.settled) return out;
    now = b.at;
  }
  auto usage = UsageByNode(e.Usage());
  core::WorkloadSpec probe;
  probe.ns = ns;
  probe.name = "probe";
  probe.queue = "lq0";
  probe.priority = 1000;
  core::PodSetSpec ps;
  std::vector<std::pair<std::string, Amount>> room;  // resource -> headroom in its first flavor
  for (const auto& g : q.resource_groups) {
    const auto& fq = g.flavors.front();
    for (const auto& rq : fq.resources) {
      Amount headroom = rq.nominal - usage[q.name][{fq.flavor, rq.name}];
      if (headroom >= 1) room.emplace_back(rq.name, headroom);
    }
  }
  for (const auto& [r, h] : room) {
    if (thin.Chance(70)) ps.requests[r] = thin.Uniform(1, h);
  }
  if (ps.requests.empty() && !room.empty())
    ps.requests[room.front().first] = thin.Uniform(1, room.front().second);
  if (ps.requests.empty()) return out;
  out.ran = true;
  probe.pod_sets.push_back(ps);
  now += 1000;
  if (!e.Submit(probe, now).ok()) return out;
  std::vector<core::Eviction> evs = Settle(e, now, &out.settled);
  out.reclaimed = !evs.empty();
  const core::WorkloadInfo* w = e.Find(ns + "/probe");
  out.admitted = w != nullptr && w->state == WorkloadState::kAdmitted;
  if (!out.admitted && out.settled) {
    std::ostringstream os;
    os << "probe in " << q.name << " not admitted: " << (w ? w->pending->message : "missing")
       << "\nprobe requests:";
    for (const auto& [r, a] : ps.requests) os << " " << r << "=" << a << "m";
    os << "\nusage before the probe:\n";
    for (const auto& [node, m] : usage) {
      for (const auto& [fr, a] : m)
        os << "  " << node << " " << fr.first << "/" << fr.second << "=" << a << "m\n";
    }
    os << "seed=" << seed << " qi=" << qi << "\n" << Describe(s);
    out.failure = os.str();
  }
  if (!out.settled) out.ran = false;
  return out;
}

std::map<std::string, FrMap> UsageByNode(const std::vector<core::QuotaUsage>& usage) {
  std::map<std::string, FrMap> out;
  for (const auto& u : usage) out[u.node][{u.flavor, u.resource}] = u.usage;
  return out;
}

// Property (a), the lending half. Per flavor-resource, node n hands
// c(n) = subtreeQuota(n) - localQuota(n) = min(subtreeQuota(n), lendingLimit(n))
// up to its parent and keeps localQuota(n) for its own subtree; every quota
// of a strict descendant m of n is likewise either kept locally at m or
// handed up into n's subtreeQuota. So the quota of n's whole subtree that can
// ever serve a ClusterQueue outside it is exactly c(n), and the usage of every
// ClusterQueue outside n, U_out(n), is bounded by the quota of every node
// outside n's subtree, T - T(n) (T = sum of nominal over the whole cohort
// tree, T(n) over n's subtree), plus c(n):
//
//   lent(n) := max(0, U_out(n) - (T - T(n)))  <=  c(n)  <=  lendingLimit(n).
//
// This attributes to n only what the rest of the tree cannot cover with its
// own quota (the most charitable attribution), and it is computed from the
// ClusterQueues' own usage and the Config, never from the engine's tree.
std::string CheckQuotaInvariants(const core::Config& config, const Engine& e) {
  // Independent per-ClusterQueue usage from the admitted (and evicting) workloads.
  std::map<std::string, FrMap> cq_usage;
  for (const core::WorkloadInfo* w : e.Workloads()) {
    if (w->state != WorkloadState::kAdmitted && w->state != WorkloadState::kEvicting) continue;
    for (const auto& ps : w->admission) {
      for (const auto& [res, flv] : ps.flavors) {
        auto it = ps.resource_usage.find(res);
        if (it != ps.resource_usage.end()) cq_usage[w->cluster_queue][{flv, res}] += it->second;
      }
    }
  }
  NaiveQuotaTree tree(config);
  tree.SetUsage(cq_usage);
  std::ostringstream os;
  auto fr_name = [](const FlavorResource& fr) { return fr.first + "/" + fr.second; };

  // 1. Usage() agrees with the recomputation.
  for (const core::QuotaUsage& u : e.Usage()) {
    if (!tree.Has(u.node)) {
      os << "Usage() reports unknown node " << u.node;
      return os.str();
    }
    FlavorResource fr{u.flavor, u.resource};
    Amount usage = tree.Usage(u.node, fr), subtree = tree.Subtree(u.node, fr);
    if (u.usage != usage || u.subtree_quota != subtree) {
      os << "Usage() of " << u.node << " " << fr_name(fr) << ": usage=" << u.usage
         << " subtree=" << u.subtree_quota << ", recomputed usage=" << usage << " subtree=" << subtree;
      return os.str();
    }
  }
  // 2. Borrowing limits and roots.
  for (const std::string& n : tree.Nodes()) {
    for (const FlavorResource& fr : tree.FlavorResources()) {
      Amount usage = tree.Usage(n, fr), subtree = tree.Subtree(n, fr);
      if (auto bl = tree.BorrowingLimit(n, fr); bl && tree.Parent(n) && usage > subtree + *bl) {
        os << n << " " << fr_name(fr) << ": usage " << usage << " > subtreeQuota " << subtree
           << " + borrowingLimit " << *bl;
        return os.str();
      }
      if (!tree.Parent(n) && usage > subtree) {
        os << "root " << n << " " << fr_name(fr) << ": usage " << usage << " > subtreeQuota " << subtree;
        return os.str();
      }
    }
  }
  // 3. Lending limits (see the comment above).
  std::map<std::string, std::vector<std::string>> subtree_members;  // node -> nodes in its subtree
  for (const std::string& n : tree.Nodes()) {
    for (std::optional<std::string> a = n; a; a = tree.Parent(*a)) subtree_members[*a].push_back(n);
  }
  for (const std::string& n : tree.Nodes()) {
    if (!tree.Parent(n)) continue;
    std::string root = tree.Root(n);
    const auto& inside = subtree_members[n];
    for (const FlavorResource& fr : tree.FlavorResources()) {
      auto ll = tree.LendingLimit(n, fr);
      Amount t_all = 0, t_in = 0, u_out = 0;
      for (const std::string& m : subtree_members[root]) {
        bool in = std::find(inside.begin(), inside.end(), m) != inside.end();
        t_all += tree.Nominal(m, fr);
        if (in) t_in += tree.Nominal(m, fr);
        if (!in && !tree.IsCohort(m)) u_out += tree.Usage(m, fr);
      }
      Amount lent = std::max<Amount>(0, u_out - (t_all - t_in));
      Amount handed_up = tree.Subtree(n, fr) - tree.Local(n, fr);
      if (lent > handed_up || (ll && lent > *ll)) {
        os << "others use " << lent << " of " << n << "'s " << fr_name(fr) << " quota (usage outside "
           << u_out << ", their own quota " << (t_all - t_in) << "), but it hands up only " << handed_up
           << (ll ? " (lendingLimit " + std::to_string(*ll) + ")" : std::string());
        return os.str();
      }
    }
  }
  return "";
}

}  // namespace artel::proptest
