// The CLI's HTTP/1.1 client (cli/http.h): server addresses and response
// framing (lengths, chunks, bodies that end with the connection, interim
// answers), fed in pieces as a socket delivers them.

#include "cli/http.h"

#include <gtest/gtest.h>

#include <string>

namespace artel::cli::http {
namespace {

TEST(HttpUrlTest, SchemesHostsAndPorts) {
  Url u;
  std::string err;
  ASSERT_TRUE(ParseUrl("http://127.0.0.1:7433", &u, &err)) << err;
  EXPECT_FALSE(u.tls);
  EXPECT_EQ(u.host, "127.0.0.1");
  EXPECT_EQ(u.port, 7433);
  ASSERT_TRUE(ParseUrl("https://gpu-box.example/api/ignored?x=1", &u, &err)) << err;
  EXPECT_TRUE(u.tls);
  EXPECT_EQ(u.host, "gpu-box.example");
  EXPECT_EQ(u.port, 443);
  ASSERT_TRUE(ParseUrl("http://[::1]:8080/", &u, &err)) << err;
  EXPECT_EQ(u.host, "::1");
  EXPECT_EQ(u.port, 8080);
  ASSERT_TRUE(ParseUrl("localhost", &u, &err)) << err;  // no scheme: http
  EXPECT_EQ(u.port, 80);

  EXPECT_FALSE(ParseUrl("ftp://host", &u, &err));
  EXPECT_NE(err.find("unsupported scheme"), std::string::npos) << err;
  EXPECT_FALSE(ParseUrl("http://host:0", &u, &err));
  EXPECT_NE(err.find("not 1-65535"), std::string::npos) << err;
  EXPECT_FALSE(ParseUrl("http://host:99999", &u, &err));
  EXPECT_FALSE(ParseUrl("http://host:12x", &u, &err));
  EXPECT_FALSE(ParseUrl("http://:80", &u, &err));
  EXPECT_NE(err.find("no host"), std::string::npos) << err;
  EXPECT_FALSE(ParseUrl("http://[::1", &u, &err));
  EXPECT_FALSE(ParseUrl("http://[::1]x", &u, &err));
}

// Feeds `bytes` one piece of `step` bytes at a time, then the end of the
// connection when `close` says so.
struct Fed {
  bool done = false;
  int status = 0;
  std::string body, err;
};
Fed FeedInPieces(const std::string& bytes, size_t step, bool close) {
  ResponseParser p;
  Fed f;
  for (size_t i = 0; i < bytes.size() && !f.done && f.err.empty(); i += step) {
    f.done = p.Feed(std::string_view(bytes).substr(i, step), false, &f.err);
  }
  if (!f.done && f.err.empty() && close) f.done = p.Feed("", true, &f.err);
  f.status = p.status();
  f.body = p.body();
  return f;
}

TEST(HttpResponseTest, ContentLengthInAnyPieces) {
  const std::string r =
      "HTTP/1.1 201 Created\r\ncontent-type: application/json\r\nContent-Length: 11\r\n\r\n{\"ok\":true}";
  for (size_t step : {1, 2, 7, 64, 4096}) {
    Fed f = FeedInPieces(r, step, false);
    EXPECT_TRUE(f.done) << step;
    EXPECT_EQ(f.err, "") << step;
    EXPECT_EQ(f.status, 201);
    EXPECT_EQ(f.body, "{\"ok\":true}");
  }
}

TEST(HttpResponseTest, ChunkedWithExtensionsAndTrailer) {
  const std::string r =
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5;name=x\r\nhello\r\n1\r\n \r\nA\r\n0123456789\r\n0\r\nX-Trailer: y\r\n\r\n";
  for (size_t step : {1, 3, 1000}) {
    Fed f = FeedInPieces(r, step, false);
    EXPECT_TRUE(f.done) << step;
    EXPECT_EQ(f.err, "") << step;
    EXPECT_EQ(f.body, "hello 0123456789") << step;
  }
  Fed bad = FeedInPieces("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 4, false);
  EXPECT_EQ(bad.err, "bad chunk size");
  Fed cut = FeedInPieces("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel", 4, true);
  EXPECT_FALSE(cut.done);
  EXPECT_NE(cut.err.find("closed in a chunked body"), std::string::npos) << cut.err;
}

TEST(HttpResponseTest, BodyUntilCloseAndNoBody) {
  Fed f = FeedInPieces("HTTP/1.0 200 OK\r\n\r\nall of it", 3, false);
  EXPECT_FALSE(f.done);  // the end is the connection's end
  f = FeedInPieces("HTTP/1.0 200 OK\r\n\r\nall of it", 3, true);
  EXPECT_TRUE(f.done);
  EXPECT_EQ(f.body, "all of it");
  f = FeedInPieces("HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n", 5, false);
  EXPECT_TRUE(f.done);
  EXPECT_EQ(f.status, 204);
  EXPECT_EQ(f.body, "");
}

TEST(HttpResponseTest, InterimAnswersAreSkipped) {
  Fed f = FeedInPieces("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 409 Conflict\r\nContent-Length: 2\r\n\r\nno", 4,
                       false);
  EXPECT_TRUE(f.done);
  EXPECT_EQ(f.status, 409);
  EXPECT_EQ(f.body, "no");
}

TEST(HttpResponseTest, MalformedAndTruncatedAnswers) {
  EXPECT_EQ(FeedInPieces("SSH-2.0-OpenSSH\r\n\r\n", 100, false).err, "not an HTTP/1.x response");
  EXPECT_EQ(FeedInPieces("HTTP/1.1 2x0 OK\r\n\r\n", 100, false).err, "bad status line");
  EXPECT_EQ(FeedInPieces("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", 100, false).err,
            "bad Content-Length");
  Fed f = FeedInPieces("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", 100, true);
  EXPECT_FALSE(f.done);
  EXPECT_NE(f.err.find("in the middle of the body"), std::string::npos) << f.err;
  f = FeedInPieces("HTTP/1.1 200 OK\r\nContent-", 100, true);
  EXPECT_NE(f.err.find("before the response header ended"), std::string::npos) << f.err;
}

}  // namespace
}  // namespace artel::cli::http
