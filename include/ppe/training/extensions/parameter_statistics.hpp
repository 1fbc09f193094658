#pragma once
/// \file
/// `ppe::training::extensions::ParameterStatistics` (PPE's extension of the
/// same name): statistics of the parameters of modules and of their
/// gradients (mean, std, min, max, zeros, or your own), averaged over an
/// interval and reported as `<prefix>/<parameter>/<data|grad>/<statistic>`.

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <ranges>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "ppe/detail/arg.hpp"
#include "ppe/detail/config.hpp"
#include "ppe/state.hpp"
#include "ppe/training/extension.hpp"
#include "ppe/training/manager.hpp"
#include "ppe/training/trigger.hpp"
#include "ppe/training/triggers/interval_trigger.hpp"

namespace torch::nn {
class Module;
}  // namespace torch::nn

namespace ppe::training::extensions {

/// A statistic of a tensor's values: given them flattened to one dimension,
/// returns one value (a 0-dim or one-element tensor) or several (a 1-D
/// tensor; reported under the keys `.../<name>/0`, `.../<name>/1`, ...).
/// It should stay on the tensor's device and not read values on the host,
/// so that the extension synchronises once per report, not per statistic.
using StatisticFunction = std::function<at::Tensor(const at::Tensor&)>;

/// A named statistic (an entry of PPE's `statistics` dictionary).
struct Statistic {
  std::string name;
  StatisticFunction function;
};
using Statistics = std::vector<Statistic>;

/// PPE's default statistics, in its order: `mean`, `std` (unbiased, as
/// `torch.std`), `min`, `max`, `zeros` (the number of zeros). Of an empty
/// tensor: `mean`, `std`, `min`, `max` are NaN and `zeros` is 0 (PPE raises
/// on `min` of an empty tensor).
PPE_DECL Statistics default_parameter_statistics();

/// PPE's commented-out `percentile` statistic (Chainer's default): the
/// percentiles at `sigmas` (in percent; by default those of -3σ ... +3σ of
/// a normal distribution), by linear interpolation as `numpy.percentile`
/// and `torch.quantile`. NaN values make every percentile NaN; those of an
/// empty tensor are NaN. Register it with `register_statistics("percentile",
/// percentile_statistic())`, or add it to the options' list.
PPE_DECL StatisticFunction percentile_statistic(std::vector<double> sigmas = {0.13, 2.28, 15.87, 50.0, 84.13, 97.72,
                                                                              99.87});

/// Options of a ParameterStatistics (PPE's arguments but the modules and the
/// trigger).
struct ParameterStatisticsOptions {
  /// The statistics, in report order (PPE's `statistics`; its `"default"` is
  /// `default_parameter_statistics()`, its `None` an empty list).
  PPE_ARG(Statistics, statistics) = default_parameter_statistics();
  /// Report statistics of the parameters' values (key part `data`).
  PPE_ARG(bool, report_params) = true;
  /// Report statistics of the gradients (key part `grad`), of the parameters
  /// that have one.
  PPE_ARG(bool, report_grads) = true;
  /// Prepended to the keys with a `/` (PPE's `prefix`; empty: none).
  PPE_ARG(std::string, prefix);
  /// Report NaN for every statistic of a tensor that holds a NaN (PPE's
  /// `skip_nan_params`), instead of computing them on it.
  PPE_ARG(bool, skip_nan_params) = false;
};

namespace detail {

/// One observed module: a LibTorch module holder (`torch::nn::Linear`,
/// `TORCH_MODULE` types) or a `std::shared_ptr` to a module.
struct ObservedModule {
  template <class H>
    requires(!std::is_same_v<std::remove_cvref_t<H>, ObservedModule> &&
             (requires(H& h) { h.ptr(); } || requires(H& h) { h->named_parameters(); }))
  ObservedModule(H&& holder) {
    if constexpr (requires { holder.ptr(); })
      module = holder.ptr();
    else
      module = holder;
  }
  std::shared_ptr<torch::nn::Module> module;
};

/// `links` as a list of modules: one module, or a range of them.
template <class L>
std::vector<std::shared_ptr<torch::nn::Module>> observed_modules(L&& links) {
  std::vector<std::shared_ptr<torch::nn::Module>> out;
  if constexpr (std::is_constructible_v<ObservedModule, L&&>) {
    out.push_back(ObservedModule(std::forward<L>(links)).module);
  } else {
    static_assert(std::ranges::range<L>,
                  "ppe::ParameterStatistics: the modules must be a module (a torch::nn module holder such as "
                  "torch::nn::Linear, or a std::shared_ptr to a module) or a list of them");
    for (auto&& link : links) out.push_back(ObservedModule(link).module);
  }
  return out;
}

/// The work of a ParameterStatistics that does not depend on its trigger:
/// the statistics of one call, added up on the device over an interval,
/// and the report of their means.
class ParameterStatisticsCore {
 public:
  ParameterStatisticsCore(std::vector<std::shared_ptr<torch::nn::Module>> links, ParameterStatisticsOptions options);

  /// Computes this call's statistics and adds them to the interval's sums,
  /// on the parameters' device, without a host synchronisation.
  void add();
  /// Reports the interval's means (one host transfer) through the current
  /// reporter, then starts a new interval.
  void report();

  /// `{key: {"_x", "_x2", "_n"}}` (PPE's `DictSummary` layout) of the
  /// current interval.
  State summary_state() const;
  /// Restores `summary_state()`'s content (checked before anything changes).
  void load_summary_state(const State& state);

  /// Adds a statistic, or replaces the one with that name in place (PPE's
  /// `register_statistics`).
  void register_statistics(std::string name, StatisticFunction function);
  const Statistics& statistics() const noexcept { return statistics_; }
  /// The modules observed.
  const std::vector<std::shared_ptr<torch::nn::Module>>& links() const noexcept { return links_; }
  /// The calls added since the last report.
  std::int64_t pending_calls() const noexcept { return calls_; }

 private:
  // A (parameter, data or grad) pair whose statistics a call computed.
  struct Group {
    std::size_t link;
    std::string name;
    bool grad;
    bool operator==(const Group&) const = default;
  };
  // The interval's sums of a layout that is no longer the current one (or
  // loaded from a state), by key.
  struct HostSum {
    std::string key;
    double x = 0, x2 = 0;
    std::int64_t n = 0;
  };

  // Makes the call's groups and widths the layout of the device sums:
  // moves the sums of the previous layout to host_ first.
  void relayout();
  // Adds the device sums to host_ and clears them.
  void fold();
  // The device sums and squares as one host tensor [2, keys] (one transfer).
  at::Tensor device_sums_on_host() const;
  HostSum& host_sum(const std::string& key);

  std::vector<std::shared_ptr<torch::nn::Module>> links_;
  Statistics statistics_;
  bool report_params_, report_grads_, skip_nan_;
  std::string prefix_;

  // The layout of sum_ and sq_: groups in call order, the width of each
  // (group, statistic), and one key per element.
  std::vector<Group> groups_;
  std::vector<std::int64_t> widths_;
  std::vector<std::string> keys_;
  at::Tensor sum_, sq_;  // float64 on the parameters' device: sums of the values and of their squares
  std::int64_t count_ = 0;  // calls added to sum_ and sq_
  std::vector<HostSum> host_;
  std::int64_t calls_ = 0;

  // Reused by add().
  std::vector<Group> call_groups_;
  std::vector<std::int64_t> call_widths_;
  std::vector<at::Tensor> values_;
};

}  // namespace detail

/// Reports statistics of the parameters of `links` (a module or a list of
/// modules) and of their gradients (PPE's `ParameterStatistics`).
///
/// Each call computes every statistic of every parameter's values (key part
/// `data`) and gradient (`grad`; parameters without a gradient yet have no
/// `grad` keys), flattened to one dimension, and adds them up; when
/// `trigger` (by default every epoch; distinct from the extension's own
/// trigger, every iteration) fires, the means over the calls since the last
/// report are reported through `ppe::reporting::report` as doubles, under
/// `<prefix>/<parameter name>/<data|grad>/<statistic>[/<index>]` (the
/// prefix part only when `prefix` is not empty; parameter names dotted as
/// `named_parameters()` gives them, e.g. `pre/0.weight/data/mean`).
///
/// Cost: the statistics are computed on the parameters' device and added to
/// a float64 sum there, with no host synchronisation; a report reads all the
/// sums in one transfer. With its own trigger an interval (e.g.
/// `entry(ParameterStatistics(...), ppe::iterations(100))`), the quiet
/// iterations cost only the manager's trigger check.
///
/// Two modules that give the same key (two `Linear`s both have `weight`;
/// PPE keeps the last one's) are a `std::invalid_argument` at the first
/// call: observe them through one parent module, or with two extensions of
/// different prefixes.
///
/// State: `{"_trigger": the trigger's state, "_summary": {key: {"_x", "_x2",
/// "_n"}}}` (the sums of the current interval; PPE saves nothing). PPE's
/// empty state loads as a no-op.
template <class Trigger = triggers::IntervalTrigger>
class ParameterStatistics {
  static_assert(trigger<Trigger>, "ppe::ParameterStatistics: the trigger must be a trigger type");

 public:
  using extension_concept = extension_tag;
  static constexpr std::string_view default_name = "parameter_statistics";
  static constexpr int priority = kPriorityWriter;
  static auto default_trigger() { return ppe::iterations(1); }

  /// `links`: a module (holder or `std::shared_ptr`) or a range of them.
  template <class L>
    requires(!std::is_same_v<std::remove_cvref_t<L>, ParameterStatistics>)
  explicit ParameterStatistics(L&& links, ParameterStatisticsOptions options = {}, Trigger trigger = ppe::epochs(1))
      : core_(detail::observed_modules(std::forward<L>(links)), std::move(options)), trigger_(std::move(trigger)) {}
  /// Several modules of different types: `ParameterStatistics({encoder, decoder})`.
  explicit ParameterStatistics(std::initializer_list<detail::ObservedModule> links,
                               ParameterStatisticsOptions options = {}, Trigger trigger = ppe::epochs(1))
      : core_(detail::observed_modules(links), std::move(options)), trigger_(std::move(trigger)) {}

  void operator()(Manager& manager) {
    core_.add();
    if (static_cast<bool>(trigger_(manager))) core_.report();
  }

  /// Adds a statistic, or replaces the one of that name in place (PPE's
  /// `register_statistics`).
  void register_statistics(std::string name, StatisticFunction function) {
    core_.register_statistics(std::move(name), std::move(function));
  }
  const Statistics& statistics() const noexcept { return core_.statistics(); }
  /// The trigger that ends an interval.
  const Trigger& trigger() const noexcept { return trigger_; }
  /// The calls added since the last report.
  std::int64_t pending_calls() const noexcept { return core_.pending_calls(); }

  State state_dict() const {
    return State::dict({{"_trigger", trigger_state_dict(trigger_)}, {"_summary", core_.summary_state()}});
  }
  /// Restores `state_dict()`'s state; PPE's (empty) state changes nothing.
  void load_state_dict(const State& state) {
    if (const State* s = state.find("_summary")) core_.load_summary_state(*s);
    if (const State* t = state.find("_trigger")) trigger_load_state_dict(trigger_, *t);
  }

 private:
  detail::ParameterStatisticsCore core_;
  Trigger trigger_;
};

}  // namespace ppe::training::extensions

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/training/extensions/impl/parameter_statistics.ipp"
#endif
