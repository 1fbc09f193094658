#pragma once
/// \file
/// Python's number formatting, for output that must match PPE byte for byte:
/// `format(x, "10.5g")`, `format(x, "6.2%")`, `format(n, "10")` and
/// `str(datetime.timedelta(seconds=x))`. (`repr(float)` is in python_repr.hpp.)
///
/// Each function appends to a `std::string`. Nothing allocates beyond the
/// string's growth, so a caller that reserves once formats without allocating
/// (display extensions render on the training loop's thread). Formatting goes
/// through `std::to_chars`, which ignores the global and stream locales, as
/// Python's `format` does.

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <system_error>

#include "ppe/detail/config.hpp"

namespace ppe::detail::pyfmt {

/// Appends `text` right-aligned in `width` columns (Python's default for numbers).
inline void append_right(std::string& out, std::string_view text, int width = 0) {
  if (width > 0 && text.size() < static_cast<std::size_t>(width))
    out.append(static_cast<std::size_t>(width) - text.size(), ' ');
  out.append(text);
}

/// `format(n, "{width}")` for an integer.
inline void append_int(std::string& out, std::int64_t n, int width = 0) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, n);
  append_right(out, std::string_view(buf, static_cast<std::size_t>(r.ptr - buf)), width);
}

namespace detail {
/// Python spells non-finite floats `inf`, `-inf` and `nan` (never `-nan`).
inline bool special(double x, char* buf, std::size_t& len) {
  if (std::isnan(x)) {
    std::memcpy(buf, "nan", len = 3);
    return true;
  }
  if (std::isinf(x)) {
    if (x > 0)
      std::memcpy(buf, "inf", len = 3);
    else
      std::memcpy(buf, "-inf", len = 4);
    return true;
  }
  return false;
}
}  // namespace detail

/// `format(x, "{width}.{precision}g")`. Python's `g` is C's `%g` (which
/// `std::to_chars` with `general` reproduces) except for the spelling of
/// non-finite values.
PPE_DECL void append_general(std::string& out, double x, int precision, int width = 0);

/// `format(x, "{width}.{precision}%")`: `x * 100` in fixed notation and a
/// percent sign, the width counting the sign.
PPE_DECL void append_percent(std::string& out, double x, int precision, int width = 0);

/// `str(datetime.timedelta(seconds=s))`: `H:MM:SS`, `H:MM:SS.ffffff` when
/// there are microseconds, prefixed by `N day, ` / `N days, ` (negative
/// durations as Python normalises them: `-1 day, 23:59:59`). The seconds are
/// rounded to microseconds as CPython's constructor does (integral part exact,
/// fraction times 1e6, remainder rounded half to even). Returns false and
/// appends nothing when `s` is not finite or beyond what a 64-bit microsecond
/// count holds (about 290,000 years; Python raises OverflowError there or
/// earlier).
PPE_DECL bool append_timedelta(std::string& out, double seconds);

}  // namespace ppe::detail::pyfmt

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/detail/impl/python_format.ipp"
#endif
