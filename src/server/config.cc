#include "server/config.h"

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
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
  while (i < text.size() && text[i] >= '0' && text[i] <= '9' && n < (int64_t{1} << 40)) n = n * 10 + (text[i++] - '0');
  const std::string unit = text.substr(i);
  int64_t ms = unit == "s" ? 1000 : unit == "m" ? 60000 : unit == "h" ? 3600000 : unit == "d" ? 86400000 : 0;
  if (i == 0 || ms == 0 || n >= (int64_t{1} << 40)) {
    return InvalidArgument("retention \"" + text + "\": expected a whole number with s, m, h or d (e.g. 24h), or never");
  }
  return n * ms;
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
    if (Status s = CheckKeys(path, root, "",
                             {"listen", "dataDir", "fakeGpus", "tokensFile", "tls", "manifests", "log",
                              "limits", "scheduler", "runtime", "http"});
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
    if (const YAML::Node s = root["scheduler"]) {
      if (Status st = CheckKeys(path, s, "scheduler", {"fairSharing", "intervalMs", "debounceMs", "tickMs"});
          !st.ok()) {
        return st;
      }
      if (s["fairSharing"]) c->daemon.engine.fair_sharing = s["fairSharing"].as<bool>();
      if (s["intervalMs"]) c->daemon.schedule_interval_ms = s["intervalMs"].as<int64_t>();
      if (s["debounceMs"]) c->daemon.debounce_ms = s["debounceMs"].as<int64_t>();
      if (s["tickMs"]) c->daemon.tick_ms = std::max<int64_t>(1, s["tickMs"].as<int64_t>());
    }
    if (const YAML::Node r = root["runtime"]) {
      if (Status s = CheckKeys(path, r, "runtime",
                               {"defaultGracePeriodSeconds", "cgroupRoot", "stopWorkloadsOnExit",
                                "finishedRetention"});
          !s.ok()) {
        return s;
      }
      if (r["defaultGracePeriodSeconds"])
        c->daemon.default_grace_ms = r["defaultGracePeriodSeconds"].as<int64_t>() * 1000;
      if (r["cgroupRoot"]) c->daemon.cgroup_root = r["cgroupRoot"].as<std::string>();
      if (r["stopWorkloadsOnExit"]) c->daemon.stop_workloads_on_exit = r["stopWorkloadsOnExit"].as<bool>();
      if (r["finishedRetention"]) {
        Result<int64_t> ms = ParseRetention(r["finishedRetention"].as<std::string>());
        if (!ms.ok()) return At(path, r["finishedRetention"], "runtime.finishedRetention", ms.status().message());
        c->daemon.finished_retention_ms = *ms;
      }
    }
    if (const YAML::Node h = root["http"]) {
      if (Status s = CheckKeys(path, h, "http", {"threads"}); !s.ok()) return s;
      if (h["threads"]) c->api.threads = h["threads"].as<int>();
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
