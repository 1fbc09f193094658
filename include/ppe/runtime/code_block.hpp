#pragma once
/// \file
/// `ppe::runtime::CodeBlock`: one step of work handed to a runtime's `execute`
/// (PPE's `ppe.handler.CodeBlock`): a function from a batch to named outputs,
/// the optimizers it updates (and where their steps are counted), and which
/// outputs to back-propagate.

#include <ATen/core/Tensor.h>
#include <torch/ordered_dict.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ppe/amp/step_counter.hpp"

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
  /// Where the runtime records each optimizer's step, applied or not (not
  /// owned): empty, or one per optimizer, in the same order. ppe's
  /// `CodeBlockLogic` passes its optimizers' counters here, so that steps a
  /// grad scaler skipped are not counted (`GradScaler::step(optimizer,
  /// counter)`).
  std::vector<amp::StepCounter*> step_counters;
  /// Whether to back-propagate at all.
  bool backprop = true;
  /// The output to back-propagate; unset: every output that is a one-element
  /// floating or complex tensor with a grad_fn (PPE's rule).
  std::optional<std::string> backprop_from;
};

}  // namespace ppe::runtime
