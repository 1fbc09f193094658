// Definitions of training/extensions/accumulate/summary/extremum_summary.hpp's out-of-line functions: included by it
// when header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <ATen/ops/scalar_tensor.h>

#include "ppe/training/extensions/accumulate/summary/extremum_summary.hpp"

namespace ppe::training::extensions::accumulate::detail {

PPE_DECL void ExtremumSummary::add(const reporting::Value& value, double /*weight: ignored, as PPE*/) {
  double x;
  at::ScalarType dtype;
  switch (lazy_.route(value, 1.0, &x, &dtype, who())) {
    case LazyValues::Route::Host: add_host(x, dtype); break;
    case LazyValues::Route::Kept:
      if (lazy_.full()) fold();
      break;
    case LazyValues::Route::Deferred: break;
  }
}

PPE_DECL void ExtremumSummary::add_host(double v, at::ScalarType dtype) {
  has_host_ = true;
  if (replaces(best_, v)) {
    best_ = v;
    best_dtype_ = dtype;
  }
}

PPE_DECL void ExtremumSummary::fold() {
  if (!lazy_.has_kept()) return;
  at::Tensor xs = lazy_.take_kept(/*floating=*/false).first;
  at::Tensor r = is_max_ ? xs.amax() : xs.amin();  // amax/amin: also on the meta device, unlike max()/min()
  if (tbest_.defined()) r = is_max_ ? tbest_.maximum(r) : tbest_.minimum(r);
  tbest_ = r;
}

PPE_DECL void ExtremumSummary::settle() {
  for (auto& [f, w] : lazy_.take_deferred()) add(f().resolved(), w);
  fold();
}

PPE_DECL at::Tensor ExtremumSummary::combined() const {
  if (!has_host_) return tbest_;
  at::Tensor t = tbest_;
  if (best_dtype_ != at::ScalarType::Undefined) {
    const at::ScalarType d = c10::promoteTypes(t.scalar_type(), best_dtype_);
    if (d != t.scalar_type()) t = t.to(d);
  }
  return is_max_ ? t.clamp_min(best_) : t.clamp_max(best_);
}

PPE_DECL reporting::Value ExtremumSummary::compute_accumulate() {
  settle();
  if (tbest_.defined()) return reporting::Value(combined());
  if (best_dtype_ != at::ScalarType::Undefined)
    return reporting::Value(at::scalar_tensor(best_, at::TensorOptions().dtype(best_dtype_)));
  return reporting::Value(best_);
}

PPE_DECL State ExtremumSummary::state_dict() {
  settle();
  if (tbest_.defined()) return State::dict({{std::string(key()), combined()}});
  State s = State::dict({{std::string(key()), best_}});
  if (best_dtype_ != at::ScalarType::Undefined) s.set("_dtype", dtype_name(best_dtype_));
  return s;
}

PPE_DECL void ExtremumSummary::load_state_dict(const State& s) {
  reset();
  const State& v = s.at(key());
  if (v.is_tensor()) {
    const at::Tensor& t = v.as_tensor();
    double x;
    at::ScalarType unused;
    if (reporting::detail::read_cpu_scalar(t, &x, &unused))
      add_host(x, t.scalar_type());
    else
      tbest_ = t;
    return;
  }
  best_ = v.as_double();
  has_host_ = true;
  if (const State* d = s.find("_dtype")) best_dtype_ = dtype_from_name(d->as_string(), who());
}

PPE_DECL ExtremumSummary& ExtremumSummary::operator+=(const ExtremumSummary& other) {
  ExtremumSummary o = other;
  o.fold();
  fold();
  // PPE's __add__ keeps the other's value unless this one is strictly better: add's rule.
  if (o.has_host_) add_host(o.best_, o.best_dtype_);
  if (o.tbest_.defined())
    tbest_ = !tbest_.defined() ? o.tbest_ : is_max_ ? tbest_.maximum(o.tbest_) : tbest_.minimum(o.tbest_);
  lazy_.append_deferred(o.lazy_);
  return *this;
}

PPE_DECL void ExtremumSummary::reset() {
  reset_host();
  tbest_ = at::Tensor();
  lazy_.clear();
}

}  // namespace ppe::training::extensions::accumulate::detail
