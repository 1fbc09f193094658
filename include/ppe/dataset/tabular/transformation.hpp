#pragma once
/// \file
/// `ppe::dataset::tabular::Transformation` and `BatchTransformation`: the
/// functions that `TabularDataset::transform` and `transform_batch` apply
/// (PPE's `((inputs, outputs), fn)` pairs), and what they may return.

#include <concepts>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ppe/dataset/tabular/column.hpp"
#include "ppe/dataset/tabular/key.hpp"
#include "ppe/dataset/tabular/record.hpp"
#include "ppe/dataset/tabular/value.hpp"

namespace ppe::dataset::tabular {

/// What a per-example transformation may return: several values in order
/// (a tuple), values by key (a dict), or one value (unary).
using Tuple = std::vector<Value>;
using Dict = std::map<std::string, Value, std::less<>>;
/// What a batch transformation may return, column-wise.
using ColumnTuple = std::vector<Column>;
using ColumnDict = std::map<std::string, Column, std::less<>>;

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

}  // namespace ppe::dataset::tabular
