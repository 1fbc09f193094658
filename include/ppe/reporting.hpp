#pragma once
/// \file
/// Reporting (PPE's `ppe.reporting`): Value, Observation, Reporter,
/// report/report_scope, Summary, DictSummary, and LogEntry (a line of a
/// LogReport's log).

#include "ppe/reporting/dict_summary.hpp"
#include "ppe/reporting/log_entry.hpp"
#include "ppe/reporting/observation.hpp"
#include "ppe/reporting/reporter.hpp"
#include "ppe/reporting/summary.hpp"
#include "ppe/reporting/value.hpp"
