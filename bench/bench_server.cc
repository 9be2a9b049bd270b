// bench_server: durable submissions per second through arteld's HTTP API
// over loopback, with p50/p99 latency (docs/performance.md, "Daemon").
//
// Runs the real `Daemon` + `ApiServer` in this process on a free loopback
// port with a temporary data dir (SQLite journal, synchronous=FULL, group
// commit), then C client threads, each on one keep-alive connection, POST
// N workloads in total as fast as they can. Every 201 is a durable
// acknowledgement. The engine loop runs concurrently and journals its own
// admissions. Figures: docs/performance.md, "Daemon".
//
//   bench_server [--requests N] [--clients C]     (other flags are ignored)

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "server/api.h"
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
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: default, namespace: bench}
spec: {clusterQueue: bench}
)";

}  // namespace

int main(int argc, char** argv) {
  int requests = 20000, clients = 16;
  for (int i = 1; i + 1 < argc; ++i) {
    if (!std::strcmp(argv[i], "--requests"))
      requests = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--clients"))
      clients = std::atoi(argv[++i]);
  }
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("artel-bench-server-" + std::to_string(getpid()));
  fs::create_directories(dir);
  { std::ofstream(dir / "cluster.yaml") << kManifests; }

  artel::server::Logger log(artel::server::Logger::Format::kLogfmt, artel::server::LogLevel::kWarn);
  artel::server::DaemonOptions opts;
  opts.data_dir = (dir / "data").string();
  opts.fake_gpus = "8xA100-80GB";
  opts.manifests = {(dir / "cluster.yaml").string()};
  auto daemon = artel::server::Daemon::Open(opts, &log);
  if (!daemon.ok()) {
    std::fprintf(stderr, "bench_server: %s\n", daemon.status().ToString().c_str());
    return 1;
  }
  (*daemon)->Start();
  artel::server::ApiOptions api_opts;
  api_opts.port = 0;
  api_opts.threads = clients + 8;
  artel::server::ApiServer api(api_opts, daemon->get(), nullptr, &log);
  auto port = api.Bind();
  if (!port.ok()) return 1;
  std::thread server([&] { api.Serve(); });

  std::vector<std::vector<double>> lat(clients);
  std::atomic<int> next{0}, errors{0};
  auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      httplib::Client cli("127.0.0.1", *port);
      cli.set_keep_alive(true);
      cli.set_tcp_nodelay(true);
      while (true) {
        int i = next++;
        if (i >= requests) break;
        std::string body =
            R"({"metadata":{"name":"w-)" + std::to_string(i) +
            R"(","namespace":"bench"},"spec":{"queueName":"default","podSets":[{"count":1,"requests":{"cpu":"1"}}]}})";
        auto s = std::chrono::steady_clock::now();
        auto r = cli.Post("/api/v1/workloads", body, "application/json");
        double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - s).count();
        if (!r || r->status != 201) {
          if (errors++ < 3) {
            std::fprintf(stderr, "error: %s\n",
                         r ? (std::to_string(r->status) + " " + r->body).c_str()
                           : httplib::to_string(r.error()).c_str());
          }
        }
        lat[c].push_back(ms);
      }
    });
  }
  for (auto& t : threads) t.join();
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::vector<double> all;
  for (auto& v : lat) all.insert(all.end(), v.begin(), v.end());
  std::sort(all.begin(), all.end());
  auto q = [&](double p) {
    return all.empty() ? 0 : all[std::min(all.size() - 1, static_cast<size_t>(p * all.size()))];
  };
  std::printf("bench_server: %d durable submissions, %d clients, %d errors\n", requests, clients,
              errors.load());
  std::printf("  throughput  %.0f submissions/s\n", requests / secs);
  std::printf("  latency     p50 %.2f ms   p99 %.2f ms   max %.2f ms\n", q(0.50), q(0.99),
              all.empty() ? 0 : all.back());
  std::printf("  target      >= 5000/s with p99 <= 20 ms: %s\n",
              requests / secs >= 5000 && q(0.99) <= 20 ? "PASS" : "MISS");
  api.Stop();
  (*daemon)->Shutdown();
  server.join();
  fs::remove_all(dir);
  return errors.load() == 0 ? 0 : 1;
}
