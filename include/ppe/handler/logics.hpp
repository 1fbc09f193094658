#pragma once
/// \file
/// The two alternative step logics of PPE's `ppe.handler._logic` (beside the
/// default `Logic`, handler/logic.hpp), one header each:
/// `ClosureLogic` (handler/closure_logic.hpp) and `CodeBlockLogic` with its
/// code blocks `forward` / `update_parameters` (handler/code_block_logic.hpp).

#include "ppe/handler/closure_logic.hpp"
#include "ppe/handler/code_block_logic.hpp"
