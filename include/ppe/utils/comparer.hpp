#pragma once
/// \file
/// `ppe::utils::comparer` (PPE's `ppe.utils.comparer`): runs several engines
/// (trainers, or evaluators) on their own batches and compares, step by step,
/// their outputs, parameters, gradients and intermediate values: CPU against
/// another device, one LibTorch build against another, a model before and
/// after a refactor. The first comparison point where they differ is reported
/// by its step and the names of the values that differ.
///
/// ```cpp
/// namespace cmp = ppe::utils::comparer;
/// cmp::Comparer comp(cmp::ComparerOptions().trigger(ppe::iterations(1)).params(true));
/// comp.add_engine("cpu", trainer_cpu, train_loader);
/// comp.add_engine("cuda", trainer_cuda, train_loader);
/// comp.compare();   // throws cmp::ComparisonError at the first mismatch
/// ```
///
/// How it works: each engine runs `run(args...)` on its own thread; the
/// runtime of its model (the one `ppe::to` recorded) is wrapped for the
/// duration of `compare()`, so the step hooks that every handler calls
/// (`train_post_step`, `eval_post_step`) hand the step's outputs to the
/// comparer; at each comparison point an engine waits until every engine
/// reached it, the values are compared, and they all go on (PPE's barrier).
/// A model that is not on a runtime cannot be compared (`ppe::to` it).

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "ppe/detail/arg.hpp"
#include "ppe/detail/config.hpp"
#include "ppe/detail/dependent.hpp"
#include "ppe/training/models.hpp"
#include "ppe/training/triggers/interval_trigger.hpp"

namespace ppe::utils::comparer {

/// Compares the value `name` of engine `engine1` (the baseline) with that of
/// `engine2`: returns nothing when they match, else what differs (PPE's
/// `compare_fn`, which raises an AssertionError instead).
using CompareFn = std::function<std::optional<std::string>(const std::string& engine1, const std::string& engine2,
                                                           const std::string& name, const at::Tensor& value1,
                                                           const at::Tensor& value2)>;

/// PPE's `get_default_comparer(rtol, atol, equal_nan)`: both values are
/// moved to the CPU and must have the same shape and dtype, and every
/// element must satisfy `|v1 - v2| <= atol + rtol * |v2|` (`torch.testing.
/// assert_close`'s rule; NaNs match each other when `equal_nan`). The
/// description of a mismatch counts the elements that differ and gives the
/// greatest absolute and relative differences with their indices.
PPE_DECL CompareFn get_default_comparer(double rtol = 1e-4, double atol = 0.0, bool equal_nan = true);

/// Which values of a kind to compare (PPE's `outputs=` / `params=`: a bool,
/// a name or a list of names): all, none, or those whose names begin with a
/// match of one of the regular expressions (ECMAScript; Python's `re.match`,
/// anchored at the start). A pattern that matches nothing is an error.
class Select {
 public:
  /// All (true) or none (false).
  Select(bool all) : all_(all) {}  // NOLINT: implicit, as PPE's `params=True`
  /// The values matching one pattern.
  Select(const char* pattern) : patterns_{pattern} {}        // NOLINT
  Select(std::string pattern) : patterns_{std::move(pattern)} {}  // NOLINT
  /// The values matching any of the patterns (none for an empty list).
  Select(std::initializer_list<std::string> patterns) : patterns_(patterns) {}
  Select(std::vector<std::string> patterns) : patterns_(std::move(patterns)) {}  // NOLINT

  bool all() const noexcept { return all_; }
  bool none() const noexcept { return !all_ && patterns_.empty(); }
  const std::vector<std::string>& patterns() const noexcept { return patterns_; }

 private:
  bool all_ = false;
  std::vector<std::string> patterns_;
};

/// Options of a `Comparer` (PPE's `Comparer(...)` keywords).
struct ComparerOptions {
  /// When a trainer's steps are compared, seen after the step as a manager
  /// would see it at the end of that iteration (PPE's proxy); unset: every
  /// epoch (PPE's default `(1, "epoch")`). Evaluation steps are all compared.
  /// Only trainers can be compared with a trigger (PPE).
  PPE_ARG(std::optional<training::triggers::IntervalTrigger>, trigger);
  /// Compares two values; null: `get_default_comparer()`.
  PPE_ARG(CompareFn, compare_fn);
  /// How many engines may run at once between comparison points; unset:
  /// all of them (PPE's `concurrency`).
  PPE_ARG(std::optional<int>, concurrency);
  /// The step outputs compared, as `output:<name>` (PPE's default: all).
  PPE_ARG(Select, outputs) = Select(true);
  /// The model's parameters and buffers compared after the step (its state
  /// dict), as `param:<name>` (PPE's default: none).
  PPE_ARG(Select, params) = Select(false);
  /// The gradients of the model's parameters after the step, as
  /// `grad:<name>` (parameters without a gradient are left out). Not in PPE.
  PPE_ARG(Select, grads) = Select(false);
  /// The engine the others are compared against; unset: the first added.
  PPE_ARG(std::optional<std::string>, baseline);
  /// The model whose parameters and gradients are compared (PPE: "main");
  /// an engine with one model uses it whatever its name.
  PPE_ARG(std::string, model) = "main";
};

/// Where engines are compared: a training step or an evaluation step.
enum class Phase { Train, Eval };

/// One value that differs at a comparison point.
struct Mismatch {
  /// `output:<key>`, `param:<name>`, `grad:<name>` or `intermediate:<name>_<n>`.
  std::string name;
  /// The baseline engine and the engine compared with it.
  std::string baseline;
  std::string engine;
  /// What differs (the compare function's description).
  std::string detail;
};

/// A comparison point: the step at which every engine's values were taken.
struct Point {
  Phase phase = Phase::Train;
  /// The batch index of the step within its epoch or evaluation run.
  std::int64_t batch_idx = 0;
  /// Training: the trainer's iteration counting this step (1 for the first);
  /// evaluation during training: the iterations done before it; unset for
  /// an evaluator compared on its own.
  std::optional<std::int64_t> iteration;
  /// The epoch of the step (0 for the first); evaluation during training:
  /// the epoch that ended before it (PPE's dump names).
  std::optional<std::int64_t> epoch;

  bool operator==(const Point&) const = default;
  /// E.g. `training iteration 3 (epoch 0, batch 2)`, `evaluation batch 4 (after iteration 10)`.
  PPE_DECL std::string str() const;
};

/// The engines' values differ at a comparison point (PPE: AssertionError).
/// `mismatches()` lists every value that differs there, by engine pair and
/// name; the message names the point and each of them.
class ComparisonError : public std::runtime_error {
 public:
  ComparisonError(Point point, std::int64_t index, std::vector<Mismatch> mismatches)
      : std::runtime_error(message(point, index, mismatches)),
        point_(std::move(point)),
        index_(index),
        mismatches_(std::move(mismatches)) {}

  /// The step at which the values differ.
  const Point& point() const noexcept { return point_; }
  /// How many comparison points passed before this one.
  std::int64_t index() const noexcept { return index_; }
  const std::vector<Mismatch>& mismatches() const noexcept { return mismatches_; }

 private:
  PPE_DECL static std::string message(const Point& point, std::int64_t index, const std::vector<Mismatch>& mismatches);
  Point point_;
  std::int64_t index_;
  std::vector<Mismatch> mismatches_;
};

/// PPE's `ppe.utils.comparer.intermediate_value(name, value)`: inside a step
/// of an engine being compared, records a copy of `value` to compare as
/// `intermediate:<name>_<n>` (n: the how-many-th value of that name in the
/// step, from 0); elsewhere does nothing.
PPE_DECL void intermediate_value(std::string_view name, const at::Tensor& value);

namespace detail {

enum class EngineKind { Trainer, Evaluator, Dump };

/// What the comparer needs of an engine, gathered by `add_engine`.
struct EngineSpec {
  std::string name;
  EngineKind kind = EngineKind::Trainer;
  /// Runs the engine with the arguments given to `add_engine`.
  std::function<void()> run;
  /// The models whose parameters and gradients are compared.
  const training::Models* models = nullptr;
  /// The model sets whose first runtime module reports the steps: the
  /// trainer's (its training steps) and each of its evaluators' (their steps).
  std::vector<std::pair<const training::Models*, Phase>> hooked;
  /// Trainers: (iterations done, iterations per epoch) of the manager.
  std::function<std::pair<std::int64_t, std::int64_t>()> position;
  /// Whether the engine already ran (its handler keeps the runtimes it found).
  bool started = false;
};

}  // namespace detail

/// PPE's `Comparer`: `add_engine` the engines (all trainers or all
/// evaluators; saved runs with `add_dump` go with either), then `compare()`. Engines and their arguments must outlive
/// `compare()`; an engine is compared during one `compare()` only, before it
/// ever ran.
class Comparer {
 public:
  PPE_DECL explicit Comparer(ComparerOptions options = {});
  PPE_DECL ~Comparer();
  Comparer(const Comparer&) = delete;
  Comparer& operator=(const Comparer&) = delete;

  PPE_DECL const ComparerOptions& options() const noexcept;

  /// Adds `engine` (a `Trainer` or an `Evaluator`) under `name`, to be run as
  /// `engine.run(run_args...)` (a trainer: its training loader, and its
  /// validation loader when it has evaluators). Arguments given as lvalues
  /// are kept by reference, temporaries by value.
  template <class Engine, class... Args>
  void add_engine(std::string name, Engine& engine, Args&&... run_args) {
    add(make_spec(std::move(name), engine, std::forward<Args>(run_args)...));
  }

  /// PPE's `dump(engine, dir, *args)`: runs `engine.run(run_args...)` now,
  /// alone, and writes its values at each comparison point to a file in
  /// `dir` (created): `dump_<count, 8 digits>_<Trainer|Evaluator>[_epoch_<e>]_iter_<batch>`,
  /// PPE's names, holding a dict from value names to CPU tensors that
  /// Python's `torch.load` reads. Compare with `add_dump`.
  template <class Engine, class... Args>
  void dump(Engine& engine, const std::string& dir, Args&&... run_args) {
    run_dump(make_spec("__dump", engine, std::forward<Args>(run_args)...), dir);
  }

  /// PPE's `add_dump(name, dir)`: compares the run saved in `dir` (by `dump`,
  /// here or in PPE) as the engine `name`, replaying its files in name
  /// order. A dump's comparison points know their phase, batch and epoch,
  /// not the iteration: they match a point of the same phase, batch and
  /// epoch. Values that are not tensors (a Python int) become tensors, and
  /// PPE's `intermedaite:` prefix is read as `intermediate:`.
  PPE_DECL void add_dump(std::string name, const std::string& dir);

  /// Runs every engine and compares them at each comparison point. Throws
  /// `ComparisonError` at the first point where values differ (every engine
  /// stops there), `std::runtime_error` when the engines reach different
  /// points (different triggers, stop triggers or loader lengths: PPE's
  /// "Engines have different triggers"), or the first exception an engine
  /// threw. The runtimes are restored in any case. A run without any
  /// comparison point passes with a warning (`comparisons()` is 0).
  PPE_DECL void compare();

  /// The comparison points passed (all values matching) in the last `compare()`.
  PPE_DECL std::int64_t comparisons() const noexcept;

  struct Impl;

 private:
  template <class Engine, class... Args>
  static detail::EngineSpec make_spec(std::string name, Engine& engine, Args&&... run_args) {
    detail::EngineSpec spec;
    spec.name = std::move(name);
    spec.models = &engine.models();
    if constexpr (requires { engine.manager(); engine.optimizers(); engine.started(); }) {
      spec.kind = detail::EngineKind::Trainer;
      spec.started = engine.started();
      spec.hooked.emplace_back(&engine.models(), Phase::Train);
      [&]<std::size_t... I>(std::index_sequence<I...>) {
        (spec.hooked.emplace_back(&engine.template evaluator_at<I>().models(), Phase::Eval), ...);
      }(std::make_index_sequence<Engine::num_evaluators()>{});
      spec.position = [&engine] {
        auto& m = engine.manager();
        return std::pair<std::int64_t, std::int64_t>(m.iteration(), m.iters_per_epoch());
      };
    } else if constexpr (requires { engine.models(); engine.runs(); }) {
      spec.kind = detail::EngineKind::Evaluator;
      spec.started = engine.runs() > 0;
      spec.hooked.emplace_back(&engine.models(), Phase::Eval);
    } else {
      static_assert(ppe::detail::dependent_t<std::false_type, Engine>::value,
                    "ppe::utils::comparer::Comparer: the engine must be a ppe::engine::Trainer or Evaluator (made by "
                    "create_trainer / create_evaluator)");
    }
    spec.run = [&engine, args = std::tuple<Args...>(std::forward<Args>(run_args)...)]() mutable {
      std::apply([&engine](auto&... a) { engine.run(a...); }, args);
    };
    return spec;
  }

  PPE_DECL void add(detail::EngineSpec spec);
  PPE_DECL void run_dump(detail::EngineSpec spec, const std::string& dir);
  std::unique_ptr<Impl> impl_;
};

}  // namespace ppe::utils::comparer

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/utils/impl/comparer.ipp"
#endif
