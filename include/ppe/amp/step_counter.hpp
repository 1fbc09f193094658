#pragma once
/// \file
/// `ppe::amp::StepCounter`: the count of an optimizer's real steps, which
/// LibTorch optimizers do not keep (Python's `optimizer._step_count`).
/// `GradScaler::step(optimizer, counter)` records into it the steps it really
/// applied, `ppe::training::OptimizerRef` holds one per optimizer and
/// `LRScheduler`'s `wait_for_first_optimizer_step` reads it.
///
/// A step decided on the device (a sync-free GradScaler) is recorded as a
/// device flag and summed there; the count reads the sum only when asked, so
/// recording never synchronises. The counter also carries a `state hook`, run
/// before the optimizer's state is saved or loaded, through which a sync-free
/// scaler writes its device step counts into that state first.

#include <ATen/core/Tensor.h>
#include <ATen/core/grad_mode.h>

#include <cstdint>
#include <functional>
#include <stdexcept>

namespace torch::optim {
class Optimizer;
}  // namespace torch::optim

namespace ppe::amp {

/// Counts the steps of one optimizer that were really applied; see the file
/// comment. Not copyable: holders share one (`ppe::training::OptimizerRef`
/// keeps it in a `shared_ptr`).
class StepCounter {
 public:
  StepCounter() = default;
  StepCounter(const StepCounter&) = delete;
  StepCounter& operator=(const StepCounter&) = delete;

  /// Records one step attempt, counted when `applied`.
  void record(bool applied = true) noexcept {
    ++recorded_;
    if (applied) ++host_;
  }
  /// Records one step attempt decided on the device: `applied` is a
  /// one-element integer or bool tensor (1: applied, 0: skipped) on any
  /// device, summed there without a host read.
  void record(const at::Tensor& applied) {
    if (!applied.defined() || applied.numel() != 1 || !c10::isIntegralType(applied.scalar_type(), /*includeBool=*/true))
      throw std::invalid_argument("ppe::amp::StepCounter::record: expected a one-element integer or bool tensor (1: "
                                  "the step was applied, 0: skipped)");
    at::NoGradGuard no_grad;
    const at::Tensor flag = applied.reshape({}).to(at::kLong);
    ++recorded_;
    // Flags on another device than the pending sum: the sum so far is read
    // (one synchronisation) rather than copied between devices at every step.
    pending_ = !pending_.defined()                 ? flag
               : pending_.device() == flag.device() ? pending_.add(flag)
                                                    : flag.add(read_pending());
  }

  /// The steps applied so far. Reads the pending device flags: one host read
  /// (a synchronisation on an accelerator) when some are pending.
  std::int64_t count() {
    host_ += read_pending();
    pending_ = at::Tensor();
    return host_;
  }
  /// Whether a step was applied: reads pending device flags only while none
  /// is known yet, so that asking at every iteration stops costing once the
  /// optimizer has stepped.
  bool has_stepped() { return host_ > 0 || count() > 0; }
  /// The step attempts recorded so far, applied or not (no host read): tells
  /// a caller whether someone recorded the step it handed on.
  std::int64_t recorded() const noexcept { return recorded_; }

  /// Sets the function run on the optimizer before its state is saved or
  /// loaded; `owner` tells who set it: setting it again with the same owner
  /// keeps the one there. A null `hook` removes it.
  void set_state_hook(const void* owner, std::function<void(torch::optim::Optimizer&)> hook) {
    if (hook_owner_ == owner && static_cast<bool>(hook_) == static_cast<bool>(hook)) return;
    hook_owner_ = hook ? owner : nullptr;
    hook_ = std::move(hook);
  }
  /// Whether `owner` set the state hook there now (so that a caller setting
  /// it at every step builds it once).
  bool has_state_hook(const void* owner) const noexcept { return hook_ && hook_owner_ == owner; }
  /// Runs the state hook, if any, on `optimizer`.
  void run_state_hook(torch::optim::Optimizer& optimizer) const {
    if (hook_) hook_(optimizer);
  }

 private:
  // The pending device flags' sum (0 when none), read on the host.
  std::int64_t read_pending() const { return pending_.defined() ? pending_.item<std::int64_t>() : 0; }

  std::int64_t host_ = 0;      // applied steps known on the host
  std::int64_t recorded_ = 0;  // every record() call
  at::Tensor pending_;         // int64, 0-dim: device flags recorded since the last read
  std::function<void(torch::optim::Optimizer&)> hook_;
  const void* hook_owner_ = nullptr;
};

}  // namespace ppe::amp
