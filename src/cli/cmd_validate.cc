// `artel validate isolation -k CONFIG`: the noisy-neighbour acceptance test
// (sim/isolation.h). Prints a verdict table, writes the HTML report when
// --out is given, and exits 0 on PASS, 1 on FAIL, 2 on a usage or config
// error.

#include <fmt/format.h>

#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "manifest/manifest.h"
#include "sim/duration.h"
#include "sim/isolation.h"
#include "sim/report.h"

namespace artel::cli {
namespace {

struct IsolationArgs {
  std::vector<std::string> config;
  std::string noisy;
  std::vector<std::string> victims;
  std::string interval = "1s";
  std::string grace = "30s";
  double max_degradation = 0.20;
  bool fair_sharing = false;
  std::string out;
  bool no_png = false;
  std::string flavor;
  int64_t victim_job_gpus = 0;
};

int RunIsolation(const IsolationArgs& a) {
  auto fail = [](const std::string& msg) {
    std::cerr << "artel validate isolation: " << msg << "\n";
    return 2;
  };
  core::Config config;
  for (const std::string& p : a.config) {
    if (Status s = manifest::LoadPath(p, &config); !s.ok()) return fail(s.ToString());
  }
  if (Status s = manifest::Validate(config); !s.ok()) return fail(s.ToString());
  sim::IsolationOptions o;
  o.noisy = a.noisy;
  o.victims = a.victims;
  o.max_degradation = a.max_degradation;
  o.flavor = a.flavor;
  o.victim_job_gpus = a.victim_job_gpus;
  o.engine.fair_sharing = a.fair_sharing;
  for (auto [text, field, dst] :
       {std::tuple{a.interval, "--interval", &o.interval}, std::tuple{a.grace, "--grace", &o.grace}}) {
    Result<core::Time> d = sim::ParseDuration(text);
    if (!d.ok()) return fail(std::string(field) + ": " + d.status().message());
    *dst = *d;
  }
  Result<sim::IsolationReport> rep = sim::ValidateIsolation(config, o);
  if (!rep.ok()) return fail(rep.status().ToString());
  std::cout << sim::IsolationTable(*rep);
  if (!a.out.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(a.out, ec);
    sim::SimMeta meta;
    meta.title = fmt::format("artel validate isolation: {} ({})", fmt::join(a.config, " + "),
                             rep->passed ? "PASS" : "FAIL");
    meta.trace = "synthetic noisy-neighbour workload";
    meta.interval = o.interval;
    meta.grace = o.grace;
    meta.extra_html = sim::IsolationHtml(*rep);
    std::string html = a.out + "/report.html";
    if (Status s = sim::WriteTextFile(html, sim::ReportHtml(meta, rep->runs)); !s.ok())
      return fail(s.message());
    if (Status s = sim::WriteTextFile(a.out + "/report.json", sim::ReportJson(meta, rep->runs)); !s.ok()) {
      return fail(s.message());
    }
    std::cout << "wrote " << html << "\n";
    if (!a.no_png) {
      std::string chromium = sim::FindChromium();
      if (chromium.empty() || !sim::kChartsBundled) {
        std::cout << "PNG charts skipped: " << (chromium.empty() ? "chromium not found" : "no chart library")
                  << "\n";
      } else if (auto pngs = sim::RenderPngs(chromium, html, a.out + "/img"); !pngs.ok()) {
        std::cout << "PNG charts skipped: " << pngs.status().message() << "\n";
      }
    }
  }
  return rep->passed ? 0 : 1;
}

}  // namespace

void AddValidateCommand(CLI::App& app, int* exit_code) {
  CLI::App* cmd =
      app.add_subcommand("validate", "Acceptance checks of a configuration, run on the simulator");
  cmd->require_subcommand(1);
  auto a = std::make_shared<IsolationArgs>();
  CLI::App* iso = cmd->add_subcommand(
      "isolation", "Noisy-neighbour test: victims alone, then with a flooding tenant before and after them");
  iso->add_option("-k,--config", a->config, "Config manifests (files or directories)")->required();
  iso->add_option("--noisy", a->noisy,
                  "Namespace of the flooding tenant (default: the first with a LocalQueue)");
  iso->add_option("--victim", a->victims, "Namespace of a victim (repeatable; default: every other tenant)");
  iso->add_option("--interval", a->interval, "Scheduling interval")->capture_default_str();
  iso->add_option("--grace", a->grace, "Eviction grace period")->capture_default_str();
  iso->add_option("--max-degradation", a->max_degradation, "Largest accepted degradation (fraction)")
      ->capture_default_str();
  iso->add_option("--flavor", a->flavor, "The flavor under test (default: the one with the most GPU quota)");
  iso->add_option("--victim-job-gpus", a->victim_job_gpus,
                  "Size of the victims' jobs (default: one gang job of the whole guarantee)");
  iso->add_flag("--fair-sharing", a->fair_sharing, "Turn on fair sharing in the engine");
  iso->add_option("--out", a->out, "Write report.html and report.json here");
  iso->add_flag("--no-png", a->no_png, "Do not render PNG charts");
  iso->callback([a, exit_code] { *exit_code = RunIsolation(*a); });
}

}  // namespace artel::cli
