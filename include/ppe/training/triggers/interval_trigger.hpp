#pragma once
/// \file
/// `IntervalTrigger`: fires every `period` iterations or epochs (PPE's
/// `ppe.training.triggers.IntervalTrigger`), and the helpers
/// `ppe::iterations(n)` / `ppe::epochs(x)`.

#include <cmath>
#include <cstdint>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>

#include "ppe/state.hpp"
#include "ppe/training/trigger.hpp"

namespace ppe::training::triggers {

/// Fires at iteration `i` when a multiple of the period (in iterations) lies in
/// `(i-1, i]`, i.e. at `ceil(k * period)` for k = 1, 2, ... — PPE's rule,
/// which also makes fractional epochs (`epochs(1.5)`) work. Never fires at 0.
///
/// Stateless as far as saved state goes. Internally it remembers the next
/// iteration at which it fires, so the per-iteration cost is one comparison
/// instead of a floating-point modulo.
class IntervalTrigger {
 public:
  /// `period` must be > 0 (and finite).
  IntervalTrigger(double period, Unit unit) : period_(period), unit_(unit) {
    if (!(period > 0) || !std::isfinite(period))
      throw std::invalid_argument("ppe::IntervalTrigger: period must be a positive finite number, got " +
                                  format_number(period));
  }
  /// PPE spelling: `IntervalTrigger(2, "epoch")`.
  IntervalTrigger(double period, std::string_view unit) : IntervalTrigger(period, parse_unit(unit)) {}

  double period() const noexcept { return period_; }
  Unit unit() const noexcept { return unit_; }

  template <class M>
  bool operator()(const M& manager) {
    return fires(manager.iteration(), manager.iters_per_epoch());
  }

  /// Whether the trigger fires at `iteration` with `epoch_len` iterations per
  /// epoch; same answer as `may_fire`, but remembers the next firing iteration.
  bool fires(std::int64_t iteration, std::int64_t epoch_len) {
    // Fast path: [lo_, next_) is known to hold no firing iteration.
    if (epoch_len == len_ && iteration >= lo_ && iteration < next_) return false;
    const bool fire = may_fire(iteration, epoch_len);
    len_ = epoch_len;
    lo_ = fire ? iteration + 1 : iteration;
    next_ = next_firing(iteration + 1, epoch_len);
    return fire;
  }

  /// Pure look-ahead (PPE's `may_fire`).
  bool may_fire(std::int64_t iteration, std::int64_t epoch_len) const noexcept {
    if (iteration <= 0) return false;
    if (unit_ == Unit::Epoch) return std::fmod(static_cast<double>(iteration), epoch_len * period_) < 1.0;
    return std::fmod(static_cast<double>(iteration), period_) < 1.0;
  }

  State state_dict() const { return State::dict(); }
  void load_state_dict(const State&) {}

  std::optional<TrainingLength> training_length() const { return TrainingLength{period_, unit_}; }

  /// `IntervalTrigger(1.5, 'epoch')`, as Python's `str`.
  std::string str() const { return "IntervalTrigger(" + format_number(period_) + ", '" + unit_name(unit_) + "')"; }

 private:
  // Python's str() of the period: integers without a decimal point when given
  // as integers is indistinguishable here, so integral values print as ints.
  static std::string format_number(double v) {
    std::ostringstream os;
    if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15)
      os << static_cast<long long>(v);
    else
      os << v;
    return os.str();
  }

  // Smallest firing iteration >= from. With P the period in iterations, the
  // first multiple of P beyond from-1 is (k0+1)P with k0 = floor((from-1)/P),
  // and it fires at ceil((k0+1)P); start one below to absorb rounding.
  std::int64_t next_firing(std::int64_t from, std::int64_t epoch_len) const noexcept {
    const double p = unit_ == Unit::Epoch ? static_cast<double>(epoch_len) * period_ : period_;
    if (!(p > 0)) return from;  // degenerate epoch length: always take the slow path
    const double k0 = std::floor(static_cast<double>(from - 1) / p);
    std::int64_t i = static_cast<std::int64_t>(std::ceil((k0 + 1) * p)) - 1;
    if (i < from) i = from;
    while (!may_fire(i, epoch_len)) ++i;
    return i;
  }

  double period_;
  Unit unit_;
  std::int64_t len_ = -1, lo_ = 0, next_ = 0;
};

}  // namespace ppe::training::triggers

namespace ppe {
/// A trigger firing every `n` iterations.
inline training::triggers::IntervalTrigger iterations(double n) { return {n, training::Unit::Iteration}; }
/// A trigger firing every `x` epochs (fractional epochs allowed).
inline training::triggers::IntervalTrigger epochs(double x) { return {x, training::Unit::Epoch}; }
}  // namespace ppe
