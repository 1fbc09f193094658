// Definitions of training/extensions/accumulate/summary/summary_base.hpp's out-of-line functions: included by it
// when header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <ATen/ops/stack_ops.h>  // the operator alone, as Summary (ATen/ops/stack.h is slow to compile)

#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "ppe/detail/python_repr.hpp"
#include "ppe/training/extensions/accumulate/summary/summary_base.hpp"

namespace ppe::training::extensions::accumulate::detail {

// The dtypes reporting::detail::read_cpu_scalar reads on the host.
inline constexpr at::ScalarType kHostDtypes[] = {at::kFloat, at::kDouble, at::kLong, at::kInt,
                                                 at::kShort, at::kChar,   at::kByte};

PPE_DECL std::string_view dtype_name(at::ScalarType t) {
  for (const auto d : kHostDtypes)
    if (d == t) return ppe::detail::python_dtype_name(t);
  throw std::invalid_argument(std::string("ppe: accumulate summaries have no name for dtype ") + c10::toString(t));
}

PPE_DECL at::ScalarType dtype_from_name(const std::string& name, std::string_view who) {
  const auto t = ppe::detail::python_dtype(name);
  std::string names;
  for (const auto d : kHostDtypes) {
    if (d == t) return d;
    names += (names.empty() ? "" : ", ") + std::string(ppe::detail::python_dtype_name(d));
  }
  throw std::invalid_argument("ppe::training::extensions::accumulate::" + std::string(who) +
                              "::load_state_dict: '_dtype' must be one of " + names + "; got '" + name + "'");
}

PPE_DECL State weight_state(double n) {
  // Below 2^53 every whole double is an exact int64.
  if (n == std::floor(n) && std::fabs(n) < 9007199254740992.0) return State(static_cast<std::int64_t>(n));
  return State(n);
}

PPE_DECL LazyValues::Route LazyValues::route(const reporting::Value& value, double weight, double* x,
                                             at::ScalarType* dtype, std::string_view who) {
  if (value.is_deferred()) {
    deferred_.emplace_back(value.deferred(), weight);
    return Route::Deferred;
  }
  if (value.is_scalar()) {
    *x = value.scalar();
    *dtype = at::ScalarType::Undefined;
    return Route::Host;
  }
  const at::Tensor& t = value.tensor();
  if (!t.defined() || t.numel() != 1)
    throw std::invalid_argument("ppe::training::extensions::accumulate::" + std::string(who) +
                                "::add: expected a number or a tensor with one element, got " +
                                (t.defined() ? "a tensor with " + std::to_string(t.numel()) + " elements"
                                             : std::string("an undefined tensor")));
  at::ScalarType unused;
  if (reporting::detail::read_cpu_scalar(t, x, &unused)) {
    *dtype = t.scalar_type();
    return Route::Host;
  }
  // Detached: a kept grad_fn would hold the autograd graph until the fold.
  if (kept_.capacity() < kFoldEvery) {
    kept_.reserve(kFoldEvery);
    kept_w_.reserve(kFoldEvery);
  }
  kept_.push_back(reporting::detached(t).reshape({}));
  kept_w_.push_back(weight);
  return Route::Kept;
}

PPE_DECL std::pair<at::Tensor, std::vector<double>> LazyValues::take_kept(bool floating) {
  at::Tensor xs = at::_ops::stack::call(kept_, 0);
  const at::ScalarType t = xs.scalar_type();
  // Half and bfloat16 are reduced in float32: more exact, and LibTorch's CPU
  // kernels lack half precision clamp and sqrt.
  if (t == at::kHalf || t == at::kBFloat16)
    xs = xs.to(at::kFloat);
  else if (floating && !at::isFloatingType(t) && !at::isComplexType(t))
    xs = xs.to(at::kDouble);
  kept_.clear();
  std::vector<double> w = std::move(kept_w_);
  kept_w_.clear();
  return {std::move(xs), std::move(w)};
}

}  // namespace ppe::training::extensions::accumulate::detail
