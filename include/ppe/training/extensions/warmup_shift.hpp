#pragma once
/// \file
/// `ppe::training::extensions::WarmupShift` (Chainer's `WarmupShift`): moves
/// an optimizer option (the learning rate, typically) evenly from a start
/// value to its initial value over the first calls of training.

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

/// Options of a WarmupShift (Chainer's `optimizer` argument, and the param groups).
struct WarmupShiftOptions {
  PPE_SHIFT_OPTIMIZER_ARGS(WarmupShiftOptions)
};

/// Sets `attr` at its t-th call, for `t <= warmup_iter`, to
/// `(t * init + (warmup_iter - t) * warmup_start) / warmup_iter`, so that it
/// reaches `init` at call `warmup_iter`; later calls leave it alone (Chainer's
/// `WarmupShift`, whose argument order this follows). `warmup_start` unset:
/// the optimizer's value when the extension is initialized. At initialize it
/// sets `warmup_start` on a fresh start. Runs every iteration by default.
///
/// State: Chainer's `{"_t": int}`, plus `"_warmup_start"` (None before it is
/// known). Chainer sets `warmup_start` again when a resumed run starts (after
/// the warmup too, where its calls then leave that value for the rest of
/// training); this one sets the value of call `_t` during the warmup and
/// leaves the option alone after it, as the calls do.
class WarmupShift {
 public:
  using extension_concept = extension_tag;
  static constexpr std::string_view default_name = "WarmupShift";
  static constexpr int priority = kPriorityReader;
  static auto default_trigger() { return ppe::iterations(1); }

  /// `warmup_iter < 1` and non-finite numbers are `std::invalid_argument`.
  PPE_DECL WarmupShift(ShiftAttribute attr, std::optional<double> warmup_start, std::int64_t warmup_iter, double init,
                       WarmupShiftOptions options = {});

  PPE_DECL void initialize(Manager& manager);
  PPE_DECL void operator()(Manager& manager);

  PPE_DECL State state_dict() const;
  PPE_DECL void load_state_dict(const State& state);

  /// Calls so far (Chainer's `_t`).
  std::int64_t count() const noexcept { return t_; }
  /// The value at the start (None until given or read).
  const std::optional<double>& warmup_start() const noexcept { return start_; }
  const ShiftAttribute& attribute() const noexcept { return target_.attribute(); }

 private:
  static constexpr std::string_view kWho = "ppe::WarmupShift";
  PPE_DECL double value_at(std::int64_t t) const;

  detail::ShiftTarget target_;
  std::optional<double> start_;
  bool start_given_;
  std::int64_t warmup_iter_;
  double init_;
  std::int64_t t_ = 0;
};

}  // namespace ppe::training::extensions

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/training/extensions/impl/warmup_shift.ipp"
#endif
