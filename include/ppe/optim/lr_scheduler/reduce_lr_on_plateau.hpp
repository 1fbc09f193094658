#pragma once
/// \file
/// `ppe::optim::lr_scheduler::ReduceLROnPlateau`: multiplies the learning rates of an
/// optimizer by `factor` when a watched value stops improving (the semantics
/// of PyTorch 1.13's `torch.optim.lr_scheduler.ReduceLROnPlateau`, which
/// LibTorch 1.13's C++ API lacks).
///
/// ```cpp
/// torch::optim::SGD optimizer(model->parameters(), 0.1);
/// namespace lrs = ppe::optim::lr_scheduler;
/// lrs::ReduceLROnPlateau scheduler(optimizer, lrs::ReduceLROnPlateauOptions().patience(5));
/// for (int epoch = 0; epoch < 100; ++epoch) {
///   train(...);
///   scheduler.step(validation_loss);           // a double
/// }
/// ```
///
/// Driven by `ppe::training::extensions::LRScheduler`, it steps on the
/// reported `val/loss` unless given another stepper (PPE's default).
/// Its state is Python's layout, so `torch.load` reads it and Python's
/// `ReduceLROnPlateau.load_state_dict` accepts it.
///
/// As in PyTorch 1.13 it is not an `LRScheduler` (lr_scheduler.hpp): it has
/// no `base_lrs`, takes no step at construction and is stepped with a value.

#include <cstdint>
#include <limits>
#include <vector>

#include "ppe/detail/arg.hpp"
#include "ppe/detail/config.hpp"
#include "ppe/state.hpp"

namespace torch::optim {
class Optimizer;
}  // namespace torch::optim

namespace ppe::optim::lr_scheduler {

/// Whether a lower (`Min`, e.g. a loss) or a higher (`Max`, e.g. an
/// accuracy) value is an improvement (Python's `mode='min'` / `'max'`).
enum class PlateauMode { Min, Max };
/// How `threshold` bounds an improvement over the best value `b`: `Rel` needs
/// `a < b * (1 - threshold)` (min) or `a > b * (1 + threshold)` (max), `Abs`
/// needs `a < b - threshold` or `a > b + threshold` (Python's
/// `threshold_mode='rel'` / `'abs'`).
enum class ThresholdMode { Rel, Abs };

/// Constructor options of ReduceLROnPlateau (Python's keyword arguments and
/// defaults).
struct ReduceLROnPlateauOptions {
  PPE_ARG(PlateauMode, mode) = PlateauMode::Min;
  /// New rate = rate * factor; must be < 1.
  PPE_ARG(double, factor) = 0.1;
  /// Steps without improvement tolerated: the rates drop at the next one.
  PPE_ARG(std::int64_t, patience) = 10;
  /// The least improvement that counts (see ThresholdMode).
  PPE_ARG(double, threshold) = 1e-4;
  PPE_ARG(ThresholdMode, threshold_mode) = ThresholdMode::Rel;
  /// Steps after a reduction during which no bad step is counted.
  PPE_ARG(std::int64_t, cooldown) = 0;
  /// The lowest rate of every param group.
  PPE_ARG(double, min_lr) = 0.0;
  /// The lowest rate of each param group (one per group); when given,
  /// replaces `min_lr` (Python's list form of `min_lr`).
  PPE_ARG(std::vector<double>, min_lrs);
  /// A reduction smaller than this is not applied.
  PPE_ARG(double, eps) = 1e-8;
  /// Prints a line to standard output for each reduction, as Python does:
  /// `Epoch 00005: reducing learning rate of group 0 to 5.0000e-02.`
  PPE_ARG(bool, verbose) = false;
};

/// Reduces the learning rates of `optimizer`'s param groups when the value
/// given to `step` has not improved for more than `patience` steps (PyTorch
/// 1.13's `ReduceLROnPlateau`). Holds the optimizer by reference: it must
/// outlive the scheduler.
///
/// Each `step(value)`: counts the step (`last_epoch`); a value better than
/// `best` by the threshold becomes `best` and clears the bad-step count,
/// otherwise the count grows; during a cooldown the cooldown counter drops
/// and bad steps are not counted; when the count exceeds `patience`, every
/// group's rate becomes `max(rate * factor, min_lr)` unless that lowers it by
/// no more than `eps`, the cooldown starts and the count clears. Then
/// `get_last_lr()` returns the rates.
class ReduceLROnPlateau {
 public:
  /// `std::invalid_argument` when `factor >= 1` or `min_lrs` is not one per
  /// param group.
  PPE_DECL explicit ReduceLROnPlateau(torch::optim::Optimizer& optimizer, ReduceLROnPlateauOptions options = {});

  /// One step with the watched value (Python's `step(metrics)`; the
  /// deprecated `epoch` argument is not provided).
  PPE_DECL void step(double metrics);

  /// Whether `a` improves on `best` under the mode and threshold.
  PPE_DECL bool is_better(double a, double best) const noexcept;
  bool in_cooldown() const noexcept { return cooldown_counter_ > 0; }

  /// The best value so far (+inf in min mode, -inf in max mode before the first step).
  double best() const noexcept { return best_; }
  std::int64_t num_bad_epochs() const noexcept { return num_bad_epochs_; }
  std::int64_t cooldown_counter() const noexcept { return cooldown_counter_; }
  /// Steps taken (Python's `last_epoch`; 0 before the first).
  std::int64_t last_epoch() const noexcept { return last_epoch_; }
  /// Every group's rate after the last step (Python's `_last_lr`); empty
  /// before the first step.
  const std::vector<double>& get_last_lr() const noexcept { return last_lr_; }
  /// The settings in use: `min_lrs` holds one rate per group, and
  /// `load_state_dict` replaces them all, as in Python.
  const ReduceLROnPlateauOptions& options() const noexcept { return options_; }
  torch::optim::Optimizer& optimizer() const noexcept { return *optimizer_; }

  /// Python's layout (its `__dict__` without the optimizer), in its order:
  /// `factor`, `min_lrs`, `patience`, `verbose`, `cooldown`,
  /// `cooldown_counter`, `mode` ('min'/'max'), `threshold`, `threshold_mode`
  /// ('rel'/'abs'), `best`, `num_bad_epochs`, `mode_worse`, `eps`,
  /// `last_epoch`, and `_last_lr` once a step was taken.
  PPE_DECL State state_dict() const;
  /// Restores a state from `state_dict()` or from Python. Every key but
  /// `_last_lr` is required, keys it does not know are ignored, and nothing
  /// changes when one is missing or mistyped, a mode is unknown or `min_lrs`
  /// is not one per param group (`std::invalid_argument` naming the key).
  PPE_DECL void load_state_dict(const State& state);

 private:
  PPE_DECL void reduce_lr();
  // Python's `mode_worse`: the starting best, worse than any value.
  double mode_worse() const noexcept {
    return options_.mode() == PlateauMode::Min ? std::numeric_limits<double>::infinity()
                                               : -std::numeric_limits<double>::infinity();
  }

  torch::optim::Optimizer* optimizer_;
  ReduceLROnPlateauOptions options_;
  double best_;
  std::int64_t num_bad_epochs_ = 0;
  std::int64_t cooldown_counter_ = 0;
  std::int64_t last_epoch_ = 0;
  std::vector<double> last_lr_;
  bool has_last_lr_ = false;  // Python's `_last_lr` exists once a step was taken
};

}  // namespace ppe::optim::lr_scheduler

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/optim/lr_scheduler/impl/reduce_lr_on_plateau.ipp"
#endif
