#pragma once
/// \file
/// What the summaries of the accumulate extensions have in common (PPE's
/// `accumulate._summary.SummaryBase`): the `accumulate::summary` concept an
/// `AccumulateBase` summary models, and `accumulate::detail::LazyValues`, the
/// lazy tensor handling AverageSummary, MinSummary and MaxSummary share with
/// `ppe::reporting::Summary` (which the standard deviation summaries use).

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

#include <concepts>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ppe/detail/config.hpp"
#include "ppe/reporting/summary.hpp"
#include "ppe/reporting/value.hpp"
#include "ppe/state.hpp"

namespace ppe::training::extensions::accumulate {

/// A summary an `AccumulateBase` can accumulate into (PPE's `SummaryBase`
/// protocol, plus `+=` for the distributed gather and `reset` for reuse):
/// - `add(value, weight = 1)`: numbers, one-element tensors, deferred values;
/// - `compute_accumulate()`: the accumulated value;
/// - `state_dict()` / `load_state_dict(state)`;
/// - `a += b`: `a` becomes the summary of both (PPE's `a + b`);
/// - `reset()`: empty again.
template <class S>
concept summary = std::default_initializable<S> && std::copy_constructible<S> &&
    requires(S& s, const S& other, const reporting::Value& v, const State& state) {
  s.add(v);
  s.add(v, 1.0);
  { s.compute_accumulate() } -> std::convertible_to<reporting::Value>;
  { s.state_dict() } -> std::convertible_to<State>;
  s.load_state_dict(state);
  s += other;
  s.reset();
};

namespace detail {

/// Python's name of a dtype a summary can read on the host (`"float32"`,
/// `"float64"`, `"int64"`, `"int32"`, `"int16"`, `"int8"`, `"uint8"`).
PPE_DECL std::string_view dtype_name(at::ScalarType t);
/// The dtype named by `dtype_name`; an error naming `who` for another name.
PPE_DECL at::ScalarType dtype_from_name(const std::string& name, std::string_view who);

/// The dtype of a mean of tensors of dtype `t` read on the host (as
/// `ppe::reporting::Summary`): float32 stays float32, the rest is float64.
inline at::ScalarType mean_dtype(at::ScalarType t) { return t == at::kFloat ? at::kFloat : at::kDouble; }
/// `a` and `b` promoted, where Undefined means "none yet".
inline at::ScalarType promote(at::ScalarType a, at::ScalarType b) {
  if (a == at::ScalarType::Undefined) return b;
  if (b == at::ScalarType::Undefined) return a;
  return c10::promoteTypes(a, b);
}

/// `n` as a State: an int when it is a whole number (PPE saves counts as
/// ints), else the double (a fractional weight is kept exactly).
PPE_DECL State weight_state(double n);

/// Sorts added values the way `ppe::reporting::Summary` does, so that a
/// summary keeps tensors without host synchronisation:
/// - numbers, and one-element CPU tensors whose value is a plain memory read
///   (float, double, integers), are handed back at once (`Route::Host`);
/// - other tensors (other devices, half precision, ...) are kept, detached,
///   until the summary folds them (`Route::Kept`): one batched reduction on
///   their device every `kFoldEvery` values, or when the summary is read;
/// - deferred callables are kept until the summary is read (`Route::Deferred`).
class LazyValues {
 public:
  /// How many kept tensors a summary reduces together.
  static constexpr std::size_t kFoldEvery = reporting::Summary::kFoldEvery;

  enum class Route { Host, Kept, Deferred };

  /// Routes `value`. For `Route::Host`, `*x` is the value and `*dtype` the
  /// tensor's dtype (Undefined for a number). A tensor with more than one
  /// element is an error naming `who`.
  PPE_DECL Route route(const reporting::Value& value, double weight, double* x, at::ScalarType* dtype,
                       std::string_view who);

  /// Whether enough tensors are kept to fold them now.
  bool full() const noexcept { return kept_.size() >= kFoldEvery; }
  bool has_kept() const noexcept { return !kept_.empty(); }
  /// The kept tensors as one 1-d tensor (half and bfloat16 as float32,
  /// integers as float64 when `floating`) and their weights; both are emptied.
  PPE_DECL std::pair<at::Tensor, std::vector<double>> take_kept(bool floating);
  /// The deferred values and their weights; emptied.
  std::vector<std::pair<reporting::Deferred, double>> take_deferred() { return std::exchange(deferred_, {}); }
  /// Appends `other`'s deferred values (PPE's `a + b` concatenates them).
  void append_deferred(const LazyValues& other) {
    deferred_.insert(deferred_.end(), other.deferred_.begin(), other.deferred_.end());
  }
  void clear() {
    kept_.clear();
    kept_w_.clear();
    deferred_.clear();
  }

 private:
  std::vector<at::Tensor> kept_;
  std::vector<double> kept_w_;
  std::vector<std::pair<reporting::Deferred, double>> deferred_;
};

}  // namespace detail
}  // namespace ppe::training::extensions::accumulate

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/training/extensions/accumulate/summary/impl/summary_base.ipp"
#endif
