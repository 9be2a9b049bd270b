#include "core/admission_order.h"

#include <algorithm>

#include "core/fair_sharing.h"

namespace artel::core {
namespace {

class ClassicalOrder final : public AdmissionOrder {
 public:
  void Begin(const EngineImpl& e, const std::vector<Entry>& entries, size_t n) override {
    // Sort small keys, not the entries themselves.
    order_.resize(n);
    for (uint32_t i = 0; i < order_.size(); ++i) order_[i] = i;
    const auto& wls = e.wls;
    std::sort(order_.begin(), order_.end(), [&](uint32_t ia, uint32_t ib) {
      const Entry& a = entries[ia];
      const Entry& b = entries[ib];
      // Preemptors whose victims are being evicted go first, so that the
      // capacity they freed is not taken back by the victims themselves.
      bool wa = wls[a.wl].waiting_preemption, wb = wls[b.wl].waiting_preemption;
      if (wa != wb) return wa;
      if (a.assignment.borrow_level != b.assignment.borrow_level)
        return a.assignment.borrow_level < b.assignment.borrow_level;
      const Wl& x = wls[a.wl];
      const Wl& y = wls[b.wl];
      if (x.info.priority != y.info.priority) return x.info.priority > y.info.priority;
      if (x.info.queued_at != y.info.queued_at) return x.info.queued_at < y.info.queued_at;
      return x.info.uid < y.info.uid;
    });
  }

  int32_t Next(EngineImpl&, const std::vector<Entry>&, size_t step, const std::vector<char>&) override {
    return static_cast<int32_t>(order_[step]);
  }

 private:
  std::vector<uint32_t> order_;  // reused across cycles
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
