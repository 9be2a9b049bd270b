#include "sim/duration.h"

#include <cctype>
#include <limits>

namespace artel::sim {
namespace {

struct Unit {
  std::string_view name;
  core::Time ms;
};

// Largest first; the parser requires this order in the text as well.
constexpr Unit kUnits[] = {{"h", 3600 * 1000}, {"m", 60 * 1000}, {"s", 1000}, {"ms", 1}};

}  // namespace

Result<core::Time> ParseDuration(std::string_view text) {
  auto bad = [&](const std::string& why) {
    return InvalidArgument("invalid duration \"" + std::string(text) + "\": " + why +
                           " (expected forms like 0s, 90s, 5m, 1h30m, 250ms)");
  };
  if (text.empty()) return bad("empty");
  if (text == "0") return core::Time{0};
  core::Time total = 0;
  size_t i = 0;
  size_t next_unit = 0;  // index into kUnits of the smallest unit still allowed
  while (i < text.size()) {
    size_t start = i;
    core::Time value = 0;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
      if (value > std::numeric_limits<core::Time>::max() / 10 - 9) return bad("too large");
      value = value * 10 + (text[i] - '0');
      ++i;
    }
    if (i == start) return bad("expected a number at \"" + std::string(text.substr(i)) + "\"");
    size_t unit_start = i;
    while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
    std::string_view unit = text.substr(unit_start, i - unit_start);
    if (unit.empty()) return bad("missing unit after " + std::string(text.substr(start, i - start)));
    size_t u = 0;
    while (u < std::size(kUnits) && kUnits[u].name != unit) ++u;
    if (u == std::size(kUnits)) return bad("unknown unit \"" + std::string(unit) + "\"");
    if (u < next_unit) return bad("units must go from largest to smallest, each once");
    next_unit = u + 1;
    if (value > std::numeric_limits<core::Time>::max() / kUnits[u].ms) return bad("too large");
    core::Time part = value * kUnits[u].ms;
    if (total > std::numeric_limits<core::Time>::max() - part) return bad("too large");
    total += part;
  }
  return total;
}

std::string FormatDuration(core::Time ms) {
  if (ms == 0) return "0s";
  std::string out;
  if (ms < 0) {
    out = "-";
    ms = -ms;
  }
  for (const Unit& unit : kUnits) {
    if (ms >= unit.ms) {
      out += std::to_string(ms / unit.ms);
      out += unit.name;
      ms %= unit.ms;
    }
  }
  return out;
}

}  // namespace artel::sim
