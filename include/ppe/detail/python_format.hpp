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
inline void append_general(std::string& out, double x, int precision, int width = 0) {
  char buf[64];
  std::size_t len = 0;
  if (!detail::special(x, buf, len)) {
    // Python treats precision 0 as 1, as C does.
    const auto r = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::general, precision < 1 ? 1 : precision);
    len = static_cast<std::size_t>(r.ptr - buf);
  }
  append_right(out, std::string_view(buf, len), width);
}

/// `format(x, "{width}.{precision}%")`: `x * 100` in fixed notation and a
/// percent sign, the width counting the sign.
inline void append_percent(std::string& out, double x, int precision, int width = 0) {
  // Fixed notation of a double below 1e308 with <= 20 decimals fits in 350 characters.
  char buf[352];
  std::size_t len = 0;
  const double scaled = x * 100.0;
  if (!detail::special(scaled, buf, len)) {
    const auto r = std::to_chars(buf, buf + sizeof buf - 1, scaled, std::chars_format::fixed,
                                 precision < 0 ? 0 : (precision > 20 ? 20 : precision));
    len = r.ec == std::errc() ? static_cast<std::size_t>(r.ptr - buf) : 0;
  }
  buf[len++] = '%';
  append_right(out, std::string_view(buf, len), width);
}

/// `str(datetime.timedelta(seconds=s))`: `H:MM:SS`, `H:MM:SS.ffffff` when
/// there are microseconds, prefixed by `N day, ` / `N days, ` (negative
/// durations as Python normalises them: `-1 day, 23:59:59`). The seconds are
/// rounded to microseconds as CPython's constructor does (integral part exact,
/// fraction times 1e6, remainder rounded half to even). Returns false and
/// appends nothing when `s` is not finite or beyond what a 64-bit microsecond
/// count holds (about 290,000 years; Python raises OverflowError there or
/// earlier).
inline bool append_timedelta(std::string& out, double seconds) {
  constexpr double kMaxSeconds = 9.0e12;  // 9e18 microseconds < 2^63
  if (!std::isfinite(seconds) || std::fabs(seconds) > kMaxSeconds) return false;
  double whole = 0;
  const double frac = std::modf(seconds, &whole);
  std::int64_t us = static_cast<std::int64_t>(whole) * 1000000;
  if (frac != 0) {
    double whole_us = 0;
    const double left = std::modf(frac * 1e6, &whole_us);
    us += static_cast<std::int64_t>(whole_us);
    double rounded = std::round(left);
    if (std::fabs(rounded - left) == 0.5) {  // a tie: to the even total
      const int odd = static_cast<int>(us & 1);
      rounded = 2.0 * std::round((left + odd) * 0.5) - odd;
    }
    us += static_cast<std::int64_t>(rounded);
  }
  // Floor division, as Python's divmod: days may be negative, the rest not.
  constexpr std::int64_t kDay = 86400LL * 1000000;
  std::int64_t days = us / kDay, rest = us % kDay;
  if (rest < 0) {
    rest += kDay;
    --days;
  }
  const std::int64_t micro = rest % 1000000, secs = rest / 1000000;
  if (days != 0) {
    append_int(out, days);
    out.append(days == 1 || days == -1 ? " day, " : " days, ");
  }
  append_int(out, secs / 3600);
  const auto two = [&out](std::int64_t v) {
    out.push_back(static_cast<char>('0' + v / 10));
    out.push_back(static_cast<char>('0' + v % 10));
  };
  out.push_back(':');
  two(secs / 60 % 60);
  out.push_back(':');
  two(secs % 60);
  if (micro != 0) {
    out.push_back('.');
    char buf[6];
    std::int64_t m = micro;
    for (int i = 5; i >= 0; --i, m /= 10) buf[i] = static_cast<char>('0' + m % 10);
    out.append(buf, 6);
  }
  return true;
}

}  // namespace ppe::detail::pyfmt
