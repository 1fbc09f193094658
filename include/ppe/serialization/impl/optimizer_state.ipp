// The state conversion of LibTorch's six optimizers
// (serialization/optimizer_state.hpp), instantiated once for separate
// compilation: only impl/src.hpp includes this file (the header declares these
// instantiations extern when PPE_SEPARATE_COMPILATION is defined; header-only,
// each TU instantiates what it uses).
#pragma once

#include <torch/optim/adagrad.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/lbfgs.h>
#include <torch/optim/rmsprop.h>
#include <torch/optim/sgd.h>

#include "ppe/serialization/optimizer_state.hpp"

namespace ppe::serialization {

#define PPE_INSTANTIATE_OPTIMIZER_STATE(N)                                                               \
  template State optimizer_state_dict<torch::optim::N>(const torch::optim::N&, StateCopy);               \
  template std::function<void()> optimizer_prepare_load<torch::optim::N>(torch::optim::N&, const State&, \
                                                                         std::string_view);
PPE_FOR_EACH_TORCH_OPTIMIZER(PPE_INSTANTIATE_OPTIMIZER_STATE)
#undef PPE_INSTANTIATE_OPTIMIZER_STATE

}  // namespace ppe::serialization
