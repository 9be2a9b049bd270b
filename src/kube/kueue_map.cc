// Stub: the implementation follows in the next commits of h-kueue-map.
#include "kube/kueue_map.h"

namespace artel::kube {

const ObjectCondition* BuiltConfig::Find(const std::string& kind, const std::string& ns,
                                         const std::string& name) const {
  for (const ObjectCondition& c : conditions) {
    if (c.kind == kind && c.ns == ns && c.name == name) return &c;
  }
  return nullptr;
}
BuiltConfig BuildConfig(const KueueObjects&) { return {}; }
Result<core::WorkloadSpec> WorkloadFromObject(const Json&, const core::Config&) {
  return InvalidArgument("not implemented yet");
}
Json AdmittedStatus(const Json& s, const core::WorkloadInfo&, const std::string&, int64_t) { return s; }
Json PendingStatus(const Json& s, const core::PendingReason&, const std::string&, int64_t) { return s; }
std::string PendingMessage(const core::PendingReason& why) { return why.message; }
Json EvictedStatus(const Json& s, const core::Eviction&, const std::string&, int64_t) { return s; }
Json RequeuedStatus(const Json& s, const std::string&, int64_t) { return s; }
Json ReactivatedStatus(const Json& s, const std::string&, int64_t) { return s; }
Json FinishedStatus(const Json& s, bool, const std::string&, const std::string&, int64_t) { return s; }
Result<ObservedState> ObserveWorkload(const Json&) { return ObservedState{}; }
Json ClusterQueueStatus(const core::Engine&, const std::string&, const ObjectCondition&, const Json& s,
                        const std::string&, int64_t) {
  return s;
}
Json LocalQueueStatus(const core::Engine&, const std::string&, const std::string&, const ObjectCondition&,
                      const Json& s, const std::string&, int64_t) {
  return s;
}
bool SetCondition(Json*, const std::string&, bool, const std::string&, const std::string&, const std::string&,
                  int64_t) {
  return false;
}
const Json* FindCondition(const Json&, const std::string&) { return nullptr; }
bool IsConditionTrue(const Json&, const std::string&) { return false; }
std::string FormatRfc3339(int64_t) { return ""; }
Result<int64_t> ParseRfc3339(const std::string&) { return int64_t{0}; }
std::string TruncateConditionMessage(std::string m) { return m; }

}  // namespace artel::kube
