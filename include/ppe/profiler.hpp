#pragma once
/// \file
/// The profiler (PPE's `ppe.profiler`): `record` scopes, the `TimeSummary`,
/// the Chrome tracer, and `Profile`, a LibTorch profiler session with
/// PyTorch's schedule (the Trainer's and Evaluator's `profile` option).

#include "ppe/profiler/chrome_trace_json.hpp"
#include "ppe/profiler/profile.hpp"
#include "ppe/profiler/record.hpp"
#include "ppe/profiler/time_summary.hpp"
#include "ppe/profiler/tracing.hpp"
