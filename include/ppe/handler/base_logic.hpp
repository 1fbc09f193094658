#pragma once
/// \file
/// The logic protocol (PPE's `ppe.handler.BaseLogic`): what a type must have
/// to serve as a training logic, and how the engine calls its hooks.
///
/// A *logic* is any type that opts in with `using logic_concept =
/// ppe::handler::logic_tag;` (or derives from `BaseLogic`) and has
///
/// | member | required | PPE | called |
/// |---|---|---|---|
/// | `Out train_step(const Models&, const Optimizers&, std::int64_t batch_idx, Batch& batch)` | yes | `train_step` | each training step (any batch type: a template member is fine) |
/// | `void train_step_optimizers(const Models&, const Optimizers&, std::int64_t batch_idx)` | no | `train_step_optimizers` | after `train_step` |
/// | `void train_epoch_begin(const Models&, std::int64_t epoch, std::int64_t iters_per_epoch)` | no | `train_epoch_begin` | before each epoch (PPE passes the loader; here the epoch's length) |
/// | `void train_epoch_end(const Models&, std::int64_t epoch)` | no | `train_epoch_end` | after each epoch |
/// | `void train_validation_begin(const Models&)` / `train_validation_end` | no | same | around each evaluation during training |
/// | `Out eval_step(const Models&, std::int64_t batch_idx, Batch& batch)` | for evaluators | `eval_step` | each evaluation step |
/// | `void consume_options(ppe::State& options)` | no | `consume_options` | by `create_trainer`/`create_evaluator`: pops the free-form option keys it knows |
///
/// `Models` and `Optimizers` are `ppe::training::Models` / `Optimizers` (named
/// type-erased handles). LibTorch's `Module::forward` is not virtual, so a
/// logic that runs models keeps typed handles of them (as `Logic<Model>`
/// does) and uses the named ones for modes and optimizers. A hook declared
/// with a signature the engine cannot call is a compile error naming the
/// expected signature, where it would otherwise be skipped silently.

#include <cstdint>
#include <type_traits>

#include "ppe/state.hpp"
#include "ppe/training/models.hpp"

namespace ppe::handler {

/// The tag a logic type declares: `using logic_concept = ppe::handler::logic_tag;`.
struct logic_tag {};

/// Whether `L` opted in as a logic.
template <class L>
concept logic = requires { typename L::logic_concept; } && std::is_same_v<typename L::logic_concept, logic_tag>;

/// An empty base for logic types: the tag, and no hooks (every optional hook
/// is a no-op when absent, as PPE's `BaseLogic` methods are).
struct BaseLogic {
  using logic_concept = logic_tag;
};

// ---- dispatch: what the handler calls (no-ops for absent optional hooks) ----
// A member of a hook's name that cannot be called with the engine's
// arguments is a compile error naming the expected signature.

#define PPE_LOGIC_DISPATCH_(NAME, SIGNATURE, ...)                                                          \
  {                                                                                                       \
    using L_ = std::remove_cvref_t<decltype(l)>;                                                          \
    if constexpr (requires { l.NAME(__VA_ARGS__); }) {                                                    \
      l.NAME(__VA_ARGS__);                                                                                \
    } else {                                                                                              \
      static_assert(!requires { &L_::NAME; }, "ppe: the logic declares " #NAME                            \
                                              " but the engine cannot call it so; expected: " SIGNATURE); \
    }                                                                                                     \
  }

/// Checks at compile time that `L` is a logic, with a message saying how to fix it.
template <class L>
constexpr bool check_logic() {
  static_assert(logic<L>,
                "ppe: this type is used as a training logic but does not opt in: declare `using logic_concept = "
                "ppe::handler::logic_tag;` in it, or derive it from ppe::handler::BaseLogic");
  return true;
}

template <class L>
void consume_options(L& l, State& options)
    PPE_LOGIC_DISPATCH_(consume_options, "void consume_options(ppe::State& options)", options)

template <class L>
void train_epoch_begin(L& l, const training::Models& models, std::int64_t epoch, std::int64_t iters_per_epoch)
    PPE_LOGIC_DISPATCH_(train_epoch_begin,
                        "void train_epoch_begin(const ppe::training::Models&, std::int64_t epoch, std::int64_t "
                        "iters_per_epoch)",
                        models, epoch, iters_per_epoch)

template <class L>
void train_epoch_end(L& l, const training::Models& models, std::int64_t epoch)
    PPE_LOGIC_DISPATCH_(train_epoch_end, "void train_epoch_end(const ppe::training::Models&, std::int64_t epoch)",
                        models, epoch)

template <class L>
void train_step_optimizers(L& l, const training::Models& models, const training::Optimizers& optimizers,
                           std::int64_t batch_idx)
    PPE_LOGIC_DISPATCH_(train_step_optimizers,
                        "void train_step_optimizers(const ppe::training::Models&, const ppe::training::Optimizers&, "
                        "std::int64_t batch_idx)",
                        models, optimizers, batch_idx)

template <class L>
void train_validation_begin(L& l, const training::Models& models)
    PPE_LOGIC_DISPATCH_(train_validation_begin, "void train_validation_begin(const ppe::training::Models&)", models)

template <class L>
void train_validation_end(L& l, const training::Models& models)
    PPE_LOGIC_DISPATCH_(train_validation_end, "void train_validation_end(const ppe::training::Models&)", models)

#undef PPE_LOGIC_DISPATCH_

/// The logic's `train_step` (required).
template <class L, class B>
decltype(auto) train_step(L& l, const training::Models& models, const training::Optimizers& optimizers,
                          std::int64_t batch_idx, B& batch) {
  static_assert(requires { l.train_step(models, optimizers, batch_idx, batch); },
                "ppe: the logic has no train_step callable on this batch; expected: Outputs train_step(const "
                "ppe::training::Models&, const ppe::training::Optimizers&, std::int64_t batch_idx, Batch& batch) "
                "(a template member accepts any batch type)");
  return l.train_step(models, optimizers, batch_idx, batch);
}

/// The logic's `eval_step` (required by evaluators).
template <class L, class B>
decltype(auto) eval_step(L& l, const training::Models& models, std::int64_t batch_idx, B& batch) {
  static_assert(requires { l.eval_step(models, batch_idx, batch); },
                "ppe: the logic has no eval_step callable on this batch, which an evaluator needs; expected: Outputs "
                "eval_step(const ppe::training::Models&, std::int64_t batch_idx, Batch& batch)");
  return l.eval_step(models, batch_idx, batch);
}

}  // namespace ppe::handler
