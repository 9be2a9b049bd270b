// Auth: bearer tokens -> principals, and the authorization rules of the API.
//
// The tokens file (YAML, docs/daemon.md) maps each bearer token to a user, a
// role and the namespaces the user may act in:
//
//   tokens:
//     - token: "s3cr3t-admin"
//       user: alice
//       role: admin
//     - token: "s3cr3t-vision"
//       user: bob
//       role: tenant
//       namespaces: [team-vision]
//     - token: "s3cr3t-scraper"
//       user: prometheus
//       role: metrics
//
// An `admin` may do everything. A `tenant` may submit to, read, cancel and
// watch workloads only in its namespaces, may apply namespaced objects
// (LocalQueue, ResourceQuota) only in them, and may read the cluster-wide
// views (queues, cohorts, nodes, GPUs) without the workloads of others:
// another namespace's workloads appear only as counts per ClusterQueue or
// cohort, never by name (redact.h). A `metrics` principal (the Prometheus
// scraper) may read `/metrics` (and whoami) and nothing else; `/metrics`
// names every team's workloads, so tenants may not read it.
// Without a tokens file authentication is off and every caller is an admin
// named "anonymous"; arteld warns about it and binds loopback by default.
//
// Tokens are compared in constant time and never logged.
//
// Thread-safety: a `TokenTable` is immutable after `Load`; lookups are safe
// from many threads.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace artel::server {

enum class Role { kAdmin, kTenant, kMetrics };
const char* RoleName(Role r);

struct Principal {
  std::string user;
  Role role = Role::kTenant;
  std::set<std::string> namespaces;  // tenants only

  bool is_admin() const { return role == Role::kAdmin; }
  bool can_read_metrics() const { return role == Role::kAdmin || role == Role::kMetrics; }
  bool CanUseNamespace(std::string_view ns) const {
    return is_admin() || namespaces.count(std::string(ns)) > 0;
  }
};

class TokenTable {
 public:
  // Reads the tokens file. Fails on a missing field, an unknown role, a
  // duplicate or short (< 8 characters) token.
  static Result<std::unique_ptr<TokenTable>> Load(const std::string& path);
  static Result<std::unique_ptr<TokenTable>> Parse(std::string_view yaml_text, const std::string& source);

  // The principal for an `Authorization` header value ("Bearer <token>");
  // Unauthenticated when absent or unknown.
  Result<Principal> Authenticate(std::string_view authorization_header) const;
  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    std::string token;
    Principal principal;
  };
  std::vector<Entry> entries_;
};

}  // namespace artel::server
