// Definitions of dataset/tabular/torch_dataset.hpp (collate and the LibTorch
// adapters): included by it when header-only, compiled once by impl/src.hpp
// with PPE_SEPARATE_COMPILATION.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "ppe/dataset/tabular/torch_dataset.hpp"

namespace ppe::dataset::tabular {

namespace detail {

PPE_DECL Columns fetch_rows(const TabularDataset& dataset, c10::ArrayRef<std::size_t> indices) {
  std::vector<std::int64_t> list(indices.begin(), indices.end());
  const Rows rows = Rows(std::move(list)).normalized(dataset.size());
  return Columns(dataset.mode(), dataset.keys(), dataset.get_examples(rows, std::nullopt));
}

}  // namespace detail

PPE_DECL Batch collate(const std::vector<Example>& examples) {
  if (examples.empty()) throw std::invalid_argument("ppe::dataset::tabular::collate: no examples to collate");
  const Example& first = examples[0];
  std::vector<at::Tensor> out;
  for (std::size_t k = 0; k < first.size(); ++k) {
    std::vector<Value> values;
    values.reserve(examples.size());
    for (const auto& ex : examples) {
      if (ex.mode() != first.mode() || ex.keys() != first.keys())
        throw std::invalid_argument("ppe::dataset::tabular::collate: the examples differ in mode or keys");
      values.push_back(ex[k]);
    }
    out.push_back(Column(std::move(values)).to_tensor("the key '" + first.keys()[k] + "'"));
  }
  return Batch(first.mode(), first.shared_keys(), std::move(out));
}

PPE_DECL std::vector<Example> TorchDataset::get_batch(c10::ArrayRef<std::size_t> indices) const {
  const Columns cols = detail::fetch_rows(*dataset_, indices);
  std::vector<Example> out;
  out.reserve(indices.size());
  for (std::size_t r = 0; r < indices.size(); ++r) {
    std::vector<Value> values;
    for (const auto& c : cols.values()) values.push_back(c.at(static_cast<std::int64_t>(r)));
    out.emplace_back(cols.mode(), cols.shared_keys(), std::move(values));
  }
  return out;
}

PPE_DECL Batch CollatedTorchDataset::get_batch(c10::ArrayRef<std::size_t> indices) const {
  const Columns cols = detail::fetch_rows(*dataset_, indices);
  std::vector<at::Tensor> out;
  for (std::size_t k = 0; k < cols.size(); ++k) out.push_back(cols[k].to_tensor("the key '" + cols.keys()[k] + "'"));
  return Batch(cols.mode(), cols.shared_keys(), std::move(out));
}

}  // namespace ppe::dataset::tabular
