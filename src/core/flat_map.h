// FlatMap<K, V>: a sorted vector of (key, value) with the map operations the
// model types use.
//
// A workload's spec holds a handful of small maps (requests, labels,
// annotations, node selector, environment), most of them empty. A std::map
// costs 48 bytes empty and one 70-80 byte node per entry; a FlatMap costs 24
// bytes empty and one contiguous allocation for all its entries (issue 17
// §3: memory per pending workload). Lookups are binary searches; inserts
// and erases move the entries after them, which is cheap at these sizes.
//
// Iteration is in key order, as for std::map, and yields std::pair<K, V>
// (the key is not const: do not change it through an iterator).
//
// Thread-safety: a plain value.
#pragma once

#include <algorithm>
#include <initializer_list>
#include <map>
#include <stdexcept>
#include <utility>
#include <vector>

namespace artel::core {

template <typename K, typename V>
class FlatMap {
 public:
  using key_type = K;
  using mapped_type = V;
  using value_type = std::pair<K, V>;
  using Storage = std::vector<value_type>;
  using iterator = typename Storage::iterator;
  using const_iterator = typename Storage::const_iterator;
  using size_type = size_t;

  FlatMap() = default;
  FlatMap(std::initializer_list<value_type> init) { Assign(init.begin(), init.end()); }
  template <typename It>
  FlatMap(It first, It last) {
    Assign(first, last);
  }
  // From a std::map (already sorted and unique).
  FlatMap(const std::map<K, V>& m) : v_(m.begin(), m.end()) {}  // NOLINT(google-explicit-constructor)
  FlatMap& operator=(std::initializer_list<value_type> init) {
    v_.clear();
    Assign(init.begin(), init.end());
    return *this;
  }
  FlatMap& operator=(const std::map<K, V>& m) {
    v_.assign(m.begin(), m.end());
    return *this;
  }
  // A std::map with the same entries, for code written against one.
  std::map<K, V> ToMap() const { return std::map<K, V>(v_.begin(), v_.end()); }

  iterator begin() { return v_.begin(); }
  iterator end() { return v_.end(); }
  const_iterator begin() const { return v_.begin(); }
  const_iterator end() const { return v_.end(); }
  const_iterator cbegin() const { return v_.cbegin(); }
  const_iterator cend() const { return v_.cend(); }
  size_t size() const { return v_.size(); }
  bool empty() const { return v_.empty(); }
  void clear() { v_.clear(); }

  template <typename Q>
  iterator lower_bound(const Q& k) {
    return std::lower_bound(v_.begin(), v_.end(), k, Less{});
  }
  template <typename Q>
  const_iterator lower_bound(const Q& k) const {
    return std::lower_bound(v_.begin(), v_.end(), k, Less{});
  }
  template <typename Q>
  iterator find(const Q& k) {
    auto it = lower_bound(k);
    return it != v_.end() && !(k < it->first) ? it : v_.end();
  }
  template <typename Q>
  const_iterator find(const Q& k) const {
    auto it = lower_bound(k);
    return it != v_.end() && !(k < it->first) ? it : v_.end();
  }
  template <typename Q>
  size_t count(const Q& k) const {
    return find(k) != v_.end() ? 1 : 0;
  }
  template <typename Q>
  bool contains(const Q& k) const {
    return find(k) != v_.end();
  }
  const V& at(const K& k) const {
    auto it = find(k);
    if (it == v_.end()) throw std::out_of_range("FlatMap::at");
    return it->second;
  }
  V& at(const K& k) {
    auto it = find(k);
    if (it == v_.end()) throw std::out_of_range("FlatMap::at");
    return it->second;
  }
  V& operator[](const K& k) { return try_emplace(k).first->second; }
  V& operator[](K&& k) { return try_emplace(std::move(k)).first->second; }

  template <typename KK, typename... Args>
  std::pair<iterator, bool> try_emplace(KK&& k, Args&&... args) {
    auto it = lower_bound(k);
    if (it != v_.end() && !(k < it->first)) return {it, false};
    const auto pos = it - v_.begin();
    Grow();
    it = v_.emplace(v_.begin() + pos, std::piecewise_construct, std::forward_as_tuple(std::forward<KK>(k)),
                    std::forward_as_tuple(std::forward<Args>(args)...));
    return {it, true};
  }
  template <typename KK, typename VV>
  std::pair<iterator, bool> emplace(KK&& k, VV&& v) {
    return try_emplace(std::forward<KK>(k), std::forward<VV>(v));
  }
  std::pair<iterator, bool> insert(const value_type& kv) { return try_emplace(kv.first, kv.second); }
  std::pair<iterator, bool> insert(value_type&& kv) {
    return try_emplace(std::move(kv.first), std::move(kv.second));
  }
  template <typename It>
  void insert(It first, It last) {
    for (; first != last; ++first) insert(value_type(*first));
  }
  template <typename KK, typename VV>
  std::pair<iterator, bool> insert_or_assign(KK&& k, VV&& v) {
    auto r = try_emplace(std::forward<KK>(k));
    r.first->second = std::forward<VV>(v);
    return r;
  }
  template <typename Q>
  size_t erase(const Q& k) {
    auto it = find(k);
    if (it == v_.end()) return 0;
    v_.erase(it);
    return 1;
  }
  iterator erase(const_iterator it) { return v_.erase(it); }
  iterator erase(iterator it) { return v_.erase(it); }

  friend bool operator==(const FlatMap& a, const FlatMap& b) { return a.v_ == b.v_; }
  friend bool operator==(const FlatMap& a, const std::map<K, V>& b) {
    return a.v_.size() == b.size() &&
           std::equal(a.v_.begin(), a.v_.end(), b.begin(), b.end(),
                      [](auto& x, auto& y) { return x.first == y.first && x.second == y.second; });
  }

 private:
  struct Less {
    template <typename Q>
    bool operator()(const value_type& e, const Q& k) const {
      return e.first < k;
    }
  };
  // Exact growth while small: these maps are built once and rarely change,
  // and spare capacity would stay for the workload's lifetime. Larger ones
  // grow by half, so that building one stays linear.
  void Grow() {
    if (v_.size() == v_.capacity()) v_.reserve(v_.size() < 8 ? v_.size() + 1 : v_.size() + v_.size() / 2);
  }
  template <typename It>
  void Assign(It first, It last) {
    for (; first != last; ++first) insert_or_assign(first->first, first->second);
  }

  Storage v_;
};

}  // namespace artel::core
