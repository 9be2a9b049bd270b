// A tenant cannot set spec.priority directly (issue 10 follow-up).
//
// An explicit spec.priority outranks every WorkloadPriorityClass, so a
// tenant could give its work any priority up to 2e9 and preempt prod work.
// Tenants set priority through spec.priorityClassName; an explicit value is
// accepted only when it equals the named class's value (a Kueue Workload
// carries both). Admins may still set it.

#include <gtest/gtest.h>

#include "../server/harness.h"

namespace artel::testing {
namespace {

class PriorityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = TempDir("priority");
    WriteFile(dir_ + "/cluster.yaml", kTwoTeamsManifests);  // WorkloadPriorityClass prod = 1000
    WriteFile(dir_ + "/tokens.yaml", kTokensYaml);
    d_ = std::make_unique<Arteld>(dir_);
    std::string err;
    ASSERT_TRUE(d_->Start({"--fake-gpus", "2xA100-80GB", "--tokens", dir_ + "/tokens.yaml", "-m",
                           dir_ + "/cluster.yaml", "--stop-workloads-on-exit"},
                          &err))
        << err;
  }
  void TearDown() override {
    for (const auto& w : d_->Get("/api/v1/workloads").json().value("items", Json::array())) {
      d_->Post("/api/v1/namespaces/" + w["metadata"].value("namespace", "") + "/workloads/" +
                   w["metadata"].value("name", "") + "/cancel",
               "");
    }
    EXPECT_TRUE(d_->Stop()) << d_->log();
    std::filesystem::remove_all(dir_);
  }
  // A team-b workload with `priority` (0 = none) and `pc` (empty = none).
  static Json Body(const std::string& name, int priority, const std::string& pc) {
    Json w = Workload("team-b", name, "default", 1, {"sleep", "30"}, priority);
    if (!pc.empty()) w["spec"]["priorityClassName"] = pc;
    return w;
  }
  std::string dir_;
  std::unique_ptr<Arteld> d_;
};

TEST_F(PriorityTest, TenantsMayNotSetAnExplicitPriority) {
  auto r = d_->Post("/api/v1/workloads", Body("greedy", 2000000000, "").dump(), kTeamBToken);
  ASSERT_EQ(r.status, 403) << r.body;
  Json e = r.json();
  EXPECT_EQ(e.value("code", ""), "PermissionDenied") << r.body;
  EXPECT_EQ(e.value("field", ""), "spec.priority") << r.body;
  EXPECT_NE(e.value("message", "").find("spec.priorityClassName (a WorkloadPriorityClass)"),
            std::string::npos)
      << r.body;
  // Nothing was created.
  EXPECT_EQ(d_->Get("/api/v1/namespaces/team-b/workloads/greedy", kAdminToken).status, 404);

  // Through the namespaced path too, and with a class whose value differs.
  r = d_->Post("/api/v1/namespaces/team-b/workloads", Body("greedy2", 5000, "prod").dump(), kTeamBToken);
  ASSERT_EQ(r.status, 403) << r.body;
  EXPECT_EQ(r.json().value("field", ""), "spec.priority") << r.body;
  EXPECT_NE(r.json().value("message", "").find("prod has value 1000"), std::string::npos) << r.body;
  EXPECT_EQ(d_->Get("/api/v1/namespaces/team-b/workloads/greedy2", kAdminToken).status, 404);
}

TEST_F(PriorityTest, ThePriorityClassIsTheTenantsWayAndAdminsMaySetAValue) {
  // The class alone, and the class with its own value (harmless), are fine.
  auto r = d_->Post("/api/v1/workloads", Body("by-class", 0, "prod").dump(), kTeamBToken);
  ASSERT_EQ(r.status, 201) << r.body;
  r = d_->Post("/api/v1/workloads", Body("class-and-value", 1000, "prod").dump(), kTeamBToken);
  ASSERT_EQ(r.status, 201) << r.body;
  // An admin may set any value.
  r = d_->Post("/api/v1/workloads", Body("by-admin", 2000000000, "").dump(), kAdminToken);
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(d_->Get("/api/v1/namespaces/team-b/workloads/by-class", kTeamBToken)
                .json()["status"]
                .value("priority", -1),
            1000);
  EXPECT_EQ(d_->Get("/api/v1/namespaces/team-b/workloads/by-admin", kAdminToken)
                .json()["status"]
                .value("priority", -1),
            2000000000);
}

}  // namespace
}  // namespace artel::testing
