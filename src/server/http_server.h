// HttpServer: arteld's HTTP/1.1 server. One event-loop thread (epoll) owns
// every connection; a small worker pool runs the request handlers; streaming
// responses (SSE) get their own bounded set of threads. No thread is held by
// an idle, slow or half-sent connection.
//
// The limits hold before authentication and before any body is buffered
// (docs/daemon.md, "HTTP limits"):
// - the request line and headers must arrive within `header_timeout_ms` and
//   fit in `max_header_bytes` (408 / 431, then close); this ends slowloris;
// - an idle keep-alive connection is closed after `idle_timeout_ms`;
// - the whole body must arrive within `body_timeout_ms` of the headers (408);
// - a response must be flushed within `write_timeout_ms`;
// - at most `max_connections` in all and `max_connections_per_peer` per peer
//   address (503 and close above; when the total cap is reached, the
//   connection that has waited longest, at least 1 s, for a request head is
//   closed first);
// - framing is strict: Content-Length and Transfer-Encoding together, two
//   differing Content-Lengths, a transfer coding other than `chunked`, a bad
//   chunk size, a folded header or two Authorization headers get 400 and close;
// - a request without Content-Length and Transfer-Encoding has an empty body
//   (RFC 9112 6.3) and is answered at once;
// - `pre_auth` decides from the headers alone, before the body is read; a
//   rejected request that announced a body is answered and the connection
//   closed without reading the body;
// - the body limit is applied while reading: a declared Content-Length above
//   `max_body_bytes` gets 413 at once; a chunked body gets 413 as soon as the
//   running total passes it, before it is buffered.
//
// The handler interface is cpp-httplib's value types (`httplib::Request`,
// `httplib::Response`) and its registration style (`Get/Post/Put/Delete`
// with a regex matched against the whole path; `req.matches` holds the
// groups), so handlers written for httplib::Server run unchanged, including
// `set_chunked_content_provider` / `set_content_provider` streams.
//
// Thread-safety: register routes and hooks before `Bind`; `Serve` blocks the
// calling thread (the event loop); `Stop` may be called from any thread.
#pragma once

#include <httplib.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "core/status.h"

namespace artel::server {

struct HttpLimits {
  size_t max_body_bytes = 1 << 20;
  size_t max_header_bytes = 32 << 10;  // request line + headers
  int header_timeout_ms = 10000;       // from the first byte of a request (or the accept)
  int idle_timeout_ms = 60000;         // keep-alive, between requests
  int body_timeout_ms = 30000;         // the whole body, from the end of the headers
  int write_timeout_ms = 30000;        // without progress while writing a response
  int max_connections = 2048;
  int max_connections_per_peer = 512;
  int workers = 16;          // handler threads
  int max_streams = 64;      // concurrent streaming responses (SSE), one thread each
  size_t max_queued = 4096;  // requests waiting for a worker (503 above)
};

class HttpServer {
 public:
  using Handler = std::function<void(const httplib::Request&, httplib::Response&)>;
  using ExceptionHandler =
      std::function<void(const httplib::Request&, httplib::Response&, std::exception_ptr)>;
  // Called on the event loop with a request that has its method, path,
  // params and headers but no body yet. Return false to answer with `res`
  // without reading the body (and without running a handler).
  using PreAuth = std::function<bool(const httplib::Request&, httplib::Response&)>;

  struct Route {
    std::string method;
    std::string pattern;
    std::regex re;
    Handler handler;
  };

  explicit HttpServer(HttpLimits limits);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  HttpServer& Get(const std::string& pattern, Handler h) { return Add("GET", pattern, std::move(h)); }
  HttpServer& Post(const std::string& pattern, Handler h) { return Add("POST", pattern, std::move(h)); }
  HttpServer& Put(const std::string& pattern, Handler h) { return Add("PUT", pattern, std::move(h)); }
  HttpServer& Delete(const std::string& pattern, Handler h) { return Add("DELETE", pattern, std::move(h)); }
  HttpServer& Patch(const std::string& pattern, Handler h) { return Add("PATCH", pattern, std::move(h)); }
  // Runs on every response with status >= 400 and an empty body.
  void set_error_handler(Handler h) { error_handler_ = std::move(h); }
  void set_exception_handler(ExceptionHandler h) { exception_handler_ = std::move(h); }
  void set_pre_auth(PreAuth h) { pre_auth_ = std::move(h); }
  const std::vector<Route>& routes() const { return routes_; }
  const HttpLimits& limits() const { return limits_; }

  // Binds and listens; returns the bound port (port 0 = any free port).
  Result<int> Bind(const std::string& host, int port);
  // Runs the event loop until `Stop`. REQUIRES: `Bind` succeeded.
  void Serve();
  void Stop();

  // Live counts, for tests and metrics.
  int open_connections() const { return open_.load(); }
  int open_streams() const { return streams_.load(); }

  struct Conn;
  struct Job;
  struct Done;

 private:
  HttpServer& Add(const char* method, const std::string& pattern, Handler h);
  void Loop();
  void Worker();
  void Wake();
  void Accept();
  void OnReadable(Conn* c);
  void OnWritable(Conn* c);
  void Process(Conn* c);  // parses what is buffered, moves the state machine
  bool ParseHead(Conn* c);
  bool ReadBody(Conn* c);
  void Dispatch(Conn* c);
  void FinishError(Conn* c, int status, const std::string& message);
  void Respond(Conn* c, httplib::Response& res, bool head_only, bool close);
  void QueueOut(Conn* c, std::string bytes);
  void Flush(Conn* c);
  void CloseConn(Conn* c);
  void Linger(Conn* c);
  void UpdateEvents(Conn* c);
  void CheckTimers();
  void DrainDone();
  void StartStream(Conn* c, std::unique_ptr<Done> d);
  void RunStream(int fd, std::shared_ptr<httplib::Response> res, bool head_only);
  bool EvictIdle();
  std::string Serialize(httplib::Response& res, bool head_only, bool close, bool* streaming);
  const Route* FindRoute(httplib::Request& req, bool* path_known);

  HttpLimits limits_;
  std::vector<Route> routes_;
  Handler error_handler_;
  ExceptionHandler exception_handler_;
  PreAuth pre_auth_;

  int listen_fd_ = -1;
  int epoll_fd_ = -1;
  int wake_fd_ = -1;
  bool accept_paused_ = false;
  std::atomic<bool> stopping_{false};
  std::atomic<int> open_{0};
  std::atomic<int> streams_{0};
  uint64_t next_id_ = 1;
  std::map<uint64_t, std::unique_ptr<Conn>> conns_;  // loop thread only
  std::map<std::string, int> per_peer_;              // loop thread only
  std::vector<uint64_t> ready_;                      // loop thread only: pipelined requests to parse

  std::mutex mu_;  // guards jobs_, done_
  std::condition_variable jobs_cv_;
  std::deque<std::unique_ptr<Job>> jobs_;
  std::deque<std::unique_ptr<Done>> done_;
  std::vector<std::thread> workers_;

  std::mutex stream_mu_;
  std::condition_variable stream_cv_;
  std::vector<int> stream_fds_;  // to shut down on Stop
};

}  // namespace artel::server
