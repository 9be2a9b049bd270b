#include "server/auth.h"

#include <yaml-cpp/yaml.h>

#include <cctype>
#include <fstream>
#include <sstream>

#include "manifest/yaml_util.h"

namespace artel::server {
namespace {

bool ConstantTimeEquals(std::string_view a, std::string_view b) {
  // The length is not secret; the contents are.
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

Status Bad(const std::string& source, const YAML::Node& n, const std::string& field, const std::string& msg) {
  Status s = InvalidArgument(msg);
  s.WithField(field);
  SourcePos pos;
  pos.file = source;
  pos.line = n.Mark().line + 1;
  pos.column = n.Mark().column + 1;
  s.WithPos(pos);
  return s;
}

}  // namespace

const char* RoleName(Role r) {
  switch (r) {
    case Role::kAdmin: return "admin";
    case Role::kTenant: return "tenant";
    case Role::kMetrics: return "metrics";
  }
  return "tenant";
}

Result<std::unique_ptr<TokenTable>> TokenTable::Load(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFound("cannot read tokens file " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return Parse(ss.str(), path);
}

Result<std::unique_ptr<TokenTable>> TokenTable::Parse(std::string_view yaml_text, const std::string& source) {
  auto table = std::make_unique<TokenTable>();
  try {
    // Bounded like every YAML text Artel reads (manifest/yaml_util.h).
    auto docs = manifest::yaml::LoadDocuments(yaml_text, source, manifest::yaml::kLocalFileLimits);
    if (!docs.ok()) return docs.status();
    YAML::Node root = docs->empty() ? YAML::Node() : docs->front();
    if (!root.IsMap() || !root["tokens"] || !root["tokens"].IsSequence()) {
      return Bad(source, root, "tokens", "the tokens file needs a `tokens:` list");
    }
    const YAML::Node list = root["tokens"];
    for (size_t i = 0; i < list.size(); ++i) {
      const YAML::Node e = list[i];
      std::string path = "tokens[" + std::to_string(i) + "]";
      if (!e.IsMap()) return Bad(source, e, path, "must be a map");
      for (const auto& kv : e) {
        std::string k = kv.first.as<std::string>();
        if (k != "token" && k != "user" && k != "role" && k != "namespaces") {
          return Bad(source, kv.first, path + "." + k, "unknown field \"" + k + "\"");
        }
      }
      Entry entry;
      if (!e["token"] || !e["token"].IsScalar()) return Bad(source, e, path + ".token", "is required");
      entry.token = e["token"].as<std::string>();
      if (entry.token.size() < 8)
        return Bad(source, e["token"], path + ".token", "must be at least 8 characters");
      if (!e["user"] || !e["user"].IsScalar()) return Bad(source, e, path + ".user", "is required");
      entry.principal.user = e["user"].as<std::string>();
      std::string role = e["role"] ? e["role"].as<std::string>() : "";
      if (role == "admin") {
        entry.principal.role = Role::kAdmin;
      } else if (role == "tenant") {
        entry.principal.role = Role::kTenant;
      } else if (role == "metrics") {
        entry.principal.role = Role::kMetrics;
      } else {
        return Bad(source, e["role"] ? e["role"] : e, path + ".role", "must be admin, tenant or metrics");
      }
      if (const YAML::Node ns = e["namespaces"]; ns && entry.principal.role == Role::kMetrics) {
        return Bad(source, ns, path + ".namespaces", "a metrics token has no namespaces");
      }
      if (const YAML::Node ns = e["namespaces"]) {
        if (!ns.IsSequence()) return Bad(source, ns, path + ".namespaces", "must be a list");
        for (const auto& n : ns) entry.principal.namespaces.insert(n.as<std::string>());
      }
      for (const Entry& other : table->entries_) {
        if (other.token == entry.token) return Bad(source, e["token"], path + ".token", "duplicate token");
      }
      table->entries_.push_back(std::move(entry));
    }
  } catch (const YAML::Exception& ex) {
    Status s = InvalidArgument(ex.msg);
    SourcePos pos;
    pos.file = source;
    pos.line = ex.mark.line + 1;
    pos.column = ex.mark.column + 1;
    s.WithPos(pos);
    return s;
  }
  return table;
}

Result<Principal> TokenTable::Authenticate(std::string_view header) const {
  // The scheme is case-insensitive (RFC 7235 section 2.1); the token is not.
  constexpr std::string_view kBearer = "bearer ";
  bool scheme_ok = header.size() > kBearer.size();
  for (size_t i = 0; scheme_ok && i < kBearer.size(); ++i) {
    scheme_ok = std::tolower(static_cast<unsigned char>(header[i])) == kBearer[i];
  }
  if (!scheme_ok) {
    return Status(
        StatusCode::kUnauthenticated,
        "missing bearer token (Authorization: Bearer <token>; the CLI reads --token or ARTEL_TOKEN)");
  }
  std::string_view token = header.substr(kBearer.size());
  const Entry* found = nullptr;
  // Visit every entry so the time taken does not depend on which one matches.
  for (const Entry& e : entries_) {
    if (ConstantTimeEquals(e.token, token)) found = &e;
  }
  if (found == nullptr) return Status(StatusCode::kUnauthenticated, "unknown bearer token");
  return found->principal;
}

}  // namespace artel::server
