// Workload traces for `artel sim`: CSV readers with column mappings, and a
// seeded synthetic generator.
//
// A trace is a list of `TraceJob`s: who submitted (tenant, user), when, how
// many GPUs, and how long the job ran. Readers map CSV columns to these keys:
//
//   submit    absolute submission time: a number (seconds, or the unit of
//             `time_unit_ms`) or a timestamp `YYYY-MM-DD HH:MM:SS` (also
//             `T`-separated, optional fraction and `Z` or an offset), read as UTC
//   interval  time since the previous row's submission (instead of submit)
//   duration  run time (a number in the time unit)
//   start/end run start and end times (like submit); the run time is end -
//             start, or end - submit without start
//   gpus      GPUs the job requests (per instance with `instances`); empty = 0
//   instances how many instances of that size the job has; empty = 1
//   tenant    who owns the job (a virtual cluster, a team); falls back to
//             `user`, then to "default"
//   user      who submitted it
//   id        the job's identifier; defaults to `line<N>`
//   status    kept for reports (e.g. Pass/Killed); not used by the replay
//
// Presets name the columns of the public traces in ../shared/traces: `philly`
// (timestamp,duration,num_gpus,gpu_time,cluster) and `itp`
// (cluster,job_id,submission_time,duration,num_gpu); `auto` picks one of them
// from the header. Rows need not be sorted; the reader keeps file order and
// the replay sorts stably by submission time. Exact duplicate rows are kept.
//
// The CSV dialect is RFC 4180 with leniencies: a quoted field may span lines,
// `""` inside quotes is one quote, spaces around a field (also before an
// opening quote) are dropped, records end at LF, CRLF or a lone CR, and a
// UTF-8 byte order mark is ignored. A malformed row (wrong column count, a
// value that does not parse, a negative duration or GPU count) is an error
// naming file:line in strict mode, and is otherwise skipped and counted, with
// the first few messages kept for the report. A mapping that cannot work
// (a column that is not in the header, a header name that appears twice, a
// column number past the header's width) fails before any row is read.
//
// The synthetic generator draws Poisson arrivals and size/duration
// distributions per tenant from its own seeded PRNG (splitmix64), so a seed
// gives the same jobs on every platform and standard library.
//
// Thread-safety: all functions are reentrant; the readers only read files.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/model.h"
#include "core/status.h"

namespace artel::sim {

struct TraceJob {
  std::string id;
  std::string tenant;
  std::string user;
  std::string status;
  core::Time submit = 0;    // ms, relative to the earliest submission after loading
  core::Time duration = 0;  // ms
  core::Amount gpus = 0;    // milli-GPUs (fractions of a GPU are allowed: 500 = half a GPU)
  int64_t line = 0;         // 1-based source line; 0 for synthetic jobs
};

struct Trace {
  std::string source;
  std::vector<TraceJob> jobs;         // file order; `submit` rebased so the earliest is 0
  core::Time origin = 0;              // absolute time (ms) of the earliest submission
  int64_t rows = 0;                   // data rows read (good and bad)
  int64_t skipped = 0;                // malformed rows skipped
  std::vector<std::string> problems;  // the first malformed rows, as "file:line: message"
  std::vector<std::string> notes;     // hints for the user, e.g. about the time unit
};

// kAuto picks kPhilly or kItp when the header has their columns, else kGeneric.
enum class TracePreset { kAuto, kGeneric, kPhilly, kItp };

struct TraceFormat {
  TracePreset preset = TracePreset::kGeneric;
  // key -> column: a header name, or a 1-based column number. Overrides the
  // preset's mapping key by key.
  std::map<std::string, std::string> columns;
  bool header = true;  // the first line names the columns
  bool strict = false;
  char delimiter = ',';
  // Multiplies the gpus column: 0.01 reads a percentage (Alibaba PAI's
  // plan_gpu 50 = half a GPU).
  double gpu_scale = 1.0;
  // Milliseconds per unit of the numeric times (submit, interval, start, end,
  // duration): 1000 = seconds, 1 = milliseconds, 0.001 = microseconds.
  // Timestamps such as 2020-04-01T00:00:00Z are not affected.
  double time_unit_ms = 1000.0;
};

// Parses a preset name: "auto", "philly", "itp" or "generic".
Result<TracePreset> ParseTracePreset(std::string_view name);

// Parses a time unit "s", "ms" or "us" into milliseconds per unit.
Result<double> ParseTimeUnit(std::string_view name);

// Parses `--columns KEY=COLUMN,...` into format->columns. Unknown keys are errors.
Status ParseColumnMapping(std::string_view text, TraceFormat* format);

// Reads a CSV trace from `text` (the contents of `source`).
Result<Trace> ParseTrace(std::string_view text, const std::string& source, const TraceFormat& format);

// Reads a CSV trace file.
Result<Trace> LoadTrace(const std::string& path, const TraceFormat& format);

// Keeps the `n` earliest jobs by submission time (ties: the earlier row), in
// file order; `n <= 0` keeps everything. The earliest job stays, so the
// rebased times stay valid.
void KeepEarliest(Trace* trace, int64_t n);

// Parses an absolute time: decimal seconds, or a `YYYY-MM-DD[ HH:MM[:SS[.fff]]]`
// timestamp (`T` also separates date and time) in UTC, or with `Z` or an
// offset `+HH:MM` / `+HHMM` / `+HH` (or `-`), which is subtracted to get UTC.
// Returns milliseconds since the Unix epoch (or since 0 for plain seconds).
// Dates and times must exist (no 2020-02-30, no hour 24; second 60 is a leap
// second).
Result<core::Time> ParseTraceTime(std::string_view text);

// The same with numbers in another unit (`time_unit_ms` milliseconds each).
Result<core::Time> ParseTraceTime(std::string_view text, double time_unit_ms);

// ---- synthetic workloads ----

// One choice of a discrete distribution with an integer weight.
struct WeightedChoice {
  int64_t value = 0;
  int64_t weight = 1;
};

struct DurationDist {
  enum class Kind { kFixed, kExponential, kUniform };
  Kind kind = Kind::kFixed;
  core::Time a = 0;  // fixed value, exponential mean, or uniform low bound (ms)
  core::Time b = 0;  // uniform high bound (ms)
};

// A tenant of the synthetic generator. Arrivals are Poisson with `rate_per_hour`
// (or exactly periodic when `periodic` is set), starting at `start`, until
// `jobs` jobs were drawn.
struct SyntheticTenant {
  std::string name;
  double rate_per_hour = 1.0;
  bool periodic = false;
  int64_t jobs = 0;
  core::Time start = 0;
  std::vector<WeightedChoice> gpus = {{1, 1}};
  DurationDist duration;
};

// Parses `name=a,rate=30/h,jobs=500,gpus=1*7|4*3,duration=exp(1h),start=10m,arrivals=poisson|periodic`.
// gpus: `|`-separated values, each with an optional `*weight`. duration:
// `fixed(10m)` (or a bare duration), `exp(MEAN)`, `uniform(LOW,HIGH)`.
Result<SyntheticTenant> ParseSyntheticTenant(std::string_view text);

// Generates the jobs of every tenant, merged in submission order (ties by
// tenant order, then draw order). Deterministic for a given seed.
Trace GenerateSynthetic(const std::vector<SyntheticTenant>& tenants, uint64_t seed);

}  // namespace artel::sim
