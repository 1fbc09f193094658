#pragma once
/// \file
/// `ppe::optim::lr_scheduler::ExponentialLR` (PyTorch's
/// `torch.optim.lr_scheduler.ExponentialLR`): multiplies the rates by
/// `gamma` at every step.

#include <cstdint>
#include <optional>
#include <vector>

#include "ppe/detail/arg.hpp"
#include "ppe/detail/config.hpp"
#include "ppe/optim/lr_scheduler/lr_scheduler.hpp"
#include "ppe/state.hpp"

namespace ppe::optim::lr_scheduler {

/// ExponentialLR's keyword arguments, with Python's defaults.
struct ExponentialLROptions {
  /// The index of the last step; -1 starts the schedule.
  PPE_ARG(std::int64_t, last_epoch) = -1;
  /// Prints each rate it sets (Python's message).
  PPE_ARG(bool, verbose) = false;
};

/// Python's ExponentialLR: after n steps the rate is `initial_lr * gamma^n`
/// (computed as n multiplications, as Python's `step()` does).
///
/// State: `{gamma, base_lrs, last_epoch, verbose, _step_count,
/// _get_lr_called_within_step, _last_lr}`.
class ExponentialLR : public LRScheduler {
 public:
  PPE_DECL ExponentialLR(torch::optim::Optimizer& optimizer, double gamma, ExponentialLROptions options = {});

  double gamma() const noexcept { return gamma_; }

  PPE_DECL State state_dict() const override;
  PPE_DECL void load_state_dict(const State& state) override;

 protected:
  PPE_DECL std::vector<double> get_lr() override;
  PPE_DECL std::optional<std::vector<double>> closed_form_lr() const override;

 private:
  double gamma_;
};

}  // namespace ppe::optim::lr_scheduler

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/optim/lr_scheduler/impl/exponential_lr.ipp"
#endif
