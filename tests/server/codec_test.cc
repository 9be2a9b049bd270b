#include "api/codec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>

#include "api/manifest_files.h"
#include "manifest/manifest.h"

namespace artel::server {
namespace {

TEST(CodecTest, WorkloadRoundTrips) {
  auto j = ParseBody(R"({"apiVersion":"artel.dev/v1alpha1","kind":"Workload",
    "metadata":{"name":"w","namespace":"team-a","labels":{"x":"y"}},
    "spec":{"queueName":"default","priority":5,"terminationGracePeriodSeconds":3,"backoffLimit":2,
      "podSets":[{"name":"main","count":2,"minCount":1,"requests":{"nvidia.com/gpu":"1","cpu":"500m"},
                  "command":["sleep","1"],"env":{"A":"b"},"workingDir":"/tmp"}]}})");
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  auto spec = WorkloadFromJson(*j);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->pod_sets[0].requests.at("cpu"), 500);
  EXPECT_EQ(*spec->termination_grace, 3000);
  auto again = WorkloadFromJson(WorkloadSpecToJson(*spec));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(WorkloadSpecToJson(*again), WorkloadSpecToJson(*spec));
}

// Kueue's spec.maximumExecutionTimeSeconds is read, kept in the journal's
// JSON, and validated.
TEST(CodecTest, MaximumExecutionTimeRoundTripsAndIsValidated) {
  auto j = ParseBody(R"({"metadata":{"name":"w","namespace":"team-a"},"spec":{"queueName":"q",
    "maximumExecutionTimeSeconds":600,"podSets":[{"name":"main"}]}})");
  ASSERT_TRUE(j.ok());
  auto spec = WorkloadFromJson(*j);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->max_runtime, std::optional<core::Time>(600 * 1000));
  auto again = WorkloadFromJson(WorkloadSpecToJson(*spec));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->max_runtime, spec->max_runtime);
  auto none = WorkloadFromJson(*ParseBody(R"({"metadata":{"name":"w","namespace":"a"},"spec":{"queueName":"q",
    "podSets":[{"name":"main"}]}})"));
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->max_runtime.has_value());
  EXPECT_FALSE(WorkloadSpecToJson(*none)["spec"].contains("maximumExecutionTimeSeconds"));
  auto bad = WorkloadFromJson(*ParseBody(R"({"metadata":{"name":"w","namespace":"a"},"spec":{"queueName":"q",
    "maximumExecutionTimeSeconds":0,"podSets":[{"name":"main"}]}})"));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().field(), "spec.maximumExecutionTimeSeconds");
}

// Node affinity survives the journal's JSON (a recovered pending workload
// keeps its flavor constraints) and is read from a Job's pod spec.
TEST(CodecTest, NodeAffinityRoundTripsAndIsValidated) {
  auto j = ParseBody(R"({"metadata":{"name":"w","namespace":"team-a"},"spec":{"queueName":"q",
    "podSets":[{"name":"main","nodeAffinity":[{"matchExpressions":[
      {"key":"gpu","operator":"In","values":["a100","h100"]},{"key":"spot","operator":"DoesNotExist"}]}]}]}})");
  ASSERT_TRUE(j.ok());
  auto spec = WorkloadFromJson(*j);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  ASSERT_EQ(spec->pod_sets[0].node_affinity.size(), 1u);
  EXPECT_EQ(spec->pod_sets[0].node_affinity[0].match_expressions[1].op, "DoesNotExist");
  auto again = WorkloadFromJson(WorkloadSpecToJson(*spec));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(WorkloadSpecToJson(*again), WorkloadSpecToJson(*spec));
  EXPECT_EQ(again->pod_sets[0].node_affinity[0].match_expressions[0].values,
            (std::vector<std::string>{"a100", "h100"}));

  auto bad = ParseBody(R"({"metadata":{"name":"w","namespace":"a"},"spec":{"queueName":"q",
    "podSets":[{"name":"main","nodeAffinity":[{"matchExpressions":[{"key":"gpu","operator":"Near"}]}]}]}})");
  ASSERT_TRUE(bad.ok());
  auto e = WorkloadFromJson(*bad);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().field(), "spec.podSets[0].nodeAffinity[0].matchExpressions[0].operator");

  auto job = ParseBody(R"({"apiVersion":"batch/v1","kind":"Job",
    "metadata":{"name":"j","namespace":"team-a","labels":{"kueue.x-k8s.io/queue-name":"q"}},
    "spec":{"template":{"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":
      {"nodeSelectorTerms":[{"matchExpressions":[{"key":"zone","operator":"In","values":["a"]}]}]}}},
      "containers":[{"name":"c","image":"x"}]}}}})");
  ASSERT_TRUE(job.ok());
  auto js = WorkloadFromJob(*job);
  ASSERT_TRUE(js.ok()) << js.status().ToString();
  ASSERT_EQ(js->pod_sets[0].node_affinity.size(), 1u);
  EXPECT_EQ(js->pod_sets[0].node_affinity[0].match_expressions[0].key, "zone");
}

TEST(CodecTest, StrictErrorsNameTheField) {
  auto j = ParseBody(
      R"({"metadata":{"name":"w","namespace":"a"},"spec":{"queueName":"q","podSets":[{"cuont":1}]}})");
  ASSERT_TRUE(j.ok());
  auto spec = WorkloadFromJson(*j);
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().field(), "spec.podSets[0].cuont");
  for (
      const char* bad :
      {R"({"metadata":{"name":"../x","namespace":"a"},"spec":{"queueName":"q","podSets":[{}]}})",
       R"({"metadata":{"name":"w","namespace":"a"},"spec":{"queueName":"q","podSets":[{"requests":{"cpu":"-1"}}]}})",
       R"({"metadata":{"name":"w","namespace":"a"},"spec":{"queueName":"q","podSets":[]}})",
       R"({"metadata":{"name":"w","namespace":"a"},"spec":{"queueName":"q","podSets":[{"count":"x"}]}})"}) {
    auto b = ParseBody(bad);
    ASSERT_TRUE(b.ok());
    EXPECT_FALSE(WorkloadFromJson(*b).ok()) << bad;
  }
}

TEST(CodecTest, HostileBodiesAreErrorsNotCrashes) {
  EXPECT_FALSE(ParseBody(std::string(100000, '[')).ok());
  EXPECT_FALSE(ParseBody("{\"a\":").ok());
  EXPECT_FALSE(ParseBody(std::string(5000, ' ') + "a: b").ok() && false);
  EXPECT_FALSE(ParseBody("").ok());
  std::string deep;
  for (int i = 0; i < 3000; ++i) deep += std::string(i % 200, ' ') + "a:\n";
  (void)ParseBody(deep);  // must not crash
}

TEST(CodecTest, JobMapsToWorkload) {
  auto j = ParseBody(R"(apiVersion: batch/v1
kind: Job
metadata:
  name: train
  namespace: team-a
  labels: {kueue.x-k8s.io/queue-name: default, kueue.x-k8s.io/priority-class: prod}
spec:
  parallelism: 3
  backoffLimit: 1
  template:
    spec:
      terminationGracePeriodSeconds: 5
      containers:
        - name: c
          image: ignored
          command: [python]
          args: [train.py]
          env: [{name: A, value: b}]
          resources: {limits: {nvidia.com/gpu: 2}, requests: {cpu: "1"}}
)");
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  auto spec = WorkloadFromObject(*j);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->queue, "default");
  EXPECT_EQ(*spec->priority_class, "prod");
  EXPECT_EQ(spec->pod_sets[0].count, 3);
  EXPECT_EQ(spec->pod_sets[0].requests.at("nvidia.com/gpu"), 2000);
  EXPECT_EQ(spec->pod_sets[0].command, (std::vector<std::string>{"python", "train.py"}));
  EXPECT_EQ(spec->backoff_limit, 1);
  (*j)["metadata"]["labels"].erase("kueue.x-k8s.io/queue-name");
  EXPECT_FALSE(WorkloadFromObject(*j).ok());
}

// One reader per kind: the HTTP API reads a Job with src/manifest's reader,
// so the API, `artel apply -f`, scenarios and the Kubernetes controller agree
// (they disagreed before: the API ignored job-min-parallelism and unknown
// fields, the manifest reader dropped terminationGracePeriodSeconds).
TEST(CodecTest, JobIsReadByTheManifestReader) {
  auto j = ParseBody(R"(apiVersion: batch/v1
kind: Job
metadata:
  name: train
  namespace: team-a
  labels: {kueue.x-k8s.io/queue-name: default}
  annotations: {kueue.x-k8s.io/job-min-parallelism: "2"}
spec:
  parallelism: 4
  template:
    metadata: {creationTimestamp: null}
    spec:
      dnsPolicy: ClusterFirst
      terminationGracePeriodSeconds: 7
      containers:
        - name: c
          command: ["true"]
          terminationMessagePath: /dev/termination-log
          resources: {requests: {cpu: "1"}}
)");
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  auto spec = WorkloadFromObject(*j);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->pod_sets[0].count, 4);
  EXPECT_EQ(spec->pod_sets[0].min_count.value_or(-1), 2);
  EXPECT_EQ(spec->termination_grace.value_or(-1), 7000);
  std::vector<core::WorkloadSpec> from_manifest;
  ASSERT_TRUE(manifest::ParseWorkloads((*j).dump(), "job.json", &from_manifest).ok());
  EXPECT_EQ(WorkloadSpecToJson(from_manifest.at(0)), WorkloadSpecToJson(*spec));

  // A misspelled field is an error naming it, without a position in the
  // re-written text.
  (*j)["spec"]["template"]["spec"]["containers"][0]["resourcez"] = Json::object();
  auto bad = WorkloadFromObject(*j);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().field(), "spec.template.spec.containers[0].resourcez");
  EXPECT_FALSE(bad.status().pos().known());
  EXPECT_EQ(ErrorJson(bad.status()).count("position"), 0u);

  // generateName still works.
  (*j)["spec"]["template"]["spec"]["containers"][0].erase("resourcez");
  (*j)["metadata"].erase("name");
  (*j)["metadata"]["generateName"] = "train-";
  std::string gen;
  auto generated = WorkloadFromObject(*j, &gen);
  ASSERT_TRUE(generated.ok()) << generated.status().ToString();
  EXPECT_EQ(gen, "train-");
  EXPECT_TRUE(generated->name.empty());
}

TEST(CodecTest, KueueWorkloadIsAccepted) {
  auto j = ParseBody(R"(apiVersion: kueue.x-k8s.io/v1beta2
kind: Workload
metadata: {name: w, namespace: team-a}
spec:
  queueName: default
  priorityClassRef: {group: kueue.x-k8s.io, kind: WorkloadPriorityClass, name: prod}
  podSets:
    - name: main
      count: 2
      template: {spec: {containers: [{name: c, command: ["true"], resources: {requests: {nvidia.com/gpu: "1"}}}]}}
)");
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  auto spec = WorkloadFromObject(*j);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->priority_class.value_or(""), "prod");
  EXPECT_EQ(spec->pod_sets[0].count, 2);
  EXPECT_EQ(spec->pod_sets[0].command, (std::vector<std::string>{"true"}));
  (*j)["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"]["limits"] = {
      {"nvidia.com/gpu", "500m"}};
  (*j)["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"].erase("requests");
  auto frac = WorkloadFromObject(*j);
  ASSERT_FALSE(frac.ok());
  EXPECT_EQ(frac.status().field(),
            "spec.podSets[0].template.spec.containers[0].resources.requests.nvidia.com/gpu");
}

TEST(ManifestFilesTest, SplitsAndNamesDocuments) {
  auto docs = SplitDocuments(
      "kind: ClusterQueue\nmetadata: {name: a}\n---\nkind: LocalQueue\nmetadata: {name: q, namespace: ns}\n");
  ASSERT_TRUE(docs.ok());
  ASSERT_EQ(docs->size(), 2u);
  EXPECT_EQ((*docs)[0].key(), "ClusterQueue//a");
  EXPECT_EQ((*docs)[1].key(), "LocalQueue/ns/q");
  // A document that starts on its `---` line is a document of its own (a
  // line split used to fold it into the one before).
  docs = SplitDocuments(
      "kind: LocalQueue\nmetadata: {name: q, namespace: ns}\n--- {kind: ClusterQueue, metadata: {name: "
      "b}}\n");
  ASSERT_TRUE(docs.ok()) << docs.status().ToString();
  ASSERT_EQ(docs->size(), 2u);
  EXPECT_EQ((*docs)[0].key(), "LocalQueue/ns/q");
  EXPECT_EQ((*docs)[1].key(), "ClusterQueue//b");
  // Untrusted YAML is bounded here too: an alias bomb is an error.
  std::string bomb = "kind: Workload\nmetadata: {name: w}\na0: &a0 [x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i <= 8; ++i) {
    std::string prev = "*a" + std::to_string(i - 1);
    bomb += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [" + prev;
    for (int k = 0; k < 8; ++k) bomb += ", " + prev;
    bomb += "]\n";
  }
  EXPECT_FALSE(SplitDocuments(bomb).ok());
}

// ---- hostile and invalid bodies (issue 10 section 5, audit D3/D9/D13) ----

std::string YamlWorkload(const std::string& pod_set_extra, const std::string& metadata_extra = "") {
  return "apiVersion: artel.dev/v1alpha1\nkind: Workload\nmetadata:\n  name: w\n  namespace: team-a\n" +
         metadata_extra + "spec:\n  queueName: default\n  podSets:\n  - name: main\n" + pod_set_extra;
}

Result<core::WorkloadSpec> Decode(const std::string& body) {
  auto j = ParseBody(body);
  if (!j.ok()) return j.status();
  return WorkloadFromObject(*j);
}

TEST(CodecTest, YamlAliasBombIsRefusedQuicklyWithTheField) {
  std::string ann = "  annotations:\n    a0: &a0 \"lol\"\n";
  for (int l = 1; l <= 9; ++l) {
    ann += "    a" + std::to_string(l) + ": &a" + std::to_string(l) + " [";
    for (int i = 0; i < 9; ++i) ann += (i ? ",*a" : "*a") + std::to_string(l - 1);
    ann += "]\n";
  }
  std::string bomb = YamlWorkload("    count: 1\n", ann);
  EXPECT_LT(bomb.size(), 1000u);
  auto start = std::chrono::steady_clock::now();
  auto j = ParseBody(bomb);
  auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(j.status().field(), ::testing::StartsWith("metadata.annotations.a"));
  EXPECT_THAT(j.status().message(), ::testing::HasSubstr("more than 100000 nodes (YAML aliases"));
  EXPECT_LT(took, std::chrono::seconds(2));
  Json err = ErrorJson(j.status());
  EXPECT_EQ(err["field"], j.status().field());
  EXPECT_THAT(err.value("position", ""), ::testing::StartsWith("request body:"));
  // The CLI converts files with the same function.
  EXPECT_FALSE(YamlToJson(bomb).ok());
}

TEST(CodecTest, InvalidUtf8IsRefusedWithTheField) {
  auto y = Decode(YamlWorkload("    command: [echo, \"\xff\"]\n"));
  ASSERT_FALSE(y.ok());
  EXPECT_EQ(y.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(y.status().field(), "spec.podSets[0].command[1]");
  EXPECT_THAT(y.status().message(), ::testing::HasSubstr("not valid UTF-8"));
  EXPECT_NO_THROW(ErrorJson(y.status()).dump());
  // A label value, and a key.
  auto l = Decode(YamlWorkload("    count: 1\n", "  labels: {team: \"x\xc3\"}\n"));
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.status().field(), "metadata.labels.team");
  // JSON: nlohmann refuses the byte; the error names the field and stays JSON.
  auto js = ParseBody("{\"metadata\":{\"name\":\"w\",\"labels\":{\"a\":\"ok\",\"team\":\"x\xff\"}}}");
  ASSERT_FALSE(js.ok());
  EXPECT_EQ(js.status().field(), "metadata.labels.team");
  EXPECT_NO_THROW(ErrorJson(js.status()).dump());
  auto arr = ParseBody("{\"spec\":{\"podSets\":[{\"command\":[\"echo\",\"\xfe\"]}]}}");
  ASSERT_FALSE(arr.ok());
  EXPECT_EQ(arr.status().field(), "spec.podSets[0].command[1]");
  EXPECT_NO_THROW(ErrorJson(arr.status()).dump());
}

TEST(CodecTest, FractionalGpusWithoutSlicingAreRefusedAtSubmit) {
  for (const char* q : {"\"500m\"", "\"1.5\"", "\"0.0001\"", "1.5", "0.5"}) {
    auto r = Decode(YamlWorkload(std::string("    requests: {nvidia.com/gpu: ") + q + "}\n"));
    ASSERT_FALSE(r.ok()) << q;
    EXPECT_EQ(r.status().field(), "spec.podSets[0].requests.nvidia.com/gpu") << q;
    EXPECT_THAT(r.status().message(), ::testing::HasSubstr("positive whole number")) << q;
    EXPECT_THAT(r.status().message(), ::testing::HasSubstr("slicing")) << q;
  }
  // Whole GPUs, and a fraction through a slicing request, are fine.
  EXPECT_TRUE(Decode(YamlWorkload("    requests: {nvidia.com/gpu: 2}\n")).ok());
  EXPECT_TRUE(Decode(YamlWorkload("    requests: {nvidia.com/gpumem: 4000}\n")).ok());
  // A Job's containers too.
  auto job = Decode(R"(apiVersion: batch/v1
kind: Job
metadata: {name: j, namespace: team-a, labels: {kueue.x-k8s.io/queue-name: default}}
spec:
  template:
    spec:
      containers: [{name: c, command: ["true"], resources: {limits: {nvidia.com/gpu: 500m}}}]
)");
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.status().field(), "spec.template.spec.containers[0].resources.requests.nvidia.com/gpu");
}

TEST(CodecTest, PaddedOrSignedQuantitiesAreRefused) {
  for (const char* q : {"\" 1\"", "\"1 \"", "\"+1\"", "\"\\t2\""}) {
    auto r = Decode(YamlWorkload(std::string("    requests: {cpu: ") + q + "}\n"));
    ASSERT_FALSE(r.ok()) << q;
    EXPECT_EQ(r.status().field(), "spec.podSets[0].requests.cpu") << q;
  }
  EXPECT_TRUE(Decode(YamlWorkload("    requests: {cpu: \"1\"}\n")).ok());
}

TEST(CodecTest, EmptyProgramAndNulBytesAreRefused) {
  auto empty = Decode(YamlWorkload("    command: [\"\"]\n"));
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.status().field(), "spec.podSets[0].command[0]");
  EXPECT_THAT(empty.status().message(), ::testing::HasSubstr("program name must not be empty"));
  // No command at all is a placeholder workload (no pods are started).
  EXPECT_TRUE(Decode(YamlWorkload("    command: []\n")).ok());

  // JSON "\u0000" reaches the strings intact; the kernel would cut it.
  auto nul_arg = Decode(
      R"({"metadata":{"name":"w","namespace":"a"},"spec":{"queueName":"q","podSets":[{"name":"m","command":["echo","a\u0000b"]}]}})");
  ASSERT_FALSE(nul_arg.ok());
  EXPECT_EQ(nul_arg.status().field(), "spec.podSets[0].command[1]");
  EXPECT_THAT(nul_arg.status().message(), ::testing::HasSubstr("NUL"));
  auto nul_env = Decode(
      R"({"metadata":{"name":"w","namespace":"a"},"spec":{"queueName":"q","podSets":[{"name":"m","env":{"A":"x\u0000"}}]}})");
  ASSERT_FALSE(nul_env.ok());
  EXPECT_EQ(nul_env.status().field(), "spec.podSets[0].env.A");
  auto nul_dir = Decode(YamlWorkload("    workingDir: \"/tmp\\0x\"\n"));
  ASSERT_FALSE(nul_dir.ok());
  EXPECT_EQ(nul_dir.status().field(), "spec.podSets[0].workingDir");
}

// Found by fuzzing: a YAML body that starts with ',' (yaml-cpp's endless
// empty documents) and a syntax error quoting a byte that is not UTF-8.
TEST(CodecTest, FuzzFoundBodiesAreErrorsThatEncode) {
  for (std::string body : {std::string(","), std::string(", x: 1\n"),
                           std::string("metadata:\n  name: w\nspec: {queueName: \"d\\\xb0\"}\n")}) {
    auto j = ParseBody(body);
    ASSERT_FALSE(j.ok()) << body;
    EXPECT_EQ(j.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NO_THROW(ErrorJson(j.status()).dump()) << body;
  }
  EXPECT_NO_THROW(ErrorJson(InvalidArgument("bad \xff")).dump());
}

// Found by fuzz_api_body: `kind:` with no value (or not a string) threw
// from nlohmann's value() and answered 500.
TEST(CodecTest, KindOrApiVersionOfTheWrongTypeIsAFieldError) {
  auto null_kind = Decode("apiVersion: artel.dev/v1alpha1\nkind:\n");
  ASSERT_FALSE(null_kind.ok());
  EXPECT_EQ(null_kind.status().code(), StatusCode::kInvalidArgument);
  auto num_kind = Decode(R"({"kind": 5, "metadata": {}})");
  ASSERT_FALSE(num_kind.ok());
  EXPECT_EQ(num_kind.status().field(), "kind");
  auto job = Decode(R"({"kind": "Job", "apiVersion": 1})");
  ASSERT_FALSE(job.ok());
  EXPECT_EQ(job.status().field(), "apiVersion");
}

// The submit-time checks are not applied when the journal is read back: a
// workload an older arteld acknowledged (a fractional GPU, a NUL in an
// argument) is recovered, not dropped.
TEST(CodecTest, SubmitChecksDoNotApplyToTheJournal) {
  core::WorkloadSpec spec;
  spec.name = "old";
  spec.ns = "team-a";
  spec.queue = "default";
  core::PodSetSpec ps;
  ps.name = "main";
  ps.requests["nvidia.com/gpu"] = 500;
  ps.command = {"echo", std::string("a\0b", 3)};
  spec.pod_sets.push_back(ps);
  Json journal = WorkloadSpecToJson(spec);
  auto recovered = WorkloadFromJson(Json::parse(journal.dump()));
  ASSERT_TRUE(recovered.ok()) << recovered.status().ToString();
  EXPECT_EQ(recovered->pod_sets[0].command[1], std::string("a\0b", 3));
  auto submitted = WorkloadFromObject(journal);
  ASSERT_FALSE(submitted.ok());
  EXPECT_EQ(submitted.status().field(), "spec.podSets[0].command[1]");
}

TEST(CodecTest, RequestAnnotationsAreTypedAndBadOnesRefusedAtSubmitOnly) {
  core::WorkloadSpec spec;
  spec.name = "gang";
  spec.ns = "team-a";
  spec.queue = "default";
  spec.annotations = {{"artel.dev/min-member", "3"}, {"artel.dev/score", "spread"}};
  core::PodSetSpec ps;
  ps.name = "main";
  ps.count = 4;
  ps.annotations = {{"kueue.x-k8s.io/podset-required-topology", "rack"}, {"gpu-fraction", "0.5"}};
  spec.pod_sets.push_back(ps);
  auto ok = WorkloadFromObject(WorkloadSpecToJson(spec));
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->gang->min_member, 3);
  EXPECT_TRUE(ok->gang->spread);
  EXPECT_EQ(ok->pod_sets[0].topology->required, "rack");
  EXPECT_EQ(ok->pod_sets[0].gpu_share->fraction, 500);

  spec.pod_sets.mut(0).annotations["kueue.x-k8s.io/podset-slice-size"] = "many";
  Json bad = WorkloadSpecToJson(spec);
  auto refused = WorkloadFromObject(bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().field(), "spec.podSets[0].annotations[kueue.x-k8s.io/podset-slice-size]");
  EXPECT_THAT(refused.status().message(), ::testing::HasSubstr("whole number"));
  // Read back from the journal, the bad value is ignored and the rest kept.
  auto recovered = WorkloadFromJson(bad);
  ASSERT_TRUE(recovered.ok()) << recovered.status().ToString();
  EXPECT_EQ(recovered->pod_sets[0].topology->slice_size, 0);
  EXPECT_EQ(recovered->gang->min_member, 3);

  // A Kueue Workload's pod template annotations are named by their own path.
  auto kueue = WorkloadFromObject(Json::parse(R"({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
    "metadata": {"name": "w", "namespace": "team-a", "annotations": {"artel.dev/network-topology-mode": "loose"}},
    "spec": {"queueName": "default", "podSets": [{"name": "main", "count": 1, "template": {"spec":
      {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}}]}})"));
  ASSERT_FALSE(kueue.ok());
  EXPECT_THAT(kueue.status().ToString(), ::testing::HasSubstr("artel.dev/network-topology-mode"));
  EXPECT_THAT(kueue.status().message(), ::testing::HasSubstr("hard or soft"));
}

}  // namespace
}  // namespace artel::server
