#pragma once
/// \file
/// `ppe::optim::lr_scheduler::CosineAnnealingWarmRestarts` (PyTorch's
/// `torch.optim.lr_scheduler.CosineAnnealingWarmRestarts`, SGDR): a cosine
/// from the initial rate down to `eta_min` over `T_i` steps, then a restart
/// at the initial rate with `T_i` multiplied by `T_mult`.

#include <concepts>
#include <cstdint>
#include <vector>

#include "ppe/detail/arg.hpp"
#include "ppe/detail/config.hpp"
#include "ppe/optim/lr_scheduler/lr_scheduler.hpp"
#include "ppe/state.hpp"

namespace ppe::optim::lr_scheduler {

/// CosineAnnealingWarmRestarts' keyword arguments, with Python's defaults.
struct CosineAnnealingWarmRestartsOptions {
  /// The factor by which the period grows at each restart (an int >= 1).
  PPE_ARG(std::int64_t, T_mult) = 1;
  /// The lowest rate.
  PPE_ARG(double, eta_min) = 0.0;
  /// The index of the last step; -1 starts the schedule.
  PPE_ARG(std::int64_t, last_epoch) = -1;
  /// Prints each rate it sets (Python's message, with the epoch).
  PPE_ARG(bool, verbose) = false;
};

/// Python's CosineAnnealingWarmRestarts: the rate is
/// `eta_min + (base_lr - eta_min) * (1 + cos(pi * T_cur / T_i)) / 2`, where
/// `T_cur` counts the steps since the last restart. It can also be stepped
/// by a fractional epoch, `step(epoch + i / iters_per_epoch)`, as in Python.
/// As in Python, its steps do not count `_step_count` (it stays 0).
///
/// State: `{T_0, T_i, T_mult, eta_min, T_cur, base_lrs, last_epoch, verbose,
/// _step_count, _get_lr_called_within_step, _last_lr}`; `T_cur` is an int,
/// or a float after a fractional epoch (or, with `T_mult` > 1, an epoch past
/// the first restart), as Python's.
class CosineAnnealingWarmRestarts : public LRScheduler {
 public:
  /// `T_0` < 1 or `T_mult` < 1 is a std::invalid_argument (Python's ValueError).
  PPE_DECL CosineAnnealingWarmRestarts(torch::optim::Optimizer& optimizer, std::int64_t T_0,
                                       CosineAnnealingWarmRestartsOptions options = {});

  using LRScheduler::step;
  /// One step further along the current period (a restart when it ends).
  PPE_DECL void step() override;
  /// The schedule at epoch `epoch` (an int >= 0; negative: std::invalid_argument).
  PPE_DECL void step(std::int64_t epoch) override;
  /// The schedule at a fractional epoch (>= 0), e.g. `epoch + i / iters`.
  template <std::floating_point F>
  void step(F epoch) {
    step_at(static_cast<double>(epoch), false);
  }

  std::int64_t T_0() const noexcept { return T_0_; }
  /// The current period.
  std::int64_t T_i() const noexcept { return T_i_; }
  std::int64_t T_mult() const noexcept { return T_mult_; }
  double eta_min() const noexcept { return eta_min_; }
  /// The steps (or fractional epochs) since the last restart.
  double T_cur() const noexcept { return T_cur_; }

  PPE_DECL State state_dict() const override;
  PPE_DECL void load_state_dict(const State& state) override;

 protected:
  PPE_DECL std::vector<double> get_lr() override;

 private:
  /// Python's `step(epoch)`; `integral`: the epoch was a Python int.
  PPE_DECL void step_at(double epoch, bool integral);

  std::int64_t T_0_, T_i_, T_mult_;
  double eta_min_;
  double T_cur_;
  bool T_cur_is_int_ = true;  // Python's type of T_cur, kept for the saved state
};

}  // namespace ppe::optim::lr_scheduler

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/optim/lr_scheduler/impl/cosine_annealing_warm_restarts.ipp"
#endif
