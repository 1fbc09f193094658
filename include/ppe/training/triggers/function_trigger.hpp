#pragma once
/// \file
/// `FunctionTrigger`: asks a user function whether to fire, at the times an
/// interval trigger allows (PPE's `ppe.training.triggers.FunctionTrigger`).

#include <cstdint>
#include <type_traits>
#include <utility>

#include "ppe/state.hpp"
#include "ppe/training/trigger.hpp"
#include "ppe/training/triggers/interval_trigger.hpp"

namespace ppe::training::triggers {

/// Fires when `trigger` fires and `fn()` then returns true. `fn` is called
/// only at those times, so it may be costly (a file check, a message from
/// another process).
///
/// PPE passes `args`/`kwargs` to the function; in C++ the callable captures
/// what it needs (`[&flags] { return flags.stop; }`).
///
/// `may_fire` follows PPE: when the interval may fire, it calls `fn` and
/// returns its answer. `fn` is therefore also called from the const look-ahead
/// (it is held `mutable` so that stateful callables work there too).
template <class F, class Interval = IntervalTrigger>
class FunctionTrigger {
  static_assert(std::is_invocable_r_v<bool, F&>,
                "ppe::FunctionTrigger: the function must be callable with no arguments and return something "
                "convertible to bool (capture its arguments in a lambda)");
  static_assert(trigger<Interval>, "ppe::FunctionTrigger: the interval must be a trigger type");

 public:
  explicit FunctionTrigger(F fn, Interval trigger = ppe::iterations(1))
      : fn_(std::move(fn)), interval_(std::move(trigger)) {}

  template <class M>
  bool operator()(const M& manager) {
    if (!static_cast<bool>(interval_(manager))) return false;
    return static_cast<bool>(fn_());
  }

  bool may_fire(std::int64_t iteration, std::int64_t epoch_len) const {
    if (!trigger_may_fire(interval_, iteration, epoch_len)) return false;
    return static_cast<bool>(fn_());
  }

  /// `{"interval_trigger": ...}`, as PPE.
  State state_dict() const { return State::dict({{"interval_trigger", trigger_state_dict(interval_)}}); }
  void load_state_dict(const State& state) { trigger_load_state_dict(interval_, state.at("interval_trigger")); }

  const Interval& interval_trigger() const noexcept { return interval_; }

 private:
  mutable F fn_;
  Interval interval_;
};

}  // namespace ppe::training::triggers
