#include "sim/trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>

#include "sim/duration.h"

namespace artel::sim {
namespace {

constexpr size_t kMaxProblems = 20;

constexpr std::array<std::string_view, 10> kKeys = {"submit", "interval", "duration", "start", "end",
                                                    "gpus",   "tenant",   "user",     "id",    "status"};

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Splits one CSV record. Supports double-quoted fields with "" escapes; a
// record never spans lines (traces do not need it).
bool SplitCsv(std::string_view line, char delim, std::vector<std::string_view>* fields,
              std::vector<std::string>* unquoted) {
  fields->clear();
  unquoted->clear();
  size_t i = 0;
  for (;;) {
    if (i < line.size() && line[i] == '"') {
      std::string value;
      ++i;
      bool closed = false;
      while (i < line.size()) {
        if (line[i] == '"') {
          if (i + 1 < line.size() && line[i + 1] == '"') {
            value += '"';
            i += 2;
            continue;
          }
          ++i;
          closed = true;
          break;
        }
        value += line[i++];
      }
      if (!closed) return false;
      unquoted->push_back(std::move(value));
      fields->push_back({});  // placeholder, fixed below
      if (i < line.size() && line[i] != delim) return false;
    } else {
      size_t end = line.find(delim, i);
      if (end == std::string_view::npos) end = line.size();
      fields->push_back(Trim(line.substr(i, end - i)));
      i = end;
    }
    if (i >= line.size()) break;
    ++i;  // the delimiter
  }
  // Point quoted placeholders at their unquoted storage (stable now).
  size_t q = 0;
  for (size_t f = 0; f < fields->size(); ++f) {
    if ((*fields)[f].data() == nullptr) (*fields)[f] = (*unquoted)[q++];
  }
  return true;
}

Result<double> ParseNumber(std::string_view text) {
  text = Trim(text);
  if (text.empty()) return InvalidArgument("empty value");
  double v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size() || !std::isfinite(v)) {
    return InvalidArgument("not a number: \"" + std::string(text) + "\"");
  }
  return v;
}

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
// civil-date algorithm, written from its published description).
int64_t DaysFromCivil(int64_t y, int64_t m, int64_t d) {
  y -= m <= 2 ? 1 : 0;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const int64_t yoe = y - era * 400;
  const int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

bool ReadDigits(std::string_view s, size_t* i, size_t n, int64_t* out) {
  if (*i + n > s.size()) return false;
  int64_t v = 0;
  for (size_t k = 0; k < n; ++k) {
    char c = s[*i + k];
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *i += n;
  *out = v;
  return true;
}

int64_t ToMillis(double seconds) { return static_cast<int64_t>(std::llround(seconds * 1000.0)); }

const std::map<std::string, std::string>& PresetColumns(TracePreset preset) {
  static const std::map<std::string, std::string> kPhilly = {
      {"submit", "timestamp"}, {"duration", "duration"}, {"gpus", "num_gpus"}, {"tenant", "cluster"}};
  static const std::map<std::string, std::string> kItp = {{"submit", "submission_time"},
                                                          {"duration", "duration"},
                                                          {"gpus", "num_gpu"},
                                                          {"tenant", "cluster"},
                                                          {"id", "job_id"}};
  static const std::map<std::string, std::string> kNone;
  switch (preset) {
    case TracePreset::kPhilly: return kPhilly;
    case TracePreset::kItp: return kItp;
    case TracePreset::kGeneric: break;
  }
  return kNone;
}

}  // namespace

Result<TracePreset> ParseTracePreset(std::string_view name) {
  if (name == "philly") return TracePreset::kPhilly;
  if (name == "itp") return TracePreset::kItp;
  if (name == "generic") return TracePreset::kGeneric;
  return InvalidArgument("unknown trace preset \"" + std::string(name) +
                         "\" (expected philly, itp or generic)");
}

Status ParseColumnMapping(std::string_view text, TraceFormat* format) {
  while (!text.empty()) {
    size_t comma = text.find(',');
    std::string_view item = Trim(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    if (item.empty()) continue;
    size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      return InvalidArgument("--columns: expected KEY=COLUMN, got \"" + std::string(item) + "\"");
    }
    std::string key(Trim(item.substr(0, eq)));
    std::string column(Trim(item.substr(eq + 1)));
    if (std::find(kKeys.begin(), kKeys.end(), key) == kKeys.end()) {
      return InvalidArgument("--columns: unknown key \"" + key +
                             "\" (keys: submit, interval, duration, start, end, gpus, tenant, user, id, status)");
    }
    if (column.empty()) return InvalidArgument("--columns: empty column for key " + key);
    format->columns[key] = column;
  }
  return Status::Ok();
}

Result<core::Time> ParseTraceTime(std::string_view text) {
  text = Trim(text);
  // A timestamp starts with a 4-digit year and a dash.
  if (text.size() >= 10 && text[4] == '-') {
    size_t i = 0;
    int64_t y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0;
    auto bad = [&] {
      return InvalidArgument("invalid timestamp \"" + std::string(text) +
                             "\" (expected YYYY-MM-DD HH:MM:SS, optionally with T, fractional seconds and Z or +HH:MM)");
    };
    if (!ReadDigits(text, &i, 4, &y) || text[i++] != '-' || !ReadDigits(text, &i, 2, &mo) ||
        i >= text.size() || text[i++] != '-' || !ReadDigits(text, &i, 2, &d)) {
      return bad();
    }
    int64_t frac_ms = 0;
    if (i < text.size()) {
      if (text[i] != ' ' && text[i] != 'T') return bad();
      ++i;
      if (!ReadDigits(text, &i, 2, &h) || i >= text.size() || text[i++] != ':' ||
          !ReadDigits(text, &i, 2, &mi)) {
        return bad();
      }
      if (i < text.size() && text[i] == ':') {
        ++i;
        if (!ReadDigits(text, &i, 2, &s)) return bad();
        if (i < text.size() && text[i] == '.') {
          ++i;
          int64_t scale = 100;
          size_t start = i;
          while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
            frac_ms += (text[i] - '0') * scale;
            scale /= 10;
            ++i;
          }
          if (i == start) return bad();
        }
      }
      // UTC ("Z"), or an offset from UTC: +HH:MM, +HHMM or +HH (RFC 3339 / ISO 8601).
      int64_t offset_min = 0;
      if (i < text.size() && text[i] == 'Z') {
        ++i;
      } else if (i < text.size() && (text[i] == '+' || text[i] == '-')) {
        const int64_t sign = text[i++] == '-' ? -1 : 1;
        int64_t oh = 0, om = 0;
        if (!ReadDigits(text, &i, 2, &oh)) return bad();
        if (i < text.size() && text[i] == ':') ++i;
        if (i < text.size() && !ReadDigits(text, &i, 2, &om)) return bad();
        if (oh > 23 || om > 59) return bad();
        offset_min = sign * (oh * 60 + om);
      }
      if (i != text.size()) return bad();
      if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || s > 60) return bad();
      int64_t days = DaysFromCivil(y, mo, d);
      return ((days * 24 + h) * 60 + mi - offset_min) * 60 * 1000 + s * 1000 + frac_ms;
    }
    if (mo < 1 || mo > 12 || d < 1 || d > 31) return bad();
    int64_t days = DaysFromCivil(y, mo, d);
    return days * 24 * 60 * 60 * 1000;
  }
  Result<double> v = ParseNumber(text);
  if (!v.ok()) return v.status();
  if (*v < 0) return InvalidArgument("negative time " + std::string(text));
  if (*v > 9e12) return InvalidArgument("time out of range: " + std::string(text));
  return ToMillis(*v);
}

Result<Trace> ParseTrace(std::string_view text, const std::string& source, const TraceFormat& format) {
  std::map<std::string, std::string> mapping = PresetColumns(format.preset);
  for (const auto& [k, v] : format.columns) mapping[k] = v;
  if (mapping.count("submit") && mapping.count("interval")) {
    return InvalidArgument("--columns: give either submit or interval, not both");
  }
  if (!mapping.count("submit") && !mapping.count("interval")) {
    return InvalidArgument(
        "trace format: no submit (or interval) column; use --preset or --columns submit=COLUMN");
  }
  // The run time: a duration column, or an end time (minus the start time
  // when the trace has one, else minus the submission).
  if (mapping.count("duration") && mapping.count("end")) {
    return InvalidArgument("--columns: give either duration or end, not both");
  }
  if (!mapping.count("duration") && !mapping.count("end")) {
    return InvalidArgument(
        "trace format: no duration column; use --columns duration=COLUMN (or end=COLUMN, with start=COLUMN)");
  }
  if (mapping.count("start") && !mapping.count("end")) {
    return InvalidArgument("--columns: start is only used with end (the run time is end - start)");
  }
  if (mapping.count("end") && !mapping.count("start") && !mapping.count("submit")) {
    return InvalidArgument("--columns: end needs start or submit to measure the run time from");
  }
  if (!mapping.count("gpus")) {
    return InvalidArgument("trace format: no gpus column; use --columns gpus=COLUMN");
  }

  Trace trace;
  trace.source = source;
  std::vector<std::string_view> fields;
  std::vector<std::string> unquoted;
  // key -> 0-based column index
  std::map<std::string, size_t> index;
  size_t width = 0;

  auto resolve = [&](const std::vector<std::string_view>* header) -> Status {
    width = header ? header->size() : 0;
    for (const auto& [key, column] : mapping) {
      std::optional<size_t> found;
      if (header) {
        for (size_t c = 0; c < header->size(); ++c) {
          if ((*header)[c] == column) found = c;
        }
      }
      if (!found && !column.empty() && std::all_of(column.begin(), column.end(), ::isdigit)) {
        size_t n = std::stoul(column);
        if (n >= 1) found = n - 1;
      }
      if (!found) {
        return InvalidArgument(fmt::format("{}:1: no column \"{}\" for {} (columns: {})", source, column, key,
                                           header ? fmt::format("{}", fmt::join(*header, ", ")) : "none"));
      }
      index[key] = *found;
      width = std::max(width, *found + 1);
    }
    return Status::Ok();
  };

  int64_t line_no = 0;
  bool need_header = format.header;
  if (!need_header) {
    if (Status s = resolve(nullptr); !s.ok()) return s;
  }
  core::Time prev_submit = 0;
  core::Time min_submit = std::numeric_limits<core::Time>::max();
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view line = text.substr(pos, eol - pos);
    pos = eol + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (Trim(line).empty()) continue;
    if (need_header) {
      if (!SplitCsv(line, format.delimiter, &fields, &unquoted)) {
        return InvalidArgument(fmt::format("{}:{}: malformed header", source, line_no));
      }
      std::vector<std::string_view> header = fields;
      std::vector<std::string> keep(header.begin(), header.end());
      std::vector<std::string_view> views(keep.begin(), keep.end());
      if (Status s = resolve(&views); !s.ok()) return s;
      need_header = false;
      continue;
    }
    ++trace.rows;
    auto fail = [&](const std::string& why) -> Status {
      std::string msg = fmt::format("{}:{}: {}", source, line_no, why);
      ++trace.skipped;
      if (trace.problems.size() < kMaxProblems) trace.problems.push_back(msg);
      return InvalidArgument(msg);
    };
    Status row_status = [&]() -> Status {
      if (!SplitCsv(line, format.delimiter, &fields, &unquoted)) return fail("unterminated quote");
      if (format.header && fields.size() != width) {
        return fail(fmt::format("expected {} columns, got {}", width, fields.size()));
      }
      if (fields.size() < width)
        return fail(fmt::format("expected at least {} columns, got {}", width, fields.size()));
      TraceJob job;
      job.line = line_no;
      auto get = [&](const char* key) -> std::string_view {
        auto it = index.find(key);
        return it == index.end() ? std::string_view() : fields[it->second];
      };
      if (index.count("submit")) {
        Result<core::Time> t = ParseTraceTime(get("submit"));
        if (!t.ok()) return fail("submit: " + t.status().message());
        job.submit = *t;
      } else {
        Result<double> iv = ParseNumber(get("interval"));
        if (!iv.ok()) return fail("interval: " + iv.status().message());
        if (*iv < 0) return fail("interval: negative");
        job.submit = prev_submit + ToMillis(*iv);
      }
      if (index.count("end")) {
        Result<core::Time> end = ParseTraceTime(get("end"));
        if (!end.ok()) return fail("end: " + end.status().message());
        core::Time from = job.submit;
        const char* from_key = "submit";
        if (index.count("start")) {
          Result<core::Time> start = ParseTraceTime(get("start"));
          if (!start.ok()) return fail("start: " + start.status().message());
          from = *start;
          from_key = "start";
        }
        if (*end < from) return fail(fmt::format("end: before {}", from_key));
        job.duration = *end - from;
      } else {
        Result<double> dur = ParseNumber(get("duration"));
        if (!dur.ok()) return fail("duration: " + dur.status().message());
        if (*dur < 0) return fail("duration: negative");
        if (*dur > 1e11) return fail("duration: out of range");
        job.duration = ToMillis(*dur);
      }
      Result<double> g = ParseNumber(get("gpus"));
      if (!g.ok()) return fail("gpus: " + g.status().message());
      const double scaled = *g * format.gpu_scale;
      if (!(scaled >= 0) || scaled > 1e6) return fail("gpus: expected a number of GPUs >= 0");
      job.gpus = static_cast<core::Amount>(std::llround(scaled * core::kMilli));
      if (job.gpus == 0 && scaled > 0) return fail("gpus: less than a thousandth of a GPU");
      job.user = std::string(get("user"));
      job.tenant = std::string(get("tenant"));
      if (job.tenant.empty()) job.tenant = job.user.empty() ? "default" : job.user;
      job.status = std::string(get("status"));
      job.id = std::string(get("id"));
      if (job.id.empty()) job.id = fmt::format("line{}", line_no);
      prev_submit = job.submit;
      min_submit = std::min(min_submit, job.submit);
      trace.jobs.push_back(std::move(job));
      return Status::Ok();
    }();
    if (!row_status.ok() && format.strict) return row_status;
  }
  if (need_header) return InvalidArgument(source + ": empty trace (no header line)");
  if (!trace.jobs.empty()) {
    trace.origin = min_submit;
    for (TraceJob& j : trace.jobs) j.submit -= min_submit;
  }
  return trace;
}

Result<Trace> LoadTrace(const std::string& path, const TraceFormat& format) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound(path + ": cannot open trace file");
  std::stringstream buf;
  buf << in.rdbuf();
  std::string text = buf.str();
  return ParseTrace(text, path, format);
}

// ---- synthetic ----

namespace {

// splitmix64: small, fast and identical everywhere.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in (0, 1].
  double Unit() { return (static_cast<double>(Next() >> 11) + 1.0) * (1.0 / 9007199254740992.0); }

 private:
  uint64_t state_;
};

Result<DurationDist> ParseDurationDist(std::string_view text) {
  DurationDist d;
  auto arg = [&](std::string_view prefix) -> std::optional<std::string_view> {
    if (text.substr(0, prefix.size()) == prefix && text.back() == ')') {
      return text.substr(prefix.size(), text.size() - prefix.size() - 1);
    }
    return std::nullopt;
  };
  if (auto a = arg("exp(")) {
    Result<core::Time> m = ParseDuration(*a);
    if (!m.ok()) return m.status();
    d.kind = DurationDist::Kind::kExponential;
    d.a = *m;
  } else if (auto a = arg("uniform(")) {
    size_t comma = a->find(',');
    if (comma == std::string_view::npos) return InvalidArgument("uniform(LOW,HIGH) needs two durations");
    Result<core::Time> lo = ParseDuration(Trim(a->substr(0, comma)));
    Result<core::Time> hi = ParseDuration(Trim(a->substr(comma + 1)));
    if (!lo.ok()) return lo.status();
    if (!hi.ok()) return hi.status();
    if (*hi < *lo) return InvalidArgument("uniform(LOW,HIGH): HIGH < LOW");
    d.kind = DurationDist::Kind::kUniform;
    d.a = *lo;
    d.b = *hi;
  } else {
    std::string_view v = text;
    if (auto a = arg("fixed(")) v = *a;
    Result<core::Time> f = ParseDuration(v);
    if (!f.ok()) return f.status();
    d.kind = DurationDist::Kind::kFixed;
    d.a = *f;
  }
  return d;
}

}  // namespace

Result<SyntheticTenant> ParseSyntheticTenant(std::string_view text) {
  SyntheticTenant t;
  // Split on commas outside parentheses.
  std::vector<std::string_view> items;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || (text[i] == ',' && depth == 0)) {
      items.push_back(Trim(text.substr(start, i - start)));
      start = i + 1;
    } else if (text[i] == '(') {
      ++depth;
    } else if (text[i] == ')') {
      --depth;
    }
  }
  auto bad = [&](const std::string& why) {
    return InvalidArgument("--synthetic \"" + std::string(text) + "\": " + why);
  };
  for (std::string_view item : items) {
    if (item.empty()) continue;
    size_t eq = item.find('=');
    if (eq == std::string_view::npos) return bad("expected KEY=VALUE, got \"" + std::string(item) + "\"");
    std::string_view key = Trim(item.substr(0, eq));
    std::string_view value = Trim(item.substr(eq + 1));
    if (key == "name" || key == "tenant") {
      t.name = std::string(value);
    } else if (key == "rate") {
      std::string_view num = value;
      double per = 1.0;  // per hour
      if (size_t slash = value.find('/'); slash != std::string_view::npos) {
        num = value.substr(0, slash);
        std::string_view unit = value.substr(slash + 1);
        if (unit == "h")
          per = 1.0;
        else if (unit == "m")
          per = 1.0 / 60.0;
        else if (unit == "s")
          per = 1.0 / 3600.0;
        else if (unit == "d")
          per = 24.0;
        else
          return bad("rate unit must be /s, /m, /h or /d");
      }
      Result<double> r = ParseNumber(num);
      if (!r.ok() || *r <= 0) return bad("rate must be a positive number");
      t.rate_per_hour = *r / per;
    } else if (key == "jobs") {
      Result<double> n = ParseNumber(value);
      if (!n.ok() || *n < 0 || *n != std::floor(*n) || *n > 1e8) return bad("jobs must be a whole number");
      t.jobs = static_cast<int64_t>(*n);
    } else if (key == "start") {
      Result<core::Time> s = ParseDuration(value);
      if (!s.ok()) return bad(s.status().message());
      t.start = *s;
    } else if (key == "arrivals") {
      if (value == "poisson")
        t.periodic = false;
      else if (value == "periodic")
        t.periodic = true;
      else
        return bad("arrivals must be poisson or periodic");
    } else if (key == "gpus") {
      t.gpus.clear();
      std::string_view rest = value;
      while (!rest.empty()) {
        size_t bar = rest.find('|');
        std::string_view choice = Trim(rest.substr(0, bar));
        rest = bar == std::string_view::npos ? std::string_view() : rest.substr(bar + 1);
        WeightedChoice c;
        std::string_view v = choice;
        if (size_t star = choice.find('*'); star != std::string_view::npos) {
          v = choice.substr(0, star);
          Result<double> w = ParseNumber(choice.substr(star + 1));
          if (!w.ok() || *w < 1 || *w != std::floor(*w))
            return bad("gpus weight must be a whole number >= 1");
          c.weight = static_cast<int64_t>(*w);
        }
        Result<double> g = ParseNumber(v);
        if (!g.ok() || *g < 0 || *g != std::floor(*g)) return bad("gpus must be whole numbers");
        c.value = static_cast<int64_t>(*g);
        t.gpus.push_back(c);
      }
      if (t.gpus.empty()) return bad("gpus needs at least one value");
    } else if (key == "duration") {
      Result<DurationDist> d = ParseDurationDist(value);
      if (!d.ok()) return bad(d.status().message());
      t.duration = *d;
    } else {
      return bad("unknown key \"" + std::string(key) +
                 "\" (keys: name, rate, jobs, start, arrivals, gpus, duration)");
    }
  }
  if (t.name.empty()) return bad("name= is required");
  if (t.jobs <= 0) return bad("jobs= is required (a positive number)");
  return t;
}

Trace GenerateSynthetic(const std::vector<SyntheticTenant>& tenants, uint64_t seed) {
  Trace trace;
  trace.source = "synthetic";
  struct Drawn {
    TraceJob job;
    size_t tenant;
    int64_t seq;
  };
  std::vector<Drawn> all;
  for (size_t ti = 0; ti < tenants.size(); ++ti) {
    const SyntheticTenant& t = tenants[ti];
    Rng rng(seed ^ (0x51ed270b27f5a3c1ULL * (ti + 1)));
    double mean_gap_ms = 3600.0 * 1000.0 / t.rate_per_hour;
    int64_t total_weight = 0;
    for (const WeightedChoice& c : t.gpus) total_weight += c.weight;
    double clock = static_cast<double>(t.start);
    for (int64_t n = 0; n < t.jobs; ++n) {
      if (n > 0 || !t.periodic) clock += t.periodic ? mean_gap_ms : -std::log(rng.Unit()) * mean_gap_ms;
      TraceJob j;
      j.tenant = t.name;
      j.user = t.name;
      j.id = fmt::format("{}-{}", t.name, n + 1);
      j.submit = static_cast<core::Time>(std::llround(clock));
      int64_t pick = static_cast<int64_t>(rng.Next() % static_cast<uint64_t>(total_weight));
      for (const WeightedChoice& c : t.gpus) {
        if (pick < c.weight) {
          j.gpus = static_cast<core::Amount>(c.value) * core::kMilli;
          break;
        }
        pick -= c.weight;
      }
      switch (t.duration.kind) {
        case DurationDist::Kind::kFixed: j.duration = t.duration.a; break;
        case DurationDist::Kind::kExponential:
          j.duration = static_cast<core::Time>(
              std::llround(-std::log(rng.Unit()) * static_cast<double>(t.duration.a)));
          break;
        case DurationDist::Kind::kUniform:
          j.duration = t.duration.a +
                       static_cast<core::Time>(rng.Unit() * static_cast<double>(t.duration.b - t.duration.a));
          break;
      }
      all.push_back({std::move(j), ti, n});
    }
  }
  std::stable_sort(all.begin(), all.end(), [](const Drawn& a, const Drawn& b) {
    if (a.job.submit != b.job.submit) return a.job.submit < b.job.submit;
    if (a.tenant != b.tenant) return a.tenant < b.tenant;
    return a.seq < b.seq;
  });
  for (Drawn& d : all) trace.jobs.push_back(std::move(d.job));
  trace.rows = static_cast<int64_t>(trace.jobs.size());
  return trace;
}

}  // namespace artel::sim
