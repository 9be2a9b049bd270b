// What callers read from the engine and why: WorkloadInfo materialized on
// demand, pending-reason messages, usage and shares, and Engine::Why.
// Moved from engine.cc.

#include <algorithm>
#include <charconv>
#include <limits>

#include "core/engine_helpers.h"
#include "core/engine_impl.h"
#include "core/fair_sharing.h"
#include "core/flavor_assigner.h"
#include "core/resource_names.h"

namespace artel::core {

namespace {

using K = PendingReason::Kind;

std::string Fmt(const std::string& res, Amount a) { return FormatQuantity(a) + " " + res; }

}  // namespace

// A span of milliseconds as "1h2m3s" (whole seconds; "0s" below one),
// appended to `out`.
void AppendSpan(std::string* out, Time ms) {
  const int64_t sec = std::max<Time>(0, ms) / 1000;
  const size_t before = out->size();
  char buf[24];
  auto put = [&](int64_t v, char unit) {
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
    out->append(buf, end);
    out->push_back(unit);
  };
  if (sec >= 3600) put(sec / 3600, 'h');
  if (sec % 3600 >= 60) put(sec % 3600 / 60, 'm');
  if (sec % 60 != 0 || out->size() == before) put(sec % 60, 's');
}

std::string FormatSpan(Time ms) {
  std::string out;
  AppendSpan(&out, ms);
  return out;
}

// What a reserving workload's message says of its reservation.
std::string ReservationText(const EngineImpl& e, const EngineImpl::Reservation& res) {
  std::string m = "; reserved: its quota";
  if (res.nodes) {
    m += " and room on node(s)";
    for (size_t i = 0; i < res.node_names.size() && i < 5; ++i) m += " " + res.node_names[i];
    if (res.node_names.size() > 5) m += " ...";
    m += " are";
  } else {
    m += " is";
  }
  m += " expected to be free in " + FormatSpan(res.start - e.now) + " (at t=" + FormatSpan(res.start) +
       "), when " + std::to_string(res.holders.size()) + " running workload(s) end:";
  for (size_t i = 0; i < res.holders.size() && i < 5; ++i) m += " " + e.wls[res.holders[i]].info.key;
  if (res.holders.size() > 5) m += " ...";
  m += res.nodes
           ? "; only backfill that ends by then or leaves that quota and room free is admitted meanwhile"
           : "; only backfill that ends by then or leaves that quota free is admitted meanwhile";
  return m;
}

// Why a workload that qualifies has no reservation: its start lies beyond
// its ClusterQueue's backfill window.
std::string BeyondWindowText(const EngineImpl& e, const Wl& w) {
  if (w.beyond_window <= e.now || !w.cq.valid() || !e.cqs[w.cq].spec->backfill_window) return "";
  const Time window = *e.cqs[w.cq].spec->backfill_window;
  return std::string("; not reserved: its quota ") + (e.cluster ? "and room on the nodes are" : "is") +
         " expected to be free only in " + FormatSpan(w.beyond_window - e.now) +
         " (at t=" + FormatSpan(w.beyond_window) + "), beyond the backfill window of " + FormatSpan(window) +
         " of ClusterQueue " + e.cqs[w.cq].name +
         "; it reserves from t=" + FormatSpan(w.beyond_window - window);
}

// The message of a workload behind its StrictFIFO queue's head (the head
// of the last Schedule call, EngineImpl::SetStrictFifoReasons).
std::string StrictFifoMessage(const EngineImpl& e, const Wl& w) {
  const CqRt& cq = e.cqs[e.lqs[w.lq].cq];
  return w.info.key + ": behind the StrictFIFO head " + cq.strict_head_key + " of ClusterQueue " + cq.name;
}

void FillMessage(const EngineImpl& e, const Wl& w, PendingReason* r) {
  if (!r->message.empty()) return;
  if (r->kind == K::kNotYetTried) {
    r->message = w.requeued ? "requeued after eviction" : "waiting for the next scheduling cycle";
    return;
  }
  if (r->kind == K::kBlockedByStrictFIFO && w.lq.valid() && e.lqs[w.lq].cq.valid()) {
    r->message = StrictFifoMessage(e, w);
    return;
  }
  std::string m = w.info.key + " in ClusterQueue " + r->cluster_queue + ": ";
  switch (r->kind) {
    case K::kInsufficientQuota:
      m += "needs " + Fmt(r->resource, r->requested) + " of flavor " + r->flavor + " but " +
           FormatQuantity(r->available) + " is available (missing " + FormatQuantity(r->missing) +
           ", limited at " + r->level + ")";
      break;
    case K::kPreemptionNoCandidates:
      m += "needs " + Fmt(r->resource, r->requested) + " of flavor " + r->flavor + " (" +
           FormatQuantity(r->available) + " available at " + r->level +
           ") and no workload may be preempted for it under the queue's preemption policy";
      break;
    case K::kReservedByOther:
      m += "the capacity was taken by an earlier entry of the same cycle; retrying next cycle";
      break;
    case K::kWaitingForEvictions: {
      m += "waiting for " + std::to_string(r->would_preempt.size()) + " preempted workload(s) to stop:";
      for (const auto& v : r->would_preempt) m += " " + v;
      break;
    }
    default: m += PendingReasonKindName(r->kind);
  }
  for (const auto& res : e.reservations) {
    if (res.wl != w.info.id || (r->kind != K::kPreemptionNoCandidates && r->kind != K::kInsufficientQuota))
      continue;
    m += ReservationText(e, res);
  }
  if (r->kind == K::kPreemptionNoCandidates || r->kind == K::kInsufficientQuota) m += BeyondWindowText(e, w);
  if ((r->kind == K::kPreemptionNoCandidates || r->kind == K::kInsufficientQuota ||
       r->kind == K::kUnschedulable) &&
      w.protected_until > e.now) {
    // Time limits (docs/semantics.md §11): say when the picture changes.
    const std::string when =
        "in " + FormatSpan(w.protected_until - e.now) + " (at t=" + FormatSpan(w.protected_until) + ")";
    m += w.delay_held
             ? "; it may preempt once its preemption delay has passed, " + when
             : "; workloads protected by a minimum runtime were skipped as preemption candidates; the "
               "first becomes preemptible " +
                   when;
  }
  r->message = std::move(m);
}

void SetInadmissibleReason(Wl& w, const Assignment& a, const std::string& cq_name) {
  using K = PendingReason::Kind;
  K kind = a.kind;
  if (a.mode == Mode::kNoCandidates || a.mode == Mode::kPreempt || a.mode == Mode::kReclaim)
    kind = K::kPreemptionNoCandidates;
  if (kind == K::kNone || kind == K::kNotYetTried) kind = K::kInsufficientQuota;
  w.SetPendingKind(kind);  // otherwise every field comes from `pending_ref` on read
  if (kind == K::kNoFlavor || kind == K::kInfeasible) {
    PendingReason& r = w.PendingMut();
    r.cluster_queue = cq_name;
    r.message = w.info.key + " in ClusterQueue " + cq_name + ": " + a.message;
  }
  w.pending_ref = a.ref;
  w.ref_dirty = true;
  w.msg_dirty = true;
}

void EngineImpl::RefreshStaleReason(WlId id) {
  Wl& w = wls[id];
  if (StrictBehind(id)) {
    // Behind the StrictFIFO head of the last call; the message (FillMessage)
    // names that head. A reason already built for it stays as it is, so
    // that references into it from an earlier read stay valid.
    if (w.pending_kind == K::kBlockedByStrictFIFO && w.info.pending.boxed() && !w.msg_dirty &&
        w.info.pending->message == StrictFifoMessage(*this, w))
      return;
    w.SetPendingKind(K::kBlockedByStrictFIFO);
    w.msg_dirty = true;
    return;
  }
  if (ReasonStale(id)) {
    // Parked in bulk without an examination (BulkPark): the reason a cycle
    // would have given it, from the state now.
    w.reason_stamp = bulk_counter;
    w.reason_stale = false;
    const CqId c = lqs[w.lq].cq;
    const CqRt& cq = cqs[c];
    const Time saved_min = protect_min;
    const bool saved_delay = protect_delay;
    Assignment a;
    std::vector<Target> targets;
    flavor_assigner->Nominate(*this, id, c, &a, &targets);
    protect_min = saved_min;
    protect_delay = saved_delay;
    if (a.mode != Mode::kFit && targets.empty()) SetInadmissibleReason(w, a, cq.name);
  }
}

void EngineImpl::Materialize(WlId id) {
  RefreshStaleReason(id);
  Wl& w = wls[id];
  // Only the kinds RunRound sets from an assignment carry a ReasonRef; any
  // other kind was written whole since.
  const K kind = w.pending_kind;
  if (kind == K::kNone) {  // not pending: no reason
    w.ref_dirty = w.msg_dirty = false;
    w.info.pending.reset();
    return;
  }
  if (w.ref_dirty && kind != K::kInsufficientQuota && kind != K::kPreemptionNoCandidates &&
      kind != K::kWaitingForEvictions && kind != K::kNoFlavor) {
    w.ref_dirty = false;
  }
  if (w.ref_dirty) {
    w.ref_dirty = false;
    const ReasonRef& ref = w.pending_ref;
    PendingReason& r = w.PendingMut();
    r.cluster_queue = w.cq.valid() ? cqs[w.cq].name : "";
    r.pod_set = ref.pod_set >= 0 && static_cast<size_t>(ref.pod_set) < w.info.spec.pod_sets.size()
                    ? w.info.spec.pod_sets[ref.pod_set].name
                    : "";
    r.flavor = ref.flavor.valid() ? flavors_by_name.Name(ref.flavor) : "";
    r.resource = ref.resource.valid() ? resources.Name(ref.resource) : "";
    r.level = ref.level.valid() && static_cast<size_t>(ref.level.value()) < tree.num_nodes()
                  ? tree.node(ref.level).name
                  : "";
    r.requested = ref.requested;
    r.available = ref.available;
    r.missing = ref.missing;
  }
  // A reason kept as its kind only: built now, in its ClusterQueue.
  if (!w.info.pending.boxed()) w.PendingMut().cluster_queue = w.cq.valid() ? cqs[w.cq].name : "";
  if (!w.msg_dirty) return;
  w.msg_dirty = false;
  FillMessage(*this, w, &w.PendingMut());
}

const WorkloadInfo* Engine::Find(const std::string& key) const {
  const WlId id = impl_->wl_index.Find(key, impl_->KeyOf());
  if (id == kNoWl) return nullptr;
  impl_->Materialize(id);
  return &impl_->wls[id].info;
}

const placement::Placement* Engine::Placement(const std::string& key) const {
  const WlId id = impl_->wl_index.Find(key, impl_->KeyOf());
  if (id == kNoWl) return nullptr;
  const Wl& w = impl_->wls[id];
  return w.has_placement ? w.placement.get() : nullptr;
}

const WorkloadInfo* Engine::Get(WorkloadId id) const {
  if (!Live(*impl_, id)) return nullptr;
  impl_->Materialize(id);
  return &impl_->wls[id].info;
}

PendingReason::Kind Engine::PendingKind(WorkloadId id) const {
  if (!Live(*impl_, id)) return PendingReason::Kind::kNone;
  if (impl_->wls[id].info.state != WorkloadState::kPending) return PendingReason::Kind::kNone;
  impl_->RefreshStaleReason(id);  // parked in bulk: the kind a cycle would have given it
  return impl_->wls[id].pending_kind;
}

std::vector<const WorkloadInfo*> Engine::Workloads(bool with_reasons) const {
  std::vector<const WorkloadInfo*> out;
  for (const Wl& w : impl_->wls) {
    if (w.forgotten) continue;
    const WlId id = impl_->wl_index.Find(w.info.key, impl_->KeyOf());
    if (id != kNoWl && &impl_->wls[id] == &w) {
      if (with_reasons) impl_->Materialize(id);
      out.push_back(&w.info);
    }
  }
  // Reused slots (Forget) break index order; uid is the submission order.
  if (impl_->reused_slots) {
    std::sort(out.begin(), out.end(),
              [](const WorkloadInfo* a, const WorkloadInfo* b) { return a->uid < b->uid; });
  }
  return out;
}

std::vector<QuotaUsage> Engine::Usage() const {
  const EngineImpl& e = *impl_;
  std::vector<QuotaUsage> out;
  for (NodeId n : e.tree.nodes()) {
    const auto& node = e.tree.node(n);
    for (FrId fr : e.tree.frs()) {
      if (!node.has_quota[fr] && node.usage[fr] == 0 && node.subtree[fr] == 0) continue;
      QuotaUsage u;
      u.node = node.name;
      u.is_cohort = node.is_cohort;
      auto [f, r] = e.tree.FrKey(fr);
      u.flavor = e.flavors_by_name.Name(f);
      u.resource = e.resources.Name(r);
      u.nominal = node.nominal[fr];
      u.subtree_quota = node.subtree[fr];
      u.usage = node.usage[fr];
      u.borrowed = std::max<Amount>(0, node.usage[fr] - node.subtree[fr]);
      if (node.borrowing_limit[fr] != kNoLimit) u.borrowing_limit = node.borrowing_limit[fr];
      if (node.lending_limit[fr] != kNoLimit) u.lending_limit = node.lending_limit[fr];
      out.push_back(std::move(u));
    }
  }
  return out;
}

int64_t Engine::DominantResourceShare(const std::string& name) const {
  EngineImpl& e = *impl_;
  NodeId node;
  auto it = e.cq_index.find(name);
  if (it != e.cq_index.end()) {
    node = e.cqs[it->second].node;
  } else {
    auto ci = e.cohort_node.find(name);
    if (ci != e.cohort_node.end()) node = ci->second;
  }
  if (!node.valid()) return 0;
  int64_t s = DominantShare(e, node, CqId(), nullptr).Rounded();
  return s == std::numeric_limits<int64_t>::max() ? -1 : s;
}

namespace {

// One clause of `why` per flavor tried.
FlavorAttempt Attempt(const EngineImpl& e, const Wl& w, const FlavorTried& t) {
  using O = FlavorAttempt::Outcome;
  FlavorAttempt a;
  a.flavor = e.flavors_by_name.Name(t.flavor);
  if (t.pod_set >= 0 && static_cast<size_t>(t.pod_set) < w.info.spec.pod_sets.size()) {
    a.pod_set = w.info.spec.pod_sets[t.pod_set].name;
  }
  std::string head =
      "flavor " + a.flavor + (w.info.spec.pod_sets.size() > 1 ? " (pod set " + a.pod_set + ")" : "");
  if (t.excluded) {
    a.outcome = O::kExcluded;
    a.message = head + ": not usable: " + t.why;
    return a;
  }
  if (t.mode == Mode::kFit || t.mode == Mode::kPreempt || t.mode == Mode::kReclaim || !t.resource.valid()) {
    a.outcome = t.mode == Mode::kFit ? O::kFits : O::kFitsByPreempting;
    a.message =
        head + (t.mode == Mode::kFit ? ": fits" : ": fits after preempting what the queue's policy allows");
    return a;
  }
  a.resource = e.resources.Name(t.resource);
  a.requested = t.requested;
  a.available = t.available;
  a.max_available = t.potential;
  a.level = t.level.valid() && static_cast<size_t>(t.level.value()) < e.tree.num_nodes()
                ? e.tree.node(t.level).name
                : "";
  if (!e.tree.FindFr(t.flavor, t.resource).valid()) {
    a.outcome = O::kNeverFits;
    a.max_available = 0;
    a.message =
        head + ": no quota for " + a.resource + " at all (" + Fmt(a.resource, t.requested) + " requested)";
  } else if (!t.ever_fits) {
    a.outcome = O::kNeverFits;
    a.message = head + ": " + a.resource + " request above the most this queue can ever get here (" +
                FormatQuantity(t.requested) + " > " + FormatQuantity(t.potential) + ")";
  } else {
    a.outcome = t.mode == Mode::kNoCandidates ? O::kNoCandidates : O::kShort;
    a.message = head + ": not enough unused " + a.resource + ", " +
                FormatQuantity(t.requested - t.available) + " more needed (" + FormatQuantity(t.available) +
                " of " + FormatQuantity(t.requested) + " available, limited at " + a.level + ")";
    if (t.mode == Mode::kNoCandidates)
      a.message += "; nothing may be preempted for it under the queue's policy";
  }
  return a;
}

}  // namespace

const char* FlavorAttemptOutcomeName(FlavorAttempt::Outcome o) {
  using O = FlavorAttempt::Outcome;
  switch (o) {
    case O::kFits: return "Fits";
    case O::kFitsByPreempting: return "FitsByPreempting";
    case O::kNoCandidates: return "NoCandidates";
    case O::kShort: return "InsufficientUnusedQuota";
    case O::kNeverFits: return "ExceedsMaximum";
    case O::kExcluded: return "Excluded";
  }
  return "";
}

Result<PendingReason> Engine::Why(const std::string& key) const {
  EngineImpl& e = *impl_;
  auto id = Lookup(e, key);
  if (!id.ok()) return id.status();
  const Wl& w = e.wls[*id];
  if (w.info.state != WorkloadState::kPending) return PendingReason{};
  e.Materialize(*id);
  PendingReason r = *w.info.pending;
  if ((r.kind != K::kInsufficientQuota && r.kind != K::kPreemptionNoCandidates && r.kind != K::kNoFlavor &&
       r.kind != K::kInfeasible) ||
      !w.cq.valid())
    return r;
  // Every flavor tried, as the last cycle tried them (now).
  bool any_may_fit = false;
  {
    std::vector<FlavorTried> tried;
    std::vector<int32_t> counts;
    for (const PodSetReq& ps : w.pod_sets) counts.push_back(ps.count);
    Assignment scratch;
    e.flavor_assigner->Assign(e, *id, w.cq, counts, &scratch, &tried);
    for (const FlavorTried& t : tried) {
      r.flavors.push_back(Attempt(e, w, t));
      any_may_fit = any_may_fit || r.flavors.back().outcome != FlavorAttempt::Outcome::kNeverFits;
    }
  }
  // The clauses go last, after the headline and what would help.
  auto done = [&]() -> Result<PendingReason> {
    // Excluded flavors are already listed in a NoFlavor message; elsewhere
    // the line counts them (`flavors` has each with its reason).
    if (r.flavors.size() > 1 && r.kind != K::kNoFlavor && r.kind != K::kInfeasible) {
      std::string clauses;
      size_t excluded = 0;
      for (const FlavorAttempt& f : r.flavors) {
        if (f.outcome == FlavorAttempt::Outcome::kExcluded) {
          ++excluded;
        } else {
          clauses += (clauses.empty() ? " " : "; ") + f.message;
        }
      }
      r.message += "; flavors tried:" + clauses;
      if (excluded > 0) {
        r.message += (clauses.empty() ? " " : "; ") + std::to_string(excluded) +
                     " flavor(s) not usable (node labels, taints, topology or no node that can hold a pod)";
      }
    }
    return r;
  };
  if (r.kind == K::kNoFlavor || r.kind == K::kInfeasible || r.flavor.empty()) return done();
  FrId fr = e.tree.FindFr(e.flavors_by_name.Find(r.flavor), e.resources.Find(r.resource));
  if (!fr.valid()) return done();
  const NodeId node = e.cqs[w.cq].node;
  QuotaTree& t = e.tree;
  if (r.requested > t.PotentialAvailable(node, fr)) {
    // Said only when no flavor tried could ever fit: otherwise the workload
    // runs once quota is released (the headline comes from the closest
    // flavor, so this is the case only when every flavor is out of reach).
    if (!any_may_fit) {
      r.message +=
          "; no preemption can help: the request exceeds the most this queue can ever get in every flavor "
          "tried (" +
          FormatQuantity(t.PotentialAvailable(node, fr)) + " in " + r.flavor + ")";
    }
    return done();
  }
  std::vector<WlId> cands;
  for (CqId q : e.root_cqs[t.Root(node)]) {
    for (WlId v : e.cqs[q].admitted) {
      for (const auto& [f, a] : e.wls[v].usage) {
        if (f == fr && a > 0) cands.push_back(v);
      }
    }
  }
  std::sort(cands.begin(), cands.end(), [&](WlId a, WlId b) {
    const Wl& x = e.wls[a];
    const Wl& y = e.wls[b];
    bool ex = x.info.state == WorkloadState::kEvicting, ey = y.info.state == WorkloadState::kEvicting;
    if (ex != ey) return ex;  // already going: they free their quota first
    bool bx = t.IsBorrowing(e.cqs[x.cq].node, fr), by = t.IsBorrowing(e.cqs[y.cq].node, fr);
    if (bx != by) return bx;
    if (x.info.priority != y.info.priority) return x.info.priority < y.info.priority;
    if (x.admit_seq != y.admit_seq) return x.admit_seq > y.admit_seq;
    return x.info.uid < y.info.uid;
  });
  std::vector<WlId> removed;
  for (WlId v : cands) {
    if (r.requested <= t.Available(node, fr)) break;
    t.AddUsage(e.cqs[e.wls[v].cq].node, e.wls[v].usage, -1);
    removed.push_back(v);
  }
  bool fits = r.requested <= t.Available(node, fr);
  std::vector<WlId> needed;
  if (fits) {
    for (int i = static_cast<int>(removed.size()) - 2; i >= 0; --i) {
      WlId v = removed[i];
      t.AddUsage(e.cqs[e.wls[v].cq].node, e.wls[v].usage, +1);
      if (r.requested <= t.Available(node, fr)) {
        removed[i] = kNoWl;
      } else {
        t.AddUsage(e.cqs[e.wls[v].cq].node, e.wls[v].usage, -1);
      }
    }
  }
  size_t evicting = 0, others = 0;
  for (WlId v : removed) {
    if (v == kNoWl) continue;
    t.AddUsage(e.cqs[e.wls[v].cq].node, e.wls[v].usage, +1);
    if (fits) {
      r.would_preempt.push_back(e.wls[v].info.key);
      (e.wls[v].info.state == WorkloadState::kEvicting ? evicting : others)++;
    }
  }
  if (!r.would_preempt.empty()) {
    r.message += "; it would fit if these were preempted:";
    for (const auto& k : r.would_preempt) r.message += " " + k;
    // Not "never": the quota is there, held by others for now.
    if (others == 0) {
      // Already going: it is tried again when they stop, after any workload
      // of its tree that waits for those very evictions.
      size_t waiting = 0;
      for (WlId x = 0; x < e.wls.size(); ++x) {
        const Wl& o = e.wls[x];
        if (x != *id && !o.forgotten && o.waiting_preemption && o.cq.valid() &&
            o.info.state == WorkloadState::kPending && t.Root(e.cqs[o.cq].node) == t.Root(node)) {
          ++waiting;
        }
      }
      r.message += "; they are being evicted already, so it is tried again as soon as they stop";
      if (waiting > 0) {
        r.message += " (after " + std::to_string(waiting) +
                     " workload(s) that wait for these evictions and come first)";
      }
    } else {
      r.message +=
          "; the quota it needs in flavor " + r.flavor + " is held by work its queue may not preempt" +
          (evicting > 0 ? " (and by " + std::to_string(evicting) + " workload(s) being evicted)" : "") +
          ", so it waits until that work ends or is preempted";
    }
  }
  return done();
}

}  // namespace artel::core
