// Definitions of reporting/dict_summary.hpp's out-of-line functions: included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "ppe/reporting/dict_summary.hpp"

namespace ppe::reporting {

PPE_DECL void DictSummary::add(std::string_view key, const Value& value, const at::Tensor& weight) {
  if (weight.dim() != 0)
    throw std::invalid_argument("ppe::reporting::DictSummary::add: the weight given to '" + std::string(key) +
                                "' is not a scalar (it has " + std::to_string(weight.dim()) + " dimensions)");
  if (!accumulable(value)) return;
  summary(key).add(value, weight);
}

PPE_DECL Observation DictSummary::compute_mean() {
  Observation out;
  for (auto& [k, s] : summaries_) out.set(k, s.compute_mean());
  return out;
}

PPE_DECL Observation DictSummary::make_statistics() {
  Observation out;
  for (auto& [k, s] : summaries_) {
    auto [mean, std] = s.make_statistics();
    out.set(k, std::move(mean));
    out.set(k + ".std", std::move(std));
  }
  return out;
}

PPE_DECL State DictSummary::state_dict() {
  State out = State::dict();
  for (auto& [k, s] : summaries_) out.set(k, s.state_dict());
  return out;
}

PPE_DECL void DictSummary::load_state_dict(const State& state) {
  summaries_.clear();
  if (state.is_none()) return;
  for (const auto& [k, v] : state.as_dict()) summary(k).load_state_dict(v);
}

PPE_DECL std::vector<std::string> DictSummary::keys() const {
  std::vector<std::string> out;
  for (const auto& [k, s] : summaries_) out.push_back(k);
  return out;
}

PPE_DECL Summary& DictSummary::add_summary(std::string_view key) {
  return summaries_.emplace_back(std::string(key), Summary()).second;
}

}  // namespace ppe::reporting
