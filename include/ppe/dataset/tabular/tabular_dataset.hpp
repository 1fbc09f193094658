#pragma once
/// \file
/// `ppe::dataset::tabular::TabularDataset` (PPE's `ppe.dataset.TabularDataset`,
/// Chainer's tabular API): a dataset of rows that all have the same named
/// columns, read column-wise in bulk (`get_examples`, `fetch`) or row by row
/// (`get_example`, iteration), and the lazy views built on it: `slice`,
/// `astuple`, `asdict`, `concat`, `join`, `transform`, `transform_batch`,
/// `with_converter` (each view in the header named after PPE's module:
/// slice.hpp, asmode.hpp, concat.hpp, join.hpp, transform.hpp,
/// with_converter.hpp). A dataset is also a range-v3 random-access range of
/// its examples. `<ppe/dataset/tabular.hpp>` includes the whole tabular API
/// (`from_data`, `DelegateDataset`, the LibTorch adapters).
///
/// Values are dynamically typed, as in PPE: a cell is a `Value` (an integer,
/// a double, a string or a tensor; value.hpp) and a column is a `Column`
/// (column.hpp), either a list of values or one tensor whose first dimension
/// indexes the rows (PPE's list or ndarray). Rows are selected with `Rows`
/// (rows.hpp: all, a Python slice, a list of indices or a boolean mask),
/// columns by `Key` (key.hpp: name or position); results are `Record`s
/// (record.hpp). Datasets are shared and immutable: views hold their parents
/// through `std::shared_ptr<const TabularDataset>`, so a dataset is created
/// with `std::make_shared`.

#include <compare>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <iterator>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ppe/dataset/tabular/column.hpp"
#include "ppe/dataset/tabular/key.hpp"
#include "ppe/dataset/tabular/record.hpp"
#include "ppe/dataset/tabular/rows.hpp"
#include "ppe/dataset/tabular/transformation.hpp"
#include "ppe/detail/config.hpp"

namespace ppe::dataset::tabular {

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

}  // namespace ppe::dataset::tabular

namespace ppe::dataset {
using tabular::TabularDataset;
}  // namespace ppe::dataset

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/dataset/tabular/impl/tabular_dataset.ipp"
#endif
