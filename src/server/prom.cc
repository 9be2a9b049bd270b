#include "server/prom.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace artel::server {

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

std::vector<double> Histogram::DefaultBounds() {
  return {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
}

void Histogram::Observe(double v) {
  size_t i = std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin();
  ++counts_[i];
  sum_ += v;
  ++count_;
}

double Histogram::Quantile(double q) const {
  if (count_ == 0) return 0;
  double rank = q * static_cast<double>(count_);
  uint64_t cum = 0;
  for (size_t i = 0; i < counts_.size(); ++i) {
    if (static_cast<double>(cum + counts_[i]) >= rank && counts_[i] > 0) {
      double lo = i == 0 ? 0 : bounds_[i - 1];
      double hi = i < bounds_.size() ? bounds_[i] : (bounds_.empty() ? 0 : bounds_.back());
      double frac = (rank - static_cast<double>(cum)) / static_cast<double>(counts_[i]);
      return lo + (hi - lo) * std::clamp(frac, 0.0, 1.0);
    }
    cum += counts_[i];
  }
  return bounds_.empty() ? 0 : bounds_.back();
}

std::string PromWriter::FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0f", v);
    return buf;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  // Prefer the shortest representation that round-trips.
  for (int prec = 1; prec <= 17; ++prec) {
    char tmp[32];
    std::snprintf(tmp, sizeof tmp, "%.*g", prec, v);
    if (std::strtod(tmp, nullptr) == v) return tmp;
  }
  return buf;
}

std::string PromWriter::EscapeLabel(const std::string& v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

void PromWriter::Family(const std::string& name, const std::string& type, const std::string& help) {
  if (std::find(families_.begin(), families_.end(), name) != families_.end()) return;
  families_.push_back(name);
  out_ += "# HELP " + name + " ";
  for (char c : help) {
    if (c == '\\') {
      out_ += "\\\\";
    } else if (c == '\n') {
      out_ += "\\n";
    } else {
      out_.push_back(c);
    }
  }
  out_ += "\n# TYPE " + name + " " + type + "\n";
}

namespace {
std::string RenderLabels(const Labels& labels) {
  if (labels.empty()) return "";
  std::string s = "{";
  for (size_t i = 0; i < labels.size(); ++i) {
    if (i) s += ",";
    s += labels[i].first + "=\"" + PromWriter::EscapeLabel(labels[i].second) + "\"";
  }
  return s + "}";
}
}  // namespace

void PromWriter::Sample(const std::string& name, const Labels& labels, double value) {
  out_ += name + RenderLabels(labels) + " " + FormatValue(value) + "\n";
}

void PromWriter::WriteHistogram(const std::string& name, const Labels& labels, const Histogram& h) {
  uint64_t cum = 0;
  for (size_t i = 0; i <= h.bounds().size(); ++i) {
    cum += h.counts()[i];
    Labels l = labels;
    l.emplace_back("le", i < h.bounds().size() ? FormatValue(h.bounds()[i]) : "+Inf");
    Sample(name + "_bucket", l, static_cast<double>(cum));
  }
  Sample(name + "_sum", labels, h.sum());
  Sample(name + "_count", labels, static_cast<double>(h.count()));
}

}  // namespace artel::server
