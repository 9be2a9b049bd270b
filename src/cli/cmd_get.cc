// `artel get KIND [NAME...]` (docs/cli.md): cq, lq, cohorts, wl, nodes,
// gpus, flavors as tables, `-o wide|json|yaml|name|jsonpath=...|
// custom-columns=...`, `-l`/`--field-selector`, `--sort-by`, and for
// workloads `-w` (follow the API's event log).

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

bool FlavorMatches(const FlavorInfo& f, const Json& node) {
  auto labels = LabelsOf(node);
  for (const auto& [k, v] : f.node_labels) {
    auto it = labels.find(k);
    if (it == labels.end() || it->second != v) return false;
  }
  return true;
}

}  // namespace

int GetWorkloads(const Common& c, const std::vector<std::string>& names, const std::vector<Requirement>& sel,
                 const std::string& fields, bool watch) {
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

int GetSimple(const Common& c, const std::string& kind, const std::vector<std::string>& names,
              const std::vector<Requirement>& sel) {
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

void AddGetCommand(CLI::App& app, int* exit_code) {
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
    *exit_code = k == "wl" ? GetWorkloads(*c, *names, *sel, *fields, *watch) : GetSimple(*c, k, *names, *sel);
  });
}

}  // namespace artel::cli
