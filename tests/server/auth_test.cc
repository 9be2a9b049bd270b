#include "server/auth.h"

#include <gtest/gtest.h>

#include "server/log.h"

namespace artel::server {
namespace {

TEST(TokenTableTest, MapsTokensToPrincipals) {
  auto t = TokenTable::Parse(R"(tokens:
  - {token: admin-secret-1, user: root, role: admin}
  - {token: tenant-secret-1, user: ann, role: tenant, namespaces: [team-a]}
)",
                             "tokens.yaml");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  auto a = (*t)->Authenticate("Bearer admin-secret-1");
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(a->is_admin());
  auto b = (*t)->Authenticate("Bearer tenant-secret-1");
  ASSERT_TRUE(b.ok());
  EXPECT_TRUE(b->CanUseNamespace("team-a"));
  EXPECT_FALSE(b->CanUseNamespace("team-b"));
  EXPECT_EQ((*t)->Authenticate("Bearer nope").status().code(), StatusCode::kUnauthenticated);
  // RFC 7235: the scheme is case-insensitive, the token is not.
  EXPECT_TRUE((*t)->Authenticate("bearer admin-secret-1").ok());
  EXPECT_TRUE((*t)->Authenticate("BEARER admin-secret-1").ok());
  EXPECT_FALSE((*t)->Authenticate("Bearer ADMIN-SECRET-1").ok());
  EXPECT_FALSE((*t)->Authenticate("Basic admin-secret-1").ok());
  EXPECT_EQ((*t)->Authenticate("").status().code(), StatusCode::kUnauthenticated);
  EXPECT_EQ((*t)->Authenticate("Basic abc").status().code(), StatusCode::kUnauthenticated);
}

TEST(TokenTableTest, RejectsBadFiles) {
  EXPECT_FALSE(TokenTable::Parse("tokens: [{token: short, user: a, role: admin}]", "f").ok());
  EXPECT_FALSE(TokenTable::Parse("tokens: [{token: longenough, user: a, role: root}]", "f").ok());
  EXPECT_FALSE(TokenTable::Parse("tokens: [{token: longenough, user: a, role: admin, extra: 1}]", "f").ok());
  auto dup = TokenTable::Parse(
      "tokens: [{token: longenough, user: a, role: admin}, {token: longenough, user: b, role: admin}]", "f");
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.status().pos().line, 1);
}

TEST(LoggerTest, LogfmtQuotesUntrustedValues) {
  Logger l;
  std::string line =
      l.Format_(LogLevel::kInfo, "hello world", {{"workload", "a/b"}, {"evil", "x\" injected=1\nnext"}});
  EXPECT_NE(line.find("msg=\"hello world\""), std::string::npos);
  EXPECT_NE(line.find("workload=a/b"), std::string::npos);
  EXPECT_NE(line.find("evil=\"x\\\" injected=1\\nnext\""), std::string::npos);
  EXPECT_EQ(line.find('\n'), std::string::npos);
}

}  // namespace
}  // namespace artel::server
