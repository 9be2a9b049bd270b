// What the client verbs (cmd_get.cc, cmd_describe.cc, cmd_apply.cc,
// cmd_run.cc, cmd_delete.cc, cmd_logs.cc, cmd_top.cc, cmd_events.cc,
// cmd_whoami.cc) share: the flags every verb takes, the output helpers
// (tables, JSON/YAML, ages), workload references and the kinds `get` and
// `describe` know. Each is a thin HTTP call to arteld (cli/client.h) plus a
// kubectl-like rendering: aligned tables by default (ages, squeue's REASON,
// sinfo-like nodes), `-o wide|json|yaml`, and for `get` also
// `-o name|jsonpath=...|custom-columns=...`, `-l` selectors, `--sort-by` and
// `-w` (cli/format.h). JSON and YAML carry RFC 3339 times.
//
// Thread-safety: used from main() only.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/client.h"
#include "cli/format.h"

namespace artel::cli {

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

// The client flags are global (main.cc); a verb adds -A and -o.
void AddCommon(CLI::App* cmd, Common* c, OutputSet outputs = kTableAndData, bool with_ns = true);

// `j` as JSON (format "json") or YAML, times as RFC 3339.
void PrintStructured(Json j, const std::string& format);

// Prints rows with every column padded to its widest cell; an empty cell
// is printed as "-" so that columns never shift (awk '{print $4}').
void PrintTable(const std::vector<std::string>& header, std::vector<std::vector<std::string>> rows,
                bool no_headers = false);

// A table age ("5m", "2h10m", "3d") of a time in Unix milliseconds.
std::string Age(int64_t since_ms);

// j[key] as text (strings unquoted, other values as JSON); `dflt` when absent or null.
std::string Str(const Json& j, const char* key, const std::string& dflt = "");

// "team-a/default" or "default" (namespace from -n).
void SplitRef(const std::string& ref, const std::string& dflt_ns, std::string* ns, std::string* name);

// GPU quota per flavor: whole GPUs (nvidia.com/gpu) and MIG instances
// (nvidia.com/mig-*) of unlike flavors are never added up. One entry per
// flavor and GPU resource with quota or use; `label` is the flavor, with
// the MIG profile after a slash ("a100/mig-1g.10gb").
struct GpuRow {
  std::string label;
  const Json* r;
};
std::vector<GpuRow> GpuRows(const Json& resources, const char* quota_field);
// True when the quantity r[field] is present and not zero.
bool NonZero(const Json& r, const char* field);
// The quantity r[field] as a number ("500m" = 0.5).
double Num(const Json& r, const char* field);

// The API path of one workload.
std::string WorkloadPath(const std::string& ns, const std::string& name);

// The workload's phase ("" when it cannot be read); the object in *w.
std::string PhaseOf(const Common& c, const std::string& ns, const std::string& name, Json* w);

// The canonical kind ("cq", "lq", "cohorts", "wl", "nodes", "gpus", "flavors")
// of a kind or its alias; "" when unknown.
std::string NormalizeKind(const std::string& k);
// Prints the unknown kind with a suggestion; returns kExitUsage.
int UnknownKind(const std::string& k);

// cmd_get.cc, also used by `describe`.
int GetWorkloads(const Common& c, const std::vector<std::string>& names, const std::vector<Requirement>& sel,
                 const std::string& fields, bool watch = false);
int GetSimple(const Common& c, const std::string& kind, const std::vector<std::string>& names,
              const std::vector<Requirement>& sel = {});
// Flavors and their node labels: names from GET /api/v1/config (every
// caller); node labels from its `manifests` (admins only).
struct FlavorInfo {
  std::string name;
  std::map<std::string, std::string> node_labels;
  bool labels_known = false;
};
int Flavors(const Common& c, std::vector<FlavorInfo>* out);

}  // namespace artel::cli
