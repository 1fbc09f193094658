#pragma once
/// \file
/// `DistributedValidationSampler`: splits a dataset among the processes of a
/// distributed job without repeating a sample, for evaluation (each sample is
/// evaluated exactly once over all ranks). PPE's
/// `ppe.distributed.DistributedValidationSampler`, index for index.
///
/// \code
///   ppe::distributed::DistributedValidationSampler sampler(*dataset.size(), world_size, rank);
///   auto loader = torch::data::make_data_loader(dataset, sampler, torch::data::DataLoaderOptions(64));
/// \endcode
///
/// The order, as in PPE: with `shuffle`, the permutation `torch.randperm(N)`
/// draws from a fresh generator seeded with `seed` (`torch.Generator()
/// .manual_seed(seed)` in Python), the same on every rank and every epoch;
/// without, 0, 1, ..., N - 1. It is cut with `numpy.array_split` semantics:
/// `num_replicas` consecutive chunks, the first `N % num_replicas` one sample
/// longer than the others. So ranks may get different counts (do not use it
/// for training, where every rank must run the same number of steps; use
/// `create_distributed_subset_indices` or a DistributedSampler there).
///
/// Because LibTorch's CPU generator and `randperm` are the ones Python's torch
/// uses, a C++ rank and a Python rank with the same seed (and the same
/// LibTorch version) evaluate complementary parts of the dataset. As in
/// PyTorch, only the low 32 bits of the seed reach the generator: seeds that
/// differ only above bit 31 give the same order.
/// Feature: ppe::distributed (Meson and pkg-config: ppe-distributed).

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/randperm.h>
#include <c10/core/TensorOptions.h>
#include <torch/data/samplers/base.h>
#include <torch/serialize/archive.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "ppe/distributed/detail/check_replicas.hpp"
#include "ppe/distributed/initialize.hpp"

namespace ppe::distributed {

/// A sampler over this rank's share of a dataset: no sample is shared by two
/// ranks, and the shares of ranks 0 .. num_replicas - 1 together are the whole
/// dataset. Derives from `torch::data::samplers::Sampler<>`, so it plugs into
/// `torch::data::make_data_loader(dataset, sampler, options)`. Every pass
/// (`reset`) serves the same indices in the same order.
class DistributedValidationSampler : public torch::data::samplers::Sampler<> {
 public:
  /// The share of process `rank` (in [0, num_replicas - 1]) among
  /// `num_replicas` processes, of a dataset of `dataset_size` samples;
  /// shuffled with `seed` when `shuffle` (the same arguments, in the same
  /// order, as PPE's with explicit `num_replicas` and `rank`). No process group
  /// is needed. Throws `std::invalid_argument` when `num_replicas < 1` or
  /// `rank` is outside [0, num_replicas - 1].
  DistributedValidationSampler(std::size_t dataset_size, int num_replicas, int rank, bool shuffle = true,
                               std::uint64_t seed = 0)
      : num_replicas_(num_replicas), rank_(rank), shuffle_(shuffle), seed_(seed) {
    detail::check_replicas("ppe::distributed::DistributedValidationSampler", num_replicas, rank);
    compute(dataset_size);
  }

  /// PPE's form without ranks: this process's share in the default group
  /// (`ppe::distributed::initialize`); throws `std::logic_error` without one.
  static DistributedValidationSampler from_process_group(std::size_t dataset_size, bool shuffle = true,
                                                         std::uint64_t seed = 0) {
    if (!is_initialized())
      throw std::logic_error(
          "ppe::distributed::DistributedValidationSampler: no default process group to take the rank and world size "
          "from (call ppe::distributed::initialize() first, or pass num_replicas and rank)");
    const ProcessInfo info = process_info();
    return DistributedValidationSampler(dataset_size, info.world_size, info.rank, shuffle, seed);
  }

  // ---- torch::data::samplers::Sampler -------------------------------------
  /// Starts a pass from the first index of this rank's share. A `new_size`
  /// (the dataset's new size, as LibTorch's samplers take it) recomputes the
  /// share for that size.
  void reset(c10::optional<std::size_t> new_size = c10::nullopt) override {
    if (new_size && *new_size != dataset_size_) compute(*new_size);
    position_ = 0;
  }

  /// The next `batch_size` indices of this rank's share (fewer at its end,
  /// none after it).
  c10::optional<std::vector<std::size_t>> next(std::size_t batch_size) override {
    if (position_ >= indices_.size()) return c10::nullopt;
    const std::size_t n = std::min(batch_size, indices_.size() - position_);
    const auto first = indices_.begin() + static_cast<std::ptrdiff_t>(position_);
    position_ += n;
    return std::vector<std::size_t>(first, first + static_cast<std::ptrdiff_t>(n));
  }

  /// Saves the position in the share (key `index`, as LibTorch's
  /// SequentialSampler); the share itself follows from the constructor's
  /// arguments.
  void save(torch::serialize::OutputArchive& archive) const override {
    archive.write("index", c10::IValue(static_cast<std::int64_t>(position_)));
  }
  /// Restores the position `save` wrote. Throws `std::invalid_argument` when
  /// it is not an integer in [0, size()].
  void load(torch::serialize::InputArchive& archive) override {
    c10::IValue v;
    archive.read("index", v);
    if (!v.isInt() || v.toInt() < 0 || static_cast<std::uint64_t>(v.toInt()) > indices_.size())
      throw std::invalid_argument(
          "ppe::distributed::DistributedValidationSampler::load: 'index' is not an integer in [0, " +
          std::to_string(indices_.size()) + "] in the archive");
    position_ = static_cast<std::size_t>(v.toInt());
  }

  // ---- queries -------------------------------------------------------------
  /// The number of samples of this rank (`len(sampler)` in PPE):
  /// `N / num_replicas`, plus one for the first `N % num_replicas` ranks.
  std::size_t size() const noexcept { return indices_.size(); }
  /// This rank's indices, in the order a pass serves them (`list(sampler)`).
  const std::vector<std::size_t>& indices() const noexcept { return indices_; }
  std::size_t dataset_size() const noexcept { return dataset_size_; }
  int num_replicas() const noexcept { return num_replicas_; }
  int rank() const noexcept { return rank_; }
  bool shuffle() const noexcept { return shuffle_; }
  std::uint64_t seed() const noexcept { return seed_; }

 private:
  void compute(std::size_t dataset_size) {
    if (dataset_size > static_cast<std::size_t>(std::numeric_limits<std::int64_t>::max()))
      throw std::invalid_argument("ppe::distributed::DistributedValidationSampler: dataset size " +
                                  std::to_string(dataset_size) + " does not fit in int64");
    // numpy.array_split: the first `longer` chunks hold `base + 1` samples.
    const auto replicas = static_cast<std::size_t>(num_replicas_);
    const auto r = static_cast<std::size_t>(rank_);
    const std::size_t base = dataset_size / replicas;
    const std::size_t longer = dataset_size % replicas;
    const std::size_t begin = r * base + std::min(r, longer);
    const std::size_t count = base + (r < longer ? 1 : 0);
    std::vector<std::size_t> indices(count);
    if (shuffle_) {
      // The whole permutation, as Python draws it; a fresh generator, never
      // LibTorch's global one, so the order does not depend on what else drew.
      at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(seed_);
      const at::Tensor perm =
          at::randperm(static_cast<std::int64_t>(dataset_size), gen, c10::TensorOptions().dtype(c10::kLong));
      const std::int64_t* p = perm.data_ptr<std::int64_t>();
      for (std::size_t i = 0; i < count; ++i) indices[i] = static_cast<std::size_t>(p[begin + i]);
    } else {
      std::iota(indices.begin(), indices.end(), begin);
    }
    indices_ = std::move(indices);
    dataset_size_ = dataset_size;
    position_ = 0;
  }

  std::size_t dataset_size_ = 0;
  int num_replicas_;
  int rank_;
  bool shuffle_;
  std::uint64_t seed_;
  std::vector<std::size_t> indices_;  // this rank's share, in serving order
  std::size_t position_ = 0;          // next entry of indices_ to serve
};

}  // namespace ppe::distributed
