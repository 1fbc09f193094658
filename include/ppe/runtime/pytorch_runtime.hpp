#pragma once
/// \file
/// `ppe::runtime::PyTorchRuntime`: the runtime for LibTorch's own devices
/// (PPE's `PyTorchRuntime`): moves with `to(device)`, every step hook a
/// no-op, `execute` runs a code block under the `autocast` option and steps
/// through the `grad_scaler` option. No state of its own.

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "ppe/amp/grad_scaler.hpp"
#include "ppe/detail/python_repr.hpp"
#include "ppe/runtime/autocast.hpp"
#include "ppe/runtime/base_runtime.hpp"

namespace ppe::runtime {

class PyTorchRuntime : public BaseRuntime {
 public:
  /// `device_spec` must be a LibTorch device ("cpu", "cuda:1", ...).
  PyTorchRuntime(DeviceSpec device_spec, RuntimeOptions options = {})
      : PyTorchRuntime(device_spec, std::move(options), device_spec.torch_device()) {}
  /// For runtimes registered under their own name that place on a LibTorch
  /// device: `device_spec` is kept as given, `device` is where things go.
  PyTorchRuntime(DeviceSpec device_spec, RuntimeOptions options, c10::Device device)
      : BaseRuntime(std::move(device_spec), std::move(options)), device_(device) {
    // Validate the autocast option now (PPE raises in the constructor too),
    // not at the first step.
    if (this->options().autocast().enabled()) AutocastGuard check(this->options().autocast(), device_.type());
  }

  /// The LibTorch device modules and tensors are moved to.
  c10::Device device() const noexcept { return device_; }

  void move_module(torch::nn::Module& module) override { module.to(device_); }
  at::Tensor move_tensor(const at::Tensor& tensor) override {
    // A tensor already there is returned as is: `to` would too, after a trip
    // through the dispatcher that costs microseconds per tensor and step.
    if (!tensor.defined() || tensor.device() == device_) return tensor;
    return tensor.to(at::TensorOptions().device(device_));
  }

  /// The autocast region of the `autocast` option (disabled when the option is
  /// off), on the option's device type or else the runtime's.
  AutocastGuard autocast() const { return AutocastGuard(options().autocast(), device_.type()); }
  /// The `grad_scaler` option (null when none).
  const std::shared_ptr<amp::GradScaler>& grad_scaler() const noexcept { return options().grad_scaler(); }

  /// PPE's `PyTorchRuntime.execute`: zero every optimizer's gradients; run
  /// `block.func(batch)` under autocast; back-propagate the selected outputs
  /// (scaled by the grad scaler, which allows exactly one); step every
  /// optimizer (through the scaler and then `update()`, which allows exactly
  /// one optimizer), recording each step in `block.step_counters` when given
  /// (a step the scaler skipped is recorded as not applied). Returns the
  /// outputs.
  TensorDict execute(const CodeBlock& block, const TensorDict& batch) override {
    if (!block.func) throw std::invalid_argument("ppe::runtime::PyTorchRuntime::execute: the code block has no func");
    const auto& scaler = grad_scaler();
    for (auto* opt : block.optimizers) {
      if (!opt) throw std::invalid_argument("ppe::runtime::PyTorchRuntime::execute: a null optimizer in the code block");
      opt->zero_grad();
    }
    const auto& counters = block.step_counters;
    if (!counters.empty() && counters.size() != block.optimizers.size())
      throw std::invalid_argument("ppe::runtime::PyTorchRuntime::execute: the code block has " +
                                  std::to_string(counters.size()) + " step counters for " +
                                  std::to_string(block.optimizers.size()) + " optimizers (give none or one each)");
    for (auto* counter : counters)
      if (!counter)
        throw std::invalid_argument("ppe::runtime::PyTorchRuntime::execute: a null step counter in the code block");
    TensorDict out;
    {
      const AutocastGuard guard = autocast();
      out = block.func(batch);
    }
    if (block.backprop) {
      std::vector<std::string> keys;
      if (!block.backprop_from) {
        for (const auto& item : out)
          if (backpropable(item.value())) keys.push_back(item.key());
      } else {
        if (!out.contains(*block.backprop_from))
          throw std::invalid_argument("ppe::runtime::PyTorchRuntime::execute: backprop_from '" + *block.backprop_from +
                                      "' is not an output; outputs: " + ppe::detail::python_key_list(out));
        keys.push_back(*block.backprop_from);
      }
      if (scaler && keys.size() != 1)
        throw std::invalid_argument(
            "ppe::runtime::PyTorchRuntime::execute: loss scaling needs exactly one output to back-propagate, got " +
            std::to_string(keys.size()) + " (set backprop_from)");
      for (const auto& k : keys) (scaler ? scaler->scale(out[k]) : out[k]).backward();
    }
    if (block.optimizers.empty()) return out;
    if (scaler) {
      if (block.optimizers.size() != 1)
        throw std::invalid_argument("ppe::runtime::PyTorchRuntime::execute: a grad scaler supports one optimizer per "
                                    "code block, got " + std::to_string(block.optimizers.size()));
      torch::optim::Optimizer& opt = *block.optimizers.front();
      if (counters.empty())
        scaler->step(opt);
      else
        scaler->step(opt, *counters.front());
      scaler->update();
    } else {
      for (std::size_t i = 0; i < block.optimizers.size(); ++i) {
        block.optimizers[i]->step();
        if (!counters.empty()) counters[i]->record();
      }
    }
    return out;
  }

 private:
  // PPE's automatic choice: one-element floating/complex tensors with a grad_fn.
  static bool backpropable(const at::Tensor& v) {
    return v.defined() && v.grad_fn() != nullptr && v.numel() == 1 &&
           (c10::isFloatingType(v.scalar_type()) || c10::isComplexType(v.scalar_type()));
  }

  c10::Device device_;
};

}  // namespace ppe::runtime
