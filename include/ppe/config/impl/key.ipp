// Keys into a configuration (PPE's `_parse_key`/`_dump_key`): `/a/b`,
// `rel/../b`, `/a/b.attr`, `!/a/b`, parsed to a path plus attributes, and the
// list-index rule path components follow. Internal (ppe::config::detail);
// included by impl/config.ipp.
/// Feature: ppe::config (Meson and pkg-config: ppe-config).
#pragma once

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "ppe/config/config.hpp"

namespace ppe::config::detail {

/// A parsed key (PPE's `(config_key, attr_key)`): `attrs` unset for the tree
/// as written (`!/path`), empty for the evaluated value, else attributes.
struct Key {
  std::vector<std::string> path;
  std::optional<std::vector<std::string>> attrs;
};

inline std::string path_text(const std::vector<std::string>& path, std::size_t n) {
  std::string s = "/";
  for (std::size_t i = 0; i < n; ++i) s += (i ? "/" : "") + path[i];
  return s;
}

/// PPE's `_dump_key`: `/a/b`, `/a/b.x.y`, `!/a/b`.
inline std::string dump_key(const Key& k) {
  std::string s = path_text(k.path, k.path.size());
  if (!k.attrs) return "!" + s;
  for (std::size_t i = 0; i < k.attrs->size(); ++i) s += "." + (*k.attrs)[i];
  return s;
}

inline std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    const std::size_t at = s.find(sep, start);
    out.emplace_back(s.substr(start, at == std::string_view::npos ? std::string_view::npos : at - start));
    if (at == std::string_view::npos) return out;
    start = at + 1;
  }
}

/// PPE's `_parse_key`: `!` escapes, a leading `/` is absolute (else relative
/// to `current`), the last component's dots start attributes, `.` and empty
/// components vanish and `..` goes up.
inline Key parse_key(std::string_view key, const std::vector<std::string>& current) {
  const std::string original(key);
  bool escape = false;
  if (!key.empty() && key[0] == '!') {
    escape = true;
    key.remove_prefix(1);
  }
  bool absolute = false;
  if (!key.empty() && key[0] == '/') {
    absolute = true;
    key.remove_prefix(1);
  }
  std::vector<std::string> parts = split(key, '/');
  std::vector<std::string> attrs = split(parts.back(), '.');
  parts.back() = attrs.front();
  attrs.erase(attrs.begin());
  // `..` and `.` as a whole last component are path steps, not attributes.
  if (!attrs.empty() && std::all_of(attrs.begin(), attrs.end(), [](const std::string& a) { return a.empty(); }) &&
      parts.back().empty()) {
    parts.back() = std::string(attrs.size() + 1, '.');
    attrs.clear();
  }
  if (escape && !attrs.empty())
    throw ConfigError("ppe::config: '" + original + "': a '!' key (the tree as written) takes no attributes");
  Key k;
  if (!absolute) k.path = current;
  for (auto& p : parts) {
    if (p.empty() || p == ".") continue;
    if (p == "..") {
      if (k.path.empty())
        throw ConfigError("ppe::config: '" + original + "' goes above the root" +
                          (absolute ? std::string() : " (relative to " + path_text(current, current.size()) + ")"));
      k.path.pop_back();
      continue;
    }
    k.path.push_back(std::move(p));
  }
  if (!escape) k.attrs = std::move(attrs);
  return k;
}

/// A list index (Python's: negative counts from the end), or nothing.
inline std::optional<std::size_t> list_index(const std::string& s, std::size_t size) {
  std::int64_t i = 0;
  const char* b = s.data();
  const char* e = b + s.size();
  if (b == e) return std::nullopt;
  auto r = std::from_chars(b, e, i);
  if (r.ec != std::errc() || r.ptr != e) return std::nullopt;
  if (i < 0) i += static_cast<std::int64_t>(size);
  if (i < 0 || static_cast<std::uint64_t>(i) >= size) return std::nullopt;
  return static_cast<std::size_t>(i);
}

inline bool is_integer_text(const std::string& s) {
  std::int64_t i = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), i);
  return !s.empty() && r.ec == std::errc() && r.ptr == s.data() + s.size();
}

}  // namespace ppe::config::detail
