// The verbs of the `artel` command line.
//
// Each verb lives in its own file (cmd_<verb>.cc; `why` shares
// cmd_describe.cc, `cancel` and `delete` share cmd_delete.cc) and contributes
// one function that registers a CLI11 subcommand on the root app. The callback it
// installs stores the verb's exit status in *exit_code; main() returns it.
// Adding a verb = one new file + one line in main.cc.
//
// Thread-safety: used from main() only.
#pragma once

#include <CLI/CLI.hpp>

namespace artel::cli {

// `artel test PATH...`: run scenario files (docs/scenarios.md).
void AddTestCommand(CLI::App& app, int* exit_code);

// `artel check PATH...`: load and validate manifests without running anything.
void AddCheckCommand(CLI::App& app, int* exit_code);

// `artel sim`: replay a trace through the engine and write reports (docs/simulator.md).
void AddSimCommand(CLI::App& app, int* exit_code);

// `artel validate isolation`: the noisy-neighbour acceptance test.
void AddValidateCommand(CLI::App& app, int* exit_code);

// The client verbs (docs/cli.md); each talks to arteld over HTTP and shares
// the flags and output helpers of cli/verbs.h.
// `artel get KIND [NAME...]` (cmd_get.cc).
void AddGetCommand(CLI::App& app, int* exit_code);
// `artel describe KIND NAME` (cmd_describe.cc).
void AddDescribeCommand(CLI::App& app, int* exit_code);
// `artel why WORKLOAD` (cmd_describe.cc: it shares describe's rendering).
void AddWhyCommand(CLI::App& app, int* exit_code);
// `artel cancel WORKLOAD...` and `artel delete wl NAME...` (cmd_delete.cc).
void AddDeleteCommands(CLI::App& app, int* exit_code);
// `artel logs WORKLOAD` (cmd_logs.cc).
void AddLogsCommand(CLI::App& app, int* exit_code);
// `artel apply -f|-k` (cmd_apply.cc).
void AddApplyCommand(CLI::App& app, int* exit_code);
// `artel run -- CMD...` (cmd_run.cc).
void AddRunCommand(CLI::App& app, int* exit_code);
// `artel top` (cmd_top.cc).
void AddTopCommand(CLI::App& app, int* exit_code);
// `artel events` (cmd_events.cc).
void AddEventsCommand(CLI::App& app, int* exit_code);
// `artel whoami` (cmd_whoami.cc).
void AddWhoamiCommand(CLI::App& app, int* exit_code);

// `artel config view|get-contexts|current-context|use-context|set-context|
// delete-context` (cmd_config.cc): the client configuration file (cli/config.h).
void AddConfigCommand(CLI::App& app, int* exit_code);

// `artel completion bash|zsh` (cmd_completion.cc): a shell completion script.
void AddCompletionCommand(CLI::App& app, int* exit_code);

// `artel version`.
void AddVersionCommand(CLI::App& app, int* exit_code);

}  // namespace artel::cli
