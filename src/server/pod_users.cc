#include "server/pod_users.h"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

namespace artel::server {
namespace {

namespace fs = std::filesystem;

std::string UserText(const PodUser& u) {
  if (u.uid < 0) return "arteld's own user";
  return "uid " + std::to_string(u.uid) + " gid " + std::to_string(u.gid);
}

// The effective capability set, from /proc/self/status.
uint64_t EffectiveCaps() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("CapEff:", 0) == 0) {
      try {
        return std::stoull(line.substr(7), nullptr, 16);
      } catch (...) {
        return 0;
      }
    }
  }
  return 0;
}

// True when a passwd or group entry already names `id`.
bool IdInUse(int64_t id) {
  std::vector<char> buf(16384);
  passwd pw{};
  passwd* pr = nullptr;
  if (getpwuid_r(static_cast<uid_t>(id), &pw, buf.data(), buf.size(), &pr) == 0 && pr != nullptr) return true;
  group gr{};
  group* gp = nullptr;
  return getgrgid_r(static_cast<gid_t>(id), &gr, buf.data(), buf.size(), &gp) == 0 && gp != nullptr;
}

uint64_t Fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

// Deletes everything inside the directory open at `fd`, never following a
// link and never leaving the file system, with raw system calls and no
// allocation: it runs in a child forked from a multithreaded process.
// Returns 0 or the last errno.
int EmptyDirAt(int fd, int depth) {
  struct Dirent64 {
    uint64_t d_ino;
    int64_t d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[1];
  };
  if (depth > 128) return ELOOP;
  alignas(8) char buf[2048];
  int err = 0;
  // Entries deleted while reading may shift the rest: read again from the
  // start until a pass finds nothing left to delete.
  for (bool progress = true; progress;) {
    progress = false;
    if (lseek(fd, 0, SEEK_SET) != 0) return errno;
    for (;;) {
      long n = syscall(SYS_getdents64, fd, buf, sizeof buf);
      if (n <= 0) {
        if (n < 0) err = errno;
        break;
      }
      for (long off = 0; off < n;) {
        const auto* d = reinterpret_cast<const Dirent64*>(buf + off);
        off += d->d_reclen;
        const char* name = reinterpret_cast<const char*>(d) + offsetof(Dirent64, d_name);
        if (name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'))) continue;
        if (unlinkat(fd, name, 0) == 0) {
          progress = true;
          continue;
        }
        if (errno != EISDIR && errno != EPERM) {
          if (errno != ENOENT) err = errno;
          continue;
        }
        int sub = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub < 0 && errno == EACCES && fchmodat(fd, name, 0700, 0) == 0) {
          // A directory the pod made unreadable (as the pod's user, so this
          // can only touch what the pod could touch itself).
          sub = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        }
        if (sub < 0) {
          err = errno;
          continue;
        }
        struct stat top {
        }, st{};
        if (fstat(fd, &top) == 0 && fstat(sub, &st) == 0 && st.st_dev == top.st_dev) {
          if (int e = EmptyDirAt(sub, depth + 1); e != 0) err = e;
        } else {
          err = EXDEV;  // a mount point: not ours to empty
        }
        close(sub);
        if (unlinkat(fd, name, AT_REMOVEDIR) == 0) {
          progress = true;
        } else if (errno != ENOENT) {
          err = errno;
        }
      }
    }
  }
  return err;
}

}  // namespace

bool CanSwitchUsers() {
  // CAP_KILL too: arteld must be able to stop the pods it started.
  constexpr uint64_t kNeeded =
      (1ULL << 0) /* CHOWN */ | (1ULL << 5) /* KILL */ | (1ULL << 6) /* SETGID */ | (1ULL << 7) /* SETUID */;
  return (EffectiveCaps() & kNeeded) == kNeeded;
}

Status CheckDirAccessAs(const std::string& dir, const PodUser& user) {
  auto check = [&]() -> int {
    struct stat st {};
    if (stat(dir.c_str(), &st) != 0) return errno;
    if (!S_ISDIR(st.st_mode)) return ENOTDIR;
    if (access(dir.c_str(), R_OK | X_OK) != 0) return errno;
    return 0;
  };
  int err = 0;
  if (user.uid < 0) {
    err = check();
  } else {
    // A child drops to the user (raw syscalls: it is single-threaded) and
    // lets the kernel decide, so the check is exactly the pod's.
    pid_t pid = fork();
    if (pid < 0) {
      return FailedPrecondition("cannot check working directory " + dir + ": fork: " + std::strerror(errno));
    }
    if (pid == 0) {
      const gid_t g = static_cast<gid_t>(user.gid);
      const uid_t u = static_cast<uid_t>(user.uid);
      if (syscall(SYS_setgroups, 0, nullptr) != 0 || syscall(SYS_setresgid, g, g, g) != 0 ||
          syscall(SYS_setresuid, u, u, u) != 0) {
        _exit(255);
      }
      int e = check();
      _exit(e > 0 && e < 255 ? e : (e == 0 ? 0 : EIO));
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) == 255) {
      return FailedPrecondition("cannot check working directory " + dir + " as " + UserText(user) +
                                ": could not switch to that user");
    }
    err = WEXITSTATUS(status);
  }
  if (err == 0) return Status::Ok();
  return InvalidArgument("working directory " + dir + " is not usable by the pods' user (" + UserText(user) +
                         "): " + std::strerror(err) +
                         "; it must be a directory that user may read and enter (check the mode of it and of "
                         "every directory above it), or omit it to run in the workload's own directory");
}

Status CheckPrivateFile(const std::string& path, const std::string& what) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    return NotFound("cannot read " + what + " " + path + ": " + std::strerror(errno));
  }
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return FailedPrecondition(what + " " + path + " has mode " + mode +
                              ": it is readable or writable by group or others (pods and other users of the "
                              "host could read or change it); run `chmod 600 " +
                              path + "`");
  }
  return Status::Ok();
}

Status RemoveOwnDirectory(const std::string& dir) {
  struct stat st {};
  if (lstat(dir.c_str(), &st) != 0) {
    return errno == ENOENT ? Status::Ok() : FailedPrecondition(dir + ": " + std::strerror(errno));
  }
  if (!S_ISDIR(st.st_mode)) return FailedPrecondition(dir + " is not a directory");
  pid_t pid = fork();
  if (pid < 0) return FailedPrecondition("cannot delete " + dir + ": fork: " + std::strerror(errno));
  if (pid == 0) {
    if (st.st_uid != geteuid()) {
      if (syscall(SYS_setgroups, 0, nullptr) != 0 ||
          syscall(SYS_setresgid, st.st_gid, st.st_gid, st.st_gid) != 0 ||
          syscall(SYS_setresuid, st.st_uid, st.st_uid, st.st_uid) != 0) {
        _exit(2);
      }
    }
    // Contents only; the directory itself is removed by the parent.
    int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int rc = fd < 0 ? errno : EmptyDirAt(fd, 0);
    _exit(rc == 0 ? 0 : 1);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (rmdir(dir.c_str()) != 0 && errno != ENOENT) {
    return FailedPrecondition("cannot delete " + dir + ": " + std::strerror(errno));
  }
  return Status::Ok();
}

Result<std::unique_ptr<PodUsers>> PodUsers::Open(const PodUserOptions& options, const std::string& state_file,
                                                 bool switching) {
  std::unique_ptr<PodUsers> p(new PodUsers(options, state_file, switching));
  std::error_code ec;
  if (!state_file.empty() && fs::exists(state_file, ec)) {
    std::ifstream in(state_file, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    nlohmann::json j = nlohmann::json::parse(ss.str(), nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("namespaces") || !j["namespaces"].is_object()) {
      return FailedPrecondition(
          "pod user allocations " + state_file +
          " are unreadable (expected {\"namespaces\": {\"<ns>\": <uid>}}); fix or restore the "
          "file: deleting it would give namespaces new uids, and their files to others");
    }
    for (const auto& [ns, uid] : j["namespaces"].items()) {
      if (!uid.is_number_integer() || uid.get<int64_t>() <= 0) {
        return FailedPrecondition("pod user allocations " + state_file + ": namespace " + ns +
                                  " has no valid uid");
      }
      p->allocated_[ns] = uid.get<int64_t>();
    }
  }
  // A configured uid must not be one already handed to another namespace.
  for (const auto& [ns, u] : options.configured) {
    for (const auto& [other, uid] : p->allocated_) {
      if (other != ns && (uid == u.uid || uid == u.gid)) {
        return FailedPrecondition("runtime.podUsers." + ns + ": uid/gid " + std::to_string(uid) +
                                  " was already allocated to namespace " + other + " (" + state_file +
                                  "); the two namespaces would share their files; choose another id");
      }
    }
  }
  return p;
}

Result<PodUser> PodUsers::For(const std::string& ns) {
  if (!switching_) {
    // Root without the capabilities to switch (a restricted container):
    // its pods would be root.
    if (geteuid() == 0 && options_.allow_root.count(ns) == 0) {
      return Status(StatusCode::kPermissionDenied,
                    "pods of namespace " + ns +
                        " would run as root: arteld runs as uid 0 without CAP_SETUID, CAP_SETGID, CAP_CHOWN "
                        "and CAP_KILL, so it cannot give them their own user; grant those or list " +
                        ns + " in runtime.allowRoot");
    }
    return PodUser{};
  }
  PodUser user;
  if (auto it = options_.configured.find(ns); it != options_.configured.end()) {
    user = it->second;
  } else if (options_.allow_root.count(ns) != 0) {
    user = PodUser{0, 0};
  } else {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = allocated_.find(ns); it != allocated_.end()) return PodUser{it->second, it->second};
    std::set<int64_t> taken;
    for (const auto& [n, uid] : allocated_) taken.insert(uid);
    for (const auto& [n, u] : options_.configured) {
      taken.insert(u.uid);
      taken.insert(u.gid);
    }
    const int64_t size = options_.range_last - options_.range_first + 1;
    const int64_t start = static_cast<int64_t>(Fnv1a(ns) % static_cast<uint64_t>(size));
    int64_t chosen = -1;
    for (int64_t i = 0; i < size && chosen < 0; ++i) {
      int64_t uid = options_.range_first + (start + i) % size;
      if (taken.count(uid) == 0 && !IdInUse(uid)) chosen = uid;
    }
    if (chosen < 0) {
      return Status(StatusCode::kResourceExhausted,
                    "no free uid left in runtime.podUidRange " + std::to_string(options_.range_first) + "-" +
                        std::to_string(options_.range_last) + " for namespace " + ns + "; widen the range");
    }
    allocated_[ns] = chosen;
    if (Status s = Save(); !s.ok()) {
      allocated_.erase(ns);
      return s;
    }
    return PodUser{chosen, chosen};
  }
  if ((user.uid == 0 || user.gid == 0) && options_.allow_root.count(ns) == 0) {
    return Status(StatusCode::kPermissionDenied, "pods of namespace " + ns +
                                                     " would run as root (uid/gid 0); refused unless "
                                                     "runtime.allowRoot lists " +
                                                     ns);
  }
  return user;
}

Status PodUsers::Save() const {
  nlohmann::json j = {{"version", 1}, {"namespaces", nlohmann::json::object()}};
  for (const auto& [ns, uid] : allocated_) j["namespaces"][ns] = uid;
  const std::string data = j.dump(2) + "\n";
  const std::string tmp = state_file_ + ".tmp";
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return FailedPrecondition("cannot write " + tmp + ": " + std::strerror(errno));
  bool ok = write(fd, data.data(), data.size()) == static_cast<ssize_t>(data.size()) && fsync(fd) == 0;
  int err = errno;
  close(fd);
  if (!ok || rename(tmp.c_str(), state_file_.c_str()) != 0) {
    if (ok) err = errno;
    unlink(tmp.c_str());
    return FailedPrecondition("cannot write " + state_file_ + ": " + std::strerror(err));
  }
  const std::string dir = fs::path(state_file_).parent_path().string();
  int dfd = open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    fsync(dfd);
    close(dfd);
  }
  return Status::Ok();
}

}  // namespace artel::server
