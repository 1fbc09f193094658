#pragma once
/// \file
/// The training core (PPE's `ppe.training`): managers, the extension protocol,
/// entries and triggers.

#include "ppe/training/any_extension.hpp"
#include "ppe/training/extension.hpp"
#include "ppe/training/extension_entry.hpp"
#include "ppe/training/extensions_manager.hpp"
#include "ppe/training/manager.hpp"
#include "ppe/training/models.hpp"
#include "ppe/training/trigger.hpp"
#include "ppe/training/triggers.hpp"
