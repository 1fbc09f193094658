#pragma once
/// \file
/// Umbrella header of `ppe::handler` (PPE's `ppe.handler`): the `Logic`,
/// `ClosureLogic`, `CodeBlockLogic` and `Handler` policies of the engine, and
/// the code blocks `forward` / `update_parameters`.

#include "ppe/handler/base_logic.hpp"
#include "ppe/handler/closure_logic.hpp"
#include "ppe/handler/code_block.hpp"
#include "ppe/handler/code_block_logic.hpp"
#include "ppe/handler/handler.hpp"
#include "ppe/handler/logic.hpp"
