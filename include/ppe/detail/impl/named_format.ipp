// Definitions of detail/named_format.hpp's out-of-line functions: included by it when
// header-only, compiled once by impl/src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

#include "ppe/detail/named_format.hpp"

namespace ppe::detail {

PPE_DECL NamedFormat NamedFormat::parse(std::string_view pattern, std::string_view what) {
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

}  // namespace ppe::detail
