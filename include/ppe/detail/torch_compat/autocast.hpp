#pragma once
/// \file
/// Autocast's thread-local switches under one spelling for every LibTorch
/// (see `ppe/detail/torch_compat.hpp`): up to 2.3 each device type has its own
/// functions (`is_cpu_enabled`, `set_autocast_gpu_dtype`, ...); from 2.4 they
/// take the device type, and the old ones are deprecated. Apart from
/// torch_compat.hpp because `<ATen/autocast_mode.h>` brings all of ATen.

#include <ATen/autocast_mode.h>
#include <c10/core/DeviceType.h>
#include <c10/core/ScalarType.h>

#include "ppe/detail/torch_compat.hpp"

namespace ppe::detail::compat {

/// Whether autocast is on for `type` (kCPU or kCUDA) on this thread.
inline bool autocast_enabled(c10::DeviceType type) {
#if PPE_TORCH_AUTOCAST_BY_DEVICE_TYPE
  return at::autocast::is_autocast_enabled(type);
#else
  return type == c10::DeviceType::CPU ? at::autocast::is_cpu_enabled() : at::autocast::is_enabled();
#endif
}

inline void set_autocast_enabled(c10::DeviceType type, bool enabled) {
#if PPE_TORCH_AUTOCAST_BY_DEVICE_TYPE
  at::autocast::set_autocast_enabled(type, enabled);
#else
  if (type == c10::DeviceType::CPU)
    at::autocast::set_cpu_enabled(enabled);
  else
    at::autocast::set_enabled(enabled);
#endif
}

/// The lower precision autocast casts to on `type` on this thread.
inline c10::ScalarType autocast_dtype(c10::DeviceType type) {
#if PPE_TORCH_AUTOCAST_BY_DEVICE_TYPE
  return at::autocast::get_autocast_dtype(type);
#else
  return type == c10::DeviceType::CPU ? at::autocast::get_autocast_cpu_dtype() : at::autocast::get_autocast_gpu_dtype();
#endif
}

inline void set_autocast_dtype(c10::DeviceType type, c10::ScalarType dtype) {
#if PPE_TORCH_AUTOCAST_BY_DEVICE_TYPE
  at::autocast::set_autocast_dtype(type, dtype);
#else
  if (type == c10::DeviceType::CPU)
    at::autocast::set_autocast_cpu_dtype(dtype);
  else
    at::autocast::set_autocast_gpu_dtype(dtype);
#endif
}

/// Whether CPU autocast can run in `dtype`: bfloat16 in every LibTorch,
/// float16 too from 2.4 (`torch.autocast("cpu")` accepts both there).
inline bool cpu_autocast_supports(c10::ScalarType dtype) {
  return dtype == c10::ScalarType::BFloat16 ||
         (PPE_TORCH_AUTOCAST_BY_DEVICE_TYPE && dtype == c10::ScalarType::Half);
}

}  // namespace ppe::detail::compat
