#include "sim/report.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/quantity.h"
#include "sim/duration.h"

namespace artel::sim {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kChartNames[] = {"usage", "queues", "utilization", "waits"};
constexpr int kCdfPoints = 120;

double Round(double v, double scale = 1000.0) { return std::round(v * scale) / scale; }

double Gpus(core::Amount milli) { return static_cast<double>(milli) / core::kMilli; }

json PercentilesJson(const Percentiles& p) {
  return {{"p50", Round(p.p50)},
          {"p95", Round(p.p95)},
          {"p99", Round(p.p99)},
          {"mean", Round(p.mean)},
          {"max", Round(p.max)}};
}

// Wait-time CDFs on one shared, log-spaced grid of seconds (1 s .. max wait).
json WaitCdf(const ReplayResult& r) {
  double max_wait = 1;
  for (const TenantReport& t : r.tenants) {
    if (!t.waits.empty()) max_wait = std::max(max_wait, t.waits.back());
  }
  std::vector<double> grid;
  double hi = std::log10(std::max(2.0, max_wait));
  for (int i = 0; i < kCdfPoints; ++i) grid.push_back(Round(std::pow(10.0, hi * i / (kCdfPoints - 1)), 10.0));
  json tenants = json::object();
  for (const TenantReport& t : r.tenants) {
    if (t.waits.empty()) continue;
    std::vector<double> ys;
    for (double x : grid) {
      size_t n = static_cast<size_t>(std::upper_bound(t.waits.begin(), t.waits.end(), x) - t.waits.begin());
      ys.push_back(Round(static_cast<double>(n) / static_cast<double>(t.waits.size()), 10000.0));
    }
    tenants[t.binding.tenant] = ys;
  }
  return {{"x", grid}, {"tenants", tenants}};
}

json RunJson(const SimRun& run, bool with_series) {
  const ReplayResult& r = run.result;
  const ClusterReport& c = r.cluster;
  json cluster = {
      {"capacityGpus", Gpus(c.capacity)},
      {"jobs", c.jobs},
      {"events", c.events},
      {"decisions", c.decisions},
      {"scheduleCalls", c.schedule_calls},
      {"simulatedSeconds", Round(static_cast<double>(c.end) / 1000.0)},
      {"utilization", Round(c.utilization, 1e6)},
      {"utilizationBound", Round(c.bound, 1e6)},
      {"utilizationOfBound", c.bound > 0 ? Round(c.utilization / c.bound, 1e6) : 0.0},
      {"jainFairness", Round(c.jain, 1e6)},
      {"preemptions", c.preemptions},
      {"gpuHoursLost", Round(c.gpu_hours_lost)},
      // The shortest run a preemption ended; null when none was preempted.
      {"youngestPreemptedRunSeconds",
       c.youngest_preempted_run < 0 ? json(nullptr)
                                    : json(Round(static_cast<double>(c.youngest_preempted_run) / 1000.0))},
  };
  json sizes = json::array();
  for (const SizeClassReport& sc : c.sizes) {
    sizes.push_back({{"label", sc.label},
                     {"minGpus", Gpus(sc.min_gpus)},
                     {"maxGpus", sc.max_gpus < 0 ? json(nullptr) : json(Gpus(sc.max_gpus))},
                     {"jobs", sc.jobs},
                     {"admitted", sc.admitted},
                     {"waitSeconds", PercentilesJson(sc.wait)}});
  }
  cluster["waitBySize"] = sizes;
  json perf = {{"wallSeconds", Round(c.wall_seconds, 1e4)},
               {"scheduleSeconds", Round(c.schedule_seconds, 1e4)},
               {"eventsPerSecond", std::round(c.events_per_second)},
               {"decisionsPerSecond", std::round(c.decisions_per_second)}};
  json tenants = json::array();
  for (const TenantReport& t : r.tenants) {
    tenants.push_back({
        {"tenant", t.binding.tenant},
        {"namespace", t.binding.ns},
        {"queue", t.binding.queue},
        {"guaranteeGpus", Gpus(t.binding.guarantee)},
        {"jobs", t.jobs},
        {"admitted", t.admitted},
        {"completed", t.completed},
        {"neverAdmitted", t.never_admitted},
        {"tooLarge", t.too_large},
        {"gpuHours", Round(t.gpu_hours)},
        {"gpuHoursBorrowed", Round(t.gpu_hours_borrowed)},
        {"guaranteeSatisfaction",
         t.guarantee_satisfaction < 0 ? json(nullptr) : json(Round(t.guarantee_satisfaction, 1e6))},
        {"demandAtGuaranteeHours", Round(t.demand_hours)},
        {"waitSeconds", PercentilesJson(t.wait)},
        {"completionSeconds", PercentilesJson(t.jct)},
        {"preemptions", t.preemptions},
        {"gpuHoursLost", Round(t.gpu_hours_lost)},
        {"reclaims", t.reclaims},
        {"reclaimLatencyMaxSeconds", Round(static_cast<double>(t.reclaim_latency_max) / 1000.0)},
        {"reclaimLatencyMeanSeconds", Round(static_cast<double>(t.reclaim_latency_mean) / 1000.0)},
        {"reclaimsUnresolved", t.reclaims_unresolved},
        {"peakGpus", Gpus(t.peak_held)},
    });
  }
  std::map<std::string, int64_t> reasons;
  for (const EvictionRecord& e : r.evictions) ++reasons[e.reason];
  json out = {{"label", run.label},    {"config", run.config}, {"cluster", cluster},
              {"performance", perf},   {"tenants", tenants},   {"evictionReasons", reasons},
              {"warnings", r.warnings}};
  if (with_series) {
    json held = json::object(), pending = json::object();
    for (size_t i = 0; i < r.tenants.size(); ++i) {
      std::vector<double> h, p;
      for (double v : r.series.held[i]) h.push_back(Round(v));
      for (double v : r.series.pending[i]) p.push_back(Round(v));
      held[r.tenants[i].binding.tenant] = h;
      pending[r.tenants[i].binding.tenant] = p;
    }
    std::vector<double> used, bound;
    for (double v : r.series.used) used.push_back(Round(v));
    for (double v : r.series.bound) bound.push_back(Round(v));
    out["series"] = {
        {"t", r.series.t}, {"held", held}, {"pending", pending}, {"used", used}, {"bound", bound}};
    out["waitCdf"] = WaitCdf(r);
  }
  return out;
}

json MetaJson(const SimMeta& meta) {
  auto seconds = [](const std::optional<core::Time>& t) -> json {
    return t ? json(static_cast<double>(*t) / 1000.0) : json(nullptr);
  };
  return {{"title", meta.title},
          {"trace", meta.trace},
          {"rows", meta.rows},
          {"skipped", meta.skipped},
          {"problems", meta.problems},
          {"intervalSeconds", static_cast<double>(meta.interval) / 1000.0},
          {"graceSeconds", static_cast<double>(meta.grace) / 1000.0},
          {"timeLimits",
           {{"estimateFactor", meta.estimate_factor > 0 ? json(meta.estimate_factor) : json(nullptr)},
            {"reserveAfterSeconds", seconds(meta.reserve_after)},
            {"backfillWindowSeconds", seconds(meta.backfill_window)},
            {"minRuntimeSeconds", seconds(meta.min_runtime)},
            {"reclaimMinRuntimeSeconds", seconds(meta.reclaim_min_runtime)},
            {"preemptionDelaySeconds", seconds(meta.preemption_delay)}}}};
}

// One sentence on the time limits the replay set, for the report's header.
std::string TimeLimitsText(const SimMeta& meta) {
  std::vector<std::string> parts;
  if (meta.estimate_factor > 0)
    parts.push_back(fmt::format("every job's maximum runtime (its runtime estimate) is {:g} × its duration",
                                meta.estimate_factor));
  if (meta.reserve_after) {
    std::string r = "reservations after " + FormatDuration(*meta.reserve_after);
    if (meta.backfill_window) r += " (backfill window " + FormatDuration(*meta.backfill_window) + ")";
    parts.push_back(r);
  }
  if (meta.min_runtime) parts.push_back("minimum runtime " + FormatDuration(*meta.min_runtime));
  if (meta.reclaim_min_runtime)
    parts.push_back("minimum runtime before reclaim " + FormatDuration(*meta.reclaim_min_runtime));
  if (meta.preemption_delay) parts.push_back("preemption delay " + FormatDuration(*meta.preemption_delay));
  if (parts.empty()) return "Time limits: off.";
  std::string t = "Time limits: ";
  for (size_t i = 0; i < parts.size(); ++i) t += (i == 0 ? "" : "; ") + parts[i];
  return t + ".";
}

std::string Pct(double v) { return v < 0 ? "n/a" : fmt::format("{:.1f}%", 100.0 * v); }

std::string TenantTable(const ReplayResult& r) {
  std::string h =
      "<table><thead><tr><th>tenant</th><th>queue</th><th>guarantee</th><th>jobs</th><th>GPU-h</th>"
      "<th>borrowed GPU-h</th><th>guarantee held</th><th>wait p50</th><th>p95</th><th>p99</th>"
      "<th>completion p50</th><th>preemptions</th><th>GPU-h lost</th><th>reclaim max</th>"
      "<th>never admitted</th><th>larger than the cluster</th></tr></thead><tbody>";
  for (const TenantReport& t : r.tenants) {
    h += fmt::format(
        "<tr><td>{}</td><td>{}/{}</td><td>{:g}</td><td>{}</td><td>{:.1f}</td><td>{:.1f}</td><td>{}</td>"
        "<td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.1f}</td><td>{}</td><td>{}</td><td>{}</"
        "td></tr>",
        HtmlEscape(t.binding.tenant), HtmlEscape(t.binding.ns), HtmlEscape(t.binding.queue),
        Gpus(t.binding.guarantee), t.jobs, t.gpu_hours, t.gpu_hours_borrowed, Pct(t.guarantee_satisfaction),
        HumanDuration(t.wait.p50), HumanDuration(t.wait.p95), HumanDuration(t.wait.p99),
        HumanDuration(t.jct.p50), t.preemptions, t.gpu_hours_lost,
        HumanDuration(static_cast<double>(t.reclaim_latency_max) / 1000.0), t.never_admitted, t.too_large);
  }
  return h + "</tbody></table>";
}

std::string ClusterTable(const ClusterReport& c) {
  return fmt::format(
      "<table class=\"kv\"><tbody>"
      "<tr><th>capacity</th><td>{:g} GPUs</td></tr>"
      "<tr><th>jobs</th><td>{}</td></tr>"
      "<tr><th>simulated time</th><td>{}</td></tr>"
      "<tr><th>utilization</th><td>{} (bound min(capacity, demand): {})</td></tr>"
      "<tr><th>Jain's fairness (normalized shares)</th><td>{:.3f}</td></tr>"
      "<tr><th>preemptions</th><td>{} ({:.1f} GPU-hours lost)</td></tr>"
      "<tr><th>events / scheduler decisions</th><td>{} / {} in {} Schedule calls</td></tr>"
      "<tr><th>speed</th><td>{:.2f} s wall, {:.0f} events/s, {:.0f} decisions/s</td></tr>"
      "</tbody></table>",
      Gpus(c.capacity), c.jobs, HumanDuration(static_cast<double>(c.end) / 1000.0), Pct(c.utilization),
      Pct(c.bound), c.jain, c.preemptions, c.gpu_hours_lost, c.events, c.decisions, c.schedule_calls,
      c.wall_seconds, c.events_per_second, c.decisions_per_second);
}

// Waits by job size (GPUs asked for in total).
std::string SizeTable(const ClusterReport& c) {
  if (c.sizes.empty()) return "";
  std::string h =
      "<table><thead><tr><th>job size (GPUs)</th><th>jobs</th><th>admitted</th><th>wait p50</th>"
      "<th>p95</th><th>p99</th><th>mean</th><th>max</th></tr></thead><tbody>";
  for (const SizeClassReport& sc : c.sizes) {
    h += fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
        HtmlEscape(sc.label), sc.jobs, sc.admitted, HumanDuration(sc.wait.p50), HumanDuration(sc.wait.p95),
        HumanDuration(sc.wait.p99), HumanDuration(sc.wait.mean), HumanDuration(sc.wait.max));
  }
  return h + "</tbody></table>";
}

// The page script: draws every chart from the inlined data.
constexpr const char* kPageScript = R"JS(
(function () {
  var errors = 0;
  window.addEventListener('error', function () { errors++; document.body.dataset.errors = errors; });
  var origError = console.error;
  console.error = function () { errors++; document.body.dataset.errors = errors; origError.apply(console, arguments); };
  document.body.dataset.errors = 0;
  var data = JSON.parse(document.getElementById('artel-data').textContent);
  var palette = ['#4e79a7', '#f28e2b', '#e15759', '#76b7b2', '#59a14f', '#edc948', '#b07aa1', '#ff9da7', '#9c755f', '#bab0ac'];
  var only = (location.hash.match(/only=([\w-]+)/) || [])[1];
  if (only) document.body.classList.add('only');
  function fmtTime(s) {
    if (s == null) return '';
    if (s >= 2 * 86400) return (s / 86400).toFixed(1) + 'd';
    if (s >= 2 * 3600) return (s / 3600).toFixed(1) + 'h';
    if (s >= 120) return (s / 60).toFixed(0) + 'm';
    return s.toFixed(0) + 's';
  }
  // The 8 tenants with the most GPU-hours keep their own series; the rest are summed.
  function groups(run) {
    var ts = run.tenants.slice().sort(function (a, b) { return b.gpuHours - a.gpuHours; });
    var top = ts.slice(0, 8), rest = ts.slice(8);
    var out = top.map(function (t) { return { name: t.tenant, members: [t.tenant], guarantee: t.guaranteeGpus }; });
    if (rest.length) out.push({ name: 'other (' + rest.length + ')', members: rest.map(function (t) { return t.tenant; }),
      guarantee: rest.reduce(function (s, t) { return s + t.guaranteeGpus; }, 0) });
    return out;
  }
  function sum(series, members, n) {
    var out = new Array(n).fill(0);
    members.forEach(function (m) { (series[m] || []).forEach(function (v, i) { out[i] += v; }); });
    return out;
  }
  function size(el) { return { width: Math.max(320, el.clientWidth || 900), height: only ? 360 : 280 }; }
  var drawn = 0;
  function draw(id, opts, cols) {
    var el = document.getElementById(id);
    if (!el) return;
    if (only && only !== id) { el.parentNode.style.display = 'none'; return; }
    var s = size(el);
    opts.width = s.width; opts.height = s.height;
    new uPlot(opts, cols, el);
    drawn++;
  }
  var xaxis = { values: function (u, vals) { return vals.map(fmtTime); } };
  data.runs.forEach(function (run, ri) {
    var t = run.series.t, n = t.length, gs = groups(run);
    // 1. GPUs held per tenant, stacked, with the stacked guarantees dashed.
    var cols = [t], series = [{}], bands = [], acc = new Array(n).fill(0), gacc = 0;
    gs.forEach(function (g, i) {
      var v = sum(run.series.held, g.members, n);
      acc = acc.map(function (a, k) { return a + v[k]; });
      cols.push(acc.slice());
      var c = palette[i % palette.length];
      series.push({ label: g.name, stroke: c, fill: c + '99', width: 1 });
      if (i > 0) bands.push({ series: [i + 1, i], fill: c + '99' });
    });
    gs.forEach(function (g, i) {
      gacc += g.guarantee;
      cols.push(new Array(n).fill(gacc));
      series.push({ label: g.name + ' guarantee', stroke: palette[i % palette.length], dash: [6, 4], width: 1.5 });
    });
    cols.push(new Array(n).fill(run.cluster.capacityGpus));
    series.push({ label: 'capacity', stroke: '#000', width: 1.5 });
    // uPlot fills each band to the series below; the first fills to zero.
    series[1].fill = palette[0] + '99';
    draw('chart-' + ri + '-usage', { title: 'GPUs held per tenant (stacked) vs guarantees', series: series, bands: bands,
      axes: [xaxis, { label: 'GPUs' }], scales: { x: { time: false } } }, cols);
    // 2. Pending jobs per tenant.
    cols = [t]; series = [{}];
    gs.forEach(function (g, i) {
      cols.push(sum(run.series.pending, g.members, n));
      series.push({ label: g.name, stroke: palette[i % palette.length], width: 1.5 });
    });
    draw('chart-' + ri + '-queues', { title: 'Pending jobs per tenant', series: series,
      axes: [xaxis, { label: 'jobs' }], scales: { x: { time: false } } }, cols);
    // 3. Utilization vs its bound.
    var cap = run.cluster.capacityGpus || 1;
    draw('chart-' + ri + '-utilization', { title: 'Utilization vs bound min(capacity, demand)',
      series: [{}, { label: 'utilization %', stroke: '#4e79a7', fill: '#4e79a733', width: 1.5 },
               { label: 'bound %', stroke: '#e15759', dash: [6, 4], width: 1.5 }],
      axes: [xaxis, { label: '%' }], scales: { x: { time: false }, y: { range: [0, 105] } } },
      [t, run.series.used.map(function (v) { return 100 * v / cap; }), run.series.bound.map(function (v) { return 100 * v / cap; })]);
    // 4. Wait-time CDF per tenant.
    cols = [run.waitCdf.x]; series = [{}];
    gs.forEach(function (g, i) {
      if (g.members.length !== 1 || !run.waitCdf.tenants[g.name]) return;
      cols.push(run.waitCdf.tenants[g.name]);
      series.push({ label: g.name, stroke: palette[i % palette.length], width: 1.5 });
    });
    draw('chart-' + ri + '-waits', { title: 'Wait-time CDF per tenant', series: series,
      axes: [{ label: 'wait (log scale)', values: function (u, vals) { return vals.map(fmtTime); } }, { label: 'fraction of jobs' }],
      scales: { x: { time: false, distr: 3 }, y: { range: [0, 1] } } }, cols);
  });
  document.body.dataset.charts = drawn;
})();
)JS";

constexpr const char* kPageCss = R"CSS(
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; max-width: 1200px; }
h1 { font-size: 22px; } h2 { font-size: 18px; margin-top: 32px; } h3 { font-size: 15px; }
table { border-collapse: collapse; margin: 8px 0 16px; font-size: 13px; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: right; }
th { background: #f4f4f4; } td:first-child, th:first-child { text-align: left; }
table.kv th { text-align: left; }
.chart { margin: 12px 0 24px; }
.pass { color: #1a7f37; font-weight: bold; } .fail { color: #cf222e; font-weight: bold; }
.note { color: #666; }
body.only > *:not(.run) { display: none; } body.only .run > *:not(.chart) { display: none; }
body.only { margin: 8px; }
)CSS";

}  // namespace

std::vector<std::string> ChartIds(size_t run) {
  std::vector<std::string> ids;
  for (const char* name : kChartNames) ids.push_back(fmt::format("chart-{}-{}", run, name));
  return ids;
}

std::string HumanDuration(double seconds) {
  if (seconds < 0) return "-" + HumanDuration(-seconds);
  auto s = static_cast<int64_t>(std::llround(seconds));
  if (s < 60)
    return seconds < 10 && seconds != std::floor(seconds) ? fmt::format("{:.1f}s", seconds)
                                                          : fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m{:02}s", s / 60, s % 60);
  if (s < 86400) return fmt::format("{}h{:02}m", s / 3600, (s % 3600) / 60);
  return fmt::format("{}d{:02}h", s / 86400, (s % 86400) / 3600);
}

std::string HtmlEscape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string ReportJson(const SimMeta& meta, const std::vector<SimRun>& runs) {
  json out = {{"meta", MetaJson(meta)}, {"runs", json::array()}};
  for (const SimRun& run : runs) out["runs"].push_back(RunJson(run, true));
  // Invalid UTF-8 in a trace's names is replaced, not fatal (nlohmann throws by default).
  return out.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string ReportHtml(const SimMeta& meta, const std::vector<SimRun>& runs) {
  json data = {{"meta", MetaJson(meta)}, {"runs", json::array()}};
  for (const SimRun& run : runs) data["runs"].push_back(RunJson(run, true));
  std::string data_text = data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  // Keep the inlined JSON from closing its <script> element.
  for (size_t p = 0; (p = data_text.find("</", p)) != std::string::npos; p += 3)
    data_text.replace(p, 2, "<\\/");

  std::string h = "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>" +
                  HtmlEscape(meta.title) + "</title>\n<style>" + kPageCss + "</style>\n";
  if (kChartsBundled) h += std::string("<style>") + kChartsCss + "</style>\n";
  h += "</head><body>\n<h1>" + HtmlEscape(meta.title) + "</h1>\n";
  h += fmt::format(
      "<p class=\"note\">Trace: {} ({} rows, {} malformed rows skipped). Scheduling interval {}, eviction "
      "grace {}. {}</p>\n",
      HtmlEscape(meta.trace), meta.rows, meta.skipped, FormatDuration(meta.interval),
      FormatDuration(meta.grace), HtmlEscape(TimeLimitsText(meta)));
  if (!meta.problems.empty()) {
    h += "<details><summary>Malformed rows</summary><pre>";
    for (const std::string& p : meta.problems) h += HtmlEscape(p) + "\n";
    h += "</pre></details>\n";
  }
  h += meta.extra_html;
  if (runs.size() > 1) {
    h += "<h2>Comparison</h2><table><thead><tr><th>config</th><th>utilization</th><th>bound</th><th>Jain</th>"
         "<th>preemptions</th><th>GPU-h lost</th><th>worst tenant wait p95</th><th>worst guarantee "
         "held</th></tr></thead><tbody>";
    for (const SimRun& run : runs) {
      double worst_p95 = 0, worst_sat = 2;
      for (const TenantReport& t : run.result.tenants) {
        worst_p95 = std::max(worst_p95, t.wait.p95);
        if (t.guarantee_satisfaction >= 0) worst_sat = std::min(worst_sat, t.guarantee_satisfaction);
      }
      const ClusterReport& c = run.result.cluster;
      h += fmt::format(
          "<tr><td>{}</td><td>{}</td><td>{}</td><td>{:.3f}</td><td>{}</td><td>{:.1f}</td><td>{}</td><td>{}</"
          "td></tr>",
          HtmlEscape(run.label), Pct(c.utilization), Pct(c.bound), c.jain, c.preemptions, c.gpu_hours_lost,
          HumanDuration(worst_p95), worst_sat > 1 ? "n/a" : Pct(worst_sat));
    }
    h += "</tbody></table>\n";
  }
  if (!kChartsBundled) {
    h += "<p class=\"note\">Charts are not available: this artel was built without the chart library "
         "(run scripts/install-deps.sh and rebuild).</p>\n";
  }
  for (size_t i = 0; i < runs.size(); ++i) {
    const SimRun& run = runs[i];
    h += "<section class=\"run\">\n<h2>" + HtmlEscape(run.label) + "</h2>\n";
    if (!run.config.empty()) h += "<p class=\"note\">Config: " + HtmlEscape(run.config) + "</p>\n";
    for (const std::string& w : run.result.warnings)
      h += "<p class=\"note\">Warning: " + HtmlEscape(w) + "</p>\n";
    h += ClusterTable(run.result.cluster) + "\n" + SizeTable(run.result.cluster) + "\n" +
         TenantTable(run.result) + "\n";
    for (const std::string& id : ChartIds(i))
      h += "<div class=\"chart\"><div id=\"" + id + "\"></div></div>\n";
    h += "</section>\n";
  }
  h += "<script id=\"artel-data\" type=\"application/json\">" + data_text + "</script>\n";
  if (kChartsBundled) {
    h += std::string("<script>") + kChartsJs + "</script>\n<script>" + kPageScript + "</script>\n";
  } else {
    h += "<script>document.body.dataset.charts = 0; document.body.dataset.errors = 0;</script>\n";
  }
  h += "</body></html>\n";
  return h;
}

Status WriteTextFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return InvalidArgument(path + ": cannot write");
  out << text;
  out.close();
  if (!out) return InvalidArgument(path + ": write failed");
  return Status::Ok();
}

std::string CsvField(std::string_view text) {
  // Also quoted: leading or trailing blanks, which readers (Artel's too) trim.
  const bool padded = !text.empty() && (text.front() == ' ' || text.front() == '\t' || text.back() == ' ' ||
                                        text.back() == '\t');
  if (!padded && text.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(text);
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

Status WriteCsvReports(const std::vector<SimRun>& runs, const std::vector<TraceJob>& jobs,
                       const std::string& dir, std::vector<std::string>* written) {
  auto write = [&](const std::string& name, const std::string& text) -> Status {
    if (Status s = WriteTextFile(dir + "/" + name, text); !s.ok()) return s;
    if (written != nullptr) written->push_back(name);
    return Status::Ok();
  };
  for (size_t ri = 0; ri < runs.size(); ++ri) {
    const ReplayResult& r = runs[ri].result;
    std::string suffix = runs.size() > 1 ? fmt::format("-{}", ri + 1) : "";
    std::string t =
        "tenant,namespace,queue,guarantee_gpus,jobs,admitted,completed,never_admitted,gpu_hours,"
        "gpu_hours_borrowed,guarantee_satisfaction,wait_p50_s,wait_p95_s,wait_p99_s,wait_mean_s,"
        "jct_p50_s,jct_p95_s,jct_mean_s,preemptions,gpu_hours_lost,reclaim_latency_max_s,too_large\n";
    for (const TenantReport& x : r.tenants) {
      t += fmt::format(
          "{},{},{},{:g},{},{},{},{},{:.3f},{:.3f},{},{:.3f},{:.3f},{:.3f},{:.3f},{:.3f},{:.3f},{:.3f},{},{:."
          "3f},{:.3f},{}\n",
          CsvField(x.binding.tenant), CsvField(x.binding.ns), CsvField(x.binding.queue),
          Gpus(x.binding.guarantee), x.jobs, x.admitted, x.completed, x.never_admitted, x.gpu_hours,
          x.gpu_hours_borrowed,
          x.guarantee_satisfaction < 0 ? std::string() : fmt::format("{:.6f}", x.guarantee_satisfaction),
          x.wait.p50, x.wait.p95, x.wait.p99, x.wait.mean, x.jct.p50, x.jct.p95, x.jct.mean, x.preemptions,
          x.gpu_hours_lost, static_cast<double>(x.reclaim_latency_max) / 1000.0, x.too_large);
    }
    if (Status s = write("tenants" + suffix + ".csv", t); !s.ok()) return s;
    const ClusterReport& c = r.cluster;
    std::string cl = fmt::format(
        "capacity_gpus,jobs,events,decisions,schedule_calls,simulated_seconds,utilization,utilization_bound,"
        "jain_fairness,preemptions,gpu_hours_lost,wall_seconds,events_per_second,decisions_per_second\n"
        "{:g},{},{},{},{},{:.3f},{:.6f},{:.6f},{:.6f},{},{:.3f},{:.4f},{:.0f},{:.0f}\n",
        Gpus(c.capacity), c.jobs, c.events, c.decisions, c.schedule_calls,
        static_cast<double>(c.end) / 1000.0, c.utilization, c.bound, c.jain, c.preemptions, c.gpu_hours_lost,
        c.wall_seconds, c.events_per_second, c.decisions_per_second);
    if (Status s = write("cluster" + suffix + ".csv", cl); !s.ok()) return s;
    std::string sz =
        "size_class,min_gpus,max_gpus,jobs,admitted,"
        "wait_p50_s,wait_p95_s,wait_p99_s,wait_mean_s,wait_max_s\n";
    for (const SizeClassReport& x : c.sizes) {
      sz += fmt::format("{},{:g},{},{},{},{:.3f},{:.3f},{:.3f},{:.3f},{:.3f}\n", CsvField(x.label),
                        Gpus(x.min_gpus),
                        x.max_gpus < 0 ? std::string() : fmt::format("{:g}", Gpus(x.max_gpus)), x.jobs,
                        x.admitted, x.wait.p50, x.wait.p95, x.wait.p99, x.wait.mean, x.wait.max);
    }
    if (Status s = write("sizes" + suffix + ".csv", sz); !s.ok()) return s;
    std::string ts = "t_seconds,used_gpus,bound_gpus";
    for (const TenantReport& x : r.tenants) {
      ts += "," + CsvField("held:" + x.binding.tenant) + "," + CsvField("pending:" + x.binding.tenant);
    }
    ts += "\n";
    for (size_t i = 0; i < r.series.t.size(); ++i) {
      ts += fmt::format("{:.3f},{:.3f},{:.3f}", r.series.t[i], r.series.used[i], r.series.bound[i]);
      for (size_t k = 0; k < r.tenants.size(); ++k) {
        ts += fmt::format(",{:.3f},{:.3f}", r.series.held[k][i], r.series.pending[k][i]);
      }
      ts += "\n";
    }
    if (Status s = write("timeseries" + suffix + ".csv", ts); !s.ok()) return s;
    std::string js = "id,tenant,line,submit_s,gpus,duration_s,first_admit_s,finish_s,wait_s,evictions\n";
    js.reserve(jobs.size() * 64);
    for (size_t j = 0; j < jobs.size() && j < r.outcomes.size(); ++j) {
      const JobOutcome& o = r.outcomes[j];
      const TraceJob& job = jobs[j];
      auto opt = [](core::Time v) {
        return v < 0 ? std::string() : fmt::format("{:.3f}", static_cast<double>(v) / 1000.0);
      };
      js += fmt::format("{},{},{},{:.3f},{:g},{:.3f},{},{},{},{}\n", CsvField(job.id), CsvField(job.tenant),
                        job.line, static_cast<double>(job.submit) / 1000.0,
                        static_cast<double>(job.gpus) / core::kMilli,
                        static_cast<double>(job.duration) / 1000.0, opt(o.first_admit), opt(o.finish),
                        o.first_admit < 0 ? std::string() : opt(o.first_admit - job.submit), o.evictions);
    }
    if (Status s = write("jobs" + suffix + ".csv", js); !s.ok()) return s;
  }
  return Status::Ok();
}

std::string FindChromium() {
  if (const char* env = std::getenv("ARTEL_CHROMIUM"); env != nullptr && *env != '\0') {
    return access(env, X_OK) == 0 ? std::string(env) : std::string();
  }
  const char* path = std::getenv("PATH");
  std::string p = path ? path : "/usr/bin:/bin";
  for (const char* name : {"chromium", "chromium-browser", "google-chrome"}) {
    size_t start = 0;
    while (start <= p.size()) {
      size_t end = p.find(':', start);
      if (end == std::string::npos) end = p.size();
      std::string cand = p.substr(start, end - start) + "/" + name;
      if (end > start && access(cand.c_str(), X_OK) == 0) return cand;
      start = end + 1;
    }
  }
  return "";
}

namespace {

std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'')
      out += "'\\''";
    else
      out += c;
  }
  return out + "'";
}

}  // namespace

Result<std::vector<std::string>> RenderPngs(const std::string& chromium, const std::string& html_path,
                                            const std::string& out_dir) {
  if (chromium.empty()) return NotFound("chromium not found");
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  std::string abs = fs::absolute(html_path, ec).string();
  std::string profile = fs::temp_directory_path(ec).string() + fmt::format("/artel-chromium-{}", getpid());
  std::vector<std::string> files;
  for (const std::string& id : ChartIds(0)) {
    std::string name = id.substr(id.rfind('-') + 1);
    std::string png = fs::absolute(out_dir + "/" + name + ".png", ec).string();
    std::string cmd = ShellQuote(chromium) +
                      " --headless --no-sandbox --disable-gpu --disable-background-networking"
                      " --disable-component-update --disable-sync --no-first-run --hide-scrollbars"
                      " --virtual-time-budget=5000 --user-data-dir=" +
                      ShellQuote(profile) + " --window-size=1000,420 --screenshot=" + ShellQuote(png) + " " +
                      ShellQuote("file://" + abs + "#only=" + id) + " >/dev/null 2>&1";
    int rc = std::system(cmd.c_str());
    if (rc != 0 || !fs::exists(png)) {
      fs::remove_all(profile, ec);
      return InvalidArgument(fmt::format("chromium failed to render {} (exit status {})", id, rc));
    }
    files.push_back(png);
  }
  fs::remove_all(profile, ec);
  return files;
}

}  // namespace artel::sim
