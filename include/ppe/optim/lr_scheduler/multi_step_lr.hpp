#pragma once
/// \file
/// `ppe::optim::lr_scheduler::MultiStepLR` (PyTorch's
/// `torch.optim.lr_scheduler.MultiStepLR`): multiplies the rates by `gamma`
/// at each milestone step (by `gamma^k` at a milestone listed k times).

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "ppe/detail/arg.hpp"
#include "ppe/detail/config.hpp"
#include "ppe/optim/lr_scheduler/lr_scheduler.hpp"
#include "ppe/state.hpp"

namespace ppe::optim::lr_scheduler {

/// MultiStepLR's keyword arguments, with Python's defaults.
struct MultiStepLROptions {
  /// The factor applied at each milestone.
  PPE_ARG(double, gamma) = 0.1;
  /// The index of the last step; -1 starts the schedule.
  PPE_ARG(std::int64_t, last_epoch) = -1;
  /// Prints each rate it sets (Python's message).
  PPE_ARG(bool, verbose) = false;
};

/// Python's MultiStepLR. `milestones` are step indices (Python asks for
/// increasing ones; a repeated one multiplies by gamma once per listing).
///
/// State: `{milestones, gamma, base_lrs, last_epoch, verbose, _step_count,
/// _get_lr_called_within_step, _last_lr}`, where `milestones` is Python's
/// `Counter` as a dict `{milestone: count}` with int keys. Python reads it as
/// a plain dict: a Python MultiStepLR loaded with it steps as usual, but its
/// `step(epoch)` (closed form, also SequentialLR's at a milestone) needs the
/// Counter back: `sched.milestones = collections.Counter(sched.milestones)`.
class MultiStepLR : public LRScheduler {
 public:
  PPE_DECL MultiStepLR(torch::optim::Optimizer& optimizer, std::vector<std::int64_t> milestones,
                       MultiStepLROptions options = {});

  /// The distinct milestones and how often each was listed, in first-listed order.
  const std::vector<std::pair<std::int64_t, std::int64_t>>& milestones() const noexcept { return milestones_; }
  double gamma() const noexcept { return gamma_; }

  PPE_DECL State state_dict() const override;
  PPE_DECL void load_state_dict(const State& state) override;

 protected:
  PPE_DECL std::vector<double> get_lr() override;
  PPE_DECL std::optional<std::vector<double>> closed_form_lr() const override;

 private:
  std::vector<std::pair<std::int64_t, std::int64_t>> milestones_;  // Python's Counter
  double gamma_;
};

}  // namespace ppe::optim::lr_scheduler

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/optim/lr_scheduler/impl/multi_step_lr.ipp"
#endif
