#pragma once
/// \file
/// The definitions of the plotting feature's out-of-line functions
/// (PlotReport, VariableStatisticsPlot), for separate compilation: as
/// ppe/impl/src.hpp, but apart from it, so that a program without plots
/// needs no PLplot (Meson's `ppe-plot-separate`).

#if !defined(PPE_SEPARATE_COMPILATION)
#error "ppe/impl/plot_src.hpp is for separate compilation: define PPE_SEPARATE_COMPILATION in every TU"
#endif

#include "ppe/training/extensions/detail/impl/png_plot.ipp"
#include "ppe/training/extensions/impl/plot_report.ipp"
#include "ppe/training/extensions/impl/variable_statistics_plot.ipp"
