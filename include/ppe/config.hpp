#pragma once
/// \file
/// The configuration feature (PPE's `ppe.config`), umbrella of `ppe-config`:
/// `Config` and `Value` (`ppe/config/config.hpp`), the registry `Types`
/// (`ppe/config/types.hpp`), the ready registrations and
/// `create_trainer(config)` (`ppe/config/standard_types.hpp`), and
/// LogReport's yaml format (`ppe/training/extensions/log_format_yaml.hpp`).
/// It needs yaml-cpp (Meson `ppe-config`, pkg-config `ppe-config`, CMake
/// `ppe::config`). PlotReport and TensorBoardWriter register with
/// `ppe/config/plot_types.hpp` and `ppe/config/tensorboard_types.hpp`, where
/// the program has those features too. See docs/config.md.
/// Feature: ppe::config (Meson and pkg-config: ppe-config).

#include "ppe/config/config.hpp"
#include "ppe/config/standard_types.hpp"
#include "ppe/config/types.hpp"
#include "ppe/training/extensions/log_format_yaml.hpp"
