#include "server/api.h"

#include <httplib.h>

#include <chrono>
#include <functional>

#include "api/codec.h"
#include "server/ui_assets.h"

namespace artel::server {
namespace {

// POST /api/v1/workloads:batch takes at most this many items (the body limit
// applies too); `artel apply` sends its Workloads and Jobs in chunks of it.
constexpr size_t kMaxBatchItems = 1000;

int HttpStatus(StatusCode c) {
  switch (c) {
    case StatusCode::kOk: return 200;
    case StatusCode::kInvalidArgument: return 400;
    case StatusCode::kNotFound: return 404;
    case StatusCode::kAlreadyExists: return 409;
    case StatusCode::kFailedPrecondition: return 409;
    case StatusCode::kPermissionDenied: return 403;
    case StatusCode::kUnauthenticated: return 401;
    case StatusCode::kResourceExhausted: return 429;
    case StatusCode::kInternal: return 500;
  }
  return 500;
}

const char* CodeForHttp(int status) {
  switch (status) {
    case 400: return "InvalidArgument";
    case 401: return "Unauthenticated";
    case 403: return "PermissionDenied";
    case 404: return "NotFound";
    case 405: return "MethodNotAllowed";
    case 409: return "Conflict";
    case 413: return "PayloadTooLarge";
    case 414: return "UriTooLong";
    case 429: return "TooManyRequests";
    case 503: return "Unavailable";
    default: return status >= 500 ? "Internal" : "Error";
  }
}

void SendJson(httplib::Response& res, int status, const Json& j) {
  res.status = status;
  res.set_content(j.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n", "application/json");
}

// A history range: a whole number with unit m, h or d ("90m", "24h", "7d");
// -1 when malformed.
int64_t ParseRangeMs(const std::string& text) {
  if (text.size() < 2 || text.size() > 8) return -1;
  int64_t n = 0;
  for (size_t i = 0; i + 1 < text.size(); ++i) {
    if (!isdigit(static_cast<unsigned char>(text[i]))) return -1;
    n = n * 10 + (text[i] - '0');
  }
  switch (text.back()) {
    case 'm': return n * 60000;
    case 'h': return n * 3600000;
    case 'd': return n * 86400000;
  }
  return -1;
}

void SendError(httplib::Response& res, const Status& s) { SendJson(res, HttpStatus(s.code()), ErrorJson(s)); }

// "a=b,c=d" -> map; a bare key means "has the label".
std::map<std::string, std::string> ParseSelector(const std::string& s) {
  std::map<std::string, std::string> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t comma = s.find(',', pos);
    std::string part = s.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (!part.empty()) {
      size_t eq = part.find('=');
      if (eq == std::string::npos) {
        out[part] = "";
      } else {
        std::string k = part.substr(0, eq), v = part.substr(eq + 1);
        if (!v.empty() && v[0] == '=') v = v.substr(1);  // a==b
        out[k] = v;
      }
    }
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

}  // namespace

ApiServer::ApiServer(ApiOptions options, Service* service, const TokenTable* tokens, Logger* log)
    : options_(std::move(options)), service_(service), tokens_(tokens), log_(log) {
  // Plain HTTP: arteld's own event-loop server (server/http_server.h), whose
  // limits hold before authentication. HTTPS: cpp-httplib's SSLServer (one
  // thread per connection, the body read before the handler runs).
  HttpLimits limits;
  limits.max_body_bytes = options_.max_body_bytes;
  limits.max_header_bytes = options_.max_header_bytes;
  limits.header_timeout_ms = options_.header_timeout_ms;
  limits.idle_timeout_ms = options_.idle_timeout_ms;
  limits.body_timeout_ms = options_.body_timeout_ms;
  limits.write_timeout_ms = options_.write_timeout_ms;
  limits.max_connections = options_.max_connections;
  limits.max_connections_per_peer = options_.max_connections_per_peer;
  limits.max_streams = options_.max_streams;
  limits.workers = std::max(2, options_.threads);
  http_ = std::make_unique<HttpServer>(limits);
  auto error_handler = [](const httplib::Request&, httplib::Response& res) {
    if (res.body.empty()) {
      std::string msg = "HTTP " + std::to_string(res.status);
      if (res.status == 404) msg = "no such endpoint";
      if (res.status == 413) msg = "request body too large";
      if (res.status == 400) msg = "malformed HTTP request";
      SendJson(res, res.status, Json{{"code", CodeForHttp(res.status)}, {"message", msg}});
    }
  };
  auto exception_handler = [this](const httplib::Request& req, httplib::Response& res,
                                  std::exception_ptr ep) {
    std::string what = "unknown error";
    try {
      if (ep) std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    log_->Error("request failed", {{"path", req.path}, {"error", what}});
    SendJson(res, 500, Json{{"code", "Internal"}, {"message", "internal error"}});
  };
  http_->set_error_handler(error_handler);
  http_->set_exception_handler(exception_handler);
  // Authentication from the headers, before any body is read: everything but
  // the health checks and the UI's static files needs a known bearer token.
  // The handlers (wrap below) authenticate again and authorize.
  http_->set_pre_auth([this](const httplib::Request& req, httplib::Response& res) {
    if (tokens_ == nullptr) return true;
    const std::string& p = req.path;
    if (p == "/healthz" || p == "/readyz" || p == "/" || p == "/ui" || p.rfind("/ui/", 0) == 0) return true;
    auto who = tokens_->Authenticate(req.get_header_value("Authorization"));
    if (who.ok()) return true;
    res.set_header("WWW-Authenticate", "Bearer");
    SendError(res, who.status());
    return false;
  });
  Routes();
#ifdef CPPHTTPLIB_OPENSSL_SUPPORT
  if (!options_.tls_cert.empty()) {
    tls_http_ = std::make_unique<httplib::SSLServer>(options_.tls_cert.c_str(), options_.tls_key.c_str());
    int threads = std::max(4, options_.threads);
    tls_http_->new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
    tls_http_->set_payload_max_length(options_.max_body_bytes);
    tls_http_->set_tcp_nodelay(true);
    tls_http_->set_keep_alive_max_count(100000);
    tls_http_->set_keep_alive_timeout(std::max(1, options_.idle_timeout_ms / 1000));
    tls_http_->set_read_timeout(std::max(1, options_.header_timeout_ms / 1000), 0);
    tls_http_->set_write_timeout(std::max(1, options_.write_timeout_ms / 1000), 0);
    tls_http_->set_error_handler(httplib::Server::Handler(error_handler));
    tls_http_->set_exception_handler(exception_handler);
    for (const HttpServer::Route& r : http_->routes()) {
      if (r.method == "GET") tls_http_->Get(r.pattern, r.handler);
      if (r.method == "POST") tls_http_->Post(r.pattern, r.handler);
      if (r.method == "PUT") tls_http_->Put(r.pattern, r.handler);
      if (r.method == "DELETE") tls_http_->Delete(r.pattern, r.handler);
      if (r.method == "PATCH") tls_http_->Patch(r.pattern, r.handler);
    }
  }
#endif
}

ApiServer::~ApiServer() { Stop(); }

Result<int> ApiServer::Bind() {
  if (!options_.tls_cert.empty()) {
    if (!tls_http_ || !tls_http_->is_valid())
      return InvalidArgument("cannot load the TLS certificate or key");
    int port = options_.port;
    if (port == 0) {
      port = tls_http_->bind_to_any_port(options_.host);
    } else if (!tls_http_->bind_to_port(options_.host, port)) {
      port = -1;
    }
    if (port <= 0) {
      return InvalidArgument("cannot listen on " + options_.host + ":" + std::to_string(options_.port));
    }
    return port;
  }
  return http_->Bind(options_.host, options_.port);
}

void ApiServer::Serve() {
  if (tls_http_) {
    tls_http_->listen_after_bind();
  } else {
    http_->Serve();
  }
}

void ApiServer::Stop() {
  if (stopping_.exchange(true)) return;
  if (tls_http_) tls_http_->stop();
  if (http_) http_->Stop();
}

bool ApiServer::AllowRate(const std::string& user) {
  if (options_.rate_qps <= 0) return true;
  double burst = options_.rate_burst > 0 ? options_.rate_burst : 2 * options_.rate_qps;
  int64_t now = std::chrono::duration_cast<std::chrono::microseconds>(
                    std::chrono::steady_clock::now().time_since_epoch())
                    .count();
  std::lock_guard<std::mutex> l(rate_mu_);
  auto [it, inserted] = buckets_.try_emplace(user, Bucket{burst, now});
  Bucket& b = it->second;
  b.tokens = std::min(burst, b.tokens + static_cast<double>(now - b.last_us) / 1e6 * options_.rate_qps);
  b.last_us = now;
  if (b.tokens < 1) return false;
  b.tokens -= 1;
  return true;
}

void ApiServer::Routes() {
  using Req = httplib::Request;
  using Res = httplib::Response;
  using Fn = std::function<void(const Req&, Res&, const Principal&)>;
  // Authenticates, rate-limits and catches, then runs `fn`.
  auto wrap = [this](Fn fn) {
    return [this, fn](const Req& req, Res& res) {
      Principal who{"anonymous", Role::kAdmin, {}};
      if (tokens_ != nullptr) {
        auto p = tokens_->Authenticate(req.get_header_value("Authorization"));
        if (!p.ok()) {
          res.set_header("WWW-Authenticate", "Bearer");
          SendError(res, p.status());
          return;
        }
        who = std::move(p).value();
      }
      if (!AllowRate(who.user)) {
        res.set_header("Retry-After", "1");
        SendError(res, Status(StatusCode::kResourceExhausted, "rate limit exceeded for user " + who.user));
        return;
      }
      // A metrics token (the Prometheus scraper's) reads /metrics and whoami,
      // nothing else.
      if (who.role == Role::kMetrics && req.path != "/metrics" && req.path != "/api/v1/whoami") {
        SendError(res, Status(StatusCode::kPermissionDenied,
                              "user " + who.user + " has the metrics role, which may only read /metrics"));
        return;
      }
      fn(req, res, who);
    };
  };
  auto ns_scope = [](const Req& req, const Principal& who) -> std::optional<std::set<std::string>> {
    std::string ns = req.get_param_value("namespace");
    if (!ns.empty()) return std::set<std::string>{ns};
    if (who.is_admin()) return std::nullopt;
    return who.namespaces;
  };
  auto forbid_ns = [](const Principal& who, const std::string& ns) {
    return Status(StatusCode::kPermissionDenied, "user " + who.user + " may not act in namespace " + ns);
  };

  http_->Get("/healthz", [](const Req&, Res& res) { SendJson(res, 200, Json{{"status", "ok"}}); });
  http_->Get("/readyz", [this](const Req&, Res& res) {
    if (leading_ && !leading_()) {
      SendJson(res, 200, Json{{"status", "standby"}, {"leader", false}});
    } else if (service_->ready()) {
      Json body{{"status", "ready"}};
      if (leading_) body["leader"] = true;
      SendJson(res, 200, body);
    } else {
      SendJson(res, 503, Json{{"code", "Unavailable"}, {"message", "not ready"}});
    }
  });
  // The built-in web UI (web/dist embedded at build time). The page itself
  // needs no token; it sends the user's token on its own /api/v1 calls, so
  // it sees exactly what the API lets that token see.
  auto serve_ui = [](const std::string& name, Res& res) {
    const UiAsset* a = FindUiAsset(name);
    if (a == nullptr) {
      SendJson(res, 404, Json{{"code", "NotFound"}, {"message", "no such UI file: " + name}});
      return;
    }
    std::string type = "application/octet-stream";
    auto ends = [&](const char* suf) {
      std::string_view n(name), x(suf);
      return n.size() >= x.size() && n.substr(n.size() - x.size()) == x;
    };
    if (ends(".html")) type = "text/html; charset=utf-8";
    if (ends(".js")) type = "text/javascript; charset=utf-8";
    if (ends(".css")) type = "text/css; charset=utf-8";
    if (ends(".txt")) type = "text/plain; charset=utf-8";
    res.set_header("Content-Security-Policy",
                   "default-src 'self'; img-src 'self' data:; style-src 'self'; base-uri 'none'; "
                   "frame-ancestors 'none'");
    res.set_header("X-Content-Type-Options", "nosniff");
    res.set_header("Referrer-Policy", "no-referrer");
    res.set_header("Cache-Control", "no-cache");
    res.set_content(std::string(a->data, a->size), type);
  };
  auto redirect_ui = [](const Req& req, Res& res) {
    std::string q;
    for (const auto& [k, v] : req.params)
      q += (q.empty() ? "?" : "&") + httplib::detail::encode_query_param(k) + "=" +
           httplib::detail::encode_query_param(v);
    res.set_redirect("/ui/" + q, 301);
  };
  http_->Get("/", redirect_ui);
  http_->Get("/ui", redirect_ui);
  http_->Get("/ui/", [serve_ui](const Req&, Res& res) { serve_ui("index.html", res); });
  http_->Get(R"(/ui/([A-Za-z0-9_.-]+))", [serve_ui](const Req& req, Res& res) {
    std::string name = req.matches[1];
    if (name.find("..") != std::string::npos) name = "index.html";
    serve_ui(name, res);
  });
  // /metrics labels name every team's workloads and pods: admins and the
  // `metrics` role (the Prometheus scraper) only.
  http_->Get(
      "/metrics", wrap([this](const Req&, Res& res, const Principal& who) {
        if (!who.can_read_metrics()) {
          return SendError(
              res, Status(StatusCode::kPermissionDenied,
                          "user " + who.user + " may not read /metrics: it needs the admin or metrics role"));
        }
        std::string text = service_->Metrics();
        if (leading_) {  // --leader-elect: which replica's series describe the cluster
          text +=
              "# HELP artel_leader 1 when this replica holds the leader Lease, 0 on a standby\n"
              "# TYPE artel_leader gauge\nartel_leader ";
          text += leading_() ? "1\n" : "0\n";
        }
        res.set_content(text, "text/plain; version=0.0.4; charset=utf-8");
      }));

  http_->Get("/api/v1/whoami", wrap([](const Req&, Res& res, const Principal& who) {
               Json ns = Json::array();
               for (const auto& n : who.namespaces) ns.push_back(n);
               SendJson(res, 200, Json{{"user", who.user}, {"role", RoleName(who.role)}, {"namespaces", ns}});
             }));

  http_->Post("/api/v1/apply", wrap([this](const Req& req, Res& res, const Principal& who) {
                auto r = service_->Apply(req.body, who);
                if (!r.ok()) return SendError(res, r.status());
                log_->Info("apply", {{"user", who.user}});
                SendJson(res, 200, *r);
              }));
  http_->Get("/api/v1/config", wrap([this](const Req&, Res& res, const Principal& who) {
               SendJson(res, 200, service_->Config(who));
             }));

  // A submission's object to a checked spec, for `who`: what POST
  // /api/v1/workloads answers before the daemon sees it.
  auto check_submission = [this, forbid_ns](Json* body, const Principal& who,
                                            const std::string& url_ns) -> Result<Service::SubmitItem> {
    if (!url_ns.empty() && body->is_object() && body->contains("metadata") &&
        (*body)["metadata"].is_object() && !(*body)["metadata"].contains("namespace")) {
      (*body)["metadata"]["namespace"] = url_ns;
    }
    std::string gen;
    auto spec = WorkloadFromObject(*body, &gen);
    if (!spec.ok()) return spec.status();
    if (!url_ns.empty() && spec->ns != url_ns) {
      Status s =
          InvalidArgument("metadata.namespace " + spec->ns + " does not match the URL namespace " + url_ns);
      s.WithField("metadata.namespace");
      return s;
    }
    if (!who.CanUseNamespace(spec->ns)) return forbid_ns(who, spec->ns);
    // A tenant's priority comes from a WorkloadPriorityClass, which admins
    // define: an explicit spec.priority would outrank any class (prod work
    // included). It is accepted only when it equals the value of the class
    // the workload names (as in a Kueue Workload, where both are set).
    if (spec->priority && !who.is_admin()) {
      std::optional<int32_t> class_value;
      if (spec->priority_class) class_value = service_->PriorityClassValue(*spec->priority_class);
      if (!class_value || *class_value != *spec->priority) {
        Status s(StatusCode::kPermissionDenied,
                 "user " + who.user + " may not set spec.priority (" + std::to_string(*spec->priority) +
                     "): tenants set priority through spec.priorityClassName (a WorkloadPriorityClass)" +
                     (spec->priority_class && class_value
                          ? "; " + *spec->priority_class + " has value " + std::to_string(*class_value)
                          : ""));
        s.WithField("spec.priority");
        return s;
      }
    }
    return Service::SubmitItem{std::move(spec).value(), gen};
  };
  auto submit = [this, check_submission](const Req& req, Res& res, const Principal& who,
                                         const std::string& url_ns) {
    auto body = ParseBody(req.body);
    if (!body.ok()) return SendError(res, body.status());
    auto item = check_submission(&*body, who, url_ns);
    if (!item.ok()) return SendError(res, item.status());
    auto r = service_->Submit(std::move(item->spec), item->generate_name, who.user);
    if (!r.ok()) return SendError(res, r.status());
    SendJson(res, 201, *r);
  };
  // {"items": [Workload or Job, ...]}: each checked and submitted as POST
  // /api/v1/workloads would, made durable together (one journal commit).
  // 200 with one entry per item, in order: {"status": 201, "object": ...} or
  // {"status": 4xx, "error": {...}}. A body that is not such a list gets 400
  // and submits nothing.
  http_->Post("/api/v1/workloads:batch",
              wrap([this, check_submission](const Req& req, Res& res, const Principal& who) {
                auto body = ParseBody(req.body);
                if (!body.ok()) return SendError(res, body.status());
                if (!body->is_object() || !body->contains("items") || !(*body)["items"].is_array()) {
                  Status s =
                      InvalidArgument("a batch is an object with an array \"items\" of Workloads or Jobs");
                  s.WithField("items");
                  return SendError(res, s);
                }
                Json& items = (*body)["items"];
                if (items.size() > kMaxBatchItems) {
                  Status s = InvalidArgument("a batch holds at most " + std::to_string(kMaxBatchItems) +
                                             " items, not " + std::to_string(items.size()));
                  s.WithField("items");
                  return SendError(res, s);
                }
                std::vector<Json> answers(items.size());
                std::vector<Service::SubmitItem> batch;
                std::vector<size_t> where;
                for (size_t i = 0; i < items.size(); ++i) {
                  auto item = check_submission(&items[i], who, "");
                  if (!item.ok()) {
                    Status st = item.status();
                    answers[i] = Json{{"status", HttpStatus(st.code())}, {"error", ErrorJson(st)}};
                    continue;
                  }
                  batch.push_back(std::move(item).value());
                  where.push_back(i);
                }
                auto results = service_->SubmitBatch(std::move(batch), who.user);
                for (size_t j = 0; j < results.size(); ++j) {
                  if (results[j].ok()) {
                    answers[where[j]] = Json{{"status", 201}, {"object", std::move(results[j]).value()}};
                  } else {
                    const Status& st = results[j].status();
                    answers[where[j]] = Json{{"status", HttpStatus(st.code())}, {"error", ErrorJson(st)}};
                  }
                }
                SendJson(res, 200, Json{{"items", std::move(answers)}});
              }));
  http_->Post("/api/v1/workloads",
              wrap([submit](const Req& req, Res& res, const Principal& who) { submit(req, res, who, ""); }));
  http_->Post(R"(/api/v1/namespaces/([a-z0-9-]+)/workloads)",
              wrap([submit](const Req& req, Res& res, const Principal& who) {
                submit(req, res, who, req.matches[1]);
              }));

  auto list = [this, ns_scope, forbid_ns](const Req& req, Res& res, const Principal& who,
                                          const std::string& url_ns) {
    ListFilter f;
    if (!url_ns.empty()) {
      if (!who.CanUseNamespace(url_ns)) return SendError(res, forbid_ns(who, url_ns));
      f.namespaces = std::set<std::string>{url_ns};
    } else {
      f.namespaces = ns_scope(req, who);
      if (f.namespaces && !who.is_admin()) {
        for (const auto& n : *f.namespaces) {
          if (!who.CanUseNamespace(n)) return SendError(res, forbid_ns(who, n));
        }
      }
    }
    f.labels = ParseSelector(req.get_param_value("labelSelector"));
    f.fields = ParseSelector(req.get_param_value("fieldSelector"));
    for (const auto& [k, v] : f.fields) {
      if (k != "status.phase" && k != "spec.queueName" && k != "status.clusterQueue" &&
          k != "metadata.name" && k != "metadata.namespace") {
        Status s = InvalidArgument("unsupported field selector " + k);
        s.WithField("fieldSelector");
        return SendError(res, s);
      }
    }
    SendJson(res, 200, service_->ListWorkloads(f, who));
  };
  http_->Get("/api/v1/workloads",
             wrap([list](const Req& req, Res& res, const Principal& who) { list(req, res, who, ""); }));
  http_->Get(
      R"(/api/v1/namespaces/([a-z0-9-]+)/workloads)",
      wrap([list](const Req& req, Res& res, const Principal& who) { list(req, res, who, req.matches[1]); }));

  // Per-workload endpoints: namespace access is checked before existence so
  // that tenants learn nothing about other namespaces.
  auto per_wl = [wrap,
                 forbid_ns](std::function<void(const Req&, Res&, const Principal&, const std::string&)> fn) {
    return wrap([fn, forbid_ns](const Req& req, Res& res, const Principal& who) {
      std::string ns = req.matches[1];
      if (!who.CanUseNamespace(ns)) return SendError(res, forbid_ns(who, ns));
      fn(req, res, who, ns + "/" + std::string(req.matches[2]));
    });
  };
  const std::string wl_path = R"(/api/v1/namespaces/([a-z0-9-]+)/workloads/([a-z0-9-]+))";
  http_->Get(wl_path, per_wl([this](const Req&, Res& res, const Principal& who, const std::string& key) {
               auto r = service_->GetWorkload(key, who);
               if (!r.ok()) return SendError(res, r.status());
               SendJson(res, 200, *r);
             }));
  auto cancel = [this](const Req&, Res& res, const Principal& who, const std::string& key) {
    auto r = service_->Cancel(key, who.user);
    if (!r.ok()) return SendError(res, r.status());
    SendJson(res, 200, *r);
  };
  http_->Delete(wl_path, per_wl(cancel));
  http_->Post(wl_path + "/cancel", per_wl(cancel));
  http_->Get(wl_path + "/why",
             per_wl([this](const Req&, Res& res, const Principal& who, const std::string& key) {
               auto r = service_->Why(key, who);
               if (!r.ok()) return SendError(res, r.status());
               SendJson(res, 200, *r);
             }));
  http_->Get(wl_path + "/logs",
             per_wl([this](const Req& req, Res& res, const Principal&, const std::string& key) {
               int64_t tail = 1 << 20;
               if (req.has_param("tailBytes")) {
                 try {
                   tail = std::stoll(req.get_param_value("tailBytes"));
                 } catch (...) {
                   Status s = InvalidArgument("tailBytes must be an integer");
                   s.WithField("tailBytes");
                   return SendError(res, s);
                 }
               }
               auto r = service_->Logs(key, req.get_param_value("pod"), tail);
               if (!r.ok()) return SendError(res, r.status());
               res.set_content(*r, "text/plain; charset=utf-8");
             }));

  http_->Get("/api/v1/clusterqueues", wrap([this](const Req&, Res& res, const Principal&) {
               SendJson(res, 200, service_->ClusterQueues());
             }));
  http_->Get(R"(/api/v1/clusterqueues/([a-z0-9.-]+))",
             wrap([this](const Req& req, Res& res, const Principal&) {
               Json all = service_->ClusterQueues();
               for (const auto& cq : all["items"]) {
                 if (cq["name"] == std::string(req.matches[1])) return SendJson(res, 200, cq);
               }
               SendError(res, NotFound("ClusterQueue " + std::string(req.matches[1]) + " not found"));
             }));
  http_->Get("/api/v1/localqueues",
             wrap([this, ns_scope, forbid_ns](const Req& req, Res& res, const Principal& who) {
               auto scope = ns_scope(req, who);
               if (scope && !who.is_admin()) {
                 for (const auto& n : *scope) {
                   if (!who.CanUseNamespace(n)) return SendError(res, forbid_ns(who, n));
                 }
               }
               SendJson(res, 200, service_->LocalQueues(scope));
             }));
  http_->Get(R"(/api/v1/namespaces/([a-z0-9-]+)/localqueues)",
             wrap([this, forbid_ns](const Req& req, Res& res, const Principal& who) {
               std::string ns = req.matches[1];
               if (!who.CanUseNamespace(ns)) return SendError(res, forbid_ns(who, ns));
               SendJson(res, 200, service_->LocalQueues(std::set<std::string>{ns}));
             }));
  http_->Get("/api/v1/cohorts", wrap([this](const Req&, Res& res, const Principal&) {
               SendJson(res, 200, service_->Cohorts());
             }));
  http_->Get("/api/v1/nodes",
             wrap([this](const Req&, Res& res, const Principal&) { SendJson(res, 200, service_->Nodes()); }));
  http_->Get("/api/v1/gpus", wrap([this](const Req&, Res& res, const Principal& who) {
               SendJson(res, 200, service_->Gpus(who));
             }));

  // Usage history per ClusterQueue and cohort (server/history.h): the same
  // names and quantities as /clusterqueues and /cohorts, which every role
  // but metrics may read, so nothing is redacted.
  http_->Get(
      "/api/v1/history", wrap([this](const Req& req, Res& res, const Principal&) {
        if (history_ == nullptr) return SendError(res, NotFound("usage history is off (--history-points 0)"));
        int64_t since_ms = 0;
        if (req.has_param("since")) {
          try {
            size_t used = 0;
            std::string v = req.get_param_value("since");
            double s = std::stod(v, &used);
            if (used != v.size() || s < 0) throw std::invalid_argument(v);
            since_ms = static_cast<int64_t>(s * 1000);
          } catch (...) {
            Status s = InvalidArgument("since must be a non-negative number of Unix seconds");
            s.WithField("since");
            return SendError(res, s);
          }
        }
        // range=<duration> (e.g. 1h, 7d): the last so long. Within the
        // ring it is served from memory; beyond it from Prometheus
        // (--prometheus-url) with fixed queries, at about 720 points.
        const int64_t ring_ms =
            history_->options().interval_ms * static_cast<int64_t>(history_->options().capacity);
        const bool has_prom = prom_history_ != nullptr;
        if (req.has_param("range")) {
          if (req.has_param("since")) {
            Status s = InvalidArgument("give either since or range, not both");
            s.WithField("range");
            return SendError(res, s);
          }
          const std::string v = req.get_param_value("range");
          const int64_t range_ms = ParseRangeMs(v);
          if (range_ms <= 0 || range_ms > int64_t{366} * 86400 * 1000) {
            Status s = InvalidArgument("range must be a duration such as 1h, 24h or 7d (at most 366d)");
            s.WithField("range");
            return SendError(res, s);
          }
          const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                                     std::chrono::system_clock::now().time_since_epoch())
                                     .count();
          if (range_ms > ring_ms) {
            if (!has_prom) {
              Status s =
                  InvalidArgument("range " + v + " is longer than the in-memory history (" +
                                  std::to_string(ring_ms / 1000) + "s) and arteld has no --prometheus-url");
              s.WithField("range");
              return SendError(res, s);
            }
            const double end_s = static_cast<double>(now_ms) / 1000.0;
            const double range_s = static_cast<double>(range_ms) / 1000.0;
            const double step_s =
                std::max(static_cast<double>(history_->options().interval_ms) / 1000.0, range_s / 720.0);
            nlohmann::json out;
            Status st = prom_history_->Query(end_s - range_s, end_s, step_s, &out);
            if (!st.ok()) return SendJson(res, 502, ErrorJson(st));
            out["ringSeconds"] = ring_ms / 1000;
            out["prometheus"] = true;
            return SendJson(res, 200, out);
          }
          since_ms = now_ms - range_ms;
        }
        nlohmann::json out = history_->ToJson(since_ms);
        out["source"] = "ring";
        out["ringSeconds"] = ring_ms / 1000;
        out["prometheus"] = has_prom;
        SendJson(res, 200, out);
      }));

  http_->Get("/api/v1/watch",
             wrap([this, ns_scope, forbid_ns](const Req& req, Res& res, const Principal& who) {
               auto scope = ns_scope(req, who);
               if (scope && !who.is_admin()) {
                 for (const auto& n : *scope) {
                   if (!who.CanUseNamespace(n)) return SendError(res, forbid_ns(who, n));
                 }
               }
               uint64_t from = service_->LatestEventSeq();
               if (req.has_param("since")) {
                 try {
                   from = std::stoull(req.get_param_value("since"));
                 } catch (...) {
                 }
               }
               if (req.get_param_value("follow") == "false") {
                 uint64_t next = 0;
                 Json events = service_->EventsAfter(from, 0, scope, &next, who);
                 return SendJson(res, 200, Json{{"kind", "EventList"}, {"items", events}, {"next", next}});
               }
               auto cursor = std::make_shared<uint64_t>(from);
               res.set_header("Cache-Control", "no-cache");
               res.set_chunked_content_provider(
                   "text/event-stream", [this, cursor, scope, who](size_t, httplib::DataSink& sink) {
                     if (stopping_.load() || !service_->ready()) {
                       sink.done();
                       return true;
                     }
                     uint64_t next = *cursor;
                     auto events = service_->EventsAfter(*cursor, 1000, scope, &next, who);
                     std::string out;
                     for (const auto& e : events) {
                       out += "id: " + std::to_string(e.value("seq", uint64_t{0})) +
                              "\nevent: " + e.value("type", "event") + "\ndata: " + e.dump() + "\n\n";
                     }
                     if (out.empty()) out = ": keep-alive\n\n";
                     *cursor = next;
                     if (!sink.write(out.data(), out.size())) return false;
                     return true;
                   });
             }));
}

}  // namespace artel::server
