// The HTTP client side of `artel`: where the server is, who we are, and
// how a response becomes output and an exit status.
//
// The server address, bearer token, CA bundle and namespace come, in order
// of precedence, from the global flags (`--server`, `--token`,
// `--token-file`, `--cacert`, `-n`; before or after the verb), the
// environment (ARTEL_SERVER, ARTEL_TOKEN, ARTEL_TOKEN_FILE, ARTEL_NAMESPACE),
// the current context of the configuration file (cli/config.h; `--context`
// or ARTEL_CONTEXT choose another), and the defaults: http://127.0.0.1:7433
// and, for a tenant's token, the tenant's first namespace (asked of
// GET /api/v1/whoami), else "default". Exit statuses are documented in
// docs/cli.md (`ExitCode`).
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
  std::string token_file;  // read when `token` is unset
  std::string ns;          // default namespace
  std::string ca_file;     // HTTPS: CA bundle
  bool insecure = false;   // HTTPS: skip verification
  std::string context;     // a context of the configuration file
};

// The global flags, filled by the root command (main.cc) wherever they
// stand on the command line.
ClientOptions& GlobalFlags();

// Fills *o from the global flags, the environment, the configuration file
// and the defaults (see above). With `need_namespace` and no namespace given
// anywhere, a tenant's token defaults to its first namespace (whoami). A
// configuration error (a malformed file, an unknown --context) is printed
// and exits with kExitUsage.
void ResolveClientOptions(ClientOptions* o, bool need_namespace = false);

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
