// StableVector: the engine's store of workloads (EngineImpl::wls).
//
// Thread-safety: none.
#pragma once

#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

namespace artel::core {

// A vector whose elements never move: storage grows by fixed-size chunks, so
// growing never copies the (large) elements already stored and references
// stay valid. Indexing is one shift and one mask.
template <typename T, size_t kChunkBits = 10>
class StableVector {
 public:
  static constexpr size_t kChunk = size_t{1} << kChunkBits;
  T& operator[](size_t i) { return (*chunks_[i >> kChunkBits])[i & (kChunk - 1)]; }
  const T& operator[](size_t i) const { return (*chunks_[i >> kChunkBits])[i & (kChunk - 1)]; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T& push_back(T&& v) {
    if ((size_ & (kChunk - 1)) == 0 && (size_ >> kChunkBits) == chunks_.size()) {
      chunks_.push_back(std::make_unique<std::vector<T>>());
      chunks_.back()->reserve(kChunk);
    }
    std::vector<T>& c = *chunks_[size_ >> kChunkBits];
    c.push_back(std::move(v));
    ++size_;
    return c.back();
  }

  template <typename V, typename Self>
  class Iter {
   public:
    Iter(Self* v, size_t i) : v_(v), i_(i) {}
    V& operator*() const { return (*v_)[i_]; }
    Iter& operator++() {
      ++i_;
      return *this;
    }
    bool operator!=(const Iter& o) const { return i_ != o.i_; }

   private:
    Self* v_;
    size_t i_;
  };
  Iter<T, StableVector> begin() { return {this, 0}; }
  Iter<T, StableVector> end() { return {this, size_}; }
  Iter<const T, const StableVector> begin() const { return {this, 0}; }
  Iter<const T, const StableVector> end() const { return {this, size_}; }

 private:
  std::vector<std::unique_ptr<std::vector<T>>> chunks_;
  size_t size_ = 0;
};

}  // namespace artel::core
