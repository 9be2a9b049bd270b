// Unit tests of the admission webhooks' review functions (src/kube/webhook.h)
// and of the leader-election option checks (src/kube/leader.h). The
// end-to-end tests with the real API server are kube_webhook_test and
// kube_leader_test.
#include <gtest/gtest.h>
#include <openssl/evp.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "api/codec.h"
#include "kube/kueue_map.h"
#include "kube/leader.h"
#include "kube/webhook.h"
#include "manifest/manifest.h"

namespace artel::kube {
namespace {

using Json = nlohmann::json;

Json Review(const std::string& group, const std::string& kind, const Json& obj,
            const std::string& op = "CREATE") {
  return {{"apiVersion", "admission.k8s.io/v1"},
          {"kind", "AdmissionReview"},
          {"request",
           {{"uid", "u-1"},
            {"kind", {{"group", group}, {"version", "v1"}, {"kind", kind}}},
            {"operation", op},
            {"object", obj}}}};
}

Json Patch(const Json& answer) {
  EXPECT_EQ(answer["response"].value("patchType", ""), "JSONPatch") << answer.dump();
  std::string b64 = answer["response"].value("patch", "");
  std::string out(b64.size(), '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(b64.data()), static_cast<int>(b64.size()));
  EXPECT_GT(n, 0);
  out.resize(static_cast<size_t>(n));
  while (!out.empty() && out.back() == '\0') out.pop_back();  // padding
  return Json::parse(out);
}

const Json kLabels = {{"kueue.x-k8s.io/queue-name", "q"}};

TEST(WebhookMutate, LabelledJobIsSuspended) {
  Json job = {{"metadata", {{"name", "j"}, {"labels", kLabels}}}, {"spec", {{"parallelism", 2}}}};
  Json a = MutateReview(Review("batch", "Job", job));
  EXPECT_EQ(a["response"].value("uid", ""), "u-1");
  EXPECT_TRUE(a["response"].value("allowed", false));
  EXPECT_EQ(Patch(a), Json::parse(R"([{"op":"add","path":"/spec/suspend","value":true}])"));
  // suspend: false is replaced ("add" replaces an existing member).
  job["spec"]["suspend"] = false;
  EXPECT_EQ(Patch(MutateReview(Review("batch", "Job", job))).size(), 1u);
  // Already suspended, unlabelled, or an update: no patch.
  job["spec"]["suspend"] = true;
  EXPECT_FALSE(MutateReview(Review("batch", "Job", job))["response"].contains("patch"));
  Json plain = {{"metadata", {{"name", "p"}}}, {"spec", Json::object()}};
  EXPECT_FALSE(MutateReview(Review("batch", "Job", plain))["response"].contains("patch"));
  job["spec"]["suspend"] = false;
  EXPECT_FALSE(MutateReview(Review("batch", "Job", job, "UPDATE"))["response"].contains("patch"));
}

TEST(WebhookMutate, LabelledPodIsGatedOnce) {
  Json pod = {{"metadata", {{"name", "p"}, {"labels", kLabels}}}, {"spec", {{"containers", Json::array()}}}};
  EXPECT_EQ(
      Patch(MutateReview(Review("", "Pod", pod))),
      Json::parse(
          R"([{"op":"add","path":"/spec/schedulingGates","value":[{"name":"kueue.x-k8s.io/admission"}]}])"));
  pod["spec"]["schedulingGates"] = Json::parse(R"([{"name":"other"}])");
  EXPECT_EQ(
      Patch(MutateReview(Review("", "Pod", pod))),
      Json::parse(
          R"([{"op":"add","path":"/spec/schedulingGates/-","value":{"name":"kueue.x-k8s.io/admission"}}])"));
  pod["spec"]["schedulingGates"] = Json::parse(R"([{"name":"kueue.x-k8s.io/admission"}])");
  EXPECT_FALSE(MutateReview(Review("", "Pod", pod))["response"].contains("patch"));
  // A Job's pod belongs to the Job integration.
  Json owned = {
      {"metadata",
       {{"name", "p"},
        {"labels", kLabels},
        {"ownerReferences",
         Json::parse(R"([{"apiVersion":"batch/v1","kind":"Job","name":"j","uid":"x","controller":true}])")}}},
      {"spec", Json::object()}};
  EXPECT_FALSE(MutateReview(Review("", "Pod", owned))["response"].contains("patch"));
}

// A pod asking for a topology also gets the topology gate at creation (a
// gate cannot be added later); the ungater lifts it once the pod is pinned.
TEST(WebhookMutate, TopologyPodGetsBothGates) {
  Json pod = {{"metadata",
               {{"name", "p"},
                {"labels", kLabels},
                {"annotations", {{"kueue.x-k8s.io/podset-required-topology", "example.com/block"}}}}},
              {"spec", {{"containers", Json::array()}}}};
  EXPECT_EQ(Patch(MutateReview(Review("", "Pod", pod))), Json::parse(R"([
      {"op":"add","path":"/spec/schedulingGates","value":[{"name":"kueue.x-k8s.io/admission"}]},
      {"op":"add","path":"/spec/schedulingGates/-","value":{"name":"kueue.x-k8s.io/topology"}}])"));
  pod["spec"]["schedulingGates"] = Json::parse(R"([{"name":"kueue.x-k8s.io/topology"}])");
  EXPECT_EQ(
      Patch(MutateReview(Review("", "Pod", pod))),
      Json::parse(
          R"([{"op":"add","path":"/spec/schedulingGates/-","value":{"name":"kueue.x-k8s.io/admission"}}])"));
}

TEST(WebhookMutate, NotAReviewIsAnError) {
  Json a = MutateReview(Json{{"kind", "Pod"}});
  EXPECT_FALSE(a["response"].value("allowed", true));
  EXPECT_EQ(a["response"]["status"].value("code", 0), 400);
}

TEST(WebhookValidate, PositionedMessageAndServerFieldsIgnored) {
  Json cq = Json::parse(R"({"apiVersion":"kueue.x-k8s.io/v1beta2","kind":"ClusterQueue",
    "metadata":{"name":"bad","uid":"1","resourceVersion":"5","generation":1,
                "managedFields":[{"manager":"kubectl","operation":"Apply"}]},
    "spec":{"namespaceSelector":{},"cohortName":"c","resourceGroups":[{"coveredResources":["nvidia.com/gpu"],
      "flavors":[{"name":"gpu","resources":[{"name":"nvidia.com/gpu","nominalQuota":"4","lendingLimit":"8"}]}]}]},
    "status":{"pendingWorkloads":0}})");
  Json a = ValidateReview(Review("kueue.x-k8s.io", "ClusterQueue", cq));
  EXPECT_FALSE(a["response"].value("allowed", true));
  std::string msg = a["response"]["status"].value("message", "");
  EXPECT_EQ(msg.rfind("ClusterQueue/bad:", 0), 0u) << msg;
  EXPECT_NE(
      msg.find(
          ": spec.resourceGroups[0].flavors[0].resources[0].lendingLimit: lendingLimit (8) must not exceed "
          "nominalQuota (4)"),
      std::string::npos)
      << msg;
  cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["lendingLimit"] = "2";
  EXPECT_TRUE(
      ValidateReview(Review("kueue.x-k8s.io", "ClusterQueue", cq))["response"].value("allowed", false));
  // Being deleted: never blocked.
  cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["lendingLimit"] = "9";
  cq["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z";
  EXPECT_TRUE(ValidateReview(Review("kueue.x-k8s.io", "ClusterQueue", cq, "UPDATE"))["response"].value(
      "allowed", false));
  // Other kinds are not checked.
  EXPECT_EQ(ValidateKueueObject(Json{{"apiVersion", "v1"}, {"kind", "ConfigMap"}}), "");
}

// A Workload as a Job integration makes it (owner reference, defaulted pod
// template fields) passes.
TEST(WebhookValidate, RealisticWorkloadPasses) {
  Json wl = Json::parse(R"({"apiVersion":"kueue.x-k8s.io/v1beta2","kind":"Workload",
    "metadata":{"name":"job-j-1a2b3","namespace":"team-a","labels":{"kueue.x-k8s.io/job-uid":"u"},
      "ownerReferences":[{"apiVersion":"batch/v1","kind":"Job","name":"j","uid":"u","controller":true,"blockOwnerDeletion":true}]},
    "spec":{"queueName":"q","active":true,"priority":0,"podSets":[{"name":"main","count":2,
      "template":{"metadata":{"labels":{"app":"x"}},"spec":{"restartPolicy":"Never","terminationGracePeriodSeconds":30,
        "dnsPolicy":"ClusterFirst","schedulerName":"default-scheduler","securityContext":{},
        "volumes":[{"name":"v","emptyDir":{}}],
        "containers":[{"name":"c","image":"busybox","imagePullPolicy":"Always",
          "terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File",
          "env":[{"name":"X","value":"1"}],"volumeMounts":[{"name":"v","mountPath":"/v"}],
          "resources":{"requests":{"cpu":"1","nvidia.com/gpu":"1"}}}]}}}]}})");
  EXPECT_EQ(ValidateKueueObject(wl), "");
}

// The webhook and the controller's Workload reader (WorkloadFromObject)
// give one verdict. A Workload as clusters hold them (init containers,
// hostNetwork, envFrom, probes...) passes both: in Kubernetes mode every
// PodSpec field is accepted and the pod's requests follow Kubernetes' rule
// (an init container's request counts when it is the largest). A Workload
// with a broken quantity is refused by both, with the same field and words.
TEST(WebhookValidate, WorkloadVerdictIsTheControllers) {
  Json wl = Json::parse(
      R"({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "metadata": {"name": "w", "namespace": "a"}, "spec": {"queueName": "q", "podSets": [{"name": "main", "count": 1, "minCount": 1, "topologyRequest": {"required": "cloud.google.com/gce-topology-block"}, "template": {"metadata": {"annotations": {"x": "y"}}, "spec": {"serviceAccountName": "sa", "hostNetwork": false, "priorityClassName": "high", "nodeSelector": {"a": "b"}, "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}], "initContainers": [{"name": "i", "image": "x", "command": ["sh"]}], "imagePullSecrets": [{"name": "s"}], "enableServiceLinks": true, "preemptionPolicy": "PreemptLowerPriority", "priority": 10, "containers": [{"name": "c", "image": "x", "args": ["a"], "workingDir": "/", "ports": [{"containerPort": 80, "protocol": "TCP"}], "readinessProbe": {"httpGet": {"path": "/", "port": 80}}, "livenessProbe": {"exec": {"command": ["true"]}}, "lifecycle": {}, "stdin": false, "tty": false, "securityContext": {"privileged": false}, "envFrom": [{"configMapRef": {"name": "c"}}], "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}}]}})");
  wl["spec"]["podSets"][0]["template"]["spec"]["initContainers"][0]["resources"] = {
      {"requests", {{"cpu", "3"}, {"memory", "1Gi"}}}};
  wl["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"]["requests"] = {{"cpu", "1"}};
  EXPECT_EQ(ValidateKueueObject(wl), "");
  auto ok = WorkloadFromObject(wl, core::Config{});
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  ASSERT_EQ(ok->pod_sets.size(), 1u);
  // cpu: max(containers 1, init 3); memory from the init container; the GPU from the limit.
  EXPECT_EQ(ok->pod_sets[0].requests.at("cpu"), core::ParseQuantity("3").value());
  EXPECT_EQ(ok->pod_sets[0].requests.at("memory"), core::ParseQuantity("1Gi").value());
  EXPECT_EQ(ok->pod_sets[0].requests.at("nvidia.com/gpu"), core::ParseQuantity("1").value());

  wl["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "lots";
  std::string webhook = ValidateKueueObject(wl);
  auto controller = WorkloadFromObject(wl, core::Config{});
  ASSERT_FALSE(controller.ok());
  std::string want = controller.status().ToString();
  ASSERT_GE(webhook.size(), want.size()) << webhook;
  EXPECT_EQ(webhook.substr(webhook.size() - want.size()), want) << webhook;
  EXPECT_EQ(webhook.rfind("Workload/w:", 0), 0u) << webhook;
  EXPECT_NE(webhook.find("containers[0].resources.requests[cpu]"), std::string::npos) << webhook;
}

// Every Kueue object of the examples passes (the webhook must never refuse
// a valid object: with failurePolicy or not, a refusal blocks kubectl apply).
TEST(WebhookValidate, ExamplesPass) {
  int checked = 0;
  for (const char* ex : {"dev-cluster", "two-teams"}) {
    for (const auto& entry :
         std::filesystem::directory_iterator(std::string(ARTEL_EXAMPLES_DIR) + "/" + ex)) {
      const std::string path = entry.path().string();
      if (entry.path().extension() != ".yaml" || entry.path().filename() == "kustomization.yaml") continue;
      std::ifstream f(path);
      std::stringstream text;
      text << f.rdbuf();
      auto objects = manifest::SplitObjects(text.str(), path);
      if (!objects.ok()) continue;  // not a manifest (arteld.yaml, tokens.yaml)
      for (const manifest::ManifestObject& o : *objects) {
        if (o.api_version.rfind("kueue.x-k8s.io/", 0) != 0) continue;
        auto json = api::YamlToJson(o.text);
        ASSERT_TRUE(json.ok()) << path;
        EXPECT_EQ(ValidateKueueObject(*json), "") << path << ": " << o.display();
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 10);
}

TEST(LeaderOptions, ClientGoRules) {
  LeaderOptions o;  // 15s / 10s / 2s
  EXPECT_EQ(ValidateLeaderOptions(o), "");
  o.renew_deadline_ms = 15000;
  EXPECT_NE(ValidateLeaderOptions(o), "");
  o.renew_deadline_ms = 2000;
  o.retry_period_ms = 2000;
  EXPECT_NE(ValidateLeaderOptions(o), "");
  o.retry_period_ms = 0;
  EXPECT_NE(ValidateLeaderOptions(o), "");
}

}  // namespace
}  // namespace artel::kube
