#pragma once
/// \file
/// Autocast (mixed precision) for LibTorch, which has the thread-local
/// switches (`at::autocast::set_cpu_enabled`, ...) but no scoped guard:
/// `AutocastGuard` is `torch.autocast(device_type, dtype, enabled,
/// cache_enabled)` as an RAII object, and `AutocastOptions` is PPE's
/// `autocast` runtime option.
///
/// Differences from Python: an unsupported combination raises instead of
/// warning and disabling (CPU autocast with a dtype LibTorch's CPU autocast
/// does not support: bfloat16 only before LibTorch 2.4, float16 too from then; CUDA
/// autocast in a build or on a machine without CUDA), so that a run never
/// silently trains in another precision than requested.

#include <ATen/Context.h>
#include <c10/core/DeviceType.h>
#include <c10/core/ScalarType.h>

#include <optional>
#include <stdexcept>
#include <string>

#include "ppe/detail/arg.hpp"
#include "ppe/detail/torch_compat/autocast.hpp"

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
    namespace compat = ::ppe::detail::compat;
    const bool cpu = device_type == c10::DeviceType::CPU;
    const c10::ScalarType fast = dtype.value_or(compat::autocast_dtype(device_type));
    if (enabled && cpu && !compat::cpu_autocast_supports(fast))
      throw std::invalid_argument(std::string("ppe::runtime::AutocastGuard: CPU autocast runs in bfloat16 (and in "
                                              "float16 from LibTorch 2.4), got ") + c10::toString(fast));
    if (enabled && !cpu && !at::hasCUDA())
      throw std::invalid_argument("ppe::runtime::AutocastGuard: CUDA autocast requested, but CUDA is not available");
    prev_cache_ = at::autocast::is_autocast_cache_enabled();
    prev_enabled_ = compat::autocast_enabled(device_type);
    prev_dtype_ = compat::autocast_dtype(device_type);
    compat::set_autocast_dtype(device_type, fast);
    compat::set_autocast_enabled(device_type, enabled);
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
    ::ppe::detail::compat::set_autocast_enabled(device_type_, prev_enabled_);
    ::ppe::detail::compat::set_autocast_dtype(device_type_, prev_dtype_);
    at::autocast::set_autocast_cache_enabled(prev_cache_);
  }

 private:
  c10::DeviceType device_type_;
  bool prev_enabled_ = false;
  c10::ScalarType prev_dtype_ = c10::ScalarType::Undefined;
  bool prev_cache_ = true;
};

}  // namespace ppe::runtime
