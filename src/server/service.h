// Service: what arteld's HTTP API (server/api.h) serves, whatever the mode.
//
// Two implementations: the standalone `Daemon` (server/daemon.h: journal +
// local runtime) and the Kubernetes controller (the cluster is the source of
// truth; its mutations answer FailedPrecondition "arteld runs in Kubernetes
// mode: use kubectl"). The API server and main.cc depend only on this
// interface. Most read views come from the control loop (loop/control_loop.h)
// that both implementations run on.
//
// Thread-safety: every method is safe to call from many threads.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/model.h"
#include "core/status.h"
#include "server/auth.h"

namespace artel::server {

// Filters of a workload list (`GET /api/v1/workloads`).
struct ListFilter {
  std::optional<std::set<std::string>> namespaces;  // nullopt = all
  std::map<std::string, std::string> labels;        // labelSelector k=v,...
  std::map<std::string, std::string>
      fields;  // status.phase, spec.queueName, status.clusterQueue, metadata.name
};

class Service {
 public:
  using Json = nlohmann::json;
  virtual ~Service() = default;

  // Ready to serve (GET /readyz; watch streams end when it turns false).
  virtual bool ready() const = 0;

  // ---- mutations ----------------------------------------------------------
  // Submits a workload. An empty `spec.name` takes `generate_name` plus a
  // random suffix. NotFound (field spec.queueName) for an unknown
  // LocalQueue; AlreadyExists for a taken name.
  virtual Result<Json> Submit(core::WorkloadSpec spec, const std::string& generate_name,
                              const std::string& user) = 0;
  // Submits several workloads at once: one result per item, in order, each
  // as Submit would answer it. A backend may make them durable together (the
  // daemon: one journal commit for the batch, before it returns); this
  // default submits them one by one.
  struct SubmitItem {
    core::WorkloadSpec spec;
    std::string generate_name;
  };
  virtual std::vector<Result<Json>> SubmitBatch(std::vector<SubmitItem> items, const std::string& user) {
    std::vector<Result<Json>> out;
    out.reserve(items.size());
    for (auto& it : items) out.push_back(Submit(std::move(it.spec), it.generate_name, user));
    return out;
  }
  virtual Result<Json> Cancel(const std::string& key, const std::string& user) = 0;
  // Applies a multi-document YAML body, all or nothing, authorized per
  // object for `who`.
  virtual Result<Json> Apply(std::string_view yaml, const Principal& who) = 0;

  // ---- queries (redacted for `who` where they take one) -------------------
  virtual Result<Json> GetWorkload(const std::string& key, const Principal& who) const = 0;
  virtual Json ListWorkloads(const ListFilter& filter, const Principal& who) const = 0;
  virtual Result<Json> Why(const std::string& key, const Principal& who) const = 0;
  virtual Json ClusterQueues() const = 0;
  virtual Json LocalQueues(const std::optional<std::set<std::string>>& namespaces) const = 0;
  virtual Json Cohorts() const = 0;
  virtual Json Nodes() const = 0;
  virtual Json Gpus(const Principal& who) const = 0;
  virtual Json Config(const Principal& who) const = 0;
  // The value of WorkloadPriorityClass `name`; nullopt when there is none.
  virtual std::optional<int32_t> PriorityClassValue(const std::string& name) const = 0;
  // The pod logs of a workload, the last `tail_bytes` of each pod's file.
  virtual Result<std::string> Logs(const std::string& key, const std::string& pod,
                                   int64_t tail_bytes) const = 0;
  // GET /metrics: Prometheus text.
  virtual std::string Metrics() const = 0;

  // ---- watch ----------------------------------------------------------------
  // Events with seq > `after` in the given namespaces (nullopt = all),
  // waiting up to `wait_ms` for the first one. *next is the seq to pass next.
  // Redacted for `who`.
  virtual std::vector<Json> EventsAfter(uint64_t after, int64_t wait_ms,
                                        const std::optional<std::set<std::string>>& ns, uint64_t* next,
                                        const Principal& who) const = 0;
  virtual uint64_t LatestEventSeq() const = 0;
};

}  // namespace artel::server
