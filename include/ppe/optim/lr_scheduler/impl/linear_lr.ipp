// Definitions of optim/lr_scheduler/linear_lr.hpp's out-of-line functions: included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <algorithm>
#include <stdexcept>
#include <string>

#include "ppe/detail/python_repr.hpp"
#include "ppe/optim/lr_scheduler/linear_lr.hpp"

namespace ppe::optim::lr_scheduler {

namespace detail {
PPE_DECL void check_linear_factors(double start_factor, double end_factor, std::string_view who) {
  // Python's comparisons (a NaN passes them, as in Python).
  if (start_factor > 1.0 || start_factor < 0)
    throw std::invalid_argument(std::string(who) +
                                ": starting multiplicative factor expected to be between 0 and 1, got " +
                                ppe::detail::python_float_repr(start_factor));
  if (end_factor > 1.0 || end_factor < 0)
    throw std::invalid_argument(std::string(who) +
                                ": ending multiplicative factor expected to be between 0 and 1, got " +
                                ppe::detail::python_float_repr(end_factor));
}
}  // namespace detail

PPE_DECL LinearLR::LinearLR(torch::optim::Optimizer& optimizer, LinearLROptions options)
    : LRScheduler(optimizer, "LinearLR"),
      start_factor_(options.start_factor()),
      end_factor_(options.end_factor()),
      total_iters_(options.total_iters()) {
  detail::check_linear_factors(start_factor_, end_factor_, name());
  start(options.last_epoch(), options.verbose());
}

// The expressions keep Python's operation order, so the rates match it bit for bit.
PPE_DECL std::vector<double> LinearLR::get_lr() {
  std::vector<double> lrs = group_lrs();
  if (last_epoch_ == 0) {
    for (double& lr : lrs) lr = lr * start_factor_;
    return lrs;
  }
  if (last_epoch_ > total_iters_) return lrs;
  const double factor = 1. + detail::py_div(end_factor_ - start_factor_,
                                            static_cast<double>(total_iters_) * start_factor_ +
                                                static_cast<double>(last_epoch_ - 1) * (end_factor_ - start_factor_),
                                            name());
  for (double& lr : lrs) lr = lr * factor;
  return lrs;
}

PPE_DECL std::optional<std::vector<double>> LinearLR::closed_form_lr() const {
  const double factor = start_factor_ + detail::py_div((end_factor_ - start_factor_) *
                                                           static_cast<double>(std::min(total_iters_, last_epoch_)),
                                                       static_cast<double>(total_iters_), name());
  std::vector<double> lrs;
  for (double base : base_lrs_) lrs.push_back(base * factor);
  return lrs;
}

PPE_DECL State LinearLR::state_dict() const {
  State s = State::dict({{"start_factor", start_factor_}, {"end_factor", end_factor_}, {"total_iters", total_iters_}});
  write_base_state(s);
  return s;
}

PPE_DECL void LinearLR::load_state_dict(const State& state) {
  const double start_factor = detail::number_field(state, "start_factor", name());
  const double end_factor = detail::number_field(state, "end_factor", name());
  const std::int64_t total_iters = detail::int_field(state, "total_iters", name());
  detail::check_linear_factors(start_factor, end_factor, name());
  BaseFields base = read_base_state(state);
  start_factor_ = start_factor;
  end_factor_ = end_factor;
  total_iters_ = total_iters;
  commit_base_state(std::move(base));
}

}  // namespace ppe::optim::lr_scheduler
