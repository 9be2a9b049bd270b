// Redactor: what one API caller may learn about workloads (docs/security.md,
// "No tenant learns another tenant's names").
//
// An admin sees everything. A tenant sees its own workloads (those in its
// namespaces) by name, and every other workload only as a count per
// ClusterQueue ("preempted by a workload in ClusterQueue team-b",
// "waiting for 2 preempted workload(s) to stop: 2 workloads in ClusterQueue
// team-b"). The daemon applies it at the API boundary, where the request's
// principal is known, to workload status (`lastEviction`, `pending`), `why`
// answers and watch events:
//
//   * from structured fields first: the preemptor of an eviction, the
//     victims of a pending preemption (`would_preempt`), each with its
//     ClusterQueue; the core's messages that list them are rebuilt from
//     those fields (`PendingMessage`, `EvictionMessage`);
//   * then, as a safety net over every message string, `Scrub` replaces
//     each `namespace/name` token whose namespace is a known namespace the
//     caller may not see.
//
// Thread-safety: a Redactor is used by one request; the callbacks it was
// given must stay valid (and their data locked) while it is used.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/engine.h"
#include "server/auth.h"

namespace artel::server {

class Redactor {
 public:
  // `cluster_queue_of("ns/name")`: the workload's ClusterQueue, "" when
  // unknown. `is_namespace(ns)`: whether `ns` is a namespace arteld knows
  // (of a workload, a LocalQueue or a Namespace object); only such tokens
  // are scrubbed from free text, so that "nvidia.com/gpu" stays.
  Redactor(const Principal& who, std::function<std::string(const std::string&)> cluster_queue_of,
           std::function<bool(std::string_view)> is_namespace);

  // Nothing is hidden from this caller (an admin).
  bool all() const { return all_; }
  // Whether the caller may see the workload (or pod) `key` ("ns/name[/pod]")
  // by name.
  bool Visible(std::string_view key) const;

  // `key` when visible, else "a workload in ClusterQueue <cq>" (or "a
  // workload of another namespace" when its ClusterQueue is unknown).
  std::string Describe(const std::string& key, const std::string& cluster_queue) const;
  // Visible keys by name, the others counted per ClusterQueue, joined by
  // spaces: "team-a/x 2 workloads in ClusterQueue team-b".
  std::string DescribeList(const std::vector<std::string>& keys) const;
  // The visible keys of `keys`, in order.
  std::vector<std::string> VisibleOnly(const std::vector<std::string>& keys) const;

  // A pending reason's message (status.pending->message, why), with its
  // victims (`p.would_preempt`) described as above, then scrubbed.
  std::string PendingMessage(const core::PendingReason& p) const;
  // An eviction's message ("preempted by ns/name (ClusterQueue cq) to ..."),
  // with the preemptor described as above, then scrubbed.
  std::string EvictionMessage(const std::string& message, const std::string& preemptor,
                              const std::string& preemptor_cluster_queue) const;
  // Replaces every `ns/name[/...]` token of `text` whose namespace is known
  // and not visible with "a workload of another namespace".
  std::string Scrub(std::string text) const;

 private:
  const Principal& who_;
  bool all_;
  std::function<std::string(const std::string&)> cq_of_;
  std::function<bool(std::string_view)> is_namespace_;
};

}  // namespace artel::server
