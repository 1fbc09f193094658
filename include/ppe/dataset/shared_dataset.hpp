#pragma once
/// \file
/// `ppe::dataset::SharedDataset` (PPE's `ppe.dataset.SharedDataset`): a cache
/// of examples in shared memory, so that loaders that load an example once
/// (decoding a file, say) serve it from memory afterwards, across loader
/// worker threads and across `fork()`ed processes.
///
/// As in PPE, the cache is a fixed-shape buffer: `sm_size` is the shape of
/// all examples together (`{n, ...}`: example `i` is `buffer[i]`), stored as
/// float32 by default, and an example is cached once and kept (PPE's
/// `InfiniteCache`; there is no eviction). The memory is an anonymous shared
/// mapping made when the cache is: processes forked afterwards share it, as
/// PPE's `multiprocessing.Array` is shared with forked DataLoader workers.
/// Copies of a `SharedDataset` share its cache (LibTorch's loader copies the
/// dataset into each worker thread).
///
/// LibTorch datasets are classes, so the C++ form of PPE's subclass pattern is
/// a dataset deriving from both `torch::data::datasets::Dataset` and
/// `SharedDataset` (which does not include LibTorch's data headers):
/// \code
///   struct Decoded : torch::data::datasets::Dataset<Decoded, at::Tensor>, ppe::dataset::SharedDataset<> {
///     Decoded() : SharedDataset({100, 3, 32, 32}) {}
///     at::Tensor get(std::size_t i) override {
///       if (auto x = find(i)) return *x;            // PPE: super().__getitem__(idx)
///       at::Tensor x = decode(i);                   // the slow path, once per example
///       cache_item(i, x);
///       return x;
///     }
///     c10::optional<std::size_t> size() const override { return 100; }
///   };
/// \endcode

#include <ATen/core/Tensor.h>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <utility>
#include <vector>

#include "ppe/detail/config.hpp"

namespace ppe::dataset {

/// An example asked of a `SharedDataset` is not in its cache (PPE's `ItemNotFoundException`).
class ItemNotFoundException : public std::out_of_range {
 public:
  using std::out_of_range::out_of_range;
};

/// A cache of examples by index (PPE's `Cache` protocol): `is_cached(i)`,
/// `get_value(i)` (the example or nothing) and `add_to_cache(i, x)`, safe to
/// call from several threads at once.
template <class C>
concept example_cache = requires(C& c, const C& cc, std::int64_t i, const at::Tensor& x) {
  { cc.is_cached(i) } -> std::convertible_to<bool>;
  { cc.get_value(i) } -> std::same_as<std::optional<at::Tensor>>;
  c.add_to_cache(i, x);
};

/// PPE's `InfiniteCache`: one slot per example in a shared buffer of shape
/// `sm_size` and type `dtype`; a slot is written once and then kept. Each
/// slot has a state byte (empty, being written, ready) changed atomically, so
/// readers never see a half-written example and two writers of one slot do
/// not interleave (the second one skips: the example is the same). This holds
/// across threads and forked processes.
class InfiniteCache {
 public:
  /// `sm_size`: `{number of examples, example shape...}` (PPE's `sm_size`).
  PPE_DECL explicit InfiniteCache(std::vector<std::int64_t> sm_size, at::ScalarType dtype = at::kFloat);

  /// Whether example `idx` is in the cache.
  PPE_DECL bool is_cached(std::int64_t idx) const;
  /// Example `idx` (a view of the shared buffer, which it keeps alive; do
  /// not write to it), or nothing if it is not cached.
  PPE_DECL std::optional<at::Tensor> get_value(std::int64_t idx) const;
  /// Stores `x` as example `idx` (converted to the cache's dtype, broadcast to
  /// the example shape; `std::invalid_argument` if it does not fit). Returns
  /// false if the example was already cached or is being cached by another
  /// thread or process.
  PPE_DECL bool add_to_cache(std::int64_t idx, const at::Tensor& x);

  const std::vector<std::int64_t>& sm_size() const noexcept { return sm_size_; }
  at::ScalarType dtype() const noexcept { return dtype_; }
  /// The number of examples (`sm_size[0]`).
  std::int64_t capacity() const noexcept { return sm_size_.empty() ? 0 : sm_size_[0]; }

 private:
  struct Region;
  PPE_DECL void check_index(std::int64_t idx) const;

  std::vector<std::int64_t> sm_size_;
  at::ScalarType dtype_;
  std::shared_ptr<Region> region_;
  at::Tensor storage_;  // the whole buffer, shape sm_size
};

static_assert(example_cache<InfiniteCache>);

/// The cache side of a dataset whose examples are cached in shared memory
/// (PPE's `SharedDataset`); see the file comment for how a LibTorch dataset
/// uses it. Copies share the cache.
template <example_cache Cache = InfiniteCache>
class SharedDataset {
 public:
  /// A cache of examples of total shape `sm_size` (PPE: `cache_type(sm_size)`).
  explicit SharedDataset(std::vector<std::int64_t> sm_size)
    requires std::constructible_from<Cache, std::vector<std::int64_t>>
      : cache_(std::make_shared<Cache>(std::move(sm_size))) {}
  /// A cache made by the caller (e.g. `InfiniteCache(sm_size, at::kByte)`).
  explicit SharedDataset(std::shared_ptr<Cache> cache) : cache_(std::move(cache)) {
    if (!cache_) throw std::invalid_argument("ppe::dataset::SharedDataset: the cache is null");
  }

  /// The cached example `idx`; `ItemNotFoundException` if it is not cached
  /// (PPE's `__getitem__`).
  at::Tensor get(std::size_t idx) const {
    if (auto x = find(idx)) return *std::move(x);
    throw ItemNotFoundException("ppe::dataset::SharedDataset: item " + std::to_string(idx) + " is not in the cache");
  }
  /// The cached example `idx`, or nothing (no exception on the normal miss path).
  std::optional<at::Tensor> find(std::size_t idx) const { return cache_->get_value(static_cast<std::int64_t>(idx)); }
  /// Whether example `idx` is cached.
  bool is_cached(std::size_t idx) const { return cache_->is_cached(static_cast<std::int64_t>(idx)); }
  /// Caches `x` as example `idx`.
  void cache_item(std::size_t idx, const at::Tensor& x) const { cache_->add_to_cache(static_cast<std::int64_t>(idx), x); }
  /// The cache (shared by the copies of this dataset).
  Cache& cache() const noexcept { return *cache_; }

 private:
  std::shared_ptr<Cache> cache_;
};

}  // namespace ppe::dataset

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/dataset/impl/shared_dataset.ipp"
#endif
