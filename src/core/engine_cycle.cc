// The scheduling cycle: EngineImpl::RunRound (nominate heads, order them,
// admit, preempt, reserve) and the StrictFIFO reasons. Moved from
// engine.cc.

#include <algorithm>
#include <cmath>
#include <functional>
#include <unordered_set>

#include "core/admission_order.h"
#include "core/engine_helpers.h"
#include "core/engine_impl.h"
#include "core/flavor_assigner.h"
#include "core/preemption.h"
#include "core/resource_names.h"

namespace artel::core {

namespace {

using K = PendingReason::Kind;

bool ResourceQuotaAllows(const EngineImpl& e, const Wl& w, std::string* why) {
  const NsRt& n = e.nss[w.ns];
  for (const auto& [res, hard] : n.hard) {
    Amount want = 0;
    for (const auto& [r, a] : w.ns_usage) {
      if (r == res) want = a;
    }
    if (want == 0) continue;
    if (n.usage[res] + want > hard) {
      *why = "namespace " + n.name + " ResourceQuota caps requests." + e.resources.Name(res) + " at " +
             FormatQuantity(hard) + "; " + FormatQuantity(n.usage[res]) + " in use, workload needs " +
             FormatQuantity(want);
      return false;
    }
  }
  return true;
}

void BuildAdmission(EngineImpl& e, Wl& w, const Assignment& a) {
  w.info.admission.clear();
  w.ns_usage.clear();
  for (size_t i = 0; i < w.pod_sets.size(); ++i) {
    PodSetAssignment psa;
    psa.name = w.info.spec.pod_sets[i].name;
    psa.count = a.pod_sets[i].count;
    for (const auto& [res, f] : a.pod_sets[i].flavors) psa.flavors[e.resources.Name(res)] = e.flavors[f].name;
    ForEachPerPod(w.pod_sets[i], e.cqs[w.cq].pods_res, e.ImplicitGpuRes(e.cqs[w.cq], w.pod_sets[i]),
                  [&](ResourceId res, Amount per_pod) {
                    Amount total = per_pod * psa.count;
                    psa.resource_usage[e.resources.Name(res)] = total;
                    bool merged = false;
                    for (auto& [r, v] : w.ns_usage) {
                      if (r == res) {
                        v += total;
                        merged = true;
                      }
                    }
                    if (!merged) w.ns_usage.emplace_back(res, total);
                  });
    w.info.admission.push_back(std::move(psa));
  }
}

// The BlockedByReservation reason, written in place: a workload blocked
// again (every release in its tree retries it) reuses its reason's box and
// message buffer. The same reason as Reason(kind, message) with its
// ClusterQueue's name.
void SetBlockedByReservation(Wl& w, const CqRt& cq, const EngineImpl::Reservation& r,
                             std::optional<Time> rest, Time now, const EngineImpl& e) {
  w.pending_kind = K::kBlockedByReservation;
  PendingReason& p = w.info.pending.mut();
  p.kind = K::kBlockedByReservation;
  p.cluster_queue = cq.name;
  p.pod_set.clear();
  p.flavor.clear();
  p.resource.clear();
  p.level.clear();
  p.requested = p.available = p.missing = 0;
  p.would_preempt.clear();
  p.flavors.clear();
  std::string& m = p.message;
  m.clear();
  m.append(w.info.key).append(" in ClusterQueue ").append(cq.name);
  m.append(": fits, but would delay the reservation of ").append(e.wls[r.wl].info.key);
  m.append(" (ClusterQueue ").append(e.cqs[r.cq].name).append("), which starts in ");
  AppendSpan(&m, r.start - now);
  m.append(" (at t=");
  AppendSpan(&m, r.start);
  m.append("): ");
  if (rest) {
    m.append("its runtime estimate (");
    AppendSpan(&m, *rest);
    m.append(") ends after that");
  } else {
    m.append("it has no runtime estimate (maximum runtime or queue default)");
  }
  m.append(r.nodes ? " and it needs quota or room on the nodes the reservation holds"
                   : " and it needs quota the reservation holds");
}

}  // namespace

bool EngineImpl::RunRound(Time now, CycleResult* result, bool fresh_snapshot) {
  if (fresh_snapshot) RebuildUsage();
  // Reservations whose workload left the queue are gone; what they held
  // back may be used again.
  for (size_t i = 0; i < reservations.size();) {
    const Wl& rw = wls[reservations[i].wl];
    if (rw.forgotten || rw.info.state != WorkloadState::kPending || rw.cq != reservations[i].cq) {
      DropReservation(i);
    } else {
      ++i;
    }
  }
  // Entries are reused across rounds (their buffers keep their capacity);
  // `n` of them are live in this round.
  std::vector<Entry>& all_entries = round_entries;
  size_t n = 0;
  // Queues none of whose workloads can be admitted are parked at once.
  // After a quiet round BulkPark would do again what it did (nothing) unless
  // that round made a queue inactive or changed the head of a tree's only
  // active queue (bulk_idle).
  int64_t bulk = 0;
  if (!quiet_valid || !bulk_idle) {
    bulk = BulkPark();
    bulk_idle = bulk == 0;
  }
  result->decisions += bulk;
  if (quiet_valid) {
    bool fast_changed = false;
    if (bulk == 0 && TryFastRound(result, &fast_changed)) return fast_changed;
    quiet_valid = false;
  }
  // A head that fails the bound (as TryFastRound's new heads) would fail
  // its nomination without holding anything back: it is not nominated, and
  // the cycle parks it where it would have parked it.
  const bool bound_skip = opts.bulk_park && !opts.fair_sharing && !opts.admission_fair_sharing && !cluster &&
                          !any_reservation_config && !any_protection && reservations.empty();
  for (CqId c : cqs.ids()) {
    if (cqs[c].held || ActiveQueued(cqs[c]) == 0) continue;  // a valid sticky head is queued and active
    const QueueKey* hk = nullptr;
    WlId h = Head(c, &hk);
    if (h == kNoWl) continue;
    if (all_entries.size() <= n) all_entries.emplace_back();
    Entry& en = all_entries[n++];
    const Wl& hw = wls[h];
    en.waiting = hw.waiting_preemption;
    if (hk != nullptr) {  // the order keys from its heap entry (Enqueue), not the workload
      en.priority = -hk->neg_priority;
      en.queued_at = hk->queued_at;
      en.uid = hk->uid;
    } else {
      en.priority = hw.info.priority;
      en.queued_at = hw.info.queued_at;
      en.uid = hw.info.uid;
    }
    if (bound_skip && !en.waiting && cqs[c].sticky != h && BoundFails(h, c)) {
      en.wl = h;
      en.cq = c;
      en.bound = true;
      en.assignment.mode = Mode::kNoFit;
      en.assignment.borrow_level = 0;
      en.targets.clear();
      continue;
    }
    NominateHead(h, c, &en);
    if (protect_min > now) protect_wakeups.emplace(protect_min, tree.Root(cqs[c].node));
  }
  if (n == 0) return bulk > 0;
  // Whether this round changes nothing but parking heads that failed, so
  // that the next one may be a fast round (TryFastRound).
  bool quiet = FastRoundsApply();
  if (quiet) quiet_parked.assign(n, kQuietKept);
  int64_t parked_here = 0;
  const int64_t decisions_before = result->decisions;
  struct Live {
    std::vector<Entry>& v;
    size_t n;
    size_t size() const { return n; }
    Entry& operator[](size_t i) { return v[i]; }
  } entries{all_entries, n};
  admission_order->Begin(*this, all_entries, entries.size());
  bool changed = false;
  // Cycle-only usage, rolled back at the end: the first round_temp_n
  // entries of round_temp, whose buffers are kept from round to round.
  auto& temp = round_temp;
  size_t& temp_n = round_temp_n;
  temp_n = 0;
  auto push_temp = [&](NodeId node, const FrAmounts& amounts) {
    if (temp.size() <= temp_n) temp.emplace_back();
    temp[temp_n].first = node;
    temp[temp_n].second.assign(amounts.begin(), amounts.end());
    ++temp_n;
  };
  const uint64_t stamp = ++round_stamp;  // marks this round's victims in Wl::victim_stamp
  round_victims.clear();
  auto is_victim = [&](WlId id) { return wls[id].victim_stamp == stamp; };
  std::vector<char>& done = round_done;
  done.assign(entries.size(), 0);
  for (size_t step = 0; step < entries.size(); ++step) {
    const int32_t pick = admission_order->Next(*this, all_entries, step, done);
    if (pick < 0) break;
    const auto idx = static_cast<size_t>(pick);
    done[idx] = 1;
    Entry& en = entries[idx];
    Wl& w = wls[en.wl];
    CqRt& cq = cqs[en.cq];
    Assignment& a = en.assignment;
    result->decisions++;
    if (en.bound) {  // fails, as its nomination would have (RunRound's "inadmissible" below)
      ParkBound(en.wl, en.cq);
      changed = true;
      if (quiet) quiet_parked[idx] = kQuietParked;
      ++parked_here;
      continue;
    }
    if (a.mode == Mode::kFit) {
      if (!FitsNow(*this, en.cq, a.usage)) {
        // Another entry of this cycle took the capacity; retry next cycle.
        if (w.waiting_preemption || cq.sticky == en.wl) quiet = false;
        w.SetPendingKind(K::kReservedByOther);  // its ClusterQueue's name and message built on read
        w.msg_dirty = true;
        // Its victims are gone; it no longer holds the head of its queue.
        w.waiting_preemption = false;
        if (cq.sticky == en.wl) cq.sticky = kNoWl;
        result->decisions--;
        continue;
      }
      // Conservative backfill (docs/semantics.md §11): no admission that
      // would delay a reservation; a waiting preemptor is not held back.
      if (!reservations.empty() && !w.waiting_preemption) {
        if (const Reservation* r = DelayedReservation(en.wl, en.cq, a, now)) {
          quiet = false;
          SetBlockedByReservation(w, cq, *r, RemainingEstimate(w, en.cq), now, *this);
          if (cq.sticky == en.wl) cq.sticky = kNoWl;
          if (cq.spec->queueing_strategy == QueueingStrategy::kBestEffortFIFO) {
            SoftPark(en.wl, tree.Root(cq.node));
            changed = true;
            if (entries.size() == 1) ParkBlockedRun(en.cq, result);
          }
          continue;
        }
      }
      quiet = false;  // admitted, parked or placed below
      BuildAdmission(*this, w, a);
      std::string why;
      if (!ResourceQuotaAllows(*this, w, &why)) {
        w.info.admission.clear();
        w.SetPending(Reason(K::kResourceQuotaExceeded, w.info.key + ": " + why));
        w.PendingMut().cluster_queue = cq.name;
        Park(en.wl, &nss[w.ns].parked);
        if (cq.sticky == en.wl) cq.sticky = kNoWl;
        changed = true;
        continue;
      }
      if (Placed(a)) {
        placement::PlaceResult pr = PlaceWorkload(en.wl, a);
        if (pr.ok()) {
          // Fewer pods than assigned were placed (minCount / minMember):
          // admit only those, and hold only their quota.
          bool shrunk = false;
          for (size_t i = 0; i < a.pod_sets.size() && i < pr.placement.placed.size(); ++i) {
            if (pr.placement.placed[i] < a.pod_sets[i].count) {
              a.pod_sets[i].count = pr.placement.placed[i];
              shrunk = true;
            }
          }
          if (shrunk) {
            FrAmounts usage;
            for (size_t i = 0; i < a.pod_sets.size(); ++i) {
              ForEachPerPod(w.pod_sets[i], cq.pods_res, ImplicitGpuRes(cq, w.pod_sets[i]),
                            [&](ResourceId res, Amount per_pod) {
                              FlavorId f;
                              for (const auto& [r, fl] : a.pod_sets[i].flavors) {
                                if (r == res) f = fl;
                              }
                              if (!f.valid()) return;
                              FrId fr = tree.FindFr(f, res);
                              if (!fr.valid()) return;
                              bool merged = false;
                              for (auto& [x, v] : usage) {
                                if (x == fr) {
                                  v += per_pod * a.pod_sets[i].count;
                                  merged = true;
                                }
                              }
                              if (!merged) usage.emplace_back(fr, per_pod * a.pod_sets[i].count);
                            });
            }
            std::sort(usage.begin(), usage.end());
            a.usage = std::move(usage);
            BuildAdmission(*this, w, a);
          }
        }
        if (!pr.ok() && pr.outcome == placement::PlaceOutcome::kUnschedulable) {
          // Placement-aware preemption: victims that free the nodes are
          // evicted as in quota preemption (the branch below).
          en.targets = PlacementTargets(*this, en.wl, en.cq, a);
          if (!en.targets.empty()) {
            w.info.admission.clear();
            a.mode = Mode::kPreempt;
          }
        }
        if (!pr.ok() && a.mode == Mode::kFit) {
          w.info.admission.clear();
          w.SetPending(
              Reason(pr.outcome == placement::PlaceOutcome::kInfeasible ? K::kInfeasible : K::kUnschedulable,
                     w.info.key + ": quota fits in ClusterQueue " + cq.name +
                         " but the pods do not fit on the nodes: " + pr.reason));
          PendingReason& pending = w.PendingMut();
          pending.cluster_queue = cq.name;
          if (w.protected_until > now) {
            pending.message.clear();  // FillMessage adds when the protection ends
            pending.message = w.info.key + ": quota fits in ClusterQueue " + cq.name +
                              " but the pods do not fit on the nodes: " + pr.reason;
            PendingReason tmp;
            tmp.kind = K::kUnschedulable;
            tmp.cluster_queue = cq.name;
            FillMessage(*this, w, &tmp);
            size_t cut = tmp.message.find("; ");
            if (cut != std::string::npos) pending.message += tmp.message.substr(cut);
          }
          // Reservations with nodes (docs/semantics.md §11): the quota
          // fits, the nodes do not; it reserves where the holders' ends
          // make room.
          w.beyond_window = -1;
          if (any_reservation_config && pr.outcome == placement::PlaceOutcome::kUnschedulable) {
            if (Reserve(en.wl, en.cq, now)) {
              for (const Reservation& res : reservations) {
                if (res.wl == en.wl) w.PendingMut().message += ReservationText(*this, res);
              }
            } else {
              w.PendingMut().message += BeyondWindowText(*this, w);
            }
          }
          Park(en.wl, &parked_placement);
          if (cq.sticky == en.wl) cq.sticky = kNoWl;
          w.waiting_preemption = false;
          changed = true;
          continue;
        }
      }
      if (a.mode == Mode::kFit) {
        // Admit.
        w.usage = a.usage;
        Dequeue(en.wl);
        w.info.state = WorkloadState::kAdmitted;
        w.ClearPending();
        w.info.admitted_at = now;
        w.admit_seq = next_admit_seq++;
        w.info.admission_seq = w.admit_seq;
        w.waiting_preemption = false;
        AdmitUsage(en.wl);
        ArmExpiry(en.wl);
        if (!reservations.empty()) {
          for (size_t i = 0; i < reservations.size(); ++i) {
            if (reservations[i].wl != en.wl) continue;
            DropReservation(i);
            break;
          }
        }
        if (opts.admission_fair_sharing && w.lq.valid()) {
          double alpha = 1.0;
          if (opts.afs.usage_half_life > 0)
            alpha = 1.0 - std::pow(0.5, static_cast<double>(opts.afs.usage_sampling_interval) /
                                            static_cast<double>(opts.afs.usage_half_life));
          for (const auto& [res, amt] : w.ns_usage)
            lqs[w.lq].afs_penalty[res] += alpha * static_cast<double>(amt) / 1000.0;
        }
        if (cq.sticky == en.wl) cq.sticky = kNoWl;
        pending_count--;
        admitted_count++;
        result->admitted.push_back(w.info.key);
        result->admitted_ids.push_back(en.wl);
        changed = true;
        continue;
      }
    }
    if ((a.mode == Mode::kPreempt || a.mode == Mode::kReclaim) && !en.targets.empty()) {
      // With nodes, quota victims that would not free a placement give way
      // to victims that free both quota and nodes, when there are such.
      if (Placed(a) && !en.targets[0].nodes && !PlacesWithout(*this, en.wl, a, en.targets)) {
        std::vector<Target> both = PlacementTargets(*this, en.wl, en.cq, a);
        if (!both.empty()) en.targets = std::move(both);
      }
      bool overlap = false;
      for (const Target& t : en.targets) overlap = overlap || is_victim(t.id);
      if (overlap) {
        result->decisions--;
        continue;  // skipped; retried next cycle
      }
      // A wasted preemption is skipped (Kueue scheduler.go, `fits`): the
      // preemptor must fit once this round's victims and its own targets are
      // gone, given what earlier preemptors of the round reserved.
      {
        auto remove = [&](WlId v, int sign) { tree.AddUsage(cqs[wls[v].cq].node, wls[v].usage, sign); };
        for (WlId v : round_victims) remove(v, -1);
        for (const Target& t : en.targets) remove(t.id, -1);
        const bool fits = FitsNow(*this, en.cq, a.usage);
        for (const Target& t : en.targets) remove(t.id, +1);
        for (WlId v : round_victims) remove(v, +1);
        if (!fits) {
          result->decisions--;
          continue;  // skipped; retried next cycle
        }
      }
      std::vector<std::string> names;
      names.reserve(en.targets.size());
      if (!w.waiting_preemption || cq.sticky != en.wl) quiet = false;
      for (const Target& t : en.targets) {
        names.push_back(wls[t.id].info.key);
        if (wls[t.id].info.state == WorkloadState::kAdmitted) {
          quiet = false;
          std::string msg = "preempted by " + w.info.key + " (ClusterQueue " + cq.name + ") to " +
                            (t.reason == EvictionReason::kInClusterQueue ? "admit a higher-priority workload"
                             : t.reason == EvictionReason::kInCohortFairSharing ? "restore the fair share"
                                                                                : "reclaim quota");
          if (t.nodes) msg += " (its pods need this workload's nodes)";
          Evict(t.id, t.reason, en.wl, now, &result->evictions,
                msg + " [" + EvictionReasonName(t.reason) + "]");
          changed = true;
        }
        wls[t.id].victim_stamp = stamp;
        round_victims.push_back(t.id);
      }
      tree.AddUsage(cq.node, a.usage, +1);
      overlay_gen = ++overlay_counter;
      push_temp(cq.node, a.usage);
      w.waiting_preemption = true;
      cq.sticky = en.wl;
      w.SetPendingKind(K::kWaitingForEvictions);
      PendingReason& waiting = w.PendingMut();
      waiting.cluster_queue = cq.name;
      waiting.would_preempt = std::move(names);
      w.pending_ref = a.ref;
      w.ref_dirty = true;
      w.msg_dirty = true;
      continue;
    }
    // Inadmissible this cycle.
    bool preempt_mode = a.mode == Mode::kNoCandidates || a.mode == Mode::kPreempt || a.mode == Mode::kReclaim;
    // Reservations (docs/semantics.md §11): a head short of quota that
    // qualifies holds back what frees up first (with nodes, where its pods
    // are then placed). Computed before this cycle holds back part of its
    // request below.
    w.beyond_window = -1;
    if (any_reservation_config &&
        (preempt_mode || a.kind == K::kInsufficientQuota || a.kind == K::kNone || a.kind == K::kNotYetTried))
      Reserve(en.wl, en.cq, now);
    if (w.waiting_preemption || cq.sticky == en.wl) quiet = false;
    if (preempt_mode && cq.spec->preemption.reclaim_within_cohort != ReclaimWithinCohortPolicy::kAny) {
      quiet = false;  // it holds back quota for the rest of the cycle
      FrAmounts reserve;
      const auto& node = tree.node(cq.node);
      // Kueue scheduler.go quotaResourcesToReserve: what the queue may still
      // take without borrowing; when the assignment borrows, up to its
      // borrowing limit (all of the request without a limit).
      for (const auto& [fr, amt] : a.usage) {
        Amount r;
        if (a.borrow_level > 0) {
          r = node.borrowing_limit[fr] == kNoLimit
                  ? amt
                  : std::min(amt, node.nominal[fr] + node.borrowing_limit[fr] - node.usage[fr]);
        } else {
          r = std::min(amt, node.nominal[fr] - node.usage[fr]);
        }
        if (r > 0) reserve.emplace_back(fr, r);
      }
      if (!reserve.empty()) {
        tree.AddUsage(cq.node, reserve, +1);
        overlay_gen = ++overlay_counter;
        push_temp(cq.node, reserve);
      }
    }
    SetInadmissibleReason(w, a, cq.name);
    w.waiting_preemption = false;
    if (cq.sticky == en.wl) cq.sticky = kNoWl;
    if (cq.spec->queueing_strategy == QueueingStrategy::kBestEffortFIFO) {
      SoftPark(en.wl, tree.Root(cq.node));
      changed = true;
      NoteParkedHead(en.cq);
      if (quiet) quiet_parked[idx] = kQuietParked;
      ++parked_here;
    }
  }
  // The cycle-only usage is gone: the tree is back to the committed state.
  for (size_t i = 0; i < temp_n; ++i) tree.AddUsage(temp[i].first, temp[i].second, -1);
  temp_n = 0;
  overlay_gen = 0;
  quiet_valid = quiet;
  if (quiet) {
    quiet_n = n;
    // Each parked entry added one decision; the others add this again in
    // every round that repeats them.
    quiet_net = result->decisions - decisions_before - parked_here;
  }
  return changed || bulk > 0;
}

void EngineImpl::NominateHead(WlId h, CqId c, Entry* en) {
  Wl& w = wls[h];
  w.reason_stamp = bulk_counter;
  w.reason_stale = false;
  en->wl = h;
  en->cq = c;
  en->bound = false;
  protect_min = -1;
  protect_delay = false;
  flavor_assigner->Nominate(*this, h, c, &en->assignment, &en->targets);
  w.protected_until = protect_min;
  w.delay_held = protect_delay;
}

// Blocked runs (EngineOptions::fast_rounds). A round whose only entry was
// the head of a BestEffortFIFO queue, held back by a reservation and parked,
// changed nothing else: no admission, eviction or cycle-only usage, the same
// reservations. While Schedule goes on, the next round therefore starts from
// the same state and has one entry again, the next head of the same queue
// (parking activates no other queue). Each next head that such a round would
// also hold back is decided here as that round would decide it: the same
// nomination, reason and park, counted as a decision and a round. The first
// head that would do anything else (be admitted, fail, preempt) is left to
// the next round, which nominates it again. Rounds count against max_rounds
// as Schedule counts them (it adds this round once it returns).
void EngineImpl::ParkBlockedRun(CqId c, CycleResult* result) {
  if (!opts.fast_rounds || !opts.multi_admission || opts.fair_sharing || opts.admission_fair_sharing ||
      cluster)
    return;
  CqRt& cq = cqs[c];
  const NodeId root = tree.Root(cq.node);
  Entry& en = blocked_run_entry;
  while (result->rounds + 1 < opts.max_rounds) {
    if (cq.held || ActiveQueued(cq) == 0) return;
    const WlId h = Head(c);
    if (h == kNoWl) return;
    Wl& w = wls[h];
    if (w.waiting_preemption || cq.sticky == h) return;
    NominateHead(h, c, &en);
    if (protect_min > now) protect_wakeups.emplace(protect_min, root);
    const Assignment& a = en.assignment;
    if (a.mode != Mode::kFit || !FitsNow(*this, c, a.usage)) return;
    const Reservation* r = DelayedReservation(h, c, a, now);
    if (r == nullptr) return;
    result->decisions++;
    result->rounds++;
    SetBlockedByReservation(w, cq, *r, RemainingEstimate(w, c), now, *this);
    SoftPark(h, root);
  }
}

// A fast round (EngineOptions::fast_rounds). The round before it changed
// nothing but parking some of its heads in place: no admission, eviction,
// hold-back, reservation or change of a waiting preemptor. The quota tree,
// the admitted workloads and every head that was not parked are then as
// they were, so each such head would be nominated the same way, take the
// same place in the order and do the same again (fail for a capacity that a
// waiting preemptor holds, re-issue a preemption whose victims are already
// being evicted, fail). Only the queues that parked their head have a new
// one. When every new head fails in a way that changes nothing for the
// others (no assignment that fits, no preemption targets, no hold-back of
// quota), this round is the last one again plus those failures: they are
// recorded as the round would record them, and the round is over. Otherwise
// (or when some other head differs) it returns false and the round runs in
// full, reusing nothing.
bool EngineImpl::TryFastRound(CycleResult* result, bool* changed) {
  std::vector<Entry>& all = round_entries;
  fast_heads.clear();
  size_t k = 0;
  for (CqId c : cqs.ids()) {
    const bool had = k < quiet_n && all[k].cq == c;
    WlId h = kNoWl;
    if (!cqs[c].held && ActiveQueued(cqs[c]) != 0) h = Head(c);
    if (!had) {
      if (h != kNoWl) return false;
      continue;
    }
    if (quiet_parked[k] == kQuietKept) {
      if (h != all[k].wl) return false;
    } else {
      fast_heads.push_back({k, h});
    }
    ++k;
  }
  if (k != quiet_n) return false;
  // Nominate the new heads; every one must fail without effect on others.
  // A head that fails the bound is known to (BoundFails) and is not
  // nominated: it is parked as BulkPark parks, its reason built on read.
  const bool bound_skip = opts.bulk_park;
  bool all_bound = !fast_heads.empty();
  if (fast_entries.size() < fast_heads.size()) fast_entries.resize(fast_heads.size());
  for (size_t i = 0; i < fast_heads.size(); ++i) {
    FastHead& fh = fast_heads[i];
    if (fh.wl == kNoWl) {
      all_bound = false;
      continue;
    }
    const CqId c = all[fh.entry].cq;
    const CqRt& cq = cqs[c];
    if (wls[fh.wl].waiting_preemption || cq.sticky == fh.wl) return false;
    fh.bound = bound_skip && BoundFails(fh.wl, c);
    if (fh.bound) continue;
    all_bound = false;
    Entry& en = fast_entries[i];
    NominateHead(fh.wl, c, &en);
    const Mode m = en.assignment.mode;
    if (m == Mode::kFit) return false;
    const bool preempt_mode = m == Mode::kNoCandidates || m == Mode::kPreempt || m == Mode::kReclaim;
    if ((m == Mode::kPreempt || m == Mode::kReclaim) && !en.targets.empty()) return false;
    if (preempt_mode && cq.spec->preemption.reclaim_within_cohort != ReclaimWithinCohortPolicy::kAny)
      return false;
  }
  // The round: the heads that did not change do what they did; the new
  // ones fail (RunRound's "inadmissible this cycle").
  for (size_t e = 0; e < quiet_n; ++e) {
    if (quiet_parked[e] == kQuietKept) wls[all[e].wl].reason_stamp = bulk_counter;
  }
  int64_t entries = static_cast<int64_t>(quiet_n);
  int64_t net = quiet_net;
  int64_t parked = 0;
  *changed = false;
  for (size_t i = 0; i < fast_heads.size(); ++i) {
    const FastHead& fh = fast_heads[i];
    if (fh.wl == kNoWl) {  // the queue has no head left: no entry
      --entries;
      quiet_parked[fh.entry] = kQuietGone;
      continue;
    }
    if (fh.bound) {
      ParkBound(fh.wl, all[fh.entry].cq);
      all[fh.entry].wl = fh.wl;
      quiet_parked[fh.entry] = kQuietParked;
      *changed = true;
      ++parked;
      continue;
    }
    Entry& en = fast_entries[i];
    Wl& w = wls[en.wl];
    const CqRt& cq = cqs[en.cq];
    w.beyond_window = -1;
    SetInadmissibleReason(w, en.assignment, cq.name);
    w.waiting_preemption = false;
    const bool parks = cq.spec->queueing_strategy == QueueingStrategy::kBestEffortFIFO;
    if (parks) {
      SoftPark(en.wl, tree.Root(cq.node));
      NoteParkedHead(en.cq);
      *changed = true;
      ++parked;
    } else {
      ++net;  // it stays the head and fails again in the next round
    }
    std::swap(all[fh.entry], en);
    quiet_parked[fh.entry] = parks ? kQuietParked : kQuietKept;
  }
  if (entries == 0) {  // RunRound ends before counting anything
    quiet_valid = false;
    return true;
  }
  result->decisions += net + parked;
  // Further rounds in which every queue that parks has a next head that
  // fails the bound: each is this round again (the same heads kept, one
  // head parked per such queue), recorded here without a return to
  // Schedule. It stops where a next head must be nominated, a queue runs
  // out, BulkPark could park something (bulk_idle cleared) or the rounds
  // reach max_rounds.
  if (all_bound && bulk_idle) {
    // BoundFails, with what it reads of the queue computed once: nothing
    // the loop does changes a queue's shape or the quota tree.
    for (FastHead& fh : fast_heads) {
      const CqId c = all[fh.entry].cq;
      const CqRt& cq = cqs[c];
      fh.shape = cq.spec->preemption.reclaim_within_cohort == ReclaimWithinCohortPolicy::kAny && BulkShape(c);
      fh.caps.clear();
    }
    auto cap_of = [this](FastHead& fh, CqId c, ResourceId res) {
      for (const auto& [r, v] : fh.caps) {
        if (r == res) return v;
      }
      const Amount cap = BulkCap(c, res);
      fh.caps.emplace_back(res, cap);
      return cap;
    };
    auto fails = [&](FastHead& fh, CqId c) {
      if (!fh.shape) return false;
      for (const auto& [res, a] : wls[fh.wl].min_req) {
        if (a > cap_of(fh, c, res)) {
          fh.fail_res = res;
          fh.fail_req = a;
          return true;
        }
      }
      return false;
    };
    // Several such rounds at once, where every queue's next heads are
    // members of its LocalQueue's run that fail the bound on the run's
    // resource: counted from run_req, without reading the workloads, and
    // parked by moving the run's park boundary. Returns the rounds done.
    auto run_rounds = [&]() -> int64_t {
      const int64_t room = opts.max_rounds - 1 - result->rounds;
      if (room < 1) return 0;
      for (FastHead& fh : fast_heads) {
        const CqId c = all[fh.entry].cq;
        const CqRt& cq = cqs[c];
        if (!fh.shape || cq.held || cq.sticky != kNoWl || cq.lqs.size() != 1 || !cq.root.valid()) return 0;
        LqRt& q = lqs[cq.lqs[0]];
        const uint64_t ep = root_epoch[cq.root];
        if (!q.run_valid || q.run_dirty || !q.run_res.valid() || cq.bulk_epoch == ep) return 0;
        const QueueKey* first = FirstActive(cq.lqs[0]);
        if (first == nullptr) return 0;
        const size_t from = q.run_epoch == ep ? std::max(q.run_pn, q.run_first) : q.run_first;
        const size_t p = RunIndexOf(q, from, first);
        if (p >= q.run_at.size()) return 0;
        fh.run_p = p;
        fh.run_cap = cap_of(fh, c, q.run_res);
      }
      // The rounds in which every queue's next head is a member that fails:
      // as many as the shortest such stretch of members.
      int64_t k = room;
      for (FastHead& fh : fast_heads) {
        const LqRt& q = lqs[cqs[all[fh.entry].cq].lqs[0]];
        int64_t failing = 0;
        (void)q.FirstFit(fh.run_p, fh.run_cap, &failing);
        k = std::min(k, failing);
        if (k < 1) return 0;
      }
      for (FastHead& fh : fast_heads) {
        const LqRt& q = lqs[cqs[all[fh.entry].cq].lqs[0]];
        fh.run_i = q.PastLive(fh.run_p, k);
        fh.run_last = fh.run_i - 1;
      }
      for (FastHead& fh : fast_heads) {
        const CqId c = all[fh.entry].cq;
        LqRt& q = lqs[cqs[c].lqs[0]];
        const uint64_t ep = root_epoch[cqs[c].root];
        if (q.run_epoch != ep) {
          // The members before the head were tried on their own in this
          // epoch: they keep their reasons.
          q.run_epoch = ep;
          q.run_stamp = ++bulk_counter;
          q.run_stale_from = fh.run_p;
        }
        ParkRunBefore(q, c, fh.run_i, k);  // run_i: past the k-th member parked
        all[fh.entry].wl = q.run_at[fh.run_last]->id;
      }

      result->rounds += static_cast<int32_t>(k);
      result->decisions += k * (net + static_cast<int64_t>(fast_heads.size()));
      for (const FastHead& fh : fast_heads) NoteParkedHead(all[fh.entry].cq);
      return k;
    };
    while (result->rounds + 2 <= opts.max_rounds) {
      if (run_rounds() > 0) {
        if (!bulk_idle) break;
        continue;
      }
      bool next_all = true;
      for (FastHead& fh : fast_heads) {
        const CqId c = all[fh.entry].cq;
        const CqRt& cq = cqs[c];
        fh.wl = cq.held || ActiveQueued(cq) == 0 ? kNoWl : Head(c);
        if (fh.wl == kNoWl || wls[fh.wl].waiting_preemption || cq.sticky == fh.wl || !fails(fh, c)) {
          next_all = false;
          break;
        }
      }
      if (!next_all) break;
      for (const FastHead& fh : fast_heads) {
        ParkBound(fh.wl, all[fh.entry].cq);
        RecordRunMember(all[fh.entry].cq, fh.wl, fh.fail_res, fh.fail_req);
        all[fh.entry].wl = fh.wl;
      }
      result->rounds++;
      result->decisions += net + static_cast<int64_t>(fast_heads.size());
      if (!bulk_idle) break;
    }
  }
  size_t out = 0;
  for (size_t e = 0; e < quiet_n; ++e) {
    if (quiet_parked[e] == kQuietGone) continue;
    if (out != e) {
      std::swap(all[out], all[e]);
      quiet_parked[out] = quiet_parked[e];
    }
    ++out;
  }
  quiet_n = out;
  quiet_net = net;
  return true;
}

void EngineImpl::ParkBound(WlId h, CqId c) {
  Wl& w = wls[h];
  w.beyond_window = -1;
  w.waiting_preemption = false;
  SoftPark(h, tree.Root(cqs[c].node));
  w.reason_stale = true;
  NoteParkedHead(c);
}

void EngineImpl::SetStrictFifoReasons() {
  // O(queues): the entries behind each head get their reason when read
  // (StrictBehind), not here, so that a call costs nothing per queued
  // workload. A queue held, without a head or whose head was not tried
  // keeps its last record, as its entries kept their last reason before.
  for (CqId c : cqs.ids()) {
    CqRt& cq = cqs[c];
    if (cq.spec->queueing_strategy != QueueingStrategy::kStrictFIFO || cq.held) continue;
    WlId h = Head(c);
    if (h == kNoWl) continue;
    const PendingReason::Kind hk = wls[h].pending_kind;
    if (hk == K::kNotYetTried || hk == K::kNone) continue;
    cq.strict_head = h;
    cq.strict_head_key = wls[h].info.key;
    cq.strict_bound = enqueue_counter;
  }
}

bool EngineImpl::StrictBehind(WlId id) const {
  const Wl& w = wls[id];
  if (!w.in_heap || !w.lq.valid() || w.info.state != WorkloadState::kPending) return false;
  const CqId c = lqs[w.lq].cq;
  if (!c.valid()) return false;
  const CqRt& cq = cqs[c];
  return cq.strict_head != kNoWl && id != cq.strict_head && w.enq_seq <= cq.strict_bound &&
         cq.spec->queueing_strategy == QueueingStrategy::kStrictFIFO;
}

}  // namespace artel::core
