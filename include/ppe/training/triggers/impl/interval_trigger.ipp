// Definitions of training/triggers/interval_trigger.hpp's out-of-line functions: included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <cmath>
#include <sstream>
#include <stdexcept>
#include <string>

#include "ppe/training/triggers/interval_trigger.hpp"

namespace ppe::training::triggers {

PPE_DECL IntervalTrigger::IntervalTrigger(double period, Unit unit) : period_(period), unit_(unit) {
  if (!(period > 0) || !std::isfinite(period))
    throw std::invalid_argument("ppe::IntervalTrigger: period must be a positive finite number, got " +
                                format_number(period));
}

PPE_DECL std::string IntervalTrigger::str() const {
  return "IntervalTrigger(" + format_number(period_) + ", '" + unit_name(unit_) + "')";
}

PPE_DECL std::string IntervalTrigger::format_number(double v) {
  std::ostringstream os;
  if (std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 1e15)
    os << static_cast<long long>(v);
  else
    os << v;
  return os.str();
}

}  // namespace ppe::training::triggers
