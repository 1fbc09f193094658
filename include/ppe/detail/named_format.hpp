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

namespace ppe::detail {

/// The parts of a template: literal text, and field names between them.
struct NamedFormat {
  struct Part {
    std::string text;
    bool is_field;
  };
  std::vector<Part> parts;

  /// Parses `pattern`; `what` names it in errors (e.g. "LogReport filename").
  static NamedFormat parse(std::string_view pattern, std::string_view what) {
    NamedFormat f;
    std::string lit;
    const auto bad = [&](const std::string& why) {
      return std::invalid_argument("ppe: invalid " + std::string(what) + " '" + std::string(pattern) + "': " + why);
    };
    for (std::size_t i = 0; i < pattern.size(); ++i) {
      const char c = pattern[i];
      if (c == '}') {
        if (i + 1 < pattern.size() && pattern[i + 1] == '}') {
          lit += '}';
          ++i;
          continue;
        }
        throw bad("single '}' (write '}}' for a brace)");
      }
      if (c != '{') {
        lit += c;
        continue;
      }
      if (i + 1 < pattern.size() && pattern[i + 1] == '{') {
        lit += '{';
        ++i;
        continue;
      }
      const auto close = pattern.find('}', i + 1);
      if (close == std::string_view::npos) throw bad("'{' without a closing '}'");
      const std::string_view name = pattern.substr(i + 1, close - i - 1);
      if (name.empty()) throw bad("an empty field '{}'; expected a named field such as '{iteration}'");
      if (name.find_first_of(":!") != std::string_view::npos)
        throw bad("field '{" + std::string(name) + "}' has a format spec or conversion, which is not supported");
      if (name.find_first_of(".[{") != std::string_view::npos)
        throw bad("field '{" + std::string(name) + "}' uses attribute or index access, which is not supported");
      if (name.find_first_not_of("0123456789") == std::string_view::npos)
        throw bad("field '{" + std::string(name) + "}' is positional; expected a named field such as '{iteration}'");
      if (!lit.empty()) f.parts.push_back({std::move(lit), false});
      lit.clear();
      f.parts.push_back({std::string(name), true});
      i = close;
    }
    if (!lit.empty()) f.parts.push_back({std::move(lit), false});
    return f;
  }

  bool has_fields() const noexcept {
    for (const auto& p : parts)
      if (p.is_field) return true;
    return false;
  }

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
