// `artel apply -f FILE|DIR|- / -k DIR`: sends configuration kinds to
// arteld's apply endpoint and submits Workloads and Jobs.

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
#include "api/manifest_files.h"
#include "cli/client.h"
#include "cli/commands.h"
#include "cli/format.h"
#include "cli/verbs.h"

namespace artel::cli {
namespace {

int Apply(const Common& c, const std::vector<std::string>& files, const std::string& kdir) {
  std::string text;
  std::vector<std::string> paths = files;
  if (!kdir.empty()) paths.push_back(kdir);
  for (const auto& p : paths) {
    std::string t;
    if (p == "-") {
      std::stringstream ss;
      ss << std::cin.rdbuf();
      t = "---\n" + ss.str() + "\n";
    } else {
      auto r = server::ReadManifestText(p);
      if (!r.ok()) {
        std::cerr << "error: " << r.status().ToString() << "\n";
        return kExitFailed;
      }
      t = *r;
    }
    text += t;
  }
  auto docs = server::SplitDocuments(text);
  if (!docs.ok()) {
    std::cerr << "error: " << docs.status().ToString() << "\n";
    return kExitFailed;
  }
  // Workloads and Jobs are submitted; everything else is configuration.
  std::string config;
  std::vector<server::ManifestDoc> submissions;
  for (auto& d : *docs) {
    if (d.kind == "Workload" || d.kind == "Job") {
      submissions.push_back(d);
    } else {
      config += "---\n" + d.text;
    }
  }
  int rc = kExitOk;
  if (!config.empty()) {
    Response r = Request(c.client, "POST", "/api/v1/apply", config, "application/yaml");
    if (int e = Report(r); e != kExitOk) return e;
    for (const auto& o : r.json().value("objects", Json::array())) {
      std::string ns = Str(o, "namespace");
      std::cout << Str(o, "kind") << "/" << (ns.empty() ? "" : ns + "/") << Str(o, "name")
                << (o.value("changed", false) ? " configured" : " unchanged") << "\n";
    }
  }
  // Workloads and Jobs go in batches (POST /api/v1/workloads:batch): one
  // request and one journal commit per batch of at most kBatchItems items
  // and about kBatchBytes of JSON, answered per item.
  constexpr size_t kBatchItems = 1000;
  constexpr size_t kBatchBytes = 768 * 1024;
  Json items = Json::array();
  size_t bytes = 0;
  auto send = [&]() -> int {
    if (items.empty()) return kExitOk;
    Json batch = {{"items", std::move(items)}};
    items = Json::array();
    bytes = 0;
    Response r = Request(c.client, "POST", "/api/v1/workloads:batch", batch.dump());
    if (int e = Report(r); e != kExitOk) return e;
    int out = kExitOk;
    for (const auto& a : r.json().value("items", Json::array())) {
      if (a.value("status", 0) == 201 && a.contains("object")) {
        const Json& md = a["object"]["metadata"];
        std::cout << "workload/" << Str(md, "namespace") << "/" << Str(md, "name") << " created\n";
        continue;
      }
      Response one;
      one.status = a.value("status", 500);
      one.body = a.contains("error") ? a["error"].dump() : std::string();
      out = Report(one);
    }
    return out;
  };
  for (const auto& d : submissions) {
    auto body = server::YamlToJson(d.text);
    if (!body.ok()) {
      std::cerr << "error: " << body.status().ToString() << "\n";
      return kExitFailed;
    }
    if ((*body)["metadata"].is_object() && !(*body)["metadata"].contains("namespace")) {
      (*body)["metadata"]["namespace"] = c.client.ns;
    }
    size_t size = body->dump().size();
    if (!items.empty() && (items.size() >= kBatchItems || bytes + size > kBatchBytes)) {
      if (int e = send(); e != kExitOk) rc = e;
    }
    bytes += size;
    items.push_back(std::move(*body));
  }
  if (int e = send(); e != kExitOk) rc = e;
  return rc;
}

}  // namespace

void AddApplyCommand(CLI::App& app, int* exit_code) {
  auto c = std::make_shared<Common>();
  auto files = std::make_shared<std::vector<std::string>>();
  auto kdir = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("apply", "Apply manifests (config kinds) and submit Workloads/Jobs");
  cmd->add_option("-f,--filename", *files, "File or directory (- = stdin)");
  cmd->add_option("-k,--kustomize", *kdir, "Directory with kustomization.yaml");
  AddCommon(cmd, c.get(), kNone);
  cmd->callback([=] {
    ResolveClientOptions(&c->client, true);
    if (files->empty() && kdir->empty()) {
      std::cerr << "error: give -f FILE|DIR or -k DIR\n";
      *exit_code = kExitUsage;
      return;
    }
    *exit_code = Apply(*c, *files, *kdir);
  });
}

}  // namespace artel::cli
