// Limits of arteld's HTTP layer that hold before authentication (issue 10,
// section 5; audit D2, D4, D12, D16): the body limit for chunked bodies,
// authentication from the headers before the body, at-once answers for huge
// or missing Content-Length, header/body/idle timeouts, the per-peer cap and
// strict framing. Raw sockets against the real daemon.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../server/harness.h"
#include "http_raw.h"

namespace artel::testing {
namespace {

class HttpLimitsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(TempDir("http-limits"));
    WriteFile(*dir_ + "/cluster.yaml", kTwoTeamsManifests);
    WriteFile(*dir_ + "/tokens.yaml", kTokensYaml);
    d_ = new Arteld(*dir_);
    std::string err;
    ASSERT_TRUE(d_->Start(
        {"--fake-gpus", "2xA100-80GB", "--tokens", *dir_ + "/tokens.yaml", "-m", *dir_ + "/cluster.yaml",
         "--max-body-bytes", "65536", "--http-header-timeout-ms", "1000", "--http-body-timeout-ms", "1000",
         "--http-idle-timeout-ms", "3000", "--http-max-connections-per-peer", "40"},
        &err))
        << err;
  }
  static void TearDownTestSuite() {
    EXPECT_TRUE(d_->Stop());
    delete d_;
    std::filesystem::remove_all(*dir_);
    delete dir_;
  }
  static std::string Auth(const std::string& token = kAdminToken) {
    return "Authorization: Bearer " + token + "\r\n";
  }
  static int port() { return d_->port(); }

  static std::string* dir_;
  static Arteld* d_;
};
std::string* HttpLimitsTest::dir_ = nullptr;
Arteld* HttpLimitsTest::d_ = nullptr;

// D2: a chunked body is held to --max-body-bytes while it is read, and is
// never buffered whole: 413, and the daemon's peak RSS does not grow by the
// body size.
TEST_F(HttpLimitsTest, ChunkedBodyOverLimitGets413WithoutBuffering) {
  for (bool authenticated : {true, false}) {
    SCOPED_TRACE(authenticated ? "authenticated" : "unauthenticated");
    long hwm_before = ProcStatusKb(d_->pid(), "VmHWM");
    ASSERT_GT(hwm_before, 0);
    int fd = RawConnect(port());
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(RawSend(fd, "POST /api/v1/apply HTTP/1.1\r\nHost: x\r\n" + (authenticated ? Auth() : "") +
                                "Content-Type: application/yaml\r\nTransfer-Encoding: chunked\r\n\r\n"));
    // Up to 64 MiB in 64 KiB chunks, until the server answers or closes.
    const std::string data(64 << 10, 'a');
    char hex[32];
    std::snprintf(hex, sizeof hex, "%zx\r\n", data.size());
    const std::string chunk = std::string(hex) + data + "\r\n";
    size_t sent = 0;
    for (int i = 0; i < 1024; ++i) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 0) > 0) break;  // the answer (or the close) is there
      if (!RawSend(fd, chunk)) break;
      sent += data.size();
    }
    RawResponse r = RawRead(fd, 5000);
    ::close(fd);
    EXPECT_EQ(r.status, authenticated ? 413 : 401) << r.head << r.body << " sent " << sent;
    long hwm_after = ProcStatusKb(d_->pid(), "VmHWM");
    EXPECT_LT(hwm_after - hwm_before, 16 * 1024)
        << "peak RSS grew by " << (hwm_after - hwm_before) << " KiB after sending " << sent / 1024 << " KiB";
  }
  EXPECT_EQ(d_->Get("/healthz").status, 200);
}

// A chunk whose declared size passes the limit is refused before its data.
TEST_F(HttpLimitsTest, ChunkSizeOverLimitGets413AtOnce) {
  int64_t t0 = NowMsForTest();
  RawResponse r = RawRequest(port(),
                             "POST /api/v1/apply HTTP/1.1\r\nHost: x\r\n" + Auth() +
                                 "Transfer-Encoding: chunked\r\n\r\nffffffff\r\nabc",
                             5000);
  EXPECT_EQ(r.status, 413) << r.head;
  EXPECT_LT(NowMsForTest() - t0, 1000);
}

// Authentication comes from the headers, before the body: an unauthenticated
// POST announcing a large body gets 401 at once, without sending the body,
// and the connection is closed.
TEST_F(HttpLimitsTest, UnauthenticatedLargeBodyGets401BeforeTheBody) {
  for (const std::string& auth :
       {std::string(), std::string("Authorization: Bearer not-a-token-at-all\r\n")}) {
    int fd = RawConnect(port());
    ASSERT_GE(fd, 0);
    int64_t t0 = NowMsForTest();
    ASSERT_TRUE(RawSend(fd, "POST /api/v1/workloads HTTP/1.1\r\nHost: x\r\n" + auth +
                                "Content-Type: application/json\r\nContent-Length: 50000\r\n\r\n"));
    RawResponse r = RawRead(fd, 5000);
    int64_t took = NowMsForTest() - t0;
    EXPECT_EQ(r.status, 401) << r.head;
    EXPECT_NE(r.head.find("WWW-Authenticate: Bearer"), std::string::npos) << r.head;
    EXPECT_LT(took, 1000);
    EXPECT_TRUE(RawWaitClosed(fd, 3000));
    ::close(fd);
  }
}

// D12: Content-Length 10^12 gets 413 at once (not after a read timeout).
TEST_F(HttpLimitsTest, HugeContentLengthGets413AtOnce) {
  int fd = RawConnect(port());
  ASSERT_GE(fd, 0);
  int64_t t0 = NowMsForTest();
  ASSERT_TRUE(RawSend(fd, "POST /api/v1/workloads HTTP/1.1\r\nHost: x\r\n" + Auth() +
                              "Content-Type: application/json\r\nContent-Length: 1000000000000\r\n\r\n"));
  RawResponse r = RawRead(fd, 5000);
  EXPECT_EQ(r.status, 413) << r.head;
  EXPECT_LT(NowMsForTest() - t0, 1000);
  EXPECT_TRUE(RawWaitClosed(fd, 3000));
  ::close(fd);
  // A length just over the limit too.
  r = RawRequest(port(),
                 "POST /api/v1/workloads HTTP/1.1\r\nHost: x\r\n" + Auth() + "Content-Length: 65537\r\n\r\n",
                 5000);
  EXPECT_EQ(r.status, 413) << r.head;
}

// D12: a POST without Content-Length or Transfer-Encoding has an empty body
// (RFC 9112 6.3) and is answered at once, on a connection kept alive.
TEST_F(HttpLimitsTest, PostWithoutContentLengthAnswersAtOnce) {
  int fd = RawConnect(port());
  ASSERT_GE(fd, 0);
  for (int i = 0; i < 2; ++i) {
    int64_t t0 = NowMsForTest();
    ASSERT_TRUE(
        RawSend(fd, "POST /api/v1/namespaces/team-a/workloads/nothing-here/cancel HTTP/1.1\r\nHost: x\r\n" +
                        Auth() + "\r\n"));
    RawResponse r = RawRead(fd, 5000);
    EXPECT_EQ(r.status, 404) << r.head << r.body;
    EXPECT_LT(NowMsForTest() - t0, 1000);
  }
  ::close(fd);
}

// D4: a request head must arrive within the header timeout, however slowly
// it trickles; a silent connection is closed too.
TEST_F(HttpLimitsTest, SlowlorisIsClosedAfterTheHeaderTimeout) {
  int silent = RawConnect(port());
  int partial = RawConnect(port());
  int trickle = RawConnect(port());
  ASSERT_GE(silent, 0);
  ASSERT_GE(partial, 0);
  ASSERT_GE(trickle, 0);
  int64_t t0 = NowMsForTest();
  ASSERT_TRUE(RawSend(partial, "GET /healthz HTTP/1.1\r\nHost: x\r\n"));
  ASSERT_TRUE(RawSend(trickle, "GET /healthz HTTP/1.1\r\n"));
  // One header byte every 100 ms; the server must close it anyway.
  bool trickle_closed = false;
  while (NowMsForTest() - t0 < 5000) {
    pollfd p{trickle, POLLIN, 0};
    if (::poll(&p, 1, 100) > 0) {
      trickle_closed = RawWaitClosed(trickle, 1000);
      break;
    }
    if (!RawSend(trickle, "X")) {
      trickle_closed = true;
      break;
    }
  }
  int64_t trickle_ms = NowMsForTest() - t0;
  EXPECT_TRUE(trickle_closed);
  EXPECT_GE(trickle_ms, 900);
  EXPECT_LT(trickle_ms, 4000);
  EXPECT_TRUE(RawWaitClosed(partial, 4000));
  EXPECT_TRUE(RawWaitClosed(silent, 4000));
  ::close(silent);
  ::close(partial);
  ::close(trickle);
}

// A body that stops arriving gets 408 after the body timeout.
TEST_F(HttpLimitsTest, StalledBodyGets408) {
  int fd = RawConnect(port());
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(RawSend(
      fd, "POST /api/v1/workloads HTTP/1.1\r\nHost: x\r\n" + Auth() + "Content-Length: 100\r\n\r\n{\"a\":"));
  RawResponse r = RawRead(fd, 4000);
  EXPECT_EQ(r.status, 408) << r.head;
  EXPECT_TRUE(RawWaitClosed(fd, 3000));
  ::close(fd);
}

// An idle keep-alive connection is closed after the idle timeout.
TEST_F(HttpLimitsTest, IdleKeepAliveIsClosed) {
  int fd = RawConnect(port());
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(RawSend(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
  RawResponse r = RawRead(fd, 3000);
  ASSERT_EQ(r.status, 200);
  int64_t t0 = NowMsForTest();
  EXPECT_TRUE(RawWaitClosed(fd, 8000));
  EXPECT_GE(NowMsForTest() - t0, 2500);
  ::close(fd);
}

// At most --http-max-connections-per-peer connections from one address.
TEST_F(HttpLimitsTest, PerPeerCapIsEnforced) {
  std::vector<int> fds;
  // Hold 40 (the cap), each having done a request so that all are counted.
  for (int i = 0; i < 40; ++i) {
    int fd = RawConnect(port());
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(RawSend(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
    RawResponse r = RawRead(fd, 3000);
    ASSERT_EQ(r.status, 200) << i;
    fds.push_back(fd);
  }
  RawResponse over = RawRequest(port(), "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", 3000);
  EXPECT_TRUE(over.status == 503 || (over.status == 0 && over.closed)) << over.status << over.head;
  ::close(fds.back());
  fds.pop_back();
  // Once one closes, a new connection is served again.
  EXPECT_TRUE(WaitFor(
      [&] { return RawRequest(port(), "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", 1000).status == 200; },
      3000));
  for (int fd : fds) ::close(fd);
}

// Strict framing (request smuggling): 400 and close.
TEST_F(HttpLimitsTest, InvalidFramingGets400) {
  const std::string p = "POST /api/v1/workloads HTTP/1.1\r\nHost: x\r\n" + Auth();
  std::vector<std::pair<std::string, std::string>> cases = {
      {"CL and TE", p + "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"},
      {"bad chunk size", p + "Transfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n"},
      {"no CRLF after chunk", p + "Transfer-Encoding: chunked\r\n\r\n3\r\nabcXX0\r\n\r\n"},
      {"two lengths", p + "Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}"},
      {"bad length", p + "Content-Length: 1x\r\n\r\n{}"},
      {"negative length", p + "Content-Length: -1\r\n\r\n"},
      {"folded header", p + "X-A: b\r\n c\r\nContent-Length: 2\r\n\r\n{}"},
      {"two Authorization headers",
       "GET /api/v1/whoami HTTP/1.1\r\nHost: x\r\n" + Auth() + Auth(kTeamAToken) + "\r\n"},
      {"bad request line", "GET /healthz\r\n\r\n"},
  };
  for (const auto& [name, req] : cases) {
    RawResponse r = RawRequest(port(), req, 3000);
    EXPECT_EQ(r.status, 400) << name << ": " << r.head << r.body;
  }
  RawResponse te = RawRequest(port(), p + "Transfer-Encoding: gzip\r\n\r\n", 3000);
  EXPECT_EQ(te.status, 501) << te.head;
  RawResponse big =
      RawRequest(port(), "GET /healthz HTTP/1.1\r\nX-Big: " + std::string(40000, 'a') + "\r\n\r\n", 3000);
  EXPECT_EQ(big.status, 431) << big.head;
}

// D16: the scheme of Authorization is case-insensitive (RFC 7235 2.1).
TEST_F(HttpLimitsTest, BearerSchemeIsCaseInsensitive) {
  for (const std::string scheme : {"Bearer", "bearer", "BEARER"}) {
    RawResponse r = RawRequest(
        port(),
        "GET /api/v1/whoami HTTP/1.1\r\nHost: x\r\nAuthorization: " + scheme + " " + kTeamAToken + "\r\n\r\n",
        3000);
    EXPECT_EQ(r.status, 200) << scheme << ": " << r.head << r.body;
    EXPECT_NE(r.body.find("team-a"), std::string::npos) << r.body;
  }
}

// A chunked body within the limit still works, and keep-alive carries on.
TEST_F(HttpLimitsTest, ChunkedBodyWithinLimitWorks) {
  std::string body = Workload("team-a", "chunky", "default", 0, {"true"}).dump();
  std::string chunked;
  for (size_t i = 0; i < body.size(); i += 7) {
    std::string part = body.substr(i, 7);
    char hex[16];
    std::snprintf(hex, sizeof hex, "%zx", part.size());
    chunked += std::string(hex) + "\r\n" + part + "\r\n";
  }
  chunked += "0\r\n\r\n";
  int fd = RawConnect(port());
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(RawSend(fd, "POST /api/v1/workloads HTTP/1.1\r\nHost: x\r\n" + Auth() +
                              "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n" +
                              chunked + "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
  std::string rest;
  RawResponse r = RawRead(fd, 5000, &rest);
  EXPECT_EQ(r.status, 201) << r.head << r.body;
  RawResponse h = RawRead(fd, 5000, &rest);
  EXPECT_EQ(h.status, 200) << h.head;
  ::close(fd);
}

// Watch streams (SSE) run on their own threads and deliver events.
TEST_F(HttpLimitsTest, WatchStreamStillWorks) {
  int fd = RawConnect(port());
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(RawSend(fd, "GET /api/v1/watch?since=0 HTTP/1.1\r\nHost: x\r\n" + Auth() + "\r\n"));
  std::string got;
  int64_t deadline = NowMsForTest() + 5000;
  auto has_event = [&] {
    size_t e = got.find("\r\n\r\n");
    return e != std::string::npos &&
           (got.find("data: ", e) != std::string::npos || got.find(": keep-alive", e) != std::string::npos);
  };
  while (!has_event()) {
    int64_t left = deadline - NowMsForTest();
    if (left <= 0) break;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left)) <= 0) continue;
    char tmp[4096];
    ssize_t n = ::recv(fd, tmp, sizeof tmp, 0);
    if (n <= 0) break;
    got.append(tmp, static_cast<size_t>(n));
  }
  EXPECT_EQ(got.rfind("HTTP/1.1 200", 0), 0u) << got;
  EXPECT_NE(got.find("text/event-stream"), std::string::npos) << got;
  EXPECT_TRUE(has_event()) << got;
  ::close(fd);
  EXPECT_EQ(d_->Get("/healthz").status, 200);
}

}  // namespace
}  // namespace artel::testing
