// Definitions of reporting/observation.hpp's out-of-line functions: included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "ppe/detail/python_repr.hpp"
#include "ppe/reporting/observation.hpp"

namespace ppe::reporting {

PPE_DECL Observation::Observation(std::initializer_list<std::pair<std::string_view, Value>> items) {
  for (const auto& [k, v] : items) set(k, v);
}

PPE_DECL const Value& Observation::at(std::string_view key) const {
  if (const Value* v = find(key)) return *v;
  throw std::out_of_range("ppe: key '" + std::string(key) +
                          "' not found in the observation; keys present: " + keys_text());
}

PPE_DECL bool Observation::erase(std::string_view key) {
  for (auto it = order_.begin(); it != order_.end(); ++it) {
    Slot& s = slots_[*it];
    if (s.key == key) {
      s.value = Value();
      s.live = false;
      order_.erase(it);
      return true;
    }
  }
  return false;
}

PPE_DECL std::vector<std::string> Observation::keys() const {
  std::vector<std::string> out;
  out.reserve(order_.size());
  for (std::uint32_t i : order_) out.push_back(slots_[i].key);
  return out;
}

PPE_DECL std::string Observation::keys_text() const {
  return ppe::detail::python_str_list(order_, [this](std::uint32_t i) -> const std::string& { return slots_[i].key; });
}

PPE_DECL std::optional<std::vector<std::string>> Observation::keys_ever_set() const {
  if (dropped_keys_) return std::nullopt;
  std::vector<std::string> out;
  out.reserve(slots_.size());
  for (const Slot& s : slots_) out.push_back(s.key);
  return out;
}

PPE_DECL void Observation::drop_dead_slots() {
  dropped_keys_ = dropped_keys_ || slots_.size() > order_.size();
  std::vector<Slot> kept;
  kept.reserve(order_.size() + 1);
  for (std::uint32_t& i : order_) {
    kept.push_back(std::move(slots_[i]));
    i = static_cast<std::uint32_t>(kept.size() - 1);
  }
  slots_ = std::move(kept);
}

PPE_DECL std::uint32_t Observation::new_slot(std::string_view key) {
  // Keys that change every iteration would otherwise grow the slots forever.
  if (slots_.size() >= kCompactAt && slots_.size() >= 2 * order_.size()) drop_dead_slots();
  slots_.push_back(Slot{std::string(key), Value(), false});
  return static_cast<std::uint32_t>(slots_.size() - 1);
}

PPE_DECL std::vector<std::pair<std::string, double>> to_doubles(const Observation& observation) {
  std::vector<Value> values;
  std::vector<std::pair<std::string, double>> out;
  for (auto [k, v] : observation) {
    out.emplace_back(k, 0.0);
    values.push_back(v);
  }
  const std::vector<double> numbers = to_doubles(values);
  for (std::size_t i = 0; i < out.size(); ++i) out[i].second = numbers[i];
  return out;
}

}  // namespace ppe::reporting
