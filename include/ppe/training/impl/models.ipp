// Definitions of training/models.hpp's out-of-line functions: included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION
// (which also instantiates the module state functions for torch::nn::Module
// here, once).
#pragma once

#include <string>
#include <vector>

#include "ppe/training/models.hpp"

namespace ppe::training::detail {

PPE_DECL std::string join_names(const std::vector<std::string>& names) {
  std::string out = "[";
  for (std::size_t i = 0; i < names.size(); ++i) out += (i ? ", '" : "'") + names[i] + "'";
  return out + "]";
}

PPE_DECL std::string shape_text(const at::Tensor& t) {
  std::string out = "[";
  for (std::size_t i = 0; i < t.sizes().size(); ++i) out += (i ? ", " : "") + std::to_string(t.sizes()[i]);
  return out + "]";
}

}  // namespace ppe::training::detail

#if defined(PPE_SEPARATE_COMPILATION)
#include <torch/nn/module.h>

namespace ppe::training::detail {

template State module_state_dict<torch::nn::Module>(torch::nn::Module&);
template std::function<void()> module_prepare_load<torch::nn::Module>(torch::nn::Module&, const State&,
                                                                      std::string_view);
template std::vector<std::pair<std::string, const void*>> module_submodules<torch::nn::Module>(torch::nn::Module&);

}  // namespace ppe::training::detail
#endif
