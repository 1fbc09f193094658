#pragma once
/// \file
/// `ppe::training::extensions::PolynomialShift` (Chainer's
/// `PolynomialShift`): decays an optimizer option (the learning rate,
/// typically) polynomially to 0 over a number of calls.

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

/// Options of a PolynomialShift (Chainer's keyword arguments).
struct PolynomialShiftOptions {
  /// The value before the first call; unset: the optimizer's value when the
  /// extension is initialized (Chainer's `init=None`).
  PPE_ARG(std::optional<double>, init);
  /// Where the shift stops (see PolynomialShift). Unset: no limit.
  PPE_ARG(std::optional<double>, target);
  PPE_SHIFT_OPTIMIZER_ARGS(PolynomialShiftOptions)
};

/// Sets `attr` at its t-th call to `init * max(1 - t / max_count, 0)^rate`
/// (Chainer's `PolynomialShift`), clipped at `target`: with `rate > 0` a value
/// whose `target / value` ratio exceeds 1 becomes the target, otherwise one
/// whose ratio is below 1 does. At initialize it sets `init` (or, resuming,
/// the last value set). Runs every iteration by default.
///
/// `max_count` unset (not Chainer's, which requires it): the length of
/// training in iterations, from the manager's stop trigger (`max_epochs *
/// iters_per_epoch` by default), read at initialize: the number of calls when
/// the shift runs every iteration. A value that is not finite (with
/// `rate < 0` once `t >= max_count` and no target; Chainer raises
/// ZeroDivisionError there) is `std::domain_error`.
///
/// State: Chainer's `{"_t": int, "_last_value": float or None}`, plus
/// `"_init"` (the initial value, None before it is known).
class PolynomialShift {
 public:
  using extension_concept = extension_tag;
  static constexpr std::string_view default_name = "PolynomialShift";
  static constexpr int priority = kPriorityReader;
  static auto default_trigger() { return ppe::iterations(1); }

  /// `max_count < 1`, non-finite numbers and a `target` of 0 are `std::invalid_argument`.
  PPE_DECL PolynomialShift(ShiftAttribute attr, double rate, std::optional<std::int64_t> max_count,
                           PolynomialShiftOptions options = {});

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
  /// The count at which the value reaches 0 (None until given or derived).
  const std::optional<std::int64_t>& max_count() const noexcept { return max_count_; }
  const ShiftAttribute& attribute() const noexcept { return target_.attribute(); }

 private:
  static constexpr std::string_view kWho = "ppe::PolynomialShift";
  /// Reads what is not known yet: init, and max_count from the manager.
  PPE_DECL void resolve(Manager& manager);
  PPE_DECL void set(Manager& manager, double value, std::int64_t t);

  detail::ShiftTarget target_;
  double rate_;
  std::optional<std::int64_t> max_count_;
  std::optional<double> init_, clip_;
  bool init_given_;
  std::int64_t t_ = 0;
  std::optional<double> last_value_;
};

}  // namespace ppe::training::extensions

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/training/extensions/impl/polynomial_shift.ipp"
#endif
