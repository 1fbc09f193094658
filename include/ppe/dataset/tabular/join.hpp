#pragma once
/// \file
/// The view of `TabularDataset::join` (PPE's `ppe.dataset.tabular._join`):
/// the columns of several datasets with the same number of rows, side by
/// side.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ppe/dataset/tabular/tabular_dataset.hpp"
#include "ppe/detail/config.hpp"

namespace ppe::dataset::tabular::detail {

/// PPE's `_Join`: the view of `join()`, the columns of several datasets with
/// the same number of rows (the first non-unary mode among them, else tuple;
/// the first one's converter).
class Join final : public TabularDataset {
 public:
  /// Different lengths or a key twice are `std::invalid_argument`.
  PPE_DECL explicit Join(std::vector<TabularPtr> datasets);
  std::int64_t size() const override { return datasets_[0]->size(); }
  const std::vector<std::string>& keys() const override { return keys_; }
  Mode mode() const override {
    for (const auto& d : datasets_)
      if (d->mode() != Mode::Unary) return d->mode();
    return Mode::Tuple;
  }
  Columns convert(const Columns& data) const override { return datasets_[0]->convert(data); }

  PPE_DECL std::vector<Column> get_examples(const Rows& rows, const KeyIndices& key_indices) const override;

 private:
  std::vector<TabularPtr> datasets_;
  std::vector<std::string> keys_;
};

}  // namespace ppe::dataset::tabular::detail

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/dataset/tabular/impl/join.ipp"
#endif
