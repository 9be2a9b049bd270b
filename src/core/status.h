// Status and Result: the error model of Artel.
//
// Expected failures (bad input, dangling references, conflicts, not found) are
// returned as a `Status` or a `Result<T>`; they never throw across module
// boundaries and never abort. A `Status` carries a machine-readable `code`, a
// one-line human `message`, and, when the failure comes from a document, the
// `field` path (for example `spec.resourceGroups[0].flavors[1].name`) and the
// source position (`file:line:column`, 1-based).
//
// Thread-safety: plain values; safe to copy between threads.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace artel {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,
  kNotFound,
  kAlreadyExists,
  kFailedPrecondition,
  kPermissionDenied,
  kUnauthenticated,
  kResourceExhausted,
  kInternal,
};

const char* StatusCodeName(StatusCode code);

struct SourcePos {
  std::string file;
  int line = 0;    // 1-based; 0 = unknown
  int column = 0;  // 1-based; 0 = unknown
  bool known() const { return line > 0; }
  std::string ToString() const;
};

class Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  const std::string& field() const { return field_; }
  const SourcePos& pos() const { return pos_; }

  Status& WithField(std::string field) {
    field_ = std::move(field);
    return *this;
  }
  Status& WithPos(SourcePos pos) {
    pos_ = std::move(pos);
    return *this;
  }

  // "file:line:col: field: message" with the parts that are known.
  std::string ToString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
  std::string field_;
  SourcePos pos_;
};

inline Status InvalidArgument(std::string msg) { return Status(StatusCode::kInvalidArgument, std::move(msg)); }
inline Status NotFound(std::string msg) { return Status(StatusCode::kNotFound, std::move(msg)); }
inline Status AlreadyExists(std::string msg) { return Status(StatusCode::kAlreadyExists, std::move(msg)); }
inline Status FailedPrecondition(std::string msg) {
  return Status(StatusCode::kFailedPrecondition, std::move(msg));
}

// Result<T>: either a value or a non-ok Status.
template <typename T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}           // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {}    // NOLINT(google-explicit-constructor)
  bool ok() const { return std::holds_alternative<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T& value() & { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }
  // The error; an OK status when a value is held.
  const Status& status() const& {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  Status status() && { return ok() ? Status() : std::get<Status>(std::move(v_)); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace artel
