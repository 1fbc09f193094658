#pragma once
/// \file
/// `ppe::optim::lr_scheduler::StepLR` (PyTorch's `torch.optim.lr_scheduler.StepLR`):
/// multiplies the rates by `gamma` every `step_size` steps, counting the
/// first step from construction as Python does.

#include <cstdint>
#include <optional>
#include <vector>

#include "ppe/detail/arg.hpp"
#include "ppe/detail/config.hpp"
#include "ppe/optim/lr_scheduler/lr_scheduler.hpp"
#include "ppe/state.hpp"

namespace ppe::optim::lr_scheduler {

/// StepLR's keyword arguments, with Python's defaults.
struct StepLROptions {
  /// The factor applied every `step_size` steps.
  PPE_ARG(double, gamma) = 0.1;
  /// The index of the last step; -1 starts the schedule.
  PPE_ARG(std::int64_t, last_epoch) = -1;
  /// Prints each rate it sets (Python's message).
  PPE_ARG(bool, verbose) = false;
};

/// Python's StepLR. Unlike LibTorch's `torch::optim::StepLR`, construction
/// takes the first step, so `StepLR(opt, 1, 0.5)` halves the rate at the
/// first `step()` (after the first epoch), as in Python.
///
/// State: `{step_size, gamma, base_lrs, last_epoch, verbose, _step_count,
/// _get_lr_called_within_step, _last_lr}`.
class StepLR : public LRScheduler {
 public:
  /// `step_size` 0 is a std::invalid_argument (Python divides by it at the
  /// second step).
  PPE_DECL StepLR(torch::optim::Optimizer& optimizer, std::int64_t step_size, StepLROptions options = {});
  /// LibTorch's spelling, `StepLR(optimizer, step_size, gamma)`.
  PPE_DECL StepLR(torch::optim::Optimizer& optimizer, std::int64_t step_size, double gamma, StepLROptions options = {});

  std::int64_t step_size() const noexcept { return step_size_; }
  double gamma() const noexcept { return gamma_; }

  PPE_DECL State state_dict() const override;
  PPE_DECL void load_state_dict(const State& state) override;

 protected:
  PPE_DECL std::vector<double> get_lr() override;
  PPE_DECL std::optional<std::vector<double>> closed_form_lr() const override;

 private:
  std::int64_t step_size_;
  double gamma_;
};

}  // namespace ppe::optim::lr_scheduler

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/optim/lr_scheduler/impl/step_lr.ipp"
#endif
