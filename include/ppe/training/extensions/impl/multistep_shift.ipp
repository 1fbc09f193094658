// Definitions of training/extensions/multistep_shift.hpp's out-of-line functions: included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <cmath>
#include <stdexcept>
#include <string>

#include "ppe/training/extensions/multistep_shift.hpp"

namespace ppe::training::extensions {

PPE_DECL MultistepShift::MultistepShift(ShiftAttribute attr, double gamma, std::vector<std::int64_t> step_value,
                                        std::optional<double> init, MultistepShiftOptions options)
    : target_(kWho, std::move(attr), options),
      gamma_(gamma),
      steps_(std::move(step_value)),
      init_(init),
      init_given_(init.has_value()) {
  detail::check_finite(kWho, "gamma", gamma_);
  if (init_) detail::check_finite(kWho, "init", *init_);
  if (steps_.empty())
    throw std::invalid_argument(std::string(kWho) +
                                ": step_value is empty; give the calls at which the value is multiplied by gamma");
  for (std::size_t i = 0; i < steps_.size(); ++i) {
    if (steps_[i] < 1 || (i > 0 && steps_[i] <= steps_[i - 1]))
      throw std::invalid_argument(std::string(kWho) + ": step_value must be strictly increasing call counts from 1, "
                                  "but entry " + std::to_string(i) + " is " + std::to_string(steps_[i]) +
                                  (i > 0 ? " after " + std::to_string(steps_[i - 1]) : std::string()));
  }
}

PPE_DECL double MultistepShift::value(std::int64_t current_step) const {
  return *init_ * std::pow(gamma_, static_cast<double>(current_step));
}

PPE_DECL void MultistepShift::initialize(Manager& manager) {
  if (!init_) init_ = target_.read(manager);
  target_.write(manager, value(current_step_), t_);
}

PPE_DECL void MultistepShift::operator()(Manager& manager) {
  if (!init_) init_ = target_.read(manager);  // called without initialize
  const std::int64_t t = t_ + 1;
  // Chainer's rule: at most one step per call, taken when the count reaches it.
  std::int64_t k = current_step_;
  if (k < static_cast<std::int64_t>(steps_.size()) && t >= steps_[static_cast<std::size_t>(k)]) ++k;
  target_.write(manager, value(k), t);
  t_ = t;
  current_step_ = k;
}

PPE_DECL State MultistepShift::state_dict() const {
  return State::dict({{"_t", t_}, {"_current_step", current_step_}, {"_init", detail::optional_number(init_)}});
}

PPE_DECL void MultistepShift::load_state_dict(const State& state) {
  const std::int64_t t = detail::count_state(state, "_t", kWho);
  const std::int64_t k = detail::count_state(state, "_current_step", kWho);
  if (k > static_cast<std::int64_t>(steps_.size()))
    throw std::invalid_argument(std::string(kWho) + ": the saved '_current_step' is " + std::to_string(k) +
                                ", but step_value has " + std::to_string(steps_.size()) + " entries");
  const std::optional<double> init = detail::optional_number_state(state, "_init", kWho, false);
  t_ = t;
  current_step_ = k;
  if (!init_given_) init_ = init;
}

}  // namespace ppe::training::extensions
