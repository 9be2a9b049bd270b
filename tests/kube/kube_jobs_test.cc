// Jobs and pods on a real control plane (src/kube/jobs.cc): the real arteld
// in Kubernetes mode, kube-controller-manager (Jobs create pods, garbage
// collection), kube-scheduler (pods bind) and the fake kubelet (pods run and
// succeed after artel.dev/fake-run-seconds). Objects are created with
// kubectl; what Artel wrote is read back with kubectl. Polls with deadlines.
#include <gtest/gtest.h>

#include <fstream>

#include "controller_env.h"
#include "kube/jobs.h"

namespace artel::testing {
namespace {

constexpr int kWait = 60000;

// One GPU node carrying the flavor's label and the taint its toleration
// lifts: a pod runs there only with what an admission puts in its template
// (a Job created running cannot finish its pods before Artel suspends it).
constexpr const char* kNodes = R"(nodes:
- name: gpu-node
  labels: {artel.dev/pool: gpu}
  capacity: {cpu: "16", memory: 64Gi, nvidia.com/gpu: "4", pods: "110"}
  taints: [{key: artel.dev/gpu, value: "true", effect: NoSchedule}]
)";

// A flavor with nodeLabels and a toleration, one ClusterQueue of 4 GPUs that
// preempts lower priorities, one LocalQueue, two priority classes.
constexpr const char* kConfig = R"(apiVersion: v1
kind: Namespace
metadata:
  name: team
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: gpu
spec:
  nodeLabels:
    artel.dev/pool: gpu
  tolerations:
  - key: artel.dev/gpu
    operator: Exists
    effect: NoSchedule
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: cq
spec:
  namespaceSelector: {}
  preemption:
    withinClusterQueue: LowerPriority
  resourceGroups:
  - coveredResources: [cpu, nvidia.com/gpu]
    flavors:
    - name: gpu
      resources:
      - name: cpu
        nominalQuota: 16
      - name: nvidia.com/gpu
        nominalQuota: 4
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  name: default
  namespace: team
spec:
  clusterQueue: cq
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata:
  name: low
value: 10
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata:
  name: high
value: 1000
)";

struct JobOpts {
  int parallelism = 1;
  int completions = -1;  // -1: as parallelism
  int gpus = 1;
  int run_seconds = 0;  // 0: runs until deleted
  bool suspend = true;
  std::string priority_class;
  int min_parallelism = 0;
  std::string template_labels;  // "k: v" lines for the pod template's labels
  std::string labels;           // "k: v" lines for the Job's labels
};

std::string JobYaml(const std::string& name, const JobOpts& o) {
  std::string y = "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: " + name +
                  "\n  namespace: team\n  labels:\n    kueue.x-k8s.io/queue-name: default\n";
  if (!o.priority_class.empty()) y += "    kueue.x-k8s.io/priority-class: " + o.priority_class + "\n";
  if (!o.labels.empty()) y += "    " + o.labels + "\n";
  if (o.min_parallelism > 0)
    y += "  annotations:\n    kueue.x-k8s.io/job-min-parallelism: \"" + std::to_string(o.min_parallelism) +
         "\"\n";
  y += "spec:\n";
  if (o.suspend) y += "  suspend: true\n";
  y += "  parallelism: " + std::to_string(o.parallelism) +
       "\n  completions: " + std::to_string(o.completions < 0 ? o.parallelism : o.completions) +
       "\n  template:\n";
  if (o.run_seconds > 0 || !o.template_labels.empty()) y += "    metadata:\n";
  if (!o.template_labels.empty()) y += "      labels:\n        " + o.template_labels + "\n";
  if (o.run_seconds > 0)
    y +=
        "      annotations:\n        artel.dev/fake-run-seconds: \"" + std::to_string(o.run_seconds) + "\"\n";
  y += "    spec:\n      restartPolicy: Never\n      containers:\n      - name: c\n        image: busybox\n"
       "        resources:\n          requests: {cpu: \"1\", nvidia.com/gpu: \"" +
       std::to_string(o.gpus) + "\"}\n          limits: {nvidia.com/gpu: \"" + std::to_string(o.gpus) +
       "\"}\n";
  return y;
}

// A plain pod held by the admission gate; `group` "" for a single pod;
// `run_seconds` 0: runs until deleted.
std::string PodYaml(const std::string& name, const std::string& group, int total, int run_seconds) {
  std::string y = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name +
                  "\n  namespace: team\n  labels:\n    kueue.x-k8s.io/queue-name: default\n";
  if (!group.empty()) y += "    kueue.x-k8s.io/pod-group-name: " + group + "\n";
  std::string annotations;
  if (run_seconds > 0)
    annotations += "    artel.dev/fake-run-seconds: \"" + std::to_string(run_seconds) + "\"\n";
  if (!group.empty())
    annotations += "    kueue.x-k8s.io/pod-group-total-count: \"" + std::to_string(total) + "\"\n";
  if (!annotations.empty()) y += "  annotations:\n" + annotations;
  y +=
      "spec:\n  schedulingGates:\n  - name: kueue.x-k8s.io/admission\n  restartPolicy: Never\n  containers:\n"
      "  - name: c\n    image: busybox\n    resources:\n      requests: {cpu: \"1\", nvidia.com/gpu: \"1\"}\n"
      "      limits: {nvidia.com/gpu: \"1\"}\n";
  return y;
}

// Minimal CustomResourceDefinitions of Volcano's and KAI's PodGroup (the
// fields are not validated: arteld reads spec.minMember and
// spec.priorityClassName and the queue-name label).
std::string PodGroupCrd(const std::string& group, const std::string& version) {
  return "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: "
         "podgroups." +
         group + "\nspec:\n  group: " + group +
         "\n  scope: Namespaced\n  names:\n    kind: PodGroup\n    listKind: PodGroupList\n    plural: "
         "podgroups\n"
         "    singular: podgroup\n  versions:\n  - name: " +
         version +
         "\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n"
         "        x-kubernetes-preserve-unknown-fields: true\n";
}

class KubeJobs : public ::testing::Test {
 protected:
  bool podgroup_crds_ = false;  // install Volcano's and KAI's PodGroup CRDs before arteld starts
  void SetUp() override {
    nodes_file_ = TempDir("kube-jobs") + "/nodes.yaml";
    std::ofstream(nodes_file_) << kNodes;
    std::string error;
    K8sOptions o;
    o.controller_manager = true;
    o.scheduler = true;
    o.fake_kubelet = true;
    o.fake_nodes = nodes_file_;
    ASSERT_TRUE(env_.Up(&error, o)) << error;
    ASSERT_EQ(env_.Apply(kConfig), "");
    if (podgroup_crds_) {
      ASSERT_EQ(env_.Apply(PodGroupCrd("scheduling.volcano.sh", "v1beta1") + "---\n" +
                           PodGroupCrd("scheduling.run.ai", "v2alpha2")),
                "");
      auto w = env_.Kubectl({"wait", "--for=condition=Established", "--timeout=60s",
                             "crd/podgroups.scheduling.volcano.sh", "crd/podgroups.scheduling.run.ai"});
      ASSERT_TRUE(w.ok()) << w.status().ToString();
    }
    ASSERT_TRUE(env_.StartArteld({}, &error)) << error;
  }
  std::string Create(const std::string& yaml) {
    auto r = env_.Kubectl({"create", "-f", "-"}, yaml);
    return r.ok() ? "" : r.status().ToString();
  }
  Json Job(const std::string& name) { return env_.Get("jobs", "team", name); }
  Json Pod(const std::string& name) { return env_.Get("pods", "team", name); }
  // The Workload a Job or pod owns (by the controller ownerReference's uid).
  Json OwnedWorkload(const Json& owner) {
    std::string uid = owner["metadata"].value("uid", "");
    for (const auto& [k, w] : env_.Workloads())
      for (const Json& ref : w["metadata"].value("ownerReferences", Json::array()))
        if (ref.value("uid", "") == uid && ref.value("controller", false)) return w;
    return Json();
  }
  static bool Suspended(const Json& job) { return job["spec"].value("suspend", false); }
  static bool JobDone(const Json& job) {
    for (const Json& c : job["status"].value("conditions", Json::array()))
      if (c.value("type", "") == "Complete" && c.value("status", "") == "True") return true;
    return false;
  }
  int RunningPods(const std::string& job) {
    auto r = env_.Kubectl(
        {"get", "pods", "-n", "team", "-l", "batch.kubernetes.io/job-name=" + job, "-o", "json"});
    if (!r.ok()) return -1;
    int n = 0;
    const Json list = Json::parse(*r);
    for (const Json& p : list["items"])
      if (p["status"].value("phase", "") == "Running" && !p["metadata"].contains("deletionTimestamp")) ++n;
    return n;
  }
  std::string Diag(const std::string& what) {
    std::string log = env_.arteld ? env_.arteld->log() : "";
    if (log.size() > 6000) log = log.substr(log.size() - 6000);
    auto pods = env_.Kubectl({"get", "pods", "-n", "team", "-o", "wide"});
    auto jobs = env_.Kubectl({"get", "jobs", "-n", "team", "-o", "wide"});
    auto ev = env_.Kubectl({"get", "events", "-n", "team"});
    return what + "\npods:\n" + (pods.ok() ? *pods : "") + "\njobs:\n" + (jobs.ok() ? *jobs : "") +
           "\nevents:\n" + (ev.ok() ? ev->substr(ev->size() > 4000 ? ev->size() - 4000 : 0) : "") +
           "\nworkloads:\n" + Json(env_.Workloads()).dump(1).substr(0, 8000) + "\narteld log tail:\n" + log;
  }
  std::string nodes_file_;
  KubeEnv env_;
};

// Kueue's Workload naming (jobframework/workload_names.go), on the vector of
// Kueue's own test (workload_names_test.go: "name", "uid" -> job-name-ef3a1).
TEST(KubeJobsNames, WorkloadNameAsKueue) {
  EXPECT_EQ(kube::WorkloadNameForOwner("Job", "batch", "name", "uid"), "job-name-ef3a1");
  std::string long_name(300, 'x');
  std::string n = kube::WorkloadNameForOwner("Job", "batch", long_name, "uid");
  EXPECT_EQ(n.size(), 253u);
  EXPECT_EQ(n.substr(0, 8), "job-xxxx");
}

// A Job created running (no webhook) is suspended, gets its Workload, is
// admitted and started with the flavor's nodeSelector and toleration, its pods
// run on the flavor's node and the Job completes: the Workload is Finished.
// Then a higher-priority Job preempts a running lower one: the victim is
// suspended with its template restored and its Workload requeued, the
// preemptor runs; when it is done the victim is admitted again. Deleting a
// Job deletes its Workload. A podSetInfo that cannot apply fails the Workload.
TEST_F(KubeJobs, JobLifecycleAndPreemption) {
  ASSERT_EQ(Create(JobYaml("first", {.parallelism = 2,
                                     .gpus = 1,
                                     .run_seconds = 1,
                                     .suspend = false,
                                     .labels = "kueue.x-k8s.io/max-exec-time-seconds: \"600\""})),
            "");
  Json wl;
  ASSERT_TRUE(WaitFor(
      [&] {
        wl = OwnedWorkload(Job("first"));
        return !wl.is_null();
      },
      kWait))
      << Diag("no workload for job first");
  Json job = Job("first");
  EXPECT_EQ(wl["metadata"].value("name", ""),
            kube::WorkloadNameForOwner("Job", "batch", "first", job["metadata"].value("uid", "")));
  EXPECT_EQ(wl["spec"].value("queueName", ""), "default");
  EXPECT_EQ(wl["spec"].value("maximumExecutionTimeSeconds", 0), 600);
  ASSERT_EQ(wl["spec"]["podSets"].size(), 1u) << wl.dump(1);
  EXPECT_EQ(wl["spec"]["podSets"][0].value("name", ""), "main");
  EXPECT_EQ(wl["spec"]["podSets"][0].value("count", 0), 2);
  const std::string wl_name = wl["metadata"].value("name", "");
  ASSERT_TRUE(WaitFor([&] { return JobDone(Job("first")); }, kWait)) << Diag(Job("first").dump(1));
  job = Job("first");
  // What the admission put in the template stays once the Job is done.
  const Json tpl = job["spec"]["template"];
  const Json tspec = tpl.value("spec", Json::object());
  const Json tmeta = tpl.value("metadata", Json::object());
  EXPECT_FALSE(Suspended(job)) << Diag(job.dump(1));
  EXPECT_EQ(tspec.value("nodeSelector", Json::object()).value("artel.dev/pool", ""), "gpu") << tpl.dump(1);
  ASSERT_TRUE(tspec.value("tolerations", Json()).is_array()) << tpl.dump(1);
  EXPECT_EQ(tspec["tolerations"][0].value("key", ""), "artel.dev/gpu");
  EXPECT_EQ(tmeta.value("labels", Json::object()).value("kueue.x-k8s.io/podset", ""), "main");
  EXPECT_EQ(tmeta.value("annotations", Json::object()).value("kueue.x-k8s.io/workload", ""), wl_name);
  EXPECT_TRUE(WaitFor([&] { return IsTrue(env_.Workload("team", wl_name), "Finished"); }, kWait))
      << Diag("first not finished");
  EXPECT_EQ(Reason(env_.Workload("team", wl_name), "Finished"), "Succeeded");

  // Preemption.
  ASSERT_EQ(Create(JobYaml("low", {.parallelism = 4, .gpus = 1, .priority_class = "low"})), "");
  ASSERT_TRUE(WaitFor([&] { return RunningPods("low") == 4; }, kWait)) << Diag("low not running");
  Json low_wl = OwnedWorkload(Job("low"));
  EXPECT_EQ(low_wl["spec"].value("priority", -1), 10) << low_wl.dump(1);
  const std::string low_name = low_wl["metadata"].value("name", "");
  ASSERT_EQ(
      Create(JobYaml("high", {.parallelism = 2, .gpus = 2, .run_seconds = 3, .priority_class = "high"})), "");
  ASSERT_TRUE(WaitFor(
      [&] {
        Json w = env_.Workload("team", low_name);
        return IsTrue(w, "Requeued") && !IsTrue(w, "QuotaReserved");
      },
      kWait))
      << Diag("low not requeued");
  Json low = Job("low");
  EXPECT_TRUE(Suspended(low));
  EXPECT_FALSE(low["spec"]["template"]["spec"].contains("nodeSelector")) << low.dump(1);
  EXPECT_FALSE(low["spec"]["template"]["spec"].contains("tolerations")) << low.dump(1);
  EXPECT_EQ(
      low["spec"]["template"]["metadata"].value("labels", Json::object()).count("kueue.x-k8s.io/podset"), 0u);
  EXPECT_EQ(Reason(env_.Workload("team", low_name), "Evicted"), "Preempted");
  // Events on the Job, as Kueue records them.
  EXPECT_TRUE(WaitFor(
      [&] {
        auto ev = env_.Kubectl(
            {"get", "events", "-n", "team", "--field-selector", "involvedObject.name=low", "-o", "json"});
        if (!ev.ok()) return false;
        std::set<std::string> reasons;
        const Json list = Json::parse(*ev);
        for (const Json& e : list["items"])
          if (e["involvedObject"].value("kind", "") == "Job") reasons.insert(e.value("reason", ""));
        return reasons.count("CreatedWorkload") && reasons.count("Started") && reasons.count("Stopped");
      },
      kWait))
      << Diag("no Job events");
  ASSERT_TRUE(WaitFor([&] { return RunningPods("high") == 2; }, kWait)) << Diag("high not running");
  Json high = Job("high");
  EXPECT_FALSE(Suspended(high));
  // The preemptor completes; the victim is admitted and started again.
  ASSERT_TRUE(WaitFor([&] { return JobDone(Job("high")); }, kWait)) << Diag("high not done");
  ASSERT_TRUE(WaitFor([&] { return RunningPods("low") == 4 && !Suspended(Job("low")); }, kWait))
      << Diag("low not restarted");
  EXPECT_TRUE(IsTrue(env_.Workload("team", low_name), "Admitted"));

  // A Job deleted: its Workload goes.
  ASSERT_TRUE(env_.Kubectl({"delete", "job", "low", "-n", "team", "--wait=false"}).ok());
  EXPECT_TRUE(WaitFor([&] { return env_.Workload("team", low_name).is_null(); }, kWait))
      << Diag("low wl stays");

  // A template that already sets the podset label to another value cannot
  // take the admission: the Workload is finished as failed (Kueue's
  // permanent podSetInfo error) and the Job stays suspended.
  ASSERT_EQ(Create(JobYaml("clash",
                           {.parallelism = 1, .gpus = 1, .template_labels = "kueue.x-k8s.io/podset: other"})),
            "");
  Json clash_wl;
  ASSERT_TRUE(WaitFor(
      [&] {
        clash_wl = OwnedWorkload(Job("clash"));
        return IsTrue(clash_wl, "Finished");
      },
      kWait))
      << Diag("clash not finished");
  EXPECT_EQ(Reason(clash_wl, "Finished"), "Failed");
  EXPECT_NE(Message(clash_wl, "Finished").find("FailedToStart"), std::string::npos) << clash_wl.dump(1);
  EXPECT_TRUE(Suspended(Job("clash")));
}

// Pods: a pod group gets its Workload only once all its pods exist, and its
// gates go only when admitted; its pods run on the flavor's node and the
// Workload finishes. Partial admission: a Job with job-min-parallelism runs
// with the admitted count, and its parallelism is restored when it is
// preempted. An evicted pod group's pods are deleted. A pending Job whose
// parallelism changes gets a new Workload.
TEST_F(KubeJobs, PodGroupAndPartialAdmission) {
  ASSERT_EQ(Create(PodYaml("pg-0", "pg", 2, 1)), "");
  // A single pod created after pg-0: once its Workload exists, pg-0's event
  // was handled before it (one ordered queue), and pg has no Workload yet.
  ASSERT_EQ(Create(PodYaml("solo", "", 1, 1)), "");
  Json solo_wl;
  ASSERT_TRUE(WaitFor(
      [&] {
        solo_wl = OwnedWorkload(Pod("solo"));
        return !solo_wl.is_null();
      },
      kWait))
      << Diag("no workload for solo");
  EXPECT_TRUE(env_.Workload("team", "pg").is_null());
  EXPECT_TRUE(Pod("pg-0")["spec"].contains("schedulingGates"));
  ASSERT_EQ(Create(PodYaml("pg-1", "pg", 2, 1)), "");
  ASSERT_TRUE(WaitFor([&] { return !env_.Workload("team", "pg").is_null(); }, kWait))
      << Diag("no pg workload");
  Json pg = env_.Workload("team", "pg");
  ASSERT_EQ(pg["spec"]["podSets"].size(), 1u) << pg.dump(1);
  EXPECT_EQ(pg["spec"]["podSets"][0].value("count", 0), 2);
  EXPECT_EQ(pg["metadata"]["annotations"].value("kueue.x-k8s.io/is-group-workload", ""), "true");
  EXPECT_EQ(pg["metadata"]["ownerReferences"].size(), 2u);
  // Admitted: both pods ungated with the flavor's nodeSelector, bound, run, succeed.
  for (const char* p : {"pg-0", "pg-1", "solo"}) {
    ASSERT_TRUE(WaitFor([&] { return Pod(p)["status"].value("phase", "") == "Succeeded"; }, kWait))
        << Diag(std::string(p) + " did not succeed: " + Pod(p).dump(1));
    Json pod = Pod(p);
    EXPECT_FALSE(pod["spec"].contains("schedulingGates")) << pod.dump(1);
    EXPECT_EQ(pod["spec"]["nodeSelector"].value("artel.dev/pool", ""), "gpu");
    EXPECT_EQ(pod["spec"].value("nodeName", ""), "gpu-node");
    EXPECT_FALSE(pod["metadata"]["labels"].value("kueue.x-k8s.io/podset", "").empty());
  }
  EXPECT_TRUE(WaitFor([&] { return IsTrue(env_.Workload("team", "pg"), "Finished"); }, kWait)) << Diag("pg");
  EXPECT_TRUE(WaitFor([&] { return IsTrue(OwnedWorkload(Pod("solo")), "Finished"); }, kWait)) << Diag("solo");

  // Partial admission: 2 GPUs held by a pod group that runs until evicted,
  // a Job of 4 (at least 2) runs with 2.
  ASSERT_EQ(Create(PodYaml("held-0", "held", 2, 0)), "");
  ASSERT_EQ(Create(PodYaml("held-1", "held", 2, 0)), "");
  for (const char* p : {"held-0", "held-1"})
    ASSERT_TRUE(WaitFor([&] { return Pod(p)["status"].value("phase", "") == "Running"; }, kWait))
        << Diag(std::string(p) + " not running");
  ASSERT_EQ(Create(JobYaml("part", {.parallelism = 4, .gpus = 1, .min_parallelism = 2})), "");
  ASSERT_TRUE(WaitFor([&] { return RunningPods("part") == 2; }, kWait)) << Diag("part not running");
  Json part = Job("part");
  EXPECT_EQ(part["spec"].value("parallelism", 0), 2);
  Json part_wl = OwnedWorkload(part);
  EXPECT_EQ(part_wl["spec"]["podSets"][0].value("count", 0), 4) << part_wl.dump(1);
  EXPECT_EQ(part_wl["spec"]["podSets"][0].value("minCount", 0), 2);
  EXPECT_EQ(part_wl["status"]["admission"]["podSetAssignments"][0].value("count", 0), 2) << part_wl.dump(1);
  // Preempted by a Job of all 4 GPUs: suspended, parallelism back to 4.
  ASSERT_EQ(Create(JobYaml("urgent", {.parallelism = 4, .gpus = 1, .priority_class = "high"})), "");
  ASSERT_TRUE(WaitFor(
      [&] {
        Json j = Job("part");
        return Suspended(j) && j["spec"].value("parallelism", 0) == 4;
      },
      kWait))
      << Diag(Job("part").dump(1));
  ASSERT_TRUE(WaitFor([&] { return RunningPods("urgent") == 4; }, kWait)) << Diag("urgent not running");
  EXPECT_FALSE(IsTrue(env_.Workload("team", part_wl["metadata"].value("name", "")), "QuotaReserved"));
  // The evicted pod group: its pods deleted, its reservation cleared, and
  // with every pod gone its Workload too.
  EXPECT_TRUE(WaitFor([&] { return Pod("held-0").is_null() && Pod("held-1").is_null(); }, kWait))
      << Diag("held pods stay");
  EXPECT_TRUE(WaitFor([&] { return env_.Workload("team", "held").is_null(); }, kWait))
      << Diag("held wl stays");

  // A suspended Job that changes while it waits gets its Workload made again.
  ASSERT_EQ(Create(JobYaml("resize", {.parallelism = 1, .completions = 3, .gpus = 1})), "");
  ASSERT_TRUE(WaitFor([&] { return !OwnedWorkload(Job("resize")).is_null(); }, kWait))
      << Diag("no resize wl");
  auto patched = env_.Kubectl(
      {"patch", "job", "resize", "-n", "team", "--type=merge", "-p", R"({"spec":{"parallelism":3}})"});
  ASSERT_TRUE(patched.ok()) << patched.status().ToString();
  EXPECT_TRUE(WaitFor(
      [&] {
        Json w = OwnedWorkload(Job("resize"));
        return !w.is_null() && w["spec"]["podSets"][0].value("count", 0) == 3;
      },
      kWait))
      << Diag("resize wl not made again");
}

class KubePodGroups : public KubeJobs {
 protected:
  void SetUp() override {
    podgroup_crds_ = true;
    KubeJobs::SetUp();
  }
  // A pod of a Volcano (annotation scheduling.k8s.io/group-name, task in
  // volcano.sh/task-spec) or KAI (annotation pod-group-name) PodGroup, held
  // by the admission gate as the webhook leaves it.
  static std::string GroupPod(const std::string& name, bool volcano, const std::string& group) {
    std::string y = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name +
                    "\n  namespace: team\n  annotations:\n" + "    artel.dev/fake-run-seconds: \"1\"\n";
    if (volcano)
      y += "    scheduling.k8s.io/group-name: " + group + "\n    volcano.sh/task-spec: worker\n";
    else
      y += "    pod-group-name: " + group + "\n";
    y += "spec:\n  schedulingGates:\n  - name: kueue.x-k8s.io/admission\n  restartPolicy: Never\n  "
         "containers:\n"
         "  - name: c\n    image: busybox\n    resources:\n      requests: {cpu: \"1\", nvidia.com/gpu: "
         "\"1\"}\n"
         "      limits: {nvidia.com/gpu: \"1\"}\n";
    return y;
  }
  Json PodGroupObj(bool volcano, const std::string& name) {
    return env_.Get(volcano ? "podgroups.scheduling.volcano.sh" : "podgroups.scheduling.run.ai", "team",
                    name);
  }
};

// A Volcano PodGroup (minMember 2) and a KAI PodGroup (minMember 1) with the
// queue-name label: each gets a Workload owned by the PodGroup once minMember
// of its pods exist, and its pods are admitted as one gang (gates removed
// together), run on the flavor's node and finish the Workload.
TEST_F(KubePodGroups, VolcanoAndKaiPodGroupsAdmittedAsGangs) {
  ASSERT_EQ(Create("apiVersion: scheduling.volcano.sh/v1beta1\nkind: PodGroup\nmetadata:\n  name: vg\n"
                   "  namespace: team\n  labels:\n    kueue.x-k8s.io/queue-name: default\n"
                   "spec:\n  minMember: 2\n"),
            "");
  ASSERT_EQ(Create(GroupPod("vg-0", true, "vg")), "");
  // The KAI group after vg-0: once its Workload exists, vg-0 was handled
  // before (one ordered queue) and vg has no Workload yet.
  ASSERT_EQ(Create("apiVersion: scheduling.run.ai/v2alpha2\nkind: PodGroup\nmetadata:\n  name: kg\n"
                   "  namespace: team\n  labels:\n    kueue.x-k8s.io/queue-name: default\n"
                   "    kueue.x-k8s.io/priority-class: high\nspec:\n  minMember: 1\n"),
            "");
  ASSERT_EQ(Create(GroupPod("kg-0", false, "kg")), "");
  Json kg_wl;
  ASSERT_TRUE(WaitFor(
      [&] {
        kg_wl = OwnedWorkload(PodGroupObj(false, "kg"));
        return !kg_wl.is_null();
      },
      kWait))
      << Diag("no workload for kg");
  EXPECT_EQ(kg_wl["spec"].value("priority", -1), 1000);
  EXPECT_TRUE(OwnedWorkload(PodGroupObj(true, "vg")).is_null());
  EXPECT_TRUE(Pod("vg-0")["spec"].contains("schedulingGates"));
  ASSERT_EQ(Create(GroupPod("vg-1", true, "vg")), "");
  Json vg_wl;
  ASSERT_TRUE(WaitFor(
      [&] {
        vg_wl = OwnedWorkload(PodGroupObj(true, "vg"));
        return !vg_wl.is_null();
      },
      kWait))
      << Diag("no workload for vg");
  ASSERT_EQ(vg_wl["spec"]["podSets"].size(), 1u) << vg_wl.dump(1);
  EXPECT_EQ(vg_wl["spec"]["podSets"][0].value("name", ""), "worker");
  EXPECT_EQ(vg_wl["spec"]["podSets"][0].value("count", 0), 2);
  for (const char* p : {"vg-0", "vg-1", "kg-0"}) {
    ASSERT_TRUE(WaitFor([&] { return Pod(p)["status"].value("phase", "") == "Succeeded"; }, kWait))
        << Diag(std::string(p) + " did not succeed: " + Pod(p).dump(1));
    Json pod = Pod(p);
    EXPECT_FALSE(pod["spec"].contains("schedulingGates")) << pod.dump(1);
    EXPECT_EQ(pod["spec"]["nodeSelector"].value("artel.dev/pool", ""), "gpu");
    EXPECT_EQ(pod["spec"].value("nodeName", ""), "gpu-node");
  }
  const std::string vg_name = vg_wl["metadata"].value("name", "");
  const std::string kg_name = kg_wl["metadata"].value("name", "");
  EXPECT_TRUE(WaitFor([&] { return IsTrue(env_.Workload("team", vg_name), "Finished"); }, kWait))
      << Diag("vg");
  EXPECT_TRUE(WaitFor([&] { return IsTrue(env_.Workload("team", kg_name), "Finished"); }, kWait))
      << Diag("kg");
}

}  // namespace
}  // namespace artel::testing
