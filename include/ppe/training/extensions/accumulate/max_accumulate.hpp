#pragma once
/// \file
/// `MaxAccumulate` (PPE's `ppe.training.extensions.MaxAccumulate`): the maximum of an observed value over each trigger
/// interval.

#include <string_view>

#include "ppe/training/extensions/accumulate/accumulate_base.hpp"
#include "ppe/training/extensions/accumulate/summary/extremum_summary.hpp"

namespace ppe::training::extensions {

/// Reports the largest observed value of a key since the last report.
///
/// ```cpp
/// ext::MaxAccumulate({"main/loss", "main/loss/max"}, ext::AccumulateOptions().trigger(ppe::epochs(1)))
/// ```
///
/// Name `"MaxAccumulate"`, priority `kPriorityEditor`, called every iteration; see
/// `AccumulateBase` and `accumulate::MaxSummary`.
class MaxAccumulate : public AccumulateBase<accumulate::MaxSummary> {
 public:
  static constexpr std::string_view default_name = "MaxAccumulate";
  using AccumulateBase::AccumulateBase;
};

}  // namespace ppe::training::extensions
