#pragma once
/// \file
/// The accumulate extensions (PPE's `ppe.training.extensions.accumulate`):
/// `AverageAccumulate`, `StandardDeviationAccumulate`,
/// `UnbiasedStandardDeviationAccumulate`, `MinAccumulate`, `MaxAccumulate`.

#include "ppe/training/extensions/accumulate/average_accumulate.hpp"
#include "ppe/training/extensions/accumulate/max_accumulate.hpp"
#include "ppe/training/extensions/accumulate/min_accumulate.hpp"
#include "ppe/training/extensions/accumulate/standard_deviation_accumulate.hpp"
#include "ppe/training/extensions/accumulate/unbiased_standard_deviation_accumulate.hpp"
