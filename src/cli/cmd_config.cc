// `artel config ...`: reads and edits the client configuration file
// (cli/config.h, docs/cli.md "Configuration"), as `kubectl config` does for
// a kubeconfig: view, get-contexts, current-context, use-context,
// set-context, delete-context.

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>

#include "cli/client.h"
#include "cli/commands.h"
#include "cli/config.h"

namespace artel::cli {
namespace {

// Loads the configuration or prints the error; returns false on error.
bool Load(ConfigFile* cfg, int* exit_code) {
  std::string err;
  if (!LoadConfig(ConfigPath(), cfg, &err)) {
    std::cerr << "error: " << err << "\n";
    *exit_code = kExitFailed;
    return false;
  }
  return true;
}

bool Save(const ConfigFile& cfg, int* exit_code) {
  std::string err;
  if (!SaveConfig(cfg, &err)) {
    std::cerr << "error: " << err << "\n";
    *exit_code = kExitFailed;
    return false;
  }
  return true;
}

std::string CurrentName(const ConfigFile& cfg) {
  const char* env = std::getenv("ARTEL_CONTEXT");
  if (!GlobalFlags().context.empty()) return GlobalFlags().context;
  if (env != nullptr && *env) return env;
  return cfg.current;
}

}  // namespace

void AddConfigCommand(CLI::App& app, int* exit_code) {
  CLI::App* config = app.add_subcommand("config", "Show and edit the client configuration (contexts)");
  config->require_subcommand(1);
  // view
  {
    auto raw = std::make_shared<bool>(false);
    CLI::App* cmd = config->add_subcommand("view", "Print the configuration (tokens REDACTED unless --raw)");
    cmd->add_flag("--raw", *raw, "Show tokens");
    cmd->callback([=] {
      ConfigFile cfg;
      if (!Load(&cfg, exit_code)) return;
      std::cout << "# " << (cfg.path.empty() ? "(no configuration path)" : cfg.path)
                << (cfg.exists ? "" : " (does not exist yet)") << "\n"
                << ConfigYaml(cfg, *raw);
      *exit_code = kExitOk;
    });
  }
  // get-contexts
  {
    CLI::App* cmd = config->add_subcommand("get-contexts", "List the contexts; * marks the current one");
    cmd->callback([=] {
      ConfigFile cfg;
      if (!Load(&cfg, exit_code)) return;
      std::string current = CurrentName(cfg);
      std::vector<std::vector<std::string>> rows;
      size_t w[3] = {4, 6, 9};
      for (const auto& c : cfg.contexts) {
        std::vector<std::string> r = {c.name, c.server.empty() ? "-" : c.server, c.ns.empty() ? "-" : c.ns,
                                      !c.token.empty()        ? "token"
                                      : !c.token_file.empty() ? c.token_file
                                                              : "-"};
        for (size_t i = 0; i < 3; ++i) w[i] = std::max(w[i], r[i].size());
        rows.push_back(r);
      }
      auto pad = [](const std::string& s, size_t n) { return s + std::string(n - s.size() + 3, ' '); };
      std::cout << "CURRENT   " << pad("NAME", w[0]) << pad("SERVER", w[1]) << pad("NAMESPACE", w[2])
                << "TOKEN\n";
      for (const auto& r : rows) {
        std::cout << (r[0] == current ? "*         " : "          ") << pad(r[0], w[0]) << pad(r[1], w[1])
                  << pad(r[2], w[2]) << r[3] << "\n";
      }
      *exit_code = kExitOk;
    });
  }
  // current-context
  {
    CLI::App* cmd = config->add_subcommand("current-context", "Print the current context's name");
    cmd->callback([=] {
      ConfigFile cfg;
      if (!Load(&cfg, exit_code)) return;
      std::string current = CurrentName(cfg);
      if (current.empty()) {
        std::cerr << "error: no current context (artel config use-context NAME)\n";
        *exit_code = kExitFailed;
        return;
      }
      std::cout << current << "\n";
      *exit_code = kExitOk;
    });
  }
  // use-context
  {
    auto name = std::make_shared<std::string>();
    CLI::App* cmd = config->add_subcommand("use-context", "Make a context the current one");
    cmd->add_option("name", *name, "Context")->required();
    cmd->callback([=] {
      ConfigFile cfg;
      if (!Load(&cfg, exit_code)) return;
      if (cfg.Find(*name) == nullptr) {
        std::string names;
        for (const auto& c : cfg.contexts) names += (names.empty() ? "" : ", ") + c.name;
        std::cerr << "error: no context named " << *name << " in " << cfg.path
                  << (names.empty() ? " (it has none; artel config set-context NAME --server URL ...)"
                                    : " (it has " + names + ")")
                  << "\n";
        *exit_code = kExitNotFound;
        return;
      }
      cfg.current = *name;
      if (!Save(cfg, exit_code)) return;
      std::cout << "Switched to context \"" << *name << "\".\n";
      *exit_code = kExitOk;
    });
  }
  // set-context
  {
    struct Args {
      std::string name, server, token, token_file, ca_file, ns;
      bool current = false, use = false, insecure = false;
    };
    auto a = std::make_shared<Args>();
    CLI::App* cmd = config->add_subcommand(
        "set-context", "Create or change a context: set-context NAME [--server URL] [--token-file FILE] ...");
    cmd->add_option("name", a->name, "Context (default with --current: the current one)");
    cmd->add_flag("--current", a->current, "Change the current context");
    cmd->add_option("--server", a->server, "arteld URL");
    cmd->add_option("--token", a->token, "Bearer token, kept in the file (prefer --token-file)");
    cmd->add_option("--token-file", a->token_file, "File holding the bearer token (mode 0600)");
    cmd->add_option("--cacert", a->ca_file, "CA bundle for an HTTPS server");
    cmd->add_option("-n,--namespace", a->ns, "Default namespace");
    cmd->add_flag("--insecure-skip-tls-verify", a->insecure, "Do not verify the server certificate");
    cmd->add_flag("--use", a->use, "Also make it the current context");
    cmd->callback([=] {
      ConfigFile cfg;
      if (!Load(&cfg, exit_code)) return;
      std::string name = a->name;
      if (name.empty() && a->current) name = cfg.current;
      if (name.empty()) {
        std::cerr << "error: give the context's name (or --current)\n";
        *exit_code = kExitUsage;
        return;
      }
      if (!a->token.empty() && !a->token_file.empty()) {
        std::cerr << "error: give --token or --token-file, not both\n";
        *exit_code = kExitUsage;
        return;
      }
      Context* c = cfg.Find(name);
      bool created = c == nullptr;
      if (created) {
        cfg.contexts.push_back({});
        c = &cfg.contexts.back();
        c->name = name;
      }
      if (!a->server.empty()) c->server = a->server;
      if (!a->token.empty()) {
        c->token = a->token;
        c->token_file.clear();
      }
      if (!a->token_file.empty()) {
        std::error_code ec;
        std::filesystem::path p = std::filesystem::absolute(a->token_file, ec);
        c->token_file = ec ? a->token_file : p.lexically_normal().string();
        c->token.clear();
        if (std::string w = PermissionWarning(c->token_file, "token file"); !w.empty())
          std::cerr << w << "\n";
      }
      if (!a->ca_file.empty()) c->ca_file = a->ca_file;
      if (!a->ns.empty()) c->ns = a->ns;
      if (a->insecure) c->insecure = true;
      if (a->use || cfg.current.empty()) cfg.current = name;
      if (!Save(cfg, exit_code)) return;
      std::cout << "Context \"" << name << "\" " << (created ? "created" : "modified") << ".\n";
      *exit_code = kExitOk;
    });
  }
  // delete-context
  {
    auto name = std::make_shared<std::string>();
    CLI::App* cmd = config->add_subcommand("delete-context", "Remove a context");
    cmd->add_option("name", *name, "Context")->required();
    cmd->callback([=] {
      ConfigFile cfg;
      if (!Load(&cfg, exit_code)) return;
      auto it = std::find_if(cfg.contexts.begin(), cfg.contexts.end(),
                             [&](const Context& c) { return c.name == *name; });
      if (it == cfg.contexts.end()) {
        std::cerr << "error: no context named " << *name << " in " << cfg.path << "\n";
        *exit_code = kExitNotFound;
        return;
      }
      cfg.contexts.erase(it);
      if (cfg.current == *name) cfg.current.clear();
      if (!Save(cfg, exit_code)) return;
      std::cout << "Deleted context " << *name << " from " << cfg.path << "\n";
      *exit_code = kExitOk;
    });
  }
}

}  // namespace artel::cli
