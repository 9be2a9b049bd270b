// Leader election on a coordination.k8s.io/v1 Lease (leader.h).
#include "kube/leader.h"

#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <random>

namespace artel::kube {

std::string ValidateLeaderOptions(const LeaderOptions& o) {
  if (o.lease_duration_ms <= 0 || o.renew_deadline_ms <= 0 || o.retry_period_ms <= 0)
    return "the lease duration, renew deadline and retry period must be positive";
  if (o.lease_duration_ms <= o.renew_deadline_ms)
    return "the lease duration must be longer than the renew deadline";
  if (o.renew_deadline_ms * 10 <= o.retry_period_ms * 12)
    return "the renew deadline must be longer than 1.2 x the retry period";
  if (o.lease_name.empty()) return "the lease name is empty";
  return "";
}

LeaderElector::LeaderElector(ClientConfig config, LeaderOptions options, server::Logger* log,
                             std::function<int64_t()> now_ms)
    : options_(std::move(options)), log_(log), now_ms_(std::move(now_ms)) {
  if (options_.lease_namespace.empty()) options_.lease_namespace = config.default_namespace;
  if (options_.identity.empty()) {
    char host[256] = {0};
    if (gethostname(host, sizeof(host) - 1) != 0 || host[0] == 0) snprintf(host, sizeof host, "arteld");
    std::random_device rd;
    char suffix[32];
    snprintf(suffix, sizeof suffix, "_%d_%08x", static_cast<int>(getpid()), rd());
    options_.identity = std::string(host) + suffix;
  }
  // One attempt must end well within the renew deadline: a hung connection
  // must not keep the leader from noticing that it lost the lease.
  int t = static_cast<int>(std::max<int64_t>(1, options_.renew_deadline_ms / 2000));
  config.connect_timeout_seconds = std::min(config.connect_timeout_seconds, t);
  config.request_timeout_seconds = std::min(config.request_timeout_seconds, t);
  config.qps = 0;  // a handful of requests; never held back behind others
  client_ = std::make_unique<Client>(std::move(config));
}

LeaderElector::~LeaderElector() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (renewer_.joinable()) renewer_.join();
}

std::string LeaderElector::NowMicroTime() const {
  auto now = std::chrono::system_clock::now();
  int64_t us = std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count();
  time_t secs = static_cast<time_t>(us / 1000000);
  struct tm tm {};
  gmtime_r(&secs, &tm);
  char buf[64];
  snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%06dZ", tm.tm_year + 1900, tm.tm_mon + 1,
           tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(us % 1000000));
  return buf;
}

int64_t LeaderElector::LastRenewAgeMs() const {
  if (!leading_.load()) return INT64_MAX / 2;
  return now_ms_() - last_renew_ms_.load();
}

std::string LeaderElector::last_error() const {
  std::lock_guard<std::mutex> l(mu_);
  return last_error_;
}

bool LeaderElector::TryAcquireOrRenew() {
  const int64_t now = now_ms_();
  const int64_t duration_s = (options_.lease_duration_ms + 999) / 1000;
  auto fail = [&](const std::string& why) {
    std::lock_guard<std::mutex> l(mu_);
    last_error_ = why;
    return false;
  };
  auto won = [&](bool transition) {
    last_renew_ms_ = now;
    if (!leading_.exchange(true) || transition)
      log_->Info(
          "leader election: this replica leads",
          {{"lease", options_.lease_namespace + "/" + options_.lease_name}, {"identity", options_.identity}});
    return true;
  };
  ApiResult<Json> got = client_->Get(kLeases, options_.lease_namespace, options_.lease_name);
  if (!got.ok() && !got.error().NotFound()) return fail("get lease: " + got.error().ToString());
  if (!got.ok()) {
    const std::string t = NowMicroTime();
    Json lease = {{"apiVersion", "coordination.k8s.io/v1"},
                  {"kind", "Lease"},
                  {"metadata", {{"name", options_.lease_name}, {"namespace", options_.lease_namespace}}},
                  {"spec",
                   {{"holderIdentity", options_.identity},
                    {"leaseDurationSeconds", duration_s},
                    {"acquireTime", t},
                    {"renewTime", t},
                    {"leaseTransitions", 0}}}};
    ApiResult<Json> made = client_->Create(kLeases, options_.lease_namespace, lease);
    if (!made.ok()) return fail("create lease: " + made.error().ToString());
    observed_holder_ = options_.identity;
    observed_renew_ = t;
    observed_at_ms_ = now;
    return won(true);
  }
  Json lease = std::move(got).value();
  Json& spec = lease["spec"];
  if (!spec.is_object()) spec = Json::object();
  const std::string holder = spec.value("holderIdentity", std::string());
  const std::string renew = spec.value("renewTime", std::string());
  // Any change of the record restarts this candidate's expiry clock.
  if (holder != observed_holder_ || renew != observed_renew_ || observed_at_ms_ == 0) {
    observed_holder_ = holder;
    observed_renew_ = renew;
    observed_at_ms_ = now;
  }
  const bool mine = holder == options_.identity;
  if (!mine && leading_.load()) {
    // Someone else holds it now: this replica lost it.
    leading_ = false;
    return fail("the lease is held by " + holder);
  }
  int64_t record_ms = spec.value("leaseDurationSeconds", int64_t{0}) * 1000;
  if (record_ms <= 0) record_ms = options_.lease_duration_ms;
  const bool expired = holder.empty() || now - observed_at_ms_ > record_ms;
  if (!mine && !expired) return fail("the lease is held by " + holder);
  const std::string t = NowMicroTime();
  if (!mine) {
    spec["holderIdentity"] = options_.identity;
    spec["acquireTime"] = t;
    spec["leaseTransitions"] = spec.value("leaseTransitions", int64_t{0}) + (holder.empty() ? 0 : 1);
  }
  spec["renewTime"] = t;
  spec["leaseDurationSeconds"] = duration_s;
  // The update carries the resourceVersion read above: a concurrent writer
  // makes it fail with 409 rather than both believing they lead.
  ApiResult<Json> put = client_->Update(kLeases, options_.lease_namespace, lease);
  if (!put.ok()) return fail("update lease: " + put.error().ToString());
  observed_holder_ = options_.identity;
  observed_renew_ = t;
  observed_at_ms_ = now;
  return won(!mine);
}

void LeaderElector::StartRenewing() {
  renewer_ = std::thread([this] { RenewLoop(); });
}

void LeaderElector::RenewLoop() {
  std::unique_lock<std::mutex> l(mu_);
  while (!stop_) {
    cv_.wait_for(l, std::chrono::milliseconds(options_.retry_period_ms), [this] { return stop_; });
    if (stop_) break;
    l.unlock();
    bool ok = TryAcquireOrRenew();
    if (!ok) log_->Warn("leader election: renewal failed", {{"error", last_error()}});
    l.lock();
  }
}

void LeaderElector::Release() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (renewer_.joinable()) renewer_.join();
  if (!leading_.exchange(false)) return;
  ApiResult<Json> r =
      UpdateWithRetry(*client_, kLeases, options_.lease_namespace, options_.lease_name, [this](Json& lease) {
        Json& spec = lease["spec"];
        if (!spec.is_object() || spec.value("holderIdentity", std::string()) != options_.identity)
          return false;
        const std::string t = NowMicroTime();
        spec["holderIdentity"] = "";
        spec["leaseDurationSeconds"] = 1;
        spec["renewTime"] = t;
        spec["acquireTime"] = t;
        return true;
      });
  if (r.ok())
    log_->Info("leader election: lease released", {{"lease", options_.lease_name}});
  else
    log_->Warn("leader election: cannot release the lease", {{"error", r.error().ToString()}});
}

}  // namespace artel::kube
