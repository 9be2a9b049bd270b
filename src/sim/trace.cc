#include "sim/trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>

#include "sim/duration.h"

namespace artel::sim {
namespace {

constexpr size_t kMaxProblems = 20;

constexpr std::array<std::string_view, 11> kKeys = {
    "submit", "interval", "duration", "start", "end", "gpus", "instances", "tenant", "user", "id", "status"};

// Bounds on what a row may say, in milliseconds and GPUs: far beyond any real
// trace, and small enough that the sums of a replay cannot overflow.
constexpr double kMaxTimeMs = 9e15;      // about the year 287,000
constexpr double kMaxDurationMs = 1e14;  // about 3,000 years
constexpr double kMaxGpus = 1e6;
// A numeric time above this many seconds is past the year 5000: almost surely
// milliseconds (or microseconds) read as seconds.
constexpr double kImplausibleSeconds = 1e11;

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Spaces and tabs around a field are dropped, unless they are the delimiter.
bool IsPadding(char c, char delim) { return (c == ' ' || c == '\t') && c != delim; }

// Reads CSV records (RFC 4180, leniently) one at a time from a whole text.
// A quoted field may span lines and holds "" as one quote; padding around a
// field, also before an opening quote, is dropped; records end at LF, CRLF or
// a lone CR. `fields` point into the text, or into reused scratch strings for
// quoted fields with escapes, and stay valid until the next call: a row costs
// no allocation once the buffers have grown.
class CsvReader {
 public:
  CsvReader(std::string_view text, char delim) : text_(text), delim_(delim) {}

  bool AtEnd() const { return pos_ >= text_.size(); }
  int64_t line() const { return line_; }  // 1-based line where the last record starts
  const std::vector<std::string_view>& fields() const { return fields_; }

  // A record of one empty field: an empty or all-blank line.
  bool Blank() const { return fields_.size() == 1 && fields_[0].empty(); }

  // Reads the next record. Returns nullptr, or why the record is malformed;
  // reading then resumes on the line after the record's first line, so that
  // one stray quote costs one row rather than the rest of the file.
  const char* Next() {
    fields_.clear();
    fixups_.clear();
    line_ = next_line_;
    const size_t start = pos_;
    const size_t n = text_.size();
    size_t used = 0;  // scratch strings used by this record
    int64_t breaks = 0;
    size_t i = pos_;
    for (;;) {
      size_t f = i;
      while (f < n && IsPadding(text_[f], delim_)) ++f;
      if (f < n && text_[f] == '"') {
        size_t close = std::string_view::npos;
        bool escaped = false;
        int64_t inner_breaks = 0;
        for (size_t q = f + 1; q < n; ++q) {
          const char c = text_[q];
          if (c == '"') {
            if (q + 1 < n && text_[q + 1] == '"') {
              escaped = true;
              ++q;
              continue;
            }
            close = q;
            break;
          }
          if (c == '\n' || (c == '\r' && (q + 1 >= n || text_[q + 1] != '\n'))) ++inner_breaks;
        }
        if (close == std::string_view::npos) return Resume(start, "unterminated quote");
        std::string_view raw = text_.substr(f + 1, close - f - 1);
        if (escaped) {
          if (used == scratch_.size()) scratch_.emplace_back();
          std::string& s = scratch_[used];
          s.clear();
          for (size_t k = 0; k < raw.size(); ++k) {
            s += raw[k];
            if (raw[k] == '"') ++k;  // the second quote of ""
          }
          fixups_.emplace_back(fields_.size(), used++);
          fields_.emplace_back();
        } else {
          fields_.push_back(raw);
        }
        breaks += inner_breaks;
        i = close + 1;
        while (i < n && IsPadding(text_[i], delim_)) ++i;
        if (i < n && text_[i] != delim_ && text_[i] != '\n' && text_[i] != '\r') {
          return Resume(start, "text after a closing quote");
        }
      } else {
        size_t e = i;
        while (e < n && text_[e] != delim_ && text_[e] != '\n' && text_[e] != '\r') ++e;
        fields_.push_back(Trim(text_.substr(i, e - i)));
        i = e;
      }
      if (i < n && text_[i] == delim_) {
        ++i;
        continue;
      }
      EndAt(i, breaks);
      break;
    }
    // Scratch strings may have moved while the vector grew; point at them now.
    for (const auto& [field, s] : fixups_) fields_[field] = scratch_[s];
    return nullptr;
  }

 private:
  // Ends the record at the line break at `at` (or the end of the text).
  void EndAt(size_t at, int64_t breaks) {
    if (at < text_.size()) {
      at += text_[at] == '\r' && at + 1 < text_.size() && text_[at + 1] == '\n' ? 2 : 1;
      ++breaks;
    }
    pos_ = at;
    next_line_ = line_ + breaks;
  }

  const char* Resume(size_t start, const char* why) {
    size_t e = start;
    while (e < text_.size() && text_[e] != '\n' && text_[e] != '\r') ++e;
    EndAt(e, 0);
    fields_.clear();
    return why;
  }

  std::string_view text_;
  char delim_;
  size_t pos_ = 0;
  int64_t line_ = 0;
  int64_t next_line_ = 1;
  std::vector<std::string_view> fields_;
  std::vector<std::string> scratch_;
  std::vector<std::pair<size_t, size_t>> fixups_;  // (field, scratch string)
};

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

// DaysFromCivil would quietly normalise 2020-02-30 to March 1st; a trace
// with such a date is broken, so the date must exist.
bool ValidDate(int64_t y, int64_t m, int64_t d) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (m < 1 || m > 12 || d < 1) return false;
  const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return d <= kDays[m - 1] + (m == 2 && leap ? 1 : 0);
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

// Parses a trace time (see ParseTraceTime). `*numeric` is set to the number
// as written when the text is a number, else to -1.
Result<core::Time> ParseTime(std::string_view text, double unit_ms, double* numeric) {
  text = Trim(text);
  *numeric = -1;
  // A timestamp starts with a 4-digit year and a dash.
  if (text.size() >= 10 && text[4] == '-') {
    size_t i = 0;
    int64_t y = 0, mo = 0, d = 0, h = 0, mi = 0, s = 0;
    auto bad = [&] {
      return InvalidArgument(
          "invalid timestamp \"" + std::string(text) +
          "\" (expected YYYY-MM-DD HH:MM:SS, optionally with T, fractional seconds and Z or +HH:MM)");
    };
    if (!ReadDigits(text, &i, 4, &y) || text[i++] != '-' || !ReadDigits(text, &i, 2, &mo) ||
        i >= text.size() || text[i++] != '-' || !ReadDigits(text, &i, 2, &d)) {
      return bad();
    }
    if (!ValidDate(y, mo, d)) return bad();
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
      if (h > 23 || mi > 59 || s > 60) return bad();  // 60: a leap second
      int64_t days = DaysFromCivil(y, mo, d);
      return ((days * 24 + h) * 60 + mi - offset_min) * 60 * 1000 + s * 1000 + frac_ms;
    }
    int64_t days = DaysFromCivil(y, mo, d);
    return days * 24 * 60 * 60 * 1000;
  }
  Result<double> v = ParseNumber(text);
  if (!v.ok()) return v.status();
  if (*v < 0) return InvalidArgument("negative time " + std::string(text));
  if (*v * unit_ms > kMaxTimeMs) {
    return InvalidArgument(
        "time out of range: " + std::string(text) +
        (unit_ms >= 1000 ? " (if the times are milliseconds or microseconds, give --time-unit ms or us)"
                         : ""));
  }
  *numeric = *v;
  return static_cast<core::Time>(std::llround(*v * unit_ms));
}

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
    case TracePreset::kAuto:
    case TracePreset::kGeneric: break;
  }
  return kNone;
}

// The preset whose columns the header has (by exact name), else generic.
TracePreset DetectPreset(const std::vector<std::string>& header) {
  auto has = [&](std::string_view c) { return std::find(header.begin(), header.end(), c) != header.end(); };
  if (has("timestamp") && has("num_gpus") && has("cluster")) return TracePreset::kPhilly;
  if (has("submission_time") && has("num_gpu") && has("cluster")) return TracePreset::kItp;
  return TracePreset::kGeneric;
}

// A header that is one field holding another likely separator was split with
// the wrong delimiter.
std::string DelimiterHint(const std::vector<std::string>& header, char delim) {
  if (header.size() != 1) return "";
  if (delim != '\t' && header[0].find('\t') != std::string::npos) {
    return " (the header is one field with tabs in it: use --delimiter tab)";
  }
  for (char c : {';', '|'}) {
    if (c != delim && header[0].find(c) != std::string::npos) {
      return fmt::format(" (the header is one field with '{}' in it: use --delimiter '{}')", c, c);
    }
  }
  return "";
}

// Files that are plainly not CSV fail with one clear line instead of a
// screenful of malformed rows.
Status SniffNotCsv(std::string_view text, const std::string& source) {
  if (text.size() >= 2 && static_cast<unsigned char>(text[0]) == 0x1f &&
      static_cast<unsigned char>(text[1]) == 0x8b) {
    return InvalidArgument(source +
                           ": looks like gzip; artel sim reads CSV (decompress it first: gunzip -k FILE)");
  }
  size_t i = 0;
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  if (i < text.size() && (text[i] == '{' || text[i] == '[')) {
    return InvalidArgument(source + ": looks like JSON; artel sim reads CSV");
  }
  return Status::Ok();
}

}  // namespace

Result<TracePreset> ParseTracePreset(std::string_view name) {
  if (name == "auto") return TracePreset::kAuto;
  if (name == "philly") return TracePreset::kPhilly;
  if (name == "itp") return TracePreset::kItp;
  if (name == "generic") return TracePreset::kGeneric;
  return InvalidArgument("unknown trace preset \"" + std::string(name) +
                         "\" (expected auto, philly, itp or generic)");
}

Result<double> ParseTimeUnit(std::string_view name) {
  if (name == "s") return 1000.0;
  if (name == "ms") return 1.0;
  if (name == "us") return 0.001;
  return InvalidArgument("--time-unit: expected s, ms or us, got \"" + std::string(name) + "\"");
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
      return InvalidArgument(
          fmt::format("--columns: unknown key \"{}\" (keys: {})", key, fmt::join(kKeys, ", ")));
    }
    if (column.empty()) return InvalidArgument("--columns: empty column for key " + key);
    format->columns[key] = column;
  }
  return Status::Ok();
}

Result<core::Time> ParseTraceTime(std::string_view text) { return ParseTraceTime(text, 1000.0); }

Result<core::Time> ParseTraceTime(std::string_view text, double time_unit_ms) {
  double numeric = 0;
  return ParseTime(text, time_unit_ms, &numeric);
}

Result<Trace> ParseTrace(std::string_view text, const std::string& source, const TraceFormat& format) {
  // Editors on Windows start UTF-8 files with a byte order mark, which would
  // otherwise become part of the first column's name (or first value).
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
  if (Status s = SniffNotCsv(text, source); !s.ok()) return s;

  CsvReader csv(text, format.delimiter);
  std::vector<std::string> header;
  int64_t header_line = 0;
  if (format.header) {
    while (!csv.AtEnd()) {
      if (const char* why = csv.Next()) {
        return InvalidArgument(fmt::format("{}:{}: malformed header: {}", source, csv.line(), why));
      }
      if (csv.Blank()) continue;
      header.assign(csv.fields().begin(), csv.fields().end());
      header_line = csv.line();
      break;
    }
    if (header_line == 0) return InvalidArgument(source + ": empty trace (no header line)");
  }

  TracePreset preset = format.preset;
  if (preset == TracePreset::kAuto) preset = format.header ? DetectPreset(header) : TracePreset::kGeneric;
  std::map<std::string, std::string> mapping = PresetColumns(preset);
  for (const auto& [k, v] : format.columns) mapping[k] = v;

  const std::string delimiter_hint = DelimiterHint(header, format.delimiter);
  // A key the mapping lacks: name the file and what its header offers.
  auto missing = [&](const std::string& what, const std::string& usage) -> Status {
    if (!format.header)
      return InvalidArgument(fmt::format("{}: trace format: no {} column; use {}", source, what, usage));
    if (format.preset == TracePreset::kAuto && preset == TracePreset::kGeneric) {
      return InvalidArgument(
          fmt::format("{}: no {} column: the header matches no preset (philly, itp); its columns are: {}{}. "
                      "Map them with "
                      "--columns, e.g. --columns submit=COLUMN,duration=COLUMN,gpus=COLUMN,tenant=COLUMN",
                      source, what, fmt::join(header, ", "), delimiter_hint));
    }
    return InvalidArgument(fmt::format("{}: trace format: no {} column; use {} (header columns: {}){}",
                                       source, what, usage, fmt::join(header, ", "), delimiter_hint));
  };
  if (mapping.count("submit") && mapping.count("interval")) {
    return InvalidArgument("--columns: give either submit or interval, not both");
  }
  if (!mapping.count("submit") && !mapping.count("interval")) {
    return missing("submit (or interval)", "--preset or --columns submit=COLUMN");
  }
  // The run time: a duration column, or an end time (minus the start time
  // when the trace has one, else minus the submission).
  if (mapping.count("duration") && mapping.count("end")) {
    return InvalidArgument("--columns: give either duration or end, not both");
  }
  if (!mapping.count("duration") && !mapping.count("end")) {
    return missing("duration", "--columns duration=COLUMN (or end=COLUMN, with start=COLUMN)");
  }
  if (mapping.count("start") && !mapping.count("end")) {
    return InvalidArgument("--columns: start is only used with end (the run time is end - start)");
  }
  if (mapping.count("end") && !mapping.count("start") && !mapping.count("submit")) {
    return InvalidArgument("--columns: end needs start or submit to measure the run time from");
  }
  if (!mapping.count("gpus")) return missing("gpus", "--columns gpus=COLUMN");

  // key -> 0-based column index. A header name wins over a column number.
  std::map<std::string, size_t> index;
  size_t width = format.header ? header.size() : 0;
  for (const auto& [key, column] : mapping) {
    std::vector<size_t> named;
    for (size_t c = 0; c < header.size(); ++c) {
      if (header[c] == column) named.push_back(c);
    }
    // The last of two equal names used to win silently, and that is often
    // the wrong one (pandas exports, joined tables).
    if (named.size() > 1) {
      std::vector<size_t> numbers;
      for (size_t c : named) numbers.push_back(c + 1);
      std::string list = fmt::format("{}", fmt::join(numbers.begin(), numbers.end() - 1, ", "));
      return InvalidArgument(fmt::format(
          "{}:{}: {}: column \"{}\" appears {} in the header (columns {} and {}); map it by number", source,
          header_line, key, column,
          named.size() == 2 ? std::string("twice") : fmt::format("{} times", named.size()), list,
          numbers.back()));
    }
    std::optional<size_t> found;
    if (!named.empty()) found = named[0];
    if (!found && column.size() <= 6 && std::all_of(column.begin(), column.end(), ::isdigit)) {
      const size_t n = std::stoul(column);
      if (n == 0) return InvalidArgument(fmt::format("--columns {}=0: column numbers start at 1", key));
      // Caught here once, rather than as "expected N columns" on every row.
      if (format.header && n > header.size()) {
        return InvalidArgument(fmt::format("{}:{}: --columns {}={}: the header has only {} columns", source,
                                           header_line, key, column, header.size()));
      }
      found = n - 1;
    }
    if (!found) {
      return InvalidArgument(fmt::format(
          "{}:{}: no column \"{}\" for {} (columns: {}){}", source, format.header ? header_line : 1, column,
          key, format.header ? fmt::format("{}", fmt::join(header, ", ")) : "none", delimiter_hint));
    }
    index[key] = *found;
    width = std::max(width, *found + 1);
  }
  auto column_of = [&](const char* key) -> int {
    auto it = index.find(key);
    return it == index.end() ? -1 : static_cast<int>(it->second);
  };
  const int c_submit = column_of("submit"), c_interval = column_of("interval"), c_start = column_of("start"),
            c_end = column_of("end"), c_duration = column_of("duration"), c_gpus = column_of("gpus"),
            c_instances = column_of("instances"), c_tenant = column_of("tenant"), c_user = column_of("user"),
            c_id = column_of("id"), c_status = column_of("status");

  Trace trace;
  trace.source = source;
  const double unit = format.time_unit_ms;
  core::Time prev_submit = 0;
  core::Time min_submit = std::numeric_limits<core::Time>::max();
  // The first absolute time written as a number that is implausibly large in
  // the time unit, for a hint.
  double big_time = -1;
  int64_t big_time_line = 0;
  std::string big_time_key;
  while (!csv.AtEnd()) {
    const char* broken = csv.Next();
    if (broken == nullptr && csv.Blank()) continue;
    const int64_t line_no = csv.line();
    const std::vector<std::string_view>& fields = csv.fields();
    ++trace.rows;
    auto fail = [&](const std::string& why) -> Status {
      std::string msg = fmt::format("{}:{}: {}", source, line_no, why);
      ++trace.skipped;
      if (trace.problems.size() < kMaxProblems) trace.problems.push_back(msg);
      return InvalidArgument(msg);
    };
    auto get = [&](int c) -> std::string_view { return c < 0 ? std::string_view() : fields[c]; };
    auto time_of = [&](int c, const char* key) -> Result<core::Time> {
      double numeric = -1;
      Result<core::Time> t = ParseTime(get(c), unit, &numeric);
      if (t.ok() && big_time < 0 && numeric * unit / 1000.0 > kImplausibleSeconds) {
        big_time = numeric;
        big_time_line = line_no;
        big_time_key = key;
      }
      return t;
    };
    Status row_status = [&]() -> Status {
      if (broken != nullptr) return fail(broken);
      if (format.header && fields.size() != width) {
        return fail(fmt::format("expected {} columns, got {}", width, fields.size()));
      }
      if (fields.size() < width)
        return fail(fmt::format("expected at least {} columns, got {}", width, fields.size()));
      TraceJob job;
      job.line = line_no;
      if (c_submit >= 0) {
        Result<core::Time> t = time_of(c_submit, "submit");
        if (!t.ok()) return fail("submit: " + t.status().message());
        job.submit = *t;
      } else {
        Result<double> iv = ParseNumber(get(c_interval));
        if (!iv.ok()) return fail("interval: " + iv.status().message());
        if (*iv < 0) return fail(fmt::format("interval: negative: {}", Trim(get(c_interval))));
        if (*iv * unit > kMaxTimeMs || static_cast<double>(prev_submit) + *iv * unit > kMaxTimeMs)
          return fail(fmt::format("interval: out of range (cumulative time past the limit): {}",
                                  Trim(get(c_interval))));
        job.submit = prev_submit + static_cast<core::Time>(std::llround(*iv * unit));
      }
      if (c_end >= 0) {
        Result<core::Time> end = time_of(c_end, "end");
        if (!end.ok()) return fail("end: " + end.status().message());
        core::Time from = job.submit;
        const char* from_key = "submit";
        if (c_start >= 0) {
          Result<core::Time> start = time_of(c_start, "start");
          if (!start.ok()) return fail("start: " + start.status().message());
          from = *start;
          from_key = "start";
        }
        if (*end < from) return fail(fmt::format("end: before {}", from_key));
        job.duration = *end - from;
        if (job.duration > kMaxDurationMs)
          return fail(fmt::format("end: run time out of range (after {})", from_key));
      } else {
        Result<double> dur = ParseNumber(get(c_duration));
        if (!dur.ok()) return fail("duration: " + dur.status().message());
        if (*dur < 0) return fail(fmt::format("duration: negative: {}", Trim(get(c_duration))));
        if (*dur * unit > kMaxDurationMs)
          return fail(fmt::format("duration: out of range: {}", Trim(get(c_duration))));
        job.duration = static_cast<core::Time>(std::llround(*dur * unit));
      }
      // An empty GPU field is a CPU-only job (Helios, Alibaba PAI), not a
      // broken row.
      double gpus = 0;
      if (std::string_view text = Trim(get(c_gpus)); !text.empty()) {
        Result<double> g = ParseNumber(text);
        if (!g.ok()) return fail("gpus: " + g.status().message());
        if (!(*g >= 0)) return fail(fmt::format("gpus: expected a number of GPUs >= 0, got {}", text));
        gpus = *g;
      }
      double instances = 1;
      if (std::string_view text = Trim(get(c_instances)); !text.empty()) {
        Result<double> n = ParseNumber(text);
        if (!n.ok()) return fail("instances: " + n.status().message());
        if (*n < 1 || *n != std::floor(*n)) {
          return fail(fmt::format("instances: expected a whole number >= 1, got {}", text));
        }
        instances = *n;
      }
      const double scaled = gpus * format.gpu_scale * instances;
      if (!(scaled >= 0)) return fail("gpus: expected a number of GPUs >= 0");
      if (scaled > kMaxGpus) {
        return fail(fmt::format("gpus: too large: {:.0f} GPUs (at most {:.0f})", scaled, kMaxGpus));
      }
      job.gpus = static_cast<core::Amount>(std::llround(scaled * core::kMilli));
      if (job.gpus == 0 && scaled > 0) return fail("gpus: less than a thousandth of a GPU");
      job.user = std::string(get(c_user));
      job.tenant = std::string(get(c_tenant));
      if (job.tenant.empty()) job.tenant = job.user.empty() ? "default" : job.user;
      job.status = std::string(get(c_status));
      job.id = std::string(get(c_id));
      if (job.id.empty()) job.id = fmt::format("line{}", line_no);
      prev_submit = job.submit;
      min_submit = std::min(min_submit, job.submit);
      trace.jobs.push_back(std::move(job));
      return Status::Ok();
    }();
    if (!row_status.ok() && format.strict) return row_status;
  }
  if (big_time >= 0 && unit >= 1) {  // with --time-unit us there is no finer unit to suggest
    trace.notes.push_back(fmt::format(
        "{}:{}: read as {}, the {} time {:.0f} is past the year 5000; if the trace's times are {}, give "
        "--time-unit {}",
        source, big_time_line, unit >= 1000 ? "seconds" : "milliseconds", big_time_key, big_time,
        unit >= 1000 ? "milliseconds" : "microseconds", unit >= 1000 ? "ms" : "us"));
  }
  if (!trace.jobs.empty()) {
    trace.origin = min_submit;
    for (TraceJob& j : trace.jobs) j.submit -= min_submit;
  }
  return trace;
}

Result<Trace> LoadTrace(const std::string& path, const TraceFormat& format) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return InvalidArgument(path + ": is a directory; --trace takes a CSV file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound(path + ": cannot open trace file");
  std::stringstream buf;
  buf << in.rdbuf();
  if (in.bad()) return InvalidArgument(path + ": read error");
  std::string text = buf.str();
  return ParseTrace(text, path, format);
}

void KeepEarliest(Trace* trace, int64_t n) {
  std::vector<TraceJob>& jobs = trace->jobs;
  if (n <= 0 || static_cast<int64_t>(jobs.size()) <= n) return;
  std::vector<std::pair<core::Time, size_t>> keyed(jobs.size());
  for (size_t j = 0; j < jobs.size(); ++j) keyed[j] = {jobs[j].submit, j};
  std::nth_element(keyed.begin(), keyed.begin() + (n - 1), keyed.end());
  std::vector<size_t> keep(static_cast<size_t>(n));
  for (size_t k = 0; k < keep.size(); ++k) keep[k] = keyed[k].second;
  std::sort(keep.begin(), keep.end());  // file order
  std::vector<TraceJob> out;
  out.reserve(keep.size());
  for (size_t j : keep) out.push_back(std::move(jobs[j]));
  jobs = std::move(out);
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
