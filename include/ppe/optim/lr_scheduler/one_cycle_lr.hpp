#pragma once
/// \file
/// `ppe::optim::lr_scheduler::OneCycleLR` (PyTorch's
/// `torch.optim.lr_scheduler.OneCycleLR`, the 1cycle policy): the rate rises
/// from `max_lr / div_factor` to `max_lr`, then falls to a much lower
/// minimum, over a fixed number of steps (one per batch), while momentum
/// moves the opposite way.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ppe/detail/arg.hpp"
#include "ppe/detail/config.hpp"
#include "ppe/optim/lr_scheduler/lr_scheduler.hpp"
#include "ppe/state.hpp"

namespace ppe::optim::lr_scheduler {

/// OneCycleLR's keyword arguments, with Python's defaults. Give
/// `total_steps`, or `epochs` and `steps_per_epoch` (their product).
struct OneCycleLROptions {
  /// The steps in the cycle (takes precedence over epochs * steps_per_epoch).
  PPE_ARG(std::optional<std::int64_t>, total_steps);
  PPE_ARG(std::optional<std::int64_t>, epochs);
  PPE_ARG(std::optional<std::int64_t>, steps_per_epoch);
  /// The fraction of the cycle spent raising the rate (a number in [0, 1]).
  PPE_ARG(double, pct_start) = 0.3;
  /// "cos" or "linear".
  PPE_ARG(std::string, anneal_strategy) = "cos";
  /// Cycle momentum (SGD's and RMSprop's `momentum`, Adam's and AdamW's
  /// first beta) inversely to the rate.
  PPE_ARG(bool, cycle_momentum) = true;
  /// The momentum at the peak rate, one value or one per group.
  PPE_ARG(PerGroup, base_momentum) = 0.85;
  /// The momentum at the start (and end), one value or one per group.
  PPE_ARG(PerGroup, max_momentum) = 0.95;
  /// The initial rate is `max_lr / div_factor`.
  PPE_ARG(double, div_factor) = 25.;
  /// The minimum rate is `initial rate / final_div_factor`.
  PPE_ARG(double, final_div_factor) = 1e4;
  /// Three phases (up, down to the initial rate, down to the minimum) instead of two.
  PPE_ARG(bool, three_phase) = false;
  /// The index of the last step; -1 starts the schedule.
  PPE_ARG(std::int64_t, last_epoch) = -1;
  /// Prints each rate it sets (Python's message).
  PPE_ARG(bool, verbose) = false;
};

/// Python's OneCycleLR. It sets the optimizer's rates (and, with
/// `cycle_momentum`, momenta) outright at each step; `step()` past
/// `total_steps` is a std::out_of_range ("Tried to step 52 times. The specified
/// number of total steps is 50", Python's ValueError) that changes nothing.
/// Momentum cycling needs an optimizer with momentum: `torch::optim::SGD`,
/// `RMSprop` (`momentum`), `Adam`, `AdamW` (first beta); another is a
/// std::invalid_argument, as Python's ValueError.
///
/// State: `{total_steps, _schedule_phases, cycle_momentum, use_beta1 (with
/// cycle_momentum), base_lrs, last_epoch, verbose, _step_count,
/// _get_lr_called_within_step, _last_lr}`. Python's also holds
/// `anneal_func`, a bound method (it pickles the whole scheduler with its
/// optimizer); it is left out, so a Python OneCycleLR that loads this state
/// keeps its own, which is how Python resumes anyway.
class OneCycleLR : public LRScheduler {
 public:
  /// A phase of the cycle, as Python's `_schedule_phases` entries: the step
  /// it ends at and the names of the group values it anneals between.
  struct Phase {
    double end_step;
    bool end_step_is_int;  // Python's last phase ends at the int total_steps - 1
    std::string start_lr, end_lr, start_momentum, end_momentum;
  };

  /// `max_lr`: the peak rate, one value or one per param group.
  PPE_DECL OneCycleLR(torch::optim::Optimizer& optimizer, PerGroup max_lr, OneCycleLROptions options = {});

  std::int64_t total_steps() const noexcept { return total_steps_; }
  bool cycle_momentum() const noexcept { return cycle_momentum_; }
  /// Whether the momentum cycled is the first beta (Adam, AdamW).
  bool use_beta1() const noexcept { return use_beta1_; }

  PPE_DECL State state_dict() const override;
  PPE_DECL void load_state_dict(const State& state) override;

 protected:
  PPE_DECL std::vector<double> get_lr() override;

 private:
  PPE_DECL double anneal(double start, double end, double pct) const;
  PPE_DECL void set_momentum(std::size_t group, double value);

  std::int64_t total_steps_ = 0;
  std::vector<Phase> phases_;
  bool linear_ = false;
  bool cycle_momentum_ = true;
  bool use_beta1_ = false;
};

}  // namespace ppe::optim::lr_scheduler

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/optim/lr_scheduler/impl/one_cycle_lr.ipp"
#endif
