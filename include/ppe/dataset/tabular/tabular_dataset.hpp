#pragma once
/// \file
/// `ppe::dataset::tabular::TabularDataset` (PPE's `ppe.dataset.TabularDataset`,
/// Chainer's tabular API): a dataset of rows that all have the same named
/// columns, read column-wise in bulk (`get_examples`, `fetch`) or row by row
/// (`get_example`, iteration), and the lazy views built on it: `slice`,
/// `astuple`, `asdict`, `concat`, `join`, `transform`, `transform_batch`,
/// `with_converter`; `DelegateDataset` (a base for custom datasets); and
/// `TorchDataset` / `CollatedTorchDataset`, adapters that
/// `torch::data::make_data_loader` accepts. A dataset is also a range-v3
/// random-access range of its examples.
///
/// Values are dynamically typed, as in PPE: a cell is a `Value` (an integer,
/// a double, a string or a tensor) and a column is a `Column`, either a list
/// of values or one tensor whose first dimension indexes the rows (PPE's
/// list or ndarray). Rows are selected with `Rows` (all, a Python slice, a
/// list of indices or a boolean mask), columns by key name or position.
/// Datasets are shared and immutable: views hold their parents through
/// `std::shared_ptr<const TabularDataset>`, so a dataset is created with
/// `std::make_shared`.

#include <ATen/core/Tensor.h>
#include <c10/util/ArrayRef.h>
#include <c10/util/Optional.h>

#include <compare>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "ppe/detail/config.hpp"
#include "ppe/detail/python_repr.hpp"

// LibTorch's own forward declaration (torch/data/datasets/base.h), so that the
// adapters offer `.map(transform)` without this header including torch/data.
namespace torch::data::datasets {
template <typename S, typename T>
class MapDataset;
template <typename D, typename T>
MapDataset<D, T> map(D, T);  // NOLINT
}  // namespace torch::data::datasets

namespace ppe::dataset::tabular {

/// One cell: an integer, a double, a string or a tensor. The element of a
/// 1-d tensor column is a scalar (an integer for integral and boolean dtypes,
/// a double for floating ones, as numpy's scalars are Python numbers); that
/// of a higher-dimensional one is a tensor (the row).
using Value = std::variant<std::int64_t, double, std::string, at::Tensor>;

/// How an example is represented (PPE's `mode`): a tuple, a dict, or the bare
/// value of the only column (PPE's `None`).
enum class Mode { Tuple, Dict, Unary };

/// PPE's spelling of a mode: "tuple", "dict" or "None".
PPE_DECL std::string_view mode_name(Mode mode) noexcept;

/// Whether two values are equal: same alternative and same value (tensors:
/// same dtype, same shape, equal elements).
PPE_DECL bool equal(const Value& a, const Value& b);
/// A short Python-like rendering of a value, for messages.
PPE_DECL std::string repr(const Value& value);

/// A Python slice `start:stop:step`; an absent bound is Python's `None`.
struct Slice {
  std::optional<std::int64_t> start, stop, step;

  Slice() = default;
  Slice(std::optional<std::int64_t> start_, std::optional<std::int64_t> stop_,
        std::optional<std::int64_t> step_ = std::nullopt)
      : start(start_), stop(stop_), step(step_) {}

  /// Python's `slice.indices(length)`: the bounds clamped to a sequence of
  /// `length` items, and the step. A zero step is `std::invalid_argument`.
  struct Bounds {
    std::int64_t start, stop, step;
    /// The number of indices `range(start, stop, step)` holds.
    PPE_DECL std::int64_t length() const noexcept;
    /// The `i`-th of them.
    std::int64_t operator[](std::int64_t i) const noexcept { return start + i * step; }
  };
  PPE_DECL Bounds indices(std::int64_t length) const;

  friend bool operator==(const Slice&, const Slice&) = default;
};

/// Which rows to read: all, a slice, a list of indices, or a boolean mask
/// (one flag per row). `TabularDataset::slice` accepts every kind (negative
/// indices count from the end); `get_examples` receives all rows, a slice, or
/// a list of valid non-negative indices, never a mask.
class Rows {
 public:
  enum class Kind { All, Slice, List, Mask };

  /// All rows (PPE's `None`).
  Rows() = default;
  static Rows all() { return Rows(); }
  Rows(Slice slice) : kind_(Kind::Slice), slice_(slice) {}
  Rows(std::vector<std::int64_t> indices) : kind_(Kind::List), list_(std::move(indices)) {}
  Rows(std::initializer_list<std::int64_t> indices) : kind_(Kind::List), list_(indices) {}
  /// A boolean mask: the rows whose flag is true.
  Rows(std::vector<bool> mask) : kind_(Kind::Mask), mask_(std::move(mask)) {}

  Kind kind() const noexcept { return kind_; }
  bool is_all() const noexcept { return kind_ == Kind::All; }
  /// The slice; `std::logic_error` unless `kind() == Kind::Slice`.
  PPE_DECL const Slice& slice() const;
  /// The indices; `std::logic_error` unless `kind() == Kind::List`.
  PPE_DECL const std::vector<std::int64_t>& list() const;
  /// The flags; `std::logic_error` unless `kind() == Kind::Mask`.
  PPE_DECL const std::vector<bool>& mask() const;

  /// The number of rows selected from a dataset of `length` rows.
  PPE_DECL std::int64_t count(std::int64_t length) const;
  /// PPE's `_as_indices`: a mask becomes the list of its true rows (its length
  /// must be `length`: `std::invalid_argument`), negative indices count from
  /// the end and an index out of range is `std::out_of_range`.
  PPE_DECL Rows normalized(std::int64_t length) const;

  friend bool operator==(const Rows&, const Rows&) = default;
  PPE_DECL friend std::ostream& operator<<(std::ostream& os, const Rows& rows);

 private:
  Kind kind_ = Kind::All;
  Slice slice_;
  std::vector<std::int64_t> list_;
  std::vector<bool> mask_;
};

/// Which columns to read, by position in `keys()`; `std::nullopt` is all of
/// them (PPE's `key_indices=None`). Positions may repeat.
using KeyIndices = std::optional<std::vector<std::size_t>>;

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
[[noreturn]] PPE_DECL void throw_unknown_key(std::string_view where, std::string_view key,
                                             const std::vector<std::string>& keys);
[[noreturn]] PPE_DECL void throw_wrong_type(std::string_view key, const Value& value, std::string_view wanted);
PPE_DECL bool equal_values(const Value& a, const Value& b);
PPE_DECL bool equal_values(const Column& a, const Column& b);
PPE_DECL bool equal_values(const at::Tensor& a, const at::Tensor& b);
PPE_DECL void print_value(std::ostream& os, const Value& v);
PPE_DECL void print_value(std::ostream& os, const Column& v);
PPE_DECL void print_value(std::ostream& os, const at::Tensor& v);
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

/// What a per-example transformation may return: several values in order
/// (a tuple), values by key (a dict), or one value (unary).
using Tuple = std::vector<Value>;
using Dict = std::map<std::string, Value, std::less<>>;
/// What a batch transformation may return, column-wise.
using ColumnTuple = std::vector<Column>;
using ColumnDict = std::map<std::string, Column, std::less<>>;

/// A column named by key or by position (negative counts from the end).
class Key {
 public:
  Key(std::string name) : key_(std::move(name)) {}
  Key(const char* name) : key_(std::string(name)) {}
  Key(std::string_view name) : key_(std::string(name)) {}
  template <std::integral I>
  Key(I position) : key_(static_cast<std::int64_t>(position)) {}

  bool is_position() const noexcept { return key_.index() == 0; }
  std::int64_t position() const { return std::get<0>(key_); }
  const std::string& name() const { return std::get<1>(key_); }
  friend bool operator==(const Key&, const Key&) = default;

 private:
  std::variant<std::int64_t, std::string> key_;
};

/// PPE's `_as_key_indices`: positions of `keys` in `names` (a position out of
/// range or an unknown name is `std::out_of_range` naming it and the keys).
PPE_DECL std::vector<std::size_t> key_indices_of(const std::vector<Key>& keys, const std::vector<std::string>& names);

namespace detail {
/// The mode a transformation's result type gives: Tuple, Dict or Unary.
template <class R, class TupleT, class DictT, class UnaryT>
constexpr std::optional<Mode> result_mode() {
  if constexpr (std::convertible_to<R, TupleT>) return Mode::Tuple;
  else if constexpr (std::convertible_to<R, DictT>) return Mode::Dict;
  else if constexpr (std::constructible_from<UnaryT, R>) return Mode::Unary;
  else return std::nullopt;
}
}  // namespace detail

/// One transformation of `TabularDataset::transform` (PPE's
/// `((inputs, outputs), fn)`): `fn(example)` receives an `Example` of the
/// `inputs` columns (in the source dataset's mode) and returns the `outputs`:
/// a `Tuple` (in the order of `outputs`), a `Dict` (by key) or one value
/// (anything a `Value` is made from; then `outputs` has one key). The return
/// type fixes the transformed dataset's mode at compile time.
class Transformation {
 public:
  template <class F>
    requires std::invocable<const F&, const Example&>
  Transformation(std::vector<Key> inputs, std::vector<std::string> outputs, F fn)
      : inputs_(std::move(inputs)), outputs_(std::move(outputs)) {
    using R = std::invoke_result_t<const F&, const Example&>;
    constexpr auto mode = detail::result_mode<R, Tuple, Dict, Value>();
    static_assert(mode.has_value(),
                  "ppe::dataset::tabular::Transformation: the function must return a Tuple, a Dict or a Value");
    mode_ = *mode;
    fn_ = [fn = std::move(fn)](const Example& ex, std::vector<std::string>* dict_keys) {
      constexpr Mode m = *detail::result_mode<R, Tuple, Dict, Value>();
      if constexpr (m == Mode::Dict) {
        const Dict d(fn(ex));
        std::vector<Value> values;
        for (const auto& [k, v] : d) {
          dict_keys->push_back(k);
          values.push_back(v);
        }
        return values;
      } else if constexpr (m == Mode::Tuple) {
        return Tuple(fn(ex));
      } else {
        return std::vector<Value>{Value(fn(ex))};
      }
    };
  }

  const std::vector<Key>& inputs() const noexcept { return inputs_; }
  const std::vector<std::string>& outputs() const noexcept { return outputs_; }
  /// The mode of the function's results.
  Mode mode() const noexcept { return mode_; }
  /// Calls the function: the values, and for a Dict result the keys in `dict_keys`.
  std::vector<Value> operator()(const Example& ex, std::vector<std::string>* dict_keys) const {
    return fn_(ex, dict_keys);
  }

 private:
  std::vector<Key> inputs_;
  std::vector<std::string> outputs_;
  Mode mode_ = Mode::Tuple;
  std::function<std::vector<Value>(const Example&, std::vector<std::string>*)> fn_;
};

/// One transformation of `TabularDataset::transform_batch`: like
/// `Transformation`, but `fn(columns)` receives `Columns` (the requested rows
/// of the `inputs`) and returns a `ColumnTuple`, a `ColumnDict` or one
/// `Column`, each with as many rows as it received.
class BatchTransformation {
 public:
  template <class F>
    requires std::invocable<const F&, const Columns&>
  BatchTransformation(std::vector<Key> inputs, std::vector<std::string> outputs, F fn)
      : inputs_(std::move(inputs)), outputs_(std::move(outputs)) {
    using R = std::invoke_result_t<const F&, const Columns&>;
    constexpr auto mode = detail::result_mode<R, ColumnTuple, ColumnDict, Column>();
    static_assert(mode.has_value(),
                  "ppe::dataset::tabular::BatchTransformation: the function must return a ColumnTuple, a "
                  "ColumnDict or a Column");
    mode_ = *mode;
    fn_ = [fn = std::move(fn)](const Columns& cols, std::vector<std::string>* dict_keys) {
      constexpr Mode m = *detail::result_mode<R, ColumnTuple, ColumnDict, Column>();
      if constexpr (m == Mode::Dict) {
        const ColumnDict d(fn(cols));
        std::vector<Column> values;
        for (const auto& [k, v] : d) {
          dict_keys->push_back(k);
          values.push_back(v);
        }
        return values;
      } else if constexpr (m == Mode::Tuple) {
        return ColumnTuple(fn(cols));
      } else {
        return std::vector<Column>{Column(fn(cols))};
      }
    };
  }

  const std::vector<Key>& inputs() const noexcept { return inputs_; }
  const std::vector<std::string>& outputs() const noexcept { return outputs_; }
  Mode mode() const noexcept { return mode_; }
  std::vector<Column> operator()(const Columns& cols, std::vector<std::string>* dict_keys) const {
    return fn_(cols, dict_keys);
  }

 private:
  std::vector<Key> inputs_;
  std::vector<std::string> outputs_;
  Mode mode_ = Mode::Tuple;
  std::function<std::vector<Column>(const Columns&, std::vector<std::string>*)> fn_;
};

class TabularDataset;
/// How datasets and views are held.
using TabularPtr = std::shared_ptr<const TabularDataset>;

/// A converter of `with_converter`: fetched columns in, converted columns out.
using Converter = std::function<Columns(const Columns&)>;

/// A tabular dataset (PPE's `TabularDataset`): `size()` rows, each with the
/// columns `keys()`, represented in `mode()`. A subclass implements `size`,
/// `keys`, `mode` and `get_examples`; everything else is built on these.
/// Create datasets with `std::make_shared` (views keep their parents alive).
/// All member functions are const and may be called from several threads
/// at once (LibTorch's loader workers) if the subclass's are.
class TabularDataset : public std::enable_shared_from_this<TabularDataset> {
 public:
  virtual ~TabularDataset() = default;

  /// The number of rows (PPE's `__len__`).
  virtual std::int64_t size() const = 0;
  /// The names of the columns.
  virtual const std::vector<std::string>& keys() const = 0;
  /// How `fetch`, `get_example` and iteration represent their results.
  virtual Mode mode() const = 0;
  /// The columns `key_indices` (all if `std::nullopt`, in that order) of the
  /// rows `rows` (all, a slice, or a list of valid non-negative indices): one
  /// `Column` per requested key.
  virtual std::vector<Column> get_examples(const Rows& rows, const KeyIndices& key_indices) const = 0;
  /// Converts fetched data for a model (PPE's `convert`): by default every
  /// column becomes a tensor (`Column::to_tensor`); `with_converter` replaces it.
  PPE_DECL virtual Columns convert(const Columns& data) const;

  /// Every column of every row, in `mode()` (PPE's `fetch`).
  PPE_DECL Columns fetch() const;
  /// Row `i` (negative counts from the end), in `mode()`.
  PPE_DECL Example get_example(std::int64_t i) const;
  Example operator[](std::int64_t i) const { return get_example(i); }
  /// The rows `rows` selects as examples (PPE's `dataset[slice]`, `dataset[list]`).
  PPE_DECL std::vector<Example> get_example_list(const Rows& rows) const;

  /// A view of the rows `rows` with all columns, in the same mode (PPE's `slice[rows]`).
  PPE_DECL TabularPtr slice(Rows rows) const;
  /// A view of the rows `rows` and the columns `keys` (names or positions):
  /// PPE's `slice[rows, (k, ...)]`, in this dataset's mode (tuple if unary).
  PPE_DECL TabularPtr slice(Rows rows, std::vector<Key> keys) const;
  /// A unary view of one column (a name or a position): PPE's `slice[rows, k]`.
  template <class K>
    requires std::constructible_from<Key, K>
  TabularPtr slice(Rows rows, K&& key) const {
    return slice_key(std::move(rows), Key(std::forward<K>(key)));
  }
  /// The same, non-template.
  PPE_DECL TabularPtr slice_key(Rows rows, Key key) const;
  /// This dataset in tuple mode.
  PPE_DECL TabularPtr astuple() const;
  /// This dataset in dict mode.
  PPE_DECL TabularPtr asdict() const;
  /// The rows of this dataset, then those of `others` (same keys in the same
  /// order, else `std::invalid_argument`); mode and converter of this one.
  PPE_DECL TabularPtr concat(std::vector<TabularPtr> others) const;
  template <class... D>
  TabularPtr concat(const std::shared_ptr<D>&... others) const {
    return concat(std::vector<TabularPtr>{others...});
  }
  /// The columns of this dataset, then those of `others` (same number of rows
  /// and no key twice, else `std::invalid_argument`); the mode is the first
  /// non-unary mode among them, else tuple; the converter is this one's.
  PPE_DECL TabularPtr join(std::vector<TabularPtr> others) const;
  template <class... D>
  TabularPtr join(const std::shared_ptr<D>&... others) const {
    return join(std::vector<TabularPtr>{others...});
  }
  /// A view whose columns `keys` are computed example by example by
  /// `transforms` (disjoint outputs that together are exactly `keys`, else
  /// `std::invalid_argument`); its mode is that of the transformations'
  /// results (they must agree). Only the transformations that produce a
  /// requested column run.
  PPE_DECL TabularPtr transform(std::vector<std::string> keys, std::vector<Transformation> transforms) const;
  /// As `transform`, with transformations applied to whole columns at once.
  PPE_DECL TabularPtr transform_batch(std::vector<std::string> keys,
                                      std::vector<BatchTransformation> transforms) const;
  /// This dataset with `convert` replaced by `converter`.
  PPE_DECL TabularPtr with_converter(Converter converter) const;

  /// This dataset as a `std::shared_ptr` (`std::logic_error` naming the cure
  /// if it was not created by `std::make_shared`).
  PPE_DECL TabularPtr shared() const;

  /// A random-access iterator over the examples (range-v3 and C++20 ranges
  /// see the dataset as a sized random-access range of `Example` values).
  class Iterator {
   public:
    using iterator_concept = std::random_access_iterator_tag;
    using iterator_category = std::input_iterator_tag;  // yields values, not references
    using value_type = Example;
    using difference_type = std::ptrdiff_t;
    using reference = Example;

    Iterator() = default;
    Iterator(const TabularDataset* dataset, std::int64_t index) : dataset_(dataset), index_(index) {}
    Example operator*() const { return dataset_->get_example(index_); }
    Example operator[](difference_type n) const { return dataset_->get_example(index_ + n); }
    Iterator& operator++() { ++index_; return *this; }
    Iterator operator++(int) { auto old = *this; ++index_; return old; }
    Iterator& operator--() { --index_; return *this; }
    Iterator operator--(int) { auto old = *this; --index_; return old; }
    Iterator& operator+=(difference_type n) { index_ += n; return *this; }
    Iterator& operator-=(difference_type n) { index_ -= n; return *this; }
    friend Iterator operator+(Iterator it, difference_type n) { return it += n; }
    friend Iterator operator+(difference_type n, Iterator it) { return it += n; }
    friend Iterator operator-(Iterator it, difference_type n) { return it -= n; }
    friend difference_type operator-(const Iterator& a, const Iterator& b) {
      return static_cast<difference_type>(a.index_ - b.index_);
    }
    friend bool operator==(const Iterator& a, const Iterator& b) { return a.index_ == b.index_; }
    friend auto operator<=>(const Iterator& a, const Iterator& b) { return a.index_ <=> b.index_; }

   private:
    const TabularDataset* dataset_ = nullptr;
    std::int64_t index_ = 0;
  };
  Iterator begin() const { return Iterator(this, 0); }
  Iterator end() const { return Iterator(this, size()); }
};

/// A base for custom datasets that delegate to a dataset built from parts
/// (PPE's `DelegateDataset`): size, keys, mode and `get_examples` are those
/// of `dataset()`; `convert` is the default one (as in PPE).
class DelegateDataset : public TabularDataset {
 public:
  explicit DelegateDataset(TabularPtr dataset) : dataset_(std::move(dataset)) {
    if (!dataset_) throw std::invalid_argument("ppe::dataset::tabular::DelegateDataset: the dataset is null");
  }
  const TabularPtr& dataset() const noexcept { return dataset_; }

  std::int64_t size() const override { return dataset_->size(); }
  const std::vector<std::string>& keys() const override { return dataset_->keys(); }
  Mode mode() const override { return dataset_->mode(); }
  std::vector<Column> get_examples(const Rows& rows, const KeyIndices& key_indices) const override {
    return dataset_->get_examples(rows, key_indices);
  }

 private:
  TabularPtr dataset_;
};

/// Collates examples the way PyTorch's `default_collate` does: per key, the
/// values stacked into one tensor (integers as int64, numbers as float64).
/// Strings, mixed keys or modes are `std::invalid_argument`.
PPE_DECL Batch collate(const std::vector<Example>& examples);

namespace detail {
/// What the LibTorch adapters share: duck-typed as LibTorch's `Dataset`
/// (`make_data_loader` and `torch::data::datasets::map` need only these).
template <class Derived, class Batch>
class TorchAdapterBase {
 public:
  using ExampleType = Example;
  using BatchType = Batch;
  using BatchRequestType = c10::ArrayRef<std::size_t>;
  static constexpr bool is_stateful = false;

  explicit TorchAdapterBase(TabularPtr dataset) : dataset_(std::move(dataset)) {
    if (!dataset_) throw std::invalid_argument("ppe::dataset::tabular: the torch::data adapter got a null dataset");
  }
  /// Example `index`.
  Example get(std::size_t index) const { return dataset_->get_example(static_cast<std::int64_t>(index)); }
  c10::optional<std::size_t> size() const { return static_cast<std::size_t>(dataset_->size()); }
  /// LibTorch's `dataset.map(transform)`.
  template <class T>
  torch::data::datasets::MapDataset<Derived, T> map(T transform) const {
    return torch::data::datasets::map(static_cast<const Derived&>(*this), std::move(transform));
  }
  const TabularPtr& dataset() const noexcept { return dataset_; }

 protected:
  TabularPtr dataset_;
};
/// The columns of the rows `indices` (one `get_examples` call) and the mode.
PPE_DECL Columns fetch_rows(const TabularDataset& dataset, c10::ArrayRef<std::size_t> indices);
}  // namespace detail

/// A tabular dataset as a LibTorch dataset of `Example`s: batches are
/// `std::vector<Example>`, read with one `get_examples` call each.
class TorchDataset : public detail::TorchAdapterBase<TorchDataset, std::vector<Example>> {
 public:
  using TorchAdapterBase::TorchAdapterBase;
  PPE_DECL std::vector<Example> get_batch(c10::ArrayRef<std::size_t> indices) const;
};

/// A tabular dataset as a LibTorch dataset of collated batches (what a
/// PyTorch `DataLoader` yields by default): one tensor per key, in the
/// dataset's mode, read with one `get_examples` call per batch.
class CollatedTorchDataset : public detail::TorchAdapterBase<CollatedTorchDataset, Batch> {
 public:
  using TorchAdapterBase::TorchAdapterBase;
  PPE_DECL Batch get_batch(c10::ArrayRef<std::size_t> indices) const;
};

}  // namespace ppe::dataset::tabular

namespace ppe::dataset {
using tabular::TabularDataset;
}  // namespace ppe::dataset

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/dataset/tabular/impl/tabular_dataset.ipp"
#endif
