#pragma once
/// \file
/// `ppe::dataset::tabular::Column`: one column of a tabular dataset, a list
/// of `Value`s or one tensor whose first dimension indexes the rows (PPE's
/// list or ndarray).

#include <ATen/core/Tensor.h>

#include <concepts>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string_view>
#include <variant>
#include <vector>

#include "ppe/dataset/tabular/rows.hpp"
#include "ppe/dataset/tabular/value.hpp"
#include "ppe/detail/config.hpp"

namespace ppe::dataset::tabular {

/// One column of values: a list of `Value`s or one tensor whose dimension 0
/// indexes the rows (PPE's list or ndarray). Cheap to copy (lists are shared
/// and immutable).
class Column {
 public:
  /// An empty list.
  Column() : Column(std::vector<Value>{}) {}
  Column(std::vector<Value> list) : data_(std::make_shared<const std::vector<Value>>(std::move(list))) {}
  template <class T>
    requires(!std::same_as<T, Value> && std::constructible_from<Value, const T&>)
  Column(const std::vector<T>& list) : Column(std::vector<Value>(list.begin(), list.end())) {}
  /// A tensor column: `array.size(0)` rows; a 0-d tensor is `std::invalid_argument`.
  PPE_DECL Column(at::Tensor array);

  /// Whether the column is a tensor (PPE: an ndarray) rather than a list.
  bool is_array() const noexcept { return data_.index() == 1; }
  /// The tensor; `std::logic_error` for a list column.
  PPE_DECL const at::Tensor& array() const;
  /// The values; `std::logic_error` for a tensor column.
  PPE_DECL const std::vector<Value>& list() const;
  /// The number of rows.
  PPE_DECL std::int64_t size() const;
  /// The value of row `i` (`std::out_of_range` if there is none).
  PPE_DECL Value at(std::int64_t i) const;
  Value operator[](std::int64_t i) const { return at(i); }

  /// The rows `rows` selects (all, a slice or a list of valid indices), of the same kind.
  PPE_DECL Column take(const Rows& rows) const;
  /// The rows of `parts` one after the other: a tensor if every part is one
  /// (`at::cat`), else a list.
  PPE_DECL static Column concat(const std::vector<Column>& parts);
  /// The column as one tensor (PPE's `_as_array`): a tensor column as is; a
  /// list of integers as int64, of numbers as float64, of tensors stacked. A
  /// string is `std::invalid_argument` naming `what` (e.g. the key).
  PPE_DECL at::Tensor to_tensor(std::string_view what = "column") const;

  /// Same kind and equal values.
  PPE_DECL friend bool operator==(const Column& a, const Column& b);
  PPE_DECL friend std::ostream& operator<<(std::ostream& os, const Column& column);

 private:
  std::variant<std::shared_ptr<const std::vector<Value>>, at::Tensor> data_;
};

namespace detail {
/// `Value`'s helpers (value.hpp) for a column, so that a `Record` of columns
/// compares and prints as one of values does.
PPE_DECL bool equal_values(const Column& a, const Column& b);
PPE_DECL void print_value(std::ostream& os, const Column& v);
}  // namespace detail

}  // namespace ppe::dataset::tabular

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/dataset/tabular/impl/column.ipp"
#endif
