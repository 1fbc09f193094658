// Definitions of dataset/tabular/record.hpp: included by it when header-only,
// compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <stdexcept>
#include <string>

#include "ppe/dataset/tabular/record.hpp"

namespace ppe::dataset::tabular {

namespace detail {

[[noreturn]] PPE_DECL void throw_wrong_type(std::string_view key, const Value& value, std::string_view wanted) {
  static constexpr std::string_view names[] = {"an integer", "a double", "a string", "a tensor"};
  throw std::invalid_argument("ppe::dataset::tabular: the value of '" + std::string(key) + "' is " +
                              std::string(names[value.index()]) + " (" + repr(value) + "), not " +
                              std::string(wanted));
}

}  // namespace detail

PPE_DECL std::string_view mode_name(Mode mode) noexcept {
  switch (mode) {
    case Mode::Tuple: return "tuple";
    case Mode::Dict: return "dict";
    case Mode::Unary: return "None";
  }
  return "?";
}

}  // namespace ppe::dataset::tabular
