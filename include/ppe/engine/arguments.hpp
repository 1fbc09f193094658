#pragma once
/// \file
/// The tagged arguments `create_trainer` and `create_evaluator` take after
/// their options (PPE's keyword arguments `logic=`, `handler_class=`,
/// `evaluator=`, `stop_trigger=`): `with_logic`, `with_handler`,
/// `with_runtime`, `stop_when` and `evaluate`. Each wraps its value in its own
/// type, so the arguments can come in any order and be told apart at compile
/// time (engine/detail/sort_arguments.hpp).

#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include "ppe/engine/evaluator.hpp"
#include "ppe/engine/trainer.hpp"
#include "ppe/handler/handler.hpp"
#include "ppe/handler/logic.hpp"
#include "ppe/training/extensions_manager.hpp"
#include "ppe/training/trigger.hpp"
#include "ppe/training/triggers/interval_trigger.hpp"

namespace ppe::engine {

/// The stop trigger of a trainer (default: `max_epochs` epochs); the
/// manager's `stop_when`, named here too as PPE's `stop_trigger=`.
using training::stop_when;

/// A logic object for `create_trainer` / `create_evaluator` (PPE's `logic=`).
template <class L>
struct WithLogic {
  L logic;
};
/// Passes `logic` to `create_trainer` / `create_evaluator` in place of the
/// default `Logic<Model>`; checked against the logic protocol here, so a
/// wrong type fails at the call that gave it.
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
/// Passes `handler` in place of the default `Handler`.
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
/// Passes `runtime` in place of the registry's runtime for the `device` option.
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

}  // namespace ppe::engine
