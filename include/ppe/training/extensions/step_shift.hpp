#pragma once
/// \file
/// `ppe::training::extensions::StepShift` (Chainer's `StepShift`): multiplies
/// an optimizer option (the learning rate, typically) by a factor every k calls.

#include <cstdint>
#include <optional>
#include <string_view>

#include "ppe/detail/arg.hpp"
#include "ppe/detail/config.hpp"
#include "ppe/state.hpp"
#include "ppe/training/extension.hpp"
#include "ppe/training/extensions/detail/shift.hpp"
#include "ppe/training/manager.hpp"
#include "ppe/training/triggers/interval_trigger.hpp"

namespace ppe::training::extensions {

/// Options of a StepShift (Chainer's keyword arguments).
struct StepShiftOptions {
  /// The value before the first call; unset: the optimizer's value when the
  /// extension is initialized (Chainer's `init=None`).
  PPE_ARG(std::optional<double>, init);
  /// Where the shift stops: a value past it (in the direction of the shift)
  /// becomes the target. Unset: no limit. Must not be 0.
  PPE_ARG(std::optional<double>, target);
  PPE_SHIFT_OPTIMIZER_ARGS(StepShiftOptions)
};

/// Sets `attr` at its t-th call to `init * gamma^floor(t / step)` (Chainer's
/// `StepShift`), clipped at `target` as ExponentialShift does (with `gamma` as
/// the rate). At initialize it sets `init` (or, resuming, the last value
/// set). Runs every iteration by default.
///
/// State: Chainer's `{"_t": int, "_last_value": float or None}`, plus
/// `"_init"` (the initial value, None before it is known).
class StepShift {
 public:
  using extension_concept = extension_tag;
  static constexpr std::string_view default_name = "StepShift";
  static constexpr int priority = kPriorityReader;
  static auto default_trigger() { return ppe::iterations(1); }

  /// `step < 1`, non-finite numbers and a `target` of 0 are `std::invalid_argument`.
  PPE_DECL StepShift(ShiftAttribute attr, double gamma, std::int64_t step, StepShiftOptions options = {});

  PPE_DECL void initialize(Manager& manager);
  PPE_DECL void operator()(Manager& manager);

  PPE_DECL State state_dict() const;
  PPE_DECL void load_state_dict(const State& state);

  /// Calls so far (Chainer's `_t`).
  std::int64_t count() const noexcept { return t_; }
  /// The value last set (None before initialize).
  const std::optional<double>& last_value() const noexcept { return last_value_; }
  /// The initial value (None until given or read).
  const std::optional<double>& init() const noexcept { return init_; }
  const ShiftAttribute& attribute() const noexcept { return target_.attribute(); }

 private:
  static constexpr std::string_view kWho = "ppe::StepShift";
  PPE_DECL void set(Manager& manager, double value, std::int64_t t);

  detail::ShiftTarget target_;
  double gamma_;
  std::int64_t step_;
  std::optional<double> init_, clip_;
  bool init_given_;
  std::int64_t t_ = 0;
  std::optional<double> last_value_;
};

}  // namespace ppe::training::extensions

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/training/extensions/impl/step_shift.ipp"
#endif
