// UsageHistory: a bounded ring of GPU usage samples per ClusterQueue and per
// cohort, per flavor and resource, so that the web UI's charts open with the
// last hours instead of starting at page load (issue 16; docs/ui.md,
// "History"). GET /api/v1/history serves it.
//
// A sample is taken from the same JSON views the API serves
// (`/api/v1/clusterqueues` and `/api/v1/cohorts`), so both modes (standalone
// and Kubernetes) feed it alike and it holds nothing a caller of those views
// could not already read: ClusterQueue and cohort names and quantities, no
// workload names. Only extended resources under "nvidia.com/" (whole GPUs and
// MIG profiles) are kept; unlike flavors and resources are separate series
// and are never added up.
//
// Each series point holds: nominal (the guarantee: a ClusterQueue's
// nominalQuota, a cohort's subtree quota), used, borrowed (beyond the
// guarantee) and lent. The engine does not attribute lending to a lender, so
// "lent" is derived: in each cohort, what its ClusterQueues borrow is shared
// out among the members that leave guarantee unused, in proportion to the
// unused part (capped by it). A cohort's lent is what it lends to its parent
// the same way. The daemon's clock is not read here: the caller passes the
// time of each sample (`MaybeSample(now_ms, ...)`), so a test drives it.
//
// Thread-safety: all methods are safe to call from many threads (one mutex).
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

namespace artel::server {

// One sample of one series (kind ClusterQueue|Cohort, name, parent cohort,
// flavor, resource), in units.
struct HistoryEntry {
  std::string kind, name, parent, flavor, resource;
  double nominal = 0, used = 0, borrowed = 0, lent = 0;
  double lend_limit = -1;  // -1 = none
};

// Fills in `lent` of entries taken at one instant (see above); shared with
// the Prometheus-backed history (server/prom_history.h).
void DeriveLent(std::vector<HistoryEntry>* entries);

// Builds one series of a UsageHistory answer ({kind, name, cohort|parent,
// flavor, resource, t, nominal, used, borrowed, lent}), the shape the ring
// and the Prometheus-backed history (server/prom_history.h) both answer.
class HistorySeriesJson {
 public:
  void Add(int64_t t_ms, double nominal, double used, double borrowed, double lent);
  // kind is ClusterQueue or Cohort; `parent` is written as "cohort" for a
  // ClusterQueue and "parent" for a Cohort.
  nlohmann::json Finish(const std::string& kind, const std::string& name, const std::string& parent,
                        const std::string& flavor, const std::string& resource);

 private:
  nlohmann::json t_ = nlohmann::json::array(), nominal_ = nlohmann::json::array(),
                 used_ = nlohmann::json::array(), borrowed_ = nlohmann::json::array(),
                 lent_ = nlohmann::json::array();
};

struct HistoryOptions {
  int64_t interval_ms = 10000;  // one sample per interval (--history-interval)
  size_t capacity = 8640;       // points kept per series (--history-points): 24 h at 10 s
};

class UsageHistory {
 public:
  using Json = nlohmann::json;
  explicit UsageHistory(HistoryOptions options);

  const HistoryOptions& options() const { return options_; }

  // Records one sample from the API's ClusterQueueList and CohortList
  // objects when `now_ms` is at least one interval after the last sample
  // (the first call always samples). Returns whether it sampled.
  bool MaybeSample(int64_t now_ms, const Json& cluster_queues, const Json& cohorts);

  // {kind: UsageHistory, intervalSeconds, capacity, series: [{kind
  // (ClusterQueue|Cohort), name, cohort (parent), flavor, resource,
  // t: [unix seconds], nominal: [], used: [], borrowed: [], lent: []}]},
  // the points at or after `since_ms` only (0 = all). Quantities in units
  // (GPUs, MIG instances).
  Json ToJson(int64_t since_ms) const;

  // Number of series and of points held (for tests and /metrics).
  size_t series() const;
  size_t points() const;

 private:
  struct Point {
    int64_t t_ms;
    float nominal, used, borrowed, lent;
  };
  struct Series {
    std::string parent;
    std::deque<Point> points;
  };
  // (kind, name, flavor, resource)
  using Key = std::tuple<std::string, std::string, std::string, std::string>;

  HistoryOptions options_;
  mutable std::mutex mu_;
  int64_t last_ms_ = 0;
  bool sampled_ = false;
  std::map<Key, Series> series_;
};

}  // namespace artel::server
