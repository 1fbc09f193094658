// Definitions of distributed/dataset_util.hpp's functions that need the
// process group: included by it when header-only, compiled once by
// impl/distributed_src.hpp with PPE_SEPARATE_COMPILATION.
// Feature: ppe::distributed (Meson and pkg-config: ppe-distributed).
#pragma once

#include <ATen/ops/randint.h>

#include "ppe/distributed/dataset_util.hpp"
#include "ppe/distributed/process_group.hpp"

namespace ppe::distributed {

PPE_DECL std::uint32_t shared_random_seed() {
  auto group = default_process_group();
  // int64: Gloo broadcasts it as is; PPE's draw is below 2^31.
  std::vector<at::Tensor> seed{at::randint(0, std::int64_t{1} << 31, {1}, at::TensorOptions().dtype(at::kLong))};
  c10d::BroadcastOptions options;
  options.rootRank = 0;
  group->broadcast(seed, options)->wait();
  return static_cast<std::uint32_t>(seed[0].item<std::int64_t>());
}

PPE_DECL std::vector<std::int64_t> create_distributed_subset_indices(std::size_t num_total_samples, bool shuffle,
                                                                     std::optional<std::uint32_t> seed) {
  if (!is_initialized())
    throw std::logic_error(
        "ppe::distributed::create_distributed_subset_indices: no default process group to take the rank and world "
        "size from (call ppe::distributed::initialize() first, or pass num_replicas and rank)");
  const ProcessInfo info = process_info();
  if (shuffle && !seed) seed = shared_random_seed();
  return create_distributed_subset_indices(num_total_samples, info.world_size, info.rank, shuffle, seed);
}

}  // namespace ppe::distributed
