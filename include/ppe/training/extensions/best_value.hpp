#pragma once
/// \file
/// `ppe::training::extensions::BestValue`, `MaxValue`, `MinValue` (PPE's
/// extensions of the same names): keep the best interval mean of a reported
/// value, and the iteration and epoch at which it was reached.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ppe/detail/config.hpp"
#include "ppe/state.hpp"
#include "ppe/training/extension.hpp"
#include "ppe/training/manager.hpp"
#include "ppe/training/triggers/interval_trigger.hpp"
#include "ppe/training/triggers/minmax_value_trigger.hpp"

namespace ppe::training::extensions::detail {
/// Throws the `std::runtime_error` of a best value asked for before there is one.
[[noreturn]] PPE_DECL void throw_no_best_value(const std::string& key, std::string_view what);
/// An optional integer of a state: None or an int.
PPE_DECL std::optional<std::int64_t> optional_int_state(const State& state);
}  // namespace ppe::training::extensions::detail

namespace ppe::training::extensions {

/// Tracks the best value of `key` (PPE's `BestValue`): a
/// `triggers::BestValueTrigger(key, compare, trigger)` averages the values
/// reported under `key` over each interval of `trigger` (by default every
/// epoch); when an interval's mean is better than the best so far
/// (`compare(best, value)`, always for the first interval) it becomes the best
/// value, and the manager's iteration and epoch at that call are recorded.
///
/// The extension runs every iteration by default (its own trigger, distinct
/// from `trigger`), so that every reported value enters the mean. When an
/// interval ends and `key` was not reported during it, the trigger throws
/// `std::out_of_range` naming the key and the keys present (PPE: KeyError).
///
/// State (PPE's layout): `{"_best_trigger": {"interval_trigger", "_summary",
/// "_best_value"}, "_best_it", "_best_epoch"}`, None before the first best;
/// the partial interval's values are kept, so a resume mid-interval
/// continues exactly.
template <class Compare, class Interval = triggers::IntervalTrigger>
class BestValue {
 public:
  using extension_concept = extension_tag;
  static constexpr std::string_view default_name = "best_value";
  static constexpr int priority = kPriorityReader;
  static auto default_trigger() { return ppe::iterations(1); }

  /// `compare(best, value)` says whether `value` is better than `best`.
  BestValue(std::string key, Compare compare, Interval trigger = ppe::epochs(1))
      : best_trigger_(std::move(key), std::move(compare), std::move(trigger)) {}

  void operator()(Manager& manager) {
    if (best_trigger_(manager)) {
      best_iteration_ = manager.iteration();
      best_epoch_ = manager.epoch();
    }
  }

  /// Whether a best value exists (an interval has ended).
  bool has_best_value() const noexcept { return best_trigger_.best_value().has_value(); }
  /// The best interval mean; `std::runtime_error` before the first.
  double best_value() const {
    if (!has_best_value()) detail::throw_no_best_value(key(), "best_value");
    return *best_trigger_.best_value();
  }
  /// The manager's iteration when the best value was reached; `std::runtime_error` before the first.
  std::int64_t best_iteration() const {
    if (!has_best_value() || !best_iteration_) detail::throw_no_best_value(key(), "best_iteration");
    return *best_iteration_;
  }
  /// The manager's epoch when the best value was reached; `std::runtime_error` before the first.
  std::int64_t best_epoch() const {
    if (!has_best_value() || !best_epoch_) detail::throw_no_best_value(key(), "best_epoch");
    return *best_epoch_;
  }

  const std::string& key() const noexcept { return best_trigger_.key(); }
  /// The key it reads (the manager's report-key check).
  std::vector<std::string> consumed_keys() const { return {key()}; }
  /// The trigger that averages the values and decides the best.
  const triggers::BestValueTrigger<Compare, Interval>& best_trigger() const noexcept { return best_trigger_; }

  State state_dict() const {
    const auto optional_int = [](const std::optional<std::int64_t>& v) { return v ? State(*v) : State(); };
    return State::dict({{"_best_trigger", best_trigger_.state_dict()},
                        {"_best_it", optional_int(best_iteration_)},
                        {"_best_epoch", optional_int(best_epoch_)}});
  }
  void load_state_dict(const State& state) {
    const std::optional<std::int64_t> iteration = detail::optional_int_state(state.at("_best_it"));
    const std::optional<std::int64_t> epoch = detail::optional_int_state(state.at("_best_epoch"));
    best_trigger_.load_state_dict(state.at("_best_trigger"));
    best_iteration_ = iteration;
    best_epoch_ = epoch;
  }

 private:
  triggers::BestValueTrigger<Compare, Interval> best_trigger_;
  std::optional<std::int64_t> best_iteration_, best_epoch_;
};

/// Tracks the maximum of `key`'s interval means (PPE's `MaxValue`): a new
/// maximum must be strictly greater.
template <class Interval = triggers::IntervalTrigger>
class MaxValue : public BestValue<triggers::detail::NewIsGreater, Interval> {
 public:
  static constexpr std::string_view default_name = "max_value";

  explicit MaxValue(std::string key, Interval trigger = ppe::epochs(1))
      : BestValue<triggers::detail::NewIsGreater, Interval>(std::move(key), {}, std::move(trigger)) {}
};

/// Tracks the minimum of `key`'s interval means (PPE's `MinValue`): a new
/// minimum must be strictly less.
template <class Interval = triggers::IntervalTrigger>
class MinValue : public BestValue<triggers::detail::NewIsLess, Interval> {
 public:
  static constexpr std::string_view default_name = "min_value";

  explicit MinValue(std::string key, Interval trigger = ppe::epochs(1))
      : BestValue<triggers::detail::NewIsLess, Interval>(std::move(key), {}, std::move(trigger)) {}
};

}  // namespace ppe::training::extensions

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/training/extensions/impl/best_value.ipp"
#endif
