#include "server/history.h"

#include <algorithm>
#include <vector>

#include "core/quantity.h"

namespace artel::server {
namespace {

double Units(const nlohmann::json& e, const char* key) {
  if (!e.is_object() || !e.contains(key)) return 0;
  const auto& v = e[key];
  if (v.is_number()) return v.get<double>();
  if (!v.is_string()) return 0;
  auto q = core::ParseQuantity(v.get<std::string>());
  return q.ok() ? static_cast<double>(*q) / core::kMilli : 0;
}

std::string Str(const nlohmann::json& o, const char* key) {
  auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
}

using Entry = HistoryEntry;

void Collect(const nlohmann::json& list, const char* kind, const char* parent_key, const char* nominal_key,
             std::vector<Entry>* out) {
  if (!list.is_object() || !list.contains("items") || !list["items"].is_array()) return;
  for (const auto& o : list["items"]) {
    if (!o.is_object() || !o.contains("resources") || !o["resources"].is_array()) continue;
    for (const auto& r : o["resources"]) {
      if (!r.is_object()) continue;
      std::string res = Str(r, "resource");
      if (res.rfind("nvidia.com/", 0) != 0) continue;
      Entry e;
      e.kind = kind;
      e.name = Str(o, "name");
      e.parent = Str(o, parent_key);
      e.flavor = Str(r, "flavor");
      e.resource = res;
      e.nominal = Units(r, nominal_key);
      e.used = Units(r, "usage");
      e.borrowed = Units(r, "borrowed");
      if (r.contains("lendingLimit")) e.lend_limit = Units(r, "lendingLimit");
      out->push_back(std::move(e));
    }
  }
}

}  // namespace

void DeriveLent(std::vector<HistoryEntry>* entries_ptr) {
  std::vector<HistoryEntry>& entries = *entries_ptr;
  // Lent: within each parent cohort, per flavor and resource, what the
  // members borrow less what the cohort itself borrows from above is lent
  // by the members with unused guarantee, in proportion to it.
  struct Group {
    double borrowed = 0, unused = 0;
  };
  std::map<std::tuple<std::string, std::string, std::string>, Group> groups;
  std::map<std::tuple<std::string, std::string, std::string>, double> cohort_borrowed;
  auto unused = [](const HistoryEntry& e) {
    double u = std::max(0.0, e.nominal - e.used);
    return e.lend_limit >= 0 ? std::min(u, e.lend_limit) : u;
  };
  for (const HistoryEntry& e : entries) {
    if (e.kind == "Cohort") cohort_borrowed[{e.name, e.flavor, e.resource}] = e.borrowed;
    if (e.parent.empty()) continue;
    Group& g = groups[{e.parent, e.flavor, e.resource}];
    g.borrowed += e.borrowed;
    g.unused += unused(e);
  }
  for (HistoryEntry& e : entries) {
    if (e.parent.empty()) continue;
    auto key = std::make_tuple(e.parent, e.flavor, e.resource);
    const Group& g = groups[key];
    auto cb = cohort_borrowed.find(key);
    double pool = std::max(0.0, g.borrowed - (cb == cohort_borrowed.end() ? 0.0 : cb->second));
    double mine = unused(e);
    if (pool > 0 && g.unused > 0) e.lent = std::min(mine, pool * mine / g.unused);
  }
}

UsageHistory::UsageHistory(HistoryOptions options) : options_(options) {
  options_.interval_ms = std::max<int64_t>(1, options_.interval_ms);
  options_.capacity = std::max<size_t>(1, options_.capacity);
}

bool UsageHistory::MaybeSample(int64_t now_ms, const Json& cluster_queues, const Json& cohorts) {
  std::vector<Entry> entries;
  Collect(cluster_queues, "ClusterQueue", "cohort", "nominal", &entries);
  Collect(cohorts, "Cohort", "parent", "subtreeQuota", &entries);

  DeriveLent(&entries);

  std::lock_guard<std::mutex> lock(mu_);
  if (sampled_ && now_ms < last_ms_ + options_.interval_ms) return false;
  sampled_ = true;
  last_ms_ = now_ms;
  for (const Entry& e : entries) {
    Series& s = series_[{e.kind, e.name, e.flavor, e.resource}];
    s.parent = e.parent;
    s.points.push_back({now_ms, static_cast<float>(e.nominal), static_cast<float>(e.used),
                        static_cast<float>(e.borrowed), static_cast<float>(e.lent)});
    while (s.points.size() > options_.capacity) s.points.pop_front();
  }
  // A series whose queue or flavor is gone ages out with the ring.
  for (auto it = series_.begin(); it != series_.end();) {
    auto& pts = it->second.points;
    while (!pts.empty() &&
           pts.front().t_ms < now_ms - options_.interval_ms * static_cast<int64_t>(options_.capacity))
      pts.pop_front();
    it = pts.empty() ? series_.erase(it) : std::next(it);
  }
  return true;
}

UsageHistory::Json UsageHistory::ToJson(int64_t since_ms) const {
  std::lock_guard<std::mutex> lock(mu_);
  Json out = Json::array();
  for (const auto& [key, s] : series_) {
    HistorySeriesJson js;
    for (const Point& p : s.points) {
      if (p.t_ms >= since_ms) js.Add(p.t_ms, p.nominal, p.used, p.borrowed, p.lent);
    }
    out.push_back(
        js.Finish(std::get<0>(key), std::get<1>(key), s.parent, std::get<2>(key), std::get<3>(key)));
  }
  return Json{{"kind", "UsageHistory"},
              {"intervalSeconds", static_cast<double>(options_.interval_ms) / 1000.0},
              {"capacity", options_.capacity},
              {"series", out}};
}

size_t UsageHistory::series() const {
  std::lock_guard<std::mutex> lock(mu_);
  return series_.size();
}

size_t UsageHistory::points() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const auto& [k, s] : series_) n += s.points.size();
  return n;
}

void HistorySeriesJson::Add(int64_t t_ms, double nominal, double used, double borrowed, double lent) {
  t_.push_back(static_cast<double>(t_ms) / 1000.0);
  nominal_.push_back(nominal);
  used_.push_back(used);
  borrowed_.push_back(borrowed);
  lent_.push_back(lent);
}

nlohmann::json HistorySeriesJson::Finish(const std::string& kind, const std::string& name,
                                         const std::string& parent, const std::string& flavor,
                                         const std::string& resource) {
  return {{"kind", kind},
          {"name", name},
          {kind == "Cohort" ? "parent" : "cohort", parent},
          {"flavor", flavor},
          {"resource", resource},
          {"t", std::move(t_)},
          {"nominal", std::move(nominal_)},
          {"used", std::move(used_)},
          {"borrowed", std::move(borrowed_)},
          {"lent", std::move(lent_)}};
}

}  // namespace artel::server
