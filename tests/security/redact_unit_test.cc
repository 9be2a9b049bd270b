// Unit tests of the pieces behind tenant isolation in the API: the Redactor
// (redact.h), the metrics role of the tokens file (auth.h) and the object
// split that apply authorizes (manifest::SplitObjects).

#include <gtest/gtest.h>

#include <map>

#include "manifest/manifest.h"
#include "server/auth.h"
#include "server/redact.h"

namespace artel::server {
namespace {

class RedactorTest : public ::testing::Test {
 protected:
  Redactor For(const Principal& who) {
    return Redactor(
        who,
        [this](const std::string& key) {
          auto it = cq_.find(key);
          return it == cq_.end() ? std::string() : it->second;
        },
        [](std::string_view ns) { return ns == "team-a" || ns == "team-b"; });
  }
  std::map<std::string, std::string> cq_ = {
      {"team-a/x", "cq-a"}, {"team-a/y", "cq-a"}, {"team-b/z", "cq-b"}, {"team-b/w", "cq-b"}};
  Principal admin_{"root", Role::kAdmin, {}};
  Principal b_{"bob", Role::kTenant, {"team-b"}};
};

TEST_F(RedactorTest, AdminSeesEverything) {
  Redactor r = For(admin_);
  EXPECT_TRUE(r.all());
  EXPECT_EQ(r.Scrub("team-a/x and team-b/z"), "team-a/x and team-b/z");
  core::PendingReason p;
  p.would_preempt = {"team-a/x"};
  p.message = "m; it would fit if these were preempted: team-a/x";
  EXPECT_EQ(r.PendingMessage(p), p.message);
}

TEST_F(RedactorTest, TenantSeesOthersAsCountsPerClusterQueue) {
  Redactor r = For(b_);
  EXPECT_TRUE(r.Visible("team-b/z"));
  EXPECT_TRUE(r.Visible("team-b/z/main-0"));
  EXPECT_FALSE(r.Visible("team-a/x"));
  EXPECT_EQ(r.Describe("team-a/x", ""), "a workload in ClusterQueue cq-a");
  EXPECT_EQ(r.Describe("team-b/z", ""), "team-b/z");
  EXPECT_EQ(r.DescribeList({"team-a/x", "team-b/z", "team-a/y", "team-c/q"}),
            "team-b/z 2 workloads in ClusterQueue cq-a 1 workload of other namespaces");
  EXPECT_EQ(r.VisibleOnly({"team-a/x", "team-b/z"}), std::vector<std::string>{"team-b/z"});

  core::PendingReason waiting;
  waiting.would_preempt = {"team-a/x", "team-a/y"};
  waiting.message =
      "team-b/w in ClusterQueue cq-b: waiting for 2 preempted workload(s) to stop: team-a/x team-a/y";
  EXPECT_EQ(r.PendingMessage(waiting),
            "team-b/w in ClusterQueue cq-b: waiting for 2 preempted workload(s) to stop: 2 workloads in "
            "ClusterQueue cq-a");
  core::PendingReason would;
  would.would_preempt = {"team-b/z", "team-a/x"};
  would.message =
      "team-b/w in ClusterQueue cq-b: needs 1 ...; it would fit if these were preempted: team-b/z "
      "team-a/x";
  EXPECT_EQ(r.PendingMessage(would),
            "team-b/w in ClusterQueue cq-b: needs 1 ...; it would fit if these were preempted: team-b/z 1 "
            "workload in ClusterQueue cq-a");
  // Any other form is still scrubbed of names it may not see.
  core::PendingReason fifo;
  fifo.message = "team-b/w: behind the StrictFIFO head team-a/x of ClusterQueue cq-a.";
  EXPECT_EQ(r.PendingMessage(fifo),
            "team-b/w: behind the StrictFIFO head a workload of another namespace of ClusterQueue cq-a.");

  EXPECT_EQ(
      r.EvictionMessage("preempted by team-a/x (ClusterQueue cq-a) to reclaim quota [InCohortReclamation]",
                        "team-a/x", "cq-a"),
      "preempted by a workload in ClusterQueue cq-a to reclaim quota [InCohortReclamation]");
  EXPECT_EQ(r.EvictionMessage("preempted by team-b/w (ClusterQueue cq-b) to x", "team-b/w", "cq-b"),
            "preempted by team-b/w (ClusterQueue cq-b) to x");
}

TEST_F(RedactorTest, ScrubLeavesWhatIsNotAWorkloadOfAnotherNamespace) {
  Redactor r = For(b_);
  // Resource names and labels have namespaces arteld does not know.
  EXPECT_EQ(r.Scrub("needs 2 nvidia.com/gpu; label kubernetes.io/hostname"),
            "needs 2 nvidia.com/gpu; label kubernetes.io/hostname");
  EXPECT_EQ(r.Scrub("team-b/w and team-a/x/main-0, (team-a/y)"),
            "team-b/w and a workload of another namespace, (a workload of another namespace)");
  EXPECT_EQ(r.Scrub("and/or team-a/ team-a"), "and/or team-a/ team-a");
  EXPECT_EQ(r.Scrub("xteam-a/x"), "xteam-a/x");
}

TEST(MetricsRoleTest, TokensFileAcceptsMetricsRoleWithoutNamespaces) {
  auto t =
      TokenTable::Parse("tokens:\n  - {token: scraper-0001, user: prometheus, role: metrics}\n", "t.yaml");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  auto p = (*t)->Authenticate("Bearer scraper-0001");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->role, Role::kMetrics);
  EXPECT_TRUE(p->can_read_metrics());
  EXPECT_FALSE(p->is_admin());
  EXPECT_FALSE(p->CanUseNamespace("team-a"));
  EXPECT_STREQ(RoleName(p->role), "metrics");
  auto bad = TokenTable::Parse(
      "tokens:\n  - {token: scraper-0001, user: prometheus, role: metrics, namespaces: [team-a]}\n",
      "t.yaml");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().field(), "tokens[0].namespaces");
  Principal tenant{"bob", Role::kTenant, {"team-b"}};
  EXPECT_FALSE(tenant.can_read_metrics());
}

TEST(SplitObjectsTest, EveryDocumentAndListItemIsAnObject) {
  auto objs = manifest::SplitObjects(
      "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ResourceQuota, metadata: {name: q, "
      "namespace: team-a}}\n--- {apiVersion: kueue.x-k8s.io/v1beta2, kind: ClusterQueue, metadata: {name: c, "
      "namespace: ignored}}\n--- !!map\napiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: "
      "{name: f}\n...\n",
      "body");
  ASSERT_TRUE(objs.ok()) << objs.status().ToString();
  ASSERT_EQ(objs->size(), 3u);
  EXPECT_EQ((*objs)[0].key(), "ResourceQuota/team-a/q");
  EXPECT_TRUE((*objs)[0].namespaced);
  EXPECT_EQ((*objs)[0].field, "items[0]");
  EXPECT_EQ((*objs)[1].key(), "ClusterQueue//c");  // cluster-scoped: the namespace is not its
  EXPECT_FALSE((*objs)[1].namespaced);
  EXPECT_EQ((*objs)[2].key(), "ResourceFlavor//f");
  EXPECT_GE((*objs)[2].pos.line, 6);  // the document after the ... marker, not the first one
  // Each object's text reads back as that object alone.
  for (const auto& o : *objs) {
    auto again = manifest::SplitObjects(o.text, "again");
    ASSERT_TRUE(again.ok()) << o.text;
    ASSERT_EQ(again->size(), 1u) << o.text;
    EXPECT_EQ((*again)[0].key(), o.key());
  }
  // A namespaced object must name its namespace.
  auto missing = manifest::SplitObjects("apiVersion: v1\nkind: ResourceQuota\nmetadata: {name: q}\n", "body");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().field(), "metadata.namespace");
}

}  // namespace
}  // namespace artel::server
