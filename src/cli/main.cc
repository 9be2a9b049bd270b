// artel: the command-line client. Offline verbs (test, check) run here
// without a daemon; each verb is registered from its own cmd_*.cc file.
//
// Before CLI11 parses the command line, main() (1) takes the global flags
// (--server, --token, --token-file, --cacert, --insecure-skip-tls-verify,
// -n/--namespace, --context) from wherever they stand, before or after the
// verb, as kubectl does; (2) names an unknown verb or flag with the closest
// known one ("unknown flag --namepsace; did you mean --namespace?").

#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "cli/client.h"
#include "cli/commands.h"
#include "cli/format.h"

#ifndef ARTEL_VERSION
#define ARTEL_VERSION "unknown"
#endif

namespace {

using artel::cli::ClientOptions;

struct GlobalFlag {
  const char* long_name;
  const char* short_name;  // "" when none
  bool takes_value;
  std::string ClientOptions::*field;  // null for the boolean flag
};

const GlobalFlag kGlobalFlags[] = {
    {"--server", "", true, &ClientOptions::server},         {"--token", "", true, &ClientOptions::token},
    {"--token-file", "", true, &ClientOptions::token_file}, {"--cacert", "", true, &ClientOptions::ca_file},
    {"--namespace", "-n", true, &ClientOptions::ns},        {"--context", "", true, &ClientOptions::context},
    {"--insecure-skip-tls-verify", "", false, nullptr},
};

int UsageError(const std::string& msg, const std::string& verb) {
  std::cerr << "error: " << msg << "\nSee 'artel " << (verb.empty() ? "" : verb + " ")
            << "--help' for usage.\n";
  return artel::cli::kExitUsage;
}

// Takes the global flags out of args (up to `--`) and names the verb (the
// first word that is not a flag; "" when none). The verb `config` keeps
// those after it: `config set-context` has its own --server, --token, ...
int ExtractGlobalFlags(std::vector<std::string>* args, std::string* verb_out) {
  ClientOptions& g = artel::cli::GlobalFlags();
  std::vector<std::string> out;
  std::string verb;
  for (size_t i = 0; i < args->size(); ++i) {
    const std::string& t = (*args)[i];
    if (t == "--") {
      out.insert(out.end(), args->begin() + static_cast<long>(i), args->end());
      break;
    }
    if (verb == "config") {
      out.push_back(t);
      continue;
    }
    bool matched = false;
    for (const GlobalFlag& f : kGlobalFlags) {
      std::string name = t.substr(0, t.find('='));
      bool is_long = name == f.long_name;
      bool is_short = *f.short_name && t.rfind(f.short_name, 0) == 0;
      if (!is_long && !is_short) continue;
      matched = true;
      std::string value;
      bool has_value = false;
      if (is_long && t.size() > name.size()) {
        value = t.substr(name.size() + 1);
        has_value = true;
      } else if (is_short && t.size() > 2) {
        value = t.substr(t[2] == '=' ? 3 : 2);
        has_value = true;
      }
      if (!f.takes_value) {
        if (has_value && value != "true" && value != "false") {
          return UsageError("flag " + std::string(f.long_name) + " takes no value (or =true, =false)", verb);
        }
        g.insecure = !has_value || value == "true";
        break;
      }
      if (!has_value) {
        if (i + 1 >= args->size() || (*args)[i + 1] == "--") {
          return UsageError("flag needs an argument: " + std::string(is_long ? f.long_name : f.short_name),
                            verb);
        }
        value = (*args)[++i];
      }
      g.*(f.field) = value;
      break;
    }
    if (matched) continue;
    if (verb.empty() && !t.empty() && t[0] != '-') verb = t;
    out.push_back(t);
  }
  *args = std::move(out);
  *verb_out = std::move(verb);
  return 0;
}

std::vector<CLI::App*> Subcommands(CLI::App* app) {
  return app->get_subcommands([](CLI::App*) { return true; });
}

// Checks every flag against the verb's options, and the verb against the
// verbs; CLI11's own message ("The following arguments were not expected")
// names neither.
int CheckNames(CLI::App* root, const std::vector<std::string>& args) {
  static const std::map<std::string, std::string> kHabits = {
      {"submit", "run (a command) or apply -f (a Job or Workload manifest)"},
      {"sbatch", "run"},
      {"srun", "run --wait"},
      {"squeue", "get wl"},
      {"sinfo", "get nodes"},
      {"scancel", "delete wl"},
      {"list", "get"},
      {"ls", "get"},
      {"show", "describe"},
      {"rm", "delete"},
      {"create", "apply -f"},
  };
  CLI::App* cur = root;
  std::string path;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& t = args[i];
    if (t == "--") break;
    bool negative_number = t.size() > 1 && t[0] == '-' && std::isdigit(static_cast<unsigned char>(t[1]));
    if (t.size() > 1 && t[0] == '-' && !negative_number) {
      std::string name = t.substr(0, t.find('='));
      bool is_long = name.rfind("--", 0) == 0;
      if (!is_long) name = name.substr(0, 2);
      const CLI::Option* opt = cur->get_option_no_throw(name);
      if (opt == nullptr) {
        std::vector<std::string> known;
        for (const CLI::Option* o : cur->get_options()) {
          for (const auto& l : o->get_lnames()) known.push_back("--" + l);
          for (const auto& s : o->get_snames()) known.push_back("-" + s);
        }
        for (const GlobalFlag& f : kGlobalFlags) known.push_back(f.long_name);
        std::string hint = artel::cli::Suggest(name, known);
        return UsageError("unknown flag " + name + (hint.empty() ? "" : "; did you mean " + hint + "?"),
                          path);
      }
      // A flag that takes a value takes the next word, unless it is attached.
      if (opt->get_expected_max() > 0 && t.find('=') == std::string::npos && (is_long || t.size() == 2)) ++i;
      continue;
    }
    CLI::App* sub = nullptr;
    for (CLI::App* s : Subcommands(cur)) {
      if (s->check_name(t)) sub = s;
    }
    if (sub != nullptr) {
      cur = sub;
      path += (path.empty() ? "" : " ") + sub->get_name();
      continue;
    }
    if (cur == root) {
      std::string msg = "unknown command \"" + t + "\" for \"artel\"";
      if (auto h = kHabits.find(t); h != kHabits.end()) {
        msg += "; did you mean artel " + h->second + "?";
      } else {
        std::vector<std::string> verbs;
        for (CLI::App* s : Subcommands(root)) {
          verbs.push_back(s->get_name());
          for (const auto& a : s->get_aliases()) verbs.push_back(a);
        }
        if (std::string hint = artel::cli::Suggest(t, verbs); !hint.empty())
          msg += "; did you mean " + hint + "?";
      }
      return UsageError(msg, "");
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  // Invoked as `kubectl-artel` (the symlink the build puts next to artel),
  // this binary is a kubectl plugin: `kubectl artel get wl` runs
  // `kubectl-artel get wl`. It is the same client either way: it talks to
  // arteld's API, which arteld serves in Kubernetes mode too (docs/cli.md,
  // "kubectl plugin").
  const bool kubectl_plugin = argc > 0 && std::filesystem::path(argv[0]).filename() == "kubectl-artel";
  CLI::App app{kubectl_plugin
                   ? "kubectl artel: the Artel client as a kubectl plugin (it talks to arteld's API)"
                   : "artel: a multi-tenant GPU cluster scheduler"};
  app.name(kubectl_plugin ? "kubectl artel" : "artel");
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("artel ") + ARTEL_VERSION);
  // The global flags, for --help: main() takes them out of the command line
  // itself, wherever they stand (ExtractGlobalFlags).
  {
    static std::string unused;
    static bool unused_flag = false;
    auto* g = app.add_option_group("Global flags (before or after the verb)");
    g->add_option("--server", unused, "arteld URL (env ARTEL_SERVER)");
    g->add_option("--token", unused, "Bearer token (env ARTEL_TOKEN)");
    g->add_option("--token-file", unused, "File holding the bearer token (env ARTEL_TOKEN_FILE)");
    g->add_option("--cacert", unused, "CA bundle for an HTTPS server");
    g->add_flag("--insecure-skip-tls-verify", unused_flag, "Do not verify the server certificate");
    g->add_option("-n,--namespace", unused, "Namespace (default: the context's, else a tenant's first)");
    g->add_option("--context", unused, "A context of the configuration file (env ARTEL_CONTEXT)");
  }
  int exit_code = 0;
  // The verbs, in the order of `artel --help`. Only the verb being run is
  // registered when it is named (building every verb's options costs more
  // than the whole request of `artel run`; docs/performance.md, "Submit to
  // done against Slurm"); anything else (no verb, an unknown one, help,
  // completion) registers them all.
  using Adder = void (*)(CLI::App&, int*);
  static const std::pair<const char*, Adder> kVerbs[] = {
      {"test", artel::cli::AddTestCommand},       {"check", artel::cli::AddCheckCommand},
      {"sim", artel::cli::AddSimCommand},         {"validate", artel::cli::AddValidateCommand},
      {"get", artel::cli::AddGetCommand},         {"describe", artel::cli::AddDescribeCommand},
      {"why", artel::cli::AddWhyCommand},         {"delete", artel::cli::AddDeleteCommands},
      {"logs", artel::cli::AddLogsCommand},       {"apply", artel::cli::AddApplyCommand},
      {"run", artel::cli::AddRunCommand},         {"top", artel::cli::AddTopCommand},
      {"events", artel::cli::AddEventsCommand},   {"whoami", artel::cli::AddWhoamiCommand},
      {"config", artel::cli::AddConfigCommand},   {"completion", artel::cli::AddCompletionCommand},
      {"version", artel::cli::AddVersionCommand},
  };
  std::vector<std::string> args(argv + 1, argv + argc);
  // `artel help [VERB...]` is `artel [VERB...] --help`.
  if (!args.empty() && args[0] == "help") {
    args.erase(args.begin());
    args.push_back("--help");
  }
  std::string verb;
  if (int rc = ExtractGlobalFlags(&args, &verb); rc != 0) return rc;
  {
    bool one = false;
    for (const auto& [name, add] : kVerbs) {
      if (verb == name && verb != "completion") {
        add(app, &exit_code);
        // The verb is the one registered (not an alias of another verb).
        for (CLI::App* s : Subcommands(&app)) one = one || s->get_name() == verb;
      }
    }
    if (!one) {
      for (CLI::App* s : Subcommands(&app)) app.remove_subcommand(s);
      for (const auto& [name, add] : kVerbs) add(app, &exit_code);
    }
  }
  if (int rc = CheckNames(&app, args); rc != 0) return rc;
  try {
    // CLI11 takes the arguments in reverse order.
    std::vector<std::string> reversed(args.rbegin(), args.rend());
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    // Usage errors exit with 2, as most Unix tools do; --help and --version exit with 0.
    int rc = app.exit(e);
    return rc == 0 ? 0 : artel::cli::kExitUsage;
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
