// arteld's journal, typed: one struct per record payload, the phase of a
// workload as an enum, the reduction of the journal into one entry per
// workload (`Model`, the snapshot form) and the snapshot's encoding. Every
// field name of a payload is written and read here and nowhere else; the
// daemon builds structs and gets structs back. The format is documented in
// docs/store.md ("Payloads").
//
// Compatibility: decoding accepts every payload an earlier arteld wrote
// (missing fields take the defaults that earlier journals imply: no
// `killAt` on a cancel means "cancelled at once", no `startIds` on an
// admission means "starts were not journaled before their fork", no
// `uuids` in a placement means "the host's old one-node GPU order"), and
// encoding writes the same JSON field names as before, so an older journal
// or snapshot recovers unchanged and a newer daemon's records read the same.
// A payload that is not JSON decodes as the empty payload of its type (as
// it always did); a workload spec, an admission's pod sets or a placement
// that cannot be read is reported by the field's own error (`pod_sets_error`,
// `placement_error`) so that recovery can requeue or place again.
//
// The pieces that have their own codec elsewhere stay in that form: the
// workload spec is the API's JSON (api::WorkloadFromJson decodes it).
//
// Pure functions and plain structs: thread-compatible.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/engine.h"
#include "core/placement/placement.h"
#include "core/status.h"
#include "store/store.h"

namespace artel::server::journal {

using Json = nlohmann::json;

// A workload's phase in the journal. Pending, Admitted, Evicting (its pods
// are being stopped), Cancelling (cancelled while pods may run: they keep
// the admission until they are gone), then the final Finished or Cancelled
// (final until the name is submitted again).
enum class Phase : uint8_t { kPending, kAdmitted, kEvicting, kCancelling, kFinished, kCancelled };
const char* PhaseName(Phase phase);
std::optional<Phase> ParsePhase(std::string_view name);
inline bool IsFinal(Phase p) { return p == Phase::kFinished || p == Phase::kCancelled; }

// ---------------------------------------------------------------- payloads

struct ConfigApplied {  // the full configuration after an apply
  std::string manifests;
};

struct Submitted {  // the workload spec, as the API's JSON codec writes it
  Json spec;
};

struct Cancelled {
  std::string user;
  // When pods may run: their SIGKILL deadline; the workload is Cancelling
  // until an EvictionCompleted says they are gone. Without it (older
  // journals, or nothing ran) it is cancelled at once.
  std::optional<int64_t> kill_at_ms;
};

// One pod of a journaled placement (the placement library's PodPlacement)
// with what recovery maps it back to this start's node pools by.
struct PlacedPod {
  core::placement::PodPlacement placement;
  std::string node_name;                          // "<host>/<pool>"; "" before node pools
  std::optional<std::vector<std::string>> uuids;  // of the GPUs it names (whole, MIG, shares)
};
struct JournaledPlacement {
  std::vector<PlacedPod> pods;
  std::vector<int32_t> placed;
  std::vector<std::map<std::string, core::Amount>> group_requests;
  core::placement::Placement ToPlacement() const;
};
// The GPU indices a pod placement names: whole GPUs, then MIG instances',
// then memory shares' GPUs (the order of `PlacedPod::uuids`).
std::vector<int32_t> PlacedGpus(const core::placement::PodPlacement& pod);

struct Admitted {
  std::string cluster_queue;
  std::vector<core::PodSetAssignment> pod_sets;
  std::string pod_sets_error;  // non-empty: the pod sets could not be read (the admission cannot be restored)
  std::optional<int64_t> admitted_at_ms;
  bool start_ids = false;          // every start of this admission is journaled before its fork
  uint64_t admission_seq = 0;      // the engine's preemption tie-break
  std::optional<int64_t> used_ms;  // the time it ran in earlier admissions
  std::optional<JournaledPlacement> placement;
  std::string placement_error;  // non-empty: a placement was journaled but cannot be read
};

struct Evicted {
  std::string reason;  // core::EvictionReasonName
  std::string preemptor;
  std::string message;
  std::optional<int64_t> kill_at_ms;  // the pods' SIGKILL deadline, when they run
  std::optional<int64_t> used_ms;     // run time of all its admissions, this one included
};

// What a restart shows of a workload that ended (finished, or cancelled
// after it ran).
struct FinalPod {
  std::string pod;
  int64_t pid = 0;
  std::vector<int> gpus;
  std::optional<int> exit_code;
};
struct FinalStatus {
  int32_t retries = 0;
  int64_t started_at_ms = -1;
  int64_t admitted_at_ms = -1;
  std::vector<FinalPod> pods;
  // WorkloadFinished only.
  std::optional<int> exit_code;
  std::string phase;  // "Succeeded" | "Failed"
  std::string message;
};

struct EvictionCompleted {
  std::string reason;  // "", "RecoveredWithoutPods", or "Cancelled" (then `status` is the final one)
  FinalStatus status;
};

struct StartingPod {
  std::string pod;
  std::vector<int> gpus;
};
struct Starting {  // journaled before the pods of a start are forked
  std::string start_id;
  int32_t retries = 0;
  std::vector<StartingPod> pods;
};

struct StartedPod {
  std::string pod;
  int64_t pid = 0;
  int64_t pgid = 0;
  std::string exit_file;
  std::string start_file;
  std::vector<int> gpus;
};
struct Started {
  std::vector<StartedPod> pods;
  int32_t retries = 0;
  std::string start_id;
  int64_t started_at_ms = -1;
  bool recovered = false;  // journaled by recovery for pods it adopted
};

struct Finished {
  FinalStatus status;  // with exit_code, phase and message
};

struct Deleted {  // a finished workload's record dropped after retention
  std::string reason;
  std::optional<int64_t> finished_ms;  // of the incarnation it drops
};

// Record types the daemon no longer writes (NodeChanged), read and ignored.
struct Ignored {};

using Payload = std::variant<ConfigApplied, Submitted, Cancelled, Admitted, Evicted, EvictionCompleted,
                             Starting, Started, Finished, Deleted, Ignored>;

store::RecordType TypeOf(const Payload& payload);
// The record for `payload` (its type from the payload's), keyed `key`
// ("" for ConfigApplied), at `time_ms`.
store::Record MakeRecord(std::string key, int64_t time_ms, const Payload& payload);
std::string EncodePayload(const Payload& payload);
// Never fails: a payload that is not JSON is its type's empty payload.
Payload DecodePayload(store::RecordType type, std::string_view text);

// ---------------------------------------------------------------- the model

// A workload as the journal has it, reduced (the snapshot form).
struct WorkloadRecord {
  Json spec;  // the API's JSON form
  int64_t submitted_ms = 0;
  uint64_t order = 0;  // submission order
  Phase phase = Phase::kPending;
  std::optional<Admitted> admission;
  std::optional<Starting> starting;
  std::optional<Started> started;
  std::optional<FinalStatus> result;
  int64_t finished_ms = -1;  // when it became Finished, Cancelled or Cancelling
  int64_t kill_at_ms = -1;   // journaled SIGKILL deadline of a cancel or eviction
  // The time it ran in earlier admissions: as of its last admission
  // record, then of its last eviction record (this admission's run
  // included).
  int64_t used_ms = 0;
};

struct Model {
  std::map<std::string, WorkloadRecord> workloads;
  uint64_t order = 0;  // the last submission's order
  std::string config;  // the last ConfigApplied's manifests
};

// Applies one record (the journal's state machine; docs/daemon.md).
void Reduce(const store::Record& record, Model* model);
void Reduce(const store::Record& record, const Payload& payload, Model* model);

std::string EncodeSnapshot(const Model& model);
// Replaces `*model` with the snapshot's; a snapshot that is not a JSON
// object is refused (Internal) and `*model` is left as it was.
Status DecodeSnapshot(std::string_view text, Model* model);

}  // namespace artel::server::journal
