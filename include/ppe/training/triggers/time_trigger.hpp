#pragma once
/// \file
/// `TimeTrigger`: fires once every `period` seconds of training time (PPE's
/// `ppe.training.triggers.TimeTrigger`).

#include <cmath>
#include <sstream>
#include <stdexcept>
#include <string>

#include "ppe/state.hpp"
#include "ppe/training/trigger.hpp"

namespace ppe::training::triggers {

/// Fires when the manager's `elapsed_time()` has passed the next deadline
/// (strictly), then moves the deadline one period on. It fires at most once
/// per evaluation, so after a long pause it catches up one period per call
/// rather than firing in a burst — PPE's behaviour.
///
/// The deadline is saved (`{"next_time": seconds}`); since our manager's
/// elapsed time continues across a resume, a restored trigger keeps its pace.
class TimeTrigger {
 public:
  /// `period_seconds` must be > 0 and finite.
  explicit TimeTrigger(double period_seconds) : period_(period_seconds), next_time_(period_seconds) {
    if (!(period_seconds > 0) || !std::isfinite(period_seconds)) {
      std::ostringstream os;
      os << period_seconds;
      throw std::invalid_argument("ppe::TimeTrigger: period must be a positive finite number of seconds, got " +
                                  os.str());
    }
  }

  double period() const noexcept { return period_; }
  /// The elapsed time (seconds) that must be exceeded for the next firing.
  double next_time() const noexcept { return next_time_; }

  template <class M>
  bool operator()(const M& manager) {
    if (next_time_ < manager.elapsed_time()) {
      next_time_ += period_;
      return true;
    }
    return false;
  }

  State state_dict() const { return State::dict({{"next_time", next_time_}}); }
  void load_state_dict(const State& state) { next_time_ = state.at("next_time").as_double(); }

 private:
  double period_;
  double next_time_;
};

}  // namespace ppe::training::triggers
