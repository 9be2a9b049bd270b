// Unit tests for the compact value types of the model (issue 17 §3):
// (and the block summary of a LocalQueue's run, LqRt, issue 17 §2)
// `FlatMap` (src/core/flat_map.h) must answer as the std::map it replaces,
// and `Boxed` (src/core/boxed.h) must behave as the plain value it holds
// while taking no heap for a default one.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/boxed.h"
#include "core/flat_map.h"
#include "core/key_index.h"
#include "core/model.h"
#include "core/queue_state.h"
#include "core/shared_vec.h"

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

// Handles that copy, append, change, shrink and clear at random: every handle
// must read as its own std::vector, so a write through one handle never shows
// through another that shared its array.
TEST(SharedVecTest, EveryHandleReadsAsItsOwnVectorUnderRandomEdits) {
  std::mt19937 rng(13);
  constexpr int kHandles = 6;
  std::vector<SharedVec<std::string>> got(kHandles);
  std::vector<std::vector<std::string>> want(kHandles);
  int shared_writes = 0;
  for (int step = 0; step < 20000; ++step) {
    const size_t i = rng() % kHandles;
    const size_t j = rng() % kHandles;
    const std::string v = "value-long-enough-to-allocate-" + std::to_string(rng() % 1000);
    if (got[i].use_count() > 1) shared_writes++;
    switch (rng() % 8) {
      case 0:
        got[i] = got[j];
        want[i] = want[j];
        break;
      case 1:
      case 2:
        got[i].push_back(v);
        want[i].push_back(v);
        break;
      case 3:
        if (!want[i].empty()) {
          const size_t k = rng() % want[i].size();
          got[i].mut(k) = v;
          want[i][k] = v;
        }
        break;
      case 4: {
        const size_t n = rng() % 6;
        got[i].resize(n);
        want[i].resize(n);
        break;
      }
      case 5:
        if (!want[i].empty()) {
          const size_t k = rng() % want[i].size();
          got[i].erase(k);
          want[i].erase(want[i].begin() + static_cast<std::ptrdiff_t>(k));
        }
        break;
      case 6:
        for (std::string& x : got[i].mut_all()) x += "!";
        for (std::string& x : want[i]) x += "!";
        break;
      case 7:
        if (!want[j].empty()) {  // an argument that refers into the array itself
          got[j].push_back(got[j][0]);
          want[j].push_back(std::string(want[j][0]));
        }
        break;
    }
    for (int k = 0; k < kHandles; ++k) {
      ASSERT_EQ(got[k].ToVector(), want[k]) << "handle " << k << " at step " << step;
      ASSERT_TRUE(got[k] == want[k]);
    }
  }
  EXPECT_GT(shared_writes, 1000) << "the edits must often write through shared handles";
}

TEST(SharedVecTest, CopiesShareUntilOneIsWritten) {
  SharedVec<PodSetSpec> a;
  EXPECT_EQ(sizeof(a), sizeof(void*));
  EXPECT_EQ(a.use_count(), 0u) << "an empty handle holds no array";
  a.emplace_back().count = 3;
  SharedVec<PodSetSpec> b = a;
  EXPECT_TRUE(a.SharesWith(b));
  EXPECT_EQ(a.use_count(), 2u);
  EXPECT_EQ(&a[0], &b[0]) << "reads of a copy see the same array";
  b.mut(0).count = 4;
  EXPECT_FALSE(a.SharesWith(b));
  EXPECT_EQ(a[0].count, 3);
  EXPECT_EQ(b[0].count, 4);
  EXPECT_EQ(a.use_count(), 1u);
  b.mut(0).count = 3;
  EXPECT_TRUE(a == b) << "equal arrays compare equal without sharing";
  SharedVec<PodSetSpec> c = std::move(b);
  EXPECT_TRUE(b.empty());  // NOLINT(bugprone-use-after-move): a moved-from handle is empty
  EXPECT_EQ(c[0].count, 3);
  EXPECT_THROW((void)c.at(1), std::out_of_range);
}

TEST(SharedVecTest, CopiesMayBeDroppedOnOtherThreads) {
  SharedVec<std::string> v{"a", "b"};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&v] {
      for (int i = 0; i < 20000; ++i) {
        SharedVec<std::string> copy = v;  // reads and copies race only on the count
        if (copy.size() != 2 || copy[1] != "b") std::abort();
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(v.use_count(), 1u) << "every copy's reference was returned";
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

// A LocalQueue's run keeps, per block of members, the least live request
// and the live count (LqRt::PushMember, MemberGone); FirstFit and PastLive
// skip whole blocks with them. They must answer as plain scans of run_req
// under random pushes, removals and queries, across block edges.
TEST(RunBlocksTest, AnswersAsPlainScansUnderRandomEdits) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 20; ++trial) {
    LqRt q;
    q.heap.insert(QueueKey{0, WlId(1), 0, 1});
    const auto at = q.heap.begin();
    auto naive_first_fit = [&](size_t from, Amount cap, int64_t* live) {
      *live = 0;
      size_t i = from;
      for (; i < q.run_req.size(); ++i) {
        if (q.run_req[i] <= cap) break;
        if (q.run_req[i] != LqRt::kRunGone) ++*live;
      }
      return i;
    };
    for (int step = 0; step < 3000; ++step) {
      const int op = static_cast<int>(rng() % 10);
      if (op < 4 || q.run_req.empty()) {
        q.PushMember(static_cast<Amount>(rng() % 1000), at);
      } else if (op < 7) {
        const size_t pos = rng() % q.run_req.size();
        if (q.run_req[pos] != LqRt::kRunGone) q.MemberGone(pos);
      } else {
        const size_t from = rng() % (q.run_req.size() + 1);
        const Amount cap = static_cast<Amount>(rng() % 1100);
        int64_t live = -1, want_live = -1;
        const size_t got = q.FirstFit(from, cap, &live);
        const size_t want = naive_first_fit(from, cap, &want_live);
        ASSERT_EQ(got, want) << "trial " << trial << " step " << step;
        ASSERT_EQ(live, want_live) << "trial " << trial << " step " << step;
        if (want_live > 0) {
          const int64_t k = 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(want_live));
          size_t i = from;
          for (int64_t n = 0; n < k; ++i) {
            if (q.run_req[i] != LqRt::kRunGone) ++n;
          }
          ASSERT_EQ(q.PastLive(from, k), i) << "trial " << trial << " step " << step;
        }
      }
      size_t first = 0;
      while (first < q.run_req.size() && q.run_req[first] == LqRt::kRunGone) ++first;
      ASSERT_EQ(q.run_first, first);
      int32_t live = 0;
      for (Amount a : q.run_req) live += a != LqRt::kRunGone ? 1 : 0;
      ASSERT_EQ(q.run_live, live);
    }
  }
}

}  // namespace
}  // namespace artel::core
