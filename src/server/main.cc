// arteld: the Artel daemon. Thin: parses the config file and flags, opens
// the `Daemon` (standalone) or the Kubernetes controller (`--kubeconfig`,
// `--kubernetes`), both backends of the control loop, serves the API over
// their `Service` interface until SIGTERM/SIGINT, then shuts down
// gracefully (stop accepting, stop the loop, write a snapshot).

#include <signal.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <thread>

#include "kube/controller.h"
#include "kube/jobs.h"
#include "kube/kubeconfig.h"
#include "server/api.h"
#include "server/auth.h"
#include "server/config.h"
#include "server/daemon.h"

int main(int argc, char** argv) {
  using namespace artel::server;
  CLI::App app{"arteld: the Artel GPU scheduler daemon"};
  std::string config_file, listen, data_dir, fake_gpus, tokens, tls_cert, tls_key, log_format, log_level;
  std::vector<std::string> manifests;
  size_t max_body = 0;
  double rate = -1, burst = -1;
  int64_t grace_s = -1;
  int threads = 0;
  int header_timeout_ms = -1, idle_timeout_ms = -1, body_timeout_ms = -1, write_timeout_ms = -1;
  int max_conns = -1, max_conns_peer = -1, max_streams = -1;
  std::string retention;
  bool stop_on_exit = false, fair_sharing = false;
  std::string kubeconfig, kube_context, kueue_version;
  bool kubernetes = false;
  app.add_option("--config", config_file, "YAML config file (docs/daemon.md)");
  app.add_option("--listen", listen,
                 "HOST:PORT to serve on (default 127.0.0.1:7433; port 0 = any free port)");
  app.add_option("--data-dir", data_dir, "Directory for the journal, snapshots and pod logs");
  app.add_option("--fake-gpus", fake_gpus,
                 "Fake GPU inventory, e.g. 8xH100-80GB,4xA100-40GB (default: NVML)");
  app.add_option("--tokens", tokens, "Tokens file (bearer token -> user, role, namespaces)");
  app.add_option("--tls-cert", tls_cert, "TLS certificate (PEM); with --tls-key serves HTTPS");
  app.add_option("--tls-key", tls_key, "TLS private key (PEM)");
  app.add_option("--manifests,-m", manifests, "Manifest files or directories applied at start");
  app.add_option("--log-format", log_format, "logfmt or json")->check(CLI::IsMember({"logfmt", "json"}));
  app.add_option("--log-level", log_level, "debug, info, warn or error")
      ->check(CLI::IsMember({"debug", "info", "warn", "error"}));
  app.add_option("--max-body-bytes", max_body, "Largest accepted request body (413 above)");
  app.add_option("--rate-limit", rate, "Requests per second per user (0 = unlimited; 429 above)");
  app.add_option("--rate-burst", burst, "Rate-limit bucket size (default 2 x rate)");
  app.add_option("--grace-period", grace_s, "Default seconds between SIGTERM and SIGKILL on preemption");
  app.add_option("--threads", threads, "HTTP handler threads");
  app.add_option("--http-header-timeout-ms", header_timeout_ms,
                 "Time allowed for a request line and headers (408 and close after)");
  app.add_option("--http-idle-timeout-ms", idle_timeout_ms,
                 "Idle keep-alive connections are closed after this");
  app.add_option("--http-body-timeout-ms", body_timeout_ms,
                 "Time allowed for a whole request body after its headers (408 and close after)");
  app.add_option("--http-write-timeout-ms", write_timeout_ms,
                 "A response that makes no progress for this long is dropped");
  app.add_option("--http-max-connections", max_conns, "Open connections in all (503 above)");
  app.add_option("--http-max-connections-per-peer", max_conns_peer,
                 "Open connections per client address (503 above)");
  app.add_option("--http-max-streams", max_streams, "Concurrent watch streams (503 above)");
  app.add_option("--finished-retention", retention,
                 "How long finished and cancelled workloads stay listed (e.g. 24h, 7d, 0s, never)");
  app.add_flag("--stop-workloads-on-exit", stop_on_exit,
               "Stop running pods on shutdown (default: leave them for re-adoption)");
  app.add_flag("--fair-sharing", fair_sharing, "Enable fair sharing");
  app.add_option("--kubeconfig", kubeconfig,
                 "Kubernetes mode: run as a Kueue-compatible controller against the cluster of this "
                 "kubeconfig (docs/kubernetes.md); no journal, no local pods");
  app.add_flag("--kubernetes", kubernetes,
               "Kubernetes mode with the in-cluster service-account config (or $KUBECONFIG)");
  app.add_option("--kube-context", kube_context, "kubeconfig context (default: current-context)");
  app.add_option("--kueue-api-version", kueue_version,
                 "v1beta2 or v1beta1 (default: discovered, v1beta2 preferred)")
      ->check(CLI::IsMember({"v1beta2", "v1beta1"}));
  int64_t kube_full_pass_ms = 10000;
  app.add_option("--kube-queue-status-full-pass-ms", kube_full_pass_ms,
                 "Kubernetes mode: rebuild every queue status at least this often even when nothing "
                 "they depend on was seen to change (0: only on changes)")
      ->check(CLI::NonNegativeNumber);
  std::vector<std::string> kube_integrations = {"batch/job", "pod", "podgroup"};
  app.add_option("--kube-integrations", kube_integrations,
                 "Kubernetes mode: the kinds Artel turns into Workloads, as Kueue's integrations.frameworks "
                 "(batch/job, pod, podgroup = Volcano's and KAI's PodGroups; none)")
      ->delimiter(',')
      ->check(CLI::IsMember({"batch/job", "pod", "podgroup", "none"}));
  CLI11_PARSE(app, argc, argv);

  ArteldConfig cfg;
  if (!config_file.empty()) {
    if (artel::Status s = LoadArteldConfig(config_file, &cfg); !s.ok()) {
      std::cerr << "arteld: " << s.ToString() << "\n";
      return 2;
    }
  }
  if (!listen.empty()) {
    if (artel::Status s = ParseListen(listen, &cfg.api.host, &cfg.api.port); !s.ok()) {
      std::cerr << "arteld: " << s.message() << "\n";
      return 2;
    }
  }
  if (!data_dir.empty()) cfg.daemon.data_dir = data_dir;
  if (!fake_gpus.empty()) cfg.daemon.fake_gpus = fake_gpus;
  if (!tokens.empty()) cfg.tokens_file = tokens;
  if (!tls_cert.empty()) cfg.api.tls_cert = tls_cert;
  if (!tls_key.empty()) cfg.api.tls_key = tls_key;
  if (!manifests.empty()) cfg.daemon.manifests = manifests;
  if (log_format == "json") cfg.log_format = Logger::Format::kJson;
  if (log_format == "logfmt") cfg.log_format = Logger::Format::kLogfmt;
  if (log_level == "debug") cfg.log_level = LogLevel::kDebug;
  if (log_level == "info") cfg.log_level = LogLevel::kInfo;
  if (log_level == "warn") cfg.log_level = LogLevel::kWarn;
  if (log_level == "error") cfg.log_level = LogLevel::kError;
  if (max_body > 0) cfg.api.max_body_bytes = max_body;
  if (rate >= 0) cfg.api.rate_qps = rate;
  if (burst >= 0) cfg.api.rate_burst = burst;
  if (grace_s >= 0) cfg.daemon.default_grace_ms = grace_s * 1000;
  if (threads > 0) cfg.api.threads = threads;
  if (header_timeout_ms > 0) cfg.api.header_timeout_ms = header_timeout_ms;
  if (idle_timeout_ms > 0) cfg.api.idle_timeout_ms = idle_timeout_ms;
  if (body_timeout_ms > 0) cfg.api.body_timeout_ms = body_timeout_ms;
  if (write_timeout_ms > 0) cfg.api.write_timeout_ms = write_timeout_ms;
  if (max_conns > 0) cfg.api.max_connections = max_conns;
  if (max_conns_peer > 0) cfg.api.max_connections_per_peer = max_conns_peer;
  if (max_streams > 0) cfg.api.max_streams = max_streams;
  if (!retention.empty()) {
    artel::Result<int64_t> ms = artel::server::ParseRetention(retention);
    if (!ms.ok()) {
      std::cerr << "arteld: --finished-retention: " << ms.status().message() << "\n";
      return 2;
    }
    cfg.daemon.finished_retention_ms = *ms;
  }
  if (stop_on_exit) cfg.daemon.stop_workloads_on_exit = true;
  if (fair_sharing) cfg.daemon.engine.fair_sharing = true;
  bool kube_mode = kubernetes || !kubeconfig.empty();
  if (kube_mode && (!cfg.daemon.fake_gpus.empty() || !cfg.daemon.manifests.empty())) {
    std::cerr << "arteld: --fake-gpus and --manifests are standalone options; in Kubernetes mode the "
                 "configuration comes from the cluster (kubectl apply)\n";
    return 2;
  }
  if (!kube_mode && cfg.daemon.data_dir.empty()) {
    std::cerr << "arteld: --data-dir (or dataDir in --config) is required\n";
    return 2;
  }
  if (cfg.api.tls_cert.empty() != cfg.api.tls_key.empty()) {
    std::cerr << "arteld: --tls-cert and --tls-key go together\n";
    return 2;
  }

  // Block the shutdown signals in every thread; main waits for them below.
  sigset_t sigs;
  sigemptyset(&sigs);
  sigaddset(&sigs, SIGTERM);
  sigaddset(&sigs, SIGINT);
  pthread_sigmask(SIG_BLOCK, &sigs, nullptr);
  signal(SIGPIPE, SIG_IGN);

  Logger log(cfg.log_format, cfg.log_level);
  // Secrets must be private to arteld's user: pods run on this host.
  for (const auto& [file, what] :
       {std::pair<std::string, std::string>{cfg.tokens_file, "tokens file"}, {cfg.api.tls_key, "TLS key"}}) {
    if (file.empty()) continue;
    if (artel::Status s = artel::server::CheckPrivateFile(file, what); !s.ok()) {
      std::cerr << "arteld: " << s.message() << "\n";
      return 2;
    }
  }
  std::unique_ptr<TokenTable> table;
  if (!cfg.tokens_file.empty()) {
    auto t = TokenTable::Load(cfg.tokens_file);
    if (!t.ok()) {
      std::cerr << "arteld: " << t.status().ToString() << "\n";
      return 2;
    }
    table = std::move(t).value();
    log.Info("authentication on", {{"tokens", std::to_string(table->size())}});
  } else {
    log.Warn("no tokens file: authentication is OFF, every caller is an admin");
  }
  bool loopback = cfg.api.host == "127.0.0.1" || cfg.api.host == "localhost" || cfg.api.host == "::1";
  if (!loopback && !table)
    log.Warn("listening beyond loopback without authentication", {{"host", cfg.api.host}});

  std::unique_ptr<Daemon> daemon;
  std::unique_ptr<artel::kube::Controller> controller;
  std::unique_ptr<artel::kube::JobIntegration> jobs;  // Jobs, pods and pod groups (docs/kubernetes.md)
  artel::kube::ClientConfig kube_client_config;
  Service* service = nullptr;
  if (kube_mode) {
    // Kubernetes mode: the cluster is the state (docs/kubernetes.md).
    artel::Result<artel::kube::ClientConfig> kc = !kubeconfig.empty()
                                                      ? artel::kube::LoadKubeconfig(kubeconfig, kube_context)
                                                      : artel::kube::InClusterConfig();
    if (!kc.ok() && kubeconfig.empty()) kc = artel::kube::LoadKubeconfig("", kube_context);
    if (!kc.ok()) {
      std::cerr << "arteld: " << kc.status().ToString() << "\n";
      return 2;
    }
    artel::kube::ControllerOptions co;
    co.engine = cfg.daemon.engine;
    co.loop.tick_ms = cfg.daemon.tick_ms;
    co.loop.schedule_interval_ms = cfg.daemon.schedule_interval_ms;
    co.loop.debounce_ms = cfg.daemon.debounce_ms;
    co.kueue_version = kueue_version;
    co.queue_status_full_pass_ms = kube_full_pass_ms;
    kube_client_config = kc.value();
    controller = std::make_unique<artel::kube::Controller>(std::move(kc).value(), co, &log, [] {
      return std::chrono::duration_cast<std::chrono::milliseconds>(
                 std::chrono::system_clock::now().time_since_epoch())
          .count();
    });
    service = controller.get();
  } else {
    auto d = Daemon::Open(cfg.daemon, &log);
    if (!d.ok()) {
      log.Error("cannot start", {{"error", d.status().ToString()}});
      std::cerr << "arteld: " << d.status().ToString() << "\n";
      return 1;
    }
    daemon = std::move(d).value();
    service = daemon.get();
  }
  ApiServer api(cfg.api, service, table.get(), &log);
  auto port = api.Bind();
  if (!port.ok()) {
    std::cerr << "arteld: " << port.status().message() << "\n";
    return 1;
  }
  if (controller) {
    // Lists the whole cluster before the first scheduling pass.
    if (artel::Status s = controller->Start(); !s.ok()) {
      log.Error("cannot start", {{"error", s.ToString()}});
      std::cerr << "arteld: " << s.ToString() << "\n";
      return 1;
    }
    artel::kube::JobsOptions jo;
    jo.kueue_version = controller->kueue_version();
    auto enabled = [&](const char* k) {
      return std::find(kube_integrations.begin(), kube_integrations.end(), k) != kube_integrations.end();
    };
    jo.jobs = enabled("batch/job");
    jo.pods = enabled("pod");
    jo.podgroups = enabled("podgroup");
    if (jo.jobs || jo.pods || jo.podgroups)
      jobs = std::make_unique<artel::kube::JobIntegration>(kube_client_config, jo, &log, [] {
        return std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::system_clock::now().time_since_epoch())
            .count();
      });
    if (artel::Status s = jobs ? jobs->Start() : artel::Status::Ok(); !s.ok()) {
      log.Error("cannot start", {{"error", s.ToString()}});
      std::cerr << "arteld: " << s.ToString() << "\n";
      return 1;
    }
  } else {
    daemon->Start();
  }
  std::string scheme = api.tls() ? "https" : "http";
  std::string host = cfg.api.host.find(':') != std::string::npos ? "[" + cfg.api.host + "]" : cfg.api.host;
  std::string url = scheme + "://" + host + ":" + std::to_string(*port);
  if (controller) {
    log.Info("listening", {{"url", url}, {"mode", "kubernetes"}, {"kueue", controller->kueue_version()}});
  } else {
    log.Info("listening",
             {{"url", url}, {"data_dir", cfg.daemon.data_dir}, {"gpu_mode", daemon->gpu_mode()}});
  }
  std::printf("listening on %s\n", url.c_str());
  std::fflush(stdout);
  std::thread server([&] { api.Serve(); });

  int sig = 0;
  sigwait(&sigs, &sig);
  log.Info("shutting down", {{"signal", sig == SIGTERM ? "SIGTERM" : "SIGINT"}});
  api.Stop();
  if (jobs) jobs->Stop();
  if (controller) controller->Stop();
  if (daemon) daemon->Shutdown();
  server.join();
  log.Info("stopped");
  return 0;
}
