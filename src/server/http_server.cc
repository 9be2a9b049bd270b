#include "server/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

namespace artel::server {
namespace {

constexpr uint64_t kListenId = 0;
constexpr uint64_t kWakeId = 1;
constexpr size_t kReadChunk = 16 << 10;
constexpr size_t kMaxHeaders = 100;
constexpr size_t kMaxChunkLine = 1024;
constexpr size_t kMaxTrailerBytes = 8 << 10;
constexpr int kLingerMs = 1000;
constexpr int kTimerTickMs = 50;
constexpr int64_t kEvictAfterMs = 1000;

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

bool IEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  }
  return true;
}

std::string Lower(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

bool IsTokenChar(char ch) {
  if (std::isalnum(static_cast<unsigned char>(ch))) return true;
  return std::strchr("!#$%&'*+-.^_`|~", ch) != nullptr && ch != '\0';
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

const char* Reason(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 301: return "Moved Permanently";
    case 302: return "Found";
    case 304: return "Not Modified";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 411: return "Length Required";
    case 413: return "Payload Too Large";
    case 414: return "URI Too Long";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return status >= 500 ? "Error" : "Status";
  }
}

// Writes all of `data` to a non-blocking socket, waiting up to `timeout_ms`
// for each bit of progress. Used only by stream threads.
bool WriteAll(int fd, const char* data, size_t n, int timeout_ms, const std::atomic<bool>& stopping) {
  while (n > 0) {
    ssize_t w = ::send(fd, data, n, MSG_NOSIGNAL);
    if (w > 0) {
      data += w;
      n -= static_cast<size_t>(w);
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (stopping.load()) return false;
      pollfd p{fd, POLLOUT, 0};
      int r = ::poll(&p, 1, timeout_ms);
      if (r <= 0 || (p.revents & (POLLERR | POLLHUP | POLLNVAL))) return false;
      continue;
    }
    return false;
  }
  return true;
}

}  // namespace

enum class ConnState { kHead, kBody, kWaiting, kWriting, kLinger };
enum class ChunkState { kSize, kData, kDataEnd, kTrailer };

struct HttpServer::Conn {
  uint64_t id = 0;
  int fd = -1;
  std::string peer;
  int peer_port = 0;
  std::string local;
  int local_port = 0;
  ConnState st = ConnState::kHead;
  bool dead = false;
  bool head_started = false;  // a byte of the current request has arrived
  int64_t deadline = 0;       // of the current state
  int64_t since = 0;          // when the current state began
  uint32_t events = 0;
  std::string in;
  std::string out;
  size_t out_off = 0;
  bool close_after_write = false;
  // The request being read.
  std::unique_ptr<httplib::Request> req;
  const Route* route = nullptr;
  bool head_only = false;
  bool keep_alive = true;
  bool chunked = false;
  uint64_t body_left = 0;  // Content-Length bytes still to read
  ChunkState cst = ChunkState::kSize;
  uint64_t chunk_left = 0;
  size_t trailer_bytes = 0;
};

struct HttpServer::Job {
  uint64_t conn = 0;
  std::unique_ptr<httplib::Request> req;
  const Route* route = nullptr;
  bool head_only = false;
  bool close = false;
};

struct HttpServer::Done {
  uint64_t conn = 0;
  std::string bytes;
  bool close = false;
  bool head_only = false;
  std::unique_ptr<httplib::Request> req;
  std::shared_ptr<httplib::Response> stream;  // set for a content provider
};

HttpServer::HttpServer(HttpLimits limits) : limits_(limits) {}

HttpServer::~HttpServer() {
  Stop();
  for (auto& t : workers_) {
    if (t.joinable()) t.join();
  }
  for (auto& [id, c] : conns_) {
    if (c->fd >= 0) ::close(c->fd);
  }
  if (listen_fd_ >= 0) ::close(listen_fd_);
  if (epoll_fd_ >= 0) ::close(epoll_fd_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

HttpServer& HttpServer::Add(const char* method, const std::string& pattern, Handler h) {
  routes_.push_back(Route{method, pattern, std::regex(pattern), std::move(h)});
  return *this;
}

Result<int> HttpServer::Bind(const std::string& host, int port) {
  // Every connection needs a descriptor: raise the soft limit toward the
  // hard one so that the connection caps, not EMFILE, are what bind.
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
    rlim_t want = static_cast<rlim_t>(limits_.max_connections) + 1024;
    if (rl.rlim_cur < want) {
      rl.rlim_cur = std::min(want, rl.rlim_max);
      setrlimit(RLIMIT_NOFILE, &rl);
      getrlimit(RLIMIT_NOFILE, &rl);
    }
    if (rl.rlim_cur < static_cast<rlim_t>(limits_.max_connections) + 256 && rl.rlim_cur > 512) {
      limits_.max_connections = static_cast<int>(rl.rlim_cur) - 256;
    }
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  std::string port_s = std::to_string(port);
  if (getaddrinfo(host.c_str(), port_s.c_str(), &hints, &res) != 0 || res == nullptr) {
    return InvalidArgument("cannot resolve " + host);
  }
  int fd = -1;
  for (addrinfo* a = res; a != nullptr; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, 1024) == 0) break;
    ::close(fd);
    fd = -1;
  }
  freeaddrinfo(res);
  if (fd < 0) return InvalidArgument("cannot listen on " + host + ":" + port_s + ": " + std::strerror(errno));
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len);
  int bound = ss.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port)
                                       : ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  listen_fd_ = fd;
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (epoll_fd_ < 0 || wake_fd_ < 0) return InvalidArgument("cannot create the event loop");
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kListenId;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &ev);
  ev.data.u64 = kWakeId;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &ev);
  next_id_ = 2;
  return bound;
}

void HttpServer::Wake() {
  if (wake_fd_ < 0) return;
  uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(wake_fd_, &one, sizeof one);
}

void HttpServer::Stop() {
  if (stopping_.exchange(true)) return;
  {
    std::lock_guard<std::mutex> l(mu_);
    jobs_cv_.notify_all();
  }
  {
    std::lock_guard<std::mutex> l(stream_mu_);
    for (int fd : stream_fds_) ::shutdown(fd, SHUT_RDWR);
  }
  Wake();
}

void HttpServer::Serve() {
  if (listen_fd_ < 0) return;
  int n = std::max(1, limits_.workers);
  for (int i = 0; i < n; ++i) workers_.emplace_back([this] { Worker(); });
  Loop();
  {
    std::lock_guard<std::mutex> l(mu_);
    jobs_cv_.notify_all();
  }
  for (auto& t : workers_) t.join();
  workers_.clear();
  for (auto& [id, c] : conns_) {
    if (c->fd >= 0) ::close(c->fd);
    c->fd = -1;
  }
  conns_.clear();
  // Streams end at their next write or provider call once stopping.
  std::unique_lock<std::mutex> l(stream_mu_);
  for (int fd : stream_fds_) ::shutdown(fd, SHUT_RDWR);
  stream_cv_.wait(l, [this] { return streams_.load() == 0; });
}

void HttpServer::Loop() {
  std::vector<epoll_event> evs(256);
  int64_t next_tick = NowMs() + kTimerTickMs;
  while (!stopping_.load()) {
    int timeout = ready_.empty() ? static_cast<int>(std::max<int64_t>(0, next_tick - NowMs())) : 0;
    int n = epoll_wait(epoll_fd_, evs.data(), static_cast<int>(evs.size()), timeout);
    if (n < 0 && errno != EINTR) break;
    for (int i = 0; i < n; ++i) {
      uint64_t id = evs[i].data.u64;
      uint32_t e = evs[i].events;
      if (id == kListenId) {
        Accept();
        continue;
      }
      if (id == kWakeId) {
        uint64_t v;
        while (::read(wake_fd_, &v, sizeof v) > 0) {
        }
        continue;
      }
      auto it = conns_.find(id);
      if (it == conns_.end() || it->second->dead) continue;
      Conn* c = it->second.get();
      if (e & EPOLLERR) {
        CloseConn(c);
        continue;
      }
      if ((e & EPOLLOUT) && c->st == ConnState::kWriting) OnWritable(c);
      if (!c->dead && (e & (EPOLLIN | EPOLLHUP))) {
        if (c->st == ConnState::kWaiting || c->st == ConnState::kWriting) {
          if (e & EPOLLHUP) CloseConn(c);  // the peer is gone
        } else {
          OnReadable(c);
        }
      }
    }
    DrainDone();
    std::vector<uint64_t> ready;
    ready.swap(ready_);
    for (uint64_t id : ready) {
      auto it = conns_.find(id);
      if (it == conns_.end() || it->second->dead) continue;
      Conn* c = it->second.get();
      if (c->st == ConnState::kHead && !c->in.empty()) Process(c);
    }
    if (NowMs() >= next_tick) {
      CheckTimers();
      next_tick = NowMs() + kTimerTickMs;
    }
    // Reap closed connections.
    for (auto it = conns_.begin(); it != conns_.end();) {
      if (it->second->dead) {
        it = conns_.erase(it);
      } else {
        ++it;
      }
    }
  }
}

void HttpServer::Accept() {
  for (;;) {
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&ss), &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        // Out of descriptors: stop accepting until a connection closes.
        epoll_event ev{};
        ev.data.u64 = kListenId;
        epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, listen_fd_, &ev);
        accept_paused_ = true;
      }
      return;
    }
    char host[INET6_ADDRSTRLEN] = {0};
    int port = 0;
    if (ss.ss_family == AF_INET6) {
      auto* a = reinterpret_cast<sockaddr_in6*>(&ss);
      inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
      port = ntohs(a->sin6_port);
    } else {
      auto* a = reinterpret_cast<sockaddr_in*>(&ss);
      inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
      port = ntohs(a->sin_port);
    }
    std::string peer = host;
    auto refuse = [&](const char* why) {
      std::string msg = std::string("{\"code\":\"Unavailable\",\"message\":\"") + why + "\"}\n";
      std::string r =
          "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: " +
          std::to_string(msg.size()) + "\r\nConnection: close\r\nRetry-After: 1\r\n\r\n" + msg;
      [[maybe_unused]] ssize_t w = ::send(fd, r.data(), r.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      ::shutdown(fd, SHUT_WR);
      ::close(fd);
    };
    auto pp = per_peer_.find(peer);
    if (pp != per_peer_.end() && pp->second >= limits_.max_connections_per_peer) {
      refuse("too many connections from this address");
      continue;
    }
    if (open_.load() >= limits_.max_connections && !EvictIdle()) {
      refuse("too many connections");
      continue;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    auto c = std::make_unique<Conn>();
    c->id = next_id_++;
    c->fd = fd;
    c->peer = peer;
    c->peer_port = port;
    sockaddr_storage ls{};
    socklen_t llen = sizeof ls;
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&ls), &llen) == 0) {
      char lh[INET6_ADDRSTRLEN] = {0};
      if (ls.ss_family == AF_INET6) {
        inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(&ls)->sin6_addr, lh, sizeof lh);
        c->local_port = ntohs(reinterpret_cast<sockaddr_in6*>(&ls)->sin6_port);
      } else {
        inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&ls)->sin_addr, lh, sizeof lh);
        c->local_port = ntohs(reinterpret_cast<sockaddr_in*>(&ls)->sin_port);
      }
      c->local = lh;
    }
    int64_t now = NowMs();
    c->st = ConnState::kHead;
    c->since = now;
    // A new connection must send its first request head within the header
    // timeout (a silent connection is a slowloris too).
    c->deadline = now + limits_.header_timeout_ms;
    c->head_started = true;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = c->id;
    c->events = EPOLLIN;
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
      ::close(fd);
      continue;
    }
    per_peer_[peer]++;
    open_++;
    conns_[c->id] = std::move(c);
  }
}

bool HttpServer::EvictIdle() {
  // Only a connection that has waited at least kEvictAfterMs for its next
  // request head, oldest first, so that a client that just connected is not
  // pushed out by the next one.
  int64_t cutoff = NowMs() - kEvictAfterMs;
  Conn* victim = nullptr;
  for (bool silent_only : {true, false}) {
    for (auto& [id, c] : conns_) {
      if (c->dead || c->st != ConnState::kHead || c->since > cutoff) continue;
      if (silent_only && !c->in.empty()) continue;
      if (victim == nullptr || c->since < victim->since) victim = c.get();
    }
    if (victim != nullptr) break;
  }
  if (victim == nullptr) return false;
  CloseConn(victim);
  return true;
}

void HttpServer::CloseConn(Conn* c) {
  if (c->dead) return;
  c->dead = true;
  if (c->fd >= 0) {
    epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c->fd, nullptr);
    ::close(c->fd);
    c->fd = -1;
  }
  auto it = per_peer_.find(c->peer);
  if (it != per_peer_.end() && --it->second <= 0) per_peer_.erase(it);
  open_--;
  if (accept_paused_) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = kListenId;
    epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, listen_fd_, &ev);
    accept_paused_ = false;
  }
}

void HttpServer::UpdateEvents(Conn* c) {
  if (c->dead) return;
  uint32_t want = 0;
  switch (c->st) {
    case ConnState::kHead:
    case ConnState::kBody:
    case ConnState::kLinger: want = EPOLLIN; break;
    case ConnState::kWriting: want = EPOLLOUT; break;
    case ConnState::kWaiting: want = 0; break;
  }
  if (want == c->events) return;
  epoll_event ev{};
  ev.events = want;
  ev.data.u64 = c->id;
  epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c->fd, &ev);
  c->events = want;
}

void HttpServer::OnReadable(Conn* c) {
  char buf[kReadChunk];
  // At most 16 reads per readiness event, so that one fast sender cannot
  // keep the loop from the others (epoll reports the rest next round).
  for (int budget = 16; budget > 0; --budget) {
    ssize_t n = ::recv(c->fd, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n <= 0) {  // EOF or error: the peer is done
      CloseConn(c);
      return;
    }
    if (c->st == ConnState::kLinger) continue;  // discarded, never buffered
    c->in.append(buf, static_cast<size_t>(n));
    Process(c);
    if (c->dead || (c->st != ConnState::kHead && c->st != ConnState::kBody && c->st != ConnState::kLinger))
      return;
  }
}

void HttpServer::Process(Conn* c) {
  if (c->st == ConnState::kHead) {
    if (!c->head_started && !c->in.empty()) {
      c->head_started = true;
      c->deadline = NowMs() + limits_.header_timeout_ms;
    }
    if (!ParseHead(c)) return;
  }
  if (c->st == ConnState::kBody) ReadBody(c);
}

bool HttpServer::ParseHead(Conn* c) {
  // Tolerate empty lines before a request line (RFC 9112 2.2).
  size_t skip = 0;
  while (skip + 1 < c->in.size() && c->in[skip] == '\r' && c->in[skip + 1] == '\n') skip += 2;
  if (skip > 0) c->in.erase(0, skip);
  size_t end = c->in.find("\r\n\r\n");
  if (end == std::string::npos) {
    if (c->in.size() > limits_.max_header_bytes) FinishError(c, 431, "request headers too large");
    return false;
  }
  if (end + 4 > limits_.max_header_bytes) {
    FinishError(c, 431, "request headers too large");
    return false;
  }
  std::string head = c->in.substr(0, end + 2);
  c->in.erase(0, end + 4);

  auto req = std::make_unique<httplib::Request>();
  size_t line_end = head.find("\r\n");
  std::string_view line(head.data(), line_end);
  size_t sp1 = line.find(' ');
  size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp1 == std::string_view::npos || sp2 == std::string_view::npos ||
      line.find(' ', sp2 + 1) != line.npos) {
    FinishError(c, 400, "malformed request line");
    return false;
  }
  req->method = std::string(line.substr(0, sp1));
  req->target = std::string(line.substr(sp1 + 1, sp2 - sp1 - 1));
  req->version = std::string(line.substr(sp2 + 1));
  for (char ch : req->method) {
    if (!IsTokenChar(ch)) {
      FinishError(c, 400, "malformed request method");
      return false;
    }
  }
  if (req->method.empty() || req->target.empty() || req->target[0] != '/') {
    FinishError(c, 400, "malformed request target");
    return false;
  }
  for (char ch : req->target) {
    if (static_cast<unsigned char>(ch) <= 0x20 || ch == 0x7f) {
      FinishError(c, 400, "malformed request target");
      return false;
    }
  }
  if (req->version != "HTTP/1.1" && req->version != "HTTP/1.0") {
    FinishError(c, req->version.rfind("HTTP/", 0) == 0 ? 505 : 400, "unsupported HTTP version");
    return false;
  }
  size_t pos = line_end + 2;
  size_t count = 0;
  while (pos < head.size()) {
    size_t e = head.find("\r\n", pos);
    std::string_view h(head.data() + pos, e - pos);
    pos = e + 2;
    if (h.empty()) break;
    if (h[0] == ' ' || h[0] == '\t') {
      FinishError(c, 400, "folded header lines are not accepted");
      return false;
    }
    size_t colon = h.find(':');
    if (colon == 0 || colon == std::string_view::npos) {
      FinishError(c, 400, "malformed header line");
      return false;
    }
    std::string_view name = h.substr(0, colon);
    for (char ch : name) {
      if (!IsTokenChar(ch)) {
        FinishError(c, 400, "malformed header name");
        return false;
      }
    }
    std::string_view value = Trim(h.substr(colon + 1));
    for (char ch : value) {
      if (ch == '\0' || ch == '\r' || ch == '\n') {
        FinishError(c, 400, "malformed header value");
        return false;
      }
    }
    if (++count > kMaxHeaders) {
      FinishError(c, 431, "too many request headers");
      return false;
    }
    req->headers.emplace(std::string(name), std::string(value));
  }
  // Path and query.
  size_t q = req->target.find('?');
  req->path = httplib::detail::decode_url(req->target.substr(0, q), false);
  if (q != std::string::npos) httplib::detail::parse_query_text(req->target.substr(q + 1), req->params);
  req->remote_addr = c->peer;
  req->remote_port = c->peer_port;
  req->local_addr = c->local;
  req->local_port = c->local_port;

  // Framing (RFC 9112 6): strict, to leave no room for request smuggling.
  size_t n_auth = req->get_header_value_count("Authorization");
  if (n_auth > 1) {
    FinishError(c, 400, "more than one Authorization header");
    return false;
  }
  if (n_auth == 1) {
    // The auth scheme is case-insensitive (RFC 7235 2.1): canonicalize it.
    auto it = req->headers.find("Authorization");
    std::string& v = it->second;
    size_t sp = v.find(' ');
    if (sp != std::string::npos && IEquals(std::string_view(v).substr(0, sp), "bearer")) {
      size_t tok = v.find_first_not_of(' ', sp);
      v = "Bearer " + (tok == std::string::npos ? std::string() : v.substr(tok));
    }
  }
  bool has_cl = req->has_header("Content-Length");
  bool has_te = req->has_header("Transfer-Encoding");
  if (has_cl && has_te) {
    FinishError(c, 400, "both Content-Length and Transfer-Encoding");
    return false;
  }
  uint64_t content_length = 0;
  bool too_large = false;
  if (has_cl) {
    std::string first;
    auto range = req->headers.equal_range("Content-Length");
    for (auto it = range.first; it != range.second; ++it) {
      if (it == range.first) first = it->second;
      if (it->second != first) {
        FinishError(c, 400, "conflicting Content-Length headers");
        return false;
      }
    }
    if (first.empty() || first.size() > 19) {
      if (first.empty() || first.find_first_not_of("0123456789") != std::string::npos) {
        FinishError(c, 400, "malformed Content-Length");
        return false;
      }
      too_large = true;
    } else {
      for (char ch : first) {
        if (ch < '0' || ch > '9') {
          FinishError(c, 400, "malformed Content-Length");
          return false;
        }
        content_length = content_length * 10 + static_cast<uint64_t>(ch - '0');
      }
    }
    if (content_length > limits_.max_body_bytes) too_large = true;
  }
  bool chunked = false;
  if (has_te) {
    if (req->get_header_value_count("Transfer-Encoding") != 1 ||
        Lower(std::string(Trim(req->get_header_value("Transfer-Encoding")))) != "chunked") {
      FinishError(c, 501, "unsupported Transfer-Encoding (only chunked)");
      return false;
    }
    if (req->version == "HTTP/1.0") {
      FinishError(c, 400, "Transfer-Encoding in an HTTP/1.0 request");
      return false;
    }
    chunked = true;
  }
  bool has_body = chunked || content_length > 0 || too_large;
  std::string conn_hdr = Lower(req->get_header_value("Connection"));
  bool keep_alive = req->version == "HTTP/1.1" ? conn_hdr.find("close") == std::string::npos
                                               : conn_hdr.find("keep-alive") != std::string::npos;
  bool head_only = req->method == "HEAD";

  // Authentication from the headers alone, before the body.
  if (pre_auth_) {
    httplib::Response res;
    bool allowed = true;
    try {
      allowed = pre_auth_(*req, res);
    } catch (...) {
      res = httplib::Response();
      res.status = 500;
      allowed = false;
    }
    if (!allowed) {
      if (res.status == -1) res.status = 401;
      if (res.status >= 400 && res.body.empty() && error_handler_) error_handler_(*req, res);
      Respond(c, res, head_only, has_body || !keep_alive);
      return false;
    }
  }
  if (too_large) {
    FinishError(c, 413,
                "request body too large (limit " + std::to_string(limits_.max_body_bytes) + " bytes)");
    return false;
  }
  bool path_known = false;
  const Route* route = FindRoute(*req, &path_known);
  if (route == nullptr) {
    httplib::Response res;
    res.status = 404;
    if (error_handler_) error_handler_(*req, res);
    Respond(c, res, head_only, has_body || !keep_alive);
    return false;
  }
  c->req = std::move(req);
  c->route = route;
  c->head_only = head_only;
  c->keep_alive = keep_alive;
  c->chunked = chunked;
  c->body_left = content_length;
  c->cst = ChunkState::kSize;
  c->chunk_left = 0;
  c->trailer_bytes = 0;
  if (!has_body) {
    Dispatch(c);
    return false;
  }
  if (IEquals(c->req->get_header_value("Expect"), "100-continue") && c->req->version == "HTTP/1.1") {
    std::string cont = "HTTP/1.1 100 Continue\r\n\r\n";
    ::send(c->fd, cont.data(), cont.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  }
  if (!chunked) c->req->body.reserve(static_cast<size_t>(content_length));
  c->st = ConnState::kBody;
  c->since = NowMs();
  c->deadline = c->since + limits_.body_timeout_ms;
  return true;
}

bool HttpServer::ReadBody(Conn* c) {
  std::string& body = c->req->body;
  if (!c->chunked) {
    size_t take = static_cast<size_t>(std::min<uint64_t>(c->body_left, c->in.size()));
    body.append(c->in, 0, take);
    c->in.erase(0, take);
    c->body_left -= take;
    if (c->body_left == 0) {
      Dispatch(c);
      return true;
    }
    return false;
  }
  size_t pos = 0;
  auto consume = [&] {
    c->in.erase(0, pos);
    pos = 0;
  };
  for (;;) {
    switch (c->cst) {
      case ChunkState::kSize: {
        size_t e = c->in.find("\r\n", pos);
        if (e == std::string::npos) {
          consume();
          if (c->in.size() > kMaxChunkLine) {
            FinishError(c, 400, "malformed chunk size line");
            return false;
          }
          return false;
        }
        std::string_view line(c->in.data() + pos, e - pos);
        size_t semi = line.find(';');
        std::string_view hex = Trim(line.substr(0, semi));
        if (hex.empty() || hex.size() > 16 || e - pos > kMaxChunkLine) {
          FinishError(c, 400, "malformed chunk size");
          return false;
        }
        uint64_t size = 0;
        for (char ch : hex) {
          int d = std::isdigit(static_cast<unsigned char>(ch)) ? ch - '0'
                  : (ch >= 'a' && ch <= 'f')                   ? ch - 'a' + 10
                  : (ch >= 'A' && ch <= 'F')                   ? ch - 'A' + 10
                                                               : -1;
          if (d < 0) {
            FinishError(c, 400, "malformed chunk size");
            return false;
          }
          size = size * 16 + static_cast<uint64_t>(d);
        }
        pos = e + 2;
        if (size == 0) {
          c->cst = ChunkState::kTrailer;
          break;
        }
        if (size > limits_.max_body_bytes || body.size() + size > limits_.max_body_bytes) {
          FinishError(c, 413,
                      "request body too large (limit " + std::to_string(limits_.max_body_bytes) + " bytes)");
          return false;
        }
        c->chunk_left = size;
        c->cst = ChunkState::kData;
        break;
      }
      case ChunkState::kData: {
        size_t take = static_cast<size_t>(std::min<uint64_t>(c->chunk_left, c->in.size() - pos));
        body.append(c->in, pos, take);
        pos += take;
        c->chunk_left -= take;
        if (c->chunk_left > 0) {
          consume();
          return false;
        }
        c->cst = ChunkState::kDataEnd;
        break;
      }
      case ChunkState::kDataEnd: {
        if (c->in.size() - pos < 2) {
          consume();
          return false;
        }
        if (c->in[pos] != '\r' || c->in[pos + 1] != '\n') {
          FinishError(c, 400, "malformed chunk: no CRLF after the data");
          return false;
        }
        pos += 2;
        c->cst = ChunkState::kSize;
        break;
      }
      case ChunkState::kTrailer: {
        size_t e = c->in.find("\r\n", pos);
        if (e == std::string::npos) {
          consume();
          if (c->in.size() + c->trailer_bytes > kMaxTrailerBytes) {
            FinishError(c, 431, "request trailers too large");
          }
          return false;
        }
        c->trailer_bytes += e - pos + 2;
        if (c->trailer_bytes > kMaxTrailerBytes) {
          FinishError(c, 431, "request trailers too large");
          return false;
        }
        bool last = e == pos;
        pos = e + 2;
        if (last) {
          consume();
          Dispatch(c);
          return true;
        }
        break;  // trailer fields are ignored
      }
    }
  }
}

const HttpServer::Route* HttpServer::FindRoute(httplib::Request& req, bool* path_known) {
  std::string method = req.method == "HEAD" ? "GET" : req.method;
  for (const Route& r : routes_) {
    if (r.method != method) continue;
    if (std::regex_match(req.path, req.matches, r.re)) return &r;
  }
  *path_known = false;
  return nullptr;
}

void HttpServer::Dispatch(Conn* c) {
  c->st = ConnState::kWaiting;
  c->since = NowMs();
  UpdateEvents(c);
  auto job = std::make_unique<Job>();
  job->conn = c->id;
  job->req = std::move(c->req);
  job->route = c->route;
  job->head_only = c->head_only;
  job->close = !c->keep_alive;
  {
    std::lock_guard<std::mutex> l(mu_);
    if (jobs_.size() < limits_.max_queued) {
      jobs_.push_back(std::move(job));
      jobs_cv_.notify_one();
      return;
    }
  }
  FinishError(c, 503, "server busy");
}

void HttpServer::Worker() {
  for (;;) {
    std::unique_ptr<Job> job;
    {
      std::unique_lock<std::mutex> l(mu_);
      jobs_cv_.wait(l, [this] { return stopping_.load() || !jobs_.empty(); });
      if (stopping_.load()) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    auto res = std::make_shared<httplib::Response>();
    try {
      job->route->handler(*job->req, *res);
    } catch (...) {
      *res = httplib::Response();
      res->status = 500;
      if (exception_handler_) {
        try {
          exception_handler_(*job->req, *res, std::current_exception());
        } catch (...) {
        }
      }
    }
    if (res->status == -1) res->status = 200;
    if (res->status >= 400 && res->body.empty() && !res->content_provider_ && error_handler_) {
      error_handler_(*job->req, *res);
    }
    auto done = std::make_unique<Done>();
    done->conn = job->conn;
    done->close = job->close;
    done->head_only = job->head_only;
    if (res->content_provider_) {
      done->stream = std::move(res);
      done->req = std::move(job->req);
    } else {
      bool streaming = false;
      done->bytes = Serialize(*res, job->head_only, job->close, &streaming);
    }
    {
      std::lock_guard<std::mutex> l(mu_);
      done_.push_back(std::move(done));
    }
    Wake();
  }
}

std::string HttpServer::Serialize(httplib::Response& res, bool head_only, bool close, bool* streaming) {
  *streaming = static_cast<bool>(res.content_provider_);
  std::string s;
  s.reserve(256 + (head_only ? 0 : res.body.size()));
  s += "HTTP/1.1 " + std::to_string(res.status) + " " + Reason(res.status) + "\r\n";
  for (const auto& [k, v] : res.headers) {
    if (IEquals(k, "Content-Length") || IEquals(k, "Transfer-Encoding") || IEquals(k, "Connection")) continue;
    if (k.find_first_of("\r\n") != std::string::npos || v.find_first_of("\r\n") != std::string::npos)
      continue;
    s += k + ": " + v + "\r\n";
  }
  bool no_body = res.status == 204 || res.status == 304 || (res.status >= 100 && res.status < 200);
  if (*streaming) {
    if (res.is_chunked_content_provider_) {
      s += "Transfer-Encoding: chunked\r\n";
    } else if (res.content_length_ > 0) {
      s += "Content-Length: " + std::to_string(res.content_length_) + "\r\n";
    }
    s += "Connection: close\r\n\r\n";
    return s;
  }
  if (!no_body) s += "Content-Length: " + std::to_string(res.body.size()) + "\r\n";
  s += close ? "Connection: close\r\n" : "Connection: keep-alive\r\n";
  s += "\r\n";
  if (!head_only && !no_body) s += res.body;
  return s;
}

void HttpServer::FinishError(Conn* c, int status, const std::string& message) {
  // Errors of the HTTP layer itself, worded like the API's: {code, message}.
  const char* code = status == 400   ? "InvalidArgument"
                     : status == 408 ? "RequestTimeout"
                     : status == 413 ? "PayloadTooLarge"
                     : status == 431 ? "HeadersTooLarge"
                     : status == 501 ? "NotImplemented"
                     : status == 503 ? "Unavailable"
                     : status == 505 ? "VersionNotSupported"
                                     : "Error";
  httplib::Response res;
  res.status = status;
  std::string msg;
  for (char ch : message) {
    if (ch == '"' || ch == '\\') msg += '\\';
    if (static_cast<unsigned char>(ch) >= 0x20) msg += ch;
  }
  res.set_content(std::string("{\"code\":\"") + code + "\",\"message\":\"" + msg + "\"}\n",
                  "application/json");
  if (status == 503) res.set_header("Retry-After", "1");
  c->req.reset();
  Respond(c, res, false, true);
}

void HttpServer::Respond(Conn* c, httplib::Response& res, bool head_only, bool close) {
  bool streaming = false;
  std::string bytes = Serialize(res, head_only, close, &streaming);
  c->close_after_write = close;
  c->req.reset();
  QueueOut(c, std::move(bytes));
}

void HttpServer::QueueOut(Conn* c, std::string bytes) {
  c->out = std::move(bytes);
  c->out_off = 0;
  c->st = ConnState::kWriting;
  c->since = NowMs();
  c->deadline = c->since + limits_.write_timeout_ms;
  Flush(c);
}

void HttpServer::Flush(Conn* c) {
  while (c->out_off < c->out.size()) {
    ssize_t w = ::send(c->fd, c->out.data() + c->out_off, c->out.size() - c->out_off, MSG_NOSIGNAL);
    if (w > 0) {
      c->out_off += static_cast<size_t>(w);
      c->deadline = NowMs() + limits_.write_timeout_ms;
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      UpdateEvents(c);  // wait for EPOLLOUT
      return;
    }
    CloseConn(c);
    return;
  }
  c->out.clear();
  c->out.shrink_to_fit();
  c->out_off = 0;
  if (c->close_after_write || stopping_.load()) {
    Linger(c);
    return;
  }
  // Keep-alive: wait for the next request (it may already be buffered).
  c->st = ConnState::kHead;
  c->since = NowMs();
  c->head_started = false;
  c->deadline = c->since + limits_.idle_timeout_ms;
  UpdateEvents(c);
  if (!c->in.empty()) ready_.push_back(c->id);  // a pipelined request: the loop parses it next
}

void HttpServer::OnWritable(Conn* c) { Flush(c); }

void HttpServer::Linger(Conn* c) {
  // Half-close and discard what the peer still sends for a moment, so that
  // the response is not lost to a reset; nothing read here is buffered.
  ::shutdown(c->fd, SHUT_WR);
  c->st = ConnState::kLinger;
  c->in.clear();
  c->in.shrink_to_fit();
  c->req.reset();
  c->since = NowMs();
  c->deadline = c->since + kLingerMs;
  UpdateEvents(c);
}

void HttpServer::CheckTimers() {
  int64_t now = NowMs();
  for (auto& [id, cp] : conns_) {
    Conn* c = cp.get();
    if (c->dead || c->st == ConnState::kWaiting || now < c->deadline) continue;
    switch (c->st) {
      case ConnState::kHead:
        if (c->head_started) {
          FinishError(c, 408, "request headers not received in time");
        } else {
          CloseConn(c);  // idle keep-alive
        }
        break;
      case ConnState::kBody: FinishError(c, 408, "request body not received in time"); break;
      default: CloseConn(c); break;
    }
  }
}

void HttpServer::DrainDone() {
  std::deque<std::unique_ptr<Done>> done;
  {
    std::lock_guard<std::mutex> l(mu_);
    done.swap(done_);
  }
  for (auto& d : done) {
    auto it = conns_.find(d->conn);
    if (it == conns_.end() || it->second->dead) continue;  // the peer left
    Conn* c = it->second.get();
    if (d->stream) {
      StartStream(c, std::move(d));
      continue;
    }
    c->close_after_write = d->close;
    QueueOut(c, std::move(d->bytes));
  }
}

void HttpServer::StartStream(Conn* c, std::unique_ptr<Done> d) {
  if (streams_.load() >= limits_.max_streams || stopping_.load()) {
    httplib::Response res;
    res.status = 503;
    res.set_header("Retry-After", "1");
    if (error_handler_) error_handler_(*d->req, res);
    Respond(c, res, d->head_only, true);
    return;
  }
  // The stream thread takes the socket over; the loop forgets it.
  int fd = c->fd;
  epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
  c->fd = -1;
  CloseConn(c);
  streams_++;
  {
    std::lock_guard<std::mutex> l(stream_mu_);
    stream_fds_.push_back(fd);
  }
  std::shared_ptr<httplib::Response> res = std::move(d->stream);
  bool head_only = d->head_only;
  std::thread([this, fd, res, head_only, req = std::shared_ptr<httplib::Request>(std::move(d->req))] {
    RunStream(fd, res, head_only);
    (void)req;
  }).detach();
}

void HttpServer::RunStream(int fd, std::shared_ptr<httplib::Response> res, bool head_only) {
  const int wt = limits_.write_timeout_ms;
  bool streaming = false;
  std::string head = Serialize(*res, head_only, true, &streaming);
  bool ok = WriteAll(fd, head.data(), head.size(), wt, stopping_);
  if (ok && !head_only) {
    bool chunked = res->is_chunked_content_provider_;
    size_t length = res->content_length_;
    size_t offset = 0;
    bool done = false;
    httplib::DataSink sink;
    sink.write = [&](const char* data, size_t n) -> bool {
      if (!ok || stopping_.load()) return ok = false;
      if (n == 0) return true;
      if (chunked) {
        char hex[32];
        int hn = std::snprintf(hex, sizeof hex, "%zx\r\n", n);
        ok = WriteAll(fd, hex, static_cast<size_t>(hn), wt, stopping_) &&
             WriteAll(fd, data, n, wt, stopping_) && WriteAll(fd, "\r\n", 2, wt, stopping_);
      } else {
        ok = WriteAll(fd, data, n, wt, stopping_);
      }
      offset += n;
      return ok;
    };
    sink.done = [&] {
      if (done) return;
      done = true;
      if (chunked && ok) ok = WriteAll(fd, "0\r\n\r\n", 5, wt, stopping_);
    };
    sink.is_writable = [&]() -> bool {
      if (!ok || stopping_.load()) return false;
      pollfd p{fd, POLLOUT, 0};
      int r = ::poll(&p, 1, 0);
      return r >= 0 && !(p.revents & (POLLERR | POLLHUP | POLLNVAL));
    };
    while (ok && !done && !stopping_.load()) {
      if (length > 0 && offset >= length) break;
      bool more = false;
      try {
        more = res->content_provider_(offset, length > 0 ? length - offset : 0, sink);
      } catch (...) {
        more = false;
      }
      if (!more) {
        ok = false;
        break;
      }
    }
    res->content_provider_success_ = ok;
  }
  {
    std::lock_guard<std::mutex> l(stream_mu_);
    stream_fds_.erase(std::remove(stream_fds_.begin(), stream_fds_.end(), fd), stream_fds_.end());
    ::shutdown(fd, SHUT_RDWR);
    ::close(fd);
  }
  res.reset();  // runs the provider's releaser here, not in the loop
  {
    std::lock_guard<std::mutex> l(stream_mu_);
    streams_--;
    stream_cv_.notify_all();
  }
}

}  // namespace artel::server
