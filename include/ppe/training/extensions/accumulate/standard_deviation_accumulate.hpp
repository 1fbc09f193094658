#pragma once
/// \file
/// `StandardDeviationAccumulate` (PPE's `ppe.training.extensions.StandardDeviationAccumulate`): the population standard
/// deviation of an observed value over each trigger interval.

#include <string_view>

#include "ppe/training/extensions/accumulate/accumulate_base.hpp"
#include "ppe/training/extensions/accumulate/summary/standard_deviation_summary.hpp"

namespace ppe::training::extensions {

/// Reports the population standard deviation (divided by n) of the observed values of a key since the last report.
///
/// ```cpp
/// ext::StandardDeviationAccumulate({"main/loss", "main/loss/std"}, ext::AccumulateOptions().trigger(ppe::epochs(1)))
/// ```
///
/// Name `"StandardDeviationAccumulate"`, priority `kPriorityEditor`, called every iteration; see
/// `AccumulateBase` and `accumulate::StandardDeviationSummary`.
class StandardDeviationAccumulate : public AccumulateBase<accumulate::StandardDeviationSummary> {
 public:
  static constexpr std::string_view default_name = "StandardDeviationAccumulate";
  using AccumulateBase::AccumulateBase;
};

}  // namespace ppe::training::extensions
