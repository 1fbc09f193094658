#pragma once
/// \file
/// `ppe::handler::Outputs`: the named outputs of a training or evaluation
/// step (PPE normalises a model's outputs to a dict), and
/// `normalize_outputs`, PPE's `_normalize_outputs`.
///
/// A small ordered map: a step has one to a few outputs, so a flat list with
/// inline storage is searched faster than a hash map is built, and a step
/// allocates nothing for it.

#include <ATen/core/Tensor.h>
#include <c10/util/SmallVector.h>

#include <cstddef>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "ppe/detail/dependent.hpp"
#include "ppe/detail/python_repr.hpp"

namespace ppe::handler {

/// Named tensors in insertion order; keys are unique.
class Outputs {
 public:
  /// One output: `key()` and `value()` (as `torch::OrderedDict` items).
  class Item {
   public:
    Item(std::string key, at::Tensor value) : key_(std::move(key)), value_(std::move(value)) {}
    const std::string& key() const noexcept { return key_; }
    at::Tensor& value() noexcept { return value_; }
    const at::Tensor& value() const noexcept { return value_; }

   private:
    std::string key_;
    at::Tensor value_;
  };

  Outputs() = default;
  Outputs(std::initializer_list<std::pair<std::string, at::Tensor>> items) {
    for (const auto& [k, v] : items) insert(k, v);
  }

  /// Sets `key` to `value`: replaces the value of an existing key (in place,
  /// as a Python dict does), else appends.
  at::Tensor& insert(std::string key, at::Tensor value) {
    if (at::Tensor* v = find(key)) return *v = std::move(value);
    return items_.emplace_back(std::move(key), std::move(value)).value();
  }
  /// The value of `key`, or nullptr.
  const at::Tensor* find(std::string_view key) const noexcept {
    for (const Item& i : items_)
      if (i.key() == key) return &i.value();
    return nullptr;
  }
  at::Tensor* find(std::string_view key) noexcept {
    return const_cast<at::Tensor*>(static_cast<const Outputs&>(*this).find(key));
  }
  bool contains(std::string_view key) const noexcept { return find(key) != nullptr; }
  /// The value of `key`; std::out_of_range naming the keys when it is missing.
  const at::Tensor& operator[](std::string_view key) const {
    if (const at::Tensor* v = find(key)) return *v;
    throw std::out_of_range("ppe::handler::Outputs: no output named '" + std::string(key) +
                            "'; outputs: " + ppe::detail::python_key_list(items_));
  }
  at::Tensor& operator[](std::string_view key) {
    return const_cast<at::Tensor&>(static_cast<const Outputs&>(*this)[key]);
  }

  std::vector<std::string> keys() const {
    std::vector<std::string> out;
    for (const Item& i : items_) out.push_back(i.key());
    return out;
  }
  std::size_t size() const noexcept { return items_.size(); }
  bool empty() const noexcept { return items_.empty(); }
  auto begin() noexcept { return items_.begin(); }
  auto end() noexcept { return items_.end(); }
  auto begin() const noexcept { return items_.begin(); }
  auto end() const noexcept { return items_.end(); }

 private:
  c10::SmallVector<Item, 2> items_;
};

namespace detail {
template <class T>
struct is_tensor_tuple : std::false_type {};
template <class... Ts>
struct is_tensor_tuple<std::tuple<Ts...>> : std::bool_constant<(std::is_convertible_v<Ts, at::Tensor> && ...)> {};
template <class A, class B>
struct is_tensor_tuple<std::pair<A, B>>
    : std::bool_constant<std::is_convertible_v<A, at::Tensor> && std::is_convertible_v<B, at::Tensor>> {};
}  // namespace detail

/// PPE's `_normalize_outputs`: what a model returned, as named tensors. A
/// tensor is `{"0": t}`; a tuple, pair or vector of tensors is `{"0": ...,
/// "1": ...}`; a map from names to tensors (`Outputs`, `std::map`,
/// `std::unordered_map`) keeps its names (in its iteration order).
template <class O>
Outputs normalize_outputs(O&& outs) {
  using T = std::remove_cvref_t<O>;
  Outputs out;
  if constexpr (std::is_same_v<T, Outputs>) {
    return std::forward<O>(outs);
  } else if constexpr (std::is_convertible_v<T, at::Tensor>) {
    out.insert("0", at::Tensor(std::forward<O>(outs)));
  } else if constexpr (detail::is_tensor_tuple<T>::value) {
    std::apply(
        [&out](auto&... xs) {
          std::size_t i = 0;
          ((out.insert(std::to_string(i++), at::Tensor(xs))), ...);
        },
        outs);
  } else if constexpr (requires { std::string(outs.begin()->first); at::Tensor(outs.begin()->second); }) {
    for (const auto& [k, v] : outs) out.insert(std::string(k), at::Tensor(v));
  } else if constexpr (requires { at::Tensor(*outs.begin()); }) {
    std::size_t i = 0;
    for (const auto& v : outs) out.insert(std::to_string(i++), at::Tensor(v));
  } else {
    static_assert(ppe::detail::dependent_t<std::false_type, T>::value,
                  "ppe: the model's output cannot be named: return a tensor, a std::tuple/std::pair/std::vector of "
                  "tensors (named \"0\", \"1\", ...), or a map from names to tensors (ppe::handler::Outputs, "
                  "std::map<std::string, at::Tensor>)");
  }
  return out;
}

}  // namespace ppe::handler
