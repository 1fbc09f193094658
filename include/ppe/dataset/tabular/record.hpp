#pragma once
/// \file
/// `ppe::dataset::tabular::Record`: named values in order, represented as a
/// tuple, a dict or a bare value (`Mode`, PPE's `mode`), which is what a
/// tabular dataset gives: an example (`Example`, a row), fetched columns
/// (`Columns`) or a collated batch (`Batch`).

#include <ATen/core/Tensor.h>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ppe/dataset/tabular/column.hpp"
#include "ppe/dataset/tabular/key.hpp"
#include "ppe/dataset/tabular/value.hpp"
#include "ppe/detail/config.hpp"
#include "ppe/detail/python_repr.hpp"

namespace ppe::dataset::tabular {

/// How an example is represented (PPE's `mode`): a tuple, a dict, or the bare
/// value of the only column (PPE's `None`).
enum class Mode { Tuple, Dict, Unary };

/// PPE's spelling of a mode: "tuple", "dict" or "None".
PPE_DECL std::string_view mode_name(Mode mode) noexcept;

namespace detail {
/// Throws the error of `Record::get<U>` on a value of another type.
[[noreturn]] PPE_DECL void throw_wrong_type(std::string_view key, const Value& value, std::string_view wanted);
/// How `Record::get<U>`'s error names the type it wanted.
template <class U>
constexpr std::string_view type_name() {
  if constexpr (std::same_as<U, std::int64_t>) return "an integer (std::int64_t)";
  else if constexpr (std::same_as<U, double>) return "a double";
  else if constexpr (std::same_as<U, std::string>) return "a string";
  else return "a tensor";
}
}  // namespace detail

/// Named values in order, represented as a tuple, a dict or a bare value
/// (`mode`): an example (`Example`, a row), fetched data (`Columns`) or a
/// collated batch (`Batch`). Every representation has its keys and supports
/// access by position and by key; `mode` says which one PPE would give.
template <class T>
class Record {
 public:
  Record() : keys_(std::make_shared<const std::vector<std::string>>()) {}
  /// `values` in the order of `keys`; a unary record holds exactly one.
  Record(Mode mode, std::vector<std::string> keys, std::vector<T> values)
      : Record(mode, std::make_shared<const std::vector<std::string>>(std::move(keys)), std::move(values)) {}
  /// Shares `keys` (examples of one dataset share them).
  Record(Mode mode, std::shared_ptr<const std::vector<std::string>> keys, std::vector<T> values)
      : mode_(mode), keys_(std::move(keys)), values_(std::move(values)) {
    if (keys_->size() != values_.size())
      throw std::invalid_argument("ppe::dataset::tabular: a record needs one value per key (" +
                                  std::to_string(keys_->size()) + " keys, " + std::to_string(values_.size()) +
                                  " values)");
    if (mode_ == Mode::Unary && values_.size() != 1)
      throw std::invalid_argument("ppe::dataset::tabular: a unary (mode None) record holds exactly one value, not " +
                                  std::to_string(values_.size()));
  }

  Mode mode() const noexcept { return mode_; }
  const std::vector<std::string>& keys() const noexcept { return *keys_; }
  const std::shared_ptr<const std::vector<std::string>>& shared_keys() const noexcept { return keys_; }
  const std::vector<T>& values() const noexcept { return values_; }
  std::size_t size() const noexcept { return values_.size(); }

  /// The value at `position` (tuple order); `std::out_of_range` if there is none.
  template <std::integral I>
  const T& operator[](I position) const {
    if (std::cmp_less(position, 0) || std::cmp_greater_equal(position, values_.size()))
      throw std::out_of_range("ppe::dataset::tabular: position " + std::to_string(position) +
                              " is out of range for a record of " + std::to_string(values_.size()) + " values");
    return values_[static_cast<std::size_t>(position)];
  }
  /// The value of `key`; `std::out_of_range` naming the key and the keys present.
  const T& operator[](std::string_view key) const { return values_[position_of(key)]; }
  const T& operator[](const char* key) const { return (*this)[std::string_view(key)]; }
  /// The only value (of a unary record, or any record of one value).
  const T& value() const {
    if (values_.size() != 1)
      throw std::logic_error("ppe::dataset::tabular: value() needs a record of one value, this one has " +
                             std::to_string(values_.size()));
    return values_[0];
  }
  bool contains(std::string_view key) const noexcept {
    for (const auto& k : *keys_)
      if (k == key) return true;
    return false;
  }
  /// The position of `key`; `std::out_of_range` naming the key and the keys present.
  std::size_t position_of(std::string_view key) const {
    for (std::size_t i = 0; i < keys_->size(); ++i)
      if ((*keys_)[i] == key) return i;
    detail::throw_unknown_key("record", key, *keys_);
  }

  /// The value at `position` or of `key` as a `U` (for `Example`: one of
  /// `Value`'s alternatives); a different type is `std::invalid_argument`.
  template <class U, std::integral I>
    requires std::same_as<T, Value>
  const U& get(I position) const {
    const Value& v = (*this)[position];
    if (const U* u = std::get_if<U>(&v)) return *u;
    detail::throw_wrong_type((*keys_)[static_cast<std::size_t>(position)], v, detail::type_name<U>());
  }
  template <class U>
    requires std::same_as<T, Value>
  const U& get(std::string_view key) const {
    return get<U>(position_of(key));
  }

  /// Same mode, keys and values.
  friend bool operator==(const Record& a, const Record& b) {
    if (a.mode_ != b.mode_ || *a.keys_ != *b.keys_ || a.values_.size() != b.values_.size()) return false;
    for (std::size_t i = 0; i < a.values_.size(); ++i)
      if (!detail::equal_values(a.values_[i], b.values_[i])) return false;
    return true;
  }
  /// `(v, ...)`, `{'k': v, ...}` or `v`, as Python prints them.
  friend std::ostream& operator<<(std::ostream& os, const Record& r) {
    if (r.mode_ == Mode::Unary && r.values_.size() == 1) {
      detail::print_value(os, r.values_[0]);
      return os;
    }
    os << (r.mode_ == Mode::Dict ? "{" : "(");
    for (std::size_t i = 0; i < r.values_.size(); ++i) {
      if (i) os << ", ";
      if (r.mode_ == Mode::Dict) os << ppe::detail::python_str_repr((*r.keys_)[i]) << ": ";
      detail::print_value(os, r.values_[i]);
    }
    return os << (r.mode_ == Mode::Dict ? "}" : (r.values_.size() == 1 ? ",)" : ")"));
  }

 private:
  Mode mode_ = Mode::Tuple;
  std::shared_ptr<const std::vector<std::string>> keys_;
  std::vector<T> values_;
};

/// One row (PPE: a tuple, dict or bare value).
using Example = Record<Value>;
/// Fetched columns (PPE's `fetch()` result: a tuple or dict of lists/arrays, or one).
using Columns = Record<Column>;
/// A collated batch: one tensor per key (PyTorch's default collation).
using Batch = Record<at::Tensor>;

}  // namespace ppe::dataset::tabular

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/dataset/tabular/impl/record.ipp"
#endif
