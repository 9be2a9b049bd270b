// Interner: strings to dense ids, per engine (resources, flavor names,
// namespaces). Ids are handed out from 0 in order of first sight and never
// reused.
//
// Thread-safety: none.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <vector>

namespace artel::core {

// Interns strings into dense ids of type `IdT` (int32_t, or a tag-typed
// Id of core/id.h), per engine. Find answers -1 (int32_t) or an invalid id.
template <typename IdT>
class BasicInterner {
 public:
  IdT Intern(const std::string& s) {
    auto it = ids_.find(s);
    if (it != ids_.end()) return it->second;
    IdT id(static_cast<int32_t>(names_.size()));
    names_.push_back(s);
    ids_.emplace(s, id);
    return id;
  }
  IdT Find(const std::string& s) const {
    auto it = ids_.find(s);
    if (it != ids_.end()) return it->second;
    if constexpr (std::is_integral_v<IdT>) {
      return -1;
    } else {
      return IdT();
    }
  }
  const std::string& Name(IdT id) const {
    if constexpr (std::is_integral_v<IdT>) {
      return names_[static_cast<size_t>(id)];
    } else {
      return names_[static_cast<size_t>(id.value())];
    }
  }
  size_t size() const { return names_.size(); }

 private:
  std::unordered_map<std::string, IdT> ids_;
  std::vector<std::string> names_;
};

using Interner = BasicInterner<int32_t>;

}  // namespace artel::core
