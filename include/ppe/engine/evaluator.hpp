#pragma once
/// \file
/// `ppe::engine::Evaluator`, also reachable as `ppe::training::Evaluator`
/// (PPE's engine `ppe.training.Evaluator`, made by
/// `ppe::engine::create_evaluator`): runs the logic's `eval_step` over a
/// loader under no-grad through its handler, and reports the reduction of
/// what each step reported.
///
/// One `run(loader)`:
/// 1. the handler's `eval_setup` (first run only: eval mode, runtime modules)
///    and `eval_loop_begin`;
/// 2. with gradients off, for each batch (at most `eval_len`): a fresh
///    observation of the evaluator's reporter (its models are observers
///    `main`, `main/<child>`) is current; the handler's `eval_step` converts
///    the batch and calls the logic; each metric runs (one with PPE's form
///    `metric(batch, outputs)` returning values has them joined to the
///    outputs; any other is called as `metric(batch, outputs, last_batch)`
///    and reports itself); the handler's `eval_post_step` reports `val/<key>`
///    for its `eval_report_keys`; the observation is added to the summary. PPE reuses one observation for the whole run, so a
///    value reported in one step is averaged again in every later step; here
///    each step starts empty;
/// 3. the handler's `eval_loop_end`; the per-key reduction (mean unless a
///    reducer is set) is reported into the current reporter (the trainer's
///    during training) and returned.
///
/// With a profiler session (`EvaluatorOptions::profile`, PPE's `profile=`)
/// the session starts before the first batch and stops after the last (its
/// trace handler is called if it records then), once per `run`, and is
/// stepped after every batch. PPE steps after every batch but the
/// `eval_len`-th (its loop breaks before the step); here every batch is a
/// step, so a schedule counts evaluation batches.

#include <ATen/core/grad_mode.h>
// Before any ATen/ops header: clang (not GCC) instantiates List.h's
// std::vector<IValue> members there and needs IValue complete.
#include <ATen/core/ivalue.h>
#include <ATen/ops/scalar_tensor.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include <range/v3/range/access.hpp>

#include "ppe/dataloaders/loader_range.hpp"
#include "ppe/detail/each_batch.hpp"
#include "ppe/engine/options.hpp"
#include "ppe/handler/handler.hpp"
#include "ppe/handler/logic.hpp"
#include "ppe/profiler/profile.hpp"
#include "ppe/reporting/observation.hpp"
#include "ppe/reporting/reporter.hpp"
#include "ppe/training/extensions/detail/progress.hpp"
#include "ppe/training/metrics.hpp"
#include "ppe/training/models.hpp"

namespace ppe::engine {

/// The engine's evaluator. `LogicT` is the logic policy (its `eval_step`
/// runs the models), `HandlerT` the handler policy, `RuntimeT` the entry
/// runtime (converts batches), `Metrics` the metric types (called as
/// `metric(batch, outputs, last_batch)`, reporting what they measure).
template <class LogicT, class HandlerT, class RuntimeT, class... Metrics>
class Evaluator {
  static_assert(handler::check_logic<LogicT>());
  static_assert(handler::handler<HandlerT>,
                "ppe: the evaluator's handler must be ppe::handler::Handler or derive from it");

 public:
  using logic_type = LogicT;
  using handler_type = HandlerT;

  Evaluator(training::Models models, LogicT logic, HandlerT handler, RuntimeT runtime, EvaluatorOptions options,
            std::tuple<Metrics...> metrics = {})
      : models_(std::move(models)),
        logic_(std::move(logic)),
        handler_(std::move(handler)),
        runtime_(std::move(runtime)),
        options_(std::move(options)),
        metrics_(std::move(metrics)) {
    if (options_.progress_bar() && options_.out() == nullptr)
      throw std::invalid_argument("ppe: create_evaluator: the progress bar needs a stream, got a null pointer");
  }

  const training::Models& models() const noexcept { return models_; }
  LogicT& logic() noexcept { return logic_; }
  HandlerT& handler() noexcept { return handler_; }
  RuntimeT& runtime() noexcept { return runtime_; }
  const EvaluatorOptions& options() const noexcept { return options_; }
  /// How many times `run` completed.
  std::int64_t runs() const noexcept { return runs_; }

  /// The handler's `eval_setup` with `loader` (the trainer calls it once at
  /// its start; `run` calls it on first use otherwise).
  template <class L>
  void setup(const L& loader) {
    handler_.eval_setup(*this, loader);
    set_up_ = true;
  }

  /// Evaluates over `loader` (a LibTorch data loader, or any input range of
  /// batches), at most `eval_len` batches (default: the loader's length when
  /// known, else until it ends). Returns the reduced result, which is also
  /// reported into the current reporter.
  template <class L>
  reporting::Observation run(L&& loader, std::optional<std::int64_t> eval_len = std::nullopt) {
    auto range = dataloaders::range(loader);
    if (!eval_len) {
      if (auto n = dataloaders::num_batches(range)) eval_len = static_cast<std::int64_t>(*n);
    } else if (*eval_len < 0) {
      throw std::invalid_argument("ppe: Evaluator::run: eval_len must be >= 0, got " + std::to_string(*eval_len));
    }
    if (!set_up_) setup(range);
    handler_.eval_loop_begin(*this);
    training::metrics::ReducedSummary summary(options_.reducers(), options_.default_reducer(), options_.gather());
    std::optional<training::extensions::detail::IteratorProgressBar> progress;
    if (options_.progress_bar()) {
      std::function<double()> clock = options_.clock();
      if (!clock)
        clock = [] {
          return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
        };
      progress.emplace("validation", eval_len, options_.out(), options_.terminal(), std::move(clock));
    }
    reporting::Reporter reporter;
    for (const auto& [name, m] : models_) {
      reporter.add_observer(name, m.module());
      reporter.add_observers(name, m.submodules());
    }
    reporting::Observation observation;
    profiler::Profile* const session = options_.profile().get();
    if (session) session->start();  // PPE's `with self._profile`
    try {
      at::NoGradGuard no_grad;
      std::int64_t idx = 0;
      ppe::detail::for_each_batch(ranges::begin(range), ranges::end(range), eval_len, [&](auto& batch, bool last_batch) {
        if (progress) progress->before(idx);
        observation.clear();
        {
          auto scope = reporter.scope(observation);
          handler_.eval_step(*this, idx, batch, [&](std::int64_t i, const auto& converted, const auto& outs) {
            if constexpr (std::is_same_v<std::remove_cvref_t<decltype(outs)>, handler::Outputs>) {
              handler::Outputs merged = outs;
              std::apply([&](auto&... m) { (apply_metric(m, converted, outs, last_batch, merged), ...); }, metrics_);
              handler_.eval_post_step(*this, i, batch, merged);
            } else {
              std::apply([&](auto&... m) { (m(converted, outs, last_batch), ...); }, metrics_);
              handler_.eval_post_step(*this, i, batch, outs);
            }
          });
        }
        summary.add(observation);
        ++idx;
        if (progress) progress->after(idx);
        if (session) session->step();
      });
    } catch (...) {
      if (session) session->stop_after_error();  // PPE's `__exit__`
      throw;
    }
    if (session) session->stop();
    if (progress) progress->close();
    handler_.eval_loop_end(*this);
    reporting::Observation result = summary.compute();
    reporting::report(result);
    ++runs_;
    return result;
  }

 private:
  // PPE's metric protocol, `outs.update(metric(batch, outs))`, for metrics
  // with a two-argument form returning values (AccuracyMetric): the values
  // join the outputs, which `eval_report_keys` report as `val/<key>`. Other
  // metrics are called as `metric(batch, outputs, last_batch)` and report
  // what they measure themselves.
  template <class M, class B>
  static void apply_metric(M& m, const B& batch, const handler::Outputs& outs, bool last_batch,
                           handler::Outputs& merged) {
    if constexpr (requires {
                    { m(batch, outs) } -> std::convertible_to<reporting::Observation>;
                  }) {
      (void)last_batch;
      for (auto [k, v] : reporting::Observation(m(batch, outs))) {
        const reporting::Value value = v.resolved();
        at::Tensor t = value.is_tensor() ? value.tensor() : at::scalar_tensor(value.scalar(), at::kDouble);
        merged.insert(std::string(k), std::move(t));
      }
    } else {
      m(batch, outs, last_batch);
    }
  }

  training::Models models_;
  LogicT logic_;
  HandlerT handler_;
  RuntimeT runtime_;
  EvaluatorOptions options_;
  std::tuple<Metrics...> metrics_;
  bool set_up_ = false;
  std::int64_t runs_ = 0;
};

/// Whether `E` is an engine `Evaluator`.
template <class E>
struct is_evaluator : std::false_type {};
template <class L, class H, class R, class... M>
struct is_evaluator<Evaluator<L, H, R, M...>> : std::true_type {};

}  // namespace ppe::engine

namespace ppe::training {
/// PPE's name of the engine evaluator (`ppe.training.Evaluator`).
using engine::Evaluator;
}  // namespace ppe::training
