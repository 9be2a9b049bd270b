// SharedVec<T>: an array of T that copies share until one of them is changed.
//
// A workload's pod sets are most of its spec, and workloads of one job kind
// (the replicas of a Kubernetes Job, a job array, the jobs of a trace with
// the same shape) submit the same pod sets again and again. The engine makes
// such workloads share one array (Engine::Submit; issue 17 §3: memory per
// pending workload), and a copy of a WorkloadSpec or WorkloadInfo shares
// the array with the original instead of copying it.
//
// The handle is one pointer; the array lives in one block with its reference
// count, size and capacity in front of the elements, so an array nobody
// shares costs no more than a std::vector. (std::shared_ptr<T[]> would not
// do: libstdc++'s make_shared of an array rounds its control block up to a
// whole element, which for a pod set doubles the cost.) Reads are const and
// never copy:
//
//   for (const PodSetSpec& ps : spec.pod_sets) ...        read
//   spec.pod_sets.push_back(ps);                           append
//   spec.pod_sets.mut(0).count = 4;                        change one element
//   for (PodSetSpec& ps : spec.pod_sets.mut_all()) ...     change each
//
// Any write first gives this handle its own block when the block is shared
// (copy on write). A reference from mut() stays valid until the next write
// through this handle; it must not be held across a copy of the handle,
// since the copy would share what the reference changes.
//
// Thread-safety: as std::shared_ptr's. The reference count is atomic (the
// one use of <atomic> in src/core, allowed by tests/layering for this file:
// the engine hands out copies of WorkloadInfo that callers keep and destroy
// on their own threads), so copies of one handle may be read, copied and
// destroyed on different threads; writes to one handle need the same care as
// writes to a std::vector.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <new>
#include <span>
#include <stdexcept>
#include <utility>
#include <vector>

namespace artel::core {

template <typename T>
class SharedVec {
 public:
  using value_type = T;
  using size_type = size_t;
  using const_iterator = const T*;
  using iterator = const T*;  // reads only; writes go through mut()
  using const_reference = const T&;

  SharedVec() = default;
  SharedVec(std::initializer_list<T> l) { Assign(l.begin(), l.end()); }
  SharedVec(const std::vector<T>& v) { Assign(v.begin(), v.end()); }  // NOLINT(google-explicit-constructor)
  SharedVec(std::vector<T>&& v) {                                     // NOLINT(google-explicit-constructor)
    Assign(std::make_move_iterator(v.begin()), std::make_move_iterator(v.end()));
  }
  SharedVec(const SharedVec& o) noexcept : b_(o.b_) {
    if (b_) b_->refs.fetch_add(1, std::memory_order_relaxed);
  }
  SharedVec(SharedVec&& o) noexcept : b_(std::exchange(o.b_, nullptr)) {}
  SharedVec& operator=(const SharedVec& o) noexcept {
    if (this == &o || b_ == o.b_) return *this;
    SharedVec tmp(o);
    std::swap(b_, tmp.b_);
    return *this;
  }
  SharedVec& operator=(SharedVec&& o) noexcept {
    if (this != &o) {
      Release();
      b_ = std::exchange(o.b_, nullptr);
    }
    return *this;
  }
  SharedVec& operator=(std::initializer_list<T> l) { return *this = SharedVec(l); }
  ~SharedVec() { Release(); }

  // Reads.
  size_t size() const { return b_ ? b_->size : 0; }
  bool empty() const { return size() == 0; }
  const T* data() const { return b_ ? b_->elems() : nullptr; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size(); }
  const T& operator[](size_t i) const { return data()[i]; }
  const T& front() const { return data()[0]; }
  const T& back() const { return data()[size() - 1]; }
  const T& at(size_t i) const {
    if (i >= size()) throw std::out_of_range("SharedVec::at");
    return data()[i];
  }
  std::vector<T> ToVector() const { return std::vector<T>(begin(), end()); }
  // Whether both handles share one block (or both are empty).
  bool SharesWith(const SharedVec& o) const { return b_ == o.b_; }
  // How many handles share this one's block (0 when empty).
  uint32_t use_count() const { return b_ ? b_->refs.load(std::memory_order_acquire) : 0; }

  // Writes (copy on write).
  T& mut(size_t i) { return Unique()->elems()[i]; }
  // Every element, to change in place: `for (T& x : v.mut_all())`.
  std::span<T> mut_all() { return b_ ? std::span<T>(Unique()->elems(), b_->size) : std::span<T>(); }
  void push_back(const T& v) { emplace_back(v); }
  void push_back(T&& v) { emplace_back(std::move(v)); }
  template <typename... A>
  T& emplace_back(A&&... a) {
    if (!b_ || Shared() || b_->size == b_->cap) {
      T v(std::forward<A>(a)...);  // first: the arguments may refer into this array
      Reserve(std::max<size_t>(size() + 1, size() * 2));
      return EmplaceUnique(std::move(v));
    }
    return EmplaceUnique(std::forward<A>(a)...);
  }
  void reserve(size_t n) {
    if (n > 0 && (!b_ || n > b_->cap)) Reserve(n);
  }
  void resize(size_t n) {
    if (n == size()) return;
    if (n == 0) return clear();
    if (n > size()) {
      reserve(n);
      Unique();
      while (b_->size < n) EmplaceUnique();
    } else {
      Unique();
      while (b_->size > n) b_->elems()[--b_->size].~T();
    }
  }
  void pop_back() { resize(size() - 1); }
  void erase(size_t i) {
    T* e = Unique()->elems();
    std::move(e + i + 1, e + b_->size, e + i);
    e[--b_->size].~T();
  }
  void clear() { Release(); }

  friend bool operator==(const SharedVec& a, const SharedVec& b) {
    return a.b_ == b.b_ || std::equal(a.begin(), a.end(), b.begin(), b.end());
  }
  friend bool operator==(const SharedVec& a, const std::vector<T>& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  struct Block {
    std::atomic<uint32_t> refs;
    uint32_t size;
    uint32_t cap;
    T* elems() { return std::launder(reinterpret_cast<T*>(reinterpret_cast<char*>(this) + kHeader)); }
  };
  static constexpr size_t kHeader = (sizeof(Block) + alignof(T) - 1) / alignof(T) * alignof(T);
  static_assert(alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__, "plain operator new aligns T");

  static Block* Allocate(size_t cap) {
    void* p = ::operator new(kHeader + cap * sizeof(T));
    Block* b = ::new (p) Block;
    b->refs.store(1, std::memory_order_relaxed);
    b->size = 0;
    b->cap = static_cast<uint32_t>(cap);
    return b;
  }
  static void Destroy(Block* b) {
    T* e = b->elems();
    for (uint32_t i = 0; i < b->size; ++i) e[i].~T();
    b->~Block();
    ::operator delete(b);
  }
  bool Shared() const { return b_->refs.load(std::memory_order_acquire) > 1; }
  void Release() {
    if (b_ && b_->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) Destroy(b_);
    b_ = nullptr;
  }
  // A block of its own with room for `cap` elements (at least the current
  // size): elements are moved when this handle owned the old block alone,
  // copied when it was shared.
  void Reserve(size_t cap) {
    cap = std::max<size_t>(cap, size());
    Block* nb = Allocate(cap);
    if (b_) {
      const bool own = !Shared();
      T* src = b_->elems();
      T* dst = nb->elems();
      try {
        for (uint32_t i = 0; i < b_->size; ++i) {
          if (own) {
            ::new (dst + i) T(std::move_if_noexcept(src[i]));
          } else {
            ::new (dst + i) T(src[i]);
          }
          nb->size = i + 1;
        }
      } catch (...) {
        Destroy(nb);
        throw;
      }
    }
    Release();
    b_ = nb;
  }
  Block* Unique() {
    if (Shared()) Reserve(b_->cap);
    return b_;
  }
  template <typename... A>
  T& EmplaceUnique(A&&... a) {  // room and sole ownership already ensured
    T* p = ::new (b_->elems() + b_->size) T(std::forward<A>(a)...);
    b_->size++;
    return *p;
  }
  template <typename It>
  void Assign(It first, It last) {
    if (first == last) return;
    Reserve(static_cast<size_t>(std::distance(first, last)));
    for (; first != last; ++first) EmplaceUnique(*first);
  }

  Block* b_ = nullptr;
};

}  // namespace artel::core
