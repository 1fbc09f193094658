// Definitions of utils/checkpoint.hpp's out-of-line functions: included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
// The autograd machinery (custom_function.h) is needed here only.
#pragma once

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/Generator.h>
#include <ATen/core/grad_mode.h>
#include <ATen/core/ivalue.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "ppe/detail/torch_compat.hpp"
#include "ppe/utils/checkpoint.hpp"
#include "ppe/utils/detail/generator_state.hpp"
#include "ppe/warnings.hpp"

namespace ppe::utils::detail {

namespace checkpoint_impl {

// What the backward needs besides the saved inputs.
struct CheckpointPayload : torch::CustomClassHolder {
  CheckpointFn fn;
  std::vector<at::Tensor> buffers;
  bool preserve_rng = true;
  at::Tensor cpu_rng;
  std::vector<std::pair<c10::DeviceIndex, at::Tensor>> cuda_rng;  // per CUDA device of the inputs
};


// Puts the generators in the forward-time states and back in the current
// ones when it goes out of scope (torch.random.fork_rng).
class RngFork {
 public:
  explicit RngFork(const CheckpointPayload& p) {
    if (!p.preserve_rng) return;
    active_ = true;
    cpu_ = generator_state(at::detail::getDefaultCPUGenerator());
    set_generator_state(at::detail::getDefaultCPUGenerator(), p.cpu_rng);
    for (const auto& [device, state] : p.cuda_rng) {
      cuda_.emplace_back(device, generator_state(cuda_generator(device)));
      set_generator_state(cuda_generator(device), state);
    }
  }
  ~RngFork() {
    if (!active_) return;
    set_generator_state(at::detail::getDefaultCPUGenerator(), cpu_);
    for (const auto& [device, state] : cuda_) set_generator_state(cuda_generator(device), state);
  }
  RngFork(const RngFork&) = delete;
  RngFork& operator=(const RngFork&) = delete;

 private:
  bool active_ = false;
  at::Tensor cpu_;
  std::vector<std::pair<c10::DeviceIndex, at::Tensor>> cuda_;
};

struct CheckpointFunction : torch::autograd::Function<CheckpointFunction> {
  static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx,
                                                c10::intrusive_ptr<CheckpointPayload> payload,
                                                at::TensorList inputs) {
    // Function::apply runs this with grad mode off: fn keeps no graph.
    if (payload->preserve_rng) {
      payload->cpu_rng = generator_state(at::detail::getDefaultCPUGenerator());
      for (const at::Tensor& x : inputs)
        if (x.defined() && x.is_cuda()) {
          const c10::DeviceIndex d = x.device().index();
          const bool known = std::any_of(payload->cuda_rng.begin(), payload->cuda_rng.end(),
                                         [&](const auto& e) { return e.first == d; });
          if (!known) payload->cuda_rng.emplace_back(d, generator_state(cuda_generator(d)));
        }
    }
    std::vector<at::Tensor> outputs = payload->fn(inputs.vec());
    ctx->save_for_backward(inputs.vec());
    ctx->saved_data["payload"] = c10::IValue::make_capsule(std::move(payload));
    return outputs;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    auto payload = c10::static_intrusive_pointer_cast<CheckpointPayload>(ctx->saved_data["payload"].toCapsule());
    const std::vector<at::Tensor> saved = ctx->get_saved_variables();
    std::vector<at::Tensor> inputs;
    for (const at::Tensor& x : saved) {
      if (!x.defined()) {
        inputs.emplace_back();
        continue;
      }
      at::Tensor d = x.detach();
      d.requires_grad_(x.requires_grad());
      inputs.push_back(std::move(d));
    }
    std::vector<at::Tensor> kept;  // the buffers as the forward left them
    {
      at::NoGradGuard no_grad;
      for (const at::Tensor& b : payload->buffers) kept.push_back(b.defined() ? b.clone() : b);
    }
    std::vector<at::Tensor> outputs;
    {
      RngFork fork(*payload);
      at::AutoGradMode grad(true);
      outputs = payload->fn(inputs);
    }
    std::vector<at::Tensor> roots, grads;
    for (std::size_t i = 0; i < outputs.size() && i < grad_outputs.size(); ++i)
      if (outputs[i].defined() && outputs[i].requires_grad() && grad_outputs[i].defined()) {
        roots.push_back(outputs[i]);
        grads.push_back(grad_outputs[i]);
      }
    if (!roots.empty()) torch::autograd::backward(roots, grads);
    // After the backward: the recomputed graph saved the buffers (BatchNorm's
    // running statistics) and checks that they did not change before it ran.
    roots.clear();
    outputs.clear();
    {
      at::NoGradGuard no_grad;
      for (std::size_t i = 0; i < kept.size(); ++i)
        if (kept[i].defined()) payload->buffers[i].copy_(kept[i]);
    }
    torch::autograd::variable_list result;
    result.emplace_back();  // the payload: not a tensor
    for (const at::Tensor& d : inputs) result.push_back(d.defined() && d.requires_grad() ? d.grad() : at::Tensor());
    return result;
  }
};

}  // namespace checkpoint_impl

PPE_DECL std::vector<at::Tensor> checkpoint_apply(CheckpointFn fn, std::vector<at::Tensor> buffers,
                                                  const std::vector<at::Tensor>& inputs,
                                                  const CheckpointOptions& options) {
  if (at::GradMode::is_enabled() &&
      std::none_of(inputs.begin(), inputs.end(), [](const at::Tensor& x) { return x.defined() && x.requires_grad(); }))
    ppe::warn("ppe::utils::checkpoint: none of the inputs requires grad, so the outputs will not either and no "
              "gradient will flow through the checkpointed function");
  using namespace checkpoint_impl;
  auto payload = c10::make_intrusive<CheckpointPayload>();
  payload->fn = std::move(fn);
  payload->buffers = std::move(buffers);
  payload->preserve_rng = options.preserve_rng_state();
  return CheckpointFunction::apply(std::move(payload), at::TensorList(inputs));
}

}  // namespace ppe::utils::detail
