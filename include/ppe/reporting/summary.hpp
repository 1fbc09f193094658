#pragma once
/// \file
/// `ppe::reporting::Summary`: online weighted mean and population standard
/// deviation of reported values (PPE's `ppe.reporting.Summary`).

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ppe/detail/config.hpp"
#include "ppe/reporting/value.hpp"
#include "ppe/state.hpp"

namespace ppe::reporting {

namespace detail {

/// The state key naming the dtype of the mean of a summary whose tensors were
/// read on the host (see Summary::state_dict).
inline constexpr std::string_view kMeanDtypeKey = "_dtype";

PPE_DECL at::ScalarType dtype_from_name(const std::string& name);

}  // namespace detail

/// Weighted mean and population standard deviation of a stream of values.
///
/// How values accumulate:
/// - numbers, and one-element CPU tensors of float, double or integer dtype,
///   are read at `add` (a CPU tensor's value is a memory read, no device
///   synchronisation) and summed as doubles: a few nanoseconds per value and
///   nothing left to do when the summary is read;
/// - other tensors (other devices, other dtypes) are kept lazily: `add` keeps
///   the tensor handle and does no device work and no host synchronisation;
///   every `kFoldEvery` of them are reduced in one batched reduction on their
///   device as they arrive, and the rest when the summary is read
///   (`compute_mean`, `make_statistics`, `state_dict`), which therefore never
///   reduces more than `kFoldEvery - 1` of them.
///
/// Means of tensors are tensors: on the lazily kept tensors' device, else a
/// 0-dim CPU tensor (float32 when every tensor was float32, else float64);
/// means of numbers are doubles. Deferred callables are evaluated when the
/// summary is read.
class Summary {
 public:
  /// How many lazily kept tensors are reduced together: small enough that the
  /// read of a summary (LogReport's emission) reduces few, large enough that
  /// a reduction's fixed cost (a handful of device kernels) is spread thin.
  static constexpr std::size_t kFoldEvery = 64;

  /// Adds `value` with `weight`. Tensors must have a single element.
  void add(const Value& value, double weight = 1.0) {
    if (value.is_deferred()) {
      deferred_.emplace_back(value.deferred(), weight);
    } else if (value.is_scalar()) {
      accumulate(value.scalar(), weight);
    } else {
      add_tensor(value.tensor(), weight);
    }
  }
  /// Adds `value` with a weight given as a one-element tensor (read on the host).
  void add(const Value& value, const at::Tensor& weight);

  /// Total weight added so far (deferred values not yet evaluated are not counted).
  double weight() const noexcept { return n_; }
  /// Whether nothing (not even a deferred value) was added.
  bool empty() const noexcept {
    return n_ == 0 && deferred_.empty() && pending_.empty() && !tx_.defined() &&
           host_dtype_ == at::ScalarType::Undefined;
  }

  /// The weighted mean: a tensor if any tensor was added, else a double.
  Value compute_mean();

  /// `(mean, population std)`; std = sqrt(E[x²] − mean²), as PPE computes it.
  std::pair<Value, Value> make_statistics();

  /// `{"_x", "_x2", "_n"}` as PPE saves it: the sums as doubles, plus `"_dtype"`
  /// (`"float32"` or `"float64"`, the dtype of the mean) when CPU tensors were
  /// added. When tensors were kept lazily (other devices, other dtypes) the
  /// sums are 0-dim tensors (their dtype, their device): reading them would be
  /// a host synchronisation, and a summary restored from them continues with
  /// exactly the arithmetic of one that was never saved, which exact resume
  /// needs (converting a float32 sum to a double and back changes the rounding
  /// of the mean). Unlike PPE 0.9.0 the weight `_n` is kept exactly (PPE
  /// truncates it to an int).
  State state_dict();
  /// Restores `state_dict()`'s state, or PPE's (doubles, `_n` an int), or that
  /// of earlier versions of this library (0-dim CPU tensors for CPU tensors'
  /// sums: read into doubles).
  void load_state_dict(const State& s);

  void reset();

  Summary& operator+=(const Summary& other);
  friend Summary operator+(Summary a, const Summary& b) { return a += b; }

 private:
  // add() of a tensor: a CPU scalar is read at once, another is kept for the
  // next fold.
  void add_tensor(const at::Tensor& t, double weight);

  void accumulate(double v, double weight) {
    x_ += weight * v;
    x2_ += weight * v * v;
    n_ += weight;
  }

  void settle();

  // A 0-dim CPU tensor of the host tensors' mean dtype.
  at::Tensor host_tensor(double v) const;
  // A device sum in the dtype the host tensors also need (float32 device
  // tensors mixed with float64 CPU ones give a float64 mean, as stacking them
  // would).
  at::Tensor device_sum(const at::Tensor& t) const;

  // One batched reduction of the pending tensors into tx_/tx2_.
  void fold();
  // The pending weights as a tensor like `xs`, copied without making the
  // host wait for the device.
  at::Tensor weights_like(const at::Tensor& xs) const;

  void check_not_empty(const char* what) const;

  // Sums of numbers and of CPU tensors read at add (x_, x2_), total weight of
  // everything (n_).
  double x_ = 0.0, x2_ = 0.0, n_ = 0.0;
  // The mean's dtype when CPU tensors were read (Undefined: none was).
  at::ScalarType host_dtype_ = at::ScalarType::Undefined;
  std::vector<at::Tensor> pending_;
  std::vector<double> pending_w_;
  at::Tensor tx_, tx2_;
  std::vector<std::pair<Deferred, double>> deferred_;
};

}  // namespace ppe::reporting

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/reporting/impl/summary.ipp"
#endif
