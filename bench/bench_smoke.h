// Smoke mode of the benchmark programs (issue 18 item 5).
//
// With ARTEL_BENCH_SMOKE=1 in the environment, every bench_* program runs
// its benchmarks on small shapes with one iteration, so that `make test`
// (CTest label `bench`) checks that each still builds, runs and reports
// under the sanitizers, in seconds. Its figures then mean nothing: the
// numbers in docs/performance.md come from the full shapes (`make bench`).
//
// Thread-safety: Smoke() reads the environment once, on first use; the
// value is immutable afterwards.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace artel::bench {

inline bool Smoke() {
  static const bool smoke = [] {
    const char* v = std::getenv("ARTEL_BENCH_SMOKE");
    return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
  }();
  return smoke;
}

// `full` normally, `small` in smoke mode.
template <typename T>
T Shrink(T full, T small) {
  return Smoke() ? small : full;
}

// Says so once, at program start, in every program that includes this header.
inline const bool kSmokeAnnounced = [] {
  if (Smoke())
    std::fprintf(stderr, "ARTEL_BENCH_SMOKE: small shapes, one iteration; the figures below mean nothing\n");
  return true;
}();

}  // namespace artel::bench
