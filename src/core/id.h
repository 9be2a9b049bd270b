// Tag-typed ids for the engine's dense index spaces.
//
// The engine numbers its namespaces, flavors, resources, queues and tree
// nodes densely from 0 and keeps their state in vectors. With plain int32_t
// indices, an index of one space used in another (`cqs[lq]`) compiles and
// misbehaves. `Id<Tag>` wraps the int32_t of one space, and `IdVector<IdT,
// T>` is a vector indexed only by that id type, so such a slip does not
// compile. Both cost nothing at run time. A default id is invalid (-1), as
// the plain indices used -1 for "none".
//
// Thread-safety: plain values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace artel::core {

template <typename Tag>
class Id {
 public:
  constexpr Id() = default;
  constexpr explicit Id(int32_t value) : value_(value) {}

  constexpr int32_t value() const { return value_; }
  constexpr bool valid() const { return value_ >= 0; }

  friend constexpr bool operator==(Id a, Id b) = default;
  friend constexpr auto operator<=>(Id a, Id b) = default;

 private:
  int32_t value_ = -1;
};

// The ids 0 .. n-1 of one space, for `for (IdT id : v.ids())`.
template <typename IdT>
class IdRange {
 public:
  class iterator {
   public:
    explicit constexpr iterator(int32_t i) : i_(i) {}
    constexpr IdT operator*() const { return IdT(i_); }
    constexpr iterator& operator++() {
      ++i_;
      return *this;
    }
    friend constexpr bool operator==(iterator a, iterator b) = default;

   private:
    int32_t i_;
  };
  explicit constexpr IdRange(size_t n) : n_(static_cast<int32_t>(n)) {}
  constexpr iterator begin() const { return iterator(0); }
  constexpr iterator end() const { return iterator(n_); }

 private:
  int32_t n_;
};

// A vector whose elements are indexed by `IdT` only.
template <typename IdT, typename T>
class IdVector {
 public:
  IdVector() = default;
  explicit IdVector(size_t n, const T& value = T()) : items_(n, value) {}

  T& operator[](IdT id) { return items_[static_cast<size_t>(id.value())]; }
  const T& operator[](IdT id) const { return items_[static_cast<size_t>(id.value())]; }
  // Whether `id` is valid and names an element.
  bool contains(IdT id) const { return id.valid() && static_cast<size_t>(id.value()) < items_.size(); }

  size_t size() const { return items_.size(); }
  // The ids of the elements, in order.
  IdRange<IdT> ids() const { return IdRange<IdT>(items_.size()); }
  bool empty() const { return items_.empty(); }
  void clear() { items_.clear(); }
  void resize(size_t n) { items_.resize(n); }
  void resize(size_t n, const T& value) { items_.resize(n, value); }
  void assign(size_t n, const T& value) { items_.assign(n, value); }
  // Appends `item` and returns its id.
  IdT push_back(T item) {
    items_.push_back(std::move(item));
    return IdT(static_cast<int32_t>(items_.size() - 1));
  }

  auto begin() { return items_.begin(); }
  auto end() { return items_.end(); }
  auto begin() const { return items_.begin(); }
  auto end() const { return items_.end(); }

 private:
  std::vector<T> items_;
};

// The engine's index spaces (core/engine_impl.h): namespaces index
// EngineImpl::nss, LocalQueues EngineImpl::lqs, ClusterQueues
// EngineImpl::cqs, ResourceFlavors EngineImpl::flavors (and the quota
// tree's flavor-resource table), resources the per-resource arrays (and
// the same table); quota-tree nodes (ClusterQueues and cohorts) and
// flavor-resource pairs index the QuotaTree (core/quota_tree.h).
using NamespaceId = Id<struct NamespaceTag>;
using LqId = Id<struct LocalQueueTag>;
using CqId = Id<struct ClusterQueueTag>;
using FlavorId = Id<struct FlavorTag>;
using ResourceId = Id<struct ResourceTag>;
using NodeId = Id<struct TreeNodeTag>;
using FrId = Id<struct FlavorResourceTag>;

}  // namespace artel::core
