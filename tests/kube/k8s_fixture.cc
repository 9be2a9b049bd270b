#include "k8s_fixture.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#ifndef ARTEL_SOURCE_DIR
#error "ARTEL_SOURCE_DIR must be defined (tests/kube/CMakeLists.txt)"
#endif
#ifndef ARTEL_K8S_DEFAULT_BIN
#error "ARTEL_K8S_DEFAULT_BIN must be defined (tests/kube/CMakeLists.txt)"
#endif

extern char** environ;

namespace artel::testing {
namespace {

struct ProcessResult {
  int exit_code = -1;  // -1: did not start or was killed by a signal
  std::string out, err;
};

void SetCloexec(int fd) { fcntl(fd, F_SETFD, fcntl(fd, F_GETFD) | FD_CLOEXEC); }

// Runs argv[0] (a path) with `env_extra` added to the environment, feeds
// `stdin_data`, and collects stdout and stderr (both drained together, so
// neither pipe can fill up and stall the child).
ProcessResult Run(const std::vector<std::string>& argv, const std::string& stdin_data,
                  const std::vector<std::string>& env_extra = {}) {
  ProcessResult r;
  // A child that exits before reading all of stdin must not kill the test with SIGPIPE.
  signal(SIGPIPE, SIG_IGN);
  int in[2], out[2], err[2];
  if (pipe(in) != 0) return r;
  if (pipe(out) != 0) {
    close(in[0]), close(in[1]);
    return r;
  }
  if (pipe(err) != 0) {
    close(in[0]), close(in[1]), close(out[0]), close(out[1]);
    return r;
  }
  // All six close on exec: the child's 0/1/2 are dup2 copies (which do not
  // inherit FD_CLOEXEC). A pipe end left open in the script would be inherited
  // by the daemons it starts in the background and this read would never end.
  for (int fd : {in[0], in[1], out[0], out[1], err[0], err[1]}) SetCloexec(fd);
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) env_strings.emplace_back(*e);
  for (const auto& kv : env_extra) {
    std::string key = kv.substr(0, kv.find('=') + 1);
    std::erase_if(env_strings, [&](const std::string& s) { return s.rfind(key, 0) == 0; });
    env_strings.push_back(kv);
  }
  std::vector<char*> cargv, cenv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (const auto& e : env_strings) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);
  pid_t pid = fork();
  if (pid < 0) {
    for (int fd : {in[0], in[1], out[0], out[1], err[0], err[1]}) close(fd);
    r.err = std::string("fork: ") + strerror(errno);
    return r;
  }
  if (pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    execve(cargv[0], cargv.data(), cenv.data());
    const char* msg = "exec failed\n";
    (void)!write(2, msg, strlen(msg));
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  close(err[1]);
  size_t written = 0;
  int in_fd = in[1];
  if (stdin_data.empty()) {
    close(in_fd);
    in_fd = -1;
  } else {
    fcntl(in_fd, F_SETFL, fcntl(in_fd, F_GETFL) | O_NONBLOCK);
  }
  int out_fd = out[0], err_fd = err[0];
  char buf[65536];
  while (out_fd >= 0 || err_fd >= 0 || in_fd >= 0) {
    struct pollfd fds[3];
    int n = 0;
    if (out_fd >= 0) fds[n++] = {out_fd, POLLIN, 0};
    if (err_fd >= 0) fds[n++] = {err_fd, POLLIN, 0};
    if (in_fd >= 0) fds[n++] = {in_fd, POLLOUT, 0};
    if (poll(fds, n, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < n; ++i) {
      if (fds[i].revents == 0) continue;
      int fd = fds[i].fd;
      if (fd == in_fd) {
        ssize_t w = write(fd, stdin_data.data() + written, stdin_data.size() - written);
        if (w > 0) written += static_cast<size_t>(w);
        if (w < 0 && errno != EAGAIN && errno != EINTR) written = stdin_data.size();
        if (written >= stdin_data.size()) {
          close(in_fd);
          in_fd = -1;
        }
        continue;
      }
      ssize_t got = read(fd, buf, sizeof buf);
      if (got > 0) {
        (fd == out_fd ? r.out : r.err).append(buf, static_cast<size_t>(got));
      } else if (got == 0 || (errno != EAGAIN && errno != EINTR)) {
        close(fd);
        (fd == out_fd ? out_fd : err_fd) = -1;
      }
    }
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\r')) s.pop_back();
  return s;
}

std::string ReadAll(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// KEY=VALUE lines.
std::string EnvValue(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key + "=", 0) == 0) return line.substr(key.size() + 1);
  }
  return "";
}

}  // namespace

Result<std::unique_ptr<K8sCluster>> K8sCluster::Start(const K8sOptions& options) {
  std::unique_ptr<K8sCluster> c(new K8sCluster());
  const char* bin = getenv("ARTEL_K8S_BIN");
  c->bin_ = (bin != nullptr && *bin != '\0') ? bin : ARTEL_K8S_DEFAULT_BIN;
  c->script_ = std::string(ARTEL_SOURCE_DIR) + "/scripts/k8s-up.sh";
  for (const char* b : {"kube-apiserver", "etcd", "kubectl"}) {
    std::string path = c->bin_ + "/" + b;
    if (access(path.c_str(), X_OK) != 0) {
      return FailedPrecondition("Kubernetes test binary " + path +
                                " is missing: run tools/k8s/build.sh (make test does) or set ARTEL_K8S_BIN");
    }
  }
  const char* tmp = getenv("TMPDIR");
  std::string templ = std::string((tmp != nullptr && *tmp != '\0') ? tmp : "/tmp") + "/artel-k8s-XXXXXX";
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr)
    return Status(StatusCode::kInternal, "mkdtemp: " + std::string(strerror(errno)));
  c->dir_ = buf.data();
  const char* keep = getenv("ARTEL_K8S_KEEP");
  c->keep_dir_ = keep != nullptr && std::string(keep) == "1";
  c->kubeconfig_ = c->dir_ + "/kubeconfig";

  std::vector<std::string> args = {"start", c->dir_, "--owner-pid", std::to_string(getpid())};
  if (options.controller_manager) args.push_back("--controller-manager");
  if (options.scheduler) args.push_back("--scheduler");
  if (options.fake_kubelet) args.push_back("--fake-kubelet");
  if (!options.fake_nodes.empty()) {
    args.push_back("--nodes");
    args.push_back(options.fake_nodes);
  }
  if (!options.kueue_crds) args.push_back("--no-crds");
  if (!options.watch_cache) args.push_back("--no-watch-cache");
  Status st = c->Script(args);
  if (!st.ok()) return st;  // the script stopped what it had started; ~K8sCluster removes the dir
  std::string env = ReadAll(c->dir_ + "/env");
  c->apiserver_port_ = atoi(EnvValue(env, "APISERVER_PORT").c_str());
  c->etcd_port_ = atoi(EnvValue(env, "ETCD_PORT").c_str());
  if (c->apiserver_port_ <= 0 || c->etcd_port_ <= 0) {
    return Status(StatusCode::kInternal, "k8s-up.sh wrote no ports to " + c->dir_ + "/env");
  }
  return c;
}

K8sCluster::~K8sCluster() {
  if (dir_.empty()) return;
  if (!script_.empty()) (void)Script({"stop", dir_});
  if (!keep_dir_) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
}

Status K8sCluster::Script(const std::vector<std::string>& args, std::string* out) {
  std::vector<std::string> argv = {"/bin/bash", script_};
  argv.insert(argv.end(), args.begin(), args.end());
  ProcessResult r = Run(argv, "", {"ARTEL_K8S_BIN=" + bin_});
  if (out != nullptr) *out = r.out;
  if (r.exit_code != 0) {
    std::string what = args.empty() ? "" : args[0];
    return FailedPrecondition("scripts/k8s-up.sh " + what + " failed (exit " + std::to_string(r.exit_code) +
                              "): " + Trim(r.err));
  }
  return Status::Ok();
}

std::string K8sCluster::server() const { return "https://127.0.0.1:" + std::to_string(apiserver_port_); }
std::string K8sCluster::etcd_url() const { return "http://127.0.0.1:" + std::to_string(etcd_port_); }

int K8sCluster::pid(const std::string& component) const {
  std::istringstream in(ReadAll(dir_ + "/pids"));
  std::string name;
  int pid = -1;
  while (in >> name >> pid) {
    if (name == component) return pid;
  }
  return -1;
}

Result<std::string> K8sCluster::Kubectl(const std::vector<std::string>& args, const std::string& stdin_data) {
  return KubectlAs(kubeconfig_, args, stdin_data);
}

Result<std::string> K8sCluster::KubectlAs(const std::string& kubeconfig, const std::vector<std::string>& args,
                                          const std::string& stdin_data) {
  std::vector<std::string> argv = {bin_ + "/kubectl", "--kubeconfig", kubeconfig};
  argv.insert(argv.end(), args.begin(), args.end());
  ProcessResult r = Run(argv, stdin_data);
  if (r.exit_code != 0) {
    std::string cmd = "kubectl";
    for (const auto& a : args) cmd += " " + a;
    return FailedPrecondition(cmd + " failed (exit " + std::to_string(r.exit_code) + "): " + Trim(r.err));
  }
  return r.out;
}

Result<std::string> K8sCluster::UserKubeconfig(const std::string& user,
                                               const std::vector<std::string>& groups) {
  std::vector<std::string> args = {"user", dir_, user};
  args.insert(args.end(), groups.begin(), groups.end());
  std::string out;
  Status st = Script(args, &out);
  if (!st.ok()) return st;
  return Trim(out);
}

Status K8sCluster::StopApiServer() { return Script({"stop-apiserver", dir_}); }
Status K8sCluster::StartApiServer() { return Script({"start-apiserver", dir_}); }
Status K8sCluster::RestartApiServer() { return Script({"restart-apiserver", dir_}); }
Status K8sCluster::CompactEtcd() { return Script({"compact", dir_}); }

std::string K8sCluster::LogTail(const std::string& component, size_t max_bytes) const {
  std::string text = ReadAll(dir_ + "/" + component + ".log");
  if (text.size() > max_bytes) text = text.substr(text.size() - max_bytes);
  return text;
}

}  // namespace artel::testing
