#pragma once
/// \file
/// `ppe::detail::error_message`: the message of an exception for ppe's own
/// messages and warnings. LibTorch's `c10::Error::what()` ends with the C++
/// backtrace of the throw (tens of frame lines), which is noise inside a
/// message that already says where the error came from; its message alone
/// is `what_without_backtrace()`.

#include <exception>
#include <string>

#include "ppe/detail/config.hpp"

namespace ppe::detail {

/// `e.what()`, but for a `c10::Error` (and its subclasses) the message
/// without the backtrace.
PPE_DECL std::string error_message(const std::exception& e);

}  // namespace ppe::detail

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/detail/impl/error_message.ipp"
#endif
