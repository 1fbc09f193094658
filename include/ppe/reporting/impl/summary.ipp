// Definitions of reporting/summary.hpp's out-of-line functions: included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <ATen/ops/empty.h>
#include <ATen/ops/scalar_tensor.h>
#include <ATen/ops/stack_ops.h>  // the operator alone: ATen/ops/stack.h costs ~2.5 s per translation unit
#include <ATen/ops/tensor.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "ppe/detail/python_repr.hpp"
#include "ppe/reporting/summary.hpp"

namespace ppe::reporting {

PPE_DECL at::ScalarType detail::dtype_from_name(const std::string& name) {
  if (const auto t = ppe::detail::python_dtype(name); t == at::kFloat || t == at::kDouble) return *t;
  throw std::invalid_argument(
      "ppe::reporting::Summary::load_state_dict: '_dtype' must be 'float32' or 'float64', got '" + name + "'");
}

PPE_DECL void Summary::add(const Value& value, const at::Tensor& weight) {
  if (weight.dim() != 0)
    throw std::invalid_argument("ppe::reporting::Summary::add: the weight must be a 0-dim tensor, got " +
                                std::to_string(weight.dim()) + " dimensions");
  double w;
  at::ScalarType unused;
  if (!detail::read_cpu_scalar(weight, &w, &unused)) w = weight.item<double>();
  add(value, w);
}

PPE_DECL Value Summary::compute_mean() {
  settle();
  check_not_empty("compute_mean");
  if (tx_.defined()) return Value(device_sum(tx_).add(x_).div(n_));
  if (host_dtype_ != at::ScalarType::Undefined) return Value(host_tensor(x_ / n_));
  return Value(x_ / n_);
}

PPE_DECL std::pair<Value, Value> Summary::make_statistics() {
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

PPE_DECL State Summary::state_dict() {
  settle();
  if (!tx_.defined()) {
    State s = State::dict({{"_x", x_}, {"_x2", x2_}, {"_n", n_}});
    if (host_dtype_ != at::ScalarType::Undefined)
      s.set(detail::kMeanDtypeKey, ppe::detail::python_dtype_name(host_dtype_));
    return s;
  }
  at::Tensor x = device_sum(tx_), x2 = device_sum(tx2_);
  return State::dict({{"_x", x_ == 0.0 ? x : x.add(x_)}, {"_x2", x2_ == 0.0 ? x2 : x2.add(x2_)}, {"_n", n_}});
}

PPE_DECL void Summary::load_state_dict(const State& s) {
  reset();
  const State& x = s.at("_x");
  const State& x2 = s.at("_x2");
  if (x.is_tensor() != x2.is_tensor())
    throw std::invalid_argument(
        "ppe::reporting::Summary::load_state_dict: '_x' and '_x2' must both be numbers or "
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

PPE_DECL void Summary::reset() {
  x_ = x2_ = n_ = 0.0;
  host_dtype_ = at::ScalarType::Undefined;
  pending_.clear();
  pending_w_.clear();
  deferred_.clear();
  tx_ = at::Tensor();
  tx2_ = at::Tensor();
}

PPE_DECL Summary& Summary::operator+=(const Summary& other) {
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

PPE_DECL void Summary::add_tensor(const at::Tensor& t, double weight) {
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

PPE_DECL void Summary::settle() {
  for (auto& [f, w] : deferred_) {
    Value v = f();
    if (v.is_deferred()) v = v.resolved();
    add(v, w);
  }
  deferred_.clear();
  fold();
}

PPE_DECL at::Tensor Summary::host_tensor(double v) const {
  return at::scalar_tensor(v, at::TensorOptions().dtype(host_dtype_));
}

PPE_DECL at::Tensor Summary::device_sum(const at::Tensor& t) const {
  if (host_dtype_ == at::ScalarType::Undefined) return t;
  const at::ScalarType d = c10::promoteTypes(t.scalar_type(), host_dtype_);
  return d == t.scalar_type() ? t : t.to(d);
}

PPE_DECL void Summary::fold() {
  if (pending_.empty()) return;
  std::vector<at::Tensor> flat;
  flat.reserve(pending_.size());
  for (const auto& t : pending_) flat.push_back(t.dim() == 0 ? t : t.reshape({}));
  at::Tensor xs = at::_ops::stack::call(flat, 0);
  if (!at::isFloatingType(xs.scalar_type()) && !at::isComplexType(xs.scalar_type())) xs = xs.to(at::kDouble);
  at::Tensor sx, sx2;
  if (std::all_of(pending_w_.begin(), pending_w_.end(), [&](double w) { return w == pending_w_.front(); })) {
    // The usual case (every report weighs 1): the weight is an operand of
    // the kernels, not a tensor to copy to the device.
    const double w = pending_w_.front();
    sx = w == 1.0 ? xs.sum() : xs.mul(w).sum();
    sx2 = w == 1.0 ? xs.mul(xs).sum() : xs.mul(xs).mul(w).sum();
  } else {
    const at::Tensor w = weights_like(xs);
    sx = xs.mul(w).sum();
    sx2 = xs.mul(xs).mul(w).sum();
  }
  tx_ = tx_.defined() ? tx_.add(sx) : sx;
  tx2_ = tx2_.defined() ? tx2_.add(sx2) : sx2;
  pending_.clear();
  pending_w_.clear();
}

PPE_DECL at::Tensor Summary::weights_like(const at::Tensor& xs) const {
  const auto n = static_cast<std::int64_t>(pending_w_.size());
  if (!xs.is_cuda()) return at::tensor(pending_w_, at::TensorOptions().dtype(at::kDouble)).to(xs.options());
  // From pageable memory the copy would wait for the device; from pinned
  // memory, without blocking, it is queued on the stream, and LibTorch's
  // pinned allocator keeps the buffer until the copy has run.
  at::Tensor host = at::empty({n}, at::TensorOptions().dtype(at::kDouble).pinned_memory(true));
  std::copy(pending_w_.begin(), pending_w_.end(), host.data_ptr<double>());
  return host.to(xs.options(), /*non_blocking=*/true);
}

PPE_DECL void Summary::check_not_empty(const char* what) const {
  if (n_ == 0)
    throw std::domain_error(std::string("ppe::reporting::Summary::") + what +
                            ": the summary is empty (total weight 0)");
}

}  // namespace ppe::reporting
