#pragma once
/// \file
/// `ppe::reporting::Summary`: online weighted mean and population standard
/// deviation of reported values (PPE's `ppe.reporting.Summary`).

#include <ATen/core/Tensor.h>
#include <ATen/ops/stack_ops.h>  // the operator alone: ATen/ops/stack.h costs ~2.5 s per translation unit
#include <ATen/ops/tensor.h>

#include <cmath>
#include <stdexcept>
#include <utility>
#include <vector>

#include "ppe/reporting/value.hpp"
#include "ppe/state.hpp"

namespace ppe::reporting {

/// Weighted mean and population standard deviation of a stream of values.
///
/// Tensors are accumulated lazily: `add` keeps the tensor handle and does no
/// device work and no host synchronisation; the tensors are reduced together
/// when the summary is read (`compute_mean`, `make_statistics`, `state_dict`),
/// or in one batched reduction every `kFoldEvery` tensors to bound memory.
/// Means of tensors are tensors on the tensors' device; means of numbers are
/// doubles. Deferred callables are evaluated when the summary is read.
class Summary {
 public:
  static constexpr std::size_t kFoldEvery = 1024;

  /// Adds `value` with `weight`. Tensors must have a single element.
  void add(const Value& value, double weight = 1.0) {
    if (value.is_deferred()) {
      deferred_.emplace_back(value.deferred(), weight);
    } else if (value.is_scalar()) {
      const double v = value.scalar();
      x_ += weight * v;
      x2_ += weight * v * v;
      n_ += weight;
    } else {
      const at::Tensor& t = value.tensor();
      if (t.numel() != 1)
        throw std::invalid_argument("ppe::reporting::Summary::add: expected a tensor with one element, got " +
                                    std::to_string(t.numel()) + " elements");
      // Detached (as PPE accumulates under no_grad): a held grad_fn would keep
      // the autograd graph and its saved activations alive until the fold.
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
    add(value, weight.item<double>());
  }

  /// Total weight added so far (deferred values not yet evaluated are not counted).
  double weight() const noexcept { return n_; }
  /// Whether nothing (not even a deferred value) was added.
  bool empty() const noexcept { return n_ == 0 && deferred_.empty() && pending_.empty() && !tx_.defined(); }

  /// The weighted mean: a tensor if any tensor was added, else a double.
  Value compute_mean() {
    settle();
    check_not_empty("compute_mean");
    if (tx_.defined()) return Value(tx_.add(x_).div(n_));
    return Value(x_ / n_);
  }

  /// `(mean, population std)`; std = sqrt(E[x²] − mean²), as PPE computes it.
  std::pair<Value, Value> make_statistics() {
    settle();
    check_not_empty("make_statistics");
    if (tx_.defined()) {
      at::Tensor mean = tx_.add(x_).div(n_);
      at::Tensor std = tx2_.add(x2_).div(n_).sub(mean.mul(mean)).sqrt();
      return {Value(mean), Value(std)};
    }
    const double mean = x_ / n_;
    return {Value(mean), Value(std::sqrt(x2_ / n_ - mean * mean))};
  }

  /// `{"_x", "_x2", "_n"}`: the sums are doubles when numbers were added, and
  /// 0-dim tensors (their dtype, their device) when tensors were: a summary
  /// restored from them continues with exactly the float arithmetic of one
  /// that was never saved, which exact resume needs (converting a float32 sum
  /// to a double and back changes the rounding of the mean). PPE's `_x` is a
  /// tensor as well while it accumulates tensors. Unlike PPE 0.9.0 the weight
  /// `_n` is kept exactly (PPE truncates it to an int).
  State state_dict() {
    settle();
    if (!tx_.defined()) return State::dict({{"_x", x_}, {"_x2", x2_}, {"_n", n_}});
    return State::dict({{"_x", x_ == 0.0 ? tx_ : tx_.add(x_)}, {"_x2", x2_ == 0.0 ? tx2_ : tx2_.add(x2_)}, {"_n", n_}});
  }
  /// Restores `state_dict()`'s state, or PPE's (doubles, `_n` an int).
  void load_state_dict(const State& s) {
    reset();
    const State& x = s.at("_x");
    const State& x2 = s.at("_x2");
    if (x.is_tensor() != x2.is_tensor())
      throw std::invalid_argument("ppe::reporting::Summary::load_state_dict: '_x' and '_x2' must both be numbers or "
                                  "both be tensors");
    if (x.is_tensor()) {
      tx_ = x.as_tensor();
      tx2_ = x2.as_tensor();
    } else {
      x_ = x.as_double();
      x2_ = x2.as_double();
    }
    n_ = s.at("_n").as_double();
  }

  void reset() {
    x_ = x2_ = n_ = 0.0;
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
  void settle() {
    for (auto& [f, w] : deferred_) {
      Value v = f();
      if (v.is_deferred()) v = v.resolved();
      add(v, w);
    }
    deferred_.clear();
    fold();
  }

  // One batched reduction of the pending tensors into tx_/tx2_.
  void fold() {
    if (pending_.empty()) return;
    std::vector<at::Tensor> flat;
    flat.reserve(pending_.size());
    for (const auto& t : pending_) flat.push_back(t.reshape({}));
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

  double x_ = 0.0, x2_ = 0.0, n_ = 0.0;
  std::vector<at::Tensor> pending_;
  std::vector<double> pending_w_;
  at::Tensor tx_, tx2_;
  std::vector<std::pair<Deferred, double>> deferred_;
};

}  // namespace ppe::reporting
