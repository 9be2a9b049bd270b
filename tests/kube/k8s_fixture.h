// A real Kubernetes control plane for tests: etcd + kube-apiserver (and, on
// request, kube-controller-manager, kube-scheduler and the fake kubelet) on
// 127.0.0.1 free ports, with openssl-made certificates, RBAC and Kueue's
// CRDs. The one implementation is scripts/k8s-up.sh; this class runs it and
// keeps the directory it wrote (kubeconfig, pids, logs, certs).
//
// Binaries: $ARTEL_K8S_BIN, else <source>/build-k8s/bin (built by
// tools/k8s/build.sh, which `make test` runs first). Missing binaries are an
// error, not a skip. See docs/kubernetes.md, "The control plane used in tests".
//
// Thread-safety: one cluster per test; Kubectl() may be called from several
// threads (each call is its own process).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/status.h"

namespace artel::testing {

struct K8sOptions {
  bool controller_manager = false;  // kube-controller-manager (Jobs create pods, GC)
  bool scheduler = false;           // kube-scheduler
  bool fake_kubelet = false;        // tools/k8s/cmd/fake-kubelet (nodes Ready, pods Running/Succeeded)
  bool kueue_crds = true;           // Kueue v0.17.0 CRDs installed (server-side apply) and Established
  // kube-apiserver's watch cache (on in real clusters: bookmarks, cached lists). With it off,
  // watches and lists go to etcd directly and CompactEtcd() expires old versions without a restart.
  bool watch_cache = true;
  // Nodes the fake kubelet registers ("name:cpu=8,memory=32Gi,nvidia.com/gpu=4;name2:..."); empty =
  // the script's default (two nodes).
  std::string fake_nodes;
};

class K8sCluster {
 public:
  // Starts etcd + kube-apiserver (+ what the options ask) on 127.0.0.1 free ports in a fresh
  // temporary directory, with openssl-made certs and RBAC, and waits until /readyz is 200 and the
  // `default` namespace exists. Binaries: $ARTEL_K8S_BIN, else the CMake-configured
  // <source>/build-k8s/bin. An error (not a skip) when they are missing: make test builds them.
  static Result<std::unique_ptr<K8sCluster>> Start(const K8sOptions& options = {});
  ~K8sCluster();  // stops everything it started, by pid; removes the directory
  K8sCluster(const K8sCluster&) = delete;
  K8sCluster& operator=(const K8sCluster&) = delete;

  const std::string& dir() const { return dir_; }
  const std::string& kubeconfig() const { return kubeconfig_; }  // admin (system:masters) kubeconfig path
  std::string server() const;                                    // https://127.0.0.1:PORT
  int apiserver_port() const { return apiserver_port_; }
  std::string etcd_url() const;  // http://127.0.0.1:PORT (client URL)
  std::string bin_dir() const { return bin_; }
  // The cluster CA (PEM file); the kubeconfigs embed it and the client certificates as *-data.
  std::string ca_file() const { return dir_ + "/pki/ca.crt"; }
  // Pids from DIR/pids (-1 when that component is not running): "etcd", "kube-apiserver",
  // "kube-controller-manager", "kube-scheduler", "fake-kubelet".
  int pid(const std::string& component) const;

  // kubectl with the admin kubeconfig; stdout on success, an error with stderr otherwise.
  Result<std::string> Kubectl(const std::vector<std::string>& args, const std::string& stdin_data = "");
  // Same, with another kubeconfig (e.g. one from UserKubeconfig).
  Result<std::string> KubectlAs(const std::string& kubeconfig, const std::vector<std::string>& args,
                                const std::string& stdin_data = "");
  // A kubeconfig for a client cert CN=user, O=each group (for RBAC tests).
  Result<std::string> UserKubeconfig(const std::string& user, const std::vector<std::string>& groups);
  Status StopApiServer();     // SIGKILL kube-apiserver (etcd keeps running)
  Status StartApiServer();    // again, same port, same etcd; waits for /readyz
  Status RestartApiServer();  // both
  // Compacts etcd so that old resourceVersions expire (watch from them gets 410 Gone). With the
  // watch cache on (the default), the cache would still serve recent old versions, so the API
  // server is also restarted (SIGKILL, same port; open watches break) to rebuild its cache from
  // the compacted store. With watch_cache=false only etcd is compacted.
  Status CompactEtcd();
  // The tail of DIR/<component>.log (diagnostics for failing tests).
  std::string LogTail(const std::string& component, size_t max_bytes = 4000) const;

 private:
  K8sCluster() = default;
  Status Script(const std::vector<std::string>& args, std::string* out = nullptr);

  std::string dir_, kubeconfig_, bin_, script_;
  int apiserver_port_ = 0;
  int etcd_port_ = 0;
  bool keep_dir_ = false;
};

}  // namespace artel::testing
