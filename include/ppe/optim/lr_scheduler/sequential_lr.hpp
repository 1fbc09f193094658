#pragma once
/// \file
/// `ppe::optim::lr_scheduler::SequentialLR` (PyTorch's
/// `torch.optim.lr_scheduler.SequentialLR`): runs one scheduler after
/// another, switching at milestone steps (e.g. a LinearLR warm-up, then a
/// CosineAnnealingLR).

#include <cstdint>
#include <functional>
#include <vector>

#include "ppe/detail/arg.hpp"
#include "ppe/detail/config.hpp"
#include "ppe/optim/lr_scheduler/lr_scheduler.hpp"
#include "ppe/state.hpp"

namespace ppe::optim::lr_scheduler {

/// SequentialLR's keyword arguments, with Python's defaults (Python's
/// `verbose` does nothing there and is not stored, so it is left out).
struct SequentialLROptions {
  /// One less than the index of the first step.
  PPE_ARG(std::int64_t, last_epoch) = -1;
};

/// Python's SequentialLR. `schedulers` (at least one, all of `optimizer`)
/// are held by reference and must outlive it; there is one milestone fewer
/// than schedulers. As Python's, construction resets the rates to the
/// groups' initial rates, moves every scheduler one step back and restarts
/// the first; `step()` steps the scheduler whose interval holds the new
/// step index, and a scheduler's first step at its milestone is
/// `step(0)` (its closed form, from its base rates: Python's behaviour, so a
/// StepLR after a cosine starts again at its base rate).
///
/// Not a subclass of LRScheduler (Python's is, but has neither `base_lrs`
/// nor `_step_count`): it cannot be nested in another SequentialLR.
///
/// State: `{_milestones, last_epoch, _last_lr, _schedulers}`, where
/// `_schedulers` is the list of the schedulers' states, as Python's.
class SequentialLR {
 public:
  /// Python's ValueErrors as std::invalid_argument: a scheduler of another
  /// optimizer, a milestone count that is not one less than the schedulers'.
  PPE_DECL SequentialLR(torch::optim::Optimizer& optimizer, std::vector<std::reference_wrapper<LRScheduler>> schedulers,
                        std::vector<std::int64_t> milestones, SequentialLROptions options = {});

  /// Python's `step()`.
  PPE_DECL void step();

  /// The rates the last step set (Python's `get_last_lr()`).
  const std::vector<double>& get_last_lr() const noexcept { return last_lr_; }
  std::int64_t last_epoch() const noexcept { return last_epoch_; }
  const std::vector<std::int64_t>& milestones() const noexcept { return milestones_; }
  const std::vector<std::reference_wrapper<LRScheduler>>& schedulers() const noexcept { return schedulers_; }
  torch::optim::Optimizer& optimizer() const noexcept { return *optimizer_; }

  PPE_DECL State state_dict() const;
  /// Restores this layout, the schedulers' states included; everything is
  /// checked before anything changes except the schedulers' own loads, which
  /// run last and check their own states.
  PPE_DECL void load_state_dict(const State& state);

 private:
  torch::optim::Optimizer* optimizer_;
  std::vector<std::reference_wrapper<LRScheduler>> schedulers_;
  std::vector<std::int64_t> milestones_;
  std::int64_t last_epoch_;
  std::vector<double> last_lr_;
};

}  // namespace ppe::optim::lr_scheduler

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/optim/lr_scheduler/impl/sequential_lr.ipp"
#endif
