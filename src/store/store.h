// Store: Artel's durable state, an append-only journal of typed records plus
// periodic snapshots, in SQLite (WAL mode). Format: docs/store.md.
//
// Every mutation the daemon accepts (config applied, workload submitted,
// cancelled, admitted, preempted, eviction completed, started, finished,
// node changed) is appended as a `Record` before it is acknowledged.
// `Append`/`AppendBatch` return only after the records are durable
// (committed with synchronous=FULL), so an acknowledged write survives
// kill -9. Concurrent appenders are group-committed: one transaction and
// one fsync serve every record queued while the previous commit ran.
//
// Recovery = the latest snapshot + every record after it, in order
// (`Recover`). Snapshots are written by the daemon from its own state; the
// store never interprets payloads.
//
// Thread-safety: all methods are safe to call from many threads.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace artel::store {

enum class RecordType : int {
  kConfigApplied = 1,      // payload: {"manifests": "<yaml text>"} (the full config)
  kWorkloadSubmitted = 2,  // payload: the workload spec as JSON (api/json codec)
  kWorkloadCancelled = 3,
  kWorkloadAdmitted = 4,  // payload: {"clusterQueue":..., "podSets":[{name,count,flavors{res:flavor}}]}
  kWorkloadEvicted = 5,   // payload: {"reason":..., "preemptor":...}
  kEvictionCompleted = 6,
  kWorkloadStarted = 7,    // payload: {"pids":[...], "pgid":N, "gpus":[...]}
  kWorkloadFinished = 8,   // payload: {"exitCode":N, "phase":"Succeeded"|"Failed"}
  kNodeChanged = 9,        // payload: node/GPU inventory as JSON
  kWorkloadDeleted = 10,   // payload: {"reason": "retention"}; the record of a finished workload is dropped
  kWorkloadStarting = 11,  // payload: {"startId", "retries", "pods":[{pod,gpus}]}; journaled before the fork
};
const char* RecordTypeName(RecordType t);

struct Record {
  uint64_t seq = 0;  // assigned by the store, strictly increasing
  RecordType type = RecordType::kWorkloadSubmitted;
  int64_t time_ms = 0;  // wall time of the event, from the caller's clock
  std::string key;      // "ns/name" for workload records; empty otherwise
  std::string payload;  // JSON text
};

struct Snapshot {
  uint64_t upto_seq = 0;  // covers records with seq <= upto_seq
  std::string state;      // JSON text produced by the daemon
};

struct Recovered {
  std::optional<Snapshot> snapshot;
  std::vector<Record> records;  // seq > snapshot->upto_seq, ascending
  int schema_version = 0;
};

struct StoreOptions {
  // How long Open waits for the store's lock while another process holds it.
  // A daemon killed with SIGKILL may leave a child of its own between fork
  // and exec for a moment, still holding the (close-on-exec) lock
  // descriptor; a live daemon holds it for good and Open fails after this.
  int64_t lock_wait_ms = 3000;
  // Test hook: when set, called before each commit; returning false makes
  // the commit fail as if the disk failed (fault injection).
  bool (*before_commit)(void* arg) = nullptr;
  void* before_commit_arg = nullptr;
};

class Store {
 public:
  // Opens (creating if needed) `<dir>/artel.db`, applies forward schema
  // migrations, and sets WAL mode.
  static Result<std::unique_ptr<Store>> Open(const std::string& dir, StoreOptions options = {});
  virtual ~Store() = default;

  // Appends durably; returns the assigned sequence numbers.
  virtual Result<uint64_t> Append(Record record) = 0;
  virtual Result<std::vector<uint64_t>> AppendBatch(std::vector<Record> records) = 0;

  // Writes a snapshot covering every record with seq <= upto_seq and drops
  // the journal prefix it covers.
  virtual Status WriteSnapshot(const Snapshot& snapshot) = 0;

  virtual Result<Recovered> Recover() = 0;

  virtual uint64_t last_seq() const = 0;
  static constexpr int kSchemaVersion = 3;
};

}  // namespace artel::store
