// Simulator speed (docs/performance.md, "Simulator"): simulated events per second of `sim::Replay`,
// the discrete-event loop behind `artel sim`, driving the production engine.
//
// An event is an arrival, an admission, a completion, an eviction or an
// eviction completion (ClusterReport::events). Each benchmark iteration
// replays the whole trace from a fresh engine; `events/s` is events per
// second of iteration wall time, which includes configuring the engine,
// sorting the trace and the per-event metrics (the report files are not
// written). Figures and commands are in docs/performance.md, "Simulator".
//
// Traces:
//  - philly/*: the full Microsoft Philly trace from ../shared/traces (the
//    shared folder beside the checkout, or $ARTEL_TRACES). Skipped with a
//    message when absent, as on a fresh machine.
//  - excerpt: the committed Philly excerpt under tests/data/traces.
//  - synthetic: a generated trace (Poisson arrivals, 8 tenants), always
//    available.
//  - deep/N: the ITP trace at N = 256, 512, 1,024 and 4,096 GPUs (issue 17:
//    deep queues); the committed Philly excerpt, with a message, when the
//    shared traces are absent.
// Queues come from `--auto-queues` (sim::BuildAutoQueues) with the given
// cluster size (0 = the default: the 99th percentile of demand), and the
// replay options are `artel sim`'s defaults (1 s interval, 30 s grace), so
// the figures match the CLI's `speed:` line for the same trace.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>

#include "bench_smoke.h"
#include "sim/auto_queues.h"
#include "sim/replay.h"
#include "sim/trace.h"

namespace {

namespace fs = std::filesystem;
using artel::bench::Shrink;
using artel::bench::Smoke;
using artel::sim::AutoQueues;
using artel::sim::ReplayResult;
using artel::sim::Trace;

std::string SourceDir() { return ARTEL_SOURCE_DIR; }

// The shared traces folder: $ARTEL_TRACES, else ../shared/traces beside the checkout.
std::string SharedTraces() {
  if (const char* env = std::getenv("ARTEL_TRACES"); env != nullptr && *env != '\0') return env;
  return (fs::path(SourceDir()).parent_path() / "shared" / "traces").string();
}

const Trace* Load(const std::string& path, artel::sim::TracePreset preset, std::string* why) {
  static std::map<std::string, Trace> cache;
  auto it = cache.find(path);
  if (it != cache.end()) return &it->second;
  if (!fs::exists(path)) {
    *why = path + " is absent (the shared traces are not on this machine); skipped";
    return nullptr;
  }
  artel::sim::TraceFormat format;
  format.preset = preset;
  auto t = artel::sim::LoadTrace(path, format);
  if (!t.ok()) {
    *why = t.status().ToString();
    return nullptr;
  }
  return &cache.emplace(path, std::move(t).value()).first->second;
}

const Trace& Synthetic() {
  static const Trace trace = [] {
    std::vector<artel::sim::SyntheticTenant> tenants;
    for (int i = 0; i < 8; ++i) {
      auto t = artel::sim::ParseSyntheticTenant("name=team" + std::to_string(i) +
                                                ",rate=400/h,jobs=" + std::to_string(Shrink(10000, 100)) +
                                                ",gpus=1*6|2*2|4*1|8*1,duration=exp(40m)");
      if (!t.ok()) std::abort();
      tenants.push_back(std::move(t).value());
    }
    return artel::sim::GenerateSynthetic(tenants, 7);
  }();
  return trace;
}

void RunReplay(benchmark::State& state, const Trace& trace, int64_t gpus, bool fast_rounds = true) {
  auto aq = artel::sim::BuildAutoQueues(trace.jobs, gpus);
  if (!aq.ok()) {
    state.SkipWithError(aq.status().ToString().c_str());
    return;
  }
  artel::sim::ReplayOptions options;  // `artel sim` defaults: 1 s interval, 30 s grace
  options.interval = 1000;
  options.grace = 30000;
  options.engine.fast_rounds = fast_rounds;
  int64_t events = 0, decisions = 0, calls = 0;
  for (auto _ : state) {
    auto r = artel::sim::Replay(aq->config, aq->tenants, trace.jobs, aq->capacity, options);
    if (!r.ok()) {
      state.SkipWithError(r.status().ToString().c_str());
      return;
    }
    events += r->cluster.events;
    decisions += r->cluster.decisions;
    calls += r->cluster.schedule_calls;
    benchmark::DoNotOptimize(r->cluster.utilization);
  }
  state.counters["events/s"] = benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
  state.counters["decisions/s"] =
      benchmark::Counter(static_cast<double>(decisions), benchmark::Counter::kIsRate);
  state.counters["events"] = static_cast<double>(events) / static_cast<double>(state.iterations());
  state.counters["schedule_calls"] = static_cast<double>(calls) / static_cast<double>(state.iterations());
  state.counters["gpus"] = static_cast<double>(aq->capacity) / artel::core::kMilli;
  state.counters["jobs"] = static_cast<double>(trace.jobs.size());
}

void BM_ReplayShared(benchmark::State& state, const std::string& file, artel::sim::TracePreset preset) {
  std::string why;
  const Trace* t = Load(SharedTraces() + "/" + file, preset, &why);
  if (t == nullptr) {
    state.SkipWithError(why.c_str());
    return;
  }
  RunReplay(state, *t, state.range(0));
}

void BM_ReplayExcerpt(benchmark::State& state) {
  std::string why;
  const Trace* t =
      Load(SourceDir() + "/tests/data/traces/philly-excerpt.csv", artel::sim::TracePreset::kPhilly, &why);
  if (t == nullptr) {
    state.SkipWithError(why.c_str());
    return;
  }
  RunReplay(state, *t, state.range(0));
}

void BM_ReplaySynthetic(benchmark::State& state) { RunReplay(state, Synthetic(), state.range(0)); }

// Deep queues (issue 17): the same trace on ever smaller clusters, so that
// thousands of jobs wait; the cost of an event should not grow with the
// queue. The ITP trace from the shared folder, else the committed Philly
// excerpt (a much smaller trace: its figures are not comparable).
void BM_ReplayDeep(benchmark::State& state, bool fast_rounds) {
  std::string why;
  const Trace* t =
      Smoke() ? nullptr
              : Load(SharedTraces() + "/msft_itp/itp_all_clusters.csv", artel::sim::TracePreset::kItp, &why);
  if (Smoke()) why = "smoke mode";
  if (t == nullptr) {
    static bool told = false;
    if (!told) {
      std::fprintf(stderr, "deep/*: %s; replaying the committed Philly excerpt instead\n", why.c_str());
      told = true;
    }
    t = Load(SourceDir() + "/tests/data/traces/philly-excerpt.csv", artel::sim::TracePreset::kPhilly, &why);
    if (t == nullptr) {
      state.SkipWithError(why.c_str());
      return;
    }
    state.SetLabel("philly-excerpt");
  } else {
    state.SetLabel("itp");
  }
  RunReplay(state, *t, state.range(0), fast_rounds);
}

void OneIterationInSmoke(benchmark::internal::Benchmark* b) {
  if (Smoke()) b->Iterations(1);
}

// 256 to 4,096 GPUs; the ITP trace's default size is 1,851.
BENCHMARK_CAPTURE(BM_ReplayDeep, fast, true)
    ->Name("deep")
    ->Apply([](benchmark::internal::Benchmark* b) {
      for (int gpus : {256, 512, 1024, 4096})
        if (!Smoke() || gpus == 256) b->Arg(gpus);
    })
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Apply(OneIterationInSmoke);
BENCHMARK(BM_ReplayExcerpt)->Arg(0)->Unit(benchmark::kMillisecond)->UseRealTime()->Apply(OneIterationInSmoke);
BENCHMARK(BM_ReplaySynthetic)
    ->Arg(0)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Apply(OneIterationInSmoke);

// 0 = default size (p99 of demand); 2490 = Philly's real size; 758 = p95
// of demand, where thousands of jobs wait. Not in smoke mode: the full
// traces take minutes under the sanitizers (the excerpt stands in).
void RegisterShared() {
  if (Smoke()) return;
  // deep/N with every cycle run in full (EngineOptions::fast_rounds off: the
  // exact reference of the fast cycles), side by side in the same run.
  benchmark::RegisterBenchmark("deep_full_rounds", BM_ReplayDeep, false)
      ->Arg(256)
      ->Arg(512)
      ->Arg(1024)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  benchmark::RegisterBenchmark("BM_ReplayShared/philly", BM_ReplayShared,
                               std::string("philly_vc_sia/philly.csv"), artel::sim::TracePreset::kPhilly)
      ->Arg(0)
      ->Arg(2490)
      ->Arg(758)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  benchmark::RegisterBenchmark("BM_ReplayShared/itp", BM_ReplayShared,
                               std::string("msft_itp/itp_all_clusters.csv"), artel::sim::TracePreset::kItp)
      ->Arg(0)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
}

}  // namespace

int main(int argc, char** argv) {
  RegisterShared();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
