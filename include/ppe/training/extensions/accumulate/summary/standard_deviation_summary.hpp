#pragma once
/// \file
/// `accumulate::StandardDeviationSummary` and
/// `accumulate::UnbiasedStandardDeviationSummary` (PPE's
/// `accumulate._summary.StandardDeviationSummary` /
/// `UnbiasedStandardDeviationSummary`): the population and the sample
/// standard deviation that `StandardDeviationAccumulate` and
/// `UnbiasedStandardDeviationAccumulate` report. One header for both: they
/// keep the same sums in the same state layout and differ only in the last
/// formula (PPE's two modules are copies of each other).
///
/// The sums are those of `ppe::reporting::Summary` (`x += w v`,
/// `x2 += w v²`, `n += w`), which both wrap: numbers and CPU tensors are read
/// at `add`, other tensors are reduced lazily on their device, deferred
/// values are evaluated when the summary is read.

#include "ppe/detail/config.hpp"
#include "ppe/reporting/summary.hpp"
#include "ppe/reporting/value.hpp"
#include "ppe/state.hpp"
#include "ppe/training/extensions/accumulate/summary/summary_base.hpp"

namespace ppe::training::extensions::accumulate {
namespace detail {

/// `sqrt(E[x²] − E[x]²)` of `sums` (PPE's arithmetic), times `n/(n−1)` under
/// the root when `unbiased`. A double when only numbers were added, else a
/// 0-dim tensor (see `ppe::reporting::Summary`). Unbiased with a total
/// weight of at most 1: NaN (a double, as PPE). Population with nothing
/// added: `std::domain_error` (PPE: ZeroDivisionError).
PPE_DECL reporting::Value standard_deviation(reporting::Summary& sums, bool unbiased);

/// The sums both summaries keep; see the file comment.
class MomentSummary {
 public:
  /// Adds `value` with `weight` (`x += weight * value`, as PPE).
  void add(const reporting::Value& value, double weight = 1.0) { sums_.add(value, weight); }
  /// The weighted mean (PPE's `compute_mean`); `std::domain_error` when empty.
  reporting::Value compute_mean() { return sums_.compute_mean(); }
  /// PPE's layout: `{"_x", "_x2", "_n"}` (doubles; `_n` the exact weight),
  /// plus `"_dtype"` when CPU tensors were added; tensors on their device
  /// when tensors are kept there. See `ppe::reporting::Summary::state_dict`.
  State state_dict() { return sums_.state_dict(); }
  /// Restores `state_dict()`'s state or PPE's.
  void load_state_dict(const State& s) { sums_.load_state_dict(s); }
  void reset() { sums_.reset(); }

 protected:
  void merge(const MomentSummary& other) { sums_ += other.sums_; }
  reporting::Summary sums_;
};

}  // namespace detail

/// The population standard deviation of the values added (PPE's
/// `StandardDeviationSummary`); see the file comment.
class StandardDeviationSummary : public detail::MomentSummary {
 public:
  /// PPE's `compute_standard_deviation`.
  reporting::Value compute_standard_deviation() { return detail::standard_deviation(sums_, false); }
  reporting::Value compute_accumulate() { return compute_standard_deviation(); }
  /// This summary becomes that of both (PPE's `a + b`: the sums add).
  StandardDeviationSummary& operator+=(const StandardDeviationSummary& other) {
    merge(other);
    return *this;
  }
  friend StandardDeviationSummary operator+(StandardDeviationSummary a, const StandardDeviationSummary& b) {
    return a += b;
  }
};

/// The sample standard deviation, with Bessel's correction `n/(n−1)`, of the
/// values added (PPE's `UnbiasedStandardDeviationSummary`); NaN for a total
/// weight of at most 1. See the file comment.
class UnbiasedStandardDeviationSummary : public detail::MomentSummary {
 public:
  /// PPE's `compute_unbiased_standard_deviation`.
  reporting::Value compute_unbiased_standard_deviation() { return detail::standard_deviation(sums_, true); }
  reporting::Value compute_accumulate() { return compute_unbiased_standard_deviation(); }
  /// This summary becomes that of both (PPE's `a + b`: the sums add).
  UnbiasedStandardDeviationSummary& operator+=(const UnbiasedStandardDeviationSummary& other) {
    merge(other);
    return *this;
  }
  friend UnbiasedStandardDeviationSummary operator+(UnbiasedStandardDeviationSummary a,
                                                    const UnbiasedStandardDeviationSummary& b) {
    return a += b;
  }
};

}  // namespace ppe::training::extensions::accumulate

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/training/extensions/accumulate/summary/impl/standard_deviation_summary.ipp"
#endif
