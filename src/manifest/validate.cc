// Validate: the rules that need the whole configuration.

#include <fmt/format.h>

#include <map>
#include <set>
#include <string_view>

#include "manifest/checks.h"
#include "manifest/manifest.h"
#include "manifest/yaml_util.h"

namespace artel::manifest {
namespace {

Status Fail(const SourcePos& pos, std::string field, std::string message) {
  Status s = InvalidArgument(std::move(message));
  s.WithField(std::move(field)).WithPos(pos);
  return s;
}

// " (did you mean x?)" when a known name is close to `name`.
std::string Hint(const std::string& name, const std::map<std::string, SourcePos>& known) {
  std::vector<std::string_view> names;
  for (const auto& [n, pos] : known) names.push_back(n);
  std::string guess = yaml::SuggestField(name, names);
  return guess.empty() ? "" : "; did you mean " + guess + "?";
}

// Indexes `items` by `key(item)`, failing on the first duplicate.
template <typename T, typename KeyFn>
Status Index(const std::vector<T>& items, std::string_view kind, KeyFn key,
             std::map<std::string, SourcePos>* out) {
  for (const T& item : items) {
    std::string k = key(item);
    auto [it, inserted] = out->emplace(k, item.pos);
    if (!inserted) {
      return Fail(item.pos, "metadata.name",
                  fmt::format("duplicate {} \"{}\" (first defined at {})", kind, k, it->second.ToString()));
    }
  }
  return Status::Ok();
}

template <typename T, typename CheckFn>
Status CheckAll(const std::vector<T>& items, CheckFn check) {
  for (const T& item : items) {
    if (Status s = check(item, internal::ConstantPos(item.pos)); !s.ok()) return s;
  }
  return Status::Ok();
}

Status CheckFlavorRefs(const std::vector<core::ResourceGroupSpec>& groups, std::string_view owner_kind,
                       const std::string& owner, const SourcePos& pos,
                       const std::map<std::string, SourcePos>& flavors) {
  for (size_t g = 0; g < groups.size(); ++g) {
    for (size_t f = 0; f < groups[g].flavors.size(); ++f) {
      const std::string& name = groups[g].flavors[f].flavor;
      if (flavors.count(name)) continue;
      // Kueue would keep the queue but mark it inactive; a configuration
      // that silently admits nothing is refused instead.
      return Fail(pos, fmt::format("spec.resourceGroups[{}].flavors[{}].name", g, f),
                  fmt::format("{} \"{}\" refers to ResourceFlavor \"{}\", which is not defined{}", owner_kind,
                              owner, name, Hint(name, flavors)));
    }
  }
  return Status::Ok();
}

}  // namespace

Status Validate(const core::Config& c) {
  using namespace internal;  // NOLINT(google-build-using-namespace): the Check* family
  if (Status s = CheckAll(c.flavors, CheckFlavor); !s.ok()) return s;
  if (Status s = CheckAll(c.topologies, CheckTopology); !s.ok()) return s;
  if (Status s = CheckAll(c.cohorts, CheckCohort); !s.ok()) return s;
  if (Status s = CheckAll(c.cluster_queues, CheckClusterQueue); !s.ok()) return s;
  if (Status s = CheckAll(c.local_queues, CheckLocalQueue); !s.ok()) return s;
  if (Status s = CheckAll(c.priority_classes, CheckPriorityClass); !s.ok()) return s;
  if (Status s = CheckAll(c.namespaces, CheckNamespace); !s.ok()) return s;
  if (Status s = CheckAll(c.resource_quotas, CheckResourceQuota); !s.ok()) return s;

  auto by_name = [](const auto& x) { return x.name; };
  auto by_ns_name = [](const auto& x) { return x.ns + "/" + x.name; };
  std::map<std::string, SourcePos> flavors, topologies, cohorts, cqs, lqs, pcs, namespaces, rqs;
  if (Status s = Index(c.flavors, "ResourceFlavor", by_name, &flavors); !s.ok()) return s;
  if (Status s = Index(c.topologies, "Topology", by_name, &topologies); !s.ok()) return s;
  if (Status s = Index(c.cohorts, "Cohort", by_name, &cohorts); !s.ok()) return s;
  if (Status s = Index(c.cluster_queues, "ClusterQueue", by_name, &cqs); !s.ok()) return s;
  if (Status s = Index(c.local_queues, "LocalQueue", by_ns_name, &lqs); !s.ok()) return s;
  if (Status s = Index(c.priority_classes, "WorkloadPriorityClass", by_name, &pcs); !s.ok()) return s;
  if (Status s = Index(c.namespaces, "Namespace", by_name, &namespaces); !s.ok()) return s;
  if (Status s = Index(c.resource_quotas, "ResourceQuota", by_ns_name, &rqs); !s.ok()) return s;

  for (const core::ResourceFlavorSpec& rf : c.flavors) {
    if (rf.topology_name.empty() || topologies.count(rf.topology_name)) continue;
    return Fail(rf.pos, "spec.topologyName",
                fmt::format("ResourceFlavor \"{}\" refers to Topology \"{}\", which is not defined{}",
                            rf.name, rf.topology_name, Hint(rf.topology_name, topologies)));
  }
  for (const core::CohortSpec& cohort : c.cohorts) {
    if (Status s = CheckFlavorRefs(cohort.resource_groups, "Cohort", cohort.name, cohort.pos, flavors);
        !s.ok()) {
      return s;
    }
  }
  for (const core::ClusterQueueSpec& cq : c.cluster_queues) {
    if (Status s = CheckFlavorRefs(cq.resource_groups, "ClusterQueue", cq.name, cq.pos, flavors); !s.ok()) {
      return s;
    }
  }
  // A LocalQueue may name a ClusterQueue that does not exist (yet): its
  // workloads wait with ClusterQueueMissing, as in Kueue. `Warnings` says so.

  // Cohort cycles. A parent without a Cohort object is an implicit root
  // cohort (Kueue creates it on demand), so only explicit objects can form a
  // cycle. A cycle is reported at the member where the walk from the first
  // affected cohort (in config order) closes it.
  std::map<std::string, const core::CohortSpec*> cohort_by_name;
  for (const core::CohortSpec& cohort : c.cohorts) cohort_by_name[cohort.name] = &cohort;
  std::set<std::string> acyclic;  // cohorts whose chain is known to end at a root
  for (const core::CohortSpec& start : c.cohorts) {
    std::vector<std::string> chain;
    std::map<std::string, size_t> index_in_chain;
    const core::CohortSpec* cur = &start;
    while (cur != nullptr && !acyclic.count(cur->name)) {
      auto [it, inserted] = index_in_chain.emplace(cur->name, chain.size());
      if (!inserted) {
        std::vector<std::string> cycle(chain.begin() + static_cast<std::ptrdiff_t>(it->second), chain.end());
        cycle.push_back(cur->name);
        const core::CohortSpec* first = cohort_by_name.at(cycle.front());
        return Fail(
            first->pos, "spec.parentName",
            fmt::format("cohort cycle: {}; a cohort tree must end at a root", fmt::join(cycle, " -> ")));
      }
      chain.push_back(cur->name);
      auto next = cohort_by_name.find(cur->parent);
      cur = cur->parent.empty() || next == cohort_by_name.end() ? nullptr : next->second;
    }
    acyclic.insert(chain.begin(), chain.end());
  }
  return Status::Ok();
}

std::vector<Status> Warnings(const core::Config& c) {
  std::vector<Status> out;
  std::map<std::string, SourcePos> cqs;
  for (const core::ClusterQueueSpec& cq : c.cluster_queues) cqs.emplace(cq.name, cq.pos);
  for (const core::LocalQueueSpec& lq : c.local_queues) {
    if (cqs.count(lq.cluster_queue)) continue;
    out.push_back(
        Fail(lq.pos, "spec.clusterQueue",
             fmt::format("LocalQueue \"{}/{}\" refers to ClusterQueue \"{}\", which is not defined{}; "
                         "its workloads wait (ClusterQueueMissing) until it is",
                         lq.ns, lq.name, lq.cluster_queue, Hint(lq.cluster_queue, cqs))));
  }
  return out;
}

}  // namespace artel::manifest
