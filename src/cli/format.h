// Output and input helpers of the `artel` client verbs, kept free of I/O so
// that they can be unit-tested (tests/cli/format_test.cc):
//   - ages in tables ("5m", "2h10m", "3d") and RFC 3339 times in JSON/YAML;
//   - a subset of JSONPath for `-o jsonpath=...` and `-o custom-columns=...`;
//   - Kubernetes label selectors for `-l`;
//   - "did you mean" suggestions for misspelt flags, verbs and kinds.
//
// The semantics follow kubectl's (k8s.io/apimachinery duration.HumanDuration,
// labels.Parse, k8s.io/client-go/util/jsonpath); the code is Artel's own.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace artel::cli {

// A duration in seconds as a table age: "45s", "7m5s", "5m", "2h10m", "20h",
// "3d4h", "30d", "2y10d"; "-" for a negative or unknown age.
std::string HumanAge(int64_t seconds);

// Unix milliseconds as RFC 3339 UTC with second precision ("2026-12-01T18:06:08Z").
std::string Rfc3339(int64_t unix_ms);

// Rewrites, in place, every time field of an API object (Unix milliseconds:
// creationTimestamp, admittedAt, startedAt, finishedAt, time) as RFC 3339.
void TimesToRfc3339(nlohmann::json* j);

// ---- JSONPath -------------------------------------------------------------------
// Supported: a template of literal text and `{...}` expressions; in an
// expression, `.field`, `['field']`, `[n]` (negative counts from the end),
// `[*]`, `..field` is NOT supported; `{range EXPR}...{end}` iterates.
// Literal text may hold \n and \t escapes. Anything else is an error that
// names the position and what is supported.
struct JsonPathError {
  std::string message;
};

// Evaluates `tmpl` against `root`; each matched value is printed as text
// (strings bare, other values as compact JSON), several matches of one
// expression separated by a space, as kubectl does. Returns nullopt and sets
// *err on a syntax error or an unsupported construct.
std::optional<std::string> JsonPath(const std::string& tmpl, const nlohmann::json& root, std::string* err);

// Evaluates one expression (".status.phase", "{.status.phase}") against
// `root` and returns the matched values.
std::optional<std::vector<nlohmann::json>> JsonPathValues(const std::string& expr, const nlohmann::json& root,
                                                          std::string* err);

// `-o custom-columns=NAME:.metadata.name,PHASE:.status.phase`.
struct Column {
  std::string header;
  std::string path;
};
std::optional<std::vector<Column>> ParseCustomColumns(const std::string& spec, std::string* err);

// ---- label selectors -----------------------------------------------------------
struct Requirement {
  enum class Op { kEquals, kNotEquals, kIn, kNotIn, kExists, kNotExists };
  std::string key;
  Op op = Op::kExists;
  std::vector<std::string> values;
};
// "a=b,c!=d,e in (x,y),f notin (z),g,!h"; "" selects everything.
std::optional<std::vector<Requirement>> ParseLabelSelector(const std::string& s, std::string* err);
bool MatchesLabels(const std::vector<Requirement>& sel, const std::map<std::string, std::string>& labels);

// ---- suggestions ---------------------------------------------------------------
size_t EditDistance(const std::string& a, const std::string& b);
// The closest candidate when it is close enough to be a likely typo
// (distance at most 2, or at most a third of the word), else "".
std::string Suggest(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace artel::cli
