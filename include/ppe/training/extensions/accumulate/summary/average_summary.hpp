#pragma once
/// \file
/// `accumulate::AverageSummary` (PPE's `accumulate._summary.AverageSummary`):
/// the running average that `AverageAccumulate` reports.

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

#include "ppe/detail/config.hpp"
#include "ppe/reporting/value.hpp"
#include "ppe/state.hpp"
#include "ppe/training/extensions/accumulate/summary/summary_base.hpp"

namespace ppe::training::extensions::accumulate {

/// A running average, updated as PPE updates it: with `n` the weight so far,
/// `add(v, w)` sets `x = x * n/(n+w) + (v/w) * (1 - n/(n+w))`, i.e. `v` is
/// taken as the sum of `w` samples (PPE's rule; `ppe::reporting::Summary`
/// instead weights `v` by `w`). With the weight 1 that `AverageAccumulate`
/// uses, `x` is the mean of the values.
///
/// Numbers and one-element CPU tensors are read at `add` (no device work);
/// other tensors are kept and averaged on their device in batches, without
/// host synchronisation (`detail::LazyValues`); deferred values are evaluated
/// when the summary is read. The average is a double for numbers only, a
/// 0-dim tensor when tensors were added (float32 when every tensor read on
/// the host was float32, else float64; on the kept tensors' device when there
/// are some). An empty summary's average is 0.0, as PPE's.
class AverageSummary {
 public:
  /// Adds `value` (a number, a one-element tensor or a deferred value) as the
  /// sum of `weight` samples.
  void add(const reporting::Value& value, double weight = 1.0);

  /// The average (PPE's `compute_average`).
  reporting::Value compute_average();
  /// The average (PPE's `compute_accumulate`).
  reporting::Value compute_accumulate() { return compute_average(); }

  /// PPE's layout: `{"_x": average, "_n": total weight}` (`_n` an int when
  /// whole, as PPE's; a fractional weight stays exact), plus `"_dtype"` (the
  /// average's dtype) when tensors were read on the host. With tensors kept
  /// on their device, `_x` is a 0-dim tensor there (reading it would be a
  /// host synchronisation). Deferred values are evaluated first.
  State state_dict();
  /// Restores `state_dict()`'s state or PPE's.
  void load_state_dict(const State& s);

  /// This summary becomes the average of both (PPE's `a + b`).
  AverageSummary& operator+=(const AverageSummary& other);
  friend AverageSummary operator+(AverageSummary a, const AverageSummary& b) { return a += b; }

  /// Empty again.
  void reset();

 private:
  void add_host(double v, double w, at::ScalarType dtype);
  // Averages the kept tensors into tx_.
  void fold();
  // Evaluates the deferred values, then folds.
  void settle();
  // The average of the host and device parts, as a device tensor.
  at::Tensor combined() const;

  // Host part: the average of numbers and host-read tensors, their weight,
  // the dtype of the average when tensors were among them.
  double x_ = 0.0, n_ = 0.0;
  at::ScalarType host_dtype_ = at::ScalarType::Undefined;
  // Device part: the average of the folded tensors and their weight.
  at::Tensor tx_;
  double tn_ = 0.0;
  detail::LazyValues lazy_;
};

}  // namespace ppe::training::extensions::accumulate

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/training/extensions/accumulate/summary/impl/average_summary.ipp"
#endif
