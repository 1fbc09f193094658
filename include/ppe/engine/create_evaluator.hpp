#pragma once
/// \file
/// `ppe::engine::create_evaluator` (PPE's `ppe.engine.create_evaluator`): a
/// statically typed `Evaluator` from models and `EvaluatorOptions`, then, in
/// any order, `with_logic`/`with_handler`/`with_runtime` and metrics (PPE's
/// `metrics=`), each called as `metric(batch, outputs, last_batch)`.

#include <tuple>
#include <type_traits>
#include <utility>

#include "ppe/detail/batch.hpp"
#include "ppe/engine/arguments.hpp"
#include "ppe/engine/detail/policies.hpp"
#include "ppe/engine/detail/sort_arguments.hpp"
#include "ppe/engine/evaluator.hpp"
#include "ppe/engine/options.hpp"
#include "ppe/training/models.hpp"

namespace ppe::engine {
namespace detail {

/// create_evaluator's body; `Model` is the typed model (NoModel for named models).
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
