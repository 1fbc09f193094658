// Definitions of training/extensions/log_format_yaml.hpp: included by it when
// header-only, compiled once by impl/config_src.hpp with PPE_SEPARATE_COMPILATION.
// yaml-cpp is needed here only.
// Feature: ppe::config (Meson and pkg-config: ppe-config).
#pragma once

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <regex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "ppe/detail/python_repr.hpp"
#include "ppe/training/extensions/log_format_yaml.hpp"

namespace ppe::training::extensions {

namespace detail {

/// How PyYAML writes a key: plain, 'single-quoted' or "double-quoted".
enum class YamlKeyStyle { Plain, SingleQuoted, DoubleQuoted };

/// PyYAML's choice of style for a string used as a mapping key (its
/// `Emitter.analyze_scalar` and `choose_scalar_style` for a simple key in
/// block context, with `allow_unicode=False`): non-printable or non-ASCII text
/// needs double quotes; text that a YAML reader would take for something else
/// (an indicator at the start, `: ` or ` #` inside, surrounding spaces, or a
/// plain scalar that resolves to a bool, number, null, timestamp, `<<` or `=`)
/// gets single quotes.
PPE_DECL YamlKeyStyle pyyaml_key_style(std::string_view s) {
  if (s.empty()) return YamlKeyStyle::SingleQuoted;
  for (unsigned char c : s)
    if (c < 0x20 || c >= 0x7F) return YamlKeyStyle::DoubleQuoted;
  if (s.starts_with("---") || s.starts_with("...")) return YamlKeyStyle::SingleQuoted;
  if (s.front() == ' ' || s.back() == ' ') return YamlKeyStyle::SingleQuoted;
  const auto followed_by_space = [&](std::size_t i) { return i + 1 >= s.size() || s[i + 1] == ' '; };
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (i == 0) {
      if (std::string_view("#,[]{}&*!|>'\"%@`").find(c) != std::string_view::npos)
        return YamlKeyStyle::SingleQuoted;
      if ((c == '?' || c == ':' || c == '-') && followed_by_space(i)) return YamlKeyStyle::SingleQuoted;
    } else {
      if (c == ':' && followed_by_space(i)) return YamlKeyStyle::SingleQuoted;
      if (c == '#' && s[i - 1] == ' ') return YamlKeyStyle::SingleQuoted;
    }
  }
  // PyYAML's implicit resolvers (yaml/resolver.py): a plain key matching one
  // would read back as a non-string.
  static const std::regex implicit(
      // bool
      "yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF"
      // float
      "|[-+]?(?:[0-9][0-9_]*)\\.[0-9_]*(?:[eE][-+][0-9]+)?|\\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?"
      "|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\\.[0-9_]*|[-+]?\\.(?:inf|Inf|INF)|\\.(?:nan|NaN|NAN)"
      // int
      "|[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+"
      // merge, null, value
      "|<<|~|null|Null|NULL|="
      // timestamp
      "|[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]"
      "|[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?(?:[Tt]|[ \\t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9](?:\\.[0-9]*)?"
      "(?:[ \\t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?",
      std::regex::ECMAScript | std::regex::optimize);
  if (std::regex_match(s.begin(), s.end(), implicit)) return YamlKeyStyle::SingleQuoted;
  return YamlKeyStyle::Plain;
}

/// yaml-cpp writes the hex digits of `\x`, `\u`, `\U` escapes in lower case,
/// PyYAML in upper case. Escapes occur only in double-quoted keys, which start
/// a line after its two-character `- ` or `  ` prefix (values are numbers);
/// the rest of each line is left alone (a plain key may hold a backslash).
PPE_DECL void upper_case_yaml_escapes(std::string& text) {
  std::size_t line = 0;
  while (line < text.size()) {
    std::size_t eol = text.find('\n', line);
    if (eol == std::string::npos) eol = text.size();
    if (line + 2 < eol && text[line + 2] == '"') {
      for (std::size_t i = line + 3; i < eol && text[i] != '"'; ++i) {
        if (text[i] != '\\' || i + 1 >= eol) continue;
        const char kind = text[++i];
        const std::size_t digits = kind == 'x' ? 2 : kind == 'u' ? 4 : kind == 'U' ? 8 : 0;
        for (std::size_t j = 0; j < digits && i + 1 < eol; ++j, ++i)
          text[i + 1] = static_cast<char>(std::toupper(static_cast<unsigned char>(text[i + 1])));
      }
    }
    line = eol + 1;
  }
}

}  // namespace detail

PPE_DECL std::string yaml_log_entry(const LogEntry& e) {
  // A sequence of one mapping: yaml-cpp lays out each element of a block
  // sequence alone, so the elements of a log are these texts joined.
  YAML::Emitter em;
  em.SetOutputCharset(YAML::EscapeNonAscii);
  std::vector<const LogEntry::Item*> items;
  for (const auto& item : e) items.push_back(&item);
  // std::string compares as unsigned bytes: UTF-8 byte order is code point order.
  std::sort(items.begin(), items.end(), [](const auto* a, const auto* b) { return a->first < b->first; });
  em << YAML::BeginSeq << YAML::BeginMap;
  for (const auto* item : items) {
    em << YAML::Key;
    switch (detail::pyyaml_key_style(item->first)) {
      case detail::YamlKeyStyle::Plain: break;
      case detail::YamlKeyStyle::SingleQuoted: em << YAML::SingleQuoted; break;
      case detail::YamlKeyStyle::DoubleQuoted: em << YAML::DoubleQuoted; break;
    }
    em << item->first << YAML::Value;
    const LogValue& v = item->second;
    em << (v.is_int() ? std::to_string(v.as_int()) : ppe::detail::python_yaml_float(v.to_double()));
  }
  em << YAML::EndMap << YAML::EndSeq;
  if (!em.good()) throw std::runtime_error("ppe::LogReport: YAML output failed: " + em.GetLastError());
  std::string out = em.c_str();
  detail::upper_case_yaml_escapes(out);
  return out;
}

}  // namespace ppe::training::extensions
