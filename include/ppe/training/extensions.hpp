#pragma once
/// \file
/// The built-in extensions (PPE's `ppe.training.extensions`).

#include "ppe/training/extensions/accumulate.hpp"
#include "ppe/training/extensions/best_value.hpp"
#include "ppe/training/extensions/evaluator.hpp"
#include "ppe/training/extensions/log_report.hpp"
#include "ppe/training/extensions/micro_average.hpp"
#include "ppe/training/extensions/plot_report.hpp"
#include "ppe/training/extensions/print_report.hpp"
#include "ppe/training/extensions/profile_report.hpp"
#include "ppe/training/extensions/progress_bar.hpp"
#include "ppe/training/extensions/timeline_trace.hpp"
#include "ppe/training/extensions/value_observation.hpp"
