// Definitions of nn/modules/ensure_shape.hpp's out-of-line functions: included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <ATen/ops/can_cast.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "ppe/detail/python_repr.hpp"
#include "ppe/nn/modules/ensure_shape.hpp"

namespace ppe::nn {

namespace detail {

PPE_DECL std::string ensure_shape_text(const std::vector<std::optional<std::int64_t>>& shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + (shape[i] ? std::to_string(*shape[i]) : "*");
  return out + "]";
}

}  // namespace detail

PPE_DECL void ensure(const at::Tensor& input, const EnsureOptions& options) {
  if (const auto& expected = options.shape()) {
    const at::IntArrayRef actual = input.sizes();
    const bool any_dim = std::any_of(expected->begin(), expected->end(), [](const auto& d) { return !d; });
    bool equal = expected->size() == actual.size();
    for (std::size_t i = 0; equal && i < actual.size(); ++i) equal = (*expected)[i] && *(*expected)[i] == actual[i];
    if (!equal) {
      if (!options.broadcastable() && !any_dim)
        throw std::invalid_argument("ppe::nn::Ensure: expected shape " + detail::ensure_shape_text(*expected) +
                                    ", input shape is " + ppe::detail::python_shape(actual));
      // Broadcasting: align on the right; a missing or any-size dimension counts as 1.
      const std::size_t n = std::max(expected->size(), actual.size());
      for (std::size_t k = 0; k < n; ++k) {
        const std::int64_t a = k < actual.size() ? actual[actual.size() - 1 - k] : 1;
        const std::int64_t e = k < expected->size() ? (*expected)[expected->size() - 1 - k].value_or(1) : 1;
        if (a != e && a != 1 && e != 1)
          throw std::invalid_argument(
              "ppe::nn::Ensure: shapes " + detail::ensure_shape_text(*expected) + " and " +
              ppe::detail::python_shape(actual) + " (input) are non broadcastable (dimension " +
              std::to_string(static_cast<std::int64_t>(actual.size()) - static_cast<std::int64_t>(k) - 1) +
              " of the input)");
      }
    }
  }
  if (const auto& dtype = options.dtype(); dtype && input.scalar_type() != *dtype) {
    if (!options.can_cast())
      throw std::invalid_argument("ppe::nn::Ensure: expected dtype " + std::string(c10::toString(*dtype)) +
                                  ", input dtype is " + std::string(c10::toString(input.scalar_type())));
    if (!at::can_cast(input.scalar_type(), *dtype))
      throw std::invalid_argument("ppe::nn::Ensure: input dtype " + std::string(c10::toString(input.scalar_type())) +
                                  " can't be casted to " + std::string(c10::toString(*dtype)));
  }
  if (const auto& device = options.device()) {
    const c10::Device actual = input.device();
    if (actual.type() != device->type() || (device->has_index() && actual != *device))
      throw std::invalid_argument("ppe::nn::Ensure: expected device " + device->str() + ", input device is " +
                                  actual.str());
  }
}

PPE_DECL EnsureImpl::EnsureImpl(EnsureOptions options_) : options(std::move(options_)) {
  if (!options.shape() && !options.dtype() && !options.device())
    throw std::invalid_argument("ppe::nn::Ensure: shape, dtype, device or several of them must be specified");
}

PPE_DECL void EnsureImpl::pretty_print(std::ostream& stream) const {
  stream << "ppe::nn::Ensure(";
  const char* sep = "";
  if (options.shape()) {
    stream << "shape=" << detail::ensure_shape_text(*options.shape());
    sep = ", ";
  }
  if (options.dtype()) {
    stream << sep << "dtype=" << c10::toString(*options.dtype());
    sep = ", ";
  }
  if (options.device()) stream << sep << "device=" << options.device()->str();
  stream << ")";
}

}  // namespace ppe::nn
