#pragma once
/// \file
/// Python's text for values: `repr(float)` and the spellings of Python's
/// `json` and PyYAML, so that files written here are byte-identical to PPE's
/// (neither nlohmann-json nor yaml-cpp prints floats this way: nlohmann-json
/// switches to an exponent from 1e15 on, Python from 1e16 on; NaN and infinity
/// have no JSON spelling there), and `repr` of strings, lists of strings and
/// shapes, which error messages quote (`keys present: ['a', 'b']`), and the
/// names of dtypes that states save.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "ppe/detail/config.hpp"

namespace c10 {
// Declared only, as <c10/core/ScalarType.h> declares it, so that this header
// stays free of LibTorch.
enum class ScalarType : int8_t;
}  // namespace c10

namespace ppe::detail {

/// `repr(v)` of a Python float: the shortest digits that round-trip, in fixed
/// notation when the decimal exponent lies in [-4, 16) (`0.0001`, `100.0`,
/// `1000000000000000.0`), else in exponent notation with a signed exponent of
/// at least two digits (`1e-05`, `1.5e+16`); `nan`, `inf`, `-inf`.
PPE_DECL std::string python_float_repr(double v);

/// A float as Python's `json.dumps` writes it: `repr`, but `NaN`, `Infinity`,
/// `-Infinity` (JavaScript's names, which Python's `json.loads` reads back).
PPE_DECL std::string python_json_float(double v);

/// A float as PyYAML's `yaml.dump` writes it: `.nan`, `.inf`, `-.inf`, else
/// `repr` in lower case with `.0` put before an exponent of a mantissa without
/// a point (`1.0e-07`), because YAML's float pattern requires the point.
PPE_DECL std::string python_yaml_float(double v);

/// Appends `repr(s)` of a Python str to `out`: in single quotes, or in double
/// quotes when `s` holds a single quote and no double quote; a backslash, the
/// quote used, `\t`, `\n`, `\r` and the other ASCII control characters
/// escaped as Python escapes them (`\\`, `\'`, `\x1b`). Bytes from 0x80 on
/// are kept: they are the UTF-8 of characters that repr keeps as they are
/// when printable.
PPE_DECL void append_python_str_repr(std::string& out, std::string_view s);

/// `repr(s)` of a Python str: `'a'`, `"it's"` (see append_python_str_repr).
PPE_DECL std::string python_str_repr(std::string_view s);

namespace python_repr_impl {
/// Appends the reprs of `proj(x)` for the elements `x` of `r`, separated by
/// `, `; how many there were.
template <class R, class Proj>
std::size_t append_str_reprs(std::string& out, const R& r, Proj proj) {
  std::size_t n = 0;
  for (const auto& x : r) {
    if (n++) out += ", ";
    append_python_str_repr(out, std::string_view(proj(x)));
  }
  return n;
}
/// The projection of the lists without one: the element itself.
inline constexpr auto identity = [](const auto& s) -> const auto& { return s; };
}  // namespace python_repr_impl

/// `['a', 'b']`: `repr` of the Python list of the strings `proj(x)` for the
/// elements `x` of `r` (anything convertible to std::string_view).
template <class R, class Proj>
std::string python_str_list(const R& r, Proj proj) {
  std::string out = "[";
  python_repr_impl::append_str_reprs(out, r, proj);
  return out + "]";
}

/// `['a', 'b']`: `repr` of the Python list of the strings in `r`.
template <class R>
std::string python_str_list(const R& r) {
  return python_str_list(r, python_repr_impl::identity);
}

/// `('a', 'b')`, `('a',)`: `repr` of the Python tuple of the strings in `r`.
template <class R>
std::string python_str_tuple(const R& r) {
  std::string out = "(";
  const std::size_t n = python_repr_impl::append_str_reprs(out, r, python_repr_impl::identity);
  return out + (n == 1 ? ",)" : ")");  // a tuple of one keeps its comma
}

/// `['a', 'b']`: the keys of a map-like range, in its order: the `first` of
/// pairs (std::map, `State::Dict`) or the `key()` of items
/// (`torch::OrderedDict`).
template <class M>
std::string python_key_list(const M& map) {
  return python_str_list(map, [](const auto& item) -> decltype(auto) {
    if constexpr (requires { item.key(); })
      return item.key();
    else
      return (item.first);
  });
}

/// `[2, 3]`: a shape (`tensor.sizes()`, a `std::vector<std::int64_t>`) as
/// Python prints `list(tensor.shape)`.
PPE_DECL std::string python_shape(std::span<const std::int64_t> sizes);

/// A dtype's name in Python's `torch` without the `torch.` prefix
/// (`float32`, `int64`, `bool`), as states save dtypes; empty for a dtype
/// without one (quantized and bit types).
PPE_DECL std::string_view python_dtype_name(c10::ScalarType t);

/// The dtype of a name that `python_dtype_name` gives; nullopt for another.
PPE_DECL std::optional<c10::ScalarType> python_dtype(std::string_view name);

}  // namespace ppe::detail

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/detail/impl/python_repr.ipp"
#endif
