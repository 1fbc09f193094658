// Definitions of training/extensions/accumulate/summary/average_summary.hpp's out-of-line functions: included by it
// when header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <ATen/ops/scalar_tensor.h>

#include <numeric>

#include "ppe/training/extensions/accumulate/summary/average_summary.hpp"

namespace ppe::training::extensions::accumulate {

PPE_DECL void AverageSummary::add(const reporting::Value& value, double weight) {
  double x;
  at::ScalarType dtype;
  switch (lazy_.route(value, weight, &x, &dtype, "AverageSummary")) {
    case detail::LazyValues::Route::Host: add_host(x, weight, dtype); break;
    case detail::LazyValues::Route::Kept:
      if (lazy_.full()) fold();
      break;
    case detail::LazyValues::Route::Deferred: break;
  }
}

PPE_DECL void AverageSummary::add_host(double v, double w, at::ScalarType dtype) {
  // PPE's arithmetic, operation for operation, so that the averages agree to the bit.
  const double m = n_ / (n_ + w);
  x_ = x_ * m + (v / w) * (1 - m);
  n_ += w;
  if (dtype != at::ScalarType::Undefined) host_dtype_ = detail::promote(host_dtype_, detail::mean_dtype(dtype));
}

PPE_DECL void AverageSummary::fold() {
  if (!lazy_.has_kept()) return;
  auto [xs, w] = lazy_.take_kept(/*floating=*/true);
  // The batch is one add of its sum with its total weight.
  const double total = std::accumulate(w.begin(), w.end(), 0.0);
  at::Tensor batch = xs.sum().div(total);
  if (!tx_.defined()) {
    tx_ = batch;
  } else {
    const double m = tn_ / (tn_ + total);
    tx_ = tx_.mul(m).add(batch.mul(1 - m));
  }
  tn_ += total;
}

PPE_DECL void AverageSummary::settle() {
  for (auto& [f, w] : lazy_.take_deferred()) add(f().resolved(), w);
  fold();
}

PPE_DECL at::Tensor AverageSummary::combined() const {
  at::Tensor t = tx_;
  if (host_dtype_ != at::ScalarType::Undefined) {
    const at::ScalarType d = c10::promoteTypes(t.scalar_type(), host_dtype_);
    if (d != t.scalar_type()) t = t.to(d);
  }
  if (n_ == 0) return t;
  const double m = n_ / (n_ + tn_);
  return t.mul(1 - m).add(x_ * m);
}

PPE_DECL reporting::Value AverageSummary::compute_average() {
  settle();
  if (tx_.defined()) return reporting::Value(combined());
  if (host_dtype_ != at::ScalarType::Undefined)
    return reporting::Value(at::scalar_tensor(x_, at::TensorOptions().dtype(host_dtype_)));
  return reporting::Value(x_);
}

PPE_DECL State AverageSummary::state_dict() {
  settle();
  if (tx_.defined()) return State::dict({{"_x", combined()}, {"_n", detail::weight_state(n_ + tn_)}});
  State s = State::dict({{"_x", x_}, {"_n", detail::weight_state(n_)}});
  if (host_dtype_ != at::ScalarType::Undefined) s.set("_dtype", detail::dtype_name(host_dtype_));
  return s;
}

PPE_DECL void AverageSummary::load_state_dict(const State& s) {
  reset();
  const State& x = s.at("_x");
  const double n = s.at("_n").as_double();
  if (x.is_tensor()) {
    double v;
    at::ScalarType dtype;
    if (reporting::detail::read_cpu_scalar(x.as_tensor(), &v, &dtype)) {
      x_ = v;
      n_ = n;
      host_dtype_ = dtype;
    } else {
      tx_ = x.as_tensor();
      tn_ = n;
    }
    return;
  }
  x_ = x.as_double();
  n_ = n;
  if (const State* d = s.find("_dtype")) host_dtype_ = detail::dtype_from_name(d->as_string(), "AverageSummary");
}

PPE_DECL AverageSummary& AverageSummary::operator+=(const AverageSummary& other) {
  AverageSummary o = other;
  o.fold();
  fold();
  // PPE's __add__: x = x_a * m + x_b * (1 - m), m = n_a / (n_a + n_b); for each part.
  if (o.n_ != 0) {
    const double m = n_ / (n_ + o.n_);
    x_ = x_ * m + o.x_ * (1 - m);
    n_ += o.n_;
  }
  host_dtype_ = detail::promote(host_dtype_, o.host_dtype_);
  if (o.tx_.defined()) {
    if (!tx_.defined()) {
      tx_ = o.tx_;
    } else {
      const double m = tn_ / (tn_ + o.tn_);
      tx_ = tx_.mul(m).add(o.tx_.mul(1 - m));
    }
    tn_ += o.tn_;
  }
  lazy_.append_deferred(o.lazy_);
  return *this;
}

PPE_DECL void AverageSummary::reset() {
  x_ = n_ = tn_ = 0.0;
  host_dtype_ = at::ScalarType::Undefined;
  tx_ = at::Tensor();
  lazy_.clear();
}

}  // namespace ppe::training::extensions::accumulate
