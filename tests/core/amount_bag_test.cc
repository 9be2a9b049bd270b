// Unit tests for `AmountBag` (src/core/queue_state.h), the per-queue
// multiset of queued request sizes that bulk parking reads (its least
// element and its count): it must answer as the std::multiset it replaces.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <set>
#include <vector>

#include "core/queue_state.h"

namespace artel::core {
namespace {

TEST(AmountBagTest, KeepsTheMinimumAndTheCountOfAMultiset) {
  AmountBag bag;
  std::multiset<int64_t> ref;
  const std::vector<int64_t> in = {5, 3, 3, 9, 1, 1, 1, 7};
  for (int64_t a : in) {
    bag.Insert(a);
    ref.insert(a);
    EXPECT_EQ(bag.Min(), *ref.begin());
    EXPECT_EQ(bag.size(), static_cast<int32_t>(ref.size()));
  }
  for (int64_t a : {1, 3, 1, 5, 1, 3}) {
    bag.EraseOne(a);
    ref.erase(ref.find(a));
    ASSERT_FALSE(ref.empty());
    EXPECT_EQ(bag.Min(), *ref.begin()) << "after removing " << a;
    EXPECT_EQ(bag.size(), static_cast<int32_t>(ref.size()));
  }
  bag.EraseOne(7);
  bag.EraseOne(9);
  EXPECT_TRUE(bag.empty());
}

// The least amount is kept beside the map (AmountBag::min): under random
// inserts and removals, including of absent amounts and down to empty, it
// stays the multiset's least element.
TEST(AmountBagTest, KeepsTheMinimumUnderRandomEdits) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 200; ++round) {
    AmountBag bag;
    std::multiset<int64_t> ref;
    for (int step = 0; step < 300; ++step) {
      const int64_t a = static_cast<int64_t>(rng() % 12);
      if (rng() % 3 != 0) {
        bag.Insert(a);
        ref.insert(a);
      } else {
        bag.EraseOne(a);  // may be absent: then nothing changes
        if (auto it = ref.find(a); it != ref.end()) ref.erase(it);
      }
      ASSERT_EQ(bag.size(), static_cast<int32_t>(ref.size()));
      ASSERT_EQ(bag.empty(), ref.empty());
      if (!ref.empty()) {
        ASSERT_EQ(bag.Min(), *ref.begin()) << "round " << round << " step " << step;
      }
    }
  }
}

}  // namespace
}  // namespace artel::core
