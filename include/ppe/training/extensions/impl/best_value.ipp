// Definitions of training/extensions/best_value.hpp's out-of-line functions: included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <stdexcept>
#include <string>

#include "ppe/training/extensions/best_value.hpp"

namespace ppe::training::extensions::detail {

PPE_DECL void throw_no_best_value(const std::string& key, std::string_view what) {
  throw std::runtime_error("ppe::BestValue: " + std::string(what) + " of \"" + key +
                           "\" is not known yet: no interval of the extension's trigger has ended (run the "
                           "extension until one does, or load a state that has a best value)");
}

PPE_DECL std::optional<std::int64_t> optional_int_state(const State& state) {
  if (state.is_none()) return std::nullopt;
  return state.as_int();
}

}  // namespace ppe::training::extensions::detail
