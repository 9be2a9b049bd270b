// Parses the request annotations of a workload into its typed fields.
#include "manifest/typed_fields.h"

#include <charconv>
#include <map>
#include <optional>
#include <string_view>

#include "manifest/manifest.h"

namespace artel::manifest {
namespace {

using Annotations = core::FlatMap<std::string, std::string>;

std::string Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return std::string(s);
}

// Reads the annotations of one workload; in lenient mode a bad value is
// skipped, otherwise the first one is kept in `error`.
class Reader {
 public:
  Reader(bool strict, const AnnotationPath& path) : strict_(strict), path_(path) {}

  const Status& error() const { return error_; }

  // The trimmed value of `key` in `a`, or nullptr.
  const std::string* Find(const Annotations& a, const char* key) {
    auto it = a.find(key);
    if (it == a.end()) return nullptr;
    scratch_ = Trim(it->second);
    return &scratch_;
  }

  void Fail(int pod_set, const char* key, const std::string& value, const std::string& expected) {
    if (!strict_ || !error_.ok()) return;
    std::string where = path_         ? path_(pod_set)
                        : pod_set < 0 ? "metadata.annotations"
                                      : "podSets[" + std::to_string(pod_set) + "].annotations";
    error_ = InvalidArgument("\"" + value + "\": " + expected);
    error_.WithField(where + "[" + key + "]");
  }

  std::optional<int64_t> Int(int pod_set, const char* key, const std::string& v, int64_t lo, int64_t hi) {
    int64_t n = 0;
    auto r = std::from_chars(v.data(), v.data() + v.size(), n);
    if (r.ec != std::errc() || r.ptr != v.data() + v.size() || n < lo || n > hi) {
      Fail(pod_set, key, v,
           "expected a whole number from " + std::to_string(lo) + " to " + std::to_string(hi));
      return std::nullopt;
    }
    return n;
  }

  void Topology(int pod_set, const Annotations& a, core::TopologyRequest* t) {
    *t = core::TopologyRequest{};
    if (const std::string* v = Find(a, kAnnKueueRequired)) t->required = *v;
    if (const std::string* v = Find(a, kAnnKueuePreferred)) t->preferred = *v;
    if (const std::string* v = Find(a, kAnnKueueUnconstrained)) {
      if (*v == "true") {
        t->unconstrained = true;
      } else if (*v != "false" && !v->empty()) {
        Fail(pod_set, kAnnKueueUnconstrained, *v, "expected true or false");
      }
    }
    if (const std::string* v = Find(a, kAnnKueueSliceRequired)) t->slice_required = *v;
    if (const std::string* v = Find(a, kAnnKueueSliceSize); v != nullptr && !v->empty()) {
      if (auto n = Int(pod_set, kAnnKueueSliceSize, *v, 1, 100000)) t->slice_size = static_cast<int32_t>(*n);
    }
    if (const std::string* v = Find(a, kAnnKueueGroupName)) t->group = *v;
    if (const std::string* v = Find(a, kAnnKaiRequiredPlacement)) t->kai_required = *v;
    if (const std::string* v = Find(a, kAnnKaiPreferredPlacement)) t->kai_preferred = *v;
  }

  void GpuShare(int pod_set, const Annotations& a, core::GpuShareRequest* g) {
    *g = core::GpuShareRequest{};
    const std::string* frac = Find(a, kAnnKaiGpuFraction);
    if (frac != nullptr) {
      Result<core::Amount> f = core::ParseQuantity(*frac);
      if (!f.ok() || *f <= 0 || *f > core::kMilli) {
        Fail(pod_set, kAnnKaiGpuFraction, *frac, "expected a fraction of one GPU in (0, 1], e.g. 0.5");
      } else {
        g->fraction = *f;
      }
    } else if (const std::string* mem = Find(a, kAnnKaiGpuMemory)) {
      Result<core::Amount> m = core::ParseQuantity(*mem);
      if (!m.ok() || *m <= 0) {
        Fail(pod_set, kAnnKaiGpuMemory, *mem, "expected GPU memory in MiB, more than 0");
      } else {
        g->memory_mib = (*m + core::kMilli - 1) / core::kMilli;
      }
    }
    if (!g->any()) return;  // the device count alone asks for nothing
    if (const std::string* n = Find(a, kAnnKaiGpuDevices)) {
      Result<core::Amount> q = core::ParseQuantity(*n);
      if (!q.ok() || *q <= 0 || *q % core::kMilli != 0 || *q / core::kMilli > 1024) {
        Fail(pod_set, kAnnKaiGpuDevices, *n, "expected a whole number of devices from 1 to 1024");
      } else {
        g->devices = static_cast<int32_t>(*q / core::kMilli);
      }
    }
  }

  // The gang keys of one annotation map, where not given by an earlier one.
  void Gang(int pod_set, const Annotations& a, core::GangSpec* g, std::map<std::string, bool>* seen) {
    auto first = [&](const char* key) -> const std::string* {
      const std::string* v = Find(a, key);
      if (v == nullptr || (*seen)[key]) return nullptr;
      (*seen)[key] = true;
      return v;
    };
    if (const std::string* v = first(kAnnMinMember)) {
      // A gang minimum of 0 asks for one pod, as it always did.
      if (auto n = Int(pod_set, kAnnMinMember, *v, 0, 1000000))
        g->min_member = std::max<int32_t>(1, static_cast<int32_t>(*n));
    }
    if (const std::string* v = first(kAnnTopology)) g->topology = *v;
    if (const std::string* v = first(kAnnNetworkTopologyMode)) {
      if (v->empty() || *v == "hard") {
        g->network_mode = "hard";
      } else if (*v == "soft") {
        g->network_mode = "soft";
      } else {
        Fail(pod_set, kAnnNetworkTopologyMode, *v, "expected hard or soft");
      }
    }
    if (const std::string* v = first(kAnnHighestTierAllowed)) {
      if (auto n = Int(pod_set, kAnnHighestTierAllowed, *v, 0, 64))
        g->highest_tier = static_cast<int32_t>(*n);
    }
    if (const std::string* v = first(kAnnHighestTierName)) g->highest_tier_name = *v;
    if (const std::string* v = first(kAnnScore)) {
      if (*v == "spread") {
        g->spread = true;
      } else if (*v != "binpack" && !v->empty()) {
        Fail(pod_set, kAnnScore, *v, "expected binpack or spread");
      }
    }
  }

 private:
  bool strict_;
  const AnnotationPath& path_;
  Status error_;
  std::string scratch_;
};

Status Read(core::WorkloadSpec* w, bool strict, const AnnotationPath& path) {
  Reader r(strict, path);
  core::GangSpec gang;
  core::TopologyRequest topology;
  std::vector<core::TopologyRequest> set_topology(w->pod_sets.size());
  std::vector<core::GpuShareRequest> set_share(w->pod_sets.size());
  std::map<std::string, bool> seen;
  r.Gang(-1, w->annotations, &gang, &seen);
  r.Topology(-1, w->annotations, &topology);
  for (size_t i = 0; i < w->pod_sets.size(); ++i) {
    const Annotations& a = w->pod_sets[i].annotations;
    const int ps = static_cast<int>(i);
    r.Gang(ps, a, &gang, &seen);
    r.Topology(ps, a, &set_topology[i]);
    r.GpuShare(ps, a, &set_share[i]);
  }
  if (!r.error().ok()) return r.error();
  // KAI subgroups keep their own placement inside the PodGroup's domain.
  auto dialect = w->annotations.find(kAnnDialect);
  gang.subgroup_topologies = dialect != w->annotations.end() && dialect->second == "kai";
  w->gang = std::move(gang);
  w->topology = std::move(topology);
  for (size_t i = 0; i < w->pod_sets.size(); ++i) {
    w->pod_sets.mut(i).topology = std::move(set_topology[i]);
    w->pod_sets.mut(i).gpu_share = set_share[i];
  }
  return Status::Ok();
}

}  // namespace

Status ReadTypedFields(core::WorkloadSpec* w, const AnnotationPath& path) { return Read(w, true, path); }

void ReadTypedFieldsLenient(core::WorkloadSpec* w) { (void)Read(w, false, nullptr); }

}  // namespace artel::manifest
