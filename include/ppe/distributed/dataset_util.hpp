#pragma once
/// \file
/// `create_distributed_subset_indices`: the indices of a dataset one process
/// of a distributed job uses, identical to PPE's
/// `ppe.distributed.create_distributed_subset_indices`.
///
/// \code
///   // On every rank, with the same seed: about N / world samples each.
///   auto mine = ppe::distributed::create_distributed_subset_indices(dataset_size, world, rank, true, seed);
/// \endcode
///
/// PPE shuffles with NumPy's legacy `numpy.random.RandomState(seed).shuffle`.
/// This header reproduces that shuffle bit for bit (the same MT19937 seeding,
/// the same bounded draws, the same swap order) instead of using a shuffle of
/// its own: a job may mix C++ ranks and Python ranks, or resume a Python run
/// in C++, and every rank must cut the same permutation, or samples would be
/// seen twice and others never.
///
/// The split is PPE's too, quirks included: each rank takes
/// `ceil(N / num_replicas)` consecutive entries of the permutation starting
/// at `N * rank / num_replicas` (rounded down). Every rank gets the same
/// count, so when `num_replicas` does not divide `N` neighbouring ranks
/// overlap (10 samples, 3 ranks: positions [0, 4), [3, 7), [6, 10)), and with
/// more ranks than samples several ranks get the same sample. Every sample
/// belongs to at least one rank. For a split without duplicates, use
/// `DistributedValidationSampler`.
/// Feature: ppe::distributed (Meson and pkg-config: ppe-distributed).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "ppe/detail/config.hpp"
#include "ppe/distributed/detail/check_replicas.hpp"

namespace ppe::distributed {

namespace detail {

/// NumPy's legacy bounded draw (`random_interval`): uniform in [0, max], by
/// masking 32-bit outputs (64-bit outputs, high word first, when `max` needs
/// more than 32 bits) to the smallest all-ones mask covering `max` and
/// drawing again while the value exceeds `max`. The standard distributions
/// are not specified bit for bit, so they cannot stand in for it.
inline std::uint64_t numpy_random_interval(std::mt19937& gen, std::uint64_t max) {
  if (max == 0) return 0;  // NumPy draws nothing here: the stream must not advance
  std::uint64_t mask = max;
  for (int shift = 1; shift <= 32; shift *= 2) mask |= mask >> shift;
  if (max <= 0xffffffffu) {
    for (;;) {
      const std::uint64_t value = static_cast<std::uint64_t>(gen()) & mask;
      if (value <= max) return value;
    }
  }
  for (;;) {
    const std::uint64_t high = gen();
    const std::uint64_t low = gen();
    const std::uint64_t value = ((high << 32) | low) & mask;
    if (value <= max) return value;
  }
}

/// `numpy.random.RandomState(seed).shuffle(values)`, bit for bit. NumPy's
/// legacy integer seeding of MT19937 is the reference `init_genrand`, which is
/// what `std::mt19937(seed)` does; the Fisher-Yates pass runs from the last
/// element down, swapping element i with a draw in [0, i].
template <class T>
void numpy_legacy_shuffle(std::vector<T>& values, std::uint32_t seed) {
  std::mt19937 gen(seed);
  for (std::size_t i = values.size(); i > 1; --i) {
    const std::size_t j = static_cast<std::size_t>(numpy_random_interval(gen, i - 1));
    using std::swap;
    swap(values[i - 1], values[j]);
  }
}

}  // namespace detail

/// The indices of a dataset of `num_total_samples` samples that process
/// `rank` of `num_replicas` uses, exactly as PPE 0.9.0 computes them (see the
/// file comment for the overlapping split).
///
/// - `shuffle`: permute all indices with NumPy's legacy
///   `RandomState(seed).shuffle` before cutting (false: 0, 1, 2, ...).
/// - `seed`: required when shuffling, and the same on every rank (the
///   overload without ranks draws one over the process group, as PPE does
///   when none is given). NumPy accepts seeds in [0, 2^32 - 1], hence the
///   type.
///
/// Throws `std::invalid_argument` when `num_replicas < 1`, when `rank` is
/// outside [0, num_replicas - 1] (PPE does not check and returns odd slices),
/// or when `shuffle` is true and `seed` is empty.
inline std::vector<std::int64_t> create_distributed_subset_indices(std::size_t num_total_samples, int num_replicas,
                                                                   int rank, bool shuffle = true,
                                                                   std::optional<std::uint32_t> seed = std::nullopt) {
  const std::string where = "ppe::distributed::create_distributed_subset_indices";
  detail::check_replicas(where, num_replicas, rank);
  if (shuffle && !seed)
    throw std::invalid_argument(where +
                                ": shuffle is true but no seed was given; pass the same seed on every rank (or use the "
                                "overload without ranks, which draws a shared seed over the process group)");

  const std::size_t n = num_total_samples;
  const auto replicas = static_cast<std::size_t>(num_replicas);
  const auto r = static_cast<std::size_t>(rank);
  const std::size_t count = n / replicas + (n % replicas != 0 ? 1 : 0);  // ceil(n / replicas)
  // floor(n * r / replicas) without forming n * r: (q * R + m) * r / R = q * r + m * r / R.
  const std::size_t begin = (n / replicas) * r + (n % replicas) * r / replicas;
  const std::size_t end = std::min(n, begin + count);  // never cuts: begin <= n - count

  std::vector<std::int64_t> out;
  if (!shuffle) {
    out.reserve(end - begin);
    for (std::size_t i = begin; i < end; ++i) out.push_back(static_cast<std::int64_t>(i));
    return out;
  }
  // The whole permutation is needed: the draws for the early positions come last.
  std::vector<std::int64_t> indices(n);
  for (std::size_t i = 0; i < n; ++i) indices[i] = static_cast<std::int64_t>(i);
  detail::numpy_legacy_shuffle(indices, *seed);
  out.assign(indices.begin() + static_cast<std::ptrdiff_t>(begin), indices.begin() + static_cast<std::ptrdiff_t>(end));
  return out;
}

/// A seed drawn on rank 0 in [0, 2^31) (from LibTorch's default generator)
/// and broadcast to every rank of the default group: PPE's shared random
/// seed. Collective.
PPE_DECL std::uint32_t shared_random_seed();

/// PPE's form without ranks: the default group's world size and rank
/// (`ppe::distributed::initialize`), and a `shared_random_seed()` when
/// shuffling without a seed (then collective: every rank calls it together).
/// Throws `std::logic_error` when there is no default group.
PPE_DECL std::vector<std::int64_t> create_distributed_subset_indices(std::size_t num_total_samples, bool shuffle = true,
                                                                     std::optional<std::uint32_t> seed = std::nullopt);

}  // namespace ppe::distributed

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/distributed/impl/dataset_util.ipp"
#endif
