// Kueue's label, annotation and scheduling-gate names that several parts of
// Kubernetes mode share (the integrations in jobs.cc, the topology ungater,
// the webhooks). docs/kubernetes.md.
#pragma once

namespace artel::kube {

inline constexpr char kQueueNameLabel[] = "kueue.x-k8s.io/queue-name";
inline constexpr char kPodSetLabel[] = "kueue.x-k8s.io/podset";
inline constexpr char kWorkloadAnnotation[] = "kueue.x-k8s.io/workload";
inline constexpr char kAdmissionGate[] = "kueue.x-k8s.io/admission";
inline constexpr char kTopologyGate[] = "kueue.x-k8s.io/topology";

}  // namespace artel::kube
