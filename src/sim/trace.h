// Workload traces for `artel sim`: CSV readers with column mappings, and a
// seeded synthetic generator.
//
// A trace is a list of `TraceJob`s: who submitted (tenant, user), when, how
// many GPUs, and how long the job ran. Readers map CSV columns to these keys:
//
//   submit    absolute submission time: seconds (integer or decimal) or a
//             timestamp `YYYY-MM-DD HH:MM:SS` (also `T`-separated, optional
//             fraction and `Z`), read as UTC
//   interval  seconds since the previous row's submission (instead of submit)
//   duration  run time in seconds
//   gpus      GPUs the job requests
//   tenant    who owns the job (a virtual cluster, a team); falls back to
//             `user`, then to "default"
//   user      who submitted it
//   id        the job's identifier; defaults to `line<N>`
//   status    kept for reports (e.g. Pass/Killed); not used by the replay
//
// Presets name the columns of the public traces in ../shared/traces: `philly`
// (timestamp,duration,num_gpus,gpu_time,cluster) and `itp`
// (cluster,job_id,submission_time,duration,num_gpu). Rows need not be sorted;
// the reader keeps file order and the replay sorts stably by submission time.
// Exact duplicate rows are kept. A malformed row (wrong column count, a value
// that does not parse, a negative duration or GPU count) is an error naming
// file:line in strict mode, and is otherwise skipped and counted, with the
// first few messages kept for the report.
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
  int64_t line = 0;  // 1-based source line; 0 for synthetic jobs
};

struct Trace {
  std::string source;
  std::vector<TraceJob> jobs;         // file order; `submit` rebased so the earliest is 0
  core::Time origin = 0;              // absolute time (ms) of the earliest submission
  int64_t rows = 0;                   // data rows read (good and bad)
  int64_t skipped = 0;                // malformed rows skipped
  std::vector<std::string> problems;  // the first malformed rows, as "file:line: message"
};

enum class TracePreset { kGeneric, kPhilly, kItp };

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
};

// Parses a preset name: "philly", "itp" or "generic".
Result<TracePreset> ParseTracePreset(std::string_view name);

// Parses `--columns KEY=COLUMN,...` into format->columns. Unknown keys are errors.
Status ParseColumnMapping(std::string_view text, TraceFormat* format);

// Reads a CSV trace from `text` (the contents of `source`).
Result<Trace> ParseTrace(std::string_view text, const std::string& source, const TraceFormat& format);

// Reads a CSV trace file.
Result<Trace> LoadTrace(const std::string& path, const TraceFormat& format);

// Parses an absolute time: decimal seconds, or a `YYYY-MM-DD[ HH:MM[:SS[.fff]]]`
// timestamp (`T` also separates date and time) in UTC, or with `Z` or an
// offset `+HH:MM` / `+HHMM` / `+HH` (or `-`), which is subtracted to get UTC.
// Returns milliseconds since the Unix epoch (or since 0 for plain seconds).
Result<core::Time> ParseTraceTime(std::string_view text);

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
