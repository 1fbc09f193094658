#pragma once
/// \file
/// `ppe::engine::create_trainer` (PPE's `ppe.engine.create_trainer`): a
/// statically typed `Trainer` from models, optimizers, `max_epochs`,
/// `TrainerOptions` and then, in any order:
/// - evaluators: an `Evaluator` (every epoch, named "Evaluator"), or
///   `evaluate(evaluator, trigger, name)` (PPE's `(evaluator, trigger)` and
///   `{name: evaluator}` forms);
/// - `stop_when(trigger)`: the stop trigger (default: `max_epochs` epochs);
/// - `with_logic(l)`, `with_handler(h)`, `with_runtime(r)`: policy objects
///   replacing the default `Logic<Model>`, `Handler` and the registry's
///   runtime for `device` (PPE's `logic=`, `handler_class=` and registry);
/// - extensions or `entry(...)`s, as the manager takes them.

#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>

#include "ppe/detail/batch.hpp"
#include "ppe/engine/arguments.hpp"
#include "ppe/engine/detail/policies.hpp"
#include "ppe/engine/detail/sort_arguments.hpp"
#include "ppe/engine/options.hpp"
#include "ppe/engine/trainer.hpp"
#include "ppe/training/extension_entry.hpp"
#include "ppe/training/manager.hpp"
#include "ppe/training/models.hpp"
#include "ppe/training/triggers/interval_trigger.hpp"

namespace ppe::engine {
namespace detail {

/// A `Trainer` of the deduced types (the class's template arguments cannot
/// be deduced from its constructor).
template <class LogicT, class HandlerT, class RuntimeT, class Stop, class Evals, class... Entries>
Trainer<LogicT, HandlerT, RuntimeT, Stop, Evals, Entries...> make_trainer(
    training::Models models, training::Optimizers optimizers, LogicT logic, HandlerT handler, RuntimeT runtime,
    training::ManagerOptions mo, std::optional<Stop> stop, Evals evals, std::tuple<Entries...> entries,
    TrainerProfiling profiling) {
  return Trainer<LogicT, HandlerT, RuntimeT, Stop, Evals, Entries...>(
      std::move(models), std::move(optimizers), std::move(logic), std::move(handler), std::move(runtime),
      std::move(mo), std::move(stop), std::move(evals), std::move(entries), std::move(profiling));
}

/// create_trainer's body; `Model` is the typed model (NoModel for named models).
template <class Model, class... A>
auto create_trainer(const Model* model, training::Models models, training::Optimizers optimizers, double max_epochs,
                    const TrainerOptions& options, A&&... args) {
  auto [logic, handler, runtime] = make_policies(model, options, "create_trainer", std::forward<A>(args)...);
  auto stops = select<pred_stop>([](auto&& w) { return std::move(w.trigger); }, std::forward<A>(args)...);
  auto evals = select<pred_evaluator>([](auto&& x) { return as_eval_entry(std::forward<decltype(x)>(x)); },
                                      std::forward<A>(args)...);
  auto entries = select<pred_extension>([](auto&& x) { return training::as_entry(std::forward<decltype(x)>(x)); },
                                        std::forward<A>(args)...);

  training::ManagerOptions mo;
  mo.max_epochs(max_epochs).out_dir(options.out_dir()).writer(options.writer()).rank(options.rank()).world_size(
      options.world_size()).communicator(options.communicator()).check_report_keys(options.check_report_keys());
  // PPE passes enable_profile to the manager only when given (its default: false).
  mo.enable_profile(options.enable_profile().value_or(false)).enable_trace(options.enable_trace());
  if (options.clock()) mo.clock(options.clock());

  using Stop = typename first_or<decltype(stops), training::triggers::IntervalTrigger>::type;
  std::optional<Stop> stop;
  if constexpr (count_v<decltype(stops)> == 1) stop.emplace(std::move(std::get<0>(stops)));
  return make_trainer(std::move(models), std::move(optimizers), std::move(logic), std::move(handler),
                      std::move(runtime), std::move(mo), std::move(stop), std::move(evals), std::move(entries),
                      TrainerProfiling::of(options));
}

}  // namespace detail

/// PPE's `create_trainer(model, optimizer, max_epochs, ...)` for one typed
/// model (a module holder or `std::shared_ptr` to a module, registered as
/// "main") and its optimizer (by reference or `std::shared_ptr`). The
/// arguments after the options: see this file's comment.
template <class M, class O, class... A>
  requires ppe::detail::module_handle<std::remove_cvref_t<M>>
auto create_trainer(M&& model, O&& optimizer, double max_epochs, const TrainerOptions& options, A&&... args) {
  using Model = std::remove_cvref_t<M>;
  const Model m(std::forward<M>(model));
  return detail::create_trainer(&m, training::Models(m), training::Optimizers(std::forward<O>(optimizer)), max_epochs,
                                options, std::forward<A>(args)...);
}
/// `create_trainer` for named models and optimizers; needs `with_logic(...)`.
template <class... A>
auto create_trainer(training::Models models, training::Optimizers optimizers, double max_epochs,
                    const TrainerOptions& options, A&&... args) {
  return detail::create_trainer(static_cast<const detail::NoModel*>(nullptr), std::move(models), std::move(optimizers),
                                max_epochs, options, std::forward<A>(args)...);
}

}  // namespace ppe::engine
