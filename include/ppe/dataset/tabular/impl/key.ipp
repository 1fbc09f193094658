// Definitions of dataset/tabular/key.hpp: included by it when header-only,
// compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <algorithm>
#include <stdexcept>

#include "ppe/dataset/tabular/key.hpp"
#include "ppe/detail/python_repr.hpp"

namespace ppe::dataset::tabular {

namespace detail {

[[noreturn]] PPE_DECL void throw_unknown_key(std::string_view where, std::string_view key,
                                             const std::vector<std::string>& keys) {
  throw std::out_of_range("ppe::dataset::tabular: the " + std::string(where) + " has no key '" + std::string(key) +
                          "'; its keys are " + ppe::detail::python_str_tuple(keys));
}

}  // namespace detail

PPE_DECL std::vector<std::size_t> key_indices_of(const std::vector<Key>& keys, const std::vector<std::string>& names) {
  std::vector<std::size_t> out;
  const auto n = static_cast<std::int64_t>(names.size());
  for (const auto& k : keys) {
    if (k.is_position()) {
      std::int64_t i = k.position();
      if (i < 0) i += n;
      if (i < 0 || i >= n)
        throw std::out_of_range("ppe::dataset::tabular: key index " + std::to_string(k.position()) +
                                " is out of bounds for keys with size " + std::to_string(n) + " " +
                                ppe::detail::python_str_tuple(names));
      out.push_back(static_cast<std::size_t>(i));
    } else {
      const auto it = std::find(names.begin(), names.end(), k.name());
      if (it == names.end()) detail::throw_unknown_key("dataset", k.name(), names);
      out.push_back(static_cast<std::size_t>(it - names.begin()));
    }
  }
  return out;
}

}  // namespace ppe::dataset::tabular
