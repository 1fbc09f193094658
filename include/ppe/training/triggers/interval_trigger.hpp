#pragma once
/// \file
/// `IntervalTrigger`: fires every `period` iterations or epochs (PPE's
/// `ppe.training.triggers.IntervalTrigger`), and the helpers
/// `ppe::iterations(n)` / `ppe::epochs(x)`.

#include <cmath>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

#include "ppe/detail/config.hpp"
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
  IntervalTrigger(double period, Unit unit);
  /// PPE spelling: `IntervalTrigger(2, "epoch")`.
  IntervalTrigger(double period, std::string_view unit) : IntervalTrigger(period, parse_unit(unit)) {}

  double period() const noexcept { return period_; }
  Unit unit() const noexcept { return unit_; }

  // Forced inline: past a few dozen entries GCC stops inlining these into the
  // manager's unrolled dispatch, and the call costs more than the test.
  template <class M>
  [[gnu::always_inline]] bool operator()(const M& manager) {
    return fires(manager.iteration(), manager.iters_per_epoch());
  }

  /// Whether the trigger fires at `iteration` with `epoch_len` iterations per
  /// epoch; same answer as `may_fire`, but remembers the next firing iteration.
  [[gnu::always_inline]] bool fires(std::int64_t iteration, std::int64_t epoch_len) {
    // Fast path, inlined into the manager's dispatch: [lo_, lo_ + span_) is
    // known to hold no firing iteration (one unsigned comparison tests both
    // bounds). The rest stays out of line, so the caller pays neither its code
    // size nor its register saves.
    if (epoch_len == len_ && static_cast<std::uint64_t>(iteration) - static_cast<std::uint64_t>(lo_) < span_)
      [[likely]] return false;
    return fires_slow(iteration, epoch_len);
  }

  /// The first iteration after `after` that may fire: the end of the window
  /// known to hold no firing iteration, when `after + 1` lies inside it.
  std::int64_t next_possible(std::int64_t after, std::int64_t epoch_len) const noexcept {
    const std::int64_t n = after + 1;
    if (epoch_len == len_ && static_cast<std::uint64_t>(n) - static_cast<std::uint64_t>(lo_) < span_)
      return lo_ + static_cast<std::int64_t>(span_);
    return n;
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
  std::string str() const;

 private:
  // Below this, integers and their products with whole periods are exact doubles.
  static constexpr std::int64_t kExact = std::int64_t{1} << 52;

  // `fires` outside the known window: decides, and remembers the next window.
  //
  // A period of a whole number W of iterations (iterations(n), and epochs(x)
  // when x * epoch_len is whole) fires exactly at the positive multiples of W.
  // Below kExact the floating-point rule of may_fire/next_firing is exact and
  // gives the same answers, so those are computed with integers. fires_slow
  // takes the common case, the end of a window (a multiple of W; the next one
  // is W later), without a division and without saving registers; decide()
  // takes the rest.
  [[gnu::noinline]] bool fires_slow(std::int64_t iteration, std::int64_t epoch_len) noexcept {
    if (epoch_len == len_ && whole_ > 0 &&
        static_cast<std::uint64_t>(iteration) - static_cast<std::uint64_t>(lo_) == span_ && iteration >= 0 &&
        iteration < kExact - whole_) {
      lo_ = iteration + 1;
      span_ = static_cast<std::uint64_t>(whole_ - 1);
      return true;
    }
    return decide(iteration, epoch_len);
  }
  [[gnu::noinline]] bool decide(std::int64_t iteration, std::int64_t epoch_len) noexcept {
    len_ = epoch_len;
    const double p = unit_ == Unit::Epoch ? static_cast<double>(epoch_len) * period_ : period_;
    if (p >= 1 && p < static_cast<double>(kExact) && iteration >= 0 &&
        iteration < kExact - static_cast<std::int64_t>(p)) {
      const auto whole = static_cast<std::int64_t>(p);
      if (static_cast<double>(whole) == p) {
        whole_ = whole;
        const std::int64_t next = (iteration / whole + 1) * whole;  // the first multiple above iteration
        const bool fire = iteration > 0 && next - whole == iteration;
        lo_ = fire ? iteration + 1 : iteration;
        span_ = static_cast<std::uint64_t>(next - lo_);
        return fire;
      }
    }
    whole_ = 0;
    const bool fire = may_fire(iteration, epoch_len);
    lo_ = fire ? iteration + 1 : iteration;
    // next_firing(iteration + 1) >= iteration + 1 >= lo_: the span never wraps.
    span_ = static_cast<std::uint64_t>(next_firing(iteration + 1, epoch_len)) - static_cast<std::uint64_t>(lo_);
    return fire;
  }

  // Python's str() of the period: integers without a decimal point when given
  // as integers is indistinguishable here, so integral values print as ints.
  static std::string format_number(double v);

  // Smallest firing iteration >= from. With P the period in iterations, the
  // first multiple of P beyond from-1 is (k0+1)P with k0 = floor((from-1)/P),
  // and it fires at ceil((k0+1)P); start one below to absorb rounding.
  std::int64_t next_firing(std::int64_t from, std::int64_t epoch_len) const noexcept {
    const double p = unit_ == Unit::Epoch ? static_cast<double>(epoch_len) * period_ : period_;
    if (!(p > 0)) return from;  // degenerate epoch length: always take the slow path
    // (from-1)/p may round up to a whole number and start the search a period late.
    if (may_fire(from, epoch_len)) return from;
    const double k0 = std::floor(static_cast<double>(from - 1) / p);
    std::int64_t i = static_cast<std::int64_t>(std::ceil((k0 + 1) * p)) - 1;
    if (i < from) i = from;
    while (!may_fire(i, epoch_len)) ++i;
    return i;
  }

  double period_;
  Unit unit_;
  // The window [lo_, lo_ + span_) known to hold no firing iteration, for epoch
  // length len_; whole_ > 0: the period is whole_ iterations and lo_ + span_
  // is a multiple of it (a firing iteration).
  std::int64_t len_ = -1, lo_ = 0;
  std::uint64_t span_ = 0;
  std::int64_t whole_ = 0;
};

}  // namespace ppe::training::triggers

namespace ppe {
/// A trigger firing every `n` iterations.
inline training::triggers::IntervalTrigger iterations(double n) { return {n, training::Unit::Iteration}; }
/// A trigger firing every `x` epochs (fractional epochs allowed).
inline training::triggers::IntervalTrigger epochs(double x) { return {x, training::Unit::Epoch}; }
}  // namespace ppe

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/training/triggers/impl/interval_trigger.ipp"
#endif
