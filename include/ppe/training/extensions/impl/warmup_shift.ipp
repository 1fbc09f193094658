// Definitions of training/extensions/warmup_shift.hpp's out-of-line functions: included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <stdexcept>
#include <string>

#include "ppe/training/extensions/warmup_shift.hpp"

namespace ppe::training::extensions {

PPE_DECL WarmupShift::WarmupShift(ShiftAttribute attr, std::optional<double> warmup_start, std::int64_t warmup_iter,
                                  double init, WarmupShiftOptions options)
    : target_(kWho, std::move(attr), options),
      start_(warmup_start),
      start_given_(warmup_start.has_value()),
      warmup_iter_(warmup_iter),
      init_(init) {
  if (start_) detail::check_finite(kWho, "warmup_start", *start_);
  detail::check_finite(kWho, "init", init_);
  if (warmup_iter_ < 1)
    throw std::invalid_argument(std::string(kWho) + ": warmup_iter must be >= 1 (the call at which the value reaches "
                                "init), got " + std::to_string(warmup_iter_));
}

PPE_DECL double WarmupShift::value_at(std::int64_t t) const {
  if (t == 0) return *start_;  // exactly (n * start / n need not be)
  const auto n = static_cast<double>(warmup_iter_);
  return (static_cast<double>(t) * init_ + static_cast<double>(warmup_iter_ - t) * *start_) / n;
}

PPE_DECL void WarmupShift::initialize(Manager& manager) {
  if (!start_) start_ = target_.read(manager);
  // Resumed after the warmup: the option is no longer the warmup's.
  if (t_ < warmup_iter_) target_.write(manager, value_at(t_), t_);
}

PPE_DECL void WarmupShift::operator()(Manager& manager) {
  const std::int64_t t = t_ + 1;
  if (t <= warmup_iter_) {
    if (!start_) start_ = target_.read(manager);  // called without initialize
    target_.write(manager, value_at(t), t);
  }
  t_ = t;
}

PPE_DECL State WarmupShift::state_dict() const {
  return State::dict({{"_t", t_}, {"_warmup_start", detail::optional_number(start_)}});
}

PPE_DECL void WarmupShift::load_state_dict(const State& state) {
  const std::int64_t t = detail::count_state(state, "_t", kWho);
  const std::optional<double> start = detail::optional_number_state(state, "_warmup_start", kWho, false);
  t_ = t;
  if (!start_given_) start_ = start;
}

}  // namespace ppe::training::extensions
