#pragma once
/// \file
/// Autocast (mixed precision) for LibTorch 1.13, which has the thread-local
/// switches (`at::autocast::set_cpu_enabled`, ...) but no scoped guard:
/// `AutocastGuard` is `torch.autocast(device_type, dtype, enabled,
/// cache_enabled)` as an RAII object, and `AutocastOptions` is PPE's
/// `autocast` runtime option.
///
/// Differences from Python: an unsupported combination raises instead of
/// warning and disabling (CPU autocast with a dtype other than bfloat16, CUDA
/// autocast in a build or on a machine without CUDA), so that a run never
/// silently trains in another precision than requested.

#include <ATen/Context.h>
#include <ATen/autocast_mode.h>
#include <c10/core/DeviceType.h>
#include <c10/core/ScalarType.h>

#include <optional>
#include <stdexcept>
#include <string>

#include "ppe/detail/arg.hpp"

namespace ppe::runtime {

/// PPE's `autocast` runtime option: `true`/`false`, or the arguments of
/// `torch.autocast`. The device type defaults to the runtime's device type
/// (PPE's default is always "cuda", which predates CPU autocast).
struct AutocastOptions {
  /// `AutocastOptions(true)` is PPE's `autocast=True`.
  AutocastOptions(bool enabled = false) : enabled_(enabled) {}

  PPE_ARG(bool, enabled);
  /// kCPU or kCUDA; unset: the runtime's device type.
  PPE_ARG(std::optional<c10::DeviceType>, device_type);
  /// The lower precision; unset: the thread's current autocast dtype
  /// (bfloat16 on CPU, float16 on CUDA unless changed).
  PPE_ARG(std::optional<c10::ScalarType>, dtype);
  /// Whether autocast caches casted weights; unset: the thread's current setting.
  PPE_ARG(std::optional<bool>, cache_enabled);
};

/// Enables (or disables) autocast for one device type on this thread until the
/// guard is destroyed, then restores the previous state; guards nest.
class AutocastGuard {
 public:
  explicit AutocastGuard(c10::DeviceType device_type, bool enabled = true,
                         std::optional<c10::ScalarType> dtype = std::nullopt,
                         std::optional<bool> cache_enabled = std::nullopt)
      : device_type_(device_type) {
    if (device_type != c10::DeviceType::CPU && device_type != c10::DeviceType::CUDA)
      throw std::invalid_argument("ppe::runtime::AutocastGuard: autocast supports the device types 'cpu' and 'cuda', "
                                  "got '" + c10::DeviceTypeName(device_type, /*lower_case=*/true) + "'");
    const bool cpu = device_type == c10::DeviceType::CPU;
    const c10::ScalarType fast = dtype.value_or(cpu ? at::autocast::get_autocast_cpu_dtype()
                                                    : at::autocast::get_autocast_gpu_dtype());
    if (enabled && cpu && fast != c10::ScalarType::BFloat16)
      throw std::invalid_argument(std::string("ppe::runtime::AutocastGuard: CPU autocast supports only bfloat16 in "
                                              "LibTorch 1.13, got ") + c10::toString(fast));
    if (enabled && !cpu && !at::hasCUDA())
      throw std::invalid_argument("ppe::runtime::AutocastGuard: CUDA autocast requested, but CUDA is not available");
    prev_cache_ = at::autocast::is_autocast_cache_enabled();
    if (cpu) {
      prev_enabled_ = at::autocast::is_cpu_enabled();
      prev_dtype_ = at::autocast::get_autocast_cpu_dtype();
      at::autocast::set_cpu_enabled(enabled);
      at::autocast::set_autocast_cpu_dtype(fast);
    } else {
      prev_enabled_ = at::autocast::is_enabled();
      prev_dtype_ = at::autocast::get_autocast_gpu_dtype();
      at::autocast::set_autocast_gpu_dtype(fast);
      at::autocast::set_enabled(enabled);
    }
    at::autocast::increment_nesting();
    at::autocast::set_autocast_cache_enabled(cache_enabled.value_or(prev_cache_));
  }
  /// From the runtime option; `default_type` is used when it names no device type.
  AutocastGuard(const AutocastOptions& options, c10::DeviceType default_type)
      : AutocastGuard(options.device_type().value_or(default_type), options.enabled(), options.dtype(),
                      options.cache_enabled()) {}

  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

  ~AutocastGuard() {
    // The outermost region drops the casted-weight cache, as torch.autocast does.
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    if (device_type_ == c10::DeviceType::CPU) {
      at::autocast::set_cpu_enabled(prev_enabled_);
      at::autocast::set_autocast_cpu_dtype(prev_dtype_);
    } else {
      at::autocast::set_enabled(prev_enabled_);
      at::autocast::set_autocast_gpu_dtype(prev_dtype_);
    }
    at::autocast::set_autocast_cache_enabled(prev_cache_);
  }

 private:
  c10::DeviceType device_type_;
  bool prev_enabled_ = false;
  c10::ScalarType prev_dtype_ = c10::ScalarType::Undefined;
  bool prev_cache_ = true;
};

}  // namespace ppe::runtime
