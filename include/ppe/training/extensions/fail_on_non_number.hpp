#pragma once
/// \file
/// `ppe::training::extensions::FailOnNonNumber` (PPE's extension of the same
/// name): stops training with an exception as soon as a parameter of the
/// manager's models, or its gradient, holds NaN or infinity.

#include <ATen/core/Tensor.h>

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "ppe/detail/arg.hpp"
#include "ppe/detail/config.hpp"
#include "ppe/training/extension.hpp"
#include "ppe/training/manager.hpp"
#include "ppe/training/models.hpp"
#include "ppe/training/triggers/interval_trigger.hpp"

namespace ppe::training::extensions {

/// Options of a FailOnNonNumber (PPE's keyword arguments).
struct FailOnNonNumberOptions {
  /// Also check the gradients of the parameters that have one (PPE's `check_grad`).
  PPE_ARG(bool, check_grad) = true;
};

/// What FailOnNonNumber throws (PPE: RuntimeError): names the model, the
/// first parameter (in the models' order, then `named_parameters()` order)
/// that holds NaN or infinity, and whether it was the value or the gradient.
class NonFiniteParameterError : public std::runtime_error {
 public:
  NonFiniteParameterError(std::string model, std::string parameter, bool gradient, bool nan);

  /// The manager's name of the model ("main" for a single model).
  const std::string& model() const noexcept { return model_; }
  /// The parameter's dotted name in the model (`"fc1.weight"`).
  const std::string& parameter() const noexcept { return parameter_; }
  /// Whether the gradient (not the value) is not finite.
  bool gradient() const noexcept { return gradient_; }
  /// Whether it holds a NaN (else an infinity).
  bool nan() const noexcept { return nan_; }

 private:
  std::string model_, parameter_;
  bool gradient_, nan_;
};

/// Throws NonFiniteParameterError when a parameter of the manager's models
/// (or, with `check_grad`, a gradient) holds NaN or infinity (PPE's
/// `FailOnNonNumber`). Runs every iteration by default.
///
/// One call costs one reduction per tensor and a single host
/// synchronisation: the sums of all the tensors are added on their device
/// and the total is read once (a sum is finite unless a value is NaN or
/// infinite, or the sum overflows). Only when the total is not finite are
/// the tensors checked one by one, to name the culprit; an overflowing sum
/// of finite values is not an error. Parameters that are not floating point
/// (nor complex) cannot diverge and are skipped.
///
/// It declares `needs_model_state`, as in PPE, so it may read the models in
/// the iterations its trigger fires. When an iteration throws, the manager
/// runs every extension's `on_error` once, so a snapshot made with
/// `SnapshotOptions().snapshot_on_error(true)` saves the diverged state.
class FailOnNonNumber {
 public:
  using extension_concept = extension_tag;
  static constexpr std::string_view default_name = "FailOnNonNumber";
  static constexpr int priority = kPriorityReader;
  static constexpr bool needs_model_state = true;
  static auto default_trigger() { return ppe::iterations(1); }

  explicit FailOnNonNumber(FailOnNonNumberOptions options = {}) : check_grad_(options.check_grad()) {}

  void operator()(Manager& manager) { check(manager.models()); }

  /// Checks `models` now (what a call does); throws NonFiniteParameterError.
  void check(const Models& models);

  bool check_grad() const noexcept { return check_grad_; }

 private:
  bool check_grad_;
  std::vector<at::Tensor> sums_;  // reused across calls
};

}  // namespace ppe::training::extensions

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/training/extensions/impl/fail_on_non_number.ipp"
#endif
