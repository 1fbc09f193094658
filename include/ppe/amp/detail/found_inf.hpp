#pragma once
/// \file
/// The inf/NaN checks of a GradScaler step: `ppe::amp::FoundInfPerDevice`
/// (one flag per device that held a gradient) and `detail::found_inf_on`,
/// their sum on one device.

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <utility>
#include <vector>

namespace ppe::amp {

/// The found_inf flags of one optimizer's gradients: one float32 `[1]` tensor
/// (0 or 1) per device that held a gradient.
using FoundInfPerDevice = std::vector<std::pair<at::Device, at::Tensor>>;

namespace detail {

/// The sum of an optimizer's found_inf flags, on `device` (nonzero: some
/// gradient was inf or NaN). No host read; a copy between devices only when
/// the optimizer's gradients span several.
inline at::Tensor found_inf_on(const FoundInfPerDevice& found, at::Device device) {
  at::Tensor total;
  for (const auto& [d, f] : found) {
    const at::Tensor here = d == device ? f : f.to(device, /*non_blocking=*/true);
    total = total.defined() ? total.add(here) : here;
  }
  return total;
}

}  // namespace detail
}  // namespace ppe::amp
