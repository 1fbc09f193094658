// Definitions of optim/lr_scheduler/cosine_annealing_warm_restarts.hpp's out-of-line functions:
// included by it when header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <cmath>
#include <numbers>
#include <stdexcept>
#include <string>

#include "ppe/detail/python_repr.hpp"
#include "ppe/optim/lr_scheduler/cosine_annealing_warm_restarts.hpp"

namespace ppe::optim::lr_scheduler {

namespace detail {
PPE_DECL void check_restarts(std::int64_t T_0, std::int64_t T_mult, std::string_view who) {
  if (T_0 <= 0)
    throw std::invalid_argument(std::string(who) + ": expected positive integer T_0, but got " + std::to_string(T_0));
  if (T_mult < 1)
    throw std::invalid_argument(std::string(who) + ": expected integer T_mult >= 1, but got " + std::to_string(T_mult));
}
}  // namespace detail

PPE_DECL CosineAnnealingWarmRestarts::CosineAnnealingWarmRestarts(torch::optim::Optimizer& optimizer, std::int64_t T_0,
                                                                  CosineAnnealingWarmRestartsOptions options)
    : LRScheduler(optimizer, "CosineAnnealingWarmRestarts"),
      T_0_(T_0),
      T_i_(T_0),
      T_mult_(options.T_mult()),
      eta_min_(options.eta_min()),
      T_cur_(static_cast<double>(options.last_epoch())) {
  detail::check_restarts(T_0_, T_mult_, name());
  start(options.last_epoch(), options.verbose());
}

PPE_DECL std::vector<double> CosineAnnealingWarmRestarts::get_lr() {
  constexpr double pi = std::numbers::pi;
  std::vector<double> lrs;
  for (double base : base_lrs_)
    lrs.push_back(eta_min_ + (base - eta_min_) * (1 + std::cos(pi * T_cur_ / static_cast<double>(T_i_))) / 2);
  return lrs;
}

PPE_DECL void CosineAnnealingWarmRestarts::step() {
  // Python: the first step (from the constructor) is step(0).
  if (last_epoch_ < 0) return step_at(0, true);
  const std::int64_t epoch = last_epoch_ + 1;
  T_cur_ = T_cur_ + 1;
  if (T_cur_ >= static_cast<double>(T_i_)) {
    T_cur_ = T_cur_ - static_cast<double>(T_i_);
    T_i_ = T_i_ * T_mult_;
  }
  last_epoch_ = epoch;
  apply_lrs(get_lr(), epoch);
}

PPE_DECL void CosineAnnealingWarmRestarts::step(std::int64_t epoch) { step_at(static_cast<double>(epoch), true); }

PPE_DECL void CosineAnnealingWarmRestarts::step_at(double epoch, bool integral) {
  if (!(epoch >= 0))
    throw std::invalid_argument(
        name() + ": expected non-negative epoch, but got " +
        (integral ? std::to_string(static_cast<std::int64_t>(epoch)) : ppe::detail::python_float_repr(epoch)));
  const auto T_0 = static_cast<double>(T_0_);
  if (epoch >= T_0) {
    if (T_mult_ == 1) {
      T_cur_ = std::fmod(epoch, T_0);  // Python's % for non-negative operands
      T_cur_is_int_ = integral;
    } else {
      const auto mult = static_cast<double>(T_mult_);
      // int(math.log(x, T_mult)): Python divides the natural logarithms.
      const auto n = static_cast<std::int64_t>(std::log(epoch / T_0 * (mult - 1) + 1) / std::log(mult));
      std::int64_t power = 1;  // T_mult ** n, exact as Python's ints
      for (std::int64_t k = 0; k < n; ++k) power *= T_mult_;
      // Python: epoch - T_0 * (T_mult ** n - 1) / (T_mult - 1), the product in ints.
      T_cur_ = epoch - static_cast<double>(T_0_ * (power - 1)) / static_cast<double>(T_mult_ - 1);
      T_cur_is_int_ = false;
      T_i_ = T_0_ * power;
    }
  } else {
    T_i_ = T_0_;
    T_cur_ = epoch;
    T_cur_is_int_ = integral;
  }
  last_epoch_ = static_cast<std::int64_t>(std::floor(epoch));
  if (integral)
    apply_lrs(get_lr(), static_cast<std::int64_t>(epoch));
  else
    apply_lrs(get_lr(), epoch);
}

PPE_DECL State CosineAnnealingWarmRestarts::state_dict() const {
  State s = State::dict({{"T_0", T_0_},
                         {"T_i", T_i_},
                         {"T_mult", T_mult_},
                         {"eta_min", eta_min_},
                         {"T_cur", T_cur_is_int_ ? State(static_cast<std::int64_t>(T_cur_)) : State(T_cur_)}});
  write_base_state(s);
  return s;
}

PPE_DECL void CosineAnnealingWarmRestarts::load_state_dict(const State& state) {
  const std::int64_t T_0 = detail::int_field(state, "T_0", name());
  const std::int64_t T_i = detail::int_field(state, "T_i", name());
  const std::int64_t T_mult = detail::int_field(state, "T_mult", name());
  detail::check_restarts(T_0, T_mult, name());
  if (T_i <= 0) throw std::invalid_argument(name() + ": the saved T_i is " + std::to_string(T_i) + ", expected > 0");
  const double eta_min = detail::number_field(state, "eta_min", name());
  const double T_cur = detail::number_field(state, "T_cur", name());
  const bool T_cur_is_int = state.at("T_cur").is_int();
  BaseFields base = read_base_state(state);
  T_0_ = T_0;
  T_i_ = T_i;
  T_mult_ = T_mult;
  eta_min_ = eta_min;
  T_cur_ = T_cur;
  T_cur_is_int_ = T_cur_is_int;
  commit_base_state(std::move(base));
}

}  // namespace ppe::optim::lr_scheduler
