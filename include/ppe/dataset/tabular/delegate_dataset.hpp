#pragma once
/// \file
/// `ppe::dataset::tabular::DelegateDataset` (PPE's
/// `ppe.dataset.tabular.DelegateDataset`): a base for custom datasets that
/// delegate to a dataset built from parts.

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "ppe/dataset/tabular/tabular_dataset.hpp"

namespace ppe::dataset::tabular {

/// A base for custom datasets that delegate to a dataset built from parts
/// (PPE's `DelegateDataset`): size, keys, mode and `get_examples` are those
/// of `dataset()`; `convert` is the default one (as in PPE).
class DelegateDataset : public TabularDataset {
 public:
  explicit DelegateDataset(TabularPtr dataset) : dataset_(std::move(dataset)) {
    if (!dataset_) throw std::invalid_argument("ppe::dataset::tabular::DelegateDataset: the dataset is null");
  }
  const TabularPtr& dataset() const noexcept { return dataset_; }

  std::int64_t size() const override { return dataset_->size(); }
  const std::vector<std::string>& keys() const override { return dataset_->keys(); }
  Mode mode() const override { return dataset_->mode(); }
  std::vector<Column> get_examples(const Rows& rows, const KeyIndices& key_indices) const override {
    return dataset_->get_examples(rows, key_indices);
  }

 private:
  TabularPtr dataset_;
};

}  // namespace ppe::dataset::tabular
