#pragma once
/// \file
/// `ppe::handler::CodeBlockLogic<Model>` (PPE's `CodeBlockLogic`, in
/// `ppe.handler._logic`): a step logic, given to the engine like the default
/// `Logic` (handler/logic.hpp), where each step is a code block
/// (`ppe::runtime::CodeBlock`, made by `forward` / `update_parameters`,
/// handler/code_block.hpp) handed to the model's runtime, whose `execute` runs
/// the forward, the backward and the optimizer steps
/// (`PyTorchRuntime::execute`):
/// `create_trainer(..., ppe::engine::with_logic(ppe::handler::CodeBlockLogic(model)))`.

#include <ATen/core/Tensor.h>
#include <torch/ordered_dict.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ppe/amp/step_counter.hpp"
#include "ppe/detail/batch.hpp"
#include "ppe/detail/dependent.hpp"
#include "ppe/detail/python_repr.hpp"
#include "ppe/handler/base_logic.hpp"
#include "ppe/handler/code_block.hpp"
#include "ppe/handler/outputs.hpp"
#include "ppe/runtime/base_runtime.hpp"
#include "ppe/runtime/code_block.hpp"
#include "ppe/runtime/module_runtime.hpp"
#include "ppe/state.hpp"
#include "ppe/training/models.hpp"

namespace ppe::handler {

namespace detail {

/// The module named `name` among `models`; `who` names the caller in the error.
template <class Module = torch::nn::Module>
Module& named_module(const training::Models& models, const std::string& name, const char* who) {
  if (const training::ModelRef* m = models.find(name)) return static_cast<Module&>(*m->module());
  throw std::out_of_range(std::string(who) + ": no model named '" + name +
                          "'; models: " + ppe::detail::python_str_list(models.names()));
}

/// A code block's `TensorDict` as named outputs.
inline Outputs to_outputs(const runtime::TensorDict& d) {
  Outputs outs;
  for (const auto& item : d) outs.insert(item.key(), item.value());
  return outs;
}

/// A batch of named tensors as a `TensorDict` (PPE's code blocks call
/// `func(**batch)`: their batches are dicts).
template <class B>
runtime::TensorDict batch_as_dict(const B& batch) {
  if constexpr (std::is_same_v<B, runtime::TensorDict>) {
    return batch;
  } else if constexpr (requires { std::string(batch.begin()->first); at::Tensor(batch.begin()->second); }) {
    runtime::TensorDict d;
    for (const auto& [k, v] : batch) d.insert(std::string(k), at::Tensor(v));
    return d;
  } else {
    static_assert(ppe::detail::dependent_t<std::false_type, B>::value,
                  "ppe::handler::CodeBlockLogic: a code block's batch is named tensors, as PPE calls func(**batch): "
                  "give batches as ppe::runtime::TensorDict or std::map<std::string, at::Tensor>");
    return runtime::TensorDict();
  }
}

}  // namespace detail

/// PPE's `CodeBlockLogic` for one model of type `Model` named `model_name`:
/// - `train_step`: `update_parameters(model, every optimizer of the trainer,
///   backward_output)` executed by the model's runtime on the batch: the
///   runtime zeroes, runs the forward, back-propagates and steps (under its
///   autocast and grad scaler options, `PyTorchRuntime::execute`);
/// - `eval_step`: `forward(model)` executed by the runtime;
/// - epoch and validation hooks: train / eval mode, as `Logic`.
///
/// The runtime is the one `ppe::to` recorded for the model (or, when the
/// model itself has none, for its first submodule that has one, as the
/// handler finds runtime modules); none is an error naming `ppe::to`. It is
/// looked up at every step, so a runtime replaced in between is used.
/// Batches are named tensors (`TensorDict` or `std::map<std::string,
/// at::Tensor>`). The optimizers' steps are counted by the runtime, which
/// gets their step counters in the code block (`CodeBlock::step_counters`):
/// `PyTorchRuntime` counts only the steps its grad scaler applied, as
/// `Logic` does. A runtime that records nothing there (one written before
/// the block carried counters) gets each optimizer's step counted once per
/// training step, applied or not.
template <class Model>
class CodeBlockLogic : public BaseLogic {
  static_assert(ppe::detail::module_handle<Model>,
                "ppe::handler::CodeBlockLogic<Model>: Model must be a LibTorch module holder or a std::shared_ptr "
                "to a module");

 public:
  /// `backward_output`: PPE's `backward_outputs` option (one name: the code
  /// block's `backprop_from`); unset: PPE's automatic choice.
  explicit CodeBlockLogic(Model model, std::optional<std::string> backward_output = std::nullopt,
                          std::string model_name = "main")
      : model_(std::move(model)), backward_output_(std::move(backward_output)), model_name_(std::move(model_name)) {}

  const Model& model() const noexcept { return model_; }
  const std::string& model_name() const noexcept { return model_name_; }
  const std::optional<std::string>& backward_output() const noexcept { return backward_output_; }

  /// Pops PPE's `backward_outputs` key: one string (PPE asserts a `str`).
  void consume_options(State& options) {
    if (auto v = options.pop("backward_outputs")) {
      if (!v->is_string())
        throw std::invalid_argument("ppe::handler::CodeBlockLogic: option 'backward_outputs' must be one string "
                                    "(a code block back-propagates from one output)");
      backward_output_ = v->as_string();
    }
  }

  void train_epoch_begin(const training::Models& models, std::int64_t /*epoch*/, std::int64_t /*iters_per_epoch*/) {
    module(models).train(true);
  }
  void train_epoch_end(const training::Models& models, std::int64_t /*epoch*/) { module(models).train(false); }
  void train_validation_begin(const training::Models& models) { module(models).train(false); }
  void train_validation_end(const training::Models& models) { module(models).train(true); }

  template <class Batch>
  Outputs train_step(const training::Models& models, const training::Optimizers& optimizers,
                     std::int64_t /*batch_idx*/, Batch& batch) {
    std::vector<torch::optim::Optimizer*> opts;
    std::vector<amp::StepCounter*> counters;
    std::vector<std::int64_t> recorded;  // each counter's records before the step
    for (const auto& [name, ref] : optimizers) {
      opts.push_back(&ref.optimizer());
      counters.push_back(&ref.step_counter());
      recorded.push_back(ref.step_counter().recorded());
    }
    runtime::CodeBlock block = update_parameters(model_, std::move(opts), backward_output_);
    block.step_counters = counters;
    Outputs outs = detail::to_outputs(runtime_of(models)->execute(block, detail::batch_as_dict(batch)));
    for (std::size_t i = 0; i < counters.size(); ++i)
      if (counters[i]->recorded() == recorded[i]) counters[i]->record();
    return outs;
  }

  template <class Batch>
  Outputs eval_step(const training::Models& models, std::int64_t /*batch_idx*/, Batch& batch) {
    return detail::to_outputs(runtime_of(models)->execute(forward(model_), detail::batch_as_dict(batch)));
  }

 private:
  using Module = ppe::detail::dependent_t<torch::nn::Module, Model>;

  Module& module(const training::Models& models) const {
    return detail::named_module<Module>(models, model_name_, "ppe::handler::CodeBlockLogic");
  }

  std::shared_ptr<runtime::BaseRuntime> runtime_of(const training::Models& models) const {
    Module& m = module(models);
    if (auto rt = runtime::module_runtime(m)) return rt;
    for (const auto& [name, sub] : runtime::named_runtime_modules(m))
      if (auto rt = runtime::module_runtime(*sub)) return rt;
    throw std::runtime_error("ppe::handler::CodeBlockLogic: the model '" + model_name_ +
                             "' has no runtime to execute code blocks: call ppe::to(model, device) first");
  }

  Model model_;
  std::optional<std::string> backward_output_;
  std::string model_name_;
};

template <class M>
CodeBlockLogic(M) -> CodeBlockLogic<M>;
template <class M>
CodeBlockLogic(M, std::optional<std::string>) -> CodeBlockLogic<M>;
template <class M>
CodeBlockLogic(M, std::optional<std::string>, std::string) -> CodeBlockLogic<M>;

}  // namespace ppe::handler
