// Definitions of distributed/evaluation.hpp: included by it when header-only,
// compiled once by impl/distributed_src.hpp with PPE_SEPARATE_COMPILATION.
// Feature: ppe::distributed (Meson and pkg-config: ppe-distributed).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ppe/distributed/evaluation.hpp"
#include "ppe/distributed/communicator.hpp"
#include "ppe/state.hpp"

namespace ppe::distributed {

PPE_DECL std::vector<reporting::Observation> all_gather_observations(std::vector<reporting::Observation> local) {
  // As States (pickled: the State's own format).
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
  const std::vector<State> ranks = all_gather_states(batches);

  std::vector<reporting::Observation> all;
  for (const State& rank_batches : ranks) {
    for (const State& entry : rank_batches.as_list()) {
      reporting::Observation& o = all.emplace_back();
      for (const auto& [key, value] : entry.as_dict())
        o.set(key, value.is_tensor() ? reporting::Value(value.as_tensor()) : reporting::Value(value.as_double()));
    }
  }
  return all;
}

}  // namespace ppe::distributed
