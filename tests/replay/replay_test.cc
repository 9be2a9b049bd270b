// Tests of the trace replay (src/sim/trace.h, replay.h, auto_queues.h,
// isolation.h, report.h): CSV reading with presets, mappings and malformed
// rows; replays whose exact results are computed by hand; the derived
// queues; the isolation verdict on the examples and on a broken config.
#include "sim/replay.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "manifest/manifest.h"
#include "sim/auto_queues.h"
#include "sim/isolation.h"
#include "sim/report.h"
#include "sim/trace.h"

#ifndef ARTEL_SOURCE_DIR
#error "ARTEL_SOURCE_DIR must point at the repository root"
#endif

namespace artel::sim {
namespace {

constexpr core::Time kMin = 60 * 1000;

// One cohort `shared` with a ClusterQueue and a LocalQueue `default` per
// tenant; `reclaim` sets reclaimWithinCohort.
core::Config Cluster(const std::vector<std::pair<std::string, int>>& tenants,
                     const std::string& reclaim = "Any") {
  std::string y = "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: gpu}\n";
  for (const auto& [name, quota] : tenants) {
    y += "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: " + name +
         "}\nspec:\n  cohortName: shared\n  namespaceSelector: {}\n  preemption: {reclaimWithinCohort: " +
         reclaim +
         "}\n  resourceGroups:\n  - coveredResources: [nvidia.com/gpu]\n    flavors:\n    - name: gpu\n"
         "      resources: [{name: nvidia.com/gpu, nominalQuota: " +
         std::to_string(quota) +
         "}]\n---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {name: default, "
         "namespace: " +
         name + "}\nspec: {clusterQueue: " + name + "}\n";
  }
  core::Config config;
  Status s = manifest::ParseInto(y, "test.yaml", &config);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return config;
}

TraceJob Job(const std::string& tenant, core::Time submit, core::Time duration, int gpus) {
  TraceJob j;
  j.tenant = tenant;
  j.submit = submit;
  j.duration = duration;
  j.gpus = static_cast<core::Amount>(gpus) * core::kMilli;
  return j;
}

ReplayOptions Instant() {
  ReplayOptions o;
  o.interval = 0;
  o.grace = 0;
  return o;
}

// ---- traces ----

TEST(TraceTest, PhillyPresetReadsTimestampsAndRebases) {
  TraceFormat f;
  f.preset = TracePreset::kPhilly;
  Result<Trace> t = ParseTrace(
      "timestamp,duration,num_gpus,gpu_time,cluster\n"
      "2017-10-09 07:01:55,66.0,1,66.0,11cb48\n"
      "2017-10-09 06:13:03,2951.5,4,11806.0,6214e9\n"
      "2017-10-09 06:13:03,2951.5,4,11806.0,6214e9\n",
      "p.csv", f);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->jobs.size(), 3u);  // the duplicate row is kept
  EXPECT_EQ(t->jobs[0].tenant, "11cb48");
  EXPECT_EQ(t->jobs[0].submit, (48 * 60 + 52) * 1000);  // unsorted: rebased on the earliest row
  EXPECT_EQ(t->jobs[1].submit, 0);
  EXPECT_EQ(t->jobs[1].duration, 2951500);
  EXPECT_EQ(t->jobs[1].gpus, 4000);
  EXPECT_EQ(t->jobs[2].line, 4);
  EXPECT_EQ(t->skipped, 0);
}

TEST(TraceTest, TimestampsAreUtcCivilDates) {
  EXPECT_EQ(*ParseTraceTime("1970-01-01 00:00:00"), 0);
  EXPECT_EQ(*ParseTraceTime("2000-03-01T00:00:01Z"), (11017LL * 86400 + 1) * 1000);
  EXPECT_EQ(*ParseTraceTime("2017-12-31 23:59:59.250"), (17531LL * 86400 + 86399) * 1000 + 250);
  EXPECT_EQ(*ParseTraceTime("12.5"), 12500);
  EXPECT_FALSE(ParseTraceTime("2017-13-01 00:00:00").ok());
  EXPECT_FALSE(ParseTraceTime("yesterday").ok());
}

TEST(TraceTest, TimestampOffsetsAreConvertedToUtc) {
  const int64_t utc = *ParseTraceTime("2020-06-01T12:00:00Z");
  EXPECT_EQ(*ParseTraceTime("2020-06-01T20:00:00+08:00"), utc);
  EXPECT_EQ(*ParseTraceTime("2020-06-01 20:00:00+0800"), utc);
  EXPECT_EQ(*ParseTraceTime("2020-06-01T07:30:00-04:30"), utc);
  EXPECT_EQ(*ParseTraceTime("2020-06-01T14:00:00.500+02"), utc + 500);
  EXPECT_EQ(*ParseTraceTime("2020-06-01"), utc - 12LL * 3600 * 1000);
  EXPECT_FALSE(ParseTraceTime("2020-06-01T12:00:00+25:00").ok());
  EXPECT_FALSE(ParseTraceTime("2020-06-01T12:00:00+8").ok());
  EXPECT_FALSE(ParseTraceTime("2020-06-01T12:00:00 UTC").ok());
}

// Traces such as Helios or Alibaba PAI give start and end times instead of a
// duration: the run time is end - start (or end - submit without start).
TEST(TraceTest, RunTimeFromStartAndEnd) {
  TraceFormat f;
  f.columns = {{"submit", "submit_time"}, {"start", "start_time"}, {"end", "end_time"}, {"gpus", "gpu_num"}};
  Result<Trace> t = ParseTrace(
      "submit_time,start_time,end_time,gpu_num\n"
      "100,130,730,1\n"
      "200,260,250,1\n"  // ends before it starts
      "2020-01-01T00:00:00Z,2020-01-01T00:10:00Z,2020-01-01T01:10:00Z,2\n",
      "h.csv", f);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->jobs.size(), 2u);
  EXPECT_EQ(t->jobs[0].duration, 600000);
  EXPECT_EQ(t->jobs[1].duration, 3600000);
  EXPECT_EQ(t->skipped, 1);
  ASSERT_FALSE(t->problems.empty());
  EXPECT_NE(t->problems[0].find("h.csv:3: end: before start"), std::string::npos) << t->problems[0];
  // Without start: from the submission.
  f.columns.erase("start");
  t = ParseTrace("submit_time,end_time,gpu_num\n100,700,1\n", "h.csv", f);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->jobs[0].duration, 600000);
  // duration and end together, or start without end, are format errors.
  f.columns["duration"] = "d";
  EXPECT_FALSE(ParseTrace("submit_time,end_time,gpu_num,d\n1,2,1,1\n", "h.csv", f).ok());
  f.columns.erase("duration");
  f.columns.erase("end");
  f.columns["start"] = "start_time";
  f.columns["duration"] = "d";
  EXPECT_FALSE(ParseTrace("submit_time,start_time,gpu_num,d\n1,2,1,1\n", "h.csv", f).ok());
}

// Traces with fractional GPUs (GPU sharing), or a percentage column read
// with a scale (Alibaba PAI's plan_gpu: 50 = half a GPU).
TEST(TraceTest, FractionalAndScaledGpus) {
  TraceFormat f;
  f.columns = {{"submit", "t"}, {"duration", "d"}, {"gpus", "plan_gpu"}, {"tenant", "user"}};
  Result<Trace> t = ParseTrace("t,d,plan_gpu,user\n0,60,0.5,a\n1,60,2,b\n2,60,0.0001,c\n", "p.csv", f);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->jobs.size(), 2u);
  EXPECT_EQ(t->jobs[0].gpus, 500);
  EXPECT_EQ(t->jobs[1].gpus, 2000);
  ASSERT_EQ(t->problems.size(), 1u);
  EXPECT_EQ(t->problems[0], "p.csv:4: gpus: less than a thousandth of a GPU");
  f.gpu_scale = 0.01;
  t = ParseTrace("t,d,plan_gpu,user\n0,60,50,a\n1,60,25,a\n2,60,200,b\n", "p.csv", f);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->jobs[0].gpus, 500);
  EXPECT_EQ(t->jobs[1].gpus, 250);
  EXPECT_EQ(t->jobs[2].gpus, 2000);
  // Replayed on auto-queues: two quarter/half-GPU jobs of `a` share one GPU.
  auto aq = BuildAutoQueues(t->jobs, 3);
  ASSERT_TRUE(aq.ok()) << aq.status().ToString();
  ReplayOptions o;
  o.interval = 0;
  auto r = Replay(aq->config, aq->tenants, t->jobs, aq->capacity, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  for (const JobOutcome& out : r->outcomes) EXPECT_GE(out.finish, 0);
  EXPECT_NEAR(r->cluster.peak_used, 2750, 1);  // 0.5 + 0.25 + 2 GPUs at once
}

TEST(TraceTest, TabSeparatedTrace) {
  TraceFormat f;
  f.columns = {{"submit", "submit_time"}, {"duration", "runtime"}, {"gpus", "gpu_num"}, {"tenant", "vc"}};
  f.delimiter = '\t';
  Result<Trace> t = ParseTrace(
      "submit_time\truntime\tgpu_num\tvc\n"
      "2020-04-01T00:00:10+08:00\t60\t2\tvc-a\n"
      "2020-03-31T16:00:00Z\t30\t1\tvc-b\n",
      "h.tsv", f);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->jobs.size(), 2u);
  EXPECT_EQ(t->jobs[0].submit, 10000);  // 00:00:10+08:00 is 16:00:10Z, 10 s after the second row
  EXPECT_EQ(t->jobs[1].submit, 0);
  EXPECT_EQ(t->jobs[0].gpus, 2000);
  EXPECT_EQ(t->jobs[0].tenant, "vc-a");
  EXPECT_EQ(t->skipped, 0);
  // The same text read with commas is one malformed column per row.
  f.delimiter = ',';
  Result<Trace> c =
      ParseTrace("submit_time\truntime\tgpu_num\tvc\n2020-04-01T00:00:10Z\t60\t2\tvc-a\n", "h.tsv", f);
  EXPECT_FALSE(c.ok());
}

TEST(TraceTest, ItpPresetAndGenericColumns) {
  TraceFormat itp;
  itp.preset = TracePreset::kItp;
  Result<Trace> t =
      ParseTrace("cluster,job_id,submission_time,duration,num_gpu\nc1,x-1,100,600,8\n", "i.csv", itp);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->jobs[0].id, "x-1");
  EXPECT_EQ(t->jobs[0].gpus, 8000);
  EXPECT_EQ(t->origin, 100000);

  TraceFormat g;
  ASSERT_TRUE(ParseColumnMapping("interval=gap,duration=2,gpus=g,user=who", &g).ok());
  t = ParseTrace("gap,run,g,who\n0,10,1,ann\n5,10,2,bob\n5,1,1,ann\n", "g.csv", g);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->jobs.size(), 3u);
  EXPECT_EQ(t->jobs[2].submit, 10000);
  EXPECT_EQ(t->jobs[1].tenant, "bob");  // no tenant column: the user
  EXPECT_EQ(t->jobs[1].duration, 10000);

  EXPECT_FALSE(ParseColumnMapping("nodes=3", &g).ok());
  TraceFormat none;
  EXPECT_FALSE(ParseTrace("a,b\n1,2\n", "x.csv", none).ok());  // no mapping at all
}

TEST(TraceTest, MalformedRowsAreCountedOrFatalWhenStrict) {
  const std::string text =
      "timestamp,duration,num_gpus,gpu_time,cluster\n"
      "2017-10-09 07:01:55,66.0,1,66.0,a\n"
      "2017-10-09 07:01:55,sixty,1,66.0,a\n"
      "2017-10-09 07:01:55,66.0,1,a\n"
      "2017-10-09 07:01:55,66.0,-2,66.0,a\n"
      "2017-10-09 07:02:00,60,2,120,b\n";
  TraceFormat f;
  f.preset = TracePreset::kPhilly;
  Result<Trace> t = ParseTrace(text, "bad.csv", f);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->jobs.size(), 2u);
  EXPECT_EQ(t->rows, 5);
  EXPECT_EQ(t->skipped, 3);
  ASSERT_EQ(t->problems.size(), 3u);
  EXPECT_EQ(t->problems[0], "bad.csv:3: duration: not a number: \"sixty\"");
  EXPECT_EQ(t->problems[1], "bad.csv:4: expected 5 columns, got 4");
  EXPECT_EQ(t->problems[2], "bad.csv:5: gpus: expected a number of GPUs >= 0, got -2");
  f.strict = true;
  t = ParseTrace(text, "bad.csv", f);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().message(), "bad.csv:3: duration: not a number: \"sixty\"");
}

TEST(TraceTest, SyntheticIsSeededAndParsed) {
  Result<SyntheticTenant> a = ParseSyntheticTenant("name=a,rate=6/h,jobs=50,gpus=1*3|4,duration=exp(30m)");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_DOUBLE_EQ(a->rate_per_hour, 6.0);
  EXPECT_EQ(a->gpus.size(), 2u);
  Result<SyntheticTenant> b =
      ParseSyntheticTenant("name=b,rate=1/m,jobs=5,arrivals=periodic,duration=uniform(1m,2m)");
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  Trace t1 = GenerateSynthetic({*a, *b}, 7), t2 = GenerateSynthetic({*a, *b}, 7),
        t3 = GenerateSynthetic({*a, *b}, 8);
  ASSERT_EQ(t1.jobs.size(), 55u);
  bool same = true, differs = false;
  for (size_t i = 0; i < t1.jobs.size(); ++i) {
    same = same && t1.jobs[i].submit == t2.jobs[i].submit && t1.jobs[i].gpus == t2.jobs[i].gpus;
    differs = differs || t1.jobs[i].submit != t3.jobs[i].submit;
    if (i > 0) {
      EXPECT_LE(t1.jobs[i - 1].submit, t1.jobs[i].submit);
    }
  }
  EXPECT_TRUE(same);
  EXPECT_TRUE(differs);
  // Periodic arrivals are exact: b's jobs at 0, 1m, ..., 4m.
  std::vector<core::Time> b_submits;
  for (const TraceJob& j : t1.jobs) {
    if (j.tenant == "b") {
      b_submits.push_back(j.submit);
      EXPECT_GE(j.duration, kMin);
      EXPECT_LE(j.duration, 2 * kMin);
    }
  }
  EXPECT_EQ(b_submits, (std::vector<core::Time>{0, kMin, 2 * kMin, 3 * kMin, 4 * kMin}));
  EXPECT_FALSE(ParseSyntheticTenant("name=x,jobs=1,color=red").ok());
  EXPECT_FALSE(ParseSyntheticTenant("rate=1/h,jobs=1").ok());
}

// ---- replays with hand-computed results ----

// One tenant, 2 GPUs, a 1-GPU job every 10 minutes running 25 minutes. FIFO
// on two servers with equal runs: job k starts at max(10k, start(k-2) + 25),
// so start(k) = 25 * floor(k/2) + 10 * (k mod 2) and wait(k) = 5 * floor(k/2)
// minutes: 0 0 5 5 10 10 15 15 20 20.
TEST(ReplayTest, SingleTenantFixedArrivalsWaitsByHand) {
  core::Config config = Cluster({{"solo", 2}});
  std::vector<TraceJob> jobs;
  for (int k = 0; k < 10; ++k) jobs.push_back(Job("solo", 10 * k * kMin, 25 * kMin, 1));
  Result<ReplayResult> r = Replay(config, {{"solo", "solo", "default", 2000}}, jobs, 2000, Instant());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  for (int k = 0; k < 10; ++k) {
    EXPECT_EQ(r->outcomes[k].first_admit - jobs[k].submit, 5 * (k / 2) * kMin) << "job " << k;
  }
  const TenantReport& t = r->tenants[0];
  EXPECT_EQ(t.completed, 10);
  EXPECT_DOUBLE_EQ(t.wait.mean, 600.0);  // 10 minutes
  EXPECT_DOUBLE_EQ(t.wait.p50, 600.0);   // nearest rank 5 of 10
  EXPECT_DOUBLE_EQ(t.wait.p95, 1200.0);
  EXPECT_DOUBLE_EQ(t.wait.max, 1200.0);
  EXPECT_DOUBLE_EQ(t.jct.p50, (10 + 25) * 60.0);
  EXPECT_NEAR(t.gpu_hours, 250.0 / 60.0, 1e-9);
  EXPECT_DOUBLE_EQ(t.gpu_hours_borrowed, 0);
  EXPECT_EQ(r->cluster.end, 135 * kMin);  // start(9) = 110m, + 25m
  EXPECT_NEAR(r->cluster.utilization, 250.0 / 270.0, 1e-9);
  EXPECT_EQ(r->cluster.preemptions, 0);
  EXPECT_EQ(r->cluster.peak_used, 2000);
  // Utilization never exceeds its bound, and the series integrate to the GPU-hours.
  EXPECT_LE(r->cluster.utilization, r->cluster.bound + 1e-12);
  double integral = 0;
  for (size_t i = 0; i < r->series.t.size(); ++i) {
    double next = i + 1 < r->series.t.size() ? r->series.t[i + 1] : 135 * 60.0;
    integral += r->series.held[0][i] * (next - r->series.t[i]);
  }
  EXPECT_NEAR(integral / 3600.0, 250.0 / 60.0, 1e-6);
}

// Waits by job size: the jobs of the test above plus a 4-GPU job of another
// tenant's queue that arrives at 0 and waits for its own 4-GPU queue to be
// free of its first job (1 hour), and a half-GPU job that starts at once.
TEST(ReplayTest, WaitsBySizeClass) {
  core::Config config = Cluster({{"solo", 2}, {"big", 4}});
  std::vector<TraceJob> jobs;
  for (int k = 0; k < 10; ++k) jobs.push_back(Job("solo", 10 * k * kMin, 25 * kMin, 1));
  jobs.push_back(Job("big", 0, 60 * kMin, 4));
  jobs.push_back(Job("big", 0, 60 * kMin, 4));
  TraceJob half = Job("big", 200 * kMin, 10 * kMin, 0);
  half.gpus = core::kMilli / 2;
  jobs.push_back(half);
  jobs.push_back(Job("nobody", 0, kMin, 1));  // its tenant has no queue: not counted
  Result<ReplayResult> r = Replay(
      config, {{"solo", "solo", "default", 2000}, {"big", "big", "default", 4000}}, jobs, 6000, Instant());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const std::vector<SizeClassReport>& sizes = r->cluster.sizes;
  ASSERT_EQ(sizes.size(), 3u);
  EXPECT_EQ(sizes[0].label, "under 1");
  EXPECT_EQ(sizes[0].jobs, 1);
  EXPECT_DOUBLE_EQ(sizes[0].wait.max, 0);
  EXPECT_EQ(sizes[1].label, "1");
  EXPECT_EQ(sizes[1].min_gpus, core::kMilli);
  EXPECT_EQ(sizes[1].jobs, 10);
  EXPECT_EQ(sizes[1].admitted, 10);
  EXPECT_DOUBLE_EQ(sizes[1].wait.p50, 600.0);  // as in SingleTenantFixedArrivalsWaitsByHand
  EXPECT_DOUBLE_EQ(sizes[1].wait.p95, 1200.0);
  EXPECT_EQ(sizes[2].label, "over 1, under 8");
  EXPECT_EQ(sizes[2].max_gpus, 8 * core::kMilli - 1);
  EXPECT_EQ(sizes[2].jobs, 2);
  EXPECT_DOUBLE_EQ(sizes[2].wait.p50, 0);
  EXPECT_DOUBLE_EQ(sizes[2].wait.max, 3600.0);
  // In the report: JSON, HTML and sizes.csv.
  SimMeta meta;
  std::vector<SimRun> runs = {{"one", "", *r}};
  nlohmann::json j = nlohmann::json::parse(ReportJson(meta, runs));
  const nlohmann::json& w = j["runs"][0]["cluster"]["waitBySize"];
  ASSERT_EQ(w.size(), 3u);
  EXPECT_EQ(w[2]["label"], "over 1, under 8");
  EXPECT_EQ(w[2]["waitSeconds"]["max"], 3600.0);
  EXPECT_TRUE(w[2]["maxGpus"].is_number());
  EXPECT_NE(ReportHtml(meta, runs).find("<th>job size (GPUs)</th>"), std::string::npos);
  // Without time limits the report says so; with them it names each.
  EXPECT_TRUE(j["meta"]["timeLimits"]["reserveAfterSeconds"].is_null());
  EXPECT_NE(ReportHtml(meta, runs).find("Time limits: off."), std::string::npos);
  meta.estimate_factor = 1.5;
  meta.reserve_after = 30 * kMin;
  meta.backfill_window = 4 * 60 * kMin;
  meta.reclaim_min_runtime = 10 * kMin;
  meta.preemption_delay = 5 * kMin;
  nlohmann::json limits = nlohmann::json::parse(ReportJson(meta, runs))["meta"]["timeLimits"];
  EXPECT_EQ(limits["estimateFactor"], 1.5);
  EXPECT_EQ(limits["reserveAfterSeconds"], 1800.0);
  EXPECT_EQ(limits["backfillWindowSeconds"], 14400.0);
  EXPECT_TRUE(limits["minRuntimeSeconds"].is_null());
  EXPECT_EQ(limits["reclaimMinRuntimeSeconds"], 600.0);
  EXPECT_EQ(limits["preemptionDelaySeconds"], 300.0);
  EXPECT_NE(ReportHtml(meta, runs)
                .find("Time limits: every job's maximum runtime (its runtime estimate) is 1.5 × "
                      "its duration; reservations after 30m (backfill window 4h); minimum runtime "
                      "before reclaim 10m; preemption delay 5m."),
            std::string::npos);
}

// Time limits in the replay (docs/semantics.md §11): the engine's own
// instants wake the simulator. A 1-hour job in a queue whose default maximum
// runtime is 20 minutes is stopped then (and ends there); the job queued
// behind it starts at 20m, not 60m.
TEST(ReplayTest, MaximumRuntimeStopsJobsAtTheEnginesInstant) {
  core::Config config = Cluster({{"solo", 2}});
  config.cluster_queues[0].default_max_runtime = 20 * kMin;
  std::vector<TraceJob> jobs = {Job("solo", 0, 60 * kMin, 2), Job("solo", kMin, 10 * kMin, 2)};
  Result<ReplayResult> r = Replay(config, {{"solo", "solo", "default", 2000}}, jobs, 2000, Instant());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->outcomes[0].finish, 20 * kMin);
  EXPECT_EQ(r->outcomes[1].first_admit, 20 * kMin);
  EXPECT_EQ(r->outcomes[1].finish, 30 * kMin);
  EXPECT_EQ(r->tenants[0].completed, 2);
  EXPECT_EQ(r->cluster.preemptions, 0);
  EXPECT_EQ(r->cluster.youngest_preempted_run, -1);  // a stop for the maximum runtime is no preemption
}

// A borrows the idle half of a 4-GPU cluster for an hour; B arrives at 30m and
// reclaims its 2 GPUs. Grace 0: B waits 0; A loses 2 runs of 30m (1 GPU-hour),
// borrowed 2 GPUs for 30m (1 GPU-hour), reruns the evicted jobs from 60m to
// 120m: 2 * 1h + 2 * 0.5h + 2 * 1h = 5 GPU-hours held.
TEST(ReplayTest, ReclaimByHand) {
  core::Config config = Cluster({{"a", 2}, {"b", 2}});
  std::vector<TraceJob> jobs;
  for (int k = 0; k < 4; ++k) jobs.push_back(Job("a", 0, 60 * kMin, 1));
  for (int k = 0; k < 2; ++k) jobs.push_back(Job("b", 30 * kMin, 30 * kMin, 1));
  std::vector<TenantBinding> bindings = {{"a", "a", "default", 2000}, {"b", "b", "default", 2000}};
  Result<ReplayResult> r = Replay(config, bindings, jobs, 4000, Instant());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const TenantReport& a = r->tenants[0];
  const TenantReport& b = r->tenants[1];
  EXPECT_EQ(a.preemptions, 2);
  EXPECT_NEAR(a.gpu_hours_lost, 1.0, 1e-9);
  EXPECT_NEAR(a.gpu_hours_borrowed, 1.0, 1e-9);
  EXPECT_NEAR(a.gpu_hours, 5.0, 1e-9);
  EXPECT_DOUBLE_EQ(a.guarantee_satisfaction, 1.0);
  EXPECT_DOUBLE_EQ(b.wait.max, 0);
  EXPECT_DOUBLE_EQ(b.guarantee_satisfaction, 1.0);
  EXPECT_EQ(b.reclaims, 0);  // reclaimed within the batch that brought the jobs
  EXPECT_EQ(b.reclaim_latency_max, 0);
  EXPECT_EQ(r->cluster.end, 120 * kMin);
  ASSERT_EQ(r->evictions.size(), 2u);
  EXPECT_EQ(r->evictions[0].reason, "InCohortReclamation");
  EXPECT_EQ(r->evictions[0].preemptor_tenant, 1);
  EXPECT_EQ(r->evictions[0].at, 30 * kMin);
  EXPECT_EQ(r->cluster.youngest_preempted_run, 30 * kMin);  // admitted at 0, evicted at 30m
  // Jain: fair shares equal held shares at all times except none; index 1.
  EXPECT_NEAR(r->cluster.jain, 1.0, 1e-9);

  // With a 30 s grace period and a 10 s cadence, B's gang waits for the next
  // tick (30m is on a tick), then for the evictions: 30 s.
  ReplayOptions slow;
  slow.interval = 10 * 1000;
  slow.grace = 30 * 1000;
  jobs.resize(4);
  jobs.push_back(Job("b", 30 * kMin, 30 * kMin, 2));
  r = Replay(config, bindings, jobs, 4000, slow);
  ASSERT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ(r->tenants[1].wait.max, 30.0);
  EXPECT_EQ(r->tenants[1].reclaim_latency_max, 30 * 1000);
  EXPECT_NEAR(r->tenants[0].gpu_hours_lost, 2 * (30.5 / 60.0), 1e-9);  // runs end when the grace ends
}

// The same reclaim with a 45-minute minimum runtime before reclaim on the
// borrower's queue (docs/semantics.md §11): B waits until A's runs are 45
// minutes old, and the report's youngest preempted run says so.
TEST(ReplayTest, ReclaimWaitsForTheMinimumRuntime) {
  core::Config config = Cluster({{"a", 2}, {"b", 2}});
  config.cluster_queues[0].reclaim_min_runtime = 45 * kMin;
  std::vector<TraceJob> jobs;
  for (int k = 0; k < 4; ++k) jobs.push_back(Job("a", 0, 60 * kMin, 1));
  for (int k = 0; k < 2; ++k) jobs.push_back(Job("b", 30 * kMin, 30 * kMin, 1));
  std::vector<TenantBinding> bindings = {{"a", "a", "default", 2000}, {"b", "b", "default", 2000}};
  Result<ReplayResult> r = Replay(config, bindings, jobs, 4000, Instant());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->cluster.preemptions, 2);
  EXPECT_EQ(r->cluster.youngest_preempted_run, 45 * kMin);
  EXPECT_DOUBLE_EQ(r->tenants[1].wait.max, 15 * 60.0);
}

// The same reclaim with a 20-minute preemption delay in every queue (the
// replay's option, docs/semantics.md §11): B's jobs, queued at 30 minutes,
// may evict only from 50 minutes on, so they wait 20 minutes and A's runs
// are 50 minutes old when they are preempted. Without the delay B preempts
// at once.
TEST(ReplayTest, PreemptionDelayHoldsTheReclaim) {
  std::vector<TraceJob> jobs;
  for (int k = 0; k < 4; ++k) jobs.push_back(Job("a", 0, 60 * kMin, 1));
  for (int k = 0; k < 2; ++k) jobs.push_back(Job("b", 30 * kMin, 30 * kMin, 1));
  std::vector<TenantBinding> bindings = {{"a", "a", "default", 2000}, {"b", "b", "default", 2000}};
  for (bool delayed : {false, true}) {
    SCOPED_TRACE(delayed ? "delay 20m" : "no delay");
    ReplayOptions o = Instant();
    if (delayed) o.preemption_delay = 20 * kMin;
    Result<ReplayResult> r = Replay(Cluster({{"a", 2}, {"b", 2}}), bindings, jobs, 4000, o);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->cluster.preemptions, 2);
    EXPECT_EQ(r->cluster.youngest_preempted_run, delayed ? 50 * kMin : 30 * kMin);
    EXPECT_DOUBLE_EQ(r->tenants[1].wait.max, delayed ? 20 * 60.0 : 0.0);
  }
}

// Reservations in every queue (reserve_after), with and without a backfill
// window: a 2-GPU job reserves the quota a 60-minute job frees; a 90-minute
// 1-GPU job would end after that start, so it waits for the big one, unless
// a 30-minute window leaves a start 59 minutes ahead unreserved and it
// backfills at once (then the big job waits for both).
TEST(ReplayTest, BackfillWindowLetsWorkPassAFarReservation) {
  std::vector<TraceJob> jobs = {Job("a", 0, 60 * kMin, 1), Job("a", kMin, 30 * kMin, 2),
                                Job("a", 2 * kMin, 90 * kMin, 1)};
  auto run = [&](std::optional<core::Time> window) {
    ReplayOptions o = Instant();
    o.estimate_factor = 1;
    o.reserve_after = 0;
    o.backfill_window = window;
    Result<ReplayResult> r = Replay(Cluster({{"a", 2}}), {{"a", "a", "default", 2000}}, jobs, 2000, o);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    std::map<std::string, double> max_wait;
    for (const SizeClassReport& c : r->cluster.sizes) max_wait[c.label] = c.wait.max;
    return max_wait;
  };
  std::map<std::string, double> reserved = run(std::nullopt);
  EXPECT_DOUBLE_EQ(reserved["1"], 88 * 60.0);                // after the big job, 60m..90m
  EXPECT_DOUBLE_EQ(reserved["over 1, under 8"], 59 * 60.0);  // at the reserved start
  std::map<std::string, double> windowed = run(30 * kMin);
  EXPECT_DOUBLE_EQ(windowed["1"], 0.0);
  EXPECT_DOUBLE_EQ(windowed["over 1, under 8"], 91 * 60.0);  // once the backfilled job ends
}

TEST(ReplayTest, WithoutReclaimTheOwnerWaits) {
  core::Config config = Cluster({{"a", 2}, {"b", 2}}, "Never");
  std::vector<TraceJob> jobs;
  for (int k = 0; k < 4; ++k) jobs.push_back(Job("a", 0, 60 * kMin, 1));
  jobs.push_back(Job("b", 30 * kMin, 30 * kMin, 2));
  Result<ReplayResult> r =
      Replay(config, {{"a", "a", "default", 2000}, {"b", "b", "default", 2000}}, jobs, 4000, Instant());
  ASSERT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ(r->tenants[1].wait.max, 30 * 60.0);
  EXPECT_EQ(r->tenants[1].reclaim_latency_max, 30 * kMin);
  // B wanted its guarantee for [30m, 90m) and held it during [60m, 90m).
  EXPECT_DOUBLE_EQ(r->tenants[1].guarantee_satisfaction, 0.5);
}

TEST(ReplayTest, UnboundTenantsAndUntil) {
  core::Config config = Cluster({{"a", 1}});
  std::vector<TraceJob> jobs = {Job("a", 0, kMin, 1), Job("ghost", 0, kMin, 1), Job("a", 0, kMin, 1)};
  ReplayOptions o = Instant();
  o.until = 90 * 1000;
  Result<ReplayResult> r = Replay(config, {{"a", "a", "default", 1000}}, jobs, 1000, o);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->warnings.size(), 1u);
  EXPECT_EQ(r->warnings[0], "tenant ghost has no queue binding: 1 jobs skipped");
  EXPECT_EQ(r->tenants[0].completed, 1);
  EXPECT_EQ(r->tenants[0].admitted, 2);
  EXPECT_EQ(r->cluster.end, 90 * 1000);
}

TEST(ReplayTest, JainAndPercentiles) {
  EXPECT_DOUBLE_EQ(JainIndex({2, 2}, {4, 4}, {1, 1}, 4), 1.0);
  EXPECT_DOUBLE_EQ(JainIndex({4, 0}, {4, 4}, {1, 1}, 4), 0.5);
  // Weighted: fair shares 1 and 3 of 4; holding exactly that is fair.
  EXPECT_DOUBLE_EQ(JainIndex({1, 3}, {4, 4}, {1, 3}, 4), 1.0);
  // A tenant that wants little gets what it wants; the rest goes to the other.
  EXPECT_DOUBLE_EQ(JainIndex({1, 3}, {1, 8}, {1, 1}, 4), 1.0);
  EXPECT_DOUBLE_EQ(JainIndex({0, 0}, {0, 0}, {1, 1}, 4), 1.0);
  std::vector<double> v = {5, 1, 4, 2, 3};
  Percentiles p = ComputePercentiles(&v);
  EXPECT_EQ(p.p50, 3);
  EXPECT_EQ(p.p95, 5);
  EXPECT_EQ(p.mean, 3);
}

// ---- derived queues and bindings ----

TEST(AutoQueuesTest, GuaranteesFollowGpuHoursAndAddUp) {
  std::vector<TraceJob> jobs = {Job("Big VC", 0, 3600 * 1000, 6), Job("small", 0, 3600 * 1000, 3),
                                Job("tiny", 0, 3600 * 1000, 1)};
  Result<AutoQueues> aq = BuildAutoQueues(jobs, 7);
  ASSERT_TRUE(aq.ok()) << aq.status().ToString();
  ASSERT_EQ(aq->tenants.size(), 3u);
  // 7 * (0.6, 0.3, 0.1) = 4.2, 2.1, 0.7 -> floors 4, 2, 0; the spare GPU goes to the largest remainder.
  EXPECT_EQ(aq->tenants[0].ns, "big-vc");
  EXPECT_EQ(aq->tenants[0].guarantee, 4000);
  EXPECT_EQ(aq->tenants[1].guarantee, 2000);
  EXPECT_EQ(aq->tenants[2].guarantee, 1000);
  EXPECT_EQ(aq->config.cluster_queues.size(), 3u);
  EXPECT_EQ(*ConfigCapacity(aq->config, "nvidia.com/gpu"), 7000);
  EXPECT_EQ(*NamespaceGuarantee(aq->config, "big-vc", "nvidia.com/gpu"), 4000);
  // Default size: the trace's demand is 10 GPUs throughout.
  EXPECT_EQ(DefaultGpus(jobs), 10);
  EXPECT_EQ(SanitizeName("__A/b__"), "a-b");
}

TEST(AutoQueuesTest, BindTenantsToAConfig) {
  core::Config config;
  ASSERT_TRUE(manifest::LoadPath(std::string(ARTEL_SOURCE_DIR) + "/examples/two-teams", &config).ok());
  std::vector<TraceJob> jobs = {Job("team-a", 0, 1, 1), Job("vc7", 0, 1, 1)};
  Result<std::vector<TenantBinding>> b = BindTenants(jobs, config, {}, "", "nvidia.com/gpu");
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("tenant vc7 has no LocalQueue"), std::string::npos);
  b = BindTenants(jobs, config, {{"vc7", "team-b"}}, "", "nvidia.com/gpu");
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ((*b)[0].ns, "team-a");
  EXPECT_EQ((*b)[0].guarantee, 2000);
  EXPECT_EQ((*b)[1].ns, "team-b");
  EXPECT_EQ((*b)[1].queue, "default");
  EXPECT_EQ(*ConfigCapacity(config, "nvidia.com/gpu"), 4000);
}

TEST(AutoQueuesTest, DevClusterTeamGuaranteeIsItsCohort) {
  core::Config config;
  ASSERT_TRUE(manifest::LoadPath(std::string(ARTEL_SOURCE_DIR) + "/examples/dev-cluster", &config).ok());
  EXPECT_EQ(*NamespaceGuarantee(config, "team-nlp", "nvidia.com/gpu", "a100-80g"), 16000);
  EXPECT_EQ(*ConfigCapacity(config, "nvidia.com/gpu", "a100-80g"), 48000);
}

// ---- isolation ----

core::Config Load(const std::string& rel) {
  core::Config config;
  Status s = manifest::LoadPath(std::string(ARTEL_SOURCE_DIR) + "/" + rel, &config);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return config;
}

TEST(IsolationTest, TwoTeamsPassesAndBrokenConfigFails) {
  Result<IsolationReport> good = ValidateIsolation(Load("examples/two-teams"), {});
  ASSERT_TRUE(good.ok()) << good.status().ToString();
  EXPECT_TRUE(good->passed) << IsolationTable(*good);
  ASSERT_EQ(good->runs.size(), 3u);
  // A first: the victim reclaims in one round, grace included.
  EXPECT_EQ(good->runs[1].result.tenants[0].reclaim_latency_max, 30 * 1000);

  Result<IsolationReport> bad = ValidateIsolation(Load("tests/data/isolation/no-reclaim"), {});
  ASSERT_TRUE(bad.ok()) << bad.status().ToString();
  EXPECT_FALSE(bad->passed);
  std::string table = IsolationTable(*bad);
  EXPECT_NE(table.find("FAIL: 3 of 14 checks failed"), std::string::npos) << table;
  EXPECT_NE(table.find("team-b (A first): guarantee met within = 1h59m"), std::string::npos) << table;
}

TEST(IsolationTest, DevClusterPasses) {
  Result<IsolationReport> r = ValidateIsolation(Load("examples/dev-cluster"), {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->passed) << IsolationTable(*r);
}

TEST(IsolationTest, OneGpuVictimJobsAreReclaimedOneHeadAtATime) {
  IsolationOptions o;
  o.victim_job_gpus = 1;
  Result<IsolationReport> r = ValidateIsolation(Load("examples/two-teams"), o);
  ASSERT_TRUE(r.ok());
  // Two 1-GPU jobs: the second preempts only after the first is admitted.
  EXPECT_EQ(r->runs[1].result.tenants[0].reclaim_latency_max, 60 * 1000);
  EXPECT_FALSE(r->passed);
}

// ---- reports ----

TEST(ReportTest, JsonAndHtmlCarryEveryChart) {
  core::Config config = Cluster({{"a", 2}, {"b", 2}});
  std::vector<TraceJob> jobs = {Job("a", 0, 60 * kMin, 4), Job("b", 10 * kMin, 5 * kMin, 1)};
  Result<ReplayResult> r =
      Replay(config, {{"a", "a", "default", 2000}, {"b", "b", "default", 2000}}, jobs, 4000, Instant());
  ASSERT_TRUE(r.ok());
  SimMeta meta;
  meta.trace = "x</script>";
  std::vector<SimRun> runs = {{"one", "", *r}, {"two", "", *r}};
  nlohmann::json j = nlohmann::json::parse(ReportJson(meta, runs));
  ASSERT_EQ(j["runs"].size(), 2u);
  EXPECT_EQ(j["runs"][0]["tenants"][1]["tenant"], "b");
  EXPECT_EQ(j["runs"][0]["cluster"]["capacityGpus"], 4.0);
  std::string html = ReportHtml(meta, runs);
  for (size_t run = 0; run < 2; ++run) {
    for (const std::string& id : ChartIds(run))
      EXPECT_NE(html.find("id=\"" + id + "\""), std::string::npos) << id;
  }
  EXPECT_EQ(html.find("x</script>"), std::string::npos);  // escaped in text and in the inlined JSON
  EXPECT_NE(html.find("Comparison"), std::string::npos);
  EXPECT_EQ(kChartsBundled, html.find("uPlot") != std::string::npos);
}

}  // namespace
}  // namespace artel::sim
