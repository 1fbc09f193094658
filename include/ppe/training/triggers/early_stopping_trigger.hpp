#pragma once
/// \file
/// `EarlyStoppingTrigger`: a stop trigger that ends training when a monitored
/// value stops improving (PPE's `ppe.training.triggers.EarlyStoppingTrigger`).

#include <cstdint>
#include <iostream>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "ppe/detail/arg.hpp"
#include "ppe/reporting/dict_summary.hpp"
#include "ppe/reporting/observation.hpp"
#include "ppe/reporting/value.hpp"
#include "ppe/state.hpp"
#include "ppe/training/trigger.hpp"
#include "ppe/training/triggers/interval_trigger.hpp"

namespace ppe::training::triggers {

/// How the monitored value improves: `Max` (greater is better), `Min` (less
/// is better), or `Auto`: `Max` when the monitor's name contains "accuracy",
/// else `Min` (PPE's rule).
enum class EarlyStoppingMode { Auto, Max, Min };

/// Options of an EarlyStoppingTrigger (PPE's constructor arguments).
struct EarlyStoppingOptions {
  /// When to compare the interval's mean with the best so far.
  PPE_ARG(IntervalTrigger, check_trigger) = ppe::epochs(1);
  /// The report key to watch.
  PPE_ARG(std::string, monitor) = "main/loss";
  /// How many checks in a row without improvement stop training; >= 1.
  PPE_ARG(int, patience) = 3;
  PPE_ARG(EarlyStoppingMode, mode) = EarlyStoppingMode::Auto;
  /// Print the comparison at construction and a line when stopping (stdout).
  PPE_ARG(bool, verbose) = false;
  /// Upper bound of training: the trigger fires when this fires.
  PPE_ARG(IntervalTrigger, max_trigger) = ppe::epochs(100);
};

/// Averages the monitored value over each check interval; at each check, a
/// mean better than the best so far (strictly) resets the count, anything
/// else adds one; the trigger fires once the count reaches `patience`, and
/// whenever `max_trigger` fires. A check at which the monitor was never
/// reported in the interval is an error naming the keys present (PPE warns and
/// skips the check; a missing required key is an error everywhere here).
///
/// Unlike PPE 0.9.0, which saves nothing, the state keeps the best value, the
/// count, the partial summary and both interval triggers, so a resumed run
/// stops where the uninterrupted run would have. A state saved by PPE (an
/// empty dictionary) loads as "nothing to restore".
class EarlyStoppingTrigger {
 public:
  explicit EarlyStoppingTrigger(EarlyStoppingOptions options = {})
      : interval_(options.check_trigger()),
        max_trigger_(options.max_trigger()),
        monitor_(options.monitor()),
        patience_(options.patience()),
        verbose_(options.verbose()) {
    if (patience_ < 1)
      throw std::invalid_argument("ppe::EarlyStoppingTrigger: patience must be >= 1, got " +
                                  std::to_string(patience_));
    switch (options.mode()) {
      case EarlyStoppingMode::Max: greater_ = true; break;
      case EarlyStoppingMode::Min: greater_ = false; break;
      case EarlyStoppingMode::Auto: greater_ = monitor_.find("accuracy") != std::string::npos; break;
    }
    best_ = greater_ ? -kInf : kInf;
    if (verbose_) std::cout << "early stopping: operator is " << (greater_ ? "greater" : "less") << std::endl;
  }

  template <class M>
  bool operator()(const M& manager) {
    const reporting::Observation& observation = manager.observation();
    const reporting::Value* value = observation.find(monitor_);
    if (value) summary_.add(monitor_, *value);
    if (static_cast<bool>(max_trigger_(manager))) return true;
    if (!static_cast<bool>(interval_(manager))) return false;
    // The monitored value is required (ARCHITECTURE's one rule for consumers
    // that need a key; PPE only warns and skips the check).
    if (!summary_.contains(monitor_)) {
      if (!value)
        throw std::out_of_range("ppe::EarlyStoppingTrigger: Key \"" + monitor_ +
                                "\" not found in the observation (current available keys are " +
                                observation.keys_text() + ")");
      throw std::out_of_range("ppe::EarlyStoppingTrigger: Key \"" + monitor_ +
                              "\" has no value to average: the values reported under it were not scalars (only "
                              "numbers, 0-dim tensors and deferred values are averaged)");
    }
    const double current = summary_.compute_mean().at(monitor_).to_double();  // the one host read
    summary_.reset();
    if (greater_ ? current > best_ : current < best_) {
      best_ = current;
      count_ = 0;
    } else {
      ++count_;
    }
    if (count_ >= patience_) {
      if (verbose_) std::cout << "Epoch " << manager.epoch() << ": early stopping" << std::endl;
      return true;
    }
    return false;
  }

  /// Whether the trigger could fire at `iteration`: at a check or when the
  /// maximum is reached. (PPE answers the check trigger's look-ahead only,
  /// which misses a `max_trigger` firing between checks.)
  bool may_fire(std::int64_t iteration, std::int64_t epoch_len) const noexcept {
    return interval_.may_fire(iteration, epoch_len) || max_trigger_.may_fire(iteration, epoch_len);
  }

  /// `max_trigger`'s length: the most training this trigger allows.
  std::optional<TrainingLength> training_length() const { return max_trigger_.training_length(); }

  /// `{"interval_trigger", "max_trigger", "_summary", "best", "count"}`.
  State state_dict() const {
    return State::dict({{"interval_trigger", interval_.state_dict()},
                        {"max_trigger", max_trigger_.state_dict()},
                        {"_summary", summary_.state_dict()},
                        {"best", best_},
                        {"count", count_}});
  }
  void load_state_dict(const State& state) {
    if (state.is_dict() && state.size() == 0) return;  // PPE saves no state for this trigger
    reporting::DictSummary summary;
    summary.load_state_dict(state.at("_summary"));
    const double best = state.at("best").as_double();
    const std::int64_t count = state.at("count").as_int();
    interval_.load_state_dict(state.at("interval_trigger"));
    max_trigger_.load_state_dict(state.at("max_trigger"));
    summary_ = std::move(summary);
    best_ = best;
    count_ = count;
  }

  const std::string& monitor() const noexcept { return monitor_; }
  /// The key it reads (the manager's report-key check).
  std::vector<std::string> consumed_keys() const { return {monitor_}; }
  int patience() const noexcept { return patience_; }
  /// True when greater values are better (mode Max, or Auto with "accuracy").
  bool maximizes() const noexcept { return greater_; }
  /// The best check mean so far (±infinity before the first check).
  double best() const noexcept { return best_; }
  /// Checks in a row without improvement.
  std::int64_t count() const noexcept { return count_; }

 private:
  static constexpr double kInf = std::numeric_limits<double>::infinity();

  IntervalTrigger interval_;
  IntervalTrigger max_trigger_;
  std::string monitor_;
  int patience_;
  bool verbose_;
  bool greater_ = false;
  double best_ = 0;
  std::int64_t count_ = 0;
  // Mutable: reading the state folds the lazily kept tensors into the sums.
  mutable reporting::DictSummary summary_;
};

}  // namespace ppe::training::triggers
