#pragma once
/// \file
/// `RngState`: LibTorch's default random generators as a state object, so
/// that a snapshot restores them and a resumed run draws the same numbers
/// (dropout masks, random augmentations, `torch::randn`) as an uninterrupted one.
///
/// \code
///   ppe::utils::RngState rng;
///   manager.register_state_object("rng", rng);
/// \endcode

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>
#include <ATen/detail/CUDAHooksInterface.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "ppe/detail/python_repr.hpp"
#include "ppe/state.hpp"
#include "ppe/utils/detail/generator_state.hpp"

namespace ppe::utils {

/// The state of the default CPU generator and, where LibTorch has CUDA and
/// devices are present, of each device's default CUDA generator.
///
/// `state_dict()` is `{"cpu": uint8 tensor, "cuda": [uint8 tensor per device]}`:
/// the tensors are what Python's `torch.get_rng_state()` and
/// `torch.cuda.get_rng_state_all()` return, so either side can restore them.
/// The CUDA part is found at run time through LibTorch's CUDA hooks; with a
/// CPU-only LibTorch the list is empty and nothing CUDA-specific is compiled.
class RngState {
 public:
  /// A copy of the generators' current states.
  State state_dict() const {
    State::List cuda;
    for (std::int64_t i = 0; i < num_cuda_devices(); ++i) cuda.emplace_back(detail::generator_state(cuda_device(i)));
    return State::dict({{"cpu", detail::generator_state(at::detail::getDefaultCPUGenerator())},
                        {"cuda", State::list(std::move(cuda))}});
  }

  /// Restores states from `state_dict()` (or from Python's
  /// `{"cpu": torch.get_rng_state(), "cuda": torch.cuda.get_rng_state_all()}`).
  /// Every tensor is checked before any generator changes: a uint8 CPU tensor
  /// of one dimension whose size is that of the generator's own state; the
  /// number of CUDA states must equal the number of devices ("cuda" may be
  /// absent or empty when there are none).
  void load_state_dict(const State& state) const {
    const std::string where = "ppe::utils::RngState::load_state_dict: ";
    if (!state.is_dict())
      throw std::invalid_argument(where + "expected a dict {cpu, cuda}, got " + std::string(State::kind_name(state.kind())));
    const at::Generator cpu = at::detail::getDefaultCPUGenerator();
    // A copy (one reference count), not a reference: GCC 13 and later take the
    // temporary message for what the reference binds to (-Wdangling-reference).
    const at::Tensor cpu_state = checked(state.at("cpu"), cpu, where + "'cpu'");

    std::vector<const at::Tensor*> cuda_states;
    const std::int64_t devices = num_cuda_devices();
    if (const State* cuda = state.find("cuda"); cuda && !cuda->is_none()) {
      if (!cuda->is_list())
        throw std::invalid_argument(where + "'cuda' is a " + std::string(State::kind_name(cuda->kind())) +
                                    ", expected a list of uint8 tensors (one per CUDA device)");
      const auto& list = cuda->as_list();
      if (static_cast<std::int64_t>(list.size()) != devices)
        throw std::invalid_argument(where + "'cuda' holds " + std::to_string(list.size()) +
                                    " generator states, this process has " + std::to_string(devices) +
                                    " CUDA devices (expected one state per device)");
      for (std::int64_t i = 0; i < devices; ++i)
        cuda_states.push_back(&checked(list[static_cast<std::size_t>(i)], cuda_device(i),
                                       where + "'cuda'[" + std::to_string(i) + "]"));
    } else if (devices > 0) {
      throw std::invalid_argument(where + "the state has no 'cuda' entry, this process has " +
                                  std::to_string(devices) + " CUDA devices (expected one state per device)");
    }

    detail::set_generator_state(cpu, cpu_state);
    for (std::int64_t i = 0; i < devices; ++i)
      detail::set_generator_state(cuda_device(i), *cuda_states[static_cast<std::size_t>(i)]);
  }

  /// Number of CUDA devices whose generators are part of the state (0 with a
  /// CPU-only LibTorch).
  static std::int64_t num_cuda_devices() {
    const auto& hooks = at::detail::getCUDAHooks();
    return hooks.hasCUDA() ? hooks.getNumGPUs() : 0;
  }

 private:
  static at::Generator cuda_device(std::int64_t i) {
    return detail::cuda_generator(static_cast<c10::DeviceIndex>(i));
  }
  static const at::Tensor& checked(const State& s, const at::Generator& gen, const std::string& what) {
    if (!s.is_tensor())
      throw std::invalid_argument(what + " is a " + std::string(State::kind_name(s.kind())) +
                                  ", expected a uint8 tensor (a generator state)");
    const at::Tensor& t = s.as_tensor();
    const std::int64_t expected = detail::generator_state(gen).numel();
    if (t.scalar_type() != at::kByte || t.dim() != 1 || !t.device().is_cpu() || t.numel() != expected)
      throw std::invalid_argument(what + " is a " + std::string(c10::toString(t.scalar_type())) + " tensor of shape " +
                                  ppe::detail::python_shape(t.sizes()) + " on " + t.device().str() +
                                  ", expected a Byte (uint8) tensor of shape [" + std::to_string(expected) +
                                  "] on cpu (the size of this generator's state)");
    return t;
  }
};

}  // namespace ppe::utils
