// Definitions of detail/utf8.hpp's out-of-line functions: included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <cstdio>

#include "ppe/detail/utf8.hpp"

namespace ppe::detail {

PPE_DECL std::optional<Utf8Error> find_invalid_utf8(std::string_view text) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  const auto hex = [](unsigned b) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "0x%02x", b);
    return std::string(buf);
  };
  const std::size_t n = text.size();
  for (std::size_t i = 0; i < n;) {
    const unsigned b = byte(i);
    if (b < 0x80) {
      ++i;
      continue;
    }
    // The length of the sequence and the range of its second byte, which
    // rules out overlong forms (E0, F0), surrogates (ED) and code points
    // above U+10FFFF (F4).
    std::size_t len = 0;
    unsigned lo = 0x80, hi = 0xbf;
    const char* narrowed = "";
    if (b >= 0xc2 && b <= 0xdf) {
      len = 2;
    } else if (b >= 0xe0 && b <= 0xef) {
      len = 3;
      if (b == 0xe0) lo = 0xa0, narrowed = "an overlong encoding";
      if (b == 0xed) hi = 0x9f, narrowed = "a surrogate (U+D800..U+DFFF)";
    } else if (b >= 0xf0 && b <= 0xf4) {
      len = 4;
      if (b == 0xf0) lo = 0x90, narrowed = "an overlong encoding";
      if (b == 0xf4) hi = 0x8f, narrowed = "a code point above U+10FFFF";
    } else if (b <= 0xbf) {
      return Utf8Error{i, "byte " + hex(b) + " is a continuation byte where a character must start"};
    } else if (b <= 0xc1) {
      return Utf8Error{i, "byte " + hex(b) + " starts an overlong encoding"};
    } else {
      return Utf8Error{i, "byte " + hex(b) + " cannot appear in UTF-8"};
    }
    for (std::size_t k = 1; k < len; ++k) {
      if (i + k >= n)
        return Utf8Error{i, "the " + std::to_string(len) + "-byte sequence starting with " + hex(b) +
                                " is cut off by the end of the text"};
      const unsigned c = byte(i + k);
      const unsigned clo = k == 1 ? lo : 0x80, chi = k == 1 ? hi : 0xbf;
      if (c < clo || c > chi) {
        if (k == 1 && *narrowed && c >= 0x80 && c <= 0xbf)
          return Utf8Error{i, "the sequence " + hex(b) + " " + hex(c) + " would be " + narrowed};
        return Utf8Error{i, "the " + std::to_string(len) + "-byte sequence starting with " + hex(b) +
                                " is cut off by byte " + hex(c) + " (expected a continuation byte 0x80..0xbf)"};
      }
    }
    i += len;
  }
  return std::nullopt;
}

}  // namespace ppe::detail
