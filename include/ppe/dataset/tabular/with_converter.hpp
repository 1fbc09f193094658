#pragma once
/// \file
/// The view of `TabularDataset::with_converter` (PPE's
/// `ppe.dataset.tabular._with_converter`): the same data with another
/// converter.

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "ppe/dataset/tabular/tabular_dataset.hpp"
#include "ppe/detail/config.hpp"

namespace ppe::dataset::tabular::detail {

/// PPE's `_WithConverter`: the view of `with_converter()`, the same data
/// with another converter.
class WithConverter final : public TabularDataset {
 public:
  WithConverter(TabularPtr parent, Converter converter) : parent_(std::move(parent)), converter_(std::move(converter)) {
    if (!converter_) throw std::invalid_argument("ppe::dataset::tabular::with_converter: the converter is empty");
  }
  std::int64_t size() const override { return parent_->size(); }
  const std::vector<std::string>& keys() const override { return parent_->keys(); }
  Mode mode() const override { return parent_->mode(); }
  std::vector<Column> get_examples(const Rows& rows, const KeyIndices& key_indices) const override {
    return parent_->get_examples(rows, key_indices);
  }
  Columns convert(const Columns& data) const override { return converter_(data); }

 private:
  TabularPtr parent_;
  Converter converter_;
};

}  // namespace ppe::dataset::tabular::detail

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/dataset/tabular/impl/with_converter.ipp"
#endif
