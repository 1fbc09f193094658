// Definitions of detail/error_message.hpp's out-of-line functions: included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <c10/util/Exception.h>

#include "ppe/detail/error_message.hpp"

namespace ppe::detail {

PPE_DECL std::string error_message(const std::exception& e) {
  if (const auto* c10_error = dynamic_cast<const c10::Error*>(&e)) return c10_error->what_without_backtrace();
  return e.what();
}

}  // namespace ppe::detail
