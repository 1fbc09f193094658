#pragma once
/// \file
/// `OnceTrigger`: fires on its first evaluation only (PPE's
/// `ppe.training.triggers.OnceTrigger`), optionally once more after a resume.

#include <cstdint>

#include "ppe/state.hpp"
#include "ppe/training/trigger.hpp"

namespace ppe::training::triggers {

/// Fires the first time it is evaluated, wherever that is, and never again.
/// With `call_on_resume`, a trigger that loads a state in which it had already
/// fired fires once more (the resumed run's first evaluation), because only
/// the "first" flag is saved.
///
/// `finished()` tells the manager that the trigger can never fire again, so
/// the extension's `initialize` is skipped after a resume. Unlike PPE 0.9.0,
/// whose `may_fire` answers the inverse, `may_fire` here is the correct
/// look-ahead: true while the trigger can still fire.
class OnceTrigger {
 public:
  explicit OnceTrigger(bool call_on_resume = false) noexcept : flag_resumed_(call_on_resume) {}

  template <class M>
  bool operator()(const M&) noexcept {
    const bool fire = !finished();
    flag_first_ = false;
    flag_resumed_ = false;
    return fire;
  }

  /// Whether the trigger will never fire again.
  bool finished() const noexcept { return !(flag_first_ || flag_resumed_); }

  /// True while the trigger can still fire (its next evaluation fires).
  bool may_fire(std::int64_t, std::int64_t) const noexcept { return !finished(); }

  /// `{"_flag_first": bool}`, as PPE.
  State state_dict() const { return State::dict({{"_flag_first", flag_first_}}); }
  /// Restores only `_flag_first`; the resume flag stays what the constructor set.
  void load_state_dict(const State& state) { flag_first_ = state.at("_flag_first").as_bool(); }

 private:
  bool flag_first_ = true;
  bool flag_resumed_;
};

}  // namespace ppe::training::triggers
