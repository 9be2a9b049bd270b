// A small writer for the Prometheus text exposition format (version 0.0.4).
//
// Debian bookworm packages no maintained C++ Prometheus client
// (libprometheus-cpp-dev is absent), so arteld renders `/metrics` itself:
// the daemon computes every value under its lock and hands families to this
// writer. Families are emitted with `# HELP` and `# TYPE` once each, label
// values are escaped (`\\`, `\"`, `\n`), and values print in the shortest
// exact form (`+Inf`, `NaN` as Prometheus spells them). `Histogram`
// accumulates observations into fixed cumulative buckets.
//
// Thread-safety: `PromWriter` is single-threaded. `Histogram` is a plain
// value; callers guard it with their own lock.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace artel::server {

using Labels = std::vector<std::pair<std::string, std::string>>;

class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds = DefaultBounds());
  void Observe(double v);
  static std::vector<double> DefaultBounds();  // 5ms .. 60s, roughly x2.5

  const std::vector<double>& bounds() const { return bounds_; }
  const std::vector<uint64_t>& counts() const { return counts_; }  // per bucket, not cumulative
  double sum() const { return sum_; }
  uint64_t count() const { return count_; }
  // The q-quantile (0..1) estimated by linear interpolation in its bucket.
  double Quantile(double q) const;

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // size bounds_ + 1 (last = +Inf)
  double sum_ = 0;
  uint64_t count_ = 0;
};

class PromWriter {
 public:
  // Starts a family; `type` is counter, gauge or histogram.
  void Family(const std::string& name, const std::string& type, const std::string& help);
  void Sample(const std::string& name, const Labels& labels, double value);
  // Writes `<name>_bucket`, `_sum` and `_count` for a histogram family.
  void WriteHistogram(const std::string& name, const Labels& labels, const Histogram& h);

  const std::string& text() const { return out_; }
  static std::string FormatValue(double v);
  static std::string EscapeLabel(const std::string& v);

 private:
  std::string out_;
  std::vector<std::string> families_;
};

}  // namespace artel::server
