#pragma once
/// \file
/// The plotting feature, umbrella of `ppe-plot`: PlotReport and
/// VariableStatisticsPlot (PPE's `ppe.training.extensions.PlotReport`,
/// `VariableStatisticsPlot`), which render PNG files through PLplot (Meson
/// `ppe-plot`, pkg-config `ppe-plot`, CMake `ppe::plot`; at run time PLplot's
/// cairo driver, Debian's `plplot-driver-cairo`). See docs/plot-report.md and docs/variable-statistics-plot.md.
/// Feature: ppe::plot (Meson and pkg-config: ppe-plot).

#include "ppe/training/extensions/plot_report.hpp"
#include "ppe/training/extensions/variable_statistics_plot.hpp"
