// ApiServer: arteld's HTTP front end (`/api/v1`, `/metrics`, `/healthz`,
// `/readyz`, and a small status page at `/`), on cpp-httplib.
//
// Every request is authenticated from its bearer token (unless the daemon
// runs without a tokens file), rate-limited per user with a token bucket
// (429), bounded in size (413), and answered with JSON; every error body is
// `{code, message, field?}` with the matching HTTP status. Authorization
// follows docs/api.md: tenants reach only their namespaces. Handlers do the
// parsing and checks without locks and call into `Daemon`, which holds its
// lock only briefly. Watch streams (SSE) hold one worker thread each.
//
// Thread-safety: `Listen` blocks the calling thread; `Stop` may be called
// from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "server/auth.h"
#include "server/daemon.h"
#include "server/log.h"

namespace httplib {
class Server;
}

namespace artel::server {

struct ApiOptions {
  std::string host = "127.0.0.1";
  int port = 7433;       // 0 = pick a free port
  std::string tls_cert;  // both set = HTTPS
  std::string tls_key;
  size_t max_body_bytes = 1 << 20;
  double rate_qps = 0;    // per user; 0 = unlimited
  double rate_burst = 0;  // bucket size; 0 = 2 x qps
  int threads = 64;       // worker threads (keep-alive connections hold one)
};

class ApiServer {
 public:
  // `tokens` may be null: authentication off, every caller is an admin.
  ApiServer(ApiOptions options, Daemon* daemon, const TokenTable* tokens, Logger* log);
  ~ApiServer();

  // Binds; returns the bound port (useful with port 0).
  Result<int> Bind();
  // Serves until `Stop`. REQUIRES: `Bind` succeeded.
  void Serve();
  void Stop();
  bool tls() const { return !options_.tls_cert.empty(); }

 private:
  void Routes();
  bool AllowRate(const std::string& user);

  ApiOptions options_;
  Daemon* daemon_;
  const TokenTable* tokens_;
  Logger* log_;
  std::unique_ptr<httplib::Server> http_;
  std::atomic<bool> stopping_{false};

  struct Bucket {
    double tokens;
    int64_t last_us;
  };
  std::mutex rate_mu_;
  std::map<std::string, Bucket> buckets_;
};

}  // namespace artel::server
