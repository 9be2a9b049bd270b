#include "core/placement/topology_policy.h"

#include <algorithm>
#include <tuple>

namespace artel::core::placement {

namespace {

class BestFit final : public DomainChooser {
 public:
  void Order(std::vector<DomainCandidate>* c) const override {
    std::sort(c->begin(), c->end(), [](const DomainCandidate& a, const DomainCandidate& b) {
      return std::make_tuple(!a.full, a.capacity, !a.in_use, a.domain) <
             std::make_tuple(!b.full, b.capacity, !b.in_use, b.domain);
    });
  }
};

}  // namespace

std::unique_ptr<DomainChooser> MakeBestFitDomainChooser() { return std::make_unique<BestFit>(); }

std::vector<int32_t> LevelsToTry(int32_t required, int32_t preferred, int32_t num_levels) {
  std::vector<int32_t> out;
  if (preferred >= 0 && preferred < num_levels) {
    int32_t widest = required >= 0 ? required : 0;
    for (int32_t l = preferred; l >= widest; --l) out.push_back(l);
    if (required >= 0 && preferred < required) out = {required};  // a preference wider than the requirement
  } else if (required >= 0 && required < num_levels) {
    out.push_back(required);
  }
  return out;
}

}  // namespace artel::core::placement
