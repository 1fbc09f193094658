#pragma once
/// \file
/// Mixed precision (torch's `torch.cuda.amp` / `torch.amp`, which LibTorch
/// 1.13 lacks): `ppe::amp::GradScaler`. Autocast is in `<ppe/runtime.hpp>`.

#include "ppe/amp/grad_scaler.hpp"
