// `artel test PATH...`: runs scenario files and reports PASS/FAIL per
// scenario, ending with `N passed, N failed`; exit status 1 if any failed.

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "sim/runner.h"

namespace artel::cli {
namespace {

struct TestArgs {
  std::vector<std::string> paths;
  sim::RunOptions options;
};

}  // namespace

void AddTestCommand(CLI::App& app, int* exit_code) {
  // Owned by the callback, which CLI11 keeps alive as long as `app`.
  auto args = std::make_shared<TestArgs>();
  CLI::App* cmd =
      app.add_subcommand("test", "Run scenario files (files or directories, searched recursively)");
  cmd->add_option("paths", args->paths, "Scenario files or directories")->required();
  cmd->add_flag("-v,--verbose", args->options.verbose, "Print a per-step trace of every scenario");
  cmd->add_option("--filter", args->options.filter, "Run only scenarios whose name contains this text");
  cmd->callback([args, exit_code] {
    sim::RunSummary summary = sim::RunTestPaths(args->paths, args->options, std::cout);
    std::cout.flush();
    *exit_code = summary.failed > 0 ? 1 : 0;
  });
}

}  // namespace artel::cli
