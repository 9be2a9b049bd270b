// `artel run --queue NS/LQ [--gpus N ...] -- CMD...`: submits a command as
// a workload and, with --wait, follows it to the end.

#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <chrono>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "api/codec.h"
#include "cli/client.h"
#include "cli/commands.h"
#include "cli/format.h"
#include "cli/verbs.h"

namespace artel::cli {
namespace {

struct RunArgs {
  std::string queue;
  std::string name;
  double gpus = 0;
  std::string gpu_memory;
  std::string cpu, memory;
  int count = 1;
  std::string priority_class;
  std::vector<std::string> env;
  std::vector<std::string> node_selector;
  std::vector<std::string> command;
  std::string workdir;
  int grace = -1;
  int backoff = 0;
  bool wait = false;
};

int Run(const Common& c, const RunArgs& a) {
  if (a.command.empty()) {
    std::cerr << "error: give the command after --, e.g. artel run --queue team-a/default --gpus 1 -- python "
                 "train.py\n";
    return kExitUsage;
  }
  std::string ns, lq;
  SplitRef(a.queue, c.client.ns, &ns, &lq);
  Json requests = Json::object();
  if (a.gpus > 0) {
    std::ostringstream os;
    os << a.gpus;
    requests["nvidia.com/gpu"] = os.str();
  }
  if (!a.cpu.empty()) requests["cpu"] = a.cpu;
  if (!a.memory.empty()) requests["memory"] = a.memory;
  Json ps = {{"name", "main"}, {"count", a.count}, {"requests", requests}, {"command", a.command}};
  if (!a.gpu_memory.empty()) ps["annotations"] = {{"artel.dev/gpu-memory", a.gpu_memory}};
  if (!a.workdir.empty()) {
    // Absolute, as arteld runs the pod on its host; arteld checks that the
    // pods' user may enter it.
    std::error_code ec;
    std::filesystem::path dir = std::filesystem::absolute(a.workdir, ec);
    std::string text = ec ? a.workdir : dir.lexically_normal().string();
    if (text.size() > 1 && text.back() == '/') text.pop_back();
    ps["workingDir"] = text;
  }
  if (!a.env.empty()) {
    Json env = Json::object();
    for (const auto& kv : a.env) {
      size_t eq = kv.find('=');
      if (eq == std::string::npos) {
        std::cerr << "error: --env wants KEY=VALUE, got " << kv << "\n";
        return kExitUsage;
      }
      env[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    ps["env"] = env;
  }
  if (!a.node_selector.empty()) {
    Json sel = Json::object();
    for (const auto& kv : a.node_selector) {
      size_t eq = kv.find('=');
      if (eq == std::string::npos) {
        std::cerr << "error: --node-selector wants KEY=VALUE, got " << kv << "\n";
        return kExitUsage;
      }
      sel[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    ps["nodeSelector"] = sel;
  }
  Json md = {{"namespace", ns}};
  if (a.name.empty()) {
    md["generateName"] = "run-";
  } else {
    md["name"] = a.name;
  }
  Json spec = {{"queueName", lq}, {"podSets", Json::array({ps})}};
  if (!a.priority_class.empty()) spec["priorityClassName"] = a.priority_class;
  if (a.grace >= 0) spec["terminationGracePeriodSeconds"] = a.grace;
  if (a.backoff > 0) spec["backoffLimit"] = a.backoff;
  Json body = {{"apiVersion", "artel.dev/v1alpha1"}, {"kind", "Workload"}, {"metadata", md}, {"spec", spec}};
  Response r = Request(c.client, "POST", "/api/v1/workloads", body.dump());
  if (int rc = Report(r); rc != kExitOk) return rc;
  Json w = r.json();
  std::string name = Str(w["metadata"], "name");
  std::cout << "workload/" << ns << "/" << name << " submitted\n";
  if (!a.wait) return kExitOk;
  std::string last;
  while (true) {
    std::string phase = PhaseOf(c, ns, name, &w);
    if (phase.empty()) return kExitUnreachable;
    if (phase != last) {
      std::cerr << "phase: " << phase << "\n";
      last = phase;
    }
    if (phase == "Succeeded" || phase == "Failed" || phase == "Cancelled") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  Response logs = Request(c.client, "GET", WorkloadPath(ns, name) + "/logs");
  if (logs.status == 200) std::cout << logs.body;
  if (last == "Succeeded") return kExitOk;
  // The workload's own exit code (a pod killed by signal N: 128+N), as
  // `docker run` does; 1 when it has none (cancelled, or failed to start).
  const Json& st = w.contains("status") ? w["status"] : Json();
  int code = st.is_object() && st.contains("exitCode") && st["exitCode"].is_number_integer()
                 ? st["exitCode"].get<int>()
                 : 0;
  return code > 0 && code < 256 ? code : kExitFailed;
}

}  // namespace

void AddRunCommand(CLI::App& app, int* exit_code) {
  auto c = std::make_shared<Common>();
  auto a = std::make_shared<RunArgs>();
  CLI::App* cmd =
      app.add_subcommand("run", "Submit a command as a workload: artel run --queue NS/LQ --gpus N -- CMD...");
  cmd->add_option("--queue,-q", a->queue, "LocalQueue as NAMESPACE/NAME (or NAME with -n)")->required();
  cmd->add_option("--name", a->name, "Workload name (default: run-<random>)");
  cmd->add_option("--gpus", a->gpus, "GPUs per pod");
  cmd->add_option("--gpu-memory", a->gpu_memory,
                  "GPU memory limit per pod, e.g. 20Gi (ARTEL_GPU_MEMORY_LIMIT)");
  cmd->add_option("--cpu", a->cpu, "CPU request per pod, e.g. 4 or 500m");
  cmd->add_option("--memory", a->memory, "Memory request per pod, e.g. 16Gi");
  cmd->add_option("--count", a->count, "Pods (default 1)")->check(CLI::Range(1, 1024));
  cmd->add_option("--priority-class", a->priority_class, "WorkloadPriorityClass");
  // One value per occurrence: a list option that takes any number of
  // values would also take the `--` that starts the command as the end of
  // its list, and the command's own flags would then be read as artel's.
  cmd->add_option("--env,-e", a->env, "KEY=VALUE (repeatable)")->allow_extra_args(false);
  cmd->add_option("--node-selector", a->node_selector,
                  "KEY=VALUE node label the flavor must carry (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("--grace-period", a->grace, "Seconds between SIGTERM and SIGKILL on preemption");
  cmd->add_option("--backoff-limit", a->backoff, "Retries after a failure");
  cmd->add_option(
      "--workdir", a->workdir,
      "Run in this directory on arteld's host (made absolute; the pods' user must be able to read "
      "and enter it). Default: the workload's own directory");
  cmd->add_flag("--wait,-w", a->wait, "Wait for the end, print the logs, exit with the workload's status");
  cmd->add_option("command", a->command, "The command, after --")->expected(-1);
  AddCommon(cmd, c.get(), kNone);
  cmd->callback([=] {
    ResolveClientOptions(&c->client, a->queue.find('/') == std::string::npos);
    *exit_code = Run(*c, *a);
  });
}

}  // namespace artel::cli
