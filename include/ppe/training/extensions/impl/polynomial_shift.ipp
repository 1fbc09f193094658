// Definitions of training/extensions/polynomial_shift.hpp's out-of-line functions: included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "ppe/detail/python_repr.hpp"
#include "ppe/training/extensions/polynomial_shift.hpp"

namespace ppe::training::extensions {

PPE_DECL PolynomialShift::PolynomialShift(ShiftAttribute attr, double rate, std::optional<std::int64_t> max_count,
                                          PolynomialShiftOptions options)
    : target_(kWho, std::move(attr), options),
      rate_(rate),
      max_count_(max_count),
      init_(options.init()),
      clip_(options.target()),
      init_given_(options.init().has_value()) {
  detail::check_finite(kWho, "rate", rate_);
  if (max_count_ && *max_count_ < 1)
    throw std::invalid_argument(std::string(kWho) + ": max_count must be >= 1 (the call at which the value reaches 0), "
                                "got " + std::to_string(*max_count_));
  if (init_) detail::check_finite(kWho, "init", *init_);
  detail::check_target(kWho, clip_);
}

PPE_DECL void PolynomialShift::resolve(Manager& manager) {
  if (!max_count_) {
    const std::optional<TrainingLength> length = manager.training_length();
    if (!length)
      throw std::invalid_argument(std::string(kWho) + ": no max_count was given, and the manager's stop trigger "
                                  "has no training length to take it from; give max_count");
    const double iterations = length->unit == Unit::Epoch
                                  ? length->length * static_cast<double>(manager.iters_per_epoch())
                                  : length->length;
    const auto count = static_cast<std::int64_t>(std::ceil(iterations));
    if (count < 1)
      throw std::invalid_argument(std::string(kWho) + ": no max_count was given, and the manager's training length (" +
                                  ppe::detail::python_float_repr(iterations) +
                                  " iterations) is no count >= 1 to take it from; give max_count");
    max_count_ = count;
  }
  if (!init_) init_ = target_.read(manager);
}

PPE_DECL void PolynomialShift::set(Manager& manager, double value, std::int64_t t) {
  target_.write(manager, value, t);
  last_value_ = value;
}

PPE_DECL void PolynomialShift::initialize(Manager& manager) {
  resolve(manager);
  set(manager, last_value_ ? *last_value_ : *init_, t_);
}

PPE_DECL void PolynomialShift::operator()(Manager& manager) {
  resolve(manager);  // a no-op after initialize
  const std::int64_t t = t_ + 1;
  const double decay = std::max(1.0 - static_cast<double>(t) / static_cast<double>(*max_count_), 0.0);
  double value = *init_ * std::pow(decay, rate_);
  // Chainer's clipping, by the ratio target / value (which holds for negative values too).
  if (clip_) {
    const double ratio = *clip_ / value;
    if (rate_ > 0 ? ratio > 1 : ratio < 1) value = *clip_;
  }
  set(manager, value, t);
  t_ = t;
}

PPE_DECL State PolynomialShift::state_dict() const { return detail::init_shift_state(t_, last_value_, init_); }

PPE_DECL void PolynomialShift::load_state_dict(const State& state) {
  detail::load_init_shift_state(state, kWho, t_, last_value_, init_, init_given_);
}

}  // namespace ppe::training::extensions
