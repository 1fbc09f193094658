// training/models.hpp's module state functions for torch::nn::Module,
// instantiated once by impl/src.hpp with PPE_SEPARATE_COMPILATION; included
// by models.hpp, where header-only compilation has nothing to add.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ppe/training/models.hpp"

#if defined(PPE_SEPARATE_COMPILATION)
#include <torch/nn/module.h>

namespace ppe::training::detail {

template State module_state_dict<torch::nn::Module>(torch::nn::Module&);
template std::function<void()> module_prepare_load<torch::nn::Module>(torch::nn::Module&, const State&,
                                                                      std::string_view);
template std::vector<std::pair<std::string, const void*>> module_submodules<torch::nn::Module>(torch::nn::Module&);

}  // namespace ppe::training::detail
#endif
