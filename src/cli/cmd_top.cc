// `artel top [-w]`: GPU usage against guarantees, per team (cohort) and
// queue.

#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <chrono>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli/client.h"
#include "cli/commands.h"
#include "cli/format.h"
#include "cli/verbs.h"

namespace artel::cli {
namespace {

int Top(const Common& c) {
  Response r = Request(c.client, "GET", "/api/v1/clusterqueues");
  if (int rc = Report(r); rc != kExitOk) return rc;
  Response co = Request(c.client, "GET", "/api/v1/cohorts");
  if (int rc = Report(co); rc != kExitOk) return rc;
  auto bar = [](double used, double quota) {
    int width = 20;
    int fill =
        quota > 0 ? static_cast<int>(std::min(1.0, used / quota) * width + 0.5) : (used > 0 ? width : 0);
    return "[" + std::string(fill, '#') + std::string(width - fill, '.') + "]";
  };
  auto fmt = [](double v) {
    std::ostringstream os;
    os << v;
    return os.str();
  };
  // Per team (cohort) or queue and GPU flavor: GPUs of unlike flavors (and
  // MIG instances) are never added up.
  Json teams = Json::array();
  for (const auto& q : co.json().value("items", Json::array())) {
    for (const GpuRow& g : GpuRows(q["resources"], "subtreeQuota")) {
      teams.push_back({{"team", "cohort/" + Str(q, "name")},
                       {"flavor", g.label},
                       {"guaranteed", Str(*g.r, "subtreeQuota")},
                       {"used", Str(*g.r, "usage")},
                       {"borrowed", Str(*g.r, "borrowed")}});
    }
  }
  // Per flavor (like GPUs of one flavor only): the quota of the whole
  // tree (every root cohort's subtree quota, plus the queues in no cohort),
  // what is used of it, and what queues use beyond their own nominal quota.
  std::map<std::string, std::array<double, 4>> per_flavor;  // nominal, used, borrowed, queues
  for (const auto& q : co.json().value("items", Json::array())) {
    if (!Str(q, "parent").empty()) continue;
    for (const GpuRow& g : GpuRows(q["resources"], "subtreeQuota")) {
      per_flavor[g.label][0] += Num(*g.r, "subtreeQuota");
      per_flavor[g.label][1] += Num(*g.r, "usage");
    }
  }
  for (const auto& q : r.json().value("items", Json::array())) {
    std::vector<GpuRow> gr = GpuRows(q["resources"], "subtreeQuota");
    if (gr.empty()) {
      teams.push_back({{"team", "cq/" + Str(q, "name")},
                       {"admitted", q.value("admittedWorkloads", 0)},
                       {"pending", q.value("pendingWorkloads", 0)}});
    }
    for (const GpuRow& g : gr) {
      teams.push_back({{"team", "cq/" + Str(q, "name")},
                       {"flavor", g.label},
                       {"guaranteed", Str(*g.r, "subtreeQuota")},
                       {"used", Str(*g.r, "usage")},
                       {"borrowed", Str(*g.r, "borrowed")},
                       {"admitted", q.value("admittedWorkloads", 0)},
                       {"pending", q.value("pendingWorkloads", 0)}});
      auto& f = per_flavor[g.label];
      if (Str(q, "cohort").empty()) {
        f[0] += Num(*g.r, "nominal");
        f[1] += Num(*g.r, "usage");
      }
      f[2] += Num(*g.r, "borrowed");
      f[3] += 1;
    }
  }
  Json flavors = Json::array();
  for (const auto& [label, f] : per_flavor) {
    flavors.push_back({{"flavor", label},
                       {"nominal", fmt(f[0])},
                       {"used", fmt(f[1])},
                       {"borrowed", fmt(f[2])},
                       {"clusterQueues", static_cast<int>(f[3])}});
  }
  if (c.output == "json" || c.output == "yaml") {
    PrintStructured(Json{{"teams", teams}, {"flavors", flavors}}, c.output);
    return kExitOk;
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& t : teams) {
    bool cq = Str(t, "team").rfind("cq/", 0) == 0;
    rows.push_back({Str(t, "team"), Str(t, "flavor", "-"), Str(t, "guaranteed", "-"), Str(t, "used", "-"),
                    Str(t, "borrowed", "-"), cq ? Str(t, "admitted") : "-", cq ? Str(t, "pending") : "-",
                    bar(Num(t, "used"), Num(t, "guaranteed"))});
  }
  PrintTable(
      {"TEAM", "GPU-FLAVOR", "GUARANTEED", "USED", "BORROWED", "ADMITTED", "PENDING", "USED/GUARANTEED"},
      rows);
  rows.clear();
  for (const auto& f : flavors) {
    rows.push_back({Str(f, "flavor"), Str(f, "nominal"), Str(f, "used"), Str(f, "borrowed"),
                    fmt(std::max(0.0, Num(f, "nominal") - Num(f, "used"))),
                    bar(Num(f, "used"), Num(f, "nominal"))});
  }
  if (!rows.empty()) {
    std::cout << "\n";
    PrintTable({"GPU-FLAVOR", "NOMINAL", "USED", "BORROWED", "IDLE", "USED/NOMINAL"}, rows);
  }
  return kExitOk;
}

}  // namespace

void AddTopCommand(CLI::App& app, int* exit_code) {
  auto c = std::make_shared<Common>();
  auto watch = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand("top", "GPU usage against guarantees, per team (cohort) and queue");
  cmd->add_flag("-w,--watch", *watch, "Refresh every 2 seconds until interrupted");
  AddCommon(cmd, c.get(), kDataOnly, false);
  cmd->callback([=] {
    ResolveClientOptions(&c->client);
    const bool tty = ::isatty(STDOUT_FILENO) == 1;
    do {
      // A terminal is redrawn; a pipe gets one report after another.
      if (*watch && tty) std::cout << "\033[H\033[2J";
      *exit_code = Top(*c);
      std::cout << std::flush;
      if (*watch) std::this_thread::sleep_for(std::chrono::seconds(2));
    } while (*watch && *exit_code == kExitOk);
  });
}

}  // namespace artel::cli
