// Definitions of optim/lr_scheduler/exponential_lr.hpp's out-of-line functions: included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <cmath>

#include "ppe/optim/lr_scheduler/exponential_lr.hpp"

namespace ppe::optim::lr_scheduler {

PPE_DECL ExponentialLR::ExponentialLR(torch::optim::Optimizer& optimizer, double gamma, ExponentialLROptions options)
    : LRScheduler(optimizer, "ExponentialLR"), gamma_(gamma) {
  start(options.last_epoch(), options.verbose());
}

PPE_DECL std::vector<double> ExponentialLR::get_lr() {
  std::vector<double> lrs = group_lrs();
  if (last_epoch_ == 0) return lrs;
  for (double& lr : lrs) lr = lr * gamma_;
  return lrs;
}

PPE_DECL std::optional<std::vector<double>> ExponentialLR::closed_form_lr() const {
  std::vector<double> lrs;
  for (double base : base_lrs_) lrs.push_back(base * std::pow(gamma_, static_cast<double>(last_epoch_)));
  return lrs;
}

PPE_DECL State ExponentialLR::state_dict() const {
  State s = State::dict({{"gamma", gamma_}});
  write_base_state(s);
  return s;
}

PPE_DECL void ExponentialLR::load_state_dict(const State& state) {
  const double gamma = detail::number_field(state, "gamma", name());
  BaseFields base = read_base_state(state);
  gamma_ = gamma;
  commit_base_state(std::move(base));
}

}  // namespace ppe::optim::lr_scheduler
