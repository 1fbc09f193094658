#pragma once
/// \file
/// `ppe::warn`: where the library's warnings go (Python's `warnings.warn`).
/// By default they are written to standard error; tests and applications can
/// install their own handler.

#include <functional>
#include <iostream>
#include <string>
#include <string_view>
#include <utility>

namespace ppe {

using WarningHandler = std::function<void(std::string_view)>;

namespace detail {
inline WarningHandler& warning_handler() {
  static WarningHandler handler = [](std::string_view msg) { std::cerr << "ppe warning: " << msg << '\n'; };
  return handler;
}
}  // namespace detail

/// Installs `handler` for warnings; returns the previous one.
inline WarningHandler set_warning_handler(WarningHandler handler) {
  return std::exchange(detail::warning_handler(), std::move(handler));
}

/// Emits a warning through the current handler.
inline void warn(std::string_view message) { detail::warning_handler()(message); }

}  // namespace ppe
