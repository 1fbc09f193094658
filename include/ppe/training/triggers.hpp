#pragma once
/// \file
/// Every trigger (PPE's `ppe.training.triggers`).

#include "ppe/training/triggers/any_trigger.hpp"
#include "ppe/training/triggers/interval_trigger.hpp"
