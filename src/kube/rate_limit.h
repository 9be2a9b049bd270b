// A token bucket for the client-side QPS/burst limit. The clock is injected
// (microseconds, monotonic), so that the unit test needs no sleeps.
//
// Thread-safety: Reserve() may be called from many threads.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>

namespace artel::kube {

class TokenBucket {
 public:
  // qps <= 0: unlimited (Reserve always answers 0). burst < 1 is taken as 1.
  TokenBucket(double qps, int burst, std::function<int64_t()> now_us = nullptr);
  // Takes one token and answers how long (microseconds) the caller must wait
  // before it may send: 0 while the burst lasts, then 1/qps apart. Tokens
  // reserved are never given back, so concurrent callers queue up in order.
  int64_t Reserve();
  // How many reservations had to wait (tests count these instead of timing).
  uint64_t throttled() const;

 private:
  std::function<int64_t()> now_us_;
  double qps_;
  double burst_;
  mutable std::mutex mu_;
  double tokens_;  // may go negative: reservations queued ahead
  int64_t last_us_ = 0;
  uint64_t throttled_ = 0;
};

// Monotonic microseconds (steady_clock).
int64_t SteadyMicros();

}  // namespace artel::kube
