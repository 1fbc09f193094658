#pragma once
/// \file
/// The view of `TabularDataset::astuple` and `asdict` (PPE's
/// `ppe.dataset.tabular._asmode`): the same data in another mode.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ppe/dataset/tabular/tabular_dataset.hpp"
#include "ppe/detail/config.hpp"

namespace ppe::dataset::tabular::detail {

/// PPE's `_Astuple` / `_Asdict`: the view of `astuple()` / `asdict()`,
/// another mode with the same data and converter.
class AsMode final : public TabularDataset {
 public:
  AsMode(TabularPtr parent, Mode mode) : parent_(std::move(parent)), mode_(mode) {}
  std::int64_t size() const override { return parent_->size(); }
  const std::vector<std::string>& keys() const override { return parent_->keys(); }
  Mode mode() const override { return mode_; }
  std::vector<Column> get_examples(const Rows& rows, const KeyIndices& key_indices) const override {
    return parent_->get_examples(rows, key_indices);
  }
  Columns convert(const Columns& data) const override { return parent_->convert(data); }

 private:
  TabularPtr parent_;
  Mode mode_;
};

}  // namespace ppe::dataset::tabular::detail

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/dataset/tabular/impl/asmode.ipp"
#endif
