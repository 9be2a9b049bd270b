// Per-ClusterQueue summaries of its admitted workloads that the preemption
// search and BulkPark ask for on every nomination: the workloads in
// preemption-candidate order, the largest usage of one workload per
// flavor-resource, and the lowest priority. Kept up to date on admission,
// eviction and release (engine_usage.cc), rebuilt from the queue's admitted
// list only after a configuration change or when a release removes the last
// holder of an extreme value, so that a nomination does not walk every
// admitted workload of the cohort.
//
// Candidate order (Kueue's preemption candidate ordering, restricted to one
// queue; docs/semantics.md): evicting first, then lower priority, later
// admission (time, then the admission sequence), lower uid. Within one
// queue every candidate of one search has the same group and the same
// `own` flag (preemption.cc, LazyOrder), and Admission Fair Sharing, whose
// usage also orders candidates, does not use this index.
//
// Thread-safety: none; part of CqRt.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/workload_state.h"

namespace artel::core {

struct CandKey {
  bool evicting = false;
  int32_t priority = 0;
  Time admitted_at = 0;
  uint64_t admit_seq = 0;
  uint64_t uid = 0;
  WlId id = kNoWl;

  static CandKey Of(const Wl& w, WlId id) {
    return {w.info.state == WorkloadState::kEvicting,
            w.info.priority,
            w.info.admitted_at,
            w.admit_seq,
            w.info.uid,
            id};
  }
  // Earlier in preemption order.
  bool operator<(const CandKey& o) const {
    if (evicting != o.evicting) return evicting;
    if (priority != o.priority) return priority < o.priority;
    if (admitted_at != o.admitted_at) return admitted_at > o.admitted_at;
    if (admit_seq != o.admit_seq) return admit_seq > o.admit_seq;
    return uid < o.uid;
  }
};

class AdmittedIndex {
 public:
  // Everything is rebuilt on next use (configuration changes).
  void Invalidate() {
    order_valid_ = false;
    largest_valid_ = false;
    min_valid_ = false;
  }

  // `w` (handle `id`) joined the queue's admitted workloads.
  void OnAdmit(const Wl& w, WlId id) {
    if (order_valid_) {
      const CandKey k = CandKey::Of(w, id);
      order_.insert(std::upper_bound(order_.begin(), order_.end(), k), k);
    }
    if (largest_valid_) {
      for (const auto& [fr, a] : w.usage) AddLargest(fr, a);
    }
    if (min_valid_) {
      if (min_count_ == 0 || w.info.priority < min_prio_) {
        min_prio_ = w.info.priority;
        min_count_ = 1;
      } else if (w.info.priority == min_prio_) {
        ++min_count_;
      }
    }
  }

  // `w` became Evicting (it stays admitted until released).
  void OnEvict(const Wl& w, WlId id) {
    if (!order_valid_ || !Erase(id)) return;
    const CandKey k = CandKey::Of(w, id);
    order_.insert(std::upper_bound(order_.begin(), order_.end(), k), k);
  }

  // `w` left the queue's admitted workloads (its usage still set).
  void OnRelease(const Wl& w, WlId id) {
    if (order_valid_) Erase(id);
    if (largest_valid_) {
      for (const auto& [fr, a] : w.usage) {
        auto it = Find(fr);
        if (it != largest_.end() && a == it->amount && --it->count == 0) largest_valid_ = false;
      }
    }
    if (min_valid_ && w.info.priority == min_prio_ && --min_count_ == 0) min_valid_ = false;
  }

  template <typename Wls>
  const std::vector<CandKey>& Order(const std::vector<WlId>& admitted, const Wls& wls) {
    if (!order_valid_) {
      order_.clear();
      for (WlId id : admitted) order_.push_back(CandKey::Of(wls[id], id));
      std::sort(order_.begin(), order_.end());
      order_valid_ = true;
    }
    return order_;
  }

  // The largest usage of `fr` by one admitted workload (0 when none uses it).
  template <typename Wls>
  Amount Largest(FrId fr, const std::vector<WlId>& admitted, const Wls& wls) {
    if (!largest_valid_) {
      largest_.clear();
      for (WlId id : admitted) {
        for (const auto& [f, a] : wls[id].usage) AddLargest(f, a);
      }
      largest_valid_ = true;
    }
    auto it = Find(fr);
    return it == largest_.end() ? 0 : std::max<Amount>(it->amount, 0);
  }

  // The lowest priority of an admitted workload; INT32_MAX when none.
  template <typename Wls>
  int32_t MinPriority(const std::vector<WlId>& admitted, const Wls& wls) {
    if (!min_valid_) {
      min_prio_ = std::numeric_limits<int32_t>::max();
      min_count_ = 0;
      for (WlId id : admitted) {
        const int32_t p = wls[id].info.priority;
        if (p < min_prio_) {
          min_prio_ = p;
          min_count_ = 1;
        } else if (p == min_prio_) {
          ++min_count_;
        }
      }
      min_valid_ = true;
    }
    return min_count_ == 0 ? std::numeric_limits<int32_t>::max() : min_prio_;
  }

 private:
  struct Max {
    FrId fr;
    Amount amount = 0;
    int32_t count = 0;  // admitted workloads holding `amount`
  };
  std::vector<Max>::iterator Find(FrId fr) {
    return std::find_if(largest_.begin(), largest_.end(), [fr](const Max& m) { return m.fr == fr; });
  }
  // One more admitted workload uses `a` of `fr`.
  void AddLargest(FrId fr, Amount a) {
    auto it = Find(fr);
    if (it == largest_.end()) {
      largest_.push_back({fr, a, 1});
    } else if (a > it->amount) {
      *it = {fr, a, 1};
    } else if (a == it->amount) {
      ++it->count;
    }
  }
  bool Erase(WlId id) {
    auto it = std::find_if(order_.begin(), order_.end(), [id](const CandKey& k) { return k.id == id; });
    if (it == order_.end()) return false;
    order_.erase(it);
    return true;
  }

  std::vector<CandKey> order_;
  bool order_valid_ = false;
  std::vector<Max> largest_;
  bool largest_valid_ = false;
  int32_t min_prio_ = 0;
  int32_t min_count_ = 0;  // admitted workloads at min_prio_
  bool min_valid_ = false;
};

}  // namespace artel::core
