// `artel sim`: replays a trace (or a synthetic workload) through the
// production engine on a virtual clock and writes JSON, CSV, HTML and PNG
// reports (docs/simulator.md). `--compare A B ...` runs the same workload
// under several configs into one report.

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "core/engine.h"
#include "manifest/manifest.h"
#include "sim/auto_queues.h"
#include "sim/duration.h"
#include "sim/replay.h"
#include "sim/report.h"
#include "sim/trace.h"

namespace artel::cli {
namespace {

namespace fs = std::filesystem;

struct SimArgs {
  std::string trace;
  std::string preset = "auto";
  std::string columns;
  bool no_header = false;
  bool strict = false;
  std::vector<std::string> synthetic;
  uint64_t seed = 1;
  std::vector<std::string> config;
  std::vector<std::string> compare;
  bool auto_queues = false;
  int64_t gpus = 0;
  bool gpus_given = false;
  std::vector<std::string> map;
  std::string default_queue;
  std::string interval = "1s";
  std::string delimiter = ",";
  double gpu_scale = 1.0;
  std::string grace = "30s";
  std::string until;
  bool fair_sharing = false;
  double estimate_factor = 0;
  std::string reserve_after;
  std::string backfill_window;
  std::string min_runtime;
  std::string reclaim_min_runtime;
  std::string preemption_delay;
  int64_t limit = 0;
  bool limit_given = false;
  std::string time_unit = "s";
  std::string out;
  bool no_png = false;
  bool quiet = false;
};

int64_t WallNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

Result<core::Config> LoadConfig(const std::vector<std::string>& paths) {
  core::Config config;
  for (const std::string& p : paths) {
    if (Status s = manifest::LoadPath(p, &config); !s.ok()) return s;
  }
  if (Status s = manifest::Validate(config); !s.ok()) return s;
  return config;
}

// A progress line on a terminal: events, simulated time, ETA.
class ProgressLine {
 public:
  explicit ProgressLine(bool enabled) : enabled_(enabled), start_(WallNs()) {}
  void Update(const sim::ReplayProgress& p, const std::string& label) {
    if (!enabled_) return;
    int64_t now = WallNs();
    if (now - last_ < 200'000'000 && p.arrivals_done < p.arrivals_total) return;
    last_ = now;
    double elapsed = static_cast<double>(now - start_) / 1e9;
    double frac = p.arrivals_total > 0
                      ? static_cast<double>(p.arrivals_done) / static_cast<double>(p.arrivals_total)
                      : 1;
    std::string eta = frac > 0.01 ? sim::HumanDuration(elapsed / frac - elapsed) : "?";
    std::cerr << fmt::format("\r\033[K{}: {} events, simulated {}, {:.0f}% of arrivals, ETA {}", label,
                             p.events, sim::HumanDuration(static_cast<double>(p.now) / 1000.0), 100 * frac,
                             eta)
              << std::flush;
    shown_ = true;
  }
  void Done() {
    if (shown_) std::cerr << "\r\033[K" << std::flush;
    shown_ = false;
    start_ = WallNs();
  }

 private:
  bool enabled_;
  int64_t start_;
  int64_t last_ = 0;
  bool shown_ = false;
};

int RunSim(const SimArgs& a) {
  auto fail = [](const std::string& msg) {
    std::cerr << "artel sim: " << msg << "\n";
    return 2;
  };
  // 0. Option values that cannot mean anything are errors, not silently
  // replaced by a default.
  if (a.gpus_given && a.gpus <= 0) {
    return fail(fmt::format("--gpus: expected a positive number of GPUs, got {}", a.gpus));
  }
  if (a.gpus_given && !a.auto_queues) {
    return fail(
        "--gpus sets the cluster size of --auto-queues; with -k or --compare the capacity is the "
        "config's quota (drop --gpus, or use --auto-queues)");
  }
  if (a.limit_given && a.limit <= 0) {
    return fail(fmt::format("--limit: expected a positive number of jobs, got {}", a.limit));
  }

  // 1. The workload.
  sim::Trace trace;
  if (!a.trace.empty() && !a.synthetic.empty()) return fail("give --trace or --synthetic, not both");
  if (!a.trace.empty()) {
    sim::TraceFormat format;
    Result<sim::TracePreset> p = sim::ParseTracePreset(a.preset);
    if (!p.ok()) return fail(p.status().message());
    format.preset = *p;
    Result<double> unit = sim::ParseTimeUnit(a.time_unit);
    if (!unit.ok()) return fail(unit.status().message());
    format.time_unit_ms = *unit;
    if (Status s = sim::ParseColumnMapping(a.columns, &format); !s.ok()) return fail(s.message());
    format.header = !a.no_header;
    if (!(a.gpu_scale > 0) || a.gpu_scale > 1e6) return fail("--gpu-scale: expected a number > 0");
    format.gpu_scale = a.gpu_scale;
    if (a.delimiter == "tab" || a.delimiter == "\\t" || a.delimiter == "\t") {
      format.delimiter = '\t';
    } else if (a.delimiter.size() == 1 && a.delimiter[0] != '"' && a.delimiter[0] != '\n') {
      format.delimiter = a.delimiter[0];
    } else {
      return fail("--delimiter: expected one character or \"tab\", got \"" + a.delimiter + "\"");
    }
    format.strict = a.strict;
    Result<sim::Trace> t = sim::LoadTrace(a.trace, format);
    if (!t.ok()) return fail(t.status().ToString());
    trace = std::move(t).value();
  } else if (!a.synthetic.empty()) {
    std::vector<sim::SyntheticTenant> tenants;
    for (const std::string& spec : a.synthetic) {
      Result<sim::SyntheticTenant> t = sim::ParseSyntheticTenant(spec);
      if (!t.ok()) return fail(t.status().message());
      tenants.push_back(std::move(t).value());
    }
    trace = sim::GenerateSynthetic(tenants, a.seed);
  } else {
    return fail("no workload: give --trace FILE or --synthetic SPEC");
  }
  // What went wrong with the rows comes first: when every row was
  // malformed, it is the explanation of the empty workload below.
  for (const std::string& n : trace.notes) std::cerr << "artel sim: note: " << n << "\n";
  if (trace.skipped > 0) {
    std::cerr << fmt::format("artel sim: skipped {} malformed rows of {} (use --strict to fail):\n",
                             trace.skipped, trace.rows);
    for (const std::string& p : trace.problems) std::cerr << "  " << p << "\n";
    if (trace.skipped > static_cast<int64_t>(trace.problems.size())) {
      std::cerr << fmt::format("  ... and {} more\n",
                               trace.skipped - static_cast<int64_t>(trace.problems.size()));
    }
  }
  if (trace.jobs.empty()) {
    if (trace.rows > 0 && trace.skipped == trace.rows) {
      return fail(fmt::format("the workload has no jobs: all {} rows are malformed", trace.rows));
    }
    return fail("the workload has no jobs");
  }
  sim::KeepEarliest(&trace, a.limit);

  // 2. Options.
  sim::ReplayOptions ro;
  for (auto [text, field, dst] :
       {std::tuple{a.interval, "--interval", &ro.interval}, std::tuple{a.grace, "--grace", &ro.grace}}) {
    Result<core::Time> d = sim::ParseDuration(text);
    if (!d.ok()) return fail(std::string(field) + ": " + d.status().message());
    *dst = *d;
  }
  if (!a.until.empty()) {
    Result<core::Time> d = sim::ParseDuration(a.until);
    if (!d.ok()) return fail("--until: " + d.status().message());
    ro.until = *d;
  }
  ro.engine.fair_sharing = a.fair_sharing;
  if (a.estimate_factor < 0 || (a.estimate_factor > 0 && a.estimate_factor < 1) || a.estimate_factor > 1000)
    return fail("--estimate-factor: expected 0 (off) or a number from 1 to 1000");
  ro.estimate_factor = a.estimate_factor;
  for (auto [text, field, dst] :
       {std::tuple{a.reserve_after, "--reserve-after", &ro.reserve_after},
        std::tuple{a.backfill_window, "--backfill-window", &ro.backfill_window},
        std::tuple{a.min_runtime, "--min-runtime", &ro.min_runtime},
        std::tuple{a.reclaim_min_runtime, "--reclaim-min-runtime", &ro.reclaim_min_runtime},
        std::tuple{a.preemption_delay, "--preemption-delay", &ro.preemption_delay}}) {
    if (text.empty()) continue;
    Result<core::Time> d = sim::ParseDuration(text);
    if (!d.ok()) return fail(std::string(field) + ": " + d.status().message());
    *dst = *d;
  }
  if (ro.backfill_window && !ro.reserve_after)
    return fail(
        "--backfill-window: only with --reserve-after (a window bounds how far ahead a reservation may "
        "start)");
  if (ro.backfill_window && *ro.backfill_window <= 0)
    return fail("--backfill-window: expected a duration above 0s, got " + a.backfill_window);
  ro.wall_clock_ns = WallNs;
  ProgressLine progress(!a.quiet && isatty(STDERR_FILENO) != 0);
  std::map<std::string, std::string> explicit_map;
  for (const std::string& m : a.map) {
    size_t eq = m.find('=');
    if (eq == std::string::npos) return fail("--map: expected TENANT=NAMESPACE[/QUEUE], got " + m);
    explicit_map[m.substr(0, eq)] = m.substr(eq + 1);
  }

  // 3. The configs: auto-queues, -k, or each --compare entry.
  struct Setup {
    std::string label;
    std::string source;
    core::Config config;
    std::vector<sim::TenantBinding> tenants;
    core::Amount capacity = 0;
  };
  std::vector<Setup> setups;
  std::error_code ec;
  fs::create_directories(a.out, ec);
  if (ec) return fail(a.out + ": " + ec.message());
  if (a.auto_queues) {
    if (!a.config.empty() || !a.compare.empty())
      return fail("--auto-queues derives the config; drop -k/--compare");
    Result<sim::AutoQueues> aq = sim::BuildAutoQueues(trace.jobs, a.gpus);
    if (!aq.ok()) return fail(aq.status().ToString());
    std::string path = a.out + "/auto-queues.yaml";
    if (Status s = sim::WriteTextFile(path, aq->yaml); !s.ok()) return fail(s.message());
    setups.push_back(
        {fmt::format("auto-queues ({:g} GPUs)", static_cast<double>(aq->capacity) / core::kMilli), path,
         aq->config, aq->tenants, aq->capacity});
  } else {
    std::vector<std::vector<std::string>> sources;
    if (!a.compare.empty()) {
      if (!a.config.empty()) return fail("give the configs either with -k or with --compare");
      for (const std::string& c : a.compare) sources.push_back({c});
    } else if (!a.config.empty()) {
      sources.push_back(a.config);
    } else {
      return fail("no config: give -k CONFIG, --compare A B ..., or --auto-queues");
    }
    for (const auto& paths : sources) {
      Result<core::Config> c = LoadConfig(paths);
      if (!c.ok()) return fail(c.status().ToString());
      Result<std::vector<sim::TenantBinding>> b =
          sim::BindTenants(trace.jobs, *c, explicit_map, a.default_queue, ro.gpu_resource);
      if (!b.ok()) return fail(b.status().message());
      Result<core::Amount> cap = sim::ConfigCapacity(*c, ro.gpu_resource);
      if (!cap.ok()) return fail(cap.status().ToString());
      std::string label = fmt::format("{}", fmt::join(paths, " + "));
      setups.push_back({label, label, std::move(c).value(), std::move(b).value(), *cap});
    }
  }

  // 4. Replays.
  std::vector<sim::SimRun> runs;
  for (Setup& s : setups) {
    ro.progress = [&](const sim::ReplayProgress& p) { progress.Update(p, s.label); };
    Result<sim::ReplayResult> r = sim::Replay(s.config, s.tenants, trace.jobs, s.capacity, ro);
    progress.Done();
    if (!r.ok()) return fail(s.label + ": " + r.status().ToString());
    runs.push_back({s.label, s.source, std::move(r).value()});
  }

  // 5. Reports.
  int64_t t0 = WallNs();
  sim::SimMeta meta;
  meta.title = runs.size() > 1 ? "artel sim: comparison" : "artel sim";
  meta.trace = a.trace.empty() ? fmt::format("synthetic (seed {})", a.seed) : a.trace;
  meta.rows = trace.rows;
  meta.skipped = trace.skipped;
  meta.problems = trace.problems;
  meta.interval = ro.interval;
  meta.grace = ro.grace;
  meta.estimate_factor = ro.estimate_factor;
  meta.reserve_after = ro.reserve_after;
  meta.backfill_window = ro.backfill_window;
  meta.min_runtime = ro.min_runtime;
  meta.reclaim_min_runtime = ro.reclaim_min_runtime;
  meta.preemption_delay = ro.preemption_delay;
  std::string html_path = a.out + "/report.html";
  for (const auto& [path, text] : {std::pair{a.out + "/report.json", sim::ReportJson(meta, runs)},
                                   std::pair{html_path, sim::ReportHtml(meta, runs)}}) {
    if (Status s = sim::WriteTextFile(path, text); !s.ok()) return fail(s.message());
  }
  std::vector<std::string> csv_files;
  if (Status s = sim::WriteCsvReports(runs, trace.jobs, a.out, &csv_files); !s.ok()) return fail(s.message());
  double report_seconds = static_cast<double>(WallNs() - t0) / 1e9;

  for (const sim::SimRun& run : runs) {
    const sim::ClusterReport& c = run.result.cluster;
    std::cout << fmt::format(
        "{}: {} jobs over {} simulated; utilization {:.1f}% (bound {:.1f}%), Jain {:.3f}, {} preemptions\n",
        run.label, c.jobs, sim::HumanDuration(static_cast<double>(c.end) / 1000.0), 100 * c.utilization,
        100 * c.bound, c.jain, c.preemptions);
    std::cout << fmt::format("  {:<16} {:>9} {:>10} {:>10} {:>9} {:>9} {:>9} {:>7} {:>6}\n", "tenant",
                             "guarantee", "GPU-h", "borrowed", "held", "wait p50", "wait p95", "preempt",
                             "never");
    for (const sim::TenantReport& t : run.result.tenants) {
      std::cout << fmt::format(
          "  {:<16} {:>9g} {:>10.1f} {:>10.1f} {:>9} {:>9} {:>9} {:>7} {:>6}\n", t.binding.tenant,
          static_cast<double>(t.binding.guarantee) / core::kMilli, t.gpu_hours, t.gpu_hours_borrowed,
          t.guarantee_satisfaction < 0 ? std::string("n/a")
                                       : fmt::format("{:.1f}%", 100 * t.guarantee_satisfaction),
          sim::HumanDuration(t.wait.p50), sim::HumanDuration(t.wait.p95), t.preemptions, t.never_admitted);
    }
    for (const std::string& w : run.result.warnings) std::cout << "  warning: " << w << "\n";
    std::cout << fmt::format(
        "  speed: {} events in {:.2f} s ({:.0f} events/s); {} decisions in {} Schedule calls "
        "({:.2f} s, {:.0f} decisions/s)\n",
        c.events, c.wall_seconds, c.events_per_second, c.decisions, c.schedule_calls, c.schedule_seconds,
        c.decisions_per_second);
  }
  std::cout << fmt::format("wrote {}/report.json, report.html, {} ({:.2f} s)\n", a.out,
                           fmt::join(csv_files, ", "), report_seconds);
  if (!a.no_png) {
    std::string chromium = sim::FindChromium();
    if (chromium.empty()) {
      std::cout
          << "PNG charts skipped: chromium not found (apt-get install chromium, or set ARTEL_CHROMIUM)\n";
    } else if (!sim::kChartsBundled) {
      std::cout << "PNG charts skipped: this artel was built without the chart library\n";
    } else {
      Result<std::vector<std::string>> pngs = sim::RenderPngs(chromium, html_path, a.out + "/img");
      if (!pngs.ok()) {
        std::cout << "PNG charts skipped: " << pngs.status().message() << "\n";
      } else {
        std::cout << fmt::format("wrote {} PNG charts under {}/img\n", pngs->size(), a.out);
      }
    }
  }
  return 0;
}

}  // namespace

void AddSimCommand(CLI::App& app, int* exit_code) {
  auto a = std::make_shared<SimArgs>();
  CLI::App* cmd = app.add_subcommand(
      "sim", "Replay a trace or a synthetic workload on a virtual clock and write reports");
  cmd->add_option("--trace", a->trace, "Trace CSV file");
  cmd->add_option("--preset", a->preset, "Trace columns: auto (from the header), philly, itp or generic")
      ->capture_default_str();
  cmd->add_option(
      "--columns", a->columns,
      "Column mapping KEY=COLUMN,... (keys: submit, interval, duration, start, end, gpus, instances, "
      "tenant, user, id, status)");
  cmd->add_option("--time-unit", a->time_unit,
                  "Unit of numeric times and durations: s, ms or us (timestamps are not affected)")
      ->capture_default_str();
  cmd->add_flag("--no-header", a->no_header, "The trace has no header line (columns are 1-based numbers)");
  cmd->add_option("--delimiter", a->delimiter, "Field separator: one character, or \"tab\"")
      ->capture_default_str();
  cmd->add_option("--gpu-scale", a->gpu_scale,
                  "Multiply the gpus column (0.01 reads a percentage; fractions of a GPU are allowed)")
      ->capture_default_str();
  cmd->add_flag("--strict", a->strict, "Fail on the first malformed row instead of skipping it");
  cmd->add_option("--synthetic", a->synthetic,
                  "Synthetic tenant: name=a,rate=30/h,jobs=500,gpus=1*7|4*3,duration=exp(1h)[,start=0s]"
                  "[,arrivals=poisson|periodic] (repeat per tenant)");
  cmd->add_option("--seed", a->seed, "Seed of the synthetic generator")->capture_default_str();
  cmd->add_option("-k,--config", a->config, "Config manifests (files or directories)");
  cmd->add_option("--compare", a->compare, "Run the same workload under each of these configs")
      ->expected(1, -1);
  cmd->add_flag("--auto-queues", a->auto_queues,
                "Derive one queue per tenant, guarantees proportional to its GPU-hours");
  CLI::Option* gpus = cmd->add_option(
      "--gpus", a->gpus,
      "Cluster size for --auto-queues (default: the 99th percentile over time of the trace's demand)");
  cmd->add_option("--map", a->map, "Tenant binding TENANT=NAMESPACE[/QUEUE] (repeatable)");
  cmd->add_option("--default-queue", a->default_queue, "NAMESPACE/QUEUE for tenants without a binding");
  cmd->add_option("--interval", a->interval, "Scheduling interval (0s = after every event batch)")
      ->capture_default_str();
  cmd->add_option("--grace", a->grace, "Eviction grace period")->capture_default_str();
  cmd->add_option("--until", a->until, "Stop at this virtual time (default: when every job is done)");
  cmd->add_flag("--fair-sharing", a->fair_sharing, "Turn on fair sharing in the engine");
  cmd->add_option(
      "--estimate-factor", a->estimate_factor,
      "Give every job a maximum runtime (and runtime estimate) of its duration times this (>= 1; 0 = none)");
  cmd->add_option(
      "--reserve-after", a->reserve_after,
      "Turn on reservations with backfill in every ClusterQueue: a head short of quota this long reserves");
  cmd->add_option(
      "--backfill-window", a->backfill_window,
      "With --reserve-after: no reservation that would start further ahead than this (Slurm's bf_window)");
  cmd->add_option("--min-runtime", a->min_runtime,
                  "Set every ClusterQueue's minimum runtime before preemption");
  cmd->add_option("--reclaim-min-runtime", a->reclaim_min_runtime,
                  "Set every ClusterQueue's minimum runtime before its quota is reclaimed");
  cmd->add_option(
      "--preemption-delay", a->preemption_delay,
      "Set every ClusterQueue's preemption delay: how long a workload is pending before it may evict");
  CLI::Option* limit =
      cmd->add_option("--limit", a->limit, "Use only the N earliest jobs of the trace (by submission time)");
  cmd->add_option("--out", a->out, "Output directory")->required();
  cmd->add_flag("--no-png", a->no_png, "Do not render PNG charts");
  cmd->add_flag("-q,--quiet", a->quiet, "No progress line");
  cmd->callback([a, exit_code, gpus, limit] {
    a->gpus_given = gpus->count() > 0;
    a->limit_given = limit->count() > 0;
    *exit_code = RunSim(*a);
  });
}

}  // namespace artel::cli
