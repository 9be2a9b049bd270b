// The HTTP/1.1 client of `artel`: one request per connection, plain TCP or
// TLS (OpenSSL, linked statically into artel). It replaces cpp-httplib's
// client in the CLI because the shared libraries that came with it
// (libcpp-httplib, libssl, libcrypto) cost about 5 ms of every `artel`
// start, more than the request itself (docs/performance.md, "Submit to done
// against Slurm"). OpenSSL is initialised only for an https:// server.
//
// Thread-safety: stateless functions; Call() may run on any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace artel::cli::http {

struct Url {
  bool tls = false;
  std::string host;  // without the brackets of an IPv6 literal
  int port = 0;
};

// Parses "http://host[:port][/...]", "https://...", "[v6]:port". The path
// of a server address is ignored (as cpp-httplib's client did). Returns
// false with *err set when the address is not one.
bool ParseUrl(std::string_view url, Url* out, std::string* err);

enum class Error {
  kNone,
  kAddress,     // not a valid server address
  kConnection,  // resolve or connect failed, or timed out
  kTls,         // TLS handshake or certificate verification failed
  kIo,          // the connection broke or timed out while talking
  kProtocol,    // the answer is not HTTP/1.x
};

struct Options {
  std::string ca_file;    // TLS: CA bundle (default: the system's)
  bool insecure = false;  // TLS: no certificate or host name check
  int connect_timeout_ms = 5000;
  int io_timeout_ms = 60000;
};

struct Reply {
  int status = 0;
  std::string body;
  Error error = Error::kNone;
  std::string detail;  // what failed, for messages
};

Reply Call(const std::string& server, const std::string& method, const std::string& target,
           const std::vector<std::pair<std::string, std::string>>& headers, const std::string& body,
           const Options& opts);

// Response parsing, incremental: Feed() the bytes as they arrive until it
// returns true (complete) or sets *err. `eof` says the peer closed; a body
// without a length ends there. Exposed for tests.
class ResponseParser {
 public:
  // Returns true once the whole response is in; false for "more bytes".
  bool Feed(std::string_view bytes, bool eof, std::string* err);
  int status() const { return status_; }
  std::string& body() { return body_; }

 private:
  bool Parse(bool eof, std::string* err);
  void TakeBody();
  enum class State { kHead, kLength, kChunkSize, kChunkData, kChunkCrlf, kTrailer, kUntilClose, kDone };
  State state_ = State::kHead;
  std::string buf_;
  size_t pos_ = 0;
  int status_ = 0;
  uint64_t remaining_ = 0;
  std::string body_;
};

}  // namespace artel::cli::http
