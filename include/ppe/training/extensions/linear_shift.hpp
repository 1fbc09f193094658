#pragma once
/// \file
/// `ppe::training::extensions::LinearShift` (Chainer's `LinearShift`): moves
/// an optimizer option (the learning rate, a momentum) linearly from one value
/// to another over a range of calls.

#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>

#include "ppe/detail/arg.hpp"
#include "ppe/detail/config.hpp"
#include "ppe/state.hpp"
#include "ppe/training/extension.hpp"
#include "ppe/training/extensions/detail/shift.hpp"
#include "ppe/training/manager.hpp"
#include "ppe/training/triggers/interval_trigger.hpp"

namespace ppe::training::extensions {

/// Options of a LinearShift (Chainer's `optimizer` argument, and the param groups).
struct LinearShiftOptions {
  PPE_SHIFT_OPTIMIZER_ARGS(LinearShiftOptions)
};

/// With `value_range = (v1, v2)` and `time_range = (t1, t2)`, sets `attr` at
/// its t-th call to `v1` while `t <= t1`, `v2` once `t >= t2`, and
/// `v1 + (t - t1) / (t2 - t1) * (v2 - v1)` in between (Chainer's
/// `LinearShift`); at initialize, the value for the calls made so far (0 on a
/// fresh start: `v1` when `t1 >= 0`), or, resuming, the last value set. Runs
/// every iteration by default.
///
/// State: Chainer's `{"_t": int, "_last_value": float or None}`.
class LinearShift {
 public:
  using extension_concept = extension_tag;
  static constexpr std::string_view default_name = "LinearShift";
  static constexpr int priority = kPriorityReader;
  static auto default_trigger() { return ppe::iterations(1); }

  /// Non-finite values and `t1 > t2` are `std::invalid_argument`.
  PPE_DECL LinearShift(ShiftAttribute attr, std::pair<double, double> value_range,
                       std::pair<std::int64_t, std::int64_t> time_range, LinearShiftOptions options = {});

  PPE_DECL void initialize(Manager& manager);
  PPE_DECL void operator()(Manager& manager);

  PPE_DECL State state_dict() const;
  PPE_DECL void load_state_dict(const State& state);

  /// The value at call `t` (Chainer's `_compute_next_value` at `_t == t`).
  PPE_DECL double value_at(std::int64_t t) const;

  /// Calls so far (Chainer's `_t`).
  std::int64_t count() const noexcept { return t_; }
  /// The value last set (None before initialize).
  const std::optional<double>& last_value() const noexcept { return last_value_; }
  const ShiftAttribute& attribute() const noexcept { return target_.attribute(); }

 private:
  static constexpr std::string_view kWho = "ppe::LinearShift";
  PPE_DECL void set(Manager& manager, double value, std::int64_t t);

  detail::ShiftTarget target_;
  std::pair<double, double> values_;
  std::pair<std::int64_t, std::int64_t> times_;
  std::int64_t t_ = 0;
  std::optional<double> last_value_;
};

}  // namespace ppe::training::extensions

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/training/extensions/impl/linear_shift.ipp"
#endif
