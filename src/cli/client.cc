#include "cli/client.h"

#include <httplib.h>
#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cli/config.h"

namespace artel::cli {

ClientOptions& GlobalFlags() {
  static ClientOptions flags;
  return flags;
}

void ResolveClientOptions(ClientOptions* o, bool need_namespace) {
  auto env = [](const char* name) -> std::string {
    const char* v = std::getenv(name);
    return v ? v : "";
  };
  auto fail = [](const std::string& msg) {
    std::cerr << "error: " << msg << "\n";
    std::exit(kExitUsage);
  };
  const ClientOptions& f = GlobalFlags();
  auto pick = [](std::string* dst, const std::string& v) {
    if (dst->empty()) *dst = v;
  };
  // 1. flags (a verb's own flag, if it has one, is already in *o).
  pick(&o->server, f.server);
  pick(&o->token, f.token);
  pick(&o->token_file, f.token_file);
  pick(&o->ns, f.ns);
  pick(&o->ca_file, f.ca_file);
  pick(&o->context, f.context);
  o->insecure = o->insecure || f.insecure;
  // 2. environment.
  pick(&o->server, env("ARTEL_SERVER"));
  if (o->token.empty() && o->token_file.empty()) {
    pick(&o->token, env("ARTEL_TOKEN"));
    if (o->token.empty()) pick(&o->token_file, env("ARTEL_TOKEN_FILE"));
  }
  pick(&o->ns, env("ARTEL_NAMESPACE"));
  pick(&o->context, env("ARTEL_CONTEXT"));
  // 3. the context of the configuration file.
  ConfigFile cfg;
  std::string err;
  if (!LoadConfig(ConfigPath(), &cfg, &err)) fail(err);
  std::string ctx_name = o->context.empty() ? cfg.current : o->context;
  if (!ctx_name.empty()) {
    const Context* ctx = cfg.Find(ctx_name);
    if (ctx == nullptr) {
      fail("no context named " + ctx_name + " in " + cfg.path + " (artel config get-contexts lists them)");
    }
    pick(&o->server, ctx->server);
    if (o->token.empty() && o->token_file.empty()) {
      if (!ctx->token.empty()) {
        o->token = ctx->token;
        if (std::string w = PermissionWarning(cfg.path, "configuration file"); !w.empty())
          std::cerr << w << "\n";
      } else {
        o->token_file = ctx->token_file;
      }
    }
    pick(&o->ns, ctx->ns);
    pick(&o->ca_file, ctx->ca_file);
    o->insecure = o->insecure || ctx->insecure;
  }
  if (o->token.empty() && !o->token_file.empty()) {
    std::string warning;
    if (!ReadTokenFile(o->token_file, &o->token, &warning, &err)) fail(err);
    if (!warning.empty()) std::cerr << warning << "\n";
  }
  // 4. defaults.
  if (o->server.empty()) o->server = "http://127.0.0.1:7433";
  if (o->server.find("://") == std::string::npos) o->server = "http://" + o->server;
  if (o->ns.empty() && need_namespace && !o->token.empty()) {
    // A tenant may act only in its namespaces: its first one, not "default".
    Response r = Request(*o, "GET", "/api/v1/whoami");
    nlohmann::json j = r.status == 200 ? r.json() : nlohmann::json();
    if (j.is_object() && j.value("role", "") == "tenant" && j["namespaces"].is_array() &&
        !j["namespaces"].empty() && j["namespaces"][0].is_string()) {
      o->ns = j["namespaces"][0].get<std::string>();
    }
  }
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
    std::string why;
    switch (res.error()) {
      case httplib::Error::Connection:
      case httplib::Error::ConnectionTimeout:
        why =
            "connection refused or timed out (is arteld running there? --server, ARTEL_SERVER or the context "
            "choose the address)";
        break;
      case httplib::Error::Read:
      case httplib::Error::Write: why = "the connection was closed while talking to it"; break;
      case httplib::Error::SSLConnection:
      case httplib::Error::SSLServerVerification:
        why = "TLS handshake failed (--cacert FILE, or --insecure-skip-tls-verify for a test server)";
        break;
      default: why = httplib::to_string(res.error());
    }
    out.error = "cannot reach arteld at " + o.server + ": " + why;
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
  if (r.status == 401) {
    std::cerr << "hint: give a token with --token, --token-file, ARTEL_TOKEN, or a context "
                 "(artel config set-context NAME --token-file FILE)\n";
  }
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
