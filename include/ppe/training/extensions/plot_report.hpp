#pragma once
/// \file
/// `ppe::training::extensions::PlotReport` (PPE's `PlotReport`): plots the
/// interval means of reported values against the iteration (or epoch, or
/// another value) into a PNG file, rendered with PLplot on a writer thread.
/// Feature: ppe::plot (Meson and pkg-config: ppe-plot).

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ppe/detail/arg.hpp"
#include "ppe/detail/config.hpp"
#include "ppe/reporting/dict_summary.hpp"
#include "ppe/state.hpp"
#include "ppe/training/extension.hpp"
#include "ppe/training/extensions/detail/png_plot.hpp"
#include "ppe/training/manager.hpp"
#include "ppe/training/triggers/interval_trigger.hpp"
#include "ppe/writing/writer.hpp"

namespace ppe::training::extensions {

/// Options of a PlotReport (PPE's constructor arguments but `y_keys`).
struct PlotReportOptions {
  /// The value on the x axis: `"iteration"`, `"epoch"` or one of the y keys
  /// (its interval mean).
  PPE_ARG(std::string, x_key) = "iteration";
  /// When to add a point per key and redraw (PPE's `trigger`; distinct from
  /// the extension's own trigger, which decides when values are accumulated).
  PPE_ARG(triggers::IntervalTrigger, trigger) = ppe::epochs(1);
  /// Called with the figure before each render (on the training thread); may
  /// change it: add series or bands, set labels, limits, legend place, size.
  /// (PPE's `postprocess(figure, axes, summary)`.)
  PPE_ARG(std::function<void(plot::Figure&)>, postprocess);
  /// The PNG file under the writer's directory (PPE's `filename`); must end
  /// in `.png`.
  PPE_ARG(std::string, filename) = "plot.png";
  /// matplotlib's marker name (`"x"`, `"o"`, `"."`, ...; `""` for none): see
  /// `plot::parse_marker`.
  PPE_ARG(std::string, marker) = "x";
  /// Draw the grid.
  PPE_ARG(bool, grid) = true;
  /// The writer; null: a `ThreadQueueWriter` of the PlotReport's own, in the
  /// manager's output directory, so that rendering never runs on the training
  /// thread. A synchronous writer (e.g. `SimpleWriter`) renders in the call.
  PPE_ARG(std::shared_ptr<writing::Writer>, writer);
  /// The rank that plots in distributed training; unset: every rank.
  PPE_ARG(std::optional<int>, rank) = 0;
};

/// Plots the interval means of `y_keys` into a PNG (PPE's `PlotReport`).
///
/// Each call adds the values reported under the y keys to a summary. When
/// `options.trigger()` fires (by default every epoch), or before training,
/// the summary's means become one point `(x, mean)` per key that was
/// reported during the interval, x being the manager's iteration or epoch,
/// or the mean of `x_key`; the summary restarts. The whole history is then
/// plotted: one line with markers per key (matplotlib's colour cycle), the
/// legend right of the plot, the grid, `x_key` as the x label; `postprocess`
/// may change the figure; the PNG goes through the writer.
///
/// Not stalling training: the call copies the points into a `plot::Figure`
/// (10,000 points: about 0.1 ms) and hands it to the writer;
/// PLplot renders it on the writer's thread (`benchmarks/bench_plot`).
/// Renders are serialised process-wide (PLplot has global state). A failed
/// render leaves the previous PNG in place and is raised by a later call or
/// by `finalize()` (the writer's error rules).
///
/// When none of the keys has a point yet, `ppe::warn` says so and nothing is
/// written (PPE prints a warning). A missing `x_key` at an emission is a
/// `std::out_of_range` naming it and the keys present. The y keys and a
/// reported `x_key` are `consumed_keys()`, so the manager's report-key check
/// names a key that is never reported.
///
/// State (PPE's layout): `{"_plot_<filename>": json.dumps(data)}`, data being
/// `{key: [[x, y], ...]}` for every y key in order. Loading restores the
/// points of the y keys; keys of the state that are not y keys are ignored.
/// The summary of a partial interval is not saved (as PPE).
///
/// Differences from PPE: the figure is rendered by PLplot, not matplotlib
/// (same layout, colours, markers; fixed 640x480 pixels, the legend inside
/// the image instead of enlarging it); `postprocess` receives the figure
/// description; `filename` must end in `.png`; the default writer is a
/// thread of the PlotReport's own; only `rank` 0 plots by default.
class PlotReport {
 public:
  using extension_concept = extension_tag;
  static constexpr std::string_view default_name = "PlotReport";
  static constexpr int priority = kPriorityReader;
  static auto default_trigger() { return ppe::iterations(1); }

  /// Checks the keys (at least one, none empty or repeated), the file name
  /// and the marker: `std::invalid_argument` naming what is wrong.
  explicit PlotReport(std::vector<std::string> y_keys, PlotReportOptions options = {});
  /// `PlotReport({"main/loss", "val/loss"})`.
  explicit PlotReport(std::initializer_list<std::string> y_keys, PlotReportOptions options = {})
      : PlotReport(std::vector<std::string>(y_keys), std::move(options)) {}
  /// One y key.
  explicit PlotReport(std::string y_key, PlotReportOptions options = {})
      : PlotReport(std::vector<std::string>{std::move(y_key)}, std::move(options)) {}
  explicit PlotReport(const char* y_key, PlotReportOptions options = {})
      : PlotReport(std::string(y_key), std::move(options)) {}

  PlotReport(PlotReport&&) noexcept;
  PlotReport& operator=(PlotReport&&) noexcept;
  ~PlotReport();

  void operator()(Manager& m) {
    if (rank_ && *rank_ != m.rank()) return;
    const reporting::Observation& obs = m.observation();
    for (const auto& k : y_keys_)
      if (const reporting::Value* v = obs.find(k)) summary_.add(k, *v);
    if (m.is_before_training() || trigger_(m)) emit(m);
  }

  /// Waits for the pending renders of the PlotReport's writer (its own, or
  /// the one given); raises a failed one.
  void finalize(Manager&);

  /// `{"_plot_<filename>": JSON string}` (PPE's layout).
  State state_dict() const;
  void load_state_dict(const State& state);

  /// One plotted point: x is an integer for iteration and epoch.
  struct Point {
    double x = 0, y = 0;
    bool x_is_int = false;
  };
  /// The points of `key` (empty for a key that is not a y key).
  const std::vector<Point>& data(std::string_view key) const;
  const std::vector<std::string>& y_keys() const noexcept { return y_keys_; }
  const std::string& x_key() const noexcept { return x_key_; }
  const std::string& filename() const noexcept { return filename_; }
  /// The figure the next emission would render (for tests and custom output).
  plot::Figure figure() const;
  /// The keys the manager's report-key check expects: the y keys, and
  /// `x_key` unless it is `"iteration"` or `"epoch"`.
  std::vector<std::string> consumed_keys() const;

 private:
  void emit(Manager& m);

  std::vector<std::string> y_keys_;
  std::string x_key_;
  triggers::IntervalTrigger trigger_;
  std::function<void(plot::Figure&)> postprocess_;
  std::string filename_;
  plot::Marker marker_;
  bool grid_;
  std::shared_ptr<writing::Writer> writer_;
  std::optional<int> rank_;
  reporting::DictSummary summary_;
  std::vector<std::vector<Point>> data_;  // per y key, in order
};

namespace detail {
/// `json.dumps(data)` of PlotReport's points: `{"k": [[1, 0.5], ...], ...}`.
PPE_DECL std::string plot_data_to_json(const std::vector<std::string>& keys,
                                       const std::vector<std::vector<PlotReport::Point>>& data);
/// Parses `plot_data_to_json`'s text (or PPE's, with NaN and Infinity).
PPE_DECL std::vector<std::pair<std::string, std::vector<PlotReport::Point>>> plot_data_from_json(
    const std::string& text);
}  // namespace detail

}  // namespace ppe::training::extensions

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/training/extensions/impl/plot_report.ipp"
#endif
