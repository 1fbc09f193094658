#pragma once
/// \file
/// `ppe::engine::create_trainer` and `create_evaluator` (PPE's `ppe.engine`):
/// build a statically typed `Trainer` / `Evaluator` from models, optimizers,
/// options and policy objects.
///
/// ```cpp
/// namespace ext = ppe::training::extensions;
/// ppe::to(model, "cpu");
/// auto trainer = ppe::engine::create_trainer(
///     model, optimizer, /*max_epochs=*/10, ppe::engine::TrainerOptions().out_dir("result"),
///     ppe::engine::create_evaluator(model),          // every epoch, named "Evaluator"
///     ext::LogReport(), ext::PrintReport({"epoch", "train/loss", "val/loss"}));
/// trainer.run(train_loader, val_loader);
/// ```
///
/// After the options, `create_trainer` takes, in any order:
/// - evaluators: an `Evaluator` (every epoch, named "Evaluator"), or
///   `evaluate(evaluator, trigger, name)` (PPE's `(evaluator, trigger)` and
///   `{name: evaluator}` forms);
/// - `stop_when(trigger)`: the stop trigger (default: `max_epochs` epochs);
/// - `with_logic(l)`, `with_handler(h)`, `with_runtime(r)`: policy objects
///   replacing the default `Logic<Model>`, `Handler` and the registry's
///   runtime for `device` (PPE's `logic=`, `handler_class=` and registry);
/// - extensions or `entry(...)`s, as the manager takes them.
/// `create_evaluator` takes `with_logic`/`with_handler`/`with_runtime` and
/// metrics (PPE's `metrics=`), called as `metric(batch, outputs, last_batch)`.
///
/// A single model is given as its typed handle (the default logic calls its
/// `forward`); several models as `ppe::training::Models{{"gen", g}, {"dis", d}}`
/// with a logic of your own (LibTorch's `forward` is not virtual, so the
/// logic keeps the typed handles).

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "ppe/detail/python_repr.hpp"
#include "ppe/engine/evaluator.hpp"
#include "ppe/engine/options.hpp"
#include "ppe/engine/trainer.hpp"
#include "ppe/handler/handler.hpp"
#include "ppe/handler/logic.hpp"
#include "ppe/runtime/base_runtime.hpp"
#include "ppe/runtime/registry.hpp"
#include "ppe/runtime/runtime.hpp"
#include "ppe/state.hpp"
#include "ppe/training/extension_entry.hpp"
#include "ppe/training/extensions_manager.hpp"
#include "ppe/training/manager.hpp"
#include "ppe/training/models.hpp"
#include "ppe/training/triggers/interval_trigger.hpp"

namespace ppe::engine {

using training::stop_when;

/// A logic object for `create_trainer` / `create_evaluator` (PPE's `logic=`).
template <class L>
struct WithLogic {
  L logic;
};
template <class L>
WithLogic<std::remove_cvref_t<L>> with_logic(L&& logic) {
  static_assert(handler::check_logic<std::remove_cvref_t<L>>());
  return {std::forward<L>(logic)};
}
/// A handler object (PPE's `handler_class=`): `Handler` or a class derived from it.
template <class H>
struct WithHandler {
  H handler;
};
template <class H>
WithHandler<std::remove_cvref_t<H>> with_handler(H&& handler) {
  static_assert(handler::handler<std::remove_cvref_t<H>>,
                "ppe: with_handler: the handler must be ppe::handler::Handler or derive from it");
  return {std::forward<H>(handler)};
}
/// The entry runtime (converts batches), instead of the registry's runtime
/// for the `device` option: a runtime object or a `std::shared_ptr` to one.
template <class R>
struct WithRuntime {
  R runtime;
};
template <class R>
WithRuntime<std::remove_cvref_t<R>> with_runtime(R&& runtime) {
  return {std::forward<R>(runtime)};
}

/// An evaluator of a trainer with its trigger and name (PPE's
/// `evaluator=(ev, trigger)`; several named ones are PPE's dict form).
template <class E, class T = training::triggers::IntervalTrigger>
auto evaluate(E&& evaluator, T trigger = ppe::epochs(1), std::string name = "Evaluator") {
  static_assert(is_evaluator<std::remove_cvref_t<E>>::value,
                "ppe::engine::evaluate: the first argument must be an evaluator made by create_evaluator");
  auto t = training::as_trigger(std::move(trigger));
  if (name.empty()) throw std::invalid_argument("ppe::engine::evaluate: the evaluator's name must not be empty");
  return EvaluatorEntry<std::remove_cvref_t<E>, decltype(t)>{std::forward<E>(evaluator), std::move(t),
                                                                       std::move(name)};
}

namespace detail {

template <class X, template <class> class W>
struct is_wrapper : std::false_type {};
template <class X, template <class> class W>
struct is_wrapper<W<X>, W> : std::true_type {};

template <class X>
struct is_eval_entry : std::false_type {};
template <class E, class T>
struct is_eval_entry<EvaluatorEntry<E, T>> : std::true_type {};

template <class X>
inline constexpr bool is_logic_arg = is_wrapper<std::remove_cvref_t<X>, WithLogic>::value;
template <class X>
inline constexpr bool is_handler_arg = is_wrapper<std::remove_cvref_t<X>, WithHandler>::value;
template <class X>
inline constexpr bool is_runtime_arg = is_wrapper<std::remove_cvref_t<X>, WithRuntime>::value;
template <class X>
inline constexpr bool is_stop_arg = training::detail::is_stop_when<std::remove_cvref_t<X>>::value;
template <class X>
inline constexpr bool is_evaluator_arg = is_evaluator<std::remove_cvref_t<X>>::value ||
                                         is_eval_entry<std::remove_cvref_t<X>>::value;
template <class X>
inline constexpr bool is_policy_arg = is_logic_arg<X> || is_handler_arg<X> || is_runtime_arg<X> || is_stop_arg<X>;

/// The arguments of one kind, as a tuple (each as `wrap` makes it).
template <template <class> class Pred, class Wrap, class... A>
auto select(Wrap wrap, A&&... args) {
  return std::tuple_cat([&]<class X>(X&& x) {
    if constexpr (Pred<X>::value)
      return std::tuple<decltype(wrap(std::forward<X>(x)))>(wrap(std::forward<X>(x)));
    else
      return std::tuple<>();
  }(std::forward<A>(args))...);
}
template <class X>
struct pred_logic : std::bool_constant<is_logic_arg<X>> {};
template <class X>
struct pred_handler : std::bool_constant<is_handler_arg<X>> {};
template <class X>
struct pred_runtime : std::bool_constant<is_runtime_arg<X>> {};
template <class X>
struct pred_stop : std::bool_constant<is_stop_arg<X>> {};
template <class X>
struct pred_evaluator : std::bool_constant<is_evaluator_arg<X>> {};
template <class X>
struct pred_extension : std::bool_constant<!is_policy_arg<X> && !is_evaluator_arg<X>> {};

/// The first type of a tuple, or `Default` for an empty one.
template <class Tuple, class Default>
struct first_or {
  using type = Default;
};
template <class T, class... Ts, class Default>
struct first_or<std::tuple<T, Ts...>, Default> {
  using type = T;
};

template <class Tuple>
constexpr std::size_t count_v = std::tuple_size_v<std::remove_cvref_t<Tuple>>;

/// The only element of a 0- or 1-tuple, or `fallback()`.
template <class Tuple, class F>
decltype(auto) one_or(Tuple&& t, const char* what, F&& fallback) {
  static_assert(count_v<Tuple> <= 1, "ppe::engine: a policy is given twice (with_logic, with_handler, with_runtime "
                                     "or stop_when appears more than once)");
  (void)what;
  if constexpr (count_v<Tuple> == 1)
    return std::get<0>(std::forward<Tuple>(t));
  else
    return fallback();
}

template <class X>
auto as_eval_entry(X&& x) {
  if constexpr (is_eval_entry<std::remove_cvref_t<X>>::value)
    return std::remove_cvref_t<X>(std::forward<X>(x));
  else
    return evaluate(std::forward<X>(x));
}

/// PPE's option consumption: the handler, then the logic pop their keys;
/// what is left is an error naming the keys.
template <class H, class L>
void consume_options(H& h, L& l, State options, const char* who) {
  if (!options.is_dict())
    throw std::invalid_argument(std::string("ppe: ") + who + ": options must be a dict, got a " +
                                std::string(State::kind_name(options.kind())));
  handler::consume_options(h, options);
  handler::consume_options(l, options);
  if (!options.as_dict().empty()) {
    throw std::invalid_argument(std::string("ppe: ") + who +
                                ": Unknown options: " + ppe::detail::python_key_list(options.as_dict()) +
                                " (no handler or logic consumed them)");
  }
}

template <class R>
auto entry_runtime(std::tuple<R>&& given, const runtime::DeviceSpec&, const runtime::RuntimeOptions&) {
  auto r = std::move(std::get<0>(given).runtime);
  static_assert(runtime::check_runtime<std::remove_cvref_t<decltype(runtime::detail::deref(r))>>());
  return r;
}
inline std::shared_ptr<runtime::BaseRuntime> entry_runtime(std::tuple<>&&, const runtime::DeviceSpec& device,
                                                           const runtime::RuntimeOptions& options) {
  return runtime::runtime_registry().make(device, options);
}

struct NoModel {};

template <class LogicT, class HandlerT, class RuntimeT, class Stop, class Evals, class... Entries>
Trainer<LogicT, HandlerT, RuntimeT, Stop, Evals, Entries...> make_trainer(
    training::Models models, training::Optimizers optimizers, LogicT logic, HandlerT handler, RuntimeT runtime,
    training::ManagerOptions mo, std::optional<Stop> stop, Evals evals, std::tuple<Entries...> entries,
    TrainerProfiling profiling) {
  return Trainer<LogicT, HandlerT, RuntimeT, Stop, Evals, Entries...>(
      std::move(models), std::move(optimizers), std::move(logic), std::move(handler), std::move(runtime),
      std::move(mo), std::move(stop), std::move(evals), std::move(entries), std::move(profiling));
}

/// Sets the fields `options` sets on a logic given with `with_logic`; a
/// logic that takes no `LogicOptions` (no `merge_options`) given some is an
/// error rather than options silently unused.
template <class L>
void merge_logic_options(L& logic, const handler::LogicOptions& options, const char* who) {
  if constexpr (requires { logic.merge_options(options); }) {
    logic.merge_options(options);
  } else {
    handler::LogicOptions probe;
    if (handler::merge_options(probe, options) > 0)
      throw std::invalid_argument(std::string("ppe: ") + who +
                                  ": logic options (.logic(LogicOptions...)) were given, but the logic given with "
                                  "with_logic(...) takes none (it has no merge_options(const LogicOptions&)); give "
                                  "them to your logic, or use its free-form options");
  }
}

/// The logic, handler and entry runtime of a trainer or evaluator: those
/// given (`with_logic`, `with_handler`, `with_runtime`) or the defaults, with
/// the free-form options consumed. `who` names the caller in messages.
template <class Model, class Options, class... A>
auto make_policies(const Model* model, const Options& options, const char* who, A&&... args) {
  auto logics = select<pred_logic>([](auto&& w) { return std::move(w.logic); }, std::forward<A>(args)...);
  auto handlers = select<pred_handler>([](auto&& w) { return std::move(w.handler); }, std::forward<A>(args)...);
  auto runtimes = select<pred_runtime>([](auto&& w) { return std::forward<decltype(w)>(w); }, std::forward<A>(args)...);
  static_assert(count_v<decltype(logics)> == 1 || !std::is_same_v<Model, NoModel>,
                "ppe::engine: named models need a logic of your own (with_logic(...)): the default Logic calls the "
                "model's forward, which needs the model's type (give one typed model instead)");
  auto logic = one_or(std::move(logics), "logic", [&] {
    if constexpr (std::is_same_v<Model, NoModel>)
      return 0;
    else
      return handler::Logic<Model>(*model, options.logic());
  });
  auto handler = one_or(std::move(handlers), "handler", [&] { return handler::Handler(options.handler()); });
  // Typed options given with a policy object override its own (PPE merges
  // its trainer options into a given logic the same way).
  if constexpr (count_v<decltype(logics)> == 1) merge_logic_options(logic, options.logic(), who);
  if constexpr (count_v<decltype(handlers)> == 1) handler.merge_options(options.handler());
  auto runtime = entry_runtime(std::move(runtimes), options.device(), options.runtime_options());
  consume_options(handler, logic, options.options(), who);
  return std::make_tuple(std::move(logic), std::move(handler), std::move(runtime));
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

template <class Model, class... A>
auto create_evaluator(const Model* model, training::Models models, const EvaluatorOptions& options, A&&... args) {
  auto [logic, handler, runtime] = make_policies(model, options, "create_evaluator", std::forward<A>(args)...);
  auto metrics = select<pred_extension>(
      [](auto&& x) { return std::remove_cvref_t<decltype(x)>(std::forward<decltype(x)>(x)); }, std::forward<A>(args)...);
  return std::apply(
      [&](auto&&... ms) {
        return Evaluator<decltype(logic), decltype(handler), decltype(runtime),
                                   std::remove_cvref_t<decltype(ms)>...>(
            std::move(models), std::move(logic), std::move(handler), std::move(runtime), options,
            std::make_tuple(std::move(ms)...));
      },
      std::move(metrics));
}

}  // namespace detail

/// PPE's `create_trainer(model, optimizer, max_epochs, ...)` for one typed
/// model (a module holder or `std::shared_ptr` to a module, registered as
/// "main") and its optimizer (by reference or `std::shared_ptr`). The
/// arguments after the options: see the file comment.
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

/// PPE's `create_evaluator(model, ...)` for one typed model (registered as "main").
template <class M, class... A>
  requires ppe::detail::module_handle<std::remove_cvref_t<M>>
auto create_evaluator(M&& model, const EvaluatorOptions& options = {}, A&&... args) {
  using Model = std::remove_cvref_t<M>;
  const Model m(std::forward<M>(model));
  return detail::create_evaluator(&m, training::Models(m), options, std::forward<A>(args)...);
}
/// `create_evaluator` for named models; needs `with_logic(...)`.
template <class... A>
auto create_evaluator(training::Models models, const EvaluatorOptions& options, A&&... args) {
  return detail::create_evaluator(static_cast<const detail::NoModel*>(nullptr), std::move(models), options,
                                  std::forward<A>(args)...);
}

}  // namespace ppe::engine
