#pragma once
/// \file
/// `ppe::training::extensions::plot`: a small description of a figure
/// (subplots holding line series with markers and filled bands, legends,
/// grids, labels) and its rendering into PNG bytes through PLplot's
/// `pngcairo` device. PlotReport and VariableStatisticsPlot build a `Figure`
/// on the training thread and render it on a writer thread; their
/// `postprocess` callbacks receive the `Figure` to change it.
///
/// PLplot is needed only where `render_png` is compiled (this header's
/// `impl/png_plot.ipp`): with `PPE_SEPARATE_COMPILATION` the other
/// translation units see no PLplot header. Link with `-lplplot` (Meson:
/// `dependency('plplot')`).
/// Feature: ppe::plot (Meson and pkg-config: ppe-plot).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ppe/detail/config.hpp"
#include "ppe/writing/writer.hpp"

namespace ppe::training::extensions::plot {

/// An sRGB colour with an opacity in [0, 1].
struct Color {
  std::uint8_t r = 0, g = 0, b = 0;
  double alpha = 1.0;
  /// The same colour with another opacity.
  Color with_alpha(double a) const noexcept { return Color{r, g, b, a}; }
  friend bool operator==(const Color&, const Color&) = default;
};

/// The `i`-th colour of matplotlib's default cycle (`C0`, `C1`, ...: "tab10",
/// `#1f77b4`, `#ff7f0e`, ...), repeating after ten.
PPE_DECL Color cycle_color(std::size_t i);

/// A marker drawn at every point of a series.
enum class Marker {
  None,
  Point,          ///< matplotlib `"."`
  Pixel,          ///< `","`
  Circle,         ///< `"o"`
  Square,         ///< `"s"`
  Diamond,        ///< `"D"`
  ThinDiamond,    ///< `"d"`
  TriangleUp,     ///< `"^"`
  TriangleDown,   ///< `"v"`
  TriangleLeft,   ///< `"<"`
  TriangleRight,  ///< `">"`
  Star,           ///< `"*"`
  Plus,           ///< `"+"`
  X,              ///< `"x"`
  VLine,          ///< `"|"`
  HLine,          ///< `"_"`
};

/// The marker a matplotlib marker string names: `"."`, `","`, `"o"`, `"s"`,
/// `"D"`, `"d"`, `"^"`, `"v"`, `"<"`, `">"`, `"*"`, `"+"`, `"x"`, `"|"`,
/// `"_"`; no marker for `""`, `"None"`, `"none"` and `" "`. Any other string
/// is a `std::invalid_argument` that lists the supported ones.
PPE_DECL Marker parse_marker(std::string_view spec);

/// A line through the points `(x[i], y[i])` (in order; a NaN or infinite
/// coordinate breaks the line there), with an optional marker at each point.
struct Series {
  std::string label;  ///< legend text; empty or starting with `_`: not in the legend
  std::vector<double> x, y;
  Color color = cycle_color(0);
  Marker marker = Marker::None;
  double line_width = 1.5;  ///< in PLplot's width units (~ pixels); 0: markers only
};

/// The area between `lower[i]` and `upper[i]` along `x[i]` (matplotlib's
/// `fill_between`), filled with `color` (usually translucent).
struct Band {
  std::string label;  ///< legend text; empty or starting with `_`: not in the legend
  std::vector<double> x, lower, upper;
  Color color = cycle_color(0).with_alpha(0.2);
};

/// Where an axes' legend goes.
enum class LegendPlace {
  None,         ///< no legend
  UpperRight,   ///< inside the plot, top right
  OutsideRight  ///< right of the plot, top aligned (the plot narrows to make room)
};

/// One subplot: bands are drawn first, then series in order, over the grid.
struct Axes {
  std::string title, x_label, y_label;
  bool grid = true;
  LegendPlace legend = LegendPlace::UpperRight;
  std::vector<Band> bands;
  std::vector<Series> series;
  /// Fixed axis ranges; unset: the data's range plus 5% on each side.
  std::optional<std::pair<double, double>> x_limits, y_limits;
  /// Whether some series or band has a point (matplotlib's `has_data`).
  bool has_data() const noexcept {
    for (const auto& s : series)
      if (!s.x.empty()) return true;
    for (const auto& b : bands)
      if (!b.x.empty()) return true;
    return false;
  }
};

/// A figure of `rows` x `cols` subplots, `width` x `height` pixels, white
/// background. `axes` holds the subplots row by row (`rows * cols` of them).
struct Figure {
  int width = 640, height = 480;  // matplotlib's default: 6.4 x 4.8 inches at 100 dpi
  int rows = 1, cols = 1;
  std::vector<Axes> axes = std::vector<Axes>(1);
  /// The subplot at (`row`, `col`); `std::out_of_range` outside the grid.
  Axes& at(int row, int col);
  const Axes& at(int row, int col) const;
};

/// Checks a figure: a positive size of at most 16384 pixels a side, at least
/// one subplot and `rows * cols` of them, matching lengths of each series'
/// and band's vectors, opacities in [0, 1], increasing finite limits.
/// `std::invalid_argument` naming the subplot and series otherwise.
PPE_DECL void check_figure(const Figure& figure);

/// Renders `figure` (checked first) and returns the PNG file's bytes.
///
/// PLplot keeps process-wide state (its current stream, error handlers): all
/// renders of the process are serialised by one mutex, and each uses a stream
/// of its own (`plmkstrm`, ended with `plend1`) and restores the caller's
/// current stream, so code that uses PLplot itself is not disturbed provided
/// it does not call PLplot while a render runs on another thread. During a
/// render PLplot's abort and exit handlers are replaced: a PLplot error becomes
/// a `std::runtime_error` with PLplot's message (PLplot's warnings, which it
/// prints to stderr unconditionally, are avoided by only making valid calls).
/// A missing `pngcairo` device (package `plplot-driver-cairo`) is a
/// `std::runtime_error` saying so.
PPE_DECL std::string render_png(const Figure& figure);

/// A `SaveFn` that renders `figure` when it runs (on the writer's thread for
/// asynchronous writers) and writes the PNG; a render error propagates, so the
/// writer leaves the previous file in place.
PPE_DECL writing::SaveFn png_save_fn(Figure figure);

/// Checks the file name of a plot: relative, ending in `.png` (the only
/// format rendered). `std::invalid_argument` starting with `who` otherwise.
PPE_DECL void check_png_filename(const std::string& filename, const char* who);

}  // namespace ppe::training::extensions::plot

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/training/extensions/detail/impl/png_plot.ipp"
#endif
