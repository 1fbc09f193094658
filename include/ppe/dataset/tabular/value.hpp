#pragma once
/// \file
/// `ppe::dataset::tabular::Value`: one cell of a tabular dataset (an integer,
/// a double, a string or a tensor; a cell of PPE's is any Python object),
/// with its equality and its Python-like rendering.

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <iosfwd>
#include <string>
#include <variant>

#include "ppe/detail/config.hpp"

namespace ppe::dataset::tabular {

/// One cell: an integer, a double, a string or a tensor. The element of a
/// 1-d tensor column is a scalar (an integer for integral and boolean dtypes,
/// a double for floating ones, as numpy's scalars are Python numbers); that
/// of a higher-dimensional one is a tensor (the row).
using Value = std::variant<std::int64_t, double, std::string, at::Tensor>;

/// Whether two values are equal: same alternative and same value (tensors:
/// same dtype, same shape, equal elements).
PPE_DECL bool equal(const Value& a, const Value& b);
/// A short Python-like rendering of a value, for messages.
PPE_DECL std::string repr(const Value& value);

namespace detail {
/// Same alternative and same value (tensors: dtype, shape, device and
/// elements); column.hpp adds the overload for a `Column`.
PPE_DECL bool equal_values(const Value& a, const Value& b);
PPE_DECL bool equal_values(const at::Tensor& a, const at::Tensor& b);
/// Prints a value as Python prints it (a tensor abridged to its first
/// elements, shape and dtype); column.hpp adds the overload for a `Column`.
PPE_DECL void print_value(std::ostream& os, const Value& v);
PPE_DECL void print_value(std::ostream& os, const at::Tensor& v);
}  // namespace detail

}  // namespace ppe::dataset::tabular

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/dataset/tabular/impl/value.ipp"
#endif
