#include "manifest/checks.h"

#include <fmt/format.h>

#include <set>

namespace artel::manifest::internal {
namespace {

Status Fail(const PosFn& pos, const std::string& field, std::string message) {
  Status s = InvalidArgument(std::move(message));
  s.WithField(field).WithPos(pos(field));
  return s;
}

bool IsAlnumLower(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

// RFC 1123 label (`dots == false`) or subdomain (`dots == true`).
bool IsDnsName(const std::string& s, bool dots) {
  size_t max = dots ? 253 : 63;
  if (s.empty() || s.size() > max) return false;
  if (!IsAlnumLower(s.front()) || !IsAlnumLower(s.back())) return false;
  for (char c : s) {
    if (!IsAlnumLower(c) && c != '-' && !(dots && c == '.')) return false;
  }
  return true;
}

Status CheckName(const std::string& name, const PosFn& pos, const char* field = "metadata.name") {
  if (name.empty()) return Fail(pos, field, "must not be empty");
  if (!IsDnsName(name, /*dots=*/true)) {
    return Fail(pos, field,
                fmt::format("invalid name \"{}\": must consist of lower case letters, digits, '-' and '.', "
                            "start and end with a letter or digit, and be at most 253 characters",
                            name));
  }
  return Status::Ok();
}

Status CheckNamespaceName(const std::string& ns, const PosFn& pos) {
  if (ns.empty()) return Fail(pos, "metadata.namespace", "missing required field \"namespace\"");
  if (!IsDnsName(ns, /*dots=*/false)) {
    return Fail(pos, "metadata.namespace",
                fmt::format("invalid namespace \"{}\": must be a DNS label (lower case letters, digits and "
                            "'-', at most 63 characters)",
                            ns));
  }
  return Status::Ok();
}

Status CheckWeight(core::Amount weight, const PosFn& pos) {
  if (weight < 0) return Fail(pos, "spec.fairSharing.weight", "must not be negative");
  return Status::Ok();
}

// The resource-group rules shared by ClusterQueues and Cohorts. `has_parent`
// says whether the owner can borrow or lend at all (a ClusterQueue in a
// cohort, a Cohort with a parent); `parent_field` names the field that
// would give it one, for the message.
Status CheckResourceGroups(const std::vector<core::ResourceGroupSpec>& groups, bool has_parent,
                           const char* parent_field, const PosFn& pos) {
  if (groups.size() > kMaxResourceGroups) {
    return Fail(
        pos, "spec.resourceGroups",
        fmt::format("at most {} resource groups are allowed, got {}", kMaxResourceGroups, groups.size()));
  }
  std::map<std::string, size_t> resource_group;  // resource -> group index
  std::map<std::string, size_t> flavor_group;    // flavor -> group index
  for (size_t g = 0; g < groups.size(); ++g) {
    const core::ResourceGroupSpec& rg = groups[g];
    std::string gpath = fmt::format("spec.resourceGroups[{}]", g);
    if (rg.covered_resources.empty()) {
      return Fail(pos, gpath + ".coveredResources", "must list at least one resource");
    }
    if (rg.covered_resources.size() > kMaxCoveredResources) {
      return Fail(pos, gpath + ".coveredResources",
                  fmt::format("at most {} resources are allowed", kMaxCoveredResources));
    }
    for (size_t r = 0; r < rg.covered_resources.size(); ++r) {
      const std::string& res = rg.covered_resources[r];
      std::string rpath = fmt::format("{}.coveredResources[{}]", gpath, r);
      if (res.empty()) return Fail(pos, rpath, "resource name must not be empty");
      auto [it, inserted] = resource_group.emplace(res, g);
      if (!inserted) {
        if (it->second == g) return Fail(pos, rpath, fmt::format("resource \"{}\" is listed twice", res));
        return Fail(pos, rpath,
                    fmt::format("resource \"{}\" is already covered by resourceGroups[{}]; a resource may "
                                "belong to only one resource group",
                                res, it->second));
      }
    }
    if (rg.flavors.empty()) return Fail(pos, gpath + ".flavors", "must list at least one flavor");
    if (rg.flavors.size() > kMaxFlavorsPerGroup) {
      return Fail(pos, gpath + ".flavors",
                  fmt::format("at most {} flavors are allowed", kMaxFlavorsPerGroup));
    }
    for (size_t f = 0; f < rg.flavors.size(); ++f) {
      const core::FlavorQuotasSpec& fq = rg.flavors[f];
      std::string fpath = fmt::format("{}.flavors[{}]", gpath, f);
      if (fq.flavor.empty()) return Fail(pos, fpath + ".name", "flavor name must not be empty");
      auto [fit, finserted] = flavor_group.emplace(fq.flavor, g);
      if (!finserted) {
        return Fail(pos, fpath + ".name",
                    fit->second == g
                        ? fmt::format("flavor \"{}\" is listed twice in this resource group", fq.flavor)
                        : fmt::format("flavor \"{}\" is already used by resourceGroups[{}]; a flavor may "
                                      "appear in only one resource group",
                                      fq.flavor, fit->second));
      }
      if (fq.resources.size() != rg.covered_resources.size()) {
        return Fail(pos, fpath + ".resources",
                    fmt::format("flavor \"{}\" lists {} resources but the group covers {} ({}); every flavor "
                                "must list exactly the coveredResources, in the same order",
                                fq.flavor, fq.resources.size(), rg.covered_resources.size(),
                                fmt::join(rg.covered_resources, ", ")));
      }
      for (size_t r = 0; r < fq.resources.size(); ++r) {
        const core::ResourceQuotaSpec& q = fq.resources[r];
        std::string qpath = fmt::format("{}.resources[{}]", fpath, r);
        if (q.name != rg.covered_resources[r]) {
          return Fail(
              pos, qpath + ".name",
              fmt::format("expected \"{}\" (coveredResources[{}]), got \"{}\"; every flavor must list "
                          "exactly the coveredResources, in the same order",
                          rg.covered_resources[r], r, q.name));
        }
        if (q.nominal < 0) return Fail(pos, qpath + ".nominalQuota", "must not be negative");
        if (q.borrowing_limit) {
          if (*q.borrowing_limit < 0) return Fail(pos, qpath + ".borrowingLimit", "must not be negative");
          if (!has_parent) {
            return Fail(pos, qpath + ".borrowingLimit",
                        fmt::format("borrowingLimit must not be set when {} is empty (there is nothing to "
                                    "borrow from)",
                                    parent_field));
          }
        }
        if (q.lending_limit) {
          if (*q.lending_limit < 0) return Fail(pos, qpath + ".lendingLimit", "must not be negative");
          if (!has_parent) {
            return Fail(pos, qpath + ".lendingLimit",
                        fmt::format("lendingLimit must not be set when {} is empty (there is nobody to lend "
                                    "to)",
                                    parent_field));
          }
          if (*q.lending_limit > q.nominal) {
            return Fail(pos, qpath + ".lendingLimit",
                        fmt::format("lendingLimit ({}) must not exceed nominalQuota ({})",
                                    core::FormatQuantity(*q.lending_limit), core::FormatQuantity(q.nominal)));
          }
        }
      }
    }
  }
  return Status::Ok();
}

}  // namespace

namespace {
template <typename T>
void Append(std::vector<T>& from, std::vector<T>* to) {
  to->insert(to->end(), std::make_move_iterator(from.begin()), std::make_move_iterator(from.end()));
}
}  // namespace

void AppendConfig(core::Config&& from, core::Config* to) {
  Append(from.flavors, &to->flavors);
  Append(from.cohorts, &to->cohorts);
  Append(from.cluster_queues, &to->cluster_queues);
  Append(from.local_queues, &to->local_queues);
  Append(from.priority_classes, &to->priority_classes);
  Append(from.namespaces, &to->namespaces);
  Append(from.resource_quotas, &to->resource_quotas);
  Append(from.topologies, &to->topologies);
}

PosFn ConstantPos(const SourcePos& pos) {
  return [pos](const std::string&) { return pos; };
}

Status CheckFlavor(const core::ResourceFlavorSpec& rf, const PosFn& pos) {
  if (Status s = CheckName(rf.name, pos); !s.ok()) return s;
  if (rf.node_labels.size() > kMaxNodeLabels) {
    return Fail(pos, "spec.nodeLabels", fmt::format("at most {} node labels are allowed", kMaxNodeLabels));
  }
  if (rf.node_taints.size() > kMaxNodeTaints) {
    return Fail(pos, "spec.nodeTaints", fmt::format("at most {} node taints are allowed", kMaxNodeTaints));
  }
  return Status::Ok();
}

Status CheckClusterQueue(const core::ClusterQueueSpec& cq, const PosFn& pos) {
  if (Status s = CheckName(cq.name, pos); !s.ok()) return s;
  if (!cq.cohort.empty()) {
    if (Status s = CheckName(cq.cohort, pos, "spec.cohortName"); !s.ok()) return s;
  }
  if (Status s = CheckResourceGroups(cq.resource_groups, !cq.cohort.empty(), "the cohort", pos); !s.ok()) {
    return s;
  }
  if (cq.preemption.borrow_within_cohort != core::BorrowWithinCohortPolicy::kNever &&
      cq.preemption.reclaim_within_cohort == core::ReclaimWithinCohortPolicy::kNever) {
    return Fail(pos, "spec.preemption.borrowWithinCohort.policy",
                "borrowWithinCohort requires reclaimWithinCohort other than Never");
  }
  return CheckWeight(cq.fair_weight, pos);
}

Status CheckCohort(const core::CohortSpec& cohort, const PosFn& pos) {
  if (Status s = CheckName(cohort.name, pos); !s.ok()) return s;
  if (Status s = CheckResourceGroups(cohort.resource_groups, !cohort.parent.empty(), "the parent", pos);
      !s.ok()) {
    return s;
  }
  return CheckWeight(cohort.fair_weight, pos);
}

Status CheckLocalQueue(const core::LocalQueueSpec& lq, const PosFn& pos) {
  if (Status s = CheckName(lq.name, pos); !s.ok()) return s;
  if (Status s = CheckNamespaceName(lq.ns, pos); !s.ok()) return s;
  if (lq.cluster_queue.empty())
    return Fail(pos, "spec.clusterQueue", "missing required field \"clusterQueue\"");
  return CheckWeight(lq.fair_weight, pos);
}

Status CheckPriorityClass(const core::PriorityClassSpec& pc, const PosFn& pos) {
  return CheckName(pc.name, pos);
}

Status CheckNamespace(const core::NamespaceSpec& ns, const PosFn& pos) {
  if (ns.name.empty()) return Fail(pos, "metadata.name", "must not be empty");
  if (!IsDnsName(ns.name, /*dots=*/false)) {
    return Fail(pos, "metadata.name",
                fmt::format("invalid namespace name \"{}\": must be a DNS label", ns.name));
  }
  return Status::Ok();
}

Status CheckResourceQuota(const core::ResourceQuotaObjSpec& rq, const PosFn& pos) {
  if (Status s = CheckName(rq.name, pos); !s.ok()) return s;
  if (Status s = CheckNamespaceName(rq.ns, pos); !s.ok()) return s;
  for (const auto& [key, value] : rq.hard) {
    if (value < 0) return Fail(pos, "spec.hard[" + key + "]", "must not be negative");
  }
  return Status::Ok();
}

Status CheckTopology(const core::TopologySpec& topo, const PosFn& pos) {
  if (Status s = CheckName(topo.name, pos); !s.ok()) return s;
  if (topo.levels.empty()) return Fail(pos, "spec.levels", "must list at least one level");
  if (topo.levels.size() > kMaxTopologyLevels) {
    return Fail(pos, "spec.levels", fmt::format("at most {} levels are allowed", kMaxTopologyLevels));
  }
  std::set<std::string> seen;
  for (size_t i = 0; i < topo.levels.size(); ++i) {
    std::string field = fmt::format("spec.levels[{}].nodeLabel", i);
    if (topo.levels[i].empty()) return Fail(pos, field, "must not be empty");
    if (!seen.insert(topo.levels[i]).second) {
      return Fail(pos, field, fmt::format("node label \"{}\" is used by two levels", topo.levels[i]));
    }
  }
  return Status::Ok();
}

}  // namespace artel::manifest::internal
