#pragma once
/// \file
/// Utilities (PPE's `ppe.utils` area): `ppe::utils::RngState`, LibTorch's
/// random generators as a state object, and the comparer
/// (`ppe::utils::comparer`).

#include "ppe/utils/comparer.hpp"
#include "ppe/utils/rng_state.hpp"
