// Definitions of detail/python_repr.hpp's out-of-line functions: included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <c10/core/ScalarType.h>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>

#include "ppe/detail/python_repr.hpp"

namespace ppe::detail {

PPE_DECL std::string python_float_repr(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  // std::to_chars without a precision gives the shortest round-trip digits,
  // which is also what Python's repr picks (David Gay's mode 0).
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  std::string_view s(buf, static_cast<std::size_t>(res.ptr - buf));  // [-]d[.ddd]e(+|-)dd
  std::string out;
  if (s.front() == '-') {
    out += '-';
    s.remove_prefix(1);
  }
  const auto e = s.find('e');
  std::string digits(1, s[0]);
  if (e > 1) digits.append(s.substr(2, e - 2));
  const int exp10 = std::atoi(std::string(s.substr(e + 1)).c_str());
  // Python's `decpt`: the value is 0.<digits> * 10^decpt.
  const int decpt = exp10 + 1;
  const auto n = static_cast<int>(digits.size());
  if (decpt <= -4 || decpt > 16) {
    out += digits[0];
    if (n > 1) out.append(".").append(digits, 1);
    out += exp10 < 0 ? "e-" : "e+";
    const int a = std::abs(exp10);
    if (a < 10) out += '0';
    out += std::to_string(a);
  } else if (decpt <= 0) {
    out.append("0.").append(static_cast<std::size_t>(-decpt), '0').append(digits);
  } else if (decpt >= n) {
    out.append(digits).append(static_cast<std::size_t>(decpt - n), '0').append(".0");
  } else {
    out.append(digits, 0, static_cast<std::size_t>(decpt)).append(".").append(digits, static_cast<std::size_t>(decpt));
  }
  return out;
}

PPE_DECL std::string python_json_float(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  return python_float_repr(v);
}

PPE_DECL std::string python_yaml_float(double v) {
  if (std::isnan(v)) return ".nan";
  if (std::isinf(v)) return v > 0 ? ".inf" : "-.inf";
  std::string s = python_float_repr(v);
  if (const auto e = s.find('e'); e != std::string::npos && s.find('.') == std::string::npos) s.insert(e, ".0");
  return s;
}

PPE_DECL void append_python_str_repr(std::string& out, std::string_view s) {
  const char quote = s.find('\'') != std::string_view::npos && s.find('"') == std::string_view::npos ? '"' : '\'';
  out += quote;
  for (const char c : s) {
    if (c == quote || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      static constexpr char hex[] = "0123456789abcdef";
      const auto u = static_cast<unsigned char>(c);
      out.append("\\x").append(1, hex[u >> 4]).append(1, hex[u & 15]);
    } else {
      out += c;
    }
  }
  out += quote;
}

PPE_DECL std::string python_str_repr(std::string_view s) {
  std::string out;
  append_python_str_repr(out, s);
  return out;
}

PPE_DECL std::string python_shape(std::span<const std::int64_t> sizes) {
  std::string out = "[";
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(sizes[i]);
  }
  return out + "]";
}

namespace python_repr_impl {
struct DtypeName {
  c10::ScalarType type;
  std::string_view name;
};
// torch's `str(dtype)` without `torch.`.
inline constexpr DtypeName kDtypeNames[] = {{c10::ScalarType::Float, "float32"},
                                            {c10::ScalarType::Double, "float64"},
                                            {c10::ScalarType::Half, "float16"},
                                            {c10::ScalarType::BFloat16, "bfloat16"},
                                            {c10::ScalarType::ComplexHalf, "complex32"},
                                            {c10::ScalarType::ComplexFloat, "complex64"},
                                            {c10::ScalarType::ComplexDouble, "complex128"},
                                            {c10::ScalarType::Long, "int64"},
                                            {c10::ScalarType::Int, "int32"},
                                            {c10::ScalarType::Short, "int16"},
                                            {c10::ScalarType::Char, "int8"},
                                            {c10::ScalarType::Byte, "uint8"},
                                            {c10::ScalarType::Bool, "bool"}};
}  // namespace python_repr_impl

PPE_DECL std::string_view python_dtype_name(c10::ScalarType t) {
  for (const auto& d : python_repr_impl::kDtypeNames)
    if (d.type == t) return d.name;
  return {};
}

PPE_DECL std::optional<c10::ScalarType> python_dtype(std::string_view name) {
  for (const auto& d : python_repr_impl::kDtypeNames)
    if (d.name == name) return d.type;
  return std::nullopt;
}

}  // namespace ppe::detail
