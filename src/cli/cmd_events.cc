// `artel events [-f] [--since N]`: the event timeline (admissions,
// evictions, exits).

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

void AddEventsCommand(CLI::App& app, int* exit_code) {
  auto c = std::make_shared<Common>();
  auto follow = std::make_shared<bool>(false);
  auto since = std::make_shared<uint64_t>(0);
  CLI::App* cmd = app.add_subcommand("events", "Print the event timeline (admissions, evictions, exits)");
  cmd->add_flag("-f,--follow", *follow, "Keep streaming new events");
  cmd->add_option("--since", *since, "Only events after this sequence number");
  AddCommon(cmd, c.get(), kDataOnly);
  cmd->callback([=] {
    ResolveClientOptions(&c->client, !c->all_namespaces);
    std::string scope = c->all_namespaces ? "" : "&namespace=" + UrlEncode(c->client.ns);
    auto print = [&](Json e) {
      if (c->output == "json") {
        TimesToRfc3339(&e);
        std::cout << e.dump() << "\n" << std::flush;
        return;
      }
      if (c->output == "yaml") {
        std::cout << "---\n";
        PrintStructured(e, "yaml");
        std::cout << std::flush;
        return;
      }
      std::string ts = Age(e.value("time", int64_t{0}));
      std::string detail;
      for (const char* k : {"clusterQueue", "reason", "preemptor", "exitCode", "user", "changed"}) {
        if (e.contains(k)) detail += std::string(" ") + k + "=" + Str(e, k);
      }
      std::cout << std::right << std::setw(6) << ts << "  " << std::left << std::setw(14) << Str(e, "type")
                << std::setw(32) << Str(e, "workload", "-") << detail << "\n"
                << std::flush;
    };
    Response r =
        Request(c->client, "GET", "/api/v1/watch?follow=false&since=" + std::to_string(*since) + scope);
    *exit_code = Report(r);
    if (*exit_code != kExitOk) return;
    Json list = r.json();
    for (const auto& e : list.value("items", Json::array())) print(e);
    uint64_t next = list.value("next", uint64_t{0});
    while (*follow) {
      r = Request(c->client, "GET", "/api/v1/watch?follow=false&since=" + std::to_string(next) + scope);
      if ((*exit_code = Report(r)) != kExitOk) return;
      list = r.json();
      for (const auto& e : list.value("items", Json::array())) print(e);
      next = list.value("next", next);
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
  });
}

}  // namespace artel::cli
