#include "harness.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>

#include <fstream>
#include <random>
#include <sstream>
#include <thread>

extern char** environ;

namespace artel::testing {
namespace fs = std::filesystem;

const char* kTwoTeamsManifests = R"(apiVersion: v1
kind: Namespace
metadata: {name: team-a, labels: {artel.dev/team: team-a}}
---
apiVersion: v1
kind: Namespace
metadata: {name: team-b, labels: {artel.dev/team: team-b}}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata: {name: a100}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata: {name: prod}
value: 1000
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: team-a}
spec:
  cohortName: shared
  namespaceSelector: {matchLabels: {artel.dev/team: team-a}}
  preemption: {reclaimWithinCohort: Any, withinClusterQueue: LowerPriority}
  resourceGroups:
    - coveredResources: [nvidia.com/gpu]
      flavors:
        - name: a100
          resources: [{name: nvidia.com/gpu, nominalQuota: 2}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: team-b}
spec:
  cohortName: shared
  namespaceSelector: {matchLabels: {artel.dev/team: team-b}}
  preemption: {reclaimWithinCohort: Any, withinClusterQueue: LowerPriority}
  resourceGroups:
    - coveredResources: [nvidia.com/gpu]
      flavors:
        - name: a100
          resources: [{name: nvidia.com/gpu, nominalQuota: 2}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: default, namespace: team-a}
spec: {clusterQueue: team-a}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {name: default, namespace: team-b}
spec: {clusterQueue: team-b}
)";

const char* kTokensYaml = R"(tokens:
  - {token: admin-token-0001, user: root, role: admin}
  - {token: team-a-token-0001, user: alice, role: tenant, namespaces: [team-a]}
  - {token: team-b-token-0001, user: bob, role: tenant, namespaces: [team-b]}
)";

std::string TempDir(const std::string& tag) {
  std::random_device rd;
  fs::path p = fs::temp_directory_path() /
               ("artel-" + tag + "-" + std::to_string(getpid()) + "-" + std::to_string(rd()));
  fs::create_directories(p);
  // Like /tmp: pods run as their namespace's user (not the test's) and may
  // leave marker files here; the test's own files stay 0600.
  fs::permissions(p, fs::perms::all | fs::perms::sticky_bit);
  return p.string();
}

void WriteFile(const std::string& path, const std::string& text, mode_t mode) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return;
  fchmod(fd, mode);  // whatever the umask; arteld refuses a tokens file others may read
  ssize_t n = write(fd, text.data(), text.size());
  (void)n;
  close(fd);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool WaitFor(const std::function<bool()>& pred, int timeout_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (true) {
    if (pred()) return true;
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

bool Arteld::Start(const std::vector<std::string>& extra, std::string* error) {
  std::vector<std::string> args = {ARTELD_BIN, "--listen", "127.0.0.1:0", "--data-dir", dir_ + "/data"};
  args.insert(args.end(), extra.begin(), extra.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int pipefd[2];
  if (pipe(pipefd) != 0) return false;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
  posix_spawn_file_actions_addclose(&fa, pipefd[0]);
  std::string logpath = dir_ + "/arteld.log";
  posix_spawn_file_actions_addopen(&fa, 2, logpath.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  pid_t pid;
  int rc = posix_spawn(&pid, args[0].c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(pipefd[1]);
  if (rc != 0) {
    close(pipefd[0]);
    if (error) *error = "spawn failed";
    return false;
  }
  pid_ = pid;
  // Read stdout until "listening on http://127.0.0.1:PORT".
  std::string buf;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{pipefd[0], POLLIN, 0};
    if (poll(&p, 1, 100) > 0) {
      char tmp[256];
      ssize_t n = read(pipefd[0], tmp, sizeof tmp);
      if (n <= 0) break;
      buf.append(tmp, n);
      // "listening on http://127.0.0.1:PORT", or https:// with --tls-cert.
      auto pos = buf.find("listening on http");
      auto at = pos == std::string::npos ? pos : buf.find("://127.0.0.1:", pos);
      if (at != std::string::npos && buf.find('\n', at) != std::string::npos) {
        scheme_ = buf.substr(pos + 13, at - (pos + 13));
        port_ = std::stoi(buf.substr(at + 13));
        close(pipefd[0]);
        return true;
      }
    }
    int status;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      break;
    }
  }
  close(pipefd[0]);
  if (error) *error = "arteld did not start: " + log();
  Kill(SIGKILL);
  return false;
}

void Arteld::Kill(int sig) {
  if (pid_ <= 0) return;
  kill(pid_, sig);
  int status = 0;
  waitpid(pid_, &status, 0);
  exit_status_ = status;
  pid_ = -1;
}

bool Arteld::WaitExit(int timeout_ms, int* exit_code) {
  if (pid_ <= 0) return false;
  int status = 0;
  if (!WaitFor([&] { return waitpid(pid_, &status, WNOHANG) == pid_; }, timeout_ms)) return false;
  exit_status_ = status;
  pid_ = -1;
  if (exit_code) *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return true;
}

bool Arteld::Stop() {
  if (pid_ <= 0) return false;
  kill(pid_, SIGTERM);
  int status = 0;
  bool done = WaitFor([&] { return waitpid(pid_, &status, WNOHANG) == pid_; }, 30000);
  if (!done) {
    Kill(SIGKILL);
    return false;
  }
  pid_ = -1;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

namespace {
httplib::Headers Auth(const std::string& token) {
  httplib::Headers h;
  if (!token.empty()) h.emplace("Authorization", "Bearer " + token);
  return h;
}
HttpResult From(const httplib::Result& r) {
  HttpResult out;
  if (r) {
    out.status = r->status;
    out.body = r->body;
  }
  return out;
}
}  // namespace

HttpResult Arteld::Get(const std::string& path, const std::string& token) const {
  httplib::Client c("127.0.0.1", port_);
  c.set_read_timeout(30, 0);
  return From(c.Get(path, Auth(token)));
}

HttpResult Arteld::Post(const std::string& path, const std::string& body, const std::string& token,
                        const std::string& type) const {
  httplib::Client c("127.0.0.1", port_);
  c.set_read_timeout(30, 0);
  return From(c.Post(path, Auth(token), body, type));
}

HttpResult Arteld::Delete(const std::string& path, const std::string& token) const {
  httplib::Client c("127.0.0.1", port_);
  return From(c.Delete(path, Auth(token)));
}

std::string Arteld::Phase(const std::string& ns, const std::string& name) const {
  HttpResult r = Get("/api/v1/namespaces/" + ns + "/workloads/" + name);
  if (r.status != 200) return "";
  return r.json()["status"].value("phase", "");
}

int RunCommand(const std::vector<std::string>& args, const std::map<std::string, std::string>& env,
               std::string* out, std::string* err) {
  std::string dir = TempDir("cmd");
  std::string o = dir + "/out", e = dir + "/err";
  std::vector<std::string> envs;
  for (char** p = environ; *p; ++p) envs.emplace_back(*p);
  for (const auto& [k, v] : env) envs.push_back(k + "=" + v);
  std::vector<char*> envp, argv;
  for (auto& s : envs) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> a = args;
  for (auto& s : a) argv.push_back(s.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, o.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, e.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid;
  int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return -1;
  int status = 0;
  waitpid(pid, &status, 0);
  if (out) *out = ReadFile(o);
  if (err) *err = ReadFile(e);
  fs::remove_all(dir);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

Json Workload(const std::string& ns, const std::string& name, const std::string& queue, double gpus,
              std::vector<std::string> command, int priority) {
  Json ps = {{"name", "main"},
             {"count", 1},
             {"requests", {{"nvidia.com/gpu", std::to_string(static_cast<int>(gpus))}}}};
  if (!command.empty()) ps["command"] = command;
  Json spec = {{"queueName", queue}, {"podSets", Json::array({ps})}};
  if (priority) spec["priority"] = priority;
  return {{"apiVersion", "artel.dev/v1alpha1"},
          {"kind", "Workload"},
          {"metadata", {{"name", name}, {"namespace", ns}}},
          {"spec", spec}};
}

}  // namespace artel::testing
