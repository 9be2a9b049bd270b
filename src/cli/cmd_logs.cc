// `artel logs WORKLOAD [--pod P] [-f]`: a workload's pod logs.

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

void AddLogsCommand(CLI::App& app, int* exit_code) {
  auto c = std::make_shared<Common>();
  auto name = std::make_shared<std::string>();
  auto pod = std::make_shared<std::string>();
  auto follow = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand("logs", "Print a workload's pod logs");
  cmd->add_option("workload", *name, "NAME or NAMESPACE/NAME")->required();
  cmd->add_option("--pod", *pod, "One pod (e.g. main-0)");
  cmd->add_flag("-f,--follow", *follow, "Keep printing until the workload ends");
  AddCommon(cmd, c.get(), kNone);
  cmd->callback([=] {
    ResolveClientOptions(&c->client, name->find('/') == std::string::npos);
    std::string ns, n;
    SplitRef(*name, c->client.ns, &ns, &n);
    std::string path = WorkloadPath(ns, n) + "/logs" + (pod->empty() ? "" : "?pod=" + UrlEncode(*pod));
    size_t printed = 0;
    while (true) {
      Response r = Request(c->client, "GET", path);
      *exit_code = Report(r);
      if (*exit_code != kExitOk) return;
      if (r.body.size() > printed) std::cout << r.body.substr(printed) << std::flush;
      printed = std::max(printed, r.body.size());
      if (!*follow) return;
      Json w;
      std::string phase = PhaseOf(*c, ns, n, &w);
      if (phase == "Succeeded" || phase == "Failed" || phase == "Cancelled" || phase.empty()) {
        Response last = Request(c->client, "GET", path);
        if (last.status == 200 && last.body.size() > printed) std::cout << last.body.substr(printed);
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
  });
}

}  // namespace artel::cli
