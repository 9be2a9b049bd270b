#include "server/log.h"

#include <chrono>
#include <ctime>
#include <nlohmann/json.hpp>

namespace artel::server {
namespace {

const char* LevelName(LogLevel l) {
  switch (l) {
    case LogLevel::kDebug: return "debug";
    case LogLevel::kInfo: return "info";
    case LogLevel::kWarn: return "warn";
    case LogLevel::kError: return "error";
  }
  return "info";
}

std::string Timestamp() {
  auto now = std::chrono::system_clock::now();
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
  std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[96];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms % 1000));
  return buf;
}

// logfmt value: bare when it is a simple token, otherwise quoted with
// backslash escapes (control characters become \n, \t or \xNN).
void AppendLogfmtValue(std::string* out, std::string_view v) {
  bool bare = !v.empty();
  for (char c : v) {
    auto u = static_cast<unsigned char>(c);
    if (u <= ' ' || c == '"' || c == '=' || c == '\\' || u >= 0x7f) {
      bare = false;
      break;
    }
  }
  if (bare) {
    out->append(v);
    return;
  }
  out->push_back('"');
  for (char c : v) {
    auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out->push_back('\\');
      out->push_back(c);
    } else if (c == '\n') {
      out->append("\\n");
    } else if (c == '\t') {
      out->append("\\t");
    } else if (u < 0x20 || u == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", u);
      out->append(buf);
    } else {
      out->push_back(c);
    }
  }
  out->push_back('"');
}

}  // namespace

std::string Logger::Format_(LogLevel level, std::string_view msg, std::initializer_list<Field> fields) const {
  if (format_ == Format::kJson) {
    nlohmann::json j;
    j["ts"] = Timestamp();
    j["level"] = LevelName(level);
    j["msg"] = std::string(msg);
    for (const auto& [k, v] : fields) j[std::string(k)] = std::string(v);
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  std::string line = "ts=" + Timestamp() + " level=" + LevelName(level) + " msg=";
  AppendLogfmtValue(&line, msg);
  for (const auto& [k, v] : fields) {
    line.push_back(' ');
    line.append(k);
    line.push_back('=');
    AppendLogfmtValue(&line, v);
  }
  return line;
}

void Logger::Log(LogLevel level, std::string_view msg, std::initializer_list<Field> fields) {
  if (level < min_level_) return;
  std::string line = Format_(level, msg, fields);
  line.push_back('\n');
  std::lock_guard<std::mutex> lock(mu_);
  std::fwrite(line.data(), 1, line.size(), out_);
  std::fflush(out_);
}

}  // namespace artel::server
