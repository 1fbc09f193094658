#pragma once
/// \file
/// `ppe::utils::checkpoint` (PPE's `ppe.utils.checkpoint.checkpoint`, built
/// on `torch.utils.checkpoint`): activation checkpointing for the LibTorch
/// C++ frontend, which has none.
///
/// `checkpoint(fn, x...)` runs `fn(x...)` without keeping its intermediate
/// activations (only the inputs are saved); the backward pass runs `fn`
/// again, with the random generators put back in the state they had at the
/// forward (so dropout draws the same mask), and back-propagates through
/// that recomputation. Memory for the activations inside `fn` is traded for
/// one more forward of `fn`.
///
/// \code
///   auto h = ppe::utils::checkpoint(block, x);        // block: a module holder or any callable
///   auto [a, b] = ppe::utils::checkpoint([](const torch::Tensor& x) {
///     return std::make_tuple(x.sin(), x.cos()); }, h);
/// \endcode

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "ppe/detail/arg.hpp"
#include "ppe/detail/config.hpp"

namespace ppe::utils {

/// Options of `checkpoint`.
struct CheckpointOptions {
  /// Restore the default CPU generator (and the CUDA generators of the
  /// inputs' devices) to their forward-time states while recomputing, so
  /// random operations (dropout) repeat exactly (PPE: `preserve_rng_state`).
  PPE_ARG(bool, preserve_rng_state) = true;
};

namespace detail {

/// The type-erased checkpointed function: inputs -> outputs.
using CheckpointFn = std::function<std::vector<at::Tensor>(const std::vector<at::Tensor>&)>;

/// Applies the checkpoint autograd function. `buffers` (a module's buffers,
/// e.g. BatchNorm's running statistics) are restored after the recomputation,
/// so that its side effects happen once, as without checkpointing.
PPE_DECL std::vector<at::Tensor> checkpoint_apply(CheckpointFn fn, std::vector<at::Tensor> buffers,
                                                  const std::vector<at::Tensor>& inputs,
                                                  const CheckpointOptions& options);

template <class T>
struct is_tensor_tuple : std::false_type {};
template <class... T>
struct is_tensor_tuple<std::tuple<T...>> : std::bool_constant<(std::is_same_v<T, at::Tensor> && ...)> {};

template <class F, class... X>
decltype(auto) call(F& fn, X&&... x) {
  if constexpr (requires { fn->forward(std::forward<X>(x)...); })
    return fn->forward(std::forward<X>(x)...);  // a module holder or a std::shared_ptr to a module
  else
    return fn(std::forward<X>(x)...);
}

template <class F>
std::vector<at::Tensor> module_buffers(F& fn) {
  if constexpr (requires { fn.ptr()->buffers(); })
    return fn.ptr()->buffers();
  else if constexpr (requires { fn->buffers(); })
    return fn->buffers();
  else
    return {};
}

}  // namespace detail

/// Runs `fn(inputs...)` keeping no intermediate activations, and recomputes
/// them in the backward pass (see the file comment).
///
/// `fn` is a callable or a module (a `TORCH_MODULE` holder or a
/// `std::shared_ptr` to one) taking the tensors and returning a tensor, a
/// `std::vector` or a `std::tuple` of tensors. For a module, its buffers
/// are restored after the recomputation, so BatchNorm's running statistics
/// are updated once per step, exactly as without checkpointing (PPE patches
/// the momentum instead, which is exact only up to rounding). Gradients
/// reach the inputs that require grad and, through the recomputed graph,
/// every leaf `fn` uses (a module's parameters); as in PyTorch, when no
/// input requires grad the outputs do not either.
template <class F, class... X>
  requires(std::is_convertible_v<const X&, const at::Tensor&> && ...)
auto checkpoint(const CheckpointOptions& options, F&& fn, const X&... inputs) {
  using R = std::remove_cvref_t<decltype(detail::call(fn, inputs...))>;
  static_assert(std::is_same_v<R, at::Tensor> || std::is_same_v<R, std::vector<at::Tensor>> ||
                    detail::is_tensor_tuple<R>::value,
                "ppe::utils::checkpoint: the function must return a torch::Tensor, a std::vector<torch::Tensor> or "
                "a std::tuple of torch::Tensor");
  auto erased = [f = fn](const std::vector<at::Tensor>& in) mutable -> std::vector<at::Tensor> {
    R r = [&]<std::size_t... I>(std::index_sequence<I...>) {
      return detail::call(f, in[I]...);
    }(std::index_sequence_for<X...>{});
    if constexpr (std::is_same_v<R, at::Tensor>)
      return {std::move(r)};
    else if constexpr (std::is_same_v<R, std::vector<at::Tensor>>)
      return r;
    else
      return std::apply([](auto&... t) { return std::vector<at::Tensor>{t...}; }, r);
  };
  std::vector<at::Tensor> out =
      detail::checkpoint_apply(std::move(erased), detail::module_buffers(fn), {at::Tensor(inputs)...}, options);
  if constexpr (std::is_same_v<R, at::Tensor>)
    return out.at(0);
  else if constexpr (std::is_same_v<R, std::vector<at::Tensor>>)
    return out;
  else
    return [&]<std::size_t... I>(std::index_sequence<I...>) {
      return R{out.at(I)...};
    }(std::make_index_sequence<std::tuple_size_v<R>>{});
}

/// `checkpoint` with the default options.
template <class F, class... X>
  requires(!std::is_same_v<std::remove_cvref_t<F>, CheckpointOptions> &&
           (std::is_convertible_v<const X&, const at::Tensor&> && ...))
auto checkpoint(F&& fn, const X&... inputs) {
  return checkpoint(CheckpointOptions{}, std::forward<F>(fn), inputs...);
}

}  // namespace ppe::utils

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/utils/impl/checkpoint.ipp"
#endif
