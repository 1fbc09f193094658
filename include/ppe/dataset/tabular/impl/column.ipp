// Definitions of dataset/tabular/column.hpp: included by it when header-only,
// compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <ATen/ops/cat.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/stack.h>

#include <algorithm>
#include <ostream>
#include <stdexcept>
#include <string>

#include "ppe/dataset/tabular/column.hpp"

namespace ppe::dataset::tabular {

namespace detail {

/// An int64 tensor holding `values`.
inline at::Tensor long_tensor(std::vector<std::int64_t> values) {
  return at::from_blob(values.data(), {static_cast<std::int64_t>(values.size())}, at::kLong).clone();
}

PPE_DECL bool equal_values(const Column& a, const Column& b) { return a == b; }

PPE_DECL void print_value(std::ostream& os, const Column& v) { os << v; }

}  // namespace detail

PPE_DECL Column::Column(at::Tensor array) : data_(std::move(array)) {
  const auto& t = std::get<1>(data_);
  if (!t.defined()) throw std::invalid_argument("ppe::dataset::tabular::Column: the tensor is undefined");
  if (t.dim() == 0)
    throw std::invalid_argument(
        "ppe::dataset::tabular::Column: a tensor column needs a dimension for the rows (got a 0-d tensor)");
}

PPE_DECL const at::Tensor& Column::array() const {
  if (!is_array()) throw std::logic_error("ppe::dataset::tabular::Column: array() of a list column");
  return std::get<1>(data_);
}

PPE_DECL const std::vector<Value>& Column::list() const {
  if (is_array()) throw std::logic_error("ppe::dataset::tabular::Column: list() of a tensor column");
  return *std::get<0>(data_);
}

PPE_DECL std::int64_t Column::size() const {
  return is_array() ? std::get<1>(data_).size(0) : static_cast<std::int64_t>(std::get<0>(data_)->size());
}

PPE_DECL Value Column::at(std::int64_t i) const {
  if (i < 0 || i >= size())
    throw std::out_of_range("ppe::dataset::tabular::Column: row " + std::to_string(i) +
                            " is out of bounds for a column of " + std::to_string(size()) + " rows");
  if (!is_array()) return (*std::get<0>(data_))[static_cast<std::size_t>(i)];
  const at::Tensor& t = std::get<1>(data_);
  if (t.dim() == 1) {
    const auto dtype = t.scalar_type();
    if (c10::isIntegralType(dtype, /*includeBool=*/true)) return t[i].item<std::int64_t>();
    if (c10::isFloatingType(dtype)) return t[i].item<double>();
  }
  return t[i];
}

PPE_DECL Column Column::take(const Rows& rows) const {
  switch (rows.kind()) {
    case Rows::Kind::All: return *this;
    case Rows::Kind::Mask: return take(rows.normalized(size()));
    case Rows::Kind::Slice: {
      const auto b = rows.slice().indices(size());
      const std::int64_t n = b.length();
      if (is_array() && b.step > 0) return Column(std::get<1>(data_).slice(0, b.start, b.start + n * b.step, b.step));
      std::vector<std::int64_t> idx(static_cast<std::size_t>(n));
      for (std::int64_t i = 0; i < n; ++i) idx[static_cast<std::size_t>(i)] = b[i];
      return take(Rows(std::move(idx)));
    }
    case Rows::Kind::List: {
      const auto& idx = rows.list();
      const std::int64_t len = size();
      for (const auto i : idx)
        if (i < 0 || i >= len)
          throw std::out_of_range("ppe::dataset::tabular: index " + std::to_string(i) +
                                  " is out of bounds for a column of " + std::to_string(len) + " rows");
      if (is_array()) {
        const at::Tensor& t = std::get<1>(data_);
        return Column(t.index_select(0, detail::long_tensor(idx).to(t.device())));
      }
      const auto& values = *std::get<0>(data_);
      std::vector<Value> out;
      out.reserve(idx.size());
      for (const auto i : idx) out.push_back(values[static_cast<std::size_t>(i)]);
      return Column(std::move(out));
    }
  }
  return *this;
}

PPE_DECL Column Column::concat(const std::vector<Column>& parts) {
  if (parts.size() == 1) return parts[0];
  const bool arrays = !parts.empty() && std::all_of(parts.begin(), parts.end(), [](const Column& c) {
    return c.is_array();
  });
  if (arrays) {
    std::vector<at::Tensor> tensors;
    for (const auto& p : parts) tensors.push_back(p.array());
    return Column(at::cat(tensors, 0));
  }
  std::vector<Value> out;
  for (const auto& p : parts)
    for (std::int64_t i = 0, n = p.size(); i < n; ++i) out.push_back(p.at(i));
  return Column(std::move(out));
}

PPE_DECL at::Tensor Column::to_tensor(std::string_view what) const {
  if (is_array()) return std::get<1>(data_);
  const auto& values = *std::get<0>(data_);
  bool any_double = false, any_tensor = false;
  for (const auto& v : values) {
    if (std::holds_alternative<std::string>(v))
      throw std::invalid_argument("ppe::dataset::tabular: " + std::string(what) + " holds a string (" + repr(v) +
                                  "), which cannot become a tensor");
    any_double |= std::holds_alternative<double>(v);
    any_tensor |= std::holds_alternative<at::Tensor>(v);
  }
  if (any_tensor) {
    std::vector<at::Tensor> tensors;
    for (const auto& v : values) {
      if (const auto* t = std::get_if<at::Tensor>(&v)) tensors.push_back(*t);
      else
        throw std::invalid_argument("ppe::dataset::tabular: " + std::string(what) +
                                    " mixes tensors and numbers, which cannot be stacked");
    }
    return at::stack(tensors, 0);
  }
  if (any_double || values.empty()) {
    std::vector<double> out;
    for (const auto& v : values)
      out.push_back(std::holds_alternative<double>(v) ? std::get<double>(v)
                                                      : static_cast<double>(std::get<std::int64_t>(v)));
    double dummy = 0;
    return at::from_blob(out.empty() ? &dummy : out.data(), {static_cast<std::int64_t>(out.size())}, at::kDouble)
        .clone();
  }
  std::vector<std::int64_t> out;
  for (const auto& v : values) out.push_back(std::get<std::int64_t>(v));
  return detail::long_tensor(std::move(out));
}

PPE_DECL bool operator==(const Column& a, const Column& b) {
  if (a.is_array() != b.is_array()) return false;
  if (a.is_array()) return detail::equal_values(a.array(), b.array());
  const auto& x = a.list();
  const auto& y = b.list();
  if (x.size() != y.size()) return false;
  for (std::size_t i = 0; i < x.size(); ++i)
    if (!detail::equal_values(x[i], y[i])) return false;
  return true;
}

PPE_DECL std::ostream& operator<<(std::ostream& os, const Column& column) {
  if (column.is_array()) {
    detail::print_value(os, column.array());
    return os;
  }
  os << "[";
  const auto& values = column.list();
  for (std::size_t i = 0; i < values.size(); ++i) {
    os << (i ? ", " : "");
    detail::print_value(os, values[i]);
  }
  return os << "]";
}

}  // namespace ppe::dataset::tabular
