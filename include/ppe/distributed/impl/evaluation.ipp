// Definitions of distributed/evaluation.hpp: included by it when header-only,
// compiled once by distributed/impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/tensor.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "ppe/distributed/evaluation.hpp"
#include "ppe/distributed/process_group.hpp"
#include "ppe/serialization/pickle.hpp"
#include "ppe/state.hpp"

namespace ppe::distributed {

PPE_DECL std::vector<reporting::Observation> all_gather_observations(std::vector<reporting::Observation> local) {
  auto group = default_process_group();
  const int world = group->getSize();

  // Pickled (the State's own format) into one byte tensor per rank.
  State batches = State::list();
  for (const auto& observation : local) {
    State entry = State::dict();
    for (auto [key, value] : observation) {
      const reporting::Value v = value.resolved();
      if (v.is_scalar())
        entry.set(key, State(v.scalar()));
      else
        entry.set(key, State(v.tensor().detach().to(at::kCPU)));
    }
    batches.as_list().push_back(std::move(entry));
  }
  const std::vector<char> bytes = ppe::pickle_dumps(batches);

  // Sizes first, then every rank's bytes padded to the longest.
  std::vector<std::vector<at::Tensor>> sizes_out(1);
  for (int r = 0; r < world; ++r) sizes_out[0].push_back(at::empty({1}, at::kLong));
  std::vector<at::Tensor> size_in{at::tensor({static_cast<std::int64_t>(bytes.size())}, at::kLong)};
  group->allgather(sizes_out, size_in)->wait();
  std::int64_t longest = 0;
  for (const auto& t : sizes_out[0]) longest = std::max(longest, t.item<std::int64_t>());

  at::Tensor mine = at::zeros({longest}, at::kByte);
  std::memcpy(mine.data_ptr(), bytes.data(), bytes.size());
  std::vector<std::vector<at::Tensor>> bytes_out(1);
  for (int r = 0; r < world; ++r) bytes_out[0].push_back(at::empty({longest}, at::kByte));
  std::vector<at::Tensor> bytes_in{mine};
  group->allgather(bytes_out, bytes_in)->wait();

  std::vector<reporting::Observation> all;
  for (int r = 0; r < world; ++r) {
    const auto n = static_cast<std::size_t>(sizes_out[0][static_cast<std::size_t>(r)].item<std::int64_t>());
    const char* data = static_cast<const char*>(bytes_out[0][static_cast<std::size_t>(r)].data_ptr());
    const State rank_batches =
        ppe::pickle_loads(std::vector<char>(data, data + n), "rank " + std::to_string(r) + "'s observations");
    for (const State& entry : rank_batches.as_list()) {
      reporting::Observation& o = all.emplace_back();
      for (const auto& [key, value] : entry.as_dict())
        o.set(key, value.is_tensor() ? reporting::Value(value.as_tensor()) : reporting::Value(value.as_double()));
    }
  }
  return all;
}

}  // namespace ppe::distributed
