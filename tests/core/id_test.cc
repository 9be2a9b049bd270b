// Unit tests for `artel::core::Id` and `IdVector` (src/core/id.h): ids of
// different index spaces do not mix, a plain integer is not an id, and an
// IdVector hands out consecutive ids, lists them, and knows which ones it
// holds; `BasicInterner` (src/core/interner.h) hands out typed ids.
#include "core/id.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "core/interner.h"

namespace artel::core {
namespace {

using AId = Id<struct ATag>;
using BId = Id<struct BTag>;

// The point of the tags: none of these compile.
static_assert(!std::is_convertible_v<AId, BId>);
static_assert(!std::is_constructible_v<AId, BId>);
static_assert(!std::is_convertible_v<int32_t, AId>);
static_assert(!std::is_convertible_v<AId, int32_t>);
template <typename V, typename I>
concept Indexable = requires(V v, I i) {
  v[i];
};
static_assert(Indexable<IdVector<AId, int>, AId>);
static_assert(!Indexable<IdVector<AId, int>, BId>);
static_assert(!Indexable<IdVector<AId, int>, int32_t>);
static_assert(sizeof(AId) == sizeof(int32_t));
// The engine's spaces are distinct types.
static_assert(!std::is_same_v<CqId, LqId>);
static_assert(!std::is_convertible_v<CqId, LqId>);
static_assert(!std::is_convertible_v<FlavorId, CqId>);
static_assert(!std::is_convertible_v<NamespaceId, LqId>);
static_assert(!Indexable<IdVector<CqId, int>, LqId>);

TEST(IdTest, DefaultIsInvalidAndValuesCompare) {
  EXPECT_FALSE(AId().valid());
  EXPECT_EQ(AId().value(), -1);
  EXPECT_TRUE(AId(0).valid());
  EXPECT_EQ(AId(3), AId(3));
  EXPECT_NE(AId(3), AId(4));
  EXPECT_LT(AId(3), AId(4));
}

TEST(IdVectorTest, PushBackHandsOutConsecutiveIds) {
  IdVector<AId, std::string> v;
  EXPECT_TRUE(v.empty());
  AId a = v.push_back("a");
  AId b = v.push_back("b");
  EXPECT_EQ(a, AId(0));
  EXPECT_EQ(b, AId(1));
  EXPECT_EQ(v[a], "a");
  EXPECT_EQ(v[b], "b");
  v[b] = "c";
  EXPECT_EQ(v[AId(1)], "c");
  EXPECT_EQ(v.size(), 2u);
  std::string all;
  for (const std::string& s : v) all += s;
  EXPECT_EQ(all, "ac");
}

TEST(IdVectorTest, ContainsOnlyItsOwnValidIds) {
  IdVector<AId, int> v;
  EXPECT_FALSE(v.contains(AId(0)));
  v.push_back(7);
  EXPECT_TRUE(v.contains(AId(0)));
  EXPECT_FALSE(v.contains(AId()));
  EXPECT_FALSE(v.contains(AId(1)));
  v.resize(3);
  EXPECT_TRUE(v.contains(AId(2)));
  v.clear();
  EXPECT_FALSE(v.contains(AId(0)));
}

TEST(IdVectorTest, IdsListsEveryIdInOrder) {
  IdVector<AId, int> v(3, 5);
  std::vector<AId> ids;
  int sum = 0;
  for (AId id : v.ids()) {
    ids.push_back(id);
    sum += v[id];
  }
  EXPECT_EQ(ids, (std::vector<AId>{AId(0), AId(1), AId(2)}));
  EXPECT_EQ(sum, 15);
  v.assign(1, 2);
  ids.clear();
  for (AId id : v.ids()) ids.push_back(id);
  EXPECT_EQ(ids, std::vector<AId>{AId(0)});
  EXPECT_EQ(v[AId(0)], 2);
  IdVector<AId, int> empty;
  EXPECT_EQ(empty.ids().begin(), empty.ids().end());
}

TEST(InternerTest, TypedIdsAndInvalidForUnknown) {
  BasicInterner<AId> names;
  const AId a = names.Intern("a");
  const AId b = names.Intern("b");
  EXPECT_EQ(a, AId(0));
  EXPECT_EQ(b, AId(1));
  EXPECT_EQ(names.Intern("a"), a);
  EXPECT_EQ(names.Find("b"), b);
  EXPECT_FALSE(names.Find("c").valid());
  EXPECT_EQ(names.Name(b), "b");
  EXPECT_EQ(names.size(), 2u);
  Interner plain;
  EXPECT_EQ(plain.Intern("x"), 0);
  EXPECT_EQ(plain.Find("y"), -1);
}

}  // namespace
}  // namespace artel::core
