#pragma once
/// \file
/// The two alternative step logics of PPE's `ppe.handler` (beside the
/// default `Logic`, handler/logic.hpp):
/// - `ClosureLogic<Model>` (PPE's `ClousureLogic`): the optimizer steps with
///   a closure that zeroes the gradients, runs the forward and the backward
///   and returns the loss, as LBFGS needs (it evaluates the loss several
///   times per step);
/// - `CodeBlockLogic<Model>` (PPE's `CodeBlockLogic`): each step is a code
///   block (`ppe::runtime::CodeBlock`, made by `forward` / `update_parameters`)
///   handed to the model's runtime, whose `execute` runs the forward, the
///   backward and the optimizer steps (`PyTorchRuntime::execute`).
///
/// Both are used like `Logic`: `create_trainer(..., ppe::engine::with_logic(
/// ppe::handler::ClosureLogic(model)))`. They share one header because PPE
/// defines them in one module (`handler/_logic.py`) and each public header
/// costs the build a self-containment translation unit.

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>
#include <torch/ordered_dict.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ppe/detail/batch.hpp"
#include "ppe/detail/dependent.hpp"
#include "ppe/detail/python_repr.hpp"
#include "ppe/handler/base_logic.hpp"
#include "ppe/handler/logic.hpp"
#include "ppe/handler/outputs.hpp"
#include "ppe/runtime/autocast.hpp"
#include "ppe/runtime/base_runtime.hpp"
#include "ppe/runtime/code_block.hpp"
#include "ppe/runtime/module_runtime.hpp"
#include "ppe/state.hpp"
#include "ppe/training/models.hpp"

namespace ppe::handler {

namespace detail {

/// The module behind a model handle (a module holder or a `std::shared_ptr`).
template <class Model>
std::shared_ptr<torch::nn::Module> module_ptr_of(const Model& model) {
  if constexpr (requires { model.ptr(); })
    return model.ptr();
  else
    return model;
}

/// The module named `name` among `models`; `who` names the caller in the error.
template <class Module = torch::nn::Module>
Module& named_module(const training::Models& models, const std::string& name, const char* who) {
  if (const training::ModelRef* m = models.find(name)) return static_cast<Module&>(*m->module());
  throw std::out_of_range(std::string(who) + ": no model named '" + name +
                          "'; models: " + ppe::detail::python_str_list(models.names()));
}

/// Named outputs as a code block's `TensorDict` (and back).
inline runtime::TensorDict to_tensor_dict(const Outputs& outs) {
  runtime::TensorDict d;
  for (const auto& item : outs) d.insert(item.key(), item.value());
  return d;
}
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

// ---------------------------------------------------------------------------
// ClosureLogic
// ---------------------------------------------------------------------------

/// PPE's `ClousureLogic` for one model of type `Model` named `model_name`:
/// `train_step` calls `optimizer.step(closure)` on the model's optimizer,
/// where the closure, under autocast, zeroes the gradients and runs the
/// forward pass (the batch reaches `forward` as with `Logic`), back-propagates
/// the loss (or calls `backward_function` on it) and returns it. The
/// optimizer may call the closure several times (LBFGS); the step's outputs
/// are those of the first call, the evaluation at the parameters the step
/// started from, which is what LBFGS's step returns and hence what PPE
/// reports. `train_step_optimizers` does nothing: the step is taken in
/// `train_step` (PPE). Every other hook is `Logic`'s.
///
/// The loss is the one output to back-propagate: the one named by
/// `backward_outputs`, else the one output that is a one-element floating
/// tensor with a gradient function (PPE's rule). PPE requires the model to
/// return exactly one output; here other outputs may come along with it.
/// No output to back-propagate, or several, is an error.
///
/// Options are `LogicOptions`; a grad scaler is refused (PPE), and so are
/// gradient clipping and accumulation, which the closure protocol leaves no
/// room for (the optimizer reads the gradients inside its step).
template <class Model>
class ClosureLogic : public BaseLogic {
 public:
  explicit ClosureLogic(Model model, LogicOptions options = {}, std::string model_name = "main")
      : base_(model, std::move(options), std::move(model_name)), model_(std::move(model)) {
    check_options();
  }

  const Model& model() const noexcept { return model_; }
  const std::string& model_name() const noexcept { return base_.model_name(); }
  const LogicOptions& options() const noexcept { return base_.options(); }

  /// `Logic::consume_options`, then the checks of closure mode.
  void consume_options(State& options) {
    base_.consume_options(options);
    check_options();
  }
  /// `Logic::merge_options`, then the checks of closure mode.
  void merge_options(const LogicOptions& options) {
    base_.merge_options(options);
    check_options();
  }

  void train_epoch_begin(const training::Models& models, std::int64_t epoch, std::int64_t iters_per_epoch) {
    base_.train_epoch_begin(models, epoch, iters_per_epoch);
  }
  void train_epoch_end(const training::Models& models, std::int64_t epoch) { base_.train_epoch_end(models, epoch); }
  void train_validation_begin(const training::Models& models) { base_.train_validation_begin(models); }
  void train_validation_end(const training::Models& models) { base_.train_validation_end(models); }

  template <class Batch>
  Outputs train_step(const training::Models& /*models*/, const training::Optimizers& optimizers,
                     std::int64_t /*batch_idx*/, Batch& batch) {
    const training::OptimizerRef* ref = optimizers.find(model_name());
    if (!ref)
      throw std::out_of_range("ppe::handler::ClosureLogic: no optimizer named '" + model_name() +
                              "' (the logic steps the optimizer named as its model); optimizers: " +
                              ppe::detail::python_str_list(optimizers.names()));
    auto& opt = static_cast<Optimizer&>(ref->optimizer());
    std::optional<Outputs> first;
    auto closure = [&]() -> at::Tensor {
      Outputs outs;
      {
        std::optional<runtime::AutocastGuard> autocast;
        if (options().autocast().enabled()) autocast.emplace(options().autocast(), device_type());
        opt.zero_grad();
        outs = forward(batch);
      }
      at::Tensor loss = select_loss(outs);
      if (options().backward_function())
        options().backward_function()(loss);
      else
        loss.backward();
      if (!first) first = std::move(outs);
      return loss;
    };
    opt.step(closure);
    if (!first)
      throw std::runtime_error("ppe::handler::ClosureLogic: the optimizer's step(closure) did not call the closure");
    ref->record_step();  // LRScheduler's wait_for_first_optimizer_step counts it
    return std::move(*first);
  }

  /// Nothing: the optimizer stepped in `train_step` (PPE: the closure mode
  /// fixes the stepping; use `Logic` to change it).
  void train_step_optimizers(const training::Models&, const training::Optimizers&, std::int64_t) {}

  template <class Batch>
  Outputs eval_step(const training::Models& models, std::int64_t batch_idx, Batch& batch) {
    return base_.eval_step(models, batch_idx, batch);
  }

 private:
  using Module = ppe::detail::dependent_t<torch::nn::Module, Model>;
  using Optimizer = ppe::detail::dependent_t<torch::optim::Optimizer, Model>;

  template <class Batch>
  Outputs forward(Batch& batch) {
    if constexpr (std::is_void_v<ppe::detail::raw_output_t<Model, Batch>>) {
      static_assert(ppe::detail::dependent_t<std::false_type, Batch>::value,
                    "ppe::handler::ClosureLogic: the model's forward returns nothing; it must return the loss");
      return {};
    } else {
      return normalize_outputs(ppe::detail::call_on_batch(model_, batch));
    }
  }

  at::Tensor select_loss(const Outputs& outs) const {
    std::vector<std::string> names;
    at::Tensor loss;
    auto take = [&](const std::string& k, const at::Tensor& v) {
      names.push_back(k);
      loss = v;
    };
    if (const auto& wanted = options().backward_outputs()) {
      for (const std::string& k : *wanted)
        if (const at::Tensor* v = outs.find(k); v && v->defined() && v->grad_fn() != nullptr) take(k, *v);
    } else {
      for (const auto& item : outs) {
        const at::Tensor& v = item.value();
        if (v.defined() && v.grad_fn() != nullptr && v.numel() == 1 &&
            (c10::isFloatingType(v.scalar_type()) || c10::isComplexType(v.scalar_type())))
          take(item.key(), v);
      }
    }
    if (names.size() == 1) return loss;
    const std::string which = ppe::detail::python_str_list(names);
    if (names.empty())
      throw std::runtime_error("ppe::handler::ClosureLogic: no backward target found among the outputs " +
                               ppe::detail::python_key_list(outs) +
                               " (the closure returns one loss: a one-element floating tensor with a gradient "
                               "function, or the output named by backward_outputs)");
    throw std::runtime_error("ppe::handler::ClosureLogic: the closure returns one loss, but " +
                             std::to_string(names.size()) + " outputs are to be back-propagated: " + which +
                             " (set backward_outputs to one of them)");
  }

  c10::DeviceType device_type() const {
    for (const auto& p : static_cast<Module&>(*detail::module_ptr_of(model_)).parameters()) return p.device().type();
    return c10::DeviceType::CPU;
  }

  void check_options() const {
    const LogicOptions& o = options();
    if (o.grad_scaler())
      throw std::invalid_argument("ppe::handler::ClosureLogic: a grad scaler does not support the closure step mode "
                                  "(PPE's error too); use Logic");
    if (o.accumulation_steps() != 1)
      throw std::invalid_argument("ppe::handler::ClosureLogic: accumulation_steps must be 1 in closure mode, got " +
                                  std::to_string(o.accumulation_steps()) + " (the optimizer steps on every batch)");
    if (o.clip_grad_norm() || o.clip_grad_value())
      throw std::invalid_argument("ppe::handler::ClosureLogic: gradient clipping is not supported in closure mode "
                                  "(the optimizer reads the gradients inside its step); use Logic");
  }

  Logic<Model> base_;
  Model model_;
};

template <class M>
ClosureLogic(M, LogicOptions = {}, std::string = "main") -> ClosureLogic<M>;

// ---------------------------------------------------------------------------
// Code blocks and CodeBlockLogic
// ---------------------------------------------------------------------------

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
/// at::Tensor>`). After each training step every optimizer's step is counted
/// (`OptimizerRef::record_step`) even when a grad scaler skipped it: the
/// runtime does not say.
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
    for (const auto& [name, ref] : optimizers) opts.push_back(&ref.optimizer());
    const runtime::CodeBlock block = update_parameters(model_, std::move(opts), backward_output_);
    Outputs outs = detail::to_outputs(runtime_of(models)->execute(block, detail::batch_as_dict(batch)));
    for (const auto& [name, ref] : optimizers) ref.record_step();
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
