// Definitions of dataset/shared_dataset.hpp's out-of-line functions: included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <ATen/ops/from_blob.h>
#include <sys/mman.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>

#include "ppe/dataset/shared_dataset.hpp"
#include "ppe/detail/python_repr.hpp"

namespace ppe::dataset {

/// The shared mapping: the examples, then one state byte per example.
struct InfiniteCache::Region {
  enum : std::uint8_t { kEmpty = 0, kWriting = 1, kReady = 2 };
  void* base = nullptr;
  std::size_t bytes = 0;
  std::uint8_t* states = nullptr;

  Region(std::size_t data_bytes, std::size_t slots) {
    // The states follow the data, aligned for atomic access (bytes need none).
    bytes = data_bytes + slots;
    base = ::mmap(nullptr, bytes == 0 ? 1 : bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED)
      throw std::runtime_error("ppe::dataset::InfiniteCache: cannot map " + std::to_string(bytes) +
                               " bytes of shared memory: " + std::strerror(errno));
    states = static_cast<std::uint8_t*>(base) + data_bytes;  // zero-filled: every slot empty
  }
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;
  ~Region() { ::munmap(base, bytes == 0 ? 1 : bytes); }

  std::atomic_ref<std::uint8_t> state(std::int64_t idx) const { return std::atomic_ref<std::uint8_t>(states[idx]); }
};

PPE_DECL InfiniteCache::InfiniteCache(std::vector<std::int64_t> sm_size, at::ScalarType dtype)
    : sm_size_(std::move(sm_size)), dtype_(dtype) {
  static_assert(std::atomic_ref<std::uint8_t>::is_always_lock_free,
                "process-shared slot states need lock-free byte atomics");
  if (sm_size_.empty())
    throw std::invalid_argument("ppe::dataset::InfiniteCache: sm_size needs at least one dimension (the examples)");
  std::int64_t numel = 1;
  for (const auto d : sm_size_) {
    if (d < 0) throw std::invalid_argument("ppe::dataset::InfiniteCache: sm_size has a negative dimension");
    numel *= d;
  }
  const auto item = static_cast<std::int64_t>(c10::elementSize(dtype_));
  region_ = std::make_shared<Region>(static_cast<std::size_t>(numel * item), static_cast<std::size_t>(sm_size_[0]));
  // The tensor's deleter keeps the mapping alive for as long as a view of it lives.
  auto keep = region_;
  storage_ = at::from_blob(region_->base, sm_size_, [keep](void*) mutable { keep.reset(); },
                           at::TensorOptions().dtype(dtype_));
}

PPE_DECL void InfiniteCache::check_index(std::int64_t idx) const {
  if (idx < 0 || idx >= capacity())
    throw std::out_of_range("ppe::dataset::InfiniteCache: index " + std::to_string(idx) +
                            " is out of bounds for a cache of " + std::to_string(capacity()) + " examples");
}

PPE_DECL bool InfiniteCache::is_cached(std::int64_t idx) const {
  check_index(idx);
  return region_->state(idx).load(std::memory_order_acquire) == Region::kReady;
}

PPE_DECL std::optional<at::Tensor> InfiniteCache::get_value(std::int64_t idx) const {
  if (!is_cached(idx)) return std::nullopt;
  return storage_[idx];
}

PPE_DECL bool InfiniteCache::add_to_cache(std::int64_t idx, const at::Tensor& x) {
  check_index(idx);
  auto state = region_->state(idx);
  std::uint8_t expected = Region::kEmpty;
  if (!state.compare_exchange_strong(expected, Region::kWriting, std::memory_order_acquire)) return false;
  try {
    at::Tensor slot = storage_[idx];
    if (!x.defined()) throw std::invalid_argument("an undefined tensor");
    // Broadcasting follows numpy's assignment (PPE: storage[idx] = x).
    if (x.dim() > slot.dim())
      throw std::invalid_argument("a tensor of shape " + ppe::detail::python_shape(x.sizes()) +
                                  " for a slot of shape " + ppe::detail::python_shape(slot.sizes()));
    for (std::int64_t d = 1; d <= x.dim(); ++d) {
      const auto xs = x.size(-d), ss = slot.size(-d);
      if (xs != ss && xs != 1)
        throw std::invalid_argument("a tensor of shape " + ppe::detail::python_shape(x.sizes()) +
                                    " for a slot of shape " + ppe::detail::python_shape(slot.sizes()));
    }
    slot.copy_(x.detach());
  } catch (const std::invalid_argument& e) {
    state.store(Region::kEmpty, std::memory_order_release);
    throw std::invalid_argument("ppe::dataset::InfiniteCache: cannot cache example " + std::to_string(idx) + ": " +
                                e.what() + " (examples have the shape sm_size[1:])");
  } catch (...) {
    state.store(Region::kEmpty, std::memory_order_release);
    throw;
  }
  state.store(Region::kReady, std::memory_order_release);
  return true;
}

}  // namespace ppe::dataset
