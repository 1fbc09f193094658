#pragma once
/// \file
/// Python's `str.format(**fields)` for templates with named fields only
/// (`"log_{iteration}"`, `"snapshot_{epoch}"`): `{name}` is replaced by the
/// field's text, `{{` and `}}` stand for braces. Format specs, conversions,
/// positional fields and attribute or index access are rejected, so a template
/// that would mean something else in Python fails loudly instead of silently
/// naming files differently.

#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "ppe/detail/config.hpp"

namespace ppe::detail {

/// The parts of a template: literal text, and field names between them.
struct NamedFormat {
  struct Part {
    std::string text;
    bool is_field;
  };
  std::vector<Part> parts;

  /// Parses `pattern`; `what` names it in errors (e.g. "LogReport filename").
  static NamedFormat parse(std::string_view pattern, std::string_view what);

  /// The text with each field replaced by `field(name)` (which throws for an
  /// unknown name).
  template <class FieldText>
  std::string format(FieldText&& field) const {
    std::string out;
    for (const auto& p : parts) out += p.is_field ? field(p.text) : p.text;
    return out;
  }
};

}  // namespace ppe::detail

#if !defined(PPE_SEPARATE_COMPILATION)
#include "ppe/detail/impl/named_format.ipp"
#endif
