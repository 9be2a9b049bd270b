// `artel completion bash|zsh`: prints a shell completion script. Verbs and
// their flags are written into the script from the command definitions, so
// they never drift; resource names (workloads, queues, flavors, ...) are
// asked of arteld when completing, with `artel get KIND -o name`, passing on
// the global flags already typed (--server, --token, -n, --context, ...).
// zsh uses the same functions through bashcompinit.

#include <iostream>
#include <memory>
#include <set>
#include <sstream>

#include "cli/commands.h"

namespace artel::cli {
namespace {

std::vector<CLI::App*> Named(CLI::App* app) {
  std::vector<CLI::App*> out;
  for (CLI::App* s : app->get_subcommands([](CLI::App* a) { return !a->get_name().empty(); }))
    out.push_back(s);
  return out;
}

std::string Flags(CLI::App* app) {
  std::set<std::string> names;
  std::vector<CLI::App*> apps = {app};
  // Option groups are nameless subcommands.
  for (CLI::App* g : app->get_subcommands([](CLI::App* a) { return a->get_name().empty(); }))
    apps.push_back(g);
  for (CLI::App* a : apps) {
    for (const CLI::Option* o : a->get_options()) {
      for (const auto& l : o->get_lnames()) names.insert("--" + l);
      for (const auto& s : o->get_snames()) names.insert("-" + s);
    }
  }
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : " ") + n;
  return out;
}

std::string BashScript(CLI::App* root) {
  std::ostringstream verbs, cases;
  for (CLI::App* v : Named(root)) {
    if (v->get_name() == "completion") continue;
    verbs << v->get_name() << " ";
    std::string names = v->get_name();
    for (const auto& a : v->get_aliases()) names += "|" + a;
    cases << "    " << names << ") flags=\"" << Flags(v) << "\";";
    std::string subs;
    for (CLI::App* s : Named(v)) subs += (subs.empty() ? "" : " ") + s->get_name();
    if (!subs.empty()) cases << " subverbs=\"" << subs << "\";";
    cases << ";\n";
  }
  verbs << "completion";
  std::ostringstream o;
  o << R"BASH(# bash completion for artel. Load it with:
#   source <(artel completion bash)
# or save it as ~/.local/share/bash-completion/completions/artel.

_artel_ask() {
  # Runs artel with the global flags typed so far; errors are silent.
  command "${ARTEL_COMPLETION_BIN:-artel}" "${_artel_globals[@]}" "$@" 2>/dev/null
}

_artel_names() {
  _artel_ask get "$1" -o name | sed 's|^[^/]*/||'
}

_artel() {
  local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}"
  local verbs=")BASH"
    << verbs.str() << R"BASH("
  local kinds="wl cq lq cohorts nodes gpus flavors workloads clusterqueues localqueues resourceflavors"
  local globals="--server --token --token-file --cacert --insecure-skip-tls-verify -n --namespace --context"
  _artel_globals=()
  local verb="" sub="" kind="" i w
  # Global flags anywhere on the line (also after the cursor) are passed on;
  # the verb and its arguments are those before the cursor.
  for ((i = 1; i < ${#COMP_WORDS[@]}; i++)); do
    ((i == COMP_CWORD)) && continue
    w="${COMP_WORDS[i]}"
    case "$w" in
      --server|--token|--token-file|--cacert|--context|-n|--namespace)
        _artel_globals+=("$w" "${COMP_WORDS[i+1]}"); ((i++)); continue ;;
      --server=*|--token=*|--token-file=*|--cacert=*|--context=*|--namespace=*|--insecure-skip-tls-verify)
        _artel_globals+=("$w"); continue ;;
      -o|--output|-l|--selector|-q|--queue|-f|--filename|-e|--env|--name|--gpus|--pod|--since|--field-selector|--workdir)
        ((i++)); continue ;;
      -*) continue ;;
    esac
    ((i > COMP_CWORD)) && continue
    if [[ -z $verb ]]; then verb=$w
    elif [[ -z $sub ]]; then sub=$w
    elif [[ -z $kind ]]; then kind=$w
    fi
  done
  case "$prev" in
    -n|--namespace)
      COMPREPLY=($(compgen -W "$(_artel_ask get lq -A -o 'jsonpath={range .items[*]}{.namespace}{"\n"}{end}' | sort -u)" -- "$cur")); return ;;
    -o|--output)
      COMPREPLY=($(compgen -W "wide json yaml name jsonpath= custom-columns=" -- "$cur")); return ;;
    -q|--queue)
      COMPREPLY=($(compgen -W "$(_artel_ask get lq -A -o 'jsonpath={range .items[*]}{.namespace}/{.name}{"\n"}{end}')" -- "$cur")); return ;;
    --context)
      COMPREPLY=($(compgen -W "$(_artel_ask config get-contexts | awk 'NR > 1 {print ($1 == "*") ? $2 : $1}')" -- "$cur")); return ;;
    --server|--token|--name|--gpus|-l|--selector|-e|--env|--since|--pod) return ;;
    --token-file|--cacert|-f|--filename|--workdir|-k|--kustomize)
      COMPREPLY=($(compgen -f -- "$cur")); return ;;
  esac
  local flags="" subverbs=""
  case "$verb" in
)BASH"
    << cases.str() << R"BASH(  esac
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$flags $globals" -- "$cur")); return
  fi
  if [[ -z $verb ]]; then
    COMPREPLY=($(compgen -W "$verbs" -- "$cur")); return
  fi
  case "$verb" in
    get|describe)
      if [[ -z $sub ]]; then COMPREPLY=($(compgen -W "$kinds" -- "$cur"))
      else COMPREPLY=($(compgen -W "$(_artel_names "$sub")" -- "$cur")); fi ;;
    delete)
      if [[ -z $sub ]]; then COMPREPLY=($(compgen -W "wl" -- "$cur"))
      else COMPREPLY=($(compgen -W "$(_artel_names wl)" -- "$cur")); fi ;;
    cancel|why|logs)
      COMPREPLY=($(compgen -W "$(_artel_names wl)" -- "$cur")) ;;
    apply|check|test)
      COMPREPLY=($(compgen -f -- "$cur")) ;;
    completion)
      [[ -z $sub ]] && COMPREPLY=($(compgen -W "bash zsh" -- "$cur")) ;;
    config)
      if [[ -z $sub ]]; then COMPREPLY=($(compgen -W "$subverbs" -- "$cur"))
      elif [[ $sub == use-context || $sub == delete-context || $sub == set-context ]] && [[ -z $kind ]]; then
        COMPREPLY=($(compgen -W "$(_artel_ask config get-contexts | awk 'NR > 1 {print ($1 == "*") ? $2 : $1}')" -- "$cur"))
      fi ;;
    *)
      [[ -n $subverbs && -z $sub ]] && COMPREPLY=($(compgen -W "$subverbs" -- "$cur")) ;;
  esac
}
complete -o default -F _artel artel
)BASH";
  return o.str();
}

}  // namespace

void AddCompletionCommand(CLI::App& app, int* exit_code) {
  auto shell = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("completion", "Print a shell completion script: completion bash|zsh");
  cmd->add_option("shell", *shell, "bash or zsh")->required()->check(CLI::IsMember({"bash", "zsh"}));
  CLI::App* root = &app;
  cmd->callback([=] {
    if (*shell == "zsh") {
      std::cout << "# zsh completion for artel: source <(artel completion zsh)\n"
                   "autoload -U +X bashcompinit && bashcompinit\n";
    }
    std::cout << BashScript(root);
    *exit_code = 0;
  });
}

}  // namespace artel::cli
