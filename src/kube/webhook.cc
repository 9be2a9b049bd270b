// Admission webhooks (webhook.h).
#include "kube/webhook.h"

#include <httplib.h>
#include <openssl/evp.h>

#include <set>
#include <thread>
#include <vector>

#include "manifest/manifest.h"

namespace artel::kube {

using Json = nlohmann::json;

namespace {

std::string Base64(const std::string& in) {
  std::string out(4 * ((in.size() + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(in.data()), static_cast<int>(in.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

// The skeleton of an answer to `review` (its uid; allowed).
Json Answer(const Json& review, bool allowed) {
  std::string uid;
  if (review.is_object() && review.contains("request") && review["request"].is_object())
    uid = review["request"].value("uid", std::string());
  return {{"apiVersion", "admission.k8s.io/v1"},
          {"kind", "AdmissionReview"},
          {"response", {{"uid", uid}, {"allowed", allowed}}}};
}

Json Refuse(const Json& review, int code, const std::string& message) {
  Json a = Answer(review, false);
  a["response"]["status"] = {{"code", code}, {"message", message}};
  return a;
}

bool IsReview(const Json& review) {
  return review.is_object() && review.value("kind", std::string()) == "AdmissionReview" &&
         review.contains("request") && review["request"].is_object();
}

bool HasQueueName(const Json& obj) {
  if (!obj.is_object() || !obj.contains("metadata") || !obj["metadata"].is_object()) return false;
  const Json& md = obj["metadata"];
  auto it = md.find("labels");
  return it != md.end() && it->is_object() && it->contains(kQueueNameLabel);
}

// A Job controls the pod (its pods are the Job integration's, not the pod
// integration's).
bool OwnedByJob(const Json& pod) {
  const Json& md = pod["metadata"];
  for (const Json& o : md.value("ownerReferences", Json::array()))
    if (o.is_object() && o.value("controller", false) && o.value("kind", std::string()) == "Job" &&
        o.value("apiVersion", std::string()).rfind("batch/", 0) == 0)
      return true;
  return false;
}

// The fields of an object the checker reads: what a user writes, without
// what the API server adds (managedFields, uid, status...).
Json UserFields(const Json& object) {
  Json out = Json::object();
  for (const char* k : {"apiVersion", "kind"})
    if (object.contains(k)) out[k] = object[k];
  Json md = Json::object();
  if (object.contains("metadata") && object["metadata"].is_object()) {
    const Json& m = object["metadata"];
    for (const char* k : {"name", "namespace", "labels", "annotations"})
      if (m.contains(k)) md[k] = m[k];
    if (md.value("name", std::string()).empty() && m.contains("generateName"))
      md["name"] = m.value("generateName", std::string()) + "x";  // the name is made after admission
  }
  out["metadata"] = md;
  for (auto it = object.begin(); it != object.end(); ++it)
    if (it.key() != "apiVersion" && it.key() != "kind" && it.key() != "metadata" && it.key() != "status")
      out[it.key()] = it.value();
  return out;
}

const std::set<std::string>& KueueKinds() {
  static const std::set<std::string> kinds = {"ResourceFlavor",        "ClusterQueue", "LocalQueue", "Cohort",
                                              "WorkloadPriorityClass", "Topology",     "Workload"};
  return kinds;
}

}  // namespace

std::string ValidateKueueObject(const Json& object) {
  if (!object.is_object()) return "the object is not a JSON object";
  const std::string api = object.value("apiVersion", std::string());
  const std::string kind = object.value("kind", std::string());
  if (api.rfind("kueue.x-k8s.io/", 0) != 0 || !KueueKinds().count(kind)) return "";
  Json user = UserFields(object);
  const std::string source = kind + "/" + user["metadata"].value("name", std::string());
  // JSON is YAML: the positions point into this pretty-printed text.
  const std::string text = user.dump(2);
  Status s;
  if (kind == "Workload") {
    std::vector<core::WorkloadSpec> out;
    s = manifest::ParseWorkloads(text, source, &out, manifest::PodSpecMode::kKubernetes);
  } else {
    core::Config config;
    s = manifest::ParseInto(text, source, &config);
  }
  return s.ok() ? "" : s.ToString();
}

Json MutateReview(const Json& review) {
  if (!IsReview(review))
    return Refuse(review, 400, "the request is not an admission.k8s.io/v1 AdmissionReview");
  const Json& req = review["request"];
  Json ans = Answer(review, true);
  if (req.value("operation", std::string()) != "CREATE") return ans;
  const Json obj = req.value("object", Json());
  const Json kind = req.value("kind", Json::object());
  const std::string group = kind.value("group", std::string()), k = kind.value("kind", std::string());
  if (!HasQueueName(obj)) return ans;
  Json patch = Json::array();
  if (group == "batch" && k == "Job") {
    const Json spec = obj.value("spec", Json::object());
    if (spec.value("suspend", false) != true)
      patch.push_back({{"op", "add"}, {"path", "/spec/suspend"}, {"value", true}});
  } else if (group.empty() && k == "Pod") {
    if (OwnedByJob(obj)) return ans;
    const Json spec = obj.value("spec", Json::object());
    // The admission gate always; the topology gate too when the pod asks for
    // a topology (Kueue's pod webhook does the same for TAS): a gate can only
    // be added at creation, and the ungater removes it once the pod is pinned.
    std::vector<std::string> want = {kAdmissionGate};
    const Json ann = obj.value("metadata", Json::object()).value("annotations", Json::object());
    for (const char* a :
         {"kueue.x-k8s.io/podset-required-topology", "kueue.x-k8s.io/podset-preferred-topology",
          "kueue.x-k8s.io/podset-unconstrained-topology"}) {
      if (ann.contains(a)) {
        want.push_back(kTopologyGate);
        break;
      }
    }
    auto gates = spec.find("schedulingGates");
    bool have_list = gates != spec.end() && gates->is_array();
    std::set<std::string> present;
    if (have_list)
      for (const Json& g : *gates)
        if (g.is_object()) present.insert(g.value("name", std::string()));
    for (const std::string& gate : want) {
      if (present.count(gate)) continue;
      if (!have_list) {
        patch.push_back(
            {{"op", "add"}, {"path", "/spec/schedulingGates"}, {"value", Json::array({{{"name", gate}}})}});
        have_list = true;
      } else {
        patch.push_back({{"op", "add"}, {"path", "/spec/schedulingGates/-"}, {"value", {{"name", gate}}}});
      }
      present.insert(gate);
    }
  }
  if (!patch.empty()) {
    ans["response"]["patchType"] = "JSONPatch";
    ans["response"]["patch"] = Base64(patch.dump());
  }
  return ans;
}

Json ValidateReview(const Json& review) {
  if (!IsReview(review))
    return Refuse(review, 400, "the request is not an admission.k8s.io/v1 AdmissionReview");
  const Json& req = review["request"];
  const std::string op = req.value("operation", std::string());
  if (op != "CREATE" && op != "UPDATE") return Answer(review, true);
  const Json obj = req.value("object", Json());
  // Deleting (a finalizer being removed, metadata.deletionTimestamp set):
  // never block the way out.
  if (obj.is_object() && obj.contains("metadata") && obj["metadata"].is_object() &&
      obj["metadata"].contains("deletionTimestamp"))
    return Answer(review, true);
  std::string why = ValidateKueueObject(obj);
  if (why.empty()) return Answer(review, true);
  return Refuse(review, 422, why);
}

// ---------------------------------------------------------------- server

WebhookServer::WebhookServer(WebhookOptions options, server::Logger* log)
    : options_(std::move(options)), log_(log) {
  server_ = std::make_unique<httplib::SSLServer>(options_.cert_file.c_str(), options_.key_file.c_str());
  server_->new_task_queue = [] { return new httplib::ThreadPool(4); };
  server_->set_payload_max_length(8 << 20);
  server_->set_read_timeout(10, 0);
  server_->set_write_timeout(10, 0);
  auto route = [this](const char* path, Json (*fn)(const Json&)) {
    server_->Post(path, [this, fn, path](const httplib::Request& req, httplib::Response& res) {
      Json review = Json::parse(req.body, nullptr, false);
      if (review.is_discarded()) {
        res.status = 400;
        res.set_content(R"({"message":"the body is not JSON"})", "application/json");
        return;
      }
      Json ans = fn(review);
      if (!ans["response"].value("allowed", true) || ans["response"].contains("patch")) {
        const Json& rq = review["request"];
        log_->Info("admission webhook",
                   {{"path", path},
                    {"kind", rq.value("kind", Json::object()).value("kind", std::string())},
                    {"namespace", rq.value("namespace", std::string())},
                    {"name", rq.value("name", std::string())},
                    {"allowed", ans["response"].value("allowed", true) ? "true" : "false"}});
      }
      res.set_content(ans.dump(), "application/json");
    });
  };
  route("/mutate", &MutateReview);
  route("/validate", &ValidateReview);
  server_->Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"status":"ok"})", "application/json");
  });
}

WebhookServer::~WebhookServer() { Stop(); }

Result<int> WebhookServer::Bind() {
  if (!server_->is_valid())
    return InvalidArgument("webhook: cannot load the TLS certificate " + options_.cert_file + " or key " +
                           options_.key_file);
  int port = options_.port;
  if (port == 0) {
    port = server_->bind_to_any_port(options_.host);
  } else if (!server_->bind_to_port(options_.host, port)) {
    port = -1;
  }
  if (port <= 0)
    return InvalidArgument("webhook: cannot listen on " + options_.host + ":" +
                           std::to_string(options_.port));
  return port;
}

void WebhookServer::Start() {
  thread_ = std::make_unique<std::thread>([this] { server_->listen_after_bind(); });
}

void WebhookServer::Stop() {
  if (server_) server_->stop();
  if (thread_ && thread_->joinable()) thread_->join();
  thread_.reset();
}

}  // namespace artel::kube
