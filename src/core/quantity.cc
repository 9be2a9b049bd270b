#include "core/quantity.h"

#include <cctype>

namespace artel::core {
namespace {

using i128 = __int128;

constexpr i128 kMax = static_cast<i128>(std::numeric_limits<Amount>::max());

struct Suffix {
  const char* text;
  int base;  // 2 or 10
  int exp;   // power of base
};

constexpr Suffix kSuffixes[] = {
    {"Ki", 2, 10}, {"Mi", 2, 20}, {"Gi", 2, 30}, {"Ti", 2, 40}, {"Pi", 2, 50},
    {"Ei", 2, 60}, {"n", 10, -9}, {"u", 10, -6}, {"m", 10, -3}, {"k", 10, 3},
    {"M", 10, 6},  {"G", 10, 9},  {"T", 10, 12}, {"P", 10, 15}, {"E", 10, 18},
};

}  // namespace

Result<Amount> ParseQuantity(std::string_view text) {
  auto bad = [&](const std::string& why) {
    return InvalidArgument("invalid quantity \"" + std::string(text) + "\": " + why +
                           " (expected Kubernetes notation such as 500m, 2, 1.5, 36Gi)");
  };
  std::string_view s = text;
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  if (s.empty()) return bad("empty");
  bool neg = false;
  size_t i = 0;
  if (s[i] == '+' || s[i] == '-') {
    neg = s[i] == '-';
    ++i;
  }
  i128 mant = 0;
  int frac_digits = 0;
  int digits = 0;
  bool dot = false;
  bool dropped_nonzero = false;  // digits beyond int128 precision; they round up
  for (; i < s.size(); ++i) {
    char c = s[i];
    if (c == '.') {
      if (dot) return bad("two decimal points");
      dot = true;
      continue;
    }
    if (!std::isdigit(static_cast<unsigned char>(c))) break;
    if (mant < (kMax * 1000)) {  // keep precision; excess digits only matter for overflow
      mant = mant * 10 + (c - '0');
      if (dot) ++frac_digits;
    } else if (!dot) {
      return bad("too large");
    } else if (c != '0') {
      dropped_nonzero = true;
    }
    ++digits;
  }
  if (digits == 0) return bad("no digits");
  std::string_view rest = s.substr(i);
  int base = 10;
  int exp = 0;
  if (!rest.empty()) {
    if (rest[0] == 'e' || rest[0] == 'E') {
      if (rest.size() == 1) {
        // Plain "E" suffix (exa).
        exp = 18;
      } else {
        size_t j = 1;
        bool eneg = false;
        if (rest[j] == '+' || rest[j] == '-') {
          eneg = rest[j] == '-';
          ++j;
        }
        if (j >= rest.size()) return bad("bad exponent");
        int e = 0;
        for (; j < rest.size(); ++j) {
          if (!std::isdigit(static_cast<unsigned char>(rest[j]))) return bad("bad exponent");
          e = e * 10 + (rest[j] - '0');
          if (e > 100) return bad("exponent too large");
        }
        exp = eneg ? -e : e;
      }
    } else {
      bool found = false;
      for (const Suffix& suf : kSuffixes) {
        if (rest == suf.text) {
          base = suf.base;
          exp = suf.exp;
          found = true;
          break;
        }
      }
      if (!found) return bad("unknown suffix \"" + std::string(rest) + "\"");
    }
  }
  // value = mant * 10^-frac_digits * base^exp, in milli-units: * 1000.
  i128 num = mant;
  i128 den = 1;
  int dec_exp = 3 - frac_digits;  // powers of ten
  if (base == 10) dec_exp += exp;
  auto mul_checked = [&](i128& v, i128 f) -> bool {
    if (v != 0 && f > (kMax * 1000) / (v < 0 ? -v : v)) return false;
    v *= f;
    return true;
  };
  if (base == 2) {
    if (!mul_checked(num, static_cast<i128>(1) << exp)) return bad("too large");
  }
  while (dec_exp > 0) {
    if (!mul_checked(num, 10)) return bad("too large");
    --dec_exp;
  }
  while (dec_exp < 0) {
    den *= 10;
    ++dec_exp;
    if (den > num && den > kMax) {
      // Anything this small rounds up to one milli-unit (or zero).
      num = num == 0 ? 0 : 1;
      den = 1;
      break;
    }
  }
  i128 v = (num + den - 1) / den;  // round up like Kubernetes MilliValue()
  if (dropped_nonzero && num % den == 0 && !neg) v += 1;
  if (v > kMax) return bad("too large");
  return static_cast<Amount>(neg ? -v : v);
}

std::string FormatQuantity(Amount milli) {
  if (milli == 0) return "0";
  bool neg = milli < 0;
  unsigned long long v =
      neg ? 0ULL - static_cast<unsigned long long>(milli) : static_cast<unsigned long long>(milli);
  std::string sign = neg ? "-" : "";
  if (v % 1000 != 0) return sign + std::to_string(v) + "m";
  unsigned long long units = v / 1000;
  static const char* kBin[] = {"Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
  int idx = -1;
  unsigned long long u = units;
  while (u >= 1024 && u % 1024 == 0 && idx < 5) {
    u /= 1024;
    ++idx;
  }
  if (idx >= 0) return sign + std::to_string(u) + kBin[idx];
  return sign + std::to_string(units);
}

}  // namespace artel::core
