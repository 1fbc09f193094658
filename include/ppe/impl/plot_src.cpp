// The plotting feature's functions (PlotReport, VariableStatisticsPlot),
// compiled once (separate compilation: ppe/impl/plot_src.hpp); Meson's
// `ppe-plot-separate` dependency builds and links it.
#include "ppe/impl/plot_src.hpp"
