#include "cli/client.h"

#include <httplib.h>
#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#include "manifest/yaml_util.h"

namespace artel::cli {

void ResolveClientOptions(ClientOptions* o) {
  auto env = [](const char* name) -> std::string {
    const char* v = std::getenv(name);
    return v ? v : "";
  };
  if (o->server.empty()) o->server = env("ARTEL_SERVER");
  if (o->token.empty()) o->token = env("ARTEL_TOKEN");
  if (o->ns.empty()) o->ns = env("ARTEL_NAMESPACE");
  std::string home = env("HOME");
  std::string cfg = env("ARTEL_CONFIG");
  if (cfg.empty() && !home.empty()) cfg = home + "/.config/artel/config.yaml";
  if (!cfg.empty() && (o->server.empty() || o->token.empty() || o->ns.empty())) {
    try {
      std::ifstream in(cfg, std::ios::binary);
      std::stringstream text;
      if (in) text << in.rdbuf();
      // Bounded like every YAML text Artel reads (manifest/yaml_util.h).
      auto docs = manifest::yaml::LoadDocuments(text.str(), cfg, manifest::yaml::kLocalFileLimits);
      const YAML::Node n = docs.ok() && !docs->empty() ? docs->front() : YAML::Node();
      if (o->server.empty() && n["server"]) o->server = n["server"].as<std::string>();
      if (o->token.empty() && n["token"]) o->token = n["token"].as<std::string>();
      if (o->ns.empty() && n["namespace"]) o->ns = n["namespace"].as<std::string>();
      if (o->ca_file.empty() && n["caFile"]) o->ca_file = n["caFile"].as<std::string>();
    } catch (const YAML::Exception&) {
      // A missing or unreadable config file is the same as none.
    }
  }
  if (o->server.empty()) o->server = "http://127.0.0.1:7433";
  if (o->server.find("://") == std::string::npos) o->server = "http://" + o->server;
  if (o->ns.empty()) o->ns = "default";
}

nlohmann::json Response::json() const {
  auto j = nlohmann::json::parse(body, nullptr, false);
  return j.is_discarded() ? nlohmann::json() : j;
}

Response Request(const ClientOptions& o, const std::string& method, const std::string& path,
                 const std::string& body, const std::string& content_type) {
  Response out;
  httplib::Client cli(o.server);
  if (!cli.is_valid()) {
    out.error = "invalid server address " + o.server;
    return out;
  }
  cli.set_connection_timeout(5, 0);
  cli.set_read_timeout(60, 0);
  cli.set_keep_alive(false);
#ifdef CPPHTTPLIB_OPENSSL_SUPPORT
  if (!o.ca_file.empty()) cli.set_ca_cert_path(o.ca_file.c_str());
  if (o.insecure) cli.enable_server_certificate_verification(false);
#endif
  httplib::Headers headers;
  if (!o.token.empty()) headers.emplace("Authorization", "Bearer " + o.token);
  httplib::Result res(nullptr, httplib::Error::Unknown);
  if (method == "GET") {
    res = cli.Get(path, headers);
  } else if (method == "POST") {
    res = cli.Post(path, headers, body, content_type);
  } else if (method == "DELETE") {
    res = cli.Delete(path, headers);
  }
  if (!res) {
    out.error = "cannot reach arteld at " + o.server + ": " + httplib::to_string(res.error());
    return out;
  }
  out.status = res->status;
  out.body = res->body;
  return out;
}

int Report(const Response& r) {
  if (r.status == 0) {
    std::cerr << "error: " << r.error << "\n";
    return kExitUnreachable;
  }
  if (r.status >= 200 && r.status < 300) return kExitOk;
  nlohmann::json j = r.json();
  std::string code = j.is_object() ? j.value("code", "") : "";
  std::string msg = j.is_object() ? j.value("message", r.body) : r.body;
  std::cerr << "error: " << (code.empty() ? "HTTP " + std::to_string(r.status) : code) << ": " << msg;
  if (j.is_object() && j.contains("field")) std::cerr << " (field " << j["field"].get<std::string>() << ")";
  std::cerr << "\n";
  if (r.status == 404) return kExitNotFound;
  if (r.status == 401 || r.status == 403) return kExitDenied;
  return kExitFailed;
}

std::string UrlEncode(const std::string& s) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
    }
  }
  return out;
}

}  // namespace artel::cli
