// The client verbs of `artel` (docs/cli.md): apply, get, describe, why,
// delete/cancel, logs, run, top, events, whoami. Each is a thin HTTP call to
// arteld (cli/client.h) plus a kubectl-like rendering: aligned tables by
// default (ages, squeue's REASON, sinfo-like nodes), `-o wide|json|yaml`, and
// for `get` also `-o name|jsonpath=...|custom-columns=...`, `-l` selectors,
// `--sort-by` and `-w` (cli/format.h). JSON and YAML carry RFC 3339 times.

#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <ctime>
#include <filesystem>
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
#include "server/codec.h"
#include "server/manifest_files.h"

namespace artel::cli {
namespace {

using Json = nlohmann::json;

struct Common {
  ClientOptions client;
  std::string output;  // "", wide, json, yaml, name, jsonpath=..., custom-columns=...
  bool all_namespaces = false;
  bool no_headers = false;
  std::string sort_by;  // get --sort-by JSONPATH
};

// The -o values a verb accepts: kTable (wide), kData (json, yaml), kGet (all).
enum OutputSet { kNone = 0, kTableAndData = 1, kGetOutputs = 2, kDataOnly = 3 };

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

// The client flags are global (main.cc); a verb adds -A and -o.
void AddCommon(CLI::App* cmd, Common* c, OutputSet outputs = kTableAndData, bool with_ns = true) {
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

// Prints rows with every column padded to its widest cell; an empty cell
// is printed as "-" so that columns never shift (awk '{print $4}').
void PrintTable(const std::vector<std::string>& header, std::vector<std::vector<std::string>> rows,
                bool no_headers = false) {
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

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A table age ("5m", "2h10m", "3d") of a time in Unix milliseconds.
std::string Age(int64_t since_ms) {
  if (since_ms <= 0) return "-";
  return HumanAge(std::max<int64_t>(0, (NowMs() - since_ms) / 1000));
}

std::string Str(const Json& j, const char* key, const std::string& dflt = "") {
  if (!j.is_object() || !j.contains(key)) return dflt;
  const Json& v = j[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return dflt;
  return v.dump();
}

// "team-a/default" or "default" (namespace from -n).
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

// GPU quota per flavor: whole GPUs (nvidia.com/gpu) and MIG instances
// (nvidia.com/mig-*) of unlike flavors are never added up. One entry per
// flavor and GPU resource with quota or use; `label` is the flavor, with
// the MIG profile after a slash ("a100/mig-1g.10gb").
struct GpuRow {
  std::string label;
  const Json* r;
};
bool IsGpuResource(const std::string& res) {
  return res == "nvidia.com/gpu" || res.rfind("nvidia.com/mig-", 0) == 0;
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

// ---- get ---------------------------------------------------------------------

// ---- machine output (-o json|yaml|name|jsonpath|custom-columns) --------------

std::string KindName(const std::string& kind) {
  if (kind == "wl") return "workload";
  if (kind == "cq") return "clusterqueue";
  if (kind == "lq") return "localqueue";
  if (kind == "cohorts") return "cohort";
  if (kind == "nodes") return "node";
  if (kind == "gpus") return "gpu";
  if (kind == "flavors") return "resourceflavor";
  return kind;
}

std::string ListKind(const std::string& kind) {
  if (kind == "wl") return "WorkloadList";
  if (kind == "cq") return "ClusterQueueList";
  if (kind == "lq") return "LocalQueueList";
  if (kind == "cohorts") return "CohortList";
  if (kind == "nodes") return "NodeList";
  if (kind == "gpus") return "GpuList";
  if (kind == "flavors") return "ResourceFlavorList";
  return "List";
}

std::string ObjectName(const std::string& kind, const Json& it) {
  if (kind == "wl") return Str(it["metadata"], "name");
  if (kind == "gpus") return Str(it, "index");
  return Str(it, "name");
}

std::map<std::string, std::string> LabelsOf(const Json& it) {
  std::map<std::string, std::string> out;
  const Json* l = nullptr;
  if (it.contains("metadata") && it["metadata"].is_object() && it["metadata"].contains("labels")) {
    l = &it["metadata"]["labels"];
  } else if (it.contains("labels")) {
    l = &it["labels"];
  }
  if (l != nullptr && l->is_object()) {
    for (auto e = l->begin(); e != l->end(); ++e) {
      if (e->is_string()) out[e.key()] = e->get<std::string>();
    }
  }
  return out;
}

// `--sort-by JSONPATH`: a stable sort on the first value the path gives
// each object (times as RFC 3339, so they sort in time order); numbers
// numerically, strings as text, objects without the field first.
bool SortItems(const std::string& path, Json* items) {
  if (path.empty() || !items->is_array()) return true;
  std::string err;
  if (!JsonPathValues(path, Json::object(), &err)) {
    std::cerr << "error: --sort-by: " << err << "\n";
    return false;
  }
  std::vector<std::pair<Json, Json>> keyed;
  for (const auto& it : *items) {
    Json t = it;
    TimesToRfc3339(&t);
    auto v = JsonPathValues(path, t, &err);
    keyed.emplace_back(v && !v->empty() ? (*v)[0] : Json(), it);
  }
  std::stable_sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) {
    const Json &x = a.first, &y = b.first;
    if (x.is_null() || y.is_null()) return x.is_null() && !y.is_null();
    if (x.is_number() && y.is_number()) return x.get<double>() < y.get<double>();
    auto text = [](const Json& j) { return j.is_string() ? j.get<std::string>() : j.dump(); };
    // Quantities ("4", "500m") sort as numbers when both parse whole.
    std::string tx = text(x), ty = text(y);
    char* ex = nullptr;
    char* ey = nullptr;
    double dx = std::strtod(tx.c_str(), &ex), dy = std::strtod(ty.c_str(), &ey);
    if (!tx.empty() && !ty.empty() && *ex == 0 && *ey == 0) return dx < dy;
    return tx < ty;
  });
  Json out = Json::array();
  for (auto& [k, v] : keyed) out.push_back(std::move(v));
  *items = std::move(out);
  return true;
}

Json Filter(const Json& items, const std::vector<Requirement>& sel) {
  if (sel.empty()) return items;
  Json kept = Json::array();
  for (const auto& it : items) {
    if (MatchesLabels(sel, LabelsOf(it))) kept.push_back(it);
  }
  return kept;
}

// Prints `items` in a machine format; returns -1 for the table formats.
int PrintMachine(const Common& c, const std::string& kind, const Json& items, bool single) {
  const std::string& o = c.output;
  Json doc = single && !items.empty()
                 ? items[0]
                 : Json{{"apiVersion", "artel.dev/v1alpha1"}, {"kind", ListKind(kind)}, {"items", items}};
  if (o == "json" || o == "yaml") {
    PrintStructured(doc, o);
    return kExitOk;
  }
  if (o == "name") {
    for (const auto& it : items) std::cout << KindName(kind) << "/" << ObjectName(kind, it) << "\n";
    return kExitOk;
  }
  if (o.rfind("jsonpath=", 0) == 0) {
    TimesToRfc3339(&doc);
    std::string err;
    auto text = JsonPath(o.substr(9), doc, &err);
    if (!text) {
      std::cerr << "error: " << err << "\n";
      return kExitUsage;
    }
    std::cout << *text;
    return kExitOk;
  }
  if (o.rfind("custom-columns=", 0) == 0) {
    std::string err;
    auto cols = ParseCustomColumns(o.substr(15), &err);
    if (!cols) {
      std::cerr << "error: " << err << "\n";
      return kExitUsage;
    }
    std::vector<std::string> header;
    for (const auto& col : *cols) header.push_back(col.header);
    std::vector<std::vector<std::string>> rows;
    for (Json it : items) {
      TimesToRfc3339(&it);
      std::vector<std::string> row;
      for (const auto& col : *cols) {
        auto vals = JsonPathValues(col.path, it, &err);
        std::string cell;
        for (size_t i = 0; vals && i < vals->size(); ++i) {
          const Json& v = (*vals)[i];
          cell += (i ? "," : "") + (v.is_string() ? v.get<std::string>() : v.is_null() ? "" : v.dump());
        }
        row.push_back(cell.empty() ? "<none>" : cell);
      }
      rows.push_back(row);
    }
    PrintTable(header, rows, c.no_headers);
    return kExitOk;
  }
  return -1;
}

// The REASON column (squeue's): why a workload waits, or what happens to it.
std::string ShortReason(const Json& st) {
  std::string phase = Str(st, "phase");
  if (phase == "Pending") {
    std::string r = st.contains("pending") ? Str(st["pending"], "reason") : "";
    if (r.empty() && st.contains("lastEviction")) r = "evicted:" + Str(st["lastEviction"], "reason");
    return r.empty() ? "-" : r;
  }
  if (phase == "Evicting" && st.contains("lastEviction"))
    return "evicted:" + Str(st["lastEviction"], "reason");
  if (phase == "Terminating") return "Cancelled";
  if (phase == "Failed" && st.contains("exitCode")) return "exit:" + Str(st, "exitCode");
  return "-";
}

std::vector<std::string> WorkloadHeader(const Common& c) {
  std::vector<std::string> header = {"NAME", "QUEUE", "PHASE", "CLUSTERQUEUE", "AGE"};
  if (c.all_namespaces) header.insert(header.begin(), "NAMESPACE");
  if (c.output == "wide") {
    for (const char* h : {"PRIORITY", "GPUS", "EVICTIONS"}) header.push_back(h);
  }
  header.push_back("REASON");
  return header;
}

std::vector<std::string> WorkloadRow(const Common& c, const Json& w) {
  const Json& md = w["metadata"];
  const Json& st = w.value("status", Json::object());
  std::vector<std::string> row = {Str(md, "name"), Str(w["spec"], "queueName"), Str(st, "phase"),
                                  Str(st, "clusterQueue", "-"),
                                  Age(md.value("creationTimestamp", int64_t{0}))};
  if (c.all_namespaces) row.insert(row.begin(), Str(md, "namespace"));
  if (c.output == "wide") {
    double gpus = 0;
    for (const auto& ps : w["spec"].value("podSets", Json::array())) {
      auto req = ps.value("requests", Json::object());
      std::string g = req.value("nvidia.com/gpu", "0");
      gpus += std::atof(g.c_str()) * ps.value("count", 1);
    }
    std::ostringstream gs;
    gs << gpus;
    row.push_back(Str(st, "priority", "0"));
    row.push_back(gs.str());
    row.push_back(Str(st, "evictions", "0"));
  }
  row.push_back(ShortReason(st));
  return row;
}

// `get wl -w`: after the list, one line per change of a listed workload
// (or, without names, of any workload in scope), as kubectl's watch prints
// them; it follows the API's event log (GET /api/v1/watch) until
// interrupted. `cursor` is the event sequence number taken before the list,
// so that no change between the list and the watch is missed.
int WatchWorkloads(const Common& c, const std::vector<std::string>& names,
                   const std::vector<Requirement>& sel, uint64_t cursor, std::vector<size_t> widths) {
  std::string scope = c.all_namespaces ? "" : "&namespace=" + UrlEncode(c.client.ns);
  std::set<std::string> wanted;
  for (const auto& n : names) {
    std::string ns, name;
    SplitRef(n, c.client.ns, &ns, &name);
    wanted.insert(ns + "/" + name);
  }
  while (true) {
    Response r =
        Request(c.client, "GET", "/api/v1/watch?follow=false&since=" + std::to_string(cursor) + scope);
    if (int rc = Report(r); rc != kExitOk) return rc;
    Json list = r.json();
    std::vector<std::string> changed;
    for (const auto& e : list.value("items", Json::array())) {
      std::string key = Str(e, "workload");
      if (key.empty() || (!wanted.empty() && !wanted.count(key))) continue;
      if (std::find(changed.begin(), changed.end(), key) == changed.end()) changed.push_back(key);
    }
    cursor = list.value("next", cursor);
    for (const auto& key : changed) {
      size_t slash = key.find('/');
      Response w = Request(c.client, "GET", WorkloadPath(key.substr(0, slash), key.substr(slash + 1)));
      if (w.status != 200) continue;
      Json obj = w.json();
      if (!Filter(Json::array({obj}), sel).size()) continue;
      if (c.output == "json") {
        TimesToRfc3339(&obj);
        std::cout << obj.dump() << "\n";
      } else if (c.output == "yaml") {
        std::cout << "---\n";
        PrintStructured(obj, "yaml");
      } else if (c.output == "name") {
        std::cout << "workload/" << Str(obj["metadata"], "name") << "\n";
      } else if (c.output.rfind("jsonpath=", 0) == 0 || c.output.rfind("custom-columns=", 0) == 0) {
        Common one = c;
        one.no_headers = true;
        if (int rc = PrintMachine(one, "wl", Json::array({obj}), true); rc > 0) return rc;
      } else {
        std::vector<std::string> row = WorkloadRow(c, obj);
        std::string line;
        for (size_t i = 0; i < row.size(); ++i) {
          if (i < widths.size()) widths[i] = std::max(widths[i], row[i].size());
          line += row[i];
          if (i + 1 < row.size())
            line += std::string((i < widths.size() ? widths[i] : row[i].size()) - row[i].size() + 3, ' ');
        }
        std::cout << line << "\n";
      }
      std::cout << std::flush;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
}

int GetWorkloads(const Common& c, const std::vector<std::string>& names, const std::vector<Requirement>& sel,
                 const std::string& fields, bool watch = false) {
  uint64_t cursor = 0;
  if (watch) {
    std::string scope = c.all_namespaces ? "" : "&namespace=" + UrlEncode(c.client.ns);
    Response r = Request(c.client, "GET", "/api/v1/watch?follow=false" + scope);
    if (int rc = Report(r); rc != kExitOk) return rc;
    cursor = r.json().value("next", uint64_t{0});
  }
  Json items = Json::array();
  if (!names.empty()) {
    for (const auto& n : names) {
      std::string ns, name;
      SplitRef(n, c.client.ns, &ns, &name);
      Response r = Request(c.client, "GET", WorkloadPath(ns, name));
      if (int rc = Report(r); rc != kExitOk) return rc;
      items.push_back(r.json());
    }
  } else {
    std::string path =
        c.all_namespaces ? "/api/v1/workloads?x=1" : "/api/v1/namespaces/" + c.client.ns + "/workloads?x=1";
    // Label selectors are matched here (the API's takes k=v and k only).
    if (!fields.empty()) path += "&fieldSelector=" + UrlEncode(fields);
    Response r = Request(c.client, "GET", path);
    if (int rc = Report(r); rc != kExitOk) return rc;
    items = r.json().value("items", Json::array());
  }
  items = Filter(items, sel);
  if (!SortItems(c.sort_by, &items)) return kExitUsage;
  std::vector<std::string> header = WorkloadHeader(c);
  std::vector<size_t> widths;
  for (const auto& h : header) widths.push_back(h.size());
  if (int rc = PrintMachine(c, "wl", items, names.size() == 1 && !watch); rc >= 0) {
    if (rc != kExitOk || !watch) return rc;
  } else {
    std::vector<std::vector<std::string>> rows;
    for (const auto& w : items) rows.push_back(WorkloadRow(c, w));
    for (const auto& r : rows) {
      for (size_t i = 0; i < r.size() && i < widths.size(); ++i) widths[i] = std::max(widths[i], r[i].size());
    }
    if (rows.empty()) {
      std::cerr << "No workloads found" << (c.all_namespaces ? "" : " in namespace " + c.client.ns) << ".\n";
      if (watch && !c.no_headers) PrintTable(header, {});
    } else {
      PrintTable(header, rows, c.no_headers);
    }
  }
  if (!watch) return kExitOk;
  std::cout << std::flush;
  return WatchWorkloads(c, names, sel, cursor, widths);
}

// Flavors and their node labels: names from GET /api/v1/config (every
// caller); node labels from its `manifests` (admins only).
struct FlavorInfo {
  std::string name;
  std::map<std::string, std::string> node_labels;
  bool labels_known = false;
};
int Flavors(const Common& c, std::vector<FlavorInfo>* out) {
  Response r = Request(c.client, "GET", "/api/v1/config");
  if (int rc = Report(r); rc != kExitOk) return rc;
  Json cfg = r.json();
  for (const auto& o : cfg.value("objects", Json::array())) {
    if (Str(o, "kind") == "ResourceFlavor") out->push_back({Str(o, "name"), {}, false});
  }
  if (!cfg.contains("manifests")) return kExitOk;
  auto docs = server::SplitDocuments(Str(cfg, "manifests"));
  if (!docs.ok()) return kExitOk;
  for (const auto& d : *docs) {
    if (d.kind != "ResourceFlavor") continue;
    auto body = server::YamlToJson(d.text);
    if (!body.ok()) continue;
    std::string name = Str((*body)["metadata"], "name");
    for (auto& f : *out) {
      if (f.name != name) continue;
      f.labels_known = true;
      const Json spec = body->value("spec", Json::object());
      Json nl = spec.value("nodeLabels", Json::object());
      for (auto e = nl.begin(); e != nl.end(); ++e)
        f.node_labels[e.key()] = e->is_string() ? e->get<std::string>() : e->dump();
    }
  }
  return kExitOk;
}

bool FlavorMatches(const FlavorInfo& f, const Json& node) {
  auto labels = LabelsOf(node);
  for (const auto& [k, v] : f.node_labels) {
    auto it = labels.find(k);
    if (it == labels.end() || it->second != v) return false;
  }
  return true;
}

int GetSimple(const Common& c, const std::string& kind, const std::vector<std::string>& names,
              const std::vector<Requirement>& sel = {}) {
  std::string path;
  if (kind == "cq") path = "/api/v1/clusterqueues";
  if (kind == "lq")
    path = c.all_namespaces ? "/api/v1/localqueues" : "/api/v1/namespaces/" + c.client.ns + "/localqueues";
  if (kind == "cohorts") path = "/api/v1/cohorts";
  if (kind == "nodes") path = "/api/v1/nodes";
  if (kind == "gpus") path = "/api/v1/gpus";
  Json items = Json::array();
  std::vector<FlavorInfo> flavors;
  if (kind == "flavors" || (kind == "nodes" && c.output != "name")) {
    if (int rc = Flavors(c, &flavors); rc != kExitOk) return rc;
  }
  if (kind == "flavors") {
    Response q = Request(c.client, "GET", "/api/v1/clusterqueues");
    if (int rc = Report(q); rc != kExitOk) return rc;
    for (const auto& f : flavors) {
      Json it = {{"name", f.name}};
      if (f.labels_known) it["nodeLabels"] = f.node_labels;
      Json cqs = Json::array();
      for (const auto& cq : q.json().value("items", Json::array())) {
        for (const auto& e : cq.value("resources", Json::array())) {
          if (Str(e, "flavor") == f.name) {
            if (cqs.empty() || cqs.back() != Str(cq, "name")) cqs.push_back(Str(cq, "name"));
          }
        }
      }
      it["clusterQueues"] = cqs;
      items.push_back(it);
    }
  } else {
    Response r = Request(c.client, "GET", path);
    if (int rc = Report(r); rc != kExitOk) return rc;
    items = r.json().value("items", Json::array());
  }
  Json gpus;  // for the nodes' MIG slices
  if (kind == "nodes" && c.output.find('=') == std::string::npos && c.output != "name") {
    Response g = Request(c.client, "GET", "/api/v1/gpus");
    if (int rc = Report(g); rc != kExitOk) return rc;
    gpus = g.json().value("items", Json::array());
    // Each node with the flavors whose node labels it carries (admins).
    for (auto& n : items) {
      Json fl = Json::array();
      for (const auto& f : flavors) {
        if (f.labels_known && FlavorMatches(f, n)) fl.push_back(f.name);
      }
      if (!flavors.empty() && flavors.front().labels_known) n["flavors"] = fl;
    }
  }
  items = Filter(items, sel);
  if (!SortItems(c.sort_by, &items)) return kExitUsage;
  if (!names.empty()) {
    Json kept = Json::array();
    for (const auto& it : items) {
      for (const auto& n : names) {
        if (Str(it, "name") == n || Str(it, "uuid") == n || Str(it, "index") == n) kept.push_back(it);
      }
    }
    if (kept.empty()) {
      std::cerr << "error: NotFound: no " << kind << " named " << names[0] << "\n";
      return kExitNotFound;
    }
    items = kept;
  }
  if (int rc = PrintMachine(c, kind, items, names.size() == 1); rc >= 0) return rc;
  if (items.empty()) {
    std::cerr << "No " << KindName(kind) << " found"
              << (kind == "lq" && !c.all_namespaces ? " in namespace " + c.client.ns : "") << ".\n";
    return kExitOk;
  }
  std::vector<std::vector<std::string>> rows;
  if (kind == "cq") {
    // One row per GPU flavor with quota (GPUs of unlike flavors are not added up).
    std::vector<std::string> header = {"NAME",       "COHORT",    "PENDING",    "ADMITTED",
                                       "GPU-FLAVOR", "GPU-USAGE", "GPU-NOMINAL"};
    if (c.output == "wide") {
      header.push_back("GPU-BORROWED");
      header.push_back("GPU-BORROWING-LIMIT");
    }
    for (const auto& q : items) {
      std::vector<std::string> base = {Str(q, "name"), Str(q, "cohort", "-"), Str(q, "pendingWorkloads"),
                                       Str(q, "admittedWorkloads")};
      if (base[1].empty()) base[1] = "-";
      std::vector<GpuRow> gr = GpuRows(q["resources"], "nominal");
      if (gr.empty()) {
        std::vector<std::string> row = base;
        for (int i = 0; i < (c.output == "wide" ? 5 : 3); ++i) row.push_back("-");
        rows.push_back(row);
      }
      for (const GpuRow& g : gr) {
        std::vector<std::string> row = base;
        row.push_back(g.label);
        row.push_back(Str(*g.r, "usage"));
        row.push_back(Str(*g.r, "nominal"));
        if (c.output == "wide") {
          row.push_back(Str(*g.r, "borrowed"));
          row.push_back(Str(*g.r, "borrowingLimit", "-"));
        }
        rows.push_back(row);
      }
    }
    PrintTable(header, rows, c.no_headers);
  } else if (kind == "lq") {
    std::vector<std::string> header = {"NAME", "CLUSTERQUEUE", "PENDING", "ADMITTED"};
    if (c.all_namespaces) header.insert(header.begin(), "NAMESPACE");
    for (const auto& q : items) {
      std::vector<std::string> row = {Str(q, "name"), Str(q, "clusterQueue"), Str(q, "pendingWorkloads"),
                                      Str(q, "admittedWorkloads")};
      if (c.all_namespaces) row.insert(row.begin(), Str(q, "namespace"));
      rows.push_back(row);
    }
    PrintTable(header, rows, c.no_headers);
  } else if (kind == "cohorts") {
    for (const auto& q : items) {
      std::string parent = Str(q, "parent");
      std::vector<std::string> base = {Str(q, "name"), parent.empty() ? "-" : parent,
                                       std::to_string(q["members"].size())};
      std::vector<GpuRow> gr = GpuRows(q["resources"], "subtreeQuota");
      if (gr.empty()) {
        std::vector<std::string> row = base;
        for (int i = 0; i < 4; ++i) row.push_back("-");
        rows.push_back(row);
      }
      for (const GpuRow& g : gr) {
        std::vector<std::string> row = base;
        row.push_back(g.label);
        row.push_back(Str(*g.r, "subtreeQuota"));
        row.push_back(Str(*g.r, "usage"));
        row.push_back(Str(*g.r, "borrowed"));
        rows.push_back(row);
      }
    }
    PrintTable({"NAME", "PARENT", "MEMBERS", "GPU-FLAVOR", "GPU-QUOTA", "GPU-USAGE", "GPU-BORROWED"}, rows,
               c.no_headers);
  } else if (kind == "flavors") {
    for (const auto& f : items) {
      std::string labels;
      Json nl = f.value("nodeLabels", Json::object());
      for (auto e = nl.begin(); e != nl.end(); ++e)
        labels += (labels.empty() ? "" : ",") + e.key() + "=" + Str(nl, e.key().c_str());
      std::string cqs;
      for (const auto& q : f["clusterQueues"]) cqs += (cqs.empty() ? "" : ",") + q.get<std::string>();
      rows.push_back({Str(f, "name"), cqs, f.contains("nodeLabels") ? labels : "?"});
    }
    PrintTable({"NAME", "CLUSTERQUEUES", "NODE-LABELS"}, rows, c.no_headers);
  } else if (kind == "nodes") {
    // Like sinfo: one row per node pool, its GPU product, the flavors that
    // select it, GPUs allocated and idle, MIG compute slices, and a state.
    std::vector<std::string> header = {"NAME",  "PRODUCT", "FLAVORS",    "GPUS",
                                       "ALLOC", "IDLE",    "MIG-SLICES", "STATE"};
    if (c.output == "wide") {
      header.push_back("GPU-MODE");
      header.push_back("TAINTS");
    }
    for (const auto& n : items) {
      auto labels = LabelsOf(n);
      std::string product = labels.count("nvidia.com/gpu.product") ? labels["nvidia.com/gpu.product"] : "";
      if (product.empty()) {
        Json models = n.value("models", Json::object());
        for (auto m = models.begin(); m != models.end(); ++m)
          product += (product.empty() ? "" : ",") + m.key();
      }
      std::string fl;
      if (n.contains("flavors")) {
        for (const auto& f : n["flavors"]) fl += (fl.empty() ? "" : ",") + f.get<std::string>();
      } else {
        fl = "?";  // tenants do not see the flavors' node labels
      }
      int64_t total = n.value("gpus", int64_t{0}), used = n.value("gpusInUse", int64_t{0});
      int64_t mig_used = 0, mig_total = 0;
      for (const auto& g : gpus) {
        if (Str(g, "node") != Str(n, "name") || !g.contains("migSlices")) continue;
        mig_used += g["migSlices"].value("used", int64_t{0});
        mig_total += g["migSlices"].value("total", int64_t{0});
      }
      std::string state = !n.value("ready", true) ? "down"
                          : used == 0             ? "idle"
                          : used >= total         ? "alloc"
                                                  : "mix";
      std::vector<std::string> row = {
          Str(n, "name"),
          product,
          fl,
          std::to_string(total),
          std::to_string(used),
          std::to_string(std::max<int64_t>(0, total - used)),
          mig_total > 0 ? std::to_string(mig_used) + "/" + std::to_string(mig_total) : "-",
          state};
      if (c.output == "wide") {
        row.push_back(Str(n, "gpuMode"));
        std::string taints;
        for (const auto& t : n.value("taints", Json::array()))
          taints +=
              (taints.empty() ? "" : ",") + Str(t, "key") + "=" + Str(t, "value") + ":" + Str(t, "effect");
        row.push_back(taints);
      }
      rows.push_back(row);
    }
    PrintTable(header, rows, c.no_headers);
  } else {
    std::vector<std::string> header = {"INDEX",  "NODE",       "MODEL",    "UTIL",
                                       "MEMORY", "MIG-SLICES", "WORKLOAD", "POD"};
    if (c.output == "wide") header.push_back("UUID");
    for (const auto& g : items) {
      int64_t used = g.value("memoryUsedBytes", int64_t{0}), total = g.value("memoryBytes", int64_t{0});
      // Several pods on one GPU (MIG instances, memory shares): all of them.
      std::string wl = Str(g, "workload", "-"), pod = Str(g, "pod", "-"), mig = "-";
      auto join = [](std::vector<std::string> v) {
        std::string out;
        for (size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + v[i];
        return out;
      };
      std::vector<std::string> wls, pods;
      auto add_wl = [&](const std::string& w) {
        if (std::find(wls.begin(), wls.end(), w) == wls.end()) wls.push_back(w);
      };
      if (g.contains("migSlices")) {
        const Json& ms = g["migSlices"];
        mig = Str(ms, "used") + "/" + Str(ms, "total");
        for (const auto& s : ms.value("instances", Json::array())) {
          add_wl(Str(s, "workload"));
          if (s.contains("pod")) pods.push_back(Str(s, "pod") + ":" + Str(s, "profile"));
        }
      } else if (g.contains("users")) {
        for (const auto& u : g["users"]) {
          add_wl(Str(u, "workload"));
          if (u.contains("pod")) pods.push_back(Str(u, "pod"));
        }
      }
      if (!wls.empty()) wl = join(wls);
      if (!pods.empty()) pod = join(pods);
      if (g.contains("migSlices") && wls.empty()) wl = pod = "-";
      std::vector<std::string> row = {Str(g, "index"),
                                      Str(g, "node"),
                                      Str(g, "model"),
                                      Str(g, "utilizationPercent") + "%",
                                      std::to_string(used >> 30) + "/" + std::to_string(total >> 30) + "Gi",
                                      mig,
                                      wl,
                                      pod};
      if (c.output == "wide") row.push_back(Str(g, "uuid"));
      rows.push_back(row);
    }
    PrintTable(header, rows, c.no_headers);
  }
  return kExitOk;
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

// ---- describe / why ------------------------------------------------------------

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

// ---- apply -------------------------------------------------------------------------

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
  for (const auto& d : submissions) {
    auto body = server::YamlToJson(d.text);
    if (!body.ok()) {
      std::cerr << "error: " << body.status().ToString() << "\n";
      return kExitFailed;
    }
    if ((*body)["metadata"].is_object() && !(*body)["metadata"].contains("namespace")) {
      (*body)["metadata"]["namespace"] = c.client.ns;
    }
    Response r = Request(c.client, "POST", "/api/v1/workloads", body->dump());
    if (int e = Report(r); e != kExitOk) {
      rc = e;
      continue;
    }
    Json w = r.json();
    std::cout << "workload/" << Str(w["metadata"], "namespace") << "/" << Str(w["metadata"], "name")
              << " created\n";
  }
  return rc;
}

// ---- run ---------------------------------------------------------------------------

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

std::string PhaseOf(const Common& c, const std::string& ns, const std::string& name, Json* w) {
  Response r = Request(c.client, "GET", WorkloadPath(ns, name));
  if (r.status != 200) return "";
  *w = r.json();
  return Str((*w)["status"], "phase");
}

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

// ---- top ----------------------------------------------------------------------------

int Top(const Common& c) {
  Response r = Request(c.client, "GET", "/api/v1/clusterqueues");
  if (int rc = Report(r); rc != kExitOk) return rc;
  Response co = Request(c.client, "GET", "/api/v1/cohorts");
  if (int rc = Report(co); rc != kExitOk) return rc;
  auto bar = [](double used, double quota) {
    int width = 20;
    int fill =
        quota > 0 ? static_cast<int>(std::min(1.0, used / quota) * width + 0.5) : (used > 0 ? width : 0);
    return "[" + std::string(fill, '#') + std::string(width - fill, '.') + "]";
  };
  auto fmt = [](double v) {
    std::ostringstream os;
    os << v;
    return os.str();
  };
  // Per team (cohort) or queue and GPU flavor: GPUs of unlike flavors (and
  // MIG instances) are never added up.
  Json teams = Json::array();
  for (const auto& q : co.json().value("items", Json::array())) {
    for (const GpuRow& g : GpuRows(q["resources"], "subtreeQuota")) {
      teams.push_back({{"team", "cohort/" + Str(q, "name")},
                       {"flavor", g.label},
                       {"guaranteed", Str(*g.r, "subtreeQuota")},
                       {"used", Str(*g.r, "usage")},
                       {"borrowed", Str(*g.r, "borrowed")}});
    }
  }
  // Per flavor (like GPUs of one flavor only): the quota of the whole
  // tree (every root cohort's subtree quota, plus the queues in no cohort),
  // what is used of it, and what queues use beyond their own nominal quota.
  std::map<std::string, std::array<double, 4>> per_flavor;  // nominal, used, borrowed, queues
  for (const auto& q : co.json().value("items", Json::array())) {
    if (!Str(q, "parent").empty()) continue;
    for (const GpuRow& g : GpuRows(q["resources"], "subtreeQuota")) {
      per_flavor[g.label][0] += Num(*g.r, "subtreeQuota");
      per_flavor[g.label][1] += Num(*g.r, "usage");
    }
  }
  for (const auto& q : r.json().value("items", Json::array())) {
    std::vector<GpuRow> gr = GpuRows(q["resources"], "subtreeQuota");
    if (gr.empty()) {
      teams.push_back({{"team", "cq/" + Str(q, "name")},
                       {"admitted", q.value("admittedWorkloads", 0)},
                       {"pending", q.value("pendingWorkloads", 0)}});
    }
    for (const GpuRow& g : gr) {
      teams.push_back({{"team", "cq/" + Str(q, "name")},
                       {"flavor", g.label},
                       {"guaranteed", Str(*g.r, "subtreeQuota")},
                       {"used", Str(*g.r, "usage")},
                       {"borrowed", Str(*g.r, "borrowed")},
                       {"admitted", q.value("admittedWorkloads", 0)},
                       {"pending", q.value("pendingWorkloads", 0)}});
      auto& f = per_flavor[g.label];
      if (Str(q, "cohort").empty()) {
        f[0] += Num(*g.r, "nominal");
        f[1] += Num(*g.r, "usage");
      }
      f[2] += Num(*g.r, "borrowed");
      f[3] += 1;
    }
  }
  Json flavors = Json::array();
  for (const auto& [label, f] : per_flavor) {
    flavors.push_back({{"flavor", label},
                       {"nominal", fmt(f[0])},
                       {"used", fmt(f[1])},
                       {"borrowed", fmt(f[2])},
                       {"clusterQueues", static_cast<int>(f[3])}});
  }
  if (c.output == "json" || c.output == "yaml") {
    PrintStructured(Json{{"teams", teams}, {"flavors", flavors}}, c.output);
    return kExitOk;
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& t : teams) {
    bool cq = Str(t, "team").rfind("cq/", 0) == 0;
    rows.push_back({Str(t, "team"), Str(t, "flavor", "-"), Str(t, "guaranteed", "-"), Str(t, "used", "-"),
                    Str(t, "borrowed", "-"), cq ? Str(t, "admitted") : "-", cq ? Str(t, "pending") : "-",
                    bar(Num(t, "used"), Num(t, "guaranteed"))});
  }
  PrintTable(
      {"TEAM", "GPU-FLAVOR", "GUARANTEED", "USED", "BORROWED", "ADMITTED", "PENDING", "USED/GUARANTEED"},
      rows);
  rows.clear();
  for (const auto& f : flavors) {
    rows.push_back({Str(f, "flavor"), Str(f, "nominal"), Str(f, "used"), Str(f, "borrowed"),
                    fmt(std::max(0.0, Num(f, "nominal") - Num(f, "used"))),
                    bar(Num(f, "used"), Num(f, "nominal"))});
  }
  if (!rows.empty()) {
    std::cout << "\n";
    PrintTable({"GPU-FLAVOR", "NOMINAL", "USED", "BORROWED", "IDLE", "USED/NOMINAL"}, rows);
  }
  return kExitOk;
}

}  // namespace

void AddClientCommands(CLI::App& app, int* exit_code) {
  // get
  {
    auto c = std::make_shared<Common>();
    auto kind = std::make_shared<std::string>();
    auto names = std::make_shared<std::vector<std::string>>();
    auto labels = std::make_shared<std::string>();
    auto fields = std::make_shared<std::string>();
    auto watch = std::make_shared<bool>(false);
    CLI::App* cmd = app.add_subcommand("get", "List objects: cq, lq, cohorts, wl, nodes, gpus, flavors");
    cmd->add_option("kind", *kind, "cq|lq|cohorts|wl|nodes|gpus|flavors")->required();
    cmd->add_option("names", *names, "Names (for wl: NAME or NAMESPACE/NAME)");
    cmd->add_option("-l,--selector", *labels,
                    "Label selector: k=v, k!=v, k in (a,b), k notin (a,b), k, !k; comma = and");
    cmd->add_option("--field-selector", *fields,
                    "status.phase=..., spec.queueName=..., status.clusterQueue=...");
    cmd->add_flag("--no-headers", c->no_headers, "Print tables without their header line");
    cmd->add_flag("-w,--watch", *watch, "Workloads: after the list, print each change until interrupted");
    cmd->add_option("--sort-by", c->sort_by, "Sort by a JSONPath, e.g. .metadata.creationTimestamp");
    AddCommon(cmd, c.get(), kGetOutputs);
    cmd->callback([=] {
      std::string k = NormalizeKind(*kind);
      if (k.empty()) {
        *exit_code = UnknownKind(*kind);
        return;
      }
      std::string err;
      auto sel = ParseLabelSelector(*labels, &err);
      if (!sel) {
        std::cerr << "error: " << err << "\n";
        *exit_code = kExitUsage;
        return;
      }
      ResolveClientOptions(&c->client, (k == "wl" || k == "lq") && !c->all_namespaces);
      if (*watch && k != "wl") {
        std::cerr << "error: --watch is for workloads (get wl -w); artel top -w follows quota use\n";
        *exit_code = kExitUsage;
        return;
      }
      *exit_code =
          k == "wl" ? GetWorkloads(*c, *names, *sel, *fields, *watch) : GetSimple(*c, k, *names, *sel);
    });
  }
  // describe
  {
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
  // why
  {
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
  // cancel, and delete (kubectl's verb: `delete wl NAME...`)
  for (const bool is_delete : {false, true}) {
    auto c = std::make_shared<Common>();
    auto names = std::make_shared<std::vector<std::string>>();
    auto ignore_not_found = std::make_shared<bool>(false);
    CLI::App* cmd =
        is_delete
            ? app.add_subcommand("delete",
                                 "Delete (cancel) workloads: delete wl NAME... or delete wl/NAME; the record "
                                 "stays listed as Cancelled")
            : app.add_subcommand("cancel", "Cancel workloads (stops their pods); the same as delete wl");
    cmd->add_option(
           is_delete ? "args" : "workloads", *names,
           is_delete ? "wl NAME... (NAME or NAMESPACE/NAME), or wl/NAME..." : "NAME or NAMESPACE/NAME")
        ->required();
    if (is_delete)
      cmd->add_flag("--ignore-not-found", *ignore_not_found, "A missing workload is not an error");
    AddCommon(cmd, c.get(), kNone);
    cmd->callback([=] {
      std::vector<std::string> refs;
      if (is_delete) {
        // `wl a b`, `wl/a wl/b` or `workload/a`.
        size_t first = 0;
        if (NormalizeKind((*names)[0]) == "wl") {
          first = 1;
        } else if (size_t slash = (*names)[0].find('/');
                   slash == std::string::npos || NormalizeKind((*names)[0].substr(0, slash)).empty()) {
          std::cerr << "error: give the kind: artel delete wl NAME... (only workloads can be deleted; "
                       "configuration changes go through artel apply)\n";
          *exit_code = kExitUsage;
          return;
        }
        for (size_t i = first; i < names->size(); ++i) {
          std::string ref = (*names)[i];
          if (first == 0) {
            size_t slash = ref.find('/');
            if (slash == std::string::npos || NormalizeKind(ref.substr(0, slash)) != "wl") {
              std::cerr << "error: " << ref << ": only workloads can be deleted (wl/NAME)\n";
              *exit_code = kExitUsage;
              return;
            }
            ref = ref.substr(slash + 1);
          }
          refs.push_back(ref);
        }
        if (refs.empty()) {
          std::cerr << "error: give the workloads to delete: artel delete wl NAME...\n";
          *exit_code = kExitUsage;
          return;
        }
      } else {
        refs = *names;
      }
      bool need_ns = std::any_of(refs.begin(), refs.end(),
                                 [](const std::string& r) { return r.find('/') == std::string::npos; });
      ResolveClientOptions(&c->client, need_ns);
      *exit_code = kExitOk;
      for (const auto& ref : refs) {
        std::string ns, n;
        SplitRef(ref, c->client.ns, &ns, &n);
        Response r = is_delete ? Request(c->client, "DELETE", WorkloadPath(ns, n))
                               : Request(c->client, "POST", WorkloadPath(ns, n) + "/cancel", "");
        if (is_delete && r.status == 404 && *ignore_not_found) continue;
        if (is_delete && r.status == 409) {
          // Deleting what has already ended is done (kubectl's delete is idempotent too).
          Json w;
          std::string phase = PhaseOf(*c, ns, n, &w);
          if (phase == "Succeeded" || phase == "Failed" || phase == "Cancelled") {
            std::cout << "workload/" << ns << "/" << n << " already ended (" << phase << ")\n";
            continue;
          }
        }
        int rc = Report(r);
        if (rc == kExitOk)
          std::cout << "workload/" << ns << "/" << n << (is_delete ? " deleted\n" : " cancelled\n");
        if (rc != kExitOk) *exit_code = rc;
      }
    });
  }
  // logs
  {
    auto c = std::make_shared<Common>();
    auto name = std::make_shared<std::string>();
    auto pod = std::make_shared<std::string>();
    auto follow = std::make_shared<bool>(false);
    CLI::App* cmd = app.add_subcommand("logs", "Print a workload's pod logs");
    cmd->add_option("workload", *name, "NAME or NAMESPACE/NAME")->required();
    cmd->add_option("--pod", *pod, "One pod (e.g. main-0)");
    cmd->add_flag("-f,--follow", *follow, "Keep printing until the workload ends");
    AddCommon(cmd, c.get(), kNone);
    cmd->callback([=] {
      ResolveClientOptions(&c->client, name->find('/') == std::string::npos);
      std::string ns, n;
      SplitRef(*name, c->client.ns, &ns, &n);
      std::string path = WorkloadPath(ns, n) + "/logs" + (pod->empty() ? "" : "?pod=" + UrlEncode(*pod));
      size_t printed = 0;
      while (true) {
        Response r = Request(c->client, "GET", path);
        *exit_code = Report(r);
        if (*exit_code != kExitOk) return;
        if (r.body.size() > printed) std::cout << r.body.substr(printed) << std::flush;
        printed = std::max(printed, r.body.size());
        if (!*follow) return;
        Json w;
        std::string phase = PhaseOf(*c, ns, n, &w);
        if (phase == "Succeeded" || phase == "Failed" || phase == "Cancelled" || phase.empty()) {
          Response last = Request(c->client, "GET", path);
          if (last.status == 200 && last.body.size() > printed) std::cout << last.body.substr(printed);
          return;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
      }
    });
  }
  // apply
  {
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
  // run
  {
    auto c = std::make_shared<Common>();
    auto a = std::make_shared<RunArgs>();
    CLI::App* cmd = app.add_subcommand(
        "run", "Submit a command as a workload: artel run --queue NS/LQ --gpus N -- CMD...");
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
  // top
  {
    auto c = std::make_shared<Common>();
    auto watch = std::make_shared<bool>(false);
    CLI::App* cmd = app.add_subcommand("top", "GPU usage against guarantees, per team (cohort) and queue");
    cmd->add_flag("-w,--watch", *watch, "Refresh every 2 seconds until interrupted");
    AddCommon(cmd, c.get(), kDataOnly, false);
    cmd->callback([=] {
      ResolveClientOptions(&c->client);
      const bool tty = ::isatty(STDOUT_FILENO) == 1;
      do {
        // A terminal is redrawn; a pipe gets one report after another.
        if (*watch && tty) std::cout << "\033[H\033[2J";
        *exit_code = Top(*c);
        std::cout << std::flush;
        if (*watch) std::this_thread::sleep_for(std::chrono::seconds(2));
      } while (*watch && *exit_code == kExitOk);
    });
  }
  // events
  {
    auto c = std::make_shared<Common>();
    auto follow = std::make_shared<bool>(false);
    auto since = std::make_shared<uint64_t>(0);
    CLI::App* cmd = app.add_subcommand("events", "Print the event timeline (admissions, evictions, exits)");
    cmd->add_flag("-f,--follow", *follow, "Keep streaming new events");
    cmd->add_option("--since", *since, "Only events after this sequence number");
    AddCommon(cmd, c.get(), kDataOnly);
    cmd->callback([=] {
      ResolveClientOptions(&c->client, !c->all_namespaces);
      std::string scope = c->all_namespaces ? "" : "&namespace=" + UrlEncode(c->client.ns);
      auto print = [&](Json e) {
        if (c->output == "json") {
          TimesToRfc3339(&e);
          std::cout << e.dump() << "\n" << std::flush;
          return;
        }
        if (c->output == "yaml") {
          std::cout << "---\n";
          PrintStructured(e, "yaml");
          std::cout << std::flush;
          return;
        }
        std::string ts = Age(e.value("time", int64_t{0}));
        std::string detail;
        for (const char* k : {"clusterQueue", "reason", "preemptor", "exitCode", "user", "changed"}) {
          if (e.contains(k)) detail += std::string(" ") + k + "=" + Str(e, k);
        }
        std::cout << std::right << std::setw(6) << ts << "  " << std::left << std::setw(14) << Str(e, "type")
                  << std::setw(32) << Str(e, "workload", "-") << detail << "\n"
                  << std::flush;
      };
      Response r =
          Request(c->client, "GET", "/api/v1/watch?follow=false&since=" + std::to_string(*since) + scope);
      *exit_code = Report(r);
      if (*exit_code != kExitOk) return;
      Json list = r.json();
      for (const auto& e : list.value("items", Json::array())) print(e);
      uint64_t next = list.value("next", uint64_t{0});
      while (*follow) {
        r = Request(c->client, "GET", "/api/v1/watch?follow=false&since=" + std::to_string(next) + scope);
        if ((*exit_code = Report(r)) != kExitOk) return;
        list = r.json();
        for (const auto& e : list.value("items", Json::array())) print(e);
        next = list.value("next", next);
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
      }
    });
  }
  // whoami
  {
    auto c = std::make_shared<Common>();
    CLI::App* cmd = app.add_subcommand("whoami", "Show the user, role and namespaces of the token");
    AddCommon(cmd, c.get(), kDataOnly, false);
    cmd->callback([=] {
      ResolveClientOptions(&c->client);
      Response r = Request(c->client, "GET", "/api/v1/whoami");
      *exit_code = Report(r);
      if (*exit_code == kExitOk) {
        Json j = r.json();
        if (!c->output.empty()) {
          PrintStructured(j, c->output);
          return;
        }
        std::string ns;
        for (const auto& n : j.value("namespaces", Json::array()))
          ns += (ns.empty() ? "" : ", ") + n.get<std::string>();
        if (Str(j, "role") == "admin") ns = "all";
        std::cout << "user:       " << Str(j, "user") << "\nrole:       " << Str(j, "role")
                  << "\nnamespaces: " << (ns.empty() ? "none" : ns) << "\nserver:     " << c->client.server
                  << "\n";
      }
    });
  }
}

}  // namespace artel::cli
