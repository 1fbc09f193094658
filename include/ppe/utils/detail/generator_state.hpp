#pragma once
/// \file
/// A LibTorch generator's state, read and set under the generator's mutex
/// (generators are shared by all threads; LibTorch's own bindings lock it
/// too), and a device's default CUDA generator, reached through LibTorch's
/// CUDA hooks (present only where LibTorch has CUDA: nothing CUDA-specific is
/// compiled here). `RngState` and checkpointing's RNG preservation use them.

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <mutex>

#include "ppe/detail/torch_compat.hpp"

namespace ppe::utils::detail {

/// A copy of `gen`'s state.
inline at::Tensor generator_state(at::Generator gen) {
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get_state();
}

/// Sets `gen`'s state to `state`.
inline void set_generator_state(at::Generator gen, const at::Tensor& state) {
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(state);
}

/// The default CUDA generator of device `i`.
inline at::Generator cuda_generator(c10::DeviceIndex i) { return ::ppe::detail::compat::default_cuda_generator(i); }

}  // namespace ppe::utils::detail
