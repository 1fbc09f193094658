#pragma once
/// \file
/// `ppe::to(module_or_tensor, device, options)`: PPE's `ppe.to`. Finds the
/// runtime for the device in `runtime_registry()` (or uses the runtime type
/// given as a template argument, PPE's `runtime_class=`), makes it with the
/// options, and
/// - for a module: moves it with the runtime and records the runtime for the
///   module and every submodule (`ppe::runtime::module_runtime` finds it);
/// - for a tensor: returns it moved by the runtime.
///
/// ```cpp
/// auto model = torch::nn::Linear(3, 2);
/// ppe::to(model, "cpu");                                   // PyTorchRuntime("cpu")
/// ppe::to<MyRuntime>(model->weight, "dummy", options);     // a given runtime type
/// auto rt = ppe::runtime::module_runtime(*model);          // std::shared_ptr<BaseRuntime>
/// ```
///
/// Modules go by handle (`std::shared_ptr<M>`, a `torch::nn::ModuleHolder`)
/// or by reference to a shared-owned module; anything else (PPE's
/// `ValueError("Unsupported type")`) does not compile.

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

#include <concepts>
#include <memory>
#include <type_traits>
#include <utility>

#include "ppe/runtime/module_runtime.hpp"
#include "ppe/runtime/registry.hpp"
#include "ppe/runtime/runtime_adapter.hpp"

namespace ppe {

namespace runtime::detail {

template <class R>
std::shared_ptr<BaseRuntime> runtime_for(const DeviceSpec& device, const RuntimeOptions& options) {
  if constexpr (std::is_void_v<R>)
    return runtime_registry().make(device, options);
  else
    return make_runtime<R>(device, options);
}

inline void move_and_record(torch::nn::Module& module, const std::shared_ptr<BaseRuntime>& rt) {
  require_shared(module, "ppe::to");
  rt->move_module(module);
  set_module_runtime(module, rt);
  for (const auto& sub : module.modules(/*include_self=*/false)) set_module_runtime(*sub, rt);
}

template <class H>
concept module_holder = requires(H& h) {
  { h.ptr() } -> std::convertible_to<std::shared_ptr<torch::nn::Module>>;
};

}  // namespace runtime::detail

/// Moves a module held by `std::shared_ptr` and records its runtime; returns the handle.
template <class R = void, class M>
  requires std::derived_from<M, torch::nn::Module>
std::shared_ptr<M> to(std::shared_ptr<M> module, const runtime::DeviceSpec& device,
                      const runtime::RuntimeOptions& options = {}) {
  if (!module) throw std::invalid_argument("ppe::to: the module pointer is null");
  runtime::detail::move_and_record(*module, runtime::detail::runtime_for<R>(device, options));
  return module;
}

/// Moves a module held by a `torch::nn::ModuleHolder` (e.g. `torch::nn::Linear`); returns the holder.
template <class R = void, class H>
  requires runtime::detail::module_holder<H>
H to(H module, const runtime::DeviceSpec& device, const runtime::RuntimeOptions& options = {}) {
  if (!module.ptr()) throw std::invalid_argument("ppe::to: the module holder is empty");
  runtime::detail::move_and_record(*module.ptr(), runtime::detail::runtime_for<R>(device, options));
  return module;
}

/// Moves a module given by reference (it must be owned by a `std::shared_ptr`).
template <class R = void, class M>
  requires std::derived_from<M, torch::nn::Module>
M& to(M& module, const runtime::DeviceSpec& device, const runtime::RuntimeOptions& options = {}) {
  runtime::detail::move_and_record(module, runtime::detail::runtime_for<R>(device, options));
  return module;
}

/// Returns the tensor moved by the device's runtime (nothing is recorded).
template <class R = void>
at::Tensor to(const at::Tensor& tensor, const runtime::DeviceSpec& device, const runtime::RuntimeOptions& options = {}) {
  return runtime::detail::runtime_for<R>(device, options)->move_tensor(tensor);
}

}  // namespace ppe
