#pragma once
/// \file
/// `ppe::training::detail::type_name<T>()`: a type's unqualified name, for
/// default extension names (PPE names extensions after their class) and for
/// the composition handshake's descriptions of triggers.

#include <string_view>

namespace ppe::training::detail {

/// The unqualified name of `T` without template arguments, from the compiler's
/// function signature text; computed at compile time, so a call is a constant.
template <class T>
consteval std::string_view type_name() noexcept {
  std::string_view s = __PRETTY_FUNCTION__;
  const auto start = s.find("T = ") + 4;
  auto end = s.find_first_of(";]", start);
  s = s.substr(start, end - start);
  if (auto lt = s.find('<'); lt != std::string_view::npos) s = s.substr(0, lt);
  if (auto colon = s.rfind("::"); colon != std::string_view::npos) s = s.substr(colon + 2);
  return s;
}

}  // namespace ppe::training::detail
