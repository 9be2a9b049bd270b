// Informer: list + watch of one resource into a local cache (see client.h).
#include <algorithm>
#include <chrono>
#include <random>

#include "kube/client.h"

namespace artel::kube {
namespace {

std::string Meta(const Json& obj, const char* key) {
  if (!obj.is_object()) return "";
  auto m = obj.find("metadata");
  if (m == obj.end() || !m->is_object()) return "";
  auto v = m->find(key);
  return v != m->end() && v->is_string() ? v->get<std::string>() : "";
}

std::string Key(const Json& obj) { return Meta(obj, "namespace") + "/" + Meta(obj, "name"); }

// What an informer keeps and hands on leaves out metadata.managedFields:
// nothing in Artel reads them, and on an object whose status controllers
// write they are often larger than the rest of it (3,000 Kueue Workloads
// kept about 60 KB each in the three Workload informers of Kubernetes mode).
void DropManagedFields(Json& obj) {
  if (auto m = obj.find("metadata"); m != obj.end() && m->is_object()) m->erase("managedFields");
}

// An object's identity only (Informer::SetSlimCache).
Json Slim(const Json& obj) {
  Json m = Json::object();
  for (const char* k : {"namespace", "name", "uid", "resourceVersion"}) {
    std::string v = Meta(obj, k);
    if (!v.empty()) m[k] = std::move(v);
  }
  return Json{{"metadata", std::move(m)}};
}

}  // namespace

Informer::Informer(Client* client, Resource r, std::string ns, Handler h, ListOptions o)
    : client_(client), r_(std::move(r)), ns_(std::move(ns)), h_(std::move(h)), o_(std::move(o)) {}

Informer::~Informer() { Stop(); }

void Informer::SetBackoff(int64_t initial_ms, int64_t max_ms) {
  backoff_initial_ms_ = std::max<int64_t>(1, initial_ms);
  backoff_max_ms_ = std::max(backoff_initial_ms_.load(), max_ms);
}

void Informer::Retry() {
  std::lock_guard<std::mutex> l(mu_);
  kick_ = true;
  cv_.notify_all();
}
void Informer::SetWatchTimeout(int seconds) { watch_timeout_s_ = seconds; }
void Informer::SetPageSize(int64_t limit) { page_size_ = limit; }
void Informer::SetSlimCache(bool slim) { slim_ = slim; }

void Informer::Start() {
  if (thread_.joinable()) return;
  stop_ = false;
  running_ = true;
  thread_ = std::thread([this] { Run(); });
}

void Informer::Stop() {
  stop_ = true;
  cv_.notify_all();
  if (!thread_.joinable()) return;
  if (std::this_thread::get_id() == thread_.get_id()) return;  // from a handler: the loop ends after it
  // The watch may be blocked in a read: cut its connection until the thread
  // notices (a cut that lands before the socket opens is repeated).
  while (true) {
    client_->Interrupt(&stop_);
    std::unique_lock<std::mutex> l(mu_);
    if (cv_.wait_for(l, std::chrono::milliseconds(20), [&] { return !running_.load(); })) break;
  }
  thread_.join();
}

bool Informer::HasSynced() const {
  std::lock_guard<std::mutex> l(mu_);
  return synced_;
}

std::vector<Json> Informer::Snapshot() const {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<Json> out;
  out.reserve(cache_.size());
  for (const auto& [k, v] : cache_) out.push_back(v);
  return out;
}

uint64_t Informer::relists() const { return relists_.load(); }
uint64_t Informer::reconnects() const { return reconnects_.load(); }

std::string Informer::resource_version() const {
  std::lock_guard<std::mutex> l(mu_);
  return rv_;
}

std::string Informer::last_error() const {
  std::lock_guard<std::mutex> l(mu_);
  return last_error_;
}

void Informer::WaitBackoff(int64_t ms) {
  std::unique_lock<std::mutex> l(mu_);
  cv_.wait_for(l, std::chrono::milliseconds(ms), [&] { return stop_.load() || kick_; });
  kick_ = false;
}

bool Informer::Relist() {
  ListOptions lo = o_;
  lo.resource_version.clear();  // the newest state (a quorum read)
  lo.continue_token.clear();
  lo.limit = page_size_;
  auto list = client_->ListAll(r_, ns_, lo);
  if (!list.ok()) {
    std::lock_guard<std::mutex> l(mu_);
    last_error_ = "list: " + list.error().ToString();
    return false;
  }
  std::map<std::string, Json> fresh;
  for (auto& item : list.value()["items"]) {
    if (item.is_object() && !item.contains("metadata")) continue;
    DropManagedFields(item);
    fresh.emplace(Key(item), std::move(item));
  }
  std::vector<const Json*> added, updated;
  std::vector<Json> deleted;
  std::map<std::string, Json> old;
  {
    std::lock_guard<std::mutex> l(mu_);
    old.swap(cache_);
  }
  for (const auto& [k, v] : fresh) {
    auto it = old.find(k);
    if (it == old.end()) {
      added.push_back(&v);
    } else if (Meta(it->second, "resourceVersion") != Meta(v, "resourceVersion")) {
      updated.push_back(&v);
    }
  }
  for (auto& [k, v] : old)
    if (!fresh.count(k)) deleted.push_back(std::move(v));
  // Handlers run without the lock; the cache holds the new state first.
  std::vector<Json> add_copy, upd_copy;
  for (const Json* j : added) add_copy.push_back(*j);
  for (const Json* j : updated) upd_copy.push_back(*j);
  if (slim_)
    for (auto& [k, v] : fresh) v = Slim(v);
  {
    std::lock_guard<std::mutex> l(mu_);
    cache_ = std::move(fresh);
    rv_ = list.value()["metadata"].value("resourceVersion", "");
    synced_ = true;
    last_error_.clear();
  }
  for (const Json& j : add_copy)
    if (h_.on_add) h_.on_add(j);
  for (const Json& j : upd_copy)
    if (h_.on_update) h_.on_update(j);
  for (const Json& j : deleted)
    if (h_.on_delete) h_.on_delete(j);
  if (h_.on_synced) h_.on_synced();
  return true;
}

bool Informer::Apply(WatchEvent& e) {
  DropManagedFields(e.object);
  std::string rv = Meta(e.object, "resourceVersion");
  if (e.type == "BOOKMARK") {
    std::lock_guard<std::mutex> l(mu_);
    if (!rv.empty()) rv_ = rv;
    return !stop_;
  }
  std::string key = Key(e.object);
  bool existed;
  Json last_known;
  {
    std::lock_guard<std::mutex> l(mu_);
    auto it = cache_.find(key);
    existed = it != cache_.end();
    if (e.type == "DELETED") {
      if (existed) cache_.erase(it);
    } else if (e.type == "ADDED" || e.type == "MODIFIED") {
      cache_[key] = slim_ ? Slim(e.object) : e.object;
    }
    if (!rv.empty()) rv_ = rv;
  }
  if (e.type == "DELETED") {
    if (existed && h_.on_delete) h_.on_delete(e.object);
  } else if (e.type == "ADDED" || e.type == "MODIFIED") {
    if (existed) {
      if (h_.on_update) h_.on_update(e.object);
    } else if (h_.on_add) {
      h_.on_add(e.object);
    }
  }
  return !stop_;
}

void Informer::Run() {
  std::mt19937_64 rng(std::random_device{}());
  int64_t backoff = backoff_initial_ms_;
  auto wait = [&] {
    // Full backoff plus up to half again of jitter, then double (capped).
    backoff = std::min(backoff, backoff_max_ms_.load());
    std::uniform_int_distribution<int64_t> jitter(0, backoff / 2);
    WaitBackoff(backoff + jitter(rng));
    backoff = std::min(backoff * 2, backoff_max_ms_.load());
  };
  bool need_list = true, listed_once = false;
  while (!stop_) {
    if (need_list) {
      if (!Relist()) {
        if (stop_) break;
        wait();
        continue;
      }
      if (listed_once) relists_.fetch_add(1);
      listed_once = true;
      need_list = false;
      backoff = backoff_initial_ms_;
    }
    ListOptions wo = o_;
    wo.resource_version = resource_version();
    wo.continue_token.clear();
    wo.limit = 0;
    uint64_t events = 0;
    auto res = client_->Watch(
        r_, ns_, wo,
        [&](WatchEvent& e) {
          ++events;
          return Apply(e);
        },
        &stop_, watch_timeout_s_);
    if (stop_) break;
    if (res.ok()) {  // the server ended the stream: watch again from where it stopped
      backoff = backoff_initial_ms_;
      continue;
    }
    if (res.error().Gone()) {  // the resourceVersion expired: list again, deliver the difference
      need_list = true;
      continue;
    }
    {
      std::lock_guard<std::mutex> l(mu_);
      last_error_ = "watch: " + res.error().ToString();
    }
    reconnects_.fetch_add(1);
    if (events > 0) backoff = backoff_initial_ms_;
    wait();
  }
  std::lock_guard<std::mutex> l(mu_);
  running_ = false;
  cv_.notify_all();
}

}  // namespace artel::kube
