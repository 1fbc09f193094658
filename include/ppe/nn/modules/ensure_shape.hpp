#pragma once
/// \file
/// `ppe::nn::Ensure` and `ppe::nn::ensure` (PPE's `Ensure` / `ensure` in
/// `ppe.nn.modules.ensure_shape`): a module that checks the shape, dtype and
/// device of the tensor passing through it and returns the tensor unchanged.
///
/// \code
///   torch::nn::Sequential net(torch::nn::Linear(10, 4),
///                             ppe::nn::Ensure(ppe::nn::EnsureOptions().shape({ppe::nn::kAnyDim, 4}).dtype(torch::kFloat)));
///   ppe::nn::ensure(x, ppe::nn::EnsureOptions().shape({2, 3}));  // throws std::invalid_argument if x is not [2, 3]
/// \endcode

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>
#include <torch/nn/cloneable.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <optional>
#include <ostream>
#include <utility>
#include <vector>

#include "ppe/detail/arg.hpp"
#include "ppe/detail/config.hpp"

namespace ppe::nn {

/// A dimension of any size in `EnsureOptions::shape` (PPE: `None`).
inline constexpr std::nullopt_t kAnyDim = std::nullopt;

/// What `Ensure` checks. At least one of shape, dtype and device must be
/// given (PPE: "shape, dtype or both arguments must be specified").
struct EnsureOptions {
  /// The expected shape; `kAnyDim` (or `std::nullopt`) for a dimension of any
  /// size. As in PPE, a shape with an any-size dimension is compared with
  /// the broadcasting rules (the any-size dimension counts as 1).
  EnsureOptions& shape(std::vector<std::optional<std::int64_t>> s) {
    shape_ = std::move(s);
    return *this;
  }
  const std::optional<std::vector<std::optional<std::int64_t>>>& shape() const noexcept { return shape_; }
  /// The expected dtype (none: not checked).
  PPE_ARG(std::optional<c10::ScalarType>, dtype) = std::nullopt;
  /// The expected device (none: not checked). A device without an index
  /// (`torch::kCUDA`) matches any device of its type.
  PPE_ARG(std::optional<c10::Device>, device) = std::nullopt;
  /// Accept any shape that broadcasts with `shape` (PPE's `broadcastable`).
  PPE_ARG(bool, broadcastable) = false;
  /// Accept a dtype that `torch::can_cast` to `dtype` (PPE's `can_cast`).
  PPE_ARG(bool, can_cast) = false;

 private:
  std::optional<std::vector<std::optional<std::int64_t>>> shape_;
};

/// Checks `input` against `options` (PPE's `ensure`): std::invalid_argument
/// naming the expected and the actual shape, dtype or device.
PPE_DECL void ensure(const at::Tensor& input, const EnsureOptions& options);

/// A module that checks its input (see `EnsureOptions`) and returns it.
class EnsureImpl : public torch::nn::Cloneable<EnsureImpl> {
 public:
  /// Throws std::invalid_argument when neither shape, dtype nor device is given.
  PPE_DECL explicit EnsureImpl(EnsureOptions options);
  void reset() override {}
  /// `input`, after the checks.
  at::Tensor forward(const at::Tensor& input) {
    ensure(input, options);
    return input;
  }
  PPE_DECL void pretty_print(std::ostream& stream) const override;

  EnsureOptions options;
};

/// `std::shared_ptr<EnsureImpl>` holder.
TORCH_MODULE(Ensure);

}  // namespace ppe::nn

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/nn/modules/impl/ensure_shape.ipp"
#endif
