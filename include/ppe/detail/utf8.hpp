#pragma once
/// \file
/// `ppe::detail::find_invalid_utf8`: where a byte string stops being UTF-8,
/// by the rules of Python's strict decoder (RFC 3629: no overlong forms, no
/// surrogates, nothing above U+10FFFF). Libraries that take text as bytes
/// (yaml-cpp) do not check it; ppe does where Python raises a decode error.
/// Written here rather than taken from UTF8-CPP (Debian's libutfcpp-dev),
/// whose `find_invalid` gives the position only: the config error names
/// what is wrong (an overlong form, a surrogate, a cut-off sequence), and
/// ppe's core would otherwise need one more package for one function.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "ppe/detail/config.hpp"

namespace ppe::detail {

/// The first invalid sequence of a byte string.
struct Utf8Error {
  std::size_t offset = 0;  ///< the byte offset of the sequence's first byte
  std::string reason;      ///< e.g. "byte 0xff cannot start a character"
};

/// The first invalid UTF-8 sequence in `text`, or none when it is all valid.
PPE_DECL std::optional<Utf8Error> find_invalid_utf8(std::string_view text);

}  // namespace ppe::detail

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/detail/impl/utf8.ipp"
#endif
