// Per-object rules of the manifest layer (internal to src/manifest).
//
// Each `Check*` function enforces the rules that need only one object (the
// ones Kueue's admission webhooks enforce per object): quota limits,
// resource-group shape, name syntax, selector operators. They are shared by
// the parser, which knows exact YAML positions and passes a `PosFn` that
// resolves a field path to its line and column, and by `Validate`, which
// only has each object's `pos` and passes a constant `PosFn`. Field paths are
// relative to the object's root (`spec.resourceGroups[0]...`).
//
// Thread-safety: pure functions.
#pragma once

#include <functional>
#include <string>

#include "core/model.h"
#include "core/status.h"

namespace artel::manifest::internal {

using PosFn = std::function<SourcePos(const std::string& field)>;

// Kueue's limits on list sizes (API validation markers).
inline constexpr size_t kMaxResourceGroups = 16;
inline constexpr size_t kMaxFlavorsPerGroup = 64;
inline constexpr size_t kMaxCoveredResources = 64;
inline constexpr size_t kMaxNodeLabels = 8;
inline constexpr size_t kMaxNodeTaints = 8;
inline constexpr size_t kMaxTopologyLevels = 8;

Status CheckFlavor(const core::ResourceFlavorSpec& rf, const PosFn& pos);
Status CheckClusterQueue(const core::ClusterQueueSpec& cq, const PosFn& pos);
Status CheckCohort(const core::CohortSpec& cohort, const PosFn& pos);
Status CheckLocalQueue(const core::LocalQueueSpec& lq, const PosFn& pos);
Status CheckPriorityClass(const core::PriorityClassSpec& pc, const PosFn& pos);
Status CheckNamespace(const core::NamespaceSpec& ns, const PosFn& pos);
Status CheckResourceQuota(const core::ResourceQuotaObjSpec& rq, const PosFn& pos);
Status CheckTopology(const core::TopologySpec& topo, const PosFn& pos);

// A `PosFn` that answers `pos` for every field.
PosFn ConstantPos(const SourcePos& pos);

// Moves every object of `from` to the end of the matching list of *to.
void AppendConfig(core::Config&& from, core::Config* to);

}  // namespace artel::manifest::internal
