#pragma once
/// \file
/// `ppe::training::extensions::Evaluator` (PPE's `ppe.training.extensions.Evaluator`):
/// an extension that evaluates models on a validation loader and reports the
/// means (or other reductions) of what was reported during the evaluation.
///
/// ```cpp
/// namespace ext = ppe::training::extensions;
/// auto manager = ppe::training::ExtensionsManager(options, model, optimizer,
///     ext::Evaluator(val_loader, model),          // every epoch; "validation/main/loss"
///     ext::LogReport(), ext::PrintReport({"epoch", "main/loss", "validation/main/loss"}));
/// ```
///
/// One evaluation (a call):
/// 1. a fresh `Reporter` is made current, with each target registered as an
///    observer under `<name>/<target>` and its submodules under
///    `<name>/<target>/<child>` (PPE forgets the `/` before the child); `<name>`
///    is the name the manager registered the evaluator under ("validation" by
///    default), and empty when the evaluator is called without a manager;
/// 2. `eval_hook(evaluator)` runs, if set;
/// 3. with gradients off and every target in eval mode (the mode of each
///    target and each of its submodules is restored afterwards, also on
///    errors), for each batch: a fresh observation
///    is made current, the evaluation function is called on the batch, then
///    every metric as `metric(batch, outputs, last_batch)`, and the
///    observation is added to the summary;
/// 4. the summary is reduced per key (mean by default; `EvaluatorOptions::reducer`)
///    and the result is reported into the manager's observation (without a
///    prefix: the keys already carry the observer names) and returned.
///
/// The evaluation function (`eval_func`, by default the target module itself)
/// is called on a batch as PPE calls it: a `torch::data::Example` as
/// `f(data, target)` (`f(data)` without a target), a `std::tuple`/`std::pair`
/// as `f(elements...)`, anything else (a tensor, a name→tensor map, a vector)
/// as `f(batch)`; when the unpacked form does not compile, the whole batch is
/// passed. A module is called through `forward`.

#include <ATen/core/grad_mode.h>

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <iostream>
#include <iterator>
#include <memory>
#include <optional>
#include <ostream>
#include <ranges>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "ppe/detail/arg.hpp"
#include "ppe/detail/batch.hpp"
#include "ppe/detail/dependent.hpp"
#include "ppe/detail/each_batch.hpp"
#include "ppe/detail/python_repr.hpp"
#include "ppe/reporting/observation.hpp"
#include "ppe/reporting/reporter.hpp"
#include "ppe/reporting/value.hpp"
#include "ppe/training/extension.hpp"
#include "ppe/training/extensions/detail/progress.hpp"
#include "ppe/training/manager.hpp"
#include "ppe/training/metrics.hpp"
#include "ppe/training/models.hpp"
#include "ppe/training/triggers/interval_trigger.hpp"

namespace ppe::training::extensions {

class EvaluatorBase;

/// Options of an `Evaluator` (PPE's keyword arguments, plus reducers and the
/// display's stream).
struct EvaluatorOptions {
  /// (PPE_ARG spells `const T&`: a pointer type needs a name to stay `T* const&`.)
  using OStreamPtr = std::ostream*;

  /// Called with the evaluator before each evaluation (PPE's `eval_hook`),
  /// e.g. to reset the state of a recurrent model.
  PPE_ARG(std::function<void(EvaluatorBase&)>, eval_hook);
  /// Shows the progress of the pass over the loader (PPE's `progress_bar`).
  PPE_ARG(bool, progress_bar) = false;
  /// The progress bar's stream; not owned, must outlive the evaluator.
  PPE_ARG(OStreamPtr, out) = &std::cout;
  /// Forces the progress bar's terminal display (`true`) or line display
  /// (`false`); unset: decided from the stream (`ppe::detail::is_terminal`).
  PPE_ARG(std::optional<bool>, terminal);
  /// Batches per pass, for the progress bar, when the loader has no `size()`
  /// (a LibTorch data loader has none); otherwise the first pass counts them
  /// and later passes use that count. Must be >= 0.
  PPE_ARG(std::optional<std::int64_t>, num_batches);
  /// Seconds on a monotonic clock for the progress bar's speed; null: the
  /// manager's clock when called by a manager, else `std::chrono::steady_clock`.
  PPE_ARG(std::function<double()>, clock);
  /// The reducer of keys that have none of their own (default: mean, as PPE).
  PPE_ARG(metrics::Reducer, default_reducer) = metrics::Reducer::mean();
  /// Distributed evaluation: combines the ranks' per-batch observations before
  /// they are reduced (`ppe::distributed::distributed_evaluation` sets it;
  /// empty: this process's only).
  PPE_ARG(metrics::Gather, gather);

 public:
  /// Reduces the per-batch values of `key` with `reducer` (Determined's
  /// reducers): `key` is the key as reported during the evaluation, with its
  /// observer prefix (`"validation/main/correct"`, or `"correct"` for a value
  /// reported without an observer). Setting a key twice replaces its reducer.
  EvaluatorOptions& reducer(std::string key, metrics::Reducer reducer) {
    reducers_.set(std::move(key), std::move(reducer));
    return *this;
  }
  const std::vector<metrics::ReducerList::Item>& reducers() const noexcept { return reducers_.items(); }

 private:
  metrics::ReducerList reducers_;
};

/// What every evaluator has, whatever its loader and evaluation function: the
/// targets, the name, the hook, the options. `eval_hook` receives this.
class EvaluatorBase {
 public:
  /// The name the evaluator reports under: set by the manager it is registered
  /// with (at `initialize`, or at the first call), or by `set_name`; empty
  /// until then (no prefix, as PPE's `name = None`).
  const std::string& name() const noexcept { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }

  /// The target named `name` ("main" for a single target).
  const std::shared_ptr<torch::nn::Module>& get_target(std::string_view name) const {
    if (const ModelRef* m = targets_.find(name)) return m->module();
    throw std::out_of_range("ppe: Evaluator has no target named '" + std::string(name) +
                            "'; targets: " + ppe::detail::python_str_list(targets_.names()));
  }
  /// All targets.
  const Models& targets() const noexcept { return targets_; }

  /// PPE's `eval_hook` attribute.
  const std::function<void(EvaluatorBase&)>& eval_hook() const noexcept { return options_.eval_hook(); }
  void set_eval_hook(std::function<void(EvaluatorBase&)> hook) { options_.eval_hook(std::move(hook)); }

  const EvaluatorOptions& options() const noexcept { return options_; }

 protected:
  EvaluatorBase(Models targets, EvaluatorOptions options) : targets_(std::move(targets)), options_(std::move(options)) {
    if (options_.out() == nullptr)
      throw std::invalid_argument("ppe: Evaluator out must be a stream, got a null pointer");
    if (options_.num_batches() && *options_.num_batches() < 0)
      throw std::invalid_argument("ppe: Evaluator num_batches must be >= 0, got " +
                                  std::to_string(*options_.num_batches()));
  }
  EvaluatorBase(const EvaluatorBase&) = default;
  EvaluatorBase(EvaluatorBase&&) = default;
  EvaluatorBase& operator=(const EvaluatorBase&) = default;
  EvaluatorBase& operator=(EvaluatorBase&&) = default;
  ~EvaluatorBase() = default;

  /// Registers the targets and their submodules as observers of `reporter`
  /// under `<name>/<target>` (PPE's `__call__`, with the `/` PPE forgets).
  void add_observers(reporting::Reporter& reporter) const {
    for (const auto& [tname, ref] : targets_) {
      const std::string observer = name_.empty() ? tname : name_ + "/" + tname;
      reporter.add_observer(observer, ref.module());
      reporter.add_observers(observer, ref.submodules());
    }
  }

  /// The clock of the progress bar.
  std::function<double()> progress_clock() const {
    if (options_.clock()) return options_.clock();
    if (manager_clock_) return manager_clock_;
    return [] { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); };
  }

  /// Reports `result` into `manager`'s observation: through the current
  /// reporter when it is the manager's (inside `run_iteration`), else directly.
  static void report_to(Manager& manager, const reporting::Observation& result) {
    if (reporting::Reporter::current() == &manager.reporter()) {
      reporting::report(result);
    } else {
      auto scope = manager.reporter().scope(manager.observation());
      manager.reporter().report(result);
    }
  }

  Models targets_;
  EvaluatorOptions options_;
  std::string name_;
  std::function<double()> manager_clock_;
  const Manager* named_by_ = nullptr;  ///< the manager whose registered name name_ is
};

namespace detail {

/// Puts modules in eval mode and restores the mode of each module and of
/// every submodule when destroyed (PPE's `_in_eval_mode` restores the targets
/// with `train(was)`, which also sets every submodule to the target's mode).
template <class M>
class EvalModeGuard {
 public:
  explicit EvalModeGuard(const Models& targets) {
    for (const auto& [name, ref] : targets)
      for (const auto& m : static_cast<M&>(*ref.module()).modules(/*include_self=*/true))
        saved_.emplace_back(m, m->is_training());
    for (const auto& [name, ref] : targets) static_cast<M&>(*ref.module()).eval();
  }
  EvalModeGuard(const EvalModeGuard&) = delete;
  EvalModeGuard& operator=(const EvalModeGuard&) = delete;
  ~EvalModeGuard() {
    // Pre-order (parents first): `train` also sets the submodules, whose own
    // modes are set after.
    for (auto& [m, was] : saved_) m->train(was);
  }

 private:
  std::vector<std::pair<std::shared_ptr<M>, bool>> saved_;
};

/// A range to iterate: given directly, or behind a pointer or smart pointer
/// (`std::unique_ptr` from `torch::data::make_data_loader`).
template <class T>
concept iterable = requires(T& t) {
  std::begin(t);
  std::end(t);
};

template <class T>
decltype(auto) range_of(T& x) {
  if constexpr (iterable<T>) {
    return (x);
  } else if constexpr (requires { *x; static_cast<bool>(x); }) {
    if (!x) throw std::invalid_argument("ppe: Evaluator: the loader is a null pointer");
    return range_of(*x);
  } else {
    static_assert(sizeof(T) == 0,
                  "ppe: Evaluator: the loader must be a range of batches (with begin() and end(), e.g. a "
                  "std::vector of tensors or a LibTorch data loader), or a pointer or smart pointer to one");
  }
}

/// How the evaluator keeps a loader given as `L&&`: an lvalue by pointer (it
/// must outlive the evaluator), an rvalue by value (moved in).
template <class L>
using loader_storage_t =
    std::conditional_t<std::is_lvalue_reference_v<L>, std::remove_reference_t<L>*, std::remove_cvref_t<L>>;

template <class S>
decltype(auto) stored_range(S& storage) {
  return range_of(storage);
}

template <class S>
using range_t = std::remove_reference_t<decltype(stored_range(std::declval<S&>()))>;
template <class S>
using iterator_t = decltype(std::begin(std::declval<range_t<S>&>()));
template <class S>
using batch_ref_t = decltype(*std::declval<iterator_t<S>&>());
template <class S>
using batch_t = std::remove_cvref_t<batch_ref_t<S>>;

using ppe::detail::call_on_batch;
using ppe::detail::module_handle;
using ppe::detail::raw_output_t;
/// What metrics receive as the outputs: the function's result, or
/// `metrics::NoOutput` when it returns nothing.
template <class F, class B>
using output_t = std::conditional_t<std::is_void_v<raw_output_t<F, B>>, metrics::NoOutput,
                                    std::remove_cvref_t<raw_output_t<F, B>>>;

}  // namespace detail

/// Evaluates targets on a loader (PPE's `Evaluator` extension). Default
/// trigger: every epoch; priority: writer (so readers such as LogReport see
/// the results in the same iteration); name: "validation"; no state.
///
/// `Loader` is how the loader is kept (see `detail::loader_storage_t`): pass
/// an lvalue range or data loader (kept by pointer: it must outlive the
/// evaluator) or an rvalue (moved in: e.g. `std::move(loader)` for the
/// `std::unique_ptr` of `torch::data::make_data_loader`). Iterating a LibTorch
/// data loader again starts a new pass, so every evaluation sees the whole set.
/// `EvalFunc` is the evaluation function, or the target module's handle when
/// none is given.
template <class Loader, class EvalFunc>
class Evaluator : public EvaluatorBase {
 public:
  using extension_concept = extension_tag;
  static constexpr std::string_view default_name = "validation";
  static constexpr int priority = kPriorityWriter;
  static auto default_trigger() { return ppe::epochs(1); }

  using range_type = detail::range_t<Loader>;
  /// The loader's batch type.
  using batch_type = detail::batch_t<Loader>;
  /// What metrics receive as the outputs of the evaluation function.
  using output_type = detail::output_t<EvalFunc, std::remove_reference_t<detail::batch_ref_t<Loader>>>;
  /// A type-erased metric of this evaluator.
  using Metric = std::function<void(const batch_type&, const output_type&, bool)>;

  /// Evaluates `target` (a module holder or `std::shared_ptr` to a module,
  /// registered as "main") by calling it on each batch.
  template <class L, class M>
    requires detail::module_handle<M>
  Evaluator(L&& loader, M target, EvaluatorOptions options = {})
      : EvaluatorBase(Models(target), std::move(options)),
        loader_(store(std::forward<L>(loader))),
        eval_func_(std::move(target)) {}

  /// Evaluates `targets` (one module, registered as "main", or named ones:
  /// `{{"enc", e}, {"dec", d}}`, or none: `{}`) by calling `eval_func` on each
  /// batch. `eval_func` may also be a module (called through `forward`).
  template <class L, class F>
    requires(!std::is_same_v<std::remove_cvref_t<F>, EvaluatorOptions>)
  Evaluator(L&& loader, Models targets, F&& eval_func, EvaluatorOptions options = {})
      : EvaluatorBase(std::move(targets), std::move(options)),
        loader_(store(std::forward<L>(loader))),
        eval_func_(std::forward<F>(eval_func)) {}

  /// Adds a metric, called after each batch as `metric(batch, outputs,
  /// last_batch)` (PPE's `add_metric`); it reports into the current
  /// observation.
  template <class M>
  Evaluator& add_metric(M metric) {
    static_assert(metrics::metric<M, batch_type, output_type>,
                  "ppe: Evaluator::add_metric: a metric must be callable as metric(const Batch& batch, const "
                  "Outputs& outputs, bool last_batch), Batch being the loader's batch type and Outputs what the "
                  "evaluation function returns (ppe::training::metrics::NoOutput when it returns nothing)");
    metrics_.emplace_back(std::move(metric));
    return *this;
  }
  const std::vector<Metric>& metrics() const noexcept { return metrics_; }

  /// The loader as a range.
  range_type& loader() { return detail::stored_range(loader_); }

  /// Learns the name the manager registered this evaluator under.
  void initialize(Manager& manager) { adopt_name(manager); }

  /// Evaluates and reports the result into the manager's observation; returns it.
  reporting::Observation operator()(Manager& manager) {
    adopt_name(manager);
    struct ClockScope {  // the progress bar runs on the manager's clock during this call only
      std::function<double()>& clock;
      ~ClockScope() { clock = nullptr; }
    } clock_scope{manager_clock_};
    manager_clock_ = [&manager] { return manager.now(); };
    reporting::Observation result = run();
    report_to(manager, result);
    return result;
  }

  /// Evaluates without a manager (PPE's `evaluator()`): reports the result
  /// into the current reporter, if any, and returns it.
  reporting::Observation operator()() {
    reporting::Observation result = run();
    reporting::report(result);
    return result;
  }

  /// The evaluation loop (PPE's `evaluate()`): reports of each batch go into
  /// a fresh observation of the *current* reporter (none: they are dropped,
  /// as PPE); returns the reduced result without reporting it.
  reporting::Observation evaluate() {
    if (options_.eval_hook()) options_.eval_hook()(*this);
    metrics::ReducedSummary summary(options_.reducers(), options_.default_reducer(), options_.gather());
    range_type& range = loader();
    std::optional<detail::IteratorProgressBar> progress;
    if (options_.progress_bar())
      progress.emplace(name_.empty() ? std::string(default_name) : name_, batch_count(range), options_.out(),
                       options_.terminal(), progress_clock());
    struct CloseOnError {  // a failed pass does not leave its display on the terminal
      std::optional<detail::IteratorProgressBar>& bar;
      ~CloseOnError() {
        if (!bar || std::uncaught_exceptions() == 0) return;
        try {
          bar->close();
        } catch (...) {  // the evaluation's own error is the one to report
        }
      }
    } close_on_error{progress};
    at::NoGradGuard no_grad;
    detail::EvalModeGuard<ppe::detail::dependent_t<torch::nn::Module, Loader>> eval_mode(targets_);
    reporting::Observation observation;
    std::int64_t index = 0;
    auto step = [&](auto& batch, bool last_batch) {
      if (progress) progress->before(index);
      observation.clear();  // fresh per batch: no value carries over (PPE's engine evaluator re-adds stale ones)
      {
        auto scope = reporting::report_scope(observation);
        if constexpr (std::is_void_v<detail::raw_output_t<EvalFunc, std::remove_reference_t<decltype(batch)>>>) {
          detail::call_on_batch(eval_func_, batch);
          const output_type none{};
          for (auto& m : metrics_) m(batch, none, last_batch);
        } else {
          const output_type outputs = detail::call_on_batch(eval_func_, batch);
          for (auto& m : metrics_) m(batch, outputs, last_batch);
        }
      }
      summary.add(observation);
      ++index;
      if (progress) progress->after(index);
    };
    ppe::detail::for_each_batch(std::begin(range), std::end(range), std::nullopt, step);
    if (progress) progress->close();
    counted_batches_ = index;
    return summary.compute();
  }

 private:
  template <class L>
  static Loader store(L&& loader) {
    if constexpr (std::is_pointer_v<Loader> && std::is_lvalue_reference_v<L>)
      return &loader;
    else
      return Loader(std::forward<L>(loader));
  }

  /// A fresh reporter with the targets as observers, current during `evaluate`.
  reporting::Observation run() {
    reporting::Reporter reporter;
    add_observers(reporter);
    auto scope = reporter.scope();
    return evaluate();
  }

  /// Batches per pass if known: the option, the range's size, or the count of
  /// the previous pass.
  std::optional<std::int64_t> batch_count(range_type& range) const {
    if (options_.num_batches()) return options_.num_batches();
    if constexpr (requires { std::ranges::size(range); })
      return static_cast<std::int64_t>(std::ranges::size(range));
    else if constexpr (requires { range.size(); })
      return static_cast<std::int64_t>(range.size());
    return counted_batches_;
  }

  /// Takes the name `manager` registered this evaluator under (PPE's manager
  /// sets `extension.name`); a manager that does not hold it leaves the name.
  void adopt_name(Manager& manager) {
    if (named_by_ == &manager) return;
    for (const std::string& n : manager.extension_names()) {
      try {
        if (&manager.get_extension<Evaluator>(n) == this) {
          name_ = n;
          named_by_ = &manager;
          return;
        }
      } catch (const std::invalid_argument&) {
        // another extension type under that name
      }
    }
  }

  Loader loader_;
  EvalFunc eval_func_;
  std::vector<Metric> metrics_;
  std::optional<std::int64_t> counted_batches_;
};

/// `Evaluator(loader, model)`, `Evaluator(loader, model, options)`.
template <class L, class M>
  requires detail::module_handle<std::remove_cvref_t<M>>
Evaluator(L&&, M&&, EvaluatorOptions = {}) -> Evaluator<detail::loader_storage_t<L&&>, std::remove_cvref_t<M>>;
/// `Evaluator(loader, targets, eval_func)`, `Evaluator(loader, targets, eval_func, options)`.
template <class L, class F>
  requires(!std::is_same_v<std::remove_cvref_t<F>, EvaluatorOptions>)
Evaluator(L&&, Models, F&&, EvaluatorOptions = {}) -> Evaluator<detail::loader_storage_t<L&&>, std::remove_cvref_t<F>>;

}  // namespace ppe::training::extensions
