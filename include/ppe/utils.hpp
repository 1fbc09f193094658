#pragma once
/// \file
/// Utilities (PPE's `ppe.utils` area): `ppe::utils::RngState`, LibTorch's
/// random generators as a state object, the comparer
/// (`ppe::utils::comparer`) and activation checkpointing (`checkpoint`).

#include "ppe/utils/checkpoint.hpp"
#include "ppe/utils/comparer.hpp"
#include "ppe/utils/rng_state.hpp"
