// Definitions of detail/python_format.hpp's out-of-line functions: included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include "ppe/detail/python_format.hpp"

namespace ppe::detail::pyfmt {

PPE_DECL void append_general(std::string& out, double x, int precision, int width) {
  char buf[64];
  std::size_t len = 0;
  if (!detail::special(x, buf, len)) {
    // Python treats precision 0 as 1, as C does.
    const auto r = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::general, precision < 1 ? 1 : precision);
    len = static_cast<std::size_t>(r.ptr - buf);
  }
  append_right(out, std::string_view(buf, len), width);
}

PPE_DECL void append_percent(std::string& out, double x, int precision, int width) {
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

PPE_DECL bool append_timedelta(std::string& out, double seconds) {
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
