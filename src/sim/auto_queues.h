// Queues derived from a trace (`artel sim --auto-queues`) and the mapping of
// trace tenants onto the LocalQueues of a given config.
//
// `BuildAutoQueues` turns a trace into a Kueue configuration: one
// ResourceFlavor `gpu`, one ClusterQueue per tenant in a single cohort
// `trace`, each with a nominal quota of GPUs proportional to the tenant's
// GPU-hours in the trace (largest-remainder rounding, so the quotas add up to
// exactly the capacity), unlimited borrowing of idle GPUs and
// `reclaimWithinCohort: Any`, and a LocalQueue `default` in a namespace named
// after the tenant. The result is also returned as Kueue YAML, which is what
// the config is parsed from, so the YAML written next to a report replays
// identically and can be edited for `--compare`.
//
// Thread-safety: pure functions.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/model.h"
#include "core/status.h"
#include "sim/replay.h"
#include "sim/trace.h"

namespace artel::sim {

struct AutoQueues {
  std::string yaml;
  core::Config config;
  std::vector<TenantBinding> tenants;  // by decreasing GPU-hours, then name
  core::Amount capacity = 0;           // milli-GPUs
};

// `gpus` is the cluster size in whole GPUs; 0 picks `DefaultGpus`, and at
// least the largest job.
Result<AutoQueues> BuildAutoQueues(const std::vector<TraceJob>& jobs, int64_t gpus,
                                   const std::string& resource = "nvidia.com/gpu");

// The default cluster size for a trace: the 99th percentile over time of its
// unconstrained GPU demand (every job running from its submission for its
// duration). Such a cluster queues work during the trace's peaks only.
int64_t DefaultGpus(const std::vector<TraceJob>& jobs);

// A Kubernetes-safe name for a tenant: lower case, [a-z0-9-], at most 63
// characters, never empty.
std::string SanitizeName(const std::string& tenant);

// Binds every tenant of `jobs` to a LocalQueue of `config`. `explicit_map`
// maps tenant -> "namespace/queue" (or "namespace", meaning its first
// LocalQueue). Otherwise a tenant whose sanitized name is a namespace with
// LocalQueues goes to its first LocalQueue (by name); any other goes to
// `fallback` ("namespace/queue") when given, or is an error naming it.
// Guarantees come from `NamespaceGuarantee`.
Result<std::vector<TenantBinding>> BindTenants(const std::vector<TraceJob>& jobs, const core::Config& config,
                                               const std::map<std::string, std::string>& explicit_map,
                                               const std::string& fallback, const std::string& resource);

}  // namespace artel::sim
