// Tests of what `artel sim` reads and writes around the replay: the CSV trace
// reader (dialect, header mapping, values, time units), jobs that can never
// fit, the CSV reports and the derived queues' YAML. Each test pins a
// behaviour that once went wrong on a public trace format.
#include "sim/trace.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "manifest/manifest.h"
#include "sim/auto_queues.h"
#include "sim/replay.h"
#include "sim/report.h"

#ifndef ARTEL_SOURCE_DIR
#error "ARTEL_SOURCE_DIR must point at the repository root"
#endif

namespace artel::sim {
namespace {

constexpr core::Time kHour = 3600 * 1000;

TraceFormat Generic() {
  TraceFormat f;
  f.preset = TracePreset::kGeneric;
  f.columns = {{"submit", "submit"}, {"duration", "duration"}, {"gpus", "gpus"}, {"tenant", "tenant"}};
  return f;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buf;
  buf << in.rdbuf();
  return buf.str();
}

// A fresh directory under the test's temporary directory.
std::string TempDir(const std::string& name) {
  std::string dir = (std::filesystem::temp_directory_path() / ("artel-trace-test-" + name)).string();
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// ---- header mapping ----

// A --columns number past the header fails once, naming the mapping and the
// header's width, instead of every row failing with "expected 4 columns".
TEST(TraceReaderTest, ColumnNumberBeyondTheHeaderIsAMappingError) {
  TraceFormat f = Generic();
  f.columns["duration"] = "7";
  Result<Trace> t = ParseTrace("submit,duration,gpus,tenant\n0,60,1,a\n", "x.csv", f);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().message(), "x.csv:1: --columns duration=7: the header has only 4 columns");
  f.columns["duration"] = "0";
  t = ParseTrace("submit,duration,gpus,tenant\n0,60,1,a\n", "x.csv", f);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().message(), "--columns duration=0: column numbers start at 1");
  // Within the header a number works.
  f.columns["duration"] = "2";
  t = ParseTrace("submit,duration,gpus,tenant\n0,60,1,a\n", "x.csv", f);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->jobs[0].duration, 60000);
}

TEST(TraceReaderTest, MappingADuplicatedHeaderNameIsAnError) {
  TraceFormat f = Generic();
  f.columns["duration"] = "time";
  const std::string text = "submit,time,gpus,tenant,time\n0,3600,1,a,60\n";
  Result<Trace> t = ParseTrace(text, "d.csv", f);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(
      t.status().message(),
      "d.csv:1: duration: column \"time\" appears twice in the header (columns 2 and 5); map it by number");
  f.columns["duration"] = "5";
  t = ParseTrace(text, "d.csv", f);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->jobs[0].duration, 60000);
  // A duplicate nobody maps is harmless.
  f.columns["duration"] = "duration";
  t = ParseTrace("submit,duration,gpus,tenant,x,x\n0,60,1,a,1,2\n", "d.csv", f);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  // Three of a kind.
  f.columns["tenant"] = "x";
  t = ParseTrace("submit,duration,gpus,x,x,x\n0,60,1,a,b,c\n", "d.csv", f);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("appears 3 times in the header (columns 4, 5 and 6)"),
            std::string::npos)
      << t.status().message();
}

TEST(TraceReaderTest, ByteOrderMarkIsIgnored) {
  Result<Trace> t =
      ParseTrace("\xEF\xBB\xBFsubmit,duration,gpus,tenant\r\n0,60,1,a\r\n", "bom.csv", Generic());
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->jobs.size(), 1u);
  EXPECT_EQ(t->jobs[0].tenant, "a");
  // Without a header the BOM would have spoiled the first row's first number.
  TraceFormat f;
  f.header = false;
  ASSERT_TRUE(ParseColumnMapping("submit=1,duration=2,gpus=3,tenant=4", &f).ok());
  t = ParseTrace(
      "\xEF\xBB\xBF"
      "5,60,1,a\n7,60,1,b\n",
      "bom.csv", f);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->skipped, 0);
  ASSERT_EQ(t->jobs.size(), 2u);
  EXPECT_EQ(t->origin, 5000);
  // The philly preset is still detected behind a BOM.
  TraceFormat autodetect;
  autodetect.preset = TracePreset::kAuto;
  t = ParseTrace("\xEF\xBB\xBFtimestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:01:55,66,1,66,c\n",
                 "p.csv", autodetect);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->jobs[0].tenant, "c");
}

// ---- values ----

TEST(TraceReaderTest, EmptyGpusIsACpuOnlyJob) {
  Result<Trace> t =
      ParseTrace("submit,duration,gpus,tenant\n0,60,,a\n1,60, ,a\n2,60,2,a\n", "c.csv", Generic());
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->skipped, 0);
  ASSERT_EQ(t->jobs.size(), 3u);
  EXPECT_EQ(t->jobs[0].gpus, 0);
  EXPECT_EQ(t->jobs[1].gpus, 0);
  EXPECT_EQ(t->jobs[2].gpus, 2000);
}

// Alibaba PAI's task table: GPUs = plan_gpu / 100 x inst_num.
TEST(TraceReaderTest, InstancesMultiplyTheGpus) {
  TraceFormat f;
  f.header = false;
  f.gpu_scale = 0.01;
  ASSERT_TRUE(ParseColumnMapping("submit=5,end=6,gpus=9,instances=3,tenant=1", &f).ok());
  Result<Trace> t = ParseTrace(
      "j1,tensorflow,1.0,Terminated,5426305.0,5426905.0,600.0,29.3,50.0,MISC\n"
      "j2,worker,4.0,Terminated,5426400.0,5430000.0,600.0,29.3,100.0,V100\n"
      "j2,ps,1.0,Terminated,5426400.0,5430000.0,800.0,58.6,,\n"
      "j3,worker,,Terminated,5427000.0,5427300.0,1200.0,50.0,800.0,V100M32\n"
      "j4,worker,1.5,Terminated,5427000.0,5427300.0,1200.0,50.0,100.0,V100\n",
      "pai_task_table.csv", f);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->jobs.size(), 4u);
  EXPECT_EQ(t->jobs[0].gpus, 500);   // 50% x 1
  EXPECT_EQ(t->jobs[1].gpus, 4000);  // 100% x 4
  EXPECT_EQ(t->jobs[2].gpus, 0);     // the parameter server: no GPU
  EXPECT_EQ(t->jobs[3].gpus, 8000);  // empty instances = 1
  EXPECT_EQ(t->jobs[1].duration, 3600 * 1000);
  ASSERT_EQ(t->problems.size(), 1u);
  EXPECT_EQ(t->problems[0], "pai_task_table.csv:5: instances: expected a whole number >= 1, got 1.5");
}

TEST(TraceReaderTest, ValueErrorsSayWhatIsWrong) {
  Result<Trace> t =
      ParseTrace("submit,duration,gpus,tenant\n0,-60,1,a\n0,60,1e12,a\n0,60,2000000,a\n", "v.csv", Generic());
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->problems.size(), 3u);
  EXPECT_EQ(t->problems[0], "v.csv:2: duration: negative: -60");
  EXPECT_EQ(t->problems[1], "v.csv:3: gpus: too large: 1000000000000 GPUs (at most 1000000)");
  EXPECT_EQ(t->problems[2], "v.csv:4: gpus: too large: 2000000 GPUs (at most 1000000)");
  TraceFormat f;
  ASSERT_TRUE(ParseColumnMapping("interval=gap,duration=duration,gpus=gpus", &f).ok());
  t = ParseTrace("gap,duration,gpus\n0,60,1\n-300,60,1\n", "i.csv", f);
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t->problems.size(), 1u);
  EXPECT_EQ(t->problems[0], "i.csv:3: interval: negative: -300");
}

TEST(TraceReaderTest, InvalidCalendarDatesAreRejected) {
  EXPECT_FALSE(ParseTraceTime("2020-02-30 00:00:00").ok());
  EXPECT_FALSE(ParseTraceTime("2021-02-29").ok());
  EXPECT_FALSE(ParseTraceTime("2020-04-31T00:00:00Z").ok());
  EXPECT_FALSE(ParseTraceTime("2020-13-01 00:00:00").ok());
  EXPECT_FALSE(ParseTraceTime("2020-00-10 00:00:00").ok());
  EXPECT_FALSE(ParseTraceTime("2020-04-01 25:00:00").ok());
  EXPECT_FALSE(ParseTraceTime("2020-04-01 24:00:00").ok());
  EXPECT_FALSE(ParseTraceTime("2020-04-01 23:60:00").ok());
  // Leap days exist in leap years, and second 60 is a leap second.
  EXPECT_EQ(*ParseTraceTime("2020-02-29"), *ParseTraceTime("2020-02-28") + 24 * kHour);
  EXPECT_EQ(*ParseTraceTime("2000-02-29"), *ParseTraceTime("2000-03-01") - 24 * kHour);
  EXPECT_FALSE(ParseTraceTime("1900-02-29").ok());
  EXPECT_TRUE(ParseTraceTime("2016-12-31 23:59:60").ok());
  // In a trace: a malformed row.
  Result<Trace> t = ParseTrace("submit,duration,gpus,tenant\n2020-02-30 00:00:00,60,1,a\n2020-03-01,60,1,a\n",
                               "d.csv", Generic());
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->jobs.size(), 1u);
  ASSERT_EQ(t->problems.size(), 1u);
  EXPECT_EQ(t->problems[0].rfind("d.csv:2: submit: invalid timestamp \"2020-02-30 00:00:00\"", 0), 0u)
      << t->problems[0];
}

// ---- time units ----

TEST(TraceReaderTest, TimeUnitScalesNumbersNotTimestamps) {
  EXPECT_EQ(*ParseTimeUnit("s"), 1000.0);
  EXPECT_EQ(*ParseTimeUnit("ms"), 1.0);
  EXPECT_EQ(*ParseTimeUnit("us"), 0.001);
  EXPECT_FALSE(ParseTimeUnit("h").ok());

  TraceFormat f;
  ASSERT_TRUE(ParseColumnMapping("submit=submit_ms,end=end_ms,gpus=gpus,tenant=tenant", &f).ok());
  const std::string text =
      "job,submit_ms,end_ms,gpus,tenant\n"
      "j1,1585699200000,1585702800000,1,a\n"
      "j2,1585699800000,1585701600000,2,b\n";
  f.time_unit_ms = 1;
  Result<Trace> t = ParseTrace(text, "e.csv", f);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->jobs.size(), 2u);
  EXPECT_EQ(t->origin, 1585699200000);
  EXPECT_EQ(t->jobs[0].duration, kHour);
  EXPECT_EQ(t->jobs[1].submit, 600 * 1000);
  EXPECT_TRUE(t->notes.empty());
  // Read as seconds the same numbers are 50,000 years: a hint, not silence.
  f.time_unit_ms = 1000;
  t = ParseTrace(text, "e.csv", f);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->notes.size(), 1u);
  EXPECT_EQ(
      t->notes[0],
      "e.csv:2: read as seconds, the submit time 1585699200000 is past the year 5000; if the trace's times "
      "are milliseconds, give --time-unit ms");
  // Microseconds as seconds are out of range, and the error says what to do.
  t = ParseTrace("job,submit_ms,end_ms,gpus,tenant\nj1,1585699200000000,1585702800000000,1,a\n", "e.csv", f);
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t->problems.size(), 1u);
  EXPECT_NE(t->problems[0].find("give --time-unit ms or us"), std::string::npos) << t->problems[0];
  f.time_unit_ms = 0.001;
  t = ParseTrace("job,submit_ms,end_ms,gpus,tenant\nj1,1585699200000000,1585702800000000,1,a\n", "e.csv", f);
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t->jobs.size(), 1u);
  EXPECT_EQ(t->jobs[0].duration, kHour);

  // Durations and intervals follow the unit; timestamps do not.
  TraceFormat g;
  ASSERT_TRUE(ParseColumnMapping("submit=t,duration=d,gpus=g", &g).ok());
  g.time_unit_ms = 1;
  t = ParseTrace("t,d,g\n2020-01-01T00:00:00Z,1500,1\n2020-01-01T00:00:01Z,60000,1\n", "ts.csv", g);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->jobs[0].duration, 1500);
  EXPECT_EQ(t->jobs[1].submit, 1000);
  EXPECT_EQ(t->jobs[1].duration, 60000);
  TraceFormat iv;
  ASSERT_TRUE(ParseColumnMapping("interval=gap,duration=d,gpus=g", &iv).ok());
  iv.time_unit_ms = 1;
  t = ParseTrace("gap,d,g\n0,10,1\n250,10,1\n", "iv.csv", iv);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->jobs[1].submit, 250);
}

// ---- CSV dialect ----

TEST(TraceReaderTest, QuotedFieldsMaySpanLines) {
  Result<Trace> t = ParseTrace(
      "job_id,jobname,submit,duration,gpus,tenant\n"
      "1,\"train, resnet50\",0,3600,1,\"team, a\"\n"
      "2,\"say \"\"hi\"\"\",0,1800,2,b\n"
      "3,\"multi\nline\r\nname\",600,600,1,b\n"
      "4,plain,700,60,1,b\n",
      "q.csv", Generic());
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->skipped, 0) << (t->problems.empty() ? "" : t->problems[0]);
  ASSERT_EQ(t->jobs.size(), 4u);
  EXPECT_EQ(t->jobs[0].tenant, "team, a");
  EXPECT_EQ(t->jobs[2].line, 4);
  EXPECT_EQ(t->jobs[2].duration, 600000);
  EXPECT_EQ(t->jobs[3].line, 7);  // line numbers count the lines inside quotes
}

TEST(TraceReaderTest, AnUnterminatedQuoteCostsOneRow) {
  Result<Trace> t =
      ParseTrace("submit,duration,gpus,tenant\n0,60,1,\"a\n1,60,1,b\n2,60,1,c\n", "u.csv", Generic());
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_EQ(t->problems.size(), 1u);
  EXPECT_EQ(t->problems[0], "u.csv:2: unterminated quote");
  ASSERT_EQ(t->jobs.size(), 2u);
  EXPECT_EQ(t->jobs[0].tenant, "b");
  EXPECT_EQ(t->jobs[0].line, 3);
}

TEST(TraceReaderTest, SpacesBeforeAnOpeningQuote) {
  Result<Trace> t = ParseTrace("submit,duration,gpus,tenant\n0,3600,1, \"team a\"\n \"10\" ,60, 2 ,\"b\"  \n",
                               "s.csv", Generic());
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->skipped, 0) << (t->problems.empty() ? "" : t->problems[0]);
  ASSERT_EQ(t->jobs.size(), 2u);
  EXPECT_EQ(t->jobs[0].tenant, "team a");
  EXPECT_EQ(t->jobs[1].tenant, "b");
  EXPECT_EQ(t->jobs[1].submit, 10000);
  // Text after a closing quote is still malformed.
  t = ParseTrace("submit,duration,gpus,tenant\n0,60,1,\"a\"x\n", "s.csv", Generic());
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t->problems.size(), 1u);
  EXPECT_EQ(t->problems[0], "s.csv:2: text after a closing quote");
}

TEST(TraceReaderTest, CarriageReturnOnlyLineEndings) {
  Result<Trace> t = ParseTrace("submit,duration,gpus,tenant\r0,3600,1,a\r0,60,2,b\r", "cr.csv", Generic());
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(t->skipped, 0) << (t->problems.empty() ? "" : t->problems[0]);
  ASSERT_EQ(t->jobs.size(), 2u);
  EXPECT_EQ(t->jobs[1].tenant, "b");
  EXPECT_EQ(t->jobs[1].line, 3);
}

// ---- whole-file errors ----

TEST(TraceReaderTest, UnrecognisedHeaderNamesTheFileAndItsColumns) {
  TraceFormat autodetect;
  autodetect.preset = TracePreset::kAuto;  // --preset auto, the CLI's default
  Result<Trace> t = ParseTrace("submit,duration,gpus,tenant\n0,60,1,a\n", "jobs.csv", autodetect);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().message(),
            "jobs.csv: no submit (or interval) column: the header matches no preset (philly, itp); its "
            "columns are: "
            "submit, duration, gpus, tenant. Map them with --columns, e.g. --columns "
            "submit=COLUMN,duration=COLUMN,gpus=COLUMN,tenant=COLUMN");
  TraceFormat generic;
  generic.preset = TracePreset::kGeneric;
  generic.columns = {{"submit", "submit"}, {"duration", "duration"}};
  t = ParseTrace("submit,duration,n\n0,60,1\n", "jobs.csv", generic);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().message(),
            "jobs.csv: trace format: no gpus column; use --columns gpus=COLUMN (header columns: submit, "
            "duration, n)");
}

TEST(TraceReaderTest, JsonAndGzipAreNamed) {
  Result<Trace> t = ParseTrace("  [{\"submit\": 0}]\n", "t.json", Generic());
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().message(), "t.json: looks like JSON; artel sim reads CSV");
  t = ParseTrace("{\"jobs\": []}", "t.json", Generic());
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().message(), "t.json: looks like JSON; artel sim reads CSV");
  t = ParseTrace(std::string("\x1f\x8b\x08\x00\x00\x00", 6), "t.csv.gz", Generic());
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().message().rfind("t.csv.gz: looks like gzip; artel sim reads CSV", 0), 0u)
      << t.status().message();
}

TEST(TraceReaderTest, OneFieldHeaderWithTabsSuggestsTheDelimiter) {
  Result<Trace> t = ParseTrace("submit\tduration\tgpus\ttenant\n0\t60\t1\ta\n", "t.tsv", Generic());
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("(the header is one field with tabs in it: use --delimiter tab)"),
            std::string::npos)
      << t.status().message();
  TraceFormat autodetect;
  autodetect.preset = TracePreset::kAuto;
  t = ParseTrace("submit\tduration\tgpus\ttenant\n0\t60\t1\ta\n", "t.tsv", autodetect);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("use --delimiter tab"), std::string::npos) << t.status().message();
  t = ParseTrace("submit;duration;gpus;tenant\n0;60;1;a\n", "s.csv", Generic());
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("use --delimiter ';'"), std::string::npos) << t.status().message();
}

TEST(TraceReaderTest, ADirectoryIsNotATrace) {
  Result<Trace> t = LoadTrace(std::string(ARTEL_SOURCE_DIR) + "/tests/data/traces", Generic());
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().message(),
            std::string(ARTEL_SOURCE_DIR) + "/tests/data/traces: is a directory; --trace takes a CSV file");
}

// --limit N keeps the N earliest submissions, not the first N rows.
TEST(TraceReaderTest, KeepEarliestKeepsTheEarliestSubmissionsInFileOrder) {
  Result<Trace> t = ParseTrace(
      "submit,duration,gpus,tenant\n"
      "2020-04-01 05:00:00,60,1,e\n"
      "2020-04-01 00:00:00,60,1,a\n"
      "2020-04-01 03:00:00,60,1,d\n"
      "2020-04-01 01:00:00,60,1,b\n"
      "2020-04-01 01:00:00,60,1,c\n",
      "u.csv", Generic());
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  Trace limited = *t;
  KeepEarliest(&limited, 3);
  ASSERT_EQ(limited.jobs.size(), 3u);
  EXPECT_EQ(limited.jobs[0].tenant, "a");  // file order among the kept jobs
  EXPECT_EQ(limited.jobs[1].tenant, "b");
  EXPECT_EQ(limited.jobs[2].tenant, "c");
  EXPECT_EQ(limited.jobs[0].submit, 0);
  limited = *t;
  KeepEarliest(&limited, 2);  // a tie at 01:00: the earlier row
  ASSERT_EQ(limited.jobs.size(), 2u);
  EXPECT_EQ(limited.jobs[1].tenant, "b");
  limited = *t;
  KeepEarliest(&limited, 0);
  EXPECT_EQ(limited.jobs.size(), 5u);
  KeepEarliest(&limited, 9);
  EXPECT_EQ(limited.jobs.size(), 5u);
}

// ---- jobs larger than the cluster ----

TEST(ReplayReportTest, JobsLargerThanTheClusterAreReported) {
  std::vector<TraceJob> jobs;
  auto job = [](const std::string& id, const std::string& tenant, int gpus, int64_t line) {
    TraceJob j;
    j.id = id;
    j.tenant = tenant;
    j.duration = kHour;
    j.gpus = static_cast<core::Amount>(gpus) * core::kMilli;
    j.line = line;
    return j;
  };
  jobs.push_back(job("small", "a", 1, 2));
  for (int k = 0; k < 12; ++k) jobs.push_back(job("big-" + std::to_string(k), k < 11 ? "a" : "b", 4, 3 + k));
  Result<AutoQueues> aq = BuildAutoQueues(jobs, 3);
  ASSERT_TRUE(aq.ok()) << aq.status().ToString();
  ReplayOptions o;
  o.interval = 0;
  Result<ReplayResult> r = Replay(aq->config, aq->tenants, jobs, aq->capacity, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->warnings.size(), kMaxTooLargeWarnings + 1);
  EXPECT_EQ(
      r->warnings[0],
      "job big-0 (line 3) of tenant a asks for 4 GPUs, more than the cluster's 3: it can never be admitted");
  EXPECT_EQ(r->warnings.back(), "... and 2 more jobs larger than the cluster");
  int64_t too_large = 0, never = 0;
  for (const TenantReport& t : r->tenants) {
    too_large += t.too_large;
    never += t.never_admitted;
    if (t.binding.tenant == "b") {
      EXPECT_EQ(t.too_large, 1);
      EXPECT_EQ(t.never_admitted, 1);
    }
  }
  EXPECT_EQ(too_large, 12);
  EXPECT_EQ(never, 12);
  // The JSON report carries the count and the warnings; tenants.csv the count.
  std::vector<SimRun> runs = {{"auto", "", *r}};
  nlohmann::json j = nlohmann::json::parse(ReportJson(SimMeta{}, runs));
  EXPECT_EQ(j["runs"][0]["warnings"].size(), kMaxTooLargeWarnings + 1);
  int64_t json_too_large = 0;
  for (const auto& t : j["runs"][0]["tenants"]) json_too_large += t["tooLarge"].get<int64_t>();
  EXPECT_EQ(json_too_large, 12);
  std::string dir = TempDir("too-large");
  ASSERT_TRUE(WriteCsvReports(runs, jobs, dir).ok());
  std::string tenants = ReadFile(dir + "/tenants.csv");
  EXPECT_NE(tenants.find(",too_large\n"), std::string::npos) << tenants;
  EXPECT_NE(tenants.find(",11\n"), std::string::npos) << tenants;  // tenant a
}

// ---- CSV reports ----

// Limits hold for derived values too: a cumulative interval, a run time from
// end - start, a negative GPU count times zero instances.
TEST(TraceReaderTest, DerivedValuesStayInRange) {
  TraceFormat iv;
  ASSERT_TRUE(ParseColumnMapping("interval=gap,duration=duration,gpus=gpus,tenant=tenant", &iv).ok());
  std::string text = "gap,duration,gpus,tenant\n";
  for (int i = 0; i < 1100; ++i) text += "9000000000000,60,1,a\n";
  Result<Trace> t = ParseTrace(text, "gap.csv", iv);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  ASSERT_FALSE(t->problems.empty());
  EXPECT_NE(t->problems[0].find("interval: out of range (cumulative"), std::string::npos) << t->problems[0];
  for (const TraceJob& j : t->jobs) EXPECT_GE(j.submit, 0);
  TraceFormat end;
  ASSERT_TRUE(ParseColumnMapping("submit=submit,end=end,gpus=gpus,tenant=tenant", &end).ok());
  t = ParseTrace("submit,end,gpus,tenant\n0,9000000000000,1,a\n0,60,1,a\n", "end.csv", end);
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t->jobs.size(), 1u);
  ASSERT_EQ(t->problems.size(), 1u);
  EXPECT_EQ(t->problems[0], "end.csv:2: end: run time out of range (after submit)");
  TraceFormat inst = Generic();
  ASSERT_TRUE(
      ParseColumnMapping("submit=submit,duration=duration,gpus=gpus,instances=n,tenant=tenant", &inst).ok());
  t = ParseTrace("submit,duration,gpus,n,tenant\n0,60,-5,0,a\n0,60,1,0,a\n", "neg.csv", inst);
  ASSERT_TRUE(t.ok());
  ASSERT_EQ(t->problems.size(), 2u);
  EXPECT_EQ(t->problems[0], "neg.csv:2: gpus: expected a number of GPUs >= 0, got -5");
  EXPECT_EQ(t->problems[1], "neg.csv:3: instances: expected a whole number >= 1, got 0");
}

TEST(ReplayReportTest, CsvReportsQuoteTextFields) {
  EXPECT_EQ(CsvField("plain"), "plain");
  EXPECT_EQ(CsvField("team, a"), "\"team, a\"");
  EXPECT_EQ(CsvField("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(CsvField("two\nlines"), "\"two\nlines\"");
  EXPECT_EQ(CsvField(""), "");
  EXPECT_EQ(CsvField("  pad "), "\"  pad \"");  // readers trim unquoted blanks

  std::vector<TraceJob> jobs(2);
  jobs[0].id = "job \"1\", first";
  jobs[0].tenant = "team, a";
  jobs[1].id = "2";
  jobs[1].tenant = "b";
  for (TraceJob& j : jobs) {
    j.duration = kHour;
    j.gpus = core::kMilli;
  }
  Result<AutoQueues> aq = BuildAutoQueues(jobs, 2);
  ASSERT_TRUE(aq.ok()) << aq.status().ToString();
  ReplayOptions o;
  o.interval = 0;
  Result<ReplayResult> r = Replay(aq->config, aq->tenants, jobs, aq->capacity, o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  std::string dir = TempDir("quoting");
  std::vector<SimRun> runs = {{"one", "", *r}, {"two", "", *r}};
  std::vector<std::string> written;
  ASSERT_TRUE(WriteCsvReports(runs, jobs, dir, &written).ok());
  EXPECT_EQ(written, (std::vector<std::string>{
                         "tenants-1.csv", "cluster-1.csv", "sizes-1.csv", "timeseries-1.csv", "jobs-1.csv",
                         "tenants-2.csv", "cluster-2.csv", "sizes-2.csv", "timeseries-2.csv", "jobs-2.csv"}));
  std::string sizes = ReadFile(dir + "/sizes-1.csv");
  EXPECT_EQ(
      sizes.substr(0, sizes.find('\n')),
      "size_class,min_gpus,max_gpus,jobs,admitted,wait_p50_s,wait_p95_s,wait_p99_s,wait_mean_s,wait_max_s");
  std::string js = ReadFile(dir + "/jobs-1.csv");
  EXPECT_NE(js.find("\n\"job \"\"1\"\", first\",\"team, a\",0,"), std::string::npos) << js;
  std::string ts = ReadFile(dir + "/timeseries-2.csv");
  EXPECT_NE(ts.find(",\"held:team, a\",\"pending:team, a\""), std::string::npos) << ts;
  std::string tenants = ReadFile(dir + "/tenants-1.csv");
  EXPECT_NE(tenants.find("\n\"team, a\",team-a,default,"), std::string::npos) << tenants;
  // Read back with the trace reader's dialect: every row has the header's width.
  TraceFormat f;
  ASSERT_TRUE(
      ParseColumnMapping("submit=submit_s,duration=duration_s,gpus=gpus,tenant=tenant,id=id", &f).ok());
  Result<Trace> back = ParseTrace(js, "jobs-1.csv", f);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->skipped, 0);
  ASSERT_EQ(back->jobs.size(), 2u);
  EXPECT_EQ(back->jobs[0].id, "job \"1\", first");
  EXPECT_EQ(back->jobs[0].tenant, "team, a");
}

// ---- derived queues ----

TEST(AutoQueuesYamlTest, CommentsGiveGpuHours) {
  TraceJob a, b;
  a.tenant = "a";
  a.gpus = 2 * core::kMilli;
  a.duration = 3 * kHour;  // 6 GPU-hours
  b.tenant = "b\nkind: Namespace";
  b.gpus = core::kMilli / 2;
  b.duration = 4 * kHour;  // 2 GPU-hours
  Result<AutoQueues> aq = BuildAutoQueues({a, b}, 4);
  ASSERT_TRUE(aq.ok()) << aq.status().ToString();
  EXPECT_NE(aq->yaml.find("# tenant a : 6.0 GPU-hours (75.00%)\n"), std::string::npos) << aq->yaml;
  // A line break in a tenant name stays inside the comment.
  EXPECT_NE(aq->yaml.find("# tenant b kind: Namespace : 2.0 GPU-hours (25.00%)\n"), std::string::npos)
      << aq->yaml;
}

}  // namespace
}  // namespace artel::sim
