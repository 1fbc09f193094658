// The YAML reader: yaml-cpp's node tree to a `Value` tree as written, with
// YAML 1.2 core-schema scalars, the limits of ConfigOptions, and the line of
// each path for messages. Nothing is evaluated here. Internal
// (ppe::config::detail); included by impl/config.ipp.
/// Feature: ppe::config (Meson and pkg-config: ppe-config).
#pragma once

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include "ppe/config/config.hpp"
#include "ppe/detail/utf8.hpp"

namespace ppe::config::detail {

/// The YAML line of each path of the tree as written (`/`, `/a`, `/a/0`), for
/// messages; absent: unknown (a subtree replaced by `Config::set`).
using Marks = std::unordered_map<std::string, int>;

inline bool all_of_chars(std::string_view s, const char* set) {
  return !s.empty() && s.find_first_not_of(set) == std::string_view::npos;
}

/// YAML 1.2 core schema resolution of a plain scalar.
inline Value resolve_plain(const std::string& s, int line) {
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return Value();
  if (s == "true" || s == "True" || s == "TRUE") return Value(true);
  if (s == "false" || s == "False" || s == "FALSE") return Value(false);
  std::string_view t = s;
  const bool sign = t[0] == '-' || t[0] == '+';
  std::string_view body = sign ? t.substr(1) : t;
  auto integer = [&](std::string_view digits, int base) -> Value {
    std::uint64_t u = 0;
    auto r = std::from_chars(digits.data(), digits.data() + digits.size(), u, base);
    const bool neg = t[0] == '-';
    const std::uint64_t limit = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) + (neg ? 1 : 0);
    if (r.ec != std::errc() || u > limit)
      throw ConfigError("ppe::config: the integer " + s + " at line " + std::to_string(line) +
                        " is out of the int64 range");
    if (neg) return Value(u == limit ? std::numeric_limits<std::int64_t>::min() : -static_cast<std::int64_t>(u));
    return Value(static_cast<std::int64_t>(u));
  };
  if (all_of_chars(body, "0123456789")) return integer(body, 10);
  if (!sign && body.size() > 2 && body.substr(0, 2) == "0x" && all_of_chars(body.substr(2), "0123456789abcdefABCDEF"))
    return integer(body.substr(2), 16);
  if (!sign && body.size() > 2 && body.substr(0, 2) == "0o" && all_of_chars(body.substr(2), "01234567"))
    return integer(body.substr(2), 8);
  if (body == ".inf" || body == ".Inf" || body == ".INF")
    return Value(t[0] == '-' ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity());
  if (!sign && (body == ".nan" || body == ".NaN" || body == ".NAN")) return Value(std::nan(""));
  // [-+]? ( \. [0-9]+ | [0-9]+ ( \. [0-9]* )? ) ( [eE] [-+]? [0-9]+ )?
  std::size_t i = 0, digits = 0;
  while (i < body.size() && body[i] >= '0' && body[i] <= '9') ++i, ++digits;
  if (i < body.size() && body[i] == '.') {
    ++i;
    while (i < body.size() && body[i] >= '0' && body[i] <= '9') ++i, ++digits;
  }
  if (digits > 0 && i < body.size() && (body[i] == 'e' || body[i] == 'E')) {
    ++i;
    if (i < body.size() && (body[i] == '-' || body[i] == '+')) ++i;
    const std::size_t exp_start = i;
    while (i < body.size() && body[i] >= '0' && body[i] <= '9') ++i;
    if (i == exp_start) digits = 0;
  }
  if (digits > 0 && i == body.size()) return Value(std::strtod(s.c_str(), nullptr));
  return Value(s);
}

/// A scalar by its tag: untagged (`?`) by the core schema, `!` (quoted) a
/// str, `!!str`/`!!int`/`!!float`/`!!bool`/`!!null` as they say. Other tags
/// are refused: a configuration is data, and no tag builds an object.
inline Value resolve_scalar(const YAML::Node& n, int line) {
  const std::string& tag = n.Tag();
  const std::string& s = n.Scalar();
  if (tag == "?" || tag.empty()) return resolve_plain(s, line);
  if (tag == "!" || tag == "tag:yaml.org,2002:str") return Value(s);
  const std::string where = " at line " + std::to_string(line);
  auto typed = [&](Value::Kind k, const char* what) {
    Value v = resolve_plain(s, line);
    if (v.kind() == k || (k == Value::Kind::Double && v.is_int()))
      return k == Value::Kind::Double ? Value(v.as_double()) : v;
    throw ConfigError("ppe::config: '" + s + "'" + where + " is tagged " + tag + " but is not " + what);
  };
  if (tag == "tag:yaml.org,2002:int") return typed(Value::Kind::Int, "an int");
  if (tag == "tag:yaml.org,2002:float") return typed(Value::Kind::Double, "a float");
  if (tag == "tag:yaml.org,2002:bool") return typed(Value::Kind::Bool, "a bool");
  if (tag == "tag:yaml.org,2002:null") return typed(Value::Kind::Null, "null");
  throw ConfigError("ppe::config: unsupported tag '" + tag + "'" + where +
                    " (a configuration is plain YAML data: str, int, float, bool, null, lists and dicts)");
}

/// Converts a yaml-cpp node tree into a `Value` tree, recording each path's
/// line. Counts nodes as they are read, so aliases that expand to huge trees
/// are refused (ConfigOptions::max_nodes) before they exhaust memory.
struct YamlReader {
  const ConfigOptions& options;
  Marks* marks;
  std::size_t nodes = 0;
  std::size_t path_bytes = 0;

  /// `line`: where the node's key is (a dict entry), else 0 for its own.
  Value read(const YAML::Node& n, std::string& path, std::size_t depth, int line = 0) {
    if (line == 0) line = n.Mark().line + 1;
    if (++nodes > options.max_nodes())
      throw ConfigError("ppe::config: the YAML document expands to more than " +
                        std::to_string(options.max_nodes()) +
                        " nodes (aliases repeat nodes; ConfigOptions::max_nodes is the limit)");
    path_bytes += path.size() + 1;  // the root's "/" too
    if (path_bytes > options.max_path_bytes())
      throw ConfigError("ppe::config: the paths of the YAML document's nodes add up to more than " +
                        std::to_string(options.max_path_bytes()) +
                        " bytes (long keys nested deep, repeated by aliases; ConfigOptions::max_path_bytes is the "
                        "limit)");
    if (depth > options.max_depth())
      throw ConfigError("ppe::config: the YAML document is nested deeper than " +
                        std::to_string(options.max_depth()) + " levels at line " + std::to_string(line) +
                        " (ConfigOptions::max_depth is the limit)");
    if (marks) (*marks)[path.empty() ? "/" : path] = line;
    const std::string& tag = n.Tag();
    if ((n.IsSequence() || n.IsMap()) && !(tag.empty() || tag == "?" || tag == "!" ||
                                          tag == "tag:yaml.org,2002:seq" || tag == "tag:yaml.org,2002:map"))
      throw ConfigError("ppe::config: unsupported tag '" + tag + "' at line " + std::to_string(line) +
                        " (a configuration is plain YAML data)");
    switch (n.Type()) {
      case YAML::NodeType::Undefined:
      case YAML::NodeType::Null: return Value();
      case YAML::NodeType::Scalar: return resolve_scalar(n, line);
      case YAML::NodeType::Sequence: {
        Value::List l;
        l.reserve(n.size());
        const std::size_t len = path.size();
        std::size_t i = 0;
        for (const auto& e : n) {
          path += "/" + std::to_string(i++);
          l.push_back(read(e, path, depth + 1));
          path.resize(len);
        }
        return Value(std::move(l));
      }
      case YAML::NodeType::Map: {
        Value::Dict d;
        // A set, not a scan of `d`: a dict of thousands of keys repeated by
        // aliases made the scan quadratic (minutes for a 64 KiB file).
        std::unordered_set<std::string> seen;
        const std::size_t len = path.size();
        for (const auto& kv : n) {
          if (!kv.first.IsScalar())
            throw ConfigError("ppe::config: a dict key at line " + std::to_string(kv.first.Mark().line + 1) +
                              " is not a scalar (keys are strings)");
          const std::string key = kv.first.Scalar();
          if (!seen.insert(key).second)
            throw ConfigError("ppe::config: duplicate key '" + key + "' at line " +
                              std::to_string(kv.first.Mark().line + 1));
          path += "/" + key;
          Value v = read(kv.second, path, depth + 1, kv.first.Mark().line + 1);
          path.resize(len);
          d.emplace_back(key, std::move(v));
        }
        return Value(std::move(d));
      }
    }
    return Value();
  }
};

/// The tree as written of a parsed document; `marks` may be null (a `--set`
/// value has no lines of the file).
inline Value read_yaml(const YAML::Node& n, const ConfigOptions& options, Marks* marks) {
  YamlReader r{options, marks};
  std::string path;
  return r.read(n, path, 0);
}

/// PyYAML reads text: bytes that are not UTF-8 are a decode error there, and
/// a NUL is no printable character. yaml-cpp takes any bytes as a string, so
/// they are checked here, by line and byte offset.
inline void check_yaml_text(std::string_view text, const std::string& source) {
  std::size_t offset = text.find('\0');
  std::string what = "a NUL byte", why;
  if (const auto bad = ppe::detail::find_invalid_utf8(text.substr(0, offset)); bad) {
    offset = bad->offset;
    what = "invalid UTF-8";
    why = ": " + bad->reason;
  }
  if (offset == std::string_view::npos) return;
  const auto line = 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(offset), '\n');
  throw ConfigError("ppe::config: " + (source.empty() ? std::string("<string>: ") : source) + what + " at line " +
                    std::to_string(line) + ", byte offset " + std::to_string(offset) + why +
                    " (a configuration is UTF-8 text without NUL bytes, as PyYAML reads it)");
}

/// Parses YAML text; every error becomes a ConfigError with the line and the
/// column, after `source`: a prefix saying where the text came from (a file
/// name and ": ", or empty).
inline YAML::Node load_yaml(std::string_view text, const std::string& source) {
  check_yaml_text(text, source);
  try {
    return YAML::Load(std::string(text));
  } catch (const YAML::DeepRecursion& e) {  // its message says "bad file"
    throw ConfigError("ppe::config: " + source + "YAML error at line " + std::to_string(e.mark.line + 1) +
                      ", column " + std::to_string(e.mark.column + 1) + ": nested deeper than yaml-cpp's parser " +
                      "allows (" + std::to_string(e.depth()) + " levels)");
  } catch (const YAML::Exception& e) {
    throw ConfigError("ppe::config: " + source + "YAML error at line " + std::to_string(e.mark.line + 1) +
                      ", column " + std::to_string(e.mark.column + 1) + ": " + e.msg);
  }
}

}  // namespace ppe::config::detail
