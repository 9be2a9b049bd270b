// ApiServer: arteld's HTTP front end (`/api/v1`, `/metrics`, `/healthz`,
// `/readyz`, and a small status page at `/`), on cpp-httplib.
//
// Every request is authenticated from its bearer token (unless the daemon
// runs without a tokens file), rate-limited per user with a token bucket
// (429), bounded in size (413), and answered with JSON; every error body is
// `{code, message, field?}` with the matching HTTP status. Authorization
// follows docs/api.md: tenants reach only their namespaces. Handlers do the
// parsing and checks without locks and call into the `Service` (server/service.h:
// the standalone Daemon or the Kubernetes controller), which holds its lock
// only briefly. Plain HTTP is served by `HttpServer` (an event loop:
// no thread per connection; authentication and the body limit are applied
// from the headers, before the body is read); watch streams (SSE) get one
// stream thread each, at most `max_streams`. HTTPS falls back to
// cpp-httplib's SSLServer (one thread per connection).
//
// Thread-safety: `Listen` blocks the calling thread; `Stop` may be called
// from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "server/auth.h"
#include "server/history.h"
#include "server/http_server.h"
#include "server/log.h"
#include "server/prom_history.h"
#include "server/service.h"

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
  int threads = 64;  // handler threads (concurrent durable appends group-commit; HTTPS: one per connection)
  // HTTP limits (docs/daemon.md, "HTTP limits"); see HttpLimits.
  size_t max_header_bytes = 32 << 10;
  int header_timeout_ms = 10000;
  int idle_timeout_ms = 60000;
  int body_timeout_ms = 30000;
  int write_timeout_ms = 30000;
  int max_connections = 2048;
  int max_connections_per_peer = 512;
  int max_streams = 64;
};

class ApiServer {
 public:
  // `tokens` may be null: authentication off, every caller is an admin.
  // `service`: the standalone Daemon or the Kubernetes controller.
  ApiServer(ApiOptions options, Service* service, const TokenTable* tokens, Logger* log);
  ~ApiServer();

  // Binds; returns the bound port (useful with port 0).
  Result<int> Bind();
  // Serves until `Stop`. REQUIRES: `Bind` succeeded.
  void Serve();
  void Stop();
  bool tls() const { return !options_.tls_cert.empty(); }
  // Leader election (Kubernetes mode, --leader-elect): /readyz then says
  // whether this replica leads; a standby is ready (it serves the API, the
  // probes and the webhooks) with status "standby". Set before Serve.
  void SetLeaderCheck(std::function<bool()> leading) { leading_ = std::move(leading); }
  // The usage history that GET /api/v1/history serves (server/history.h);
  // null (the default) answers 404. Set before Serve.
  void SetHistory(const UsageHistory* history) { history_ = history; }
  // Where /api/v1/history reads ranges longer than the ring (--prometheus-url);
  // null = nowhere. Call before Start.
  void SetPrometheusHistory(const PrometheusHistory* prom) { prom_history_ = prom; }

 private:
  void Routes();
  bool AllowRate(const std::string& user);

  ApiOptions options_;
  Service* service_;
  const TokenTable* tokens_;
  Logger* log_;
  std::unique_ptr<HttpServer> http_;           // plain HTTP
  std::unique_ptr<httplib::Server> tls_http_;  // HTTPS fallback
  std::atomic<bool> stopping_{false};
  std::function<bool()> leading_;  // empty = no leader election
  const UsageHistory* history_ = nullptr;
  const PrometheusHistory* prom_history_ = nullptr;

  struct Bucket {
    double tokens;
    int64_t last_us;
  };
  std::mutex rate_mu_;
  std::map<std::string, Bucket> buckets_;
};

}  // namespace artel::server
