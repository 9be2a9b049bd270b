// `artel check PATH...`: loads manifests (files or directories, as
// `kubectl apply -k` would read them), validates the whole configuration and
// asks a throwaway engine to accept it. Prints `file:line:col: field: message`
// for the first problem and exits 1; prints a one-line summary otherwise.
//
// `artel check --inventory [--config arteld.yaml] [--fake-gpus SPEC] [PATH...]`
// describes the host as arteld would see it, without starting it: the GPUs
// (NVML, or the fake inventory of --fake-gpus or the config's fakeGpus), the
// node pools they form with their labels and taints (server/inventory.h),
// and a warning for every ResourceFlavor of PATH... (default: the config's
// manifests) that matches no node pool.

#include <unistd.h>

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "core/engine.h"
#include "manifest/manifest.h"
#include "runtime/runtime.h"
#include "server/config.h"
#include "server/inventory.h"

namespace artel::cli {
namespace {

struct CheckArgs {
  std::vector<std::string> paths;
  bool inventory = false;
  std::string config_file;
  std::string fake_gpus;
};

// Loads, validates and configures; prints the first problem.
bool LoadConfig(const std::vector<std::string>& paths, core::Config* config) {
  for (const std::string& path : paths) {
    if (Status s = manifest::LoadPath(path, config); !s.ok()) {
      std::cerr << s.ToString() << "\n";
      return false;
    }
  }
  Status s = manifest::Validate(*config);
  if (s.ok()) {
    core::Engine engine;
    s = engine.Configure(*config);
  }
  if (!s.ok()) {
    std::cerr << s.ToString() << "\n";
    return false;
  }
  return true;
}

int CheckInventory(const CheckArgs& a) {
  server::ArteldConfig cfg;
  if (!a.config_file.empty()) {
    if (Status s = server::LoadArteldConfig(a.config_file, &cfg); !s.ok()) {
      std::cerr << s.ToString() << "\n";
      return 1;
    }
  }
  if (!a.fake_gpus.empty()) cfg.daemon.fake_gpus = a.fake_gpus;
  std::string host = cfg.daemon.hostname;
  if (host.empty()) {
    char buf[256] = {0};
    gethostname(buf, sizeof buf - 1);
    host = buf[0] ? buf : "localhost";
  }
  std::vector<runtime::GpuInfo> gpus;
  std::string mode = "fake";
  if (!cfg.daemon.fake_gpus.empty()) {
    auto d = runtime::MakeFakeDiscovery(cfg.daemon.fake_gpus);
    if (!d.ok()) {
      std::cerr << d.status().ToString() << "\n";
      return 1;
    }
    auto g = (*d)->Discover();
    if (!g.ok()) {
      std::cerr << g.status().ToString() << "\n";
      return 1;
    }
    gpus = std::move(g).value();
  } else {
    mode = "nvml";
    auto d = runtime::MakeNvmlDiscovery();
    if (!d.ok()) {
      std::cout << "GPUs: none (NVML unavailable: " << d.status().message()
                << "); arteld would admit by quota alone. Try --fake-gpus.\n";
    } else {
      auto g = (*d)->Discover();
      if (g.ok()) gpus = std::move(g).value();
    }
  }
  std::vector<std::string> notes;
  auto pools = server::BuildHostPools(host, gpus, cfg.daemon.inventory, mode == "fake", &notes);
  if (!pools.ok()) {
    std::cerr << pools.status().ToString() << "\n";
    return 1;
  }
  std::cout << "host " << host << ": " << gpus.size() << " GPUs (" << mode << "), " << pools->size()
            << " node pools\n";
  for (const server::HostPool& p : *pools) {
    std::cout << "node " << p.node.name << ": " << p.gpus.size() << " GPUs";
    if (!p.gpus.empty()) {
      // Indices as ranges: "0-47,50".
      std::string ix;
      for (size_t i = 0; i < p.gpus.size();) {
        size_t j = i;
        while (j + 1 < p.gpus.size() && p.gpus[j + 1] == p.gpus[j] + 1) ++j;
        ix += (ix.empty() ? "" : ",") + std::to_string(p.gpus[i]) +
              (j > i ? "-" + std::to_string(p.gpus[j]) : "");
        i = j + 1;
      }
      std::cout << " [" << ix << "] " << gpus[static_cast<size_t>(p.gpus.front())].model
                << (gpus[static_cast<size_t>(p.gpus.front())].mig_enabled ? " (MIG)" : "");
    }
    std::cout << "\n";
    for (const auto& [k, v] : p.node.labels) std::cout << "  label " << k << "=" << v << "\n";
    for (const core::Taint& t : p.node.taints) {
      std::cout << "  taint " << t.key << (t.value.empty() ? "" : "=" + t.value) << ":" << t.effect << "\n";
    }
  }
  for (const std::string& n : notes) std::cerr << "warning: " << n << "\n";
  std::vector<std::string> paths = a.paths.empty() ? cfg.daemon.manifests : a.paths;
  if (paths.empty()) return 0;
  core::Config config;
  if (!LoadConfig(paths, &config)) return 1;
  std::vector<core::placement::NodeSpec> nodes;
  for (const server::HostPool& p : *pools) nodes.push_back(p.node);
  if (nodes.empty()) {
    std::cout << "flavors: not checked (no GPUs: arteld admits by quota alone)\n";
    return 0;
  }
  auto missing = server::FlavorsWithoutNodes(config, nodes);
  for (const core::ResourceFlavorSpec& f : config.flavors) {
    if (missing.count(f.name)) continue;
    std::string on;
    for (const auto& n : nodes) {
      if (server::FlavorMatchesNode(f, n)) on += (on.empty() ? "" : ", ") + n.name;
    }
    std::cout << "flavor " << f.name << ": " << on << "\n";
  }
  for (const auto& [name, why] : missing) std::cerr << "warning: " << why << "\n";
  std::cout << (missing.empty()
                    ? "ok: every flavor matches a node pool\n"
                    : "warning: " + std::to_string(missing.size()) + " flavor(s) match no node pool\n");
  return 0;
}

}  // namespace

void AddCheckCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<CheckArgs>();
  CLI::App* cmd = app.add_subcommand("check", "Load and validate manifests without running anything");
  cmd->add_option("paths", args->paths, "Manifest files or directories");
  cmd->add_flag(
      "--inventory", args->inventory,
      "Describe this host's GPUs and node pools as arteld sees them, and the flavors that match none");
  cmd->add_option("--config", args->config_file,
                  "With --inventory: arteld's config file (fakeGpus, nodePools)");
  cmd->add_option("--fake-gpus", args->fake_gpus, "With --inventory: a fake GPU inventory, e.g. 8xH100-80GB");
  cmd->callback([args, exit_code] {
    if (args->inventory) {
      *exit_code = CheckInventory(*args);
      return;
    }
    if (!args->config_file.empty() || !args->fake_gpus.empty()) {
      std::cerr << "--config and --fake-gpus go with --inventory\n";
      *exit_code = 2;
      return;
    }
    if (args->paths.empty()) {
      std::cerr << "artel check: give manifest files or directories, or --inventory\n";
      *exit_code = 2;
      return;
    }
    core::Config config;
    if (!LoadConfig(args->paths, &config)) {
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
