#include "server/prom_history.h"

#include <httplib.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <regex>
#include <tuple>
#include <vector>

#include "server/history.h"

namespace artel::server {
namespace {

using Json = nlohmann::json;

// The only PromQL arteld sends: fixed text, no caller input.
constexpr const char* kQueries[3] = {
    "artel_flavor_guaranteed_gpus",
    "artel_flavor_used_gpus",
    "artel_flavor_borrowed_gpus",
};

std::string Label(const Json& metric, const char* key) {
  auto it = metric.find(key);
  return it != metric.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

Status PrometheusHistory::ValidateUrl(const std::string& url) {
  static const std::regex re(R"(^http://[A-Za-z0-9.\-]+(:[0-9]{1,5})?/?$)");
  if (!std::regex_match(url, re))
    return InvalidArgument("--prometheus-url must be http://host:port (no path), got '" + url + "'");
  return Status();
}

PrometheusHistory::Json PrometheusHistory::FromMatrices(const Json& guaranteed, const Json& used,
                                                        const Json& borrowed, double step_s) {
  // (kind, name, flavor, resource) -> parent and time -> entry values.
  using Key = std::tuple<std::string, std::string, std::string, std::string>;
  struct Series {
    std::string parent;
    std::map<int64_t, HistoryEntry> at;  // by time in ms
  };
  std::map<Key, Series> series;
  const Json* matrices[3] = {&guaranteed, &used, &borrowed};
  for (int q = 0; q < 3; ++q) {
    if (!matrices[q]->is_array()) continue;
    for (const Json& r : *matrices[q]) {
      if (!r.is_object() || !r.contains("metric") || !r.contains("values") || !r["values"].is_array())
        continue;
      const Json& m = r["metric"];
      std::string kind = Label(m, "kind") == "cohort" ? "Cohort" : "ClusterQueue";
      Key key{kind, Label(m, "team"), Label(m, "flavor"), Label(m, "resource")};
      if (std::get<1>(key).empty() || std::get<3>(key).rfind("nvidia.com/", 0) != 0) continue;
      Series& s = series[key];
      s.parent = Label(m, "parent");
      for (const Json& v : r["values"]) {
        if (!v.is_array() || v.size() != 2 || !v[0].is_number() || !v[1].is_string()) continue;
        int64_t t_ms = std::llround(v[0].get<double>() * 1000);
        double x = std::strtod(v[1].get<std::string>().c_str(), nullptr);
        if (!std::isfinite(x)) x = 0;
        HistoryEntry& e = s.at[t_ms];
        e.kind = std::get<0>(key);
        e.name = std::get<1>(key);
        e.parent = s.parent;
        e.flavor = std::get<2>(key);
        e.resource = std::get<3>(key);
        (q == 0 ? e.nominal : q == 1 ? e.used : e.borrowed) = x;
      }
    }
  }
  // Lent per instant, over all series present at that instant.
  std::map<int64_t, std::vector<HistoryEntry*>> by_time;
  for (auto& [key, s] : series)
    for (auto& [t, e] : s.at) by_time[t].push_back(&e);
  for (auto& [t, ptrs] : by_time) {
    std::vector<HistoryEntry> copy;
    for (HistoryEntry* e : ptrs) copy.push_back(*e);
    DeriveLent(&copy);
    for (size_t i = 0; i < ptrs.size(); ++i) ptrs[i]->lent = copy[i].lent;
  }
  Json out = Json::array();
  for (const auto& [key, s] : series) {
    HistorySeriesJson js;
    for (const auto& [t_ms, e] : s.at) js.Add(t_ms, e.nominal, e.used, e.borrowed, e.lent);
    out.push_back(
        js.Finish(std::get<0>(key), std::get<1>(key), s.parent, std::get<2>(key), std::get<3>(key)));
  }
  return Json{
      {"kind", "UsageHistory"}, {"source", "prometheus"}, {"intervalSeconds", step_s}, {"series", out}};
}

Status PrometheusHistory::Query(double start_s, double end_s, double step_s, Json* out) const {
  std::string base = url_;
  if (!base.empty() && base.back() == '/') base.pop_back();
  httplib::Client cli(base);
  const time_t sec = timeout_ms_ / 1000;
  const time_t usec = (timeout_ms_ % 1000) * 1000;
  cli.set_connection_timeout(sec, usec);
  cli.set_read_timeout(sec, usec);
  cli.set_write_timeout(sec, usec);
  Json results[3];
  for (int q = 0; q < 3; ++q) {
    httplib::Params params{{"query", kQueries[q]},
                           {"start", std::to_string(start_s)},
                           {"end", std::to_string(end_s)},
                           {"step", std::to_string(step_s)}};
    auto res = cli.Post("/api/v1/query_range", params);
    if (!res)
      return Status(StatusCode::kInternal,
                    "Prometheus at " + base + " did not answer: " + httplib::to_string(res.error()));
    if (res->status != 200)
      return Status(StatusCode::kInternal,
                    "Prometheus at " + base + " answered HTTP " + std::to_string(res->status));
    Json body = Json::parse(res->body, nullptr, /*allow_exceptions=*/false);
    if (!body.is_object() || body.value("status", "") != "success" || !body.contains("data") ||
        !body["data"].is_object() || !body["data"].contains("result"))
      return Status(StatusCode::kInternal, "Prometheus at " + base + " gave an unexpected answer");
    results[q] = body["data"]["result"];
  }
  *out = FromMatrices(results[0], results[1], results[2], step_s);
  return Status();
}

}  // namespace artel::server
