#pragma once
/// \file
/// The library version, written into every manager state as `ppe_version`.

#include <string_view>

namespace ppe {
inline constexpr std::string_view kVersion = "0.1.0";
}  // namespace ppe
