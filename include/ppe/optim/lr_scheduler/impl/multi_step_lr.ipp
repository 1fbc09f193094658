// Definitions of optim/lr_scheduler/multi_step_lr.hpp's out-of-line functions: included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "ppe/optim/lr_scheduler/multi_step_lr.hpp"

namespace ppe::optim::lr_scheduler {

PPE_DECL MultiStepLR::MultiStepLR(torch::optim::Optimizer& optimizer, std::vector<std::int64_t> milestones,
                                  MultiStepLROptions options)
    : LRScheduler(optimizer, "MultiStepLR"), gamma_(options.gamma()) {
  for (std::int64_t m : milestones) {
    auto it = std::find_if(milestones_.begin(), milestones_.end(), [m](const auto& e) { return e.first == m; });
    if (it == milestones_.end())
      milestones_.emplace_back(m, 1);
    else
      ++it->second;
  }
  start(options.last_epoch(), options.verbose());
}

PPE_DECL std::vector<double> MultiStepLR::get_lr() {
  std::vector<double> lrs = group_lrs();
  const auto it =
      std::find_if(milestones_.begin(), milestones_.end(), [this](const auto& e) { return e.first == last_epoch_; });
  if (it == milestones_.end()) return lrs;
  for (double& lr : lrs) lr = lr * std::pow(gamma_, static_cast<double>(it->second));
  return lrs;
}

PPE_DECL std::optional<std::vector<double>> MultiStepLR::closed_form_lr() const {
  // bisect_right over the sorted milestones with repeats: how many are <= last_epoch.
  std::int64_t passed = 0;
  for (const auto& [m, count] : milestones_)
    if (m <= last_epoch_) passed += count;
  std::vector<double> lrs;
  for (double base : base_lrs_) lrs.push_back(base * std::pow(gamma_, static_cast<double>(passed)));
  return lrs;
}

PPE_DECL State MultiStepLR::state_dict() const {
  State counter = State::int_dict();
  for (const auto& [m, count] : milestones_) counter.set(std::to_string(m), count);
  State s = State::dict({{"milestones", std::move(counter)}, {"gamma", gamma_}});
  write_base_state(s);
  return s;
}

PPE_DECL void MultiStepLR::load_state_dict(const State& state) {
  const State& saved = detail::state_field(state, "milestones", name());
  if (!saved.is_dict()) detail::wrong_kind(saved, "milestones", name(), "a dict {milestone: count}");
  std::vector<std::pair<std::int64_t, std::int64_t>> milestones;
  for (const auto& [key, count] : saved.as_dict()) {
    // Integer keys are held as their decimal text (ppe::State::int_dict).
    char* end = nullptr;
    errno = 0;
    const long long m = std::strtoll(key.c_str(), &end, 10);
    if (key.empty() || *end != '\0' || errno != 0)
      throw std::invalid_argument(name() + ": the saved 'milestones' has the key '" + key +
                                  "', expected an int milestone");
    if (!count.is_int()) detail::wrong_kind(count, "milestones[" + key + "]", name(), "an int count");
    milestones.emplace_back(m, count.as_int());
  }
  const double gamma = detail::number_field(state, "gamma", name());
  BaseFields base = read_base_state(state);
  milestones_ = std::move(milestones);
  gamma_ = gamma;
  commit_base_state(std::move(base));
}

}  // namespace ppe::optim::lr_scheduler
