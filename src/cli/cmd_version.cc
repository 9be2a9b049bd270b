// `artel version`: prints the version the build was configured with.

#include <iostream>

#include "cli/commands.h"

#ifndef ARTEL_VERSION
#define ARTEL_VERSION "unknown"
#endif

namespace artel::cli {

void AddVersionCommand(CLI::App& app, int* exit_code) {
  CLI::App* cmd = app.add_subcommand("version", "Print the version");
  cmd->callback([exit_code] {
    std::cout << "artel " << ARTEL_VERSION << "\n";
    *exit_code = 0;
  });
}

}  // namespace artel::cli
