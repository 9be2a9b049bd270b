// The engine with evictions that take time, as on a cluster: a preemptor
// whose victims are still stopping gets no further victims while the quota
// they hold will cover it (Kueue's candidate order puts workloads already
// evicted first, pkg/scheduler/preemption/common/ordering.go, so a preemptor
// waiting for its victims picks them again rather than new ones).
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "core/engine.h"
#include "sim/scenario.h"

namespace artel::sim {
namespace {

const Scenario& Load(const std::string& rel, const std::string& name) {
  static std::vector<ScenarioDoc> docs;
  docs = LoadScenarioFile(std::string(ARTEL_SOURCE_DIR) + "/" + rel);
  for (const ScenarioDoc& d : docs)
    if (d.name == name && d.scenario) return *d.scenario;
  ADD_FAILURE() << "no scenario " << name << " in " << rel;
  std::abort();
}

void SubmitStep(core::Engine& e, const Step& st) {
  for (const Event& ev : st.events)
    if (ev.kind == Event::Kind::kSubmit) {
      ASSERT_TRUE(e.Submit(ev.submit.spec, st.at).ok());
    }
}

// Kueue's "hierarchical preemption" case (tests/scenarios/kueue-fair-sharing/fair-hierarchical-tree.yaml):
// `unit` needs 5 cpu and takes b1, b2, c1, c2 and e1. Whichever of them stop first, and in
// whatever order, the next cycles wait for the rest rather than take another victim.
TEST(EvictionsInFlightTest, FairSharingPreemptorWaitsForItsVictims) {
  const Scenario& sc =
      Load("tests/scenarios/kueue-fair-sharing/fair-hierarchical-tree.yaml", "kueue-fair-hierarchical-tree");
  const std::vector<std::string> kVictims = {"default/b1", "default/b2", "default/c1", "default/c2",
                                             "default/e1"};
  std::vector<std::string> order = kVictims;
  int runs = 0;
  do {
    SCOPED_TRACE("stop order " + order[0] + " " + order[1] + " " + order[2] + " " + order[3] + " " +
                 order[4]);
    core::Engine e(sc.options);
    ASSERT_TRUE(e.Configure(sc.config).ok());
    SubmitStep(e, sc.steps[0]);
    core::CycleResult r = e.Schedule(0);
    ASSERT_EQ(e.AdmittedCount(), 20u);
    SubmitStep(e, sc.steps[1]);
    r = e.Schedule(1000);
    std::set<std::string> victims;
    for (const auto& ev : r.evictions) victims.insert(ev.victim);
    ASSERT_EQ(victims, std::set<std::string>(kVictims.begin(), kVictims.end()));
    core::Time now = 1001;
    for (size_t i = 0; i < order.size(); ++i) {
      ASSERT_TRUE(e.CompleteEviction(order[i], now++).ok());
      r = e.Schedule(now++);
      for (const auto& ev : r.evictions)
        ADD_FAILURE() << "new victim " << ev.victim << " after " << i + 1 << " stopped";
      if (i + 1 < order.size()) {
        EXPECT_EQ(e.Find("default/unit")->state, core::WorkloadState::kPending);
      }
    }
    EXPECT_EQ(e.Find("default/unit")->state, core::WorkloadState::kAdmitted);
    ++runs;
  } while (std::next_permutation(order.begin(), order.end()) && !HasFailure());
  EXPECT_EQ(runs, 120);
}

}  // namespace
}  // namespace artel::sim
