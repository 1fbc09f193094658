#pragma once
/// \file
/// `UnbiasedStandardDeviationAccumulate` (PPE's `ppe.training.extensions.UnbiasedStandardDeviationAccumulate`): the
/// sample standard deviation of an observed value over each trigger interval.

#include <string_view>

#include "ppe/training/extensions/accumulate/accumulate_base.hpp"
#include "ppe/training/extensions/accumulate/summary/standard_deviation_summary.hpp"

namespace ppe::training::extensions {

/// Reports the sample standard deviation (divided by n - 1) of the observed values of a key since the last report; NaN
/// for an interval of one value.
///
/// ```cpp
/// ext::UnbiasedStandardDeviationAccumulate({"main/loss", "main/loss/std"},
/// ext::AccumulateOptions().trigger(ppe::epochs(1)))
/// ```
///
/// Name `"UnbiasedStandardDeviationAccumulate"`, priority `kPriorityEditor`, called every iteration; see
/// `AccumulateBase` and `accumulate::UnbiasedStandardDeviationSummary`.
class UnbiasedStandardDeviationAccumulate : public AccumulateBase<accumulate::UnbiasedStandardDeviationSummary> {
 public:
  static constexpr std::string_view default_name = "UnbiasedStandardDeviationAccumulate";
  using AccumulateBase::AccumulateBase;
};

}  // namespace ppe::training::extensions
