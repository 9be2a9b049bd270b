// Resource quantities in Kubernetes notation, held as exact integers.
//
// Every amount in the core is an `Amount`: a signed 64-bit count of
// milli-units. `1` cpu is 1000, `500m` is 500, `36Gi` of memory is
// 36 * 2^30 * 1000, one GPU is 1000. Fractions below one milli-unit are
// rounded up, as Kubernetes does when it reads a quantity's milli value.
// Quota arithmetic never uses floating point.
//
// Accepted syntax (Kubernetes `resource.Quantity`): an optional sign, a
// decimal number (`1`, `1.5`, `.5`), then either a binary suffix (`Ki Mi Gi
// Ti Pi Ei`), a decimal suffix (`n u m k M G T P E`) or a decimal exponent
// (`1e3`, `1E-3`). Values whose milli form does not fit in int64 are errors.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "core/status.h"

namespace artel::core {

using Amount = int64_t;  // milli-units

inline constexpr Amount kMilli = 1000;
inline constexpr Amount kUnlimited = std::numeric_limits<Amount>::max() / 4;

// Parses a Kubernetes quantity into milli-units.
Result<Amount> ParseQuantity(std::string_view text);

// Formats milli-units canonically: the shortest exact form among a plain
// integer, an integer with a binary suffix (only for multiples of 1Ki) and
// a milli value (`500m`). Examples: 1000 -> "1", 1500 -> "1500m",
// 36Gi*1000 -> "36Gi".
std::string FormatQuantity(Amount milli);

// Saturating helpers used by quota arithmetic.
inline Amount SatAdd(Amount a, Amount b) {
  Amount r;
  if (__builtin_add_overflow(a, b, &r))
    return a > 0 ? std::numeric_limits<Amount>::max() : std::numeric_limits<Amount>::min();
  return r;
}

}  // namespace artel::core
