#pragma once
/// \file
/// Umbrella header: the whole library except `ppe/serialization.hpp` (the
/// pickle file format), which needs heavier LibTorch headers and is included
/// where files are written or read.

#include "ppe/reporting.hpp"
#include "ppe/state.hpp"
#include "ppe/training.hpp"
#include "ppe/training/extensions.hpp"
#include "ppe/version.hpp"
#include "ppe/warnings.hpp"
#include "ppe/writing.hpp"
