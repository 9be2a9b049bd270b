// Boxed<T>: a value of type T kept on the heap only when it is set.
//
// Most submitted workloads ask for no topology, no gang and no GPU share, yet
// each such field used to take its whole size in every workload the engine
// holds (issue 17 §3: memory per pending workload). A Boxed<T> is one
// pointer: null reads as a default-constructed T, and the value is put on
// the heap on the first write. It copies deeply and compares by value, so
// the model types keep their value semantics.
//
//   spec.topology->required          read (a default T when unset)
//   spec.topology.mut().required = x write (allocates on first use)
//   spec.topology = TopologyRequest{...}  assign; a default T frees the box
//
// Thread-safety: as for T. The shared default is a function-local constant.
#pragma once

#include <concepts>
#include <memory>
#include <utility>

namespace artel::core {

template <typename T>
class Boxed {
 public:
  Boxed() = default;
  Boxed(const T& v) { Set(T(v)); }     // NOLINT(google-explicit-constructor): a drop-in for T
  Boxed(T&& v) { Set(std::move(v)); }  // NOLINT(google-explicit-constructor)
  Boxed(const Boxed& o) : p_(o.p_ ? std::make_unique<T>(*o.p_) : nullptr) {}
  Boxed(Boxed&&) noexcept = default;
  Boxed& operator=(const Boxed& o) {
    if (this != &o) p_ = o.p_ ? std::make_unique<T>(*o.p_) : nullptr;
    return *this;
  }
  Boxed& operator=(Boxed&&) noexcept = default;
  Boxed& operator=(const T& v) {
    Set(T(v));
    return *this;
  }
  Boxed& operator=(T&& v) {
    Set(std::move(v));
    return *this;
  }
  ~Boxed() = default;

  const T& operator*() const { return p_ ? *p_ : Default(); }
  const T* operator->() const { return &**this; }
  operator const T&() const { return **this; }  // NOLINT(google-explicit-constructor)

  // The value, to change: allocated (default) on first use.
  T& mut() {
    if (!p_) p_ = std::make_unique<T>();
    return *p_;
  }
  // Whether a value is on the heap (it may still equal the default).
  bool boxed() const { return p_ != nullptr; }
  void reset() { p_.reset(); }

  friend bool operator==(const Boxed& a, const Boxed& b) { return *a == *b; }
  friend bool operator==(const Boxed& a, const T& b) { return *a == b; }

  static const T& Default() {
    static const T kDefault{};
    return kDefault;
  }

 private:
  void Set(T&& v) {
    if constexpr (std::equality_comparable<T>) {
      if (v == Default()) {
        p_.reset();
        return;
      }
    }
    if (p_) {
      *p_ = std::move(v);
    } else {
      p_ = std::make_unique<T>(std::move(v));
    }
  }

  std::unique_ptr<T> p_;
};

}  // namespace artel::core
