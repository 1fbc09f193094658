#pragma once
/// \file
/// The table through which `GradScaler` (grad_scaler.hpp) reaches the masked
/// optimizer steps of `<ppe/amp/masked_step.hpp>`, which fills it at static
/// initialisation: those steps need LibTorch's optimizer headers, which
/// grad_scaler.hpp leaves out to keep its includers cheap.

#include "ppe/amp/detail/found_inf.hpp"
#include "ppe/amp/detail/masked_state.hpp"

namespace torch::optim {
class Optimizer;
}  // namespace torch::optim

namespace ppe::amp::detail {

/// The masked step and the settling of host step counts (see masked_step.hpp).
struct MaskedStepHooks {
  void (*step)(torch::optim::Optimizer&, const FoundInfPerDevice&, MaskedOptimizerState&) = nullptr;
  void (*settle)(torch::optim::Optimizer&, MaskedOptimizerState&) = nullptr;
};

/// The installed hooks (null until masked_step.hpp is part of the program).
inline MaskedStepHooks& masked_step_hooks() noexcept {
  static MaskedStepHooks hooks;
  return hooks;
}

}  // namespace ppe::amp::detail
