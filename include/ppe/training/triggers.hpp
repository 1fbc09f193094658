#pragma once
/// \file
/// Every trigger (PPE's `ppe.training.triggers`), plus the combinators
/// `any_of` / `all_of` (`||` / `&&`) and the type-erased `AnyTrigger`.

#include "ppe/training/triggers/any_trigger.hpp"
#include "ppe/training/triggers/combinators.hpp"
#include "ppe/training/triggers/early_stopping_trigger.hpp"
#include "ppe/training/triggers/function_trigger.hpp"
#include "ppe/training/triggers/interval_trigger.hpp"
#include "ppe/training/triggers/manual_schedule_trigger.hpp"
#include "ppe/training/triggers/minmax_value_trigger.hpp"
#include "ppe/training/triggers/once_trigger.hpp"
#include "ppe/training/triggers/time_trigger.hpp"
