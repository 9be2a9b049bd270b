#include "kube/kubeconfig.h"

#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

namespace artel::kube {
namespace {

namespace fs = std::filesystem;

bool ReadWholeFile(const std::string& path, std::string* out, std::string* why) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *why = "cannot read " + path + ": " + std::strerror(errno);
    return false;
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  return true;
}

bool Base64Decode(const std::string& in, std::string* out) {
  auto val = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+' || c == '-') return 62;
    if (c == '/' || c == '_') return 63;
    return -1;
  };
  out->clear();
  uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    if (c == '=' || c == '\n' || c == '\r' || c == ' ' || c == '\t') continue;
    int v = val(c);
    if (v < 0) return false;
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out->push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  return true;
}

struct Entry {
  YAML::Node node;    // the inner cluster/user/context map
  std::string file;   // the kubeconfig that defined it
  std::string where;  // "clusters[name=x].cluster"
};

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ' || s.back() == '\t'))
    s.pop_back();
  size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n')) ++i;
  return s.substr(i);
}

Status Bad(const std::string& file, const std::string& field, const std::string& msg) {
  Status s = InvalidArgument("kubeconfig " + file + ": " + field + ": " + msg);
  s.WithField(field);
  s.WithPos(SourcePos{file, 0, 0});
  return s;
}

// A string field of `e`; "" when absent. Error when present but not a scalar.
Result<std::string> Str(const Entry& e, const std::string& key) {
  YAML::Node v = e.node[key];
  if (!v || v.IsNull()) return std::string();
  if (!v.IsScalar()) return Bad(e.file, e.where + "." + key, "expected a string");
  return v.as<std::string>();
}

// A PEM from `key-data` (base64) or `key` (a file, relative to the kubeconfig).
Result<std::string> DataOrFile(const Entry& e, const std::string& file_key, const std::string& data_key) {
  auto data = Str(e, data_key);
  if (!data.ok()) return data.status();
  if (!data->empty()) {
    std::string out;
    if (!Base64Decode(*data, &out)) return Bad(e.file, e.where + "." + data_key, "not valid base64");
    return out;
  }
  auto path = Str(e, file_key);
  if (!path.ok()) return path.status();
  if (path->empty()) return std::string();
  fs::path p(*path);
  if (p.is_relative()) p = fs::path(e.file).parent_path() / p;
  std::string out, why;
  if (!ReadWholeFile(p.string(), &out, &why)) return Bad(e.file, e.where + "." + file_key, why);
  return out;
}

Result<std::vector<std::string>> KubeconfigFiles(const std::string& path) {
  std::vector<std::string> files;
  std::string list = path;
  if (list.empty()) {
    const char* env = std::getenv("KUBECONFIG");
    if (env && *env) list = env;
  }
  if (list.empty()) {
    const char* home = std::getenv("HOME");
    if (!home || !*home) return InvalidArgument("no kubeconfig: neither KUBECONFIG nor HOME is set");
    return std::vector<std::string>{std::string(home) + "/.kube/config"};
  }
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ':'))
    if (!item.empty()) files.push_back(item);
  if (files.empty()) return InvalidArgument("no kubeconfig: the KUBECONFIG list is empty");
  return files;
}

}  // namespace

Result<ClientConfig> LoadKubeconfig(const std::string& path, const std::string& context) {
  auto files = KubeconfigFiles(path);
  if (!files.ok()) return files.status();
  std::map<std::string, Entry> clusters, users, contexts;
  std::string current, current_file;
  int read = 0;
  for (const std::string& file : *files) {
    std::string text, why;
    if (!ReadWholeFile(file, &text, &why)) {
      // kubectl skips missing files of a KUBECONFIG list; a single file must exist.
      if (files->size() > 1 && !fs::exists(file)) continue;
      return InvalidArgument("kubeconfig " + file + ": " + why);
    }
    ++read;
    YAML::Node root;
    try {
      root = YAML::Load(text);
    } catch (const YAML::Exception& ex) {
      Status s =
          InvalidArgument("kubeconfig " + file + ":" + std::to_string(ex.mark.line + 1) + ": " + ex.msg);
      s.WithPos(SourcePos{file, ex.mark.line + 1, ex.mark.column + 1});
      return s;
    }
    if (!root || root.IsNull()) continue;
    if (!root.IsMap()) return Bad(file, "(top level)", "expected a mapping (apiVersion: v1, kind: Config)");
    auto collect = [&](const char* list, const char* inner, std::map<std::string, Entry>* into) -> Status {
      YAML::Node seq = root[list];
      if (!seq || seq.IsNull()) return Status::Ok();
      if (!seq.IsSequence()) return Bad(file, list, "expected a list");
      for (size_t i = 0; i < seq.size(); ++i) {
        YAML::Node item = seq[i];
        std::string at = std::string(list) + "[" + std::to_string(i) + "]";
        if (!item.IsMap() || !item["name"] || !item["name"].IsScalar())
          return Bad(file, at + ".name", "expected a name");
        auto name = item["name"].as<std::string>();
        YAML::Node body = item[inner];
        if (body && !body.IsNull() && !body.IsMap()) return Bad(file, at + "." + inner, "expected a mapping");
        if (!body || body.IsNull()) body = YAML::Node(YAML::NodeType::Map);
        into->emplace(name, Entry{body, file, std::string(list) + "[name=" + name + "]." + inner});
      }
      return Status::Ok();
    };
    Status st = collect("clusters", "cluster", &clusters);
    if (st.ok()) st = collect("users", "user", &users);
    if (st.ok()) st = collect("contexts", "context", &contexts);
    if (!st.ok()) return st;
    if (current.empty() && root["current-context"] && root["current-context"].IsScalar()) {
      current = root["current-context"].as<std::string>();
      current_file = file;
    }
  }
  std::string all = (*files)[0];
  for (size_t i = 1; i < files->size(); ++i) all += ":" + (*files)[i];
  if (read == 0) return InvalidArgument("kubeconfig " + all + ": none of these files exists");
  std::string ctx_name = context.empty() ? current : context;
  if (ctx_name.empty()) return Bad(all, "current-context", "not set (and no context was named)");
  auto ctx = contexts.find(ctx_name);
  if (ctx == contexts.end())
    return Bad(context.empty() ? current_file : all, context.empty() ? "current-context" : "contexts",
               "no context named \"" + ctx_name + "\"");
  auto cluster_name = Str(ctx->second, "cluster");
  if (!cluster_name.ok()) return cluster_name.status();
  auto user_name = Str(ctx->second, "user");
  if (!user_name.ok()) return user_name.status();
  auto ns = Str(ctx->second, "namespace");
  if (!ns.ok()) return ns.status();
  auto cl = clusters.find(*cluster_name);
  if (cluster_name->empty() || cl == clusters.end())
    return Bad(ctx->second.file, ctx->second.where + ".cluster",
               "no cluster named \"" + *cluster_name + "\"");

  ClientConfig cfg;
  if (!ns->empty()) cfg.default_namespace = *ns;
  const Entry& c = cl->second;
  auto server = Str(c, "server");
  if (!server.ok()) return server.status();
  if (server->empty()) return Bad(c.file, c.where + ".server", "missing (https://host:port)");
  if (server->rfind("https://", 0) != 0 && server->rfind("http://", 0) != 0)
    return Bad(c.file, c.where + ".server", "expected an https:// URL, got \"" + *server + "\"");
  cfg.server = *server;
  auto ca = DataOrFile(c, "certificate-authority", "certificate-authority-data");
  if (!ca.ok()) return ca.status();
  cfg.ca_pem = *ca;
  if (YAML::Node v = c.node["insecure-skip-tls-verify"]; v && !v.IsNull()) {
    try {
      cfg.insecure_skip_tls_verify = v.as<bool>();
    } catch (const YAML::Exception&) {
      return Bad(c.file, c.where + ".insecure-skip-tls-verify", "expected true or false");
    }
  }
  for (const char* unsupported : {"proxy-url"}) {
    if (c.node[unsupported])
      return Bad(c.file, c.where + "." + unsupported, "not supported by Artel's client");
  }

  if (!user_name->empty()) {
    auto us = users.find(*user_name);
    if (us == users.end())
      return Bad(ctx->second.file, ctx->second.where + ".user", "no user named \"" + *user_name + "\"");
    const Entry& u = us->second;
    for (const char* unsupported : {"exec", "auth-provider", "username", "password"}) {
      if (u.node[unsupported])
        return Bad(u.file, u.where + "." + unsupported,
                   "not supported by Artel's client (use client certificates or a token)");
    }
    auto cert = DataOrFile(u, "client-certificate", "client-certificate-data");
    if (!cert.ok()) return cert.status();
    auto key = DataOrFile(u, "client-key", "client-key-data");
    if (!key.ok()) return key.status();
    if (cert->empty() != key->empty())
      return Bad(u.file, u.where + (cert->empty() ? ".client-certificate" : ".client-key"),
                 "a client certificate needs both client-certificate(-data) and client-key(-data)");
    cfg.client_cert_pem = *cert;
    cfg.client_key_pem = *key;
    auto token = Str(u, "token");
    if (!token.ok()) return token.status();
    cfg.bearer_token = *token;
    auto token_file = Str(u, "tokenFile");
    if (!token_file.ok()) return token_file.status();
    if (!token_file->empty()) {
      fs::path p(*token_file);
      if (p.is_relative()) p = fs::path(u.file).parent_path() / p;
      std::string t, why;
      if (!ReadWholeFile(p.string(), &t, &why)) return Bad(u.file, u.where + ".tokenFile", why);
      if (cfg.bearer_token.empty()) cfg.token_file = p.string();
    }
  }
  return cfg;
}

Result<ClientConfig> InClusterConfigFrom(const std::string& sa_dir, const std::string& host,
                                         const std::string& port) {
  if (host.empty() || port.empty())
    return FailedPrecondition(
        "not running in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set");
  ClientConfig cfg;
  std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;  // IPv6
  cfg.server = "https://" + h + ":" + port;
  std::string token, why;
  std::string token_path = sa_dir + "/token";
  if (!ReadWholeFile(token_path, &token, &why))
    return FailedPrecondition("in-cluster config: service-account token: " + why);
  if (Trim(token).empty())
    return FailedPrecondition("in-cluster config: service-account token " + token_path + " is empty");
  cfg.token_file = token_path;
  if (!ReadWholeFile(sa_dir + "/ca.crt", &cfg.ca_pem, &why))
    return FailedPrecondition("in-cluster config: service-account CA: " + why);
  std::string ns;
  if (ReadWholeFile(sa_dir + "/namespace", &ns, &why) && !Trim(ns).empty()) cfg.default_namespace = Trim(ns);
  return cfg;
}

Result<ClientConfig> InClusterConfig() {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  return InClusterConfigFrom("/var/run/secrets/kubernetes.io/serviceaccount", host ? host : "",
                             port ? port : "");
}

}  // namespace artel::kube
