#pragma once
/// \file
/// `ppe::optim::lr_scheduler::CosineAnnealingLR` (PyTorch's
/// `torch.optim.lr_scheduler.CosineAnnealingLR`): the rates follow a cosine
/// from the initial rate down to `eta_min` over `T_max` steps, then back up
/// over the next `T_max`, and so on.

#include <cstdint>
#include <optional>
#include <vector>

#include "ppe/detail/arg.hpp"
#include "ppe/detail/config.hpp"
#include "ppe/optim/lr_scheduler/lr_scheduler.hpp"
#include "ppe/state.hpp"

namespace ppe::optim::lr_scheduler {

/// CosineAnnealingLR's keyword arguments, with Python's defaults.
struct CosineAnnealingLROptions {
  /// The lowest rate.
  PPE_ARG(double, eta_min) = 0.0;
  /// The index of the last step; -1 starts the schedule.
  PPE_ARG(std::int64_t, last_epoch) = -1;
  /// Prints each rate it sets (Python's message).
  PPE_ARG(bool, verbose) = false;
};

/// Python's CosineAnnealingLR, with its recursive (chainable) form in
/// `step()`: each step scales the distance of the current rate to `eta_min`,
/// so a change made to the rate from outside carries on, as in Python. Its
/// closed form, `eta_min + (base_lr - eta_min) * (1 + cos(pi * t / T_max)) / 2`,
/// is `step(epoch)`'s.
///
/// State: `{T_max, eta_min, base_lrs, last_epoch, verbose, _step_count,
/// _get_lr_called_within_step, _last_lr}`.
class CosineAnnealingLR : public LRScheduler {
 public:
  /// `T_max` 0 is a std::invalid_argument (Python divides by it at the second step).
  PPE_DECL CosineAnnealingLR(torch::optim::Optimizer& optimizer, std::int64_t T_max,
                             CosineAnnealingLROptions options = {});

  std::int64_t T_max() const noexcept { return T_max_; }
  double eta_min() const noexcept { return eta_min_; }

  PPE_DECL State state_dict() const override;
  PPE_DECL void load_state_dict(const State& state) override;

 protected:
  PPE_DECL std::vector<double> get_lr() override;
  PPE_DECL std::optional<std::vector<double>> closed_form_lr() const override;

 private:
  std::int64_t T_max_;
  double eta_min_;
};

}  // namespace ppe::optim::lr_scheduler

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/optim/lr_scheduler/impl/cosine_annealing_lr.ipp"
#endif
