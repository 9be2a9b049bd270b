// bench_http_overload: arteld's API under connection abuse (docs/performance.md,
// "HTTP under abuse"; audit D4). Runs the real `Daemon` + `ApiServer` in this process
// on a free loopback port, with authentication on, then:
//   - holds 200 idle keep-alive connections (each after one request) and
//     100 slowloris connections (one header byte per second, reopened when
//     the header timeout closes them);
//   - drives normal traffic from C client threads, each on one keep-alive
//     connection (authenticated GET /api/v1/whoami and /api/v1/clusterqueues);
//   - probes /healthz on a fresh connection every 5 ms, as a health checker.
// Prints /healthz p50/p99/max latency and the normal req/s served, and checks
// the targets: /healthz p99 < 50 ms and >= 3,000 req/s (a `met`/`MISSED`
// line, for information; the exit status is 0 unless the setup fails).
// Figures: docs/performance.md, "HTTP under abuse".
//
//   bench_http_overload [--seconds S] [--clients C] [--idle N] [--slow N]

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "server/api.h"
#include "server/auth.h"
#include "server/daemon.h"

namespace {

const char* kManifests = R"(apiVersion: v1
kind: Namespace
metadata: {name: bench, labels: {team: bench}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: a100}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: bench}
spec:
  namespaceSelector: {}
  resourceGroups:
    - coveredResources: [nvidia.com/gpu]
      flavors: [{name: a100, resources: [{name: nvidia.com/gpu, nominalQuota: 64}]}]
)";

const char* kTokens = R"(tokens:
  - {token: bench-admin-token, user: bench, role: admin}
)";

using Clock = std::chrono::steady_clock;

int Connect(int port) {
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

bool SendAll(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = ::send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

// Reads one response with a Content-Length body; returns its status (0 on
// error or after `timeout_ms`).
int ReadResponse(int fd, std::string& buf, int timeout_ms) {
  auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    size_t e = buf.find("\r\n\r\n");
    if (e != std::string::npos) {
      size_t cl = 0;
      size_t p = buf.find("Content-Length: ");
      if (p != std::string::npos && p < e) cl = std::stoul(buf.substr(p + 16));
      if (buf.size() >= e + 4 + cl) {
        int status = std::atoi(buf.c_str() + 9);
        buf.erase(0, e + 4 + cl);
        return status;
      }
    }
    int left = static_cast<int>(
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count());
    if (left <= 0) return 0;
    pollfd pf{fd, POLLIN, 0};
    if (::poll(&pf, 1, left) <= 0) continue;
    char tmp[16384];
    ssize_t n = ::recv(fd, tmp, sizeof tmp, 0);
    if (n <= 0) return 0;
    buf.append(tmp, static_cast<size_t>(n));
  }
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

}  // namespace

int main(int argc, char** argv) {
  int seconds = 5, clients = 8, n_idle = 200, n_slow = 100;
  for (int i = 1; i + 1 < argc; ++i) {
    if (!std::strcmp(argv[i], "--seconds"))
      seconds = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--clients"))
      clients = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--idle"))
      n_idle = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--slow"))
      n_slow = std::atoi(argv[++i]);
  }
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("artel-bench-http-" + std::to_string(getpid()));
  fs::create_directories(dir);
  { std::ofstream(dir / "cluster.yaml") << kManifests; }

  artel::server::Logger log(artel::server::Logger::Format::kLogfmt, artel::server::LogLevel::kWarn);
  artel::server::DaemonOptions opts;
  opts.data_dir = (dir / "data").string();
  opts.fake_gpus = "8xA100-80GB";
  opts.manifests = {(dir / "cluster.yaml").string()};
  auto daemon = artel::server::Daemon::Open(opts, &log);
  if (!daemon.ok()) {
    std::fprintf(stderr, "bench_http_overload: %s\n", daemon.status().ToString().c_str());
    return 1;
  }
  auto tokens = artel::server::TokenTable::Parse(kTokens, "bench");
  if (!tokens.ok()) return 1;
  (*daemon)->Start();
  artel::server::ApiOptions api_opts;
  api_opts.port = 0;
  artel::server::ApiServer api(api_opts, daemon->get(), tokens->get(), &log);
  auto port_r = api.Bind();
  if (!port_r.ok()) {
    std::fprintf(stderr, "bench_http_overload: %s\n", port_r.status().ToString().c_str());
    return 1;
  }
  int port = *port_r;
  std::thread server([&] { api.Serve(); });

  // 1. Idle keep-alive connections, each after one request.
  std::vector<int> idle;
  for (int i = 0; i < n_idle; ++i) {
    int fd = Connect(port);
    std::string buf;
    if (fd < 0 || !SendAll(fd, "GET /healthz HTTP/1.1\r\nHost: b\r\n\r\n") ||
        ReadResponse(fd, buf, 5000) != 200) {
      std::fprintf(stderr, "bench_http_overload: idle connection %d failed\n", i);
      return 1;
    }
    idle.push_back(fd);
  }
  // 2. Slowloris: one header byte per second; reopened when closed.
  std::atomic<bool> stop{false};
  std::atomic<int> slow_open{0}, slow_reopened{0};
  std::thread slowloris([&] {
    std::vector<int> fds(static_cast<size_t>(n_slow), -1);
    auto open_one = [&](int& fd) {
      fd = Connect(port);
      if (fd >= 0) SendAll(fd, "GET /healthz HTTP/1.1\r\nHost: b\r\nX-Slow: ");
    };
    for (int& fd : fds) open_one(fd);
    slow_open = n_slow;
    while (!stop.load()) {
      for (int& fd : fds) {
        char tmp[512];
        if (fd >= 0 && ::recv(fd, tmp, sizeof tmp, MSG_DONTWAIT) == 0) {  // closed by the server
          ::close(fd);
          open_one(fd);
          slow_reopened++;
          continue;
        }
        if (fd >= 0 && !SendAll(fd, "a")) {
          ::close(fd);
          open_one(fd);
          slow_reopened++;
        }
      }
      pollfd none{-1, 0, 0};
      ::poll(&none, 1, 1000);  // pace: one byte per connection per second
    }
    for (int fd : fds) {
      if (fd >= 0) ::close(fd);
    }
  });
  while (slow_open.load() < n_slow) std::this_thread::yield();

  // 3. Normal traffic and the /healthz probe, for `seconds`.
  auto end = Clock::now() + std::chrono::seconds(seconds);
  std::atomic<long> ok{0}, failed{0};
  std::mutex lat_mu;
  std::vector<double> lat;  // normal requests, ms
  std::vector<std::thread> workers;
  for (int c = 0; c < clients; ++c) {
    workers.emplace_back([&, c] {
      std::vector<double> mine;
      int fd = Connect(port);
      std::string buf;
      const std::string reqs[2] = {
          "GET /api/v1/whoami HTTP/1.1\r\nHost: b\r\nAuthorization: Bearer bench-admin-token\r\n\r\n",
          "GET /api/v1/clusterqueues HTTP/1.1\r\nHost: b\r\nAuthorization: Bearer bench-admin-token\r\n\r\n"};
      for (long i = c; Clock::now() < end; ++i) {
        auto t0 = Clock::now();
        int status = fd >= 0 && SendAll(fd, reqs[i % 2]) ? ReadResponse(fd, buf, 5000) : 0;
        if (status == 200) {
          ok++;
          mine.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
        } else {
          failed++;
          if (fd >= 0) ::close(fd);
          fd = Connect(port);
          buf.clear();
        }
      }
      if (fd >= 0) ::close(fd);
      std::lock_guard<std::mutex> l(lat_mu);
      lat.insert(lat.end(), mine.begin(), mine.end());
    });
  }
  std::vector<double> health;
  long health_failed = 0;
  auto start = Clock::now();
  while (Clock::now() < end) {
    auto t0 = Clock::now();
    int fd = Connect(port);
    std::string buf;
    int status = fd >= 0 && SendAll(fd, "GET /healthz HTTP/1.1\r\nHost: b\r\nConnection: close\r\n\r\n")
                     ? ReadResponse(fd, buf, 5000)
                     : 0;
    if (fd >= 0) ::close(fd);
    if (status == 200) {
      health.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    } else {
      health_failed++;
    }
    pollfd none{-1, 0, 0};
    ::poll(&none, 1, 5);
  }
  for (auto& t : workers) t.join();
  double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  stop = true;
  slowloris.join();
  int idle_alive = 0;
  for (int fd : idle) {
    char tmp[16];
    ssize_t n = ::recv(fd, tmp, sizeof tmp, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) idle_alive++;
    ::close(fd);
  }

  double rps = static_cast<double>(ok.load()) / elapsed;
  double h50 = Percentile(health, 0.5), h99 = Percentile(health, 0.99),
         hmax = health.empty() ? 0 : *std::max_element(health.begin(), health.end());
  std::printf(
      "held: %d idle keep-alive (%d still open at the end), %d slowloris (%d reopened after the header "
      "timeout)\n",
      n_idle, idle_alive, n_slow, slow_reopened.load());
  std::printf("normal traffic: %d clients, %ld ok, %ld failed, %.0f req/s, p50 %.2f ms, p99 %.2f ms\n",
              clients, ok.load(), failed.load(), rps, Percentile(lat, 0.5), Percentile(lat, 0.99));
  std::printf("/healthz (fresh connection each): %zu ok, %ld failed, p50 %.2f ms, p99 %.2f ms, max %.2f ms\n",
              health.size(), health_failed, h50, h99, hmax);
  bool pass = h99 < 50 && health_failed == 0 && rps >= 3000;
  std::printf("targets (/healthz p99 < 50 ms, >= 3000 req/s): %s\n", pass ? "met" : "MISSED");
  api.Stop();
  (*daemon)->Shutdown();
  server.join();
  fs::remove_all(dir);
  return 0;
}
