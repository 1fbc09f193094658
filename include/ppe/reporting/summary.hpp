#pragma once
/// \file
/// `ppe::reporting::Summary`: online weighted mean and population standard
/// deviation of reported values (PPE's `ppe.reporting.Summary`).

#include <ATen/core/Tensor.h>
#include <ATen/ops/scalar_tensor.h>
#include <ATen/ops/stack_ops.h>  // the operator alone: ATen/ops/stack.h costs ~2.5 s per translation unit
#include <ATen/ops/tensor.h>
#include <c10/core/DispatchKeySet.h>
#include <c10/core/ScalarType.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ppe/reporting/value.hpp"
#include "ppe/state.hpp"

namespace ppe::reporting {

namespace detail {

/// Reads the single element of `t` as a double when that is a plain memory
/// read: a strided CPU tensor of a floating (float, double) or integer dtype
/// with storage and no wrapper (negative view, zero tensor, functionalization,
/// vmap, Python subclass). Returns false for anything else (other devices,
/// half precision, complex, bool, ...), which must be read lazily. Neither
/// the dispatcher nor `item()` is involved: a CPU value costs a few loads.
/// On success `*mean_dtype` is the dtype a mean of such tensors has (the
/// floating dtype itself; double for integers).
inline bool read_cpu_scalar(const at::Tensor& t, double* value, at::ScalarType* mean_dtype) {
  static constexpr c10::DispatchKeySet kWrapped({c10::DispatchKey::Negative, c10::DispatchKey::ZeroTensor,
                                                 c10::DispatchKey::Functionalize, c10::DispatchKey::Python,
                                                 c10::DispatchKey::FuncTorchBatched});
  const c10::TensorImpl* impl = t.unsafeGetTensorImpl();
  if (!impl->is_cpu() || impl->layout() != at::kStrided || impl->key_set().has_any(kWrapped) || !impl->has_storage())
    return false;
  const void* p = impl->data();
  switch (t.scalar_type()) {
    case at::kFloat: *value = *static_cast<const float*>(p); *mean_dtype = at::kFloat; return true;
    case at::kDouble: *value = *static_cast<const double*>(p); *mean_dtype = at::kDouble; return true;
    case at::kLong: *value = static_cast<double>(*static_cast<const std::int64_t*>(p)); break;
    case at::kInt: *value = *static_cast<const std::int32_t*>(p); break;
    case at::kShort: *value = *static_cast<const std::int16_t*>(p); break;
    case at::kChar: *value = *static_cast<const std::int8_t*>(p); break;
    case at::kByte: *value = *static_cast<const std::uint8_t*>(p); break;
    default: return false;
  }
  *mean_dtype = at::kDouble;
  return true;
}

/// The state key naming the dtype of the mean of a summary whose tensors were
/// read on the host (see Summary::state_dict).
inline constexpr std::string_view kMeanDtypeKey = "_dtype";

inline std::string_view dtype_name(at::ScalarType t) { return t == at::kFloat ? "float32" : "float64"; }
inline at::ScalarType dtype_from_name(const std::string& name) {
  if (name == "float32") return at::kFloat;
  if (name == "float64") return at::kDouble;
  throw std::invalid_argument("ppe::reporting::Summary::load_state_dict: '_dtype' must be 'float32' or 'float64', got '" +
                              name + "'");
}

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
      const at::Tensor& t = value.tensor();
      if (t.numel() != 1)
        throw std::invalid_argument("ppe::reporting::Summary::add: expected a tensor with one element, got " +
                                    std::to_string(t.numel()) + " elements");
      double v;
      at::ScalarType dtype;
      if (detail::read_cpu_scalar(t, &v, &dtype)) {
        accumulate(v, weight);
        host_dtype_ = host_dtype_ == at::ScalarType::Undefined ? dtype : c10::promoteTypes(host_dtype_, dtype);
        return;
      }
      // Detached (as PPE accumulates under no_grad): a held grad_fn would keep
      // the autograd graph and its saved activations alive until the fold.
      if (pending_.capacity() < kFoldEvery) {
        pending_.reserve(kFoldEvery);
        pending_w_.reserve(kFoldEvery);
      }
      pending_.push_back(detached(t));
      pending_w_.push_back(weight);
      n_ += weight;
      if (pending_.size() >= kFoldEvery) fold();
    }
  }
  /// Adds `value` with a weight given as a one-element tensor (read on the host).
  void add(const Value& value, const at::Tensor& weight) {
    if (weight.dim() != 0)
      throw std::invalid_argument("ppe::reporting::Summary::add: the weight must be a 0-dim tensor, got " +
                                  std::to_string(weight.dim()) + " dimensions");
    double w;
    at::ScalarType unused;
    if (!detail::read_cpu_scalar(weight, &w, &unused)) w = weight.item<double>();
    add(value, w);
  }

  /// Total weight added so far (deferred values not yet evaluated are not counted).
  double weight() const noexcept { return n_; }
  /// Whether nothing (not even a deferred value) was added.
  bool empty() const noexcept {
    return n_ == 0 && deferred_.empty() && pending_.empty() && !tx_.defined() &&
           host_dtype_ == at::ScalarType::Undefined;
  }

  /// The weighted mean: a tensor if any tensor was added, else a double.
  Value compute_mean() {
    settle();
    check_not_empty("compute_mean");
    if (tx_.defined()) return Value(device_sum(tx_).add(x_).div(n_));
    if (host_dtype_ != at::ScalarType::Undefined) return Value(host_tensor(x_ / n_));
    return Value(x_ / n_);
  }

  /// `(mean, population std)`; std = sqrt(E[x²] − mean²), as PPE computes it.
  std::pair<Value, Value> make_statistics() {
    settle();
    check_not_empty("make_statistics");
    if (tx_.defined()) {
      at::Tensor mean = device_sum(tx_).add(x_).div(n_);
      at::Tensor std = device_sum(tx2_).add(x2_).div(n_).sub(mean.mul(mean)).sqrt();
      return {Value(mean), Value(std)};
    }
    const double mean = x_ / n_;
    const double std = std::sqrt(x2_ / n_ - mean * mean);
    if (host_dtype_ != at::ScalarType::Undefined) return {Value(host_tensor(mean)), Value(host_tensor(std))};
    return {Value(mean), Value(std)};
  }

  /// `{"_x", "_x2", "_n"}` as PPE saves it: the sums as doubles, plus `"_dtype"`
  /// (`"float32"` or `"float64"`, the dtype of the mean) when CPU tensors were
  /// added. When tensors were kept lazily (other devices, other dtypes) the
  /// sums are 0-dim tensors (their dtype, their device): reading them would be
  /// a host synchronisation, and a summary restored from them continues with
  /// exactly the arithmetic of one that was never saved, which exact resume
  /// needs (converting a float32 sum to a double and back changes the rounding
  /// of the mean). Unlike PPE 0.9.0 the weight `_n` is kept exactly (PPE
  /// truncates it to an int).
  State state_dict() {
    settle();
    if (!tx_.defined()) {
      State s = State::dict({{"_x", x_}, {"_x2", x2_}, {"_n", n_}});
      if (host_dtype_ != at::ScalarType::Undefined)
        s.set(detail::kMeanDtypeKey, detail::dtype_name(host_dtype_));
      return s;
    }
    at::Tensor x = device_sum(tx_), x2 = device_sum(tx2_);
    return State::dict({{"_x", x_ == 0.0 ? x : x.add(x_)}, {"_x2", x2_ == 0.0 ? x2 : x2.add(x2_)}, {"_n", n_}});
  }
  /// Restores `state_dict()`'s state, or PPE's (doubles, `_n` an int), or that
  /// of earlier versions of this library (0-dim CPU tensors for CPU tensors'
  /// sums: read into doubles).
  void load_state_dict(const State& s) {
    reset();
    const State& x = s.at("_x");
    const State& x2 = s.at("_x2");
    if (x.is_tensor() != x2.is_tensor())
      throw std::invalid_argument("ppe::reporting::Summary::load_state_dict: '_x' and '_x2' must both be numbers or "
                                  "both be tensors");
    if (x.is_tensor()) {
      at::ScalarType d1, d2;
      if (detail::read_cpu_scalar(x.as_tensor(), &x_, &d1) && detail::read_cpu_scalar(x2.as_tensor(), &x2_, &d2)) {
        host_dtype_ = c10::promoteTypes(d1, d2);
      } else {
        x_ = x2_ = 0.0;
        tx_ = x.as_tensor();
        tx2_ = x2.as_tensor();
      }
    } else {
      x_ = x.as_double();
      x2_ = x2.as_double();
      if (const State* d = s.find(detail::kMeanDtypeKey)) host_dtype_ = detail::dtype_from_name(d->as_string());
    }
    n_ = s.at("_n").as_double();
  }

  void reset() {
    x_ = x2_ = n_ = 0.0;
    host_dtype_ = at::ScalarType::Undefined;
    pending_.clear();
    pending_w_.clear();
    deferred_.clear();
    tx_ = at::Tensor();
    tx2_ = at::Tensor();
  }

  Summary& operator+=(const Summary& other) {
    Summary o = other;
    o.fold();
    x_ += o.x_;
    x2_ += o.x2_;
    n_ += o.n_;
    if (o.host_dtype_ != at::ScalarType::Undefined)
      host_dtype_ =
          host_dtype_ == at::ScalarType::Undefined ? o.host_dtype_ : c10::promoteTypes(host_dtype_, o.host_dtype_);
    if (o.tx_.defined()) {
      fold();
      tx_ = tx_.defined() ? tx_.add(o.tx_) : o.tx_;
      tx2_ = tx2_.defined() ? tx2_.add(o.tx2_) : o.tx2_;
    }
    deferred_.insert(deferred_.end(), o.deferred_.begin(), o.deferred_.end());
    return *this;
  }
  friend Summary operator+(Summary a, const Summary& b) { return a += b; }

 private:
  void accumulate(double v, double weight) {
    x_ += weight * v;
    x2_ += weight * v * v;
    n_ += weight;
  }

  void settle() {
    for (auto& [f, w] : deferred_) {
      Value v = f();
      if (v.is_deferred()) v = v.resolved();
      add(v, w);
    }
    deferred_.clear();
    fold();
  }

  // A 0-dim CPU tensor of the host tensors' mean dtype.
  at::Tensor host_tensor(double v) const { return at::scalar_tensor(v, at::TensorOptions().dtype(host_dtype_)); }
  // A device sum in the dtype the host tensors also need (float32 device
  // tensors mixed with float64 CPU ones give a float64 mean, as stacking them
  // would).
  at::Tensor device_sum(const at::Tensor& t) const {
    if (host_dtype_ == at::ScalarType::Undefined) return t;
    const at::ScalarType d = c10::promoteTypes(t.scalar_type(), host_dtype_);
    return d == t.scalar_type() ? t : t.to(d);
  }

  // One batched reduction of the pending tensors into tx_/tx2_.
  void fold() {
    if (pending_.empty()) return;
    std::vector<at::Tensor> flat;
    flat.reserve(pending_.size());
    for (const auto& t : pending_) flat.push_back(t.dim() == 0 ? t : t.reshape({}));
    at::Tensor xs = at::_ops::stack::call(flat, 0);
    if (!at::isFloatingType(xs.scalar_type()) && !at::isComplexType(xs.scalar_type()))
      xs = xs.to(at::kDouble);
    at::Tensor w = at::tensor(pending_w_, at::TensorOptions().dtype(at::kDouble)).to(xs.options());
    at::Tensor sx = xs.mul(w).sum();
    at::Tensor sx2 = xs.mul(xs).mul(w).sum();
    tx_ = tx_.defined() ? tx_.add(sx) : sx;
    tx2_ = tx2_.defined() ? tx2_.add(sx2) : sx2;
    pending_.clear();
    pending_w_.clear();
  }

  void check_not_empty(const char* what) const {
    if (n_ == 0)
      throw std::domain_error(std::string("ppe::reporting::Summary::") + what +
                              ": the summary is empty (total weight 0)");
  }

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
