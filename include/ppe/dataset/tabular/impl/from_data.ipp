// Definitions of dataset/tabular/from_data.hpp's out-of-line functions and of its datasets (PPE's
// _Array, _List and _Index): included by it when header-only, compiled once by impl/src.hpp with
// PPE_SEPARATE_COMPILATION.
#pragma once

#include <atomic>

#include "ppe/dataset/tabular/from_data.hpp"
#include "ppe/detail/python_repr.hpp"

namespace ppe::dataset::tabular::detail {

/// A unique key for an unnamed column (PPE uses `_<id(data)>`).
PPE_DECL std::string generated_key() {
  static std::atomic<std::uint64_t> next{0};
  return "_" + std::to_string(next.fetch_add(1));
}

/// One column (PPE's `_Array` and `_List`): a unary dataset.
class ColumnDataset final : public TabularDataset {
 public:
  ColumnDataset(std::string key, Column column) : keys_{std::move(key)}, column_(std::move(column)) {}
  std::int64_t size() const override { return column_.size(); }
  const std::vector<std::string>& keys() const override { return keys_; }
  Mode mode() const override { return Mode::Unary; }
  std::vector<Column> get_examples(const Rows& rows, const KeyIndices& key_indices) const override {
    const Column taken = column_.take(rows);
    return std::vector<Column>(key_indices ? key_indices->size() : 1, taken);
  }

 private:
  std::vector<std::string> keys_;
  Column column_;
};

/// The row indices (PPE's `_Index`): the unary dataset a function piece transforms.
class IndexDataset final : public TabularDataset {
 public:
  explicit IndexDataset(std::int64_t size) : size_(size) {}
  std::int64_t size() const override { return size_; }
  const std::vector<std::string>& keys() const override { return keys_; }
  Mode mode() const override { return Mode::Unary; }
  std::vector<Column> get_examples(const Rows& rows, const KeyIndices& key_indices) const override {
    std::vector<Value> indices;
    if (rows.kind() == Rows::Kind::List) {
      for (const auto i : rows.list()) indices.emplace_back(i);
    } else {
      const auto b = (rows.is_all() ? Slice() : rows.slice()).indices(size_);
      for (std::int64_t i = 0, n = b.length(); i < n; ++i) indices.emplace_back(b[i]);
    }
    return std::vector<Column>(key_indices ? key_indices->size() : 1, Column(std::move(indices)));
  }

 private:
  std::int64_t size_;
  std::vector<std::string> keys_{"index"};
};

}  // namespace ppe::dataset::tabular::detail

namespace ppe::dataset::tabular {

PPE_DECL TabularPtr Data::make_dataset(std::optional<std::int64_t> size) const {
  if (column_)
    return std::make_shared<detail::ColumnDataset>(keys_.empty() ? detail::generated_key() : keys_[0], *column_);
  if (!size)
    throw std::invalid_argument(
        "ppe::dataset::tabular::from_data: size must be specified for callable (the function of " +
        ppe::detail::python_str_tuple(keys_) + " gives no length; pass FromDataOptions().size(n) or a column)");
  if (*size < 0)
    throw std::invalid_argument("ppe::dataset::tabular::from_data: size must be >= 0, got " + std::to_string(*size));
  return std::make_shared<detail::IndexDataset>(*size)->transform(keys_, {*fn_});
}

PPE_DECL TabularPtr from_data(Data data, FromDataOptions options) { return data.make_dataset(options.size()); }

PPE_DECL TabularPtr from_data(std::vector<Data> data, FromDataOptions options) {
  if (data.empty()) throw std::invalid_argument("ppe::dataset::tabular::from_data: no data given");
  if (options.mode() == Mode::Unary)
    throw std::invalid_argument(
        "ppe::dataset::tabular::from_data: the mode of a list of pieces is Mode::Tuple or Mode::Dict, not None");
  std::optional<std::int64_t> size = options.size();
  for (const auto& d : data)
    if (!size && d.column()) size = d.column()->size();
  std::vector<TabularPtr> datasets;
  for (const auto& d : data) {
    if (options.mode() == Mode::Dict && d.keys().empty())
      throw std::invalid_argument("ppe::dataset::tabular::from_data: in dict mode every piece needs a key");
    datasets.push_back(d.make_dataset(size));
  }
  const TabularPtr first = datasets[0];
  datasets.erase(datasets.begin());
  const TabularPtr joined = first->join(std::move(datasets));
  return options.mode() == Mode::Dict ? joined->asdict() : joined->astuple();
}

}  // namespace ppe::dataset::tabular
