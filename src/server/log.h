// Logger: arteld's structured log, one event per line on stderr, in logfmt
// (`ts=... level=info msg="..." workload=ns/name queue=...`) or JSON.
//
// Callers pass fields as key/value pairs; values are quoted and escaped so a
// user-controlled name can never forge a second field or line. Secrets
// (bearer tokens) are never passed in: the server logs the user name that a
// token maps to, never the token.
//
// Thread-safety: `Log` is safe to call from many threads; lines never
// interleave.
#pragma once

#include <cstdio>
#include <initializer_list>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

namespace artel::server {

enum class LogLevel { kDebug, kInfo, kWarn, kError };

class Logger {
 public:
  enum class Format { kLogfmt, kJson };
  using Field = std::pair<std::string_view, std::string_view>;

  explicit Logger(Format format = Format::kLogfmt, LogLevel min_level = LogLevel::kInfo, FILE* out = stderr)
      : format_(format), min_level_(min_level), out_(out) {}

  void Log(LogLevel level, std::string_view msg, std::initializer_list<Field> fields = {});
  void Info(std::string_view msg, std::initializer_list<Field> fields = {}) {
    Log(LogLevel::kInfo, msg, fields);
  }
  void Warn(std::string_view msg, std::initializer_list<Field> fields = {}) {
    Log(LogLevel::kWarn, msg, fields);
  }
  void Error(std::string_view msg, std::initializer_list<Field> fields = {}) {
    Log(LogLevel::kError, msg, fields);
  }
  void Debug(std::string_view msg, std::initializer_list<Field> fields = {}) {
    Log(LogLevel::kDebug, msg, fields);
  }

  // Renders one line without writing it (for tests).
  std::string Format_(LogLevel level, std::string_view msg, std::initializer_list<Field> fields) const;

 private:
  Format format_;
  LogLevel min_level_;
  FILE* out_;
  std::mutex mu_;
};

}  // namespace artel::server
