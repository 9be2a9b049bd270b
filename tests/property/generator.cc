#include "generator.h"

#include <algorithm>
#include <sstream>

namespace artel::proptest {

using core::Amount;
using core::ClusterQueueSpec;
using core::CohortSpec;
using core::Config;
using core::FlavorQuotasSpec;
using core::ResourceGroupSpec;
using core::ResourceQuotaSpec;
using core::WorkloadSpec;

uint64_t Rng::Next() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

int64_t Rng::Uniform(int64_t lo, int64_t hi) {
  uint64_t span = static_cast<uint64_t>(hi - lo) + 1;
  return lo + static_cast<int64_t>(Next() % span);
}

namespace {

// Quota of one flavor over `resources`; limits only when the node has a parent.
FlavorQuotasSpec FlavorQuotas(Rng& rng, const std::string& flavor, const std::vector<std::string>& resources,
                              bool has_parent, int max_nominal) {
  FlavorQuotasSpec fq;
  fq.flavor = flavor;
  for (const auto& r : resources) {
    ResourceQuotaSpec q;
    q.name = r;
    q.nominal = rng.Uniform(0, max_nominal) * kUnit;
    if (rng.Chance(15)) q.nominal += kUnit / 2;
    if (has_parent && rng.Chance(30)) q.borrowing_limit = rng.Uniform(0, 6) * kUnit;
    if (has_parent && rng.Chance(30)) q.lending_limit = rng.Uniform(0, q.nominal / kUnit) * kUnit;
    fq.resources.push_back(q);
  }
  return fq;
}

std::vector<ResourceGroupSpec> Groups(Rng& rng, const std::vector<std::string>& flavors,
                                      const std::vector<std::string>& resources, bool has_parent,
                                      int max_nominal, bool allow_split) {
  std::vector<ResourceGroupSpec> groups;
  if (allow_split && resources.size() == 2 && flavors.size() == 2 && rng.Chance(30)) {
    // One group per resource; a flavor may belong to one group only.
    std::vector<std::string> fl = flavors;
    rng.Shuffle(fl);
    for (size_t i = 0; i < 2; ++i) {
      ResourceGroupSpec g;
      g.covered_resources = {resources[i]};
      g.flavors.push_back(FlavorQuotas(rng, fl[i], g.covered_resources, has_parent, max_nominal));
      groups.push_back(g);
    }
    return groups;
  }
  ResourceGroupSpec g;
  g.covered_resources = resources;
  std::vector<std::string> fl = flavors;
  rng.Shuffle(fl);
  size_t n = static_cast<size_t>(rng.Uniform(1, static_cast<int64_t>(fl.size())));
  for (size_t i = 0; i < n; ++i)
    g.flavors.push_back(FlavorQuotas(rng, fl[i], resources, has_parent, max_nominal));
  groups.push_back(g);
  return groups;
}

WorkloadSpec RandomWorkload(Rng& rng, const Config& c, const std::vector<std::string>& resources,
                            int serial) {
  WorkloadSpec w;
  const auto& lq =
      c.local_queues[static_cast<size_t>(rng.Uniform(0, static_cast<int64_t>(c.local_queues.size()) - 1))];
  w.ns = lq.ns;
  w.queue = lq.name;
  w.name = "w" + std::to_string(serial);
  static const int32_t kPriorities[] = {0, 0, 100, 200};
  w.priority = kPriorities[rng.Uniform(0, 3)];
  int pod_sets = rng.Chance(25) ? 2 : 1;
  for (int p = 0; p < pod_sets; ++p) {
    core::PodSetSpec ps;
    ps.name = "ps" + std::to_string(p);
    ps.count = static_cast<int32_t>(rng.Uniform(1, 4));
    if (ps.count > 1 && rng.Chance(25)) ps.min_count = static_cast<int32_t>(rng.Uniform(1, ps.count));
    for (const auto& r : resources) {
      if (rng.Chance(60)) ps.requests[r] = rng.Chance(20) ? kUnit / 2 : rng.Uniform(1, 3) * kUnit;
    }
    if (ps.requests.empty())
      ps.requests[resources[static_cast<size_t>(
          rng.Uniform(0, static_cast<int64_t>(resources.size()) - 1))]] = kUnit;
    w.pod_sets.push_back(ps);
  }
  return w;
}

}  // namespace

Scenario GenerateScenario(uint64_t seed, const GenOptions& o) {
  Rng rng(seed);
  Scenario s;
  Config& c = s.config;
  std::vector<std::string> flavors = {"f0"};
  if (rng.Chance(60)) flavors.push_back("f1");
  std::vector<std::string> resources = {"cpu"};
  if (rng.Chance(50)) resources.push_back("gpu");
  for (const auto& f : flavors) c.flavors.push_back({f});

  // Cohort forest: 1-3 levels.
  int levels = static_cast<int>(rng.Uniform(1, 3));
  std::vector<std::vector<std::string>> by_level(static_cast<size_t>(levels));
  int serial = 0;
  int roots = rng.Chance(25) ? 2 : 1;
  for (int i = 0; i < roots; ++i) by_level[0].push_back("co" + std::to_string(serial++));
  for (int l = 1; l < levels; ++l) {
    int n = static_cast<int>(rng.Uniform(1, 2));
    for (int i = 0; i < n; ++i) by_level[static_cast<size_t>(l)].push_back("co" + std::to_string(serial++));
  }
  std::vector<std::string> all_cohorts;
  for (int l = 0; l < levels; ++l) {
    for (const auto& name : by_level[static_cast<size_t>(l)]) {
      CohortSpec co;
      co.name = name;
      if (l > 0) {
        const auto& up = by_level[static_cast<size_t>(l - 1)];
        co.parent = up[static_cast<size_t>(rng.Uniform(0, static_cast<int64_t>(up.size()) - 1))];
      }
      if (rng.Chance(30)) co.resource_groups = Groups(rng, flavors, resources, !co.parent.empty(), 4, false);
      if (o.fair_weights && rng.Chance(20)) co.fair_weight = rng.Uniform(0, 3) * 500;
      c.cohorts.push_back(co);
      all_cohorts.push_back(name);
    }
  }

  int num_cqs = static_cast<int>(rng.Uniform(2, 8));
  for (int i = 0; i < num_cqs; ++i) {
    ClusterQueueSpec q;
    q.name = "cq" + std::to_string(i);
    if (!rng.Chance(12))
      q.cohort =
          all_cohorts[static_cast<size_t>(rng.Uniform(0, static_cast<int64_t>(all_cohorts.size()) - 1))];
    q.namespace_selector = core::LabelSelector{};
    q.resource_groups = Groups(rng, flavors, resources, !q.cohort.empty(), 8, true);
    q.queueing_strategy =
        rng.Chance(25) ? core::QueueingStrategy::kStrictFIFO : core::QueueingStrategy::kBestEffortFIFO;
    if (o.preemption) {
      q.preemption.within_cluster_queue = static_cast<core::WithinClusterQueuePolicy>(rng.Uniform(0, 2));
      q.preemption.reclaim_within_cohort = static_cast<core::ReclaimWithinCohortPolicy>(rng.Uniform(0, 2));
      if (rng.Chance(25)) {
        q.preemption.borrow_within_cohort = core::BorrowWithinCohortPolicy::kLowerPriority;
        if (rng.Chance(50))
          q.preemption.max_priority_threshold = static_cast<int32_t>(rng.Uniform(0, 2) * 100);
      }
    }
    if (o.fungibility) {
      if (rng.Chance(30)) q.flavor_fungibility.when_can_borrow = core::FungibilityPolicy::kTryNextFlavor;
      if (rng.Chance(30)) q.flavor_fungibility.when_can_preempt = core::FungibilityPolicy::kMayStopSearch;
      if (rng.Chance(30))
        q.flavor_fungibility.preference = core::FungibilityPreference::kPreemptionOverBorrowing;
    }
    if (o.fair_weights && rng.Chance(25)) q.fair_weight = rng.Uniform(0, 4) * 500;
    c.cluster_queues.push_back(q);
    int lqs = rng.Chance(30) ? 2 : 1;
    for (int l = 0; l < lqs; ++l) {
      core::LocalQueueSpec lq;
      lq.ns = "ns" + std::to_string(i);
      lq.name = "lq" + std::to_string(l);
      lq.cluster_queue = q.name;
      c.local_queues.push_back(lq);
    }
  }

  int batches = static_cast<int>(rng.Uniform(1, std::max(1, o.max_batches)));
  core::Time t = 0;
  int wserial = 0;
  for (int b = 0; b < batches; ++b) {
    Batch batch;
    t += rng.Uniform(1, 3) * 1000;
    batch.at = t;
    int n = static_cast<int>(rng.Uniform(1, std::max(1, o.max_events_per_batch)));
    for (int e = 0; e < n; ++e) {
      Event ev;
      int64_t roll = rng.Uniform(0, 99);
      if (b == 0 || roll < 65) {
        ev.kind = Event::Kind::kSubmit;
        ev.spec = RandomWorkload(rng, c, resources, wserial++);
      } else {
        ev.kind = roll < 90 ? Event::Kind::kFinish : Event::Kind::kCancel;
        ev.pick = static_cast<uint32_t>(rng.Next() & 0xffff);
      }
      batch.events.push_back(ev);
    }
    s.batches.push_back(batch);
  }
  return s;
}

Scenario GenerateDeepQueueScenario(uint64_t seed) {
  Rng rng(seed);
  Scenario s;
  Config& c = s.config;
  c.flavors.push_back({"f0"});
  std::vector<std::string> resources = {"gpu"};
  if (rng.Chance(30)) resources.push_back("cpu");
  CohortSpec co;
  co.name = "co";
  c.cohorts.push_back(co);
  const int num_cqs = static_cast<int>(rng.Uniform(2, 5));
  for (int i = 0; i < num_cqs; ++i) {
    ClusterQueueSpec q;
    q.name = "cq" + std::to_string(i);
    if (!rng.Chance(10)) q.cohort = co.name;
    q.namespace_selector = core::LabelSelector{};
    ResourceGroupSpec g;
    g.covered_resources = resources;
    FlavorQuotasSpec fq;
    fq.flavor = "f0";
    // Some owners that never borrow (bulk parking of borrowers that hold
    // back quota depends on it).
    const bool never_borrows = rng.Chance(30) && !q.cohort.empty();
    for (const auto& r : resources) {
      ResourceQuotaSpec rq;
      rq.name = r;
      rq.nominal = rng.Uniform(0, 4) * kUnit;
      if (r == "cpu") rq.nominal *= 4;
      if (never_borrows) rq.borrowing_limit = 0;
      fq.resources.push_back(rq);
    }
    g.flavors.push_back(fq);
    q.resource_groups.push_back(g);
    q.queueing_strategy = core::QueueingStrategy::kBestEffortFIFO;
    q.preemption.within_cluster_queue = rng.Chance(30) ? core::WithinClusterQueuePolicy::kLowerPriority
                                                       : core::WithinClusterQueuePolicy::kNever;
    const int64_t roll = rng.Uniform(0, 99);
    q.preemption.reclaim_within_cohort = roll < 75   ? core::ReclaimWithinCohortPolicy::kAny
                                         : roll < 90 ? core::ReclaimWithinCohortPolicy::kNever
                                                     : core::ReclaimWithinCohortPolicy::kLowerPriority;
    c.cluster_queues.push_back(q);
    const int lqs = rng.Chance(20) ? 2 : 1;
    for (int l = 0; l < lqs; ++l) {
      core::LocalQueueSpec lq;
      lq.ns = "ns" + std::to_string(i);
      lq.name = "lq" + std::to_string(l);
      lq.cluster_queue = q.name;
      c.local_queues.push_back(lq);
    }
  }
  const int batches = static_cast<int>(rng.Uniform(4, 24));
  core::Time t = 0;
  int serial = 0;
  for (int b = 0; b < batches; ++b) {
    Batch batch;
    t += rng.Uniform(1, 3) * 1000;
    batch.at = t;
    const int n = static_cast<int>(b == 0 ? rng.Uniform(10, 40) : rng.Uniform(1, 8));
    for (int e = 0; e < n; ++e) {
      Event ev;
      if (b == 0 || rng.Chance(55)) {
        ev.kind = Event::Kind::kSubmit;
        WorkloadSpec& w = ev.spec;
        const auto& lq = c.local_queues[static_cast<size_t>(
            rng.Uniform(0, static_cast<int64_t>(c.local_queues.size()) - 1))];
        w.ns = lq.ns;
        w.queue = lq.name;
        w.name = "w" + std::to_string(serial++);
        w.priority = rng.Chance(15) ? 100 : 0;
        core::PodSetSpec ps;
        ps.name = "main";
        // Mostly one pod of one unit; some wide ones that rarely fit.
        const int64_t size = rng.Uniform(0, 99);
        ps.count = size < 60 ? 1 : size < 80 ? 2 : size < 92 ? 4 : 8;
        if (ps.count > 1 && rng.Chance(15)) ps.min_count = static_cast<int32_t>(rng.Uniform(1, ps.count));
        ps.requests["gpu"] = rng.Chance(10) ? kUnit / 2 : kUnit;
        if (resources.size() > 1 && rng.Chance(70)) ps.requests["cpu"] = rng.Uniform(1, 4) * kUnit;
        w.pod_sets.push_back(ps);
      } else {
        ev.kind = rng.Chance(90) ? Event::Kind::kFinish : Event::Kind::kCancel;
        ev.pick = static_cast<uint32_t>(rng.Next() & 0xffff);
      }
      batch.events.push_back(ev);
    }
    s.batches.push_back(batch);
  }
  return s;
}

namespace {

std::string Q(Amount a) {
  std::ostringstream os;
  if (a % kUnit == 0) {
    os << a / kUnit;
  } else {
    os << a << "m";
  }
  return os.str();
}

void DescribeGroups(std::ostream& os, const std::vector<ResourceGroupSpec>& groups) {
  for (const auto& g : groups) {
    os << " [";
    for (size_t i = 0; i < g.covered_resources.size(); ++i) os << (i ? "," : "") << g.covered_resources[i];
    os << ":";
    for (const auto& fq : g.flavors) {
      os << " " << fq.flavor << "{";
      for (size_t i = 0; i < fq.resources.size(); ++i) {
        const auto& r = fq.resources[i];
        os << (i ? " " : "") << r.name << "=" << Q(r.nominal);
        if (r.borrowing_limit) os << " bl=" << Q(*r.borrowing_limit);
        if (r.lending_limit) os << " ll=" << Q(*r.lending_limit);
      }
      os << "}";
    }
    os << "]";
  }
}

}  // namespace

std::string Describe(const Config& c) {
  std::ostringstream os;
  os << "flavors:";
  for (const auto& f : c.flavors) os << " " << f.name;
  os << "\n";
  for (const auto& co : c.cohorts) {
    os << "cohort " << co.name << " parent=" << (co.parent.empty() ? "-" : co.parent)
       << " w=" << co.fair_weight;
    DescribeGroups(os, co.resource_groups);
    os << "\n";
  }
  for (const auto& q : c.cluster_queues) {
    os << "cq " << q.name << " cohort=" << (q.cohort.empty() ? "-" : q.cohort)
       << (q.queueing_strategy == core::QueueingStrategy::kStrictFIFO ? " StrictFIFO" : " BestEffortFIFO")
       << " within=" << static_cast<int>(q.preemption.within_cluster_queue)
       << " reclaim=" << static_cast<int>(q.preemption.reclaim_within_cohort)
       << " bwc=" << static_cast<int>(q.preemption.borrow_within_cohort);
    if (q.preemption.max_priority_threshold) os << " thr=" << *q.preemption.max_priority_threshold;
    os << " canBorrow=" << static_cast<int>(q.flavor_fungibility.when_can_borrow)
       << " canPreempt=" << static_cast<int>(q.flavor_fungibility.when_can_preempt)
       << " pref=" << static_cast<int>(q.flavor_fungibility.preference) << " w=" << q.fair_weight;
    DescribeGroups(os, q.resource_groups);
    os << "\n";
  }
  for (const auto& lq : c.local_queues)
    os << "lq " << lq.ns << "/" << lq.name << " -> " << lq.cluster_queue << "\n";
  return os.str();
}

std::string Describe(const Scenario& s) {
  std::ostringstream os;
  os << Describe(s.config);
  for (const auto& b : s.batches) {
    os << "t=" << b.at << ":";
    for (const auto& e : b.events) {
      switch (e.kind) {
        case Event::Kind::kSubmit: {
          const auto& w = e.spec;
          os << " submit(" << w.ns << "/" << w.name << " q=" << w.queue << " p=" << w.priority.value_or(0);
          for (const auto& ps : w.pod_sets) {
            os << " " << ps.name << "x" << ps.count;
            if (ps.min_count) os << "(min" << *ps.min_count << ")";
            os << "{";
            bool first = true;
            for (const auto& [r, a] : ps.requests) {
              os << (first ? "" : " ") << r << "=" << Q(a);
              first = false;
            }
            os << "}";
          }
          os << ")";
          break;
        }
        case Event::Kind::kFinish: os << " finish#" << e.pick; break;
        case Event::Kind::kCancel: os << " cancel#" << e.pick; break;
      }
    }
    os << "\n";
  }
  return os.str();
}

Config ShuffleIndependent(const Config& config, Rng& rng) {
  Config c = config;
  rng.Shuffle(c.flavors);
  rng.Shuffle(c.cohorts);
  rng.Shuffle(c.cluster_queues);
  rng.Shuffle(c.local_queues);
  rng.Shuffle(c.priority_classes);
  rng.Shuffle(c.namespaces);
  auto shuffle_groups = [&](std::vector<ResourceGroupSpec>& groups) {
    for (auto& g : groups) {
      rng.Shuffle(g.covered_resources);
      for (auto& fq : g.flavors) rng.Shuffle(fq.resources);
    }
  };
  for (auto& co : c.cohorts) shuffle_groups(co.resource_groups);
  for (auto& q : c.cluster_queues) shuffle_groups(q.resource_groups);
  return c;
}

}  // namespace artel::proptest
