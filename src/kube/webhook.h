// Admission webhooks served by arteld in Kubernetes mode, over TLS, on a
// listener of their own (--webhook-listen, --webhook-cert, --webhook-key).
// The API server calls them with an admission.k8s.io/v1 AdmissionReview.
//
// POST /mutate (MutatingWebhookConfiguration), as Kueue's job and pod
// webhooks do for objects carrying the label kueue.x-k8s.io/queue-name
// (semantics learned from Kueue's pkg/controller/jobs/job/job_webhook.go and
// pkg/controller/jobs/pod/pod_webhook.go; no code copied):
//   - a batch/v1 Job being created gets spec.suspend: true, so that it waits
//     for its Workload's admission; an unlabelled Job is untouched;
//   - a Pod being created gets the scheduling gate kueue.x-k8s.io/admission
//     (once), unless a Job controls it (the Job integration owns those pods).
// POST /validate (ValidatingWebhookConfiguration): a ResourceFlavor,
//   ClusterQueue, LocalQueue, Cohort, WorkloadPriorityClass, Topology or
//   Workload being created or updated is parsed by the same checker as
//   `artel check` (src/manifest); a problem refuses it with the checker's
//   message, `<Kind>/<name>:LINE:COL: field: message`, where the position
//   points into the object as the API server sent it, pretty-printed as JSON
//   (the API server never sees the user's YAML file). Checks that need the
//   other objects (dangling references, cohort cycles) are not made here:
//   those objects may arrive in any order, as with Kueue's own webhooks.
// Webhooks need no leadership: every replica serves them.
//
// Thread-safety: the review functions are pure; WebhookServer serves on
// cpp-httplib's thread pool.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "core/status.h"
#include "kube/kueue_names.h"
#include "server/log.h"

namespace httplib {
class SSLServer;
}

namespace artel::kube {

// The AdmissionReview answers (request -> response, same uid). A request
// that is not an AdmissionReview answers an error Status.
nlohmann::json MutateReview(const nlohmann::json& review);
nlohmann::json ValidateReview(const nlohmann::json& review);
// The checker alone: "" when `object` (a Kueue kind) is valid, else the
// positioned message. Kinds outside Kueue's are valid.
std::string ValidateKueueObject(const nlohmann::json& object);

struct WebhookOptions {
  std::string host = "0.0.0.0";
  int port = 9443;  // 0 = any free port
  std::string cert_file, key_file;
};

class WebhookServer {
 public:
  WebhookServer(WebhookOptions options, server::Logger* log);
  ~WebhookServer();
  WebhookServer(const WebhookServer&) = delete;
  WebhookServer& operator=(const WebhookServer&) = delete;
  Result<int> Bind();  // the bound port
  void Start();        // serves on a thread of its own
  void Stop();

 private:
  WebhookOptions options_;
  server::Logger* log_;
  std::unique_ptr<httplib::SSLServer> server_;
  std::unique_ptr<std::thread> thread_;
};

}  // namespace artel::kube
