// Definitions of training/extensions/detail/png_plot.hpp's out-of-line functions: included by it when
// header-only, compiled once by impl/plot_src.hpp with PPE_SEPARATE_COMPILATION. The only file that includes
// PLplot's header.
// Feature: ppe::plot (Meson and pkg-config: ppe-plot).
//
// A `Figure` becomes PNG bytes in `render_png`: the figure is checked, PLplot
// is taken for this render alone (its state is process-wide), its error and
// exit handlers are replaced (its defaults print and exit the process), a
// stream of our own is drawn on the `pngcairo` device into a memory FILE*,
// and the PNG comes back as a string. `Renderer` draws the subplots itself,
// in the look of matplotlib's defaults (PPE draws its plots with matplotlib):
// tab10 colours, 5% margins, matplotlib's marker names, a legend box.
//
// In this file: PLplot's handlers and the memory sink, markers (as legend
// glyphs and as drawn shapes), axis ranges, the palette, the `Renderer`, then
// the public functions of png_plot.hpp.
#pragma once

#include <plplot.h>
#include <stdio.h>  // fopencookie (glibc)
#include <sys/types.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstring>
#include <exception>
#include <limits>
#include <mutex>
#include <ostream>
#include <stdexcept>
#include <string>
#include <unordered_set>
#include <vector>

#include "ppe/training/extensions/detail/png_plot.hpp"

namespace ppe::training::extensions::plot {

namespace render_detail {

/// PLplot's state is process-wide: one render at a time.
inline std::mutex& plplot_mutex() {
  static std::mutex m;
  return m;
}

// The first PLplot error message of the current render (guarded by plplot_mutex()).
inline std::string& plplot_error() {
  static std::string message;
  return message;
}

/// What PLplot's exit handler throws: the render is abandoned.
struct PlplotExit {
  std::string message;
};

// PLplot's abort handler: called for errors it recovers from (a bad argument;
// the call does nothing). Its default prints to stderr and goes on; the first
// message is kept, and `Renderer::check` turns it into an exception after the
// step.
extern "C" inline void on_plplot_abort(PLCHAR_VECTOR message) {
  if (plplot_error().empty()) plplot_error() = message ? message : "unknown error";
}

extern "C" inline int on_plplot_exit(PLCHAR_VECTOR message) {
  // plexit() would print, end every stream and exit the process; leave
  // through an exception instead (PLplot's C frames have unwind tables on the
  // platforms LibTorch supports).
  throw PlplotExit{message ? message : "unknown error"};
}

/// A FILE* whose writes append to a string (PLplot's pngcairo writes the PNG
/// to the stream set by plsfile and closes it itself when the stream ends).
/// A glibc cookie stream (fopencookie): the bytes without a temporary file.
/// `closed` tells whether PLplot closed it, so it is closed exactly once.
struct Sink {
  std::string bytes;
  bool closed = false;
  static ssize_t write(void* cookie, const char* data, size_t size) {
    static_cast<Sink*>(cookie)->bytes.append(data, size);
    return static_cast<ssize_t>(size);
  }
  static int close(void* cookie) {
    static_cast<Sink*>(cookie)->closed = true;
    return 0;
  }
};

// Non-finite values are gaps (matplotlib breaks a line at a NaN).
inline bool finite(double v) { return std::isfinite(v); }

// The legend's symbol of a marker: a glyph (UTF-8, drawn by pllegend with
// plstring in the current font) and its scale relative to the text height.
// The plot's markers are shapes (marker_shape): a glyph per point is slow.
struct Glyph {
  const char* text;
  double scale;
};
inline Glyph glyph_of(Marker m) {
  switch (m) {
    case Marker::None: return {"", 0};
    case Marker::Point: return {"\u25CF", 0.45};          // ●, small
    case Marker::Pixel: return {"\u25CF", 0.2};           // ●, tiny
    case Marker::Circle: return {"\u25CF", 0.8};          // ●
    case Marker::Square: return {"\u25A0", 0.8};          // ■
    case Marker::Diamond: return {"\u25C6", 0.8};         // ◆
    case Marker::ThinDiamond: return {"\u2666", 0.8};     // ♦
    case Marker::TriangleUp: return {"\u25B2", 0.8};      // ▲
    case Marker::TriangleDown: return {"\u25BC", 0.8};    // ▼
    case Marker::TriangleLeft: return {"\u25C0", 0.8};    // ◀
    case Marker::TriangleRight: return {"\u25B6", 0.8};   // ▶
    case Marker::Star: return {"\u2605", 0.9};            // ★
    case Marker::Plus: return {"+", 1.0};
    case Marker::X: return {"\u00D7", 1.0};               // ×
    case Marker::VLine: return {"|", 0.9};
    case Marker::HLine: return {"\u2013", 1.0};           // –
  }
  return {"", 0};
}

// A marker as polygons (filled) or polylines (stroked) around the point,
// in units of `radius` pixels (y up). The sizes follow matplotlib's default
// marker size (see `radius`).
struct MarkerShape {
  std::vector<std::vector<std::pair<double, double>>> parts;
  bool filled = true;
  double radius = 4.0;  // matplotlib's default marker size, 6 points at 100 dpi, is ~8 pixels across
};
// The corners of a regular polygon on the unit circle, the first at
// `start_deg` degrees; with `inner` > 0, a star: a corner at radius `inner`
// between each two.
inline std::vector<std::pair<double, double>> regular_polygon(int corners, double start_deg, double inner = 0.0) {
  std::vector<std::pair<double, double>> pts;
  const double pi = std::acos(-1.0);
  const int n = inner > 0 ? 2 * corners : corners;
  for (int k = 0; k < n; ++k) {
    const double r = inner > 0 && k % 2 == 1 ? inner : 1.0;
    const double t = (start_deg + 360.0 * k / n) * pi / 180.0;
    pts.emplace_back(r * std::cos(t), r * std::sin(t));
  }
  return pts;
}
// The shape of each marker; a circle is a 16-gon (round at marker sizes).
inline MarkerShape marker_shape(Marker m) {
  MarkerShape s;
  switch (m) {
    case Marker::None: s.parts.clear(); break;
    case Marker::Point: s.parts = {regular_polygon(10, 0)}; s.radius = 2.0; break;
    case Marker::Pixel: s.parts = {regular_polygon(4, 45)}; s.radius = 0.75; break;
    case Marker::Circle: s.parts = {regular_polygon(16, 0)}; break;
    case Marker::Square: s.parts = {regular_polygon(4, 45)}; s.radius = 4.2; break;
    case Marker::Diamond: s.parts = {regular_polygon(4, 0)}; break;
    case Marker::ThinDiamond: s.parts = {{{0, 1}, {-0.6, 0}, {0, -1}, {0.6, 0}}}; break;
    case Marker::TriangleUp: s.parts = {regular_polygon(3, 90)}; break;
    case Marker::TriangleDown: s.parts = {regular_polygon(3, 270)}; break;
    case Marker::TriangleLeft: s.parts = {regular_polygon(3, 180)}; break;
    case Marker::TriangleRight: s.parts = {regular_polygon(3, 0)}; break;
    case Marker::Star: s.parts = {regular_polygon(5, 90, 0.4)}; s.radius = 5.0; break;
    case Marker::Plus: s.parts = {{{-1, 0}, {1, 0}}, {{0, -1}, {0, 1}}}; s.filled = false; break;
    case Marker::X: s.parts = {{{-0.75, -0.75}, {0.75, 0.75}}, {{-0.75, 0.75}, {0.75, -0.75}}}; s.filled = false; break;
    case Marker::VLine: s.parts = {{{0, -1}, {0, 1}}}; s.filled = false; break;
    case Marker::HLine: s.parts = {{{-1, 0}, {1, 0}}}; s.filled = false; break;
  }
  return s;
}

// matplotlib's rule: a label that starts with `_` is left out of the legend.
inline bool in_legend(const std::string& label) { return !label.empty() && label.front() != '_'; }

// The range shown on an axis: the data's finite range widened by 5% on each
// side (matplotlib's default margins); a single value gets +-5% of itself
// (+-0.5 around 0); no data: [0, 1].
inline std::pair<double, double> axis_range(double lo, double hi) {
  if (!(lo <= hi)) return {0.0, 1.0};  // no finite value: lo is +inf, hi -inf
  if (lo == hi) {
    const double d = lo == 0.0 ? 0.5 : std::abs(lo) * 0.05;
    return {lo - d, hi + d};
  }
  const double m = (hi - lo) * 0.05;
  return {lo - m, hi + m};
}

// Calls f(begin, end) for every maximal run of indexes in [0, n) where ok(i):
// lines and bands are drawn piecewise between their non-finite values.
template <class Ok, class F>
void for_each_run(std::size_t n, Ok ok, F f) {
  std::size_t i = 0;
  while (i < n) {
    while (i < n && !ok(i)) ++i;
    const std::size_t b = i;
    while (i < n && ok(i)) ++i;
    if (i > b) f(b, i);
  }
}

// Colour map 0 indexes: 0 background, 1 text and frame, 2 grid, 3.. the
// figure's colours in order of first use. PLplot selects colours by index
// into its map 0 (plcol0), whose size and entries are set before plinit: the
// Renderer collects every colour of the figure first.
struct Palette {
  std::vector<Color> colors{Color{255, 255, 255, 1.0}, Color{0, 0, 0, 1.0}, Color{176, 176, 176, 1.0}};
  PLINT index(const Color& c) {
    for (std::size_t i = 3; i < colors.size(); ++i)
      if (colors[i] == c) return static_cast<PLINT>(i);
    colors.push_back(c);
    return static_cast<PLINT>(colors.size() - 1);
  }
};

// Draws one `Figure` on the current PLplot stream: `setup` starts the
// device, `draw` the subplots. Call `check` after PLplot calls to turn a
// recorded abort into an exception.
class Renderer {
 public:
  explicit Renderer(const Figure& f) : f_(f) {
    for (const auto& a : f.axes) {
      for (const auto& b : a.bands) palette_.index(b.color);
      for (const auto& s : a.series) palette_.index(s.color);
    }
  }

  // Device, output, page size in pixels and colours go before plinit (PLplot
  // reads them there). Then the default text height (mm) and the device's
  // dots per inch are read back, to lay the subplots out in pixels.
  void setup(FILE* out) {
    plsdev("pngcairo");
    plsfile(out);
    plspage(0.0, 0.0, f_.width, f_.height, 0, 0);
    plscmap0n(static_cast<PLINT>(palette_.colors.size()));
    for (std::size_t i = 0; i < palette_.colors.size(); ++i) {
      const Color& c = palette_.colors[i];
      plscol0a(static_cast<PLINT>(i), c.r, c.g, c.b, c.alpha);
    }
    plinit();
    check("plinit");
    PLFLT def = 0, ht = 0;
    plgchr(&def, &ht);
    char_mm_ = def;
    PLFLT xp = 0, yp = 0;
    PLINT xl = 0, yl = 0, xo = 0, yo = 0;
    plgpage(&xp, &yp, &xl, &yl, &xo, &yo);  // xp: dots per inch
    px_per_mm_ = xp > 0 ? xp / 25.4 : 90.0 / 25.4;
  }

  // One page; subplots in row-major order, as Figure::at numbers them.
  void draw() {
    pladv(0);
    for (std::size_t i = 0; i < f_.axes.size(); ++i) {
      draw_axes(f_.axes[i], static_cast<int>(i) / f_.cols, static_cast<int>(i) % f_.cols);
      check("drawing subplot " + std::to_string(i));
    }
  }

  // Throws what on_plplot_abort recorded, naming the step that failed.
  static void check(const std::string& step) {
    if (!plplot_error().empty())
      throw std::runtime_error("ppe::plot::render_png: PLplot failed while " + step + ": " + plplot_error());
  }

 private:
  // The subplots are laid out here rather than with plssub, which would
  // shrink the text of every subplot.
  //
  // One subplot in the cell (row, col): margins for its tick labels, axis
  // labels, title and an outside legend are measured in text heights; what
  // is left is the viewport (PLplot's normalized page coordinates, y up, so
  // row 0 is at the top). Then the window (data coordinates), the grid
  // under the data, bands, series, and the frame, labels and legend on top.
  void draw_axes(const Axes& a, int row, int col) {
    plschr(0.0, kTextScale);
    const double char_px = char_mm_ * kTextScale * px_per_mm_;  // text height
    const double cell_w = static_cast<double>(f_.width) / f_.cols;
    const double cell_h = static_cast<double>(f_.height) / f_.rows;

    std::vector<const std::string*> labels;
    for (const auto& b : a.bands)
      if (in_legend(b.label)) labels.push_back(&b.label);
    for (const auto& s : a.series)
      if (in_legend(s.label)) labels.push_back(&s.label);
    const bool legend = a.legend != LegendPlace::None && !labels.empty();

    double left = 6.5 * char_px + (a.y_label.empty() ? 0 : 2.0 * char_px);
    double right = 1.5 * char_px;
    const double bottom = 2.8 * char_px + (a.x_label.empty() ? 0 : 1.8 * char_px);
    const double top = a.title.empty() ? 1.2 * char_px : 2.8 * char_px;
    if (legend && a.legend == LegendPlace::OutsideRight) {
      // The legend's width, estimated: sample line, padding and the longest
      // label at about half a text height per character; at most 45% of the
      // cell, so the plot keeps most of it.
      std::size_t longest = 0;
      for (const auto* l : labels) longest = std::max(longest, utf8_length(*l));
      right += std::min(kLegendLine * cell_w + (2.5 + 0.52 * static_cast<double>(longest)) * char_px, 0.45 * cell_w);
    }
    left = std::min(left, 0.3 * cell_w);
    // A subplot squeezed under 5% of its cell would draw nothing readable.
    const double x0 = (col * cell_w + left) / f_.width, x1 = ((col + 1) * cell_w - right) / f_.width;
    const double y0 = ((f_.rows - 1 - row) * cell_h + bottom) / f_.height;
    const double y1 = ((f_.rows - row) * cell_h - top) / f_.height;
    if (!(x1 - x0 > 0.05 * cell_w / f_.width && y1 - y0 > 0.05 * cell_h / f_.height))
      throw std::invalid_argument("ppe::plot::render_png: the figure (" + std::to_string(f_.width) + "x" +
                                  std::to_string(f_.height) + " pixels, " + std::to_string(f_.rows) + "x" +
                                  std::to_string(f_.cols) +
                                  " subplots) is too small for a subplot's labels and legend");
    plvpor(x0, x1, y0, y1);

    auto [xmin, xmax] = a.x_limits ? *a.x_limits : data_range(a, true);
    auto [ymin, ymax] = a.y_limits ? *a.y_limits : data_range(a, false);
    plwind(xmin, xmax, ymin, ymax);
    // Data units per pixel: markers are sized in pixels and deduplicated by
    // pixel (draw_series).
    window_x0_ = xmin;
    window_y0_ = ymin;
    world_per_px_x_ = (xmax - xmin) / ((x1 - x0) * f_.width);
    world_per_px_y_ = (ymax - ymin) / ((y1 - y0) * f_.height);

    if (a.grid) {
      plcol0(2);
      plwidth(0.6);
      plbox("g", 0.0, 0, "g", 0.0, 0);
    }
    for (const auto& b : a.bands) draw_band(b);
    for (const auto& s : a.series) draw_series(s);

    // Frame on all sides (b, c), numeric labels (n), major and minor ticks
    // (t, s) at PLplot's automatic spacing; `v`: y labels horizontal, as
    // matplotlib's. Label offsets are in text heights from the frame.
    plcol0(1);
    plwidth(1.0);
    plbox("bcnst", 0.0, 0, "bcnstv", 0.0, 0);
    if (!a.x_label.empty()) plmtex("b", 3.0, 0.5, 0.5, a.x_label.c_str());
    if (!a.y_label.empty()) plmtex("l", 6.0, 0.5, 0.5, a.y_label.c_str());
    if (!a.title.empty()) plmtex("t", 1.2, 0.5, 0.5, a.title.c_str());
    if (legend) draw_legend(a);
  }

  // Characters, not bytes, of a UTF-8 label (continuation bytes are not
  // counted), for the legend's width.
  static std::size_t utf8_length(const std::string& s) {
    std::size_t n = 0;
    for (unsigned char c : s)
      if ((c & 0xC0) != 0x80) ++n;
    return n;
  }

  // The axis range (x or y) over every finite value of the series and bands.
  static std::pair<double, double> data_range(const Axes& a, bool x) {
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    const auto take = [&](const std::vector<double>& v) {
      for (double d : v)
        if (finite(d)) {
          lo = std::min(lo, d);
          hi = std::max(hi, d);
        }
    };
    for (const auto& s : a.series) take(x ? s.x : s.y);
    for (const auto& b : a.bands) {
      if (x) {
        take(b.x);
      } else {
        take(b.lower);
        take(b.upper);
      }
    }
    return axis_range(lo, hi);
  }

  // A band (matplotlib's fill_between) as one polygon per finite run: along
  // the upper bound, then back along the lower one.
  void draw_band(const Band& b) {
    plcol0(palette_.index(b.color));
    const std::size_t n = b.x.size();
    std::vector<PLFLT> px, py;
    for_each_run(
        n, [&](std::size_t i) { return finite(b.x[i]) && finite(b.lower[i]) && finite(b.upper[i]); },
        [&](std::size_t begin, std::size_t end) {
          px.clear();
          py.clear();
          for (std::size_t i = begin; i < end; ++i) {
            px.push_back(b.x[i]);
            py.push_back(b.upper[i]);
          }
          for (std::size_t i = end; i-- > begin;) {
            px.push_back(b.x[i]);
            py.push_back(b.lower[i]);
          }
          if (end - begin == 1) {  // one point: a vertical segment (a fill needs an area)
            plline(2, px.data(), py.data());
          } else {
            plfill(static_cast<PLINT>(px.size()), px.data(), py.data());
          }
        });
  }

  // A series: its line piecewise over finite runs (a lone point has no
  // line, as in matplotlib), then its markers.
  void draw_series(const Series& s) {
    plcol0(palette_.index(s.color));
    const std::size_t n = s.x.size();
    const auto ok = [&](std::size_t i) { return finite(s.x[i]) && finite(s.y[i]); };
    if (s.line_width > 0) {
      plwidth(s.line_width);
      for_each_run(n, ok, [&](std::size_t begin, std::size_t end) {
        if (end - begin >= 2)
          plline(static_cast<PLINT>(end - begin), s.x.data() + begin, s.y.data() + begin);
      });
    }
    if (s.marker == Marker::None) return;
    // Markers are drawn as small polygons and segments in world units: a
    // glyph per point (plstring) or a Hershey symbol (plpoin) costs 40 to
    // 100 us each, which makes a 10,000-point plot take a second.
    // An opaque marker drawn again at the same pixel changes nothing: dense
    // series (more points than pixels) draw one marker per pixel.
    const MarkerShape shape = marker_shape(s.marker);
    const bool opaque = s.color.alpha >= 1.0;
    std::unordered_set<std::uint64_t> drawn;
    plwidth(1.2);
    std::vector<PLFLT> px, py;
    for (std::size_t i = 0; i < n; ++i) {
      if (!ok(i)) continue;
      if (opaque) {
        // The pixel's two coordinates packed in one key; points far outside
        // the window (where the cast could overflow) are not deduplicated.
        const double fx = std::round((s.x[i] - window_x0_) / world_per_px_x_);
        const double fy = std::round((s.y[i] - window_y0_) / world_per_px_y_);
        if (std::abs(fx) < 1e9 && std::abs(fy) < 1e9) {
          const auto key = (static_cast<std::uint64_t>(static_cast<std::int64_t>(fx) + (1LL << 31)) << 32) ^
                           static_cast<std::uint64_t>(static_cast<std::int64_t>(fy) + (1LL << 31));
          if (!drawn.insert(key).second) continue;
        }
      }
      for (const auto& part : shape.parts) {
        px.clear();
        py.clear();
        for (const auto& [dx, dy] : part) {
          px.push_back(s.x[i] + dx * shape.radius * world_per_px_x_);
          py.push_back(s.y[i] + dy * shape.radius * world_per_px_y_);
        }
        if (shape.filled)
          plfill(static_cast<PLINT>(px.size()), px.data(), py.data());
        else
          plline(static_cast<PLINT>(px.size()), px.data(), py.data());
      }
    }
  }

  // The legend: pllegend takes one array per attribute with an entry per
  // legend row. Bands show a colour box, series their line and/or marker
  // glyph (PL_LEGEND_SYMBOL draws `symbols` as text); attributes a row does
  // not use still need an entry.
  void draw_legend(const Axes& a) {
    std::vector<PLINT> opts, text_colors, box_colors, box_patterns, line_colors, line_styles, symbol_colors,
        symbol_numbers;
    std::vector<PLFLT> box_scales, box_widths, line_widths, symbol_scales;
    std::vector<const char*> texts, symbols;
    const auto add_common = [&](const std::string& label) {
      texts.push_back(label.c_str());
      text_colors.push_back(1);
    };
    for (const auto& b : a.bands) {
      if (!in_legend(b.label)) continue;
      add_common(b.label);
      opts.push_back(PL_LEGEND_COLOR_BOX);
      box_colors.push_back(palette_.index(b.color));
      box_patterns.push_back(0);
      box_scales.push_back(0.8);
      box_widths.push_back(1.0);
      line_colors.push_back(1);
      line_styles.push_back(1);
      line_widths.push_back(1.0);
      symbol_colors.push_back(1);
      symbol_numbers.push_back(0);
      symbol_scales.push_back(1.0);
      symbols.push_back("");
    }
    for (const auto& s : a.series) {
      if (!in_legend(s.label)) continue;
      add_common(s.label);
      const Glyph g = glyph_of(s.marker);
      PLINT o = 0;
      if (s.line_width > 0) o |= PL_LEGEND_LINE;
      if (s.marker != Marker::None) o |= PL_LEGEND_SYMBOL;
      opts.push_back(o == 0 ? PL_LEGEND_NONE : o);
      box_colors.push_back(1);
      box_patterns.push_back(0);
      box_scales.push_back(0.8);
      box_widths.push_back(1.0);
      line_colors.push_back(palette_.index(s.color));
      line_styles.push_back(1);
      line_widths.push_back(s.line_width > 0 ? s.line_width : 1.0);
      symbol_colors.push_back(palette_.index(s.color));
      symbol_numbers.push_back(1);
      symbol_scales.push_back(g.scale > 0 ? g.scale : 1.0);
      symbols.push_back(g.text);
    }
    const bool outside = a.legend == LegendPlace::OutsideRight;
    PLFLT w = 0, h = 0;
    // Outside: anchored by its top left corner just right of the plot (an
    // inside position offset past the right edge; PLplot's "outside top
    // right" would put it above the plot).
    // After the position: x, y offsets; sample width; background colour 0,
    // box colour 2 in style 1 (solid); rows and columns 0 (one column);
    // then text offset, scale, spacing and justification (left).
    pllegend(&w, &h, PL_LEGEND_BACKGROUND | PL_LEGEND_BOUNDING_BOX,
             PL_POSITION_TOP | PL_POSITION_INSIDE | (outside ? PL_POSITION_LEFT : PL_POSITION_RIGHT),
             outside ? 1.03 : 0.02, 0.02, kLegendLine * 1.0, 0, 2, 1, 0, 0, static_cast<PLINT>(texts.size()),
             opts.data(), 1.0, 1.0, 2.0, 0.0, text_colors.data(), texts.data(), box_colors.data(),
             box_patterns.data(), box_scales.data(), box_widths.data(), line_colors.data(), line_styles.data(),
             line_widths.data(), symbol_colors.data(), symbol_scales.data(), symbol_numbers.data(), symbols.data());
  }

  static constexpr double kTextScale = 0.85;
  static constexpr double kLegendLine = 0.08;  // legend sample line, fraction of the viewport width

  const Figure& f_;
  Palette palette_;
  double char_mm_ = 3.5, px_per_mm_ = 90.0 / 25.4;
  double world_per_px_x_ = 1, world_per_px_y_ = 1, window_x0_ = 0, window_y0_ = 0;  // of the subplot being drawn
};

// Whether PLplot has its pngcairo driver (Debian: plplot-driver-cairo, a
// separate package): checked first so that its absence is an error naming
// the package rather than a failure inside plinit.
inline bool has_pngcairo() {
  PLINT n = 64;
  std::array<const char*, 64> menu{}, names{};
  const char** menu_p = menu.data();
  const char** names_p = names.data();
  plgDevs(&menu_p, &names_p, &n);
  for (PLINT i = 0; i < n; ++i)
    if (names[static_cast<std::size_t>(i)] && std::strcmp(names[static_cast<std::size_t>(i)], "pngcairo") == 0)
      return true;
  return false;
}

}  // namespace render_detail

// matplotlib's "tab10" cycle, the colours PPE's plots get by default.
PPE_DECL Color cycle_color(std::size_t i) {
  static constexpr std::uint32_t kTab10[10] = {0x1f77b4, 0xff7f0e, 0x2ca02c, 0xd62728, 0x9467bd,
                                               0x8c564b, 0xe377c2, 0x7f7f7f, 0xbcbd22, 0x17becf};
  const std::uint32_t c = kTab10[i % 10];
  return Color{static_cast<std::uint8_t>(c >> 16), static_cast<std::uint8_t>((c >> 8) & 0xff),
               static_cast<std::uint8_t>(c & 0xff), 1.0};
}

// matplotlib's one-character marker names (PPE's PlotReport passes its
// `marker` argument to matplotlib).
PPE_DECL Marker parse_marker(std::string_view spec) {
  if (spec.empty() || spec == "None" || spec == "none" || spec == " ") return Marker::None;
  if (spec.size() == 1) switch (spec[0]) {
      case '.': return Marker::Point;
      case ',': return Marker::Pixel;
      case 'o': return Marker::Circle;
      case 's': return Marker::Square;
      case 'D': return Marker::Diamond;
      case 'd': return Marker::ThinDiamond;
      case '^': return Marker::TriangleUp;
      case 'v': return Marker::TriangleDown;
      case '<': return Marker::TriangleLeft;
      case '>': return Marker::TriangleRight;
      case '*': return Marker::Star;
      case '+': return Marker::Plus;
      case 'x': return Marker::X;
      case '|': return Marker::VLine;
      case '_': return Marker::HLine;
      default: break;
    }
  throw std::invalid_argument("ppe::plot: unknown marker \"" + std::string(spec) +
                              "\"; supported (matplotlib's names): \".\", \",\", \"o\", \"s\", \"D\", \"d\", \"^\", "
                              "\"v\", \"<\", \">\", \"*\", \"+\", \"x\", \"|\", \"_\", or \"\" / \"None\" for none");
}

PPE_DECL Axes& Figure::at(int row, int col) {
  return const_cast<Axes&>(static_cast<const Figure&>(*this).at(row, col));
}

PPE_DECL const Axes& Figure::at(int row, int col) const {
  if (row < 0 || row >= rows || col < 0 || col >= cols)
    throw std::out_of_range("ppe::plot::Figure::at: subplot (" + std::to_string(row) + ", " + std::to_string(col) +
                            ") is outside the " + std::to_string(rows) + "x" + std::to_string(cols) + " grid");
  const std::size_t i = static_cast<std::size_t>(row) * static_cast<std::size_t>(cols) + static_cast<std::size_t>(col);
  if (i >= axes.size())
    throw std::out_of_range("ppe::plot::Figure::at: the figure has " + std::to_string(axes.size()) +
                            " subplots, not rows * cols = " + std::to_string(rows * cols));
  return axes[i];
}

// Every error a figure can have, found before PLplot is touched, so that a
// bad figure never leaves PLplot half way. The size limits keep a render's
// memory bounded.
PPE_DECL void check_figure(const Figure& f) {
  const auto fail = [](const std::string& what) { throw std::invalid_argument("ppe::plot::render_png: " + what); };
  if (f.width <= 0 || f.height <= 0 || f.width > 16384 || f.height > 16384)
    fail("the figure size must be 1 to 16384 pixels a side, got " + std::to_string(f.width) + "x" +
         std::to_string(f.height));
  if (f.rows <= 0 || f.cols <= 0 || f.rows > 64 || f.cols > 64)
    fail("rows and cols must be 1 to 64, got " + std::to_string(f.rows) + "x" + std::to_string(f.cols));
  if (f.axes.size() != static_cast<std::size_t>(f.rows * f.cols))
    fail("the figure has " + std::to_string(f.axes.size()) + " subplots, expected rows * cols = " +
         std::to_string(f.rows * f.cols));
  const auto check_alpha = [&](const Color& c, const std::string& where) {
    if (!(c.alpha >= 0.0 && c.alpha <= 1.0)) fail(where + ": the colour's alpha must be in [0, 1]");
  };
  const auto check_limits = [&](const std::optional<std::pair<double, double>>& l, const std::string& where) {
    if (l && !(std::isfinite(l->first) && std::isfinite(l->second) && l->first < l->second))
      fail(where + ": limits must be finite with low < high");
  };
  for (std::size_t i = 0; i < f.axes.size(); ++i) {
    const Axes& a = f.axes[i];
    const std::string where = "subplot " + std::to_string(i);
    check_limits(a.x_limits, where + " x_limits");
    check_limits(a.y_limits, where + " y_limits");
    for (const auto& s : a.series) {
      const std::string w = where + ", series \"" + s.label + "\"";
      if (s.x.size() != s.y.size())
        fail(w + ": x has " + std::to_string(s.x.size()) + " values, y " + std::to_string(s.y.size()));
      if (!(s.line_width >= 0.0 && s.line_width <= 100.0)) fail(w + ": line_width must be in [0, 100]");
      check_alpha(s.color, w);
    }
    for (const auto& b : a.bands) {
      const std::string w = where + ", band \"" + b.label + "\"";
      if (b.x.size() != b.lower.size() || b.x.size() != b.upper.size())
        fail(w + ": x, lower and upper have " + std::to_string(b.x.size()) + ", " + std::to_string(b.lower.size()) +
             " and " + std::to_string(b.upper.size()) + " values");
      check_alpha(b.color, w);
    }
  }
}

PPE_DECL std::string render_png(const Figure& figure) {
  using namespace render_detail;
  check_figure(figure);
  std::lock_guard lock(plplot_mutex());  // held until PLplot's state is restored
  if (!has_pngcairo())
    throw std::runtime_error(
        "ppe::plot::render_png: PLplot has no \"pngcairo\" device (install plplot-driver-cairo)");

  Sink sink;
  cookie_io_functions_t io{};
  io.write = &Sink::write;
  io.close = &Sink::close;
  FILE* out = fopencookie(&sink, "w", io);
  if (!out) throw std::runtime_error("ppe::plot::render_png: fopencookie failed");

  // A stream of our own (plmkstrm), so that a caller's PLplot stream is left
  // as it was; the handlers are process-wide, so they are put back after.
  PLINT previous = 0, stream = -1;
  plgstrm(&previous);
  plplot_error().clear();
  plsabort(&on_plplot_abort);
  plsexit(&on_plplot_exit);
  // Restores PLplot's default handlers and the caller's stream.
  struct Restore {
    PLINT previous;
    ~Restore() {
      plsabort(nullptr);
      plsexit(nullptr);
      plsstrm(previous);
    }
  } restore{previous};

  std::exception_ptr error;  // a failure while drawing: the stream is still ended first
  try {
    plmkstrm(&stream);
    if (stream < 0) {
      fclose(out);
      throw std::runtime_error("ppe::plot::render_png: PLplot could not create a stream (too many open streams)");
    }
    Renderer r(figure);
    try {
      r.setup(out);
      r.draw();
    } catch (const PlplotExit&) {
      throw;  // PLplot cannot go on: skip plend1 (below)
    } catch (...) {
      error = std::current_exception();
    }
    plend1();  // writes the PNG and closes `out`
    if (!error) Renderer::check("writing the PNG");
  } catch (const PlplotExit& e) {
    // The stream is not ended after a fatal error (PLplot's own handler
    // would end it and exit the process); its slot stays taken.
    if (!sink.closed) fclose(out);
    throw std::runtime_error("ppe::plot::render_png: PLplot failed: " + e.message);
  }
  if (!sink.closed) fclose(out);
  if (error) std::rethrow_exception(error);
  // Whatever went wrong unreported, a file that is not a PNG is an error
  // here rather than an unreadable file on disk.
  static constexpr char kSignature[] = "\x89PNG\r\n\x1a\n";
  if (sink.bytes.size() < 8 || sink.bytes.compare(0, 8, kSignature, 8) != 0)
    throw std::runtime_error("ppe::plot::render_png: PLplot's pngcairo device produced no PNG (" +
                             std::to_string(sink.bytes.size()) + " bytes)");
  return std::move(sink.bytes);
}

// A plot's file name, checked when the extension is made rather than at its
// first write: relative to the output directory, and ".png" (any case),
// since PNG is the only format rendered (PPE's matplotlib also wrote others).
PPE_DECL void check_png_filename(const std::string& filename, const char* who) {
  const auto bad = [&](const std::string& why) {
    throw std::invalid_argument(std::string(who) + ": bad filename \"" + filename + "\": " + why);
  };
  if (filename.empty()) bad("it is empty");
  if (filename.front() == '/') bad("it must be relative to the output directory");
  if (filename.back() == '/') bad("it names a directory");
  std::string ext = filename.size() >= 4 ? filename.substr(filename.size() - 4) : std::string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (ext != ".png" || filename.size() == 4 || filename[filename.size() - 5] == '/')
    bad("it must end in \".png\" (plots are rendered as PNG only)");
}

// The writer's save function for a figure: rendering happens where the
// writer saves (the plot extensions' default ThreadQueueWriter: off the
// training thread).
PPE_DECL writing::SaveFn png_save_fn(Figure figure) {
  return [figure = std::move(figure)](std::ostream& os) {
    const std::string png = render_png(figure);
    os.write(png.data(), static_cast<std::streamsize>(png.size()));
  };
}

}  // namespace ppe::training::extensions::plot
