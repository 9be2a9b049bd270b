// `artel describe KIND NAME` (one object in detail; for cq and cohorts a
// flavor x resource quota table) and `artel why WORKLOAD` (why a workload
// is pending).

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

#include "cli/client.h"
#include "cli/commands.h"
#include "cli/format.h"
#include "cli/verbs.h"

namespace artel::cli {
namespace {

void PrintWhy(const Json& w) {
  const bool flavors = w.contains("flavors") && w["flavors"].is_array() && !w["flavors"].empty();
  std::string message = Str(w, "message");
  // The flavors are listed one a line below.
  if (size_t at = message.find("; flavors tried:"); flavors && at != std::string::npos) message.resize(at);
  std::cout << "Reason:    " << Str(w, "reason") << "\n";
  std::cout << "Message:   " << message << "\n";
  if (w.contains("resource")) {
    std::cout << "Blocking:  " << Str(w, "resource") << " in flavor " << Str(w, "flavor") << " at "
              << Str(w, "level", Str(w, "clusterQueue")) << ": requested " << Str(w, "requested")
              << ", available " << Str(w, "available") << ", missing " << Str(w, "missing") << "\n";
  }
  if (!w.value("wouldPreempt", Json::array()).empty() || w.contains("wouldPreemptOthers")) {
    std::cout << "Would need to preempt:";
    for (const auto& v : w.value("wouldPreempt", Json::array())) std::cout << " " << v.get<std::string>();
    // Other namespaces' workloads, counted per ClusterQueue.
    for (const auto& o : w.value("wouldPreemptOthers", Json::array())) {
      std::cout << " " << Str(o, "count") << " in ClusterQueue " << Str(o, "clusterQueue");
    }
    std::cout << "\n";
  }
  if (flavors) {
    std::cout << "Flavors tried:\n";
    for (const auto& f : w["flavors"]) std::cout << "  " << Str(f, "message") << "\n";
  }
}

// `describe cq|cohort`: a flavor x resource table (nominal, borrowing and
// lending limits, used, borrowed), like Kueue's flavorsUsage.
int DescribeQuota(const Common& c, const std::string& kind, const std::string& name) {
  Response r = Request(c.client, "GET", kind == "cq" ? "/api/v1/clusterqueues" : "/api/v1/cohorts");
  if (int rc = Report(r); rc != kExitOk) return rc;
  const Json* q = nullptr;
  Json items = r.json().value("items", Json::array());
  for (const auto& it : items) {
    if (Str(it, "name") == name) q = &it;
  }
  if (q == nullptr) {
    std::cerr << "error: NotFound: no " << kind << " named " << name << "\n";
    return kExitNotFound;
  }
  std::cout << "Name:      " << name << "\n";
  if (kind == "cq") {
    std::cout << "Cohort:    " << Str(*q, "cohort", "-") << "\n";
    std::cout << "Pending:   " << Str(*q, "pendingWorkloads") << "\n";
    std::cout << "Admitted:  " << Str(*q, "admittedWorkloads") << "\n";
  } else {
    std::cout << "Parent:    " << Str(*q, "parent", "-") << "\n";
  }
  std::cout << "Quota and usage per flavor:\n";
  std::vector<std::vector<std::string>> rows;
  for (const auto& e : q->value("resources", Json::array())) {
    const char* quota = kind == "cq" ? "nominal" : "subtreeQuota";
    if (!NonZero(e, quota) && !NonZero(e, "usage") && !e.contains("borrowingLimit") &&
        !e.contains("lendingLimit"))
      continue;
    rows.push_back({"  " + Str(e, "flavor"), Str(e, "resource"), Str(e, quota), Str(e, "borrowingLimit", "-"),
                    Str(e, "lendingLimit", "-"), Str(e, "usage"), Str(e, "borrowed")});
  }
  PrintTable({"  FLAVOR", "RESOURCE", kind == "cq" ? "NOMINAL" : "QUOTA", "BORROWING-LIMIT", "LENDING-LIMIT",
              "USED", "BORROWED"},
             rows);
  return kExitOk;
}

int Describe(const Common& c, const std::string& kind, const std::string& ref) {
  if ((kind == "cq" || kind == "cohorts") && (c.output.empty() || c.output == "wide")) {
    return DescribeQuota(c, kind, ref);
  }
  if (kind != "wl") {
    Common c2 = c;
    if (c2.output.empty()) c2.output = "yaml";
    return GetSimple(c2, kind, {ref});
  }
  if (!c.output.empty()) return GetWorkloads(c, {ref}, {}, "");
  std::string ns, name;
  SplitRef(ref, c.client.ns, &ns, &name);
  Response r = Request(c.client, "GET", WorkloadPath(ns, name));
  if (int rc = Report(r); rc != kExitOk) return rc;
  Json w = r.json();
  const Json& st = w["status"];
  std::cout << "Name:          " << ns << "/" << name << "\n";
  std::cout << "Queue:         " << Str(w["spec"], "queueName") << "\n";
  std::cout << "ClusterQueue:  " << Str(st, "clusterQueue", "-") << "\n";
  std::cout << "Phase:         " << Str(st, "phase") << "\n";
  std::cout << "Priority:      " << Str(st, "priority", "0") << "\n";
  std::cout << "Age:           " << Age(w["metadata"].value("creationTimestamp", int64_t{0})) << "\n";
  if (st.contains("exitCode")) std::cout << "Exit code:     " << Str(st, "exitCode") << "\n";
  if (st.contains("retries")) std::cout << "Retries:       " << Str(st, "retries") << "\n";
  if (st.contains("message")) std::cout << "Message:       " << Str(st, "message") << "\n";
  std::cout << "Pod sets:\n";
  for (const auto& ps : w["spec"]["podSets"]) {
    std::cout << "  " << Str(ps, "name") << " x" << Str(ps, "count") << "  requests "
              << ps.value("requests", Json::object()).dump();
    if (ps.contains("command")) {
      std::cout << "  command:";
      for (const auto& a : ps["command"]) std::cout << " " << a.get<std::string>();
    }
    std::cout << "\n";
  }
  if (st.contains("admission")) {
    std::cout << "Admission:\n";
    for (const auto& ps : st["admission"]["podSets"]) {
      std::cout << "  " << Str(ps, "name") << " x" << Str(ps, "count") << "  flavors " << ps["flavors"].dump()
                << "  usage " << ps["resourceUsage"].dump() << "\n";
    }
  }
  if (st.contains("pods")) {
    std::cout << "Pods:\n";
    for (const auto& p : st["pods"]) {
      std::cout << "  " << Str(p, "name") << "  pid " << Str(p, "pid") << "  gpus " << p["gpus"].dump()
                << (p.value("running", false) ? "  running" : "  exited " + Str(p, "exitCode")) << "\n";
    }
  }
  if (st.contains("lastEviction")) {
    const Json& e = st["lastEviction"];
    // A tenant sees another namespace's preemptor only by its ClusterQueue.
    std::string by = Str(e, "preemptor");
    if (by.empty() && e.contains("preemptorClusterQueue")) {
      by = "a workload in ClusterQueue " + Str(e, "preemptorClusterQueue");
    }
    std::cout << "Last eviction: " << Str(e, "reason") << " by " << (by.empty() ? "-" : by) << " ("
              << Str(st, "evictions") << " in total)\n";
  }
  if (Str(st, "phase") == "Pending") {
    Response why = Request(c.client, "GET", WorkloadPath(ns, name) + "/why");
    if (why.status == 200) {
      std::cout << "Why pending:\n";
      PrintWhy(why.json());
    }
  }
  return kExitOk;
}

}  // namespace

void AddDescribeCommand(CLI::App& app, int* exit_code) {
  auto c = std::make_shared<Common>();
  auto kind = std::make_shared<std::string>();
  auto name = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("describe", "Show one object in detail (wl NAME, cq NAME, ...)");
  cmd->add_option("kind", *kind, "wl|cq|lq|cohorts|nodes|gpus|flavors")->required();
  cmd->add_option("name", *name, "Name")->required();
  AddCommon(cmd, c.get(), kDataOnly);
  cmd->callback([=] {
    std::string k = NormalizeKind(*kind);
    if (k.empty()) {
      *exit_code = UnknownKind(*kind);
      return;
    }
    ResolveClientOptions(&c->client, k == "wl" && name->find('/') == std::string::npos);
    *exit_code = Describe(*c, k, *name);
  });
}

void AddWhyCommand(CLI::App& app, int* exit_code) {
  auto c = std::make_shared<Common>();
  auto name = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("why", "Explain why a workload is pending");
  cmd->add_option("workload", *name, "NAME or NAMESPACE/NAME")->required();
  AddCommon(cmd, c.get());
  cmd->callback([=] {
    ResolveClientOptions(&c->client, name->find('/') == std::string::npos);
    std::string ns, n;
    SplitRef(*name, c->client.ns, &ns, &n);
    Response r = Request(c->client, "GET", WorkloadPath(ns, n) + "/why");
    *exit_code = Report(r);
    if (*exit_code != kExitOk) return;
    if (c->output == "json" || c->output == "yaml") {
      PrintStructured(r.json(), c->output);
    } else {
      std::cout << "Workload:  " << ns << "/" << n << " (" << Str(r.json(), "phase") << ")\n";
      PrintWhy(r.json());
    }
  });
}

}  // namespace artel::cli
