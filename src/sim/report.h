// Reports of `artel sim` and `artel validate isolation`: JSON, CSV, a
// self-contained HTML page with interactive charts, and PNG renderings.
//
// The HTML report inlines its data (as JSON) and the chart library (uPlot,
// bundled at build time from third_party/charts; `kChartsBundled`), so it
// opens offline from a single file. It draws four charts per run: per-tenant
// GPUs held stacked against the stacked guarantees, pending jobs per tenant,
// utilization against its bound min(capacity, demand), and the wait-time CDF
// per tenant. When the page has drawn every chart it sets
// `document.body.dataset.charts` to their number and `dataset.errors` to the
// number of script errors seen, which the browser test reads. The fragment
// `#only=<chart id>` shows one chart alone; `RenderPngs` uses it to render
// each main chart with headless Chromium.
//
// Thread-safety: the functions are reentrant; they write only the files they
// are given.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "sim/replay.h"
#include "sim/trace.h"

namespace artel::sim {

extern const bool kChartsBundled;
extern const char* const kChartsJs;
extern const char* const kChartsCss;

struct SimRun {
  std::string label;   // e.g. the config path
  std::string config;  // where the config came from
  ReplayResult result;
};

struct SimMeta {
  std::string title = "artel sim";
  std::string trace;  // source of the jobs
  int64_t rows = 0;
  int64_t skipped = 0;
  std::vector<std::string> problems;
  core::Time interval = 0;
  core::Time grace = 0;
  // The time limits the replay set on every ClusterQueue and job
  // (ReplayOptions; docs/semantics.md §11); unset = off.
  double estimate_factor = 0;
  std::optional<core::Time> reserve_after;
  std::optional<core::Time> backfill_window;
  std::optional<core::Time> min_runtime;
  std::optional<core::Time> reclaim_min_runtime;
  std::optional<core::Time> preemption_delay;
  std::string extra_html;  // inserted before the runs (e.g. a verdict table); trusted markup
};

// The ids of the charts of run `run`: usage, queues, utilization, waits.
std::vector<std::string> ChartIds(size_t run);

std::string ReportJson(const SimMeta& meta, const std::vector<SimRun>& runs);
std::string ReportHtml(const SimMeta& meta, const std::vector<SimRun>& runs);

// Writes tenants.csv, cluster.csv, timeseries.csv and jobs.csv into `dir`
// (one of each per run, suffixed -1, -2, ... when there are several). Text
// fields (tenants, ids, namespaces, and the tenant names in timeseries.csv's
// header) are quoted per RFC 4180 when needed. When `written` is given, the
// file names written are appended to it, in order.
Status WriteCsvReports(const std::vector<SimRun>& runs, const std::vector<TraceJob>& jobs,
                       const std::string& dir, std::vector<std::string>* written = nullptr);

// One CSV field: as is, or in double quotes with each quote doubled when it
// holds a comma, a quote or a line break (RFC 4180).
std::string CsvField(std::string_view text);

Status WriteTextFile(const std::string& path, const std::string& text);

// The Chromium binary to use: $ARTEL_CHROMIUM, else chromium or
// chromium-browser on PATH; empty when none.
std::string FindChromium();

// Renders the charts of the first run of the HTML report at `html_path` into
// `<out_dir>/<name>.png` with headless Chromium. Returns the files written;
// fails with a message when Chromium is missing or fails.
Result<std::vector<std::string>> RenderPngs(const std::string& chromium, const std::string& html_path,
                                            const std::string& out_dir);

// "3d04h", "2h05m", "42s": a compact duration for tables.
std::string HumanDuration(double seconds);

std::string HtmlEscape(const std::string& text);

}  // namespace artel::sim
