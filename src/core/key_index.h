// KeyIndex: the engine's index from a workload's key ("ns/name") to its id.
//
// An open-addressing table of (32-bit hash, id) slots with linear probing
// and backward-shift deletion. The keys themselves live in the workloads
// (Wl::info.key), so a lookup compares a key only on a hash match, through a
// `key_of(id)` callback. It replaces a std::unordered_map<std::string, WlId>,
// whose node (key copy, hash, link) and bucket took about 72 bytes per
// workload; this takes 8 bytes per slot at a load of at most one half
// (issue 17 §3: memory per pending workload).
//
// The caller keeps the table consistent: `Insert` only a key that is absent,
// and only once key_of(id) returns it; `Erase` before that key changes.
//
// Thread-safety: none (owned by the engine).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "core/engine.h"

namespace artel::core {

class KeyIndex {
 public:
  static constexpr WorkloadId kEmpty = kNoWorkload;

  // The id under `key`, or kNoWorkload.
  template <typename KeyOf>
  WorkloadId Find(std::string_view key, const KeyOf& key_of) const {
    if (size_ == 0) return kEmpty;
    const uint32_t h = Hash(key);
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.id == kEmpty) return kEmpty;
      if (s.hash == h && std::string_view(key_of(s.id)) == key) return s.id;
    }
  }

  // Adds `key` -> `id`; `key` must be absent.
  void Insert(std::string_view key, WorkloadId id) {
    if ((size_ + 1) * 2 > slots_.size()) Rehash(slots_.empty() ? 16 : slots_.size() * 2);
    Place(Slot{Hash(key), id});
    ++size_;
  }

  // Removes `key` when it maps to `id` (any id when `id` is kNoWorkload);
  // returns whether it did.
  template <typename KeyOf>
  bool Erase(std::string_view key, const KeyOf& key_of, WorkloadId id = kEmpty) {
    if (size_ == 0) return false;
    const uint32_t h = Hash(key);
    size_t i = h & mask_;
    for (;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.id == kEmpty) return false;
      if (s.hash == h && std::string_view(key_of(s.id)) == key) break;
    }
    if (id != kEmpty && slots_[i].id != id) return false;
    // Backward shift: pull later entries of the run into the hole when
    // their home slot does not lie after the hole (cyclically).
    for (size_t j = (i + 1) & mask_;; j = (j + 1) & mask_) {
      if (slots_[j].id == kEmpty) break;
      const size_t home = slots_[j].hash & mask_;
      const bool stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
      if (stays) continue;
      slots_[i] = slots_[j];
      i = j;
    }
    slots_[i] = Slot{};
    --size_;
    return true;
  }

  size_t size() const { return size_; }
  size_t capacity() const { return slots_.size(); }

 private:
  struct Slot {
    uint32_t hash = 0;
    WorkloadId id = kEmpty;
  };
  static uint32_t Hash(std::string_view key) {
    const uint64_t h = std::hash<std::string_view>{}(key);
    return static_cast<uint32_t>(h ^ (h >> 32));
  }
  void Place(Slot s) {
    size_t i = s.hash & mask_;
    while (slots_[i].id != kEmpty) i = (i + 1) & mask_;
    slots_[i] = s;
  }
  void Rehash(size_t n) {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(n, Slot{});
    mask_ = n - 1;
    for (const Slot& s : old) {
      if (s.id != kEmpty) Place(s);
    }
  }

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t size_ = 0;
};

}  // namespace artel::core
