// Definitions of config/config.hpp's out-of-line functions: included by config/types.hpp when
// header-only, compiled once by impl/config_src.hpp with PPE_SEPARATE_COMPILATION.
#pragma once

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <limits>
#include <string>
#include <system_error>
#include <unordered_map>
#include <utility>
#include <vector>

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include "ppe/config/config.hpp"
#include "ppe/config/types.hpp"
#include "ppe/detail/error_message.hpp"
#include "ppe/detail/python_repr.hpp"
#include "ppe/detail/read_file.hpp"
#include "ppe/detail/utf8.hpp"

namespace ppe::config {

// ---- Value ------------------------------------------------------------------

PPE_DECL double Value::as_double() const {
  if (is_int()) return static_cast<double>(std::get<std::int64_t>(v_));
  return std::get<double>(check(Kind::Double));
}

PPE_DECL const Value* Value::find(std::string_view key) const noexcept {
  if (!is_dict()) return nullptr;
  for (const auto& [k, v] : as_dict())
    if (k == key) return &v;
  return nullptr;
}

PPE_DECL const Value& Value::operator[](std::string_view key) const {
  (void)check(Kind::Dict);
  const Value* v = find(key);
  if (!v) throw ConversionError("no key '" + std::string(key) + "' in " + repr());
  return *v;
}

PPE_DECL const Value& Value::at(std::size_t i) const {
  const List& l = as_list();
  if (i >= l.size())
    throw ConversionError("index " + std::to_string(i) + " out of range for a list of " + std::to_string(l.size()));
  return l[i];
}

PPE_DECL std::size_t Value::size() const noexcept {
  if (is_list()) return as_list().size();
  if (is_dict()) return as_dict().size();
  return 0;
}

PPE_DECL std::string_view Value::kind_name(Kind k) noexcept {
  switch (k) {
    case Kind::Null: return "null";
    case Kind::Bool: return "bool";
    case Kind::Int: return "int";
    case Kind::Double: return "float";
    case Kind::String: return "str";
    case Kind::List: return "list";
    case Kind::Dict: return "dict";
    case Kind::Object: return "object";
  }
  return "?";
}

namespace detail {

inline std::string repr_double(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof(buf), d);
  std::string s(buf, r.ptr);
  if (s.find_first_of(".en") == std::string::npos) s += ".0";  // Python's 1.0, not 1
  return s;
}

// Python's reprlib limits, roughly: 6 elements, 30 characters of a string,
// 3 levels.
inline void repr_to(std::string& out, const Value& v, int level) {
  switch (v.kind()) {
    case Value::Kind::Null: out += "None"; return;
    case Value::Kind::Bool: out += v.as_bool() ? "True" : "False"; return;
    case Value::Kind::Int: out += std::to_string(v.as_int()); return;
    case Value::Kind::Double: out += repr_double(v.as_double()); return;
    case Value::Kind::String: {
      const std::string& s = v.as_string();
      out += '\'';
      if (s.size() > 30) out += s.substr(0, 13) + "..." + s.substr(s.size() - 14);
      else out += s;
      out += '\'';
      return;
    }
    case Value::Kind::List: {
      if (level >= 3) {
        out += "[...]";
        return;
      }
      out += '[';
      std::size_t i = 0;
      for (const Value& e : v.as_list()) {
        if (i) out += ", ";
        if (i == 6) {
          out += "...";
          break;
        }
        repr_to(out, e, level + 1);
        ++i;
      }
      out += ']';
      return;
    }
    case Value::Kind::Dict: {
      if (level >= 3) {
        out += "{...}";
        return;
      }
      out += '{';
      std::size_t i = 0;
      for (const auto& [k, e] : v.as_dict()) {
        if (i) out += ", ";
        if (i == 6) {
          out += "...";
          break;
        }
        out += '\'' + k + "': ";
        repr_to(out, e, level + 1);
        ++i;
      }
      out += '}';
      return;
    }
    case Value::Kind::Object: out += "<" + std::string(v.as_object().type_name()) + " object>"; return;
  }
}

}  // namespace detail

PPE_DECL std::string Value::repr() const {
  std::string out;
  detail::repr_to(out, *this, 0);
  return out;
}

PPE_DECL std::string Value::describe() const {
  if (is_object()) return "a " + std::string(as_object().type_name()) + " object";
  if (is_null()) return "null";
  const std::string_view k = kind_name(kind());
  return std::string(k == "int" ? "an " : "a ") + std::string(k) + " " + repr();
}

PPE_DECL bool operator==(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_int() && b.is_int()) return a.as_int() == b.as_int();
    return a.as_double() == b.as_double();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::Null: return true;
    case Value::Kind::Bool: return a.as_bool() == b.as_bool();
    case Value::Kind::String: return a.as_string() == b.as_string();
    case Value::Kind::List: return a.as_list() == b.as_list();
    case Value::Kind::Dict: return a.as_dict() == b.as_dict();
    case Value::Kind::Object: return a.as_object() == b.as_object();
    default: return false;
  }
}

PPE_DECL void Value::throw_kind(Kind expected) const {
  throw ConversionError("expected " + std::string(expected == Kind::Int ? "an " : "a ") +
                        std::string(kind_name(expected)) + ", got " + describe());
}

namespace detail {

PPE_DECL void throw_conversion(const std::string& expected, const Value& got) {
  throw ConversionError("expected " + expected + ", got " + got.describe());
}

PPE_DECL std::int64_t checked_int(const Value& v, std::int64_t lo, std::uint64_t hi, const std::string& expected) {
  if (!v.is_int()) throw_conversion(expected, v);
  const std::int64_t i = v.as_int();
  if (i < lo || (i >= 0 && static_cast<std::uint64_t>(i) > hi))
    throw ConversionError("expected " + expected + " in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                          "], got " + std::to_string(i));
  return i;
}

// ---- keys -------------------------------------------------------------------

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

// ---- YAML -------------------------------------------------------------------

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

struct YamlReader {
  const ConfigOptions& options;
  Marks* marks;
  std::size_t nodes = 0;

  /// `line`: where the node's key is (a dict entry), else 0 for its own.
  Value read(const YAML::Node& n, std::string& path, std::size_t depth, int line = 0) {
    if (line == 0) line = n.Mark().line + 1;
    if (++nodes > options.max_nodes())
      throw ConfigError("ppe::config: the YAML document expands to more than " +
                        std::to_string(options.max_nodes()) +
                        " nodes (aliases repeat nodes; ConfigOptions::max_nodes is the limit)");
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
        const std::size_t len = path.size();
        for (const auto& kv : n) {
          if (!kv.first.IsScalar())
            throw ConfigError("ppe::config: a dict key at line " + std::to_string(kv.first.Mark().line + 1) +
                              " is not a scalar (keys are strings)");
          const std::string key = kv.first.Scalar();
          for (const auto& [k, v] : d)
            if (k == key)
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

// ---- evaluation ---------------------------------------------------------------

struct ConfigState {
  Value root;
  Types types;
  ConfigOptions options;
  Marks marks;
  std::unordered_map<std::string, Value> cache;
  std::vector<std::string> trace;

  int line_of(const std::vector<std::string>& path, std::size_t n) const {
    auto it = marks.find(path_text(path, n));
    return it == marks.end() ? 0 : it->second;
  }
  std::string line_text(const std::vector<std::string>& path, std::size_t n) const {
    const int line = line_of(path, n);
    return line ? " (line " + std::to_string(line) + ")" : std::string();
  }

  static std::string join(const std::vector<std::string>& t, std::size_t from = 0) {
    std::string s;
    const std::size_t n = t.size() - from;
    for (std::size_t i = from; i < t.size(); ++i) {
      // Long chains keep their ends.
      if (n > 12 && i == from + 5) {
        s += " -> ... (" + std::to_string(n - 10) + " more)";
        i = t.size() - 5;
      }
      s += (i == from ? "" : " -> ") + t[i];
    }
    return s;
  }
  [[noreturn]] void fail(const std::string& what, const std::vector<std::string>& extra = {}) const {
    std::vector<std::string> t = trace;
    t.insert(t.end(), extra.begin(), extra.end());
    throw ConfigError("ppe::config: " + what + " (trace: " + join(t) + ")");
  }

  /// The node at `path` of the tree as written; errors as PPE's (the trace
  /// continues with the `!` keys down to the failing one).
  const Value& walk(const std::vector<std::string>& path) const {
    const Value* v = &root;
    for (std::size_t i = 0; i < path.size(); ++i) {
      const Value* next = nullptr;
      if (v->is_dict()) {
        next = v->find(path[i]);
      } else if (v->is_list()) {
        if (auto idx = list_index(path[i], v->size())) next = &v->as_list()[*idx];
      }
      if (!next) {
        std::vector<std::string> extra;
        for (std::size_t n = path.size(); n > i; --n) extra.push_back("!" + path_text(path, n));
        std::string why;
        if (v->is_dict())
          why = "no key '" + path[i] + "'";
        else if (v->is_list())
          why = is_integer_text(path[i]) ? "index " + path[i] + " out of range for " + std::to_string(v->size()) +
                                               " elements"
                                         : "'" + path[i] + "' is not a list index";
        else
          why = "a " + std::string(Value::kind_name(v->kind())) + " has no elements";
        fail(path[i] + " not in !" + path_text(path, i) + ": " + why + line_text(path, i), extra);
      }
      v = next;
    }
    return *v;
  }

  struct Push {
    std::vector<std::string>& t;
    ~Push() { t.pop_back(); }
  };

  Value eval(const Key& key) {
    std::string id = dump_key(key);
    if (auto it = cache.find(id); it != cache.end()) return it->second;
    if (auto at = std::find(trace.begin(), trace.end(), id); at != trace.end()) {
      std::vector<std::string> cycle(at, trace.end());
      cycle.push_back(id);
      fail("circular dependency " + join(cycle), {id});
    }
    if (trace.size() >= options.max_depth())
      fail("evaluation nested deeper than " + std::to_string(options.max_depth()) + " levels at " + id +
               " (ConfigOptions::max_depth is the limit)",
           {id});
    trace.push_back(id);
    Push pop{trace};
    if (!key.attrs) return walk(key.path);
    Value out;
    if (!key.attrs->empty()) {
      Key parent = key;
      parent.attrs->pop_back();
      out = attribute(eval(parent), parent, key.attrs->back());
    } else {
      const Value raw = walk(key.path);
      if (raw.is_dict()) {
        if (const Value* type = raw.find("type"))
          out = call(key.path, raw, *type);
        else
          out = eval_dict(key.path, raw);
      } else if (raw.is_list()) {
        Value::List l;
        l.reserve(raw.size());
        Key child{key.path, std::vector<std::string>{}};
        child.path.emplace_back();
        for (std::size_t i = 0; i < raw.size(); ++i) {
          child.path.back() = std::to_string(i);
          l.push_back(eval(child));
        }
        out = Value(std::move(l));
      } else if (raw.is_string() && !raw.as_string().empty() && raw.as_string()[0] == '@') {
        std::vector<std::string> parent(key.path.begin(), key.path.end() - (key.path.empty() ? 0 : 1));
        Key ref;
        try {
          ref = parse_key(std::string_view(raw.as_string()).substr(1), parent);
        } catch (const ConfigError& e) {
          fail(std::string(e.what()).substr(13) + " at " + id + line_text(key.path, key.path.size()));
        }
        out = eval(ref);
      } else {
        out = raw;
      }
    }
    cache.emplace(std::move(id), out);
    return out;
  }

  Value eval_dict(const std::vector<std::string>& path, const Value& raw) {
    Value::Dict d;
    d.reserve(raw.size());
    Key child{path, std::vector<std::string>{}};
    child.path.emplace_back();
    for (const auto& [k, v] : raw.as_dict()) {
      child.path.back() = k;
      d.emplace_back(k, eval(child));
    }
    return Value(std::move(d));
  }

  Value attribute(const Value& obj, const Key& parent, const std::string& name) {
    Value out;
    if (obj.is_dict()) {
      if (const Value* v = obj.find(name)) return *v;
    } else if (obj.is_list()) {
      if (auto i = list_index(name, obj.size())) return obj.as_list()[*i];
    } else if (obj.is_object()) {
      if (types.attribute_of(obj.as_object(), name, out)) return out;
      std::string names;
      for (const auto& n : types.attribute_names(obj.as_object())) names += (names.empty() ? "" : ", ") + n;
      fail(name + " not in " + dump_key(parent) + ": a " + std::string(obj.as_object().type_name()) +
           " object has no attribute '" + name + "' (its attributes: " + (names.empty() ? "none" : names) +
           "; register them with Types::attribute, or make the type a Boost.Hana struct)");
    }
    fail(name + " not in " + dump_key(parent) + " (" + obj.repr() + ")");
  }

  std::string factory_at(const std::string& type, const std::vector<std::string>& path) const {
    return "factory '" + type + "' at " + path_text(path, path.size()) + line_text(path, path.size());
  }

  Value call(const std::vector<std::string>& path, const Value& raw, const Value& type_value) {
    const std::string where = path_text(path, path.size()) + line_text(path, path.size());
    if (!type_value.is_string())
      fail("'type' at " + where + " must be a str naming a registered type, got " + type_value.describe());
    const std::string& type = type_value.as_string();
    const Factory* f = types.find(type);
    if (!f) {
      fail(type + " not in types: unknown type '" + type + "' at " + where +
           "; registered types: " + ppe::detail::python_str_list(types.names()) +
           " (nothing a configuration names runs unless the program registered it)");
    }
    Key child{path, std::vector<std::string>{}};
    child.path.emplace_back();
    if (f->any_keys) {
      Value::Dict d;
      for (const auto& [k, v] : raw.as_dict()) {
        if (k == "type") continue;
        child.path.back() = k;
        d.emplace_back(k, eval(child));
      }
      const Value kwargs(std::move(d));
      return invoke(*f, path, {&kwargs});
    }
    auto param_list = [&] {
      std::string s;
      for (const auto& p : f->params) {
        s += (s.empty() ? "" : ", ") + p.name + " (" + p.expected;
        if (p.default_value) s += ", default " + p.default_value->repr();
        if (p.default_path) s += ", default @" + *p.default_path;
        if (p.optional && !p.default_value && !p.default_path) s += ", optional";
        s += ")";
      }
      return s.empty() ? std::string("none") : s;
    };
    auto index_of = [&](const std::string& name) -> std::size_t {
      for (std::size_t i = 0; i < f->params.size(); ++i)
        if (f->params[i].name == name) return i;
      return f->params.size();
    };
    // Unknown keys first: no factory below runs for a dict that cannot be called.
    for (const auto& [k, v] : raw.as_dict()) {
      if (k == "type" || index_of(k) < f->params.size()) continue;
      std::vector<std::string> at = path;
      at.push_back(k);
      fail(factory_at(type, path) + " has no parameter '" + k + "'" + line_text(at, at.size()) +
           "; its parameters: " + param_list());
    }
    std::vector<std::optional<Value>> args(f->params.size());
    for (const auto& [k, v] : raw.as_dict()) {
      if (k == "type") continue;
      child.path.back() = k;
      args[index_of(k)] = eval(child);
    }
    for (std::size_t i = 0; i < args.size(); ++i) {
      const ParamInfo& p = f->params[i];
      if (args[i]) continue;
      if (p.default_path) {
        Key ref;
        try {
          ref = parse_key(*p.default_path, path);
        } catch (const ConfigError& e) {
          fail(std::string(e.what()).substr(13) + ": the default path of parameter '" + p.name + "' of " +
               factory_at(type, path));
        }
        args[i] = eval(ref);
      } else if (p.default_value) {
        args[i] = *p.default_value;
      } else if (!p.optional) {
        fail(factory_at(type, path) + ": missing parameter '" + p.name + "' (" + p.expected +
             "); its parameters: " + param_list());
      }
    }
    std::vector<const Value*> ptrs(args.size());
    for (std::size_t i = 0; i < args.size(); ++i) ptrs[i] = args[i] ? &*args[i] : nullptr;
    return invoke(*f, path, ptrs);
  }

  Value invoke(const Factory& f, const std::vector<std::string>& path, const std::vector<const Value*>& args) {
    try {
      return f.call(args);
    } catch (const ArgumentError& e) {
      const ParamInfo& p = f.params.at(e.index());
      std::vector<std::string> at = path;
      at.push_back(p.name);
      fail(factory_at(f.name, path) + ": parameter '" + p.name + "'" + line_text(at, at.size()) + ": " + e.what());
    } catch (const ConfigError&) {
      throw;
    } catch (const std::exception& e) {
      // The factory's own exception stays reachable (std::rethrow_if_nested).
      std::throw_with_nested(ConfigError("ppe::config: " + factory_at(f.name, path) + " failed: " +
                                         ppe::detail::error_message(e) +
                                         " (trace: " + join(trace) + ")"));
    }
  }

  /// PPE's `update_via_args` on the tree as written.
  void set(std::string_view path_text_in, std::string_view text) {
    Key k;
    try {
      k = parse_key(path_text_in, {});
    } catch (const ConfigError& e) {
      throw ConfigError(std::string(e.what()) + " (in a --set)");
    }
    const std::string where(path_text_in);
    if (path_text_in.empty() || (path_text_in[0] != '/' && path_text_in.substr(0, 2) != "!/"))
      throw ConfigError("ppe::config: set '" + where + "': the path must be absolute (/a/b)");
    if (k.attrs && !k.attrs->empty())
      throw ConfigError("ppe::config: set '" + where + "': a path to set takes no attributes ('.')");
    Value v;
    if (!text.empty() && text[0] == '@') {
      v = Value(text);  // `@` cannot start a plain YAML scalar: a reference is taken as written
    } else {
      try {
        YAML::Node n = load_yaml(text, "the value of '" + where + "': ");
        v = read_yaml(n, options, nullptr);
      } catch (const ConfigError& e) {
        throw ConfigError(std::string(e.what()) + " (set " + where + ")");
      }
    }
    // Walk down, keeping the chain of containers to rebuild.
    std::vector<Value> chain{root};
    for (std::size_t i = 0; i + 1 < k.path.size(); ++i) {
      const Value& c = chain.back();
      const Value* next = nullptr;
      if (c.is_dict()) next = c.find(k.path[i]);
      else if (c.is_list()) {
        if (auto idx = list_index(k.path[i], c.size())) next = &c.as_list()[*idx];
      }
      if (!next)
        throw ConfigError("ppe::config: set '" + where + "': " + k.path[i] + " not in !" +
                          path_text(k.path, i));
      chain.push_back(*next);
    }
    if (k.path.empty()) {
      root = v;
    } else {
      const Value& parent = chain.back();
      const std::string& last = k.path.back();
      const Value* old = nullptr;
      std::optional<std::size_t> idx;
      if (parent.is_dict()) {
        old = parent.find(last);
      } else if (parent.is_list()) {
        idx = list_index(last, parent.size());
        if (!idx)
          throw ConfigError("ppe::config: set '" + where + "': " + last + " not in !" +
                            path_text(k.path, k.path.size() - 1) + " (a list of " + std::to_string(parent.size()) +
                            " elements)");
        old = &parent.as_list()[*idx];
      } else {
        throw ConfigError("ppe::config: set '" + where + "': !" + path_text(k.path, k.path.size() - 1) +
                          " is " + parent.describe() + ", not a dict or a list");
      }
      if (old) v = typed_like(*old, v, text, where);
      // Rebuild the containers from the bottom up (values are immutable).
      Value replaced = v;
      for (std::size_t i = k.path.size(); i-- > 0;) {
        const Value& c = chain[i];
        if (c.is_dict()) {
          Value::Dict d = c.as_dict();
          bool found = false;
          for (auto& [key, e] : d)
            if (key == k.path[i]) {
              e = replaced;
              found = true;
            }
          if (!found) d.emplace_back(k.path[i], replaced);
          replaced = Value(std::move(d));
        } else {
          Value::List l = c.as_list();
          l[*list_index(k.path[i], l.size())] = replaced;
          replaced = Value(std::move(l));
        }
      }
      root = replaced;
    }
    // The lines of the replaced subtree are gone.
    const std::string prefix = path_text(k.path, k.path.size());
    for (auto it = marks.begin(); it != marks.end();) {
      const std::string& p = it->first;
      if (p == prefix || (p.size() > prefix.size() && p.compare(0, prefix.size(), prefix) == 0 &&
                          (prefix == "/" || p[prefix.size()] == '/')))
        it = marks.erase(it);
      else
        ++it;
    }
    cache.clear();
  }

  /// PPE converts an override to the type of the value it replaces.
  static Value typed_like(const Value& old, const Value& v, std::string_view text, const std::string& where) {
    auto bad = [&](const char* expected) -> ConfigError {
      return ConfigError("ppe::config: set '" + where + "': the file has " + old.describe() + " there, so the value must be " +
                         expected + "; got '" + std::string(text) + "'");
    };
    switch (old.kind()) {
      case Value::Kind::Bool:
        if (!v.is_bool()) throw bad("true or false");
        return v;
      case Value::Kind::Int:
        if (!v.is_int()) throw bad("an int");
        return v;
      case Value::Kind::Double:
        if (!v.is_number()) throw bad("a number");
        return Value(v.as_double());
      case Value::Kind::String:
        // A scalar stays the text given (PPE's str(v)); `@` references too.
        if (v.is_list() || v.is_dict()) return v;
        return Value(std::string(text));
      default: return v;
    }
  }
};

}  // namespace detail

// ---- Config -------------------------------------------------------------------

PPE_DECL Config::Config(std::unique_ptr<detail::ConfigState> s) : s_(std::move(s)) {}

PPE_DECL Config::Config(Value tree, ConfigOptions options) : Config(std::move(tree), Types(), std::move(options)) {}

PPE_DECL Config::Config(Value tree, const Types& types, ConfigOptions options)
    : s_(std::make_unique<detail::ConfigState>()) {
  s_->root = std::move(tree);
  s_->types = types;
  s_->options = std::move(options);
}

PPE_DECL Config Config::parse(std::string_view yaml, ConfigOptions options) {
  return parse(yaml, Types(), std::move(options));
}

PPE_DECL Config Config::parse(std::string_view yaml, const Types& types, ConfigOptions options) {
  return from_yaml(detail::load_yaml(yaml, ""), types, std::move(options));
}

PPE_DECL Config Config::load(const std::string& path, ConfigOptions options) {
  return load(path, Types(), std::move(options));
}

PPE_DECL Config Config::load(const std::string& path, const Types& types, ConfigOptions options) {
  std::string text;
  try {
    text = ppe::detail::read_file(path);
  } catch (const std::system_error& e) {  // names no configuration: say what the file was for
    throw ConfigError("ppe::config: cannot read the configuration file '" + path + "': " + e.code().message());
  }
  const YAML::Node node = detail::load_yaml(text, path + ": ");  // its errors name the file
  try {
    return from_yaml(node, types, std::move(options));
  } catch (const ConfigError& e) {
    throw ConfigError("ppe::config: " + path + ": " + std::string(e.what()).substr(13));
  }
}

PPE_DECL Config Config::from_yaml(const YAML::Node& node, const Types& types, ConfigOptions options) {
  auto s = std::make_unique<detail::ConfigState>();
  s->types = types;
  s->options = std::move(options);
  try {
    s->root = detail::read_yaml(node, s->options, &s->marks);
  } catch (const YAML::Exception& e) {  // yaml-cpp's depth guard and bad conversions
    throw ConfigError("ppe::config: YAML error at line " + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  return Config(std::move(s));
}

PPE_DECL Config::Config(Config&&) noexcept = default;
PPE_DECL Config& Config::operator=(Config&&) noexcept = default;
PPE_DECL Config::~Config() = default;

PPE_DECL Value Config::operator[](std::string_view key) {
  if (key.empty() || (key[0] != '/' && key.substr(0, 2) != "!/"))
    throw ConfigError("ppe::config: the key '" + std::string(key) + "' must be absolute: /path or !/path");
  s_->trace.clear();
  return s_->eval(detail::parse_key(key, {}));
}

PPE_DECL bool Config::contains(std::string_view path) const {
  detail::Key k;
  try {
    k = detail::parse_key(path, {});
  } catch (const ConfigError&) {
    return false;
  }
  const Value* v = &s_->root;
  for (const auto& p : k.path) {
    const Value* next = nullptr;
    if (v->is_dict()) next = v->find(p);
    else if (v->is_list()) {
      if (auto i = detail::list_index(p, v->size())) next = &v->as_list()[*i];
    }
    if (!next) return false;
    v = next;
  }
  return true;
}

PPE_DECL void Config::set(std::string_view path, std::string_view yaml) { s_->set(path, yaml); }

PPE_DECL void Config::set(std::string_view assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string_view::npos)
    throw ConfigError("ppe::config: '" + std::string(assignment) + "' is not of the form /path=value");
  s_->set(assignment.substr(0, eq), assignment.substr(eq + 1));
}

PPE_DECL void Config::update_via_args(const std::vector<std::pair<std::string, std::string>>& args) {
  for (const auto& [k, v] : args) s_->set(k, v);
}

PPE_DECL int Config::line_of(std::string_view path) const {
  try {
    const detail::Key k = detail::parse_key(path, {});
    return s_->line_of(k.path, k.path.size());
  } catch (const ConfigError&) {
    return 0;
  }
}

PPE_DECL const Types& Config::types() const noexcept { return s_->types; }

PPE_DECL void Config::throw_get_error(std::string_view key, const std::string& what) const {
  std::string line;
  try {
    const detail::Key k = detail::parse_key(key, {});
    line = s_->line_text(k.path, k.path.size());
  } catch (const ConfigError&) {
  }
  throw ConfigError("ppe::config: " + std::string(key) + line + ": " + what);
}

PPE_DECL std::vector<std::string> apply_set_args(Config& config, const std::vector<std::string>& args) {
  std::vector<std::string> rest;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--set") {
      if (i + 1 >= args.size()) throw ConfigError("ppe::config: --set needs /path=value");
      config.set(args[++i]);
    } else if (a.rfind("--set=", 0) == 0) {
      config.set(std::string_view(a).substr(6));
    } else {
      rest.push_back(a);
    }
  }
  return rest;
}

}  // namespace ppe::config
