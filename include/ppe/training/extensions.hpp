#pragma once
/// \file
/// The built-in extensions of the core (PPE's `ppe.training.extensions`):
/// every extension that needs LibTorch alone. The extensions of optional
/// features have their own umbrellas: PlotReport and VariableStatisticsPlot
/// `ppe/plot.hpp` (PLplot), the distributed evaluator `ppe/distributed.hpp`,
/// LogReport's yaml format `ppe/config.hpp` (yaml-cpp).

#include "ppe/training/extensions/accumulate.hpp"
#include "ppe/training/extensions/best_value.hpp"
#include "ppe/training/extensions/evaluator.hpp"
#include "ppe/training/extensions/exponential_shift.hpp"
#include "ppe/training/extensions/fail_on_non_number.hpp"
#include "ppe/training/extensions/linear_shift.hpp"
#include "ppe/training/extensions/log_report.hpp"
#include "ppe/training/extensions/lr_scheduler.hpp"
#include "ppe/training/extensions/micro_average.hpp"
#include "ppe/training/extensions/multistep_shift.hpp"
#include "ppe/training/extensions/parameter_statistics.hpp"
#include "ppe/training/extensions/polynomial_shift.hpp"
#include "ppe/training/extensions/print_report.hpp"
#include "ppe/training/extensions/profile_report.hpp"
#include "ppe/training/extensions/progress_bar.hpp"
#include "ppe/training/extensions/snapshot.hpp"
#include "ppe/training/extensions/step_shift.hpp"
#include "ppe/training/extensions/timeline_trace.hpp"
#include "ppe/training/extensions/value_observation.hpp"
#include "ppe/training/extensions/warmup_shift.hpp"
