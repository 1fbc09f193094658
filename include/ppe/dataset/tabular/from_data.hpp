#pragma once
/// \file
/// `ppe::dataset::tabular::from_data` (PPE's `tabular.from_data`): a tabular
/// dataset made of columns (lists or tensors) and of functions of the row
/// index, one piece per column or group of columns.
///
/// \code
///   namespace tab = ppe::dataset::tabular;
///   auto a = tab::from_data(torch::arange(10));                       // unary, key generated
///   auto b = tab::from_data({"key_a", std::vector<std::int64_t>{2, 7, 1}});  // unary, key "key_a"
///   auto c = tab::from_data({"sq", [](std::int64_t i) { return i * i; }},
///                           tab::FromDataOptions().size(10));         // computed on demand
///   auto d = tab::from_data({{"x", torch::rand({10, 3})},
///                            {{"y", "z"}, [](std::int64_t i) { return tab::Tuple{i, -i}; }}});  // tuple mode
///   auto e = tab::from_data({{"x", torch::rand({10, 3})}, {"y", [](std::int64_t i) { return 2.0 * i; }}},
///                           tab::FromDataOptions().mode(tab::Mode::Dict));              // dict mode
/// \endcode

#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ppe/dataset/tabular/column.hpp"
#include "ppe/dataset/tabular/record.hpp"
#include "ppe/dataset/tabular/tabular_dataset.hpp"
#include "ppe/dataset/tabular/transformation.hpp"
#include "ppe/dataset/tabular/value.hpp"
#include "ppe/detail/arg.hpp"
#include "ppe/detail/config.hpp"

namespace ppe::dataset::tabular {

/// A function of the row index that `from_data` accepts: it returns a
/// `Tuple`, a `Dict` or one value (anything a `Value` is made from).
template <class F>
concept index_function =
    std::invocable<const F&, std::int64_t> &&
    detail::result_mode<std::invoke_result_t<const F&, std::int64_t>, Tuple, Dict, Value>().has_value();

/// Options of `from_data`.
struct FromDataOptions {
  /// The number of rows; needed when no piece is a column (PPE's `size`).
  PPE_ARG(std::optional<std::int64_t>, size);
  /// For a list of pieces: `Mode::Tuple` (PPE's tuple of pieces) or
  /// `Mode::Dict` (PPE's dict; every piece then needs a key).
  PPE_ARG(Mode, mode) = Mode::Tuple;
};

/// One piece of `from_data`'s input (PPE: a list/array, `(key, list/array)`,
/// `(key, callable)` or `((key, ...), callable)`).
class Data {
 public:
  /// A column without a key: a unique one (`_0`, `_1`, ...) is generated.
  template <class C>
    requires std::constructible_from<Column, C>
  Data(C&& column) : column_(Column(std::forward<C>(column))) {}
  /// A column named `key`.
  Data(std::string key, Column column) : keys_{std::move(key)}, column_(std::move(column)) {}
  /// The column `key` computed by `fn(index)` for each row.
  template <class F>
    requires index_function<F>
  Data(std::string key, F fn) : keys_{std::move(key)}, fn_(make(keys_, std::move(fn))) {}
  /// The columns `keys` computed by `fn(index)` for each row (a `Tuple` in
  /// the order of `keys` or a `Dict` by key).
  template <class F>
    requires index_function<F>
  Data(std::initializer_list<std::string> keys, F fn) : keys_(keys), fn_(make(keys_, std::move(fn))) {}
  template <class F>
    requires index_function<F>
  Data(std::vector<std::string> keys, F fn) : keys_(std::move(keys)), fn_(make(keys_, std::move(fn))) {}

  /// The keys given (empty for an unnamed column).
  const std::vector<std::string>& keys() const noexcept { return keys_; }
  /// The column, if this piece is one.
  const std::optional<Column>& column() const noexcept { return column_; }
  /// The dataset of this piece; `size` is used by a function piece (and
  /// required: `std::invalid_argument`).
  PPE_DECL TabularPtr make_dataset(std::optional<std::int64_t> size) const;

 private:
  template <class F>
  static Transformation make(const std::vector<std::string>& keys, F fn) {
    return Transformation({"index"}, keys,
                          [fn = std::move(fn)](const Example& ex) { return fn(ex.get<std::int64_t>(0)); });
  }

  std::vector<std::string> keys_;
  std::optional<Column> column_;
  std::optional<Transformation> fn_;
};

/// The dataset of one piece: a unary dataset for a column; for a function,
/// the mode of its results (PPE: `from_data(x)`, `from_data((key, x))`).
PPE_DECL TabularPtr from_data(Data data, FromDataOptions options = {});
/// The pieces joined, in `options.mode()` (tuple or dict). The number of rows
/// is that of the first column piece, else `options.size()`.
PPE_DECL TabularPtr from_data(std::vector<Data> data, FromDataOptions options = {});

}  // namespace ppe::dataset::tabular

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/dataset/tabular/impl/from_data.ipp"
#endif
