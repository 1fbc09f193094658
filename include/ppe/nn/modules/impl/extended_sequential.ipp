// Definitions of nn/modules/extended_sequential.hpp's out-of-line functions: included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION. The
// LibTorch module headers needed to recognize modules with reset_parameters() are
// included here only.
#pragma once

#include <ATen/core/grad_mode.h>
#include <torch/nn/functional/instancenorm.h>  // instancenorm.h uses it without including it
#include <torch/nn/init.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/instancenorm.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/modules/rnn.h>

#include <stdexcept>
#include <string>

#include "ppe/nn/modules/extended_sequential.hpp"
#include "ppe/warnings.hpp"

namespace ppe::nn {

PPE_DECL RepeatMode repeat_mode(std::string_view mode) {
  if (mode == "init") return RepeatMode::Init;
  if (mode == "copy") return RepeatMode::Copy;
  if (mode == "share") return RepeatMode::Share;
  throw std::invalid_argument("ppe::nn::ExtendedSequential::repeat: the mode must be 'init', 'copy' or 'share', got '" +
                              std::string(mode) + "'");
}

PPE_DECL std::shared_ptr<torch::nn::Module> ExtendedSequentialImpl::clone(const c10::optional<c10::Device>& device) const {
  auto copy = std::make_shared<ExtendedSequentialImpl>();
  const auto names = named_children();
  std::size_t i = 0;
  for (const auto& m : *this) copy->push_back(names[i++].key(), m.clone(device));
  copy->train(is_training());
  return copy;
}

namespace detail {

namespace reset_impl {
// Calls `f(T&)` when `m` is a T.
template <class T, class F>
bool reset_if(torch::nn::Module& m, F f) {
  if (auto* t = dynamic_cast<T*>(&m)) {
    f(*t);
    return true;
  }
  return false;
}
template <class... T>
bool reset_known(torch::nn::Module& m) {
  return (reset_if<T>(m, [](auto& t) { t.reset_parameters(); }) || ...);
}
}  // namespace reset_impl

PPE_DECL void reset_module_parameters(torch::nn::Module& module, const std::string& name) {
  namespace tn = torch::nn;
  using namespace reset_impl;
  if (dynamic_cast<tn::SequentialImpl*>(&module)) {  // ExtendedSequential too
    for (const auto& child : module.named_children())
      reset_module_parameters(*child.value(), name.empty() ? child.key() : name + "." + child.key());
    return;
  }
  at::NoGradGuard no_grad;
  if (auto* r = dynamic_cast<ResetParameters*>(&module)) {
    r->reset_parameters();
    return;
  }
  if (reset_known<tn::LinearImpl, tn::BilinearImpl, tn::Conv1dImpl, tn::Conv2dImpl, tn::Conv3dImpl,
                  tn::ConvTranspose1dImpl, tn::ConvTranspose2dImpl, tn::ConvTranspose3dImpl, tn::BatchNorm1dImpl,
                  tn::BatchNorm2dImpl, tn::BatchNorm3dImpl, tn::InstanceNorm1dImpl, tn::InstanceNorm2dImpl,
                  tn::InstanceNorm3dImpl, tn::LayerNormImpl, tn::GroupNormImpl, tn::EmbeddingImpl,
                  tn::EmbeddingBagImpl, tn::RNNImpl, tn::LSTMImpl, tn::GRUImpl, tn::RNNCellImpl, tn::LSTMCellImpl,
                  tn::GRUCellImpl>(module))
    return;
  if (reset_if<tn::MultiheadAttentionImpl>(module, [](auto& t) { t._reset_parameters(); })) return;
  if (reset_if<tn::PReLUImpl>(module, [](auto& t) { tn::init::constant_(t.weight, t.options.init()); })) return;
  if (!module.parameters().empty() || !module.buffers().empty())
    ppe::warn("ppe::nn::ExtendedSequential::repeat: cannot reset the parameters of module '" + name + "' (" +
              module.name() + "): it keeps the copied values. Derive it from ppe::nn::ResetParameters to "
              "re-initialize it in mode init");
}

PPE_DECL std::shared_ptr<ExtendedSequentialImpl> repeat_sequential(const ExtendedSequentialImpl& self, std::int64_t n,
                                                                    RepeatMode mode) {
  auto out = std::make_shared<ExtendedSequentialImpl>();
  for (std::int64_t i = 0; i < n; ++i) {
    if (mode == RepeatMode::Share) {
      auto shared = std::make_shared<ExtendedSequentialImpl>();
      const auto names = self.named_children();
      std::size_t k = 0;
      for (const auto& m : self) shared->push_back(names[k++].key(), m);  // the same modules
      out->push_back(std::move(shared));
      continue;
    }
    auto copy = std::dynamic_pointer_cast<ExtendedSequentialImpl>(self.clone());
    if (mode == RepeatMode::Init) reset_module_parameters(*copy, std::to_string(i));
    out->push_back(std::move(copy));
  }
  return out;
}

}  // namespace detail

}  // namespace ppe::nn
