#pragma once
/// \file
/// `ppe::detail::is_optional<T>`: whether `T` is a `std::optional`. The config
/// reader (an optional argument may be absent) and the batch converter (an
/// empty optional passes through) both ask.

#include <optional>
#include <type_traits>

namespace ppe::detail {

template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};

}  // namespace ppe::detail
