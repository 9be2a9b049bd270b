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

inline Status InvalidArgument(std::string msg) {
  return Status(StatusCode::kInvalidArgument, std::move(msg));
}
inline Status NotFound(std::string msg) { return Status(StatusCode::kNotFound, std::move(msg)); }
inline Status AlreadyExists(std::string msg) { return Status(StatusCode::kAlreadyExists, std::move(msg)); }
inline Status FailedPrecondition(std::string msg) {
  return Status(StatusCode::kFailedPrecondition, std::move(msg));
}

// Result<T>: either a value or a non-ok Status.
template <typename T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}         // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {}  // NOLINT(google-explicit-constructor)
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

// Early return: evaluates `expr` (a Status) once and returns it from the
// enclosing function (which returns Status or Result<T>) when it is not ok.
#define ARTEL_RETURN_IF_ERROR(expr)                                    \
  do {                                                                 \
    if (::artel::Status artel_status_ = (expr); !artel_status_.ok()) { \
      return artel_status_;                                            \
    }                                                                  \
  } while (0)

// Evaluates `expr` (a Result<T>) once; assigns its value to `lhs` (which may
// declare a variable: `ARTEL_ASSIGN_OR_RETURN(auto x, F())`) or returns its
// status from the enclosing function. Expands to more than one statement:
// not for the body of an unbraced if/for.
#define ARTEL_ASSIGN_OR_RETURN(lhs, expr) \
  ARTEL_ASSIGN_OR_RETURN_IMPL_(ARTEL_STATUS_CONCAT_(artel_result_, __LINE__), lhs, expr)
#define ARTEL_STATUS_CONCAT_INNER_(a, b) a##b
#define ARTEL_STATUS_CONCAT_(a, b) ARTEL_STATUS_CONCAT_INNER_(a, b)
#define ARTEL_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) return std::move(tmp).status();     \
  lhs = std::move(tmp).value()
