// The HTTP client side of `artel`: where the server is, who we are, and
// how a response becomes output and an exit status.
//
// The server address and bearer token come, in order of precedence, from
// the `--server`/`--token` flags, the ARTEL_SERVER/ARTEL_TOKEN environment
// variables, and `~/.config/artel/config.yaml` (`server:`, `token:`,
// `namespace:`); the default server is http://127.0.0.1:7433. Exit statuses
// are documented in docs/cli.md (`ExitCode`).
//
// Thread-safety: used from main() only.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace artel::cli {

enum ExitCode {
  kExitOk = 0,
  kExitFailed = 1,       // request rejected (400/409/413/429), server error, or a failed workload
  kExitUsage = 2,        // bad command line
  kExitUnreachable = 3,  // cannot connect to arteld
  kExitNotFound = 4,     // 404
  kExitDenied = 5,       // 401 or 403
};

struct ClientOptions {
  std::string server;
  std::string token;
  std::string ns;         // default namespace
  std::string ca_file;    // HTTPS: CA bundle
  bool insecure = false;  // HTTPS: skip verification
};

// Fills the unset fields from the environment and the config file.
void ResolveClientOptions(ClientOptions* o);

struct Response {
  int status = 0;  // 0 = no connection
  std::string body;
  std::string error;  // transport error when status == 0
  nlohmann::json json() const;
};

Response Request(const ClientOptions& o, const std::string& method, const std::string& path,
                 const std::string& body = "", const std::string& content_type = "application/json");

// Prints a failed response to stderr ("error: <code>: <message> (field)")
// and returns its exit code; returns kExitOk for 2xx.
int Report(const Response& r);

// URL-encodes a query parameter value.
std::string UrlEncode(const std::string& s);

}  // namespace artel::cli
