// PrometheusHistory: usage history for ranges longer than arteld's
// in-memory ring (server/history.h), read back from a Prometheus server that
// scrapes arteld (issue 16: "with Prometheus configured, the UI can read
// longer ranges from it"). arteld runs the queries itself because the web
// UI's content security policy allows same-origin requests only.
//
// The PromQL is fixed: three range queries over arteld's own per-flavor
// gauges (artel_flavor_{guaranteed,used,borrowed}_gpus, written by
// loop/control_loop.cc). No caller text ever goes into a query; the caller
// only chooses the start, end and step, which are numbers. The result has
// the same JSON shape as UsageHistory::ToJson, with `lent` derived per
// instant as the ring derives it (DeriveLent).
//
// Thread-safety: Query is const and safe from many threads (each call opens
// its own HTTP client).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/status.h"

namespace artel::server {

class PrometheusHistory {
 public:
  using Json = nlohmann::json;

  // `url` is "http://host:port" (a trailing "/" is allowed; no path,
  // query or https). Returns InvalidArgument otherwise.
  static Status ValidateUrl(const std::string& url);

  PrometheusHistory(std::string url, int timeout_ms) : url_(std::move(url)), timeout_ms_(timeout_ms) {}
  const std::string& url() const { return url_; }

  // Runs the three range queries for [start_s, end_s] at `step_s` and fills
  // `out` with {kind: UsageHistory, source: prometheus, intervalSeconds:
  // step, series: [...]}. An unreachable or failing Prometheus gives an
  // Internal status that names it and the cause.
  Status Query(double start_s, double end_s, double step_s, Json* out) const;

  // The conversion alone (for tests): the `data.result` arrays of the
  // guaranteed, used and borrowed queries to the history JSON.
  static Json FromMatrices(const Json& guaranteed, const Json& used, const Json& borrowed, double step_s);

 private:
  std::string url_;
  int timeout_ms_;
};

}  // namespace artel::server
