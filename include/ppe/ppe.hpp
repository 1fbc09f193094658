#pragma once
/// \file
/// The core: every part of ppe that compiles with LibTorch and the
/// header-only Boost (Hana), range-v3 and nlohmann-json, and links LibTorch
/// alone (`g++ -std=c++20 ... -ltorch -ltorch_cpu -lc10`, docs/getting-started.md).
///
/// What needs another library has its own umbrella, and its own Meson,
/// pkg-config and CMake target:
/// - `ppe/config.hpp`: YAML configs and LogReport's yaml format (yaml-cpp; `ppe-config`)
/// - `ppe/plot.hpp`: PlotReport, VariableStatisticsPlot (PLplot; `ppe-plot`)
/// - `ppe/tensorboard.hpp`: TensorBoardWriter (`ppe-tensorboard`)
/// - `ppe/distributed.hpp`: c10d process groups, DDP, distributed evaluation
///   (c10d's Gloo headers; `ppe-distributed`)
/// - `ppe/dataset.hpp`: datasets; the Fashion-MNIST reader links zlib (part of
///   the `ppe` target, which declares zlib)

#include "ppe/amp.hpp"
#include "ppe/dataloaders.hpp"
#include "ppe/engine.hpp"
#include "ppe/handler.hpp"
#include "ppe/nn.hpp"
#include "ppe/optim.hpp"
#include "ppe/profiler.hpp"
#include "ppe/reporting.hpp"
#include "ppe/runtime.hpp"
#include "ppe/serialization.hpp"
#include "ppe/state.hpp"
#include "ppe/training.hpp"
#include "ppe/training/extensions.hpp"
#include "ppe/utils.hpp"
#include "ppe/version.hpp"
#include "ppe/warnings.hpp"
#include "ppe/writing.hpp"
