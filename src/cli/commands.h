// The verbs of the `artel` command line.
//
// Each verb lives in its own file (cmd_<verb>.cc) and contributes one
// function that registers a CLI11 subcommand on the root app. The callback it
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

// The client verbs (cmd_client.cc, docs/cli.md): apply, get, describe, why,
// cancel/delete, logs, run, top, events, whoami; each talks to arteld over HTTP.
void AddClientCommands(CLI::App& app, int* exit_code);

// `artel config view|get-contexts|current-context|use-context|set-context|
// delete-context` (cmd_config.cc): the client configuration file (cli/config.h).
void AddConfigCommand(CLI::App& app, int* exit_code);

// `artel completion bash|zsh` (cmd_completion.cc): a shell completion script.
void AddCompletionCommand(CLI::App& app, int* exit_code);

// `artel version`.
void AddVersionCommand(CLI::App& app, int* exit_code);

}  // namespace artel::cli
