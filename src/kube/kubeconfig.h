// Where the Kubernetes client connects and how it authenticates: a kubeconfig
// file (the subset Artel needs) or the in-cluster service-account files.
//
// Supported kubeconfig fields: current-context (or the context named by the
// caller); clusters[].cluster.{server, certificate-authority,
// certificate-authority-data, insecure-skip-tls-verify};
// users[].user.{client-certificate, client-certificate-data, client-key,
// client-key-data, token, tokenFile}; contexts[].context.{cluster, user,
// namespace}. Relative file paths are relative to the kubeconfig file that
// names them. $KUBECONFIG may list several files (':'-separated): the first
// file that sets current-context wins, and for each named cluster, user or
// context the first file that defines it wins (as kubectl merges them).
// Not supported (a clear error): exec and auth-provider plugins,
// username/password, proxy-url.
//
// Thread-safety: plain functions and values.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"

namespace artel::kube {

struct ClientConfig {
  std::string server;  // https://host:port (http:// too, for tests)
  std::string ca_pem;  // empty = system roots
  std::string client_cert_pem, client_key_pem;
  std::string bearer_token;  // or
  std::string token_file;    // re-read when it changes (service-account tokens rotate)
  bool insecure_skip_tls_verify = false;
  std::string default_namespace = "default";
  double qps = 50;
  int burst = 100;  // client-side rate limit (token bucket); qps <= 0 = unlimited
  std::string user_agent = "artel";
  // Extras (not in the contract): socket timeouts of ordinary requests.
  int connect_timeout_seconds = 10;
  int request_timeout_seconds = 60;
};

// path "" = $KUBECONFIG (':'-separated list), else ~/.kube/config.
// context "" = the current-context.
Result<ClientConfig> LoadKubeconfig(const std::string& path = "", const std::string& context = "");

// The in-cluster configuration: token, CA and namespace from
// /var/run/secrets/kubernetes.io/serviceaccount, server from
// KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT.
Result<ClientConfig> InClusterConfig();
// The same with the directory and the host/port given (tests).
Result<ClientConfig> InClusterConfigFrom(const std::string& sa_dir, const std::string& host,
                                         const std::string& port);

}  // namespace artel::kube
