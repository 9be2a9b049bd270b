// SQLite implementation of `Store`. The on-disk format (tables, record
// payloads, schema versions and migrations) is documented in docs/store.md;
// keep the two in step.
//
// Group commit follows the leader/follower pattern: every appender queues a
// `Writer` and waits. The writer at the head of the queue becomes the leader:
// it takes every queued writer (up to `kMaxGroupRecords` records), commits
// them in one transaction (one WAL fsync), then wakes the group and hands
// leadership to the next queued writer. While the leader is inside SQLite the
// queue keeps filling, so the batch size adapts to the fsync latency: one
// thread gets one record per fsync, many threads share each fsync.
#include "store/store.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <ctime>
#include <deque>
#include <filesystem>
#include <mutex>
#include <utility>

#include "base/thread_annotations.h"

namespace artel::store {

const char* RecordTypeName(RecordType t) {
  switch (t) {
    case RecordType::kConfigApplied: return "ConfigApplied";
    case RecordType::kWorkloadSubmitted: return "WorkloadSubmitted";
    case RecordType::kWorkloadCancelled: return "WorkloadCancelled";
    case RecordType::kWorkloadAdmitted: return "WorkloadAdmitted";
    case RecordType::kWorkloadEvicted: return "WorkloadEvicted";
    case RecordType::kEvictionCompleted: return "EvictionCompleted";
    case RecordType::kWorkloadStarted: return "WorkloadStarted";
    case RecordType::kWorkloadFinished: return "WorkloadFinished";
    case RecordType::kNodeChanged: return "NodeChanged";
    case RecordType::kWorkloadDeleted: return "WorkloadDeleted";
    case RecordType::kWorkloadStarting: return "WorkloadStarting";
  }
  return "Unknown";
}

namespace {

constexpr int kMinRecordType = static_cast<int>(RecordType::kConfigApplied);
constexpr int kMaxRecordType = static_cast<int>(RecordType::kWorkloadStarting);

// One group never exceeds this many records, so that a burst cannot make a
// single transaction (and the latency of everyone in it) unbounded.
constexpr size_t kMaxGroupRecords = 1024;

Status Internal(std::string msg) { return Status(StatusCode::kInternal, std::move(msg)); }

struct StmtDeleter {
  void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
};
using Stmt = std::unique_ptr<sqlite3_stmt, StmtDeleter>;

struct DbDeleter {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
using Db = std::unique_ptr<sqlite3, DbDeleter>;

Status SqlError(sqlite3* db, const std::string& what) {
  return Internal(what + ": " + sqlite3_errmsg(db) + " (sqlite code " +
                  std::to_string(sqlite3_extended_errcode(db)) + ")");
}

Status Exec(sqlite3* db, const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err != nullptr ? err : sqlite3_errmsg(db);
    sqlite3_free(err);
    return Internal(std::string("sqlite: ") + msg + " in `" + sql + "`");
  }
  return Status::Ok();
}

Result<Stmt> Prepare(sqlite3* db, const char* sql) {
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &s, nullptr) != SQLITE_OK) {
    return SqlError(db, std::string("prepare `") + sql + "`");
  }
  return Stmt(s);
}

// Returns the single integer a query yields (0 when it yields NULL or no row).
Result<int64_t> QueryInt(sqlite3* db, const char* sql) {
  auto stmt = Prepare(db, sql);
  if (!stmt.ok()) return stmt.status();
  int rc = sqlite3_step(stmt->get());
  if (rc == SQLITE_ROW) return static_cast<int64_t>(sqlite3_column_int64(stmt->get(), 0));
  if (rc == SQLITE_DONE) return int64_t{0};
  return SqlError(db, std::string("query `") + sql + "`");
}

std::string ColumnText(sqlite3_stmt* s, int col) {
  const unsigned char* p = sqlite3_column_text(s, col);
  if (p == nullptr) return std::string();
  return std::string(reinterpret_cast<const char*>(p), static_cast<size_t>(sqlite3_column_bytes(s, col)));
}

// ---------------------------------------------------------------------------
// Schema. Version 3 is the current one; see docs/store.md for each column.
constexpr char kCreateCurrent[] = R"sql(
CREATE TABLE journal (
  seq     INTEGER PRIMARY KEY,
  type    INTEGER NOT NULL,
  time_ms INTEGER NOT NULL,
  key     TEXT    NOT NULL,
  payload TEXT    NOT NULL
);
CREATE TABLE snapshots (
  upto_seq INTEGER PRIMARY KEY,
  state    TEXT    NOT NULL
);
PRAGMA user_version = 3;
)sql";

// Version 0 was the prototype layout: one `records` table with the record
// type spelled as its name and no snapshots. Migrating it renames the table,
// maps the names to the numeric `RecordType`, and adds `snapshots`. A name
// that is not a known type fails the migration (and the transaction rolls it
// back) rather than guessing.
constexpr char kMigrateV0ToV1[] = R"sql(
CREATE TABLE journal (
  seq     INTEGER PRIMARY KEY,
  type    INTEGER NOT NULL,
  time_ms INTEGER NOT NULL,
  key     TEXT    NOT NULL,
  payload TEXT    NOT NULL
);
INSERT INTO journal (seq, type, time_ms, key, payload)
  SELECT id,
         CASE kind
           WHEN 'ConfigApplied' THEN 1
           WHEN 'WorkloadSubmitted' THEN 2
           WHEN 'WorkloadCancelled' THEN 3
           WHEN 'WorkloadAdmitted' THEN 4
           WHEN 'WorkloadEvicted' THEN 5
           WHEN 'EvictionCompleted' THEN 6
           WHEN 'WorkloadStarted' THEN 7
           WHEN 'WorkloadFinished' THEN 8
           WHEN 'NodeChanged' THEN 9
         END,
         COALESCE(at_ms, 0), COALESCE(key, ''), COALESCE(payload, '')
  FROM records ORDER BY id;
DROP TABLE records;
CREATE TABLE snapshots (
  upto_seq INTEGER PRIMARY KEY,
  state    TEXT    NOT NULL
);
PRAGMA user_version = 1;
)sql";

struct Migration {
  int from;
  const char* sql;
};
// Version 2 adds record type 10 (WorkloadDeleted) with the same tables: the
// step only raises the version, so that an older binary, which would refuse
// the new type in the middle of recovery, refuses the database up front.
constexpr char kMigrateV1ToV2[] = R"sql(
PRAGMA user_version = 2;
)sql";

// Version 3 adds record type 11 (WorkloadStarting), the same way.
constexpr char kMigrateV2ToV3[] = R"sql(
PRAGMA user_version = 3;
)sql";

constexpr Migration kMigrations[] = {
    {0, kMigrateV0ToV1},
    {1, kMigrateV1ToV2},
    {2, kMigrateV2ToV3},
};

// Brings the database to `Store::kSchemaVersion` inside one transaction, so a
// crash mid-migration leaves the old version intact.
Status Migrate(sqlite3* db, int* version_out) {
  if (Status s = Exec(db, "BEGIN IMMEDIATE"); !s.ok()) return s;
  auto fail = [&](Status s) {
    Exec(db, "ROLLBACK");
    return s;
  };
  auto version = QueryInt(db, "PRAGMA user_version");
  if (!version.ok()) return fail(version.status());
  int v = static_cast<int>(*version);
  if (v > Store::kSchemaVersion) {
    return fail(FailedPrecondition("store schema version " + std::to_string(v) +
                                   " is newer than this build supports (" +
                                   std::to_string(Store::kSchemaVersion) + "); upgrade Artel"));
  }
  if (v == 0) {
    auto tables = QueryInt(db, "SELECT count(*) FROM sqlite_master WHERE type = 'table'");
    if (!tables.ok()) return fail(tables.status());
    if (*tables == 0) {  // A fresh database: create the current schema directly.
      if (Status s = Exec(db, kCreateCurrent); !s.ok()) return fail(s);
      v = Store::kSchemaVersion;
    }
  }
  while (v < Store::kSchemaVersion) {
    const Migration* step = nullptr;
    for (const Migration& m : kMigrations) {
      if (m.from == v) step = &m;
    }
    if (step == nullptr) return fail(Internal("no migration from schema version " + std::to_string(v)));
    if (Status s = Exec(db, step->sql); !s.ok()) {
      // An unknown v0 kind maps to NULL and trips `type NOT NULL`.
      return fail(Internal("store: migration from schema version " + std::to_string(v) +
                           " failed: " + sqlite3_errmsg(db)));
    }
    auto now = QueryInt(db, "PRAGMA user_version");
    if (!now.ok()) return fail(now.status());
    v = static_cast<int>(*now);
  }
  if (Status s = Exec(db, "COMMIT"); !s.ok()) return fail(s);
  *version_out = v;
  return Status::Ok();
}

bool IsStickyError(int rc) {
  int primary = rc & 0xff;
  return primary == SQLITE_IOERR || primary == SQLITE_FULL || primary == SQLITE_CORRUPT ||
         primary == SQLITE_NOTADB;
}

class SqliteStore final : public Store {
 public:
  SqliteStore(Db db, int lock_fd, StoreOptions options)
      : db_(std::move(db)), lock_fd_(lock_fd), options_(options) {}

  ~SqliteStore() override {
    insert_.reset();
    db_.reset();
    if (lock_fd_ >= 0) close(lock_fd_);  // Releases the flock.
  }

  // Before the store is shared: no lock needed.
  Status Init() NO_THREAD_SAFETY_ANALYSIS {
    int version = 0;
    if (Status s = Migrate(db_.get(), &version); !s.ok()) return s;
    schema_version_ = version;
    auto max_seq = QueryInt(db_.get(), "SELECT max(seq) FROM journal");
    if (!max_seq.ok()) return max_seq.status();
    auto max_snap = QueryInt(db_.get(), "SELECT max(upto_seq) FROM snapshots");
    if (!max_snap.ok()) return max_snap.status();
    snapshot_seq_ = static_cast<uint64_t>(*max_snap);
    last_seq_.store(std::max(static_cast<uint64_t>(*max_seq), snapshot_seq_));
    auto insert =
        Prepare(db_.get(), "INSERT INTO journal (seq, type, time_ms, key, payload) VALUES (?, ?, ?, ?, ?)");
    if (!insert.ok()) return insert.status();
    insert_ = std::move(insert).value();
    return Status::Ok();
  }

  Result<uint64_t> Append(Record record) override {
    std::vector<Record> one;
    one.push_back(std::move(record));
    auto seqs = Write(&one);
    if (!seqs.ok()) return seqs.status();
    return seqs->front();
  }

  Result<std::vector<uint64_t>> AppendBatch(std::vector<Record> records) override {
    if (records.empty()) return std::vector<uint64_t>{};
    return Write(&records);
  }

  Status WriteSnapshot(const Snapshot& snapshot) override {
    std::lock_guard<std::mutex> db_lock(db_mu_);
    if (!sticky_.ok()) return sticky_;
    uint64_t last = last_seq_.load();
    if (snapshot.upto_seq > last) {
      return InvalidArgument("snapshot upto_seq " + std::to_string(snapshot.upto_seq) +
                             " is beyond the last record " + std::to_string(last));
    }
    if (snapshot.upto_seq < snapshot_seq_) {
      return InvalidArgument("snapshot upto_seq " + std::to_string(snapshot.upto_seq) +
                             " is older than the current snapshot " + std::to_string(snapshot_seq_));
    }
    sqlite3* db = db_.get();
    if (Status s = Exec(db, "BEGIN IMMEDIATE"); !s.ok()) return s;
    Status s = WriteSnapshotLocked(snapshot);
    if (s.ok() && options_.before_commit != nullptr && !options_.before_commit(options_.before_commit_arg)) {
      s = Internal("snapshot commit failed: injected fault");
    }
    if (s.ok() && sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr) != SQLITE_OK) {
      s = SqlError(db, "commit snapshot");
      NoteSticky(s);
    }
    if (!s.ok()) {
      Exec(db, "ROLLBACK");
      return s;
    }
    snapshot_seq_ = snapshot.upto_seq;
    return Status::Ok();
  }

  Result<Recovered> Recover() override {
    std::lock_guard<std::mutex> db_lock(db_mu_);
    sqlite3* db = db_.get();
    // One read transaction, so the snapshot and the journal are consistent.
    if (Status s = Exec(db, "BEGIN"); !s.ok()) return s;
    auto result = RecoverLocked();
    Exec(db, "COMMIT");
    return result;
  }

  uint64_t last_seq() const override { return last_seq_.load(); }

 private:
  struct Writer {
    std::vector<Record>* records = nullptr;
    Status status;
    uint64_t first_seq = 0;
    bool done = false;
    std::condition_variable cv;
  };

  Result<std::vector<uint64_t>> Write(std::vector<Record>* records) {
    for (const Record& r : *records) {
      int t = static_cast<int>(r.type);
      if (t < kMinRecordType || t > kMaxRecordType) {
        return InvalidArgument("record type " + std::to_string(t) + " is not a known RecordType");
      }
    }
    Writer w;
    w.records = records;
    base::UniqueLock lock(mu_);
    writers_.push_back(&w);
    while (!w.done && &w != writers_.front()) w.cv.wait(lock.get());
    if (!w.done) {
      // Leader: take a group from the head of the queue (always including
      // this writer) and commit it with the queue unlocked.
      std::vector<Writer*> group;
      size_t n = 0;
      for (Writer* x : writers_) {
        if (!group.empty() && n + x->records->size() > kMaxGroupRecords) break;
        group.push_back(x);
        n += x->records->size();
      }
      lock.unlock();
      CommitGroup(group);
      lock.lock();
      for (Writer* x : group) {
        writers_.pop_front();
        x->done = true;
        if (x != &w) x->cv.notify_one();
      }
      if (!writers_.empty()) writers_.front()->cv.notify_one();
    }
    if (!w.status.ok()) return w.status;
    std::vector<uint64_t> seqs(records->size());
    for (size_t i = 0; i < seqs.size(); ++i) seqs[i] = w.first_seq + i;
    return seqs;
  }

  // Commits every record of `group` in one transaction and fills each
  // writer's `status` and `first_seq`. Sequence numbers are assigned here, in
  // queue order, and only advance when the commit succeeds.
  void CommitGroup(const std::vector<Writer*>& group) {
    std::lock_guard<std::mutex> db_lock(db_mu_);
    Status s = CommitGroupLocked(group);
    for (Writer* x : group) x->status = s;
  }

  Status CommitGroupLocked(const std::vector<Writer*>& group) REQUIRES(db_mu_) {
    if (!sticky_.ok()) return sticky_;
    sqlite3* db = db_.get();
    if (sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) != SQLITE_OK) {
      return SqlError(db, "begin");
    }
    uint64_t seq = last_seq_.load();
    Status s;
    for (Writer* x : group) {
      x->first_seq = seq + 1;
      for (const Record& r : *x->records) {
        ++seq;
        sqlite3_stmt* st = insert_.get();
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, static_cast<sqlite3_int64>(seq));
        sqlite3_bind_int(st, 2, static_cast<int>(r.type));
        sqlite3_bind_int64(st, 3, r.time_ms);
        sqlite3_bind_text(st, 4, r.key.data(), static_cast<int>(r.key.size()), SQLITE_STATIC);
        sqlite3_bind_text(st, 5, r.payload.data(), static_cast<int>(r.payload.size()), SQLITE_STATIC);
        if (sqlite3_step(st) != SQLITE_DONE) {
          s = SqlError(db, "append record");
          break;
        }
      }
      if (!s.ok()) break;
    }
    sqlite3_reset(insert_.get());
    sqlite3_clear_bindings(insert_.get());
    if (s.ok() && options_.before_commit != nullptr && !options_.before_commit(options_.before_commit_arg)) {
      s = Internal("commit failed: injected fault");
    }
    if (s.ok() && sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr) != SQLITE_OK) {
      s = SqlError(db, "commit");
    }
    if (!s.ok()) {
      NoteSticky(s);
      if (sqlite3_get_autocommit(db) == 0) sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
      return s;
    }
    last_seq_.store(seq);
    return Status::Ok();
  }

  // After an I/O error the state of the file is uncertain (a failed fsync
  // may have dropped pages), so every later write fails too until the store
  // is reopened and recovers from what is really on disk.
  void NoteSticky(const Status& s) REQUIRES(db_mu_) {
    if (IsStickyError(sqlite3_extended_errcode(db_.get()))) sticky_ = s;
  }

  Status WriteSnapshotLocked(const Snapshot& snapshot) REQUIRES(db_mu_) {
    sqlite3* db = db_.get();
    auto ins = Prepare(db, "INSERT OR REPLACE INTO snapshots (upto_seq, state) VALUES (?, ?)");
    if (!ins.ok()) return ins.status();
    sqlite3_bind_int64(ins->get(), 1, static_cast<sqlite3_int64>(snapshot.upto_seq));
    sqlite3_bind_text(ins->get(), 2, snapshot.state.data(), static_cast<int>(snapshot.state.size()),
                      SQLITE_STATIC);
    if (sqlite3_step(ins->get()) != SQLITE_DONE) return SqlError(db, "insert snapshot");
    for (const char* sql :
         {"DELETE FROM snapshots WHERE upto_seq < ?", "DELETE FROM journal WHERE seq <= ?"}) {
      auto del = Prepare(db, sql);
      if (!del.ok()) return del.status();
      sqlite3_bind_int64(del->get(), 1, static_cast<sqlite3_int64>(snapshot.upto_seq));
      if (sqlite3_step(del->get()) != SQLITE_DONE) return SqlError(db, "truncate after snapshot");
    }
    return Status::Ok();
  }

  Result<Recovered> RecoverLocked() REQUIRES(db_mu_) {
    sqlite3* db = db_.get();
    Recovered out;
    out.schema_version = schema_version_;
    uint64_t after = 0;
    {
      auto q = Prepare(db, "SELECT upto_seq, state FROM snapshots ORDER BY upto_seq DESC LIMIT 1");
      if (!q.ok()) return q.status();
      int rc = sqlite3_step(q->get());
      if (rc == SQLITE_ROW) {
        Snapshot snap;
        snap.upto_seq = static_cast<uint64_t>(sqlite3_column_int64(q->get(), 0));
        snap.state = ColumnText(q->get(), 1);
        after = snap.upto_seq;
        out.snapshot = std::move(snap);
      } else if (rc != SQLITE_DONE) {
        return SqlError(db, "read snapshot");
      }
    }
    auto q = Prepare(db, "SELECT seq, type, time_ms, key, payload FROM journal WHERE seq > ? ORDER BY seq");
    if (!q.ok()) return q.status();
    sqlite3_bind_int64(q->get(), 1, static_cast<sqlite3_int64>(after));
    int rc;
    while ((rc = sqlite3_step(q->get())) == SQLITE_ROW) {
      Record r;
      r.seq = static_cast<uint64_t>(sqlite3_column_int64(q->get(), 0));
      int t = sqlite3_column_int(q->get(), 1);
      if (t < kMinRecordType || t > kMaxRecordType) {
        return Internal("journal record " + std::to_string(r.seq) + " has unknown type " + std::to_string(t));
      }
      r.type = static_cast<RecordType>(t);
      r.time_ms = sqlite3_column_int64(q->get(), 2);
      r.key = ColumnText(q->get(), 3);
      r.payload = ColumnText(q->get(), 4);
      out.records.push_back(std::move(r));
    }
    if (rc != SQLITE_DONE) return SqlError(db, "read journal");
    return out;
  }

  // Queue of appenders; the front one is the current (or next) leader.
  std::mutex mu_;
  std::deque<Writer*> writers_ GUARDED_BY(mu_);

  // Serialises every use of `db_` (the leader's commit, snapshots, recovery).
  std::mutex db_mu_;
  Db db_ GUARDED_BY(db_mu_);
  Stmt insert_ GUARDED_BY(db_mu_);
  Status sticky_ GUARDED_BY(db_mu_);
  uint64_t snapshot_seq_ GUARDED_BY(db_mu_) = 0;
  int schema_version_ = 0;
  std::atomic<uint64_t> last_seq_{0};

  int lock_fd_;
  StoreOptions options_;
};

// fsyncs a directory so that a file just created in it survives a crash.
void SyncDir(const std::string& dir) {
  int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    fsync(fd);
    close(fd);
  }
}

}  // namespace

Result<std::unique_ptr<Store>> Store::Open(const std::string& dir, StoreOptions options) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return InvalidArgument("store: cannot create directory " + dir + ": " + ec.message());

  // One process per store: seqs are assigned in memory, so a second writer
  // would collide. The kernel drops the lock when the process dies.
  std::string lock_path = dir + "/LOCK";
  int lock_fd = open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (lock_fd < 0) return InvalidArgument("store: cannot open " + lock_path + ": " + std::strerror(errno));
  // Polled up to options.lock_wait_ms (see StoreOptions): the holder may be
  // a dead daemon's child on its way to exec.
  const auto lock_deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(options.lock_wait_ms);
  while (flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    if (err == EWOULDBLOCK && std::chrono::steady_clock::now() < lock_deadline) {
      struct timespec ts {
        0, 20 * 1000 * 1000
      };
      nanosleep(&ts, nullptr);
      continue;
    }
    close(lock_fd);
    return FailedPrecondition("store: " + dir + " is in use by another process (" + std::strerror(err) + ")");
  }

  std::string path = dir + "/artel.db";
  bool existed = std::filesystem::exists(path, ec);
  // The journal and its snapshots are arteld's alone (0600): created empty
  // with that mode (an empty file is an empty database; SQLite gives the
  // -wal and -shm files the database's mode), and tightened if older.
  if (!existed) {
    int fd = open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0) close(fd);
  }
  for (const char* suffix : {"", "-wal", "-shm"}) chmod((path + suffix).c_str(), 0600);
  fchmod(lock_fd, 0600);
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &raw,
                           SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  Db db(raw);
  if (rc != SQLITE_OK) {
    std::string msg = raw != nullptr ? sqlite3_errmsg(raw) : "out of memory";
    close(lock_fd);
    return Internal("store: cannot open " + path + ": " + msg);
  }
  auto fail = [&](Status s) -> Result<std::unique_ptr<Store>> {
    db.reset();
    close(lock_fd);
    return s;
  };
  sqlite3_extended_result_codes(db.get(), 1);
  sqlite3_busy_timeout(db.get(), 5000);
  {
    auto mode = Prepare(db.get(), "PRAGMA journal_mode=WAL");
    if (!mode.ok()) return fail(mode.status());
    if (sqlite3_step(mode->get()) != SQLITE_ROW || ColumnText(mode->get(), 0) != "wal") {
      return fail(Internal("store: cannot switch " + path + " to WAL mode"));
    }
  }
  // FULL: the WAL is fsynced at every commit, so a commit that returned is
  // durable against power loss, not only against kill -9.
  if (Status s = Exec(db.get(), "PRAGMA synchronous=FULL"); !s.ok()) return fail(s);
  if (!existed) SyncDir(dir);

  auto store = std::make_unique<SqliteStore>(std::move(db), lock_fd, options);
  if (Status s = store->Init(); !s.ok()) return s;  // ~SqliteStore closes db and lock.
  return std::unique_ptr<Store>(std::move(store));
}

}  // namespace artel::store
