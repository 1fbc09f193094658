#pragma once
/// \file
/// The view of `TabularDataset::transform` and `transform_batch` (PPE's
/// `ppe.dataset.tabular._transform`): columns computed from a dataset's by
/// `Transformation`s (transformation.hpp).

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ppe/dataset/tabular/tabular_dataset.hpp"
#include "ppe/dataset/tabular/transformation.hpp"
#include "ppe/detail/config.hpp"

namespace ppe::dataset::tabular::detail {

/// PPE's `_Transform` (`T` = `Transformation`) and `_TransformBatch` (`T` =
/// `BatchTransformation`): the view of `transform` and `transform_batch`,
/// which share the checks of the transformations and the bookkeeping of which
/// columns they read and write.
template <class T>
class TransformView final : public TabularDataset {
 public:
  /// Transformations that overlap, disagree in mode or do not produce exactly
  /// `keys` are `std::invalid_argument`.
  TransformView(TabularPtr parent, std::vector<std::string> keys, std::vector<T> transforms);

  std::int64_t size() const override { return parent_->size(); }
  const std::vector<std::string>& keys() const override { return keys_; }
  Mode mode() const override { return mode_; }
  Columns convert(const Columns& data) const override { return parent_->convert(data); }

  std::vector<Column> get_examples(const Rows& rows, const KeyIndices& key_indices) const override;

 private:
  /// The results of `t` in the order of its outputs (pointers into `result`).
  template <class V>
  static std::vector<const V*> in_output_order(const T& t, const std::vector<V>& result,
                                               const std::vector<std::string>& dict_keys);

  TabularPtr parent_;
  std::vector<std::string> keys_;
  std::vector<T> transforms_;
  std::vector<std::vector<std::size_t>> ops_, res_;
  Mode mode_ = Mode::Tuple;
};

}  // namespace ppe::dataset::tabular::detail

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/dataset/tabular/impl/transform.ipp"
#endif
