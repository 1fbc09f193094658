#pragma once
/// \file
/// `ppe::training::extensions::MicroAverage` (PPE's `MicroAverage`): sums a
/// reported numerator and denominator over an interval and reports their
/// ratio, e.g. the accuracy over an epoch from per-batch correct and total
/// counts (a micro-average: batches weigh by their size).

#include <ATen/core/Tensor.h>

#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "ppe/detail/config.hpp"
#include "ppe/reporting/observation.hpp"
#include "ppe/reporting/reporter.hpp"
#include "ppe/reporting/value.hpp"
#include "ppe/state.hpp"
#include "ppe/training/extension.hpp"
#include "ppe/training/manager.hpp"
#include "ppe/training/trigger.hpp"
#include "ppe/training/triggers/interval_trigger.hpp"

namespace ppe::training::extensions::detail {

/// A running sum of reported values. Numbers and one-element CPU tensors that
/// the host can read directly are summed as a double; other tensors (other
/// devices, bool or half precision) are summed in float64 on their device, so
/// that adding one needs no host synchronisation.
class MicroSum {
 public:
  /// `value` (reported under `key`) as a sum of one term: a deferred value is
  /// evaluated; a tensor must have one element, else `std::invalid_argument`
  /// naming the key.
  static MicroSum of(const reporting::Value& value, std::string_view key);
  /// The sum saved by `state_dict()`, or PPE's (a number, or a tensor).
  static MicroSum from_state(const State& state, std::string_view name);

  MicroSum& operator+=(const MicroSum& other);

  /// A double when no device term was added, else a 0-dim float64 tensor on
  /// the device (no host synchronisation).
  State state_dict() const;
  /// Whether the sum is known to be 0 without reading a device.
  bool is_zero() const noexcept { return !device_.defined() && host_ == 0.0; }
  bool has_device() const noexcept { return device_.defined(); }
  double host() const noexcept { return host_; }
  /// The device part (undefined when there is none).
  const at::Tensor& device() const noexcept { return device_; }

 private:
  double host_ = 0.0;
  at::Tensor device_;
};

/// `numerator / denominator`: a double when both are host sums, else a 0-dim
/// float64 tensor on the device. IEEE division (x/0 is ±inf, 0/0 is NaN).
PPE_DECL reporting::Value micro_ratio(const MicroSum& numerator, const MicroSum& denominator);

/// The error for an interval in which no iteration reported both keys.
PPE_DECL std::string micro_average_missing_message(const std::string& numerator_key, const std::string& denominator_key,
                                                   const reporting::Observation& observation);

/// Checks that the three keys are not empty.
PPE_DECL void check_micro_average_keys(const std::string& numerator_key, const std::string& denominator_key,
                                       const std::string& result_key);

}  // namespace ppe::training::extensions::detail

namespace ppe::training::extensions {

/// Reports `sum(numerator) / sum(denominator)` under `result_key` each time
/// `trigger` fires (by default every epoch), then restarts the sums (PPE's
/// `MicroAverage`).
///
/// The extension runs every iteration (its own trigger, distinct from
/// `trigger`). An iteration that reported both `numerator_key` and
/// `denominator_key` adds them to the sums; one that reported neither or only
/// one adds nothing, as in PPE. `trigger` is asked at every call, whether or
/// not the keys were reported (PPE asks it only when both were). When it
/// fires and no iteration of the interval reported both keys,
/// `std::out_of_range` names the keys and the keys present.
///
/// Values are numbers, one-element tensors or deferred values (evaluated
/// when added). The result is a double, or a 0-dim float64 tensor on the
/// device when device tensors were added (so neither adding nor reporting
/// synchronises with the device). It is reported through
/// `ppe::reporting::report` (without an observer prefix), so extensions of
/// lower priority (LogReport, PrintReport) see it in the same iteration.
///
/// State: PPE's `{"_numerator", "_denominator"}`, plus `"_trigger"` (the
/// trigger's state, which PPE loses) and `"_accumulated"` (whether an
/// iteration of the current interval reported both keys).
template <class Trigger = triggers::IntervalTrigger>
class MicroAverage {
  static_assert(trigger<Trigger>, "ppe::MicroAverage: the trigger must be a trigger type");

 public:
  using extension_concept = extension_tag;
  static constexpr std::string_view default_name = "MicroAverage";
  static constexpr int priority = kPriorityEditor;
  static auto default_trigger() { return ppe::iterations(1); }

  /// Empty keys are `std::invalid_argument`.
  MicroAverage(std::string numerator_key, std::string denominator_key, std::string result_key,
               Trigger trigger = ppe::epochs(1))
      : numerator_key_(std::move(numerator_key)),
        denominator_key_(std::move(denominator_key)),
        result_key_(std::move(result_key)),
        trigger_(std::move(trigger)) {
    detail::check_micro_average_keys(numerator_key_, denominator_key_, result_key_);
  }

  void operator()(Manager& manager) {
    const reporting::Observation& observation = manager.observation();
    const reporting::Value* numerator = observation.find(numerator_key_);
    const reporting::Value* denominator = numerator ? observation.find(denominator_key_) : nullptr;
    if (denominator) {
      // Both converted before either sum changes: a bad value leaves the sums as they were.
      detail::MicroSum n = detail::MicroSum::of(*numerator, numerator_key_);
      detail::MicroSum d = detail::MicroSum::of(*denominator, denominator_key_);
      numerator_ += n;
      denominator_ += d;
      accumulated_ = true;
    }
    if (!static_cast<bool>(trigger_(manager))) return;
    if (!accumulated_)
      throw std::out_of_range(detail::micro_average_missing_message(numerator_key_, denominator_key_, observation));
    reporting::Value result = detail::micro_ratio(numerator_, denominator_);
    numerator_ = {};
    denominator_ = {};
    accumulated_ = false;
    reporting::report({{result_key_, std::move(result)}});
  }

  State state_dict() const {
    return State::dict({{"_numerator", numerator_.state_dict()},
                        {"_denominator", denominator_.state_dict()},
                        {"_trigger", trigger_state_dict(trigger_)},
                        {"_accumulated", accumulated_}});
  }
  /// Restores `state_dict()`'s state or PPE's. Without `"_trigger"` the
  /// trigger keeps its state; without `"_accumulated"` the interval counts as
  /// having reported values unless both sums are 0.
  void load_state_dict(const State& state) {
    detail::MicroSum numerator = detail::MicroSum::from_state(state.at("_numerator"), "_numerator");
    detail::MicroSum denominator = detail::MicroSum::from_state(state.at("_denominator"), "_denominator");
    const State* accumulated = state.find("_accumulated");
    const bool seen = accumulated ? accumulated->as_bool() : !(numerator.is_zero() && denominator.is_zero());
    if (const State* t = state.find("_trigger")) trigger_load_state_dict(trigger_, *t);
    numerator_ = std::move(numerator);
    denominator_ = std::move(denominator);
    accumulated_ = seen;
  }

  const std::string& numerator_key() const noexcept { return numerator_key_; }
  const std::string& denominator_key() const noexcept { return denominator_key_; }
  const std::string& result_key() const noexcept { return result_key_; }
  /// The keys it reads (the manager's report-key check).
  std::vector<std::string> consumed_keys() const { return {numerator_key_, denominator_key_}; }
  /// The trigger that ends an interval.
  const Trigger& trigger() const noexcept { return trigger_; }

 private:
  std::string numerator_key_, denominator_key_, result_key_;
  Trigger trigger_;
  detail::MicroSum numerator_, denominator_;
  bool accumulated_ = false;
};

}  // namespace ppe::training::extensions

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/training/extensions/impl/micro_average.ipp"
#endif
