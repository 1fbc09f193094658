#pragma once
/// \file
/// `MinAccumulate` (PPE's `ppe.training.extensions.MinAccumulate`): the minimum of an observed value over each trigger
/// interval.

#include <string_view>

#include "ppe/training/extensions/accumulate/accumulate_base.hpp"
#include "ppe/training/extensions/accumulate/summary/extremum_summary.hpp"

namespace ppe::training::extensions {

/// Reports the smallest observed value of a key since the last report.
///
/// ```cpp
/// ext::MinAccumulate({"main/loss", "main/loss/min"}, ext::AccumulateOptions().trigger(ppe::epochs(1)))
/// ```
///
/// Name `"MinAccumulate"`, priority `kPriorityEditor`, called every iteration; see
/// `AccumulateBase` and `accumulate::MinSummary`.
class MinAccumulate : public AccumulateBase<accumulate::MinSummary> {
 public:
  static constexpr std::string_view default_name = "MinAccumulate";
  using AccumulateBase::AccumulateBase;
};

}  // namespace ppe::training::extensions
