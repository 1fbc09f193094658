#pragma once
/// \file
/// `AverageAccumulate` (PPE's `ppe.training.extensions.AverageAccumulate`): the mean of an observed value over each
/// trigger interval.

#include <string_view>

#include "ppe/training/extensions/accumulate/accumulate_base.hpp"
#include "ppe/training/extensions/accumulate/summary/average_summary.hpp"

namespace ppe::training::extensions {

/// Reports the mean of the observed values of a key since the last report.
///
/// ```cpp
/// ext::AverageAccumulate({"main/loss", "main/loss/mean"}, ext::AccumulateOptions().trigger(ppe::epochs(1)))
/// ```
///
/// Name `"AverageAccumulate"`, priority `kPriorityEditor`, called every iteration; see
/// `AccumulateBase` and `accumulate::AverageSummary`.
class AverageAccumulate : public AccumulateBase<accumulate::AverageSummary> {
 public:
  static constexpr std::string_view default_name = "AverageAccumulate";
  using AccumulateBase::AccumulateBase;
};

}  // namespace ppe::training::extensions
