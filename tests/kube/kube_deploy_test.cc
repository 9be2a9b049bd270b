// deploy/kubernetes (the kustomize base) on the real API server:
// - the PrometheusRule is what scripts/gen-prometheusrule.sh makes from
//   deploy/prometheus/rules (no hand copy that could drift);
// - `kubectl apply --dry-run=server -k deploy/kubernetes` succeeds (minimal
//   CRDs for ServiceMonitor and PrometheusRule are installed when absent),
//   then the real apply, and webhook-cert.sh fills the Secret and caBundle;
// - arteld runs with the base's ServiceAccount token (not system:masters)
//   and --leader-elect, and admits: a missing RBAC rule fails here;
// - a tenant's ServiceAccount, bound to artel-tenant in its namespace, may
//   not change another namespace's Workloads.
// Polls with deadlines; never sleeps.
#include <gtest/gtest.h>

#include <fstream>
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

// Minimal CRDs of the Prometheus Operator's two kinds the base uses (the
// real ones are large; these accept any spec).
std::string MonitoringCrd(const std::string& plural, const std::string& kind) {
  return "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: " + plural +
         ".monitoring.coreos.com\nspec:\n  group: monitoring.coreos.com\n  scope: Namespaced\n  names:\n"
         "    plural: " +
         plural + "\n    kind: " + kind +
         "\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      "
         "openAPIV3Schema:\n"
         "        type: object\n        x-kubernetes-preserve-unknown-fields: true\n";
}

// A kubeconfig that authenticates with a ServiceAccount token.
std::string TokenKubeconfig(KubeEnv& env, const std::string& ns, const std::string& sa, std::string* error) {
  auto token = env.Kubectl({"create", "token", sa, "-n", ns, "--duration=1h"});
  if (!token.ok()) {
    *error = token.status().ToString();
    return "";
  }
  std::string t = *token;
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  std::string path = env.dir + "/" + ns + "-" + sa + ".kubeconfig";
  std::ofstream(path) << "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: "
                      << env.k8s->server() << "\n    certificate-authority: " << env.k8s->ca_file()
                      << "\nusers:\n- name: u\n  user:\n    token: " << t
                      << "\ncontexts:\n- name: c\n  context: {cluster: c, user: u, namespace: " << ns
                      << "}\ncurrent-context: c\n";
  return path;
}

// What the API server says the kubeconfig's user may do (a
// SelfSubjectAccessReview: works for kinds the cluster does not serve).
bool CanI(KubeEnv& env, const std::string& kc, const std::string& verb, const std::string& group,
          const std::string& resource, const std::string& ns) {
  Json review = {
      {"apiVersion", "authorization.k8s.io/v1"},
      {"kind", "SelfSubjectAccessReview"},
      {"spec", {{"resourceAttributes", {{"verb", verb}, {"group", group}, {"resource", resource}}}}}};
  if (!ns.empty()) review["spec"]["resourceAttributes"]["namespace"] = ns;
  auto r = env.k8s->KubectlAs(kc, {"create", "--validate=false", "-o", "json", "-f", "-"}, review.dump());
  if (!r.ok()) {
    ADD_FAILURE() << verb << " " << resource << ": " << r.status().ToString();
    return false;
  }
  Json j = Json::parse(*r, nullptr, false);
  return !j.is_discarded() && j["status"].value("allowed", false);
}

TEST(KubeDeploy, kube_BaseAppliesAndItsRbacIsEnough) {
  const std::string src = ARTEL_SOURCE_DIR;
  const std::string base = src + "/deploy/kubernetes";
  // The PrometheusRule is generated, not copied.
  {
    std::string out, err;
    ASSERT_EQ(RunCommand({src + "/scripts/gen-prometheusrule.sh", "-"}, {}, &out, &err), 0) << err;
    EXPECT_EQ(out, Slurp(base + "/prometheusrule.yaml"))
        << "deploy/kubernetes/prometheusrule.yaml is stale: run scripts/gen-prometheusrule.sh";
    EXPECT_NE(out.find("alert: TeamNearGuarantee"), std::string::npos);
  }

  KubeEnv env;
  std::string error;
  ASSERT_TRUE(env.Up(&error)) << error;
  for (auto [plural, kind] : {std::pair<std::string, std::string>{"servicemonitors", "ServiceMonitor"},
                              {"prometheusrules", "PrometheusRule"}}) {
    if (env.Kubectl({"get", "crd", plural + ".monitoring.coreos.com"}).ok()) continue;
    ASSERT_EQ(env.Apply(MonitoringCrd(plural, kind)), "");
    auto est = env.Kubectl(
        {"wait", "--for=condition=Established", "--timeout=60s", "crd/" + plural + ".monitoring.coreos.com"});
    ASSERT_TRUE(est.ok()) << est.status().ToString();
  }
  // A server-side dry run checks every object against the API (schemas,
  // RBAC references, webhook configuration rules) without creating any.
  // The namespace must exist for the namespaced objects to be checked.
  ASSERT_EQ(env.Apply("apiVersion: v1\nkind: Namespace\nmetadata: {name: artel-system}\n"), "");
  auto dry = env.Kubectl({"apply", "--dry-run=server", "-k", base});
  ASSERT_TRUE(dry.ok()) << dry.status().ToString();
  EXPECT_NE(dry->find("deployment.apps/arteld created (server dry run)"), std::string::npos) << *dry;
  EXPECT_TRUE(env.Get("deployment", "artel-system", "arteld").is_null());
  // The real thing, then the webhook certificate.
  auto applied = env.Kubectl({"apply", "-k", base});
  ASSERT_TRUE(applied.ok()) << applied.status().ToString();
  Json dep = env.Get("deployment", "artel-system", "arteld");
  EXPECT_EQ(dep["spec"].value("replicas", 0), 2);
  {
    std::string out, err;
    int rc = RunCommand({base + "/webhook-cert.sh", env.dir + "/webhook-pki"},
                        {{"KUBECTL", env.k8s->bin_dir() + "/kubectl"}, {"KUBECONFIG", env.k8s->kubeconfig()}},
                        &out, &err);
    ASSERT_EQ(rc, 0) << out << err;
    Json secret = env.Get("secret", "artel-system", "artel-webhook-tls");
    EXPECT_EQ(secret.value("type", ""), "kubernetes.io/tls") << secret.dump(1);
    for (const char* kind : {"mutatingwebhookconfiguration", "validatingwebhookconfiguration"}) {
      Json w = env.Get(kind, "", "artel");
      EXPECT_FALSE(w["webhooks"][0]["clientConfig"].value("caBundle", "").empty()) << kind;
    }
  }

  // arteld with the base's ServiceAccount (its token, not a system:masters
  // certificate) and leader election on the Lease its Role names.
  ASSERT_EQ(env.ApplyK(src + "/examples/two-teams"), "");
  std::string kc = TokenKubeconfig(env, "artel-system", "artel-controller", &error);
  ASSERT_FALSE(kc.empty()) << error;
  // It may not do what it was not given: reading Secrets.
  EXPECT_FALSE(env.k8s->KubectlAs(kc, {"get", "secrets", "-n", "artel-system"}).ok());
  env.arteld = std::make_unique<Arteld>(env.dir);
  ASSERT_TRUE(
      env.arteld->Start({"--kubeconfig", kc, "--leader-elect", "--leader-elect-retry-period", "500ms",
                         "--leader-elect-renew-deadline", "2s", "--leader-elect-lease-duration", "3s"},
                        &error))
      << error;
  ASSERT_TRUE(WaitFor([&] { return env.arteld->Get("/readyz").json().value("leader", false); }, kWait))
      << env.arteld->log();
  EXPECT_EQ(env.Get("leases.coordination.k8s.io", "artel-system", "artel-leader")["spec"]
                .value("holderIdentity", "")
                .empty(),
            false);
  ASSERT_EQ(env.Create("team-a", "a-1", "default", 1), "");
  EXPECT_TRUE(WaitFor([&] { return AdmittedCq(env.Workload("team-a", "a-1")) == "team-a"; }, kWait))
      << env.arteld->log();
  EXPECT_TRUE(WaitFor(
      [&] {
        return env.Get("clusterqueues.kueue.x-k8s.io", "", "team-a")["status"].value("admittedWorkloads",
                                                                                     -1) == 1 &&
               env.Get("localqueues.kueue.x-k8s.io", "team-a", "default")["status"].value("admittedWorkloads",
                                                                                          -1) == 1;
      },
      kWait));
  EXPECT_TRUE(WaitFor(
      [&] {
        auto ev = env.Kubectl({"get", "events", "-n", "team-a", "-o", "json"});
        if (!ev.ok()) return false;
        const Json list = Json::parse(*ev);
        for (const Json& e : list["items"])
          if (e.value("reason", "") == "Admitted") return true;
        return false;
      },
      kWait));
  EXPECT_EQ(env.arteld->log().find("forbidden"), std::string::npos) << env.arteld->log();
  EXPECT_EQ(env.arteld->log().find("Forbidden"), std::string::npos) << env.arteld->log();
  // The integrations' verbs are granted too (their code is not in this test).
  struct Can {
    std::string verb, group, resource, ns;
  };
  for (const Can& c : {Can{"patch", "batch", "jobs", "team-a"}, Can{"delete", "", "pods", "team-b"},
                       Can{"create", "kueue.x-k8s.io", "workloads", "team-a"},
                       Can{"create", "kueue.x-k8s.io", "localqueues", "team-b"}, Can{"list", "", "nodes", ""},
                       Can{"update", "scheduling.volcano.sh", "podgroups", "team-a"},
                       Can{"update", "scheduling.run.ai", "podgroups", "team-a"}}) {
    EXPECT_TRUE(CanI(env, kc, c.verb, c.group, c.resource, c.ns))
        << c.verb << " " << c.group << "/" << c.resource;
  }
  EXPECT_FALSE(CanI(env, kc, "create", "batch", "jobs", "team-a"));
  EXPECT_FALSE(CanI(env, kc, "get", "", "secrets", "artel-system"));

  // A tenant: ServiceAccount ci in team-a, artel-tenant bound in team-a only.
  ASSERT_TRUE(env.Kubectl({"create", "serviceaccount", "ci", "-n", "team-a"}).ok());
  ASSERT_TRUE(env.Kubectl({"create", "rolebinding", "artel-tenant", "-n", "team-a",
                           "--clusterrole=artel-tenant", "--serviceaccount=team-a:ci"})
                  .ok());
  std::string tkc = TokenKubeconfig(env, "team-a", "ci", &error);
  ASSERT_FALSE(tkc.empty()) << error;
  ASSERT_EQ(env.Create("team-b", "b-1", "default", 1), "");
  // Its own namespace: create and delete Workloads.
  auto own = env.k8s->KubectlAs(tkc, {"create", "--validate=false", "-f", "-"},
                                KubeEnv::WorkloadYaml("team-a", "mine", "default", 1));
  EXPECT_TRUE(own.ok()) << own.status().ToString();
  // Another namespace: no create, delete, patch or status write.
  auto other_create = env.k8s->KubectlAs(tkc, {"create", "--validate=false", "-f", "-"},
                                         KubeEnv::WorkloadYaml("team-b", "theirs", "default", 1));
  EXPECT_FALSE(other_create.ok());
  EXPECT_NE(other_create.status().ToString().find("cannot create resource \"workloads\""), std::string::npos)
      << other_create.status().ToString();
  auto other_delete = env.k8s->KubectlAs(tkc, {"delete", "workloads.kueue.x-k8s.io", "b-1", "-n", "team-b"});
  EXPECT_FALSE(other_delete.ok());
  EXPECT_NE(other_delete.status().ToString().find("forbidden"), std::string::npos)
      << other_delete.status().ToString();
  auto other_patch = env.k8s->KubectlAs(tkc, {"patch", "workloads.kueue.x-k8s.io", "b-1", "-n", "team-b",
                                              "--type=merge", "-p", R"({"spec":{"active":false}})"});
  EXPECT_FALSE(other_patch.ok());
  EXPECT_NE(other_patch.status().ToString().find("forbidden"), std::string::npos)
      << other_patch.status().ToString();
  auto own_status =
      env.k8s->KubectlAs(tkc, {"patch", "workloads.kueue.x-k8s.io", "mine", "-n", "team-a",
                               "--subresource=status", "--type=merge", "-p", R"({"status":{}})"});
  EXPECT_FALSE(own_status.ok()) << "a tenant may not write a Workload's status (its admission)";
  EXPECT_NE(own_status.status().ToString().find("forbidden"), std::string::npos)
      << own_status.status().ToString();
  EXPECT_FALSE(env.Workload("team-b", "b-1").is_null());
  EXPECT_TRUE(env.Workload("team-b", "theirs").is_null());
}

}  // namespace
}  // namespace artel::testing
