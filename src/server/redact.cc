#include "server/redact.h"

#include <algorithm>
#include <map>
#include <utility>

namespace artel::server {
namespace {

constexpr const char* kOther = "a workload of another namespace";

std::string_view NsOf(std::string_view key) {
  size_t slash = key.find('/');
  return slash == std::string_view::npos ? std::string_view() : key.substr(0, slash);
}

bool TokenChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '/';
}

}  // namespace

Redactor::Redactor(const Principal& who, std::function<std::string(const std::string&)> cluster_queue_of,
                   std::function<bool(std::string_view)> is_namespace)
    : who_(who),
      all_(who.is_admin()),
      cq_of_(std::move(cluster_queue_of)),
      is_namespace_(std::move(is_namespace)) {}

bool Redactor::Visible(std::string_view key) const {
  if (all_) return true;
  std::string_view ns = NsOf(key);
  return !ns.empty() && who_.CanUseNamespace(ns);
}

std::string Redactor::Describe(const std::string& key, const std::string& cluster_queue) const {
  if (Visible(key)) return key;
  std::string cq = cluster_queue.empty() && cq_of_ ? cq_of_(key) : cluster_queue;
  return cq.empty() ? kOther : "a workload in ClusterQueue " + cq;
}

std::string Redactor::DescribeList(const std::vector<std::string>& keys) const {
  std::string out;
  std::vector<std::pair<std::string, int>> hidden;  // ClusterQueue -> count, first-seen order
  for (const auto& k : keys) {
    if (Visible(k)) {
      out += (out.empty() ? "" : " ") + k;
      continue;
    }
    std::string cq = cq_of_ ? cq_of_(k) : "";
    auto it = std::find_if(hidden.begin(), hidden.end(), [&](const auto& h) { return h.first == cq; });
    if (it == hidden.end()) {
      hidden.emplace_back(cq, 1);
    } else {
      ++it->second;
    }
  }
  for (const auto& [cq, n] : hidden) {
    std::string d = std::to_string(n) + (n == 1 ? " workload" : " workloads");
    d += cq.empty() ? " of other namespaces" : " in ClusterQueue " + cq;
    out += (out.empty() ? "" : " ") + d;
  }
  return out;
}

std::vector<std::string> Redactor::VisibleOnly(const std::vector<std::string>& keys) const {
  std::vector<std::string> out;
  for (const auto& k : keys) {
    if (Visible(k)) out.push_back(k);
  }
  return out;
}

std::string Redactor::PendingMessage(const core::PendingReason& p) const {
  std::string msg = p.message;
  if (all_) return msg;
  if (!p.would_preempt.empty()) {
    // The core lists the victims in one of these two forms (engine_explain.cc
    // FillMessage and Engine::Why), at the end of its message or before a
    // further clause; rebuild that part from the list itself.
    std::string names;
    for (const auto& k : p.would_preempt) names += " " + k;
    const std::string waiting =
        "waiting for " + std::to_string(p.would_preempt.size()) + " preempted workload(s) to stop:";
    const std::string would = "; it would fit if these were preempted:";
    for (const std::string& head : {waiting, would}) {
      const std::string listed = head + names;
      size_t at = msg.find(listed);
      // The list must end there (the end of the message, or a new clause),
      // not continue with a longer name.
      while (at != std::string::npos) {
        const size_t end = at + listed.size();
        if (end == msg.size() || msg[end] == ';' || msg[end] == ',' || msg[end] == '.') break;
        at = msg.find(listed, at + 1);
      }
      if (at != std::string::npos) {
        msg.replace(at + head.size(), names.size(), " " + DescribeList(p.would_preempt));
        break;
      }
    }
  }
  return Scrub(std::move(msg));
}

std::string Redactor::EvictionMessage(const std::string& message, const std::string& preemptor,
                                      const std::string& preemptor_cluster_queue) const {
  if (all_) return message;
  std::string msg = message;
  if (!preemptor.empty() && !Visible(preemptor)) {
    const std::string named = preemptor + " (ClusterQueue " + preemptor_cluster_queue + ")";
    const std::string hidden = preemptor_cluster_queue.empty()
                                   ? std::string(kOther)
                                   : "a workload in ClusterQueue " + preemptor_cluster_queue;
    for (size_t at = msg.find(named); at != std::string::npos; at = msg.find(named, at + hidden.size())) {
      msg.replace(at, named.size(), hidden);
    }
  }
  return Scrub(std::move(msg));
}

std::string Redactor::Scrub(std::string text) const {
  if (all_) return text;
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    if (!TokenChar(text[i]) || (i > 0 && TokenChar(text[i - 1]))) {
      out.push_back(text[i++]);
      continue;
    }
    size_t j = i;
    while (j < text.size() && TokenChar(text[j])) ++j;
    size_t end = j;
    while (end > i && text[end - 1] == '.') --end;  // a sentence's full stop
    std::string_view token(text.data() + i, end - i);
    std::string_view ns = NsOf(token);
    bool hide = !ns.empty() && token.size() > ns.size() + 1 && !who_.CanUseNamespace(ns) && is_namespace_ &&
                is_namespace_(ns);
    if (hide) {
      out += kOther;
      out.append(text, end, j - end);
    } else {
      out.append(text, i, j - i);
    }
    i = j;
  }
  return out;
}

}  // namespace artel::server
