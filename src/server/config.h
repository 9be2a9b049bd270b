// The arteld configuration: one YAML file (docs/daemon.md) plus flags that
// override it.
//
//   listen: 127.0.0.1:7433        # port 0 = any free port
//   dataDir: /var/lib/artel
//   fakeGpus: 8xH100-80GB         # omit to use NVML
//   tokensFile: tokens.yaml       # omit: no authentication (loopback only!)
//   tls: {certFile: cert.pem, keyFile: key.pem}
//   manifests: [../examples/dev-cluster]
//   log: {format: logfmt, level: info}
//   limits: {maxBodyBytes: 1048576, rateLimitQps: 0, rateLimitBurst: 0}
//   scheduler: {fairSharing: false, intervalMs: 1000, debounceMs: 2, tickMs: 50}
//   runtime: {defaultGracePeriodSeconds: 30, cgroupRoot: "", stopWorkloadsOnExit: false,
//             podUsers: {team-nlp: {uid: 1500, gid: 1500}}, allowRoot: [ops],
//             podUidRange: 61000-61999, workDir: /var/lib/artel/work}
//   http: {threads: 64}
//   hostname: gpu-host-1          # default gethostname()
//   kubernetes:                   # Kubernetes mode only (docs/kubernetes.md, "Namespaces to queues")
//     namespaceQueues:
//       teamLabel: artel.dev/team
//       templateLabel: artel.dev/queue-template
//       defaultTemplate: team
//       templates: {team: [{name: default, clusterQueue: "{team}"}, {name: prod, clusterQueue:
//       "{team}-prod"}]} resyncSeconds: 10
//   nodeLabels: {topology.kubernetes.io/zone: zone-a}   # on every node pool
//   nodeTaints: [{key: k, value: v, effect: NoSchedule}] # on every node pool
//   nodePools:                    # server/inventory.h; docs/daemon.md
//     - name: a100-80g
//       gpus: {product: A100-80GB, mig: false, count: 8, indices: [0, 1]}
//       labels: {nvidia.com/mig.config: all-disabled}
//       taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
//
// Relative paths are resolved against the directory of the file. Unknown
// keys are errors with file:line:column.
//
// Thread-safety: plain values and a pure loader.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "server/api.h"
#include "server/daemon.h"
#include "server/log.h"

namespace artel::server {

// `kubernetes.namespaceQueues`: LocalQueues made per labelled namespace.
struct NamespaceQueuesConfig {
  std::string team_label = "artel.dev/team";
  std::string template_label = "artel.dev/queue-template";
  std::string default_template;
  // template -> (LocalQueue name, ClusterQueue), each may hold {team} and {namespace}
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> templates;
  int64_t resync_ms = 10000;
};

struct ArteldConfig {
  NamespaceQueuesConfig namespace_queues;
  ApiOptions api;
  DaemonOptions daemon;
  std::string tokens_file;
  Logger::Format log_format = Logger::Format::kLogfmt;
  LogLevel log_level = LogLevel::kInfo;
};

// Reads `path` over the defaults already in *config.
Status LoadArteldConfig(const std::string& path, ArteldConfig* config);

// Parses a retention such as "90s", "30m", "24h", "7d" (a whole number and
// a unit) or "never" (-1) into milliseconds.
Result<int64_t> ParseRetention(const std::string& text);

// Parses "HOST:PORT" (IPv4 or a name; "[v6]:port" too).
Status ParseListen(const std::string& text, std::string* host, int* port);

}  // namespace artel::server
