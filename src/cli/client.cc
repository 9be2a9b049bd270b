#include "cli/client.h"

#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cli/config.h"
#include "cli/http.h"

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
  http::Options opts;
  opts.ca_file = o.ca_file;
  opts.insecure = o.insecure;
  std::vector<std::pair<std::string, std::string>> headers;
  if (!o.token.empty()) headers.emplace_back("Authorization", "Bearer " + o.token);
  if (method == "POST") headers.emplace_back("Content-Type", content_type);
  http::Reply r = http::Call(o.server, method, path, headers, method == "POST" ? body : std::string(), opts);
  if (r.error != http::Error::kNone) {
    std::string why;
    switch (r.error) {
      case http::Error::kAddress:
        out.error = "invalid server address " + o.server + ": " + r.detail;
        return out;
      case http::Error::kConnection:
        why =
            r.detail + " (is arteld running there? --server, ARTEL_SERVER or the context choose the address)";
        break;
      case http::Error::kIo: why = "the connection broke while talking to it: " + r.detail; break;
      case http::Error::kTls:
        why = "TLS handshake failed: " + r.detail +
              " (--cacert FILE, or --insecure-skip-tls-verify for a test server)";
        break;
      default: why = "its answer is not HTTP: " + r.detail;
    }
    out.error = "cannot reach arteld at " + o.server + ": " + why;
    return out;
  }
  out.status = r.status;
  out.body = std::move(r.body);
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
