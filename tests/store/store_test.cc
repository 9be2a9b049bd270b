// Store tests: append/recover round trips, snapshots, schema migration, group
// commit under concurrency, fault injection through `before_commit`, and a
// kill -9 crash test against a real child process (store_crash_child).
#include "store/store.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace artel::store {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "artel-store-XXXXXX").string();
    char* p = mkdtemp(tmpl.data());
    EXPECT_NE(p, nullptr);
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

Record Rec(RecordType type, std::string key, std::string payload, int64_t time_ms = 0) {
  Record r;
  r.type = type;
  r.key = std::move(key);
  r.payload = std::move(payload);
  r.time_ms = time_ms;
  return r;
}

std::unique_ptr<Store> MustOpen(const std::string& dir, StoreOptions options = {}) {
  auto s = Store::Open(dir, options);
  EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.status().ToString());
  if (!s.ok()) return nullptr;
  return std::move(s).value();
}

Recovered MustRecover(Store* store) {
  auto r = store->Recover();
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.status().ToString());
  if (!r.ok()) return Recovered{};
  return std::move(r).value();
}

TEST(StoreTest, AppendAndRecoverRoundTrip) {
  TempDir dir;
  {
    auto store = MustOpen(dir.path());
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(store->last_seq(), 0u);
    auto a = store->Append(Rec(RecordType::kConfigApplied, "", R"({"manifests":"kind: X"})", 100));
    ASSERT_TRUE(a.ok());
    EXPECT_EQ(*a, 1u);
    auto b = store->AppendBatch(
        {Rec(RecordType::kWorkloadSubmitted, "team-a/w1", "{}", 101),
         Rec(RecordType::kWorkloadAdmitted, "team-a/w1", R"({"clusterQueue":"cq"})", 102)});
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(*b, (std::vector<uint64_t>{2, 3}));
    auto empty = store->AppendBatch({});
    ASSERT_TRUE(empty.ok());
    EXPECT_TRUE(empty->empty());
    EXPECT_EQ(store->last_seq(), 3u);
  }
  auto store = MustOpen(dir.path());
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->last_seq(), 3u);
  Recovered rec = MustRecover(store.get());
  EXPECT_EQ(rec.schema_version, Store::kSchemaVersion);
  EXPECT_FALSE(rec.snapshot.has_value());
  ASSERT_EQ(rec.records.size(), 3u);
  EXPECT_EQ(rec.records[0].seq, 1u);
  EXPECT_EQ(rec.records[0].type, RecordType::kConfigApplied);
  EXPECT_EQ(rec.records[0].payload, R"({"manifests":"kind: X"})");
  EXPECT_EQ(rec.records[0].time_ms, 100);
  EXPECT_EQ(rec.records[1].key, "team-a/w1");
  EXPECT_EQ(rec.records[2].type, RecordType::kWorkloadAdmitted);
  EXPECT_EQ(rec.records[2].time_ms, 102);
  auto next = store->Append(Rec(RecordType::kWorkloadFinished, "team-a/w1", "{}"));
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(*next, 4u);
}

TEST(StoreTest, PayloadsAreBinarySafe) {
  TempDir dir;
  std::string payload("a\0b\xff\n\"", 6);
  {
    auto store = MustOpen(dir.path());
    ASSERT_TRUE(store->Append(Rec(RecordType::kNodeChanged, "", payload)).ok());
  }
  auto store = MustOpen(dir.path());
  Recovered rec = MustRecover(store.get());
  ASSERT_EQ(rec.records.size(), 1u);
  EXPECT_EQ(rec.records[0].payload, payload);
}

TEST(StoreTest, RejectsUnknownRecordType) {
  TempDir dir;
  auto store = MustOpen(dir.path());
  Record bad = Rec(static_cast<RecordType>(99), "", "{}");
  auto r = store->Append(bad);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store->last_seq(), 0u);
}

TEST(StoreTest, SecondOpenOfSameDirectoryFails) {
  TempDir dir;
  auto first = MustOpen(dir.path());
  auto second = Store::Open(dir.path());
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kFailedPrecondition);
  first.reset();
  EXPECT_TRUE(Store::Open(dir.path()).ok());
}

TEST(StoreTest, OpenWaitsForALockHolderThatGoesAway) {
  // A SIGKILLed daemon's child between fork and exec briefly holds the lock
  // descriptor; Open waits for it up to lock_wait_ms instead of failing.
  TempDir dir;
  MustOpen(dir.path()).reset();  // creates <dir>/LOCK
  int holder = open((dir.path() + "/LOCK").c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(holder, 0);
  ASSERT_EQ(flock(holder, LOCK_EX | LOCK_NB), 0);
  StoreOptions no_wait;
  no_wait.lock_wait_ms = 0;
  EXPECT_EQ(Store::Open(dir.path(), no_wait).status().code(), StatusCode::kFailedPrecondition);
  // The holder goes away while Open waits (the delay makes the state, it
  // does not wait for one).
  std::thread release([holder] {
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    close(holder);
  });
  StoreOptions wait;
  wait.lock_wait_ms = 20000;
  auto store = Store::Open(dir.path(), wait);
  release.join();
  EXPECT_TRUE(store.ok()) << store.status().ToString();
}

TEST(StoreTest, SnapshotThenReplay) {
  TempDir dir;
  {
    auto store = MustOpen(dir.path());
    for (int i = 1; i <= 10; ++i) {
      ASSERT_TRUE(store->Append(Rec(RecordType::kWorkloadSubmitted, "ns/w" + std::to_string(i), "{}")).ok());
    }
    ASSERT_TRUE(store->WriteSnapshot({6, R"({"state":6})"}).ok());
    // Out-of-range snapshots are refused and change nothing.
    EXPECT_EQ(store->WriteSnapshot({11, "x"}).code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(store->WriteSnapshot({5, "x"}).code(), StatusCode::kInvalidArgument);
    ASSERT_TRUE(store->Append(Rec(RecordType::kWorkloadCancelled, "ns/w1", "{}")).ok());
  }
  auto store = MustOpen(dir.path());
  Recovered rec = MustRecover(store.get());
  ASSERT_TRUE(rec.snapshot.has_value());
  EXPECT_EQ(rec.snapshot->upto_seq, 6u);
  EXPECT_EQ(rec.snapshot->state, R"({"state":6})");
  ASSERT_EQ(rec.records.size(), 5u);
  for (size_t i = 0; i < rec.records.size(); ++i) EXPECT_EQ(rec.records[i].seq, 7 + i);
  EXPECT_EQ(rec.records.back().type, RecordType::kWorkloadCancelled);
}

TEST(StoreTest, SequenceContinuesAfterSnapshotCoversEverything) {
  TempDir dir;
  {
    auto store = MustOpen(dir.path());
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(store->Append(Rec(RecordType::kNodeChanged, "", "{}")).ok());
    ASSERT_TRUE(store->WriteSnapshot({3, "s3"}).ok());
    ASSERT_TRUE(store->WriteSnapshot({3, "s3b"}).ok());  // Same point again: replaces it.
  }
  auto store = MustOpen(dir.path());
  EXPECT_EQ(store->last_seq(), 3u);
  Recovered rec = MustRecover(store.get());
  ASSERT_TRUE(rec.snapshot.has_value());
  EXPECT_EQ(rec.snapshot->state, "s3b");
  EXPECT_TRUE(rec.records.empty());
  auto seq = store->Append(Rec(RecordType::kNodeChanged, "", "{}"));
  ASSERT_TRUE(seq.ok());
  EXPECT_EQ(*seq, 4u);
}

// Writes a database in the schema-0 (prototype) layout, as an older Artel
// left it: records named by kind, no snapshots table, user_version 0.
void WriteV0Fixture(const std::string& dir, const std::vector<std::string>& kinds) {
  fs::create_directories(dir);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir + "/artel.db").c_str(), &db), SQLITE_OK);
  std::string sql =
      "CREATE TABLE records (id INTEGER PRIMARY KEY AUTOINCREMENT, kind TEXT NOT NULL, at_ms INTEGER, "
      "key TEXT, payload TEXT);";
  int at = 1000;
  for (const std::string& k : kinds) {
    sql += "INSERT INTO records (kind, at_ms, key, payload) VALUES ('" + k + "', " + std::to_string(at++) +
           ", 'ns/" + k + "', '{\"v0\":true}');";
  }
  char* err = nullptr;
  ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
  sqlite3_close(db);
}

int UserVersion(const std::string& dir) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open((dir + "/artel.db").c_str(), &db), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, nullptr);
  int v = -1;
  if (sqlite3_step(st) == SQLITE_ROW) v = sqlite3_column_int(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(db);
  return v;
}

TEST(StoreMigrationTest, V0ToV1) {
  TempDir dir;
  WriteV0Fixture(dir.path(), {"ConfigApplied", "WorkloadSubmitted", "WorkloadAdmitted"});
  {
    auto store = MustOpen(dir.path());
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(store->last_seq(), 3u);
    Recovered rec = MustRecover(store.get());
    EXPECT_EQ(rec.schema_version, Store::kSchemaVersion);  // 0 -> 1 -> 2
    ASSERT_EQ(rec.records.size(), 3u);
    EXPECT_EQ(rec.records[0].type, RecordType::kConfigApplied);
    EXPECT_EQ(rec.records[1].type, RecordType::kWorkloadSubmitted);
    EXPECT_EQ(rec.records[1].key, "ns/WorkloadSubmitted");
    EXPECT_EQ(rec.records[2].type, RecordType::kWorkloadAdmitted);
    EXPECT_EQ(rec.records[2].time_ms, 1002);
    EXPECT_EQ(rec.records[2].payload, R"({"v0":true})");
    auto seq = store->Append(Rec(RecordType::kWorkloadStarted, "ns/x", "{}"));
    ASSERT_TRUE(seq.ok());
    EXPECT_EQ(*seq, 4u);
    ASSERT_TRUE(store->WriteSnapshot({2, "snap"}).ok());  // The new table exists.
  }
  EXPECT_EQ(UserVersion(dir.path()), Store::kSchemaVersion);
}

// Version 1 had the same tables but no record type 10 (WorkloadDeleted):
// the step to 2 keeps every record and lets the new type in.
TEST(StoreMigrationTest, V1ToV2KeepsRecordsAndAcceptsWorkloadDeleted) {
  TempDir dir;
  fs::create_directories(dir.path());
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir.path() + "/artel.db").c_str(), &db), SQLITE_OK);
  const char* v1 =
      "CREATE TABLE journal (seq INTEGER PRIMARY KEY, type INTEGER NOT NULL, time_ms INTEGER NOT NULL, "
      "key TEXT NOT NULL, payload TEXT NOT NULL);"
      "CREATE TABLE snapshots (upto_seq INTEGER PRIMARY KEY, state TEXT NOT NULL);"
      "INSERT INTO journal VALUES (1, 2, 1000, 'ns/a', '{}');"
      "INSERT INTO journal VALUES (2, 8, 1001, 'ns/a', '{\"phase\":\"Succeeded\"}');"
      "INSERT INTO snapshots VALUES (0, 'empty');"
      "PRAGMA user_version = 1;";
  char* err = nullptr;
  ASSERT_EQ(sqlite3_exec(db, v1, nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
  sqlite3_close(db);
  {
    auto store = MustOpen(dir.path());
    ASSERT_NE(store, nullptr);
    Recovered rec = MustRecover(store.get());
    EXPECT_EQ(rec.schema_version, Store::kSchemaVersion);  // 1 -> 2 -> 3
    ASSERT_EQ(rec.records.size(), 2u);
    EXPECT_EQ(rec.records[1].type, RecordType::kWorkloadFinished);
    auto seq = store->Append(Rec(RecordType::kWorkloadDeleted, "ns/a", R"({"reason":"retention"})"));
    ASSERT_TRUE(seq.ok()) << seq.status().ToString();
    EXPECT_EQ(*seq, 3u);
  }
  EXPECT_EQ(UserVersion(dir.path()), Store::kSchemaVersion);
  auto store = MustOpen(dir.path());
  EXPECT_EQ(MustRecover(store.get()).records.back().type, RecordType::kWorkloadDeleted);
}

TEST(StoreMigrationTest, UnknownKindFailsAndLeavesV0Intact) {
  TempDir dir;
  WriteV0Fixture(dir.path(), {"WorkloadSubmitted", "Bogus"});
  auto store = Store::Open(dir.path());
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.status().message().find("migration from schema version 0 failed"), std::string::npos)
      << store.status().ToString();
  EXPECT_EQ(UserVersion(dir.path()), 0);
}

TEST(StoreMigrationTest, NewerSchemaIsRefused) {
  TempDir dir;
  { auto store = MustOpen(dir.path()); }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir.path() + "/artel.db").c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "PRAGMA user_version = 7", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  auto store = Store::Open(dir.path());
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), StatusCode::kFailedPrecondition);
}

struct CommitCounter {
  std::atomic<int> commits{0};
  std::atomic<int> fail_every{0};  // 0 = never fail
  static bool Hook(void* arg) {
    auto* self = static_cast<CommitCounter*>(arg);
    int n = ++self->commits;
    int every = self->fail_every.load();
    return every == 0 || n % every != 0;
  }
};

TEST(StoreTest, ConcurrentAppendersAreOrderedAndLossless) {
  TempDir dir;
  CommitCounter counter;
  constexpr int kThreads = 8;
  constexpr int kPerThread = 150;
  std::vector<std::vector<std::pair<uint64_t, std::string>>> acked(kThreads);
  {
    StoreOptions opts;
    opts.before_commit = &CommitCounter::Hook;
    opts.before_commit_arg = &counter;
    auto store = MustOpen(dir.path(), opts);
    std::vector<std::thread> pool;
    for (int t = 0; t < kThreads; ++t) {
      pool.emplace_back([&, t] {
        for (int i = 0; i < kPerThread; ++i) {
          std::string id = std::to_string(t) + "-" + std::to_string(i);
          if (i % 10 == 0) {  // Every tenth append is a batch of two.
            auto seqs = store->AppendBatch({Rec(RecordType::kWorkloadSubmitted, "ns/" + id, id + "a"),
                                            Rec(RecordType::kWorkloadAdmitted, "ns/" + id, id + "b")});
            ASSERT_TRUE(seqs.ok());
            ASSERT_EQ(seqs->size(), 2u);
            ASSERT_EQ((*seqs)[1], (*seqs)[0] + 1);  // A batch is contiguous.
            acked[t].emplace_back((*seqs)[0], id + "a");
            acked[t].emplace_back((*seqs)[1], id + "b");
          } else {
            auto seq = store->Append(Rec(RecordType::kWorkloadSubmitted, "ns/" + id, id));
            ASSERT_TRUE(seq.ok());
            acked[t].emplace_back(*seq, id);
          }
        }
      });
    }
    for (auto& th : pool) th.join();
  }
  std::map<uint64_t, std::string> expected;
  size_t total = 0;
  for (const auto& v : acked) {
    for (size_t i = 1; i < v.size(); ++i) EXPECT_LT(v[i - 1].first, v[i].first);  // Per-thread order.
    for (const auto& [seq, id] : v)
      EXPECT_TRUE(expected.emplace(seq, id).second) << "seq " << seq << " twice";
    total += v.size();
  }
  ASSERT_EQ(expected.size(), total);
  EXPECT_EQ(expected.begin()->first, 1u);
  EXPECT_EQ(expected.rbegin()->first, total);  // Dense: no gaps.
  // Group commit: concurrent appenders shared transactions.
  EXPECT_LT(counter.commits.load(), static_cast<int>(kThreads * kPerThread));

  auto store = MustOpen(dir.path());
  Recovered rec = MustRecover(store.get());
  ASSERT_EQ(rec.records.size(), total);
  for (const Record& r : rec.records) EXPECT_EQ(expected[r.seq], r.payload);
}

TEST(StoreFaultTest, FailedCommitIsNotAcknowledgedNorRecovered) {
  TempDir dir;
  CommitCounter counter;
  {
    StoreOptions opts;
    opts.before_commit = &CommitCounter::Hook;
    opts.before_commit_arg = &counter;
    auto store = MustOpen(dir.path(), opts);
    ASSERT_TRUE(store->Append(Rec(RecordType::kWorkloadSubmitted, "ns/a", "A")).ok());
    counter.fail_every = 1;
    auto b = store->Append(Rec(RecordType::kWorkloadSubmitted, "ns/b", "B"));
    ASSERT_FALSE(b.ok());
    EXPECT_EQ(b.status().code(), StatusCode::kInternal);
    auto batch = store->AppendBatch(
        {Rec(RecordType::kWorkloadSubmitted, "ns/c", "C"), Rec(RecordType::kWorkloadSubmitted, "ns/d", "D")});
    ASSERT_FALSE(batch.ok());
    EXPECT_FALSE(store->WriteSnapshot({1, "snap"}).ok());
    EXPECT_EQ(store->last_seq(), 1u);
    counter.fail_every = 0;
    auto e = store->Append(Rec(RecordType::kWorkloadSubmitted, "ns/e", "E"));
    ASSERT_TRUE(e.ok());
    EXPECT_EQ(*e, 2u);  // The failed commits consumed no sequence numbers.
  }
  auto store = MustOpen(dir.path());
  Recovered rec = MustRecover(store.get());
  EXPECT_FALSE(rec.snapshot.has_value());
  ASSERT_EQ(rec.records.size(), 2u);
  EXPECT_EQ(rec.records[0].payload, "A");
  EXPECT_EQ(rec.records[1].payload, "E");
}

TEST(StoreFaultTest, ConcurrentFailuresLoseOnlyUnacknowledgedRecords) {
  TempDir dir;
  CommitCounter counter;
  counter.fail_every = 3;
  std::mutex mu;
  std::map<uint64_t, std::string> acked;
  int failed = 0;
  {
    StoreOptions opts;
    opts.before_commit = &CommitCounter::Hook;
    opts.before_commit_arg = &counter;
    auto store = MustOpen(dir.path(), opts);
    std::vector<std::thread> pool;
    for (int t = 0; t < 4; ++t) {
      pool.emplace_back([&, t] {
        for (int i = 0; i < 60; ++i) {
          std::string id = std::to_string(t) + "-" + std::to_string(i);
          auto seq = store->Append(Rec(RecordType::kWorkloadSubmitted, "ns/" + id, id));
          std::lock_guard<std::mutex> lock(mu);
          if (seq.ok()) {
            EXPECT_TRUE(acked.emplace(*seq, id).second);
          } else {
            ++failed;
          }
        }
      });
    }
    for (auto& th : pool) th.join();
  }
  EXPECT_GT(failed, 0);
  auto store = MustOpen(dir.path());
  Recovered rec = MustRecover(store.get());
  std::map<uint64_t, std::string> got;
  for (const Record& r : rec.records) got.emplace(r.seq, r.payload);
  EXPECT_EQ(got, acked);
}

// ---------------------------------------------------------------------------
// kill -9: a real child appends and prints each acknowledged seq; we kill it
// at random points and check that every acknowledged record is recovered
// exactly once.

struct Child {
  pid_t pid = -1;
  int out_fd = -1;
};

Child SpawnCrashChild(const std::string& dir, int run, int threads) {
  int fds[2];
  EXPECT_EQ(pipe2(fds, O_CLOEXEC), 0);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
  std::string run_s = std::to_string(run);
  std::string threads_s = std::to_string(threads);
  std::vector<char*> argv = {const_cast<char*>(ARTEL_STORE_CRASH_CHILD), const_cast<char*>(dir.c_str()),
                             run_s.data(), threads_s.data(), nullptr};
  Child c;
  int rc = posix_spawn(&c.pid, ARTEL_STORE_CRASH_CHILD, &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  EXPECT_EQ(rc, 0) << "spawn " << ARTEL_STORE_CRASH_CHILD;
  c.out_fd = fds[0];
  return c;
}

// Reads whole lines from `fd` into `lines` until at least `want` lines have
// arrived (want < 0: until EOF) or the deadline passes. Returns false on
// timeout.
bool ReadLines(int fd, std::string* partial, std::vector<std::string>* lines, long want,
               std::chrono::steady_clock::time_point deadline) {
  char buf[4096];
  while (want < 0 || static_cast<long>(lines->size()) < want) {
    auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    int pr = poll(&p, 1, static_cast<int>(left.count()));
    if (pr < 0 && errno == EINTR) continue;
    if (pr <= 0) return false;
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return want < 0;  // EOF.
    partial->append(buf, static_cast<size_t>(n));
    size_t pos;
    while ((pos = partial->find('\n')) != std::string::npos) {
      lines->push_back(partial->substr(0, pos));
      partial->erase(0, pos + 1);
    }
  }
  return true;
}

TEST(StoreCrashTest, Kill9KeepsEveryAcknowledgedRecordExactlyOnce) {
  TempDir dir;
  std::mt19937 rng(20240611);  // Fixed seed: reproducible kill points.
  std::map<uint64_t, std::string> acked;
  for (int run = 0; run < 5; ++run) {
    Child c = SpawnCrashChild(dir.path(), run, 4);
    ASSERT_GT(c.pid, 0);
    long kill_after = std::uniform_int_distribution<long>(20, 400)(rng);
    std::string partial;
    std::vector<std::string> lines;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    bool got = ReadLines(c.out_fd, &partial, &lines, kill_after, deadline);
    ASSERT_EQ(kill(c.pid, SIGKILL), 0);
    // Lines written before the kill are acknowledged too: drain to EOF.
    EXPECT_TRUE(ReadLines(c.out_fd, &partial, &lines, -1, deadline));
    close(c.out_fd);
    int status = 0;
    ASSERT_EQ(waitpid(c.pid, &status, 0), c.pid);
    ASSERT_TRUE(got) << "run " << run << ": child acknowledged only " << lines.size() << " records";
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
        << "child exited early, status " << status;
    for (const std::string& line : lines) {
      std::istringstream in(line);
      uint64_t seq = 0;
      std::string id;
      in >> seq >> id;
      ASSERT_FALSE(id.empty()) << "bad line '" << line << "'";
      ASSERT_TRUE(acked.emplace(seq, id).second) << "seq " << seq << " acknowledged twice";
    }

    auto store = MustOpen(dir.path());
    ASSERT_NE(store, nullptr);
    Recovered rec = MustRecover(store.get());
    std::map<uint64_t, std::string> by_seq;
    std::set<std::string> ids;
    uint64_t prev = 0;
    for (const Record& r : rec.records) {
      ASSERT_GT(r.seq, prev);
      prev = r.seq;
      std::string id = r.payload.substr(7, r.payload.size() - 9);  // {"id":"<id>"}
      ASSERT_TRUE(ids.insert(id).second) << "record " << id << " recovered twice";
      by_seq.emplace(r.seq, id);
    }
    for (const auto& [seq, id] : acked) {
      auto it = by_seq.find(seq);
      ASSERT_NE(it, by_seq.end()) << "run " << run << ": acknowledged seq " << seq << " (" << id << ") lost";
      EXPECT_EQ(it->second, id);
    }
    EXPECT_GE(rec.records.size(), acked.size());
  }
}

}  // namespace
}  // namespace artel::store
