// What the client verbs share (cli/verbs.h).

#include "cli/verbs.h"

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
#include "cli/format.h"
#include "core/resource_names.h"

namespace artel::cli {
namespace {

std::string CheckOutput(const std::string& v, OutputSet set) {
  bool data = v == "json" || v == "yaml";
  bool table = v == "wide";
  bool get = v == "name" || v.rfind("jsonpath=", 0) == 0 || v.rfind("custom-columns=", 0) == 0;
  if (set == kDataOnly && data) return "";
  if (set == kTableAndData && (data || table)) return "";
  if (set == kGetOutputs && (data || table || get)) return "";
  if (v == "jsonpath" || v == "custom-columns") return "-o " + v + " wants a value: -o " + v + "=...";
  std::string allowed = set == kDataOnly ? "json or yaml"
                        : set == kTableAndData
                            ? "wide, json or yaml"
                            : "wide, json, yaml, name, jsonpath=TEMPLATE or custom-columns=SPEC";
  return "unsupported output format \"" + v + "\" (want " + allowed + ")";
}

void EmitYaml(YAML::Emitter& out, const Json& j) {
  if (j.is_object()) {
    out << YAML::BeginMap;
    for (auto it = j.begin(); it != j.end(); ++it) {
      out << YAML::Key << it.key() << YAML::Value;
      EmitYaml(out, *it);
    }
    out << YAML::EndMap;
  } else if (j.is_array()) {
    out << YAML::BeginSeq;
    for (const auto& e : j) EmitYaml(out, e);
    out << YAML::EndSeq;
  } else if (j.is_string()) {
    out << YAML::DoubleQuoted << j.get<std::string>();
  } else if (j.is_null()) {
    out << YAML::Null;
  } else {
    out << j.dump();
  }
}

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool IsGpuResource(const std::string& res) { return core::IsDeviceResource(res); }

}  // namespace

void AddCommon(CLI::App* cmd, Common* c, OutputSet outputs, bool with_ns) {
  if (with_ns) cmd->add_flag("-A,--all-namespaces", c->all_namespaces, "Every namespace you may see");
  if (outputs != kNone) {
    std::string help = outputs == kGetOutputs
                           ? "wide, json, yaml, name, jsonpath=TEMPLATE, custom-columns=SPEC"
                       : outputs == kDataOnly ? "json or yaml"
                                              : "wide, json or yaml";
    cmd->add_option("-o,--output", c->output, help)
        ->check(CLI::Validator([outputs](std::string& v) { return CheckOutput(v, outputs); }, "FORMAT"));
  }
}

void PrintStructured(Json j, const std::string& format) {
  TimesToRfc3339(&j);
  if (format == "json") {
    std::cout << j.dump(2) << "\n";
  } else {
    YAML::Emitter out;
    EmitYaml(out, j);
    std::cout << out.c_str() << "\n";
  }
}

void PrintTable(const std::vector<std::string>& header, std::vector<std::vector<std::string>> rows,
                bool no_headers) {
  for (auto& r : rows) {
    for (auto& cell : r) {
      if (cell.empty()) cell = "-";
    }
  }
  std::vector<size_t> width(header.size());
  for (size_t i = 0; i < header.size(); ++i) width[i] = header[i].size();
  for (const auto& r : rows) {
    for (size_t i = 0; i < r.size() && i < width.size(); ++i) width[i] = std::max(width[i], r[i].size());
  }
  auto line = [&](const std::vector<std::string>& r) {
    std::string s;
    for (size_t i = 0; i < header.size(); ++i) {
      std::string cell = i < r.size() ? r[i] : "-";
      s += cell;
      if (i + 1 < header.size()) s += std::string(width[i] - std::min(width[i], cell.size()) + 3, ' ');
    }
    while (!s.empty() && s.back() == ' ') s.pop_back();
    std::cout << s << "\n";
  };
  if (!no_headers) line(header);
  for (const auto& r : rows) line(r);
}

std::string Age(int64_t since_ms) {
  if (since_ms <= 0) return "-";
  return HumanAge(std::max<int64_t>(0, (NowMs() - since_ms) / 1000));
}

std::string Str(const Json& j, const char* key, const std::string& dflt) {
  if (!j.is_object() || !j.contains(key)) return dflt;
  const Json& v = j[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return dflt;
  return v.dump();
}

void SplitRef(const std::string& ref, const std::string& dflt_ns, std::string* ns, std::string* name) {
  size_t slash = ref.find('/');
  if (slash == std::string::npos) {
    *ns = dflt_ns;
    *name = ref;
  } else {
    *ns = ref.substr(0, slash);
    *name = ref.substr(slash + 1);
  }
}

bool NonZero(const Json& r, const char* field) {
  std::string v = r.value(field, "0");
  return !v.empty() && std::atof(v.c_str()) != 0;
}
std::vector<GpuRow> GpuRows(const Json& resources, const char* quota_field) {
  std::vector<GpuRow> out;
  if (!resources.is_array()) return out;
  for (const auto& r : resources) {
    std::string res = r.value("resource", "");
    if (!IsGpuResource(res)) continue;
    // A flavor a queue lists only because Kueue wants every covered
    // resource named (quota 0, nothing used, may borrow none) is left out.
    if (!NonZero(r, quota_field) && !NonZero(r, "usage") && !NonZero(r, "borrowed") &&
        !NonZero(r, "borrowingLimit")) {
      continue;
    }
    std::string label = r.value("flavor", "");
    if (res != "nvidia.com/gpu") label += "/" + res.substr(std::string("nvidia.com/").size());
    out.push_back({label, &r});
  }
  return out;
}
double Num(const Json& r, const char* field) {
  std::string v = r.value(field, "0");
  return v.empty() ? 0 : std::atof(v.c_str()) / (v.back() == 'm' ? 1000.0 : 1.0);
}

std::string WorkloadPath(const std::string& ns, const std::string& name) {
  return "/api/v1/namespaces/" + ns + "/workloads/" + name;
}

std::string PhaseOf(const Common& c, const std::string& ns, const std::string& name, Json* w) {
  Response r = Request(c.client, "GET", WorkloadPath(ns, name));
  if (r.status != 200) return "";
  *w = r.json();
  return Str((*w)["status"], "phase");
}

std::string NormalizeKind(const std::string& k) {
  if (k == "cq" || k == "clusterqueue" || k == "clusterqueues") return "cq";
  if (k == "lq" || k == "localqueue" || k == "localqueues") return "lq";
  if (k == "cohort" || k == "cohorts") return "cohorts";
  if (k == "wl" || k == "workload" || k == "workloads") return "wl";
  if (k == "node" || k == "nodes" || k == "no") return "nodes";
  if (k == "gpu" || k == "gpus") return "gpus";
  if (k == "rf" || k == "flavor" || k == "flavors" || k == "resourceflavor" || k == "resourceflavors")
    return "flavors";
  return "";
}

int UnknownKind(const std::string& k) {
  std::string hint = Suggest(k, {"cq", "lq", "wl", "cohorts", "nodes", "gpus", "flavors", "clusterqueues",
                                 "localqueues", "workloads", "resourceflavors"});
  std::cerr << "error: unknown kind " << k << (hint.empty() ? "" : "; did you mean " + hint + "?")
            << " (want cq, lq, cohorts, wl, nodes, gpus or flavors)\n";
  return kExitUsage;
}

}  // namespace artel::cli
