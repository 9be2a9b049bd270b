// A narrow Kubernetes API client: typed GET/LIST/WATCH of JSON objects,
// create/update/delete, server-side apply, JSON merge patch, the status
// subresource, client-side QPS/burst limits, and an Informer (list + watch
// into a local cache, re-list on 410 Gone, reconnect with backoff).
//
// HTTP/1.1 over TLS with cpp-httplib + OpenSSL. Connections are kept alive
// and pooled: each request takes an idle connection (or opens one) and gives
// it back, so one Client may be used from many threads at once. A watch uses
// its own connection for as long as it runs.
//
// 429 Too Many Requests (API Priority and Fairness) is retried after the
// server's Retry-After (at most 10 s, 1 s when absent), up to 5 times: the
// server did not process the request, so this is safe for every verb.
//
// Errors: what the API server answered is parsed from its Status object into
// ApiError{http, reason, message}; http == 0 is a transport error (no
// response: connection refused, TLS failure, timeout, stream cut).
//
// Thread-safety: Client is thread-safe. Stop the Informers that use a Client
// before destroying it. Informer runs its own thread; its
// handlers are called on that thread, one at a time, with no lock held (they
// may call Snapshot()).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

#include "kube/kubeconfig.h"
#include "kube/rate_limit.h"

namespace artel::kube {

using Json = nlohmann::json;

struct Resource {       // what a URL path needs
  std::string group;    // "" = core
  std::string version;  // "v1", "v1beta2"
  std::string plural;   // "workloads"
  bool namespaced = true;
};

// Well-known resources.
extern const Resource kWorkloads;                // kueue.x-k8s.io/v1beta2, namespaced
extern const Resource kClusterQueues;            // kueue.x-k8s.io/v1beta2, cluster
extern const Resource kLocalQueues;              // kueue.x-k8s.io/v1beta2, namespaced
extern const Resource kResourceFlavors;          // kueue.x-k8s.io/v1beta2, cluster
extern const Resource kCohorts;                  // kueue.x-k8s.io/v1beta2, cluster
extern const Resource kWorkloadPriorityClasses;  // kueue.x-k8s.io/v1beta2, cluster
extern const Resource kTopologies;               // kueue.x-k8s.io/v1beta2, cluster
extern const Resource kEvents;                   // core v1, namespaced
extern const Resource kNamespaces;               // core v1, cluster
extern const Resource kNodes;                    // core v1, cluster
extern const Resource kPods;                     // core v1, namespaced
extern const Resource kConfigMaps;               // core v1, namespaced (extra)
extern const Resource kJobs;                     // batch/v1, namespaced
extern const Resource kLeases;                   // coordination.k8s.io/v1, namespaced
// The same resource at another version (kueue's v1beta1: V1beta1(kWorkloads)).
Resource WithVersion(Resource r, std::string version);
inline Resource V1beta1(const Resource& r) { return WithVersion(r, "v1beta1"); }

// The URL path of a resource: /api/v1/namespaces/NS/pods/NAME/SUB or
// /apis/GROUP/VERSION/...; ns "" (or a cluster-scoped resource) leaves the
// namespace out, name "" gives the collection.
std::string ResourcePath(const Resource& r, const std::string& ns, const std::string& name = "",
                         const std::string& subresource = "");

struct ApiError {      // what the API server said
  int http = 0;        // 0 = transport error (no response)
  std::string reason;  // Status.reason: NotFound, AlreadyExists, Conflict, Expired, Gone...
  std::string message;
  bool NotFound() const { return http == 404; }
  bool Conflict() const { return http == 409 && reason == "Conflict"; }
  bool AlreadyExists() const { return http == 409 && reason == "AlreadyExists"; }
  bool Gone() const { return http == 410; }
  bool Forbidden() const { return http == 403; }
  bool Transport() const { return http == 0; }
  std::string ToString() const;  // "409 Conflict: message"
};

// An error from the API's answer: the Status object when the body is one
// (reason, message, code), else the HTTP status text and the body.
ApiError ParseApiError(int http, const std::string& body);
// The ApiError of a Status object (a watch ERROR event).
ApiError ApiErrorFromStatus(const Json& status, int http_default = 500);

template <class T>
class ApiResult {
 public:
  ApiResult(T value) : v_(std::move(value)) {}         // NOLINT(google-explicit-constructor)
  ApiResult(ApiError error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)
  bool ok() const { return std::holds_alternative<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T& value() & { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }
  // The error; an empty ApiError (http 0, no reason) when a value is held.
  const ApiError& error() const {
    static const ApiError kNone;
    return ok() ? kNone : std::get<ApiError>(v_);
  }

 private:
  std::variant<T, ApiError> v_;
};

struct ListOptions {
  std::string label_selector, field_selector, resource_version, continue_token;
  int64_t limit = 0;
};
struct WatchEvent {
  std::string type;  // ADDED MODIFIED DELETED BOOKMARK ERROR
  Json object;
};

// Splits a watch stream (newline-delimited JSON, arriving in chunks cut
// anywhere) into events. Used by Client::Watch; public for the unit tests.
class WatchStreamParser {
 public:
  // Feeds a chunk; calls `on_event` for each complete line (the callee may
  // change or move from the event). Returns false as
  // soon as `on_event` returns false or a line is not a watch event (then
  // error() says why).
  bool Feed(std::string_view chunk, const std::function<bool(WatchEvent&)>& on_event);
  const std::string& error() const { return error_; }
  size_t buffered() const { return buf_.size(); }  // bytes of an incomplete line

 private:
  std::string buf_;
  std::string error_;
};

class Client {
 public:
  explicit Client(ClientConfig config);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // For a namespaced resource, ns "" means the object's metadata.namespace
  // (Create/Update/Apply) or the config's default_namespace (Get/Delete/
  // MergePatch); for List/ListAll/Watch, ns "" means all namespaces.
  ApiResult<Json> Get(const Resource& r, const std::string& ns, const std::string& name);
  ApiResult<Json> List(const Resource& r, const std::string& ns, const ListOptions& o = {});  // one page
  // Follows `continue`; answers {items, metadata.resourceVersion}.
  ApiResult<Json> ListAll(const Resource& r, const std::string& ns, ListOptions o = {});
  ApiResult<Json> Create(const Resource& r, const std::string& ns, const Json& obj);
  ApiResult<Json> Update(const Resource& r, const std::string& ns,
                         const Json& obj);  // PUT (needs metadata.resourceVersion)
  ApiResult<Json> UpdateStatus(const Resource& r, const std::string& ns, const Json& obj);  // PUT .../status
  ApiResult<Json> MergePatch(const Resource& r, const std::string& ns, const std::string& name,
                             const Json& patch, bool status = false);
  // Server-side apply (application/apply-patch+yaml; JSON is YAML). The
  // object needs apiVersion, kind and metadata.name.
  ApiResult<Json> Apply(const Resource& r, const std::string& ns, const Json& obj,
                        const std::string& field_manager, bool force = true, bool status = false);
  ApiResult<Json> Delete(const Resource& r, const std::string& ns, const std::string& name,
                         std::optional<int64_t> grace_seconds = std::nullopt,
                         const std::string& precondition_uid = "");
  // Blocking watch from o.resource_version (allowWatchBookmarks=true). Calls
  // `on_event` for each event as it arrives until it returns false, `stop`
  // becomes true (noticed within ~100 ms even while the watch is blocked in a
  // read: a helper thread of the Client cuts the connections of watches whose
  // flag is set; Interrupt does it at once), the server ends the stream
  // (timeout_seconds) or an error. An ERROR event is returned as its ApiError (410 Gone for an
  // expired resourceVersion). Answers the last resourceVersion seen (events
  // and bookmarks), o.resource_version when none came.
  ApiResult<std::string> Watch(const Resource& r, const std::string& ns, const ListOptions& o,
                               const std::function<bool(WatchEvent&)>& on_event,
                               const std::atomic<bool>* stop, int timeout_seconds = 300);
  // Cuts the connections of the watches running with this `stop` flag (set
  // the flag first): a blocked Watch returns at once. Extra.
  void Interrupt(const std::atomic<bool>* stop);
  // GET/PUT/... of any path (for /version, /readyz, events, subresources).
  // A body that is not JSON is answered as a JSON string.
  ApiResult<Json> Raw(const std::string& method, const std::string& path, const std::string& body = "",
                      const std::string& content_type = "application/json");
  uint64_t requests() const;   // requests sent (the benchmark reports requests per admission)
  uint64_t throttled() const;  // requests the rate limiter held back (extra; tests)
  uint64_t retried_after_429() const { return retried_429_.load(); }  // extra: 429 answers retried
  const ClientConfig& config() const { return config_; }
  // Replaces the rate limiter's clock (microseconds; tests). Extra.
  void SetRateLimiterClock(std::function<int64_t()> now_us);

 private:
  struct Conn;
  struct WatchSlot;
  std::unique_ptr<Conn> Acquire();  // an idle pooled connection, else a new one
  std::unique_ptr<Conn> NewConn();
  void Release(std::unique_ptr<Conn> c);
  std::string Token();
  void Throttle();
  ApiResult<Json> Do(const std::string& method, const std::string& path, const std::string& body,
                     const std::string& content_type);
  std::string Namespace(const Resource& r, const std::string& ns, const Json* obj) const;

  ClientConfig config_;
  std::string scheme_, host_, prefix_;
  int port_ = 0;
  void* ca_store_ = nullptr;  // X509_STORE*, shared by the connections
  void* cert_ = nullptr;      // X509*
  void* key_ = nullptr;       // EVP_PKEY*
  std::string tls_error_;     // set when the PEMs could not be read
  std::mutex pool_mu_;
  std::vector<std::unique_ptr<Conn>> idle_;
  mutable std::mutex limiter_mu_;
  std::unique_ptr<TokenBucket> limiter_;
  std::mutex token_mu_;
  std::string file_token_;
  int64_t token_mtime_ns_ = -1;
  int64_t token_size_ = -1;
  void ReaperLoop();
  std::mutex watch_mu_;
  std::multimap<const std::atomic<bool>*, WatchSlot*> watches_;
  std::condition_variable reaper_cv_;
  bool reaper_quit_ = false;
  std::thread reaper_;  // started by the first Watch
  std::atomic<uint64_t> requests_{0};
  std::atomic<uint64_t> retried_429_{0};
};

// Read-modify-write with a re-read on 409 Conflict (at most `attempts`).
// `mutate` false = nothing to do (answers the object as read).
ApiResult<Json> UpdateWithRetry(Client& c, const Resource& r, const std::string& ns, const std::string& name,
                                const std::function<bool(Json& obj)>& mutate, bool status = false,
                                int attempts = 5);

// List+watch of one resource kept in a local cache, on its own thread:
// re-lists on 410 Gone, reconnects with exponential backoff (capped, with
// jitter) on errors and server restarts, resumes from the last
// resourceVersion (bookmarks keep it fresh). A re-list delivers on_add /
// on_update for objects that are new or changed and on_delete for the ones
// that are gone, so a handler sees a consistent stream. Objects are cached
// and handed to the handlers without metadata.managedFields (nothing in
// Artel reads them; they are often the bulk of a Workload).
class Informer {
 public:
  struct Handler {
    std::function<void(const Json&obj)> on_add, on_update /* new object */;
    std::function<void(const Json& last_known)> on_delete;
    std::function<void()> on_synced;  // after each (re)list, once the cache is complete
  };
  Informer(Client* client, Resource r, std::string ns /* "" = all */, Handler h, ListOptions o = {});
  ~Informer();  // stops the thread
  Informer(const Informer&) = delete;
  Informer& operator=(const Informer&) = delete;
  void Start();
  void Stop();  // returns promptly even while a watch is blocked; from a handler it only asks
  bool HasSynced() const;
  std::vector<Json> Snapshot() const;  // the cached objects
  uint64_t relists() const;            // how many times it had to re-list (not the first list)
  // Extras: tuning before Start (tests use short ones).
  void SetBackoff(int64_t initial_ms, int64_t max_ms);  // also while running
  void Retry();                                         // cuts a backoff wait short (tests: reconnect now)
  void SetWatchTimeout(int seconds);
  void SetPageSize(int64_t limit);
  // Keep only each object's identity (namespace, name, uid, resourceVersion)
  // in the cache instead of the whole object: for owners that keep their own
  // copy (the controller). The re-list difference works the same; Snapshot()
  // and on_delete after a re-list then give those slim objects.
  void SetSlimCache(bool slim);
  uint64_t reconnects() const;           // watches restarted after an error
  std::string resource_version() const;  // the last one seen
  std::string last_error() const;

 private:
  void Run();
  bool Relist();              // false on error (backoff)
  bool Apply(WatchEvent& e);  // one watch event into the cache + handlers (managedFields dropped)
  void WaitBackoff(int64_t ms);

  Client* client_;
  Resource r_;
  std::string ns_;
  Handler h_;
  ListOptions o_;
  std::atomic<int64_t> backoff_initial_ms_{200}, backoff_max_ms_{10000};
  int watch_timeout_s_ = 300;
  int64_t page_size_ = 500;
  bool slim_ = false;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, Json> cache_;  // "ns/name" -> object
  std::string rv_;
  std::string last_error_;
  bool synced_ = false;
  std::atomic<bool> stop_{false};
  std::atomic<bool> running_{false};
  bool kick_ = false;  // Retry() was called (guarded by mu_)
  std::atomic<uint64_t> relists_{0}, reconnects_{0};
  std::thread thread_;
};

}  // namespace artel::kube
