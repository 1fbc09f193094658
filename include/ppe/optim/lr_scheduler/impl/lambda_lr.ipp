// Definitions of optim/lr_scheduler/lambda_lr.hpp's out-of-line functions: included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

#include "ppe/optim/lr_scheduler/lambda_lr.hpp"

namespace ppe::optim::lr_scheduler {

PPE_DECL LambdaLR::LambdaLR(torch::optim::Optimizer& optimizer, Lambda lr_lambda, LambdaLROptions options)
    : LambdaLR(optimizer, std::vector<Lambda>(1, std::move(lr_lambda)), true, options) {}

PPE_DECL LambdaLR::LambdaLR(torch::optim::Optimizer& optimizer, std::vector<Lambda> lr_lambdas, LambdaLROptions options)
    : LambdaLR(optimizer, std::move(lr_lambdas), false, options) {}

PPE_DECL LambdaLR::LambdaLR(torch::optim::Optimizer& optimizer, std::vector<Lambda> lr_lambdas, bool one_for_all,
                            const LambdaLROptions& options)
    : LRScheduler(optimizer, "LambdaLR") {
  const std::size_t groups = num_groups();
  if (one_for_all) {
    lr_lambdas_.assign(groups, lr_lambdas.front());
  } else {
    if (lr_lambdas.size() != groups)
      throw std::invalid_argument(name() + ": expected " + std::to_string(groups) +
                                  " lr_lambdas (one per param group), but got " + std::to_string(lr_lambdas.size()));
    lr_lambdas_ = std::move(lr_lambdas);
  }
  for (std::size_t g = 0; g < lr_lambdas_.size(); ++g)
    if (!lr_lambdas_[g]) throw std::invalid_argument(name() + ": lr_lambda " + std::to_string(g) + " is empty");
  start(options.last_epoch(), options.verbose());
}

PPE_DECL std::vector<double> LambdaLR::get_lr() {
  std::vector<double> lrs;
  for (std::size_t g = 0; g < base_lrs_.size(); ++g) lrs.push_back(base_lrs_[g] * lr_lambdas_[g](last_epoch_));
  return lrs;
}

PPE_DECL State LambdaLR::state_dict() const {
  // Python's order: __dict__ without lr_lambdas, which is appended last.
  State s = State::dict();
  write_base_state(s);
  s.set("lr_lambdas", State::list(State::List(lr_lambdas_.size())));
  return s;
}

PPE_DECL void LambdaLR::load_state_dict(const State& state) {
  const State& lambdas = detail::state_field(state, "lr_lambdas", name());
  if (!lambdas.is_list()) detail::wrong_kind(lambdas, "lr_lambdas", name(), "a list (None per function)");
  if (lambdas.size() != lr_lambdas_.size())
    throw std::invalid_argument(name() + ": the saved 'lr_lambdas' has " + std::to_string(lambdas.size()) +
                                " entries, expected " + std::to_string(lr_lambdas_.size()));
  commit_base_state(read_base_state(state));
}

}  // namespace ppe::optim::lr_scheduler
