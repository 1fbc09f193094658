#pragma once
/// \file
/// `ppe::optim::lr_scheduler::LinearLR` (PyTorch's
/// `torch.optim.lr_scheduler.LinearLR`): scales the initial rates by a
/// factor that moves linearly from `start_factor` to `end_factor` over
/// `total_iters` steps (a warm-up, or a linear decay), then keeps them.

#include <cstdint>
#include <optional>
#include <vector>

#include "ppe/detail/arg.hpp"
#include "ppe/detail/config.hpp"
#include "ppe/optim/lr_scheduler/lr_scheduler.hpp"
#include "ppe/state.hpp"

namespace ppe::optim::lr_scheduler {

/// LinearLR's keyword arguments, with Python's defaults.
struct LinearLROptions {
  /// The factor at construction (in [0, 1]).
  PPE_ARG(double, start_factor) = 1.0 / 3;
  /// The factor from step `total_iters` on (in [0, 1]).
  PPE_ARG(double, end_factor) = 1.0;
  /// The steps over which the factor moves.
  PPE_ARG(std::int64_t, total_iters) = 5;
  /// The index of the last step; -1 starts the schedule.
  PPE_ARG(std::int64_t, last_epoch) = -1;
  /// Prints each rate it sets (Python's message).
  PPE_ARG(bool, verbose) = false;
};

/// Python's LinearLR (chainable form in `step()`, closed form in
/// `step(epoch)`). A factor outside [0, 1] is a std::invalid_argument
/// (Python's ValueError); a zero divisor in Python's formulas (e.g.
/// `start_factor` 0) is a std::domain_error where Python raises
/// ZeroDivisionError.
///
/// State: `{start_factor, end_factor, total_iters, base_lrs, last_epoch,
/// verbose, _step_count, _get_lr_called_within_step, _last_lr}`.
class LinearLR : public LRScheduler {
 public:
  PPE_DECL explicit LinearLR(torch::optim::Optimizer& optimizer, LinearLROptions options = {});

  double start_factor() const noexcept { return start_factor_; }
  double end_factor() const noexcept { return end_factor_; }
  std::int64_t total_iters() const noexcept { return total_iters_; }

  PPE_DECL State state_dict() const override;
  PPE_DECL void load_state_dict(const State& state) override;

 protected:
  PPE_DECL std::vector<double> get_lr() override;
  PPE_DECL std::optional<std::vector<double>> closed_form_lr() const override;

 private:
  double start_factor_, end_factor_;
  std::int64_t total_iters_;
};

}  // namespace ppe::optim::lr_scheduler

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/optim/lr_scheduler/impl/linear_lr.ipp"
#endif
