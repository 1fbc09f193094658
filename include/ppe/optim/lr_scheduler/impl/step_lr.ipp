// Definitions of optim/lr_scheduler/step_lr.hpp's out-of-line functions: included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <cmath>
#include <stdexcept>
#include <string>

#include "ppe/optim/lr_scheduler/step_lr.hpp"

namespace ppe::optim::lr_scheduler {

namespace detail {
/// The step size check shared by the constructor and load_state_dict.
PPE_DECL void check_step_size(std::int64_t step_size, std::string_view who) {
  if (step_size == 0)
    throw std::invalid_argument(std::string(who) +
                                ": step_size must not be 0 (the rate changes every step_size steps)");
}
}  // namespace detail

PPE_DECL StepLR::StepLR(torch::optim::Optimizer& optimizer, std::int64_t step_size, StepLROptions options)
    : LRScheduler(optimizer, "StepLR"), step_size_(step_size), gamma_(options.gamma()) {
  detail::check_step_size(step_size_, name());
  start(options.last_epoch(), options.verbose());
}

PPE_DECL StepLR::StepLR(torch::optim::Optimizer& optimizer, std::int64_t step_size, double gamma, StepLROptions options)
    : StepLR(optimizer, step_size, options.gamma(gamma)) {}

PPE_DECL std::vector<double> StepLR::get_lr() {
  std::vector<double> lrs = group_lrs();
  if (last_epoch_ == 0 || last_epoch_ % step_size_ != 0) return lrs;
  for (double& lr : lrs) lr = lr * gamma_;
  return lrs;
}

PPE_DECL std::optional<std::vector<double>> StepLR::closed_form_lr() const {
  std::vector<double> lrs;
  for (double base : base_lrs_)
    lrs.push_back(base * std::pow(gamma_, static_cast<double>(detail::floor_div(last_epoch_, step_size_))));
  return lrs;
}

PPE_DECL State StepLR::state_dict() const {
  State s = State::dict({{"step_size", step_size_}, {"gamma", gamma_}});
  write_base_state(s);
  return s;
}

PPE_DECL void StepLR::load_state_dict(const State& state) {
  const std::int64_t step_size = detail::int_field(state, "step_size", name());
  detail::check_step_size(step_size, name());
  const double gamma = detail::number_field(state, "gamma", name());
  BaseFields base = read_base_state(state);
  step_size_ = step_size;
  gamma_ = gamma;
  commit_base_state(std::move(base));
}

}  // namespace ppe::optim::lr_scheduler
