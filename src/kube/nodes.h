// NodeWatcher: Kubernetes Node objects as the engine's placement nodes.
//
// A Node informer feeds the control loop (through Controller::SetNodeSource):
// each Node becomes a core::placement::NodeSpec (NodeSpecFromObject) with its
// labels, taints, readiness and status.allocatable (cpu, memory, pods,
// nvidia.com/gpu, and the nvidia.com/mig-<profile> instances of NVIDIA's
// "mixed" MIG strategy, laid out on the node's GPUs). Changes reach the
// engine incrementally: a new node is added (Engine::AddNode), a readiness
// change flips the node (Engine::SetNodeReady); a node removed or whose
// labels, taints or capacity changed makes one Engine::SetNodes for the pass.
//
// A node lost while pods of a placed workload run on it (deleted, or its
// Ready condition not True for longer than `lost_grace_ms`) evicts those
// workloads with reason NodeFailures (Engine::Evict); the controller writes
// the eviction and the integration requeues them as after a preemption.
//
// Threads: the informer's callbacks only fill the inbox; Poll and SyncLocked
// run on the control loop's thread (SyncLocked with the loop's lock).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "core/engine.h"
#include "kube/client.h"
#include "kube/controller.h"
#include "server/log.h"

namespace artel::kube {

// A Node object as a placement node. Ready: the Ready condition is True and
// spec.unschedulable is not set. Errors name the field.
Result<core::placement::NodeSpec> NodeSpecFromObject(const Json& node);

struct NodeWatcherOptions {
  // A node whose Ready condition stays not True this long is lost.
  int64_t lost_grace_ms = 30000;
};

class NodeWatcher : public NodeSource {
 public:
  NodeWatcher(ClientConfig config, NodeWatcherOptions options, server::Logger* log);
  ~NodeWatcher() override;

  Status Start(std::function<void()> wake, int64_t timeout_ms) override;
  void Stop() override;
  bool Poll(int64_t now) override;
  void SyncLocked(core::Engine& engine, int64_t now) override;

  // Nodes lost so far (tests, metrics).
  uint64_t nodes_lost() const;

 private:
  void EvictOnLocked(core::Engine& engine, const std::string& node, const std::string& why, int64_t now);

  ClientConfig config_;
  NodeWatcherOptions options_;
  server::Logger* log_;
  std::function<void()> wake_;
  std::unique_ptr<Client> client_;
  std::unique_ptr<Informer> informer_;

  std::mutex in_mu_;
  std::map<std::string, std::optional<Json>> inbox_;  // name -> latest object (nullopt: deleted)
  bool synced_ = false;

  // Loop-thread state.
  std::map<std::string, std::optional<Json>> changes_;
  std::map<std::string, core::placement::NodeSpec> nodes_;
  std::map<std::string, int64_t> not_ready_since_;  // Ready condition not True since (ms)
  std::set<std::string> lost_;                      // nodes whose workloads were evicted
  mutable std::mutex stats_mu_;
  uint64_t nodes_lost_ = 0;
};

}  // namespace artel::kube
