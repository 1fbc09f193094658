#pragma once
/// \file
/// `ppe::training::extensions::VariableStatisticsPlot` (PPE's extension of
/// the same name): statistics of tensors (parameters and their gradients) at
/// every call, reservoir-sampled, plotted into a PNG with PLplot on a writer
/// thread. Also its helpers `variable_statistics_plot::Reservoir` and
/// `variable_statistics_plot::Statistician` (PPE's module-level classes).
/// Feature: ppe::plot (Meson and pkg-config: ppe-plot).

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "ppe/detail/arg.hpp"
#include "ppe/detail/config.hpp"
#include "ppe/state.hpp"
#include "ppe/training/extension.hpp"
#include "ppe/training/extensions/detail/png_plot.hpp"
#include "ppe/training/extensions/parameter_statistics.hpp"
#include "ppe/training/manager.hpp"
#include "ppe/training/triggers/interval_trigger.hpp"
#include "ppe/writing/writer.hpp"

namespace ppe::training::extensions::variable_statistics_plot {

/// A uniform sample of at most `size` of the values added (reservoir
/// sampling, PPE's `Reservoir`), each a tensor of `data_shape`, kept as
/// float32 on the device of the first value added: adding needs no host
/// synchronisation. The first `size` values are kept; the n-th after them
/// (counting from 1) replaces a random one with probability size / n.
class Reservoir {
 public:
  /// `seed` seeds the sampling's random numbers (PPE uses NumPy's global
  /// generator). `size` must be >= 1.
  Reservoir(std::int64_t size, std::vector<std::int64_t> data_shape, std::uint64_t seed = 0);

  /// Adds `x` (of `data_shape`, else `std::invalid_argument`) under the index
  /// `idx`; an unset or zero `idx` is the count of values added before (PPE's
  /// `idx or self.counter`).
  void add(const at::Tensor& x, std::optional<std::int64_t> idx = std::nullopt);

  /// The kept indexes in increasing order and the values in that order,
  /// `[n, data_shape...]` on the values' device.
  std::pair<std::vector<std::int64_t>, at::Tensor> get_data() const;

  std::int64_t size() const noexcept { return size_; }
  /// How many values were added.
  std::int64_t counter() const noexcept { return counter_; }
  const std::vector<std::int64_t>& data_shape() const noexcept { return shape_; }

  /// `{"counter", "idxs" (int64 tensor), "data" (float32 tensor)}` of the kept values.
  State state_dict() const;
  void load_state_dict(const State& state);

 private:
  std::int64_t size_;
  std::vector<std::int64_t> shape_;
  std::mt19937_64 rng_;
  std::vector<std::int64_t> idxs_;  // per slot in use
  at::Tensor data_;                 // [size, shape...], allocated by the first add
  std::int64_t counter_ = 0;
};

/// Statistics of a tensor's values (PPE's `Statistician`): mean, std
/// (unbiased, as `torch.std`) and the percentiles at `percentile_sigmas`
/// (in percent, linear interpolation as `numpy.percentile`), each if asked.
class Statistician {
 public:
  /// Percentiles must lie in [0, 100] (`std::invalid_argument`).
  Statistician(bool collect_mean, bool collect_std, std::vector<double> percentile_sigmas);
  /// The statistics of all of `x`'s values as a 1-D tensor `[mean, std,
  /// percentiles...]` (those collected), in `x`'s floating type (float32 for
  /// other types) on its device. Of an empty tensor: NaN.
  at::Tensor operator()(const at::Tensor& x) const;
  /// How many values `operator()` returns.
  std::int64_t width() const noexcept {
    return static_cast<std::int64_t>(mean_) + static_cast<std::int64_t>(std_) +
           static_cast<std::int64_t>(q_.size());
  }

 private:
  bool mean_, std_;
  std::vector<double> q_;  // fractions
};

}  // namespace ppe::training::extensions::variable_statistics_plot

namespace ppe::training::extensions {

/// Options of a VariableStatisticsPlot (PPE's arguments but the targets).
struct VariableStatisticsPlotOptions {
  /// Width and height in pixels.
  using Size = std::pair<int, int>;
  /// The reservoir's size: at most this many calls are plotted.
  PPE_ARG(std::int64_t, max_sample_size) = 1000;
  /// Plot statistics of the targets' values (column `data`).
  PPE_ARG(bool, report_data) = true;
  /// Plot statistics of the targets' gradients (column `grad`).
  PPE_ARG(bool, report_grad) = true;
  /// Plot the mean.
  PPE_ARG(bool, plot_mean) = true;
  /// Plot the standard deviation (with the mean: as a band around it).
  PPE_ARG(bool, plot_std) = true;
  /// The percentiles to plot, in percent; empty: none. PPE's default: those
  /// of -3σ ... +3σ of a normal distribution, with the minimum and maximum.
  PPE_ARG(std::vector<double>, percentile_sigmas) = {0, 0.13, 2.28, 15.87, 50, 84.13, 97.72, 99.87, 100};
  /// When to plot (distinct from the extension's own trigger, which decides
  /// when statistics are sampled).
  PPE_ARG(triggers::IntervalTrigger, trigger) = ppe::epochs(1);
  /// The PNG file under the writer's directory; must end in `.png`.
  PPE_ARG(std::string, filename) = "statistics.png";
  /// The image's width and height in pixels (PPE: inches); unset: 640 x 480,
  /// matplotlib's default.
  PPE_ARG(std::optional<Size>, figsize);
  /// matplotlib's marker name for the lines; `""`: none (PPE's None).
  PPE_ARG(std::string, marker);
  /// Draw the grids.
  PPE_ARG(bool, grid) = true;
  /// The writer; null: a `ThreadQueueWriter` of the extension's own in the
  /// manager's output directory (rendering off the training thread).
  PPE_ARG(std::shared_ptr<writing::Writer>, writer);
  /// Seed of the reservoir's sampling.
  PPE_ARG(std::uint64_t, seed) = 0;
  /// The rank that plots in distributed training; unset: every rank.
  PPE_ARG(std::optional<int>, rank) = 0;
};

namespace detail {
/// The parameters of the modules, in order (PPE: `module.parameters()`).
PPE_DECL std::vector<at::Tensor> parameters_of(const std::vector<std::shared_ptr<torch::nn::Module>>& modules);
}  // namespace detail

/// Plots statistics of tensors over training (PPE's `VariableStatisticsPlot`).
///
/// Targets: a module (its parameters), a list of modules, a tensor or a list
/// of tensors; fixed at construction. Each call computes, for the targets'
/// values (`data`) and for their gradients (`grad`, of those that have one),
/// all flattened into one vector, the statistics asked for (mean, std,
/// percentiles); a kind with no tensor gets zeros (as PPE). The statistics
/// are computed and stored on the targets' device: a call makes no host
/// synchronisation. The reservoir keeps a uniform sample of at most
/// `max_sample_size` calls, with the manager's iteration as index.
///
/// When `trigger` fires, the sample is read (one host transfer) and plotted:
/// one column per kind (`data`, `grad`, titled so), a row with the mean
/// (label "mean", or "mean, std" with the standard deviation as a
/// translucent band around it; "std" alone when only it is asked for) and a
/// row with the percentiles: bands between symmetric pairs (the first and
/// last, the second and second last, ...), overlapping so that the middle is
/// darker, and the median as a line when their number is odd; x label
/// "iteration". The PNG is rendered on the writer's thread (see PlotReport).
///
/// State: `{"_trigger", "_samples": the reservoir}` (PPE saves nothing; its
/// empty state loads as a no-op). The sampling's random generator restarts
/// from the seed.
///
/// Differences from PPE: the standard deviation is a band, not error bars;
/// `figsize` is in pixels; rendering by PLplot off the training thread;
/// the state keeps the sample.
class VariableStatisticsPlot {
 public:
  using extension_concept = extension_tag;
  static constexpr std::string_view default_name = "VariableStatisticsPlot";
  static constexpr int priority = kPriorityReader;
  static auto default_trigger() { return ppe::iterations(1); }

  /// Tensors (parameters or any others). At least one; something to plot
  /// (mean, std or percentiles), a kind to plot (data or grad), a `.png` file
  /// name, a known marker, percentiles in [0, 100]: else `std::invalid_argument`.
  explicit VariableStatisticsPlot(std::vector<at::Tensor> targets, VariableStatisticsPlotOptions options = {});
  explicit VariableStatisticsPlot(const at::Tensor& target, VariableStatisticsPlotOptions options = {})
      : VariableStatisticsPlot(std::vector<at::Tensor>{target}, std::move(options)) {}
  /// A module (holder or `std::shared_ptr`) or a range of them: their parameters.
  template <class L>
    requires(!std::is_same_v<std::remove_cvref_t<L>, VariableStatisticsPlot> &&
             !std::is_convertible_v<L &&, const at::Tensor&> &&
             !std::is_convertible_v<L &&, std::vector<at::Tensor>>)
  explicit VariableStatisticsPlot(L&& modules, VariableStatisticsPlotOptions options = {})
      : VariableStatisticsPlot(detail::parameters_of(detail::observed_modules(std::forward<L>(modules))),
                               std::move(options)) {}
  /// Several modules of different types: `VariableStatisticsPlot({encoder, decoder})`.
  explicit VariableStatisticsPlot(std::initializer_list<detail::ObservedModule> modules,
                                  VariableStatisticsPlotOptions options = {})
      : VariableStatisticsPlot(detail::parameters_of(detail::observed_modules(modules)), std::move(options)) {}

  VariableStatisticsPlot(VariableStatisticsPlot&&) noexcept;
  VariableStatisticsPlot& operator=(VariableStatisticsPlot&&) noexcept;
  ~VariableStatisticsPlot();

  void operator()(Manager& m);
  /// Waits for the pending renders; raises a failed one.
  void finalize(Manager&);

  State state_dict() const;
  void load_state_dict(const State& state);

  /// The figure of the current sample (one host transfer).
  plot::Figure figure() const;
  /// `"data"` and/or `"grad"`, the columns.
  const std::vector<std::string>& keys() const noexcept { return keys_; }
  const variable_statistics_plot::Reservoir& samples() const noexcept { return samples_; }

 private:
  std::vector<at::Tensor> vars_;
  std::vector<std::string> keys_;
  variable_statistics_plot::Statistician statistician_;
  bool plot_mean_, plot_std_;
  std::int64_t n_percentile_;
  triggers::IntervalTrigger trigger_;
  std::string filename_;
  int width_, height_;
  plot::Marker marker_;
  bool grid_;
  std::shared_ptr<writing::Writer> writer_;
  std::optional<int> rank_;
  variable_statistics_plot::Reservoir samples_;
};

}  // namespace ppe::training::extensions

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/training/extensions/impl/variable_statistics_plot.ipp"
#endif
