// Durable append throughput and latency of the SQLite store (group commit).
//
// Each benchmark thread appends one ~300-byte WorkloadSubmitted record per
// iteration and waits until it is durable (WAL fsync), as the daemon does
// before acknowledging a submission. Reported counters:
//   appends_per_s  durable appends per second of wall time, all threads
//   p50_ms, p99_ms per-append latency percentiles, all threads
//   per_commit     records per transaction (group commit batch size)
// Figures are recorded in docs/performance.md ("Store").
#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "bench_smoke.h"
#include "store/store.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Shared {
  std::unique_ptr<artel::store::Store> store;
  std::string dir;
  std::vector<uint32_t> latency_us;  // one slot per append, filled by all threads
  std::atomic<size_t> next{0};
  std::atomic<int64_t> commits{0};
  Clock::time_point start;
};
Shared g;

bool CountCommit(void*) {
  g.commits.fetch_add(1, std::memory_order_relaxed);
  return true;
}

const std::string kPayload =
    R"({"apiVersion":"artel.dev/v1alpha1","kind":"Workload","metadata":{"namespace":"team-a","name":"train-0001"},)"
    R"("spec":{"queueName":"default","priorityClassName":"research","podSets":[{"name":"main","count":4,)"
    R"("requests":{"nvidia.com/gpu":"1","cpu":"8","memory":"64Gi"}}],"command":["python","train.py"]}})";

void BM_DurableAppend(benchmark::State& state) {
  if (state.thread_index() == 0) {
    std::string tmpl = (std::filesystem::temp_directory_path() / "artel-bench-store-XXXXXX").string();
    g.dir = mkdtemp(tmpl.data());
    artel::store::StoreOptions opts;
    opts.before_commit = &CountCommit;
    auto s = artel::store::Store::Open(g.dir, opts);
    if (!s.ok()) {
      state.SkipWithError(s.status().ToString().c_str());
      return;
    }
    g.store = std::move(s).value();
    g.latency_us.assign(4'000'000, 0);
    g.next = 0;
    g.commits = 0;
    g.start = Clock::now();
  }
  int64_t i = 0;
  for (auto _ : state) {
    artel::store::Record r;
    r.type = artel::store::RecordType::kWorkloadSubmitted;
    r.time_ms = i++;
    r.key = "team-a/train-" + std::to_string(state.thread_index()) + "-" + std::to_string(i);
    r.payload = kPayload;
    auto t0 = Clock::now();
    auto seq = g.store->Append(std::move(r));
    auto us = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - t0).count();
    if (!seq.ok()) {
      state.SkipWithError(seq.status().ToString().c_str());
      break;
    }
    size_t slot = g.next.fetch_add(1, std::memory_order_relaxed);
    if (slot < g.latency_us.size()) g.latency_us[slot] = static_cast<uint32_t>(us);
  }
  if (state.thread_index() == 0) {
    double secs = std::chrono::duration<double>(Clock::now() - g.start).count();
    size_t n = std::min(g.next.load(), g.latency_us.size());
    std::vector<uint32_t> lat(g.latency_us.begin(), g.latency_us.begin() + static_cast<std::ptrdiff_t>(n));
    std::sort(lat.begin(), lat.end());
    auto pct = [&](double p) {
      return lat.empty() ? 0.0 : lat[static_cast<size_t>(p * (lat.size() - 1))] / 1000.0;
    };
    state.counters["appends_per_s"] = static_cast<double>(n) / secs;
    state.counters["p50_ms"] = pct(0.50);
    state.counters["p99_ms"] = pct(0.99);
    state.counters["per_commit"] =
        g.commits > 0 ? static_cast<double>(n) / static_cast<double>(g.commits) : 0;
    g.store.reset();
    std::error_code ec;
    std::filesystem::remove_all(g.dir, ec);
  }
}
BENCHMARK(BM_DurableAppend)
    ->Threads(1)
    ->Threads(4)
    ->Threads(16)
    ->Threads(64)
    ->UseRealTime()
    ->MinTime(artel::bench::Shrink(2.0, 0.05));

}  // namespace

BENCHMARK_MAIN();
