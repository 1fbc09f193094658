// Definitions of training/extensions/value_observation.hpp's out-of-line functions: included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <stdexcept>
#include <string>

#include "ppe/training/extensions/value_observation.hpp"

namespace ppe::training::detail {

PPE_DECL std::size_t lr_param_group_index(std::int64_t index, std::size_t count) {
  const auto n = static_cast<std::int64_t>(count);
  if (index < -n || index >= n)
    throw std::out_of_range("ppe: observe_lr param_group " + std::to_string(index) +
                            " is out of range: the optimizer has " + std::to_string(count) +
                            " parameter group(s), so the index must be in [" + std::to_string(-n) + ", " +
                            std::to_string(n - 1) + "]");
  return static_cast<std::size_t>(index < 0 ? index + n : index);
}

}  // namespace ppe::training::detail
