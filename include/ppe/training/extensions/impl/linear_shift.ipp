// Definitions of training/extensions/linear_shift.hpp's out-of-line functions: included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <stdexcept>
#include <string>

#include "ppe/training/extensions/linear_shift.hpp"

namespace ppe::training::extensions {

PPE_DECL LinearShift::LinearShift(ShiftAttribute attr, std::pair<double, double> value_range,
                                  std::pair<std::int64_t, std::int64_t> time_range, LinearShiftOptions options)
    : target_(kWho, std::move(attr), options), values_(value_range), times_(time_range) {
  detail::check_finite(kWho, "value_range's first value", values_.first);
  detail::check_finite(kWho, "value_range's last value", values_.second);
  if (times_.first > times_.second)
    throw std::invalid_argument(std::string(kWho) + ": time_range must be (first, last) with first <= last (the calls "
                                "over which the value moves), got (" +
                                std::to_string(times_.first) + ", " + std::to_string(times_.second) + ")");
}

PPE_DECL double LinearShift::value_at(std::int64_t t) const {
  const auto [t1, t2] = times_;
  const auto [v1, v2] = values_;
  if (t <= t1) return v1;
  if (t >= t2) return v2;
  const double rate = static_cast<double>(t - t1) / static_cast<double>(t2 - t1);
  return v1 + rate * (v2 - v1);
}

PPE_DECL void LinearShift::set(Manager& manager, double value, std::int64_t t) {
  target_.write(manager, value, t);
  last_value_ = value;
}

PPE_DECL void LinearShift::initialize(Manager& manager) {
  set(manager, last_value_ ? *last_value_ : value_at(t_), t_);
}

PPE_DECL void LinearShift::operator()(Manager& manager) {
  const std::int64_t t = t_ + 1;
  set(manager, value_at(t), t);
  t_ = t;
}

PPE_DECL State LinearShift::state_dict() const {
  return State::dict({{"_t", t_}, {"_last_value", detail::optional_number(last_value_)}});
}

PPE_DECL void LinearShift::load_state_dict(const State& state) {
  const std::int64_t t = detail::count_state(state, "_t", kWho);
  const std::optional<double> last = detail::optional_number_state(state, "_last_value", kWho, true);
  t_ = t;
  last_value_ = last;
}

}  // namespace ppe::training::extensions
