#pragma once
/// \file
/// `ppe::handler::forward` and `ppe::handler::update_parameters` (PPE's
/// `ppe.handler._code_block`): the code blocks (`ppe::runtime::CodeBlock`)
/// that a runtime's `execute` runs, as `CodeBlockLogic`
/// (handler/code_block_logic.hpp) hands them over.

#include <ATen/core/Tensor.h>

#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ppe/detail/batch.hpp"
#include "ppe/detail/dependent.hpp"
#include "ppe/handler/outputs.hpp"
#include "ppe/runtime/code_block.hpp"

namespace ppe::handler {

namespace detail {

/// Named outputs as a code block's `TensorDict`.
inline runtime::TensorDict to_tensor_dict(const Outputs& outs) {
  runtime::TensorDict d;
  for (const auto& item : outs) d.insert(item.key(), item.value());
  return d;
}

}  // namespace detail

/// PPE's `ppe.handler.forward(model)`: a code block that runs the model's
/// forward on a batch of named tensors, without backward or optimizer step.
/// `forward` is called with the `TensorDict` when it takes one, else with a
/// `std::map<std::string, at::Tensor>`; what it returns is named as
/// `normalize_outputs` names it (a `TensorDict` is kept as is).
template <class Model>
  requires ppe::detail::module_handle<Model>
runtime::CodeBlock forward(Model model) {
  runtime::CodeBlock block;
  // mutable: a module holder gives const access to a const module, and
  // LibTorch's forward is not const.
  block.func = [model = std::move(model)](const runtime::TensorDict& batch) mutable -> runtime::TensorDict {
    if constexpr (requires { model->forward(batch); }) {
      using R = std::remove_cvref_t<decltype(model->forward(batch))>;
      if constexpr (std::is_same_v<R, runtime::TensorDict>)
        return model->forward(batch);
      else
        return detail::to_tensor_dict(normalize_outputs(model->forward(batch)));
    } else if constexpr (requires(const std::map<std::string, at::Tensor>& m) { model->forward(m); }) {
      std::map<std::string, at::Tensor> m;
      for (const auto& item : batch) m.emplace(item.key(), item.value());
      return detail::to_tensor_dict(normalize_outputs(model->forward(m)));
    } else {
      static_assert(ppe::detail::dependent_t<std::false_type, Model>::value,
                    "ppe::handler::forward: a code block calls the model's forward with the batch's named tensors "
                    "(PPE's func(**batch)): give the model a forward(const ppe::runtime::TensorDict&) or "
                    "forward(const std::map<std::string, at::Tensor>&)");
      return runtime::TensorDict();
    }
  };
  block.backprop = false;
  return block;
}

/// PPE's `ppe.handler.update_parameters(model, optimizers, backprop_from)`: a
/// code block that runs the forward, back-propagates (`backprop_from`, or
/// every one-element floating output with a gradient function) and steps
/// `optimizers` (not owned: they must outlive the block's use).
template <class Model>
  requires ppe::detail::module_handle<Model>
runtime::CodeBlock update_parameters(Model model, std::vector<torch::optim::Optimizer*> optimizers,
                                     std::optional<std::string> backprop_from = std::nullopt) {
  runtime::CodeBlock block = forward(std::move(model));
  block.optimizers = std::move(optimizers);
  block.backprop = true;
  block.backprop_from = std::move(backprop_from);
  return block;
}

}  // namespace ppe::handler
