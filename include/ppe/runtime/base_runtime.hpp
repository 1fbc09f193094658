#pragma once
/// \file
/// `ppe::runtime::BaseRuntime`: the runtime protocol (runtime.hpp) as a class
/// with virtual hooks, for runtimes chosen at run time (the registry,
/// `ppe::to`). Derive from it (or from `PyTorchRuntime`) and mark every hook
/// `override`: a misspelled hook is then a compile error. Every optional hook
/// is a no-op here (PPE's `PyTorchRuntime` behaviour); the two moves are pure.

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

#include "ppe/runtime/any_ref.hpp"
#include "ppe/runtime/code_block.hpp"
#include "ppe/runtime/convert_batch.hpp"
#include "ppe/runtime/device_spec.hpp"
#include "ppe/runtime/runtime_options.hpp"
#include "ppe/state.hpp"

namespace torch::nn {
class Module;
}  // namespace torch::nn

namespace ppe::runtime {

class BaseRuntime {
 public:
  /// PPE's `BaseRuntime(device_spec, options)`.
  BaseRuntime(DeviceSpec device_spec, RuntimeOptions options)
      : device_spec_(std::move(device_spec)), options_(std::move(options)) {}
  virtual ~BaseRuntime() = default;
  BaseRuntime(const BaseRuntime&) = delete;
  BaseRuntime& operator=(const BaseRuntime&) = delete;

  /// The device this runtime was created for (as given, e.g. "counting").
  const DeviceSpec& device_spec() const noexcept { return device_spec_; }
  /// The options it was created with.
  const RuntimeOptions& options() const noexcept { return options_; }

  /// Moves `module` to the runtime's device, in place.
  virtual void move_module(torch::nn::Module& module) = 0;
  /// Returns `tensor` on the runtime's device.
  virtual at::Tensor move_tensor(const at::Tensor& tensor) = 0;

  /// A copy of `batch` with every tensor moved by `move_tensor` (convert_batch.hpp).
  template <class B>
  B convert_batch(B batch) {
    return convert_batch_with(std::move(batch), [this](const at::Tensor& t) { return move_tensor(t); });
  }

  virtual void initialize_module(torch::nn::Module& /*module*/, AnyRef /*loader_or_batch*/,
                                 torch::optim::Optimizer* /*optimizer*/) {}
  virtual void train_epoch_begin(torch::nn::Module& /*module*/) {}
  virtual void train_epoch_end(torch::nn::Module& /*module*/) {}
  virtual void train_pre_step(AnyRef /*trainer*/, torch::nn::Module& /*module*/, std::int64_t /*batch_idx*/,
                              AnyRef /*batch*/) {}
  virtual void train_post_step(AnyRef /*trainer*/, torch::nn::Module& /*module*/, std::int64_t /*batch_idx*/,
                               AnyRef /*batch*/, AnyRef /*outs*/) {}
  virtual void train_validation_begin(torch::nn::Module& /*module*/) {}
  virtual void train_validation_end(torch::nn::Module& /*module*/) {}
  virtual void eval_pre_step(AnyRef /*evaluator*/, torch::nn::Module& /*module*/, std::int64_t /*batch_idx*/,
                             AnyRef /*batch*/) {}
  virtual void eval_post_step(AnyRef /*evaluator*/, torch::nn::Module& /*module*/, std::int64_t /*batch_idx*/,
                              AnyRef /*batch*/, AnyRef /*outs*/) {}
  virtual void train_cleanup(torch::nn::Module& /*module*/) {}

  /// Runs a code block (forward, backward, optimizer steps). PPE's BaseRuntime
  /// leaves it unimplemented; PyTorchRuntime implements it.
  virtual TensorDict execute(const CodeBlock& /*block*/, const TensorDict& /*batch*/) {
    throw std::logic_error("ppe::runtime: this runtime (device '" + device_spec_.str() +
                           "') does not implement execute(CodeBlock, batch)");
  }

  /// The runtime's own state (none by default, as in PPE).
  virtual State state_dict() const { return State::dict(); }
  virtual void load_state_dict(const State& /*state*/) {}

 private:
  DeviceSpec device_spec_;
  RuntimeOptions options_;
};

}  // namespace ppe::runtime
