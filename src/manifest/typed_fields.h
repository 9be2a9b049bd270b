// Typed fields from annotations: the one place where the annotations that
// carry scheduling requests are read.
//
// Workloads carry some requests as annotations, because that is how Kueue,
// Volcano and KAI users write them and how they travel (the API's JSON, the
// journal, a Workload object in a cluster): Kueue's TAS podset-* keys, KAI's
// topology placement and GPU fraction keys, and the artel.dev/* keys the
// dialect readers write for Volcano and KAI gangs (manifest.h lists them).
// ReadTypedFields parses them once into core::GangSpec,
// core::TopologyRequest and core::GpuShareRequest, which are all the core
// reads. Every reader of workloads calls it: ParseWorkloads, the API codec,
// the scenario reader.
//
// Gang keys (min-member, topology, network-topology-mode, highest-tier-*,
// score) are taken from the workload's annotations first, then from each pod
// set's in order: the first one given wins. Topology keys are read per
// annotation map (the workload's into WorkloadSpec::topology, each pod set's
// into its own); GPU share keys per pod set.
//
// Thread-safety: pure functions.
#pragma once

#include <functional>
#include <string>

#include "core/model.h"
#include "core/status.h"

namespace artel::manifest {

inline constexpr char kAnnScore[] = "artel.dev/score";
inline constexpr char kAnnKueueRequired[] = "kueue.x-k8s.io/podset-required-topology";
inline constexpr char kAnnKueuePreferred[] = "kueue.x-k8s.io/podset-preferred-topology";
inline constexpr char kAnnKueueUnconstrained[] = "kueue.x-k8s.io/podset-unconstrained-topology";
inline constexpr char kAnnKueueSliceRequired[] = "kueue.x-k8s.io/podset-slice-required-topology";
inline constexpr char kAnnKueueSliceSize[] = "kueue.x-k8s.io/podset-slice-size";
inline constexpr char kAnnKueueGroupName[] = "kueue.x-k8s.io/podset-group-name";
inline constexpr char kAnnKaiGpuFraction[] = "gpu-fraction";
inline constexpr char kAnnKaiGpuMemory[] = "gpu-memory";
inline constexpr char kAnnKaiGpuDevices[] = "gpu-fraction-num-devices";

// Names the annotation map of the workload (pod_set < 0) or of pod set
// `pod_set`, for error fields ("metadata.annotations").
using AnnotationPath = std::function<std::string(int pod_set)>;

// Fills w->gang, w->topology and each pod set's topology and gpu_share from
// the annotations (replacing what they held). A value that cannot be read
// is an InvalidArgument error whose field names the annotation
// (`<path>[<key>]`) and whose message gives the value and what was expected;
// `w` is then left unchanged.
Status ReadTypedFields(core::WorkloadSpec* w, const AnnotationPath& path = nullptr);

// As ReadTypedFields, but a value that cannot be read leaves its field
// unset instead: for specs acknowledged before these checks existed (the
// journal), which must never be dropped on recovery.
void ReadTypedFieldsLenient(core::WorkloadSpec* w);

}  // namespace artel::manifest
