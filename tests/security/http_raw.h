// Raw HTTP/1.1 over loopback sockets for the security tests of arteld's HTTP
// layer: what a hostile client sends (partial heads, huge or missing lengths,
// bad chunks), with every wait bounded by a deadline (poll), never a sleep.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>

namespace artel::testing {

inline int64_t NowMsForTest() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// A blocking loopback socket; -1 on failure.
inline int RawConnect(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

inline bool RawSend(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = ::send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

struct RawResponse {
  int status = 0;  // 0: no response before the deadline or the close
  std::string head;
  std::string body;
  bool closed = false;  // the server closed the connection (EOF or reset)
};

// Reads one response (head + Content-Length body) within `timeout_ms`.
inline RawResponse RawRead(int fd, int timeout_ms, std::string* rest = nullptr) {
  RawResponse r;
  std::string buf = rest ? *rest : std::string();
  int64_t deadline = NowMsForTest() + timeout_ms;
  auto complete = [&]() -> bool {
    size_t e = buf.find("\r\n\r\n");
    if (e == std::string::npos) return false;
    std::string head = buf.substr(0, e + 2);
    size_t cl = 0;
    std::string lower = head;
    for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    size_t p = lower.find("\r\ncontent-length:");
    if (p != std::string::npos) cl = std::stoul(head.substr(p + 17));
    if (buf.size() < e + 4 + cl) return false;
    r.head = head;
    r.body = buf.substr(e + 4, cl);
    if (head.rfind("HTTP/1.", 0) == 0 && head.size() > 12) r.status = std::stoi(head.substr(9, 3));
    if (rest) *rest = buf.substr(e + 4 + cl);
    return true;
  };
  while (!complete()) {
    int64_t left = deadline - NowMsForTest();
    if (left <= 0) return r;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left)) <= 0) continue;
    char tmp[8192];
    ssize_t n = ::recv(fd, tmp, sizeof tmp, 0);
    if (n <= 0) {
      r.closed = true;
      complete();
      return r;
    }
    buf.append(tmp, static_cast<size_t>(n));
  }
  return r;
}

// True when the server closes `fd` (EOF or reset) within `timeout_ms`;
// anything it sends first is discarded.
inline bool RawWaitClosed(int fd, int timeout_ms) {
  int64_t deadline = NowMsForTest() + timeout_ms;
  for (;;) {
    int64_t left = deadline - NowMsForTest();
    if (left <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left)) <= 0) continue;
    char tmp[4096];
    ssize_t n = ::recv(fd, tmp, sizeof tmp, 0);
    if (n <= 0) return true;
  }
}

// One request on a fresh connection; returns the response.
inline RawResponse RawRequest(int port, const std::string& request, int timeout_ms) {
  int fd = RawConnect(port);
  if (fd < 0) return {};
  RawSend(fd, request);
  RawResponse r = RawRead(fd, timeout_ms);
  ::close(fd);
  return r;
}

// VmHWM / VmRSS of a process in KiB (0 when unreadable).
inline long ProcStatusKb(int pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field + ":", 0) == 0) return std::stol(line.substr(field.size() + 1));
  }
  return 0;
}

}  // namespace artel::testing
