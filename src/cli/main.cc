// artel: the command-line client. Offline verbs (test, check) run here
// without a daemon; each verb is registered from its own cmd_*.cc file.

#include <CLI/CLI.hpp>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"artel: a multi-tenant GPU cluster scheduler"};
  app.require_subcommand(1);
  int exit_code = 0;
  artel::cli::AddTestCommand(app, &exit_code);
  artel::cli::AddCheckCommand(app, &exit_code);
  artel::cli::AddSimCommand(app, &exit_code);
  artel::cli::AddValidateCommand(app, &exit_code);
  artel::cli::AddClientCommands(app, &exit_code);
  artel::cli::AddVersionCommand(app, &exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // Usage errors exit with 2, as most Unix tools do; --help exits with 0.
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  } catch (const nlohmann::json::type_error& e) {
    // Encoding a request: a command-line argument or file that is not UTF-8
    // (`artel run -- echo $'\xff'`) used to abort the CLI.
    if (e.id == 316) {
      std::cerr << "error: an argument or input is not valid UTF-8 (" << e.what() << ")\n";
    } else {
      std::cerr << "error: " << e.what() << "\n";
    }
    return 1;
  }
  return exit_code;
}
