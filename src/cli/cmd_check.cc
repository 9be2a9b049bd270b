// `artel check PATH...`: loads manifests (files or directories, as
// `kubectl apply -k` would read them), validates the whole configuration and
// asks a throwaway engine to accept it. Prints `file:line:col: field: message`
// for the first problem and exits 1; prints a one-line summary otherwise.

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "core/engine.h"
#include "manifest/manifest.h"

namespace artel::cli {

void AddCheckCommand(CLI::App& app, int* exit_code) {
  auto paths = std::make_shared<std::vector<std::string>>();
  CLI::App* cmd = app.add_subcommand("check", "Load and validate manifests without running anything");
  cmd->add_option("paths", *paths, "Manifest files or directories")->required();
  cmd->callback([paths, exit_code] {
    core::Config config;
    for (const std::string& path : *paths) {
      if (Status s = manifest::LoadPath(path, &config); !s.ok()) {
        std::cerr << s.ToString() << "\n";
        *exit_code = 1;
        return;
      }
    }
    Status s = manifest::Validate(config);
    if (s.ok()) {
      core::Engine engine;
      s = engine.Configure(config);
    }
    if (!s.ok()) {
      std::cerr << s.ToString() << "\n";
      *exit_code = 1;
      return;
    }
    for (const Status& w : manifest::Warnings(config)) std::cerr << "warning: " << w.ToString() << "\n";
    std::cout << "ok: " << config.flavors.size() << " flavors, " << config.cohorts.size() << " cohorts, "
              << config.cluster_queues.size() << " cluster queues, " << config.local_queues.size()
              << " local queues, " << config.priority_classes.size() << " priority classes\n";
    *exit_code = 0;
  });
}

}  // namespace artel::cli
