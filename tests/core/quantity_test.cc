// Unit tests for `artel::core::ParseQuantity` and `FormatQuantity`
// (src/core/quantity.h): Kubernetes quantity notation held as int64
// milli-units, rounded up below one milli-unit, with overflow reported as an
// error rather than wrapped.
#include "core/quantity.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace artel::core {
namespace {

constexpr Amount kKi = Amount{1} << 10;
constexpr Amount kMi = Amount{1} << 20;
constexpr Amount kGi = Amount{1} << 30;
constexpr Amount kTi = Amount{1} << 40;
constexpr Amount kPi = Amount{1} << 50;

// Parses `text` and fails the test if it is not accepted.
Amount MustParse(const std::string& text) {
  Result<Amount> r = ParseQuantity(text);
  EXPECT_TRUE(r.ok()) << "\"" << text << "\": " << (r.ok() ? "" : r.status().ToString());
  return r.ok() ? *r : std::numeric_limits<Amount>::min();
}

struct Case {
  const char* text;
  Amount milli;
};

TEST(ParseQuantityTest, PlainAndDecimal) {
  const std::vector<Case> cases = {
      {"0", 0},        {"1", 1000},  {"2", 2000},   {"64", 64000},   {"1.5", 1500},
      {".5", 500},     {"0.5", 500}, {"1.", 1000},  {"+1", 1000},    {"-1", -1000},
      {"-1.5", -1500}, {"0.001", 1}, {"007", 7000}, {"1.250", 1250}, {"-0", 0},
  };
  for (const Case& c : cases) EXPECT_EQ(MustParse(c.text), c.milli) << c.text;
}

TEST(ParseQuantityTest, DecimalSuffixes) {
  const std::vector<Case> cases = {
      {"500m", 500},
      {"1m", 1},
      {"1500m", 1500},
      {"1k", 1000 * 1000},
      {"2M", 2'000'000'000},
      {"1G", 1'000'000'000'000},
      {"1T", 1'000'000'000'000'000},
      {"1P", 1'000'000'000'000'000'000},
      {"1000u", 1},
      {"1000000n", 1},
      {"1.5k", 1'500'000},
      {"0.5m", 1},  // below one milli-unit: rounded up
  };
  for (const Case& c : cases) EXPECT_EQ(MustParse(c.text), c.milli) << c.text;
}

TEST(ParseQuantityTest, BinarySuffixes) {
  const std::vector<Case> cases = {
      {"1Ki", kKi * kMilli},
      {"1Mi", kMi * kMilli},
      {"36Gi", 36 * kGi * kMilli},
      {"512Gi", 512 * kGi * kMilli},
      {"1Ti", kTi * kMilli},
      {"1Pi", kPi * kMilli},
      {"1.5Gi", 3 * (kGi / 2) * kMilli},
      {"0.5Ki", 512 * kMilli},
  };
  for (const Case& c : cases) EXPECT_EQ(MustParse(c.text), c.milli) << c.text;
}

TEST(ParseQuantityTest, Exponents) {
  const std::vector<Case> cases = {
      {"1e3", 1000 * 1000}, {"1E3", 1000 * 1000}, {"1e+3", 1000 * 1000}, {"1e0", 1000},
      {"1E-3", 1},          {"1e-3", 1},          {"1.5e3", 1'500'000},  {"15e-1", 1500},
      {"0e100", 0},         {"1e-9", 1},  // rounded up
  };
  for (const Case& c : cases) EXPECT_EQ(MustParse(c.text), c.milli) << c.text;
}

TEST(ParseQuantityTest, RoundsUpBelowOneMilli) {
  EXPECT_EQ(MustParse("0.0001"), 1);
  EXPECT_EQ(MustParse("0.0011"), 2);
  EXPECT_EQ(MustParse("1.0001"), 1001);
  EXPECT_EQ(MustParse("1n"), 1);
  EXPECT_EQ(MustParse("1u"), 1);
  EXPECT_EQ(MustParse("0.000000000000000000000000001"), 1);
  // Negative values round away from zero, as Kubernetes' MilliValue() does.
  EXPECT_EQ(MustParse("-0.0001"), -1);
}

TEST(ParseQuantityTest, TrimsSurroundingWhitespace) { EXPECT_EQ(MustParse("  2  "), 2000); }

TEST(ParseQuantityTest, RejectsInvalidInput) {
  for (const char* text :
       {"",    "   ",   "abc",  "1Zi",  "1..2", "Mi",  "m",    ".",   "-",   "+",     "1e",
        "1e+", "1e3.5", "1 Gi", "1Gi2", "1mi",  "1KI", "0x10", "1,5", "--1", "1.2.3", "e3"}) {
    // "1e" is accepted by the parser as exa (1E) and overflows; either way it is an error.
    Result<Amount> r = ParseQuantity(text);
    EXPECT_FALSE(r.ok()) << "\"" << text << "\" parsed as " << (r.ok() ? *r : 0);
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << text;
      EXPECT_NE(r.status().message().find("invalid quantity"), std::string::npos) << r.status().message();
    }
  }
}

TEST(ParseQuantityTest, ErrorNamesTheInput) {
  Result<Amount> r = ParseQuantity("1Zi");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("\"1Zi\""), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("Zi"), std::string::npos);
}

TEST(ParseQuantityTest, Overflow) {
  // int64 milli-units top out near 9.2e15 whole units (about 8Pi).
  for (const char* text : {"100Ei", "1Ei", "8Ei", "1E", "10P", "9300T", "1e16", "1e100", "8192Pi",
                           "99999999999999999999999999999", "-100Ei", "9223372036854775808m"}) {
    Result<Amount> r = ParseQuantity(text);
    EXPECT_FALSE(r.ok()) << "\"" << text << "\" parsed as " << (r.ok() ? *r : 0);
  }
  // The largest representable values are accepted.
  EXPECT_EQ(MustParse("9223372036854775807m"), std::numeric_limits<Amount>::max());
  EXPECT_EQ(MustParse("-9223372036854775807m"), -std::numeric_limits<Amount>::max());
  EXPECT_EQ(MustParse("9P"), Amount{9'000'000'000'000'000'000});
  EXPECT_EQ(MustParse("8191Ti"), 8191 * kTi * kMilli);
}

// Digits beyond what int64 milli-units can hold must still count. These fail
// with the current parser; see the report on quantity.cc (mantissa of more than
// 22 digits with a large negative decimal exponent collapses to 1 milli-unit,
// and dropped fractional digits are not rounded up).
TEST(ParseQuantityTest, LongMantissaKeepsItsValue) {
  EXPECT_EQ(MustParse("1.0000000000000000000000"), 1000);  // 22 fractional zeros
  EXPECT_EQ(MustParse("10000000000000000000000e-22"), 1000);
  EXPECT_EQ(MustParse("1.000000000000000000000001"), 1001);  // rounds up
}

TEST(FormatQuantityTest, CanonicalForms) {
  EXPECT_EQ(FormatQuantity(0), "0");
  EXPECT_EQ(FormatQuantity(1000), "1");
  EXPECT_EQ(FormatQuantity(8000), "8");
  EXPECT_EQ(FormatQuantity(500), "500m");
  EXPECT_EQ(FormatQuantity(1500), "1500m");
  EXPECT_EQ(FormatQuantity(1), "1m");
  EXPECT_EQ(FormatQuantity(-1000), "-1");
  EXPECT_EQ(FormatQuantity(-1500), "-1500m");
  EXPECT_EQ(FormatQuantity(36 * kGi * kMilli), "36Gi");
  EXPECT_EQ(FormatQuantity(kKi * kMilli), "1Ki");
  EXPECT_EQ(FormatQuantity(1536 * kMilli), "1536");  // 1.5Ki: not a whole multiple of 1Ki
  EXPECT_EQ(FormatQuantity(1024 * 3 * kMilli), "3Ki");
  EXPECT_EQ(FormatQuantity(kGi / 2 * 3 * kMilli), "1536Mi");
  EXPECT_EQ(FormatQuantity(kPi * kMilli), "1Pi");
  EXPECT_EQ(FormatQuantity(1000 * kMilli), "1000");
  EXPECT_EQ(FormatQuantity(-kGi * kMilli), "-1Gi");
}

TEST(FormatQuantityTest, RoundTrips) {
  const std::vector<Amount> values = {
      0,
      1,
      500,
      999,
      1000,
      1001,
      1500,
      -1,
      -1500,
      64 * 1000,
      kKi * 1000,
      36 * kGi * 1000,
      kGi / 2 * 3 * 1000,
      kPi * 1000,
      -kTi * 1000,
      123456789012345,
      std::numeric_limits<Amount>::max(),
      -std::numeric_limits<Amount>::max(),
  };
  for (Amount v : values) {
    const std::string text = FormatQuantity(v);
    EXPECT_EQ(MustParse(text), v) << v << " -> \"" << text << "\"";
  }
  for (const char* text : {"1", "500m", "36Gi", "1536Mi", "0", "-2", "7Ki"}) {
    EXPECT_EQ(FormatQuantity(MustParse(text)), text);
  }
}

TEST(FormatQuantityTest, NormalizesEquivalentSpellings) {
  EXPECT_EQ(FormatQuantity(MustParse("1k")), "1000");
  EXPECT_EQ(FormatQuantity(MustParse("1e3")), "1000");
  EXPECT_EQ(FormatQuantity(MustParse("1.5")), "1500m");
  EXPECT_EQ(FormatQuantity(MustParse("1024")), "1Ki");
  EXPECT_EQ(FormatQuantity(MustParse("1024Mi")), "1Gi");
  EXPECT_EQ(FormatQuantity(MustParse("0.0001")), "1m");
}

TEST(SatAddTest, Saturates) {
  constexpr Amount kMax = std::numeric_limits<Amount>::max();
  constexpr Amount kMin = std::numeric_limits<Amount>::min();
  EXPECT_EQ(SatAdd(1, 2), 3);
  EXPECT_EQ(SatAdd(-5, 2), -3);
  EXPECT_EQ(SatAdd(kMax, 1), kMax);
  EXPECT_EQ(SatAdd(kMax, kMax), kMax);
  EXPECT_EQ(SatAdd(kMin, -1), kMin);
  EXPECT_EQ(SatAdd(kUnlimited, kUnlimited), 2 * kUnlimited);  // kUnlimited leaves headroom
}

}  // namespace
}  // namespace artel::core
