// arteld: the Artel daemon. Thin: parses the config file and flags, opens
// the `Daemon` (standalone) or the Kubernetes controller (`--kubeconfig`,
// `--kubernetes`), both backends of the control loop, serves the API over
// their `Service` interface until SIGTERM/SIGINT, then shuts down
// gracefully (stop accepting, stop the loop, write a snapshot).

#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <optional>
#include <random>
#include <thread>

#include "kube/controller.h"
#include "kube/jobs.h"
#include "kube/kubeconfig.h"
#include "kube/leader.h"
#include "kube/namespace_queues.h"
#include "kube/nodes.h"
#include "kube/ungater.h"
#include "kube/webhook.h"
#include "server/api.h"
#include "server/auth.h"
#include "server/config.h"
#include "server/daemon.h"

namespace {

// "15s", "500ms", "2m" or plain seconds -> milliseconds; -1 when malformed.
int64_t ParseDurationMs(const std::string& text) {
  size_t i = 0;
  while (i < text.size() && (isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
  if (i == 0) return -1;
  double v = 0;
  try {
    v = std::stod(text.substr(0, i));
  } catch (...) {
    return -1;
  }
  std::string unit = text.substr(i);
  if (unit == "ms") return static_cast<int64_t>(v);
  if (unit == "s" || unit.empty()) return static_cast<int64_t>(v * 1000);
  if (unit == "m") return static_cast<int64_t>(v * 60000);
  return -1;
}

int64_t SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Waits up to `ms` for one of `sigs`; the signal, or 0 on timeout.
int WaitSignal(const sigset_t& sigs, int64_t ms) {
  timespec ts{static_cast<time_t>(ms / 1000), static_cast<long>((ms % 1000) * 1000000)};
  int sig = sigtimedwait(&sigs, nullptr, &ts);
  return sig > 0 ? sig : 0;
}

}  // namespace

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
  std::string retention, cuda_shim;
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
  app.add_option(
      "--cuda-shim", cuda_shim,
      "libartel-cuda.so preloaded into pods on GPU memory shares (default: ../lib/ next to arteld; "
      "\"none\" = off)");
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
  int kube_writers = 16;
  app.add_option("--kube-writers", kube_writers,
                 "Kubernetes mode: threads writing Workload statuses, Events and queue statuses "
                 "(each with its own connection and client-side rate limit)")
      ->check(CLI::Range(1, 256));
  int kube_background_writers = 2;
  app.add_option("--kube-background-writers", kube_background_writers,
                 "Kubernetes mode: of the writer threads, how many may write pending explanations and "
                 "queue statuses at once (admissions, evictions and requeues may use all of them)")
      ->check(CLI::Range(1, 256));
  int64_t kube_node_lost_ms = 30000;
  app.add_option("--kube-node-lost-grace-ms", kube_node_lost_ms,
                 "Kubernetes mode: a node not Ready this long is lost; the placed workloads on it are "
                 "evicted (NodeFailures) and requeued")
      ->check(CLI::NonNegativeNumber);
  // Leader election (docs/kubernetes.md, "Leader election").
  bool leader_elect = false;
  artel::kube::LeaderOptions lo;
  std::string lease_duration = "15s", renew_deadline = "10s", retry_period = "2s";
  app.add_flag("--leader-elect", leader_elect,
               "Kubernetes mode: run as one of several replicas; only the holder of the Lease writes");
  app.add_option("--leader-elect-lease-name", lo.lease_name, "Name of the coordination.k8s.io Lease")
      ->capture_default_str();
  app.add_option("--leader-elect-lease-namespace", lo.lease_namespace,
                 "Namespace of the Lease (default: arteld's own namespace in a pod, else the "
                 "kubeconfig context's)");
  app.add_option("--leader-elect-identity", lo.identity,
                 "This replica's holderIdentity (default: hostname_pid_random)");
  app.add_option("--leader-elect-lease-duration", lease_duration,
                 "How long a candidate waits after the last renewal seen before taking the Lease")
      ->capture_default_str();
  app.add_option("--leader-elect-renew-deadline", renew_deadline,
                 "How long the leader keeps trying to renew before it stops and exits")
      ->capture_default_str();
  app.add_option("--leader-elect-retry-period", retry_period,
                 "Time between attempts to take or renew the Lease")
      ->capture_default_str();
  // Admission webhooks (docs/kubernetes.md, "Admission webhooks").
  std::string webhook_listen, webhook_cert, webhook_key;
  app.add_option("--webhook-listen", webhook_listen,
                 "Kubernetes mode: HOST:PORT of the HTTPS admission webhooks (/mutate, /validate)");
  app.add_option("--webhook-cert", webhook_cert, "Serving certificate of the webhooks (PEM)");
  app.add_option("--webhook-key", webhook_key, "Private key of the webhooks' certificate (PEM)");
  std::vector<std::string> kube_integrations = {"batch/job", "pod", "podgroup"};
  app.add_option("--kube-integrations", kube_integrations,
                 "Kubernetes mode: the kinds Artel turns into Workloads, as Kueue's integrations.frameworks "
                 "(batch/job, pod, podgroup = Volcano's and KAI's PodGroups; none)")
      ->delimiter(',')
      ->check(CLI::IsMember({"batch/job", "pod", "podgroup", "none"}));
  // Usage history for the web UI's charts (server/history.h; docs/ui.md).
  std::string history_interval = "10s";
  int64_t history_points = 8640;
  app.add_option(
      "--history-interval", history_interval,
      "Usage history: one sample per ClusterQueue/cohort and GPU flavor every so often (e.g. 10s)");
  app.add_option("--history-points", history_points,
                 "Usage history: samples kept per series (default 8640 = 24 h at 10s; 0 = off)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 20));
  std::string prometheus_url;
  app.add_option("--prometheus-url", prometheus_url,
                 "Usage history longer than the ring: a Prometheus that scrapes this arteld, as "
                 "http://host:port (server/prom_history.h; default none)");
  CLI11_PARSE(app, argc, argv);
  if (!prometheus_url.empty()) {
    artel::Status st = PrometheusHistory::ValidateUrl(prometheus_url);
    if (!st.ok()) {
      std::cerr << "arteld: " << st.message() << "\n";
      return 2;
    }
  }
  const int64_t history_interval_ms = ParseDurationMs(history_interval);
  if (history_interval_ms <= 0) {
    std::cerr << "arteld: --history-interval: bad duration '" << history_interval
              << "' (expected e.g. 10s)\n";
    return 2;
  }
  if (leader_elect) {
    for (auto [text, out] : {std::pair<std::string*, int64_t*>{&lease_duration, &lo.lease_duration_ms},
                             {&renew_deadline, &lo.renew_deadline_ms},
                             {&retry_period, &lo.retry_period_ms}}) {
      *out = ParseDurationMs(*text);
      if (*out <= 0) {
        std::cerr << "arteld: --leader-elect-*: bad duration '" << *text
                  << "' (expected e.g. 15s or 500ms)\n";
        return 2;
      }
    }
    if (std::string why = artel::kube::ValidateLeaderOptions(lo); !why.empty()) {
      std::cerr << "arteld: --leader-elect: " << why << "\n";
      return 2;
    }
  }

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
  if (!cuda_shim.empty()) cfg.daemon.cuda_shim = cuda_shim;
  if (stop_on_exit) cfg.daemon.stop_workloads_on_exit = true;
  if (fair_sharing) cfg.daemon.engine.fair_sharing = true;
  bool kube_mode = kubernetes || !kubeconfig.empty();
  if (kube_mode && (!cfg.daemon.fake_gpus.empty() || !cfg.daemon.manifests.empty())) {
    std::cerr << "arteld: --fake-gpus and --manifests are standalone options; in Kubernetes mode the "
                 "configuration comes from the cluster (kubectl apply)\n";
    return 2;
  }
  if (!webhook_listen.empty() && (!kube_mode || webhook_cert.empty() || webhook_key.empty())) {
    std::cerr << "arteld: --webhook-listen needs Kubernetes mode and --webhook-cert and --webhook-key\n";
    return 2;
  }
  if (webhook_listen.empty() && (!webhook_cert.empty() || !webhook_key.empty())) {
    std::cerr << "arteld: --webhook-cert and --webhook-key need --webhook-listen\n";
    return 2;
  }
  if (leader_elect && !kube_mode) {
    std::cerr << "arteld: --leader-elect needs Kubernetes mode (--kubeconfig or --kubernetes)\n";
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
  for (const auto& [file, what] : {std::pair<std::string, std::string>{cfg.tokens_file, "tokens file"},
                                   {cfg.api.tls_key, "TLS key"},
                                   {webhook_key, "webhook key"}}) {
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
  // Destroyed after the Controller, which stops it (reverse order).
  std::unique_ptr<artel::kube::NodeWatcher> node_watcher;
  std::unique_ptr<artel::kube::Controller> controller;
  std::unique_ptr<artel::kube::NamespaceQueues> namespace_queues;
  std::unique_ptr<artel::kube::TopologyUngater> ungater;
  std::optional<artel::kube::ClientConfig> kube_config;
  std::unique_ptr<artel::kube::LeaderElector> elector;
  std::unique_ptr<artel::kube::JobIntegration> jobs;  // Jobs, pods and pod groups (docs/kubernetes.md)
  Service* service = nullptr;
  if (!kube_mode && !cfg.namespace_queues.templates.empty()) {
    std::cerr << "arteld: kubernetes.namespaceQueues is for Kubernetes mode (--kubeconfig or --kubernetes)\n";
    return 2;
  }
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
    kube_config = kc.value();
    artel::kube::ControllerOptions co;
    co.engine = cfg.daemon.engine;
    co.loop.tick_ms = cfg.daemon.tick_ms;
    co.loop.schedule_interval_ms = cfg.daemon.schedule_interval_ms;
    co.loop.debounce_ms = cfg.daemon.debounce_ms;
    co.kueue_version = kueue_version;
    co.queue_status_full_pass_ms = kube_full_pass_ms;
    co.writers = kube_writers;
    co.background_writers = kube_background_writers;
    node_watcher = std::make_unique<artel::kube::NodeWatcher>(
        kc.value(), artel::kube::NodeWatcherOptions{.lost_grace_ms = kube_node_lost_ms}, &log);
    controller = std::make_unique<artel::kube::Controller>(kc.value(), co, &log, [] {
      return std::chrono::duration_cast<std::chrono::milliseconds>(
                 std::chrono::system_clock::now().time_since_epoch())
          .count();
    });
    controller->SetNodeSource(node_watcher.get());
    service = controller.get();
    if (leader_elect) elector = std::make_unique<artel::kube::LeaderElector>(*kc, lo, &log, SteadyMs);
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
  std::unique_ptr<UsageHistory> history;
  if (history_points > 0) {
    history = std::make_unique<UsageHistory>(
        HistoryOptions{.interval_ms = history_interval_ms, .capacity = static_cast<size_t>(history_points)});
    api.SetHistory(history.get());
  }
  std::unique_ptr<PrometheusHistory> prom_history;
  if (!prometheus_url.empty()) {
    prom_history = std::make_unique<PrometheusHistory>(prometheus_url, /*timeout_ms=*/5000);
    api.SetPrometheusHistory(prom_history.get());
  }
  if (elector) api.SetLeaderCheck([&elector] { return elector->leading(); });
  auto port = api.Bind();
  if (!port.ok()) {
    std::cerr << "arteld: " << port.status().message() << "\n";
    return 1;
  }
  std::string scheme = api.tls() ? "https" : "http";
  std::string host = cfg.api.host.find(':') != std::string::npos ? "[" + cfg.api.host + "]" : cfg.api.host;
  std::string url = scheme + "://" + host + ":" + std::to_string(*port);
  // The webhooks serve on every replica, leader or not.
  std::unique_ptr<artel::kube::WebhookServer> webhook;
  if (!webhook_listen.empty()) {
    artel::kube::WebhookOptions wo;
    wo.cert_file = webhook_cert;
    wo.key_file = webhook_key;
    if (artel::Status s = ParseListen(webhook_listen, &wo.host, &wo.port); !s.ok()) {
      std::cerr << "arteld: --webhook-listen: " << s.message() << "\n";
      return 2;
    }
    webhook = std::make_unique<artel::kube::WebhookServer>(wo, &log);
    auto wport = webhook->Bind();
    if (!wport.ok()) {
      std::cerr << "arteld: " << wport.status().message() << "\n";
      return 1;
    }
    std::string whost = wo.host.find(':') != std::string::npos ? "[" + wo.host + "]" : wo.host;
    log.Info("admission webhooks listening",
             {{"webhook_url", "https://" + whost + ":" + std::to_string(*wport)}});
    webhook->Start();
  }
  std::thread server;
  std::thread watchdog;
  std::atomic<bool> watchdog_stop{false};
  if (elector) {
    // A standby serves the API (empty), the probes and the webhooks while it
    // waits for the Lease; nothing that writes starts before it holds it.
    log.Info("listening", {{"url", url}, {"mode", "kubernetes"}, {"leader_election", "standby"}});
    std::printf("listening on %s\n", url.c_str());
    std::fflush(stdout);
    server = std::thread([&] { api.Serve(); });
    log.Info("leader election: waiting for the lease",
             {{"lease", elector->options().lease_namespace + "/" + elector->options().lease_name},
              {"identity", elector->identity()}});
    std::mt19937 jitter(std::random_device{}());
    while (!elector->TryAcquireOrRenew()) {
      log.Debug("leader election: not the leader", {{"reason", elector->last_error()}});
      int64_t wait = lo.retry_period_ms + static_cast<int64_t>(jitter() % (lo.retry_period_ms / 5 + 1));
      if (int sig = WaitSignal(sigs, wait); sig != 0) {
        log.Info("shutting down", {{"signal", sig == SIGTERM ? "SIGTERM" : "SIGINT"}});
        api.Stop();
        server.join();
        return 0;
      }
    }
    elector->StartRenewing();
    // The leader's watchdog, from now on (also while the Controller lists
    // the cluster): no renewal within the renew deadline means another
    // replica may take the Lease soon, so stop writing at once. A thread of
    // its own, so that a renewal stuck in a request cannot delay it.
    watchdog =
        std::thread([&elector, &log, &watchdog_stop, step = std::max<int64_t>(50, lo.retry_period_ms / 4)] {
          while (!watchdog_stop.load()) {
            if (elector->Lost()) {
              log.Error("leader election: lost the lease; exiting so that no second writer runs",
                        {{"error", elector->last_error()}});
              std::fflush(stderr);
              _exit(1);
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(step));
          }
        });
  }
  if (controller) {
    // Lists the whole cluster before the first scheduling pass.
    // A component that cannot start: stop what runs, give the Lease back.
    auto fail_start = [&](const artel::Status& s) {
      log.Error("cannot start", {{"error", s.ToString()}});
      std::cerr << "arteld: " << s.ToString() << "\n";
      if (server.joinable()) {
        api.Stop();
        server.join();
      }
      if (namespace_queues) namespace_queues->Stop();
      if (ungater) ungater->Stop();
      controller->Stop();
      if (watchdog.joinable()) {
        watchdog_stop = true;
        watchdog.join();
      }
      if (elector) elector->Release();
      return 1;
    };
    if (artel::Status s = controller->Start(); !s.ok()) return fail_start(s);
    if (!cfg.namespace_queues.templates.empty()) {
      // LocalQueues per labelled namespace (docs/kubernetes.md, "Namespaces to queues").
      artel::kube::NamespaceQueuesOptions no;
      no.team_label = cfg.namespace_queues.team_label;
      no.template_label = cfg.namespace_queues.template_label;
      no.default_template = cfg.namespace_queues.default_template;
      no.resync_ms = cfg.namespace_queues.resync_ms;
      for (const auto& [name, entries] : cfg.namespace_queues.templates)
        for (const auto& [lq, cq] : entries) no.templates[name].push_back({lq, cq});
      artel::kube::Controller* c = controller.get();
      namespace_queues = std::make_unique<artel::kube::NamespaceQueues>(
          *kube_config, artel::kube::WithVersion(artel::kube::kLocalQueues, controller->kueue_version()), no,
          &log,
          [c](const std::string& ns, const std::string& name) { return c->LocalQueueWorkloads(ns, name); });
      if (artel::Status s = namespace_queues->Start(); !s.ok()) return fail_start(s);
    }
    // Pins the pods of TAS admissions to their nodes (kube/ungater.h).
    // Both take the controller's Workload objects instead of watching them
    // again (Controller::AddWorkloadListener).
    ungater = std::make_unique<artel::kube::TopologyUngater>(
        *kube_config, artel::kube::WithVersion(artel::kube::kWorkloads, controller->kueue_version()), &log);
    ungater->Start(/*watch_workloads=*/false);
    controller->AddWorkloadListener(
        [u = ungater.get()](const artel::kube::Json& o, bool deleted) { u->OnWorkloadEvent(o, deleted); });
    // Jobs, pods and PodGroups into Workloads (kube/jobs.h).
    artel::kube::JobsOptions jo;
    jo.kueue_version = controller->kueue_version();
    auto enabled = [&](const char* k) {
      return std::find(kube_integrations.begin(), kube_integrations.end(), k) != kube_integrations.end();
    };
    jo.jobs = enabled("batch/job");
    jo.pods = enabled("pod");
    jo.podgroups = enabled("podgroup");
    jo.watch_workloads = false;
    if (jo.jobs || jo.pods || jo.podgroups) {
      jobs = std::make_unique<artel::kube::JobIntegration>(*kube_config, jo, &log, [] {
        return std::chrono::duration_cast<std::chrono::milliseconds>(
                   std::chrono::system_clock::now().time_since_epoch())
            .count();
      });
      controller->AddWorkloadListener(
          [j = jobs.get()](const artel::kube::Json& o, bool deleted) { j->OnWorkloadEvent(o, deleted); });
      if (artel::Status s = jobs->Start(); !s.ok()) return fail_start(s);
    }
  } else {
    daemon->Start();
  }
  if (elector) {
    log.Info("leading", {{"url", url}, {"kueue", controller->kueue_version()}});
  } else if (controller) {
    log.Info("listening", {{"url", url}, {"mode", "kubernetes"}, {"kueue", controller->kueue_version()}});
  } else {
    log.Info("listening",
             {{"url", url}, {"data_dir", cfg.daemon.data_dir}, {"gpu_mode", daemon->gpu_mode()}});
  }
  if (!elector) {
    std::printf("listening on %s\n", url.c_str());
    std::fflush(stdout);
    server = std::thread([&] { api.Serve(); });
  }

  // The history sampler: the wall clock is read here, not in UsageHistory.
  std::mutex history_mu;
  std::condition_variable history_cv;
  bool history_stop = false;
  std::thread sampler;
  if (history) {
    sampler = std::thread([&] {
      std::unique_lock<std::mutex> lock(history_mu);
      while (!history_stop) {
        lock.unlock();
        int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
        if (service->ready()) history->MaybeSample(now, service->ClusterQueues(), service->Cohorts());
        lock.lock();
        history_cv.wait_for(lock, std::chrono::milliseconds(std::min<int64_t>(1000, history_interval_ms)),
                            [&] { return history_stop; });
      }
    });
  }

  int sig = 0;
  sigwait(&sigs, &sig);
  if (sampler.joinable()) {
    {
      std::lock_guard<std::mutex> lock(history_mu);
      history_stop = true;
    }
    history_cv.notify_all();
    sampler.join();
  }
  log.Info("shutting down", {{"signal", sig == SIGTERM ? "SIGTERM" : "SIGINT"}});
  api.Stop();
  if (namespace_queues) namespace_queues->Stop();
  if (ungater) ungater->Stop();
  if (jobs) jobs->Stop();
  if (controller) controller->Stop();
  if (watchdog.joinable()) {
    watchdog_stop = true;
    watchdog.join();
  }
  if (elector) elector->Release();  // after the writers stopped: the next leader starts at once
  if (daemon) daemon->Shutdown();
  server.join();
  log.Info("stopped");
  return 0;
}
