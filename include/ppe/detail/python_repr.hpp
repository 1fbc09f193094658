#pragma once
/// \file
/// Python's text for floats: `repr(float)` and the spellings of Python's
/// `json` and PyYAML, so that files written here are byte-identical to PPE's.
/// Neither nlohmann-json nor yaml-cpp prints floats this way (nlohmann-json
/// switches to an exponent from 1e15 on, Python from 1e16 on; NaN and infinity
/// have no JSON spelling there).

#include <string>

#include "ppe/detail/config.hpp"

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

}  // namespace ppe::detail

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/detail/impl/python_repr.ipp"
#endif
