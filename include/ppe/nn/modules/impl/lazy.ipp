// Definitions of nn/modules/lazy.hpp's out-of-line functions: included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/core/Generator.h>
#include <ATen/ops/empty.h>

#include <mutex>
#include <stdexcept>
#include <string>

#include "ppe/detail/python_repr.hpp"
#include "ppe/nn/modules/lazy.hpp"

namespace ppe::nn::detail {

PPE_DECL bool is_placeholder(const at::Tensor& t) { return t.defined() && t.dim() == 1 && t.size(0) == 0; }

PPE_DECL at::Tensor placeholder(const at::TensorOptions& options) { return at::empty({0}, options); }

PPE_DECL void materialize_tensor(const at::Tensor& t, at::IntArrayRef sizes) {
  at::NoGradGuard no_grad;  // set_ on a leaf that requires grad
  const_cast<at::Tensor&>(t).set_(at::empty(sizes, t.options()));
}

PPE_DECL void bind_tensor(at::Tensor& inner_member, const at::Tensor& ours) {
  if (inner_member.defined()) {
    at::NoGradGuard no_grad;
    inner_member.set_(at::empty({0}, inner_member.options()));
  }
  inner_member = ours;
}

PPE_DECL void throw_bad_saved_shape(const std::string& module, const std::string& name, at::IntArrayRef sizes,
                                    const std::string& expected) {
  throw std::invalid_argument("ppe::nn::" + module + ": cannot take the shape of the saved '" + name + "' " +
                              ppe::detail::python_shape(sizes) + ": expected " + expected);
}

PPE_DECL void throw_uninitialized_into_initialized(const std::string& module, const std::string& name) {
  throw std::runtime_error("ppe::nn::" + module + ": cannot load an uninitialized '" + name +
                           "' (saved before the module's first forward) into an initialized module");
}

PPE_DECL CpuRngRestore::CpuRngRestore() {
  at::Generator gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  state_ = gen.get_state();
}

PPE_DECL CpuRngRestore::~CpuRngRestore() {
  at::Generator gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(state_);
}

}  // namespace ppe::nn::detail
