#include "cli/config.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "manifest/yaml_util.h"

namespace artel::cli {

namespace fs = std::filesystem;

Context* ConfigFile::Find(const std::string& name) {
  for (auto& c : contexts) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

std::string ConfigPath() {
  auto env = [](const char* name) -> std::string {
    const char* v = std::getenv(name);
    return v ? v : "";
  };
  if (std::string p = env("ARTEL_CONFIG"); !p.empty()) return p;
  std::string base = env("XDG_CONFIG_HOME");
  if (base.empty()) {
    std::string home = env("HOME");
    if (home.empty()) return "";
    base = home + "/.config";
  }
  std::string path = base + "/artel/config";
  std::error_code ec;
  // The flat file of earlier versions, when there is no new one.
  if (!fs::exists(path, ec) && fs::exists(path + ".yaml", ec)) return path + ".yaml";
  return path;
}

namespace {

std::string Where(const std::string& path, const YAML::Node& n) {
  return path + ":" + std::to_string(n.Mark().line + 1);
}

bool ReadString(const std::string& path, const YAML::Node& map, const std::string& prefix, const char* key,
                std::string* out, std::string* err) {
  YAML::Node v = map[key];
  if (!v) return true;
  if (!v.IsScalar()) {
    *err = Where(path, v) + ": " + prefix + key + ": expected a string";
    return false;
  }
  *out = v.as<std::string>();
  return true;
}

bool ReadContext(const std::string& path, const YAML::Node& n, const std::string& prefix, Context* c,
                 bool top_level, std::string* err) {
  static const char* kKeys[] = {
      "name", "server", "token", "tokenFile", "caFile", "namespace", "insecureSkipTlsVerify"};
  for (auto it = n.begin(); it != n.end(); ++it) {
    std::string k = it->first.as<std::string>();
    bool known = false;
    for (const char* key : kKeys) known |= k == key;
    if (top_level) known |= k == "apiVersion" || k == "kind" || k == "currentContext" || k == "contexts";
    if (!known) {
      *err = Where(path, it->first) + ": " + prefix + k +
             ": unknown field (a context has name, server, token, tokenFile, caFile, namespace, "
             "insecureSkipTlsVerify)";
      return false;
    }
  }
  if (!ReadString(path, n, prefix, "name", &c->name, err) ||
      !ReadString(path, n, prefix, "server", &c->server, err) ||
      !ReadString(path, n, prefix, "token", &c->token, err) ||
      !ReadString(path, n, prefix, "tokenFile", &c->token_file, err) ||
      !ReadString(path, n, prefix, "caFile", &c->ca_file, err) ||
      !ReadString(path, n, prefix, "namespace", &c->ns, err)) {
    return false;
  }
  if (YAML::Node v = n["insecureSkipTlsVerify"]) {
    std::string s = v.IsScalar() ? v.as<std::string>() : "";
    if (s != "true" && s != "false") {
      *err = Where(path, v) + ": " + prefix + "insecureSkipTlsVerify: expected true or false";
      return false;
    }
    c->insecure = s == "true";
  }
  return true;
}

}  // namespace

bool LoadConfig(const std::string& path, ConfigFile* out, std::string* err) {
  out->path = path;
  out->exists = false;
  out->contexts.clear();
  out->current.clear();
  if (path.empty()) return true;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::error_code ec;
    if (!fs::exists(path, ec)) return true;
    *err = path + ": cannot read: " + std::strerror(errno);
    return false;
  }
  out->exists = true;
  std::stringstream text;
  text << in.rdbuf();
  auto docs = manifest::yaml::LoadDocuments(text.str(), path, manifest::yaml::kLocalFileLimits);
  if (!docs.ok()) {
    *err = docs.status().ToString();
    return false;
  }
  if (docs->empty() || !docs->front() || docs->front().IsNull()) return true;
  const YAML::Node n = docs->front();
  try {
    if (!n.IsMap()) {
      *err = Where(path, n) + ": expected a map with currentContext and contexts";
      return false;
    }
    if (YAML::Node k = n["kind"]; k && (!k.IsScalar() || k.as<std::string>() != "Config")) {
      *err = Where(path, k) + ": kind: expected Config";
      return false;
    }
    if (!ReadString(path, n, "", "currentContext", &out->current, err)) return false;
    if (YAML::Node list = n["contexts"]) {
      if (!list.IsSequence()) {
        *err = Where(path, list) + ": contexts: expected a list of contexts";
        return false;
      }
      for (size_t i = 0; i < list.size(); ++i) {
        std::string prefix = "contexts[" + std::to_string(i) + "].";
        if (!list[i].IsMap()) {
          *err = Where(path, list[i]) + ": " + prefix.substr(0, prefix.size() - 1) + ": expected a map";
          return false;
        }
        Context c;
        if (!ReadContext(path, list[i], prefix, &c, false, err)) return false;
        if (c.name.empty()) {
          *err = Where(path, list[i]) + ": " + prefix + "name: a context needs a name";
          return false;
        }
        if (out->Find(c.name)) {
          *err = Where(path, list[i]) + ": " + prefix + "name: context " + c.name + " is defined twice";
          return false;
        }
        out->contexts.push_back(c);
      }
    }
    // The flat form (server/token/namespace/caFile at the top): one context.
    Context flat;
    if (!ReadContext(path, n, "", &flat, true, err)) return false;
    if (!flat.server.empty() || !flat.token.empty() || !flat.token_file.empty() || !flat.ns.empty() ||
        !flat.ca_file.empty()) {
      if (!out->contexts.empty()) {
        *err = path + ": server, token, namespace and caFile belong in a context when the file has contexts";
        return false;
      }
      flat.name = "default";
      out->contexts.push_back(flat);
      if (out->current.empty()) out->current = "default";
    }
    if (!out->current.empty() && !out->Find(out->current)) {
      *err = Where(path, n["currentContext"]) + ": currentContext: no context named " + out->current;
      return false;
    }
  } catch (const YAML::Exception& e) {
    *err = path + ": " + e.what();
    return false;
  }
  return true;
}

std::string ConfigYaml(const ConfigFile& cfg, bool raw) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "apiVersion" << YAML::Value << "artel.dev/v1alpha1";
  out << YAML::Key << "kind" << YAML::Value << "Config";
  out << YAML::Key << "currentContext" << YAML::Value << cfg.current;
  out << YAML::Key << "contexts" << YAML::Value << YAML::BeginSeq;
  for (const auto& c : cfg.contexts) {
    out << YAML::BeginMap;
    out << YAML::Key << "name" << YAML::Value << c.name;
    if (!c.server.empty()) out << YAML::Key << "server" << YAML::Value << c.server;
    if (!c.token.empty()) out << YAML::Key << "token" << YAML::Value << (raw ? c.token : "REDACTED");
    if (!c.token_file.empty()) out << YAML::Key << "tokenFile" << YAML::Value << c.token_file;
    if (!c.ca_file.empty()) out << YAML::Key << "caFile" << YAML::Value << c.ca_file;
    if (!c.ns.empty()) out << YAML::Key << "namespace" << YAML::Value << c.ns;
    if (c.insecure) out << YAML::Key << "insecureSkipTlsVerify" << YAML::Value << true;
    out << YAML::EndMap;
  }
  out << YAML::EndSeq << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

bool SaveConfig(const ConfigFile& cfg, std::string* err) {
  if (cfg.path.empty()) {
    *err = "no configuration path: set HOME, XDG_CONFIG_HOME or ARTEL_CONFIG";
    return false;
  }
  fs::path p(cfg.path);
  std::error_code ec;
  if (p.has_parent_path() && !fs::exists(p.parent_path(), ec)) {
    fs::create_directories(p.parent_path(), ec);
    if (ec) {
      *err = p.parent_path().string() + ": cannot create: " + ec.message();
      return false;
    }
    ::chmod(p.parent_path().c_str(), 0700);
  }
  std::string text = ConfigYaml(cfg, true);
  std::string tmp = cfg.path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    *err = tmp + ": cannot write: " + std::strerror(errno);
    return false;
  }
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) && ::fsync(fd) == 0;
  ok = ::close(fd) == 0 && ok;
  if (!ok || ::rename(tmp.c_str(), cfg.path.c_str()) != 0) {
    *err = cfg.path + ": cannot write: " + std::strerror(errno);
    ::unlink(tmp.c_str());
    return false;
  }
  return true;
}

std::string PermissionWarning(const std::string& path, const std::string& what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "";
  if ((st.st_mode & 077) == 0) return "";
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
  return "warning: " + what + " " + path + " is readable by others (mode " + mode +
         "); it holds a secret: chmod 600 " + path;
}

bool ReadTokenFile(const std::string& path, std::string* token, std::string* warning, std::string* err) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *err = "token file " + path + ": cannot read: " + std::strerror(errno);
    return false;
  }
  std::string line;
  std::getline(in, line);
  size_t b = line.find_first_not_of(" \t\r");
  size_t e = line.find_last_not_of(" \t\r");
  *token = b == std::string::npos ? "" : line.substr(b, e - b + 1);
  if (token->empty()) {
    *err = "token file " + path + " is empty";
    return false;
  }
  *warning = PermissionWarning(path, "token file");
  return true;
}

}  // namespace artel::cli
