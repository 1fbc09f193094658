#pragma once
/// \file
/// `ppe::runtime::RuntimeOptions`: PPE's `options` dictionary of a runtime
/// (`ppe.to(module, device, options={...})`, `create_trainer(...,
/// runtime_options=...)`): the known keys as typed fields, and `extra` for
/// the keys a custom runtime defines.

#include <memory>

#include "ppe/detail/arg.hpp"
#include "ppe/runtime/autocast.hpp"
#include "ppe/state.hpp"

namespace ppe::amp {
class GradScaler;
}  // namespace ppe::amp

namespace ppe::runtime {

struct RuntimeOptions {
  /// PPE's `autocast` (bool or `torch.autocast` arguments): the autocast region
  /// of `PyTorchRuntime::execute` (and of a Logic that asks the runtime).
  PPE_ARG(AutocastOptions, autocast);
  /// PPE's `grad_scaler`: scales the loss and steps through the scaler in `execute`.
  PPE_ARG(std::shared_ptr<ppe::amp::GradScaler>, grad_scaler);
  /// Options of custom runtimes (PPE's free-form keys, e.g. `{"opt": 1}`): a dict.
  PPE_ARG(State, extra) = State::dict();
};

}  // namespace ppe::runtime
