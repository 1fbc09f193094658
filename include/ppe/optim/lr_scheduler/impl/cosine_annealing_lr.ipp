// Definitions of optim/lr_scheduler/cosine_annealing_lr.hpp's out-of-line functions: included by it
// when header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <cmath>
#include <numbers>
#include <stdexcept>
#include <string>

#include "ppe/optim/lr_scheduler/cosine_annealing_lr.hpp"

namespace ppe::optim::lr_scheduler {

namespace detail {
PPE_DECL void check_t_max(std::int64_t T_max, std::string_view who) {
  if (T_max == 0) throw std::invalid_argument(std::string(who) + ": T_max must not be 0 (the half period in steps)");
}
}  // namespace detail

PPE_DECL CosineAnnealingLR::CosineAnnealingLR(torch::optim::Optimizer& optimizer, std::int64_t T_max,
                                              CosineAnnealingLROptions options)
    : LRScheduler(optimizer, "CosineAnnealingLR"), T_max_(T_max), eta_min_(options.eta_min()) {
  detail::check_t_max(T_max_, name());
  start(options.last_epoch(), options.verbose());
}

// The expressions keep Python's operation order, so the rates match it bit for bit.
PPE_DECL std::vector<double> CosineAnnealingLR::get_lr() {
  constexpr double pi = std::numbers::pi;
  std::vector<double> lrs = group_lrs();
  const auto e = static_cast<double>(last_epoch_);
  const auto t = static_cast<double>(T_max_);
  if (last_epoch_ == 0) return lrs;
  if (step_count_ == 1 && last_epoch_ > 0) {
    // The first step of a scheduler started at last_epoch >= 0: the closed form.
    for (std::size_t g = 0; g < lrs.size(); ++g)
      lrs[g] = eta_min_ + (base_lrs_[g] - eta_min_) * (1 + std::cos(e * pi / t)) / 2;
  } else if ((last_epoch_ - 1 - T_max_) % (2 * T_max_) == 0) {
    // Just past a minimum: the cosine restarts upwards.
    for (std::size_t g = 0; g < lrs.size(); ++g)
      lrs[g] = lrs[g] + (base_lrs_[g] - eta_min_) * (1 - std::cos(pi / t)) / 2;
  } else {
    for (double& lr : lrs)
      lr =
          detail::py_div(1 + std::cos(pi * e / t), 1 + std::cos(pi * (e - 1) / t), name()) * (lr - eta_min_) + eta_min_;
  }
  return lrs;
}

PPE_DECL std::optional<std::vector<double>> CosineAnnealingLR::closed_form_lr() const {
  constexpr double pi = std::numbers::pi;
  std::vector<double> lrs;
  for (double base : base_lrs_)
    lrs.push_back(eta_min_ + (base - eta_min_) *
                                 (1 + std::cos(pi * static_cast<double>(last_epoch_) / static_cast<double>(T_max_))) /
                                 2);
  return lrs;
}

PPE_DECL State CosineAnnealingLR::state_dict() const {
  State s = State::dict({{"T_max", T_max_}, {"eta_min", eta_min_}});
  write_base_state(s);
  return s;
}

PPE_DECL void CosineAnnealingLR::load_state_dict(const State& state) {
  const std::int64_t T_max = detail::int_field(state, "T_max", name());
  detail::check_t_max(T_max, name());
  const double eta_min = detail::number_field(state, "eta_min", name());
  BaseFields base = read_base_state(state);
  T_max_ = T_max;
  eta_min_ = eta_min;
  commit_base_state(std::move(base));
}

}  // namespace ppe::optim::lr_scheduler
