// Leader election on a coordination.k8s.io/v1 Lease, so that two or more
// arteld replicas can run in one cluster and only one of them writes.
//
// Semantics as client-go's leaderelection package (learned from
// k8s.io/client-go/tools/leaderelection/leaderelection.go; no code copied):
// - The Lease holds holderIdentity, leaseDurationSeconds, acquireTime,
//   renewTime and leaseTransitions. Every write is an update carrying the
//   resourceVersion that was read, so two candidates racing for it cannot
//   both win (the loser gets 409 Conflict).
// - A candidate takes the Lease when it is free (no holder) or expired. The
//   expiry is judged on the candidate's own clock: the record must not have
//   changed for leaseDuration since this candidate last saw it change, so
//   clocks that disagree between machines do not matter.
// - The leader renews every retryPeriod; when no renewal has succeeded for
//   renewDeadline (shorter than leaseDuration) it has lost the lease and must
//   stop writing at once (arteld exits non-zero; its Deployment restarts it).
// - On a clean shutdown the leader releases the Lease (empty holder,
//   duration 1 s), so the next candidate takes over without waiting.
//
// Thread-safety: Acquire/Release from one thread; the renew thread is
// internal; leading()/LastRenewAgeMs() from any thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "kube/client.h"
#include "server/log.h"

namespace artel::kube {

struct LeaderOptions {
  std::string lease_name = "artel-leader";
  std::string lease_namespace;  // "" = the client config's default namespace
  std::string identity;         // "" = hostname_pid_random
  int64_t lease_duration_ms = 15000;
  int64_t renew_deadline_ms = 10000;
  int64_t retry_period_ms = 2000;
};

// Checks the three durations as client-go does: all positive, leaseDuration >
// renewDeadline > retryPeriod x 1.2 (the jitter). "" when fine.
std::string ValidateLeaderOptions(const LeaderOptions& o);

class LeaderElector {
 public:
  // `now_ms`: a monotonic clock (local observations); the Lease's time
  // stamps come from the system clock.
  LeaderElector(ClientConfig config, LeaderOptions options, server::Logger* log,
                std::function<int64_t()> now_ms);
  ~LeaderElector();
  LeaderElector(const LeaderElector&) = delete;
  LeaderElector& operator=(const LeaderElector&) = delete;

  // One attempt to take or renew the Lease; true when this candidate holds it
  // afterwards.
  bool TryAcquireOrRenew();
  // Starts renewing in a thread (after TryAcquireOrRenew answered true).
  void StartRenewing();
  // Stops renewing; when still the holder, gives the Lease up.
  void Release();
  bool leading() const { return leading_.load(); }
  // Milliseconds since the last successful acquire or renew (the caller
  // compares it with renew_deadline_ms: over it, leadership is lost).
  int64_t LastRenewAgeMs() const;
  // The lease is lost: no successful renewal within the renew deadline.
  bool Lost() const { return LastRenewAgeMs() > options_.renew_deadline_ms; }
  const LeaderOptions& options() const { return options_; }
  const std::string& identity() const { return options_.identity; }
  std::string last_error() const;

 private:
  void RenewLoop();
  std::string NowMicroTime() const;

  LeaderOptions options_;
  server::Logger* log_;
  std::function<int64_t()> now_ms_;
  std::unique_ptr<Client> client_;
  std::atomic<bool> leading_{false};
  std::atomic<int64_t> last_renew_ms_{0};
  // The record as last observed, and when (this candidate's clock).
  std::string observed_holder_, observed_renew_;
  int64_t observed_at_ms_ = 0;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::string last_error_;
  std::thread renewer_;
};

}  // namespace artel::kube
