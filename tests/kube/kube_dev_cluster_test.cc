// The seed's dev cluster on Kubernetes, end to end (issue 12 §5;
// docs/kubernetes.md, "The dev cluster on Kubernetes"): the real control
// plane with kube-controller-manager (Jobs make pods), kube-scheduler (binds
// them) and the fake kubelet registering the dev cluster's nodes
// (examples/dev-cluster/kubernetes/fake-nodes.yaml); the configuration applied
// with `kubectl apply -k examples/dev-cluster`; the real arteld in Kubernetes
// mode. The story, told with batch/v1 Jobs:
//   1. speech fills its own A100-80GB pool; nlp's regular Job borrows the
//      idle A100-80GB GPUs of vision;
//   2. vision's prod Job (WorkloadPriorityClass prod-workload, 1000) takes
//      its guaranteed 8 back: nlp's Job is evicted (InCohortReclamation), suspended, its
//      pods go, and vision's prod Job runs within one cycle plus the grace
//      period; nlp waits, and `artel why` and `kubectl get` say why;
//   3. a 16-pod gang bound to one InfiniBand scalable unit lands on the two
//      HGX nodes of su-2, where Artel's topologyAssignment put it;
//   4. a MIG Job's pods land on the node whose allocatable has the slices.
#include <gtest/gtest.h>

#include <chrono>
#include <set>

#include "controller_env.h"

namespace artel::testing {
namespace {

constexpr int kWait = 90000;

#ifndef ARTEL_SOURCE_DIR
#define ARTEL_SOURCE_DIR "."
#endif

class KubeDevCluster : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    K8sOptions o;
    o.controller_manager = true;
    o.scheduler = true;
    o.fake_kubelet = true;
    o.fake_nodes = std::string(ARTEL_SOURCE_DIR) + "/examples/dev-cluster/kubernetes/fake-nodes.yaml";
    ASSERT_TRUE(env_.Up(&error, o)) << error;
    ASSERT_EQ(env_.ApplyK(std::string(ARTEL_SOURCE_DIR) + "/examples/dev-cluster"), "");
    ASSERT_TRUE(env_.StartArteld({}, &error)) << error;
  }
  // One of the walkthrough's Jobs (examples/dev-cluster/kubernetes/jobs/, docs/kubernetes.md).
  std::string CreateFile(const std::string& file) {
    auto r = env_.Kubectl(
        {"create", "-f", std::string(ARTEL_SOURCE_DIR) + "/examples/dev-cluster/kubernetes/jobs/" + file});
    return r.ok() ? "" : r.status().ToString();
  }
  // The Workload a Job owns (controller ownerReference), null when none yet.
  Json WorkloadOf(const std::string& ns, const std::string& job) {
    Json j = env_.Get("jobs", ns, job);
    if (!j.is_object()) return Json();
    std::string uid = j["metadata"].value("uid", "");
    for (const auto& [k, w] : env_.Workloads())
      for (const Json& ref : w["metadata"].value("ownerReferences", Json::array()))
        if (ref.value("uid", "") == uid && ref.value("controller", false)) return w;
    return Json();
  }
  // The Job's pods: name -> node ("" while unbound); only pods not terminating.
  std::map<std::string, std::string> Pods(const std::string& ns, const std::string& job) {
    std::map<std::string, std::string> out;
    auto r =
        env_.Kubectl({"get", "pods", "-n", ns, "-l", "batch.kubernetes.io/job-name=" + job, "-o", "json"});
    if (!r.ok()) return out;
    Json l = Json::parse(*r, nullptr, false);
    if (l.is_discarded()) return out;
    for (const Json& p : l.value("items", Json::array())) {
      if (p["metadata"].contains("deletionTimestamp")) continue;
      out[p["metadata"].value("name", "")] = p["spec"].value("nodeName", "");
    }
    return out;
  }
  bool AllBound(const std::string& ns, const std::string& job, size_t n) {
    auto pods = Pods(ns, job);
    if (pods.size() != n) return false;
    for (const auto& [p, node] : pods)
      if (node.empty()) return false;
    return true;
  }
  std::string NodeLabel(const std::string& node, const std::string& label) {
    Json n = env_.Get("nodes", "", node);
    return n.is_object() ? n["metadata"].value("labels", Json::object()).value(label, "") : "";
  }
  std::string Log() {
    if (!env_.arteld) return "";
    std::string l = env_.arteld->log();
    return l.size() > 6000 ? l.substr(l.size() - 6000) : l;
  }
  std::string Artel(const std::vector<std::string>& args) {
    std::string cmd = std::string(ARTEL_BIN) + " --server " + env_.arteld->url();
    for (const std::string& a : args) cmd += " '" + a + "'";
    cmd += " 2>&1";
    std::string out;
    FILE* p = popen(cmd.c_str(), "r");
    if (p == nullptr) return "";
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    pclose(p);
    return out;
  }
  KubeEnv env_;
};

TEST_F(KubeDevCluster, kube_TheDevClusterStory) {
  // 1. speech fills its pool (16 A100-80GB: its cohort's 8 and its prod queue's idle 8);
  // nlp's research borrows: 32 = its own 16 and vision's idle 16.
  ASSERT_EQ(CreateFile("1-speech-research.yaml"), "");
  ASSERT_TRUE(WaitFor([&] { return AllBound("team-speech", "speech-research", 2); }, kWait))
      << WorkloadOf("team-speech", "speech-research").dump(1) << Log();
  ASSERT_EQ(CreateFile("2-nlp-research.yaml"), "");
  ASSERT_TRUE(WaitFor([&] { return AllBound("team-nlp", "nlp-research", 4); }, kWait))
      << WorkloadOf("team-nlp", "nlp-research").dump(1) << Log();
  Json nlp = WorkloadOf("team-nlp", "nlp-research");
  ASSERT_EQ(AdmittedCq(nlp), "nlp-regular") << nlp.dump(1);
  EXPECT_EQ(nlp["status"]["admission"]["podSetAssignments"][0]["flavors"].value("nvidia.com/gpu", ""),
            "a100-80g");
  // Every pod on an A100-80GB node (the flavor's nodeLabels went into the pod template).
  for (const auto& [pod, node] : Pods("team-nlp", "nlp-research"))
    EXPECT_EQ(NodeLabel(node, "artel.dev/node-pool"), "a100-80g") << pod << " on " << node;

  // 2. vision's prod Job takes back the 8 GPUs its prod queue guarantees (lent to nlp).
  auto reclaim_start = std::chrono::steady_clock::now();
  ASSERT_EQ(CreateFile("3-vision-prod.yaml"), "");
  EXPECT_TRUE(WaitFor([&] { return AllBound("team-vision", "vision-prod", 1); }, kWait))
      << WorkloadOf("team-vision", "vision-prod").dump(1) << WorkloadOf("team-nlp", "nlp-research").dump(1)
      << Log();
  // Within one scheduling cycle plus the victim's grace period (30 s, the pods' default; the
  // fake kubelet ends them at once) and the API round trips: a bound, not a speed figure.
  double reclaim_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - reclaim_start).count();
  EXPECT_LT(reclaim_s, 31.0 + 15.0) << "reclaim took " << reclaim_s << " s";
  nlp = WorkloadOf("team-nlp", "nlp-research");
  EXPECT_EQ(Reason(nlp, "Preempted"), "InCohortReclamation") << nlp.dump(1);
  EXPECT_FALSE(Reserved(nlp)) << nlp.dump(1);  // requeued, waiting
  EXPECT_TRUE(env_.Get("jobs", "team-nlp", "nlp-research")["spec"].value("suspend", false));
  EXPECT_TRUE(Pods("team-nlp", "nlp-research").empty());
  // speech, inside its own pool, was not touched.
  EXPECT_TRUE(AllBound("team-speech", "speech-research", 2));
  EXPECT_FALSE(IsTrue(WorkloadOf("team-speech", "speech-research"), "Evicted"));
  // kubectl and artel explain it.
  std::string nlp_name = nlp["metadata"].value("name", "");
  auto wls = env_.Kubectl({"get", "workloads", "-n", "team-nlp"});
  ASSERT_TRUE(wls.ok()) << wls.status().ToString();
  EXPECT_NE(wls->find(nlp_name), std::string::npos) << *wls;
  auto cqs = env_.Kubectl({"get", "clusterqueues"});
  ASSERT_TRUE(cqs.ok());
  EXPECT_NE(cqs->find("vision-prod"), std::string::npos) << *cqs;
  std::string why = Artel({"why", "team-nlp/" + nlp_name});
  EXPECT_NE(why.find("a100-80g"), std::string::npos) << why;

  // 3. A 16-pod gang bound to one InfiniBand scalable unit: su-2's two nodes.
  ASSERT_EQ(CreateFile("4-pretrain.yaml"), "");
  EXPECT_TRUE(WaitFor([&] { return AllBound("team-vision", "pretrain", 16); }, kWait))
      << WorkloadOf("team-vision", "pretrain").dump(1) << Log();
  std::map<std::string, int> per_node;
  for (const auto& [pod, node] : Pods("team-vision", "pretrain")) {
    per_node[node]++;
    EXPECT_EQ(NodeLabel(node, "artel.dev/ib-scalable-unit"), "su-2") << pod << " on " << node;
  }
  EXPECT_EQ(per_node, (std::map<std::string, int>{{"hgx-h100-1", 8}, {"hgx-h100-2", 8}}));
  Json pre = WorkloadOf("team-vision", "pretrain");
  const Json& ta = pre["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"];
  EXPECT_TRUE(ta.is_object()) << pre.dump(1);
  std::string ta_text = ta.dump();
  EXPECT_NE(ta_text.find("hgx-h100-1"), std::string::npos) << ta_text;
  EXPECT_NE(ta_text.find("hgx-h100-2"), std::string::npos) << ta_text;

  // 4. MIG: 1g.10gb slices land on the node whose allocatable has them.
  ASSERT_EQ(CreateFile("5-mig-eval.yaml"), "");
  EXPECT_TRUE(WaitFor([&] { return AllBound("team-speech", "mig-eval", 2); }, kWait))
      << WorkloadOf("team-speech", "mig-eval").dump(1) << Log();
  for (const auto& [pod, node] : Pods("team-speech", "mig-eval"))
    EXPECT_EQ(NodeLabel(node, "nvidia.com/mig.config"), "all-1g.10gb") << pod << " on " << node;
}

}  // namespace
}  // namespace artel::testing
