#include "core/admission_order.h"

#include <algorithm>
#include <tuple>

#include "core/fair_sharing.h"

namespace artel::core {
namespace {

class ClassicalOrder final : public AdmissionOrder {
 public:
  void Begin(const EngineImpl&, const std::vector<Entry>& entries, size_t n) override {
    // Sort small keys (read from the workloads when the cycle took them,
    // Entry), not the entries themselves.
    keys_.resize(n);
    for (uint32_t i = 0; i < n; ++i) {
      const Entry& en = entries[i];
      keys_[i] = {!en.waiting,
                  en.assignment.borrow_level,
                  -static_cast<int64_t>(en.priority),
                  en.queued_at,
                  en.uid,
                  i};
    }
    // Preemptors whose victims are being evicted go first, so that the
    // capacity they freed is not taken back by the victims themselves; then
    // the lower borrowing level, the higher priority, the earlier queue
    // time, the older workload.
    std::sort(keys_.begin(), keys_.end(), [](const Key& a, const Key& b) {
      return std::tie(a.not_waiting, a.borrow_level, a.neg_priority, a.queued_at, a.uid) <
             std::tie(b.not_waiting, b.borrow_level, b.neg_priority, b.queued_at, b.uid);
    });
  }

  int32_t Next(EngineImpl&, const std::vector<Entry>&, size_t step, const std::vector<char>&) override {
    return static_cast<int32_t>(keys_[step].index);
  }

 private:
  struct Key {
    bool not_waiting;
    int32_t borrow_level;
    int64_t neg_priority;
    Time queued_at;
    uint64_t uid;
    uint32_t index;
  };
  std::vector<Key> keys_;  // reused across cycles
};

class FairSharingOrder final : public AdmissionOrder {
 public:
  void Begin(const EngineImpl&, const std::vector<Entry>&, size_t) override {}

  int32_t Next(EngineImpl& e, const std::vector<Entry>& entries, size_t,
               const std::vector<char>& done) override {
    const auto& wls = e.wls;
    int32_t pick = -1;
    for (size_t i = 0; i < done.size(); ++i) {  // waiting preemptors first, as in the classical order
      if (done[i] || !wls[entries[i].wl].waiting_preemption) continue;
      const Wl& x = wls[entries[i].wl];
      if (pick < 0 || x.info.priority > wls[entries[pick].wl].info.priority ||
          (x.info.priority == wls[entries[pick].wl].info.priority &&
           x.info.uid < wls[entries[pick].wl].info.uid))
        pick = static_cast<int32_t>(i);
    }
    if (pick < 0) pick = FairSharingPickNext(e, entries, done);
    return pick;
  }
};

}  // namespace

std::unique_ptr<AdmissionOrder> MakeAdmissionOrder(const EngineOptions& options) {
  if (options.fair_sharing) return std::make_unique<FairSharingOrder>();
  return std::make_unique<ClassicalOrder>();
}

}  // namespace artel::core
