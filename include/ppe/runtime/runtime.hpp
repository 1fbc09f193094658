#pragma once
/// \file
/// The runtime protocol (PPE's `BaseRuntime`): what the engine needs from the
/// policy that places modules and batches on a device and runs device-specific
/// code around the steps.
///
/// A runtime is any type with the two required members
///
/// | member | PPE | does |
/// |---|---|---|
/// | `void move_module(torch::nn::Module&)` | `move_module` | moves the module in place (LibTorch's `Module::to` is in place) |
/// | `at::Tensor move_tensor(const at::Tensor&)` | `move_tensor` | returns the tensor on the runtime's device |
///
/// and any of these optional hooks, called by the engine where PPE calls them
/// (spec §5.4); a hook that is absent is a no-op:
///
/// | hook (canonical signature) | called |
/// |---|---|
/// | `B convert_batch(B)` (any batch type) | before each step; default: `move_tensor` on every tensor of the structure (convert_batch.hpp). A template cannot be virtual: a runtime reached through `std::shared_ptr<BaseRuntime>` (the registry's, a device name) converts through its virtual `move_tensor`; give a runtime with its own `convert_batch` by its type (`ppe::engine::with_runtime`) |
/// | `void initialize_module(torch::nn::Module&, AnyRef loader_or_batch, torch::optim::Optimizer*)` | once per module, at train/eval setup (optimizer null in evaluation) |
/// | `void train_epoch_begin(torch::nn::Module&)` / `train_epoch_end` | around each training epoch |
/// | `void train_pre_step(AnyRef trainer, torch::nn::Module&, std::int64_t batch_idx, AnyRef batch)` | before each training step |
/// | `void train_post_step(AnyRef trainer, torch::nn::Module&, std::int64_t batch_idx, AnyRef batch, AnyRef outs)` | after each training step |
/// | `void train_validation_begin(torch::nn::Module&)` / `train_validation_end` | around each evaluation run during training |
/// | `void eval_pre_step(AnyRef evaluator, torch::nn::Module&, std::int64_t, AnyRef batch)` / `eval_post_step(..., AnyRef outs)` | around each evaluation step |
/// | `void train_cleanup(torch::nn::Module&)` | once, when training ends |
/// | `TensorDict execute(const CodeBlock&, const TensorDict& batch)` | by code-block logic (forward, backward, optimizer steps) |
/// | `ppe::State state_dict() const` / `void load_state_dict(const ppe::State&)` | the trainer's entry runtime: saved as the state object `runtime` when its state is not empty at the trainer's start |
///
/// The engine passes its own objects (trainer, batch, outputs); a hook may
/// take them as `AnyRef` (what `BaseRuntime`'s virtual hooks do), as the
/// concrete types, or as template parameters.
///
/// Diagnostics: a type without the required members is rejected with a message
/// listing them (`check_runtime<R>()`); a hook declared with a signature the
/// engine cannot call is a compile error naming the expected signature, where
/// it would otherwise be skipped silently. A *misspelled* hook name cannot be
/// detected on an arbitrary type; derive from `BaseRuntime` and mark hooks
/// `override`, and the compiler rejects a misspelling.

#include <ATen/core/Tensor.h>

#include <concepts>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "ppe/runtime/any_ref.hpp"
#include "ppe/runtime/code_block.hpp"
#include "ppe/runtime/convert_batch.hpp"
#include "ppe/state.hpp"

namespace torch::nn {
class Module;
}  // namespace torch::nn

namespace ppe::runtime {

/// The required members of a runtime.
template <class R>
concept runtime = requires(R& r, torch::nn::Module& m, const at::Tensor& t) {
  r.move_module(m);
  { r.move_tensor(t) } -> std::convertible_to<at::Tensor>;
};

/// Rejects a type that is not a runtime with a message that says what is
/// missing (use it where a runtime type is accepted: `static_assert(check_runtime<R>())`).
template <class R>
constexpr bool check_runtime() {
  static_assert(requires(R& r, torch::nn::Module& m) { r.move_module(m); },
                "ppe: this type is used as a runtime but has no `void move_module(torch::nn::Module&)` (it moves a "
                "module to the runtime's device in place). Fix: declare it, or derive from "
                "ppe::runtime::PyTorchRuntime / ppe::runtime::BaseRuntime.");
  static_assert(requires(R& r, const at::Tensor& t) {
    { r.move_tensor(t) } -> std::convertible_to<at::Tensor>;
  }, "ppe: this type is used as a runtime but has no `at::Tensor move_tensor(const at::Tensor&)` (it returns the "
     "tensor on the runtime's device). Fix: declare it, or derive from ppe::runtime::PyTorchRuntime / "
     "ppe::runtime::BaseRuntime.");
  return true;
}

/// One concept per optional hook, with the canonical argument types.
namespace hooks {
template <class R>
concept initialize_module = requires(R& r, torch::nn::Module& m, AnyRef a, torch::optim::Optimizer* o) {
  r.initialize_module(m, a, o);
};
template <class R>
concept train_epoch_begin = requires(R& r, torch::nn::Module& m) { r.train_epoch_begin(m); };
template <class R>
concept train_epoch_end = requires(R& r, torch::nn::Module& m) { r.train_epoch_end(m); };
template <class R>
concept train_pre_step = requires(R& r, AnyRef t, torch::nn::Module& m, std::int64_t i, AnyRef b) {
  r.train_pre_step(t, m, i, b);
};
template <class R>
concept train_post_step = requires(R& r, AnyRef t, torch::nn::Module& m, std::int64_t i, AnyRef b, AnyRef o) {
  r.train_post_step(t, m, i, b, o);
};
template <class R>
concept train_validation_begin = requires(R& r, torch::nn::Module& m) { r.train_validation_begin(m); };
template <class R>
concept train_validation_end = requires(R& r, torch::nn::Module& m) { r.train_validation_end(m); };
template <class R>
concept eval_pre_step = requires(R& r, AnyRef e, torch::nn::Module& m, std::int64_t i, AnyRef b) {
  r.eval_pre_step(e, m, i, b);
};
template <class R>
concept eval_post_step = requires(R& r, AnyRef e, torch::nn::Module& m, std::int64_t i, AnyRef b, AnyRef o) {
  r.eval_post_step(e, m, i, b, o);
};
template <class R>
concept train_cleanup = requires(R& r, torch::nn::Module& m) { r.train_cleanup(m); };
template <class R>
concept execute = requires(R& r, const CodeBlock& c, const TensorDict& b) {
  { r.execute(c, b) } -> std::convertible_to<TensorDict>;
};
template <class R>
concept state_dict = requires(const R& r) {
  { r.state_dict() } -> std::convertible_to<State>;
};
template <class R>
concept load_state_dict = requires(R& r, const State& s) { r.load_state_dict(s); };
}  // namespace hooks

namespace detail {
/// The runtime behind `r`: itself, or what a pointer-like handle points to
/// (`std::shared_ptr<BaseRuntime>` from the registry).
template <class R>
decltype(auto) deref(R& r) {
  if constexpr (runtime<R>)
    return (r);
  else
    return (*r);
}
}  // namespace detail

// ---- dispatch: what the engine calls (no-ops for absent hooks) -------------
// Each calls the hook with the engine's arguments when it can; when the type
// declares a member of that name that cannot be called so, the static_assert
// names the expected signature instead of skipping the hook silently.

#define PPE_RUNTIME_DISPATCH_(NAME, SIGNATURE, ...)                                                              \
  {                                                                                                             \
    auto& rt = detail::deref(r);                                                                                \
    using RT = std::remove_cvref_t<decltype(rt)>;                                                               \
    if constexpr (requires { rt.NAME(__VA_ARGS__); }) {                                                         \
      rt.NAME(__VA_ARGS__);                                                                                     \
    } else {                                                                                                    \
      static_assert(!requires { &RT::NAME; }, "ppe: the runtime declares " #NAME                                \
                                              " but the engine cannot call it with these arguments; expected: " \
                                              SIGNATURE);                                                       \
    }                                                                                                           \
  }

/// PPE's `convert_batch`: the runtime's own `convert_batch(batch)` when it has
/// one, else `move_tensor` on every tensor of the structure.
template <class R, class B>
std::remove_cvref_t<B> convert_batch(R& r, B&& batch) {
  auto& rt = detail::deref(r);
  if constexpr (requires { rt.convert_batch(batch); })
    return rt.convert_batch(std::forward<B>(batch));
  else
    return convert_batch_with(std::remove_cvref_t<B>(std::forward<B>(batch)),
                              [&rt](const at::Tensor& t) { return rt.move_tensor(t); });
}

template <class R, class L>
void initialize_module(R& r, torch::nn::Module& module, const L& loader_or_batch,
                       torch::optim::Optimizer* optimizer = nullptr)
    PPE_RUNTIME_DISPATCH_(initialize_module,
                          "void initialize_module(torch::nn::Module&, ppe::runtime::AnyRef loader_or_batch, "
                          "torch::optim::Optimizer*)",
                          module, AnyRef(loader_or_batch), optimizer)

template <class R>
void train_epoch_begin(R& r, torch::nn::Module& module)
    PPE_RUNTIME_DISPATCH_(train_epoch_begin, "void train_epoch_begin(torch::nn::Module&)", module)

template <class R>
void train_epoch_end(R& r, torch::nn::Module& module)
    PPE_RUNTIME_DISPATCH_(train_epoch_end, "void train_epoch_end(torch::nn::Module&)", module)

template <class R, class T, class B>
void train_pre_step(R& r, T&& trainer, torch::nn::Module& module, std::int64_t batch_idx, const B& batch)
    PPE_RUNTIME_DISPATCH_(train_pre_step,
                          "void train_pre_step(ppe::runtime::AnyRef trainer, torch::nn::Module&, std::int64_t "
                          "batch_idx, ppe::runtime::AnyRef batch)",
                          trainer, module, batch_idx, batch)

template <class R, class T, class B, class O>
void train_post_step(R& r, T&& trainer, torch::nn::Module& module, std::int64_t batch_idx, const B& batch,
                     const O& outs)
    PPE_RUNTIME_DISPATCH_(train_post_step,
                          "void train_post_step(ppe::runtime::AnyRef trainer, torch::nn::Module&, std::int64_t "
                          "batch_idx, ppe::runtime::AnyRef batch, ppe::runtime::AnyRef outs)",
                          trainer, module, batch_idx, batch, outs)

template <class R>
void train_validation_begin(R& r, torch::nn::Module& module)
    PPE_RUNTIME_DISPATCH_(train_validation_begin, "void train_validation_begin(torch::nn::Module&)", module)

template <class R>
void train_validation_end(R& r, torch::nn::Module& module)
    PPE_RUNTIME_DISPATCH_(train_validation_end, "void train_validation_end(torch::nn::Module&)", module)

template <class R, class E, class B>
void eval_pre_step(R& r, E&& evaluator, torch::nn::Module& module, std::int64_t batch_idx, const B& batch)
    PPE_RUNTIME_DISPATCH_(eval_pre_step,
                          "void eval_pre_step(ppe::runtime::AnyRef evaluator, torch::nn::Module&, std::int64_t "
                          "batch_idx, ppe::runtime::AnyRef batch)",
                          evaluator, module, batch_idx, batch)

template <class R, class E, class B, class O>
void eval_post_step(R& r, E&& evaluator, torch::nn::Module& module, std::int64_t batch_idx, const B& batch,
                    const O& outs)
    PPE_RUNTIME_DISPATCH_(eval_post_step,
                          "void eval_post_step(ppe::runtime::AnyRef evaluator, torch::nn::Module&, std::int64_t "
                          "batch_idx, ppe::runtime::AnyRef batch, ppe::runtime::AnyRef outs)",
                          evaluator, module, batch_idx, batch, outs)

template <class R>
void train_cleanup(R& r, torch::nn::Module& module)
    PPE_RUNTIME_DISPATCH_(train_cleanup, "void train_cleanup(torch::nn::Module&)", module)

#undef PPE_RUNTIME_DISPATCH_

/// Runs a code block on the runtime; a runtime without `execute` cannot.
template <class R>
TensorDict execute(R& r, const CodeBlock& block, const TensorDict& batch) {
  auto& rt = detail::deref(r);
  using RT = std::remove_cvref_t<decltype(rt)>;
  static_assert(hooks::execute<RT>,
                "ppe: this runtime has no `ppe::runtime::TensorDict execute(const ppe::runtime::CodeBlock&, const "
                "ppe::runtime::TensorDict&)`; code-block logic needs it (PyTorchRuntime has one).");
  return rt.execute(block, batch);
}

/// The runtime's state (an empty dict when it has none; PPE's runtimes have none).
template <class R>
State runtime_state_dict(const R& r) {
  const auto& rt = detail::deref(const_cast<R&>(r));
  if constexpr (hooks::state_dict<std::remove_cvref_t<decltype(rt)>>)
    return rt.state_dict();
  else
    return State::dict();
}
/// Restores the runtime's state (a no-op when it has none).
template <class R>
void runtime_load_state_dict(R& r, const State& state) {
  auto& rt = detail::deref(r);
  if constexpr (hooks::load_state_dict<std::remove_cvref_t<decltype(rt)>>) rt.load_state_dict(state);
}

}  // namespace ppe::runtime
