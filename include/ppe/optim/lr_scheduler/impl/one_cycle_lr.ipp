// Definitions of optim/lr_scheduler/one_cycle_lr.hpp's out-of-line functions: included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

// All six: the options table's lookup casts to each optimizer's options.
#include <torch/optim/adagrad.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/lbfgs.h>
#include <torch/optim/optimizer.h>
#include <torch/optim/rmsprop.h>
#include <torch/optim/sgd.h>

#include <cmath>
#include <numbers>
#include <stdexcept>
#include <string>
#include <utility>

#include "ppe/detail/python_repr.hpp"
#include "ppe/optim/detail/options_table.hpp"
#include "ppe/optim/lr_scheduler/one_cycle_lr.hpp"

namespace ppe::optim::lr_scheduler {

namespace detail {

/// Where options keep the momentum that OneCycleLR cycles: `momentum` (SGD,
/// RMSprop), else the first of `betas` (Adam, AdamW: Python's `use_beta1`);
/// null for options with neither.
template <class Options>
auto* momentum_slot(Options& o) {
  auto* m = ppe::optim::detail::double_option(o, "momentum");
  return m ? m : ppe::optim::detail::double_option(o, "beta1");
}

/// How an optimizer's options hold momentum: 0 none, 1 `momentum`, 2 `betas`.
PPE_DECL int momentum_kind(const torch::optim::OptimizerOptions& o) {
  if (ppe::optim::detail::double_option(o, "momentum")) return 1;
  return ppe::optim::detail::double_option(o, "beta1") ? 2 : 0;
}

PPE_DECL bool known_group_key(std::string_view key) {
  return key == "initial_lr" || key == "max_lr" || key == "min_lr" || key == "max_momentum" || key == "base_momentum";
}

}  // namespace detail

PPE_DECL OneCycleLR::OneCycleLR(torch::optim::Optimizer& optimizer, PerGroup max_lr, OneCycleLROptions options)
    : LRScheduler(optimizer, "OneCycleLR") {
  // Python's checks, in its order.
  if (!options.total_steps() && !options.epochs() && !options.steps_per_epoch())
    throw std::invalid_argument(name() + ": you must define either total_steps OR (epochs AND steps_per_epoch)");
  if (options.total_steps()) {
    if (*options.total_steps() <= 0)
      throw std::invalid_argument(name() + ": expected positive integer total_steps, but got " +
                                  std::to_string(*options.total_steps()));
    total_steps_ = *options.total_steps();
  } else {
    if (!options.epochs() || *options.epochs() <= 0)
      throw std::invalid_argument(name() + ": expected positive integer epochs, but got " +
                                  (options.epochs() ? std::to_string(*options.epochs()) : std::string("none")));
    if (!options.steps_per_epoch() || *options.steps_per_epoch() <= 0)
      throw std::invalid_argument(
          name() + ": expected positive integer steps_per_epoch, but got " +
          (options.steps_per_epoch() ? std::to_string(*options.steps_per_epoch()) : std::string("none")));
    total_steps_ = *options.epochs() * *options.steps_per_epoch();
  }
  const double pct = options.pct_start();
  const auto total = static_cast<double>(total_steps_);
  if (options.three_phase())
    phases_ = {{pct * total - 1, false, "initial_lr", "max_lr", "max_momentum", "base_momentum"},
               {2 * pct * total - 2, false, "max_lr", "initial_lr", "base_momentum", "max_momentum"},
               {total - 1, true, "initial_lr", "min_lr", "max_momentum", "max_momentum"}};
  else
    phases_ = {{pct * total - 1, false, "initial_lr", "max_lr", "max_momentum", "base_momentum"},
               {total - 1, true, "max_lr", "min_lr", "base_momentum", "max_momentum"}};
  if (!(pct >= 0 && pct <= 1))
    throw std::invalid_argument(name() + ": expected float between 0 and 1 pct_start, but got " +
                                ppe::detail::python_float_repr(pct));
  if (options.anneal_strategy() != "cos" && options.anneal_strategy() != "linear")
    throw std::invalid_argument(name() + ": anneal_strategy must be one of 'cos' or 'linear', instead got '" +
                                options.anneal_strategy() + "'");
  linear_ = options.anneal_strategy() == "linear";

  // Everything is checked before the groups change (Python changes them first; the errors are the same).
  const std::size_t groups = num_groups();
  const std::vector<double> max_lrs = max_lr.expand(groups, name(), "max_lr");
  cycle_momentum_ = options.cycle_momentum();
  std::vector<double> max_m, base_m;
  if (cycle_momentum_) {
    const int kind = detail::momentum_kind(this->optimizer().defaults());
    if (kind == 0)
      throw std::invalid_argument(name() +
                                  ": optimizer must support momentum with `cycle_momentum` option enabled (SGD, "
                                  "RMSprop, Adam or AdamW; or set cycle_momentum(false))");
    use_beta1_ = kind == 2;
    max_m = options.max_momentum().expand(groups, name(), "max_momentum");
    base_m = options.base_momentum().expand(groups, name(), "base_momentum");
  }
  if (options.last_epoch() == -1)
    for (std::size_t g = 0; g < groups; ++g) {
      set_extra(g, "initial_lr", max_lrs[g] / options.div_factor());
      set_extra(g, "max_lr", max_lrs[g]);
      set_extra(g, "min_lr", extra(g, "initial_lr") / options.final_div_factor());
      if (cycle_momentum_) {
        set_momentum(g, max_m[g]);
        set_extra(g, "max_momentum", max_m[g]);
        set_extra(g, "base_momentum", base_m[g]);
      }
    }
  start(options.last_epoch(), options.verbose());
}

PPE_DECL double OneCycleLR::anneal(double start, double end, double pct) const {
  if (linear_) return (end - start) * pct + start;
  const double cos_out = std::cos(std::numbers::pi * pct) + 1;
  return end + (start - end) / 2.0 * cos_out;
}

PPE_DECL void OneCycleLR::set_momentum(std::size_t group, double value) {
  auto& o = optimizer().param_groups()[group].options();
  if (double* m = detail::momentum_slot(o)) {
    *m = value;
  } else {
    throw std::invalid_argument(name() + ": param group " + std::to_string(group) +
                                " has options without momentum (SGD, RMSprop, Adam or AdamW expected)");
  }
}

// The expressions keep Python's operation order, so the rates match it bit for bit.
PPE_DECL std::vector<double> OneCycleLR::get_lr() {
  const std::int64_t step_num = last_epoch_;
  if (step_num > total_steps_)
    throw std::out_of_range(name() + ": Tried to step " + std::to_string(step_num + 1) +
                            " times. The specified number of total steps is " + std::to_string(total_steps_));
  const std::size_t groups = num_groups();
  std::vector<double> lrs(groups), momenta(groups);
  for (std::size_t g = 0; g < groups; ++g) {
    double start_step = 0;
    for (std::size_t i = 0; i < phases_.size(); ++i) {
      const Phase& phase = phases_[i];
      if (static_cast<double>(step_num) <= phase.end_step || i + 1 == phases_.size()) {
        const double pct =
            detail::py_div(static_cast<double>(step_num) - start_step, phase.end_step - start_step, name());
        lrs[g] = anneal(extra(g, phase.start_lr), extra(g, phase.end_lr), pct);
        if (cycle_momentum_) momenta[g] = anneal(extra(g, phase.start_momentum), extra(g, phase.end_momentum), pct);
        break;
      }
      start_step = phase.end_step;
    }
  }
  // Python sets the momenta inside get_lr; set after all are computed, so a throw changes nothing.
  if (cycle_momentum_)
    for (std::size_t g = 0; g < groups; ++g) set_momentum(g, momenta[g]);
  return lrs;
}

PPE_DECL State OneCycleLR::state_dict() const {
  State phases = State::list();
  for (const Phase& p : phases_)
    phases.as_list().push_back(
        State::dict({{"end_step", p.end_step_is_int ? State(static_cast<std::int64_t>(p.end_step)) : State(p.end_step)},
                     {"start_lr", p.start_lr},
                     {"end_lr", p.end_lr},
                     {"start_momentum", p.start_momentum},
                     {"end_momentum", p.end_momentum}}));
  State s = State::dict({{"total_steps", total_steps_}, {"_schedule_phases", std::move(phases)}});
  s.set("cycle_momentum", cycle_momentum_);
  if (cycle_momentum_) s.set("use_beta1", use_beta1_);
  write_base_state(s);
  return s;
}

PPE_DECL void OneCycleLR::load_state_dict(const State& state) {
  const std::int64_t total_steps = detail::int_field(state, "total_steps", name());
  if (total_steps <= 0)
    throw std::invalid_argument(name() + ": the saved total_steps is " + std::to_string(total_steps) +
                                ", expected a positive int");
  const State& saved_phases = detail::state_field(state, "_schedule_phases", name());
  if (!saved_phases.is_list() || saved_phases.size() == 0)
    detail::wrong_kind(saved_phases, "_schedule_phases", name(), "a non-empty list of phase dicts");
  std::vector<Phase> phases;
  for (const State& p : saved_phases.as_list()) {
    const std::string where = "_schedule_phases[" + std::to_string(phases.size()) + "]";
    if (!p.is_dict()) detail::wrong_kind(p, where, name(), "a dict");
    Phase phase{detail::number_field(p, "end_step", name() + " " + where), p.at("end_step").is_int(), {}, {}, {}, {}};
    std::string* names[] = {&phase.start_lr, &phase.end_lr, &phase.start_momentum, &phase.end_momentum};
    const char* keys[] = {"start_lr", "end_lr", "start_momentum", "end_momentum"};
    for (int k = 0; k < 4; ++k) {
      const State& v = detail::state_field(p, keys[k], name() + " " + where);
      if (!v.is_string()) detail::wrong_kind(v, where + "." + keys[k], name(), "a string");
      if (!detail::known_group_key(v.as_string()))
        throw std::invalid_argument(name() + ": the saved " + where + "." + keys[k] + " is '" + v.as_string() +
                                    "', expected initial_lr, max_lr, min_lr, max_momentum or base_momentum");
      *names[k] = v.as_string();
    }
    phases.push_back(std::move(phase));
  }
  const bool cycle = detail::bool_field(state, "cycle_momentum", name());
  bool beta1 = false;
  if (cycle) {
    beta1 = detail::bool_field(state, "use_beta1", name());
    const int kind = detail::momentum_kind(optimizer().defaults());
    if (kind == 0 || beta1 != (kind == 2))
      throw std::invalid_argument(name() + ": the saved state cycles " + (beta1 ? "betas" : "momentum") +
                                  ", which this optimizer does not have");
    if (!cycle_momentum_)
      for (std::size_t g = 0; g < num_groups(); ++g)
        if (!has_extra(g, "max_momentum") || !has_extra(g, "base_momentum"))
          throw std::invalid_argument(name() +
                                      ": the saved state cycles momentum, but this scheduler was built "
                                      "with cycle_momentum(false) and has no momentum bounds");
  }
  BaseFields base = read_base_state(state);
  total_steps_ = total_steps;
  phases_ = std::move(phases);
  cycle_momentum_ = cycle;
  use_beta1_ = beta1;
  commit_base_state(std::move(base));
}

}  // namespace ppe::optim::lr_scheduler
