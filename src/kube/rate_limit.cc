#include "kube/rate_limit.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace artel::kube {

int64_t SteadyMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

TokenBucket::TokenBucket(double qps, int burst, std::function<int64_t()> now_us)
    : now_us_(now_us ? std::move(now_us) : std::function<int64_t()>(SteadyMicros)),
      qps_(qps),
      burst_(std::max(1, burst)),
      tokens_(std::max(1, burst)) {
  last_us_ = now_us_();
}

int64_t TokenBucket::Reserve() {
  if (qps_ <= 0) return 0;
  std::lock_guard<std::mutex> l(mu_);
  int64_t now = now_us_();
  if (now > last_us_) {
    tokens_ = std::min(burst_, tokens_ + static_cast<double>(now - last_us_) * qps_ / 1e6);
    last_us_ = now;
  }
  tokens_ -= 1;
  if (tokens_ >= 0) return 0;
  ++throttled_;
  // The deficit refills at qps tokens per second.
  return std::llround(-tokens_ * 1e6 / qps_);
}

uint64_t TokenBucket::throttled() const {
  std::lock_guard<std::mutex> l(mu_);
  return throttled_;
}

}  // namespace artel::kube
