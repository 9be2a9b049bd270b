#include "core/engine.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <unordered_set>

#include "core/admission_order.h"
#include "core/engine_helpers.h"
#include "core/engine_impl.h"
#include "core/flavor_assigner.h"
#include "core/preemption_policy.h"
#include "core/resource_names.h"

namespace artel::core {

const char* WorkloadStateName(WorkloadState s) {
  switch (s) {
    case WorkloadState::kPending: return "Pending";
    case WorkloadState::kAdmitted: return "Admitted";
    case WorkloadState::kEvicting: return "Evicting";
    case WorkloadState::kFinished: return "Finished";
  }
  return "Unknown";
}

const char* EvictionReasonName(EvictionReason r) {
  switch (r) {
    case EvictionReason::kInClusterQueue: return "InClusterQueue";
    case EvictionReason::kInCohortReclamation: return "InCohortReclamation";
    case EvictionReason::kInCohortFairSharing: return "InCohortFairSharing";
    case EvictionReason::kInCohortReclaimWhileBorrowing: return "InCohortReclaimWhileBorrowing";
    case EvictionReason::kClusterQueueStopped: return "ClusterQueueStopped";
    case EvictionReason::kLocalQueueStopped: return "LocalQueueStopped";
    case EvictionReason::kDeactivated: return "Deactivated";
    case EvictionReason::kMaximumExecutionTimeExceeded: return "MaximumExecutionTimeExceeded";
    case EvictionReason::kNodeFailures: return "NodeFailures";
  }
  return "Unknown";
}

const char* PendingReasonKindName(PendingReason::Kind k) {
  using K = PendingReason::Kind;
  switch (k) {
    case K::kNone: return "None";
    case K::kNotYetTried: return "NotYetTried";
    case K::kLocalQueueMissing: return "LocalQueueMissing";
    case K::kClusterQueueMissing: return "ClusterQueueMissing";
    case K::kNamespaceNotAllowed: return "NamespaceNotAllowed";
    case K::kStopped: return "Stopped";
    case K::kInactive: return "Inactive";
    case K::kNoFlavor: return "NoFlavor";
    case K::kInsufficientQuota: return "InsufficientQuota";
    case K::kPreemptionNoCandidates: return "PreemptionNoCandidates";
    case K::kWaitingForEvictions: return "WaitingForEvictions";
    case K::kResourceQuotaExceeded: return "ResourceQuotaExceeded";
    case K::kBlockedByStrictFIFO: return "BlockedByStrictFIFO";
    case K::kReservedByOther: return "ReservedByOther";
    case K::kInadmissibleUntilChange: return "InadmissibleUntilChange";
    case K::kBlockedByReservation: return "BlockedByReservation";
    case K::kUnschedulable: return "Unschedulable";
    case K::kInfeasible: return "Infeasible";
  }
  return "Unknown";
}

namespace {

using K = PendingReason::Kind;

// A hash of the fields that usually tell pod sets apart (names, counts,
// requests, how many of everything else); equal pod sets hash equal.
uint64_t HashPodSets(const SharedVec<PodSetSpec>& pod_sets) {
  uint64_t h = 0xcbf29ce484222325ULL;
  auto mix = [&h](uint64_t v) { h = (h ^ v) * 0x100000001b3ULL; };
  auto mix_str = [&mix](const std::string& s) { mix(std::hash<std::string>{}(s)); };
  for (const PodSetSpec& ps : pod_sets) {
    mix_str(ps.name);
    mix(static_cast<uint64_t>(ps.count));
    mix(ps.min_count ? static_cast<uint64_t>(*ps.min_count) + 1 : 0);
    for (const auto& [res, amt] : ps.requests) {
      mix_str(res);
      mix(static_cast<uint64_t>(amt));
    }
    mix(ps.node_selector.size());
    mix(ps.node_affinity.size());
    mix(ps.tolerations.size());
    mix(ps.annotations.size());
    mix(ps.command.size());
    mix(ps.env.size());
    mix(ps.working_dir.size());
  }
  return h;
}

// The GPU quota a pod takes through slicing hints alone (see PodSetReq).
// Charged as nvidia.com/gpu unless the queue covers the hint resource:
//   KAI gpu-fraction F (x gpu-fraction-num-devices N): F x N, as KAI counts
//     fractions against a queue's GPU quota;
//   KAI gpu-memory, HAMi gpumem/gpucores without nvidia.com/gpu: one GPU per
//     device (the share of the device is only known at placement);
//   artel.dev/gpu-memory with artel.dev/gpu-compute C: C rounded up to
//     sevenths; without gpu-compute: one GPU.
// So a team without GPU quota gets no GPU through a slice.
Amount ImplicitGpu(const PodSetSpec& ps, const PodSetReq& r, const BasicInterner<ResourceId>& resources) {
  bool hinted = ps.gpu_share->any();
  for (const auto& [res, amt] : r.per_pod) {
    if (amt == 0) continue;
    const std::string& name = resources.Name(res);
    if (name == kGpuResource) return 0;  // charged as requested
    if (IsSlicingHint(name)) hinted = true;
  }
  if (!hinted) return 0;
  Result<placement::GpuRequest> g = placement::ParseGpuRequest(ps.requests, ps.gpu_share);
  if (!g.ok()) return 0;  // placement reports the error
  switch (g->kind) {
    case placement::GpuKind::kShare:
      if (!g->isolated && g->memory_mib == 0 && g->memory_permille > 0)
        return Amount{g->memory_permille} * g->count;
      return Amount{1000} * g->count;
    case placement::GpuKind::kMigNeed:
      if (g->compute_slices > 0) return (Amount{g->compute_slices} * 1000 + 6) / 7;
      return 1000;
    default: return 0;
  }
}

}  // namespace

// ---------------------------------------------------------------------------
// Engine.

EngineImpl::EngineImpl(EngineOptions o)
    : opts(std::move(o)),
      admission_order(MakeAdmissionOrder(opts)),
      flavor_assigner(MakeFlavorAssigner(opts)),
      preemption(MakePreemptionPolicy(opts)) {}
EngineImpl::~EngineImpl() = default;

Engine::Engine(EngineOptions options) : impl_(std::make_unique<EngineImpl>(std::move(options))) {}
Engine::~Engine() = default;

Status Engine::Configure(const Config& config) { return impl_->ApplyConfig(config); }
const Config& Engine::config() const { return impl_->config; }
const EngineOptions& Engine::options() const { return impl_->opts; }

Result<WorkloadId> Engine::Submit(WorkloadSpec spec, Time now) {
  EngineImpl& e = *impl_;
  if (spec.ns.empty() || spec.name.empty()) return InvalidArgument("workload needs a namespace and a name");
  std::string key;
  key.reserve(spec.ns.size() + 1 + spec.name.size());
  key.append(spec.ns).append(1, '/').append(spec.name);
  if (e.wl_index.Find(key, e.KeyOf()) != kNoWl) return AlreadyExists("workload " + key + " already exists");
  if (spec.pod_sets.empty())
    return InvalidArgument("workload " + key + " has no pod sets").WithField("podSets");
  if (spec.max_runtime && *spec.max_runtime < 0)
    return InvalidArgument("workload " + key + ": maximum runtime must not be negative")
        .WithField("maximumExecutionTimeSeconds");
  int32_t priority = 0;
  if (spec.priority) {
    priority = *spec.priority;
  } else if (spec.priority_class) {
    auto it = e.priority_classes.find(*spec.priority_class);
    if (it == e.priority_classes.end())
      return InvalidArgument("workload " + key + ": WorkloadPriorityClass \"" + *spec.priority_class +
                             "\" does not exist")
          .WithField("priorityClass");
    priority = it->second;
  }
  Wl w;
  EngineImpl::RecentPodSets* recent = nullptr;
  // Pod sets shared with recent ones (a caller that submits many alike, as
  // the replay does) are found without hashing them.
  for (EngineImpl::RecentPodSets& r : e.recent_pod_sets) {
    if (!r.spec.empty() && r.spec.SharesWith(spec.pod_sets)) {
      recent = &r;
      break;
    }
  }
  const uint64_t pod_sets_hash = recent ? recent->hash : HashPodSets(spec.pod_sets);
  for (size_t k = 0; !recent && k < e.recent_pod_sets.size(); ++k) {
    EngineImpl::RecentPodSets& r = e.recent_pod_sets[k];
    if (r.hash == pod_sets_hash && !r.spec.empty() && r.spec == spec.pod_sets) recent = &r;
  }
  if (recent) {  // equal to pod sets already checked and derived
    spec.pod_sets = recent->spec;
    w.pod_sets = recent->reqs;
  } else {
    w.pod_sets.reserve(spec.pod_sets.size());
  }
  for (size_t i = 0; !recent && i < spec.pod_sets.size(); ++i) {
    const PodSetSpec& ps = spec.pod_sets[i];
    auto path = [i] { return "podSets[" + std::to_string(i) + "]"; };
    for (size_t j = 0; j < i; ++j) {
      if (spec.pod_sets[j].name == ps.name)
        return InvalidArgument("duplicate pod set name \"" + ps.name + "\"").WithField(path() + ".name");
    }
    if (ps.count < 1) return InvalidArgument("count must be at least 1").WithField(path() + ".count");
    if (ps.min_count && (*ps.min_count < 1 || *ps.min_count > ps.count))
      return InvalidArgument("minCount must be between 1 and count (" + std::to_string(ps.count) + ")")
          .WithField(path() + ".minCount");
    PodSetReq r;
    r.count = ps.count;
    r.min_count = ps.min_count.value_or(ps.count);
    r.per_pod.reserve(ps.requests.size());
    for (const auto& [res, amt] : ps.requests) {
      if (amt < 0)
        return InvalidArgument("request must not be negative").WithField(path() + ".requests." + res);
      if (amt > kUnlimited / std::max(1, ps.count))
        return InvalidArgument("request too large").WithField(path() + ".requests." + res);
      r.per_pod.emplace_back(e.resources.Intern(res), amt);
    }
    std::sort(r.per_pod.begin(), r.per_pod.end());
    r.implicit_gpu = ImplicitGpu(ps, r, e.resources);
    r.has_topology = !ps.topology->empty();
    w.pod_sets.push_back(std::move(r));
  }
  if (!recent) {
    EngineImpl::RecentPodSets& r = e.recent_pod_sets[e.recent_pod_sets_next++ % e.recent_pod_sets.size()];
    r.hash = pod_sets_hash;
    r.spec = spec.pod_sets;
    r.reqs = w.pod_sets;
  }
  // New resource names may have appeared: grow the per-resource arrays
  // (only then, so a submission costs O(1) in the number of queues).
  if (e.resources.size() != e.sized_resources) {
    e.sized_resources = e.resources.size();
    for (auto& n : e.nss) n.usage.resize(e.resources.size(), 0);
    for (auto& l : e.lqs) {
      l.current_usage.resize(e.resources.size(), 0);
      l.afs_consumed.resize(e.resources.size(), 0);
      l.afs_penalty.resize(e.resources.size(), 0);
    }
  }
  w.ns = e.NsId(spec.ns);
  w.info.key = key;
  w.info.spec = std::move(spec);
  w.info.priority = priority;
  w.info.created = now;
  w.info.queued_at = now;
  w.info.uid = e.next_uid++;
  w.SetPendingKind(K::kNotYetTried);  // message built on read
  w.msg_dirty = true;
  WlId id;
  if (!e.free_ids.empty()) {
    id = e.free_ids.back();
    e.free_ids.pop_back();
    e.wls[id] = std::move(w);
    e.reused_slots = true;
  } else {
    id = static_cast<WlId>(e.wls.size());
    e.wls.push_back(std::move(w));
  }
  e.wls[id].info.id = id;
  e.wl_index.Insert(e.wls[id].info.key, id);
  e.pending_count++;
  e.Resolve(id);
  return id;
}

Result<WlId> Lookup(const EngineImpl& e, const std::string& key) {
  const WlId id = e.wl_index.Find(key, e.KeyOf());
  if (id == kNoWl) return NotFound("workload " + key + " not found");
  return id;
}

bool Live(const EngineImpl& e, WlId id) { return id < e.wls.size() && !e.wls[id].forgotten; }

Status UnknownId(WlId id) { return NotFound("workload handle " + std::to_string(id) + " not found"); }

Status EngineImpl::FinishId(WlId id) {
  Wl& w = wls[id];
  if (w.info.state != WorkloadState::kAdmitted && w.info.state != WorkloadState::kEvicting)
    return FailedPrecondition("workload " + w.info.key + " is " + WorkloadStateName(w.info.state) +
                              ", not running");
  DisarmExpiry(id);
  ReleaseUsage(id);
  w.info.state = WorkloadState::kFinished;
  admitted_count--;
  return Status::Ok();
}

Status Engine::Finish(const std::string& key, Time now) {
  (void)now;
  auto id = Lookup(*impl_, key);
  if (!id.ok()) return id.status();
  return impl_->FinishId(*id);
}

Status Engine::Finish(WorkloadId id, Time now) {
  (void)now;
  if (!Live(*impl_, id)) return UnknownId(id);
  return impl_->FinishId(id);
}

Status Engine::Forget(WorkloadId id) {
  EngineImpl& e = *impl_;
  if (!Live(e, id)) return UnknownId(id);
  Wl& w = e.wls[id];
  if (w.info.state != WorkloadState::kFinished)
    return FailedPrecondition("workload " + w.info.key + " is " + WorkloadStateName(w.info.state) +
                              ", not finished");
  e.wl_index.Erase(w.info.key, e.KeyOf(), id);
  // A handle must not linger where a later workload could inherit it.
  if (w.listed) {
    auto drop = [id](std::vector<WlId>* v) { v->erase(std::remove(v->begin(), v->end(), id), v->end()); };
    for (auto& n : e.nss) drop(&n.parked);
    drop(&e.parked_placement);
  }
  e.orphans.erase(std::remove(e.orphans.begin(), e.orphans.end(), id), e.orphans.end());
  for (CqRt& cq : e.cqs) {
    if (cq.sticky == id) cq.sticky = kNoWl;
  }
  // The slot's contents are overwritten when Submit reuses it.
  w.forgotten = true;
  e.free_ids.push_back(id);
  return Status::Ok();
}

Status Engine::Cancel(const std::string& key, Time now) {
  (void)now;
  EngineImpl& e = *impl_;
  auto id = Lookup(e, key);
  if (!id.ok()) return id.status();
  Wl& w = e.wls[*id];
  if (w.info.state == WorkloadState::kAdmitted || w.info.state == WorkloadState::kEvicting) {
    e.DisarmExpiry(*id);
    e.ReleaseUsage(*id);
    e.admitted_count--;
  } else if (w.info.state == WorkloadState::kPending) {
    e.Dequeue(*id);
    w.parked = false;
    e.pending_count--;
  }
  w.info.state = WorkloadState::kFinished;
  e.wl_index.Erase(key, e.KeyOf());
  return Status::Ok();
}

Status EngineImpl::CompleteEvictionId(WlId id) {
  Wl& w = wls[id];
  if (w.info.state != WorkloadState::kEvicting)
    return FailedPrecondition("workload " + w.info.key + " is " + WorkloadStateName(w.info.state) +
                              ", not evicting");
  if (w.info.last_eviction && w.info.last_eviction->reason == EvictionReason::kMaximumExecutionTimeExceeded) {
    // Stopped for its maximum runtime: it does not queue again.
    w.info.failed = true;
    w.info.failure = w.info.last_eviction->message;
    return FinishId(id);
  }
  ReleaseUsage(id);
  w.info.state = WorkloadState::kPending;
  w.info.admission.clear();
  w.usage.clear();
  w.info.admitted_at = -1;
  admitted_count--;
  pending_count++;
  w.SetPendingKind(K::kNotYetTried);  // "requeued after eviction", built on read
  w.msg_dirty = true;
  w.requeued = true;
  Resolve(id);
  return Status::Ok();
}

Status Engine::CompleteEviction(const std::string& key, Time now) {
  (void)now;
  auto id = Lookup(*impl_, key);
  if (!id.ok()) return id.status();
  return impl_->CompleteEvictionId(*id);
}

Status Engine::CompleteEviction(WorkloadId id, Time now) {
  (void)now;
  if (!Live(*impl_, id)) return UnknownId(id);
  return impl_->CompleteEvictionId(id);
}

Status Engine::Evict(const std::string& key, EvictionReason reason, const std::string& message, Time now) {
  EngineImpl& e = *impl_;
  if (reason != EvictionReason::kNodeFailures)
    return InvalidArgument("only NodeFailures evictions are requested");
  auto id = Lookup(e, key);
  if (!id.ok()) return id.status();
  if (e.wls[*id].info.state != WorkloadState::kAdmitted) return Status::Ok();
  e.Evict(*id, reason, kNoWl, now, &e.pending_evictions, message);
  return Status::Ok();
}

Status Engine::AddNode(placement::NodeSpec node) {
  EngineImpl& e = *impl_;
  if (!e.cluster) {
    std::vector<placement::NodeSpec> one;
    one.push_back(std::move(node));
    return SetNodes(std::move(one));
  }
  for (const placement::NodeSpec& n : e.node_specs) {
    if (n.name == node.name) return AlreadyExists("node " + node.name + " exists");
  }
  Status s = e.cluster->AddNode(node);
  if (!s.ok()) return s;
  e.node_specs.push_back(std::move(node));
  e.BindFlavorsToNodes();
  e.UnparkList(&e.parked_placement);
  for (NodeId root : e.root_epoch.ids()) e.Unpark(root);
  ++e.state_gen;
  return Status::Ok();
}

Status Engine::SetNodeReady(const std::string& name, bool ready) {
  EngineImpl& e = *impl_;
  placement::NodeSpec* spec = nullptr;
  for (placement::NodeSpec& n : e.node_specs) {
    if (n.name == name) spec = &n;
  }
  if (spec == nullptr || !e.cluster) return NotFound("node " + name + " does not exist");
  if (spec->ready == ready) return Status::Ok();
  Status s = e.cluster->SetReady(name, ready);
  if (!s.ok()) return s;
  spec->ready = ready;
  e.BindFlavorsToNodes();
  if (ready) {
    e.UnparkList(&e.parked_placement);
    for (NodeId root : e.root_epoch.ids()) e.Unpark(root);
  }
  ++e.state_gen;
  return Status::Ok();
}

const std::vector<placement::NodeSpec>& Engine::nodes() const { return impl_->node_specs; }

Status Engine::SetNodes(std::vector<placement::NodeSpec> nodes) {
  EngineImpl& e = *impl_;
  std::vector<placement::NodeSpec> old = std::move(e.node_specs);
  e.node_specs = std::move(nodes);
  Status s = e.RebuildCluster();
  if (!s.ok()) {
    e.node_specs = std::move(old);
    (void)e.RebuildCluster();
    return s;
  }
  ++e.state_gen;
  return Status::Ok();
}

const placement::Cluster* Engine::cluster() const { return impl_->cluster.get(); }

Status Engine::SetActive(const std::string& key, bool active, Time now) {
  EngineImpl& e = *impl_;
  auto id = Lookup(e, key);
  if (!id.ok()) return id.status();
  Wl& w = e.wls[*id];
  if (w.info.spec.active == active) return Status::Ok();
  w.info.spec.active = active;
  if (!active) {
    if (w.info.state == WorkloadState::kAdmitted) {
      e.Evict(*id, EvictionReason::kDeactivated, kNoWl, now, &e.pending_evictions, "workload deactivated");
    } else if (w.info.state == WorkloadState::kPending) {
      e.Dequeue(*id);
      w.parked = false;
      e.Resolve(*id);
    }
  } else if (w.info.state == WorkloadState::kPending) {
    e.orphans.erase(std::remove(e.orphans.begin(), e.orphans.end(), *id), e.orphans.end());
    e.Resolve(*id);
  }
  return Status::Ok();
}

CycleResult Engine::Schedule(Time now) {
  EngineImpl& e = *impl_;
  CycleResult result;
  result.evictions = std::move(e.pending_evictions);
  e.pending_evictions.clear();
  e.now = now;
  e.quiet_valid = false;  // fast rounds follow a quiet round of this call only
  if (!e.expiries.empty()) e.ExpireRuntimes(now, &result.evictions);
  // Protections that parked workloads skipped have ended: retry them (the
  // memoised preemption answers are stale too).
  if (!e.protect_wakeups.empty() && e.protect_wakeups.begin()->first <= now) {
    ++e.state_gen;
    while (!e.protect_wakeups.empty() && e.protect_wakeups.begin()->first <= now) {
      e.Unpark(e.protect_wakeups.begin()->second);
      e.protect_wakeups.erase(e.protect_wakeups.begin());
    }
    e.UnparkList(&e.parked_placement);
  }
  if (e.opts.admission_fair_sharing) e.AfsSample(now);
  // Nothing queued and nothing to drain: no cycle can change anything.
  if (static_cast<int64_t>(e.queued_count) == e.parked_total && !e.any_drain) {
    if (!result.evictions.empty()) result.changed = true;
    return result;
  }
  // Drain stopped queues (HoldAndDrain); only queues that have such a
  // policy on themselves or on a LocalQueue are looked at.
  for (auto& cq : e.cqs) {
    if (!cq.drain_possible) continue;
    bool cq_drain = cq.spec->stop_policy == StopPolicy::kHoldAndDrain;
    for (WlId id : std::vector<WlId>(cq.admitted)) {
      Wl& w = e.wls[id];
      if (w.info.state != WorkloadState::kAdmitted) continue;
      bool lq_drain = w.lq.valid() && e.lqs[w.lq].spec->stop_policy == StopPolicy::kHoldAndDrain;
      if (cq_drain || lq_drain) {
        e.Evict(id, cq_drain ? EvictionReason::kClusterQueueStopped : EvictionReason::kLocalQueueStopped,
                kNoWl, now, &result.evictions,
                cq_drain ? "ClusterQueue stopped (HoldAndDrain)" : "LocalQueue stopped (HoldAndDrain)");
      }
    }
  }
  if (!result.evictions.empty()) result.changed = true;
  if (e.opts.multi_admission) {
    while (result.rounds < e.opts.max_rounds) {
      bool changed = e.RunRound(now, &result, false);
      result.rounds++;
      if (!changed) break;
      result.changed = true;
    }
  } else {
    result.changed = e.RunRound(now, &result, true) || result.changed;
    result.rounds = 1;
  }
  e.SetStrictFifoReasons();
  return result;
}

std::optional<Time> Engine::NextTimedEvent() const {
  const EngineImpl& e = *impl_;
  std::optional<Time> t;
  if (!e.expiries.empty()) t = e.expiries.begin()->first;
  if (!e.protect_wakeups.empty() && (!t || e.protect_wakeups.begin()->first < *t))
    t = e.protect_wakeups.begin()->first;
  return t;
}

std::vector<Engine::ReservationInfo> Engine::Reservations() const {
  const EngineImpl& e = *impl_;
  std::vector<ReservationInfo> out;
  for (const auto& r : e.reservations) {
    ReservationInfo ri;
    ri.workload = e.wls[r.wl].info.key;
    ri.cluster_queue = e.cqs[r.cq].name;
    ri.start = r.start;
    for (WlId h : r.holders) ri.holders.push_back(e.wls[h].info.key);
    ri.nodes = r.node_names;
    out.push_back(std::move(ri));
  }
  return out;
}

std::string Engine::CheckParkingCounts() const {
  const EngineImpl& e = *impl_;
  IdVector<NodeId, int64_t> per_root;
  per_root.resize(e.root_parked.size(), 0);
  int64_t total = 0;
  for (CqId c : e.cqs.ids()) {
    const CqRt& cq = e.cqs[c];
    int32_t queued = 0;
    int32_t parked = 0;
    for (LqId l : cq.lqs) {
      for (const QueueKey& k : e.lqs[l].heap) {
        ++queued;
        if (e.SoftParked(e.wls[k.id])) ++parked;
      }
    }
    if (queued != cq.queued)
      return "ClusterQueue " + cq.name + ": " + std::to_string(queued) + " queued, counted " +
             std::to_string(cq.queued);
    if (queued - parked != e.ActiveQueued(cq))
      return "ClusterQueue " + cq.name + ": " + std::to_string(queued - parked) + " active, counted " +
             std::to_string(e.ActiveQueued(cq));
    if (parked > 0 && cq.root.valid()) per_root[cq.root] += parked;
    total += parked;
  }
  for (NodeId r : e.root_parked.ids()) {
    if (per_root[r] != e.root_parked[r])
      return "tree " + std::to_string(r.value()) + ": " + std::to_string(per_root[r]) + " parked, counted " +
             std::to_string(e.root_parked[r]);
  }
  if (total != e.parked_total)
    return std::to_string(total) + " parked in all, counted " + std::to_string(e.parked_total);
  return "";
}

size_t Engine::PendingCount() const { return impl_->pending_count; }
size_t Engine::AdmittedCount() const { return impl_->admitted_count; }

}  // namespace artel::core
