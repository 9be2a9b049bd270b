// The scenario runner behind `artel test`.
//
// `RunScenario` drives a fresh `core::Engine` through one parsed scenario on a
// virtual clock and checks its expectations (docs/scenarios.md has the exact
// semantics). In short: between steps, workloads with a `runtime` finish on
// their own in time order; at each step time the step's events are applied
// in document order, then the runner settles the engine (schedule, complete
// every eviction at once, repeat until a round admits and evicts nothing),
// then the `expect` block is compared and every mismatch becomes one line of
// a readable diff.
//
// `RunTestPaths` is the whole verb: it finds scenario files under the given
// paths, runs them, prints `PASS file: name` / `FAIL file: name` (with the
// diff indented below) / `ERROR file:line:col: field: message`, and ends with
// `N passed, N failed`.
//
// Thread-safety: each call owns its engine; calls are independent.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "sim/scenario.h"

namespace artel::sim {

struct ScenarioResult {
  bool passed = true;
  // One line per mismatch or run error, without indentation, e.g.
  // "at 6m expect.admitted: want [a-1, b-1], got [b-1]  (missing: a-1)".
  std::vector<std::string> failures;
};

// Runs one scenario. When `trace` is not null, writes a per-step trace to it.
ScenarioResult RunScenario(const Scenario& scenario, std::ostream* trace = nullptr);

struct RunOptions {
  bool verbose = false;
  std::string filter;  // substring of scenario names; empty = all
};

struct RunSummary {
  int passed = 0;
  int failed = 0;  // failed and errored scenarios
};

// Lists the scenario files under `paths`: a file is taken as given; a
// directory is walked recursively for *.yaml / *.yml files holding a
// `kind: Scenario` document, in sorted order. Missing paths are returned in
// `missing`.
std::vector<std::string> FindScenarioFiles(const std::vector<std::string>& paths,
                                           std::vector<std::string>* missing);

// Runs every scenario under `paths` and writes the report to `out`.
RunSummary RunTestPaths(const std::vector<std::string>& paths, const RunOptions& options, std::ostream& out);

}  // namespace artel::sim
