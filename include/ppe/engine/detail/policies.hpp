#pragma once
/// \file
/// The policies of a trainer or evaluator (logic, handler, entry runtime):
/// those given with `with_logic` / `with_handler` / `with_runtime` or the
/// defaults, with the typed options merged in and the free-form options
/// consumed as PPE does. Internal (ppe::engine::detail), shared by
/// create_trainer.hpp and create_evaluator.hpp.

#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "ppe/detail/python_repr.hpp"
#include "ppe/engine/detail/sort_arguments.hpp"
#include "ppe/engine/options.hpp"
#include "ppe/handler/handler.hpp"
#include "ppe/handler/logic.hpp"
#include "ppe/runtime/base_runtime.hpp"
#include "ppe/runtime/registry.hpp"
#include "ppe/runtime/runtime.hpp"
#include "ppe/state.hpp"

namespace ppe::engine::detail {

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

/// The model type of named models (`training::Models`): there is no typed
/// model for the default `Logic` to call, so a logic must be given.
struct NoModel {};

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

}  // namespace ppe::engine::detail
