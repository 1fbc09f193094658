// Definitions of training/extensions/accumulate/summary/standard_deviation_summary.hpp's out-of-line functions:
// included by it when header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <ATen/ops/scalar_tensor.h>

#include <cmath>
#include <limits>
#include <stdexcept>

#include "ppe/training/extensions/accumulate/summary/standard_deviation_summary.hpp"

namespace ppe::training::extensions::accumulate::detail {

PPE_DECL reporting::Value standard_deviation(reporting::Summary& sums, bool unbiased) {
  // The sums as state_dict() has them: doubles (with the result's dtype when
  // CPU tensors were added) or tensors on their device; deferred values
  // evaluated. Read once per report, so the dictionary costs nothing that matters.
  const State s = sums.state_dict();
  const double n = s.at("_n").as_double();
  if (unbiased && n <= 1) return reporting::Value(std::numeric_limits<double>::quiet_NaN());
  if (n == 0)
    throw std::domain_error(
        "ppe::training::extensions::accumulate::StandardDeviationSummary: the summary is empty (total weight 0)");
  const State& x = s.at("_x");
  const State& x2 = s.at("_x2");
  if (x.is_tensor()) {
    // Half and bfloat16 sums in float32: LibTorch's CPU kernels lack half precision sqrt.
    auto widened = [](const at::Tensor& t) {
      return t.scalar_type() == at::kHalf || t.scalar_type() == at::kBFloat16 ? t.to(at::kFloat) : t;
    };
    const at::Tensor mean = widened(x.as_tensor()).div(n);
    at::Tensor var = widened(x2.as_tensor()).div(n).sub(mean.mul(mean));
    if (unbiased) var = var.mul(n / (n - 1));
    return reporting::Value(var.sqrt());
  }
  const double mean = x.as_double() / n;
  double var = x2.as_double() / n - mean * mean;
  if (unbiased) var = var * (n / (n - 1));
  const double sd = std::sqrt(var);
  if (const State* d = s.find(reporting::detail::kMeanDtypeKey))
    return reporting::Value(
        at::scalar_tensor(sd, at::TensorOptions().dtype(reporting::detail::dtype_from_name(d->as_string()))));
  return reporting::Value(sd);
}

}  // namespace ppe::training::extensions::accumulate::detail
