#pragma once
// A dataset whose sample i is the number i (batches are std::vector<size_t>),
// counting how many samples were fetched, for the data loader tests.

#include <atomic>
#include <cstddef>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <torch/data/datasets/base.h>

namespace ppe_test {

struct IndexDataset : torch::data::datasets::Dataset<IndexDataset, std::size_t> {
  explicit IndexDataset(std::size_t n, std::optional<std::size_t> fail_at = std::nullopt)
      : n(n), fail_at(fail_at) {}
  std::size_t get(std::size_t index) override {
    if (fail_at && index == *fail_at) throw std::runtime_error("IndexDataset: sample " + std::to_string(index));
    fetched->fetch_add(1);
    return index;
  }
  c10::optional<std::size_t> size() const override { return n; }

  std::size_t n;
  std::optional<std::size_t> fail_at;
  // Shared by the copies the loader's workers hold.
  std::shared_ptr<std::atomic<std::size_t>> fetched = std::make_shared<std::atomic<std::size_t>>(0);
};

using Batch = std::vector<std::size_t>;
using Batches = std::vector<Batch>;

}  // namespace ppe_test
