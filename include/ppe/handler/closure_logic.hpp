#pragma once
/// \file
/// `ppe::handler::ClosureLogic<Model>` (PPE's `ClousureLogic`, in
/// `ppe.handler._logic`): a step logic, given to the engine like the default
/// `Logic` (handler/logic.hpp), whose optimizer steps with a closure that
/// zeroes the gradients, runs the forward and the backward and returns the
/// loss, as LBFGS needs (it evaluates the loss several times per step):
/// `create_trainer(..., ppe::engine::with_logic(ppe::handler::ClosureLogic(model)))`.

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

#include <cstdint>
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

}  // namespace detail

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

}  // namespace ppe::handler
