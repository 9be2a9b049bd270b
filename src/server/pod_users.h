// Pod users: the OS user each namespace's pods run as (docs/daemon.md,
// "Pod users and isolation").
//
// A namespace runs as the uid/gid that arteld's config maps it to
// (`runtime.podUsers`), as root only when `runtime.allowRoot` lists it, and
// otherwise as a uid allocated for it from a range (`runtime.podUidRange`,
// 61000-61999 by default; gid = uid), the way systemd's DynamicUser does: no
// /etc/passwd entry is needed. The first uid tried is a hash of the
// namespace name; a uid that is taken (by another namespace, a configured
// user, or an existing passwd/group entry) is skipped. Allocations are
// written to `<data-dir>/pod-users.json` (0600, fsync + rename) before they
// are used, so a namespace keeps its uid across restarts whatever the order
// in which namespaces first run.
//
// When arteld cannot switch users (not root, and not holding CAP_SETUID,
// CAP_SETGID, CAP_CHOWN and CAP_KILL), pods run as arteld's own user: `switching()` is
// false, `For` returns uid -1, and arteld warns at start.
//
// Thread-safety: `For` and the other methods are safe to call from many
// threads.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "core/status.h"

namespace artel::server {

struct PodUser {
  int64_t uid = -1;  // -1 = arteld's own user (no switch)
  int64_t gid = -1;
};

struct PodUserOptions {
  std::map<std::string, PodUser> configured;  // runtime.podUsers
  std::set<std::string> allow_root;           // runtime.allowRoot
  int64_t range_first = 61000;                // runtime.podUidRange
  int64_t range_last = 61999;
};

// True when this process may run pods as other users: CAP_SETUID,
// CAP_SETGID, CAP_CHOWN (their directories) and CAP_KILL (stopping them) are
// effective (root has them).
bool CanSwitchUsers();

// Checks, as `user` (in a short-lived child that drops to it), that `dir` is
// a directory it may read and enter. Without a user (uid -1), as this
// process. The error names the directory, the user and the cause.
Status CheckDirAccessAs(const std::string& dir, const PodUser& user);

// A secret file (the tokens file, a TLS key) must be 0600 or stricter: a
// pod, or any other user of the host, must not read or change it. The error
// names the file, its mode and the fix (`chmod 600 FILE`).
Status CheckPrivateFile(const std::string& path, const std::string& what);

// Deletes a workload's own directory `dir` (a pod user's files): its
// contents as the directory's owner, in a child that drops to that user (so
// that a link planted by the pod cannot make arteld delete its own files),
// then the directory itself. Missing = done.
Status RemoveOwnDirectory(const std::string& dir);

class PodUsers {
 public:
  // Loads the allocations in `state_file` (missing = none) and checks them
  // against the configured users. `switching` false: every namespace runs
  // as arteld's user.
  static Result<std::unique_ptr<PodUsers>> Open(const PodUserOptions& options, const std::string& state_file,
                                                bool switching);

  bool switching() const { return switching_; }
  // The user the pods of `ns` run as; allocates (and persists) one on first
  // use. PermissionDenied for root when `ns` is not in allowRoot.
  Result<PodUser> For(const std::string& ns);

 private:
  PodUsers(PodUserOptions options, std::string state_file, bool switching)
      : options_(std::move(options)), state_file_(std::move(state_file)), switching_(switching) {}
  Status Save() const;  // under mu_

  const PodUserOptions options_;
  const std::string state_file_;
  const bool switching_;
  std::mutex mu_;
  std::map<std::string, int64_t> allocated_;  // ns -> uid (gid = uid)
};

}  // namespace artel::server
