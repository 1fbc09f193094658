#pragma once
/// \file
/// How `create_trainer` / `create_evaluator` sort their arguments after the
/// options: by type, into the policies (`with_logic`, `with_handler`,
/// `with_runtime`, `stop_when`), the evaluators (an `Evaluator` or
/// `evaluate(...)`) and the rest (extensions, entries, metrics), each kind as
/// a tuple. Internal (ppe::engine::detail).

#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

#include "ppe/engine/arguments.hpp"
#include "ppe/engine/evaluator.hpp"
#include "ppe/engine/trainer.hpp"
#include "ppe/training/extensions_manager.hpp"

namespace ppe::engine::detail {

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

}  // namespace ppe::engine::detail
