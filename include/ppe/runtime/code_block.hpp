#pragma once
/// \file
/// `ppe::runtime::CodeBlock`: one step of work handed to a runtime's `execute`
/// (PPE's `ppe.handler.CodeBlock`): a function from a batch to named outputs,
/// the optimizers it updates, and which outputs to back-propagate.

#include <ATen/core/Tensor.h>
#include <torch/ordered_dict.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace torch::optim {
class Optimizer;
}  // namespace torch::optim

namespace ppe::runtime {

/// Named tensors in insertion order (a batch, or a step's outputs).
using TensorDict = torch::OrderedDict<std::string, at::Tensor>;

struct CodeBlock {
  /// The step's forward: batch -> named outputs (PPE calls `func(**batch)`).
  std::function<TensorDict(const TensorDict&)> func;
  /// The optimizers to zero and step (not owned; they outlive the call).
  std::vector<torch::optim::Optimizer*> optimizers;
  /// Whether to back-propagate at all.
  bool backprop = true;
  /// The output to back-propagate; unset: every output that is a one-element
  /// floating or complex tensor with a grad_fn (PPE's rule).
  std::optional<std::string> backprop_from;
};

}  // namespace ppe::runtime
