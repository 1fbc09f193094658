#pragma once
/// \file
/// `ppe::training::extensions::MultistepShift` (Chainer's `MultistepShift`):
/// multiplies an optimizer option (the learning rate, typically) by a factor
/// at each of a list of calls.

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "ppe/detail/arg.hpp"
#include "ppe/detail/config.hpp"
#include "ppe/state.hpp"
#include "ppe/training/extension.hpp"
#include "ppe/training/extensions/detail/shift.hpp"
#include "ppe/training/manager.hpp"
#include "ppe/training/triggers/interval_trigger.hpp"

namespace ppe::training::extensions {

/// Options of a MultistepShift (Chainer's `optimizer` argument, and the param groups).
struct MultistepShiftOptions {
  PPE_SHIFT_OPTIMIZER_ARGS(MultistepShiftOptions)
};

/// Sets `attr` to `init * gamma^k`, where k is the number of entries of
/// `step_value` reached so far: with `step_value = {s1, s2, s3}` the value is
/// `init` before call s1, `init * gamma` from call s1, `init * gamma^2` from
/// s2 and `init * gamma^3` from s3 on (Chainer's `MultistepShift`). `init`
/// unset: the optimizer's value when the extension is initialized (Chainer's
/// `init=None`). At initialize it sets `init * gamma^k` (`init` on a fresh
/// start). Runs every iteration by default.
///
/// State: Chainer's `{"_t": int, "_current_step": int}` (k), plus `"_init"`
/// (the initial value, None before it is known). Chainer sets `init` again
/// when a resumed run starts, so that the rate is wrong until the next call;
/// this one sets `init * gamma^k`.
class MultistepShift {
 public:
  using extension_concept = extension_tag;
  static constexpr std::string_view default_name = "MultistepShift";
  static constexpr int priority = kPriorityReader;
  static auto default_trigger() { return ppe::iterations(1); }

  /// `step_value` must be non-empty and strictly increasing call counts
  /// from 1; otherwise, and for non-finite numbers, `std::invalid_argument`.
  PPE_DECL MultistepShift(ShiftAttribute attr, double gamma, std::vector<std::int64_t> step_value,
                          std::optional<double> init, MultistepShiftOptions options = {});

  PPE_DECL void initialize(Manager& manager);
  PPE_DECL void operator()(Manager& manager);

  PPE_DECL State state_dict() const;
  PPE_DECL void load_state_dict(const State& state);

  /// Calls so far (Chainer's `_t`).
  std::int64_t count() const noexcept { return t_; }
  /// Entries of `step_value` reached (Chainer's `_current_step`).
  std::int64_t current_step() const noexcept { return current_step_; }
  /// The initial value (None until given or read).
  const std::optional<double>& init() const noexcept { return init_; }
  const std::vector<std::int64_t>& step_value() const noexcept { return steps_; }
  const ShiftAttribute& attribute() const noexcept { return target_.attribute(); }

 private:
  static constexpr std::string_view kWho = "ppe::MultistepShift";
  PPE_DECL double value(std::int64_t current_step) const;

  detail::ShiftTarget target_;
  double gamma_;
  std::vector<std::int64_t> steps_;
  std::optional<double> init_;
  bool init_given_;
  std::int64_t t_ = 0, current_step_ = 0;
};

}  // namespace ppe::training::extensions

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/training/extensions/impl/multistep_shift.ipp"
#endif
