#include "cli/http.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <optional>

namespace artel::cli::http {
namespace {

bool IEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

bool ParseUint(std::string_view s, int base, uint64_t* out) {
  if (s.empty() || s.size() > 16) return false;
  uint64_t v = 0;
  for (char c : s) {
    int d;
    if (c >= '0' && c <= '9') {
      d = c - '0';
    } else if (base == 16 && c >= 'a' && c <= 'f') {
      d = c - 'a' + 10;
    } else if (base == 16 && c >= 'A' && c <= 'F') {
      d = c - 'A' + 10;
    } else {
      return false;
    }
    v = v * static_cast<uint64_t>(base) + static_cast<uint64_t>(d);
  }
  *out = v;
  return true;
}

std::string ErrnoText(int e) { return std::strerror(e); }

int64_t NowMs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1000000;
}

// A connected socket, or -1 with *err set.
int Connect(const Url& u, int timeout_ms, std::string* err) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* res = nullptr;
  const std::string port = std::to_string(u.port);
  if (int rc = getaddrinfo(u.host.c_str(), port.c_str(), &hints, &res); rc != 0) {
    *err = "cannot resolve " + u.host + ": " + gai_strerror(rc);
    return -1;
  }
  const int64_t deadline = NowMs() + timeout_ms;
  int fd = -1;
  for (addrinfo* a = res; a != nullptr; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) {
      *err = "socket: " + ErrnoText(errno);
      continue;
    }
    int rc = connect(fd, a->ai_addr, a->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      int left = static_cast<int>(deadline - NowMs());
      rc = left > 0 ? poll(&p, 1, left) : 0;
      if (rc == 1) {
        int so = 0;
        socklen_t len = sizeof so;
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &so, &len);
        if (so == 0) {
          rc = 0;
        } else {
          errno = so;
          rc = -1;
        }
      } else if (rc == 0) {
        errno = ETIMEDOUT;
        rc = -1;
      }
    }
    if (rc == 0) {
      fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      break;
    }
    *err = ErrnoText(errno);
    close(fd);
    fd = -1;
  }
  freeaddrinfo(res);
  return fd;
}

void SetIoTimeout(int fd, int ms) {
  timeval tv{ms / 1000, (ms % 1000) * 1000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

std::string OpenSslError() {
  unsigned long e = ERR_get_error();
  if (e == 0) return "";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  ERR_clear_error();
  return buf;
}

// One connection: plain or TLS.
class Conn {
 public:
  explicit Conn(int fd) : fd_(fd) {}
  ~Conn() {
    if (ssl_ != nullptr) SSL_free(ssl_);
    if (ctx_ != nullptr) SSL_CTX_free(ctx_);
    close(fd_);
  }
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;

  bool StartTls(const Url& u, const Options& o, std::string* err) {
    ctx_ = SSL_CTX_new(TLS_client_method());
    if (ctx_ == nullptr) {
      *err = "TLS setup: " + OpenSslError();
      return false;
    }
    SSL_CTX_set_min_proto_version(ctx_, TLS1_2_VERSION);
    if (o.insecure) {
      SSL_CTX_set_verify(ctx_, SSL_VERIFY_NONE, nullptr);
    } else {
      SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);
      if (!o.ca_file.empty()) {
        if (SSL_CTX_load_verify_locations(ctx_, o.ca_file.c_str(), nullptr) != 1) {
          *err = "cannot read the CA bundle " + o.ca_file + ": " + OpenSslError();
          return false;
        }
      } else {
        SSL_CTX_set_default_verify_paths(ctx_);
      }
    }
    ssl_ = SSL_new(ctx_);
    if (ssl_ == nullptr || SSL_set_fd(ssl_, fd_) != 1) {
      *err = "TLS setup: " + OpenSslError();
      return false;
    }
    in6_addr ip{};
    const bool literal =
        inet_pton(AF_INET, u.host.c_str(), &ip) == 1 || inet_pton(AF_INET6, u.host.c_str(), &ip) == 1;
    if (!literal) SSL_set_tlsext_host_name(ssl_, u.host.c_str());
    if (!o.insecure) {
      X509_VERIFY_PARAM* param = SSL_get0_param(ssl_);
      int ok = literal ? X509_VERIFY_PARAM_set1_ip_asc(param, u.host.c_str())
                       : X509_VERIFY_PARAM_set1_host(param, u.host.c_str(), 0);
      if (ok != 1) {
        *err = "TLS setup: " + OpenSslError();
        return false;
      }
    }
    if (SSL_connect(ssl_) != 1) {
      long v = SSL_get_verify_result(ssl_);
      std::string why = v != X509_V_OK ? X509_verify_cert_error_string(v) : OpenSslError();
      *err = why.empty() ? "handshake failed" : why;
      return false;
    }
    return true;
  }

  // Whole buffer, or false.
  bool Write(std::string_view data, std::string* err) {
    while (!data.empty()) {
      ssize_t n;
      if (ssl_ != nullptr) {
        int r = SSL_write(ssl_, data.data(), static_cast<int>(std::min<size_t>(data.size(), 1 << 30)));
        n = r > 0 ? r : -1;
        if (r <= 0) *err = "TLS write: " + OpenSslError();
      } else {
        n = send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) *err = errno == EAGAIN ? "timed out" : ErrnoText(errno);
      }
      if (n < 0) return false;
      data.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

  // Bytes read; 0 at the end; -1 on error.
  ssize_t Read(char* buf, size_t len, std::string* err) {
    if (ssl_ != nullptr) {
      int r = SSL_read(ssl_, buf, static_cast<int>(len));
      if (r > 0) return r;
      int e = SSL_get_error(ssl_, r);
      if (e == SSL_ERROR_ZERO_RETURN) return 0;
      // A peer that closes without close_notify: the end, for a body
      // delimited by the connection (lengths are checked by the parser).
      if (e == SSL_ERROR_SYSCALL && ERR_peek_error() == 0 && (errno == 0 || errno == ECONNRESET)) return 0;
      *err = "TLS read: " + OpenSslError();
      return -1;
    }
    for (;;) {
      ssize_t n = recv(fd_, buf, len, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) *err = errno == EAGAIN ? "timed out" : ErrnoText(errno);
      return n;
    }
  }

 private:
  int fd_;
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
};

// SIGPIPE from a TLS write to a closed peer (OpenSSL writes with write(2))
// is blocked for the call and any pending one discarded, without touching
// the process's disposition (stdout to a closed pipe still ends artel).
class SigpipeGuard {
 public:
  SigpipeGuard() {
    sigset_t pipe;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    sigpending(&pending_before_);
    pthread_sigmask(SIG_BLOCK, &pipe, &old_);
  }
  ~SigpipeGuard() {
    if (!sigismember(&pending_before_, SIGPIPE)) {
      sigset_t pipe;
      sigemptyset(&pipe);
      sigaddset(&pipe, SIGPIPE);
      timespec zero{0, 0};
      while (sigtimedwait(&pipe, nullptr, &zero) > 0) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }

 private:
  sigset_t old_{}, pending_before_{};
};

}  // namespace

bool ParseUrl(std::string_view url, Url* out, std::string* err) {
  Url u;
  std::string_view rest = url;
  if (rest.rfind("http://", 0) == 0) {
    rest.remove_prefix(7);
  } else if (rest.rfind("https://", 0) == 0) {
    rest.remove_prefix(8);
    u.tls = true;
  } else if (rest.find("://") != std::string_view::npos) {
    *err = "unsupported scheme in " + std::string(url) + " (http:// or https://)";
    return false;
  }
  rest = rest.substr(0, rest.find_first_of("/?#"));
  std::string_view port;
  if (!rest.empty() && rest.front() == '[') {
    size_t close = rest.find(']');
    if (close == std::string_view::npos) {
      *err = "unclosed [ in " + std::string(url);
      return false;
    }
    u.host = std::string(rest.substr(1, close - 1));
    rest.remove_prefix(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') {
        *err = "expected :port after ] in " + std::string(url);
        return false;
      }
      port = rest.substr(1);
    }
  } else {
    size_t colon = rest.rfind(':');
    u.host = std::string(rest.substr(0, colon));
    if (colon != std::string_view::npos) port = rest.substr(colon + 1);
  }
  if (u.host.empty()) {
    *err = "no host in " + std::string(url);
    return false;
  }
  u.port = u.tls ? 443 : 80;
  if (!port.empty()) {
    uint64_t p = 0;
    if (!ParseUint(port, 10, &p) || p == 0 || p > 65535) {
      *err = "port \"" + std::string(port) + "\" in " + std::string(url) + " is not 1-65535";
      return false;
    }
    u.port = static_cast<int>(p);
  }
  *out = std::move(u);
  return true;
}

bool ResponseParser::Feed(std::string_view bytes, bool eof, std::string* err) {
  buf_.append(bytes);
  return Parse(eof, err);
}

// Moves up to `remaining_` buffered bytes into the body.
void ResponseParser::TakeBody() {
  size_t take = static_cast<size_t>(std::min<uint64_t>(remaining_, buf_.size()));
  body_.append(buf_, 0, take);
  buf_.erase(0, take);
  remaining_ -= take;
}

bool ResponseParser::Parse(bool eof, std::string* err) {
  for (;;) {
    switch (state_) {
      case State::kHead: {
        size_t end = buf_.find("\r\n\r\n", pos_ > 3 ? pos_ - 3 : 0);
        if (end == std::string::npos) {
          pos_ = buf_.size();
          if (buf_.size() > (1 << 20)) *err = "response header over 1 MiB";
          if (eof) *err = "the connection closed before the response header ended";
          return false;
        }
        std::string_view head(buf_.data(), end);
        size_t line_end = head.find("\r\n");
        std::string_view status_line = head.substr(0, line_end);
        if (status_line.rfind("HTTP/1.", 0) != 0 || status_line.size() < 12 || status_line[8] != ' ') {
          *err = "not an HTTP/1.x response";
          return false;
        }
        uint64_t code = 0;
        if (!ParseUint(status_line.substr(9, 3), 10, &code) || code < 100 || code > 999) {
          *err = "bad status line";
          return false;
        }
        status_ = static_cast<int>(code);
        bool chunked = false, has_length = false;
        uint64_t length = 0;
        std::string_view rest =
            line_end == std::string_view::npos ? std::string_view() : head.substr(line_end + 2);
        while (!rest.empty()) {
          size_t e = rest.find("\r\n");
          std::string_view line = rest.substr(0, e);
          rest = e == std::string_view::npos ? std::string_view() : rest.substr(e + 2);
          size_t colon = line.find(':');
          if (colon == std::string_view::npos) continue;
          std::string_view name = Trim(line.substr(0, colon)), value = Trim(line.substr(colon + 1));
          if (IEquals(name, "Content-Length")) {
            if (!ParseUint(value, 10, &length)) {
              *err = "bad Content-Length";
              return false;
            }
            has_length = true;
          } else if (IEquals(name, "Transfer-Encoding")) {
            chunked = value.size() >= 7 && IEquals(value.substr(value.size() - 7), "chunked");
          }
        }
        buf_.erase(0, end + 4);
        pos_ = 0;
        if (status_ < 200) {  // 1xx: an interim answer; the real one follows
          continue;
        }
        if (status_ == 204 || status_ == 304) {
          state_ = State::kDone;
        } else if (chunked) {
          state_ = State::kChunkSize;
        } else if (has_length) {
          remaining_ = length;
          state_ = State::kLength;
        } else {
          state_ = State::kUntilClose;
        }
        continue;
      }
      case State::kLength: {
        TakeBody();
        if (remaining_ == 0) {
          state_ = State::kDone;
          continue;
        }
        if (eof) *err = "the connection closed in the middle of the body";
        return false;
      }
      case State::kChunkSize: {
        size_t e = buf_.find("\r\n");
        if (e == std::string::npos) {
          if (eof) *err = "the connection closed in a chunked body";
          return false;
        }
        std::string_view line(buf_.data(), e);
        line = Trim(line.substr(0, line.find(';')));
        if (!ParseUint(line, 16, &remaining_)) {
          *err = "bad chunk size";
          return false;
        }
        buf_.erase(0, e + 2);
        state_ = remaining_ == 0 ? State::kTrailer : State::kChunkData;
        continue;
      }
      case State::kChunkData: {
        TakeBody();
        if (remaining_ > 0) {
          if (eof) *err = "the connection closed in a chunked body";
          return false;
        }
        state_ = State::kChunkCrlf;
        continue;
      }
      case State::kChunkCrlf: {
        if (buf_.size() < 2) {
          if (eof) *err = "the connection closed in a chunked body";
          return false;
        }
        if (buf_.compare(0, 2, "\r\n") != 0) {
          *err = "chunk not followed by CRLF";
          return false;
        }
        buf_.erase(0, 2);
        state_ = State::kChunkSize;
        continue;
      }
      case State::kTrailer: {
        // Trailer lines, up to an empty line.
        for (;;) {
          size_t e = buf_.find("\r\n");
          if (e == std::string::npos) {
            if (eof) *err = "the connection closed in the trailer";
            return false;
          }
          buf_.erase(0, e + 2);
          if (e == 0) {
            state_ = State::kDone;
            break;
          }
        }
        continue;
      }
      case State::kUntilClose:
        body_.append(buf_);
        buf_.clear();
        if (eof) state_ = State::kDone;
        return eof;
      case State::kDone: return true;
    }
  }
}

Reply Call(const std::string& server, const std::string& method, const std::string& target,
           const std::vector<std::pair<std::string, std::string>>& headers, const std::string& body,
           const Options& opts) {
  Reply out;
  Url u;
  if (!ParseUrl(server, &u, &out.detail)) {
    out.error = Error::kAddress;
    return out;
  }
  std::optional<SigpipeGuard> guard;
  if (u.tls) guard.emplace();
  int fd = Connect(u, opts.connect_timeout_ms, &out.detail);
  if (fd < 0) {
    out.error = Error::kConnection;
    return out;
  }
  Conn conn(fd);
  SetIoTimeout(fd, opts.io_timeout_ms);
  if (u.tls && !conn.StartTls(u, opts, &out.detail)) {
    out.error = Error::kTls;
    return out;
  }
  std::string req;
  req.reserve(256 + body.size());
  req += method + " " + target + " HTTP/1.1\r\nHost: ";
  req += u.host.find(':') != std::string::npos ? "[" + u.host + "]" : u.host;
  if (u.port != (u.tls ? 443 : 80)) req += ":" + std::to_string(u.port);
  req += "\r\nConnection: close\r\nAccept: */*\r\nUser-Agent: artel\r\n";
  for (const auto& [k, v] : headers) req += k + ": " + v + "\r\n";
  if (!body.empty() || method == "POST" || method == "PUT" || method == "PATCH") {
    req += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  }
  req += "\r\n";
  req += body;
  if (!conn.Write(req, &out.detail)) {
    out.error = Error::kIo;
    return out;
  }
  ResponseParser parser;
  char buf[64 * 1024];
  std::string perr;
  for (;;) {
    ssize_t n = conn.Read(buf, sizeof buf, &out.detail);
    if (n < 0) {
      out.error = Error::kIo;
      return out;
    }
    bool done = parser.Feed(std::string_view(buf, static_cast<size_t>(n)), n == 0, &perr);
    if (!perr.empty()) {
      out.error = n == 0 ? Error::kIo : Error::kProtocol;
      out.detail = perr;
      return out;
    }
    if (done) break;
  }
  out.status = parser.status();
  out.body = std::move(parser.body());
  return out;
}

}  // namespace artel::cli::http
