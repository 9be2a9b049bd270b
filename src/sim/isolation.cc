#include "sim/isolation.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "sim/duration.h"
#include "sim/replay.h"

namespace artel::sim {
namespace {

struct Workload {
  std::vector<TraceJob> jobs;
};

// `guarantee` GPUs per wave, in jobs of `job_gpus` (the last one smaller).
void AddVictim(const std::string& ns, int64_t guarantee, int64_t job_gpus, const IsolationOptions& o,
               core::Time start, std::vector<TraceJob>* jobs) {
  for (int w = 0; w < o.waves; ++w) {
    int k = 0;
    for (int64_t left = guarantee; left > 0; left -= job_gpus) {
      TraceJob j;
      j.tenant = ns;
      j.id = fmt::format("{}-w{}-{}", ns, w + 1, ++k);
      j.submit = start + w * o.job_duration;
      j.duration = o.job_duration;
      j.gpus = std::min(left, job_gpus) * core::kMilli;
      jobs->push_back(std::move(j));
    }
  }
}

void AddFlood(const std::string& ns, int64_t count, const IsolationOptions& o, core::Time start,
              std::vector<TraceJob>* jobs) {
  for (int64_t k = 0; k < count; ++k) {
    TraceJob j;
    j.tenant = ns;
    j.id = fmt::format("{}-flood-{}", ns, k + 1);
    j.submit = start;
    j.duration = o.noisy_duration;
    j.gpus = core::kMilli;
    jobs->push_back(std::move(j));
  }
}

struct VictimFigures {
  double mean_jct = 0;
  double throughput = 0;  // jobs per hour over [first submit, last finish]
  double wait_p95 = 0;
};

VictimFigures Figures(const ReplayResult& r, const std::vector<TraceJob>& jobs, const std::string& tenant) {
  VictimFigures f;
  core::Time first = -1, last = -1;
  int64_t done = 0;
  for (size_t j = 0; j < jobs.size(); ++j) {
    if (jobs[j].tenant != tenant) continue;
    if (first < 0 || jobs[j].submit < first) first = jobs[j].submit;
    if (r.outcomes[j].finish >= 0) {
      ++done;
      last = std::max(last, r.outcomes[j].finish);
    }
  }
  for (const TenantReport& t : r.tenants) {
    if (t.binding.tenant == tenant) {
      f.mean_jct = t.jct.mean;
      f.wait_p95 = t.wait.p95;
    }
  }
  if (done > 0 && last > first)
    f.throughput = static_cast<double>(done) / (static_cast<double>(last - first) / 3.6e6);
  return f;
}

std::string Percent(double v) { return fmt::format("{:.1f}%", 100.0 * v); }

}  // namespace

Result<IsolationReport> ValidateIsolation(const core::Config& config, const IsolationOptions& o) {
  // Tenants: namespaces with LocalQueues, in config order.
  std::vector<std::string> namespaces;
  std::map<std::string, std::string> queue_of;  // ns -> first LocalQueue by name
  for (const core::LocalQueueSpec& lq : config.local_queues) {
    if (!queue_of.count(lq.ns)) namespaces.push_back(lq.ns);
    if (!queue_of.count(lq.ns) || lq.name < queue_of[lq.ns]) queue_of[lq.ns] = lq.name;
  }
  if (namespaces.size() < 2)
    return InvalidArgument("validate isolation: the config needs at least two namespaces with LocalQueues");
  std::string noisy = o.noisy.empty() ? namespaces.front() : o.noisy;
  if (!queue_of.count(noisy))
    return InvalidArgument("validate isolation: namespace " + noisy + " has no LocalQueue");
  std::vector<std::string> victims = o.victims;
  if (victims.empty()) {
    for (const std::string& ns : namespaces) {
      if (ns != noisy) victims.push_back(ns);
    }
  }
  for (const std::string& v : victims) {
    if (!queue_of.count(v))
      return InvalidArgument("validate isolation: namespace " + v + " has no LocalQueue");
    if (v == noisy) return InvalidArgument("validate isolation: " + v + " cannot be both noisy and a victim");
  }
  // The flavor under test.
  std::string flavor = o.flavor;
  if (flavor.empty()) {
    core::Amount best = 0;
    for (const core::ResourceFlavorSpec& f : config.flavors) {
      Result<core::Amount> c = ConfigCapacity(config, o.resource, f.name);
      if (!c.ok()) return c.status();
      if (*c > best) {
        best = *c;
        flavor = f.name;
      }
    }
    if (flavor.empty())
      return InvalidArgument("validate isolation: the config has no " + o.resource + " quota");
  }
  const core::ResourceFlavorSpec* fspec = nullptr;
  for (const core::ResourceFlavorSpec& f : config.flavors) {
    if (f.name == flavor) fspec = &f;
  }
  if (fspec == nullptr) return InvalidArgument("validate isolation: no ResourceFlavor " + flavor);
  Result<core::Amount> cap = ConfigCapacity(config, o.resource, flavor);
  if (!cap.ok()) return cap.status();
  if (*cap <= 0) {
    return InvalidArgument("validate isolation: the config has no " + o.resource + " quota in flavor " +
                           flavor);
  }

  std::vector<TenantBinding> bindings;
  for (const std::string& ns : victims) bindings.push_back({ns, ns, queue_of[ns], 0});
  bindings.push_back({noisy, noisy, queue_of[noisy], 0});
  for (TenantBinding& b : bindings) {
    Result<core::Amount> g = NamespaceGuarantee(config, b.ns, o.resource, flavor);
    if (!g.ok()) return g.status();
    b.guarantee = *g;
  }
  std::map<std::string, int64_t> per_wave;
  for (size_t i = 0; i < victims.size(); ++i) {
    per_wave[victims[i]] = bindings[i].guarantee / core::kMilli;
    if (per_wave[victims[i]] < 1) {
      return InvalidArgument("validate isolation: victim " + victims[i] + " has no guaranteed " + o.resource +
                             " in flavor " + flavor + " (nothing to protect)");
    }
  }
  int64_t flood = static_cast<int64_t>(std::ceil(o.flood * static_cast<double>(*cap) / core::kMilli));

  ReplayOptions ro;
  ro.engine = o.engine;
  ro.interval = o.interval;
  ro.grace = o.grace;
  ro.gpu_resource = o.resource;
  ro.max_points = 400;
  ro.node_selector = fspec->node_labels;

  struct Plan {
    std::string label;
    std::vector<TraceJob> jobs;
  };
  auto job_gpus = [&](const std::string& v) {
    return o.victim_job_gpus > 0 ? o.victim_job_gpus : per_wave[v];
  };
  std::vector<Plan> plans(3);
  plans[0].label = "alone: victims only";
  for (const std::string& v : victims) AddVictim(v, per_wave[v], job_gpus(v), o, 0, &plans[0].jobs);
  plans[1].label = "A first: " + noisy + " floods, victims arrive " + FormatDuration(o.offset) + " later";
  AddFlood(noisy, flood, o, 0, &plans[1].jobs);
  for (const std::string& v : victims) AddVictim(v, per_wave[v], job_gpus(v), o, o.offset, &plans[1].jobs);
  plans[2].label = "B first: victims first, " + noisy + " floods " + FormatDuration(o.offset) + " later";
  for (const std::string& v : victims) AddVictim(v, per_wave[v], job_gpus(v), o, 0, &plans[2].jobs);
  AddFlood(noisy, flood, o, o.offset, &plans[2].jobs);

  IsolationReport rep;
  std::vector<std::vector<TraceJob>> all_jobs;
  for (Plan& p : plans) {
    std::vector<TenantBinding> b = bindings;
    Result<ReplayResult> r = Replay(config, b, p.jobs, *cap, ro);
    if (!r.ok()) return r.status();
    rep.runs.push_back({p.label, "", std::move(r).value()});
    all_jobs.push_back(std::move(p.jobs));
  }

  std::string guarantees;
  for (const TenantBinding& b : bindings) {
    guarantees += fmt::format("{}{} {:g}", guarantees.empty() ? "" : ", ", b.ns,
                              static_cast<double>(b.guarantee) / core::kMilli);
  }
  rep.summary = fmt::format(
      "flavor {}: capacity {:g} GPUs; guarantees (GPUs): {}; noisy {} floods {} 1-GPU jobs of {}; victims {} "
      "run {} waves of their guarantee ({}) every {}; interval {}, grace {}",
      flavor, static_cast<double>(*cap) / core::kMilli, guarantees, noisy, flood,
      FormatDuration(o.noisy_duration), fmt::join(victims, ", "), o.waves,
      o.victim_job_gpus > 0 ? fmt::format("{}-GPU jobs", o.victim_job_gpus) : std::string("one gang job"),
      FormatDuration(o.job_duration), FormatDuration(o.interval), FormatDuration(o.grace));

  const core::Time limit = o.interval + o.grace;
  auto add = [&](IsolationCheck c) {
    rep.passed = rep.passed && c.passed;
    rep.checks.push_back(std::move(c));
  };
  const std::string thr = fmt::format("<= {}", Percent(o.max_degradation));
  for (size_t vi = 0; vi < victims.size(); ++vi) {
    const std::string& v = victims[vi];
    VictimFigures base = Figures(rep.runs[0].result, all_jobs[0], v);
    for (size_t ri = 1; ri < 3; ++ri) {
      std::string order = ri == 1 ? "A first" : "B first";
      const ReplayResult& r = rep.runs[ri].result;
      VictimFigures f = Figures(r, all_jobs[ri], v);
      double tdeg = base.throughput > 0 ? 1.0 - f.throughput / base.throughput : 0;
      double jdeg = base.mean_jct > 0 ? f.mean_jct / base.mean_jct - 1.0 : 0;
      add({v, order, "throughput degradation",
           fmt::format("{} ({:.1f} vs {:.1f} jobs/h)", Percent(std::max(0.0, tdeg)), f.throughput,
                       base.throughput),
           thr, tdeg <= o.max_degradation + 1e-9});
      add({v, order, "completion-time degradation",
           fmt::format("{} (mean {} vs {}; wait p95 {})", Percent(std::max(0.0, jdeg)),
                       HumanDuration(f.mean_jct), HumanDuration(base.mean_jct), HumanDuration(f.wait_p95)),
           thr, jdeg <= o.max_degradation + 1e-9});
      const TenantReport& t = r.tenants[vi];
      std::string lat =
          fmt::format("{} max over {} episodes",
                      HumanDuration(static_cast<double>(t.reclaim_latency_max) / 1000.0), t.reclaims);
      if (t.reclaims_unresolved > 0) lat += fmt::format(", {} never met", t.reclaims_unresolved);
      add({v, order, "guarantee met within", lat, "<= " + FormatDuration(limit),
           t.reclaim_latency_max <= limit && t.reclaims_unresolved == 0});
      add({v, order, "evictions of the victim", std::to_string(t.preemptions), "0", t.preemptions == 0});
    }
  }
  for (size_t ri = 1; ri < 3; ++ri) {
    std::string order = ri == 1 ? "A first" : "B first";
    const ReplayResult& r = rep.runs[ri].result;
    const TenantReport& a = r.tenants.back();
    add({noisy, order, "noisy tenant used idle capacity",
         fmt::format("{:.1f} GPU-h borrowed, peak {:g} GPUs", a.gpu_hours_borrowed,
                     static_cast<double>(a.peak_held) / core::kMilli),
         "> 0 borrowed", a.gpu_hours_borrowed > 0});
    add({noisy, order, "above-quota work stayed Pending",
         fmt::format("peak {:g} of {:g} GPUs held; {} jobs waited",
                     static_cast<double>(r.cluster.peak_used) / core::kMilli,
                     static_cast<double>(r.cluster.capacity) / core::kMilli,
                     a.jobs - (a.peak_held / core::kMilli)),
         "held <= capacity", r.cluster.peak_used <= r.cluster.capacity});
    int64_t missing = 0;
    for (const EvictionRecord& e : r.evictions) {
      bool preemption = e.reason.rfind("InCohort", 0) == 0 || e.reason == "InClusterQueue";
      if (e.reason.empty() || (preemption && e.preemptor.empty())) ++missing;
    }
    add({"all", order, "evictions with a recorded reason",
         fmt::format("{} of {}", r.evictions.size() - static_cast<size_t>(missing), r.evictions.size()),
         "all", missing == 0});
  }
  return rep;
}

std::string IsolationTable(const IsolationReport& report) {
  size_t w_tenant = 6, w_name = 5, w_value = 5, w_thr = 9;
  for (const IsolationCheck& c : report.checks) {
    w_tenant = std::max(w_tenant, c.tenant.size());
    w_name = std::max(w_name, c.name.size());
    w_value = std::max(w_value, c.value.size());
    w_thr = std::max(w_thr, c.threshold.size());
  }
  std::string out = report.summary + "\n\n";
  out += fmt::format("{:<{}}  {:<7}  {:<{}}  {:<{}}  {:<{}}  {}\n", "tenant", w_tenant, "order", "check",
                     w_name, "value", w_value, "threshold", w_thr, "result");
  for (const IsolationCheck& c : report.checks) {
    out += fmt::format("{:<{}}  {:<7}  {:<{}}  {:<{}}  {:<{}}  {}\n", c.tenant, w_tenant, c.order, c.name,
                       w_name, c.value, w_value, c.threshold, w_thr, c.passed ? "PASS" : "FAIL");
  }
  int failed = 0;
  for (const IsolationCheck& c : report.checks) failed += c.passed ? 0 : 1;
  out += "\n";
  if (report.passed) {
    out += fmt::format("PASS: isolation holds ({} checks)\n", report.checks.size());
  } else {
    out += fmt::format("FAIL: {} of {} checks failed:\n", failed, report.checks.size());
    for (const IsolationCheck& c : report.checks) {
      if (!c.passed)
        out += fmt::format("  {} ({}): {} = {}, want {}\n", c.tenant, c.order, c.name, c.value, c.threshold);
    }
  }
  return out;
}

std::string IsolationHtml(const IsolationReport& report) {
  std::string h = fmt::format("<h2>Isolation verdict: <span class=\"{}\">{}</span></h2>\n<p>{}</p>\n",
                              report.passed ? "pass" : "fail", report.passed ? "PASS" : "FAIL",
                              HtmlEscape(report.summary));
  h += "<table><thead><tr><th>tenant</th><th>order</th><th>check</th><th>value</th><th>threshold</"
       "th><th>result</th>"
       "</tr></thead><tbody>";
  for (const IsolationCheck& c : report.checks) {
    h += fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"{}\">{}</td></tr>",
        HtmlEscape(c.tenant), HtmlEscape(c.order), HtmlEscape(c.name), HtmlEscape(c.value),
        HtmlEscape(c.threshold), c.passed ? "pass" : "fail", c.passed ? "PASS" : "FAIL");
  }
  return h + "</tbody></table>\n";
}

}  // namespace artel::sim
