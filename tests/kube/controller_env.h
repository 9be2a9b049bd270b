// Helpers of the controller's end-to-end tests: a real control plane
// (K8sCluster), the real arteld binary in Kubernetes mode started as a
// process (tests/server/harness.h), and kubectl to create objects and read
// what the controller wrote. Polls with deadlines; never sleeps.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "../server/harness.h"
#include "k8s_fixture.h"

namespace artel::testing {

class KubeEnv {
 public:
  // Starts the control plane; false (with the reason in *error) on failure.
  bool Up(std::string* error, const K8sOptions& options = {}) {
    auto c = K8sCluster::Start(options);
    if (!c.ok()) {
      *error = c.status().ToString();
      return false;
    }
    k8s = std::move(c).value();
    dir = TempDir("kubectl");
    return true;
  }
  // Starts arteld against the cluster (extra flags appended).
  bool StartArteld(const std::vector<std::string>& extra = {}, std::string* error = nullptr) {
    if (!arteld) arteld = std::make_unique<Arteld>(dir);
    std::vector<std::string> args = {"--kubeconfig", k8s->kubeconfig(), "--log-level", "debug"};
    args.insert(args.end(), extra.begin(), extra.end());
    return arteld->Start(args, error);
  }

  Result<std::string> Kubectl(const std::vector<std::string>& args, const std::string& in = "") {
    return k8s->Kubectl(args, in);
  }
  // kubectl apply -f - (server-side, so that big objects are fine).
  std::string Apply(const std::string& yaml) {
    auto r = k8s->Kubectl({"apply", "--server-side", "--force-conflicts", "-f", "-"}, yaml);
    return r.ok() ? "" : r.status().ToString();
  }
  std::string ApplyK(const std::string& dir_path) {
    auto r = k8s->Kubectl({"apply", "-k", dir_path});
    return r.ok() ? "" : r.status().ToString();
  }
  Json Get(const std::string& resource, const std::string& ns, const std::string& name) {
    std::vector<std::string> args = {"get", resource, name, "-o", "json"};
    if (!ns.empty()) {
      args.push_back("-n");
      args.push_back(ns);
    }
    auto r = k8s->Kubectl(args);
    if (!r.ok()) return Json();
    auto j = Json::parse(*r, nullptr, false);
    return j.is_discarded() ? Json() : j;
  }
  Json Workload(const std::string& ns, const std::string& name) {
    return Get("workloads.kueue.x-k8s.io", ns, name);
  }
  // All Workloads, "ns/name" -> object.
  std::map<std::string, Json> Workloads() {
    std::map<std::string, Json> out;
    auto r = k8s->Kubectl({"get", "workloads.kueue.x-k8s.io", "-A", "-o", "json"});
    if (!r.ok()) return out;
    auto j = Json::parse(*r, nullptr, false);
    if (j.is_discarded()) return out;
    for (const Json& w : j.value("items", Json::array()))
      out[w["metadata"].value("namespace", "") + "/" + w["metadata"].value("name", "")] = w;
    return out;
  }

  // A Workload with one pod set "main" of `count` pods asking `gpus` GPUs and
  // 1 cpu each; `priority` in spec.priority.
  static std::string WorkloadYaml(const std::string& ns, const std::string& name, const std::string& queue,
                                  int gpus, int priority = 0, int count = 1,
                                  const std::map<std::string, std::string>& labels = {}) {
    std::string y = "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Workload\nmetadata:\n  name: " + name +
                    "\n  namespace: " + ns + "\n";
    if (!labels.empty()) {
      y += "  labels:\n";
      for (const auto& [k, v] : labels) y += "    " + k + ": \"" + v + "\"\n";
    }
    y +=
        "spec:\n  queueName: " + queue + "\n  priority: " + std::to_string(priority) +
        "\n  podSets:\n  - name: main\n    count: " + std::to_string(count) +
        "\n    template:\n      spec:\n        restartPolicy: Never\n        containers:\n        - name: c\n"
        "          image: busybox\n          resources:\n            requests:\n              cpu: \"1\"\n"
        "              nvidia.com/gpu: \"" +
        std::to_string(gpus) + "\"\n";
    return y;
  }
  std::string Create(const std::string& ns, const std::string& name, const std::string& queue, int gpus,
                     int priority = 0, int count = 1) {
    auto r = k8s->Kubectl({"create", "-f", "-"}, WorkloadYaml(ns, name, queue, gpus, priority, count));
    return r.ok() ? "" : r.status().ToString();
  }

  // The workload's side after an eviction (what Kueue's job framework does
  // once the pods are gone, and what Kueue's own integration tests do for
  // plain Workloads): clear the admission and set QuotaReserved=False.
  std::string ClearReservation(const std::string& ns, const std::string& name) {
    for (int attempt = 0; attempt < 10; ++attempt) {
      Json w = Workload(ns, name);
      if (w.is_null()) return "not found";
      Json& st = w["status"];
      st.erase("admission");
      Json conds = Json::array();
      for (Json c : st.value("conditions", Json::array())) {
        std::string t = c.value("type", "");
        if (t == "QuotaReserved" || t == "Admitted") {
          if (c.value("status", "") == "True") c["lastTransitionTime"] = c.value("lastTransitionTime", "");
          c["status"] = "False";
          c["reason"] = t == "QuotaReserved" ? "Pending" : "NoReservation";
          c["message"] = "the pods are gone (test)";
        }
        conds.push_back(c);
      }
      st["conditions"] = conds;
      auto r = k8s->Kubectl({"replace", "--subresource=status", "-f", "-"}, w.dump());
      if (r.ok()) return "";
      if (r.status().message().find("Conflict") == std::string::npos &&
          r.status().message().find("modified") == std::string::npos)
        return r.status().ToString();
    }
    return "conflicts";
  }
  // Marks a workload Finished (what a job controller does when its pods end).
  std::string Finish(const std::string& ns, const std::string& name) {
    for (int attempt = 0; attempt < 10; ++attempt) {
      Json w = Workload(ns, name);
      if (w.is_null()) return "not found";
      Json& conds = w["status"]["conditions"];
      if (!conds.is_array()) conds = Json::array();
      conds.push_back({{"type", "Finished"},
                       {"status", "True"},
                       {"reason", "Succeeded"},
                       {"message", "done (test)"},
                       {"lastTransitionTime", "2026-01-01T00:00:00Z"}});
      auto r = k8s->Kubectl({"replace", "--subresource=status", "-f", "-"}, w.dump());
      if (r.ok()) return "";
    }
    return "conflicts";
  }

  std::unique_ptr<K8sCluster> k8s;
  std::unique_ptr<Arteld> arteld;
  std::string dir;
};

inline const Json* Condition(const Json& wl, const std::string& type) {
  if (!wl.is_object() || !wl.contains("status") || !wl["status"].is_object()) return nullptr;
  auto it = wl["status"].find("conditions");
  if (it == wl["status"].end() || !it->is_array()) return nullptr;
  for (const Json& c : *it)
    if (c.is_object() && c.value("type", "") == type) return &c;
  return nullptr;
}
inline bool IsTrue(const Json& wl, const std::string& type) {
  const Json* c = Condition(wl, type);
  return c != nullptr && c->value("status", "") == "True";
}
inline std::string Reason(const Json& wl, const std::string& type) {
  const Json* c = Condition(wl, type);
  return c == nullptr ? "" : c->value("reason", "");
}
inline std::string Message(const Json& wl, const std::string& type) {
  const Json* c = Condition(wl, type);
  return c == nullptr ? "" : c->value("message", "");
}
inline bool Reserved(const Json& wl) { return IsTrue(wl, "QuotaReserved") && !IsTrue(wl, "Finished"); }
inline std::string AdmittedCq(const Json& wl) {
  if (!Reserved(wl)) return "";
  return wl["status"].value("admission", Json::object()).value("clusterQueue", "");
}

}  // namespace artel::testing
