// Audit D4: idle keep-alive and slowloris connections must not take the API
// down. 200 idle keep-alive connections and 100 slowloris connections are
// held open while /healthz keeps answering, each request within 1 s; then
// the slowloris connections are closed by the header timeout.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../server/harness.h"
#include "http_raw.h"

namespace artel::testing {
namespace {

TEST(HttpOverloadTest, HealthzAnswersWhileIdleAndSlowConnectionsAreHeld) {
  std::string dir = TempDir("http-overload");
  WriteFile(dir + "/tokens.yaml", kTokensYaml);
  Arteld d(dir);
  std::string err;
  ASSERT_TRUE(d.Start(
      {"--fake-gpus", "2xA100-80GB", "--tokens", dir + "/tokens.yaml", "--http-header-timeout-ms", "6000"},
      &err))
      << err;
  std::vector<int> idle, slow;
  for (int i = 0; i < 200; ++i) {
    int fd = RawConnect(d.port());
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(RawSend(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
    ASSERT_EQ(RawRead(fd, 5000).status, 200) << "keep-alive connection " << i;
    idle.push_back(fd);
  }
  int64_t slow_start = NowMsForTest();
  for (int i = 0; i < 100; ++i) {
    int fd = RawConnect(d.port());
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(RawSend(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: "));
    slow.push_back(fd);
  }
  // While all 300 are held: 40 /healthz requests on fresh connections and
  // 40 on one of the idle keep-alive ones, each answered within 1 s.
  int64_t worst = 0;
  for (int i = 0; i < 40; ++i) {
    int64_t t0 = NowMsForTest();
    RawResponse r =
        RawRequest(d.port(), "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 1000);
    ASSERT_EQ(r.status, 200) << "request " << i;
    worst = std::max(worst, NowMsForTest() - t0);
    t0 = NowMsForTest();
    ASSERT_TRUE(RawSend(idle[static_cast<size_t>(i)], "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
    ASSERT_EQ(RawRead(idle[static_cast<size_t>(i)], 1000).status, 200) << "keep-alive request " << i;
    worst = std::max(worst, NowMsForTest() - t0);
  }
  EXPECT_LT(worst, 1000);
  ASSERT_LT(NowMsForTest() - slow_start, 5500)
      << "the slowloris connections were not all held during the check";
  // The slowloris connections are closed after the header timeout.
  int closed = 0;
  for (int fd : slow) closed += RawWaitClosed(fd, 10000) ? 1 : 0;
  EXPECT_EQ(closed, 100);
  EXPECT_GE(NowMsForTest() - slow_start, 5500);
  for (int fd : slow) ::close(fd);
  for (int fd : idle) ::close(fd);
  EXPECT_EQ(d.Get("/healthz").status, 200);
  EXPECT_TRUE(d.Stop());
  std::filesystem::remove_all(dir);
}

// At the total cap, the longest idle keep-alive connection makes room for a
// new one; when none is idle, the new one gets 503 (or is closed).
TEST(HttpOverloadTest, TotalCapClosesTheLongestIdleConnectionFirst) {
  std::string dir = TempDir("http-cap");
  Arteld d(dir);
  std::string err;
  ASSERT_TRUE(d.Start({"--fake-gpus", "2xA100-80GB", "--http-max-connections", "10"}, &err)) << err;
  std::vector<int> idle;
  for (int i = 0; i < 10; ++i) {
    int fd = RawConnect(d.port());
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(RawSend(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
    ASSERT_EQ(RawRead(fd, 5000).status, 200) << i;
    idle.push_back(fd);
  }
  // An 11th connection is served once the others have been idle for 1 s
  // (503 before); the first (longest idle) one is closed for it.
  EXPECT_TRUE(WaitFor(
      [&] {
        return RawRequest(d.port(), "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 1000)
                   .status == 200;
      },
      5000));
  EXPECT_TRUE(RawWaitClosed(idle[0], 3000));
  // Ten connections each with a request in progress (a partial body): none
  // is idle, so the next connection is refused.
  for (int fd : idle) ::close(fd);
  std::vector<int> busy;
  for (int i = 0; i < 10; ++i) {
    int fd = RawConnect(d.port());
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(RawSend(fd, "POST /api/v1/workloads HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n{"));
    busy.push_back(fd);
  }
  // The closes above reach the server asynchronously: poll until refused.
  EXPECT_TRUE(WaitFor(
      [&] {
        RawResponse over = RawRequest(d.port(), "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", 1000);
        return over.status == 503 || (over.status == 0 && over.closed);
      },
      3000));
  for (int fd : busy) ::close(fd);
  EXPECT_TRUE(WaitFor([&] { return d.Get("/healthz").status == 200; }, 3000));
  EXPECT_TRUE(d.Stop());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace artel::testing
