// The engine's queues: resolving a workload to its LocalQueue and
// ClusterQueue, the per-ClusterQueue heaps, parking (one by one and in
// bulk), admission fair sharing's usage samples, and the head a cycle
// nominates. Moved from engine.cc.

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/engine_helpers.h"
#include "core/engine_impl.h"

namespace artel::core {

namespace {

using K = PendingReason::Kind;

}  // namespace

PendingReason Reason(K kind, std::string message) {
  PendingReason r;
  r.kind = kind;
  r.message = std::move(message);
  return r;
}

void EngineImpl::Resolve(WlId id) {
  Wl& w = wls[id];
  w.parked = false;
  w.lq = FindLq(w.ns, w.info.spec.queue);
  w.cq = w.lq.valid() ? lqs[w.lq].cq : CqId();
  w.info.cluster_queue = w.cq.valid() ? cqs[w.cq].name : "";
  w.info.max_runtime = MaxRuntime(w, w.cq);
  if (!w.info.spec.active) {
    w.SetPending(Reason(K::kInactive, "workload is deactivated (spec.active=false)"));
  } else if (!w.lq.valid()) {
    w.SetPending(Reason(K::kLocalQueueMissing, "LocalQueue " + w.info.spec.queue +
                                                   " does not exist in namespace " + w.info.spec.ns));
  } else if (!w.cq.valid()) {
    w.SetPending(Reason(K::kClusterQueueMissing, "ClusterQueue " + lqs[w.lq].spec->cluster_queue +
                                                     " of LocalQueue " + w.info.spec.queue +
                                                     " does not exist"));
  } else if (!cqs[w.cq].spec->namespace_selector ||
             !cqs[w.cq].spec->namespace_selector->Matches(nss[w.ns].labels)) {
    w.SetPending(Reason(K::kNamespaceNotAllowed,
                        "namespace " + w.info.spec.ns +
                            " is not selected by the namespaceSelector of ClusterQueue " + cqs[w.cq].name));
  } else if (lqs[w.lq].spec->stop_policy != StopPolicy::kNone) {
    w.SetPending(Reason(K::kStopped, "LocalQueue " + w.info.spec.queue + " is stopped (stopPolicy)"));
  } else {
    if (cqs[w.cq].held) {
      w.SetPending(Reason(K::kStopped, "ClusterQueue " + cqs[w.cq].name + " is stopped (stopPolicy)"));
    } else if (const K k = w.pending_kind; k == K::kNone || k == K::kLocalQueueMissing ||
                                           k == K::kClusterQueueMissing || k == K::kNamespaceNotAllowed ||
                                           k == K::kStopped || k == K::kInactive) {
      w.SetPendingKind(K::kNotYetTried);  // message built on read
      w.msg_dirty = true;
      w.requeued = false;
    }
    // (A reason kept as its kind gets the name when it is built.)
    if (w.info.pending.boxed()) w.info.pending.mut().cluster_queue = cqs[w.cq].name;
    Enqueue(id);
    return;
  }
  orphans.push_back(id);
}

LqId EngineImpl::FindLq(NamespaceId ns, const std::string& name) const {
  if (!lqs_of_ns.contains(ns)) return {};
  for (const auto& [n, l] : lqs_of_ns[ns]) {
    if (n == name) return l;
  }
  return {};
}

void EngineImpl::Enqueue(WlId id) {
  Wl& w = wls[id];
  if (w.in_heap || !w.lq.valid()) return;
  LqRt& lq = lqs[w.lq];
  QueueKey key{-w.info.priority, id, w.info.queued_at, w.info.uid};
  key.enq_seq = ++enqueue_counter;
  w.enq_seq = key.enq_seq;
  auto it = lq.heap.insert(key).first;
  w.heap_it = it;
  // The least it can be admitted with, per resource (BulkPark's bound).
  w.min_req.clear();
  if (lq.cq.valid()) {
    CqRt& cq = cqs[lq.cq];
    for (const PodSetReq& ps : w.pod_sets) {
      ForEachPerPod(ps, cq.pods_res, ImplicitGpuRes(cq, ps), [&](ResourceId res, Amount per_pod) {
        if (per_pod <= 0) return;
        const Amount a = per_pod * std::max<int32_t>(ps.min_count, 0);
        for (auto& [r, v] : w.min_req) {
          if (r == res) {
            v += a;
            return;
          }
        }
        w.min_req.emplace_back(res, a);
      });
    }
    for (const auto& [res, a] : w.min_req) {
      if (!cq.min_req.contains(res)) cq.min_req.resize(static_cast<size_t>(res.value()) + 1);
      cq.min_req[res].Insert(a);
    }
  }
  // An active entry before the skip point becomes the new skip point.
  if (lq.skip_valid && (lq.skip == lq.heap.end() || key < *lq.skip)) lq.skip = it;
  // Queued among the run's members: the run is dropped at the next release.
  // Between the last member and the run's end: it is the run's end now.
  if (lq.run_valid) {
    if (lq.run_req.empty()) {
      lq.run_end = lq.heap.begin();
    } else if (key < lq.run_last) {
      lq.run_dirty = true;
    } else if (lq.run_end == lq.heap.end() || key < *lq.run_end) {
      lq.run_end = it;
    }
    if (lq.run_pn >= lq.run_req.size()) lq.park_end = lq.run_end;
  }
  w.in_heap = true;
  w.soft_parked = false;
  w.reason_stale = false;  // whoever queues it set its reason
  if (lq.cq.valid()) cqs[lq.cq].queued++;
  queued_count++;
}

void EngineImpl::Dequeue(WlId id) {
  Wl& w = wls[id];
  if (!w.in_heap) return;
  LqRt& lq = lqs[w.lq];
  const bool parked = SoftParked(w);
  auto it = w.heap_it;
  if (lq.skip_valid && lq.skip == it) ++lq.skip;
  if (lq.run_valid) {
    if (lq.park_end == it) ++lq.park_end;
    if (lq.InRun(*it)) {
      const auto pos = static_cast<size_t>(w.run_pos);
      if (w.run_pos >= 0 && pos < lq.run_at.size() && lq.run_at[pos] == it) {
        lq.MemberGone(pos);
      } else {
        lq.DropRun();  // not expected: a member always has its position
      }
    } else if (lq.run_end == it) {
      ++lq.run_end;
    }
  }
  w.run_pos = -1;
  lq.heap.erase(it);
  w.in_heap = false;
  if (lq.cq.valid()) {
    CqRt& cq = cqs[lq.cq];
    for (const auto& [res, a] : w.min_req) cq.min_req[res].EraseOne(a);
  }
  w.min_req.clear();
  if (parked) {
    root_parked[lq.root]--;  // parked on its own or in bulk: its ClusterQueue's root
    parked_total--;
    if (lq.cq.valid()) cqs[lq.cq].parked_n--;
  }
  w.soft_parked = false;
  if (lq.cq.valid()) cqs[lq.cq].queued--;
  queued_count--;
}

void EngineImpl::Park(WlId id, std::vector<WlId>* list) {
  Wl& w = wls[id];
  Dequeue(id);
  w.parked = true;
  w.listed = true;
  list->push_back(id);
}

void EngineImpl::UnparkList(std::vector<WlId>* list) {
  if (list->empty()) return;
  std::vector<WlId> taken;
  taken.swap(*list);
  for (WlId id : taken) {
    Wl& w = wls[id];
    w.listed = false;
    if (!w.parked || w.info.state != WorkloadState::kPending) continue;
    w.parked = false;
    Enqueue(id);
  }
  // Keep the buffer: the next park reuses its capacity.
  taken.clear();
  if (list->empty()) list->swap(taken);
}

void EngineImpl::SoftPark(WlId id, NodeId root) {
  Wl& w = wls[id];
  w.soft_parked = true;
  w.park_root = root;
  w.park_epoch = root_epoch[root];
  w.heap_it->park_epoch = w.park_epoch;
  root_parked[root]++;
  CqRt& cq = cqs[lqs[w.lq].cq];
  if (cq.parked_epoch != w.park_epoch) {
    cq.parked_epoch = w.park_epoch;
    cq.parked_n = 0;
  }
  cq.parked_n++;
  parked_total++;
}

void EngineImpl::Unpark(NodeId root) {
  if (!root_epoch.contains(root)) return;
  parked_total -= root_parked[root];
  root_parked[root] = 0;
  root_epoch[root] = ++epoch_counter;
}

const QueueKey* EngineImpl::FirstActive(LqId l) {
  LqRt& q = lqs[l];
  if (q.heap.empty()) return nullptr;
  if (!q.root.valid()) return &*q.heap.begin();  // no ClusterQueue: nothing parks in place
  const uint64_t ep = root_epoch[q.root];
  // The run's members, while parked, are every entry before its end unless
  // one was queued among them since.
  const bool run_parked = q.run_valid && q.run_epoch == ep;
  if (!q.skip_valid || q.skip_epoch != ep) {
    q.skip = run_parked && !q.run_dirty ? q.park_end : q.heap.begin();
    q.skip_epoch = ep;
    q.skip_valid = true;
  }
  // Entries parked in bulk: those below the ClusterQueue's bulk_seq.
  const CqRt& cq = cqs[q.cq];
  const uint64_t bulk_below = cq.bulk_epoch == ep ? cq.bulk_seq : 0;
  while (q.skip != q.heap.end() &&
         (q.skip->park_epoch == ep || q.skip->enq_seq < bulk_below || (run_parked && q.InRunParked(*q.skip))))
    ++q.skip;
  return q.skip == q.heap.end() ? nullptr : &*q.skip;
}

// Parking in bulk (docs/semantics.md §3, step 5). A release
// in a cohort tree requeues every workload parked in it, and each is then a
// head in turn, one cycle per workload, until all have been tried: the cost
// of an event grew with the depth of the queue. Where it is exact, the
// queued workloads that cannot be admitted are parked here instead, without
// examining them, in O(1) each ClusterQueue:
//  - the bound: a workload can be admitted only if, for every resource it
//    requests, the least it can be admitted with (all pod sets at their
//    minimum count) is at most what its ClusterQueue could get of that
//    resource over all its flavors: what is available now with borrowing,
//    or, by reclaiming within the cohort, its quota minus its usage (a
//    reclaiming preemptor must fit without borrowing). When the smallest
//    such request queued in the ClusterQueue exceeds that, none of its
//    workloads can be admitted or preempt. Usage only grows within a
//    `Schedule` call (evictions hold their quota until they complete), so
//    the answer holds for every later cycle until the next release, which
//    bumps the tree's epoch and ends the bulk park.
//  - where it is exact: classical preemption with withinClusterQueue and
//    borrowWithinCohort Never and reclaimWithinCohort Never or Any, in a
//    ClusterQueue that is a root or a direct child of its root cohort,
//    BestEffortFIFO, no sticky head; no fair sharing, Admission Fair
//    Sharing, nodes, reservations or runtime protections anywhere. A head
//    that fails then changes nothing but its own reason (with
//    reclaimWithinCohort Never it holds back part of its request for the
//    rest of the cycle, which only matters to heads of its tree, so such a
//    queue is parked in bulk only when every queue of its tree is), and the
//    cycles that would have tried them one by one change the same nothing
//    in the same order: the admissions and evictions are those of the
//    one-by-one cycles (the property tests compare them).
//  - what differs: the pending reason of a workload parked in bulk is built
//    when it is read, from the state then (ReasonStale, Materialize), and
//    `CycleResult::rounds` counts fewer cycles; `decisions` still counts one
//    decision per workload parked.
Amount EngineImpl::BulkCap(CqId c, ResourceId res) const {
  const CqRt& cq = cqs[c];
  const uint64_t tg = cq.root.valid() ? tree_gen[cq.root] : 0;
  if (cq.cap_state_gen != state_gen || cq.cap_tree_gen != tg || cq.cap_overlay_gen != overlay_gen) {
    cq.cap_cache.clear();
    cq.cap_state_gen = state_gen;
    cq.cap_tree_gen = tg;
    cq.cap_overlay_gen = overlay_gen;
  }
  for (const auto& [r, v] : cq.cap_cache) {
    if (r == res) return v;
  }
  const Amount cap = ComputeBulkCap(c, res);
  cq.cap_cache.emplace_back(res, cap);
  return cap;
}

Amount EngineImpl::ComputeBulkCap(CqId c, ResourceId res) const {
  const CqRt& cq = cqs[c];
  if (GroupOf(cq, res) < 0) return std::numeric_limits<Amount>::max();
  const auto& usage = tree.node(cq.node).usage;
  Amount cap = 0;
  if (cq.cap_shallow) {
    // A child of a root (BulkShape's queues): QuotaTree::Available's two
    // levels without the recursion, the quotas read from CapFr (only the
    // two usages change).
    const auto& root_usage = tree.node(cq.root).usage;
    for (const CapFr& k : cq.cap_frs[res]) {
      const Amount u = usage[k.fr];
      Amount a = QuotaTree::AvailableBelow(k.local, k.subtree, k.borrowing_limit, u,
                                           k.root_subtree - root_usage[k.fr]);
      if (cq.cap_reclaim) a = std::max(a, k.subtree - u);
      cap += std::max<Amount>(a, 0);
    }
    return cap;
  }
  for (const CapFr& k : cq.cap_frs[res]) {
    Amount a = tree.Available(cq.node, k.fr);
    if (cq.cap_reclaim) a = std::max(a, k.subtree - usage[k.fr]);
    cap += std::max<Amount>(a, 0);
  }
  return cap;
}

bool EngineImpl::AllQueuedFail(CqId c) const {
  const CqRt& cq = cqs[c];
  for (ResourceId res : cq.min_req.ids()) {
    const auto& set = cq.min_req[res];
    // Some queued workload does not request it (or none is queued).
    if (set.empty() || static_cast<int32_t>(set.size()) < cq.queued) continue;
    if (set.Min() > BulkCap(c, res)) return true;
  }
  return false;
}

bool EngineImpl::NoLowerPriorityAdmitted(CqId c) {
  CqRt& cq = cqs[c];
  if (cq.admitted.empty()) return true;
  const int32_t lowest = cq.admitted_index.MinPriority(cq.admitted, wls);
  for (LqId l : cq.lqs) {  // each heap's first entry has its highest priority
    if (!lqs[l].heap.empty() && -lqs[l].heap.begin()->neg_priority > lowest) return false;
  }
  return true;
}

bool EngineImpl::QueuedMustBorrow(CqId c) const {
  const CqRt& cq = cqs[c];
  const auto& node = tree.node(cq.node);
  for (ResourceId res : cq.min_req.ids()) {
    const auto& set = cq.min_req[res];
    if (set.empty() || static_cast<int32_t>(set.size()) < cq.queued) continue;
    const int32_t g = GroupOf(cq, res);
    if (g < 0) continue;
    Amount headroom = 0;
    for (FlavorId f : cq.groups[g].flavors) {
      const FrId fr = tree.FindFr(f, res);
      if (fr.valid()) headroom += std::max<Amount>(0, node.subtree[fr] - node.usage[fr]);
    }
    if (set.Min() > headroom) return true;
  }
  return false;
}

bool EngineImpl::NeverBorrows(CqId c) const {
  const CqRt& cq = cqs[c];
  const auto& node = tree.node(cq.node);
  for (const GroupRt& g : cq.groups) {
    for (FlavorId f : g.flavors) {
      for (ResourceId res : g.resources) {
        const FrId fr = tree.FindFr(f, res);
        if (fr.valid() && node.borrowing_limit[fr] != 0) return false;
      }
    }
  }
  return true;
}

int8_t EngineImpl::StaticBulkShape(CqId c) const {
  const CqRt& cq = cqs[c];
  const PreemptionSpec& pol = cq.spec->preemption;
  const NodeId parent = tree.node(cq.node).parent;
  const bool shape = cq.spec->queueing_strategy == QueueingStrategy::kBestEffortFIFO &&
                     (pol.within_cluster_queue == WithinClusterQueuePolicy::kNever ||
                      pol.within_cluster_queue == WithinClusterQueuePolicy::kLowerPriority) &&
                     pol.borrow_within_cohort == BorrowWithinCohortPolicy::kNever &&
                     (pol.reclaim_within_cohort == ReclaimWithinCohortPolicy::kNever ||
                      pol.reclaim_within_cohort == ReclaimWithinCohortPolicy::kAny) &&
                     (!parent.valid() || parent == tree.Root(cq.node));
  if (!shape) return 0;
  return pol.within_cluster_queue == WithinClusterQueuePolicy::kNever ? 2 : 1;
}

bool EngineImpl::BulkShape(CqId c) {
  const int8_t s = cqs[c].bulk_shape;
  return s == 2 || (s == 1 && NoLowerPriorityAdmitted(c));
}

bool EngineImpl::BoundFails(WlId h, CqId c) {
  const CqRt& cq = cqs[c];
  if (cq.spec->preemption.reclaim_within_cohort != ReclaimWithinCohortPolicy::kAny) return false;
  const Wl& w = wls[h];
  if (w.min_req.empty() || !BulkShape(c)) return false;
  for (const auto& [res, a] : w.min_req) {
    if (a > BulkCap(c, res)) return true;
  }
  return false;
}

int64_t EngineImpl::BulkPark() {
  if (!opts.bulk_park || opts.fair_sharing || opts.admission_fair_sharing || cluster ||
      any_reservation_config || any_protection || !reservations.empty() ||
      static_cast<int64_t>(queued_count) == parked_total)
    return 0;
  int64_t total = 0;
  for (NodeId root : root_cqs.ids()) {
    const std::vector<CqId>& members = root_cqs[root];
    if (members.empty()) continue;
    bulk_fails.clear();
    // Whether the tree qualifies, some active queue fails, every one does.
    bool shape_ok = true;
    bool all_fail = true;
    bool any = false;
    // Every queue that does not fail never borrows: its entries all come
    // before any borrowing entry in the classical order.
    bool others_never_borrow = true;
    for (CqId c : members) {
      CqRt& cq = cqs[c];
      if (cq.held || ActiveQueued(cq) == 0) continue;
      if (!BulkShape(c)) {  // a tree of another shape: left to the cycles
        shape_ok = false;
        break;
      }
      // A queue whose head waits for its victims is tried first in every
      // cycle; it does not fail.
      if (cq.sticky == kNoWl && AllQueuedFail(c)) {
        any = true;
        bulk_fails.push_back(c);
      } else {
        all_fail = false;
        if (!cq.never_borrows) others_never_borrow = false;
      }
    }
    if (!shape_ok) continue;
    const uint64_t ep = root_epoch[root];
    const uint64_t stamp = any ? ++bulk_counter : 0;
    for (CqId c : bulk_fails) {  // the active queues of the tree that fail whole, in order
      CqRt& cq = cqs[c];
      // A failing head holds back quota for its cycle unless it may reclaim;
      // harmless when it must borrow and every queue that does not fail
      // never borrows (its hold-back then comes after every entry it could
      // change; the other failing heads fail whatever is held back).
      if (!all_fail && cq.spec->preemption.reclaim_within_cohort != ReclaimWithinCohortPolicy::kAny &&
          !(others_never_borrow && QueuedMustBorrow(c)))
        continue;
      const int32_t n = ActiveQueued(cq);
      if (cq.parked_epoch != ep) {
        cq.parked_epoch = ep;
        cq.parked_n = 0;
      }
      cq.parked_n = cq.queued;
      root_parked[root] += n;
      parked_total += n;
      cq.bulk_epoch = ep;
      cq.bulk_seq = enqueue_counter + 1;
      cq.bulk_stamp = stamp;
      // Nothing before the end is active now; an entry queued later resets
      // the skip point (Enqueue).
      for (LqId l : cq.lqs) {
        LqRt& q = lqs[l];
        q.skip = q.heap.end();
        q.skip_epoch = ep;
        q.skip_valid = true;
      }
      total += n;
    }
    // One active ClusterQueue left in the tree: its heads meet no head of
    // another queue of the tree in any cycle, so the leading heads that
    // cannot fit are parked one by one here, each without an examination.
    // (Queues of other trees share nothing with it but ResourceQuota, which
    // moving its later heads to earlier cycles could make them compete for.)
    if (any_resource_quota) continue;
    CqId only;  // the one active queue; invalid when none or several
    bool several = false;
    for (CqId c : members) {
      if (cqs[c].held || ActiveQueued(cqs[c]) == 0) continue;
      if (only.valid()) {
        several = true;
        break;
      }
      only = c;
    }
    if (several || !only.valid()) continue;
    CqRt& cq = cqs[only];
    if (cq.sticky != kNoWl) continue;
    // With one LocalQueue, the walk keeps its run (LqRt::run_end): parked
    // again in one step where its leading members still fail, and extended
    // by each head that fails after it.
    total += ReparkRun(only, root);
    LqRt* runq = nullptr;
    if (cq.lqs.size() == 1) {
      LqRt& q = lqs[cq.lqs[0]];
      if (q.run_valid && q.run_epoch == ep && !q.run_dirty) runq = &q;
    }
    for (;;) {
      // Members of the run after its park boundary: parked from run_req,
      // without reading their workloads, while they fail.
      if (runq != nullptr && runq->run_pn < runq->run_req.size() && cq.bulk_epoch != ep) {
        const QueueKey* first = FirstActive(cq.lqs[0]);
        if (first == nullptr) break;
        const int64_t adv = AdvanceRun(*runq, only, first, BulkCap(only, runq->run_res));
        total += adv;
        if (adv > 0) continue;
      }
      const WlId h = Head(only);
      if (h == kNoWl) break;
      Wl& w = wls[h];
      Amount failed_req = 0;
      const ResourceId failed = BoundFailure(only, w, &failed_req);
      if (!failed.valid()) break;
      w.reason_stale = true;
      ++total;
      if (runq != nullptr && w.heap_it == runq->run_end && cq.bulk_epoch != ep && !w.waiting_preemption &&
          (!runq->run_res.valid() || runq->run_res == failed)) {
        // The run's next member: parked as SoftPark counts it.
        LqRt& q = *runq;
        w.run_pos = static_cast<int32_t>(q.run_req.size());
        q.PushMember(failed_req, w.heap_it);
        q.run_res = failed;
        q.run_last = *w.heap_it;
        ++q.run_end;
        q.run_seq = enqueue_counter;
        q.run_pn = q.run_req.size();  // members before it precede the head: parked already
        q.park_end = q.run_end;
        if (cq.parked_epoch != ep) {
          cq.parked_epoch = ep;
          cq.parked_n = 0;
        }
        cq.parked_n++;
        root_parked[root]++;
        parked_total++;
        q.skip = q.park_end;
        q.skip_epoch = ep;
        q.skip_valid = true;
        continue;
      }
      SoftPark(h, root);
    }
  }
  return total;
}

bool EngineImpl::ReasonStale(WlId id) const {
  const Wl& w = wls[id];
  if (!w.in_heap || !w.lq.valid() || !lqs[w.lq].cq.valid() || w.info.state != WorkloadState::kPending)
    return false;
  const CqRt& cq = cqs[lqs[w.lq].cq];
  return w.reason_stale || (w.enq_seq < cq.bulk_seq && w.reason_stamp < cq.bulk_stamp) ||
         (w.reason_stamp < lqs[w.lq].run_stamp && RunParked(w) &&
          w.run_pos >= static_cast<int32_t>(lqs[w.lq].run_stale_from));
}

ResourceId EngineImpl::BoundFailure(CqId c, const Wl& w, Amount* req) {
  for (const auto& [res, a] : w.min_req) {
    if (a > BulkCap(c, res)) {
      *req = a;
      return res;
    }
  }
  return {};
}

int64_t EngineImpl::ReparkRun(CqId only, NodeId root) {
  CqRt& cq = cqs[only];
  if (cq.lqs.size() != 1) return 0;
  LqRt& q = lqs[cq.lqs[0]];
  const uint64_t ep = root_epoch[root];
  if (q.run_valid && q.run_epoch == ep) return 0;  // parked, or started, in this epoch already
  if (q.run_valid && (q.run_dirty || !q.run_res.valid())) q.DropRun();
  if (q.run_valid) {
    // The leading members that still fail (the bound only tightens until
    // the next release); the run ends at the first that may not. A member
    // parked on its own or in bulk in this epoch is counted as parked
    // already.
    const Amount cap = BulkCap(only, q.run_res);
    const uint64_t bulk_below = cq.bulk_epoch == ep ? cq.bulk_seq : 0;  // parked in bulk
    // Which members are parked already, without reading their heap entries
    // where possible: none right after a release; else those before the
    // first active entry (its heads tried one by one in this epoch), when
    // that is a member a few live members in and nothing was parked in bulk.
    size_t active_from = q.run_req.size() + 1;  // unknown: read each entry
    if (cq.parked_epoch != ep || cq.parked_n == 0) {
      active_from = 0;
    } else if (bulk_below == 0) {
      if (const QueueKey* first = FirstActive(cq.lqs[0])) {
        const size_t p = RunIndexOf(q, q.run_first, first);
        if (p < q.run_req.size()) active_from = p;
      }
    }
    size_t i = q.run_first;
    int64_t live = 0;
    int64_t added = 0;
    if (active_from <= q.run_req.size()) {
      // The members from active_from on are not parked; those before are.
      i = q.FirstFit(q.run_first, cap, &live);
      if (active_from < i) (void)q.FirstFit(std::max(active_from, q.run_first), cap, &added);
    } else {
      for (; i < q.run_req.size(); ++i) {
        const Amount req = q.run_req[i];
        if (req == LqRt::kRunGone) continue;
        if (req <= cap) break;
        ++live;
        const QueueKey& k = *q.run_at[i];
        if (k.park_epoch != ep && k.enq_seq >= bulk_below) ++added;
      }
    }
    if (live > 0 || i < q.run_req.size()) {
      // The leading members that fail are parked; the others stay members,
      // unparked, for the walk to check from run_req (AdvanceRun).
      q.run_epoch = ep;
      q.run_stamp = ++bulk_counter;
      q.run_stale_from = 0;
      ParkRunBefore(q, only, i, added);
      return added;
    }
    q.DropRun();
  }
  // A new run: the leading entries parked on their own in this epoch that
  // fail the bound on one resource (already counted as parked); the walk
  // extends it from there.
  q.run_valid = true;
  q.run_epoch = ep;
  q.run_stamp = ++bulk_counter;
  q.run_seq = enqueue_counter;
  q.run_end = q.heap.begin();
  while (q.run_end != q.heap.end() && q.run_end->park_epoch == ep) {
    Wl& w = wls[q.run_end->id];
    Amount failed_req = 0;
    const ResourceId failed = BoundFailure(only, w, &failed_req);
    if (!failed.valid() || (q.run_res.valid() && q.run_res != failed) || w.waiting_preemption) break;
    w.run_pos = static_cast<int32_t>(q.run_req.size());
    q.PushMember(failed_req, q.run_end);
    q.run_res = failed;
    q.run_last = *q.run_end;
    ++q.run_end;
  }
  q.SetParkBoundary(q.run_req.size());
  q.run_stale_from = q.run_req.size();  // each member keeps the reason it was parked with
  return 0;
}

void EngineImpl::RecordRunMember(CqId c, WlId h, ResourceId res, Amount req) {
  const CqRt& cq = cqs[c];
  if (cq.lqs.size() != 1 || !cq.root.valid() || !res.valid()) return;
  LqRt& q = lqs[cq.lqs[0]];
  const uint64_t ep = root_epoch[cq.root];
  if (cq.bulk_epoch == ep) return;
  Wl& w = wls[h];
  if (q.run_valid && (q.run_dirty || q.run_res != res)) {
    // Members it parks in this epoch would be active again without it.
    if (q.run_epoch == ep) return;
    q.DropRun();
  }
  if (q.run_valid && w.run_pos >= 0 && static_cast<size_t>(w.run_pos) < q.run_at.size() &&
      q.run_at[w.run_pos] == w.heap_it) {
    // A member: the park boundary follows it, so that later rounds find
    // their heads from there. The members before it precede it: parked.
    const auto p = static_cast<size_t>(w.run_pos);
    if (q.run_epoch != ep) {
      q.run_epoch = ep;
      q.run_stamp = ++bulk_counter;
      q.run_stale_from = p + 1;
      q.SetParkBoundary(p + 1);
    } else if (p + 1 > q.run_pn) {
      q.SetParkBoundary(p + 1);
    }
    return;
  }
  // The entries from the run's end (the heap's start for a new run) to `h`
  // come before the first active entry: each is parked in this epoch, on
  // its own. A few at most become members, with their least request of
  // `res` (none: it never fails on it), then `h`.
  const auto from = q.run_valid ? q.run_end : q.heap.begin();
  constexpr int kMaxBetween = 16;
  int n = 0;
  for (auto it = from; it != w.heap_it; ++it) {
    if (it == q.heap.end() || ++n > kMaxBetween || wls[it->id].waiting_preemption) return;
  }
  const bool fresh = !q.run_valid;
  if (fresh) {
    q.run_valid = true;
    q.run_res = res;
  }
  // Appends heap entry `it` to the run with its least request of `res`.
  auto push = [&](std::set<QueueKey>::iterator it) {
    Wl& m = wls[it->id];
    Amount a = 0;
    for (const auto& [r, v] : m.min_req) {
      if (r == res) a = v;
    }
    m.run_pos = static_cast<int32_t>(q.run_req.size());
    q.PushMember(a, it);
    q.run_last = *it;
  };
  for (auto it = from; it != w.heap_it; ++it) push(it);
  if (fresh || q.run_epoch != ep) {
    // Covered by the run from now on, each with its own reason.
    q.run_epoch = ep;
    q.run_stamp = ++bulk_counter;
    q.run_stale_from = q.run_req.size();
  }
  w.run_pos = static_cast<int32_t>(q.run_req.size());
  q.PushMember(req, w.heap_it);
  q.run_last = *w.heap_it;
  const size_t boundary = q.run_req.size();
  // The entries after it, read ahead (none is parked: none was a head in
  // this epoch): members past the park boundary, so that the next rounds
  // find how many of them fail from run_req (TryFastRound's run_rounds)
  // instead of taking them one round at a time. It stops at a waiting
  // preemptor.
  constexpr int kAhead = 32;
  auto it = std::next(w.heap_it);
  for (int k = 0; k < kAhead && it != q.heap.end() && !wls[it->id].waiting_preemption; ++k, ++it) push(it);
  q.run_end = it;
  q.run_seq = enqueue_counter;
  q.SetParkBoundary(boundary);
}

size_t EngineImpl::RunIndexOf(const LqRt& q, size_t from, const QueueKey* first) {
  // The members between `from` and `first` precede the first active entry:
  // each is parked or gone, and only a few are live (tried on their own).
  constexpr int kLook = 16;
  int live = 0;
  for (size_t p = from; p < q.run_at.size(); ++p) {
    if (q.run_req[p] == LqRt::kRunGone) continue;
    if (&*q.run_at[p] == first) return p;
    if (++live > kLook) break;
  }
  return q.run_at.size();
}

int64_t EngineImpl::AdvanceRun(LqRt& q, CqId c, const QueueKey* first, Amount cap) {
  const size_t p = RunIndexOf(q, std::max(q.run_pn, q.run_first), first);
  if (p >= q.run_at.size()) return 0;
  // Members from it on that fail: none is parked yet (they follow the first
  // active entry, and the ClusterQueue was not parked in bulk this epoch).
  int64_t added = 0;
  const size_t i = q.FirstFit(p, cap, &added);
  if (added == 0) return 0;
  ParkRunBefore(q, c, i, added);
  return added;
}

void EngineImpl::ParkRunBefore(LqRt& q, CqId c, size_t boundary, int64_t added) {
  q.SetParkBoundary(boundary);
  CqRt& cq = cqs[c];
  const uint64_t ep = root_epoch[cq.root];
  if (cq.parked_epoch != ep) {
    cq.parked_epoch = ep;
    cq.parked_n = 0;
  }
  cq.parked_n += static_cast<int32_t>(added);
  root_parked[cq.root] += added;
  parked_total += added;
  q.skip = q.park_end;
  q.skip_epoch = ep;
  q.skip_valid = true;
}

double EngineImpl::AfsUsage(LqId lq) const {
  const LqRt& l = lqs[lq];
  double total = 0;
  for (ResourceId r : l.afs_consumed.ids()) {
    double weight = 1.0;
    auto it = opts.afs.resource_weights.find(resources.Name(r));
    if (it != opts.afs.resource_weights.end()) weight = static_cast<double>(it->second) / 1000.0;
    total += weight * (l.afs_consumed[r] + l.afs_penalty[r]);
  }
  double lw = static_cast<double>(l.spec->fair_weight) / 1000.0;
  if (lw <= 0) return total > 0 ? 1e300 : 0;
  return total / lw;
}

void EngineImpl::AfsSample(Time now) {
  const Time interval = std::max<Time>(1, opts.afs.usage_sampling_interval);
  for (LqRt& l : lqs) {
    if (!l.afs_sampled) {
      l.afs_sampled = true;
      l.afs_last_sample = now;
      continue;
    }
    Time elapsed = now - l.afs_last_sample;
    if (elapsed < interval) continue;
    double alpha = 1.0;
    if (opts.afs.usage_half_life > 0)
      alpha =
          1.0 - std::pow(0.5, static_cast<double>(elapsed) / static_cast<double>(opts.afs.usage_half_life));
    for (ResourceId r : l.afs_consumed.ids()) {
      l.afs_consumed[r] =
          (1 - alpha) * l.afs_consumed[r] + alpha * static_cast<double>(l.current_usage[r]) / 1000.0;
      l.afs_penalty[r] = 0;
    }
    l.afs_last_sample = now;
  }
}

WlId EngineImpl::Head(CqId cqi, const QueueKey** key) {
  CqRt& cq = cqs[cqi];
  if (key != nullptr) *key = nullptr;
  if (cq.sticky != kNoWl) {
    const Wl& s = wls[cq.sticky];
    if (s.in_heap && s.cq == cqi && s.info.state == WorkloadState::kPending) return cq.sticky;
    cq.sticky = kNoWl;
  }
  const QueueKey* best = nullptr;
  double best_afs = 0;
  for (LqId l : cq.lqs) {
    const QueueKey* first = FirstActive(l);
    if (first == nullptr) continue;
    double afs = opts.admission_fair_sharing ? AfsUsage(l) : 0.0;
    if (best == nullptr || afs < best_afs || (afs == best_afs && *first < *best)) {
      best = first;
      best_afs = afs;
    }
  }
  if (best == nullptr) return kNoWl;
  if (key != nullptr) *key = best;
  return best->id;
}

}  // namespace artel::core
