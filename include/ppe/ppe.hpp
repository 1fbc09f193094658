#pragma once
/// \file
/// Umbrella header: the whole library.

#include "ppe/reporting.hpp"
#include "ppe/state.hpp"
#include "ppe/training.hpp"
#include "ppe/version.hpp"
#include "ppe/warnings.hpp"
