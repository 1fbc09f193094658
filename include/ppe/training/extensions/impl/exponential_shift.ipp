// Definitions of training/extensions/exponential_shift.hpp's out-of-line functions: included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <cmath>
#include <stdexcept>
#include <string>

#include "ppe/detail/python_repr.hpp"
#include "ppe/training/extensions/exponential_shift.hpp"

namespace ppe::training::extensions {

PPE_DECL ExponentialShift::ExponentialShift(ShiftAttribute attr, double rate, ExponentialShiftOptions options)
    : target_(kWho, std::move(attr), options),
      rate_(rate),
      init_(options.init()),
      clip_(options.target()),
      init_given_(options.init().has_value()) {
  detail::check_finite(kWho, "rate", rate_);
  if (rate_ < 0)
    throw std::invalid_argument(std::string(kWho) + ": rate must be >= 0 (the value is multiplied by it at each "
                                "call; Chainer does not support a negative rate either), got " +
                                ppe::detail::python_float_repr(rate_));
  if (init_) detail::check_finite(kWho, "init", *init_);
  detail::check_target(kWho, clip_);
}

PPE_DECL void ExponentialShift::set(Manager& manager, double value, std::int64_t t) {
  target_.write(manager, value, t);
  last_value_ = value;
}

PPE_DECL void ExponentialShift::initialize(Manager& manager) {
  if (!init_) init_ = target_.read(manager);
  set(manager, last_value_ ? *last_value_ : *init_, t_);
}

PPE_DECL void ExponentialShift::operator()(Manager& manager) {
  if (!init_) init_ = target_.read(manager);  // called without initialize
  const std::int64_t t = t_ + 1;
  const double value = detail::clip_to_target(*init_ * std::pow(rate_, static_cast<double>(t)), clip_, rate_ > 1);
  set(manager, value, t);
  t_ = t;
}

PPE_DECL State ExponentialShift::state_dict() const { return detail::init_shift_state(t_, last_value_, init_); }

PPE_DECL void ExponentialShift::load_state_dict(const State& state) {
  detail::load_init_shift_state(state, kWho, t_, last_value_, init_, init_given_);
}

}  // namespace ppe::training::extensions
