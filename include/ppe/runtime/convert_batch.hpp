#pragma once
/// \file
/// `ppe::runtime::convert_batch_with(batch, move)`: applies `move` to every
/// tensor of a batch structure and leaves everything else as it is (PPE's
/// `BaseRuntime.convert_batch`). Understood structures, nested to any depth:
/// `at::Tensor`, `torch::data::Example<Data, Target>` (also with `NoTarget`),
/// `std::pair`, `std::tuple`, `std::array`, `std::vector`, `std::optional`,
/// `std::map`/`std::unordered_map`/`torch::OrderedDict` (values). Any other
/// type passes through unchanged unless it provides, found by argument-
/// dependent lookup, `void ppe_convert_batch(T& batch, const Mover& move)`
/// that moves its tensors in place (`move(tensor)` returns the moved tensor).
///
/// Differences from PPE: PPE converts one level only (the tensors directly in
/// a dict, list, tuple or namedtuple) and turns tuples into lists; here nested
/// structures are converted and every type is kept.

#include <ATen/core/Tensor.h>

#include <array>
#include <cstddef>
#include <map>
#include <optional>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ppe/detail/batch.hpp"
#include "ppe/detail/is_optional.hpp"

// Forward declarations: the full headers would pull all of ATen into every
// translation unit that converts a batch; only member access is needed here.
namespace torch {
template <typename Key, typename Value>
class OrderedDict;
}  // namespace torch

namespace ppe::runtime {

namespace detail {

using ppe::detail::is_example;
template <class T>
struct is_ordered_dict : std::false_type {};
template <class K, class V>
struct is_ordered_dict<torch::OrderedDict<K, V>> : std::true_type {};
template <class T>
struct is_tuple_like : std::false_type {};
template <class... Ts>
struct is_tuple_like<std::tuple<Ts...>> : std::true_type {};
template <class A, class B>
struct is_tuple_like<std::pair<A, B>> : std::true_type {};
template <class T>
struct is_sequence : std::false_type {};
template <class T, class A>
struct is_sequence<std::vector<T, A>> : std::true_type {};
template <class T, std::size_t N>
struct is_sequence<std::array<T, N>> : std::true_type {};
template <class T>
struct is_map : std::false_type {};
template <class K, class V, class C, class A>
struct is_map<std::map<K, V, C, A>> : std::true_type {};
template <class K, class V, class H, class E, class A>
struct is_map<std::unordered_map<K, V, H, E, A>> : std::true_type {};
using ppe::detail::is_optional;

template <class B, class Move>
concept adl_convertible = requires(B& b, const Move& move) { ppe_convert_batch(b, move); };

template <class B, class Move>
void convert_in_place(B& b, const Move& move) {
  if constexpr (std::is_same_v<B, at::Tensor>) {
    if (b.defined()) b = move(b);
  } else if constexpr (adl_convertible<B, Move>) {
    ppe_convert_batch(b, move);
  } else if constexpr (is_example<B>::value) {
    convert_in_place(b.data, move);
    if constexpr (requires { b.target; }) convert_in_place(b.target, move);
  } else if constexpr (is_tuple_like<B>::value) {
    std::apply([&](auto&... parts) { (convert_in_place(parts, move), ...); }, b);
  } else if constexpr (is_sequence<B>::value) {
    for (auto& item : b) convert_in_place(item, move);
  } else if constexpr (is_map<B>::value) {
    for (auto& item : b) convert_in_place(item.second, move);
  } else if constexpr (is_ordered_dict<B>::value) {
    for (auto& item : b) convert_in_place(item.value(), move);
  } else if constexpr (is_optional<B>::value) {
    if (b) convert_in_place(*b, move);
  }
  // Anything else is not a tensor container: left unchanged.
}

}  // namespace detail

/// A copy of `batch` whose tensors are replaced by `move(tensor)`; see the file
/// comment for the structures understood. Undefined tensors stay undefined.
template <class B, class Move>
B convert_batch_with(B batch, const Move& move) {
  detail::convert_in_place(batch, move);
  return batch;
}

}  // namespace ppe::runtime
