// Admission order: the order in which one scheduling cycle tries its
// entries, the heads nominated by the ClusterQueues (one each). The cycle
// (EngineImpl::RunRound, engine_cycle.cc) asks for the next entry at each
// step; an AdmissionOrder is made once per engine from its EngineOptions.
//
// Classical order (fair sharing off; Kueue's entry ordering in
// pkg/scheduler/scheduler.go): the entries are sorted once per cycle by
//  1. preemptors whose victims are being evicted first, so that the capacity
//     they freed is not taken back by the victims themselves;
//  2. lower borrowing level (no borrowing first);
//  3. higher priority;
//  4. earlier queue time;
//  5. lower uid (the final tie-break; the order is total).
//
// Fair-sharing order (Kueue's pkg/scheduler/fair_sharing_iterator.go): one
// pick per step over the live quota tree, so that admissions made earlier in
// the cycle count:
//  1. a preemptor whose victims are being evicted, if any is left: the one
//     with the highest priority, then the lowest uid;
//  2. otherwise the winner of the tournament (fair_sharing.h,
//     FairSharingPickNext): lowest dominant resource share with the entry
//     added, non-borrowing first; ties by priority, queue time, uid.
//
// Thread-safety: none; an AdmissionOrder belongs to one EngineImpl and
// keeps per-cycle buffers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/engine_impl.h"

namespace artel::core {

class AdmissionOrder {
 public:
  virtual ~AdmissionOrder() = default;
  // Starts a cycle over entries[0, n).
  virtual void Begin(const EngineImpl& e, const std::vector<Entry>& entries, size_t n) = 0;
  // The index of the entry to try at `step` (0, 1, ... below n), or -1 when
  // none is left. `done[i]` marks the entries tried so far; only the first
  // done.size() == n entries are live.
  virtual int32_t Next(EngineImpl& e, const std::vector<Entry>& entries, size_t step,
                       const std::vector<char>& done) = 0;
};

// The classical order, or the fair-sharing order when options.fair_sharing.
std::unique_ptr<AdmissionOrder> MakeAdmissionOrder(const EngineOptions& options);

}  // namespace artel::core
