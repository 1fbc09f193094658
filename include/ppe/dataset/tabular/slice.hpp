#pragma once
/// \file
/// The view of `TabularDataset::slice` (PPE's `ppe.dataset.tabular._slice`):
/// some rows and some columns of a dataset.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ppe/dataset/tabular/tabular_dataset.hpp"
#include "ppe/detail/config.hpp"

namespace ppe::dataset::tabular::detail {

/// PPE's `_Slice`: the view of `slice[rows]` (`unary` unset: the parent's
/// mode), `slice[rows, keys]` (`unary` false: the parent's mode, tuple for a
/// unary parent) and `slice[rows, key]` (`unary` true).
class SliceView final : public TabularDataset {
 public:
  SliceView(TabularPtr parent, Rows rows, KeyIndices key_indices, std::optional<bool> unary)
      : parent_(std::move(parent)), rows_(std::move(rows)), key_indices_(std::move(key_indices)), unary_(unary) {
    size_ = rows_.count(parent_->size());
    if (key_indices_)
      for (const auto i : *key_indices_) keys_.push_back(parent_->keys()[i]);
  }
  std::int64_t size() const override { return size_; }
  const std::vector<std::string>& keys() const override { return key_indices_ ? keys_ : parent_->keys(); }
  Mode mode() const override {
    if (!unary_) return parent_->mode();
    if (*unary_) return Mode::Unary;
    return parent_->mode() == Mode::Unary ? Mode::Tuple : parent_->mode();
  }
  PPE_DECL std::vector<Column> get_examples(const Rows& rows, const KeyIndices& key_indices) const override;
  Columns convert(const Columns& data) const override { return parent_->convert(data); }

 private:
  TabularPtr parent_;
  Rows rows_;
  KeyIndices key_indices_;
  std::optional<bool> unary_;
  std::int64_t size_ = 0;
  std::vector<std::string> keys_;
};

}  // namespace ppe::dataset::tabular::detail

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/dataset/tabular/impl/slice.ipp"
#endif
