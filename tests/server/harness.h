// Test harness for the arteld integration tests: starts the real daemon
// binary on a free loopback port with a temporary data dir, talks to it over
// HTTP, runs the real `artel` CLI, and polls with deadlines (never sleeps to
// wait for an outcome).
//
// Thread-safety: one harness per test; `Http*` helpers may be called from
// many threads (each call opens its own connection).
#pragma once

#include <httplib.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace artel::testing {

using Json = nlohmann::json;

// Manifests for two teams sharing a cohort: team-a and team-b each own two
// GPUs (flavor a100); both may borrow the other's idle GPUs and reclaim
// their own (reclaimWithinCohort: Any).
extern const char* kTwoTeamsManifests;

// Tokens: admin, tenant of team-a, tenant of team-b.
extern const char* kTokensYaml;
inline constexpr const char* kAdminToken = "admin-token-0001";
inline constexpr const char* kTeamAToken = "team-a-token-0001";
inline constexpr const char* kTeamBToken = "team-b-token-0001";

std::string TempDir(const std::string& tag);
// Writes a file with `mode` (0600 by default: a tokens file must be private).
void WriteFile(const std::string& path, const std::string& text, mode_t mode = 0600);
std::string ReadFile(const std::string& path);

// Polls `pred` every 20 ms until it holds or `timeout_ms` passes.
bool WaitFor(const std::function<bool()>& pred, int timeout_ms);

struct HttpResult {
  int status = 0;
  std::string body;
  Json json() const {
    auto j = Json::parse(body, nullptr, false);
    return j.is_discarded() ? Json() : j;
  }
};

class Arteld {
 public:
  explicit Arteld(std::string dir) : dir_(std::move(dir)) {}
  ~Arteld() { Kill(SIGKILL); }

  // Starts arteld with `--listen 127.0.0.1:0 --data-dir <dir>/data` plus
  // `extra` flags; returns false (and the stderr tail in *error) on failure.
  bool Start(const std::vector<std::string>& extra, std::string* error = nullptr);
  void Kill(int sig);  // sends `sig` and reaps the process
  bool Stop();         // SIGTERM, returns true on a clean exit 0
  // Waits for arteld to exit by itself (a failpoint); false on timeout.
  bool WaitExit(int timeout_ms, int* exit_code = nullptr);
  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }  // -1 when not running
  int port() const { return port_; }
  // http://, or https:// when started with --tls-cert (Get/Post speak http only).
  std::string url() const { return scheme_ + "://127.0.0.1:" + std::to_string(port_); }
  const std::string& dir() const { return dir_; }
  std::string log() const { return ReadFile(dir_ + "/arteld.log"); }

  HttpResult Get(const std::string& path, const std::string& token = kAdminToken) const;
  HttpResult Post(const std::string& path, const std::string& body, const std::string& token = kAdminToken,
                  const std::string& type = "application/json") const;
  HttpResult Delete(const std::string& path, const std::string& token = kAdminToken) const;

  // GET a workload's status.phase ("" when missing).
  std::string Phase(const std::string& ns, const std::string& name) const;

 private:
  std::string dir_;
  pid_t pid_ = -1;
  int port_ = 0;
  std::string scheme_ = "http";
  int exit_status_ = -1;
  friend bool StopArteld(Arteld*);
};

// Runs a command line (argv) with extra environment, captures stdout and
// stderr, returns the exit status.
int RunCommand(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
               std::string* out, std::string* err);

// A Workload JSON body.
Json Workload(const std::string& ns, const std::string& name, const std::string& queue, double gpus,
              std::vector<std::string> command = {}, int priority = 0);

}  // namespace artel::testing
