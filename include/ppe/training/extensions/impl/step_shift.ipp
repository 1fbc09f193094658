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

PPE_DECL State StepShift::state_dict() const {
  return State::dict(
      {{"_t", t_}, {"_last_value", detail::optional_number(last_value_)}, {"_init", detail::optional_number(init_)}});
}

PPE_DECL void StepShift::load_state_dict(const State& state) {
  const std::int64_t t = detail::count_state(state, "_t", kWho);
  const std::optional<double> last = detail::optional_number_state(state, "_last_value", kWho, true);
  const std::optional<double> init = detail::optional_number_state(state, "_init", kWho, false);
  t_ = t;
  last_value_ = last;
  if (!init_given_) init_ = init;
}

}  // namespace ppe::training::extensions
