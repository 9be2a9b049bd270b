#include "kube/client.h"

#include <httplib.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

namespace artel::kube {

const Resource kWorkloads{"kueue.x-k8s.io", "v1beta2", "workloads", true};
const Resource kClusterQueues{"kueue.x-k8s.io", "v1beta2", "clusterqueues", false};
const Resource kLocalQueues{"kueue.x-k8s.io", "v1beta2", "localqueues", true};
const Resource kResourceFlavors{"kueue.x-k8s.io", "v1beta2", "resourceflavors", false};
const Resource kCohorts{"kueue.x-k8s.io", "v1beta2", "cohorts", false};
const Resource kWorkloadPriorityClasses{"kueue.x-k8s.io", "v1beta2", "workloadpriorityclasses", false};
const Resource kTopologies{"kueue.x-k8s.io", "v1beta2", "topologies", false};
const Resource kEvents{"", "v1", "events", true};
const Resource kNamespaces{"", "v1", "namespaces", false};
const Resource kNodes{"", "v1", "nodes", false};
const Resource kPods{"", "v1", "pods", true};
const Resource kConfigMaps{"", "v1", "configmaps", true};
const Resource kJobs{"batch", "v1", "jobs", true};
const Resource kLeases{"coordination.k8s.io", "v1", "leases", true};

Resource WithVersion(Resource r, std::string version) {
  r.version = std::move(version);
  return r;
}

std::string ResourcePath(const Resource& r, const std::string& ns, const std::string& name,
                         const std::string& subresource) {
  std::string p = r.group.empty() ? "/api/" + r.version : "/apis/" + r.group + "/" + r.version;
  if (r.namespaced && !ns.empty()) p += "/namespaces/" + ns;
  p += "/" + r.plural;
  if (!name.empty()) p += "/" + name;
  if (!subresource.empty()) p += "/" + subresource;
  return p;
}

namespace {

const char* ReasonForCode(int http) {
  switch (http) {
    case 0: return "Transport";
    case 400: return "BadRequest";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "NotFound";
    case 405: return "MethodNotAllowed";
    case 406: return "NotAcceptable";
    case 409: return "Conflict";
    case 410: return "Gone";
    case 413: return "RequestEntityTooLarge";
    case 415: return "UnsupportedMediaType";
    case 422: return "Invalid";
    case 429: return "TooManyRequests";
    case 500: return "InternalError";
    case 503: return "ServiceUnavailable";
    case 504: return "Timeout";
    default: return "Unknown";
  }
}

std::string Escape(const std::string& s) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

void AddParam(std::string* q, const std::string& k, const std::string& v) {
  *q += q->empty() ? "?" : "&";
  *q += k + "=" + Escape(v);
}

std::string ListQuery(const ListOptions& o) {
  std::string q;
  if (!o.label_selector.empty()) AddParam(&q, "labelSelector", o.label_selector);
  if (!o.field_selector.empty()) AddParam(&q, "fieldSelector", o.field_selector);
  if (!o.resource_version.empty()) AddParam(&q, "resourceVersion", o.resource_version);
  if (!o.continue_token.empty()) AddParam(&q, "continue", o.continue_token);
  if (o.limit > 0) AddParam(&q, "limit", std::to_string(o.limit));
  return q;
}

std::string Str(const Json& j, const char* a, const char* b) {
  if (!j.is_object()) return "";
  auto it = j.find(a);
  if (it == j.end() || !it->is_object()) return "";
  auto jt = it->find(b);
  return jt != it->end() && jt->is_string() ? jt->get<std::string>() : "";
}

std::string OpenSslError() {
  unsigned long e = ERR_get_error();
  if (e == 0) return "unknown OpenSSL error";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof(buf));
  ERR_clear_error();
  return buf;
}

// Never read as a directory of hashed certificates: when the config gives a
// CA, pointing cpp-httplib at this path keeps it from adding the system roots.
constexpr const char* kNoSystemRoots = "/nonexistent/artel-kube-ca-only";

}  // namespace

std::string ApiError::ToString() const {
  std::string s = http == 0 ? std::string("transport error") : std::to_string(http);
  if (!reason.empty()) s += " " + reason;
  if (!message.empty()) s += ": " + message;
  return s;
}

ApiError ApiErrorFromStatus(const Json& st, int http_default) {
  ApiError e;
  e.http = http_default;
  if (st.is_object()) {
    if (auto it = st.find("code"); it != st.end() && it->is_number_integer()) e.http = it->get<int>();
    if (auto it = st.find("reason"); it != st.end() && it->is_string()) e.reason = it->get<std::string>();
    if (auto it = st.find("message"); it != st.end() && it->is_string()) e.message = it->get<std::string>();
  }
  if (e.reason.empty()) e.reason = ReasonForCode(e.http);
  return e;
}

ApiError ParseApiError(int http, const std::string& body) {
  Json j = Json::parse(body, nullptr, false);
  if (!j.is_discarded() && j.is_object() && j.value("kind", "") == "Status") {
    ApiError e = ApiErrorFromStatus(j, http);
    e.http = http;  // the HTTP status is authoritative
    return e;
  }
  ApiError e;
  e.http = http;
  e.reason = ReasonForCode(http);
  std::string msg = body.substr(0, 512);
  while (!msg.empty() && (msg.back() == '\n' || msg.back() == '\r' || msg.back() == ' ')) msg.pop_back();
  e.message = msg.empty() ? "HTTP " + std::to_string(http) : msg;
  return e;
}

bool WatchStreamParser::Feed(std::string_view chunk, const std::function<bool(WatchEvent&)>& on_event) {
  if (!error_.empty()) return false;
  size_t start = 0;
  while (true) {
    size_t nl = chunk.find('\n', start);
    if (nl == std::string_view::npos) {
      buf_.append(chunk.substr(start));
      return true;
    }
    std::string line;
    if (buf_.empty()) {
      line.assign(chunk.substr(start, nl - start));
    } else {
      buf_.append(chunk.substr(start, nl - start));
      line.swap(buf_);
      buf_.clear();
    }
    start = nl + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    Json j = Json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("type") || !j["type"].is_string()) {
      error_ = "not a watch event: " + line.substr(0, 200);
      return false;
    }
    WatchEvent e;
    e.type = j["type"].get<std::string>();
    if (auto it = j.find("object"); it != j.end()) e.object = std::move(*it);
    if (!on_event(e)) return false;
  }
}

// ---------------------------------------------------------------------------
// Client

struct Client::Conn {
  std::unique_ptr<httplib::ClientImpl> cli;
  bool reused = false;
};

struct Client::WatchSlot {
  httplib::ClientImpl* cli;
};

Client::Client(ClientConfig config) : config_(std::move(config)) {
  // scheme://host[:port][/prefix]
  std::string url = config_.server;
  size_t p = url.find("://");
  if (p == std::string::npos) {
    tls_error_ = "server \"" + url + "\" is not a URL (https://host:port)";
    return;
  }
  scheme_ = url.substr(0, p);
  std::string rest = url.substr(p + 3);
  size_t slash = rest.find('/');
  if (slash != std::string::npos) {
    prefix_ = rest.substr(slash);
    while (!prefix_.empty() && prefix_.back() == '/') prefix_.pop_back();
    rest = rest.substr(0, slash);
  }
  port_ = scheme_ == "https" ? 443 : 80;
  if (!rest.empty() && rest[0] == '[') {  // [ipv6]:port
    size_t close = rest.find(']');
    host_ = rest.substr(1, close == std::string::npos ? std::string::npos : close - 1);
    if (close != std::string::npos && close + 1 < rest.size() && rest[close + 1] == ':')
      port_ = std::atoi(rest.c_str() + close + 2);
  } else {
    size_t colon = rest.rfind(':');
    host_ = rest.substr(0, colon);
    if (colon != std::string::npos) port_ = std::atoi(rest.c_str() + colon + 1);
  }
  if (scheme_ != "https" && scheme_ != "http") {
    tls_error_ = "server \"" + url + "\": scheme must be https or http";
    return;
  }
  if (host_.empty() || port_ <= 0 || port_ > 65535) {
    tls_error_ = "server \"" + url + "\": no host or a bad port";
    return;
  }
  if (scheme_ == "https") {
    if (!config_.ca_pem.empty() && !config_.insecure_skip_tls_verify) {
      X509_STORE* store = X509_STORE_new();
      BIO* bio = BIO_new_mem_buf(config_.ca_pem.data(), static_cast<int>(config_.ca_pem.size()));
      int n = 0;
      while (X509* x = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
        X509_STORE_add_cert(store, x);
        X509_free(x);
        ++n;
      }
      BIO_free(bio);
      ERR_clear_error();
      if (n == 0) {
        X509_STORE_free(store);
        tls_error_ = "the certificate authority (ca_pem) holds no PEM certificate";
        return;
      }
      ca_store_ = store;
    }
    if (!config_.client_cert_pem.empty() || !config_.client_key_pem.empty()) {
      BIO* bio =
          BIO_new_mem_buf(config_.client_cert_pem.data(), static_cast<int>(config_.client_cert_pem.size()));
      X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
      BIO_free(bio);
      if (!cert) {
        tls_error_ = "the client certificate is not a PEM certificate: " + OpenSslError();
        return;
      }
      bio = BIO_new_mem_buf(config_.client_key_pem.data(), static_cast<int>(config_.client_key_pem.size()));
      EVP_PKEY* key = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
      BIO_free(bio);
      if (!key) {
        X509_free(cert);
        tls_error_ = "the client key is not a PEM private key: " + OpenSslError();
        return;
      }
      if (X509_check_private_key(cert, key) != 1) {
        X509_free(cert);
        EVP_PKEY_free(key);
        ERR_clear_error();
        tls_error_ = "the client key does not match the client certificate";
        return;
      }
      cert_ = cert;
      key_ = key;
    }
  }
  limiter_ = std::make_unique<TokenBucket>(config_.qps, config_.burst);
  // The first TLS context is made here, on one thread: OpenSSL 3.0 loads its
  // ciphers, groups and signature algorithms then, and its method store is not
  // safe against a first load from several threads at once (it can leak).
  if (scheme_ == "https") idle_.push_back(NewConn());
}

Client::~Client() {
  {
    std::lock_guard<std::mutex> l(watch_mu_);
    reaper_quit_ = true;
  }
  reaper_cv_.notify_all();
  if (reaper_.joinable()) reaper_.join();
  {
    std::lock_guard<std::mutex> l(pool_mu_);
    idle_.clear();
  }
  if (ca_store_) X509_STORE_free(static_cast<X509_STORE*>(ca_store_));
  if (cert_) X509_free(static_cast<X509*>(cert_));
  if (key_) EVP_PKEY_free(static_cast<EVP_PKEY*>(key_));
}

std::unique_ptr<Client::Conn> Client::Acquire() {
  {
    std::lock_guard<std::mutex> l(pool_mu_);
    if (!idle_.empty()) {
      auto c = std::move(idle_.back());
      idle_.pop_back();
      return c;
    }
  }
  return NewConn();
}

std::unique_ptr<Client::Conn> Client::NewConn() {
  auto c = std::make_unique<Conn>();
  if (scheme_ == "https") {
    std::unique_ptr<httplib::SSLClient> s;
    if (cert_ && key_) {
      s = std::make_unique<httplib::SSLClient>(host_, port_, static_cast<X509*>(cert_),
                                               static_cast<EVP_PKEY*>(key_));
    } else {
      s = std::make_unique<httplib::SSLClient>(host_, port_);
    }
    if (config_.insecure_skip_tls_verify) {
      s->enable_server_certificate_verification(false);
    } else if (ca_store_) {
      X509_STORE_up_ref(static_cast<X509_STORE*>(ca_store_));  // the SSL_CTX takes one reference
      s->set_ca_cert_store(static_cast<X509_STORE*>(ca_store_));
      s->set_ca_cert_path("", kNoSystemRoots);
    }
    c->cli = std::move(s);
  } else {
    c->cli = std::make_unique<httplib::ClientImpl>(host_, port_);
  }
  c->cli->set_keep_alive(true);
  c->cli->set_url_encode(false);
  c->cli->set_connection_timeout(config_.connect_timeout_seconds, 0);
  c->cli->set_read_timeout(config_.request_timeout_seconds, 0);
  c->cli->set_write_timeout(config_.request_timeout_seconds, 0);
  return c;
}

void Client::Release(std::unique_ptr<Conn> c) {
  std::lock_guard<std::mutex> l(pool_mu_);
  if (idle_.size() < 16) idle_.push_back(std::move(c));
}

std::string Client::Token() {
  if (!config_.bearer_token.empty()) return config_.bearer_token;
  if (config_.token_file.empty()) return "";
  std::lock_guard<std::mutex> l(token_mu_);
  struct stat st {};
  if (::stat(config_.token_file.c_str(), &st) == 0) {
    int64_t mtime = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
    if (mtime != token_mtime_ns_ || static_cast<int64_t>(st.st_size) != token_size_) {
      std::ifstream in(config_.token_file, std::ios::binary);
      if (in) {
        std::ostringstream ss;
        ss << in.rdbuf();
        std::string t = ss.str();
        while (!t.empty() && (t.back() == '\n' || t.back() == '\r' || t.back() == ' ')) t.pop_back();
        file_token_ = t;
        token_mtime_ns_ = mtime;
        token_size_ = static_cast<int64_t>(st.st_size);
      }
    }
  }
  return file_token_;  // the last one read when the file is gone for a moment
}

void Client::Throttle() {
  int64_t wait_us;
  {
    std::lock_guard<std::mutex> l(limiter_mu_);
    wait_us = limiter_ ? limiter_->Reserve() : 0;
  }
  if (wait_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(wait_us));
}

void Client::SetRateLimiterClock(std::function<int64_t()> now_us) {
  std::lock_guard<std::mutex> l(limiter_mu_);
  limiter_ = std::make_unique<TokenBucket>(config_.qps, config_.burst, std::move(now_us));
}

uint64_t Client::requests() const { return requests_.load(); }

uint64_t Client::throttled() const {
  std::lock_guard<std::mutex> l(limiter_mu_);
  return limiter_ ? limiter_->throttled() : 0;
}

namespace {
void SetHeaders(httplib::Request* req, const ClientConfig& cfg, const std::string& token,
                const std::string& ctype, bool has_body) {
  req->headers.emplace("Accept", "application/json");
  req->headers.emplace("User-Agent", cfg.user_agent);
  if (!token.empty()) req->headers.emplace("Authorization", "Bearer " + token);
  if (has_body) req->headers.emplace("Content-Type", ctype);
}
}  // namespace

ApiResult<Json> Client::Do(const std::string& method, const std::string& path, const std::string& body,
                           const std::string& content_type) {
  if (!tls_error_.empty()) return ApiError{0, "ClientConfig", tls_error_};
  int too_many = 0;
  for (int attempt = 0;; ++attempt) {
    Throttle();
    auto c = Acquire();
    bool reused = c->reused;
    httplib::Request req;
    req.method = method;
    req.path = prefix_ + path;
    req.body = body;
    SetHeaders(&req, config_, Token(), content_type,
               !body.empty() || method == "POST" || method == "PUT" || method == "PATCH");
    httplib::Response res;
    httplib::Error err = httplib::Error::Success;
    requests_.fetch_add(1);
    bool sent = c->cli->send(req, res, err);
    if (!sent) {
      // A kept-alive connection the server closed meanwhile: one retry on a
      // fresh connection for reads (writes might have been applied).
      if (reused && attempt == 0 && method == "GET") continue;
      return ApiError{0, "Transport", method + " " + path + ": " + httplib::to_string(err)};
    }
    c->reused = true;
    Release(std::move(c));
    if (res.status == 429 && too_many < 5) {
      ++too_many;
      retried_429_.fetch_add(1);
      int wait_s = 1;
      if (res.has_header("Retry-After"))
        wait_s = std::clamp(std::atoi(res.get_header_value("Retry-After").c_str()), 0, 10);
      if (wait_s > 0) std::this_thread::sleep_for(std::chrono::seconds(wait_s));
      continue;
    }
    if (res.status >= 200 && res.status < 300) {
      if (res.body.empty()) return Json::object();
      Json j = Json::parse(res.body, nullptr, false);
      if (j.is_discarded()) return Json(res.body);
      return j;
    }
    return ParseApiError(res.status, res.body);
  }
}

ApiResult<Json> Client::Raw(const std::string& method, const std::string& path, const std::string& body,
                            const std::string& content_type) {
  return Do(method, path, body, content_type);
}

std::string Client::Namespace(const Resource& r, const std::string& ns, const Json* obj) const {
  if (!r.namespaced) return "";
  if (!ns.empty()) return ns;
  if (obj) {
    std::string from = Str(*obj, "metadata", "namespace");
    if (!from.empty()) return from;
  }
  return config_.default_namespace;
}

ApiResult<Json> Client::Get(const Resource& r, const std::string& ns, const std::string& name) {
  return Do("GET", ResourcePath(r, Namespace(r, ns, nullptr), name), "", "");
}

ApiResult<Json> Client::List(const Resource& r, const std::string& ns, const ListOptions& o) {
  return Do("GET", ResourcePath(r, r.namespaced ? ns : "") + ListQuery(o), "", "");
}

ApiResult<Json> Client::ListAll(const Resource& r, const std::string& ns, ListOptions o) {
  const ListOptions first = o;
  Json items = Json::array();
  Json result;
  for (int restarts = 0;;) {
    auto page = List(r, ns, o);
    if (!page.ok()) {
      // The continue token expired (the list took longer than etcd keeps
      // its snapshot): start again from the first page, a few times.
      if (page.error().Gone() && !o.continue_token.empty() && restarts < 3) {
        ++restarts;
        o = first;
        items = Json::array();
        result = Json();
        continue;
      }
      return page.error();
    }
    Json& j = page.value();
    if (result.is_null()) {
      result = Json::object();
      result["apiVersion"] = j.value("apiVersion", "v1");
      result["kind"] = j.value("kind", "List");
      result["metadata"] = Json::object();
      result["metadata"]["resourceVersion"] = Str(j, "metadata", "resourceVersion");
    }
    if (auto it = j.find("items"); it != j.end() && it->is_array())
      for (auto& item : *it) items.push_back(std::move(item));
    std::string cont = Str(j, "metadata", "continue");
    if (cont.empty()) break;
    o.continue_token = cont;
    o.resource_version.clear();  // a continuation must not name a resourceVersion
  }
  result["items"] = std::move(items);
  return result;
}

ApiResult<Json> Client::Create(const Resource& r, const std::string& ns, const Json& obj) {
  return Do("POST", ResourcePath(r, Namespace(r, ns, &obj)), obj.dump(), "application/json");
}

ApiResult<Json> Client::Update(const Resource& r, const std::string& ns, const Json& obj) {
  std::string name = Str(obj, "metadata", "name");
  if (name.empty()) return ApiError{0, "ClientInvalid", "Update: the object has no metadata.name"};
  return Do("PUT", ResourcePath(r, Namespace(r, ns, &obj), name), obj.dump(), "application/json");
}

ApiResult<Json> Client::UpdateStatus(const Resource& r, const std::string& ns, const Json& obj) {
  std::string name = Str(obj, "metadata", "name");
  if (name.empty()) return ApiError{0, "ClientInvalid", "UpdateStatus: the object has no metadata.name"};
  return Do("PUT", ResourcePath(r, Namespace(r, ns, &obj), name, "status"), obj.dump(), "application/json");
}

ApiResult<Json> Client::MergePatch(const Resource& r, const std::string& ns, const std::string& name,
                                   const Json& patch, bool status) {
  return Do("PATCH", ResourcePath(r, Namespace(r, ns, nullptr), name, status ? "status" : ""), patch.dump(),
            "application/merge-patch+json");
}

ApiResult<Json> Client::Apply(const Resource& r, const std::string& ns, const Json& obj,
                              const std::string& field_manager, bool force, bool status) {
  std::string name = Str(obj, "metadata", "name");
  if (name.empty()) return ApiError{0, "ClientInvalid", "Apply: the object has no metadata.name"};
  if (field_manager.empty()) return ApiError{0, "ClientInvalid", "Apply: a field manager is required"};
  std::string q;
  AddParam(&q, "fieldManager", field_manager);
  if (force) AddParam(&q, "force", "true");
  return Do("PATCH", ResourcePath(r, Namespace(r, ns, &obj), name, status ? "status" : "") + q, obj.dump(),
            "application/apply-patch+yaml");
}

ApiResult<Json> Client::Delete(const Resource& r, const std::string& ns, const std::string& name,
                               std::optional<int64_t> grace_seconds, const std::string& precondition_uid) {
  Json opts = {{"kind", "DeleteOptions"}, {"apiVersion", "v1"}};
  if (grace_seconds) opts["gracePeriodSeconds"] = *grace_seconds;
  if (!precondition_uid.empty()) opts["preconditions"] = {{"uid", precondition_uid}};
  return Do("DELETE", ResourcePath(r, Namespace(r, ns, nullptr), name), opts.dump(), "application/json");
}

void Client::ReaperLoop() {
  std::unique_lock<std::mutex> l(watch_mu_);
  while (!reaper_quit_) {
    reaper_cv_.wait_for(l, std::chrono::milliseconds(100));
    // A cut that lands before the socket opens does nothing: repeated next round.
    for (auto& [stop, slot] : watches_)
      if (stop && stop->load()) slot->cli->stop();
  }
}

void Client::Interrupt(const std::atomic<bool>* stop) {
  std::lock_guard<std::mutex> l(watch_mu_);
  auto [b, e] = watches_.equal_range(stop);
  for (auto it = b; it != e; ++it) it->second->cli->stop();
}

ApiResult<std::string> Client::Watch(const Resource& r, const std::string& ns, const ListOptions& o,
                                     const std::function<bool(WatchEvent&)>& on_event,
                                     const std::atomic<bool>* stop, int timeout_seconds) {
  if (!tls_error_.empty()) return ApiError{0, "ClientConfig", tls_error_};
  std::string last_rv = o.resource_version;
  if (stop && stop->load()) return last_rv;
  ListOptions wo = o;
  wo.continue_token.clear();
  wo.limit = 0;
  std::string q = ListQuery(wo);
  AddParam(&q, "watch", "1");
  AddParam(&q, "allowWatchBookmarks", "true");
  if (timeout_seconds > 0) AddParam(&q, "timeoutSeconds", std::to_string(timeout_seconds));
  std::string path = ResourcePath(r, r.namespaced ? ns : "") + q;

  Throttle();
  // A watch holds its connection for long: a fresh one, never pooled.
  std::unique_ptr<Conn> c = NewConn();
  int read_timeout = (timeout_seconds > 0 ? timeout_seconds : 1800) + 30;
  c->cli->set_read_timeout(read_timeout, 0);
  WatchSlot slot{c->cli.get()};
  {
    std::lock_guard<std::mutex> l(watch_mu_);
    watches_.emplace(stop, &slot);
    if (stop && !reaper_.joinable() && !reaper_quit_) reaper_ = std::thread([this] { ReaperLoop(); });
  }
  auto unregister = [&] {
    std::lock_guard<std::mutex> l(watch_mu_);
    auto [b, e] = watches_.equal_range(stop);
    for (auto it = b; it != e; ++it) {
      if (it->second == &slot) {
        watches_.erase(it);
        break;
      }
    }
  };
  if (stop && stop->load()) {
    unregister();
    return last_rv;
  }

  int status = 0;
  std::string error_body;
  bool halted = false;  // on_event or stop ended it
  std::optional<ApiError> event_error;
  WatchStreamParser parser;
  httplib::Request req;
  req.method = "GET";
  req.path = prefix_ + path;
  SetHeaders(&req, config_, Token(), "", false);
  req.response_handler = [&](const httplib::Response& res) {
    status = res.status;
    return true;
  };
  req.content_receiver = [&](const char* data, size_t len, uint64_t, uint64_t) -> bool {
    if (stop && stop->load()) {
      halted = true;
      return false;
    }
    if (status != 200) {
      error_body.append(data, len);
      return error_body.size() < (1u << 20);
    }
    return parser.Feed(std::string_view(data, len), [&](WatchEvent& e) {
      if (e.type == "ERROR") {
        event_error = ApiErrorFromStatus(e.object);
        return false;
      }
      std::string rv = Str(e.object, "metadata", "resourceVersion");
      if (!rv.empty()) last_rv = rv;
      if (!on_event(e) || (stop && stop->load())) {
        halted = true;
        return false;
      }
      return true;
    });
  };
  httplib::Response res;
  httplib::Error err = httplib::Error::Success;
  requests_.fetch_add(1);
  bool sent = c->cli->send(req, res, err);
  unregister();
  if (event_error) return *event_error;
  if (halted || (stop && stop->load())) return last_rv;
  if (!parser.error().empty()) return ApiError{0, "BadWatchStream", parser.error()};
  if (!sent) {
    if (status != 0 && status != 200) return ParseApiError(status, error_body);
    return ApiError{0, "Transport", "watch " + path + ": " + httplib::to_string(err)};
  }
  if (status != 200) return ParseApiError(status, error_body);
  return last_rv;  // the server ended the stream (timeoutSeconds)
}

ApiResult<Json> UpdateWithRetry(Client& c, const Resource& r, const std::string& ns, const std::string& name,
                                const std::function<bool(Json& obj)>& mutate, bool status, int attempts) {
  ApiError last{409, "Conflict", "no attempt made"};
  for (int i = 0; i < std::max(1, attempts); ++i) {
    auto got = c.Get(r, ns, name);
    if (!got.ok()) return got.error();
    Json obj = std::move(got.value());
    if (!mutate(obj)) return obj;
    auto put = status ? c.UpdateStatus(r, ns, obj) : c.Update(r, ns, obj);
    if (put.ok() || !put.error().Conflict()) return put;
    last = put.error();
  }
  return last;
}

}  // namespace artel::kube
