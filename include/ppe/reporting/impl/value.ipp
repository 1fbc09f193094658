// Definitions of reporting/value.hpp's out-of-line functions: included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <stdexcept>
#include <string>

#include "ppe/reporting/value.hpp"

namespace ppe::reporting {

PPE_DECL double Value::to_double() const {
  Value v = resolved();
  if (v.is_scalar()) return v.scalar();
  const at::Tensor& t = v.tensor();
  if (t.numel() != 1)
    throw std::invalid_argument("ppe::reporting::Value: a tensor with " + std::to_string(t.numel()) +
                                " elements has no single number");
  return t.item<double>();
}

}  // namespace ppe::reporting
