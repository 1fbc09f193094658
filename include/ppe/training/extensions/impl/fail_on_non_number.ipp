// Definitions of training/extensions/fail_on_non_number.hpp's out-of-line functions: included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <ATen/core/grad_mode.h>
#include <ATen/ops/isfinite.h>
#include <ATen/ops/isnan.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/view_as_real.h>
#include <torch/nn/module.h>

#include <cmath>
#include <string>
#include <utility>

#include "ppe/training/extensions/fail_on_non_number.hpp"

namespace ppe::training::extensions {

namespace detail {

/// The values of `t` to check, or an undefined tensor when there are none
/// that can be non-finite (no tensor, no elements, an integer type).
inline at::Tensor checkable_values(const at::Tensor& t) {
  if (!t.defined()) return {};
  at::Tensor v = t.is_sparse() ? t._values() : t;
  if (v.is_complex()) v = at::view_as_real(v);
  if (!v.is_floating_point() || v.numel() == 0) return {};
  return v;
}

/// The sum of `v`'s values: not finite if a value is not. Half precision
/// adds up in float, where finite values overflow far less often.
inline at::Tensor finite_probe(const at::Tensor& v) {
  const at::ScalarType type = v.scalar_type();
  return type == at::kFloat || type == at::kDouble ? v.sum() : v.sum(at::kFloat);
}

/// Throws when `t` (parameter `param` of model `model`, or its gradient)
/// holds NaN or infinity. Two host reads per tensor: the slow path, taken
/// only after the fused check failed.
inline void throw_if_non_finite(const at::Tensor& t, const std::string& model, const std::string& param,
                                bool gradient) {
  const at::Tensor v = checkable_values(t);
  if (!v.defined() || at::isfinite(v).all().item<bool>()) return;
  throw NonFiniteParameterError(model, param, gradient, at::isnan(v).any().item<bool>());
}

}  // namespace detail

PPE_DECL NonFiniteParameterError::NonFiniteParameterError(std::string model, std::string parameter, bool gradient,
                                                          bool nan)
    : std::runtime_error("ppe::FailOnNonNumber: Kill the process since parameters in model '" + model +
                         "' diverge: " + (gradient ? "the gradient of parameter '" : "parameter '") + parameter +
                         "' contains " + (nan ? "NaN" : "infinity") + ". R.I.P."),
      model_(std::move(model)),
      parameter_(std::move(parameter)),
      gradient_(gradient),
      nan_(nan) {}

PPE_DECL void FailOnNonNumber::check(const Models& models) {
  const at::NoGradGuard no_grad;  // the sums build no autograd graph
  sums_.clear();
  const auto add = [this](const at::Tensor& t) {
    const at::Tensor v = detail::checkable_values(t);
    if (!v.defined()) return;
    at::Tensor s = detail::finite_probe(v);
    // A model spread over devices: the sums meet on the first one.
    if (!sums_.empty() && s.device() != sums_.front().device()) s = s.to(sums_.front().device());
    sums_.push_back(std::move(s));
  };
  for (const auto& [name, ref] : models)
    for (const at::Tensor& p : ref.module()->parameters(/*recurse=*/true)) {
      add(p);
      if (check_grad_) add(p.grad());
    }
  if (sums_.empty()) return;
  const at::Tensor total = sums_.size() == 1 ? sums_.front() : at::stack(sums_).sum();
  const bool finite = std::isfinite(total.item<double>());  // the one host synchronisation
  sums_.clear();
  if (finite) return;
  // Find the culprit, in PPE's order (each model; each parameter, then its gradient).
  for (const auto& [name, ref] : models)
    for (const auto& item : ref.module()->named_parameters(/*recurse=*/true)) {
      detail::throw_if_non_finite(item.value(), name, item.key(), false);
      if (check_grad_) detail::throw_if_non_finite(item.value().grad(), name, item.key(), true);
    }
  // Every tensor is finite: only the sum overflowed.
}

}  // namespace ppe::training::extensions
