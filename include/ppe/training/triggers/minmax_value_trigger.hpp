#pragma once
/// \file
/// `BestValueTrigger`, `MaxValueTrigger`, `MinValueTrigger`: fire when a
/// reported value reaches a new best (PPE's
/// `ppe.training.triggers.{BestValue,MaxValue,MinValue}Trigger`), e.g. to
/// snapshot the model at its best validation accuracy.

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ppe/reporting/dict_summary.hpp"
#include "ppe/reporting/observation.hpp"
#include "ppe/reporting/value.hpp"
#include "ppe/state.hpp"
#include "ppe/training/trigger.hpp"
#include "ppe/training/triggers/interval_trigger.hpp"

namespace ppe::training::triggers {

/// Averages the values reported under `key` over each interval of `trigger`;
/// when the interval fires, fires iff the mean is better than the best so far
/// (always at the first interval). `compare(best, value)` says whether
/// `value` is better than `best`.
///
/// Values are accumulated lazily (no host synchronisation per iteration); the
/// one device read happens when the interval fires. When the interval fires
/// and no value was reported under `key` during it, the trigger throws
/// `std::out_of_range` naming the key and the keys present.
///
/// State: `{"interval_trigger", "_summary", "_best_value"}` (PPE's layout); the
/// partial summary is saved, so a resume in the middle of an interval keeps
/// the values already seen.
template <class Compare, class Interval = IntervalTrigger>
class BestValueTrigger {
  static_assert(std::is_invocable_r_v<bool, Compare&, double, double>,
                "ppe::BestValueTrigger: compare must be callable as compare(best, value) -> bool");
  static_assert(trigger<Interval>, "ppe::BestValueTrigger: the interval must be a trigger type");

 public:
  BestValueTrigger(std::string key, Compare compare, Interval trigger = ppe::epochs(1))
      : key_(std::move(key)), compare_(std::move(compare)), interval_(std::move(trigger)) {}

  template <class M>
  bool operator()(const M& manager) {
    const reporting::Observation& observation = manager.observation();
    const reporting::Value* value = observation.find(key_);
    if (value) summary_.add(key_, *value);
    if (!static_cast<bool>(interval_(manager))) return false;
    if (!summary_.contains(key_)) throw std::out_of_range(missing_key_message(observation, value != nullptr));
    const double mean = summary_.compute_mean().at(key_).to_double();  // the one host read
    summary_.reset();
    if (!best_ || compare_(*best_, mean)) {
      best_ = mean;
      return true;
    }
    return false;
  }

  bool may_fire(std::int64_t iteration, std::int64_t epoch_len) const {
    return trigger_may_fire(interval_, iteration, epoch_len);
  }

  State state_dict() const {
    return State::dict({{"interval_trigger", trigger_state_dict(interval_)},
                        {"_summary", summary_.state_dict()},
                        {"_best_value", best_ ? State(*best_) : State()}});
  }
  void load_state_dict(const State& state) {
    reporting::DictSummary summary;
    summary.load_state_dict(state.at("_summary"));
    const State& best = state.at("_best_value");
    std::optional<double> best_value;
    if (!best.is_none()) best_value = best.as_double();
    trigger_load_state_dict(interval_, state.at("interval_trigger"));
    summary_ = std::move(summary);
    best_ = best_value;
  }

  const std::string& key() const noexcept { return key_; }
  /// The key it reads (the manager's report-key check).
  std::vector<std::string> consumed_keys() const { return {key_}; }
  /// The best mean so far (none before the first interval ends).
  std::optional<double> best_value() const noexcept { return best_; }
  const Interval& interval_trigger() const noexcept { return interval_; }

 private:
  std::string missing_key_message(const reporting::Observation& observation, bool present) const {
    std::string msg = "ppe::BestValueTrigger: Key \"" + key_ +
                      "\" not found in the observation (current available keys are " + observation.keys_text() + ")";
    if (present)
      msg += "; the values reported under it were not scalars (only numbers, 0-dim tensors and deferred values "
             "are averaged)";
    return msg;
  }

  std::string key_;
  Compare compare_;
  Interval interval_;
  // Mutable: reading the state folds the lazily kept tensors into the sums.
  mutable reporting::DictSummary summary_;
  std::optional<double> best_;
};

namespace detail {
/// `value > best` (strict: ties do not fire).
struct NewIsGreater {
  bool operator()(double best, double value) const noexcept { return value > best; }
};
/// `value < best` (strict: ties do not fire).
struct NewIsLess {
  bool operator()(double best, double value) const noexcept { return value < best; }
};
}  // namespace detail

/// Fires when the interval mean of `key` is a new maximum (strictly greater).
template <class Interval = IntervalTrigger>
class MaxValueTrigger : public BestValueTrigger<detail::NewIsGreater, Interval> {
 public:
  explicit MaxValueTrigger(std::string key, Interval trigger = ppe::epochs(1))
      : BestValueTrigger<detail::NewIsGreater, Interval>(std::move(key), {}, std::move(trigger)) {}
};

/// Fires when the interval mean of `key` is a new minimum (strictly less).
template <class Interval = IntervalTrigger>
class MinValueTrigger : public BestValueTrigger<detail::NewIsLess, Interval> {
 public:
  explicit MinValueTrigger(std::string key, Interval trigger = ppe::epochs(1))
      : BestValueTrigger<detail::NewIsLess, Interval>(std::move(key), {}, std::move(trigger)) {}
};

}  // namespace ppe::training::triggers
