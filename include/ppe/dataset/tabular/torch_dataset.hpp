#pragma once
/// \file
/// `ppe::dataset::tabular::TorchDataset` and `CollatedTorchDataset`:
/// adapters that `torch::data::make_data_loader` accepts (PyTorch's
/// `DataLoader` takes PPE's datasets as they are), and `collate`, PyTorch's
/// `default_collate` for examples.

#include <ATen/core/Tensor.h>
#include <c10/util/ArrayRef.h>
#include <c10/util/Optional.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <utility>
#include <vector>

#include "ppe/dataset/tabular/record.hpp"
#include "ppe/dataset/tabular/tabular_dataset.hpp"
#include "ppe/detail/config.hpp"

// LibTorch's own forward declaration (torch/data/datasets/base.h), so that the
// adapters offer `.map(transform)` without this header including torch/data.
namespace torch::data::datasets {
template <typename S, typename T>
class MapDataset;
template <typename D, typename T>
MapDataset<D, T> map(D, T);  // NOLINT
}  // namespace torch::data::datasets

namespace ppe::dataset::tabular {

/// Collates examples the way PyTorch's `default_collate` does: per key, the
/// values stacked into one tensor (integers as int64, numbers as float64).
/// Strings, mixed keys or modes are `std::invalid_argument`.
PPE_DECL Batch collate(const std::vector<Example>& examples);

namespace detail {
/// What the LibTorch adapters share: duck-typed as LibTorch's `Dataset`
/// (`make_data_loader` and `torch::data::datasets::map` need only these).
template <class Derived, class Batch>
class TorchAdapterBase {
 public:
  using ExampleType = Example;
  using BatchType = Batch;
  using BatchRequestType = c10::ArrayRef<std::size_t>;
  static constexpr bool is_stateful = false;

  explicit TorchAdapterBase(TabularPtr dataset) : dataset_(std::move(dataset)) {
    if (!dataset_) throw std::invalid_argument("ppe::dataset::tabular: the torch::data adapter got a null dataset");
  }
  /// Example `index`.
  Example get(std::size_t index) const { return dataset_->get_example(static_cast<std::int64_t>(index)); }
  c10::optional<std::size_t> size() const { return static_cast<std::size_t>(dataset_->size()); }
  /// LibTorch's `dataset.map(transform)`.
  template <class T>
  torch::data::datasets::MapDataset<Derived, T> map(T transform) const {
    return torch::data::datasets::map(static_cast<const Derived&>(*this), std::move(transform));
  }
  const TabularPtr& dataset() const noexcept { return dataset_; }

 protected:
  TabularPtr dataset_;
};
/// The columns of the rows `indices` (one `get_examples` call) and the mode.
PPE_DECL Columns fetch_rows(const TabularDataset& dataset, c10::ArrayRef<std::size_t> indices);
}  // namespace detail

/// A tabular dataset as a LibTorch dataset of `Example`s: batches are
/// `std::vector<Example>`, read with one `get_examples` call each.
class TorchDataset : public detail::TorchAdapterBase<TorchDataset, std::vector<Example>> {
 public:
  using TorchAdapterBase::TorchAdapterBase;
  PPE_DECL std::vector<Example> get_batch(c10::ArrayRef<std::size_t> indices) const;
};

/// A tabular dataset as a LibTorch dataset of collated batches (what a
/// PyTorch `DataLoader` yields by default): one tensor per key, in the
/// dataset's mode, read with one `get_examples` call per batch.
class CollatedTorchDataset : public detail::TorchAdapterBase<CollatedTorchDataset, Batch> {
 public:
  using TorchAdapterBase::TorchAdapterBase;
  PPE_DECL Batch get_batch(c10::ArrayRef<std::size_t> indices) const;
};

}  // namespace ppe::dataset::tabular

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/dataset/tabular/impl/torch_dataset.ipp"
#endif
