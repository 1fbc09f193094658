#pragma once
/// \file
/// PPE's `ppe.nn` modules: `ExtendedSequential`, the lazy modules
/// (`LazyLinear`, `LazyConv1d/2d/3d`, `LazyBatchNorm1d/2d/3d`) and
/// `EnsureShape`. `DistributedDataParallel` (`ppe.nn.parallel`) is part of
/// the distributed feature (`ppe/distributed.hpp`).

#include "ppe/nn/modules/ensure_shape.hpp"
#include "ppe/nn/modules/extended_sequential.hpp"
#include "ppe/nn/modules/lazy.hpp"
#include "ppe/nn/modules/lazy_batchnorm.hpp"
#include "ppe/nn/modules/lazy_conv.hpp"
#include "ppe/nn/modules/lazy_linear.hpp"
