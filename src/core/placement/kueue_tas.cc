// Kueue's topology assignment for one pod set (BestFit); kueue_tas.h
// describes the algorithm. Moved from cluster.cc.
#include "core/placement/kueue_tas.h"

#include <algorithm>

namespace artel::core::placement::internal {

namespace {

struct KDom {
  int64_t pods = 0, slices = 0;
  std::vector<int32_t> children;  // domains of the next level
};

}  // namespace

std::optional<KueueTasAssignment> AssignKueueTas(
    const Topo& t, const std::vector<int32_t>& nodes,
    const std::vector<std::map<std::string, std::string>>& node_labels, const std::vector<int64_t>& leaf_pods,
    const KueueTasRequest& request) {
  const auto L = static_cast<int32_t>(t.levels.size());
  const int64_t count = request.count;
  const int64_t size = request.slice_size;
  const int32_t S = request.slice_level;
  const bool required = request.required;
  const bool unconstrained = request.unconstrained;
  const int32_t R = request.level;
  std::vector<std::vector<KDom>> lv(L);
  for (int32_t l = 0; l < L; ++l) lv[l].resize(t.domain_label[l].size());
  for (size_t dom = 0; dom < leaf_pods.size(); ++dom) lv[L - 1][dom].pods = leaf_pods[dom];
  for (int32_t l = 0; l + 1 < L; ++l) {
    std::vector<char> linked(lv[l + 1].size(), 0);
    for (int32_t node : nodes) {
      int32_t p = t.node_domain[l][node], ch = t.node_domain[l + 1][node];
      if (p < 0 || ch < 0 || linked[ch]) continue;
      linked[ch] = 1;
      lv[l][p].children.push_back(ch);
    }
  }
  for (int32_t l = L - 1; l >= 0; --l) {
    for (KDom& k : lv[l]) {
      if (l < L - 1) {
        k.pods = 0;
        for (int32_t ch : k.children) k.pods += lv[l + 1][ch].pods;
      }
      if (l == S) {
        k.slices = k.pods / size;
      } else if (l < S) {
        k.slices = 0;
        for (int32_t ch : k.children) k.slices += lv[l + 1][ch].slices;
      }
    }
  }
  // A domain's label values from the widest level down, for ties.
  auto path = [&](int32_t l, int32_t dom) {
    std::string out;
    int32_t node = t.domain_nodes[l][dom].front();
    for (int32_t i = 0; i <= l; ++i) {
      out += node_labels[node].at(t.levels[i]);
      out += '\x1f';
    }
    return out;
  };
  auto sorted = [&](int32_t l, std::vector<int32_t> doms) {
    std::vector<std::string> keys(lv[l].size());
    for (int32_t dom : doms) keys[dom] = path(l, dom);
    std::sort(doms.begin(), doms.end(), [&](int32_t a, int32_t b) {
      const KDom& x = lv[l][a];
      const KDom& y = lv[l][b];
      if (x.slices != y.slices) return x.slices > y.slices;
      if (x.pods != y.pods) return x.pods < y.pods;
      return keys[a] < keys[b];
    });
    return doms;
  };
  // The tightest of doms[from..] that holds `need` (the first on ties), or doms[from].
  auto best_fit = [&](int32_t l, const std::vector<int32_t>& doms, size_t from, int64_t need, bool slices) {
    auto st = [&](int32_t dom) { return slices ? lv[l][dom].slices : lv[l][dom].pods; };
    size_t best = from;
    for (size_t i = from; i < doms.size(); ++i) {
      if (st(doms[i]) >= need && st(doms[i]) < st(doms[best])) best = i;
    }
    return doms[best];
  };
  using Assigned = std::vector<std::pair<int32_t, int64_t>>;  // (domain, pods)
  // Spreads `n` pods (in slices of `sz` when `slices`) over `doms` (sorted).
  auto spread = [&](int32_t l, const std::vector<int32_t>& doms, int64_t n, int64_t sz, bool slices,
                    Assigned* out) {
    int64_t rem = slices ? n / sz : n;
    if (rem == 0) return true;
    for (size_t i = 0; i < doms.size(); ++i) {
      int64_t st = slices ? lv[l][doms[i]].slices : lv[l][doms[i]].pods;
      if (st >= rem) {
        out->emplace_back(best_fit(l, doms, i, rem, slices), slices ? rem * sz : rem);
        return true;
      }
      if (st > 0) out->emplace_back(doms[i], slices ? st * sz : st);
      rem -= st;
    }
    return false;
  };
  const int64_t slice_count = count / size;
  // Phase 1: the level and domains that hold every slice.
  int32_t level = R;
  std::vector<int32_t> fit;
  while (true) {
    std::vector<int32_t> all(lv[level].size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int32_t>(i);
    std::vector<int32_t> doms = sorted(level, std::move(all));
    if (doms.empty()) return std::nullopt;
    if (lv[level][doms[0]].slices >= slice_count) {
      fit.push_back(best_fit(level, doms, 0, slice_count, true));
      break;
    }
    if (required) return std::nullopt;
    if (level > 0 && !unconstrained) {
      --level;
      continue;
    }
    int64_t rem = slice_count;
    for (size_t i = 0; rem > 0 && i < doms.size(); ++i) {
      int32_t dom = doms[i];
      if (lv[level][dom].slices >= rem) dom = best_fit(level, doms, i, rem, true);
      fit.push_back(dom);
      rem -= lv[level][dom].slices;
    }
    if (rem > 0) return std::nullopt;
    break;
  }
  Assigned cur;
  if (!spread(level, fit, count, size, true, &cur)) return std::nullopt;
  // Phase 2: down to the lowest level.
  for (; level < std::min(L - 1, S); ++level) {
    std::vector<int32_t> kids;
    for (const auto& [dom, n] : cur) {
      for (int32_t ch : lv[level][dom].children) kids.push_back(ch);
    }
    Assigned next;
    if (!spread(level + 1, sorted(level + 1, std::move(kids)), count, size, true, &next)) return std::nullopt;
    cur = std::move(next);
  }
  for (; level < L - 1; ++level) {
    Assigned next;
    for (const auto& [dom, n] : cur) {
      if (!spread(level + 1, sorted(level + 1, lv[level][dom].children), n, 1, false, &next))
        return std::nullopt;
    }
    cur = std::move(next);
  }
  return cur;
}

}  // namespace artel::core::placement::internal
