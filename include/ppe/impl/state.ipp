// Definitions of state.hpp's out-of-line functions: included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "ppe/detail/python_repr.hpp"
#include "ppe/state.hpp"

namespace ppe {

PPE_DECL State::State(const State& other) = default;
PPE_DECL State::State(State&& other) noexcept = default;
PPE_DECL State& State::operator=(const State& other) = default;
PPE_DECL State& State::operator=(State&& other) noexcept = default;
PPE_DECL State::~State() = default;

PPE_DECL State State::dict(std::initializer_list<Item> items) {
  State s = dict();
  for (const auto& [k, v] : items) s.set(k, v);
  return s;
}

PPE_DECL State& State::set(std::string_view key, State value) {
  if (is_none()) *this = dict();
  if (has_int_keys() && !is_integer_text(key))
    throw StateError("ppe::State: key '" + std::string(key) +
                     "' is not an integer, expected decimal text (this dict has integer keys)");
  if (State* s = find(key)) {
    *s = std::move(value);
    return *s;
  }
  auto& d = as_dict();
  d.emplace_back(std::string(key), std::move(value));
  return d.back().second;
}

PPE_DECL std::optional<State> State::pop(std::string_view key) {
  if (!is_dict()) return std::nullopt;
  auto& d = as_dict();
  for (auto it = d.begin(); it != d.end(); ++it)
    if (it->first == key) {
      State v = std::move(it->second);
      d.erase(it);
      return v;
    }
  return std::nullopt;
}

PPE_DECL std::size_t State::size() const {
  if (is_dict()) return as_dict().size();
  if (is_list()) return as_list().size();
  throw StateError("ppe::State::size: expected a dict or a list, got " + std::string(kind_name(kind())));
}

PPE_DECL void State::kind_error(Kind want) const {
  throw StateError("ppe::State: expected " + std::string(kind_name(want)) + ", got " + std::string(kind_name(kind())));
}

PPE_DECL std::string State::missing_key_message(std::string_view key) const {
  std::string msg = "ppe::State: key '" + std::string(key) + "' not found";
  if (!is_dict()) return msg + " (the state is a " + std::string(kind_name(kind())) + ", not a dict)";
  return msg + "; keys present: " + ppe::detail::python_key_list(as_dict());
}

}  // namespace ppe
