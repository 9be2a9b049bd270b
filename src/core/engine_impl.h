// EngineImpl: the internal state of an `Engine` (core/engine.h), and the
// helpers its parts share.
//
// Internal header: only src/core includes it. The state is split by seam:
// workloads (workload_state.h), queues, flavors and namespaces
// (queue_state.h), nominations (assignment.h). The policies are chosen once
// per engine from its EngineOptions, each behind an interface in its own
// header: the admission order (admission_order.h), flavor assignment
// (flavor_assigner.h) and preemption (preemption_policy.h; the classical
// algorithm in preemption.h, fair sharing in fair_sharing.h). They read and
// temporarily modify this state and restore every simulated change before
// returning. The engine's code is split the same way (engine_config.cc,
// engine_queues.cc, engine_usage.cc, engine_time.cc, engine_placement.cc,
// engine_cycle.cc, engine_restore.cc, engine_explain.cc; engine.cc holds
// the public Engine's calls).
//
// Thread-safety: none.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/assignment.h"
#include "core/engine.h"
#include "core/id.h"
#include "core/interner.h"
#include "core/key_index.h"
#include "core/placement/placement.h"
#include "core/queue_state.h"
#include "core/quota_tree.h"
#include "core/stable_vector.h"
#include "core/workload_state.h"

namespace artel::core {

// The policies (see above), declared in their own headers.
class AdmissionOrder;
class FlavorAssigner;
class PreemptionPolicy;
struct PreemptionScratch;                            // preemption.cc
void DeletePreemptionScratch(PreemptionScratch* s);  // preemption.cc

class EngineImpl {
 public:
  explicit EngineImpl(EngineOptions o);  // engine.cc
  ~EngineImpl();

  EngineOptions opts;
  // The policies, made from opts (engine.cc).
  std::unique_ptr<AdmissionOrder> admission_order;
  std::unique_ptr<FlavorAssigner> flavor_assigner;
  std::unique_ptr<PreemptionPolicy> preemption;
  Config config;
  BasicInterner<ResourceId> resources;
  Interner namespaces;
  BasicInterner<FlavorId> flavors_by_name;
  IdVector<FlavorId, FlavorRt> flavors;
  QuotaTree tree;
  IdVector<CqId, CqRt> cqs;
  std::unordered_map<std::string, CqId> cq_index;
  std::unordered_map<std::string, NodeId> cohort_node;  // cohort name -> tree node
  IdVector<NodeId, CqId> cq_of_node;                    // tree node -> ClusterQueue, invalid for cohorts
  IdVector<LqId, LqRt> lqs;
  std::unordered_map<std::string, LqId> lq_index;  // "ns/name"
  IdVector<NamespaceId, NsRt> nss;
  // Per namespace id: (LocalQueue name, index), to resolve without building keys.
  IdVector<NamespaceId, std::vector<std::pair<std::string, LqId>>> lqs_of_ns;
  std::unordered_map<std::string, int32_t> priority_classes;

  StableVector<Wl> wls;
  KeyIndex wl_index;  // key -> id of the live workload under it
  // The key of workload `id`, for wl_index.
  auto KeyOf() const {
    return [this](WlId id) -> const std::string& { return wls[id].info.key; };
  }
  std::vector<WlId> free_ids;  // forgotten slots, reused by Submit
  bool reused_slots = false;   // a slot was reused: slot order is no longer submission order
  size_t queued_count = 0;     // workloads in any LocalQueue heap
  bool any_drain = false;      // some ClusterQueue has drain_possible
  IdVector<NodeId, std::vector<CqId>> root_cqs;  // per tree node (roots used): its ClusterQueues
  IdVector<NodeId, uint64_t> root_epoch;         // per tree node (roots used): bumped by Unpark
  IdVector<NodeId, int64_t> root_parked;  // per tree node: soft-parked workloads under the current epoch
  int64_t parked_total = 0;               // sum of root_parked
  uint64_t epoch_counter = 0;
  uint64_t enqueue_counter = 0;     // QueueKey::enq_seq
  uint64_t bulk_counter = 0;        // CqRt::bulk_stamp, Wl::reason_stamp
  bool any_resource_quota = false;  // the configuration has ResourceQuotas
  std::vector<CqId> bulk_fails;     // BulkPark scratch: a tree's active queues none of whose workloads fit
  std::vector<WlId> orphans;        // unresolved queue / namespace / inactive
  uint64_t next_uid = 1;
  size_t sized_resources = 0;
  // Pod sets submitted lately, with the requests Submit derived from them:
  // a workload submitted with equal pod sets shares both arrays instead of
  // holding copies (the replicas of a Job, a job array, a trace's jobs of
  // one shape; issue 17 §3). Round robin; a miss costs one hash.
  struct RecentPodSets {
    uint64_t hash = 0;
    SharedVec<PodSetSpec> spec;
    SharedVec<PodSetReq> reqs;
  };
  std::array<RecentPodSets, 16> recent_pod_sets;
  uint32_t recent_pod_sets_next = 0;
  // Preemption answers (GetTargets' memo) stay valid while both are
  // unchanged: state_gen is bumped by changes that may alter any tree's
  // answers (configuration, nodes, ended protections), tree_gen[root] by
  // committed usage changes in that quota tree (admission, release,
  // eviction), which leave every other tree's answers as they were.
  uint64_t state_gen = 1;
  IdVector<NodeId, uint64_t> tree_gen;  // per tree node (roots used)
  void BumpTreeGen(CqId cq) {
    if (cq.valid() && cqs[cq].root.valid())
      ++tree_gen[cqs[cq].root];
    else
      ++state_gen;
  }
  // Non-zero while cycle-only usage (preemptors waiting, reservations) is in
  // the tree; unique per overlay so memoised answers never leak across.
  uint64_t overlay_gen = 0;
  uint64_t overlay_counter = 0;  // resources.size() the per-resource arrays were last sized for
  uint64_t next_admit_seq = 1;
  size_t pending_count = 0, admitted_count = 0;
  std::vector<Eviction> pending_evictions;  // drains issued outside Schedule
  // Admitted workloads with a maximum runtime, by when it runs out.
  std::set<std::pair<Time, WlId>> expiries;
  // Minimum runtime and preemption delay (docs/semantics.md §11).
  Time now = 0;                 // of the Schedule call in progress (or the last)
  bool any_protection = false;  // some queue or class sets a minimum runtime or delay
  struct ClassLimits {
    std::optional<Time> min_runtime, reclaim_min_runtime;
  };
  std::unordered_map<std::string, ClassLimits> class_limits;  // priority classes that set any
  // While a nomination runs: the earliest end of a protection it skipped.
  Time protect_min = -1;
  bool protect_delay = false;
  // (time, quota-tree root): a protection skipped by a parked workload ends;
  // the tree's parked workloads are retried then.
  std::set<std::pair<Time, NodeId>> protect_wakeups;
  // Reservations (docs/semantics.md §11), at most one per quota-tree root.
  struct Reservation {
    WlId wl = kNoWl;
    CqId cq;
    NodeId root;
    Time start = 0;
    FrAmounts usage;            // the assignment that fits once the holders are gone
    std::vector<WlId> holders;  // admitted workloads whose end frees it, in end order
    // The usage of the holders that still hold it, summed per ClusterQueue
    // (DelayedReservation takes it out of the tree per queue rather than per
    // holder), valid while state_gen and the tree's tree_gen are as recorded.
    std::vector<std::pair<NodeId, FrAmounts>> held_by_queue;
    uint64_t held_state_gen = 0, held_tree_gen = 0;
    // With nodes: the gang placed at the start (on the nodes with the
    // holders gone) and the nodes that placement used, by name.
    bool nodes = false;
    placement::GangRequest gang;
    std::vector<std::string> node_names;
  };
  std::vector<Reservation> reservations;
  bool any_reservation_config = false;

  // Placement (issue 3): null without nodes.
  std::vector<placement::NodeSpec> node_specs;
  std::unique_ptr<placement::Cluster> cluster;
  std::vector<WlId> parked_placement;  // waiting for node capacity
  // Flavors bound to nodes (with nodes and placement_matches_labels), built
  // by RebuildCluster, so once per configuration or nodes change: per flavor
  // id, the ready nodes (Cluster indices) whose labels carry every one of the
  // flavor's nodeLabels, and, when there is none, why (flavor_nodes_why).
  IdVector<FlavorId, std::vector<int32_t>> flavor_nodes;
  IdVector<FlavorId, std::string> flavor_nodes_why;
  // Set by Engine::RestoreOnNodes for the Restore it makes: per pod set,
  // the (node, count) pairs to place the pods on.
  const std::vector<std::vector<std::pair<std::string, int32_t>>>* restore_pins = nullptr;
  uint64_t nodes_gen = 1;  // bumped by RebuildCluster; invalidates Wl::node_fit

  // --- helpers shared by the policies (engine_*.cc) ---
  std::string Key(WlId id) const { return wls[id].info.key; }
  NamespaceId NsId(const std::string& ns);
  void AdmitUsage(WlId id);
  void ReleaseUsage(WlId id);
  void Enqueue(WlId id);
  void Dequeue(WlId id);
  void Unpark(NodeId root);
  // Parked in place: on its own (SoftPark) or in bulk (BulkPark).
  bool SoftParked(const Wl& w) const {
    if (w.soft_parked && w.park_epoch == root_epoch[w.park_root]) return true;
    if (!w.in_heap || !w.lq.valid() || !lqs[w.lq].cq.valid()) return false;
    const CqRt& cq = cqs[lqs[w.lq].cq];
    return (cq.root.valid() && cq.bulk_epoch == root_epoch[cq.root] && w.enq_seq < cq.bulk_seq) ||
           RunParked(w);
  }
  // Parked in place as a member of its LocalQueue's run (LqRt::run_end).
  bool RunParked(const Wl& w) const {
    if (!w.in_heap || !w.lq.valid()) return false;
    const LqRt& q = lqs[w.lq];
    return q.run_valid && q.root.valid() && q.run_epoch == root_epoch[q.root] && q.InRunParked(*w.heap_it);
  }
  // BulkPark's walk: `first`, the first active entry of `q` (of ClusterQueue
  // `c`), is a member of q's run parked in this epoch at or
  // after its park boundary; parks it and the members after it, from
  // `run_req`, while they fail the bound `cap` on the run's resource.
  // Returns how many it parked (0 when `first` is not such a member).
  int64_t AdvanceRun(LqRt& q, CqId c, const QueueKey* first, Amount cap);
  // The index of `first`, an entry of `q`'s heap, among its run's members
  // from index `from` on; run_at.size() when it is not one (or lies beyond
  // a few live members).
  static size_t RunIndexOf(const LqRt& q, size_t from, const QueueKey* first);
  // Parks, by moving q's park boundary to index `boundary`, the members
  // before it; `added` of them were not parked yet (counted as parked now).
  void ParkRunBefore(LqRt& q, CqId c, size_t boundary, int64_t added);
  // TryFastRound's loop: head `h` of ClusterQueue `c`, parked by ParkBound
  // for failing the bound on `res` with its least request `req`, is
  // recorded as the next member of its LocalQueue's run (a run is started
  // from the entries before it, all parked in this epoch); nothing more is
  // parked by this.
  void RecordRunMember(CqId c, WlId h, ResourceId res, Amount req);
  // BulkPark's walk of `only`, the only active ClusterQueue of tree `root`,
  // with one LocalQueue: parks its run again where its leading members
  // still fail the bound; returns how many it parked.
  int64_t ReparkRun(CqId only, NodeId root);
  // The first resource on which `w`, queued in `c`, fails the bound (its
  // least request, in `req`, exceeds BulkCap), or none.
  ResourceId BoundFailure(CqId c, const Wl& w, Amount* req);
  // Parks in bulk, without examining them, the queued workloads that no
  // cycle before the next release in their cohort tree could admit
  // (docs/semantics.md §3, step 5); returns how many it parked.
  int64_t BulkPark();
  // True when no workload queued in ClusterQueue `c` could be admitted or
  // preempt for in the current state, nor in any tighter one.
  bool AllQueuedFail(CqId c) const;
  // BulkPark's shape conditions beyond the policies (engine_queues.cc):
  // no admitted workload of `c` has a lower priority than one it queues, so
  // that withinClusterQueue LowerPriority finds no candidate for any of them;
  // every queued workload of `c` must borrow (its least request of some
  // resource exceeds the queue's unused quota over all flavors); `c` never
  // borrows (a borrowing limit of zero on every flavor-resource).
  bool NoLowerPriorityAdmitted(CqId c);
  // BulkPark's shape for ClusterQueue `c`: BestEffortFIFO, classical
  // preemption whose policies let a workload that fails the bound (BulkCap)
  // find no candidate, and a root or a direct child of its root cohort.
  // The configuration's part is CqRt::bulk_shape (StaticBulkShape).
  bool BulkShape(CqId c);
  int8_t StaticBulkShape(CqId c) const;
  // A fast round's bound (TryFastRound): `h`, queued in `c`, cannot be
  // admitted or preempt for in the current state nor in any tighter one,
  // and failing holds nothing back (reclaimWithinCohort Any), so that its
  // nomination can be skipped.
  bool BoundFails(WlId h, CqId c);
  // Parks head `h` of `c` that fails the bound, in a fast round, without a
  // nomination: its reason is built on read (ReasonStale).
  void ParkBound(WlId h, CqId c);
  bool QueuedMustBorrow(CqId c) const;
  bool NeverBorrows(CqId c) const;
  // What ClusterQueue `c` could get of resource `res` now (AllQueuedFail's bound).
  Amount BulkCap(CqId c, ResourceId res) const;
  Amount ComputeBulkCap(CqId c, ResourceId res) const;  // BulkCap without its cache
  // True when the pending reason of `id` predates a bulk park that covered it.
  bool ReasonStale(WlId id) const;
  void SoftPark(WlId id, NodeId root);
  // The first entry of a LocalQueue's heap that is not soft-parked, or null.
  const QueueKey* FirstActive(LqId lq);
  // Queued workloads of a ClusterQueue that are not parked in place.
  int32_t ActiveQueued(const CqRt& cq) const {
    return cq.queued - (cq.parked_epoch == root_epoch[cq.root] ? cq.parked_n : 0);
  }
  void Resolve(WlId id);
  WlId Head(CqId cq) { return Head(cq, nullptr); }
  // Also its heap entry in `*key` (nullptr for a sticky head, returned
  // without one).
  WlId Head(CqId cq, const QueueKey** key);
  double AfsUsage(LqId lq) const;
  void AfsSample(Time now);
  Status ApplyConfig(const Config& c);
  void Evict(WlId id, EvictionReason reason, WlId preemptor, Time now, std::vector<Eviction>* out,
             const std::string& msg);
  bool RunRound(Time now, CycleResult* result, bool fresh_snapshot);
  // Runs the round that follows a quiet one without nominating or ordering
  // the heads that did not change: true when it could (the round's changes
  // and decisions are then in `*changed` and `result`).
  bool TryFastRound(CycleResult* result, bool* changed);
  // Nominates `h`, the head of `c`, into `en` (a cycle's entry), noting the
  // protections its preemption search skipped.
  void NominateHead(WlId h, CqId c, Entry* en);
  // After the only entry of a round, the head of BestEffortFIFO queue `c`,
  // was held back by a reservation and parked: the next heads of `c` that
  // the following rounds would each take alone and hold back the same way,
  // decided here (engine_cycle.cc).
  void ParkBlockedRun(CqId c, CycleResult* result);
  Entry blocked_run_entry;  // ParkBlockedRun's nomination
  void RebuildUsage();
  void Materialize(WlId id);
  // A workload parked in bulk without an examination (ReasonStale) gets the
  // reason a cycle would give it now: its kind and ReasonRef, not its text.
  void RefreshStaleReason(WlId id);
  // Behind its StrictFIFO queue's head as of the last Schedule call (its
  // reason, BlockedByStrictFIFO, is written when read).
  bool StrictBehind(WlId id) const;
  Status RebuildCluster();
  // Fills flavor_nodes / flavor_nodes_why from the cluster (RebuildCluster).
  void BindFlavorsToNodes();
  // Places every admitted pod of `id` per assignment `a`; on success commits
  // and records the placement. Returns the placement outcome.
  placement::PlaceResult PlaceWorkload(WlId id, const Assignment& a);
  // With nodes: whether pods of flavor `f` are placed on them
  // (EngineOptions::place_topology_flavors_only), and whether assignment `a`
  // is (some flavor of it is).
  bool FlavorPlaced(FlavorId f) const;
  bool Placed(const Assignment& a) const;
  // The gang request PlaceWorkload places: `g` is filled and the result is
  // kPlaced (an empty placement), or kInfeasible with the reason.
  placement::PlaceResult BuildGang(WlId id, const Assignment& a, placement::GangRequest& g) const;
  void ReleasePlacement(WlId id);
  // Rebuilds info.placements (names, UUIDs) from the committed placement.
  void FillPlacementInfo(WlId id);
  void SetStrictFifoReasons();
  // Where pod set `ps` pays for its GPU slices in `cq`: nvidia.com/gpu's id,
  // or none when it asks for none or the queue covers a slicing resource the
  // pod set requests (then that resource is its quota).
  ResourceId ImplicitGpuRes(const CqRt& cq, const PodSetReq& ps) const {
    if (ps.implicit_gpu <= 0 || HintIsQuota(cq, ps)) return {};
    return cq.gpu_res;
  }
  // Whether `cq` covers a slicing-hint resource that pod set `ps` requests
  // (then that resource, not nvidia.com/gpu, is its GPU quota).
  bool HintIsQuota(const CqRt& cq, const PodSetReq& ps) const {
    for (const auto& [res, amt] : ps.per_pod) {
      if (amt != 0 && GroupOf(cq, res) >= 0 && IsSlicingHint(resources.Name(res))) return true;
    }
    return false;
  }
  int32_t GroupOf(const CqRt& cq, ResourceId res) const {
    return cq.group_of_res.contains(res) ? cq.group_of_res[res] : -1;
  }
  LqId FindLq(NamespaceId ns, const std::string& name) const;
  // Moves parked workloads of `list` back into their queues.
  void UnparkList(std::vector<WlId>* list);
  void Park(WlId id, std::vector<WlId>* list);
  Status FinishId(WlId id);
  // Time limits (docs/semantics.md §11).
  // The maximum runtime of `w` in ClusterQueue `cq` (-1: none known).
  std::optional<Time> MaxRuntime(const Wl& w, CqId cq) const;
  // (Re)computes the expiry of an Admitted workload; drops it otherwise.
  void ArmExpiry(WlId id);
  void DisarmExpiry(WlId id);
  // Evicts every Admitted workload whose maximum runtime ran out by `now`.
  void ExpireRuntimes(Time now, std::vector<Eviction>* out);
  // True when admitted workload `victim` may not be preempted now for an
  // eviction with `reason` (its minimum runtime); records when it may.
  bool Protected(WlId victim, EvictionReason reason);
  // True (recording when it ends) while `wl` waits out its preemption delay.
  bool DelayHeld(WlId wl);
  // Reservations: the runtime estimate of `w` in `cq` (its maximum runtime,
  // else the queue's default estimate), minus the time it has used.
  std::optional<Time> RemainingEstimate(const Wl& w, CqId cq) const;
  // Computes (or refreshes) the reservation of inadmissible head `wl`;
  // false when it does not qualify or its start cannot be estimated.
  bool Reserve(WlId wl, CqId cq, Time now);
  // The reservation that admitting `wl` (usage `usage` in `cq`) now would
  // delay, or null.
  const Reservation* DelayedReservation(WlId wl, CqId cq, const Assignment& a, Time now);
  // Drops reservation `i`; what it held back may be used again.
  void DropReservation(size_t i);
  Status CompleteEvictionId(WlId id);

  // Scratch buffers reused across rounds (no allocation per cycle).
  std::vector<Entry> round_entries;
  std::vector<std::pair<NodeId, FrAmounts>> round_temp;  // the first round_temp_n in use (RunRound)
  size_t round_temp_n = 0;
  uint64_t round_stamp = 0;
  std::vector<WlId> round_victims;                // this round's victims, in order
  std::vector<GroupReq> assign_reqs;              // AssignFlavors
  FrAmounts assign_fr;                            // AssignFlavors
  std::vector<int32_t> nominate_counts;           // Nominate
  std::vector<Target> assign_targets;             // KueueAssign: GetTargets' answer per flavor
  std::vector<NodeId> bound_queues, bound_stack;  // preemption.cc bound
  FrAmounts bound_remaining;                      // preemption.cc bound
  struct BoundRemoval {                           // preemption.cc bound: usage taken out, to put back
    NodeId queue;
    FrId fr;
    Amount amount;
  };
  std::vector<BoundRemoval> bound_removed;
  std::vector<char> round_done;
  // Fast rounds (EngineOptions::fast_rounds; engine_cycle.cc, TryFastRound):
  // the last round of this Schedule call changed nothing but parking heads
  // that failed, so `round_entries[0, quiet_n)` (in ClusterQueue order) are
  // what the next round would nominate again, except for the queues whose
  // head was parked (`quiet_parked`). `quiet_net` is the decisions that the
  // entries not parked add to each such round.
  bool quiet_valid = false;
  size_t quiet_n = 0;
  // Per entry of the quiet round: kept (the same head again), parked (its
  // queue has a new head) or, within a fast round, gone (no head left).
  static constexpr char kQuietKept = 0, kQuietParked = 1, kQuietGone = 2;
  std::vector<char> quiet_parked;
  int64_t quiet_net = 0;
  struct FastHead {  // a queue's next head in a fast round
    size_t entry;    // its index in round_entries
    WlId wl;
    bool bound = false;  // it fails the bound (BoundFails): parked without a nomination
    // TryFastRound's loop: whether the queue has the bound's shape, and its
    // BulkCap per resource, fixed while the loop parks (no usage changes).
    bool shape = false;
    std::vector<std::pair<ResourceId, Amount>> caps;
    ResourceId fail_res;  // the resource its head failed on, and its least request of it
    Amount fail_req = 0;
    size_t run_p = 0;     // its head's index in its LocalQueue's run (rounds from the run)
    size_t run_i = 0;     // past the last member those rounds park
    size_t run_last = 0;  // that member
    Amount run_cap = 0;   // BulkCap of the run's resource
  };
  std::vector<FastHead> fast_heads;
  std::vector<Entry> fast_entries;  // their nominations
  // In a run of quiet rounds: the last BulkPark call parked nothing, and no
  // round since made a queue inactive or changed the head of a tree's only
  // active queue, so BulkPark would park nothing again (NoteParkedHead).
  bool bulk_idle = false;
  // A head of `c` was parked in place in a quiet round: clears `bulk_idle`
  // when that changes what BulkPark sees.
  void NoteParkedHead(CqId c) {
    if (!bulk_idle) return;
    if (ActiveQueued(cqs[c]) == 0) {
      bulk_idle = false;
      return;
    }
    int active = 0;
    for (CqId m : root_cqs[cqs[c].root]) {
      if (!cqs[m].held && ActiveQueued(cqs[m]) != 0 && ++active > 1) return;
    }
    bulk_idle = false;
  }
  // Whether fast rounds may be used with these options and configuration.
  bool FastRoundsApply() const {
    return opts.fast_rounds && opts.multi_admission && !opts.fair_sharing && !opts.admission_fair_sharing &&
           !cluster && !any_reservation_config && !any_protection && reservations.empty();
  }
  // The quota search's buffers (preemption.cc), made on first use.
  std::unique_ptr<PreemptionScratch, void (*)(PreemptionScratch*)> preemption_scratch{
      nullptr, &DeletePreemptionScratch};
};

}  // namespace artel::core
