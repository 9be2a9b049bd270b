#include "server/config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "manifest/yaml_util.h"

namespace artel::server {
namespace fs = std::filesystem;
namespace {

Status At(const std::string& file, const YAML::Node& n, const std::string& field, const std::string& msg) {
  Status s = InvalidArgument(msg);
  s.WithField(field);
  SourcePos p;
  p.file = file;
  p.line = n.Mark().line + 1;
  p.column = n.Mark().column + 1;
  s.WithPos(p);
  return s;
}

Status CheckKeys(const std::string& file, const YAML::Node& n, const std::string& path,
                 std::initializer_list<const char*> allowed) {
  if (!n.IsMap()) return At(file, n, path, "must be a map");
  for (const auto& kv : n) {
    std::string k = kv.first.as<std::string>();
    bool ok = false;
    for (const char* a : allowed) ok = ok || k == a;
    if (!ok) return At(file, kv.first, path.empty() ? k : path + "." + k, "unknown field \"" + k + "\"");
  }
  return Status::Ok();
}

std::string Where(const std::string& file, const YAML::Node& n) {
  return file + ":" + std::to_string(n.Mark().line + 1) + ":" + std::to_string(n.Mark().column + 1);
}

// A label key or value as Kubernetes allows them (loosely: no spaces or
// control characters, not empty for keys).
bool PlainText(const std::string& s) {
  for (char c : s) {
    if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f) return false;
  }
  return true;
}

Status ParseLabels(const std::string& file, const YAML::Node& n, const std::string& field,
                   std::map<std::string, std::string>* out) {
  if (!n.IsMap()) return At(file, n, field, "must be a map of label keys to values");
  for (const auto& kv : n) {
    std::string k = kv.first.as<std::string>();
    if (!kv.second.IsScalar()) return At(file, kv.second, field + "." + k, "a label value must be a string");
    std::string v = kv.second.as<std::string>();
    if (k.empty() || !PlainText(k) || !PlainText(v)) {
      return At(file, kv.first, field + "." + k, "label keys and values may not be empty or hold spaces");
    }
    (*out)[k] = v;
  }
  return Status::Ok();
}

Status ParseTaints(const std::string& file, const YAML::Node& n, const std::string& field,
                   std::vector<core::Taint>* out) {
  if (!n.IsSequence()) return At(file, n, field, "must be a list of {key, value, effect}");
  int i = 0;
  for (const auto& t : n) {
    std::string at = field + "[" + std::to_string(i++) + "]";
    if (Status s = CheckKeys(file, t, at, {"key", "value", "effect"}); !s.ok()) return s;
    core::Taint taint;
    if (!t["key"] || t["key"].as<std::string>().empty())
      return At(file, t, at + ".key", "a taint needs a key");
    taint.key = t["key"].as<std::string>();
    if (t["value"]) taint.value = t["value"].as<std::string>();
    taint.effect = t["effect"] ? t["effect"].as<std::string>() : "";
    if (taint.effect != "NoSchedule" && taint.effect != "PreferNoSchedule" && taint.effect != "NoExecute") {
      return At(file, t["effect"] ? t["effect"] : t, at + ".effect",
                "must be NoSchedule, PreferNoSchedule or NoExecute");
    }
    out->push_back(std::move(taint));
  }
  return Status::Ok();
}

Status ParseInventory(const std::string& file, const YAML::Node& root, InventoryOptions* inv) {
  if (const YAML::Node l = root["nodeLabels"]) {
    if (Status s = ParseLabels(file, l, "nodeLabels", &inv->labels); !s.ok()) return s;
  }
  if (const YAML::Node t = root["nodeTaints"]) {
    if (Status s = ParseTaints(file, t, "nodeTaints", &inv->taints); !s.ok()) return s;
  }
  const YAML::Node pools = root["nodePools"];
  if (!pools) return Status::Ok();
  if (!pools.IsSequence()) return At(file, pools, "nodePools", "must be a list of node pools");
  int i = 0;
  for (const auto& p : pools) {
    std::string at = "nodePools[" + std::to_string(i++) + "]";
    if (Status s = CheckKeys(file, p, at, {"name", "gpus", "labels", "taints"}); !s.ok()) return s;
    NodePoolConfig pc;
    pc.where = Where(file, p);
    if (!p["name"]) return At(file, p, at + ".name", "a node pool needs a name");
    pc.name = p["name"].as<std::string>();
    bool name_ok = !pc.name.empty() && pc.name.size() <= 63;
    for (char c : pc.name) {
      name_ok = name_ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.');
    }
    if (!name_ok) {
      return At(file, p["name"], at + ".name", "must be 1-63 letters, digits, '-', '_' or '.'");
    }
    for (const NodePoolConfig& other : inv->pools) {
      if (other.name == pc.name)
        return At(file, p["name"], at + ".name", "node pool " + pc.name + " is defined twice");
    }
    if (const YAML::Node g = p["gpus"]) {
      pc.has_gpus = true;
      if (Status s = CheckKeys(file, g, at + ".gpus", {"product", "mig", "indices", "count"}); !s.ok())
        return s;
      if (g["product"]) pc.product = g["product"].as<std::string>();
      if (g["mig"]) pc.mig = g["mig"].as<bool>();
      if (const YAML::Node ix = g["indices"]) {
        if (!ix.IsSequence()) return At(file, ix, at + ".gpus.indices", "must be a list of GPU indices");
        for (const auto& x : ix) {
          int v = x.as<int>();
          if (v < 0) return At(file, x, at + ".gpus.indices", "a GPU index is 0 or more");
          pc.indices.push_back(v);
        }
      }
      if (g["count"]) {
        pc.count = g["count"].as<int>();
        if (pc.count < 1) return At(file, g["count"], at + ".gpus.count", "must be at least 1");
      }
    }
    if (const YAML::Node l = p["labels"]) {
      if (Status s = ParseLabels(file, l, at + ".labels", &pc.labels); !s.ok()) return s;
    }
    if (const YAML::Node t = p["taints"]) {
      if (Status s = ParseTaints(file, t, at + ".taints", &pc.taints); !s.ok()) return s;
    }
    inv->pools.push_back(std::move(pc));
  }
  return Status::Ok();
}

bool ValidNamespace(const std::string& s) {
  return !s.empty() && s != "." && s != ".." && s.find('/') == std::string::npos &&
         s.find('\0') == std::string::npos;
}

// runtime.podUsers, runtime.allowRoot and runtime.podUidRange.
Status LoadPodUsers(const std::string& file, const YAML::Node& r, PodUserOptions* out) {
  constexpr int64_t kMaxId = 4294967294;  // (uid_t)-1 means "no change" to the kernel
  if (const YAML::Node a = r["allowRoot"]) {
    if (!a.IsSequence()) return At(file, a, "runtime.allowRoot", "must be a list of namespaces");
    for (const auto& e : a) {
      std::string ns = e.as<std::string>();
      if (!ValidNamespace(ns)) {
        return At(file, e, "runtime.allowRoot", "\"" + ns + "\" is not a namespace name");
      }
      out->allow_root.insert(ns);
    }
  }
  if (const YAML::Node u = r["podUsers"]) {
    if (!u.IsMap()) return At(file, u, "runtime.podUsers", "must be a map of namespace: {uid: N, gid: N}");
    for (const auto& kv : u) {
      std::string ns = kv.first.as<std::string>();
      std::string field = "runtime.podUsers." + ns;
      if (!ValidNamespace(ns)) return At(file, kv.first, field, "\"" + ns + "\" is not a namespace name");
      if (Status s = CheckKeys(file, kv.second, field, {"uid", "gid"}); !s.ok()) return s;
      if (!kv.second["uid"]) return At(file, kv.second, field + ".uid", "is required");
      PodUser pu;
      pu.uid = kv.second["uid"].as<int64_t>();
      pu.gid = kv.second["gid"] ? kv.second["gid"].as<int64_t>() : pu.uid;
      for (const auto& [name, id] : {std::pair<const char*, int64_t>{"uid", pu.uid}, {"gid", pu.gid}}) {
        const YAML::Node n = kv.second[name] ? kv.second[name] : kv.second["uid"];
        if (id < 0 || id > kMaxId) {
          return At(file, n, field + "." + name, "must be between 0 and " + std::to_string(kMaxId));
        }
        if (id == 0 && out->allow_root.count(ns) == 0) {
          return At(file, n, field + "." + name,
                    "0 is root: pods of " + ns + " run as root only when runtime.allowRoot lists " + ns);
        }
      }
      out->configured[ns] = pu;
    }
  }
  if (const YAML::Node g = r["podUidRange"]) {
    std::string text = g.as<std::string>();
    size_t dash = text.find('-');
    int64_t first = -1, last = -1;
    try {
      size_t used = 0;
      if (dash == std::string::npos) throw std::invalid_argument("range");
      first = std::stoll(text.substr(0, dash), &used);
      if (used != dash) throw std::invalid_argument("range");
      last = std::stoll(text.substr(dash + 1), &used);
      if (used != text.size() - dash - 1) throw std::invalid_argument("range");
    } catch (...) {
      first = last = -1;
    }
    if (first < 1 || last < first || last > kMaxId) {
      return At(file, g, "runtime.podUidRange",
                "expected FIRST-LAST with 1 <= FIRST <= LAST <= " + std::to_string(kMaxId) +
                    " (e.g. 61000-61999), got \"" + text + "\"");
    }
    out->range_first = first;
    out->range_last = last;
  }
  return Status::Ok();
}

}  // namespace

Status ParseListen(const std::string& text, std::string* host, int* port) {
  size_t colon = text.rfind(':');
  if (colon == std::string::npos) return InvalidArgument("--listen must be HOST:PORT, got \"" + text + "\"");
  std::string h = text.substr(0, colon);
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  if (h.empty()) return InvalidArgument("--listen needs a host, e.g. 127.0.0.1:7433");
  try {
    size_t used = 0;
    int p = std::stoi(text.substr(colon + 1), &used);
    if (used != text.size() - colon - 1 || p < 0 || p > 65535) throw std::out_of_range("port");
    *port = p;
  } catch (...) {
    return InvalidArgument("--listen has a bad port in \"" + text + "\"");
  }
  *host = h;
  return Status::Ok();
}

Result<int64_t> ParseRetention(const std::string& text) {
  if (text == "never") return int64_t{-1};
  size_t i = 0;
  int64_t n = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9' && n < (int64_t{1} << 40))
    n = n * 10 + (text[i++] - '0');
  const std::string unit = text.substr(i);
  int64_t ms = unit == "s" ? 1000 : unit == "m" ? 60000 : unit == "h" ? 3600000 : unit == "d" ? 86400000 : 0;
  if (i == 0 || ms == 0 || n >= (int64_t{1} << 40)) {
    return InvalidArgument("retention \"" + text +
                           "\": expected a whole number with s, m, h or d (e.g. 24h), or never");
  }
  return n * ms;
}

// `kubernetes:` (Kubernetes mode only).
static Status ParseKubernetes(const std::string& file, const YAML::Node& k, NamespaceQueuesConfig* out) {
  if (Status s = CheckKeys(file, k, "kubernetes", {"namespaceQueues"}); !s.ok()) return s;
  const YAML::Node q = k["namespaceQueues"];
  if (!q) return Status::Ok();
  if (Status s = CheckKeys(file, q, "kubernetes.namespaceQueues",
                           {"teamLabel", "templateLabel", "defaultTemplate", "templates", "resyncSeconds"});
      !s.ok())
    return s;
  const std::string f = "kubernetes.namespaceQueues";
  auto text = [&](const char* key, std::string* dst, bool may_be_empty) -> Status {
    const YAML::Node n = q[key];
    if (!n) return Status::Ok();
    if (!n.IsScalar()) return At(file, n, f + "." + key, "must be a string");
    std::string v = n.as<std::string>();
    if ((!may_be_empty && v.empty()) || !PlainText(v))
      return At(file, n, f + "." + key,
                may_be_empty ? "may not hold spaces" : "must be a label key without spaces");
    *dst = v;
    return Status::Ok();
  };
  if (Status s = text("teamLabel", &out->team_label, false); !s.ok()) return s;
  if (Status s = text("templateLabel", &out->template_label, true); !s.ok()) return s;
  if (Status s = text("defaultTemplate", &out->default_template, true); !s.ok()) return s;
  if (const YAML::Node r = q["resyncSeconds"]) {
    int64_t v = -1;
    try {
      v = r.as<int64_t>();
    } catch (const YAML::Exception&) {
    }
    if (v < 1) return At(file, r, f + ".resyncSeconds", "must be a whole number of seconds, at least 1");
    out->resync_ms = v * 1000;
  }
  const YAML::Node t = q["templates"];
  if (!t) return At(file, q, f + ".templates", "is required: a map of template names to lists of queues");
  if (!t.IsMap() || t.size() == 0)
    return At(file, t, f + ".templates", "must be a map of template names to lists of {name, clusterQueue}");
  for (const auto& kv : t) {
    std::string tname = kv.first.as<std::string>();
    std::string tf = f + ".templates." + tname;
    if (!kv.second.IsSequence() || kv.second.size() == 0)
      return At(file, kv.second, tf, "must be a non-empty list of {name, clusterQueue}");
    std::set<std::string> names;
    auto& entries = out->templates[tname];
    for (size_t i = 0; i < kv.second.size(); ++i) {
      const YAML::Node e = kv.second[i];
      std::string ef = tf + "[" + std::to_string(i) + "]";
      if (Status s = CheckKeys(file, e, ef, {"name", "clusterQueue"}); !s.ok()) return s;
      if (!e["name"] || !e["name"].IsScalar() || e["name"].as<std::string>().empty())
        return At(file, e, ef + ".name", "is required: the LocalQueue's name");
      if (!e["clusterQueue"] || !e["clusterQueue"].IsScalar() || e["clusterQueue"].as<std::string>().empty())
        return At(file, e, ef + ".clusterQueue",
                  "is required: the ClusterQueue ({team} and {namespace} allowed)");
      std::string name = e["name"].as<std::string>();
      if (!names.insert(name).second)
        return At(file, e["name"], ef + ".name",
                  "names a LocalQueue twice in one template: \"" + name + "\"");
      entries.emplace_back(name, e["clusterQueue"].as<std::string>());
    }
  }
  if (!out->default_template.empty() && !out->templates.count(out->default_template))
    return At(file, q["defaultTemplate"], f + ".defaultTemplate",
              "names a template that is not under templates: \"" + out->default_template + "\"");
  return Status::Ok();
}

Status LoadArteldConfig(const std::string& path, ArteldConfig* c) {
  YAML::Node root;
  {
    std::ifstream in(path, std::ios::binary);
    if (!in) return NotFound("cannot read config file " + path);
    std::stringstream text;
    text << in.rdbuf();
    // Bounded like every YAML text Artel reads (manifest/yaml_util.h).
    auto docs = manifest::yaml::LoadDocuments(text.str(), path, manifest::yaml::kLocalFileLimits);
    if (!docs.ok()) return docs.status();
    if (docs->empty()) return Status::Ok();
    root = docs->front();
  }
  if (root.IsNull()) return Status::Ok();
  fs::path base = fs::path(path).parent_path();
  auto resolve = [&](const std::string& p) {
    if (p.empty() || fs::path(p).is_absolute()) return p;
    return (base / p).lexically_normal().string();
  };
  try {
    if (Status s = CheckKeys(
            path, root, "",
            {"listen", "dataDir", "fakeGpus", "tokensFile", "tls", "manifests", "log", "limits", "scheduler",
             "runtime", "http", "hostname", "nodeLabels", "nodeTaints", "nodePools", "kubernetes"});
        !s.ok()) {
      return s;
    }
    if (root["listen"]) {
      if (Status s = ParseListen(root["listen"].as<std::string>(), &c->api.host, &c->api.port); !s.ok()) {
        return At(path, root["listen"], "listen", s.message());
      }
    }
    if (root["dataDir"]) c->daemon.data_dir = resolve(root["dataDir"].as<std::string>());
    if (root["fakeGpus"]) c->daemon.fake_gpus = root["fakeGpus"].as<std::string>();
    if (root["hostname"]) c->daemon.hostname = root["hostname"].as<std::string>();
    if (Status s = ParseInventory(path, root, &c->daemon.inventory); !s.ok()) return s;
    if (root["tokensFile"]) c->tokens_file = resolve(root["tokensFile"].as<std::string>());
    if (const YAML::Node t = root["tls"]) {
      if (Status s = CheckKeys(path, t, "tls", {"certFile", "keyFile"}); !s.ok()) return s;
      if (t["certFile"]) c->api.tls_cert = resolve(t["certFile"].as<std::string>());
      if (t["keyFile"]) c->api.tls_key = resolve(t["keyFile"].as<std::string>());
    }
    if (const YAML::Node m = root["manifests"]) {
      if (!m.IsSequence()) return At(path, m, "manifests", "must be a list of files or directories");
      for (const auto& e : m) c->daemon.manifests.push_back(resolve(e.as<std::string>()));
    }
    if (const YAML::Node l = root["log"]) {
      if (Status s = CheckKeys(path, l, "log", {"format", "level"}); !s.ok()) return s;
      if (l["format"]) {
        std::string f = l["format"].as<std::string>();
        if (f == "json") {
          c->log_format = Logger::Format::kJson;
        } else if (f == "logfmt") {
          c->log_format = Logger::Format::kLogfmt;
        } else {
          return At(path, l["format"], "log.format", "must be logfmt or json");
        }
      }
      if (l["level"]) {
        std::string v = l["level"].as<std::string>();
        if (v == "debug")
          c->log_level = LogLevel::kDebug;
        else if (v == "info")
          c->log_level = LogLevel::kInfo;
        else if (v == "warn")
          c->log_level = LogLevel::kWarn;
        else if (v == "error")
          c->log_level = LogLevel::kError;
        else
          return At(path, l["level"], "log.level", "must be debug, info, warn or error");
      }
    }
    if (const YAML::Node l = root["limits"]) {
      if (Status s = CheckKeys(path, l, "limits", {"maxBodyBytes", "rateLimitQps", "rateLimitBurst"});
          !s.ok())
        return s;
      if (l["maxBodyBytes"]) c->api.max_body_bytes = l["maxBodyBytes"].as<size_t>();
      if (l["rateLimitQps"]) c->api.rate_qps = l["rateLimitQps"].as<double>();
      if (l["rateLimitBurst"]) c->api.rate_burst = l["rateLimitBurst"].as<double>();
    }
    if (const YAML::Node k = root["kubernetes"]) {
      if (Status s = ParseKubernetes(path, k, &c->namespace_queues); !s.ok()) return s;
    }
    if (const YAML::Node s = root["scheduler"]) {
      if (Status st = CheckKeys(
              path, s, "scheduler",
              {"fairSharing", "fairSharingPreemptionStrategies", "intervalMs", "debounceMs", "tickMs"});
          !st.ok()) {
        return st;
      }
      if (s["fairSharing"]) c->daemon.engine.fair_sharing = s["fairSharing"].as<bool>();
      // Kueue's Configuration fairSharing.preemptionStrategies: tried in order.
      if (const YAML::Node st = s["fairSharingPreemptionStrategies"]) {
        const std::string field = "scheduler.fairSharingPreemptionStrategies";
        if (!st.IsSequence() || st.size() == 0 || st.size() > 2)
          return At(path, st, field, "must be a list of one or two strategies");
        std::vector<core::FairSharingStrategy> list;
        for (size_t i = 0; i < st.size(); ++i) {
          std::string name = st[i].IsScalar() ? st[i].as<std::string>() : "";
          core::FairSharingStrategy f;
          if (name == "LessThanOrEqualToFinalShare") {
            f = core::FairSharingStrategy::kLessThanOrEqualToFinalShare;
          } else if (name == "LessThanInitialShare") {
            f = core::FairSharingStrategy::kLessThanInitialShare;
          } else {
            return At(path, st[i], field + "[" + std::to_string(i) + "]",
                      "expected LessThanOrEqualToFinalShare or LessThanInitialShare, got \"" + name + "\"");
          }
          if (std::find(list.begin(), list.end(), f) != list.end())
            return At(path, st[i], field + "[" + std::to_string(i) + "]", "\"" + name + "\" is listed twice");
          list.push_back(f);
        }
        c->daemon.engine.fair_sharing_strategies = std::move(list);
      }
      if (s["intervalMs"]) c->daemon.schedule_interval_ms = s["intervalMs"].as<int64_t>();
      if (s["debounceMs"]) c->daemon.debounce_ms = s["debounceMs"].as<int64_t>();
      if (s["tickMs"]) c->daemon.tick_ms = std::max<int64_t>(1, s["tickMs"].as<int64_t>());
    }
    if (const YAML::Node r = root["runtime"]) {
      if (Status s = CheckKeys(path, r, "runtime",
                               {"defaultGracePeriodSeconds", "cgroupRoot", "stopWorkloadsOnExit",
                                "finishedRetention", "podUsers", "allowRoot", "podUidRange", "workDir"});
          !s.ok()) {
        return s;
      }
      if (r["defaultGracePeriodSeconds"])
        c->daemon.default_grace_ms = r["defaultGracePeriodSeconds"].as<int64_t>() * 1000;
      if (r["cgroupRoot"]) c->daemon.cgroup_root = r["cgroupRoot"].as<std::string>();
      if (r["stopWorkloadsOnExit"]) c->daemon.stop_workloads_on_exit = r["stopWorkloadsOnExit"].as<bool>();
      if (r["finishedRetention"]) {
        Result<int64_t> ms = ParseRetention(r["finishedRetention"].as<std::string>());
        if (!ms.ok())
          return At(path, r["finishedRetention"], "runtime.finishedRetention", ms.status().message());
        c->daemon.finished_retention_ms = *ms;
      }
      if (Status st = LoadPodUsers(path, r, &c->daemon.pod_users); !st.ok()) return st;
      if (r["workDir"]) c->daemon.work_dir = resolve(r["workDir"].as<std::string>());
    }
    if (const YAML::Node h = root["http"]) {
      if (Status s =
              CheckKeys(path, h, "http",
                        {"threads", "headerTimeoutMs", "idleTimeoutMs", "bodyTimeoutMs", "writeTimeoutMs",
                         "maxConnections", "maxConnectionsPerPeer", "maxStreams", "maxHeaderBytes"});
          !s.ok())
        return s;
      if (h["threads"]) c->api.threads = h["threads"].as<int>();
      auto positive = [&](const char* key, int* out) -> Status {
        if (!h[key]) return Status::Ok();
        int v = h[key].as<int>();
        if (v <= 0) return At(path, h[key], std::string("http.") + key, "must be a positive whole number");
        *out = v;
        return Status::Ok();
      };
      for (auto [key, out] : std::initializer_list<std::pair<const char*, int*>>{
               {"headerTimeoutMs", &c->api.header_timeout_ms},
               {"idleTimeoutMs", &c->api.idle_timeout_ms},
               {"bodyTimeoutMs", &c->api.body_timeout_ms},
               {"writeTimeoutMs", &c->api.write_timeout_ms},
               {"maxConnections", &c->api.max_connections},
               {"maxConnectionsPerPeer", &c->api.max_connections_per_peer},
               {"maxStreams", &c->api.max_streams}}) {
        if (Status s = positive(key, out); !s.ok()) return s;
      }
      if (h["maxHeaderBytes"]) {
        int v = h["maxHeaderBytes"].as<int>();
        if (v < 1024) return At(path, h["maxHeaderBytes"], "http.maxHeaderBytes", "must be at least 1024");
        c->api.max_header_bytes = static_cast<size_t>(v);
      }
    }
  } catch (const YAML::Exception& e) {
    Status s = InvalidArgument("bad value: " + e.msg);
    SourcePos p;
    p.file = path;
    p.line = e.mark.line + 1;
    p.column = e.mark.column + 1;
    s.WithPos(p);
    return s;
  }
  return Status::Ok();
}

}  // namespace artel::server
