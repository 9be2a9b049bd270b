// `artel whoami`: the user, role and namespaces of the token.

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

void AddWhoamiCommand(CLI::App& app, int* exit_code) {
  auto c = std::make_shared<Common>();
  CLI::App* cmd = app.add_subcommand("whoami", "Show the user, role and namespaces of the token");
  AddCommon(cmd, c.get(), kDataOnly, false);
  cmd->callback([=] {
    ResolveClientOptions(&c->client);
    Response r = Request(c->client, "GET", "/api/v1/whoami");
    *exit_code = Report(r);
    if (*exit_code == kExitOk) {
      Json j = r.json();
      if (!c->output.empty()) {
        PrintStructured(j, c->output);
        return;
      }
      std::string ns;
      for (const auto& n : j.value("namespaces", Json::array()))
        ns += (ns.empty() ? "" : ", ") + n.get<std::string>();
      if (Str(j, "role") == "admin") ns = "all";
      std::cout << "user:       " << Str(j, "user") << "\nrole:       " << Str(j, "role")
                << "\nnamespaces: " << (ns.empty() ? "none" : ns) << "\nserver:     " << c->client.server
                << "\n";
    }
  });
}

}  // namespace artel::cli
