#pragma once
/// \file
/// The one place where LibTorch versions differ (LibTorch 1.13 through 2.14,
/// CPU and CUDA builds): the version macros, and a shim for each API that
/// changed, so that the rest of the library reads as if there were one
/// LibTorch. Shims that need heavier LibTorch headers sit beside this file in
/// `torch_compat/` (autocast, c10d) and take their version tests from here.
///
/// Where LibTorch's own types tell the difference (the key type of an
/// optimizer's state map, whether a hooks interface has a member), the shim
/// asks the type instead of the version number: that is exact for every
/// release in between too.

#include <ATen/core/Generator.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <c10/core/Device.h>
#include <torch/version.h>

#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <type_traits>

/// True when the LibTorch being compiled against is at least `major.minor`.
#define PPE_TORCH_VERSION_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

/// LibTorch 2.4 replaced the per-device autocast switches (`is_cpu_enabled`,
/// `get_autocast_gpu_dtype`, ...) by functions taking a device type, and
/// deprecated the old ones (an error under -Werror).
#define PPE_TORCH_AUTOCAST_BY_DEVICE_TYPE PPE_TORCH_VERSION_AT_LEAST(2, 4)

/// LibTorch 2.0 split c10d's process group: `ProcessGroupGloo` became a
/// `Backend`, attached to a `c10d::ProcessGroup` that dispatches by device.
#define PPE_TORCH_C10D_BACKENDS PPE_TORCH_VERSION_AT_LEAST(2, 0)

/// PyTorch 2.1 made the store-based barrier that ends
/// `torch.distributed.init_process_group` opt-in (TORCH_DIST_INIT_BARRIER=1).
#define PPE_TORCH_INIT_BARRIER_OPT_IN PPE_TORCH_VERSION_AT_LEAST(2, 1)

namespace ppe::detail::compat {

/// The key a LibTorch optimizer files a parameter's state under, for the
/// optimizer's own state map type: the TensorImpl's address as text before
/// LibTorch 2.2 (what `c10::guts::to_string` printed), the address itself
/// from then on.
template <class StateMap>
typename StateMap::key_type optimizer_state_key(const void* tensor_impl) {
  using Key = typename StateMap::key_type;
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream text;
    text << tensor_impl;
    return text.str();
  } else {
    return const_cast<void*>(tensor_impl);
  }
}

/// The default generator of accelerator device `index` from its hooks:
/// `getDefaultCUDAGenerator` up to LibTorch 2.x, where every accelerator's
/// hooks have `getDefaultGenerator` instead.
template <class Hooks>
at::Generator default_generator_of(const Hooks& hooks, c10::DeviceIndex index) {
  if constexpr (requires { hooks.getDefaultGenerator(index); })
    return hooks.getDefaultGenerator(index);
  else
    return hooks.getDefaultCUDAGenerator(index);
}

/// The default generator of CUDA device `index`; call it only where
/// `at::detail::getCUDAHooks().hasCUDA()`.
inline at::Generator default_cuda_generator(c10::DeviceIndex index) {
  return default_generator_of(at::detail::getCUDAHooks(), index);
}

/// The type of the running totals `c10::MemoryReportingInfoBase::reportMemoryUsage`
/// receives: `int64_t` up to LibTorch 1.13, `size_t` in 2.x.
using memory_report_total_t = std::conditional_t<PPE_TORCH_VERSION_AT_LEAST(2, 0), std::size_t, std::int64_t>;

}  // namespace ppe::detail::compat
