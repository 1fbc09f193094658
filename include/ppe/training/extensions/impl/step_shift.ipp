// Definitions of training/extensions/step_shift.hpp's out-of-line functions: included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <cmath>
#include <stdexcept>
#include <string>

#include "ppe/training/extensions/step_shift.hpp"

namespace ppe::training::extensions {

PPE_DECL StepShift::StepShift(ShiftAttribute attr, double gamma, std::int64_t step, StepShiftOptions options)
    : target_(kWho, std::move(attr), options),
      gamma_(gamma),
      step_(step),
      init_(options.init()),
      clip_(options.target()),
      init_given_(options.init().has_value()) {
  detail::check_finite(kWho, "gamma", gamma_);
  if (step_ < 1)
    throw std::invalid_argument(std::string(kWho) + ": step must be >= 1 (the value is multiplied by gamma every "
                                "step calls), got " + std::to_string(step_));
  if (init_) detail::check_finite(kWho, "init", *init_);
  detail::check_target(kWho, clip_);
}

PPE_DECL void StepShift::set(Manager& manager, double value, std::int64_t t) {
  target_.write(manager, value, t);
  last_value_ = value;
}

PPE_DECL void StepShift::initialize(Manager& manager) {
  if (!init_) init_ = target_.read(manager);
  set(manager, last_value_ ? *last_value_ : *init_, t_);
}

PPE_DECL void StepShift::operator()(Manager& manager) {
  if (!init_) init_ = target_.read(manager);  // called without initialize
  const std::int64_t t = t_ + 1;
  const double value = detail::clip_to_target(*init_ * std::pow(gamma_, static_cast<double>(t / step_)), clip_,
                                              gamma_ > 1);  // t / step_: floor, both positive
  set(manager, value, t);
  t_ = t;
}

PPE_DECL State StepShift::state_dict() const { return detail::init_shift_state(t_, last_value_, init_); }

PPE_DECL void StepShift::load_state_dict(const State& state) {
  detail::load_init_shift_state(state, kWho, t_, last_value_, init_, init_given_);
}

}  // namespace ppe::training::extensions
