// `artel cancel WORKLOAD...` and `artel delete wl NAME...` (kubectl's
// verb): cancel workloads; the record stays listed as Cancelled.

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

void AddDeleteCommands(CLI::App& app, int* exit_code) {
  for (const bool is_delete : {false, true}) {
    auto c = std::make_shared<Common>();
    auto names = std::make_shared<std::vector<std::string>>();
    auto ignore_not_found = std::make_shared<bool>(false);
    CLI::App* cmd =
        is_delete
            ? app.add_subcommand("delete",
                                 "Delete (cancel) workloads: delete wl NAME... or delete wl/NAME; the record "
                                 "stays listed as Cancelled")
            : app.add_subcommand("cancel", "Cancel workloads (stops their pods); the same as delete wl");
    cmd->add_option(
           is_delete ? "args" : "workloads", *names,
           is_delete ? "wl NAME... (NAME or NAMESPACE/NAME), or wl/NAME..." : "NAME or NAMESPACE/NAME")
        ->required();
    if (is_delete)
      cmd->add_flag("--ignore-not-found", *ignore_not_found, "A missing workload is not an error");
    AddCommon(cmd, c.get(), kNone);
    cmd->callback([=] {
      std::vector<std::string> refs;
      if (is_delete) {
        // `wl a b`, `wl/a wl/b` or `workload/a`.
        size_t first = 0;
        if (NormalizeKind((*names)[0]) == "wl") {
          first = 1;
        } else if (size_t slash = (*names)[0].find('/');
                   slash == std::string::npos || NormalizeKind((*names)[0].substr(0, slash)).empty()) {
          std::cerr << "error: give the kind: artel delete wl NAME... (only workloads can be deleted; "
                       "configuration changes go through artel apply)\n";
          *exit_code = kExitUsage;
          return;
        }
        for (size_t i = first; i < names->size(); ++i) {
          std::string ref = (*names)[i];
          if (first == 0) {
            size_t slash = ref.find('/');
            if (slash == std::string::npos || NormalizeKind(ref.substr(0, slash)) != "wl") {
              std::cerr << "error: " << ref << ": only workloads can be deleted (wl/NAME)\n";
              *exit_code = kExitUsage;
              return;
            }
            ref = ref.substr(slash + 1);
          }
          refs.push_back(ref);
        }
        if (refs.empty()) {
          std::cerr << "error: give the workloads to delete: artel delete wl NAME...\n";
          *exit_code = kExitUsage;
          return;
        }
      } else {
        refs = *names;
      }
      bool need_ns = std::any_of(refs.begin(), refs.end(),
                                 [](const std::string& r) { return r.find('/') == std::string::npos; });
      ResolveClientOptions(&c->client, need_ns);
      *exit_code = kExitOk;
      for (const auto& ref : refs) {
        std::string ns, n;
        SplitRef(ref, c->client.ns, &ns, &n);
        Response r = is_delete ? Request(c->client, "DELETE", WorkloadPath(ns, n))
                               : Request(c->client, "POST", WorkloadPath(ns, n) + "/cancel", "");
        if (is_delete && r.status == 404 && *ignore_not_found) continue;
        if (is_delete && r.status == 409) {
          // Deleting what has already ended is done (kubectl's delete is idempotent too).
          Json w;
          std::string phase = PhaseOf(*c, ns, n, &w);
          if (phase == "Succeeded" || phase == "Failed" || phase == "Cancelled") {
            std::cout << "workload/" << ns << "/" << n << " already ended (" << phase << ")\n";
            continue;
          }
        }
        int rc = Report(r);
        if (rc == kExitOk)
          std::cout << "workload/" << ns << "/" << n << (is_delete ? " deleted\n" : " cancelled\n");
        if (rc != kExitOk) *exit_code = rc;
      }
    });
  }
}

}  // namespace artel::cli
