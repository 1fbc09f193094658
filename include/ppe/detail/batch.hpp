#pragma once
/// \file
/// How the library calls a function or a module on a batch, as PPE does
/// (`f(*batch)` for sequences, `f(batch)` otherwise): shared by the
/// Evaluator extension and the engine's default Logic.
///
/// - a `torch::data::Example` as `f(data, target)` (`f(data)` without a target);
/// - a `std::tuple`/`std::pair` as `f(elements...)`;
/// - anything else (a tensor, a name→tensor map, a vector) as `f(batch)`;
/// - when the unpacked form does not compile, the whole batch is passed.
/// A module handle is called through `forward`.

#include <cstddef>
#include <functional>
#include <tuple>
#include <type_traits>
#include <utility>

namespace torch::data {
// Declared, not included (torch/data/example.h pulls in torch/types.h): batches
// of this type are recognised by their type.
template <typename Data, typename Target>
struct Example;
}  // namespace torch::data

namespace ppe::detail {

template <class T>
struct is_example : std::false_type {};
template <class D, class T>
struct is_example<torch::data::Example<D, T>> : std::true_type {};

/// Whether `B` is a `torch::data::Example` (with or without a target).
template <class B>
inline constexpr bool is_example_v = is_example<std::remove_cvref_t<B>>::value;

/// A LibTorch module holder (`torch::nn::Linear`, `TORCH_MODULE` types) or a
/// `std::shared_ptr` to a module, as the manager accepts models.
template <class M>
concept module_handle = requires(M& m) { m.ptr(); } || requires(M& m) { m->named_parameters(); };

/// Whether `f(args...)` can be evaluated: a callable, or a module (`forward`).
template <class F, class... A>
concept eval_callable = std::is_invocable_v<F&, A...> || requires(F& f, A&&... a) {
  f->forward(std::forward<A>(a)...);
};

// A module is called through `forward` (its holder's operator() cannot
// deduce the result of an overloaded forward), anything else through invoke.
template <class F, class... A>
decltype(auto) invoke_eval(F& f, A&&... a) {
  if constexpr (requires { f->forward(std::forward<A>(a)...); })
    return f->forward(std::forward<A>(a)...);
  else
    return std::invoke(f, std::forward<A>(a)...);
}

template <class B>
concept tuple_like = requires { std::tuple_size<std::remove_cvref_t<B>>::value; };

template <class F, class B>
constexpr bool unpacked_callable() {
  using D = std::remove_reference_t<B>;  // may be const
  if constexpr (is_example_v<D>) {
    if constexpr (requires(D& b) { b.target; })
      return eval_callable<F, decltype((std::declval<D&>().data)), decltype((std::declval<D&>().target))>;
    else
      return eval_callable<F, decltype((std::declval<D&>().data))>;
  } else if constexpr (tuple_like<D> && !std::is_array_v<D>) {
    return []<std::size_t... I>(std::index_sequence<I...>) {
      return eval_callable<F, decltype(std::get<I>(std::declval<D&>()))...>;
    }(std::make_index_sequence<std::tuple_size_v<D>>{});
  } else {
    return false;
  }
}

/// Calls `f` on `batch` as PPE does (see the file comment).
template <class F, class B>
decltype(auto) call_on_batch(F& f, B& batch) {
  if constexpr (unpacked_callable<F, B>()) {
    if constexpr (is_example_v<B>) {
      if constexpr (requires { batch.target; })
        return invoke_eval(f, batch.data, batch.target);
      else
        return invoke_eval(f, batch.data);
    } else {
      return std::apply([&f](auto&... xs) -> decltype(auto) { return invoke_eval(f, xs...); }, batch);
    }
  } else {
    static_assert(eval_callable<F, B&>,
                  "ppe: the evaluation or forward function cannot be called on a batch. It is called as "
                  "f(data, target) for a torch::data::Example, f(elements...) for a std::tuple or std::pair, and "
                  "f(batch) for anything else (or with the whole batch when the unpacked form does not compile); a "
                  "module is called through forward(...). Fix: give an eval_func that accepts the loader's batches");
    return invoke_eval(f, batch);
  }
}

template <class F, class B>
using raw_output_t = decltype(call_on_batch(std::declval<F&>(), std::declval<B&>()));

}  // namespace ppe::detail
