// The admission webhooks (src/kube/webhook.h) called by the real API server:
// arteld serves them over TLS with a certificate from a test CA made here
// with openssl; Mutating/ValidatingWebhookConfigurations point the API
// server at https://127.0.0.1:PORT with that CA as caBundle. The replica
// under test is a standby (another holder has the leader Lease): webhooks
// need no leadership. Polls with deadlines; never sleeps.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <string>

#include "controller_env.h"

namespace artel::testing {
namespace {

constexpr int kWait = 60000;

#ifndef ARTEL_SOURCE_DIR
#define ARTEL_SOURCE_DIR "."
#endif

std::string Slurp(const std::string& path) {
  std::ifstream f(path);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

// A CA and a serving certificate for 127.0.0.1 in `dir` (ca.crt, tls.crt, tls.key).
std::string MakeCerts(const std::string& dir) {
  std::string script =
      "set -e; cd '" + dir +
      "'; openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 2 -sha256 "
      "-subj /CN=artel-webhook-test-ca -addext basicConstraints=critical,CA:TRUE "
      "-addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null; "
      "openssl req -new -newkey rsa:2048 -nodes -keyout tls.key -subj /CN=artel-webhook -out tls.csr "
      "2>/dev/null; "
      "printf 'basicConstraints=CA:FALSE\\nkeyUsage=critical,digitalSignature,keyEncipherment\\n"
      "extendedKeyUsage=serverAuth\\nsubjectAltName=IP:127.0.0.1\\n' > tls.ext; "
      "openssl x509 -req -in tls.csr -CA ca.crt -CAkey ca.key -set_serial 0x$(openssl rand -hex 8) -days 2 "
      "-sha256 -extfile tls.ext -out tls.crt 2>/dev/null; chmod 600 tls.key; base64 -w0 ca.crt > ca.b64";
  std::string out, err;
  int rc = RunCommand({"/bin/bash", "-c", script}, {}, &out, &err);
  return rc == 0 ? "" : "openssl: " + err;
}

std::string WebhookConfigs(int port, const std::string& ca_b64) {
  std::string url = "https://127.0.0.1:" + std::to_string(port);
  return R"(apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: artel-test}
webhooks:
- name: mutate.artel.dev
  admissionReviewVersions: [v1]
  sideEffects: None
  failurePolicy: Fail
  timeoutSeconds: 5
  clientConfig:
    url: )" +
         url + R"(/mutate
    caBundle: )" +
         ca_b64 + R"(
  objectSelector:
    matchExpressions: [{key: kueue.x-k8s.io/queue-name, operator: Exists}]
  rules:
  - {apiGroups: [batch], apiVersions: [v1], operations: [CREATE], resources: [jobs]}
  - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: artel-test}
webhooks:
- name: validate.artel.dev
  admissionReviewVersions: [v1]
  sideEffects: None
  failurePolicy: Fail
  timeoutSeconds: 5
  clientConfig:
    url: )" +
         url + R"(/validate
    caBundle: )" +
         ca_b64 + R"(
  rules:
  - apiGroups: [kueue.x-k8s.io]
    apiVersions: ["*"]
    operations: [CREATE, UPDATE]
    resources: [resourceflavors, clusterqueues, localqueues, cohorts, workloadpriorityclasses, topologies, workloads]
)";
}

std::string Job(const std::string& name, bool labelled) {
  std::string y = "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: " + name + "\n  namespace: default\n";
  if (labelled) y += "  labels: {kueue.x-k8s.io/queue-name: q}\n";
  return y +
         "spec:\n  template:\n    spec:\n      restartPolicy: Never\n      containers:\n"
         "      - {name: c, image: busybox}\n";
}

constexpr char kBadCq[] = R"(apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: bad}
spec:
  namespaceSelector: {}
  cohortName: c
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: gpu
      resources:
      - {name: nvidia.com/gpu, nominalQuota: "4", lendingLimit: "8"}
)";

TEST(KubeWebhook, kube_MutateAndValidateThroughTheApiServer) {
  KubeEnv env;
  std::string error;
  ASSERT_TRUE(env.Up(&error)) << error;
  std::string certs = TempDir("webhook-certs");
  ASSERT_EQ(MakeCerts(certs), "");
  // Another replica holds the leader Lease: this one stays a standby.
  ASSERT_EQ(env.Apply(R"(apiVersion: coordination.k8s.io/v1
kind: Lease
metadata: {name: artel-leader, namespace: default}
spec: {holderIdentity: someone-else, leaseDurationSeconds: 3600, renewTime: "2099-01-01T00:00:00.000000Z"}
)"),
            "");
  ASSERT_TRUE(env.StartArteld(
      {"--leader-elect", "--leader-elect-lease-namespace", "default", "--webhook-listen", "127.0.0.1:0",
       "--webhook-cert", certs + "/tls.crt", "--webhook-key", certs + "/tls.key"},
      &error))
      << error;
  int port = 0;
  ASSERT_TRUE(WaitFor(
      [&] {
        std::smatch m;
        std::string log = env.arteld->log();
        if (!std::regex_search(log, m, std::regex("webhook_url=\"?https://127\\.0\\.0\\.1:([0-9]+)")))
          return false;
        port = std::stoi(m[1]);
        return true;
      },
      kWait))
      << env.arteld->log();
  ASSERT_EQ(
      env.Get("leases.coordination.k8s.io", "default", "artel-leader")["spec"].value("holderIdentity", ""),
      "someone-else");
  std::string ca_b64 = Slurp(certs + "/ca.b64");
  ASSERT_FALSE(ca_b64.empty());
  ASSERT_EQ(env.Apply(WebhookConfigs(port, ca_b64)), "");

  // The API server picks the configurations up asynchronously: poll with a
  // server-side dry run (the webhooks declare no side effects).
  auto dry_job = [&](const std::string& name, bool labelled) {
    auto r = env.Kubectl({"create", "--dry-run=server", "-o", "json", "-f", "-"}, Job(name, labelled));
    return r.ok() ? Json::parse(*r, nullptr, false) : Json();
  };
  ASSERT_TRUE(WaitFor(
      [&] {
        Json j = dry_job("probe", true);
        return j.is_object() && j["spec"].value("suspend", false);
      },
      kWait))
      << env.arteld->log();

  // A labelled Job created without suspend comes back suspended.
  auto made = env.Kubectl({"create", "-o", "json", "-f", "-"}, Job("labelled", true));
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  EXPECT_TRUE(env.Get("jobs", "default", "labelled")["spec"].value("suspend", false));
  // An unlabelled one is untouched.
  made = env.Kubectl({"create", "-o", "json", "-f", "-"}, Job("plain", false));
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  EXPECT_FALSE(env.Get("jobs", "default", "plain")["spec"].value("suspend", false));
  // A labelled Pod gets the admission scheduling gate (once, next to its own).
  made = env.Kubectl({"create", "-o", "json", "-f", "-"}, R"(apiVersion: v1
kind: Pod
metadata: {name: gated, namespace: default, labels: {kueue.x-k8s.io/queue-name: q}}
spec:
  schedulingGates: [{name: example.com/mine}]
  containers: [{name: c, image: busybox}]
)");
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  Json pod = env.Get("pods", "default", "gated");
  std::vector<std::string> gates;
  for (const Json& g : pod["spec"].value("schedulingGates", Json::array()))
    gates.push_back(g.value("name", ""));
  EXPECT_EQ(gates, (std::vector<std::string>{"example.com/mine", "kueue.x-k8s.io/admission"})) << pod.dump(1);
  made = env.Kubectl({"create", "-o", "json", "-f", "-"}, R"(apiVersion: v1
kind: Pod
metadata: {name: free, namespace: default}
spec: {containers: [{name: c, image: busybox}]}
)");
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  EXPECT_FALSE(env.Get("pods", "default", "free")["spec"].contains("schedulingGates"));

  // An invalid ClusterQueue is refused with the checker's message: the same
  // field and words as `artel check` on the file, positioned in the object.
  std::string file = certs + "/bad.yaml";
  std::ofstream(file) << kBadCq;
  std::string out, err;
  ASSERT_EQ(RunCommand({ARTEL_BIN, "check", file}, {}, &out, &err), 1) << out << err;
  std::string check_msg = err.substr(err.find(": spec.") + 2);  // "field: message"
  while (!check_msg.empty() && check_msg.back() == '\n') check_msg.pop_back();
  ASSERT_NE(check_msg.find("lendingLimit"), std::string::npos) << err;
  auto refused = env.Kubectl({"create", "-f", "-"}, kBadCq);
  ASSERT_FALSE(refused.ok());
  std::string msg = refused.status().ToString();
  EXPECT_NE(msg.find("validate.artel.dev"), std::string::npos) << msg;
  EXPECT_NE(msg.find(check_msg), std::string::npos) << msg << "\nartel check: " << err;
  EXPECT_TRUE(std::regex_search(msg, std::regex("ClusterQueue/bad:[0-9]+:[0-9]+: spec\\.resourceGroups")))
      << msg;
  EXPECT_TRUE(env.Get("clusterqueues.kueue.x-k8s.io", "", "bad").is_null());
  // A valid one (and an update of it) passes.
  std::string good = kBadCq;
  good.replace(good.find("lendingLimit: \"8\""), 17, "lendingLimit: \"2\"");
  good.replace(good.find("name: bad"), 9, "name: good");
  EXPECT_EQ(env.Apply(good), "");
  EXPECT_FALSE(env.Get("clusterqueues.kueue.x-k8s.io", "", "good").is_null());
  // An update that breaks it is refused too.
  std::string broken = good;
  broken.replace(broken.find("lendingLimit: \"2\""), 17, "lendingLimit: \"9\"");
  std::string upd = env.Apply(broken);
  EXPECT_NE(upd.find("must not exceed nominalQuota"), std::string::npos) << upd;
  // Every object of the examples passes, as the API server sends it (with
  // its defaults filled in).
  EXPECT_EQ(env.ApplyK(std::string(ARTEL_SOURCE_DIR) + "/examples/dev-cluster"), "");
  EXPECT_EQ(env.ApplyK(std::string(ARTEL_SOURCE_DIR) + "/examples/two-teams"), "");
  // Workloads are checked too: a valid one passes, an invalid one is refused.
  EXPECT_EQ(env.Create("default", "wl-ok", "q", 1), "");
  std::string bad_wl = KubeEnv::WorkloadYaml("default", "wl-bad", "q", 1);
  bad_wl.replace(bad_wl.find("cpu: \"1\""), 8, "cpu: \"-1\"");
  auto wr = env.Kubectl({"create", "-f", "-"}, bad_wl);
  EXPECT_FALSE(wr.ok());
  if (!wr.ok()) {
    EXPECT_NE(wr.status().ToString().find("Workload/wl-bad:"), std::string::npos) << wr.status().ToString();
  }
}

}  // namespace
}  // namespace artel::testing
