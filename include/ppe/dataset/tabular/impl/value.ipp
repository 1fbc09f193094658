// Definitions of dataset/tabular/value.hpp: included by it when header-only,
// compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <algorithm>
#include <ostream>
#include <sstream>

#include "ppe/dataset/tabular/value.hpp"
#include "ppe/detail/python_repr.hpp"

namespace ppe::dataset::tabular {

namespace detail {

PPE_DECL bool equal_values(const at::Tensor& a, const at::Tensor& b) {
  if (a.defined() != b.defined()) return false;
  if (!a.defined()) return true;
  return a.scalar_type() == b.scalar_type() && a.sizes() == b.sizes() && a.device() == b.device() && a.equal(b);
}

PPE_DECL bool equal_values(const Value& a, const Value& b) {
  if (a.index() != b.index()) return false;
  if (const auto* t = std::get_if<at::Tensor>(&a)) return equal_values(*t, std::get<at::Tensor>(b));
  if (const auto* s = std::get_if<std::string>(&a)) return *s == std::get<std::string>(b);
  if (const auto* i = std::get_if<std::int64_t>(&a)) return *i == std::get<std::int64_t>(b);
  return std::get<double>(a) == std::get<double>(b);
}

PPE_DECL void print_value(std::ostream& os, const at::Tensor& t) {
  if (!t.defined()) {
    os << "tensor(undefined)";
    return;
  }
  const at::Tensor flat = t.detach().cpu().reshape({-1}).to(at::kDouble).contiguous();
  os << "tensor([";
  const auto n = std::min<std::int64_t>(flat.numel(), 8);
  for (std::int64_t i = 0; i < n; ++i) os << (i ? ", " : "") << flat.data_ptr<double>()[i];
  if (flat.numel() > n) os << ", ...";
  os << "], shape=" << ppe::detail::python_shape(t.sizes()) << ", dtype=" << t.scalar_type() << ")";
}

PPE_DECL void print_value(std::ostream& os, const Value& v) {
  if (const auto* t = std::get_if<at::Tensor>(&v)) print_value(os, *t);
  else if (const auto* s = std::get_if<std::string>(&v)) os << ppe::detail::python_str_repr(*s);
  else if (const auto* i = std::get_if<std::int64_t>(&v)) os << *i;
  else os << std::get<double>(v);
}

}  // namespace detail

PPE_DECL bool equal(const Value& a, const Value& b) { return detail::equal_values(a, b); }

PPE_DECL std::string repr(const Value& value) {
  std::ostringstream os;
  detail::print_value(os, value);
  return os.str();
}

}  // namespace ppe::dataset::tabular
