#pragma once
/// \file
/// The view of `TabularDataset::concat` (PPE's
/// `ppe.dataset.tabular._concat`): the rows of several datasets with the
/// same keys, one after the other.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ppe/dataset/tabular/tabular_dataset.hpp"
#include "ppe/detail/config.hpp"

namespace ppe::dataset::tabular::detail {

/// PPE's `_Concat`: the view of `concat()`, the rows of several datasets with
/// the same keys (the first one's mode and converter).
class Concat final : public TabularDataset {
 public:
  /// Different keys are `std::invalid_argument`.
  PPE_DECL explicit Concat(std::vector<TabularPtr> datasets);
  std::int64_t size() const override {
    std::int64_t n = 0;
    for (const auto& d : datasets_) n += d->size();
    return n;
  }
  const std::vector<std::string>& keys() const override { return datasets_[0]->keys(); }
  Mode mode() const override { return datasets_[0]->mode(); }
  Columns convert(const Columns& data) const override { return datasets_[0]->convert(data); }

  PPE_DECL std::vector<Column> get_examples(const Rows& rows, const KeyIndices& key_indices) const override;

 private:
  /// The columns of `parts` (each the first `n_cols` columns of one dataset) concatenated.
  PPE_DECL static std::vector<Column> concat_parts(const std::vector<std::vector<Column>>& parts, std::size_t n_cols);

  std::vector<TabularPtr> datasets_;
};

}  // namespace ppe::dataset::tabular::detail

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/dataset/tabular/impl/concat.ipp"
#endif
