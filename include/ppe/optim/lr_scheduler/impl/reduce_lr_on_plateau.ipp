// Definitions of optim/lr_scheduler/reduce_lr_on_plateau.hpp's out-of-line functions: included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <torch/optim/optimizer.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <stdexcept>
#include <string>
#include <utility>

#include "ppe/detail/python_repr.hpp"
#include "ppe/optim/lr_scheduler/reduce_lr_on_plateau.hpp"

namespace ppe::optim::lr_scheduler {

PPE_DECL ReduceLROnPlateau::ReduceLROnPlateau(torch::optim::Optimizer& optimizer, ReduceLROnPlateauOptions options)
    : optimizer_(&optimizer), options_(std::move(options)) {
  if (!(options_.factor() < 1.0))
    throw std::invalid_argument("ppe::ReduceLROnPlateau: factor must be < 1, got " +
                                ppe::detail::python_float_repr(options_.factor()));
  const std::size_t groups = optimizer.param_groups().size();
  if (options_.min_lrs().empty()) {
    options_.min_lrs(std::vector<double>(groups, options_.min_lr()));
  } else if (options_.min_lrs().size() != groups) {
    throw std::invalid_argument("ppe::ReduceLROnPlateau: min_lrs must hold one rate per param group: expected " +
                                std::to_string(groups) + ", got " + std::to_string(options_.min_lrs().size()));
  }
  best_ = mode_worse();
}

PPE_DECL bool ReduceLROnPlateau::is_better(double a, double best) const noexcept {
  const double t = options_.threshold();
  const bool rel = options_.threshold_mode() == ThresholdMode::Rel;
  if (options_.mode() == PlateauMode::Min) return rel ? a < best * (1.0 - t) : a < best - t;
  return rel ? a > best * (t + 1.0) : a > best + t;
}

PPE_DECL void ReduceLROnPlateau::step(double metrics) {
  ++last_epoch_;
  if (is_better(metrics, best_)) {
    best_ = metrics;
    num_bad_epochs_ = 0;
  } else {
    ++num_bad_epochs_;
  }
  if (in_cooldown()) {
    --cooldown_counter_;
    num_bad_epochs_ = 0;  // a cooldown step is never a bad one
  }
  if (num_bad_epochs_ > options_.patience()) {
    reduce_lr();
    cooldown_counter_ = options_.cooldown();
    num_bad_epochs_ = 0;
  }
  last_lr_.clear();
  for (const auto& group : optimizer_->param_groups()) last_lr_.push_back(group.options().get_lr());
  has_last_lr_ = true;
}

PPE_DECL void ReduceLROnPlateau::reduce_lr() {
  auto& groups = optimizer_->param_groups();
  for (std::size_t i = 0; i < groups.size(); ++i) {
    auto& o = groups[i].options();
    const double old_lr = o.get_lr();
    const double new_lr = std::max(old_lr * options_.factor(), options_.min_lrs().at(i));
    if (old_lr - new_lr > options_.eps()) {
      o.set_lr(new_lr);
      if (options_.verbose()) {
        // Python's "%.5d" of the epoch and "{:.4e}" of the rate.
        char line[128];
        std::snprintf(line, sizeof line, "Epoch %.5lld: reducing learning rate of group %zu to %.4e.",
                      static_cast<long long>(last_epoch_), i, new_lr);
        std::cout << line << std::endl;
      }
    }
  }
}

PPE_DECL State ReduceLROnPlateau::state_dict() const {
  const auto doubles = [](const std::vector<double>& v) {
    State out = State::list();
    for (double x : v) out.as_list().emplace_back(x);
    return out;
  };
  const bool min = options_.mode() == PlateauMode::Min;
  const bool rel = options_.threshold_mode() == ThresholdMode::Rel;
  State out = State::dict({{"factor", options_.factor()},
                           {"min_lrs", doubles(options_.min_lrs())},
                           {"patience", options_.patience()},
                           {"verbose", options_.verbose()},
                           {"cooldown", options_.cooldown()},
                           {"cooldown_counter", cooldown_counter_},
                           {"mode", min ? "min" : "max"},
                           {"threshold", options_.threshold()},
                           {"threshold_mode", rel ? "rel" : "abs"},
                           {"best", best_},
                           {"num_bad_epochs", num_bad_epochs_},
                           {"mode_worse", mode_worse()},
                           {"eps", options_.eps()},
                           {"last_epoch", last_epoch_}});
  // Python sets `_last_lr` in its first step only.
  if (has_last_lr_) out.set("_last_lr", doubles(last_lr_));
  return out;
}

PPE_DECL void ReduceLROnPlateau::load_state_dict(const State& state) {
  const auto fail = [](const std::string& key, const char* expected) -> std::invalid_argument {
    return std::invalid_argument("ppe::ReduceLROnPlateau: the saved state's '" + key + "' must be " + expected);
  };
  const auto entry = [&state](const char* key) -> const State& {
    if (!state.is_dict())
      throw std::invalid_argument("ppe::ReduceLROnPlateau: the saved state is a " +
                                  std::string(State::kind_name(state.kind())) + ", expected a dict");
    const State* s = state.find(key);
    if (!s) throw std::invalid_argument(std::string("ppe::ReduceLROnPlateau: the saved state has no '") + key + "'");
    return *s;
  };
  const auto number = [&](const char* key) {
    const State& s = entry(key);
    if (!s.is_number()) throw fail(key, "a number");
    return s.as_double();
  };
  const auto integer = [&](const char* key) {
    const State& s = entry(key);
    if (!s.is_int()) throw fail(key, "an int");
    return s.as_int();
  };
  const auto numbers = [&](const State& s, const std::string& key) {
    if (!s.is_list()) throw fail(key, "a list of numbers");
    std::vector<double> out;
    for (const State& x : s.as_list()) {
      if (!x.is_number()) throw fail(key, "a list of numbers");
      out.push_back(x.as_double());
    }
    return out;
  };

  // Everything is read and checked before anything changes.
  ReduceLROnPlateauOptions o = options_;
  o.factor(number("factor")).threshold(number("threshold")).eps(number("eps"));
  o.patience(integer("patience")).cooldown(integer("cooldown"));
  const State& verbose = entry("verbose");
  if (!verbose.is_bool()) throw fail("verbose", "a bool");
  o.verbose(verbose.as_bool());
  const State& mode = entry("mode");
  if (!mode.is_string() || (mode.as_string() != "min" && mode.as_string() != "max"))
    throw fail("mode", "'min' or 'max'");
  o.mode(mode.as_string() == "min" ? PlateauMode::Min : PlateauMode::Max);
  const State& threshold_mode = entry("threshold_mode");
  if (!threshold_mode.is_string() || (threshold_mode.as_string() != "rel" && threshold_mode.as_string() != "abs"))
    throw fail("threshold_mode", "'rel' or 'abs'");
  o.threshold_mode(threshold_mode.as_string() == "rel" ? ThresholdMode::Rel : ThresholdMode::Abs);
  std::vector<double> min_lrs = numbers(entry("min_lrs"), "min_lrs");
  const std::size_t groups = optimizer_->param_groups().size();
  if (min_lrs.size() != groups)
    throw std::invalid_argument("ppe::ReduceLROnPlateau: the saved state's 'min_lrs' holds " +
                                std::to_string(min_lrs.size()) + " rates, the optimizer has " + std::to_string(groups) +
                                " param groups");
  o.min_lrs(std::move(min_lrs));
  const double best = number("best");
  const std::int64_t num_bad_epochs = integer("num_bad_epochs");
  const std::int64_t cooldown_counter = integer("cooldown_counter");
  const std::int64_t last_epoch = integer("last_epoch");
  (void)entry("mode_worse");  // Python recomputes it from the mode, and so do we
  const State* saved_last_lr = state.find("_last_lr");
  std::vector<double> last_lr = saved_last_lr ? numbers(*saved_last_lr, "_last_lr") : std::vector<double>();

  options_ = std::move(o);
  best_ = best;
  num_bad_epochs_ = num_bad_epochs;
  cooldown_counter_ = cooldown_counter;
  last_epoch_ = last_epoch;
  last_lr_ = std::move(last_lr);
  has_last_lr_ = saved_last_lr != nullptr;
}

}  // namespace ppe::optim::lr_scheduler
