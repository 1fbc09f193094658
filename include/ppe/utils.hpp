#pragma once
/// \file
/// Utilities (PPE's `ppe.utils` area): `ppe::utils::RngState`, LibTorch's
/// random generators as a state object.

#include "ppe/utils/rng_state.hpp"
