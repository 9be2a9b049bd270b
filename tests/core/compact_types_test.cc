// Unit tests for the compact value types of the model (issue 17 §3):
// `FlatMap` (src/core/flat_map.h) must answer as the std::map it replaces,
// and `Boxed` (src/core/boxed.h) must behave as the plain value it holds
// while taking no heap for a default one.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/boxed.h"
#include "core/flat_map.h"
#include "core/key_index.h"
#include "core/model.h"

namespace artel::core {
namespace {

TEST(FlatMapTest, AnswersAsAStdMapUnderRandomEdits) {
  std::mt19937 rng(7);
  FlatMap<std::string, int64_t> f;
  std::map<std::string, int64_t> m;
  for (int step = 0; step < 5000; ++step) {
    const std::string k = "k" + std::to_string(rng() % 40);
    switch (rng() % 5) {
      case 0:
        f[k] += step;
        m[k] += step;
        break;
      case 1: EXPECT_EQ(f.erase(k), m.erase(k)) << k; break;
      case 2: {
        auto [fit, fnew] = f.try_emplace(k, step);
        auto [mit, mnew] = m.try_emplace(k, step);
        EXPECT_EQ(fnew, mnew);
        EXPECT_EQ(fit->second, mit->second);
        break;
      }
      case 3:
        f.insert_or_assign(k, -step);
        m.insert_or_assign(k, -step);
        break;
      default:
        EXPECT_EQ(f.count(k), m.count(k));
        EXPECT_EQ(f.contains(k), m.contains(k));
        if (m.contains(k)) {
          EXPECT_EQ(f.at(k), m.at(k));
        } else {
          EXPECT_THROW((void)f.at(k), std::out_of_range);
        }
    }
    ASSERT_EQ(f.size(), m.size());
    ASSERT_TRUE(f == m) << "step " << step;
  }
  // Iteration is in key order, as for the map.
  auto mi = m.begin();
  for (const auto& [k, v] : f) {
    ASSERT_NE(mi, m.end());
    EXPECT_EQ(k, mi->first);
    EXPECT_EQ(v, mi->second);
    ++mi;
  }
  EXPECT_EQ(f.ToMap(), m);
}

TEST(FlatMapTest, BuildsFromListsAndMapsWithTheLastValueOfADuplicateKey) {
  FlatMap<std::string, std::string> f = {{"b", "2"}, {"a", "1"}, {"b", "3"}};
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f.begin()->first, "a");
  EXPECT_EQ(f.at("b"), "3");
  std::map<std::string, std::string> m = {{"z", "26"}};
  f = m;
  EXPECT_TRUE(f == m);
  f = {{"x", "1"}};
  EXPECT_EQ(f.at("x"), "1");
  EXPECT_EQ(f.size(), 1u);
  EXPECT_EQ(f.find("nope"), f.end());
  f.clear();
  EXPECT_TRUE(f.empty());
}

TEST(FlatMapTest, SmallMapsKeepNoSpareCapacity) {
  // Exact growth while small: a three-entry request list is one
  // allocation of three entries.
  FlatMap<std::string, int64_t> f;
  f["cpu"] = 1;
  f["memory"] = 2;
  f["nvidia.com/gpu"] = 3;
  FlatMap<std::string, int64_t> copy = f;
  EXPECT_EQ(copy, f);
  EXPECT_EQ(sizeof(f), 3 * sizeof(void*));
}

TEST(BoxedTest, DefaultValuesTakeNoHeapAndReadAsDefault) {
  Boxed<TopologyRequest> t;
  EXPECT_FALSE(t.boxed());
  EXPECT_TRUE(t->empty());
  EXPECT_EQ(sizeof(t), sizeof(void*));
  t = TopologyRequest{};  // assigning the default frees nothing and boxes nothing
  EXPECT_FALSE(t.boxed());
  t.mut().required = "rack";
  EXPECT_TRUE(t.boxed());
  EXPECT_EQ(t->required, "rack");
  TopologyRequest plain;
  plain.required = "rack";
  EXPECT_TRUE(t == plain);
  t = TopologyRequest{};
  EXPECT_FALSE(t.boxed()) << "assigning a default value releases the box";
}

TEST(BoxedTest, CopiesAreDeepAndCompareByValue) {
  Boxed<GangSpec> a;
  a.mut().min_member = 4;
  Boxed<GangSpec> b = a;
  EXPECT_TRUE(a == b);
  b.mut().min_member = 5;
  EXPECT_EQ(a->min_member, 4) << "a copy must not share the value";
  EXPECT_FALSE(a == b);
  Boxed<GangSpec> c = std::move(b);
  EXPECT_EQ(c->min_member, 5);
  const GangSpec& ref = c;  // reads as the plain type
  EXPECT_EQ(ref.min_member, 5);
  a = c;
  EXPECT_EQ(a->min_member, 5);
  a.reset();
  EXPECT_EQ(a->min_member, 0);
}

TEST(BoxedTest, TheModelsOptionalPartsAreBoxed) {
  // The point of the change: a workload asking for no topology, gang or GPU
  // share pays one pointer for each.
  WorkloadSpec w;
  w.pod_sets.emplace_back();
  EXPECT_FALSE(w.topology.boxed());
  EXPECT_FALSE(w.gang.boxed());
  EXPECT_FALSE(w.pod_sets[0].topology.boxed());
  EXPECT_FALSE(w.pod_sets[0].gpu_share.boxed());
  EXPECT_LE(sizeof(WorkloadSpec), 360u);
}

TEST(KeyIndexTest, AnswersAsAnUnorderedMapUnderRandomEdits) {
  // Keys live outside the index, as in the engine; ids are reused.
  std::vector<std::string> keys;
  std::unordered_map<std::string, WorkloadId> ref;
  KeyIndex idx;
  auto key_of = [&keys](WorkloadId id) -> const std::string& { return keys[id]; };
  std::mt19937 rng(11);
  for (int step = 0; step < 20000; ++step) {
    const std::string k = "ns-" + std::to_string(rng() % 7) + "/w" + std::to_string(rng() % 300);
    const WorkloadId found = idx.Find(k, key_of);
    auto it = ref.find(k);
    ASSERT_EQ(found, it == ref.end() ? kNoWorkload : it->second) << "step " << step << " key " << k;
    if (rng() % 3 != 0) {
      if (it == ref.end()) {
        const auto id = static_cast<WorkloadId>(keys.size());
        keys.push_back(k);
        idx.Insert(keys.back(), id);
        ref[k] = id;
      }
    } else if (it != ref.end()) {
      // Erasing with another id leaves the entry.
      EXPECT_FALSE(idx.Erase(k, key_of, it->second + 1));
      EXPECT_TRUE(idx.Erase(k, key_of, it->second));
      ref.erase(it);
    } else {
      EXPECT_FALSE(idx.Erase(k, key_of));
    }
    ASSERT_EQ(idx.size(), ref.size());
    ASSERT_LE(idx.size() * 2, idx.capacity() == 0 ? 0 : idx.capacity());
  }
  for (const auto& [k, id] : ref) EXPECT_EQ(idx.Find(k, key_of), id) << k;
}

TEST(KeyIndexTest, ProbeRunsSurviveDeletionsThatWrapAround) {
  // Few slots, many collisions: deletions in the middle of runs that wrap
  // past the end of the table must keep every other key reachable.
  std::vector<std::string> keys;
  for (int i = 0; i < 7; ++i) keys.push_back("k" + std::to_string(i));
  auto key_of = [&keys](WorkloadId id) -> const std::string& { return keys[id]; };
  for (int drop = 0; drop < 7; ++drop) {
    KeyIndex idx;
    for (WorkloadId i = 0; i < 7; ++i) idx.Insert(keys[i], i);
    ASSERT_TRUE(idx.Erase(keys[drop], key_of));
    for (WorkloadId i = 0; i < 7; ++i) {
      EXPECT_EQ(idx.Find(keys[i], key_of), static_cast<int>(i) == drop ? kNoWorkload : i) << drop << " " << i;
    }
  }
}

}  // namespace
}  // namespace artel::core
